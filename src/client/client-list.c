/* Lists (one GET of a JSON array parsed into a page of typed items) and single items. */
#include <stdlib.h>

#include "client-internal.h"
#include "xalloc.h"

void
client_items_free(const struct client_kind *kind, void *items, size_t count)
{
	for (size_t i = 0; i < count; i++)
		kind->clear((char *)items + i * kind->size);
	free(items);
}

enum td_code
client_get_list(struct td_client *c, const char *path,
    const struct td_request_options *opts, const struct client_kind *kind,
    struct client_page *page, struct td_error *err)
{
	struct client_response resp;
	const cJSON *item;
	enum td_code rc;
	char *items;
	size_t count = 0;

	rc = client_call(c, "GET", path, NULL, true, opts, &resp, err);
	if (rc != TD_OK) {
		client_response_free(&resp);
		return rc;
	}
	items = xcalloc((size_t)cJSON_GetArraySize(resp.json) + 1, kind->size);
	cJSON_ArrayForEach(item, resp.json) {
		if (!kind->parse(items + count * kind->size, item, NULL)) {
			kind->clear(items + count * kind->size);
			rc = client_malformed(&resp, kind->list_what, err);
			break;
		}
		count++;
	}
	if (rc == TD_OK) {
		page->items = items;
		page->count = count;
		page->next_cursor = client_next_cursor(resp.link);
		page->json = buf_steal(&resp.body);
	} else {
		client_items_free(kind, items, count);
	}
	client_response_free(&resp);
	return rc;
}

enum td_code
client_list(struct td_client *c, const char *base, long limit,
    const char *cursor, const char *const *query,
    const struct td_request_options *opts, const struct client_kind *kind,
    struct client_page *page, struct td_error *err)
{
	enum td_code rc;
	char *path;

	if (limit < 0)
		return client_fail(err, TD_INVALID_ARGUMENT, "limit must not be negative");
	path = client_query_path(base, limit, cursor);
	for (size_t i = 0; query != NULL && query[i] != NULL; i += 2)
		path = client_query_add(path, query[i], query[i + 1]);
	rc = client_get_list(c, path, opts, kind, page, err);
	free(path);
	return rc;
}

enum td_code
client_call_item(struct td_client *c, const char *method, const char *path,
    const char *body, const struct td_request_options *opts,
    const struct client_kind *kind, void **item, struct td_error *err)
{
	struct client_response resp;
	enum td_code rc;

	*item = NULL;
	rc = client_call(c, method, path, body, false, opts, &resp, err);
	if (rc == TD_OK) {
		*item = xcalloc(1, kind->size);
		if (!kind->parse(*item, resp.json, resp.body.data)) {
			kind->clear(*item);
			free(*item);
			*item = NULL;
			rc = client_malformed(&resp, kind->what, err);
		}
	}
	client_response_free(&resp);
	return rc;
}

const char *const *
client_archived_query(enum td_archived which)
{
	static const char *const only[] = { "archived", "true", NULL };
	static const char *const all[] = { "archived", "all", NULL };

	return which == TD_ARCHIVED_ONLY ? only : which == TD_ARCHIVED_ALL ? all : NULL;
}
