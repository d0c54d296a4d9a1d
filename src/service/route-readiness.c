/*
 * Readiness and setup: GET /runtimes, GET /providers/:name/models, POST /bootstrap,
 * POST /cli/install (docs/http-api.md).
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "http.h"
#include "json.h"
#include "models.h"
#include "routes.h"
#include "runtimes.h"
#include "service.h"

void
route_runtimes_list(struct http_request *req, struct http_response *r)
{
	cJSON *list = cJSON_CreateArray();
	struct runtime_info info;

	for (int i = 0; runtimes_frameworks[i] != NULL; i++) {
		runtimes_probe(req->svc, runtimes_frameworks[i], &info);
		cJSON_AddItemToArray(list, bootstrap_runtime_json(&info));
	}
	http_json(r, 200, list);
}

void
route_provider_models(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *list = models_list(req->svc, req->params[0], &p);

	if (list == NULL) {
		if (p.code == TD_UNAVAILABLE)
			http_add_header(r, "Retry-After", "1");
		return http_problem(r, &p);
	}
	http_json(r, 200, list);
}

void
route_bootstrap(struct http_request *req, struct http_response *r)
{
	static const char *const keys[] = { "action", NULL };
	const char *bad = NULL, *action;

	if (!json_only_keys(req->json, keys, &bad)) {
		http_bad_field(r, bad, "unknown field %s", bad);
		return;
	}
	action = json_get_string(req->json, "action");
	if (action != NULL && strcmp(action, "status") == 0)
		http_json(r, 200, bootstrap_status(req->svc));
	else if (action != NULL && strcmp(action, "runtime") == 0)
		http_json(r, 200, bootstrap_runtime(req->svc));
	else
		http_bad_field(r, "action", "action must be \"status\" or \"runtime\"");
}

void
route_cli_install(struct http_request *req, struct http_response *r)
{
	if (req->body != NULL && req->body_len > 0 &&
	    strspn(req->body, " \t\r\n{}") != req->body_len) {
		http_error(r, TD_INVALID_REQUEST, NULL, "POST /api/v1/cli/install takes no body "
		    "(or {})");
		return;
	}
	http_json(r, 200, bootstrap_install_cli(req->svc));
}
