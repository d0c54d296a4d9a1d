/*
 * Permission prompts (docs/http-api.md, Permission prompts): the agent's
 * permission.ask becomes a durable prompt; an answer on /app/v1/permissions
 * is applied in one transaction and handed to the run thread through
 * supervisor_respond.  allow-run is a flag of the run, read at each ask.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "plans.h"
#include "resource.h"
#include "routes.h"
#include "service.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

#define TOOL_MAX_CHARS 200
#define SUMMARY_MAX_CHARS 4096

#define PROMPT_COLUMNS "id, run_id, session_id, project_id, tool, summary, input, status," \
	" decision, created_at, answered_at"

static const char *const answers[] = { "allow", "deny", "allow-run", NULL };
static const char *const answer_fields[] = { "decision", NULL };

static cJSON *
prompt_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "runId", resource_text(s, 1));
	cJSON_AddStringToObject(j, "sessionId", resource_text(s, 2));
	cJSON_AddStringToObject(j, "projectId", resource_text(s, 3));
	cJSON_AddStringToObject(j, "tool", resource_text(s, 4));
	cJSON_AddStringToObject(j, "summary", resource_text(s, 5));
	cJSON_AddItemToObject(j, "input", resource_json_column(s, 6));
	cJSON_AddStringToObject(j, "status", resource_text(s, 7));
	if (sqlite3_column_type(s, 8) == SQLITE_NULL)
		cJSON_AddNullToObject(j, "decision");
	else
		cJSON_AddStringToObject(j, "decision", resource_text(s, 8));
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 9));
	if (sqlite3_column_type(s, 10) == SQLITE_NULL)
		cJSON_AddNullToObject(j, "answeredAt");
	else
		resource_add_time(j, "answeredAt", sqlite3_column_int64(s, 10));
	return j;
}

cJSON *
prompt_load(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT " PROMPT_COLUMNS
	    " FROM permission_prompts WHERE id = ?1");
	cJSON *j = NULL;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		j = prompt_from_row(s);
	sqlite3_reset(s);
	return j;
}

/* run.permission {promptId, tool, summary, status} for the prompt; while locked. */
static void
prompt_emit(struct service *svc, const char *id)
{
	cJSON *p = prompt_load(svc->store, id), *d;

	if (p == NULL)
		return;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "promptId", id);
	for (const char *const *k = (const char *const[]){ "tool", "summary", "status", NULL };
	    *k; k++)
		cJSON_AddStringToObject(d, *k, json_get_string(p, *k));
	events_emit(svc->events, "run.permission", json_get_string(p, "projectId"),
	    json_get_string(p, "sessionId"), json_get_string(p, "runId"), d);
	cJSON_Delete(p);
}

/* Pending prompts of run_id (NULL: of every run) become expired; while locked. */
static bool
prompts_expire(struct service *svc, const char *run_id)
{
	struct store *st = svc->store;
	char (*ids)[TD_ID_MAX] = NULL;
	size_t n = 0;
	sqlite3_stmt *s;
	bool ok;

	s = store_stmt(st, "SELECT id FROM permission_prompts WHERE status = 'pending'"
	    " AND (?1 IS NULL OR run_id = ?1)");
	if (run_id != NULL)
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		ids = xrealloc(ids, (n + 1) * sizeof *ids);
		snprintf(ids[n++], TD_ID_MAX, "%s", resource_text(s, 0));
	}
	sqlite3_reset(s);
	s = store_stmt(st, "UPDATE permission_prompts SET status = 'expired'"
	    " WHERE status = 'pending' AND (?1 IS NULL OR run_id = ?1)");
	if (run_id != NULL)
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	for (size_t i = 0; ok && i < n; i++)
		prompt_emit(svc, ids[i]);
	free(ids);
	return ok;
}

bool
prompts_run_ended(struct service *svc, const char *run_id)
{
	return prompts_expire(svc, run_id);
}

bool
prompts_recover(struct service *svc)
{
	return prompts_expire(svc, NULL);
}

enum td_code
prompt_ask(struct service *svc, const char *run_id, long long request_id,
    const cJSON *params, bool *allow_now, char **message)
{
	struct store *st = svc->store;
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(params, "input");
	char id[TD_ID_MAX], session[TD_ID_MAX] = "", project[TD_ID_MAX] = "";
	char *input_text;
	sqlite3_stmt *s;
	bool ok;

	*allow_now = false;
	if (!json_check_string(params, "tool", true, false, 1, TOOL_MAX_CHARS) ||
	    !json_check_string(params, "summary", true, false, 0, SUMMARY_MAX_CHARS) ||
	    (input != NULL && !cJSON_IsObject(input))) {
		*message = xstrdup("permission.ask needs a tool, a summary and an input object.");
		return TD_INVALID_REQUEST;
	}
	input_text = input ? json_print(input) : xstrdup("{}");
	td_id_new("prm", id);
	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "SELECT session_id, project_id, allow_run FROM runs"
		    " WHERE id = ?1");
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			snprintf(session, sizeof session, "%s", resource_text(s, 0));
			snprintf(project, sizeof project, "%s", resource_text(s, 1));
			*allow_now = sqlite3_column_int(s, 2) != 0;
		}
		sqlite3_reset(s);
		ok = session[0] != '\0';
	}
	if (ok) {
		s = store_stmt(st, "INSERT INTO permission_prompts (id, run_id, session_id,"
		    " project_id, request_id, tool, summary, input, status, decision, created_at,"
		    " answered_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, run_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, session, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, project, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, request_id);
		sqlite3_bind_text(s, 6, json_get_string(params, "tool"), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 7, json_get_string(params, "summary"), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 8, input_text, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 9, *allow_now ? "allowed" : "pending", -1, SQLITE_STATIC);
		if (*allow_now)
			sqlite3_bind_text(s, 10, "allow-run", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 11, td_now_ms());
		if (*allow_now)
			sqlite3_bind_int64(s, 12, td_now_ms());
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok)
		prompt_emit(svc, id);
	store_unlock(st);
	free(input_text);
	if (!ok) {
		*allow_now = false;
		log_error("run %s: cannot store a permission prompt", run_id);
		*message = xstrdup("The service could not record the permission prompt; the "
		    "action is denied.");
		return TD_INTERNAL_ERROR;
	}
	return TD_OK;
}

static void
bad_parameter(struct http_response *r, const char *name, const char *message)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "parameter", name);
	http_error(r, TD_INVALID_REQUEST, d, "%s", message);
}

void
route_permissions_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *status = http_query(req, "status");
	const char *run = http_query(req, "run");
	const char *cursor = http_query(req, "cursor");
	char next[TD_ID_MAX] = "";
	sqlite3_stmt *s;
	int limit, n = 0;
	cJSON *arr;
	bool all;

	if (!http_query_limit(req, r, &limit))
		return;
	if (status != NULL && strcmp(status, "pending") != 0 && strcmp(status, "all") != 0)
		return bad_parameter(r, "status", "status must be pending or all");
	if (run != NULL && !td_id_valid(run, "run"))
		return bad_parameter(r, "run", "run must be a run id");
	if (cursor != NULL && !td_id_valid(cursor, "prm"))
		return bad_parameter(r, "cursor", "cursor must be a permission prompt id");
	all = status != NULL && strcmp(status, "all") == 0;
	arr = cJSON_CreateArray();
	store_lock(st);
	s = store_stmt(st, "SELECT " PROMPT_COLUMNS " FROM permission_prompts"
	    " WHERE (?1 OR status = 'pending') AND (?2 IS NULL OR run_id = ?2)"
	    " AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4");
	sqlite3_bind_int(s, 1, all);
	if (run != NULL)
		sqlite3_bind_text(s, 2, run, -1, SQLITE_STATIC);
	if (cursor != NULL)
		sqlite3_bind_text(s, 3, cursor, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 4, limit + 1);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (++n > limit)
			break;
		cJSON_AddItemToArray(arr, prompt_from_row(s));
		snprintf(next, sizeof next, "%s", resource_text(s, 0));
	}
	sqlite3_reset(s);
	store_unlock(st);
	if (n > limit) {
		char *link = xasprintf("</app/v1/permissions?status=%s%s%s&limit=%d&cursor=%s>;"
		    " rel=\"next\"", all ? "all" : "pending", run ? "&run=" : "", run ? run : "",
		    limit, next);
		http_add_header(r, "Link", link);
		free(link);
	}
	http_json(r, 200, arr);
}

void
route_permissions_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	cJSON *p;

	store_lock(st);
	p = prompt_load(st, req->params[0]);
	store_unlock(st);
	if (p == NULL)
		http_not_found(r, "permission", req->params[0]);
	else
		http_json(r, 200, p);
}

void
route_permissions_answer(struct http_request *req, struct http_response *r)
{
	struct service *svc = req->svc;
	struct store *st = svc->store;
	const char *id = req->params[0];
	const char *decision = json_get_string(req->json, "decision");
	char run_id[TD_ID_MAX] = "", status[16] = "";
	long long request_id = 0;
	bool allow, ok;
	const char *bad;
	sqlite3_stmt *s;
	cJSON *prompt = NULL, *result;

	if (!json_only_keys(req->json, answer_fields, &bad))
		return http_bad_field(r, bad, "%s is not a member of a permission answer", bad);
	if (decision == NULL || !json_check_enum(req->json, "decision", false, answers))
		return http_bad_field(r, "decision", "decision must be allow, deny or allow-run");
	allow = strcmp(decision, "deny") != 0;
	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "SELECT run_id, request_id, status FROM permission_prompts"
		    " WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			snprintf(run_id, sizeof run_id, "%s", resource_text(s, 0));
			request_id = sqlite3_column_int64(s, 1);
			snprintf(status, sizeof status, "%s", resource_text(s, 2));
		}
		sqlite3_reset(s);
	}
	if (ok && (status[0] == '\0' || strcmp(status, "pending") != 0)) {
		cJSON *details = NULL;
		if (status[0] != '\0') {
			details = cJSON_CreateObject();
			cJSON_AddItemToObject(details, "current", prompt_load(st, id));
		}
		store_rollback(st);
		store_unlock(st);
		if (details == NULL)
			http_not_found(r, "permission", id);
		else
			http_error(r, TD_PERMISSION_NOT_PENDING, details, NULL);
		return;
	}
	if (ok) {
		s = store_stmt(st, "UPDATE permission_prompts SET status = ?2, decision = ?3,"
		    " answered_at = ?4 WHERE id = ?1 AND status = 'pending'");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, allow ? "allowed" : "denied", -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, decision, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 4, td_now_ms());
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	if (ok && strcmp(decision, "allow-run") == 0) {
		s = store_stmt(st, "UPDATE runs SET allow_run = 1 WHERE id = ?1");
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		prompt_emit(svc, id);
		prompt = prompt_load(st, id);
		/* The agent knows only allow and deny. */
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "decision", allow ? "allow" : "deny");
		supervisor_respond(svc->supervisor, run_id, request_id, result);
	}
	store_unlock(st);
	if (!ok || prompt == NULL) {
		cJSON_Delete(prompt);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	http_json(r, 200, prompt);
}
