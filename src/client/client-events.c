/* The event stream: GET /api/v1/events through the SSE parser, on a worker thread. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client-internal.h"
#include "errors.h"
#include "json.h"
#include "jsonscan.h"
#include "sse.h"
#include "timeutil.h"
#include "xalloc.h"

/* Bytes curl hands over at once; large frames and bursts need fewer calls. */
#define EVENTS_CURL_BUFFER (256 * 1024)
/* Events parsed before they are queued under one lock. */
#define EVENTS_BATCH 256
/* Longest Last-Event-ID accepted: a 32-digit stream id, ':' and a counter. */
#define EVENTS_MAX_ID 128

struct td_events {
	struct td_client *client;
	char *project_id, *session_id, *run_id;	/* the filter */
	long idle_timeout_ms;
	char *resume_id;	/* Last-Event-ID sent, or NULL */
	pthread_t worker;
	bool worker_started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct td_event *queue[TD_EVENTS_MAX_BACKLOG];
	size_t head, count;
	bool hello;
	enum td_code failed;	/* TD_OK while the stream is healthy */
	struct td_error error;
	char *last_id;		/* where it started, until an event is yielded */
	long long yielded_seq;	/* of the last event yielded, -1 before any */
	bool closing;
	int callers;		/* threads inside next or ready */
	CURLM *multi;		/* while the worker runs, for curl_multi_wakeup */
	int notify[2];		/* readable while an event or a failure waits */
	bool notified;

	/* The worker's own state. */
	char *stream_id;	/* from stream.hello */
	long long last_seq;
	long status;
	struct buf error_body;	/* an answer outside 2xx */
	struct sse_parser *parser;
	struct td_event *batch[EVENTS_BATCH];	/* parsed, not queued yet */
	size_t batch_len;
	int64_t last_frame_ms;
	bool framed;		/* a frame arrived in this piece of the body */
};

/* The members of an event that the client reads. */
enum events_member {
	EVENTS_SEQ,
	EVENTS_TYPE,
	EVENTS_TIME,
	EVENTS_PROJECT,
	EVENTS_SESSION,
	EVENTS_RUN,
	EVENTS_DATA,
	EVENTS_MEMBERS,
};

/* A frame's members as spans of its data; the first of duplicates counts; zero when absent. */
struct events_scan {
	struct jsonscan_value m[EVENTS_MEMBERS];
	unsigned found;		/* bit per enum events_member */
};

/* What a frame's type asks of the client. */
enum events_kind {
	EVENTS_KIND_EVENT,
	EVENTS_KIND_HELLO,
	EVENTS_KIND_HEARTBEAT,
	EVENTS_KIND_RESYNC,
};

/* An event is one block: the struct, then its strings (events_make). */
void
td_event_free(struct td_event *event)
{
	free(event);
}

/* The absolute CLOCK_MONOTONIC time timeout_ms from now. */
static struct timespec
events_deadline(long timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Makes the notify pipe readable; under ev->lock. */
static void
events_notify(struct td_events *ev)
{
	ssize_t n;

	if (ev->notified)
		return;
	n = write(ev->notify[1], "x", 1);
	(void)n;
	ev->notified = true;
}

/* Records the failure that ends the stream (the first one wins); under ev->lock. */
static void
events_fail_locked(struct td_events *ev, const struct td_error *e)
{
	if (ev->failed != TD_OK || ev->closing)
		return;
	ev->failed = e->code;
	ev->error = *e;
	events_notify(ev);
	pthread_cond_broadcast(&ev->cond);
}

static bool events_flush(struct td_events *ev);

/* Ends the stream with code and a message; the worker's events before it come first. */
static void
events_fail(struct td_events *ev, enum td_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
events_fail(struct td_events *ev, enum td_code code, const char *fmt, ...)
{
	struct td_error e;
	va_list ap;

	if (ev->batch_len > 0)
		events_flush(ev);
	client_fail(&e, code, "%s", "");
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof e.message, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&ev->lock);
	events_fail_locked(ev, &e);
	pthread_mutex_unlock(&ev->lock);
}

/* Parses "<streamId>:<seq>"; false when malformed. */
static bool
events_parse_id(const char *id, char *stream, size_t stream_size, long long *seq)
{
	const char *colon = strrchr(id, ':');
	char *end;

	if (colon == NULL || colon == id || (size_t)(colon - id) >= stream_size ||
	    colon[1] < '0' || colon[1] > '9')
		return false;
	errno = 0;
	*seq = strtoll(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || *seq < 0)
		return false;
	memcpy(stream, id, (size_t)(colon - id));
	stream[colon - id] = '\0';
	return true;
}

/* The seq member when a whole number >= min (and <= 2^53), else -1. */
static long long
events_seq(const struct jsonscan_value *v, int min)
{
	long long n = 0;
	double d;

	if (v->type != JSONSCAN_NUMBER)
		return -1;
	if (v->len <= 15) {
		size_t i = 0;

		while (i < v->len && v->text[i] >= '0' && v->text[i] <= '9')
			n = n * 10 + (v->text[i++] - '0');
		if (i == v->len)
			return n >= min ? n : -1;
	}
	/* A fraction, exponent or sign: the value as cJSON would read it. */
	d = strtod(v->text, NULL);
	if (d < min || d > 9007199254740992.0 || d != (double)(long long)d)
		return -1;
	return (long long)d;
}

/* Which member a top-level key names, or -1. */
static int
events_member_of(const char *k, size_t n)
{
	switch (n) {
	case 3:
		return memcmp(k, "seq", 3) == 0 ? EVENTS_SEQ : -1;
	case 4:
		if (memcmp(k, "type", 4) == 0)
			return EVENTS_TYPE;
		if (memcmp(k, "time", 4) == 0)
			return EVENTS_TIME;
		return memcmp(k, "data", 4) == 0 ? EVENTS_DATA : -1;
	case 5:
		return memcmp(k, "runId", 5) == 0 ? EVENTS_RUN : -1;
	case 9:
		if (memcmp(k, "sessionId", 9) == 0)
			return EVENTS_SESSION;
		return memcmp(k, "projectId", 9) == 0 ? EVENTS_PROJECT : -1;
	default:
		return -1;
	}
}

/* jsonscan_object's callback: keeps the members the client reads. */
static bool
events_on_member(const struct jsonscan_value *key, const struct jsonscan_value *value,
    void *arg)
{
	struct events_scan *sc = arg;
	/* An escaped key spells one of ours in at most 6 bytes a character. */
	char plain[64];
	int m;

	if (!key->escaped)
		m = events_member_of(key->str, key->str_len);
	else if (key->str_len <= sizeof plain)
		m = events_member_of(plain, jsonscan_unescape(key, plain));
	else
		m = -1;
	if (m >= 0 && !(sc->found & 1u << m)) {
		sc->found |= 1u << m;
		sc->m[m] = *value;
	}
	return true;
}

/* What a frame's type asks of the client. */
static enum events_kind
events_kind_of(const struct jsonscan_value *type)
{
	static const struct {
		const char *name;
		enum events_kind kind;
	} kinds[] = {
		{ "stream.hello", EVENTS_KIND_HELLO },
		{ "stream.heartbeat", EVENTS_KIND_HEARTBEAT },
		{ "stream.resync-required", EVENTS_KIND_RESYNC },
	};
	char plain[160];
	const char *t = type->str;
	size_t n = type->str_len;

	/* Every control type starts with "stream.": the common case is one compare. */
	if (type->escaped) {
		if (n > sizeof plain)
			return EVENTS_KIND_EVENT;
		n = jsonscan_unescape(type, plain);
		t = plain;
	}
	if (n < 7 || memcmp(t, "stream.", 7) != 0)
		return EVENTS_KIND_EVENT;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strlen(kinds[i].name) == n && memcmp(kinds[i].name, t, n) == 0)
			return kinds[i].kind;
	}
	return EVENTS_KIND_EVENT;
}

/* Handles stream.hello: the stream's id and where it starts. */
static int
events_on_hello(struct td_events *ev, const cJSON *doc)
{
	const char *sid = json_get_string(doc, "streamId");
	char resumed[EVENTS_MAX_ID];
	long long n;

	if (ev->hello || sid == NULL || *sid == '\0' || strlen(sid) >= EVENTS_MAX_ID ||
	    strchr(sid, ':') != NULL) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream sent a malformed or second stream.hello");
		return -1;
	}
	ev->stream_id = xstrdup(sid);
	/* Resuming on the same stream: what follows comes after the id sent. */
	if (ev->resume_id != NULL &&
	    events_parse_id(ev->resume_id, resumed, sizeof resumed, &n) &&
	    strcmp(resumed, sid) == 0)
		ev->last_seq = n;
	pthread_mutex_lock(&ev->lock);
	ev->hello = true;
	if (ev->last_id == NULL) {
		const cJSON *head = cJSON_GetObjectItemCaseSensitive(doc, "headSeq");

		ev->last_id = xasprintf("%s:%lld", sid, cJSON_IsNumber(head) &&
		    head->valuedouble >= 0 ? (long long)head->valuedouble : 0LL);
	}
	pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
	return 0;
}

/* The seq of an SSE id "<our streamId>:<seq>", else -1 (events_parse_id, faster). */
static long long
events_id_seq(const struct td_events *ev, const char *id)
{
	size_t n = strlen(ev->stream_id);
	long long seq = 0;
	const char *p;

	if (strncmp(id, ev->stream_id, n) != 0 || id[n] != ':' || id[n + 1] == '\0')
		return -1;
	for (p = id + n + 1; *p >= '0' && *p <= '9'; p++) {
		if (seq > (LLONG_MAX - (*p - '0')) / 10)
			return -1;
		seq = seq * 10 + (*p - '0');
	}
	return *p == '\0' ? seq : -1;
}

/* Room a string member takes in the event's block. */
static size_t
events_room(const struct jsonscan_value *v)
{
	return v->type == JSONSCAN_STRING ? v->str_len + 1 : 0;
}

/*
 * Copies string member v, decoded and NUL-terminated, to *at and moves *at
 * past it; NULL for anything but a string.  false when it holds a NUL.
 */
static bool
events_put(char **at, const struct jsonscan_value *v, char **out)
{
	size_t n;

	*out = NULL;
	if (v->type != JSONSCAN_STRING)
		return true;
	*out = *at;
	if (!v->escaped) {
		memcpy(*at, v->str, v->str_len);
		n = v->str_len;
	} else if (memchr(*at, '\0', n = jsonscan_unescape(v, *at)) != NULL)
		return false;
	(*at)[n] = '\0';
	*at += n + 1;
	return true;
}

/* The frame as a struct td_event in one block; NULL when it is not a valid one. */
static struct td_event *
events_make(struct td_events *ev, const struct sse_event *frame,
    const struct events_scan *sc, bool resync)
{
	/* Members not found are zero: JSONSCAN_NULL. */
	const struct jsonscan_value *m = sc->m, *data = &m[EVENTS_DATA];
	/* A resync carries the head, 0 on a service that has sent nothing yet. */
	long long seq = events_seq(&m[EVENTS_SEQ], resync ? 0 : 1);
	size_t sid_len = strlen(ev->stream_id), data_len;
	struct td_event *e;
	bool ok;
	char *at;

	if (seq < 0)
		return NULL;
	/* The SSE id sticks to later frames: a resync frame need not carry its own. */
	if (!resync && (events_id_seq(ev, frame->id) != seq || seq <= ev->last_seq))
		return NULL;
	data_len = data->type == JSONSCAN_NULL ? 4 : data->len;
	e = xmalloc(sizeof *e + sid_len + 1 + events_room(&m[EVENTS_TYPE]) +
	    events_room(&m[EVENTS_TIME]) + events_room(&m[EVENTS_PROJECT]) +
	    events_room(&m[EVENTS_SESSION]) + events_room(&m[EVENTS_RUN]) +
	    data_len + 1 + frame->data_len + 1);
	at = (char *)(e + 1);
	e->seq = seq;
	e->stream_id = memcpy(at, ev->stream_id, sid_len + 1);
	at += sid_len + 1;
	e->json = memcpy(at, frame->data, frame->data_len + 1);
	at += frame->data_len + 1;
	e->data_json = memcpy(at, data->type == JSONSCAN_NULL ? "null" : data->text, data_len);
	e->data_json[data_len] = '\0';
	at += data_len + 1;
	ok = events_put(&at, &m[EVENTS_TYPE], &e->type) &&
	    events_put(&at, &m[EVENTS_TIME], &e->time) &&
	    events_put(&at, &m[EVENTS_PROJECT], &e->project_id) &&
	    events_put(&at, &m[EVENTS_SESSION], &e->session_id) &&
	    events_put(&at, &m[EVENTS_RUN], &e->run_id);
	if (!ok) {
		free(e);
		return NULL;
	}
	if (seq > ev->last_seq)
		ev->last_seq = seq;
	return e;
}

/*
 * Queues the events parsed so far, under one lock.  On a full backlog it
 * waits up to TD_EVENTS_OVERFLOW_GRACE_MS for the consumer to take one
 * (reading stops meanwhile); false (and the stream failed) when it did not.
 */
static bool
events_flush(struct td_events *ev)
{
	struct timespec until;
	size_t i = 0;
	bool ok = true;

	pthread_mutex_lock(&ev->lock);
	for (; i < ev->batch_len && ok; i++) {
		if (ev->count == TD_EVENTS_MAX_BACKLOG) {
			until = events_deadline(TD_EVENTS_OVERFLOW_GRACE_MS);
			while (ev->count == TD_EVENTS_MAX_BACKLOG && !ev->closing &&
			    pthread_cond_timedwait(&ev->cond, &ev->lock, &until) != ETIMEDOUT)
				;
		}
		ok = ev->count < TD_EVENTS_MAX_BACKLOG && !ev->closing;
		if (!ok)
			break;
		ev->queue[(ev->head + ev->count) % TD_EVENTS_MAX_BACKLOG] = ev->batch[i];
		if (ev->count++ == 0) {
			events_notify(ev);
			pthread_cond_broadcast(&ev->cond);
		}
	}
	pthread_mutex_unlock(&ev->lock);
	for (; i < ev->batch_len; i++)
		td_event_free(ev->batch[i]);
	ev->batch_len = 0;
	if (!ok) {
		events_fail(ev, TD_EVENT_STREAM_OVERFLOW,
		    "more than %d events waited to be read for %d ms; the stream "
		    "stopped (resume with td_events_reopen)", TD_EVENTS_MAX_BACKLOG,
		    TD_EVENTS_OVERFLOW_GRACE_MS);
	}
	return ok;
}

/* The SSE parser's callback: one complete frame. */
static int
events_on_frame(const struct sse_event *frame, void *arg)
{
	struct td_events *ev = arg;
	struct events_scan sc = { .found = 0 };
	const struct jsonscan_value *type = &sc.m[EVENTS_TYPE];
	enum events_kind kind = EVENTS_KIND_EVENT;
	struct td_event *e = NULL;
	cJSON *doc;
	int rc = -1;

	ev->framed = true;
	if (!jsonscan_object(frame->data, frame->data_len, events_on_member, &sc) ||
	    !(sc.found & 1u << EVENTS_TYPE) || type->type != JSONSCAN_STRING) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream sent a frame that is not a JSON event");
		return -1;
	}
	kind = events_kind_of(type);
	if (kind == EVENTS_KIND_HELLO) {
		doc = json_parse(frame->data, frame->data_len);
		rc = events_on_hello(ev, doc);
		cJSON_Delete(doc);
	} else if (!ev->hello) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream did not start with stream.hello");
	} else if (kind == EVENTS_KIND_HEARTBEAT)
		rc = 0;
	else if ((e = events_make(ev, frame, &sc, kind == EVENTS_KIND_RESYNC)) == NULL) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream sent a malformed %.*s event (seq, id or order)",
		    (int)(type->str_len < 64 ? type->str_len : 64), type->str);
	} else {
		ev->batch[ev->batch_len++] = e;
		rc = ev->batch_len < EVENTS_BATCH || events_flush(ev) ? 0 : -1;
	}
	return rc;
}

/* curl's body writer: the SSE parser for a 2xx answer, else a bounded buffer. */
static size_t
events_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct td_events *ev = arg;
	size_t n = size * nmemb;
	int rc;

	if (ev->status < 200 || ev->status > 299) {
		buf_append(&ev->error_body, data, n);
		return n;
	}
	ev->framed = false;
	rc = sse_feed(ev->parser, data, n);
	if (ev->framed)
		ev->last_frame_ms = td_mono_ms();
	if (!events_flush(ev) && rc == SSE_OK)
		rc = SSE_ABORTED;
	if (rc == SSE_TOO_BIG) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream sent a frame larger than %d bytes",
		    TD_EVENTS_MAX_FRAME);
	}
	return rc == SSE_OK ? n : 0;
}

/* curl's header callback: keeps the status of the final answer. */
static size_t
events_on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct td_events *ev = arg;
	size_t n = size * nmemb;
	const char *p;

	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0 &&
	    (p = memchr(data, ' ', n)) != NULL)
		ev->status = strtol(p + 1, NULL, 10);
	return n;
}

/* The failure of an answer outside 2xx, from its error body. */
static void
events_service_error(struct td_events *ev)
{
	cJSON *doc = json_parse(ev->error_body.data, ev->error_body.len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const char *name = json_get_string(e, "code");
	const char *message = json_get_string(e, "message");
	enum td_code code = name != NULL ? td_code_from_name(name) : TD_UNKNOWN;
	struct td_error err;

	if (code == TD_OK)
		code = TD_UNKNOWN;
	client_fail(&err, code, "%s", message != NULL ? message : "");
	if (message == NULL) {
		snprintf(err.message, sizeof err.message,
		    "the service answered HTTP %ld to GET /api/v1/events", ev->status);
	}
	if (name != NULL)
		snprintf(err.code_name, sizeof err.code_name, "%s", name);
	err.http_status = ev->status;
	pthread_mutex_lock(&ev->lock);
	events_fail_locked(ev, &err);
	pthread_mutex_unlock(&ev->lock);
	cJSON_Delete(doc);
}

/* The request path with the filter's query. */
static char *
events_path(const struct td_events *ev)
{
	char *path = xstrdup("/api/v1/events");

	path = client_query_add(path, "project", ev->project_id);
	path = client_query_add(path, "session", ev->session_id);
	return client_query_add(path, "run", ev->run_id);
}

/* Drives the transfer until it ends, fails, idles or ev closes. */
static CURLcode
events_drive(struct td_events *ev, CURLM *multi, CURL *easy)
{
	CURLcode result = CURLE_OK;
	int running = 1, left;
	CURLMsg *msg;
	int64_t idle;
	bool stop;

	curl_multi_add_handle(multi, easy);
	for (;;) {
		if (curl_multi_perform(multi, &running) != CURLM_OK || running == 0)
			break;
		pthread_mutex_lock(&ev->lock);
		stop = ev->closing || ev->failed != TD_OK;
		pthread_mutex_unlock(&ev->lock);
		if (stop)
			break;
		idle = ev->last_frame_ms + ev->idle_timeout_ms - td_mono_ms();
		if (idle <= 0) {
			events_fail(ev, TD_EVENT_STREAM_IDLE_TIMEOUT,
			    "no event or heartbeat from %s for %ld ms",
			    ev->client->base_url, ev->idle_timeout_ms);
			break;
		}
		if (curl_multi_poll(multi, NULL, 0, idle < 1000 ? (int)idle : 1000,
		    NULL) != CURLM_OK)
			break;
	}
	while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
		if (msg->msg == CURLMSG_DONE)
			result = msg->data.result;
	}
	curl_multi_remove_handle(multi, easy);
	return result;
}

/* The worker thread: one GET /api/v1/events, its frames into the queue. */
static void *
events_worker(void *arg)
{
	struct td_events *ev = arg;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL;
	char *url, *path, *resume = NULL;
	CURLM *multi = curl_multi_init();
	CURL *easy = curl_easy_init();
	CURLcode cc;

	if (multi == NULL || easy == NULL) {
		events_fail(ev, TD_CONNECTION_FAILED, "libcurl could not make a handle");
		goto out;
	}
	headers = curl_slist_append(headers, ev->client->auth_header);
	headers = curl_slist_append(headers, "Accept: text/event-stream");
	headers = curl_slist_append(headers, "Expect:");
	if (ev->resume_id != NULL) {
		resume = xasprintf("Last-Event-ID: %s", ev->resume_id);
		headers = curl_slist_append(headers, resume);
	}
	path = events_path(ev);
	url = xasprintf("%s%s", ev->client->base_url, path);
	free(path);
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_PROXY, "");
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, ev->client->timeout_ms);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, (long)EVENTS_CURL_BUFFER);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, ev->client->user_agent);
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, events_on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, ev);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, events_on_header);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, ev);

	pthread_mutex_lock(&ev->lock);
	ev->multi = multi;
	pthread_mutex_unlock(&ev->lock);
	cc = events_drive(ev, multi, easy);
	pthread_mutex_lock(&ev->lock);
	ev->multi = NULL;
	pthread_mutex_unlock(&ev->lock);

	if (ev->status > 0 && (ev->status < 200 || ev->status > 299))
		events_service_error(ev);
	else if (cc == CURLE_OK) {
		events_fail(ev, TD_CONNECTION_FAILED,
		    "the service at %s ended the event stream",
		    ev->client->base_url);
	} else {
		events_fail(ev, TD_CONNECTION_FAILED,
		    "the event stream from %s failed: %s", ev->client->base_url,
		    errbuf[0] != '\0' ? errbuf : curl_easy_strerror(cc));
	}
	free(url);
	free(resume);
out:
	curl_slist_free_all(headers);
	if (easy != NULL)
		curl_easy_cleanup(easy);
	if (multi != NULL)
		curl_multi_cleanup(multi);
	return NULL;
}

/* Frees what td_events_open made. */
static void
events_free(struct td_events *ev)
{
	while (ev->count > 0) {
		td_event_free(ev->queue[ev->head]);
		ev->head = (ev->head + 1) % TD_EVENTS_MAX_BACKLOG;
		ev->count--;
	}
	for (size_t i = 0; i < ev->batch_len; i++)
		td_event_free(ev->batch[i]);
	sse_free(ev->parser);
	buf_free(&ev->error_body);
	close(ev->notify[0]);
	close(ev->notify[1]);
	pthread_cond_destroy(&ev->cond);
	pthread_mutex_destroy(&ev->lock);
	free(ev->project_id);
	free(ev->session_id);
	free(ev->run_id);
	free(ev->resume_id);
	free(ev->last_id);
	free(ev->stream_id);
	free(ev);
}

/* A Last-Event-ID goes into a header: printable ASCII, bounded. */
static bool
events_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n >= EVENTS_MAX_ID)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (id[i] <= ' ' || id[i] > '~')
			return false;
	}
	return true;
}

enum td_code
td_events_open(struct td_client *client, const struct td_event_filter *filter,
    const struct td_events_options *opts, struct td_events **out,
    struct td_error *err)
{
	static const struct td_event_filter no_filter;
	static const struct td_events_options defaults;
	pthread_mutexattr_t mattr;
	pthread_condattr_t attr;
	sigset_t all, old;
	struct td_events *ev;
	int rc;

	*out = NULL;
	if (filter == NULL)
		filter = &no_filter;
	if (opts == NULL)
		opts = &defaults;
	if (opts->idle_timeout_ms < 0) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "idle_timeout_ms must not be negative");
	}
	if (opts->last_event_id != NULL && !events_id_valid(opts->last_event_id)) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "last_event_id must be \"<streamId>:<seq>\"");
	}
	ev = xcalloc(1, sizeof *ev);
	if (pipe2(ev->notify, O_CLOEXEC | O_NONBLOCK) != 0) {
		free(ev);
		return client_fail(err, TD_IO_ERROR, "cannot make a pipe: %s",
		    strerror(errno));
	}
	ev->client = client;
	ev->project_id = xstrdup_or_null(filter->project_id);
	ev->session_id = xstrdup_or_null(filter->session_id);
	ev->run_id = xstrdup_or_null(filter->run_id);
	ev->idle_timeout_ms = opts->idle_timeout_ms > 0 ? opts->idle_timeout_ms :
	    TD_EVENTS_IDLE_TIMEOUT_MS;
	ev->resume_id = xstrdup_or_null(opts->last_event_id);
	ev->last_id = xstrdup_or_null(opts->last_event_id);
	ev->yielded_seq = -1;
	ev->last_frame_ms = td_mono_ms();
	ev->parser = sse_new(TD_EVENTS_MAX_FRAME, events_on_frame, ev);
	buf_init(&ev->error_body, CLIENT_MAX_ERROR_BODY);
	/* The worker and the consumer take it for short spells: spin before sleeping. */
	pthread_mutexattr_init(&mattr);
	pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&ev->lock, &mattr);
	pthread_mutexattr_destroy(&mattr);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ev->cond, &attr);
	pthread_condattr_destroy(&attr);

	/* Signals (Ctrl-C) stay with the caller's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&ev->worker, NULL, events_worker, ev);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		events_free(ev);
		return client_fail(err, TD_IO_ERROR, "cannot start a thread: %s",
		    strerror(rc));
	}
	ev->worker_started = true;
	*out = ev;
	return TD_OK;
}

enum td_code
td_events_reopen(struct td_client *client, const struct td_events *old,
    struct td_events **out, struct td_error *err)
{
	struct td_event_filter filter = {
		.project_id = old->project_id,
		.session_id = old->session_id,
		.run_id = old->run_id,
	};
	struct td_events_options opts = { .idle_timeout_ms = old->idle_timeout_ms };
	char *last = td_events_last_id(old);
	enum td_code rc;

	opts.last_event_id = last;
	rc = td_events_open(client, &filter, &opts, out, err);
	free(last);
	return rc;
}

/*
 * Waits on ev->cond until timeout_ms after the first wait (*until is set
 * then; tv_nsec -1 before); false once it passed.  Under ev->lock.
 */
static bool
events_wait(struct td_events *ev, long timeout_ms, struct timespec *until)
{
	if (timeout_ms < 0) {
		pthread_cond_wait(&ev->cond, &ev->lock);
		return true;
	}
	if (timeout_ms == 0)
		return false;
	if (until->tv_nsec < 0)
		*until = events_deadline(timeout_ms);
	return pthread_cond_timedwait(&ev->cond, &ev->lock, until) != ETIMEDOUT;
}

/* Leaves a waiting call; wakes td_events_close when it waits for us.  Under ev->lock. */
static void
events_leave(struct td_events *ev)
{
	if (--ev->callers == 0 && ev->closing)
		pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
}

enum td_code
td_events_ready(struct td_events *ev, long timeout_ms, struct td_error *err)
{
	struct timespec until = { .tv_nsec = -1 };
	struct td_error e;
	enum td_code rc;

	pthread_mutex_lock(&ev->lock);
	ev->callers++;
	for (;;) {
		if (ev->closing) {
			rc = client_fail(err, TD_CANCELLED, "the event stream was closed");
			break;
		}
		if (ev->hello) {
			rc = TD_OK;
			break;
		}
		if (ev->failed != TD_OK) {
			if (err != NULL)
				*err = ev->error;
			rc = ev->failed;
			break;
		}
		if (!events_wait(ev, timeout_ms, &until)) {
			rc = client_fail(&e, TD_TIMEOUT,
			    "the event stream of %s did not come up within %ld ms",
			    ev->client->base_url, timeout_ms);
			if (err != NULL)
				*err = e;
			break;
		}
	}
	events_leave(ev);
	return rc;
}

enum td_code
td_events_next(struct td_events *ev, long timeout_ms, struct td_event **out,
    struct td_error *err)
{
	struct timespec until = { .tv_nsec = -1 };
	struct td_event *e;
	enum td_code rc;
	char drain[64];
	ssize_t n;

	*out = NULL;
	pthread_mutex_lock(&ev->lock);
	ev->callers++;
	for (;;) {
		if (ev->closing) {
			rc = client_fail(err, TD_CANCELLED, "the event stream was closed");
			break;
		}
		if (ev->count > 0) {
			e = ev->queue[ev->head];
			ev->head = (ev->head + 1) % TD_EVENTS_MAX_BACKLOG;
			/* The worker may wait for room. */
			if (ev->count-- == TD_EVENTS_MAX_BACKLOG)
				pthread_cond_broadcast(&ev->cond);
			ev->yielded_seq = e->seq;
			if (ev->count == 0 && ev->failed == TD_OK && ev->notified) {
				while ((n = read(ev->notify[0], drain, sizeof drain)) > 0)
					;
				ev->notified = false;
			}
			*out = e;
			rc = TD_OK;
			break;
		}
		if (ev->failed != TD_OK) {
			if (err != NULL)
				*err = ev->error;
			rc = ev->failed;
			break;
		}
		if (!events_wait(ev, timeout_ms, &until)) {
			rc = client_fail(err, TD_TIMEOUT,
			    "no event within %ld ms", timeout_ms);
			break;
		}
	}
	events_leave(ev);
	return rc;
}

int
td_events_fd(const struct td_events *ev)
{
	return ev->notify[0];
}

char *
td_events_last_id(const struct td_events *ev)
{
	struct td_events *mut = (struct td_events *)ev;
	char *id;

	pthread_mutex_lock(&mut->lock);
	/* stream_id is set once, before any event is queued. */
	if (ev->yielded_seq >= 0)
		id = xasprintf("%s:%lld", ev->stream_id, ev->yielded_seq);
	else
		id = xstrdup_or_null(ev->last_id);
	pthread_mutex_unlock(&mut->lock);
	return id;
}

void
td_events_close(struct td_events *ev)
{
	if (ev == NULL)
		return;
	pthread_mutex_lock(&ev->lock);
	ev->closing = true;
	if (ev->multi != NULL)
		curl_multi_wakeup(ev->multi);
	pthread_cond_broadcast(&ev->cond);
	while (ev->callers > 0)
		pthread_cond_wait(&ev->cond, &ev->lock);
	pthread_mutex_unlock(&ev->lock);
	if (ev->worker_started)
		pthread_join(ev->worker, NULL);
	events_free(ev);
}
