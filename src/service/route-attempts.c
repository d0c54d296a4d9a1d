/* Attempts: a group of runs of one prompt and its apply (docs/http-api.md, Attempts). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attempts.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "paths.h"
#include "problem.h"
#include "resource.h"
#include "routes.h"
#include "service.h"
#include "sessions.h"
#include "xalloc.h"

#define ATTEMPTS_PROMPT_MAX 100000
#define ATTEMPTS_MODEL_MAX 200

static const char *const attempts_fields[] = { "project", "prompt", "attempts", "models",
	"check", "cwd", "config", "permissionProfile", "network", NULL };

/* The canonical cwd into out; else answers 400 invalid_cwd. */
static bool
attempts_cwd(struct service *svc, const char *cwd, char *out, struct http_response *r)
{
	const struct td_paths *p = &svc->paths;
	const char *reason = NULL;
	struct stat sb;
	cJSON *details;

	if (cwd[0] != '/')
		reason = "not-absolute";
	else if (strlen(cwd) >= PATH_MAX || realpath(cwd, out) == NULL)
		reason = "not-found";
	else if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode))
		reason = "not-a-directory";
	else if (access(out, R_OK | W_OK | X_OK) != 0)
		reason = "not-writable";
	else if (strcmp(out, "/") == 0)
		reason = "filesystem-root";
	else if (paths_within(out, p->workspaces))
		reason = "session-workspace";
	else if (paths_within(out, p->config_dir) || paths_within(out, p->data_dir) ||
	    paths_within(out, p->runtime_dir))
		reason = "taskdeck-directory";
	if (reason == NULL)
		return true;
	details = cJSON_CreateObject();
	cJSON_AddStringToObject(details, "field", "cwd");
	cJSON_AddStringToObject(details, "reason", reason);
	http_error(r, TD_INVALID_CWD, details, "The working directory %s is not usable for "
	    "attempts (%s).", cwd, reason);
	return false;
}

/* Checks the body of POST /attempts; answers 400 and returns false on a problem. */
static bool
attempts_body_valid(const cJSON *body, struct http_response *r)
{
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(body, "models");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	const cJSON *m;
	const char *bad = NULL;
	struct problem p = { 0 };

	if (!json_only_keys(body, attempts_fields, &bad))
		return http_bad_field(r, bad, "unknown field %s", bad), false;
	if (!json_check_string(body, "project", true, false, 1, TD_ID_MAX) ||
	    !id_valid(json_get_string(body, "project"), "prj"))
		return http_bad_field(r, "project", "project must be a project id"), false;
	if (!json_check_string(body, "prompt", true, false, 1, ATTEMPTS_PROMPT_MAX))
		return http_bad_field(r, "prompt", "prompt must be a string of 1 to %d "
		    "characters", ATTEMPTS_PROMPT_MAX), false;
	if (cJSON_GetObjectItemCaseSensitive(body, "attempts") == NULL ||
	    !json_check_int(body, "attempts", 1, ATTEMPTS_MAX))
		return http_bad_field(r, "attempts", "attempts must be an integer from 1 to %d",
		    ATTEMPTS_MAX), false;
	if (!json_check_string(body, "cwd", true, false, 1, PATH_MAX))
		return http_bad_field(r, "cwd", "cwd must be the absolute path of the directory "
		    "the attempts start from"), false;
	if (!json_check_string(body, "check", false, true, 1, ATTEMPTS_CHECK_MAX))
		return http_bad_field(r, "check", "check must be a shell command of 1 to %d "
		    "bytes, or null", ATTEMPTS_CHECK_MAX), false;
	if (models != NULL && !cJSON_IsNull(models)) {
		if (!cJSON_IsArray(models) || cJSON_GetArraySize(models) < 1 ||
		    cJSON_GetArraySize(models) > ATTEMPTS_MAX)
			return http_bad_field(r, "models", "models must be a list of 1 to %d model "
			    "names", ATTEMPTS_MAX), false;
		cJSON_ArrayForEach(m, models) {
			if (!cJSON_IsString(m) || m->valuestring[0] == '\0' ||
			    strlen(m->valuestring) > ATTEMPTS_MODEL_MAX)
				return http_bad_field(r, "models", "each model must be a name of 1 "
				    "to %d characters", ATTEMPTS_MODEL_MAX), false;
		}
	}
	if (!json_check_enum(body, "permissionProfile", true, resource_profiles))
		return http_bad_field(r, "permissionProfile", "permissionProfile must be ask, "
		    "workspace-write, read-only or full-access"), false;
	if (cJSON_GetObjectItemCaseSensitive(body, "network") != NULL &&
	    !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(body, "network")) &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "network")))
		return http_bad_field(r, "network", "network must be true, false or null"), false;
	if (config != NULL && !cJSON_IsNull(config) && !config_types_valid(config, "config", &p))
		return http_problem(r, &p), false;
	return true;
}

void
route_attempts_create(struct http_request *req, struct http_response *r)
{
	const cJSON *body = req->json;
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(body, "models");
	char cwd[PATH_MAX];
	struct problem p = { 0 };
	struct attempts_request rq;
	cJSON *g;

	if (!attempts_body_valid(body, r) ||
	    !attempts_cwd(req->svc, json_get_string(body, "cwd"), cwd, r))
		return;
	rq = (struct attempts_request){
		.project = json_get_string(body, "project"),
		.prompt = json_get_string(body, "prompt"),
		.cwd = cwd,
		.check = json_get_string(body, "check"),
		.count = (int)cJSON_GetObjectItemCaseSensitive(body, "attempts")->valuedouble,
		.models = cJSON_IsArray(models) ? models : NULL,
		.config = cJSON_GetObjectItemCaseSensitive(body, "config"),
		.profile = json_get_string(body, "permissionProfile"),
		.network = cJSON_GetObjectItemCaseSensitive(body, "network"),
	};
	if ((g = attempts_create(req->svc, &rq, &p)) == NULL)
		return http_problem(r, &p);
	{
		char *location = xasprintf("/api/v1/attempts/%s", json_get_string(g, "id"));

		http_add_header(r, "Location", location);
		free(location);
	}
	http_json(r, 201, g);
}

void
route_attempts_list(struct http_request *req, struct http_response *r)
{
	const char *project = http_query(req, "project");
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (project == NULL || !id_valid(project, "prj"))
		return http_bad_parameter(r, "project", "project must be a project id");
	arr = attempts_list(req->svc, project, limit);
	if (arr == NULL)
		return http_not_found(r, "project", project);
	http_json(r, 200, arr);
}

void
route_attempts_get(struct http_request *req, struct http_response *r)
{
	http_json_found(r, attempts_load(req->svc, req->params[0]), "attempts", req->params[0]);
}

void
route_attempts_discard_group(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *g = attempts_discard(req->svc, req->params[0], NULL, &p);

	if (g == NULL)
		return http_problem(r, &p);
	http_json(r, 200, g);
}

void
route_attempts_revert(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *g = attempts_revert(req->svc, req->params[0], &p);

	if (g == NULL)
		return http_problem(r, &p);
	http_json(r, 200, g);
}

void
route_runs_apply(struct http_request *req, struct http_response *r)
{
	static const char *const fields[] = { "keep", NULL };
	const char *bad = NULL;
	struct problem p = { 0 };
	cJSON *body = NULL, *g = NULL;

	if (req->body != NULL && req->body_len > 0) {
		body = cJSON_ParseWithLength(req->body, req->body_len);
		if (!cJSON_IsObject(body))
			http_error(r, TD_INVALID_REQUEST, NULL, "The body must be a JSON object.");
		else if (!json_only_keys(body, fields, &bad))
			http_bad_field(r, bad, "unknown field %s", bad);
		else if (!json_check_bool(body, "keep"))
			http_bad_field(r, "keep", "keep must be true or false");
		else
			goto valid;
		cJSON_Delete(body);
		return;
	}
valid:
	g = attempts_apply(req->svc, req->params[0],
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "keep")), &p);
	cJSON_Delete(body);
	if (g == NULL)
		return http_problem(r, &p);
	http_json(r, 200, g);
}

void
route_runs_discard(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *g = attempts_discard(req->svc, NULL, req->params[0], &p);

	if (g == NULL)
		return http_problem(r, &p);
	http_json(r, 200, g);
}
