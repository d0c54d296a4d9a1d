/*
 * The run domain (runs.h): the only writer of the runs table, its
 * transitions with their cache drops and run.* events, and rendering a run
 * as the API shows it.  Below the supervisor and the HTTP routes; above the
 * store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifacts.h"
#include "cache.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "resource.h"
#include "runs.h"
#include "service.h"
#include "sessions.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

void
run_emit(struct service *svc, const char *type, const char *run_id, cJSON *data)
{
	sqlite3_stmt *s = store_stmt(svc->store,
	    "SELECT project_id, session_id FROM runs WHERE id = ?1");

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		events_emit(svc->events, type, resource_text(s, 0), resource_text(s, 1),
		    run_id, data);
	else
		cJSON_Delete(data);
	sqlite3_reset(s);
}

/* A JSON object {"status": status}. */
cJSON *
run_status_data(const char *status)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "status", status);
	return d;
}

bool
run_status_final(const char *status)
{
	return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
	    strcmp(status, "cancelled") == 0;
}

cJSON *
run_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject(), *progress, *usage;
	const char *status = resource_text(s, 3);
	bool final = run_status_final(status);

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "sessionId", resource_text(s, 1));
	cJSON_AddStringToObject(j, "projectId", resource_text(s, 2));
	cJSON_AddStringToObject(j, "status", status);
	cJSON_AddStringToObject(j, "prompt", resource_text(s, 4));
	cJSON_AddStringToObject(j, "permissionProfile", resource_text(s, 5));
	resource_add_text_or_null(j, "turnIntent", s, 6);
	cJSON_AddItemToObject(j, "config", resource_json_column(s, 7));
	cJSON_AddStringToObject(j, "cwd", resource_text(s, 8));
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 9));
	resource_add_time_or_null(j, "startedAt", s, 10);
	resource_add_time_or_null(j, "finishedAt", s, 11);
	resource_add_time_or_null(j, "cancelRequestedAt", s, 12);
	if (sqlite3_column_type(s, 13) == SQLITE_NULL) {
		cJSON_AddNullToObject(j, "progress");
	} else {
		progress = cJSON_AddObjectToObject(j, "progress");
		cJSON_AddStringToObject(progress, "phase", resource_text(s, 13));
		resource_add_time(progress, "updatedAt", sqlite3_column_int64(s, 14));
	}
	if (!final && sqlite3_column_type(s, 15) != SQLITE_NULL)
		cJSON_AddItemToObject(j, "attention", resource_json_column(s, 15));
	if (final)
		cJSON_AddStringToObject(j, "output", resource_text(s, 16));
	if (strcmp(status, "failed") == 0) {
		cJSON *err = cJSON_AddObjectToObject(j, "error");
		cJSON_AddStringToObject(err, "code", resource_text(s, 17));
		cJSON_AddStringToObject(err, "message", resource_text(s, 18));
	}
	usage = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(usage, "inputTokens", (double)sqlite3_column_int64(s, 19));
	cJSON_AddNumberToObject(usage, "outputTokens", (double)sqlite3_column_int64(s, 20));
	cJSON_AddNumberToObject(usage, "cacheReadTokens", (double)sqlite3_column_int64(s, 24));
	cJSON_AddNumberToObject(usage, "cacheWriteTokens", (double)sqlite3_column_int64(s, 25));
	resource_add_time(j, "updatedAt", sqlite3_column_int64(s, 21));
	cJSON_AddBoolToObject(j, "network", sqlite3_column_int(s, 22) != 0);
	if (sqlite3_column_type(s, 23) == SQLITE_NULL)
		cJSON_AddNullToObject(j, "review");
	else
		cJSON_AddItemToObject(j, "review", resource_json_column(s, 23));
	if (sqlite3_column_type(s, 26) == SQLITE_NULL)
		cJSON_AddNullToObject(j, "changes");
	else
		cJSON_AddItemToObject(j, "changes", resource_json_column(s, 26));
	return j;
}

cJSON *
run_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?1"), id,
	    run_from_row);
}



bool
runs_get(struct store *st, const char *id, struct run *run)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT id, session_id, project_id, status, prompt,"
	    " permission_profile, turn_intent, config, cwd, network,"
	    " cancel_requested_at IS NOT NULL, resumes, checkpoint, output FROM runs WHERE id = ?1");
	bool found;

	memset(run, 0, sizeof *run);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	if (found) {
		snprintf(run->id, sizeof run->id, "%s", resource_text(s, 0));
		snprintf(run->session_id, sizeof run->session_id, "%s", resource_text(s, 1));
		snprintf(run->project_id, sizeof run->project_id, "%s", resource_text(s, 2));
		snprintf(run->status, sizeof run->status, "%s", resource_text(s, 3));
		run->prompt = xstrdup(resource_text(s, 4));
		run->permission_profile = xstrdup(resource_text(s, 5));
		if (sqlite3_column_type(s, 6) != SQLITE_NULL)
			run->turn_intent = xstrdup(resource_text(s, 6));
		run->config = resource_json_column(s, 7);
		run->cwd = xstrdup(resource_text(s, 8));
		run->network = sqlite3_column_int(s, 9) != 0;
		run->cancel_requested = sqlite3_column_int(s, 10) != 0;
		run->resumes = sqlite3_column_int(s, 11);
		/* Only objects up to RUNS_CHECKPOINT_MAX_BYTES are stored: anything else is damage. */
		if (sqlite3_column_type(s, 12) != SQLITE_NULL) {
			if (sqlite3_column_bytes(s, 12) <= RUNS_CHECKPOINT_MAX_BYTES)
				run->checkpoint = json_parse(resource_text(s, 12),
				    strlen(resource_text(s, 12)));
			if (!cJSON_IsObject(run->checkpoint)) {
				cJSON_Delete(run->checkpoint);
				run->checkpoint = NULL;
				run->checkpoint_invalid = true;
			}
		}
		run->output = xstrdup(resource_text(s, 13));
	}
	sqlite3_reset(s);
	return found;
}

void
runs_clear(struct run *run)
{
	if (run == NULL)
		return;
	free(run->prompt);
	free(run->permission_profile);
	free(run->turn_intent);
	cJSON_Delete(run->config);
	free(run->cwd);
	cJSON_Delete(run->checkpoint);
	free(run->output);
	memset(run, 0, sizeof *run);
}

cJSON *
runs_history(struct store *st, const char *session_id, const char *before_id, int max_runs,
    size_t max_output)
{
	cJSON *hist = cJSON_CreateArray();
	sqlite3_stmt *s = store_stmt(st, "SELECT prompt, output FROM (SELECT id, prompt, output"
	    " FROM runs WHERE session_id = ?1 AND id < ?2"
	    " AND status IN ('completed', 'failed', 'cancelled') ORDER BY id DESC LIMIT ?3)"
	    " ORDER BY id");

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, before_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, max_runs);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *h = cJSON_CreateObject();
		char *out = strndup(resource_text(s, 1), max_output);

		cJSON_AddStringToObject(h, "prompt", resource_text(s, 0));
		cJSON_AddStringToObject(h, "output", out);
		free(out);
		cJSON_AddItemToArray(hist, h);
	}
	sqlite3_reset(s);
	return hist;
}

bool
runs_admit(struct store *st, const struct run *run, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO runs (id, session_id, project_id, status,"
	    " prompt, permission_profile, turn_intent, config, cwd, created_at, updated_at,"
	    " network) VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10)");
	bool ok;

	sqlite3_bind_text(s, 1, run->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, run->session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, run->project_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, run->prompt, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, run->permission_profile, -1, SQLITE_STATIC);
	if (run->turn_intent != NULL)
		sqlite3_bind_text(s, 6, run->turn_intent, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, json_print(run->config), -1, free);
	sqlite3_bind_text(s, 8, run->cwd, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 9, now);
	sqlite3_bind_int(s, 10, run->network);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok && session_touch(st, run->session_id, now);
}

void
runs_admitted(struct service *svc, const struct run *run)
{
	cJSON *d = run_status_data("queued"), *shown = run_load(svc->store, run->id);

	/* The run as the API shows it: a client lists it without fetching it. */
	if (shown != NULL)
		cJSON_AddItemToObject(d, "run", shown);
	events_emit(svc->events, "run.queued", run->project_id, run->session_id, run->id, d);
	session_emit_updated_locked(svc, run->session_id);
}

size_t
runs_queued(struct store *st, char (*ids)[TD_ID_MAX], size_t max)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT id FROM runs WHERE status = 'queued'"
	    " ORDER BY id LIMIT ?1");
	size_t n = 0;

	sqlite3_bind_int64(s, 1, (sqlite3_int64)max);
	while (n < max && sqlite3_step(s) == SQLITE_ROW)
		snprintf(ids[n++], TD_ID_MAX, "%s", resource_text(s, 0));
	sqlite3_reset(s);
	return n;
}

/* A run event and session.updated for its session; only while the store is locked. */
static void
runs_emit_with_session(struct service *svc, const char *type, const char *id, cJSON *data)
{
	sqlite3_stmt *s = store_stmt(svc->store,
	    "SELECT project_id, session_id FROM runs WHERE id = ?1");
	char project[TD_ID_MAX] = "", session[TD_ID_MAX] = "";

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(project, sizeof project, "%s", resource_text(s, 0));
		snprintf(session, sizeof session, "%s", resource_text(s, 1));
	}
	sqlite3_reset(s);
	if (session[0] == '\0') {
		cJSON_Delete(data);
		return;
	}
	if (strcmp(type, "run.finished") == 0)
		artifacts_emit_saved(svc, id, project);
	events_emit(svc->events, type, project, session, id, data);
	session_emit_updated_locked(svc, session);
}

bool
runs_start(struct service *svc, const char *id, int64_t now)
{
	struct store *st = svc->store;
	sqlite3_stmt *s = store_stmt(st, "UPDATE runs SET status = 'running', started_at = ?2,"
	    " progress_phase = 'starting', progress_at = ?2,"
	    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE id = ?1 AND status = 'queued'");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE && sqlite3_changes(sqlite3_db_handle(s)) == 1;
	sqlite3_reset(s);
	if (!ok)
		return false;
	cache_drop(svc->cache, id);
	runs_emit_with_session(svc, "run.started", id, run_status_data("running"));
	return true;
}

void
runs_progress(struct service *svc, const char *id, const struct run_progress *p, bool *warned)
{
	struct store *st = svc->store;
	sqlite3 *db = store_lock(st);
	sqlite3_stmt *s;

	s = store_stmt(st, "UPDATE runs SET progress_phase = ?2, progress_at = ?3,"
	    " input_tokens = ?4, output_tokens = ?5, output = ?6, cache_read_tokens = ?7,"
	    " cache_write_tokens = ?8,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1 AND status = 'running'");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, p->phase, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, clock_wall_ms());
	sqlite3_bind_int64(s, 4, p->usage.input);
	sqlite3_bind_int64(s, 5, p->usage.output);
	sqlite3_bind_text(s, 6, p->output ? p->output : "", (int)p->output_len, SQLITE_STATIC);
	sqlite3_bind_int64(s, 7, p->usage.cache_read);
	sqlite3_bind_int64(s, 8, p->usage.cache_write);
	if (sqlite3_step(s) != SQLITE_DONE && !*warned) {
		log_error("run %s: cannot store progress: %s", id, sqlite3_errmsg(db));
		*warned = true;
	}
	sqlite3_reset(s);
	cache_drop(svc->cache, id);
	store_unlock(st);
}

bool
runs_checkpoint_head(struct store *st, const char *id, const char *head, const char *output,
    size_t output_len)
{
	sqlite3_stmt *s = store_stmt(st, output != NULL ?
	    "UPDATE runs SET checkpoint = ?2, checkpoint_at = ?3, output = ?4,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1 AND status = 'running'" :
	    "UPDATE runs SET checkpoint = ?2, checkpoint_at = ?3,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1 AND status = 'running'");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, head, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, clock_wall_ms());
	if (output != NULL)
		sqlite3_bind_text(s, 4, output, (int)output_len, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

void
runs_review(struct service *svc, const char *id, const char *review)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;

	store_lock(st);
	s = store_stmt(st, "UPDATE runs SET review = ?2, updated_at = " RESOURCE_NEXT_TIME(3)
	    " WHERE id = ?1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, review, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, clock_wall_ms());
	if (sqlite3_step(s) != SQLITE_DONE)
		log_error("run %s: cannot store a review", id);
	sqlite3_reset(s);
	cache_drop(svc->cache, id);
	store_unlock(st);
}

/* What closes with the run (its plan and prompts), in the transaction ending it. */
static bool
runs_ended_hook(struct service *svc, const char *id, const char *status)
{
	return svc->run_ended == NULL || svc->run_ended(svc, id, status);
}

void
runs_emit_finished_locked(struct service *svc, const char *id, const char *status, const char *code,
    const char *message)
{
	cJSON *d = run_status_data(status);

	if (code != NULL) {
		cJSON *err = cJSON_AddObjectToObject(d, "error");
		cJSON_AddStringToObject(err, "code", code);
		cJSON_AddStringToObject(err, "message", message ? message : "");
	}
	runs_emit_with_session(svc, "run.finished", id, d);
}

bool
runs_finish(struct service *svc, const struct run_end *e)
{
	struct store *st = svc->store;
	int64_t now = clock_wall_ms();
	sqlite3_stmt *s;
	bool ok;

	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "UPDATE runs SET status = ?2, output = ?3, error_code = ?4,"
		    " error_message = ?5, finished_at = ?6, attention = NULL,"
		    " input_tokens = ?7, output_tokens = ?8, cache_read_tokens = ?9,"
		    " cache_write_tokens = ?10,"
		    " updated_at = " RESOURCE_NEXT_TIME(6)
		    " WHERE id = ?1 AND status IN ('queued', 'running')");
		sqlite3_bind_text(s, 1, e->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, e->status, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, e->output ? e->output : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, e->code, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, e->message, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, now);
		sqlite3_bind_int64(s, 7, e->usage.input);
		sqlite3_bind_int64(s, 8, e->usage.output);
		sqlite3_bind_int64(s, 9, e->usage.cache_read);
		sqlite3_bind_int64(s, 10, e->usage.cache_write);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	ok = ok && artifacts_run_ended(st, e->id);
	if (ok && e->session_id != NULL)
		ok = session_touch(st, e->session_id, now);
	ok = ok && runs_ended_hook(svc, e->id, e->status);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	cache_drop(svc->cache, e->id);
	if (ok)
		runs_emit_finished_locked(svc, e->id, e->status, e->code, e->message);
	store_unlock(st);
	if (ok)
		log_info("run %s %s%s%s", e->id, e->status, e->code ? ": " : "",
		    e->code ? e->code : "");
	return ok;
}

bool
runs_request_cancel(struct service *svc, const char *id, char *status)
{
	struct store *st = svc->store;
	int64_t now = clock_wall_ms();
	sqlite3_stmt *s;
	bool ok = true;

	status[0] = '\0';
	store_lock(st);
	s = store_stmt(st, "SELECT status FROM runs WHERE id = ?1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		snprintf(status, 16, "%s", resource_text(s, 0));
	sqlite3_reset(s);
	if (status[0] != '\0' && !run_status_final(status)) {
		/* A queued run has no agent: it ends here. */
		s = store_stmt(st, "UPDATE runs SET"
		    " cancel_requested_at = COALESCE(cancel_requested_at, ?2),"
		    " status = CASE status WHEN 'queued' THEN 'cancelled' ELSE status END,"
		    " finished_at = CASE status WHEN 'queued' THEN ?2 ELSE finished_at END,"
		    " output = CASE status WHEN 'queued' THEN '' ELSE output END,"
		    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, now);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
		cache_drop(svc->cache, id);
		if (ok && strcmp(status, "queued") == 0) {
			run_emit(svc, "run.finished", id, run_status_data("cancelled"));
			s = store_stmt(st, "SELECT session_id FROM runs WHERE id = ?1");
			sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
			if (sqlite3_step(s) == SQLITE_ROW) {
				char sid[TD_ID_MAX];
				snprintf(sid, sizeof sid, "%s", resource_text(s, 0));
				sqlite3_reset(s);
				session_emit_updated_locked(svc, sid);
			}
			sqlite3_reset(s);
		}
	}
	store_unlock(st);
	return ok;
}

bool
runs_note_cancel(struct store *st, const char *id, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE runs SET cancel_requested_at ="
	    " COALESCE(cancel_requested_at, ?2) WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
runs_set_attention(struct service *svc, const char *id, const cJSON *attention)
{
	sqlite3_stmt *s = store_stmt(svc->store, "UPDATE runs SET attention = ?2,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1 AND status = 'running'");
	char *text = attention ? json_print(attention) : NULL;
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (text != NULL)
		sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, clock_wall_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	free(text);
	cache_drop(svc->cache, id);
	return ok;
}

bool
runs_allow_all(struct store *st, const char *id)
{
	return store_exec_text(st, "UPDATE runs SET allow_run = 1 WHERE id = ?1", id);
}

bool
runs_resume_count(struct store *st, const char *id, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE runs SET resumes = resumes + 1,"
	    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
runs_end_left_locked(struct service *svc, const char *id, const char *status, const char *code,
    const char *message, int64_t now)
{
	struct store *st = svc->store;
	bool ok = artifacts_run_ended(st, id);
	sqlite3_stmt *s = store_stmt(st, "UPDATE runs SET status = ?2, error_code = ?3,"
	    " error_message = ?4, output = COALESCE(output, ''), finished_at = ?5,"
	    " attention = NULL, updated_at = " RESOURCE_NEXT_TIME(5) " WHERE id = ?1");

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, code, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, message, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, now);
	ok = ok && sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok && runs_ended_hook(svc, id, status);
}

void
runs_admission_read(struct store *st, const char *project, const char *session, struct run_admission *a)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT defaults FROM project_defaults"
	    " WHERE project_id = ?1");

	sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
	if ((a->project_known = sqlite3_step(s) == SQLITE_ROW))
		a->project_defaults = resource_json_column(s, 0);
	sqlite3_reset(s);
	if (session == NULL)
		return;
	s = store_stmt(st, "SELECT project_id, cwd, config, EXISTS (SELECT 1 FROM runs"
	    " WHERE session_id = ?1 AND status IN ('queued', 'running')), deleting_at IS NOT NULL"
	    " FROM sessions WHERE id = ?1");
	sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
	if ((a->session_known = sqlite3_step(s) == SQLITE_ROW)) {
		a->session_other_project = strcmp(resource_text(s, 0), project) != 0;
		snprintf(a->session_cwd, sizeof a->session_cwd, "%s", resource_text(s, 1));
		a->session_cfg = resource_json_column(s, 2);
		a->session_busy = sqlite3_column_int(s, 3) != 0;
		a->session_deleting = sqlite3_column_int(s, 4) != 0;
	}
	sqlite3_reset(s);
}

cJSON *
runs_list(struct store *st, const char *session, const char *project, const char *status,
    const char *cursor, int limit, char *next)
{
	cJSON *arr = cJSON_CreateArray();
	struct resource_page pg;
	sqlite3_stmt *s = store_stmt(st, "SELECT " RUN_COLUMNS " FROM runs"
	    " WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR project_id = ?2)"
	    " AND (?3 IS NULL OR status = ?3) AND (?4 IS NULL OR id < ?4)"
	    " ORDER BY id DESC LIMIT ?5");

	if (session != NULL)
		sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
	if (project != NULL)
		sqlite3_bind_text(s, 2, project, -1, SQLITE_STATIC);
	if (status != NULL)
		sqlite3_bind_text(s, 3, status, -1, SQLITE_STATIC);
	resource_page_start(&pg, s, 4, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, run_from_row(s));
	sqlite3_reset(s);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

double
run_usage_cost(const struct run_usage *u, const struct price *p)
{
	long long plain = u->input - u->cache_read - u->cache_write;

	return ((double)(plain > 0 ? plain : 0) * p->input + (double)u->output * p->output +
	    (double)u->cache_read * p->cache_read + (double)u->cache_write * p->cache_write) / 1e6;
}

long long
run_usage_count(const cJSON *usage, const char *key)
{
	double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(usage, key));

	return v >= 0 ? (long long)v : 0;	/* NaN when absent */
}

void
run_add_cost(const struct settings *set, cJSON *run)
{
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(run, "config");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(run, "usage");
	struct price p;
	struct run_usage u = {
		.input = run_usage_count(usage, "inputTokens"),
		.output = run_usage_count(usage, "outputTokens"),
		.cache_read = run_usage_count(usage, "cacheReadTokens"),
		.cache_write = run_usage_count(usage, "cacheWriteTokens"),
	};

	if (settings_price(set, json_get_string(cfg, "provider"), json_get_string(cfg, "model"), &p))
		cJSON_AddNumberToObject(run, "cost", run_usage_cost(&u, &p));
	else
		cJSON_AddNullToObject(run, "cost");
}

static void
usage_sum(struct run_usage *to, const struct run_usage *u)
{
	to->input += u->input;
	to->output += u->output;
	to->cache_read += u->cache_read;
	to->cache_write += u->cache_write;
}

static void
runs_usage_add(cJSON *to, const struct run_usage *u, long long runs)
{
	cJSON_AddNumberToObject(to, "runs", (double)runs);
	cJSON_AddNumberToObject(to, "inputTokens", (double)u->input);
	cJSON_AddNumberToObject(to, "outputTokens", (double)u->output);
	cJSON_AddNumberToObject(to, "cacheReadTokens", (double)u->cache_read);
	cJSON_AddNumberToObject(to, "cacheWriteTokens", (double)u->cache_write);
}

cJSON *
runs_usage(struct store *st, const struct settings *set, const char *session,
    const char *project)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT json_extract(config, '$.provider'),"
	    " json_extract(config, '$.model'), COUNT(*), SUM(input_tokens), SUM(output_tokens),"
	    " SUM(cache_read_tokens), SUM(cache_write_tokens) FROM runs"
	    " WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR project_id = ?2)"
	    " GROUP BY 1, 2 ORDER BY 1, 2");
	cJSON *j = cJSON_CreateObject(), *by = cJSON_CreateArray();
	struct run_usage all = { 0 };
	long long runs = 0;
	double cost = 0;
	bool priced = true;

	if (session != NULL)
		sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
	if (project != NULL)
		sqlite3_bind_text(s, 2, project, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *prov = (const char *)sqlite3_column_text(s, 0);
		const char *model = (const char *)sqlite3_column_text(s, 1);
		struct run_usage u = { sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4),
			sqlite3_column_int64(s, 5), sqlite3_column_int64(s, 6) };
		cJSON *g = cJSON_CreateObject();
		struct price p;

		resource_add_text_or_null(g, "provider", s, 0);
		resource_add_text_or_null(g, "model", s, 1);
		runs_usage_add(g, &u, sqlite3_column_int64(s, 2));
		if (settings_price(set, prov, model, &p)) {
			cJSON_AddNumberToObject(g, "cost", run_usage_cost(&u, &p));
			cost += run_usage_cost(&u, &p);
		} else {
			cJSON_AddNullToObject(g, "cost");
			priced = priced && u.input + u.output == 0;
		}
		cJSON_AddItemToArray(by, g);
		usage_sum(&all, &u);
		runs += sqlite3_column_int64(s, 2);
	}
	sqlite3_reset(s);
	runs_usage_add(j, &all, runs);
	if (priced)
		cJSON_AddNumberToObject(j, "cost", cost);
	else
		cJSON_AddNullToObject(j, "cost");
	cJSON_AddItemToObject(j, "byModel", by);
	return j;
}

size_t
runs_session_active(struct store *st, const char *session_id, char (*ids)[TD_ID_MAX],
    size_t max)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT id FROM runs WHERE session_id = ?1"
	    " AND status IN ('queued', 'running') ORDER BY id");
	size_t n = 0;

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (n < max)
			snprintf(ids[n], TD_ID_MAX, "%s", resource_text(s, 0));
		n++;
	}
	sqlite3_reset(s);
	return n;
}

long
runs_delete_session_locked(struct service *svc, const char *session_id)
{
	struct store *st = svc->store;
	sqlite3_stmt *s = store_stmt(st, "SELECT id FROM runs WHERE session_id = ?1");
	long n;
	bool ok;

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW)
		cache_drop(svc->cache, resource_text(s, 0));
	sqlite3_reset(s);
	s = store_stmt(st, "DELETE FROM runs WHERE session_id = ?1");
	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	n = ok ? (long)sqlite3_changes(sqlite3_db_handle(s)) : -1;
	sqlite3_reset(s);
	return n;
}
