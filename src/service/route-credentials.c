/* Credentials (docs/http-api.md, Credentials): metadata out, secrets only in. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "credentials.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "routes.h"
#include "xalloc.h"

/* Wipes the parsed copy of a secret in a request body (http.c wipes the raw one). */
static void
wipe_secret(cJSON *body)
{
	cJSON *secret = cJSON_GetObjectItemCaseSensitive(body, "secret");

	if (cJSON_IsString(secret))
		sodium_memzero(secret->valuestring, strlen(secret->valuestring));
}

void
route_credentials_list(struct http_request *req, struct http_response *r)
{
	const char *cursor;
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit) ||
	    !route_conn_cursor(req, r, "cred", NULL, &cursor))
		return;
	arr = credentials_list(req->svc, cursor, limit, next);
	route_conn_page(r, "credentials", limit, next, arr);
}

void
route_credentials_get(struct http_request *req, struct http_response *r)
{
	cJSON *c = credential_get(req->svc, req->params[0]);

	http_json_found(r, c, "credential", req->params[0]);
}

void
route_credentials_create(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *c;

	enum td_code rc = credential_create(req->svc, req->json, &c, &p);

	wipe_secret(req->json);
	if (rc != TD_OK)
		return http_problem(r, &p);
	char *location = xasprintf("/api/v1/credentials/%s", json_get_string(c, "id"));
	http_add_header(r, "Location", location);
	free(location);
	http_json(r, 201, c);
}

void
route_credentials_update(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *c;

	enum td_code rc = credential_update(req->svc, req->params[0], req->json, &c, &p);

	wipe_secret(req->json);
	if (rc != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, c);
}

void
route_credentials_delete(struct http_request *req, struct http_response *r)
{
	const char *force = http_query(req, "force");
	struct problem p = { 0 };

	if (force != NULL && strcmp(force, "true") != 0 && strcmp(force, "false") != 0) {
		return http_bad_parameter(r, "force", "force must be true or false");
	}
	if (credential_delete(req->svc, req->params[0], force != NULL &&
	    strcmp(force, "true") == 0, &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, cJSON_CreateObject());
}
