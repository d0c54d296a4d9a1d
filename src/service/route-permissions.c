/*
 * Permission prompts over HTTP (docs/http-api.md, Permission prompts):
 * listing, reading, and answering (prompts-write.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "prompts-write.h"
#include "prompts.h"
#include "resource.h"
#include "routes.h"
#include "service.h"
#include "store.h"

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
	if (run != NULL && !id_valid(run, "run"))
		return http_bad_parameter(r, "run", "run must be a run id");
	if (cursor != NULL && !id_valid(cursor, "prm"))
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
	const char *decision = json_get_string(req->json, "decision");
	const cJSON *values = cJSON_GetObjectItemCaseSensitive(req->json, "values");
	struct problem p = { 0 };
	const char *bad;
	cJSON *prompt;

	if (!json_only_keys(req->json, answer_fields, &bad))
		return http_bad_field(r, bad, "%s is not a member of a permission answer", bad);
	if (decision == NULL || !json_check_enum(req->json, "decision", false, answers))
		return http_bad_field(r, "decision", "decision must be allow, deny or allow-run");
	if (values != NULL && (!cJSON_IsObject(values) || strcmp(decision, "allow") != 0))
		return http_bad_field(r, "values", "values is an object of a form's fields, with "
		    "decision allow");
	prompt = prompts_answer_request(req->svc, req->params[0], decision, values, &p);
	if (prompt == NULL)
		return http_problem(r, &p);
	http_json(r, 200, prompt);
}
