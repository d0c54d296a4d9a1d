/* A run's workspace changes: the list, the diff, the revert (docs/http-api.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "routes.h"
#include "service.h"

/* The from parameter: absent, "start" or a run id. */
static bool
route_changes_from(struct http_request *req, struct http_response *r, const char **from)
{
	*from = http_query(req, "from");
	if (*from != NULL && strcmp(*from, "start") != 0 && !id_valid(*from, "run")) {
		http_bad_parameter(r, "from", "from must be start or a run id");
		return false;
	}
	return true;
}

/* A decimal of lo to hi, all digits; false otherwise. */
static bool
route_changes_number(const char *text, unsigned long lo, unsigned long hi, size_t *out)
{
	char *end;
	unsigned long v;

	if (text == NULL || text[0] < '0' || text[0] > '9' || strlen(text) > 9)
		return false;
	v = strtoul(text, &end, 10);
	if (*end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

void
route_changes_list(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	const char *from, *cursor = http_query(req, "cursor"), *limit = http_query(req, "limit");
	size_t offset = 0, max = CHANGES_PAGE_MAX;
	cJSON *out;

	if (!route_changes_from(req, r, &from))
		return;
	if (cursor != NULL && !route_changes_number(cursor, 1, 999999999, &offset)) {
		http_bad_parameter(r, "cursor", "cursor must be the nextCursor of the page before");
		return;
	}
	if (limit != NULL && !route_changes_number(limit, 1, CHANGES_PAGE_MAX, &max)) {
		http_bad_parameter(r, "limit", "limit must be 1 to %d", CHANGES_PAGE_MAX);
		return;
	}
	out = changes_list(req->svc, req->params[0], from, offset, max, &p);
	if (out == NULL)
		http_problem(r, &p);
	else
		http_json(r, 200, out);
}

void
route_changes_diff(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	const char *from, *path = http_query(req, "path");
	struct buf text;
	bool truncated;

	if (!route_changes_from(req, r, &from))
		return;
	if (path != NULL && path[0] == '\0') {
		http_bad_parameter(r, "path", "path must not be empty");
		return;
	}
	buf_init(&text, CHANGES_DIFF_MAX);
	if (!changes_diff(req->svc, req->params[0], from, path, &text, &truncated, &p)) {
		buf_free(&text);
		http_problem(r, &p);
		return;
	}
	r->status = 200;
	free(r->body);
	r->body_len = text.len;
	r->body = text.data ? buf_steal(&text) : strdup("");
	http_add_header(r, "Content-Type", "text/x-diff; charset=utf-8");
	if (truncated)
		http_add_header(r, "X-Taskdeck-Truncated", "true");
	buf_free(&text);
}

void
route_changes_revert(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *body = NULL, *out;
	const cJSON *force;

	if (req->body != NULL && req->body_len > 0) {
		body = cJSON_ParseWithLength(req->body, req->body_len);
		if (!cJSON_IsObject(body)) {
			cJSON_Delete(body);
			http_error(r, TD_INVALID_REQUEST, NULL, "The body must be a JSON object.");
			return;
		}
	}
	force = cJSON_GetObjectItemCaseSensitive(body, "force");
	if (force != NULL && !cJSON_IsBool(force)) {
		cJSON_Delete(body);
		http_bad_field(r, "force", "force must be true or false");
		return;
	}
	out = changes_revert(req->svc, req->params[0], cJSON_IsTrue(force), &p);
	cJSON_Delete(body);
	if (out == NULL)
		http_problem(r, &p);
	else
		http_json(r, 200, out);
}
