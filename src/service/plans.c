/*
 * Plans (docs/http-api.md, Plans): the plan domain.  The agent's proposals and
 * step updates (stored by the supervisor's run threads), the decisions of
 * people (applied by route-plans.c), and closing plans when a run ends or at
 * start-up.  Below the supervisor and the routes, above the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "events.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "plans.h"
#include "prompts.h"
#include "resource.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define SUMMARY_MAX_BYTES 16384
#define STEPS_MAX 50
#define STEP_TITLE_MAX 200

#define PLAN_COLUMNS "session_id, run_id, version, revision, status, summary, feedback," \
	" steps, created_at, updated_at, request_id"
#define PLAN_OPEN "('awaiting-approval', 'approved')"

static const char *const step_statuses[] = { "in-progress", "completed", "failed", NULL };

/* A JSON array column; an empty array when it does not parse. */
static cJSON *
steps_column(sqlite3_stmt *s, int i)
{
	cJSON *j = cJSON_Parse(resource_text(s, i));

	if (cJSON_IsArray(j))
		return j;
	cJSON_Delete(j);
	return cJSON_CreateArray();
}

static cJSON *
plan_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "sessionId", resource_text(s, 0));
	cJSON_AddStringToObject(j, "runId", resource_text(s, 1));
	cJSON_AddNumberToObject(j, "version", (double)sqlite3_column_int64(s, 2));
	cJSON_AddNumberToObject(j, "revision", (double)sqlite3_column_int64(s, 3));
	cJSON_AddStringToObject(j, "status", resource_text(s, 4));
	cJSON_AddStringToObject(j, "summary", resource_text(s, 5));
	resource_add_text_or_null(j, "feedback", s, 6);
	cJSON_AddItemToObject(j, "steps", steps_column(s, 7));
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 8));
	resource_add_time(j, "updatedAt", sqlite3_column_int64(s, 9));
	return j;
}

cJSON *
plan_load(struct store *st, const char *session_id)
{
	return resource_load(store_stmt(st, "SELECT " PLAN_COLUMNS " FROM plans"
	    " WHERE session_id = ?1"), session_id, plan_from_row);
}

void
plan_emit_locked(struct service *svc, const char *session_id)
{
	cJSON *plan = plan_load(svc->store, session_id);

	if (plan == NULL)
		return;
	run_emit(svc, "plan.updated", json_get_string(plan, "runId"), plan);
}

/* run.attention {attention}; attention consumed (NULL: cleared). */
void
plan_attention_emit_locked(struct service *svc, const char *run_id, cJSON *attention)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddItemToObject(d, "attention", attention ? attention : cJSON_CreateNull());
	run_emit(svc, "run.attention", run_id, d);
}

/* The steps of a proposal with the ids the service gives them; NULL when malformed. */
static cJSON *
proposal_steps(const cJSON *params)
{
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(params, "steps"), *step;
	cJSON *out;
	int n = 0;

	if (!cJSON_IsArray(steps) || cJSON_GetArraySize(steps) < 1 ||
	    cJSON_GetArraySize(steps) > STEPS_MAX)
		return NULL;
	out = cJSON_CreateArray();
	cJSON_ArrayForEach(step, steps) {
		cJSON *o;
		char id[16];

		if (!cJSON_IsObject(step) ||
		    !json_check_string(step, "title", true, false, 1, STEP_TITLE_MAX)) {
			cJSON_Delete(out);
			return NULL;
		}
		snprintf(id, sizeof id, "st%d", ++n);
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", id);
		cJSON_AddStringToObject(o, "title", json_get_string(step, "title"));
		cJSON_AddStringToObject(o, "status", "pending");
		cJSON_AddItemToArray(out, o);
	}
	return out;
}

enum td_code
plan_propose(struct service *svc, const char *run_id, const char *session_id,
    long long request_id, const cJSON *params, char **message)
{
	struct store *st = svc->store;
	const char *summary = json_get_string(params, "summary");
	cJSON *steps = proposal_steps(params), *attention;
	long long version = 0, revision = 0;
	int64_t now = clock_wall_ms();
	sqlite3_stmt *s;
	char *steps_text, since[TD_TIME_LEN];
	bool ok;

	if (summary == NULL || summary[0] == '\0' || strlen(summary) > SUMMARY_MAX_BYTES ||
	    steps == NULL) {
		cJSON_Delete(steps);
		*message = xstrdup("A plan needs a summary of 1 to 16,384 bytes and 1 to 50 "
		    "steps, each with a title of 1 to 200 characters.");
		return TD_INVALID_REQUEST;
	}
	steps_text = json_print(steps);
	cJSON_Delete(steps);
	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "SELECT version, revision FROM plans WHERE session_id = ?1");
		sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			version = sqlite3_column_int64(s, 0);
			revision = sqlite3_column_int64(s, 1);
		}
		sqlite3_reset(s);
		/* The last revise feedback stays with the new version. */
		s = store_stmt(st, "INSERT INTO plans (session_id, run_id, version, revision,"
		    " status, summary, feedback, steps, request_id, created_at, updated_at)"
		    " VALUES (?1, ?2, ?3, ?4, 'awaiting-approval', ?5, NULL, ?6, ?7, ?8, ?8)"
		    " ON CONFLICT (session_id) DO UPDATE SET run_id = excluded.run_id,"
		    " version = excluded.version, revision = excluded.revision,"
		    " status = excluded.status, summary = excluded.summary,"
		    " steps = excluded.steps, request_id = excluded.request_id,"
		    " created_at = excluded.created_at,"
		    " updated_at = MAX(excluded.updated_at, plans.updated_at + 1)");
		sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, run_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, version + 1);
		sqlite3_bind_int64(s, 4, revision + 1);
		sqlite3_bind_text(s, 5, summary, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 6, steps_text, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, request_id);
		sqlite3_bind_int64(s, 8, now);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	attention = cJSON_CreateObject();
	cJSON_AddStringToObject(attention, "kind", "plan-approval");
	cJSON_AddNumberToObject(attention, "planVersion", (double)(version + 1));
	cJSON_AddNumberToObject(attention, "planRevision", (double)(revision + 1));
	time_format_utc(now, since);
	cJSON_AddStringToObject(attention, "since", since);
	ok = ok && runs_set_attention(svc, run_id, attention);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		plan_emit_locked(svc, session_id);
		plan_attention_emit_locked(svc, run_id, attention);
	} else {
		cJSON_Delete(attention);
	}
	store_unlock(st);
	free(steps_text);
	if (!ok) {
		log_error("run %s: cannot store a plan", run_id);
		*message = xstrdup("The service could not store the plan.");
		return TD_INTERNAL_ERROR;
	}
	return TD_OK;
}

enum td_code
plan_step(struct service *svc, const char *run_id, const char *session_id,
    const cJSON *params, char **message)
{
	struct store *st = svc->store;
	const char *step_id = json_get_string(params, "stepId");
	const char *status = json_get_string(params, "status");
	cJSON *steps = NULL, *step, *found = NULL;
	enum td_code code = TD_OK;
	sqlite3_stmt *s;
	char *text;

	if (step_id == NULL || status == NULL || !json_check_enum(params, "status", false,
	    step_statuses)) {
		*message = xstrdup("plan.step needs a stepId and a status of in-progress, "
		    "completed or failed.");
		return TD_INVALID_REQUEST;
	}
	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		*message = xstrdup("The service could not store the step.");
		return TD_INTERNAL_ERROR;
	}
	s = store_stmt(st, "SELECT steps FROM plans WHERE session_id = ?1 AND run_id = ?2"
	    " AND status = 'approved'");
	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		steps = steps_column(s, 0);
	sqlite3_reset(s);
	cJSON_ArrayForEach(step, steps) {
		const char *id = json_get_string(step, "id");
		if (id != NULL && strcmp(id, step_id) == 0)
			found = step;
	}
	if (steps == NULL || found == NULL) {
		code = TD_INVALID_REQUEST;
		*message = xstrdup(steps == NULL ? "The run has no approved plan." :
		    "The approved plan has no step with that id.");
	} else {
		cJSON_ReplaceItemInObject(found, "status", cJSON_CreateString(status));
		text = json_print(steps);
		s = store_stmt(st, "UPDATE plans SET steps = ?2, revision = revision + 1,"
		    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE session_id = ?1");
		sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, clock_wall_ms());
		if (sqlite3_step(s) != SQLITE_DONE) {
			code = TD_INTERNAL_ERROR;
			*message = xstrdup("The service could not store the step.");
		}
		sqlite3_reset(s);
		free(text);
	}
	if (code == TD_OK && store_commit(st))
		plan_emit_locked(svc, session_id);
	else
		store_rollback(st);
	store_unlock(st);
	cJSON_Delete(steps);
	return code;
}

bool
plans_run_ended(struct service *svc, const char *run_id, const char *status)
{
	struct store *st = svc->store;
	char session[TD_ID_MAX] = "";
	bool awaiting = false, ok;
	sqlite3_stmt *s;

	s = store_stmt(st, "SELECT session_id, status = 'awaiting-approval' FROM plans"
	    " WHERE run_id = ?1 AND status IN " PLAN_OPEN);
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(session, sizeof session, "%s", resource_text(s, 0));
		awaiting = sqlite3_column_int(s, 1) != 0;
	}
	sqlite3_reset(s);
	if (!prompts_run_ended(svc, run_id))
		return false;
	if (session[0] == '\0')
		return true;
	s = store_stmt(st, "UPDATE plans SET status = CASE WHEN ?2 = 'completed' AND"
	    " status = 'approved' THEN 'completed' ELSE 'abandoned' END,"
	    " revision = revision + 1, request_id = NULL,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE session_id = ?1");
	sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, clock_wall_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	if (ok)
		plan_emit_locked(svc, session);
	if (ok && awaiting)
		plan_attention_emit_locked(svc, run_id, NULL);
	return ok;
}

bool
plans_recover_locked(struct service *svc)
{
	struct store *st = svc->store;
	struct {
		char session[TD_ID_MAX], run[TD_ID_MAX];
		bool awaiting;
	} *ids = NULL;
	size_t n = 0;
	sqlite3_stmt *s;
	bool ok;

	if (!prompts_recover_locked(svc))
		return false;
	/* Not the plans of runs that resume. */
	s = store_stmt(st, "SELECT session_id, run_id, status = 'awaiting-approval' FROM plans"
	    " WHERE status IN " PLAN_OPEN " AND run_id NOT IN"
	    " (SELECT id FROM runs WHERE status = 'running')");
	while (sqlite3_step(s) == SQLITE_ROW) {
		ids = xrealloc(ids, (n + 1) * sizeof *ids);
		snprintf(ids[n].session, TD_ID_MAX, "%s", resource_text(s, 0));
		snprintf(ids[n].run, TD_ID_MAX, "%s", resource_text(s, 1));
		ids[n++].awaiting = sqlite3_column_int(s, 2) != 0;
	}
	sqlite3_reset(s);
	s = store_stmt(st, "UPDATE plans SET status = 'abandoned', revision = revision + 1,"
	    " request_id = NULL, updated_at = " RESOURCE_NEXT_TIME(1)
	    " WHERE status IN " PLAN_OPEN " AND run_id NOT IN"
	    " (SELECT id FROM runs WHERE status = 'running')");
	sqlite3_bind_int64(s, 1, clock_wall_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	for (size_t i = 0; ok && i < n; i++) {
		plan_emit_locked(svc, ids[i].session);
		if (ids[i].awaiting)
			plan_attention_emit_locked(svc, ids[i].run, NULL);
	}
	free(ids);
	if (n > 0)
		log_warn("%zu plan(s) were open when the service last stopped; they are "
		    "abandoned", n);
	return ok;
}

/* The agent's answer to plan.propose for a decision on the plan with steps. */
cJSON *
decision_result(const char *decision, const char *feedback, const cJSON *steps)
{
	cJSON *res = cJSON_CreateObject(), *out, *step;

	cJSON_AddStringToObject(res, "decision", decision);
	if (strcmp(decision, "revise") == 0)
		cJSON_AddStringToObject(res, "feedback", feedback);
	if (strcmp(decision, "approve") == 0) {
		out = cJSON_AddArrayToObject(res, "steps");
		cJSON_ArrayForEach(step, steps) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "id", json_get_string(step, "id"));
			cJSON_AddStringToObject(o, "title", json_get_string(step, "title"));
			cJSON_AddItemToArray(out, o);
		}
	}
	return res;
}

void
plan_pending_read(struct store *st, const char *session_id, struct pending_plan *p)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT p.run_id, p.version, p.revision, p.status,"
	    " p.request_id, p.steps, r.status = 'running' FROM plans p JOIN runs r"
	    " ON r.id = p.run_id WHERE p.session_id = ?1");

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		p->found = true;
		snprintf(p->run_id, sizeof p->run_id, "%s", resource_text(s, 0));
		p->version = sqlite3_column_int64(s, 1);
		p->revision = sqlite3_column_int64(s, 2);
		snprintf(p->status, sizeof p->status, "%s", resource_text(s, 3));
		p->request_id = sqlite3_column_int64(s, 4);
		p->steps = steps_column(s, 5);
		p->run_running = sqlite3_column_int(s, 6) != 0;
	}
	sqlite3_reset(s);
}

/* Applies a decision to the pending plan; false on a store error. */
bool
plan_decision_apply_locked(struct service *svc, const char *session_id, const struct pending_plan *p,
    const char *decision, const char *feedback)
{
	static const struct {
		const char *decision, *status;
	} outcomes[] = {
		{ "approve", "approved" }, { "revise", "superseded" }, { "reject", "rejected" },
	};
	struct store *st = svc->store;
	const char *status = NULL;
	int64_t now = clock_wall_ms();
	sqlite3_stmt *s;
	bool ok;

	for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++)
		if (strcmp(outcomes[i].decision, decision) == 0)
			status = outcomes[i].status;
	s = store_stmt(st, "UPDATE plans SET status = ?2, feedback = COALESCE(?3, feedback),"
	    " revision = revision + 1, request_id = NULL,"
	    " updated_at = " RESOURCE_NEXT_TIME(4) " WHERE session_id = ?1");
	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
	if (strcmp(decision, "revise") == 0)
		sqlite3_bind_text(s, 3, feedback, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	ok = ok && runs_set_attention(svc, p->run_id, NULL);
	if (ok && strcmp(decision, "reject") == 0)
		ok = runs_note_cancel(st, p->run_id, now);
	return ok;
}

/* True when the stored steps have the titles of the proposal's, in order. */
static bool
same_titles(const cJSON *stored, const cJSON *proposed)
{
	const cJSON *a = stored ? stored->child : NULL, *b = proposed ? proposed->child : NULL;

	for (; a != NULL && b != NULL; a = a->next, b = b->next) {
		const char *ta = json_get_string(a, "title"), *tb = json_get_string(b, "title");

		if (ta == NULL || tb == NULL || strcmp(ta, tb) != 0)
			return false;
	}
	return a == NULL && b == NULL;
}

bool
plan_rebind(struct service *svc, const char *run_id, const char *session_id,
    long long request_id, const cJSON *params, int64_t since, cJSON **answer)
{
	struct store *st = svc->store;
	const char *summary = json_get_string(params, "summary");
	char status[32] = "";
	cJSON *steps = NULL, *feedback = NULL;
	bool same = false, ok = true;
	sqlite3_stmt *s;

	*answer = NULL;
	if (summary == NULL)
		return false;
	store_lock(st);
	s = store_stmt(st, "SELECT status, summary, steps, feedback, updated_at >= ?3 FROM plans"
	    " WHERE session_id = ?1 AND run_id = ?2");
	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, since);
	if (sqlite3_step(s) == SQLITE_ROW) {
		bool recent = sqlite3_column_int(s, 4) != 0;

		snprintf(status, sizeof status, "%s", resource_text(s, 0));
		steps = steps_column(s, 2);
		same = strcmp(resource_text(s, 1), summary) == 0 &&
		    same_titles(steps, cJSON_GetObjectItemCaseSensitive(params, "steps")) &&
		    (strcmp(status, "awaiting-approval") == 0 || (recent &&
		    (strcmp(status, "approved") == 0 || strcmp(status, "superseded") == 0)));
		if (sqlite3_column_type(s, 3) != SQLITE_NULL)
			feedback = cJSON_CreateString(resource_text(s, 3));
	}
	sqlite3_reset(s);
	if (same && strcmp(status, "awaiting-approval") == 0) {
		s = store_stmt(st, "UPDATE plans SET request_id = ?2 WHERE session_id = ?1");
		sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, request_id);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	} else if (same) {
		*answer = decision_result(strcmp(status, "approved") == 0 ? "approve" : "revise",
		    cJSON_IsString(feedback) ? feedback->valuestring : "", steps);
	}
	store_unlock(st);
	cJSON_Delete(steps);
	cJSON_Delete(feedback);
	if (same)
		log_info("run %s: the resumed agent's plan is the one %s; no new version", run_id,
		    *answer ? "decided since the restart" : "awaiting approval");
	return same && ok;
}

bool
plans_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM plans WHERE session_id = ?1", session_id);
}
