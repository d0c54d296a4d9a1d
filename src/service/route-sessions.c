/* Sessions and their configuration (docs/http-api.md, Sessions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "resource.h"
#include "routes.h"
#include "session-delete.h"
#include "sessions.h"
#include "service.h"
#include "store.h"

void
route_sessions_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *project = http_query(req, "project");
	const char *cursor = http_query(req, "cursor");
	const char *archived = http_query(req, "archived");
	enum resource_archived which;
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (project == NULL || !id_valid(project, "prj") ||
	    (cursor != NULL && !id_valid(cursor, "ses"))) {
		return http_bad_parameter(r, project == NULL || !id_valid(project, "prj") ?
		    "project" : "cursor", "project must be a project id and cursor a session id");
	}
	if (!resource_archived_parse(archived, &which))
		return http_bad_parameter(r, "archived", "archived must be false, true or all");
	store_lock(st);
	arr = sessions_list(st, project, cursor, limit, which, next);
	store_unlock(st);
	if (arr == NULL) {
		http_not_found(r, "project", project);
		return;
	}
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/sessions?project=%s&limit=%d&cursor=%s%s%s", project,
		    limit, next, archived != NULL ? "&archived=" : "",
		    archived != NULL ? archived : "");
	http_json(r, 200, arr);
}

void
route_sessions_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	cJSON *j;

	store_lock(st);
	j = session_load(st, req->params[0]);
	store_unlock(st);
	http_json_found(r, j, "session", req->params[0]);
}

void
route_sessions_update(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "archived", NULL };
	const cJSON *archived = cJSON_GetObjectItemCaseSensitive(req->json, "archived");
	struct problem p = { 0 };
	const char *bad = NULL;
	cJSON *j;

	if (!json_only_keys(req->json, body_fields, &bad))
		return http_bad_field(r, bad, "unknown field %s", bad);
	if (!cJSON_IsBool(archived))
		return http_bad_field(r, "archived", "archived must be true or false");
	j = sessions_archive_request(req->svc, req->params[0], cJSON_IsTrue(archived), &p);
	if (j == NULL)
		return http_problem(r, &p);
	http_json(r, 200, j);
}

void
route_sessions_delete(struct http_request *req, struct http_response *r)
{
	const char *force = http_query(req, "force");
	struct problem p = { 0 };
	int status;
	cJSON *j;

	if (force != NULL && strcmp(force, "true") != 0 && strcmp(force, "false") != 0)
		return http_bad_parameter(r, "force", "force must be true or false");
	j = session_delete_request(req->svc, req->params[0],
	    force != NULL && strcmp(force, "true") == 0, &status, &p);
	if (j == NULL)
		return http_problem(r, &p);
	http_json(r, status, j);
}

void
route_session_config_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	long revision;
	cJSON *j;

	store_lock(st);
	j = sessions_config_load(st, req->params[0], &revision);
	store_unlock(st);
	http_json_found(r, j, "session", req->params[0]);
}

void
route_session_config_update(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "expectedRevision", "patch", NULL };
	const cJSON *patch = cJSON_GetObjectItemCaseSensitive(req->json, "patch");
	const cJSON *expected = cJSON_GetObjectItemCaseSensitive(req->json, "expectedRevision");
	struct problem p = { 0 };
	const char *bad = NULL;
	cJSON *cfg;

	if (!json_only_keys(req->json, body_fields, &bad))
		return http_bad_field(r, bad, "unknown field %s", bad);
	if (!json_check_int(req->json, "expectedRevision", 1, 1e15) || expected == NULL)
		return http_bad_field(r, "expectedRevision",
		    "expectedRevision must be the revision you read (an integer from 1)");
	if (patch == NULL)
		return http_bad_field(r, "patch", "patch must be an object");
	if (!config_types_valid(patch, "patch", &p))
		return http_problem(r, &p);
	cfg = sessions_config_update(req->svc, req->params[0], (long)expected->valuedouble, patch,
	    &p);
	if (cfg == NULL)
		return http_problem(r, &p);
	http_json(r, 200, cfg);
}
