/* Runs: admission, reading, listing and cancelling (docs/http-api.md, Runs). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "changes.h"
#include "events.h"
#include "frameworks.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "problem.h"
#include "projects.h"
#include "resource.h"
#include "routes.h"
#include "runs.h"
#include "service.h"
#include "sessions.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
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
	if (session != NULL && !td_id_valid(session, "ses"))
		return http_bad_parameter(r, "session", "session must be a session id");
	if (project != NULL && !td_id_valid(project, "prj"))
		return http_bad_parameter(r, "project", "project must be a project id");
	if (cursor != NULL && !td_id_valid(cursor, "run"))
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

/*
 * Canonicalizes a requested cwd into out (PATH_MAX bytes).  On a problem
 * answers 400 invalid_cwd with details.reason and returns false.
 */
static bool
path_within(const char *path, const char *dir)
{
	char real[PATH_MAX];
	size_t n;

	if (dir == NULL || realpath(dir, real) == NULL)
		return false;
	n = strlen(real);
	return strncmp(path, real, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * Why a canonical cwd is taskdeck's own (the sandbox hides those, docs/agent.md):
 * "filesystem-root", "session-workspace" (a managed workspace of a session),
 * "taskdeck-directory"; NULL when it is not.
 */
static const char *
cwd_forbidden(const struct td_paths *p, const char *cwd)
{
	if (strcmp(cwd, "/") == 0)
		return "filesystem-root";
	if (path_within(cwd, p->workspaces))
		return "session-workspace";
	if (path_within(cwd, p->config_dir) || path_within(cwd, p->data_dir) ||
	    path_within(cwd, p->runtime_dir))
		return "taskdeck-directory";
	return NULL;
}

/* Answers 400 invalid_cwd: cwd is not usable for reason (details.reason); rule says why. */
static bool
cwd_refused(struct http_response *r, const char *cwd, const char *reason, const char *rule)
{
	cJSON *details = cJSON_CreateObject();

	cJSON_AddStringToObject(details, "field", "cwd");
	cJSON_AddStringToObject(details, "reason", reason);
	http_error(r, TD_INVALID_CWD, details, "The working directory %s is not usable (%s): %s",
	    cwd, reason, rule);
	return false;
}

/* paths NULL: no check of taskdeck's own directories (a continued session's cwd must
 * equal its recorded one anyway). */
static bool
cwd_resolve(const struct td_paths *paths, const char *cwd, char *out, struct http_response *r)
{
	const char *reason = NULL;
	struct stat sb;

	if (cwd[0] != '/')
		reason = "not-absolute";
	else if (strlen(cwd) >= PATH_MAX)
		reason = "too-long";
	else if (realpath(cwd, out) == NULL)
		reason = errno == ENOTDIR ? "not-a-directory" : errno == EACCES ?
		    "not-readable" : "not-found";
	else if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode))
		reason = "not-a-directory";
	else if (access(out, R_OK | X_OK) != 0)
		reason = "not-readable";
	else if (access(out, W_OK) != 0)
		reason = "not-writable";
	else if (paths != NULL && (reason = cwd_forbidden(paths, out)) != NULL)
		return cwd_refused(r, cwd, reason, "commands cannot work in /, in taskdeck's own "
		    "directories or in another session's workspace.");
	if (reason == NULL)
		return true;
	return cwd_refused(r, cwd, reason, "it must be an absolute path to an existing "
	    "directory that the service can read and write.");
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
	    !td_id_valid(json_get_string(body, "project"), "prj")) {
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
	    !td_id_valid(json_get_string(body, "sessionId"), "ses"))) {
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

/* Answers the admission problem, if any; true when the run may be admitted. */
static bool
admission_check(const struct run_admission *a, const char *project, const char *session,
    const char *cwd, struct http_response *r)
{
	if (!a->project_known) {
		http_not_found(r, "project", project);
		return false;
	}
	if (session == NULL)
		return true;
	if (!a->session_known) {
		http_not_found(r, "session", session);
		return false;
	}
	if (a->session_other_project) {
		http_bad_field(r, "sessionId", "the session %s belongs to another project", session);
		return false;
	}
	if (cwd != NULL && strcmp(cwd, a->session_cwd) != 0) {
		cJSON *details = cJSON_CreateObject();
		cJSON_AddStringToObject(details, "cwd", cwd);
		cJSON_AddStringToObject(details, "sessionCwd", a->session_cwd);
		http_error(r, TD_CWD_MISMATCH, details, "The working directory %s does not "
		    "resolve to the session's directory %s.", cwd, a->session_cwd);
		return false;
	}
	if (a->session_busy) {
		cJSON *details = cJSON_CreateObject();
		cJSON_AddStringToObject(details, "sessionId", session);
		http_error(r, TD_SESSION_BUSY, details, "The session %s already has a queued "
		    "or running run; wait for it or cancel it.", session);
		return false;
	}
	return true;
}

/* Network for the run's commands: the request's, the project default, the application's. */
static bool
network_for(struct service *svc, const cJSON *body, const cJSON *project_defaults)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "network");

	if (!cJSON_IsBool(v))
		v = cJSON_GetObjectItemCaseSensitive(project_defaults, "network");
	if (!cJSON_IsBool(v))
		return settings_network(svc->settings);
	return cJSON_IsTrue(v);
}

/* The permission profile: the request's, the project default, the application default. */
static const char *
profile_for(struct service *svc, const cJSON *body, const cJSON *project_defaults)
{
	const char *p = json_get_string(body, "permissionProfile");

	if (p == NULL)
		p = json_get_string(project_defaults, "permissionProfile");
	if (p == NULL)
		p = json_get_string(settings_defaults(svc->settings), "permissionProfile");
	return p ? p : "workspace-write";
}

/* The run to admit: the request's prompt and turn intent, what admission resolved; takes cfg. */
static void
run_fill(struct service *svc, const cJSON *body, const cJSON *project_defaults,
    struct run *run, const char *id, const char *session_id, const char *cwd, cJSON *cfg)
{
	snprintf(run->id, sizeof run->id, "%s", id);
	snprintf(run->session_id, sizeof run->session_id, "%s", session_id);
	snprintf(run->project_id, sizeof run->project_id, "%s", json_get_string(body, "project"));
	run->prompt = xstrdup(json_get_string(body, "prompt"));
	run->permission_profile = xstrdup(profile_for(svc, body, project_defaults));
	run->turn_intent = xstrdup_or_null(json_get_string(body, "turnIntent"));
	run->config = cfg;
	run->cwd = xstrdup(cwd);
	run->network = network_for(svc, body, project_defaults);
}

void
route_runs_create(struct http_request *req, struct http_response *r)
{
	struct service *svc = req->svc;
	struct store *st = svc->store;
	const cJSON *body = req->json;
	const char *project = json_get_string(body, "project");
	const char *session = json_get_string(body, "sessionId");
	const char *cwd_in = json_get_string(body, "cwd");
	const cJSON *req_cfg = cJSON_GetObjectItemCaseSensitive(body, "config");
	struct run_admission a = { 0 };
	struct problem p = { 0 };
	struct run run = { 0 };
	char cwd[PATH_MAX], run_id[TD_ID_MAX], session_id[TD_ID_MAX];
	bool managed = false, made_dir = false, ok;
	cJSON *session_cfg = NULL, *run_cfg = NULL;
	int64_t now = td_now_ms();

	if (!run_request_valid(body, r))
		return;
	if (session != NULL && req_cfg != NULL && !cJSON_IsNull(req_cfg)) {
		http_bad_field(r, "config", "a run in an existing session uses the session's "
		    "configuration; change it with PATCH /api/v1/sessions/%s/config", session);
		return;
	}
	if (cwd_in != NULL && !cwd_resolve(session == NULL ? &svc->paths : NULL, cwd_in, cwd, r))
		return;
	td_id_new("run", run_id);

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	runs_admission_read(st, project, session, &a);
	if (!admission_check(&a, project, session, cwd_in ? cwd : NULL, r))
		goto refused;
	if (session != NULL) {
		snprintf(session_id, sizeof session_id, "%s", session);
		snprintf(cwd, sizeof cwd, "%s", a.session_cwd);
		if (changes_check_workspace(svc, session_id, cwd, &p) != TD_OK) {
			http_problem(r, &p);
			goto refused;
		}
		session_cfg = cJSON_Duplicate(a.session_cfg, true);
	} else {
		td_id_new("ses", session_id);
		session_cfg = config_for_new_session(svc, req_cfg, a.project_defaults);
		if (cwd_in == NULL) {
			managed = true;
			if (snprintf(cwd, sizeof cwd, "%s/%s", svc->paths.workspaces, session_id) >=
			    (int)sizeof cwd) {
				http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
				goto refused;
			}
		}
	}
	if (!config_usable(svc, session_cfg, &p) ||
	    !frameworks_run_usable(json_get_string(session_cfg, "framework"),
	    profile_for(svc, body, a.project_defaults), json_get_string(body, "turnIntent"), &p)) {
		http_problem(r, &p);
		goto refused;
	}
	run_cfg = config_for_run(svc, session_cfg);
	if (managed) {
		if (!td_mkdir_p(cwd, 0700)) {
			log_error("cannot create the workspace of %s: %s", session_id, strerror(errno));
			http_error(r, TD_INTERNAL_ERROR, NULL, "The managed workspace could not "
			    "be created.");
			goto refused;
		}
		made_dir = true;
	}
	run_fill(svc, body, a.project_defaults, &run, run_id, session_id, cwd, run_cfg);
	run_cfg = NULL;
	ok = (session != NULL || sessions_create(st, session_id, project,
	    json_get_string(body, "prompt"), cwd, managed, session_cfg, now)) &&
	    runs_admit(st, &run, now) && store_commit(st);
	if (!ok) {
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		goto refused;
	}
	runs_admitted(svc, &run);
	store_unlock(st);
	if (!managed) {
		char *open_to = td_path_renamable(cwd);

		if (open_to != NULL)
			log_warn("run %s: its directory can be replaced by another user (%s); a "
			    "revert or a run is refused once it is", run_id, open_to);
		free(open_to);
	}
	cJSON_Delete(a.project_defaults);
	cJSON_Delete(a.session_cfg);
	cJSON_Delete(session_cfg);
	runs_clear(&run);
	supervisor_kick(svc->supervisor);

	char *location = xasprintf("/api/v1/runs/%s", run_id);
	http_add_header(r, "Location", location);
	free(location);
	run_answer(svc, run_id, 201, r);
	return;

refused:
	store_rollback(st);
	store_unlock(st);
	if (made_dir)
		rmdir(cwd);
	cJSON_Delete(a.project_defaults);
	cJSON_Delete(a.session_cfg);
	cJSON_Delete(session_cfg);
	cJSON_Delete(run_cfg);
	runs_clear(&run);
}

void
route_runs_cancel(struct http_request *req, struct http_response *r)
{
	struct service *svc = req->svc;
	const char *id = req->params[0];
	char status[16];
	bool ok = runs_request_cancel(svc, id, status);

	/*
	 * A running run is cancelled through its thread even when
	 * cancelRequestedAt cannot be stored (a full disk); the thread stores the
	 * cancelled state when it can.
	 */
	if (strcmp(status, "running") == 0 && supervisor_cancel(svc->supervisor, id))
		ok = true;
	if (!ok) {
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	run_answer(svc, id, 200, r);
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
