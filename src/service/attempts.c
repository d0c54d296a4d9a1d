/* Attempts: the group's use cases, create, apply, revert and discard (attempts.h). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attempts-git.h"
#include "attempts-int.h"
#include "attempts.h"
#include "frameworks.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "problem.h"
#include "resource.h"
#include "runs.h"
#include "service.h"
#include "sessions.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

/* ---- creating a group ----------------------------------------------------------- */

static const char *
attempts_profile(struct service *svc, const struct attempts_request *rq, const cJSON *defaults)
{
	const char *p = rq->profile;

	if (p == NULL)
		p = json_get_string(defaults, "permissionProfile");
	if (p == NULL)
		p = json_get_string(settings_defaults(svc->settings), "permissionProfile");
	return p ? p : "workspace-write";
}

static bool
attempts_network(struct service *svc, const struct attempts_request *rq, const cJSON *defaults)
{
	const cJSON *v = rq->network;

	if (!cJSON_IsBool(v))
		v = cJSON_GetObjectItemCaseSensitive(defaults, "network");
	if (!cJSON_IsBool(v))
		return settings_network(svc->settings);
	return cJSON_IsTrue(v);
}

/* The model of attempt i: the list's, round robin; NULL for the configuration's. */
static const char *
attempts_model(const struct attempts_request *rq, int i)
{
	int m = cJSON_GetArraySize(rq->models);

	return m > 0 ? cJSON_GetArrayItem(rq->models, i % m)->valuestring : NULL;
}

/* One attempt being made. */
struct attempt_new {
	char session[TD_ID_MAX];
	char run[TD_ID_MAX];
	char *branch, *path, *cwd;
	cJSON *session_cfg;
	bool made;
};

/* Inserts the group and its attempts, state preparing; store locked, in a transaction. */
static bool
attempts_insert(struct store *st, const char *group, const struct attempts_request *rq,
    const struct attempts_repo *repo, struct attempt_new *at)
{
	bool ok = attempts_rows_insert_group(st, group, rq->project, rq->prompt, rq->cwd,
	    repo->top, repo->git_dir, repo->copy, rq->check, clock_wall_ms());

	for (int i = 0; ok && i < rq->count; i++)
		ok = attempts_rows_insert_attempt(st, group, i + 1, at[i].session, at[i].run,
		    json_get_string(at[i].session_cfg, "model"), at[i].branch, at[i].path,
		    at[i].cwd);
	return ok;
}

/* Removes what a group being made has of worktrees, branches and rows. */
static void
attempts_unmake(struct service *svc, const char *group, const char *git_dir,
    struct attempt_new *at, int n)
{
	for (int i = 0; i < n; i++) {
		if (at[i].branch != NULL)
			attempts_git_worktree_remove(git_dir, at[i].branch, at[i].path);
	}
	store_lock(svc->store);
	attempts_rows_group_delete(svc->store, group);
	store_unlock(svc->store);
}

/* Validates the configuration of each attempt; the project's defaults read under the lock. */
static bool
attempts_configure(struct service *svc, const struct attempts_request *rq,
    struct attempt_new *at, cJSON **defaults, struct problem *p)
{
	struct run_admission a = { 0 };
	bool ok = true;

	store_lock(svc->store);
	runs_admission_read(svc->store, rq->project, NULL, &a);
	store_unlock(svc->store);
	cJSON_Delete(a.session_cfg);
	*defaults = a.project_defaults;
	if (!a.project_known) {
		problem_set(p, TD_NOT_FOUND, "project", "No project with that id.");
		return false;
	}
	for (int i = 0; ok && i < rq->count; i++) {
		cJSON *cfg = rq->config != NULL && cJSON_IsObject(rq->config) ?
		    cJSON_Duplicate(rq->config, true) : cJSON_CreateObject();
		const char *model = attempts_model(rq, i);

		if (model != NULL) {
			cJSON_DeleteItemFromObjectCaseSensitive(cfg, "model");
			cJSON_AddStringToObject(cfg, "model", model);
		}
		at[i].session_cfg = config_for_new_session(svc, cfg, a.project_defaults);
		cJSON_Delete(cfg);
		ok = config_usable(svc, at[i].session_cfg, p) &&
		    frameworks_run_usable(json_get_string(at[i].session_cfg, "framework"),
		    attempts_profile(svc, rq, a.project_defaults), NULL, p);
	}
	return ok;
}

/* The sessions and runs of the attempts, the group active; store locked, in a transaction. */
static bool
attempts_admit(struct service *svc, const char *group, const struct attempts_request *rq,
    struct attempt_new *at, const cJSON *defaults, const char *base, struct run *runs)
{
	struct store *st = svc->store;
	int64_t now = clock_wall_ms();
	bool ok = true;

	for (int i = 0; ok && i < rq->count; i++) {
		struct run *run = &runs[i];

		snprintf(run->id, sizeof run->id, "%s", at[i].run);
		snprintf(run->session_id, sizeof run->session_id, "%s", at[i].session);
		snprintf(run->project_id, sizeof run->project_id, "%s", rq->project);
		run->prompt = xstrdup(rq->prompt);
		run->permission_profile = xstrdup(attempts_profile(svc, rq, defaults));
		run->config = config_for_run(svc, at[i].session_cfg);
		run->cwd = xstrdup(at[i].cwd);
		run->network = attempts_network(svc, rq, defaults);
		ok = sessions_create(st, at[i].session, rq->project, rq->prompt, at[i].cwd, true,
		    at[i].session_cfg, now) && runs_admit(st, run, now);
	}
	ok = ok && attempts_rows_activate(st, group, base);
	return ok;
}

cJSON *
attempts_create(struct service *svc, const struct attempts_request *rq, struct problem *p)
{
	struct store *st = svc->store;
	struct attempt_new at[ATTEMPTS_MAX];
	struct run runs[ATTEMPTS_MAX];
	struct attempts_repo repo = { 0 };
	char group[TD_ID_MAX], base[ATTEMPTS_GIT_OID], why[ATTEMPTS_WHY] = "";
	char *store_dir, *index, *sub;
	cJSON *defaults = NULL, *answer = NULL;
	int made = 0;
	bool ok;

	memset(at, 0, sizeof at);
	memset(runs, 0, sizeof runs);
	id_new("atg", group);
	if (!attempts_configure(svc, rq, at, &defaults, p))
		goto done;
	store_dir = attempts_scratch(svc, group, ".git");
	ok = attempts_git_repo(rq->cwd, store_dir, &repo, why, sizeof why);
	free(store_dir);
	if (!ok) {
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The attempts could not be prepared: %s",
		    why);
		goto done;
	}
	/* cwd below the repository's top: each attempt's session works at the same place */
	sub = strcmp(repo.top, rq->cwd) == 0 ? xstrdup("") : xstrdup(rq->cwd + strlen(repo.top));
	for (int i = 0; i < rq->count; i++) {
		id_new("ses", at[i].session);
		id_new("run", at[i].run);
		at[i].branch = xasprintf("taskdeck/attempt-%s-%d", group, i + 1);
		at[i].path = xasprintf("%s/%s", svc->paths.workspaces, at[i].session);
		at[i].cwd = xasprintf("%s%s", at[i].path, sub);
	}
	free(sub);
	store_lock(st);
	ok = store_begin(st) && attempts_insert(st, group, rq, &repo, at);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	store_unlock(st);
	if (!ok) {
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The attempts could not be stored.");
		goto done;
	}
	pthread_mutex_lock(&attempts_mu);
	index = attempts_scratch(svc, group, ".index");
	ok = paths_mkdir_p(svc->paths.workspaces, 0700) &&
	    attempts_git_snapshot(&repo, index, base, why, sizeof why);
	free(index);
	for (; ok && made < rq->count; made++)
		ok = attempts_git_worktree_add(repo.git_dir, at[made].branch, at[made].path, base,
		    why, sizeof why);
	pthread_mutex_unlock(&attempts_mu);
	/* A test stands for a crash here: the worktrees are made, no session yet. */
	if (ok && getenv("TASKDECK_TEST_DIE_AFTER_WORKTREES") != NULL)
		raise(SIGKILL);
	if (ok) {
		store_lock(st);
		ok = store_begin(st) && attempts_admit(svc, group, rq, at, defaults, base, runs);
		ok = ok ? store_commit(st) : (store_rollback(st), false);
		if (ok) {
			for (int i = 0; i < rq->count; i++)
				runs_admitted(svc, &runs[i]);
			answer = attempts_group_load_locked(svc, group);
			attempts_emit(svc, "attempts.created", group, NULL, NULL);
		}
		store_unlock(st);
		if (!ok)
			snprintf(why, sizeof why, "the sessions could not be stored");
	}
	if (!ok) {
		attempts_unmake(svc, group, repo.git_dir, at, made);
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The attempts could not be prepared: %s",
		    why);
		goto done;
	}
	supervisor_kick(svc->supervisor);
	log_info("attempts %s: %d runs of %s", group, rq->count, repo.top);
done:
	for (int i = 0; i < ATTEMPTS_MAX; i++) {
		free(at[i].branch);
		free(at[i].path);
		free(at[i].cwd);
		cJSON_Delete(at[i].session_cfg);
		runs_clear(&runs[i]);
	}
	cJSON_Delete(defaults);
	attempts_git_repo_clear(&repo);
	return answer;
}

/* ---- apply, revert, discard ----------------------------------------------------- */

/* Whether the run is queued or running; store locked. */
static bool
attempts_run_active(struct store *st, const char *run)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM runs WHERE id = ?1"
	    " AND status IN ('queued', 'running')");
	bool active;

	sqlite3_bind_text(s, 1, run, -1, SQLITE_STATIC);
	active = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	return active;
}

/* Removes every attempt of group that is not removed; the group's status then. */
static void
attempts_remove_all(struct service *svc, const char *group, const char *status)
{
	struct attempt_row *rows;
	size_t n;
	bool all = true;

	store_lock(svc->store);
	rows = attempt_rows(svc->store, ATTEMPT_ROW_SELECT
	    "WHERE a.group_id = ?1 AND a.state = 'active'", group, &n);
	store_unlock(svc->store);
	for (size_t i = 0; i < n; i++)
		all = attempt_remove(svc, &rows[i]) && all;
	if (all && n > 0) {
		char *mine = attempts_scratch(svc, group, ".git");

		if (strcmp(mine, rows[0].git_dir) == 0)
			paths_remove_tree(mine);
		free(mine);
	}
	attempt_rows_free(rows, n);
	store_lock(svc->store);
	attempts_group_touch(svc->store, group, status);
	store_unlock(svc->store);
}

cJSON *
attempts_apply(struct service *svc, const char *run_id, bool keep, struct problem *p)
{
	struct store *st = svc->store;
	struct attempt_row *rows;
	char why[ATTEMPTS_WHY] = "", *patch, *index;
	long files, added, deleted;
	cJSON *g = NULL;
	size_t n;
	bool ok;

	pthread_mutex_lock(&attempts_mu);
	store_lock(st);
	rows = attempt_rows(st, ATTEMPT_ROW_SELECT "WHERE a.run_id = ?1", run_id, &n);
	if (n == 0) {
		problem_set(p, TD_NOT_FOUND, "run", "No attempt runs as %s.", run_id);
	} else if (strcmp(rows[0].group_status, "active") != 0) {
		problem_set(p, TD_ATTEMPT_GROUP_CLOSED, NULL, "The attempts of group %s are %s: "
		    "nothing more is applied from them.", rows[0].group, rows[0].group_status);
	} else if (strcmp(rows[0].state, "active") != 0) {
		problem_set(p, TD_ATTEMPT_GROUP_CLOSED, NULL, "The attempt of run %s was "
		    "discarded.", run_id);
	} else if (attempts_run_active(st, run_id)) {
		problem_set(p, TD_RUN_ACTIVE, "run", "The attempt's run %s has not ended; wait "
		    "for it or cancel it.", run_id);
	}
	store_unlock(st);
	if (p->code != TD_OK)
		goto done;
	patch = attempts_scratch(svc, rows[0].group, ".applied.patch");
	index = attempts_scratch(svc, rows[0].group, ".index");
	ok = attempts_git_patch(rows[0].git_dir, rows[0].path, rows[0].base, index, patch,
	    &files, &added, &deleted, why, sizeof why);
	free(index);
	if (!ok) {
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The attempt's changes could not be read: "
		    "%s", why);
	} else if (!attempts_git_apply(rows[0].copy ? NULL : rows[0].git_dir, rows[0].top, patch, false, why, sizeof why)) {
		cJSON *details = cJSON_CreateObject();

		cJSON_AddStringToObject(details, "runId", run_id);
		cJSON_AddStringToObject(details, "reason", why);
		problem_set(p, TD_ATTEMPT_CONFLICT, NULL, "The attempt's changes do not apply to "
		    "%s as it is now; nothing was changed.", rows[0].top);
		p->details = details;
	}
	free(patch);
	if (p->code != TD_OK)
		goto done;
	store_lock(st);
	ok = attempts_rows_applied(st, rows[0].group, run_id, clock_wall_ms());
	if (!ok)
		log_error("attempts %s: run %s applied to %s but not stored", rows[0].group, run_id,
		    rows[0].top);
	store_unlock(st);
	log_info("attempts %s: run %s applied to %s (%ld files)", rows[0].group, run_id,
	    rows[0].top, files);
	if (!keep)
		attempts_remove_all(svc, rows[0].group, NULL);
	store_lock(st);
	attempts_emit(svc, "attempts.updated", rows[0].group, rows[0].session, run_id);
	g = attempts_group_load_locked(svc, rows[0].group);
	store_unlock(st);
done:
	pthread_mutex_unlock(&attempts_mu);
	attempt_rows_free(rows, n);
	return g;
}

cJSON *
attempts_revert(struct service *svc, const char *group_id, struct problem *p)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;
	char why[ATTEMPTS_WHY] = "", *top = NULL, *git_dir = NULL, *patch;
	cJSON *g = NULL;

	pthread_mutex_lock(&attempts_mu);
	store_lock(st);
	s = store_stmt(st, "SELECT status, top, git_dir, kind FROM attempt_groups WHERE id = ?1");
	sqlite3_bind_text(s, 1, group_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_ROW)
		problem_set(p, TD_NOT_FOUND, "attempts", "No attempts group with that id.");
	else if (strcmp(resource_text(s, 0), "applied") != 0)
		problem_set(p, TD_ATTEMPT_GROUP_CLOSED, NULL, "Nothing of group %s is applied.",
		    group_id);
	else {
		top = xstrdup(resource_text(s, 1));
		if (strcmp(resource_text(s, 3), "copy") != 0)
			git_dir = xstrdup(resource_text(s, 2));
	}
	sqlite3_reset(s);
	store_unlock(st);
	if (top == NULL)
		goto done;
	patch = attempts_scratch(svc, group_id, ".applied.patch");
	if (!attempts_git_apply(git_dir, top, patch, true, why, sizeof why)) {
		cJSON *details = cJSON_CreateObject();

		cJSON_AddStringToObject(details, "reason", why);
		problem_set(p, TD_ATTEMPT_CONFLICT, NULL, "The applied changes were changed since "
		    "in %s; nothing was reverted.", top);
		p->details = details;
	}
	if (p->code == TD_OK)
		unlink(patch);
	free(patch);
	if (p->code != TD_OK)
		goto done;
	store_lock(st);
	attempts_rows_reverted(st, group_id, clock_wall_ms());
	attempts_group_touch(st, group_id, NULL);
	attempts_emit(svc, "attempts.updated", group_id, NULL, NULL);
	g = attempts_group_load_locked(svc, group_id);
	store_unlock(st);
done:
	pthread_mutex_unlock(&attempts_mu);
	free(top);
	free(git_dir);
	return g;
}

cJSON *
attempts_discard(struct service *svc, const char *group_id, const char *run_id,
    struct problem *p)
{
	struct store *st = svc->store;
	struct attempt_row *rows;
	char group[TD_ID_MAX] = "";
	size_t n;
	cJSON *g = NULL;

	pthread_mutex_lock(&attempts_mu);
	store_lock(st);
	if (run_id != NULL)
		rows = attempt_rows(st, ATTEMPT_ROW_SELECT "WHERE a.run_id = ?1", run_id, &n);
	else
		rows = attempt_rows(st, ATTEMPT_ROW_SELECT "WHERE a.group_id = ?1", group_id, &n);
	if (n == 0 && run_id == NULL) {
		g = attempts_group_load_locked(svc, group_id);
		if (g == NULL)
			problem_set(p, TD_NOT_FOUND, "attempts", "No attempts group with that id.");
	} else if (n == 0) {
		problem_set(p, TD_NOT_FOUND, "run", "No attempt runs as %s.", run_id);
	}
	for (size_t i = 0; i < n && p->code == TD_OK; i++) {
		if (strcmp(rows[i].state, "active") == 0 &&
		    attempts_run_active(st, rows[i].run))
			problem_set(p, TD_RUN_ACTIVE, "run", "The attempt's run %s has not ended; "
			    "cancel it first.", rows[i].run);
	}
	if (n > 0)
		snprintf(group, sizeof group, "%s", rows[0].group);
	store_unlock(st);
	if (p->code != TD_OK || n == 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].state, "active") == 0)
			attempt_remove(svc, &rows[i]);
	}
	store_lock(st);
	attempts_rows_discard_if_done(st, group);
	attempts_group_touch(st, group, NULL);
	attempts_emit(svc, "attempts.updated", group, run_id ? rows[0].session : NULL, run_id);
	g = attempts_group_load_locked(svc, group);
	store_unlock(st);
done:
	pthread_mutex_unlock(&attempts_mu);
	attempt_rows_free(rows, n);
	return g;
}
