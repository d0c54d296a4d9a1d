/* Internals shared by the libtaskdeck sources; not installed. */
#ifndef TD_CLIENT_INTERNAL_H
#define TD_CLIENT_INTERNAL_H

#include <pthread.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "taskdeck.h"

/* Largest JSON response accepted. */
#define CLIENT_MAX_BODY (16u * 1024 * 1024)
/* Largest error body kept from a streamed answer. */
#define CLIENT_MAX_ERROR_BODY (64u * 1024)
/* Idle connections kept for reuse. */
#define CLIENT_POOL_MAX 8

struct client_conn;
struct events_hub;

struct td_client {
	char *base_url;
	char *unix_socket;	/* where requests go instead of base_url's port, or NULL */
	char *auth_header;	/* "Authorization: Bearer <token>" */
	char *user_agent;
	long timeout_ms;

	pthread_mutex_t pool_lock;
	struct client_conn *idle[CLIENT_POOL_MAX];
	size_t idle_count;
	struct events_hub *events_hub;	/* the event streams' worker, or NULL */
	/* Ends that worker before the client is freed; set with it (client-events.c). */
	void (*events_stop)(struct td_client *c);
};

struct client_response {
	long status;
	struct buf body;
	char request_id[64];
	char *link;		/* Link header, or NULL */
	cJSON *json;		/* parsed body of a 2xx answer */
};

/*
 * A block for an event of size bytes (the struct and its strings) that
 * td_event_free frees; uninitialised.
 */
struct td_event *client_event_alloc(size_t size);
enum td_code client_fail(struct td_error *err, enum td_code code,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * Sends one request and parses a 2xx JSON answer into resp->json (which must
 * then be an object, or an array when want_array).  Anything else fills err.
 * Caller frees resp with client_response_free, also on failure.
 */
enum td_code client_call(struct td_client *c, const char *method,
    const char *path, const char *body, bool want_array,
    const struct td_request_options *opts, struct client_response *resp,
    struct td_error *err);
void client_response_free(struct client_response *resp);

/* One kind of item (struct td_project, td_run, ...), alone or listed. */
struct client_kind {
	const char *what;		/* "run", for errors about one */
	const char *list_what;		/* "run list", for errors about a list */
	size_t size;			/* sizeof the item */
	/* Fills a zeroed item; raw is obj's text when known, else NULL. */
	bool (*parse)(void *item, const cJSON *obj, const char *raw);
	void (*clear)(void *item);	/* frees its members */
};

/*
 * Defines name_kind, the client_kind of struct td_<name>, from the file's
 * name_from_json(struct td_<name> *, const cJSON *, const char *raw) and
 * name_clear(struct td_<name> *); what is a string literal ("run").
 */
#define CLIENT_KIND(name, what)						\
static bool								\
name##_item_parse(void *item, const cJSON *obj, const char *raw)	\
{									\
	return name##_from_json(item, obj, raw);			\
}									\
static void								\
name##_item_clear(void *item)						\
{									\
	name##_clear(item);						\
}									\
static const struct client_kind name##_kind = {				\
	what, what " list", sizeof(struct td_##name), name##_item_parse,	\
	name##_item_clear,						\
}

/* A page of items, as every td_*_list holds it. */
struct client_page {
	void *items;
	size_t count;
	char *next_cursor;
	char *json;
};

/* Copies a client_page into a td_*_list of the matching item type. */
#define CLIENT_PAGE_TO_LIST(list, page) do {				\
	(list)->items = (page).items;					\
	(list)->count = (page).count;					\
	(list)->next_cursor = (page).next_cursor;			\
	(list)->json = (page).json;					\
} while (0)

/*
 * GETs path, whose answer must be a JSON array, and parses each element
 * with kind into a new page (on success only).
 */
enum td_code client_get_list(struct td_client *c, const char *path,
    const struct td_request_options *opts, const struct client_kind *kind,
    struct client_page *page, struct td_error *err);
/*
 * client_get_list of base with ?limit= and &cursor= (client_query_path), then
 * &name=value for each pair of query (name, value, ..., NULL) whose value is
 * not NULL.  TD_INVALID_ARGUMENT when limit is negative.
 */
enum td_code client_list(struct td_client *c, const char *base, long limit,
    const char *cursor, const char *const *query,
    const struct td_request_options *opts, const struct client_kind *kind,
    struct client_page *page, struct td_error *err);
/* *out becomes a new td_*_list holding page. */
#define CLIENT_LIST_NEW(out, page) do {					\
	*(out) = xcalloc(1, sizeof **(out));				\
	CLIENT_PAGE_TO_LIST(*(out), page);				\
} while (0)
/* Clears count items of kind and frees the array. */
void client_items_free(const struct client_kind *kind, void *items, size_t count);
/* Frees a td_*_list (or nothing when NULL) whose items are of kind. */
#define CLIENT_LIST_FREE(kind, list) do {				\
	if ((list) != NULL) {						\
		client_items_free(kind, (list)->items, (list)->count);	\
		free((list)->next_cursor);				\
		free((list)->json);					\
		free(list);						\
	}								\
} while (0)
/*
 * Sends a request whose answer is one item of kind: a new one in *item
 * (NULL on failure, free it with kind's clear and free()).
 */
enum td_code client_call_item(struct td_client *c, const char *method,
    const char *path, const char *body, const struct td_request_options *opts,
    const struct client_kind *kind, void **item, struct td_error *err);

/*
 * How client_stream_get hands out a 2xx answer: the header lines of the
 * answer (without CRLF, not NUL-terminated), then on_start once they are
 * complete, then the body in pieces.  A hook that returns anything but TD_OK
 * stops the transfer, which then fails with that code; the hook fills the
 * error itself.  An answer outside 2xx is buffered and mapped as usual.
 */
struct client_stream {
	const char *const *headers;	/* extra request headers, NULL-terminated, or NULL */
	void (*on_header)(void *arg, const char *line, size_t len);
	enum td_code (*on_start)(void *arg, long status);
	enum td_code (*on_data)(void *arg, const char *data, size_t len);
	void *arg;
};

/*
 * GET path, streaming a 2xx body to stream.  The request's deadline covers
 * the whole body.  Caller frees resp with client_response_free, also on
 * failure; resp->status and resp->request_id tell what answered.
 */
enum td_code client_stream_get(struct td_client *c, const char *path,
    const struct client_stream *stream, const struct td_request_options *opts,
    struct client_response *resp, struct td_error *err);
/* Value of header line "Name: value" (len bytes) when its name is name, else NULL. */
const char *client_header_value(const char *line, size_t len, const char *name,
    size_t *vlen);
/* Waits ms milliseconds or until cancel fires; false when it fired. */
bool client_cancel_sleep(struct td_cancel *cancel, long ms);
/* TD_INVALID_RESPONSE for an answer whose JSON is not the expected what. */
enum td_code client_malformed(const struct client_response *resp,
    const char *what, struct td_error *err);


/* "/api/v1/<collection>/<escaped id><suffix>"; free() it. */
char *client_item_path(const char *collection, const char *id, const char *suffix);
/* The query pair (NULL-terminated) of a list of which items, NULL for the default. */
const char *const *client_archived_query(enum td_archived which);
/* path with ?limit= (when > 0) and &cursor= (when not NULL); free() it. */
char *client_query_path(const char *path, long limit, const char *cursor);
/* path (consumed) with &name=value (or ?name=value) when value is not NULL; free() it. */
char *client_query_add(char *path, const char *name, const char *value);
/* The cursor of the rel="next" link of a Link header, or NULL; free() it. */
char *client_next_cursor(const char *link);
/* Parses text that must be a JSON object; NULL (and err set) otherwise. */
cJSON *client_parse_object(const char *text, const char *what, struct td_error *err);
/* Copy of obj[key] when a string, else NULL. */
char *client_string(const cJSON *obj, const char *key);
/* Copy of obj[key] when a string, else of fallback. */
char *client_string_or(const cJSON *obj, const char *key, const char *fallback);

#endif
