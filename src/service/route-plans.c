/*
 * Plans over HTTP (docs/http-api.md, Plans): reading a session's plan and the
 * decisions of people, checked and applied in one transaction (plans.c), so of
 * two clients deciding the same state exactly one wins; the answer is handed to
 * the run thread through supervisor_respond.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "json.h"
#include "plans.h"
#include "routes.h"
#include "service.h"
#include "sessions.h"
#include "store.h"
#include "supervisor.h"

#define FEEDBACK_MAX 10000

static const char *const decisions[] = { "approve", "revise", "reject", NULL };
static const char *const respond_fields[] = { "decision", "version", "revision", "feedback",
	NULL };

void
route_plan_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *id = req->params[0];
	cJSON *plan;
	bool session = false;

	store_lock(st);
	plan = plan_load(st, id);
	if (plan == NULL)
		session = sessions_exists(st, id);
	store_unlock(st);
	if (plan != NULL)
		http_json(r, 200, plan);
	else
		http_not_found(r, session ? "plan" : "session", id);
}

/* Checks the body of a decision; false after answering 400. */
static bool
respond_valid(const cJSON *body, struct http_response *r)
{
	const char *bad, *decision = json_get_string(body, "decision");

	if (!json_only_keys(body, respond_fields, &bad)) {
		http_bad_field(r, bad, "%s is not a member of a plan decision", bad);
		return false;
	}
	if (decision == NULL || !json_check_enum(body, "decision", false, decisions)) {
		http_bad_field(r, "decision", "decision must be approve, revise or reject");
		return false;
	}
	for (const char *const *k = (const char *const[]){ "version", "revision", NULL }; *k; k++) {
		if (cJSON_GetObjectItemCaseSensitive(body, *k) == NULL ||
		    !json_check_int(body, *k, 1, 9007199254740991.0)) {
			http_bad_field(r, *k, "%s must be a positive integer", *k);
			return false;
		}
	}
	if (!json_check_string(body, "feedback", strcmp(decision, "revise") == 0, true, 1,
	    FEEDBACK_MAX) || (strcmp(decision, "revise") == 0 &&
	    json_get_string(body, "feedback") == NULL)) {
		http_bad_field(r, "feedback", "revise needs feedback of 1 to 10,000 characters");
		return false;
	}
	return true;
}

/* A member that respond_valid found to be a positive integer. */
static long long
number_of(const cJSON *obj, const char *key)
{
	return (long long)cJSON_GetObjectItemCaseSensitive(obj, key)->valuedouble;
}

void
route_plan_respond(struct http_request *req, struct http_response *r)
{
	struct service *svc = req->svc;
	struct store *st = svc->store;
	const char *session_id = req->params[0];
	const char *decision, *feedback;
	struct pending_plan p = { 0 };
	cJSON *plan = NULL;
	bool session = false, ok;

	if (!respond_valid(req->json, r))
		return;
	decision = json_get_string(req->json, "decision");
	feedback = json_get_string(req->json, "feedback");
	store_lock(st);
	ok = store_begin(st);
	if (ok)
		plan_pending_read(st, session_id, &p);
	if (ok && !p.found) {
		session = sessions_exists(st, session_id);
		store_rollback(st);
		store_unlock(st);
		if (session)
			http_error(r, TD_PLAN_NOT_PENDING, NULL, NULL);
		else
			http_not_found(r, "session", session_id);
		return;
	}
	if (ok && (p.version != number_of(req->json, "version") ||
	    p.revision != number_of(req->json, "revision"))) {
		cJSON *details = cJSON_CreateObject();
		cJSON_AddItemToObject(details, "current", plan_load(st, session_id));
		store_rollback(st);
		store_unlock(st);
		cJSON_Delete(p.steps);
		http_error(r, TD_STALE_PLAN, details, NULL);
		return;
	}
	if (ok && (strcmp(p.status, "awaiting-approval") != 0 || !p.run_running)) {
		store_rollback(st);
		store_unlock(st);
		cJSON_Delete(p.steps);
		http_error(r, TD_PLAN_NOT_PENDING, NULL, NULL);
		return;
	}
	ok = ok && plan_decision_apply(svc, session_id, &p, decision, feedback);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		plan_emit(svc, session_id);
		plan_attention_emit(svc, p.run_id, NULL);
		plan = plan_load(st, session_id);
		supervisor_respond(svc->supervisor, p.run_id, p.request_id,
		    decision_result(decision, feedback, p.steps));
		if (strcmp(decision, "reject") == 0)
			supervisor_cancel(svc->supervisor, p.run_id);
	}
	store_unlock(st);
	cJSON_Delete(p.steps);
	if (!ok || plan == NULL) {
		cJSON_Delete(plan);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	http_json(r, 200, plan);
}
