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

/* Paged as the other lists: limit, and a cursor that is the framework the last page ended with. */
void
route_runtimes_list(struct http_request *req, struct http_response *r)
{
	const char *cursor = http_query(req, "cursor");
	struct runtime_info info;
	cJSON *list;
	int limit, from = 0, n = 0, i;

	if (!http_query_limit(req, r, &limit))
		return;
	if (cursor != NULL) {
		for (from = 0; runtimes_frameworks[from] != NULL &&
		    strcmp(runtimes_frameworks[from], cursor) != 0; from++)
			;
		if (runtimes_frameworks[from] == NULL) {
			http_bad_parameter(r, "cursor", "cursor is not a runtime's framework");
			return;
		}
		from++;
	}
	list = cJSON_CreateArray();
	for (i = from; runtimes_frameworks[i] != NULL && n < limit; i++, n++) {
		runtimes_probe(req->svc, runtimes_frameworks[i], &info);
		cJSON_AddItemToArray(list, bootstrap_runtime_json(&info));
	}
	if (runtimes_frameworks[i] != NULL)
		http_link_next(r, "/api/v1/runtimes?limit=%d&cursor=%s", limit,
		    runtimes_frameworks[i - 1]);
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
