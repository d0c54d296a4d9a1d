/*
 * Signing in to an HTTP connector (docs/connectors.md, "Signing in"):
 * POST /api/v1/connectors/:id/login begins it and answers the authorization
 * URL; the browser comes back to GET /oauth/callback on this loopback port,
 * where the code becomes a token (connector-login.h).  The token is never
 * shown.
 */
#include <string.h>

#include <sodium.h>

#include "connector-login.h"
#include "http.h"
#include "json.h"
#include "routes.h"

/* Wipes the secrets a sign-in's body carried, and frees it. */
static void
route_login_wipe(cJSON *body)
{
	static const char *const secrets[] = { "clientSecret", "clientKey", "idToken", NULL };

	for (const char *const *f = secrets; cJSON_IsObject(body) && *f != NULL; f++) {
		cJSON *s = cJSON_GetObjectItemCaseSensitive(body, *f);

		if (cJSON_IsString(s))
			sodium_memzero(s->valuestring, strlen(s->valuestring));
	}
	cJSON_Delete(body);
}

void
route_connectors_login(struct http_request *req, struct http_response *r)
{
	static const char *const fields[] = { "clientId", "clientSecret", "clientKey", "scope",
		"idToken", "idpTokenEndpoint", "idpClientId", "workloadTokenFile", NULL };
	bool given = req->body != NULL && req->body_len > 0;
	cJSON *body = given ? json_parse(req->body, req->body_len) : NULL, *out;
	struct problem p = { 0 };
	const char *bad = NULL;

	if (given && !cJSON_IsObject(body))
		http_error(r, TD_INVALID_REQUEST, NULL, "the body must be a JSON object");
	else if (body != NULL && !json_only_keys(body, fields, &bad))
		http_bad_field(r, bad, "unknown field %.64s", bad);	/* bad is body's: before it goes */
	else if (connector_login(req->svc, req->params[0], body, &out, &p) != TD_OK)
		http_problem(r, &p);
	else
		http_json(r, 200, out);
	route_login_wipe(body);
}

void
route_oauth_callback(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *out;

	if (connector_login_finish(req->svc, http_query(req, "state"), http_query(req, "code"),
	    http_query(req, "error"), http_query(req, "iss"), &out, &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, out);
}
