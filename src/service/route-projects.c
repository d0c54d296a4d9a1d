/* Projects and their session defaults (docs/http-api.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "resource.h"
#include "routes.h"
#include "projects.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define DESCRIPTION_MAX_CHARS 10000
#define CONTEXT_MAX_CHARS 100000

static const char *const project_fields[] = { "name", "description", "context",
	"metadata", NULL };
/* What a PATCH may carry: the fields and archived (true or false). */
static const char *const patch_fields[] = { "name", "description", "context",
	"metadata", "archived", NULL };
static const char *const readonly_fields[] = { "id", "createdAt", "updatedAt",
	"archivedAt", NULL };

/*
 * Checks the project fields present in body (a create body or a merge
 * patch); on a problem answers 400 and returns false.
 */
static bool
project_fields_valid(const cJSON *body, bool creating, struct http_response *r)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(body, "metadata");
	const char *bad = NULL;

	for (const char *const *f = readonly_fields; *f; f++) {
		if (cJSON_GetObjectItemCaseSensitive(body, *f) != NULL) {
			http_bad_field(r, *f, "%s is read-only", *f);
			return false;
		}
	}
	if (!json_only_keys(body, creating ? project_fields : patch_fields, &bad)) {
		http_bad_field(r, bad, "unknown field %s", bad);
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(body, "archived") != NULL &&
	    !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(body, "archived"))) {
		http_bad_field(r, "archived", "archived must be true or false");
		return false;
	}
	if (!json_check_string(body, "name", creating, false, 1, NAME_MAX_CHARS) ||
	    (json_get_string(body, "name") != NULL &&
	    !json_text_displayable(json_get_string(body, "name")))) {
		http_bad_field(r, "name", "name must be a string of 1 to %d characters, without "
		    "control or bidirectional characters", NAME_MAX_CHARS);
		return false;
	}
	if (!json_check_string(body, "description", false, true, 0, DESCRIPTION_MAX_CHARS)) {
		http_bad_field(r, "description",
		    "description must be a string of at most %d characters",
		    DESCRIPTION_MAX_CHARS);
		return false;
	}
	if (!json_check_string(body, "context", false, true, 0, CONTEXT_MAX_CHARS)) {
		http_bad_field(r, "context",
		    "context must be a string of at most %d characters", CONTEXT_MAX_CHARS);
		return false;
	}
	if (meta != NULL && !cJSON_IsObject(meta) && !cJSON_IsNull(meta)) {
		http_bad_field(r, "metadata", "metadata must be an object");
		return false;
	}
	return true;
}

void
route_projects_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *cursor = http_query(req, "cursor");
	const char *archived = http_query(req, "archived");
	enum resource_archived which;
	char next[TD_ID_MAX];
	cJSON *arr;
	int limit;

	if (!http_query_limit(req, r, &limit))
		return;
	if (cursor != NULL && !id_valid(cursor, "prj"))
		return http_bad_parameter(r, "cursor", "cursor is not a project id");
	if (!resource_archived_parse(archived, &which))
		return http_bad_parameter(r, "archived", "archived must be false, true or all");
	store_lock(st);
	arr = projects_list(st, cursor, limit, which, next);
	store_unlock(st);
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/projects?limit=%d&cursor=%s%s%s", limit, next,
		    archived != NULL ? "&archived=" : "", archived != NULL ? archived : "");
	http_json(r, 200, arr);
}

void
route_projects_create(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	char id[TD_ID_MAX], *location;
	cJSON *project;

	if (!project_fields_valid(req->json, true, r))
		return;
	project = projects_create_request(req->svc, req->json, id, &p);
	if (project == NULL)
		return http_problem(r, &p);
	location = xasprintf("/api/v1/projects/%s", id);
	http_add_header(r, "Location", location);
	free(location);
	http_json(r, 201, project);
}

void
route_projects_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *id = req->params[0];
	cJSON *project;
	char *text;
	size_t len;

	if ((text = cache_get(req->svc->cache, id, &len)) != NULL) {
		http_json_text(r, 200, text, len);
		return;
	}
	store_lock(st);
	project = projects_load(st, id);
	if (project != NULL) {
		text = json_print(project);
		cache_put(req->svc->cache, id, text);
	}
	store_unlock(st);
	cJSON_Delete(project);
	if (text == NULL)
		http_not_found(r, "project", id);
	else
		http_json_text(r, 200, text, strlen(text));
}

void
route_projects_update(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *project;

	if (!project_fields_valid(req->json, false, r))
		return;
	project = projects_update_request(req->svc, req->params[0], req->json, &p);
	if (project == NULL)
		return http_problem(r, &p);
	http_json(r, 200, project);
}

void
route_defaults_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	int64_t updated;
	cJSON *res;

	store_lock(st);
	res = projects_defaults_load(st, req->params[0], &updated);
	store_unlock(st);
	http_json_found(r, res, "project", req->params[0]);
}

static bool
defaults_patch_valid(const cJSON *patch, struct http_response *r)
{
	const char *bad = NULL;

	if (!json_only_keys(patch, projects_default_fields, &bad)) {
		http_bad_field(r, bad, "unknown default %s", bad);
		return false;
	}
	if (!json_check_enum(patch, "framework", true, resource_frameworks)) {
		http_bad_field(r, "framework", "framework must be taskdeck, claude-code, codex, acp or null");
		return false;
	}
	if (!json_check_enum(patch, "effort", true, resource_efforts)) {
		http_bad_field(r, "effort", "effort must be low, medium, high or null");
		return false;
	}
	if (!json_check_enum(patch, "permissionProfile", true, resource_profiles)) {
		http_bad_field(r, "permissionProfile", "permissionProfile must be ask, "
		    "workspace-write, read-only, full-access or null");
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(patch, "network") != NULL &&
	    !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(patch, "network")) &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(patch, "network"))) {
		http_bad_field(r, "network", "network must be true, false or null");
		return false;
	}
	if (!json_check_string(patch, "provider", false, true, 1, NAME_MAX_CHARS)) {
		http_bad_field(r, "provider", "provider must be a string of 1 to %d characters or null",
		    NAME_MAX_CHARS);
		return false;
	}
	if (!json_check_string(patch, "model", false, true, 1, NAME_MAX_CHARS)) {
		http_bad_field(r, "model", "model must be a string of 1 to %d characters or null",
		    NAME_MAX_CHARS);
		return false;
	}
	return true;
}

void
route_defaults_update(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "expectedUpdatedAt", "patch", NULL };
	const cJSON *patch = cJSON_GetObjectItemCaseSensitive(req->json, "patch");
	const char *expected_text = json_get_string(req->json, "expectedUpdatedAt");
	struct problem p = { 0 };
	const char *bad = NULL;
	int64_t expected;
	cJSON *res;

	if (!json_only_keys(req->json, body_fields, &bad))
		return http_bad_field(r, bad, "unknown field %s", bad);
	if (expected_text == NULL || !time_parse_utc(expected_text, &expected))
		return http_bad_field(r, "expectedUpdatedAt", "expectedUpdatedAt must be the "
		    "updatedAt you read (RFC 3339 with milliseconds)");
	if (!cJSON_IsObject(patch))
		return http_bad_field(r, "patch", "patch must be an object");
	if (!defaults_patch_valid(patch, r))
		return;
	res = projects_defaults_update(req->svc, req->params[0], expected, expected_text, patch,
	    &p);
	if (res == NULL)
		return http_problem(r, &p);
	http_json(r, 200, res);
}
