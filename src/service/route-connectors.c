/* Connectors (docs/http-api.md, Connectors); the definitions live in connectors.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "routes.h"
#include "xalloc.h"

/* Answers a refusal from connectors.c or credentials.c. */
void
route_conn_problem(struct http_response *r, struct conn_problem *p)
{
	cJSON *details = p->details ? p->details : cJSON_CreateObject();

	p->details = NULL;
	if (p->code == TD_NOT_FOUND) {
		cJSON_AddStringToObject(details, "resource", p->field);
	} else if (p->field[0] != '\0') {
		cJSON_AddStringToObject(details, "field", p->field);
	}
	http_error(r, p->code, details, "%s", p->message);
}

/* Parses ?cursor= for a list of prefix ids (extra: one more id allowed); false after a 400. */
bool
route_conn_cursor(struct http_request *req, struct http_response *r, const char *prefix,
    const char *extra, const char **cursor)
{
	*cursor = http_query(req, "cursor");
	if (*cursor == NULL || td_id_valid(*cursor, prefix) ||
	    (extra != NULL && strcmp(*cursor, extra) == 0))
		return true;
	cJSON *details = cJSON_CreateObject();
	cJSON_AddStringToObject(details, "parameter", "cursor");
	http_error(r, TD_INVALID_REQUEST, details, "cursor is not a %s id", prefix);
	return false;
}

/* A list answer with its Link header when next is set. */
void
route_conn_page(struct http_response *r, const char *collection, int limit,
    const char *next, cJSON *arr)
{
	if (next[0] != '\0') {
		char *link = xasprintf("</api/v1/%s?limit=%d&cursor=%s>; rel=\"next\"",
		    collection, limit, next);
		http_add_header(r, "Link", link);
		free(link);
	}
	http_json(r, 200, arr);
}

void
route_connectors_list(struct http_request *req, struct http_response *r)
{
	const char *cursor;
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit) ||
	    !route_conn_cursor(req, r, "con", CONNECTOR_WEB_ID, &cursor))
		return;
	arr = connectors_list(req->svc, cursor, limit, next);
	route_conn_page(r, "connectors", limit, next, arr);
}

void
route_connectors_get(struct http_request *req, struct http_response *r)
{
	cJSON *c = connector_get(req->svc, req->params[0]);

	if (c == NULL)
		http_not_found(r, "connector", req->params[0]);
	else
		http_json(r, 200, c);
}

void
route_connectors_create(struct http_request *req, struct http_response *r)
{
	struct conn_problem p = { 0 };
	cJSON *c;

	if (connector_add(req->svc, req->json, &c, &p) != TD_OK)
		return route_conn_problem(r, &p);
	char *location = xasprintf("/api/v1/connectors/%s", json_get_string(c, "id"));
	http_add_header(r, "Location", location);
	free(location);
	http_json(r, 201, c);
}

void
route_connectors_update(struct http_request *req, struct http_response *r)
{
	struct conn_problem p = { 0 };
	cJSON *c;

	if (connector_update(req->svc, req->params[0], req->json, &c, &p) != TD_OK)
		return route_conn_problem(r, &p);
	http_json(r, 200, c);
}

void
route_connectors_enabled(struct http_request *req, struct http_response *r)
{
	static const char *const fields[] = { "enabled", NULL };
	const cJSON *enabled = cJSON_GetObjectItemCaseSensitive(req->json, "enabled");
	struct conn_problem p = { 0 };
	const char *bad = NULL;
	cJSON *c;

	if (!json_only_keys(req->json, fields, &bad))
		return http_bad_field(r, bad, "unknown field %.64s", bad);
	if (!cJSON_IsBool(enabled))
		return http_bad_field(r, "enabled", "enabled must be true or false");
	if (connector_set_enabled(req->svc, req->params[0], cJSON_IsTrue(enabled), &c, &p) != TD_OK)
		return route_conn_problem(r, &p);
	http_json(r, 200, c);
}

void
route_connectors_remove(struct http_request *req, struct http_response *r)
{
	struct conn_problem p = { 0 };

	if (connector_remove(req->svc, req->params[0], &p) != TD_OK)
		return route_conn_problem(r, &p);
	http_json(r, 200, cJSON_CreateObject());
}
