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
static const char *const answer_fields[] = { "decision", "values", NULL };

void
route_permissions_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *status = http_query(req, "status");
	const char *run = http_query(req, "run");
	const char *cursor = http_query(req, "cursor");
	char next[TD_ID_MAX];
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
	store_lock(st);
	arr = prompts_list(st, all, run, cursor, limit, next);
	store_unlock(st);
	if (next[0] != '\0')
		http_link_next(r, "/app/v1/permissions?status=%s%s%s&limit=%d&cursor=%s",
		    all ? "all" : "pending", run ? "&run=" : "", run ? run : "", limit, next);
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
	const cJSON *values = cJSON_GetObjectItemCaseSensitive(req->json, "values");
	cJSON *prompt = NULL, *result, *content = NULL;

	if (!json_only_keys(req->json, answer_fields, &bad))
		return http_bad_field(r, bad, "%s is not a member of a permission answer", bad);
	if (decision == NULL || !json_check_enum(req->json, "decision", false, answers))
		return http_bad_field(r, "decision", "decision must be allow, deny or allow-run");
	allow = strcmp(decision, "deny") != 0;
	if (values != NULL && (!cJSON_IsObject(values) || strcmp(decision, "allow") != 0))
		return http_bad_field(r, "values", "values is an object of a form's fields, with "
		    "decision allow");
	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		prompts_request_read(st, id, run_id, &request_id, status);
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
	if (ok && allow) {
		/* A server's form: its content, the user's values over its defaults. */
		cJSON *asked = prompt_load(st, id);
		const cJSON *input = cJSON_GetObjectItemCaseSensitive(asked, "input");
		char *why = NULL;

		if (prompt_is_form(st, id))
			content = prompt_form_content(input, values, &why);
		else if (values != NULL)
			why = xstrdup("only a server's form (an elicitation prompt) takes values");
		cJSON_Delete(asked);
		if (why != NULL) {
			store_rollback(st);
			store_unlock(st);
			http_bad_field(r, "values", "%s", why);
			free(why);
			return;
		}
	}
	ok = ok && prompts_answer(st, id, allow, decision, td_now_ms());
	if (ok && strcmp(decision, "allow-run") == 0)
		ok = runs_allow_all(st, run_id);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		prompt_emit(svc, id);
		prompt = prompt_load(st, id);
		/* The agent knows only allow and deny. */
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "decision", allow ? "allow" : "deny");
		if (content != NULL) {
			cJSON_AddItemToObject(result, "content", content);
			content = NULL;
		}
		supervisor_respond(svc->supervisor, run_id, request_id, result);
	}
	store_unlock(st);
	cJSON_Delete(content);
	if (!ok || prompt == NULL) {
		cJSON_Delete(prompt);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	http_json(r, 200, prompt);
}
