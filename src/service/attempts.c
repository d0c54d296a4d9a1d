/* Attempts: the group's use cases and its worker (attempts.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attempts-git.h"
#include "attempts.h"
#include "events.h"
#include "frameworks.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "problem.h"
#include "resource.h"
#include "runs.h"
#include "sandbox.h"
#include "service.h"
#include "sessions.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

#define ATTEMPTS_CHECK_TIMEOUT_MS (10 * 60 * 1000)
#define ATTEMPTS_WHY 1024

/* Held around what changes a worktree or the user's tree; before the store lock. */
static pthread_mutex_t attempts_mu = PTHREAD_MUTEX_INITIALIZER;

struct attempts {
	struct service *svc;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;
};

/* One attempt row. */
struct attempt_row {
	char group[TD_ID_MAX];
	int idx;
	char session[TD_ID_MAX];
	char run[TD_ID_MAX];
	char project[TD_ID_MAX];
	char *branch, *path, *cwd, *git_dir, *top, *base, *check, *group_status;
	char state[16];
	bool copy;		/* the group's directory is outside git */
};

static void
attempt_row_clear(struct attempt_row *a)
{
	free(a->branch);
	free(a->path);
	free(a->cwd);
	free(a->git_dir);
	free(a->top);
	free(a->base);
	free(a->check);
	free(a->group_status);
	memset(a, 0, sizeof *a);
}

#define ATTEMPT_ROW_SELECT "SELECT a.group_id, a.idx, a.session_id, a.run_id, g.project_id," \
	" a.branch, a.path, a.cwd, g.git_dir, g.top, g.base, g.check_command, g.status," \
	" a.state, g.kind FROM attempts a JOIN attempt_groups g ON g.id = a.group_id "

static void
attempt_row_read(sqlite3_stmt *s, struct attempt_row *a)
{
	snprintf(a->group, sizeof a->group, "%s", resource_text(s, 0));
	a->idx = sqlite3_column_int(s, 1);
	snprintf(a->session, sizeof a->session, "%s", resource_text(s, 2));
	snprintf(a->run, sizeof a->run, "%s", resource_text(s, 3));
	snprintf(a->project, sizeof a->project, "%s", resource_text(s, 4));
	a->branch = xstrdup(resource_text(s, 5));
	a->path = xstrdup(resource_text(s, 6));
	a->cwd = xstrdup(resource_text(s, 7));
	a->git_dir = xstrdup(resource_text(s, 8));
	a->top = xstrdup(resource_text(s, 9));
	a->base = sqlite3_column_type(s, 10) == SQLITE_NULL ? NULL : xstrdup(resource_text(s, 10));
	a->check = sqlite3_column_type(s, 11) == SQLITE_NULL ? NULL : xstrdup(resource_text(s, 11));
	a->group_status = xstrdup(resource_text(s, 12));
	snprintf(a->state, sizeof a->state, "%s", resource_text(s, 13));
	a->copy = strcmp(resource_text(s, 14), "copy") == 0;
}

/*
 * The attempts sql (ATTEMPT_ROW_SELECT and a WHERE, a literal: the statement
 * cache knows a statement by its text's address) reads with text ?1; how many into *n.
 */
static struct attempt_row *
attempt_rows(struct store *st, const char *sql, const char *arg, size_t *n)
{
	sqlite3_stmt *s = store_stmt(st, sql);
	struct attempt_row *rows = NULL;

	*n = 0;
	if (s == NULL)
		return NULL;
	if (arg != NULL)
		sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		rows = xrealloc(rows, (*n + 1) * sizeof *rows);
		memset(&rows[*n], 0, sizeof *rows);
		attempt_row_read(s, &rows[(*n)++]);
	}
	sqlite3_reset(s);
	return rows;
}

static void
attempt_rows_free(struct attempt_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		attempt_row_clear(&rows[i]);
	free(rows);
}

/* Runs sql with the text parameters ?1..?3 (NULL binds null); false on a store error. */
static bool
attempts_exec(struct store *st, const char *sql, const char *a, const char *b, const char *c)
{
	sqlite3_stmt *s = store_stmt(st, sql);
	const char *args[3] = { a, b, c };
	bool ok;

	if (s == NULL)
		return false;
	for (int i = 0; i < 3; i++) {
		if (sqlite3_bind_parameter_count(s) > i)
			sqlite3_bind_text(s, i + 1, args[i], -1, SQLITE_STATIC);
	}
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

/* Sets the attempt's state and the group's updated_at; store locked. */
static bool
attempt_set_state(struct store *st, const char *group, int idx, const char *state)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempts SET state = ?3"
	    " WHERE group_id = ?1 AND idx = ?2");
	bool ok;

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, idx);
	sqlite3_bind_text(s, 3, state, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

static bool
group_touch(struct store *st, const char *group, const char *status)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempt_groups SET status = COALESCE(?2, status),"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1");
	bool ok;

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	if (status != NULL)
		sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 2);
	sqlite3_bind_int64(s, 3, td_now_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

/* ---- the group as the API shows it ---------------------------------------------- */

static void
attempts_add_int(cJSON *o, const char *name, sqlite3_stmt *s, int col)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddNumberToObject(o, name, (double)sqlite3_column_int64(s, col));
}

/* The attempts of group as the API shows them; store locked. */
static cJSON *
attempts_of_group(struct service *svc, const char *group)
{
	sqlite3_stmt *s = store_stmt(svc->store, "SELECT idx, session_id, run_id, model, branch,"
	    " cwd, state, files, additions, deletions, check_status, check_exit, check_output"
	    " FROM attempts WHERE group_id = ?1 ORDER BY idx");
	cJSON *arr = cJSON_CreateArray();
	char (*runs)[TD_ID_MAX] = NULL;
	size_t n = 0;

	if (s == NULL)
		return arr;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *a = cJSON_CreateObject(), *changes, *check;

		cJSON_AddNumberToObject(a, "index", sqlite3_column_int(s, 0));
		resource_add_text_or_null(a, "sessionId", s, 1);
		resource_add_text_or_null(a, "runId", s, 2);
		resource_add_text_or_null(a, "model", s, 3);
		resource_add_text_or_null(a, "branch", s, 4);
		resource_add_text_or_null(a, "cwd", s, 5);
		resource_add_text_or_null(a, "state", s, 6);
		if (sqlite3_column_type(s, 7) == SQLITE_NULL) {
			cJSON_AddNullToObject(a, "changes");
		} else {
			changes = cJSON_AddObjectToObject(a, "changes");
			attempts_add_int(changes, "files", s, 7);
			attempts_add_int(changes, "additions", s, 8);
			attempts_add_int(changes, "deletions", s, 9);
		}
		check = cJSON_AddObjectToObject(a, "check");
		resource_add_text_or_null(check, "status", s, 10);
		attempts_add_int(check, "exitCode", s, 11);
		resource_add_text_or_null(check, "output", s, 12);
		cJSON_AddItemToArray(arr, a);
		runs = xrealloc(runs, (n + 1) * sizeof *runs);
		snprintf(runs[n++], TD_ID_MAX, "%s", resource_text(s, 2));
	}
	sqlite3_reset(s);
	/* run_load uses statements of its own: after this one is reset */
	for (size_t i = 0; i < n; i++) {
		cJSON *run = run_load(svc->store, runs[i]);

		if (run != NULL)
			run_add_cost(svc->settings, run);
		cJSON_AddItemToObject(cJSON_GetArrayItem(arr, (int)i), "run",
		    run != NULL ? run : cJSON_CreateNull());
	}
	free(runs);
	return arr;
}

#define GROUP_SELECT "SELECT id, project_id, prompt, cwd, kind, base, check_command, status," \
	" applied_run, applied_at, reverted_at, created_at, updated_at FROM attempt_groups "

static cJSON *
group_from_row(sqlite3_stmt *s)
{
	cJSON *g = cJSON_CreateObject();

	resource_add_text_or_null(g, "id", s, 0);
	resource_add_text_or_null(g, "projectId", s, 1);
	resource_add_text_or_null(g, "prompt", s, 2);
	resource_add_text_or_null(g, "cwd", s, 3);
	resource_add_text_or_null(g, "kind", s, 4);
	resource_add_text_or_null(g, "base", s, 5);
	resource_add_text_or_null(g, "check", s, 6);
	resource_add_text_or_null(g, "status", s, 7);
	resource_add_text_or_null(g, "appliedRun", s, 8);
	resource_add_time_or_null(g, "appliedAt", s, 9);
	resource_add_time_or_null(g, "revertedAt", s, 10);
	resource_add_time_or_null(g, "createdAt", s, 11);
	resource_add_time_or_null(g, "updatedAt", s, 12);
	return g;
}

/* The group as the API shows it; store locked. */
static cJSON *
group_load_locked(struct service *svc, const char *id)
{
	sqlite3_stmt *s = store_stmt(svc->store, GROUP_SELECT "WHERE id = ?1");
	cJSON *g = NULL;

	if (s == NULL)
		return NULL;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		g = group_from_row(s);
	sqlite3_reset(s);
	if (g != NULL)
		cJSON_AddItemToObject(g, "attempts", attempts_of_group(svc, id));
	return g;
}

cJSON *
attempts_load(struct service *svc, const char *id)
{
	cJSON *g;

	store_lock(svc->store);
	g = group_load_locked(svc, id);
	store_unlock(svc->store);
	return g;
}

cJSON *
attempts_list(struct service *svc, const char *project, int limit)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;
	cJSON *arr = NULL;
	char (*ids)[TD_ID_MAX] = NULL;
	int n = 0;

	store_lock(st);
	s = store_stmt(st, "SELECT 1 FROM projects WHERE id = ?1");
	sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		arr = cJSON_CreateArray();
	sqlite3_reset(s);
	if (arr != NULL) {
		s = store_stmt(st, "SELECT id FROM attempt_groups WHERE project_id = ?1"
		    " AND status != 'preparing' ORDER BY id DESC LIMIT ?2");
		sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 2, limit);
		while (sqlite3_step(s) == SQLITE_ROW) {
			ids = xrealloc(ids, (size_t)(n + 1) * sizeof *ids);
			snprintf(ids[n++], TD_ID_MAX, "%s", resource_text(s, 0));
		}
		sqlite3_reset(s);
		for (int i = 0; i < n; i++) {
			cJSON *g = group_load_locked(svc, ids[i]);
			if (g != NULL)
				cJSON_AddItemToArray(arr, g);
		}
	}
	store_unlock(st);
	free(ids);
	return arr;
}

/* attempts.updated with the group; store locked. */
static void
attempts_emit(struct service *svc, const char *type, const char *group, const char *session,
    const char *run)
{
	cJSON *g = group_load_locked(svc, group);

	if (g != NULL)
		events_emit(svc->events, type, json_get_string(g, "projectId"), session, run, g);
}

/* ---- creating a group ----------------------------------------------------------- */

/* The scratch directory of attempts: <data>/attempts; false when it cannot be made. */
static char *
attempts_scratch(struct service *svc, const char *group, const char *what)
{
	char *dir = xasprintf("%s/attempts", svc->paths.data_dir);
	char *path;

	if (!td_mkdir_p(dir, 0700))
		log_warn("attempts: cannot make %s: %s", dir, strerror(errno));
	path = xasprintf("%s/%s%s", dir, group, what);
	free(dir);
	return path;
}

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
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO attempt_groups (id, project_id, prompt,"
	    " cwd, top, git_dir, kind, check_command, status, created_at, updated_at)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'preparing', ?9, ?9)");
	int64_t now = td_now_ms();
	bool ok;

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, rq->project, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, rq->prompt, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, rq->cwd, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, repo->top, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, repo->git_dir, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, repo->copy ? "copy" : "git", -1, SQLITE_STATIC);
	if (rq->check != NULL)
		sqlite3_bind_text(s, 8, rq->check, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 8);
	sqlite3_bind_int64(s, 9, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	for (int i = 0; ok && i < rq->count; i++) {
		const char *model = json_get_string(at[i].session_cfg, "model");

		s = store_stmt(st, "INSERT INTO attempts (group_id, idx, session_id, run_id, model,"
		    " branch, path, cwd, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'preparing')");
		if (s == NULL)
			return false;
		sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 2, i + 1);
		sqlite3_bind_text(s, 3, at[i].session, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, at[i].run, -1, SQLITE_STATIC);
		if (model != NULL)
			sqlite3_bind_text(s, 5, model, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(s, 5);
		sqlite3_bind_text(s, 6, at[i].branch, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 7, at[i].path, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 8, at[i].cwd, -1, SQLITE_STATIC);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
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
	attempts_exec(svc->store, "DELETE FROM attempt_groups WHERE id = ?1", group, NULL, NULL);
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
	int64_t now = td_now_ms();
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
	ok = ok && attempts_exec(st, "UPDATE attempts SET state = 'active' WHERE group_id = ?1",
	    group, NULL, NULL) &&
	    attempts_exec(st, "UPDATE attempt_groups SET status = 'active', base = ?2"
	    " WHERE id = ?1", group, base, NULL);
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
	td_id_new("atg", group);
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
		td_id_new("ses", at[i].session);
		td_id_new("run", at[i].run);
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
	ok = td_mkdir_p(svc->paths.workspaces, 0700) &&
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
			answer = group_load_locked(svc, group);
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

/* Removes the attempt's worktree and branch, then marks it removed. */
static bool
attempt_remove(struct service *svc, const struct attempt_row *a)
{
	bool gone = attempts_git_worktree_remove(a->git_dir, a->branch, a->path);

	store_lock(svc->store);
	if (gone)
		gone = attempt_set_state(svc->store, a->group, a->idx, "removed");
	store_unlock(svc->store);
	if (!gone)
		log_warn("attempts %s: attempt %d not removed yet", a->group, a->idx);
	return gone;
}

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
			td_remove_tree(mine);
		free(mine);
	}
	attempt_rows_free(rows, n);
	store_lock(svc->store);
	group_touch(svc->store, group, status);
	store_unlock(svc->store);
}

/* Marks the group applied from run; store locked. */
static bool
attempts_applied(struct store *st, const char *group, const char *run)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempt_groups SET status = 'applied',"
	    " applied_run = ?2, applied_at = ?3, reverted_at = NULL,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1");
	bool ok;

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, td_now_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
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
	ok = attempts_applied(st, rows[0].group, run_id);
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
	g = group_load_locked(svc, rows[0].group);
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
	s = store_stmt(st, "UPDATE attempt_groups SET status = CASE WHEN EXISTS (SELECT 1"
	    " FROM attempts WHERE group_id = ?1 AND state = 'active') THEN 'active' ELSE"
	    " 'discarded' END, reverted_at = ?2 WHERE id = ?1");
	sqlite3_bind_text(s, 1, group_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, td_now_ms());
	sqlite3_step(s);
	sqlite3_reset(s);
	group_touch(st, group_id, NULL);
	attempts_emit(svc, "attempts.updated", group_id, NULL, NULL);
	g = group_load_locked(svc, group_id);
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
		g = group_load_locked(svc, group_id);
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
	attempts_exec(st, "UPDATE attempt_groups SET status = 'discarded' WHERE id = ?1"
	    " AND status = 'active' AND NOT EXISTS (SELECT 1 FROM attempts WHERE group_id = ?1"
	    " AND state = 'active')", group, NULL, NULL);
	group_touch(st, group, NULL);
	attempts_emit(svc, "attempts.updated", group, run_id ? rows[0].session : NULL, run_id);
	g = group_load_locked(svc, group);
	store_unlock(st);
done:
	pthread_mutex_unlock(&attempts_mu);
	attempt_rows_free(rows, n);
	return g;
}

/* ---- the sweep and the worker --------------------------------------------------- */

/* Removes the active attempts whose session was deleted; how many. */
static long
attempts_orphans(struct service *svc)
{
	struct attempt_row *rows;
	size_t n;
	long removed = 0;

	pthread_mutex_lock(&attempts_mu);
	store_lock(svc->store);
	rows = attempt_rows(svc->store, ATTEMPT_ROW_SELECT
	    "WHERE a.state = 'active' AND NOT EXISTS (SELECT 1 FROM sessions s"
	    " WHERE s.id = a.session_id)", NULL, &n);
	store_unlock(svc->store);
	for (size_t i = 0; i < n; i++) {
		if (attempt_remove(svc, &rows[i])) {
			removed++;
			store_lock(svc->store);
			attempts_exec(svc->store, "UPDATE attempt_groups SET status = 'discarded'"
			    " WHERE id = ?1 AND status = 'active' AND NOT EXISTS (SELECT 1 FROM"
			    " attempts WHERE group_id = ?1 AND state = 'active')", rows[i].group,
			    NULL, NULL);
			store_unlock(svc->store);
		}
	}
	pthread_mutex_unlock(&attempts_mu);
	attempt_rows_free(rows, n);
	return removed;
}

void
attempts_sweep(struct service *svc)
{
	struct attempt_row *rows;
	size_t n;
	long made = 0;

	/* a group a crash caught being made: its rows came first, so all of it is listed */
	store_lock(svc->store);
	rows = attempt_rows(svc->store, ATTEMPT_ROW_SELECT "WHERE g.status = 'preparing'",
	    NULL, &n);
	store_unlock(svc->store);
	for (size_t i = 0; i < n; i++) {
		attempts_git_worktree_remove(rows[i].git_dir, rows[i].branch, rows[i].path);
		if (i + 1 == n || strcmp(rows[i].group, rows[i + 1].group) != 0) {
			store_lock(svc->store);
			attempts_exec(svc->store, "DELETE FROM attempt_groups WHERE id = ?1",
			    rows[i].group, NULL, NULL);
			store_unlock(svc->store);
			made++;
		}
	}
	attempt_rows_free(rows, n);
	store_lock(svc->store);
	attempts_exec(svc->store, "DELETE FROM attempt_groups WHERE status = 'preparing'", NULL,
	    NULL, NULL);
	attempts_exec(svc->store, "UPDATE attempts SET check_status = NULL"
	    " WHERE check_status = 'running'", NULL, NULL, NULL);
	store_unlock(svc->store);
	n = (size_t)attempts_orphans(svc);
	if (made + (long)n > 0)
		log_info("attempts: removed %ld groups a crash left half made and %zu attempts "
		    "of deleted sessions", made, n);
}

/* Runs the group's check command in the attempt's worktree; status into *status. */
static void
attempts_check_run(struct attempts *w, const struct attempt_row *a, char *status, int *code,
    char **output)
{
	struct service *svc = w->svc;
	char **hidden = sandbox_hidden_paths(&svc->paths, NULL);
	struct sandbox_policy policy = {
		.profile = SANDBOX_WORKSPACE_WRITE,
		.workspace = a->path,
		.network = false,
		.hidden = (const char *const *)hidden,
		.allow_unconfined = settings_allow_unconfined(svc->settings),
	};
	const char *path = getenv("PATH");
	char path_env[4096], home_env[PATH_MAX + 8], err[512];
	char *envp[] = { path_env, home_env, "LANG=C.UTF-8", NULL };
	char buf[ATTEMPTS_CHECK_OUTPUT_MAX + 1];
	size_t len = 0;
	int pipes[2], fds[3], wstatus = 0;
	long long deadline = td_mono_ms() + ATTEMPTS_CHECK_TIMEOUT_MS;
	pid_t pid, got = 0;
	bool killed = false;

	snprintf(path_env, sizeof path_env, "PATH=%s", path ? path : "/usr/bin:/bin");
	snprintf(home_env, sizeof home_env, "HOME=%s", a->path);
	*code = -1;
	if (pipe2(pipes, O_CLOEXEC) != 0) {
		snprintf(status, 16, "error");
		*output = xasprintf("no pipe: %s", strerror(errno));
		sandbox_hidden_free(hidden);
		return;
	}
	fds[0] = -1;
	fds[1] = fds[2] = pipes[1];
	if (sandbox_spawn_shell(&policy, a->cwd, a->check, envp, fds, &pid, err,
	    sizeof err) != 0) {
		close(pipes[0]);
		close(pipes[1]);
		snprintf(status, 16, "error");
		*output = xstrdup(err);
		sandbox_hidden_free(hidden);
		return;
	}
	close(pipes[1]);
	sandbox_hidden_free(hidden);
	for (;;) {
		struct pollfd pfd = { .fd = pipes[0], .events = POLLIN };
		char chunk[4096];
		ssize_t r;
		bool stop;

		pthread_mutex_lock(&w->mu);
		stop = w->stop;
		pthread_mutex_unlock(&w->mu);
		if (stop || td_mono_ms() > deadline) {
			killed = true;
			break;
		}
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		r = read(pipes[0], chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && len < ATTEMPTS_CHECK_OUTPUT_MAX; i++)
			buf[len++] = chunk[i];
	}
	close(pipes[0]);
	if (killed)
		sandbox_kill(pid);
	while ((got = waitpid(pid, &wstatus, 0)) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	*output = xstrdup(buf);
	if (killed) {
		snprintf(status, 16, "error");
	} else {
		*code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
		snprintf(status, 16, "%s", *code == 0 ? "passed" : "failed");
	}
}

/* Measures one ended attempt and runs its check; false when none waits. */
static bool
attempts_finish_one(struct attempts *w)
{
	struct service *svc = w->svc;
	struct store *st = svc->store;
	struct attempt_row *rows;
	char why[ATTEMPTS_WHY], status[16] = "none", *patch, *index, *output = NULL;
	long files = 0, added = 0, deleted = 0;
	int code = -1;
	size_t n;
	bool measured;
	sqlite3_stmt *s;

	pthread_mutex_lock(&attempts_mu);
	store_lock(st);
	rows = attempt_rows(st, ATTEMPT_ROW_SELECT
	    "WHERE a.state = 'active' AND a.check_status IS NULL AND EXISTS"
	    " (SELECT 1 FROM runs r WHERE r.id = a.run_id AND r.status IN"
	    " ('completed', 'failed', 'cancelled')) LIMIT 1", NULL, &n);
	store_unlock(st);
	if (n == 0) {
		pthread_mutex_unlock(&attempts_mu);
		free(rows);
		return false;
	}
	patch = attempts_scratch(svc, rows[0].group, "-measure.patch");
	index = attempts_scratch(svc, rows[0].group, "-measure.index");
	measured = attempts_git_patch(rows[0].git_dir, rows[0].path, rows[0].base, index, patch,
	    &files, &added, &deleted, why, sizeof why);
	if (!measured)
		log_warn("attempts %s: attempt %d not measured: %s", rows[0].group, rows[0].idx,
		    why);
	unlink(patch);
	free(patch);
	free(index);
	store_lock(st);
	s = store_stmt(st, "UPDATE attempts SET files = ?3, additions = ?4, deletions = ?5,"
	    " check_status = ?6 WHERE group_id = ?1 AND idx = ?2");
	sqlite3_bind_text(s, 1, rows[0].group, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, rows[0].idx);
	if (measured) {
		sqlite3_bind_int64(s, 3, files);
		sqlite3_bind_int64(s, 4, added);
		sqlite3_bind_int64(s, 5, deleted);
	}
	sqlite3_bind_text(s, 6, rows[0].check != NULL ? "running" : "none", -1, SQLITE_STATIC);
	sqlite3_step(s);
	sqlite3_reset(s);
	group_touch(st, rows[0].group, NULL);
	attempts_emit(svc, "attempts.updated", rows[0].group, rows[0].session, rows[0].run);
	store_unlock(st);
	pthread_mutex_unlock(&attempts_mu);
	if (rows[0].check != NULL) {
		attempts_check_run(w, &rows[0], status, &code, &output);
		store_lock(st);
		s = store_stmt(st, "UPDATE attempts SET check_status = ?3, check_exit = ?4,"
		    " check_output = ?5 WHERE group_id = ?1 AND idx = ?2");
		sqlite3_bind_text(s, 1, rows[0].group, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 2, rows[0].idx);
		sqlite3_bind_text(s, 3, status, -1, SQLITE_STATIC);
		if (code >= 0)
			sqlite3_bind_int(s, 4, code);
		else
			sqlite3_bind_null(s, 4);
		sqlite3_bind_text(s, 5, output ? output : "", -1, SQLITE_STATIC);
		sqlite3_step(s);
		sqlite3_reset(s);
		group_touch(st, rows[0].group, NULL);
		attempts_emit(svc, "attempts.updated", rows[0].group, rows[0].session,
		    rows[0].run);
		store_unlock(st);
		free(output);
	}
	attempt_rows_free(rows, n);
	return true;
}

static void *
attempts_main(void *arg)
{
	struct attempts *w = arg;
	long long next_orphans = 0;

	for (;;) {
		struct timespec until;
		bool stop;

		pthread_mutex_lock(&w->mu);
		stop = w->stop;
		pthread_mutex_unlock(&w->mu);
		if (stop)
			break;
		if (attempts_finish_one(w))
			continue;
		if (td_mono_ms() >= next_orphans) {
			attempts_orphans(w->svc);
			next_orphans = td_mono_ms() + 2000;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&w->mu);
		if (!w->stop)
			pthread_cond_timedwait(&w->cond, &w->mu, &until);
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

struct attempts *
attempts_start(struct service *svc)
{
	struct attempts *w = xcalloc(1, sizeof *w);

	w->svc = svc;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, attempts_main, w) != 0) {
		log_error("attempts: no worker thread; checks do not run");
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cond);
		free(w);
		return NULL;
	}
	return w;
}

void
attempts_stop(struct attempts *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	free(w);
}
