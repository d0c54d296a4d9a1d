/* The writes people ask of runs: admission and cancel (runs-write.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changes.h"
#include "frameworks.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "problem.h"
#include "runs-write.h"
#include "runs.h"
#include "service.h"
#include "sessions.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

/* How often admission probes again when the configuration changed meanwhile. */
#define RUNS_CREATE_TRIES 3

/* What admission resolved: read under the store lock, probed without it. */
struct runs_create_state {
	struct run_admission a;
	char session_id[TD_ID_MAX];
	char cwd[PATH_MAX];
	bool managed;
	cJSON *session_cfg;
};

static bool
runs_internal(struct problem *p, const char *message)
{
	problem_set(p, TD_INTERNAL_ERROR, NULL, "%s",
	    message ? message : errcode_default_message(TD_INTERNAL_ERROR));
	return false;
}

/* The admission's refusal, if any; true when the run may be admitted. */
static bool
runs_admission_check(const struct run_admission *a, const char *project, const char *session,
    const char *cwd, struct problem *p)
{
	if (!a->project_known)
		return problem_not_found(p, "project", project), false;
	if (session == NULL)
		return true;
	if (!a->session_known)
		return problem_not_found(p, "session", session), false;
	if (a->session_other_project) {
		problem_set(p, TD_INVALID_REQUEST, "sessionId", "the session %s belongs to another "
		    "project", session);
		return false;
	}
	if (cwd != NULL && strcmp(cwd, a->session_cwd) != 0) {
		p->details = cJSON_CreateObject();
		cJSON_AddStringToObject(p->details, "cwd", cwd);
		cJSON_AddStringToObject(p->details, "sessionCwd", a->session_cwd);
		problem_set(p, TD_CWD_MISMATCH, NULL, "The working directory %s does not resolve "
		    "to the session's directory %s.", cwd, a->session_cwd);
		return false;
	}
	if (a->session_deleting) {
		p->details = cJSON_CreateObject();
		cJSON_AddStringToObject(p->details, "sessionId", session);
		cJSON_AddBoolToObject(p->details, "deleting", true);
		problem_set(p, TD_SESSION_BUSY, NULL, "The session %s is being deleted.", session);
		return false;
	}
	if (a->session_busy) {
		p->details = cJSON_CreateObject();
		cJSON_AddStringToObject(p->details, "sessionId", session);
		problem_set(p, TD_SESSION_BUSY, NULL, "The session %s already has a queued or "
		    "running run; wait for it or cancel it.", session);
		return false;
	}
	return true;
}

/* Network for the run's commands: the request's, the project default, the application's. */
static bool
runs_network_for(struct service *svc, const cJSON *body, const cJSON *project_defaults)
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
runs_profile_for(struct service *svc, const cJSON *body, const cJSON *project_defaults)
{
	const char *p = json_get_string(body, "permissionProfile");

	if (p == NULL)
		p = json_get_string(project_defaults, "permissionProfile");
	if (p == NULL)
		p = json_get_string(settings_defaults(svc->settings), "permissionProfile");
	return p ? p : "workspace-write";
}

static void
runs_create_state_clear(struct runs_create_state *cs)
{
	cJSON_Delete(cs->a.project_defaults);
	cJSON_Delete(cs->a.session_cfg);
	cJSON_Delete(cs->session_cfg);
	cs->a = (struct run_admission){ 0 };
	cs->session_cfg = NULL;
}

/*
 * Reads and checks what the run depends on into *cs: the project, the
 * session (or the configuration of a new one, whose id cs->session_id
 * already holds) and the cwd (cwd_in: canonical, or NULL).
 */
static bool
runs_create_resolve_locked(struct service *svc, const cJSON *body, const char *cwd_in,
    struct runs_create_state *cs, struct problem *p)
{
	const char *project = json_get_string(body, "project");
	const char *session = json_get_string(body, "sessionId");

	runs_admission_read(svc->store, project, session, &cs->a);
	if (!runs_admission_check(&cs->a, project, session, cwd_in, p))
		return false;
	if (session != NULL) {
		snprintf(cs->cwd, sizeof cs->cwd, "%s", cs->a.session_cwd);
		if (changes_check_workspace(svc, cs->session_id, cs->cwd, p) != TD_OK)
			return false;
		cs->session_cfg = cJSON_Duplicate(cs->a.session_cfg, true);
		return true;
	}
	cs->session_cfg = config_for_new_session(svc,
	    cJSON_GetObjectItemCaseSensitive(body, "config"), cs->a.project_defaults);
	if (cwd_in != NULL)
		snprintf(cs->cwd, sizeof cs->cwd, "%s", cwd_in);
	else if (snprintf(cs->cwd, sizeof cs->cwd, "%s/%s", svc->paths.workspaces,
	    cs->session_id) >= (int)sizeof cs->cwd)
		return runs_internal(p, NULL);
	cs->managed = cwd_in == NULL;
	return true;
}

/* Whether the configuration can run (an external framework's CLI is probed: no lock). */
static bool
runs_create_usable(struct service *svc, const cJSON *body, const struct runs_create_state *cs,
    struct problem *p)
{
	return config_usable(svc, cs->session_cfg, p) &&
	    frameworks_run_usable(json_get_string(cs->session_cfg, "framework"),
	    runs_profile_for(svc, body, cs->a.project_defaults),
	    json_get_string(body, "turnIntent"), p);
}

/*
 * Writes the new session (and makes its managed workspace) and the queued
 * run in the caller's transaction, and commits; rolls back on a failure.
 */
static bool
runs_create_write_locked(struct service *svc, const cJSON *body, struct runs_create_state *cs,
    struct run *run, struct problem *p)
{
	struct store *st = svc->store;
	const char *session = json_get_string(body, "sessionId");
	int64_t now = clock_wall_ms();
	bool ok;

	if (cs->managed && !paths_mkdir_p(cs->cwd, 0700)) {
		log_error("cannot create the workspace of %s: %s", cs->session_id, strerror(errno));
		store_rollback(st);
		return runs_internal(p, "The managed workspace could not be created.");
	}
	snprintf(run->session_id, sizeof run->session_id, "%s", cs->session_id);
	snprintf(run->project_id, sizeof run->project_id, "%s", json_get_string(body, "project"));
	run->prompt = xstrdup(json_get_string(body, "prompt"));
	run->permission_profile = xstrdup(runs_profile_for(svc, body, cs->a.project_defaults));
	run->turn_intent = xstrdup_or_null(json_get_string(body, "turnIntent"));
	run->config = config_for_run(svc, cs->session_cfg);
	run->cwd = xstrdup(cs->cwd);
	run->network = runs_network_for(svc, body, cs->a.project_defaults);
	ok = (session != NULL || sessions_create(st, cs->session_id, run->project_id, run->prompt,
	    cs->cwd, cs->managed, cs->session_cfg, now)) && runs_admit(st, run, now) &&
	    store_commit(st);
	if (ok)
		return true;
	store_rollback(st);
	if (cs->managed)
		rmdir(cs->cwd);
	return runs_internal(p, NULL);
}

/*
 * Resolves under the lock, probes without it, and again until what was
 * probed is what the store holds; returns holding the lock in a
 * transaction, or false (unlocked) with *p.
 */
static bool
runs_create_admit(struct service *svc, const cJSON *body, const char *cwd_in,
    struct runs_create_state *cs, struct problem *p)
{
	struct store *st = svc->store;
	cJSON *probed = NULL;
	bool ok;

	for (int tries = 0;; tries++) {
		store_lock(st);
		if (probed != NULL && !store_begin(st)) {
			store_unlock(st);
			cJSON_Delete(probed);
			return runs_internal(p, NULL);
		}
		ok = runs_create_resolve_locked(svc, body, cwd_in, cs, p);
		if (ok && probed != NULL && cJSON_Compare(probed, cs->session_cfg, true)) {
			cJSON_Delete(probed);
			return true;
		}
		if (probed != NULL)
			store_rollback(st);
		store_unlock(st);
		cJSON_Delete(probed);
		if (!ok)
			return false;
		if (tries == RUNS_CREATE_TRIES)
			return runs_internal(p, "The configuration kept changing during admission.");
		if (!runs_create_usable(svc, body, cs, p))
			return false;
		probed = cJSON_Duplicate(cs->session_cfg, true);
		runs_create_state_clear(cs);
	}
}

bool
runs_create(struct service *svc, const cJSON *body, char run_id[TD_ID_MAX], struct problem *p)
{
	const char *session = json_get_string(body, "sessionId");
	const char *cwd_in = json_get_string(body, "cwd");
	struct runs_create_state cs = { 0 };
	struct run run = { 0 };
	char cwd[PATH_MAX];
	bool ok;

	if (cwd_in != NULL && !sessions_cwd_resolve(session == NULL ? &svc->paths : NULL, cwd_in,
	    cwd, p))
		return false;
	if (session != NULL)
		snprintf(cs.session_id, sizeof cs.session_id, "%s", session);
	else
		id_new("ses", cs.session_id);
	id_new("run", run_id);
	snprintf(run.id, sizeof run.id, "%s", run_id);
	if (!runs_create_admit(svc, body, cwd_in != NULL ? cwd : NULL, &cs, p)) {
		runs_create_state_clear(&cs);
		return false;
	}
	ok = runs_create_write_locked(svc, body, &cs, &run, p);
	if (ok)
		runs_admitted(svc, &run);
	store_unlock(svc->store);
	if (ok && !cs.managed) {
		char *open_to = paths_renamable(cs.cwd);

		if (open_to != NULL)
			log_warn("run %s: its directory can be replaced by another user (%s); a "
			    "revert or a run is refused once it is", run_id, open_to);
		free(open_to);
	}
	runs_create_state_clear(&cs);
	runs_clear(&run);
	if (ok)
		supervisor_kick(svc->supervisor);
	return ok;
}

bool
runs_cancel(struct service *svc, const char *id, struct problem *p)
{
	char status[16];
	bool ok = runs_request_cancel(svc, id, status);

	/*
	 * A running run is cancelled through its thread even when
	 * cancelRequestedAt cannot be stored (a full disk); the thread stores the
	 * cancelled state when it can.
	 */
	if (strcmp(status, "running") == 0 && supervisor_cancel(svc->supervisor, id))
		ok = true;
	return ok || runs_internal(p, NULL);
}
