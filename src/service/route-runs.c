/* Runs: admission, reading, listing and cancelling (docs/http-api.md, Runs). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "projects.h"
#include "resource.h"
#include "routes.h"
#include "runs-write.h"
#include "runs.h"
#include "sessions.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "xalloc.h"

#define PROMPT_MAX_CHARS 100000

static const char *const run_request_fields[] = { "project", "prompt", "permissionProfile",
	"turnIntent", "cwd", "sessionId", "config", "network", NULL };
static const char *const turn_intents[] = { "plan-first", NULL };
static const char *const run_statuses[] = { "queued", "running", "completed", "failed",
	"cancelled", NULL };


/* Renders the run into r from the cache or the store (and caches it). */
static void
run_answer(struct service *svc, const char *id, int status, struct http_response *r)
{
	char *text;
	size_t len;
	cJSON *run;

	if ((text = cache_get(svc->cache, id, &len)) != NULL) {
		http_json_text(r, status, text, len);
		return;
	}
	store_lock(svc->store);
	run = run_load(svc->store, id);
	if (run != NULL) {
		run_add_cost(svc->settings, run);	/* settings do not change while it is cached */
		text = json_print(run);
		cache_put(svc->cache, id, text);
	}
	store_unlock(svc->store);
	cJSON_Delete(run);
	if (text == NULL)
		http_not_found(r, "run", id);
	else
		http_json_text(r, status, text, strlen(text));
}

void
route_runs_get(struct http_request *req, struct http_response *r)
{
	run_answer(req->svc, req->params[0], 200, r);
}

void
route_runs_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *session = http_query(req, "session");
	const char *project = http_query(req, "project");
	const char *status = http_query(req, "status");
	const char *cursor = http_query(req, "cursor");
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (session == NULL && project == NULL)
		return http_bad_parameter(r, "session", "give session=ID or project=ID");
	if (session != NULL && !id_valid(session, "ses"))
		return http_bad_parameter(r, "session", "session must be a session id");
	if (project != NULL && !id_valid(project, "prj"))
		return http_bad_parameter(r, "project", "project must be a project id");
	if (cursor != NULL && !id_valid(cursor, "run"))
		return http_bad_parameter(r, "cursor", "cursor must be a run id");
	if (status != NULL) {
		bool known = false;
		for (const char *const *v = run_statuses; *v; v++)
			known = known || strcmp(*v, status) == 0;
		if (!known)
			return http_bad_parameter(r, "status", "status must be queued, running, "
			    "completed, failed or cancelled");
	}
	store_lock(st);
	arr = runs_list(st, session, project, status, cursor, limit, next);
	store_unlock(st);
	for (cJSON *run = arr->child; run != NULL; run = run->next)
		run_add_cost(req->svc->settings, run);
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/runs?%s%s%s%s%s%s&limit=%d&cursor=%s",
		    session ? "session=" : "", session ? session : "",
		    project ? (session ? "&project=" : "project=") : "", project ? project : "",
		    status ? "&status=" : "", status ? status : "", limit, next);
	http_json(r, 200, arr);
}

static bool
run_request_valid(const cJSON *body, struct http_response *r)
{
	const char *bad = NULL;
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	struct problem p = { 0 };

	if (!json_only_keys(body, run_request_fields, &bad)) {
		http_bad_field(r, bad, "unknown field %s", bad);
		return false;
	}
	if (!json_check_string(body, "project", true, false, 1, TD_ID_MAX) ||
	    !id_valid(json_get_string(body, "project"), "prj")) {
		http_bad_field(r, "project", "project must be a project id");
		return false;
	}
	if (!json_check_string(body, "prompt", true, false, 1, PROMPT_MAX_CHARS)) {
		http_bad_field(r, "prompt", "prompt must be a string of 1 to %d characters",
		    PROMPT_MAX_CHARS);
		return false;
	}
	if (!json_check_enum(body, "permissionProfile", true, resource_profiles)) {
		http_bad_field(r, "permissionProfile", "permissionProfile must be ask, "
		    "workspace-write, read-only or full-access");
		return false;
	}
	if (!json_check_enum(body, "turnIntent", true, turn_intents)) {
		http_bad_field(r, "turnIntent", "turnIntent must be plan-first or null");
		return false;
	}
	if (!json_check_string(body, "cwd", false, true, 1, PATH_MAX * 4)) {
		http_bad_field(r, "cwd", "cwd must be an absolute path");
		return false;
	}
	if (!json_check_string(body, "sessionId", false, true, 1, TD_ID_MAX) ||
	    (json_get_string(body, "sessionId") != NULL &&
	    !id_valid(json_get_string(body, "sessionId"), "ses"))) {
		http_bad_field(r, "sessionId", "sessionId must be a session id");
		return false;
	}
	if (config != NULL && !cJSON_IsNull(config) && !config_types_valid(config, "config", &p)) {
		http_problem(r, &p);
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(body, "network") != NULL &&
	    !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(body, "network")) &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "network"))) {
		http_bad_field(r, "network", "network must be true, false or null");
		return false;
	}
	return true;
}

void
route_runs_create(struct http_request *req, struct http_response *r)
{
	const cJSON *body = req->json;
	const char *session = json_get_string(body, "sessionId");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	char run_id[TD_ID_MAX], *location;
	struct problem p = { 0 };

	if (!run_request_valid(body, r))
		return;
	if (session != NULL && config != NULL && !cJSON_IsNull(config))
		return http_bad_field(r, "config", "a run in an existing session uses the "
		    "session's configuration; change it with PATCH /api/v1/sessions/%s/config",
		    session);
	if (!runs_create(req->svc, body, run_id, &p))
		return http_problem(r, &p);
	location = xasprintf("/api/v1/runs/%s", run_id);
	http_add_header(r, "Location", location);
	free(location);
	run_answer(req->svc, run_id, 201, r);
}

void
route_runs_cancel(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };

	if (!runs_cancel(req->svc, req->params[0], &p))
		return http_problem(r, &p);
	run_answer(req->svc, req->params[0], 200, r);
}

/* GET /sessions/:id/usage and /projects/:id/usage: the usage of their runs. */
static void
usage_answer(struct http_request *req, struct http_response *r, bool session)
{
	struct store *st = req->svc->store;
	const char *id = req->params[0];
	cJSON *j = NULL, *owner;

	store_lock(st);
	owner = session ? session_load(st, id) : projects_load(st, id);
	if (owner != NULL)
		j = runs_usage(st, req->svc->settings, session ? id : NULL, session ? NULL : id);
	store_unlock(st);
	cJSON_Delete(owner);
	http_json_found(r, j, session ? "session" : "project", id);
}

void
route_sessions_usage(struct http_request *req, struct http_response *r)
{
	usage_answer(req, r, true);
}

void
route_projects_usage(struct http_request *req, struct http_response *r)
{
	usage_answer(req, r, false);
}
