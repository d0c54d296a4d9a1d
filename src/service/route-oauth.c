/*
 * Signing in to an HTTP connector (docs/connectors.md, "Signing in"):
 * POST /api/v1/connectors/:id/login begins it and answers the authorization
 * URL; the browser comes back to GET /oauth/callback on this loopback port
 * (no token: the state, which only the service knows, ties it to the
 * sign-in), where the code becomes a token.  The token is stored as a
 * bearer credential bound to the connector's header:Authorization, sealed
 * like every credential, and never shown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "connector-launch.h"
#include "connector-oauth.h"
#include "http.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "mcp.h"
#include "oauth.h"
#include "problem.h"
#include "routes.h"
#include "secrets.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

/* Wipes the secrets a sign-in's body carried, and frees it. */
static void
wipe_login(struct oauth_login *login, cJSON *body)
{
	const char *secrets[] = { login->client_secret, login->client_key, login->id_token };

	for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
		if (secrets[i] != NULL)
			sodium_memzero((char *)secrets[i], strlen(secrets[i]));
	cJSON_Delete(body);
}

void
route_connectors_login(struct http_request *req, struct http_response *r)
{
	struct oauth_result direct = { .access_token = NULL };
	bool signed_in = false;
	struct problem p = { 0 };
	struct connector_launch l = { 0 };
	char *redirect, *url, *why = NULL, *challenge = NULL, *granted, err[1024];
	cJSON *out;
	bool identity;

	static const char *const fields[] = { "clientId", "clientSecret", "clientKey", "scope",
		"idToken", "idpTokenEndpoint", "idpClientId", NULL };
	cJSON *body = req->body != NULL && req->body_len > 0 ?
	    json_parse(req->body, req->body_len) : NULL;
	const char *bad = NULL, *client_id = json_get_string(body, "clientId");
	const char *client_secret = json_get_string(body, "clientSecret");
	const char *scope = json_get_string(body, "scope");
	struct oauth_login login = { .client_id = client_id, .client_secret = client_secret,
		.client_key = json_get_string(body, "clientKey"), .scope = scope,
		.id_token = json_get_string(body, "idToken"),
		.idp_token_endpoint = json_get_string(body, "idpTokenEndpoint"),
		.idp_client_id = json_get_string(body, "idpClientId") };
	const char *key_why = NULL;

	if (req->body != NULL && req->body_len > 0 && !cJSON_IsObject(body)) {
		wipe_login(&login, body);
		return http_error(r, TD_INVALID_REQUEST, NULL, "the body must be a JSON object");
	}
	if (body != NULL && !json_only_keys(body, fields, &bad)) {
		/* bad is the member's own name: answer before the body goes. */
		http_bad_field(r, bad, "unknown field %.64s", bad);
		wipe_login(&login, body);
		return;
	}
	if ((cJSON_GetObjectItemCaseSensitive(body, "clientId") != NULL &&
	    (client_id == NULL || *client_id == '\0' || strlen(client_id) > 512)) ||
	    (cJSON_GetObjectItemCaseSensitive(body, "clientSecret") != NULL &&
	    (client_secret == NULL || *client_secret == '\0' || strlen(client_secret) > 16384 ||
	    client_id == NULL))) {
		wipe_login(&login, body);
		return http_bad_field(r, "clientId", "clientId must be 1 to 512 bytes; "
		    "clientSecret 1 to 16384 bytes, and only with a clientId");
	}
	if (cJSON_GetObjectItemCaseSensitive(body, "clientKey") != NULL &&
	    (login.client_key == NULL || strlen(login.client_key) > 16384 || client_id == NULL ||
	    !jwt_key_usable(login.client_key, &key_why))) {
		wipe_login(&login, body);
		return http_bad_field(r, "clientKey", "clientKey must be the PEM private key (P-256, "
		    "ES256) of the client named by clientId%s%s", key_why != NULL ? ": " : "",
		    key_why != NULL ? key_why : "");
	}
	if ((cJSON_GetObjectItemCaseSensitive(body, "idToken") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(body, "idpTokenEndpoint") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(body, "idpClientId") != NULL) &&
	    (login.id_token == NULL || *login.id_token == '\0' || strlen(login.id_token) > 16384 ||
	    client_id == NULL || login.idp_token_endpoint == NULL ||
	    (strncmp(login.idp_token_endpoint, "https://", 8) != 0 &&
	    strncmp(login.idp_token_endpoint, "http://", 7) != 0) ||
	    strlen(login.idp_token_endpoint) > 2048 ||
	    (cJSON_GetObjectItemCaseSensitive(body, "idpClientId") != NULL &&
	    (login.idp_client_id == NULL || *login.idp_client_id == '\0' ||
	    strlen(login.idp_client_id) > 512)))) {
		wipe_login(&login, body);
		return http_bad_field(r, "idToken", "an identity assertion sign-in needs idToken (1 to "
		    "16384 bytes), clientId, idpTokenEndpoint (an http or https URL) and optionally "
		    "idpClientId (1 to 512 bytes)");
	}
	if (cJSON_GetObjectItemCaseSensitive(body, "scope") != NULL &&
	    (scope == NULL || *scope == '\0' || strlen(scope) > 1024 ||
	    strpbrk(scope, "\"\\\r\n") != NULL)) {
		wipe_login(&login, body);
		return http_bad_field(r, "scope", "scope must be 1 to 1024 bytes of scope tokens "
		    "separated by spaces");
	}
	if (connector_launch_prepare(req->svc, req->params[0], &l, &p) != TD_OK) {
		wipe_login(&login, body);
		return http_problem(r, &p);
	}
	if (!l.http) {
		wipe_login(&login, body);
		connector_launch_free(&l);
		return http_error(r, TD_INVALID_REQUEST, NULL, "only an http connector signs in");
	}
	/* The server's challenge, as a connector test meets it (handshake, tools/list). */
	{
		/* Shorter than a test's: this holds one of the service's HTTP threads. */
		struct mcp_limits lim = { .request_timeout_ms = 5000 };
		struct mcp_client *c = mcp_open_http(l.url, (const char *const *)l.headers, &lim,
		    err, sizeof err);
		struct mcp_tool *tools = NULL;
		size_t n = 0;

		if (c != NULL && mcp_handshake(c, err, sizeof err) == 0 &&
		    mcp_list_tools(c, &tools, &n, err, sizeof err) == 0)
			snprintf(err, sizeof err, "the server does not ask for a sign-in (it lists "
			    "%zu tools)", n);
		if (mcp_auth_challenge(c) != NULL)
			challenge = xstrdup(mcp_auth_challenge(c));
		mcp_tools_free(tools, n);
		mcp_close(c);
	}
	redirect = xasprintf("%s/oauth/callback", req->svc->base_url);
	/* A step-up asked for in a run's answer: the token works for the test, not for all. */
	if (challenge == NULL && scope != NULL)
		challenge = xstrdup("");
	identity = login.id_token != NULL;
	granted = scope != NULL ? connector_oauth_scope(req->svc, req->params[0]) : NULL;
	login.granted = granted;
	url = challenge != NULL ? oauth_begin_login(req->params[0], l.url, challenge, &login,
	    redirect, &direct, &why) : NULL;
	/* A machine client (client credentials): signed in already. */
	if (url == NULL && direct.access_token != NULL) {
		signed_in = connector_store_oauth_token(req->svc, req->params[0], direct.access_token,
		    direct.refresh_record, direct.scope, &why);
		secrets_plain_free(direct.access_token);
		secrets_plain_free(direct.refresh_record);
	}
	free(challenge);
	free(granted);
	wipe_login(&login, body);
	if (signed_in) {
		connector_launch_free(&l);
		free(redirect);
		log_info("oauth: connector %s signed in with %s", req->params[0],
		    identity ? "an identity assertion" : "client credentials");
		out = cJSON_CreateObject();
		cJSON_AddBoolToObject(out, "signedIn", true);
		cJSON_AddStringToObject(out, "message", identity ?
		    "signed in with the identity provider's assertion (no browser needed)" :
		    "signed in with the client's credentials (no browser needed)");
		http_json(r, 200, out);
		return;
	}
	if (url == NULL) {
		http_error(r, TD_INVALID_REQUEST, NULL, "cannot sign in to %s: %s", l.name,
		    why != NULL ? why : err);
		connector_launch_free(&l);
		free(why);
		free(redirect);
		return;
	}
	connector_launch_free(&l);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "authorizationUrl", url);
	cJSON_AddStringToObject(out, "redirectUri", redirect);
	free(url);
	free(redirect);
	http_json(r, 200, out);
}

void
route_oauth_callback(struct http_request *req, struct http_response *r)
{
	struct oauth_result res;
	char *why = NULL;
	cJSON *out;

	if (!oauth_finish(http_query(req, "state"), http_query(req, "code"),
	    http_query(req, "error"), http_query(req, "iss"), &res, &why) ||
	    !connector_store_oauth_token(req->svc, res.connector_id, res.access_token, res.refresh_record,
	    res.scope, &why)) {
		log_warn("oauth: a sign-in of %s failed: %s",
		    res.connector_id[0] ? res.connector_id : "(unknown)", why);
		http_error(r, TD_INVALID_REQUEST, NULL, "taskdeck: the sign-in failed: %s", why);
		free(why);
		secrets_plain_free(res.access_token);
		secrets_plain_free(res.refresh_record);
		return;
	}
	secrets_plain_free(res.access_token);
	secrets_plain_free(res.refresh_record);
	log_info("oauth: connector %s signed in", res.connector_id);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "connectorId", res.connector_id);
	cJSON_AddStringToObject(out, "message", "taskdeck: signed in; you can close this window.");
	http_json(r, 200, out);
}
