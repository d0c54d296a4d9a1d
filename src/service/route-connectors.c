/* Connectors (docs/http-api.md, Connectors); the definitions live in connectors.c. */
#include <stdlib.h>
#include <string.h>

#include "connector-remove.h"
#include "connector-test.h"
#include "connectors.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "routes.h"
#include "xalloc.h"

/* Parses ?cursor= for a list of prefix ids (extra: one more id allowed); false after a 400. */
bool
route_conn_cursor(struct http_request *req, struct http_response *r, const char *prefix,
    const char *extra, const char **cursor)
{
	*cursor = http_query(req, "cursor");
	if (*cursor == NULL || id_valid(*cursor, prefix) ||
	    (extra != NULL && strcmp(*cursor, extra) == 0))
		return true;
	http_bad_parameter(r, "cursor", "cursor is not a %s id", prefix);
	return false;
}

/* A list answer with its Link header when next is set. */
void
route_conn_page(struct http_response *r, const char *collection, int limit,
    const char *next, cJSON *arr)
{
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/%s?limit=%d&cursor=%s", collection, limit, next);
	http_json(r, 200, arr);
}

void
route_connectors_list(struct http_request *req, struct http_response *r)
{
	const char *cursor;
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit) ||
	    !route_conn_cursor(req, r, "con", CONNECTOR_WEB_ID, &cursor))
		return;
	arr = connectors_list(req->svc, cursor, limit, next);
	route_conn_page(r, "connectors", limit, next, arr);
}

void
route_connectors_get(struct http_request *req, struct http_response *r)
{
	cJSON *c = connector_get(req->svc, req->params[0]);

	http_json_found(r, c, "connector", req->params[0]);
}

void
route_connectors_create(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *c;

	if (connector_add(req->svc, req->json, &c, &p) != TD_OK)
		return http_problem(r, &p);
	char *location = xasprintf("/api/v1/connectors/%s", json_get_string(c, "id"));
	http_add_header(r, "Location", location);
	free(location);
	http_json(r, 201, c);
}

void
route_connectors_update(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *c;

	if (connector_update(req->svc, req->params[0], req->json, &c, &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, c);
}

void
route_connectors_enabled(struct http_request *req, struct http_response *r)
{
	static const char *const fields[] = { "enabled", NULL };
	const cJSON *enabled = cJSON_GetObjectItemCaseSensitive(req->json, "enabled");
	struct problem p = { 0 };
	const char *bad = NULL;
	cJSON *c;

	if (!json_only_keys(req->json, fields, &bad))
		return http_bad_field(r, bad, "unknown field %.64s", bad);
	if (!cJSON_IsBool(enabled))
		return http_bad_field(r, "enabled", "enabled must be true or false");
	if (connector_set_enabled(req->svc, req->params[0], cJSON_IsTrue(enabled), &c, &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, c);
}

void
route_connectors_remove(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };

	if (connector_remove(req->svc, req->params[0], &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, cJSON_CreateObject());
}

/*
 * POST /connectors/:id/test.  A test may wait on a server for tens of
 * seconds, and the service has two HTTP threads: the test runs on a thread
 * of its own (connector-test.h) while the connection is suspended, and its
 * answer is the body of a streamed 200 response.
 */
static void
route_test_park(void *hs)
{
	http_stream_suspend(hs);
}

static void
route_test_wake(void *hs)
{
	http_stream_resume(hs);
}

static ssize_t
route_test_read(void *cls, struct http_stream *hs, char *buf, size_t max)
{
	ssize_t n = connector_test_read(cls, buf, max, route_test_park, route_test_wake, hs);

	return n < 0 ? HTTP_STREAM_END : n;
}

static void
route_test_free(void *cls)
{
	connector_test_release(cls);
}

void
route_connectors_test(struct http_request *req, struct http_response *r)
{
	struct connector_test *t;
	struct problem p = { 0 };
	enum td_code rc = connector_test_start(req->svc, req->params[0], &t, &p);

	if (rc != TD_OK) {
		http_problem(r, &p);
		if (rc == TD_UNAVAILABLE)
			http_add_header(r, "Retry-After", "1");
		return;
	}
	http_stream(r, 200, route_test_read, route_test_free, t);
}
