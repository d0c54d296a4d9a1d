/* The event stream and the durable history of a run (docs/events.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "ids.h"
#include "json.h"
#include "routes.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

#define HISTORY_LIMIT 1000

static const struct {
	const char *param;
	const char *prefix;
	size_t offset;
} event_filters[] = {
	{ "project", "prj", offsetof(struct events_filter, project) },
	{ "session", "ses", offsetof(struct events_filter, session) },
	{ "run", "run", offsetof(struct events_filter, run) },
};

static void
route_events_suspend(void *hs)
{
	http_stream_suspend(hs);
}

static void
route_events_resume(void *hs)
{
	http_stream_resume(hs);
}

static int
route_events_fd(void *hs)
{
	return http_stream_fd(hs);
}

static ssize_t
route_events_send(void *hs, const char *buf, size_t len)
{
	return http_stream_send(hs, buf, len);
}

/* A subscriber waits on its HTTP stream. */
static const struct events_conn_ops route_events_conn = {
	.suspend = route_events_suspend,
	.resume = route_events_resume,
	.fd = route_events_fd,
	.send = route_events_send,
};

static ssize_t
route_events_read(void *sub, struct http_stream *hs, char *buf, size_t max)
{
	ssize_t n = events_sub_read(sub, hs, buf, max);

	return n == EVENTS_SUB_END ? HTTP_STREAM_END : n;
}

static void
route_events_free(void *sub)
{
	events_sub_free(sub);
}

void
route_events_stream(struct http_request *req, struct http_response *r)
{
	struct events_filter f = { 0 };
	struct events_sub *sub;

	for (size_t i = 0; i < sizeof event_filters / sizeof event_filters[0]; i++) {
		const char *v = http_query(req, event_filters[i].param);
		char *msg;

		if (v == NULL)
			continue;
		if (!id_valid(v, event_filters[i].prefix)) {
			msg = xasprintf("%s must be a %s_ id", event_filters[i].param,
			    event_filters[i].prefix);
			http_bad_parameter(r, event_filters[i].param, "%s", msg);
			free(msg);
			return;
		}
		snprintf((char *)&f + event_filters[i].offset, TD_ID_MAX, "%s", v);
	}
	sub = events_subscribe(req->svc->events, &f,
	    http_request_header(req, "Last-Event-ID"), &route_events_conn);
	if (sub == NULL) {
		http_error(r, TD_UNAVAILABLE, NULL, "%d event streams are open already; "
		    "close one and retry.", EVENTS_MAX_SUBS);
		http_add_header(r, "Retry-After", "1");
		return;
	}
	http_stream(r, 200, route_events_read, route_events_free, sub);
	http_add_header(r, "Content-Type", "text/event-stream");
	http_add_header(r, "X-Accel-Buffering", "no");
}

/* Parses an optional non-negative integer query argument; false after answering 400. */
static bool
query_count(struct http_request *req, struct http_response *r, const char *name,
    long long min, long long max, long long *out)
{
	const char *v = http_query(req, name);
	char *end, *msg;
	long long n;

	if (v == NULL)
		return true;
	n = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n < min || n > max) {
		msg = xasprintf("%s must be an integer from %lld to %lld", name, min, max);
		http_bad_parameter(r, name, "%s", msg);
		free(msg);
		return false;
	}
	*out = n;
	return true;
}

void
route_runs_events(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *id = req->params[0];
	long long after = 0, limit = HISTORY_LIMIT;
	struct events_history_page page;
	cJSON *arr;

	/*
	 * After is a seq, or an event's id STREAM:SEQ (what the stream's
	 * id: lines and the next link carry), which pages a history that spans
	 * several streams (a run resumed after a restart) without ambiguity.
	 */
	const char *after_v = http_query(req, "after");
	char after_stream[40] = "";

	if (after_v != NULL && strchr(after_v, ':') != NULL) {
		const char *colon = strchr(after_v, ':');
		char *end;

		after = strtoll(colon + 1, &end, 10);
		if (colon - after_v != 32 || strspn(after_v, "0123456789abcdef") != 32 ||
		    colon[1] < '0' || colon[1] > '9' || *end != '\0' || after < 0 ||
		    after > (1LL << 53))
			return http_bad_parameter(r, "after", "after must be a seq or an event id "
			    "STREAM:SEQ");
		memcpy(after_stream, after_v, 32);
	} else if (!query_count(req, r, "after", 0, (1LL << 53), &after)) {
		return;
	}
	if (!query_count(req, r, "limit", 1, HISTORY_LIMIT, &limit))
		return;
	if (!id_valid(id, "run"))
		return http_not_found(r, "run", id);
	events_flush(req->svc->events);
	store_lock(st);
	arr = events_history(st, id, after_stream, after, (int)limit, &page);
	store_unlock(st);
	if (arr == NULL)
		return http_not_found(r, "run", id);
	if (page.more)
		http_link_next(r, "/api/v1/runs/%s/events?after=%s:%lld&limit=%lld", id,
		    page.last_stream, page.last, limit);
	http_json(r, 200, arr);
}
