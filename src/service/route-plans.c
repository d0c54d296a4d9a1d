/*
 * Plans over HTTP (docs/http-api.md, Plans): reading a session's plan and the
 * decisions of people, which plans-write.c checks and applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "json.h"
#include "plans-write.h"
#include "plans.h"
#include "problem.h"
#include "routes.h"
#include "service.h"
#include "sessions.h"
#include "store.h"

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
	struct problem p = { 0 };
	cJSON *plan;

	if (!respond_valid(req->json, r))
		return;
	plan = plans_respond(req->svc, req->params[0], json_get_string(req->json, "decision"),
	    json_get_string(req->json, "feedback"), number_of(req->json, "version"),
	    number_of(req->json, "revision"), &p);
	if (plan == NULL)
		return http_problem(r, &p);
	http_json(r, 200, plan);
}
