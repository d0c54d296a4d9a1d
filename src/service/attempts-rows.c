/*
 * Attempts: the rows of attempt_groups and attempts, the group as the API
 * shows it, and the removal of one attempt (attempts-int.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attempts-git.h"
#include "attempts-int.h"
#include "attempts.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "resource.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

pthread_mutex_t attempts_mu = PTHREAD_MUTEX_INITIALIZER;

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
struct attempt_row *
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

void
attempt_rows_free(struct attempt_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		attempt_row_clear(&rows[i]);
	free(rows);
}

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

/* Binds text (NULL: null) to parameter i of s. */
static void
attempts_bind_text(sqlite3_stmt *s, int i, const char *text)
{
	if (text != NULL)
		sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

/* Steps s once and resets it; whether it ran. */
static bool
attempts_step(sqlite3_stmt *s)
{
	bool ok = sqlite3_step(s) == SQLITE_DONE;

	sqlite3_reset(s);
	return ok;
}

bool
attempts_rows_insert_group(struct store *st, const char *group, const char *project,
    const char *prompt, const char *cwd, const char *top, const char *git_dir, bool copy,
    const char *check, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO attempt_groups (id, project_id, prompt,"
	    " cwd, top, git_dir, kind, check_command, status, created_at, updated_at)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'preparing', ?9, ?9)");

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, project, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, prompt, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, cwd, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, top, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, git_dir, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, copy ? "copy" : "git", -1, SQLITE_STATIC);
	attempts_bind_text(s, 8, check);
	sqlite3_bind_int64(s, 9, now);
	return attempts_step(s);
}

bool
attempts_rows_insert_attempt(struct store *st, const char *group, int idx, const char *session,
    const char *run, const char *model, const char *branch, const char *path, const char *cwd)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO attempts (group_id, idx, session_id, run_id,"
	    " model, branch, path, cwd, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'preparing')");

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, idx);
	sqlite3_bind_text(s, 3, session, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, run, -1, SQLITE_STATIC);
	attempts_bind_text(s, 5, model);
	sqlite3_bind_text(s, 6, branch, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 8, cwd, -1, SQLITE_STATIC);
	return attempts_step(s);
}

bool
attempts_rows_group_delete(struct store *st, const char *group)
{
	return attempts_exec(st, "DELETE FROM attempt_groups WHERE id = ?1", group, NULL, NULL);
}

bool
attempts_rows_activate(struct store *st, const char *group, const char *base)
{
	return attempts_exec(st, "UPDATE attempts SET state = 'active' WHERE group_id = ?1",
	    group, NULL, NULL) &&
	    attempts_exec(st, "UPDATE attempt_groups SET status = 'active', base = ?2"
	    " WHERE id = ?1", group, base, NULL);
}

bool
attempts_rows_applied(struct store *st, const char *group, const char *run, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempt_groups SET status = 'applied',"
	    " applied_run = ?2, applied_at = ?3, reverted_at = NULL,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1");

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, now);
	return attempts_step(s);
}

bool
attempts_rows_reverted(struct store *st, const char *group, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempt_groups SET status = CASE WHEN EXISTS"
	    " (SELECT 1 FROM attempts WHERE group_id = ?1 AND state = 'active') THEN 'active'"
	    " ELSE 'discarded' END, reverted_at = ?2 WHERE id = ?1");

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	return attempts_step(s);
}

bool
attempts_rows_discard_if_done(struct store *st, const char *group)
{
	return attempts_exec(st, "UPDATE attempt_groups SET status = 'discarded' WHERE id = ?1"
	    " AND status = 'active' AND NOT EXISTS (SELECT 1 FROM attempts WHERE group_id = ?1"
	    " AND state = 'active')", group, NULL, NULL);
}

bool
attempts_rows_sweep(struct store *st)
{
	return attempts_exec(st, "DELETE FROM attempt_groups WHERE status = 'preparing'", NULL,
	    NULL, NULL) &&
	    attempts_exec(st, "UPDATE attempts SET check_status = NULL"
	    " WHERE check_status = 'running'", NULL, NULL, NULL);
}

bool
attempts_rows_measured(struct store *st, const char *group, int idx, bool measured,
    long files, long added, long deleted, const char *check_status)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempts SET files = ?3, additions = ?4,"
	    " deletions = ?5, check_status = ?6 WHERE group_id = ?1 AND idx = ?2");

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, idx);
	if (measured) {
		sqlite3_bind_int64(s, 3, files);
		sqlite3_bind_int64(s, 4, added);
		sqlite3_bind_int64(s, 5, deleted);
	}
	sqlite3_bind_text(s, 6, check_status, -1, SQLITE_STATIC);
	return attempts_step(s);
}

bool
attempts_rows_checked(struct store *st, const char *group, int idx, const char *status,
    int code, const char *output)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE attempts SET check_status = ?3, check_exit = ?4,"
	    " check_output = ?5 WHERE group_id = ?1 AND idx = ?2");

	if (s == NULL)
		return false;
	sqlite3_bind_text(s, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, idx);
	sqlite3_bind_text(s, 3, status, -1, SQLITE_STATIC);
	if (code >= 0)
		sqlite3_bind_int(s, 4, code);
	else
		sqlite3_bind_null(s, 4);
	sqlite3_bind_text(s, 5, output, -1, SQLITE_STATIC);
	return attempts_step(s);
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

bool
attempts_group_touch(struct store *st, const char *group, const char *status)
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
	sqlite3_bind_int64(s, 3, clock_wall_ms());
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

cJSON *
attempts_group_load_locked(struct service *svc, const char *id)
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
	g = attempts_group_load_locked(svc, id);
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
			cJSON *g = attempts_group_load_locked(svc, ids[i]);
			if (g != NULL)
				cJSON_AddItemToArray(arr, g);
		}
	}
	store_unlock(st);
	free(ids);
	return arr;
}

void
attempts_emit(struct service *svc, const char *type, const char *group, const char *session,
    const char *run)
{
	cJSON *g = attempts_group_load_locked(svc, group);

	if (g != NULL)
		events_emit(svc->events, type, json_get_string(g, "projectId"), session, run, g);
}

char *
attempts_scratch(struct service *svc, const char *group, const char *what)
{
	char *dir = xasprintf("%s/attempts", svc->paths.data_dir);
	char *path;

	if (!paths_mkdir_p(dir, 0700))
		log_warn("attempts: cannot make %s: %s", dir, strerror(errno));
	path = xasprintf("%s/%s%s", dir, group, what);
	free(dir);
	return path;
}

bool
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

