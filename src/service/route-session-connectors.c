/* A session created before its first run, and its own connectors (docs/http-api.md, Sessions). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "http.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "routes.h"
#include "service.h"
#include "session-connectors.h"
#include "session-create.h"
#include "sessions.h"
#include "xalloc.h"

void
route_sessions_create(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "project", "title", "cwd", "config",
		"connectors", NULL };
	const cJSON *body = req->json;
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	struct problem p = { 0 };
	const char *bad = NULL;
	char *location;
	cJSON *j;

	if (!json_only_keys(body, body_fields, &bad))
		return http_bad_field(r, bad, "unknown field %s", bad);
	if (!json_check_string(body, "project", true, false, 1, TD_ID_MAX) ||
	    !id_valid(json_get_string(body, "project"), "prj"))
		return http_bad_field(r, "project", "project must be a project id");
	if (!json_check_string(body, "title", false, false, 1, SESSION_TITLE_MAX * 4))
		return http_bad_field(r, "title", "title must be a string of 1 to %d characters",
		    SESSION_TITLE_MAX);
	if (!json_check_string(body, "cwd", false, false, 1, PATH_MAX * 4))
		return http_bad_field(r, "cwd", "cwd must be an absolute path");
	if ((config != NULL && !cJSON_IsNull(config) &&
	    !config_types_valid(config, "config", &p)) ||
	    !session_connectors_valid(cJSON_GetObjectItemCaseSensitive(body, "connectors"),
	    "connectors", &p))
		return http_problem(r, &p);
	if ((j = session_create(req->svc, body, &p)) == NULL)
		return http_problem(r, &p);
	location = xasprintf("/api/v1/sessions/%s", json_get_string(j, "id"));
	http_add_header(r, "Location", location);
	free(location);
	http_json(r, 201, j);
}

void
route_session_connectors_get(struct http_request *req, struct http_response *r)
{
	http_json_found(r, session_connectors_get(req->svc, req->params[0]), "session",
	    req->params[0]);
}

void
route_session_connectors_put(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "connectors", NULL };
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(req->json, "connectors");
	struct problem p = { 0 };
	const char *bad = NULL;
	cJSON *j;

	if (!json_only_keys(req->json, body_fields, &bad))
		return http_bad_field(r, bad, "unknown field %s", bad);
	if (!cJSON_IsArray(list))
		return http_bad_field(r, "connectors", "connectors must be an array of MCP servers");
	if (!session_connectors_valid(list, "connectors", &p))
		return http_problem(r, &p);
	if ((j = session_connectors_set(req->svc, req->params[0], list, &p)) == NULL)
		return http_problem(r, &p);
	http_json(r, 200, j);
}
