/* Deleting a session and sweeping what a crash left of one (session-delete.h). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifacts.h"
#include "cache.h"
#include "changes.h"
#include "events.h"
#include "idem.h"
#include "log.h"
#include "paths.h"
#include "plans.h"
#include "problem.h"
#include "prompts.h"
#include "runs-write.h"
#include "runs.h"
#include "service.h"
#include "session-connectors.h"
#include "session-delete.h"
#include "sessions.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

long
session_delete_active(struct service *svc, const char *id, char (*ids)[TD_ID_MAX],
    size_t max)
{
	struct store *st = svc->store;
	long n = -1;

	store_lock(st);
	if (sessions_exists(st, id))
		n = (long)runs_session_active(st, id, ids, max);
	store_unlock(st);
	return n;
}

/* The managed workspace of session id: <workspaces>/<id>, or NULL when cwd is not it. */
static char *
managed_workspace(const struct service *svc, const char *id, const char *cwd)
{
	char *want = xasprintf("%s/%s", svc->paths.workspaces, id);

	if (strcmp(want, cwd) != 0) {
		free(want);
		return NULL;
	}
	return want;
}

/* Deletes the rows of session id, children first (the foreign keys). */
static bool
rows_delete(struct service *svc, const char *id, long *runs)
{
	struct store *st = svc->store;

	return events_delete_session(st, id) && prompts_delete_session(st, id) &&
	    plans_delete_session(st, id) && artifacts_delete_session(st, id) &&
	    changes_delete_session(st, id) && (*runs = runs_delete_session_locked(svc, id)) >= 0 &&
	    session_connectors_delete_session(st, id) && sessions_delete(st, id);
}

cJSON *
session_delete(struct service *svc, const char *id, struct problem *p)
{
	struct store *st = svc->store;
	char *project = NULL, *cwd = NULL, *managed = NULL, *store_dir;
	cJSON *session, *answer, *removed, *kept, *data;
	long runs = 0;
	bool ok;

	/* The history still queued goes in first, so that none outlives the rows. */
	events_flush(svc->events);
	store_lock(st);
	session = session_load(st, id);
	if (session == NULL) {
		store_unlock(st);
		problem_set(p, TD_NOT_FOUND, "session", "No session with that id.");
		return NULL;
	}
	if (runs_session_active(st, id, NULL, 0) > 0) {
		store_unlock(st);
		cJSON_Delete(session);
		problem_set(p, TD_SESSION_BUSY, NULL, "A run of the session is queued or running; "
		    "wait for it, cancel it or delete with force=true.");
		return NULL;
	}
	project = xstrdup(cJSON_GetObjectItemCaseSensitive(session, "projectId")->valuestring);
	cwd = xstrdup(cJSON_GetObjectItemCaseSensitive(session, "cwd")->valuestring);
	if (strcmp(cJSON_GetObjectItemCaseSensitive(session, "workspace")->valuestring,
	    "managed") == 0)
		managed = managed_workspace(svc, id, cwd);
	cJSON_Delete(session);
	ok = store_begin(st) && rows_delete(svc, id, &runs);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (!ok) {
		store_unlock(st);
		free(project);
		free(cwd);
		free(managed);
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The session could not be deleted.");
		return NULL;
	}
	cache_drop(svc->cache, id);
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "id", id);
	cJSON_AddStringToObject(data, "projectId", project);
	events_emit(svc->events, "session.deleted", project, id, NULL, data);
	store_unlock(st);
	events_end_session(svc->events, id);
	idem_forget_matching(svc->idem, id);
	if (svc->session_deleted != NULL)
		svc->session_deleted(svc, id);
	log_info("session %s deleted with %ld runs", id, runs);

	/* A test stands for a crash here: the rows are gone, the files not yet. */
	if (getenv("TASKDECK_TEST_DIE_AFTER_DELETE_COMMIT") != NULL)
		raise(SIGKILL);

	answer = cJSON_CreateObject();
	cJSON_AddStringToObject(answer, "id", id);
	cJSON_AddNumberToObject(answer, "runs", (double)runs);
	removed = cJSON_AddArrayToObject(answer, "removed");
	kept = cJSON_AddArrayToObject(answer, "kept");
	store_dir = xasprintf("%s/changes/%s.git", svc->paths.data_dir, id);
	if (changes_forget(svc->changes, id))
		cJSON_AddItemToArray(removed, cJSON_CreateString(store_dir));
	free(store_dir);
	if (managed != NULL) {
		if (paths_remove_tree(managed))
			cJSON_AddItemToArray(removed, cJSON_CreateString(managed));
		else
			log_warn("cannot remove the workspace %s: %s", managed, strerror(errno));
	} else {
		cJSON_AddItemToArray(kept, cJSON_CreateString(cwd));
	}
	artifacts_sweep(svc);
	free(project);
	free(cwd);
	free(managed);
	return answer;
}

/* The runs of a session cancelled at most by one forced delete (more: 409 until they end). */
#define SESSION_DELETE_FORCE_MAX 64
/* The sessions whose marked delete a start finishes at most (more: at the next start). */
#define SESSION_DELETE_RESUME_MAX 1024

/* Marks session id as being deleted and publishes session.updated; false on a store error. */
static bool
session_delete_mark(struct service *svc, const char *id, struct problem *p)
{
	struct store *st = svc->store;
	bool ok;

	store_lock(st);
	ok = store_begin(st) && sessions_mark_deleting(st, id, clock_wall_ms());
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok)
		session_emit_updated_locked(svc, id);
	store_unlock(st);
	if (!ok)
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The session could not be marked for deletion.");
	return ok;
}

/* The 202 answer of a delete that finishes when the runs ids (n of them) have ended. */
static cJSON *
session_delete_accepted(const char *id, char (*ids)[TD_ID_MAX], long n)
{
	cJSON *answer = cJSON_CreateObject(), *runs;

	cJSON_AddStringToObject(answer, "id", id);
	cJSON_AddBoolToObject(answer, "deleting", true);
	runs = cJSON_AddArrayToObject(answer, "cancelled");
	for (long i = 0; i < n && i < SESSION_DELETE_FORCE_MAX; i++)
		cJSON_AddItemToArray(runs, cJSON_CreateString(ids[i]));
	return answer;
}

cJSON *
session_delete_request(struct service *svc, const char *id, bool force, int *status,
    struct problem *p)
{
	char ids[SESSION_DELETE_FORCE_MAX][TD_ID_MAX];
	struct problem ignored = { 0 };
	long n = session_delete_active(svc, id, ids, SESSION_DELETE_FORCE_MAX);
	cJSON *answer;

	*status = 200;
	if (n < 0) {
		problem_not_found(p, "session", id);
		return NULL;
	}
	if (n == 0 || !force)
		return session_delete(svc, id, p);
	/* Marked first: from here the end of its last run finishes the delete. */
	if (!session_delete_mark(svc, id, p))
		return NULL;
	for (long i = 0; i < n && i < SESSION_DELETE_FORCE_MAX; i++)
		runs_cancel(svc, ids[i], &ignored);
	cJSON_Delete(ignored.details);
	ignored.details = NULL;
	if (n <= SESSION_DELETE_FORCE_MAX && session_delete_active(svc, id, NULL, 0) == 0 &&
	    (answer = session_delete(svc, id, &ignored)) != NULL)
		return answer;
	/* Still running, or the end of its last run deleted it in between. */
	cJSON_Delete(ignored.details);
	*status = 202;
	return session_delete_accepted(id, ids, n);
}

void
session_delete_run_finished(struct service *svc, const char *run_id)
{
	struct store *st = svc->store;
	struct problem p = { 0 };
	struct run run = { 0 };
	bool due = false;
	cJSON *answer;

	store_lock(st);
	if (runs_get(st, run_id, &run))
		due = sessions_is_deleting(st, run.session_id) &&
		    runs_session_active(st, run.session_id, NULL, 0) == 0;
	store_unlock(st);
	if (due) {
		answer = session_delete(svc, run.session_id, &p);
		if (answer == NULL && p.code != TD_NOT_FOUND)
			log_warn("session %s: its delete after its last run failed: %s",
			    run.session_id, p.message);
		cJSON_Delete(answer);
		cJSON_Delete(p.details);
	}
	runs_clear(&run);
}

void
session_delete_resume(struct service *svc)
{
	char (*ids)[TD_ID_MAX] = xcalloc(SESSION_DELETE_RESUME_MAX, sizeof *ids);
	size_t n;

	store_lock(svc->store);
	n = sessions_deleting(svc->store, ids, SESSION_DELETE_RESUME_MAX);
	store_unlock(svc->store);
	for (size_t i = 0; i < n; i++) {
		struct problem p = { 0 };
		int status;
		cJSON *answer = session_delete_request(svc, ids[i], true, &status, &p);

		if (answer == NULL)
			log_warn("session %s: its delete could not go on: %s", ids[i], p.message);
		else
			log_info("session %s: its interrupted delete %s", ids[i],
			    status == 202 ? "waits for its runs to end" : "is done");
		cJSON_Delete(answer);
		cJSON_Delete(p.details);
	}
	free(ids);
}

/* Removes the managed workspaces of sessions that no longer exist; how many. */
static long
workspaces_sweep(struct service *svc)
{
	DIR *d = opendir(svc->paths.workspaces);
	struct dirent *e;
	long removed = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char *path;
		bool found;

		if (!id_valid(e->d_name, "ses"))
			continue;
		store_lock(svc->store);
		found = sessions_exists(svc->store, e->d_name);
		store_unlock(svc->store);
		if (found)
			continue;
		path = xasprintf("%s/%s", svc->paths.workspaces, e->d_name);
		if (paths_remove_tree(path))
			removed++;
		else
			log_warn("cannot remove the workspace %s: %s", path, strerror(errno));
		free(path);
	}
	if (d != NULL)
		closedir(d);
	return removed;
}

void
session_delete_sweep(struct service *svc)
{
	long stores = changes_sweep(svc);
	long workspaces = workspaces_sweep(svc);
	long contents = artifacts_sweep(svc);

	if (stores + workspaces + contents > 0)
		log_info("removed what deleted sessions left: %ld changes stores, %ld "
		    "workspaces, %ld artifact contents", stores, workspaces, contents);
}
