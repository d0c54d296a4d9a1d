/* Signing in to an http connector: begun here, ended by the browser's return (connector-login.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connector-launch.h"
#include "connector-login.h"
#include "connector-oauth.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "mcp.h"
#include "oauth.h"
#include "secrets.h"
#include "service.h"
#include "xalloc.h"

/* The members of body as a sign-in takes them; refuses what is out of bounds. */
static enum td_code
connector_login_check(const cJSON *body, struct oauth_login *login, struct problem *p)
{
	const char *client_id = json_get_string(body, "clientId");
	const char *client_secret = json_get_string(body, "clientSecret");
	const char *scope = json_get_string(body, "scope");
	const char *key_why = NULL;

	*login = (struct oauth_login){ .client_id = client_id, .client_secret = client_secret,
		.client_key = json_get_string(body, "clientKey"), .scope = scope,
		.id_token = json_get_string(body, "idToken"),
		.idp_token_endpoint = json_get_string(body, "idpTokenEndpoint"),
		.idp_client_id = json_get_string(body, "idpClientId"),
		.workload_token_file = json_get_string(body, "workloadTokenFile") };
	if ((cJSON_GetObjectItemCaseSensitive(body, "clientId") != NULL &&
	    (client_id == NULL || *client_id == '\0' || strlen(client_id) > 512)) ||
	    (cJSON_GetObjectItemCaseSensitive(body, "clientSecret") != NULL &&
	    (client_secret == NULL || *client_secret == '\0' || strlen(client_secret) > 16384 ||
	    client_id == NULL)))
		return problem_set(p, TD_INVALID_REQUEST, "clientId", "clientId must be 1 to 512 "
		    "bytes; clientSecret 1 to 16384 bytes, and only with a clientId");
	if (cJSON_GetObjectItemCaseSensitive(body, "clientKey") != NULL &&
	    (login->client_key == NULL || strlen(login->client_key) > 16384 || client_id == NULL ||
	    !jwt_key_usable(login->client_key, &key_why)))
		return problem_set(p, TD_INVALID_REQUEST, "clientKey", "clientKey must be the PEM "
		    "private key (P-256, ES256) of the client named by clientId%s%s",
		    key_why != NULL ? ": " : "", key_why != NULL ? key_why : "");
	if ((cJSON_GetObjectItemCaseSensitive(body, "idToken") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(body, "idpTokenEndpoint") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(body, "idpClientId") != NULL) &&
	    (login->id_token == NULL || *login->id_token == '\0' ||
	    strlen(login->id_token) > 16384 || client_id == NULL ||
	    login->idp_token_endpoint == NULL ||
	    (strncmp(login->idp_token_endpoint, "https://", 8) != 0 &&
	    strncmp(login->idp_token_endpoint, "http://", 7) != 0) ||
	    strlen(login->idp_token_endpoint) > 2048 ||
	    (cJSON_GetObjectItemCaseSensitive(body, "idpClientId") != NULL &&
	    (login->idp_client_id == NULL || *login->idp_client_id == '\0' ||
	    strlen(login->idp_client_id) > 512))))
		return problem_set(p, TD_INVALID_REQUEST, "idToken", "an identity assertion sign-in "
		    "needs idToken (1 to 16384 bytes), clientId, idpTokenEndpoint (an http or https "
		    "URL) and optionally idpClientId (1 to 512 bytes)");
	if (cJSON_GetObjectItemCaseSensitive(body, "workloadTokenFile") != NULL &&
	    (login->workload_token_file == NULL || login->workload_token_file[0] != '/' ||
	    strlen(login->workload_token_file) > 4096 || client_id == NULL ||
	    login->id_token != NULL))
		return problem_set(p, TD_INVALID_REQUEST, "workloadTokenFile", "workloadTokenFile "
		    "must be the absolute path (at most 4096 bytes) of the file holding the "
		    "workload's identity token, with a clientId and without an idToken");
	if (cJSON_GetObjectItemCaseSensitive(body, "scope") != NULL &&
	    (scope == NULL || *scope == '\0' || strlen(scope) > 1024 ||
	    strpbrk(scope, "\"\\\r\n") != NULL))
		return problem_set(p, TD_INVALID_REQUEST, "scope", "scope must be 1 to 1024 bytes of "
		    "scope tokens separated by spaces");
	return TD_OK;
}

/*
 * The server's challenge (malloc'd), as a connector test meets it (handshake,
 * tools/list), or NULL with err saying what it answered instead.
 */
static char *
connector_login_challenge(const struct connector_launch *l, char *err, size_t errlen)
{
	/* Shorter than a test's: this holds one of the service's HTTP threads. */
	struct mcp_limits lim = { .request_timeout_ms = 5000 };
	struct mcp_client *c = mcp_open_http(l->url, (const char *const *)l->headers, &lim,
	    err, errlen);
	struct mcp_tool *tools = NULL;
	char *challenge = NULL;
	size_t n = 0;

	if (c != NULL && mcp_handshake(c, err, errlen) == 0 &&
	    mcp_list_tools(c, &tools, &n, err, errlen) == 0)
		snprintf(err, errlen, "the server does not ask for a sign-in (it lists "
		    "%zu tools)", n);
	if (mcp_auth_challenge(c) != NULL)
		challenge = xstrdup(mcp_auth_challenge(c));
	mcp_tools_free(tools, n);
	mcp_close(c);
	return challenge;
}

/* The answer of a sign-in that needs no browser. */
static cJSON *
connector_login_signed_in(const char *id, const struct oauth_login *login)
{
	cJSON *out = cJSON_CreateObject();
	bool workload = login->workload_token_file != NULL, identity = login->id_token != NULL;

	log_info("oauth: connector %s signed in with %s", id,
	    workload ? "the workload's identity token" :
	    identity ? "an identity assertion" : "client credentials");
	cJSON_AddBoolToObject(out, "signedIn", true);
	cJSON_AddStringToObject(out, "message", workload ?
	    "signed in with the workload's identity token (no browser needed)" : identity ?
	    "signed in with the identity provider's assertion (no browser needed)" :
	    "signed in with the client's credentials (no browser needed)");
	return out;
}

enum td_code
connector_login(struct service *svc, const char *id, const cJSON *body, cJSON **out,
    struct problem *p)
{
	struct oauth_result direct = { .access_token = NULL };
	struct connector_launch l = { 0 };
	struct oauth_login login;
	char *redirect, *url, *why = NULL, *challenge, *granted, err[1024];
	bool signed_in = false;
	enum td_code rc;

	*out = NULL;
	if ((rc = connector_login_check(body, &login, p)) != TD_OK ||
	    (rc = connector_launch_prepare(svc, id, &l, p)) != TD_OK)
		return rc;
	if (!l.http) {
		connector_launch_free(&l);
		return problem_set(p, TD_INVALID_REQUEST, NULL, "only an http connector signs in");
	}
	challenge = connector_login_challenge(&l, err, sizeof err);
	redirect = xasprintf("%s/oauth/callback", svc->base_url);
	/* A step-up asked for in a run's answer: the token works for the test, not for all. */
	if (challenge == NULL && login.scope != NULL)
		challenge = xstrdup("");
	granted = login.scope != NULL ? connector_oauth_scope(svc, id) : NULL;
	login.granted = granted;
	url = challenge != NULL ? oauth_begin_login(svc, id, l.url, challenge, &login, redirect,
	    &direct, &why) : NULL;
	/* A machine client (client credentials): signed in already. */
	if (url == NULL && direct.access_token != NULL) {
		signed_in = connector_store_oauth_token(svc, id, direct.access_token,
		    direct.refresh_record, direct.scope, &why) &&
		    connector_oauth_keep_dpop(svc, id, direct.dpop_key, &why);
		secrets_plain_free(direct.access_token);
		secrets_plain_free(direct.refresh_record);
		secrets_plain_free(direct.dpop_key);
	}
	free(challenge);
	free(granted);
	if (signed_in) {
		*out = connector_login_signed_in(id, &login);
	} else if (url == NULL) {
		rc = problem_set(p, TD_INVALID_REQUEST, NULL, "cannot sign in to %s: %s", l.name,
		    why != NULL ? why : err);
	} else {
		*out = cJSON_CreateObject();
		cJSON_AddStringToObject(*out, "authorizationUrl", url);
		cJSON_AddStringToObject(*out, "redirectUri", redirect);
	}
	connector_launch_free(&l);
	free(url);
	free(why);
	free(redirect);
	return rc;
}

enum td_code
connector_login_finish(struct service *svc, const char *state, const char *code,
    const char *error, const char *iss, cJSON **out, struct problem *p)
{
	struct oauth_result res;
	char *why = NULL;
	enum td_code rc = TD_OK;

	*out = NULL;
	if (!oauth_finish(svc, state, code, error, iss, &res, &why) ||
	    !connector_store_oauth_token(svc, res.connector_id, res.access_token,
	    res.refresh_record, res.scope, &why) ||
	    !connector_oauth_keep_dpop(svc, res.connector_id, res.dpop_key, &why)) {
		log_warn("oauth: a sign-in of %s failed: %s",
		    res.connector_id[0] ? res.connector_id : "(unknown)", why);
		rc = problem_set(p, TD_INVALID_REQUEST, NULL, "taskdeck: the sign-in failed: %s",
		    why);
		free(why);
	} else {
		log_info("oauth: connector %s signed in", res.connector_id);
		*out = cJSON_CreateObject();
		cJSON_AddStringToObject(*out, "connectorId", res.connector_id);
		cJSON_AddStringToObject(*out, "message",
		    "taskdeck: signed in; you can close this window.");
	}
	secrets_plain_free(res.access_token);
	secrets_plain_free(res.refresh_record);
	secrets_plain_free(res.dpop_key);
	return rc;
}
