/*
 * Permission prompts over HTTP (docs/http-api.md, Permission prompts):
 * listing, reading, and answering, applied in one transaction and handed to
 * the run thread through supervisor_respond.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "prompts.h"
#include "resource.h"
#include "routes.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

static const char *const answers[] = { "allow", "deny", "allow-run", NULL };
static const char *const answer_fields[] = { "decision", NULL };

void
route_permissions_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *status = http_query(req, "status");
	const char *run = http_query(req, "run");
	const char *cursor = http_query(req, "cursor");
	struct resource_page pg;
	sqlite3_stmt *s;
	int limit;
	cJSON *arr;
	bool all;

	if (!http_query_limit(req, r, &limit))
		return;
	if (status != NULL && strcmp(status, "pending") != 0 && strcmp(status, "all") != 0)
		return http_bad_parameter(r, "status", "status must be pending or all");
	if (run != NULL && !td_id_valid(run, "run"))
		return http_bad_parameter(r, "run", "run must be a run id");
	if (cursor != NULL && !td_id_valid(cursor, "prm"))
		return http_bad_parameter(r, "cursor", "cursor must be a permission prompt id");
	all = status != NULL && strcmp(status, "all") == 0;
	arr = cJSON_CreateArray();
	store_lock(st);
	s = store_stmt(st, "SELECT " PROMPT_COLUMNS " FROM permission_prompts"
	    " WHERE (?1 OR status = 'pending') AND (?2 IS NULL OR run_id = ?2)"
	    " AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4");
	sqlite3_bind_int(s, 1, all);
	if (run != NULL)
		sqlite3_bind_text(s, 2, run, -1, SQLITE_STATIC);
	resource_page_start(&pg, s, 3, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, prompt_from_row(s));
	sqlite3_reset(s);
	store_unlock(st);
	if (pg.next[0] != '\0')
		http_link_next(r, "/app/v1/permissions?status=%s%s%s&limit=%d&cursor=%s",
		    all ? "all" : "pending", run ? "&run=" : "", run ? run : "", limit, pg.next);
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
	http_json_found(r, p, "permission", req->params[0]);
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
	if (ok && strcmp(decision, "allow-run") == 0)
		ok = runs_allow_all(st, run_id);
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
