/* The event stream: GET /api/v1/events through the SSE parser, every stream of a client on one worker thread. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
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
/* Marks a stream's own socket among the hub's epoll entries (the rest are libcurl's). */
#define EVENTS_RAW_TAG (UINT64_C(1) << 63)
/* Events parsed before they are queued under one lock. */
#define EVENTS_BATCH 256
/* Longest Last-Event-ID accepted: a 32-digit stream id, ':' and a counter. */
#define EVENTS_MAX_ID 128
/*
 * A stream's events are cut from slabs of this many bytes (one larger than a
 * quarter of it gets a block of its own): the worker allocates, and the
 * consumer frees, once per slab instead of once per event.
 */
#define EVENTS_SLAB_BYTES (16 * 1024)

/*
 * Events share a slab: it goes when its last event is freed and the stream
 * has moved on to the next one.  The worker does not touch refs while it
 * cuts from the slab (the consumer's frees would pull the line back and
 * forth): refs starts at EVENTS_SLAB_OPEN, each free takes one, and the
 * worker takes the rest but the events it cut once it moves on.
 */
struct event_slab {
	atomic_long refs;
	_Alignas(16) unsigned char data[];
};

/* More than a slab's events: refs cannot reach 0 while the worker cuts from it. */
#define EVENTS_SLAB_OPEN (LONG_MAX / 2)

/* What precedes every event the library makes (td_event_free reads it). */
struct event_head {
	struct event_slab *slab;	/* NULL: a block of its own */
	void *unused;			/* keeps the event 16-byte aligned */
};

/*
 * The worker of one client: one multi handle for all its streams, driven
 * by socket (curl_multi_socket_action) so that an event costs the work of
 * its own stream only.
 */
struct events_hub {
	CURLM *multi;
	pthread_t thread;
	int wake[2];		/* readable when a stream is added, closed or has room */
	pthread_mutex_t lock;
	struct td_events *pending;	/* opened, not yet taken by the worker */
	bool stopping;

	/* The worker's own state: the sockets libcurl asked to watch, its timer. */
	int epoll;
	int64_t timer_ms;	/* when to call libcurl for its timeouts, or -1 */
	bool dirty;		/* a stream needs a look (events_check) */
	int64_t scan_due;	/* when the streams need a look anyway */
	char *rbuf;		/* EVENTS_CURL_BUFFER bytes: what events_raw_read receives */
};

/* Guards the creation of a client's hub. */
static pthread_mutex_t events_hub_lock = PTHREAD_MUTEX_INITIALIZER;

struct td_events {
	struct td_client *client;
	struct events_hub *hub;	/* NULL when the stream never started */
	struct td_events *next;	/* in the hub's pending or active list */
	char *project_id, *session_id, *run_id;	/* the filter */
	long idle_timeout_ms;
	char *resume_id;	/* Last-Event-ID sent, or NULL */

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
	bool detached;		/* the worker no longer touches the stream */
	bool stalled;		/* parsed events wait for room (written by the worker) */
	int notify;		/* an eventfd, readable while an event or a failure waits */
	bool notified;

	/* The worker's own state. */
	CURL *easy;
	struct curl_slist *headers;
	char *url;
	char errbuf[CURL_ERROR_SIZE];
	bool done;		/* the transfer ended with result */
	CURLcode result;
	bool paused;		/* the transfer's reading is paused */
	/*
	 * Once a plain HTTP/1 answer's body is under way and ends only with the
	 * connection (as taskdeckd sends it), the worker reads the socket itself
	 * (a duplicate of libcurl's, whose reading stays paused): libcurl's
	 * state machine and poll() cost more per event than the parse.  -1 before.
	 */
	int raw;
	bool raw_tried;
	curl_socket_t sock;	/* the transfer's socket, as libcurl last named it */
	bool chunked;		/* the answer has Transfer-Encoding: chunked */
	int64_t stall_ms;	/* when the batch last found no room */
	char *stream_id;	/* from stream.hello */
	size_t stream_id_len;
	long long resync_on_hello;	/* >= 0: the hello's head was behind the resume point */
	long long last_seq;
	long status;
	struct buf error_body;	/* an answer outside 2xx */
	struct sse_parser *parser;
	struct td_event **batch;	/* parsed, not queued yet */
	struct event_slab *slab;	/* where the next events are cut from, or NULL */
	size_t slab_used;	/* its bytes cut */
	long slab_events;	/* its events cut */
	size_t batch_len, batch_cap;
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

static void
event_slab_release(struct event_slab *slab)
{
	if (atomic_fetch_sub_explicit(&slab->refs, 1, memory_order_acq_rel) == 1)
		free(slab);
}

/* The worker is done cutting from the stream's slab: it goes with its last event. */
static void
events_slab_retire(struct td_events *ev)
{
	long keep = EVENTS_SLAB_OPEN - ev->slab_events;

	if (ev->slab != NULL &&
	    atomic_fetch_sub_explicit(&ev->slab->refs, keep, memory_order_acq_rel) == keep)
		free(ev->slab);
	ev->slab = NULL;
}

struct td_event *
client_event_alloc(size_t size)
{
	struct event_head *h = xmalloc(sizeof *h + size);

	h->slab = NULL;
	return (struct td_event *)(h + 1);
}

/* Room for an event of size bytes, from the stream's slab when it is small.  The worker's. */
static struct td_event *
events_alloc(struct td_events *ev, size_t size)
{
	size_t need = (sizeof(struct event_head) + size + 15) & ~(size_t)15;
	struct event_head *h;

	if (need > EVENTS_SLAB_BYTES / 4)
		return client_event_alloc(size);
	if (ev->slab == NULL || ev->slab_used + need > EVENTS_SLAB_BYTES) {
		events_slab_retire(ev);
		ev->slab = xmalloc(sizeof *ev->slab + EVENTS_SLAB_BYTES);
		atomic_init(&ev->slab->refs, EVENTS_SLAB_OPEN);
		ev->slab_used = 0;
		ev->slab_events = 0;
	}
	h = (struct event_head *)(void *)(ev->slab->data + ev->slab_used);
	ev->slab_used += need;
	ev->slab_events++;
	h->slab = ev->slab;
	return (struct td_event *)(h + 1);
}

/* An event is one block after its head: the struct, then its strings (events_make). */
void
td_event_free(struct td_event *event)
{
	struct event_head *h;

	if (event == NULL)
		return;
	h = (struct event_head *)event - 1;
	if (h->slab != NULL)
		event_slab_release(h->slab);
	else
		free(h);
}

struct td_event *
td_event_new(long long seq, const char *stream_id, const char *type, const char *time,
    const char *project_id, const char *session_id, const char *run_id,
    const char *data_json, const char *json)
{
	const char *src[] = { stream_id, type, time, project_id, session_id, run_id,
	    data_json ? data_json : "null", json };
	size_t size = sizeof(struct td_event);
	struct td_event *e;
	char **dst[8], *p;

	for (size_t i = 0; i < 8; i++)
		size += src[i] ? strlen(src[i]) + 1 : 0;
	e = client_event_alloc(size);
	memset(e, 0, sizeof *e);
	dst[0] = &e->stream_id;
	dst[1] = &e->type;
	dst[2] = &e->time;
	dst[3] = &e->project_id;
	dst[4] = &e->session_id;
	dst[5] = &e->run_id;
	dst[6] = &e->data_json;
	dst[7] = &e->json;
	e->seq = seq;
	p = (char *)(e + 1);
	for (size_t i = 0; i < 8; i++) {
		if (src[i] == NULL)
			continue;
		*dst[i] = p;
		p = stpcpy(p, src[i]) + 1;
	}
	return e;
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

/* Makes the notify eventfd readable; under ev->lock. */
static void
events_notify(struct td_events *ev)
{
	ssize_t n;

	if (ev->notified)
		return;
	n = write(ev->notify, &(uint64_t){ 1 }, sizeof(uint64_t));
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

static void client_events_flush(struct td_events *ev);
static void events_hub_stop(struct td_client *client);

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
		client_events_flush(ev);
	client_fail(&e, code, "%s", "");
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof e.message, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&ev->lock);
	events_fail_locked(ev, &e);
	pthread_mutex_unlock(&ev->lock);
	if (ev->hub != NULL)
		ev->hub->dirty = true;
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

/* The members in the order taskdeckd writes them (src/service/events.c). */
static const struct {
	const char *lead;	/* the key with what comes before and after it */
	size_t len;
	enum events_member m;
} events_layout[] = {
	{ "{\"seq\":", 7, EVENTS_SEQ },
	{ ",\"type\":", 8, EVENTS_TYPE },
	{ ",\"time\":", 8, EVENTS_TIME },
	{ ",\"projectId\":", 13, EVENTS_PROJECT },
	{ ",\"sessionId\":", 13, EVENTS_SESSION },
	{ ",\"runId\":", 9, EVENTS_RUN },
	{ ",\"data\":", 8, EVENTS_DATA },
};

/* Whether the n bytes at p, 4 to 16 of them, are those at lead: no call to memcmp. */
static inline bool
events_same(const char *p, const char *lead, size_t n)
{
	uint64_t a, b, c, d;
	uint32_t e, f, g, h;

	if (n >= 8) {
		memcpy(&a, p, 8);
		memcpy(&b, lead, 8);
		memcpy(&c, p + n - 8, 8);
		memcpy(&d, lead + n - 8, 8);
		return ((a ^ b) | (c ^ d)) == 0;
	}
	memcpy(&e, p, 4);
	memcpy(&f, lead, 4);
	memcpy(&g, p + n - 4, 4);
	memcpy(&h, lead + n - 4, 4);
	return ((e ^ f) | (g ^ h)) == 0;
}

/*
 * The scan of a frame written exactly as the service writes one: the keys
 * are compared, only the values scanned.  false when it departs from that
 * anywhere (spaces, order, other members): jsonscan_object decides then.
 */
static bool
events_scan_layout(const char *text, size_t len, struct events_scan *sc)
{
	const char *p = text, *end = text + len;
	size_t n;

	for (size_t i = 0; i < sizeof events_layout / sizeof events_layout[0]; i++) {
		if ((size_t)(end - p) < events_layout[i].len ||
		    !events_same(p, events_layout[i].lead, events_layout[i].len))
			return false;
		p += events_layout[i].len;
		n = jsonscan_value_at(p, (size_t)(end - p), &sc->m[events_layout[i].m]);
		if (n == 0)
			return false;
		p += n;
		sc->found |= 1u << events_layout[i].m;
	}
	return end - p == 1 && *p == '}';
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
	ev->stream_id_len = strlen(sid);
	ev->resync_on_hello = -1;
	/* Resuming on the same stream: what follows comes after the id sent. */
	if (ev->resume_id != NULL &&
	    events_parse_id(ev->resume_id, resumed, sizeof resumed, &n) &&
	    strcmp(resumed, sid) == 0) {
		const cJSON *head = cJSON_GetObjectItemCaseSensitive(doc, "headSeq");

		ev->last_seq = n;
		/* A head behind where we resumed: the service cannot replay what we
		 * think we have; say so instead of going on as if nothing was lost. */
		if (cJSON_IsNumber(head) && head->valuedouble >= 0 && head->valuedouble < (double)n)
			ev->resync_on_hello = (long long)head->valuedouble;
	}
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
events_id_seq(const struct td_events *ev, const char *id, size_t id_len)
{
	size_t n = ev->stream_id_len, digits;
	long long seq = 0;
	const char *p = id + n + 1;

	if (id_len <= n || memcmp(id, ev->stream_id, n) != 0 || id[n] != ':')
		return -1;
	/* 18 digits cannot overflow; more would pass any seq the service sends. */
	for (digits = 0; p[digits] >= '0' && p[digits] <= '9'; digits++) {
		if (digits == 18)
			return -1;
		seq = seq * 10 + (p[digits] - '0');
	}
	return digits > 0 && p[digits] == '\0' ? seq : -1;
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
	size_t sid_len = ev->stream_id_len, data_len;
	struct td_event *e;
	bool ok;
	char *at;

	if (seq < 0)
		return NULL;
	/* The SSE id sticks to later frames: a resync frame need not carry its own. */
	if (!resync && (events_id_seq(ev, frame->id, frame->id_len) != seq || seq <= ev->last_seq))
		return NULL;
	data_len = data->type == JSONSCAN_NULL ? 4 : data->len;
	e = events_alloc(ev, sizeof *e + sid_len + 1 + events_room(&m[EVENTS_TYPE]) +
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
		td_event_free(e);
		return NULL;
	}
	if (seq > ev->last_seq)
		ev->last_seq = seq;
	return e;
}

/*
 * Queues as many of the events parsed so far as the backlog takes, under one
 * lock; the rest stay in the batch (ev->stalled) and the grace period runs
 * from the last time one found room.
 */
static void
client_events_flush(struct td_events *ev)
{
	bool was_stalled = ev->stalled;
	size_t i = 0;

	pthread_mutex_lock(&ev->lock);
	for (; i < ev->batch_len && ev->count < TD_EVENTS_MAX_BACKLOG &&
	    !ev->closing; i++) {
		ev->queue[(ev->head + ev->count) % TD_EVENTS_MAX_BACKLOG] = ev->batch[i];
		if (ev->count++ == 0) {
			events_notify(ev);
			pthread_cond_broadcast(&ev->cond);
		}
	}
	ev->stalled = i < ev->batch_len;
	pthread_mutex_unlock(&ev->lock);
	if (ev->stalled && (i > 0 || !was_stalled))
		ev->stall_ms = clock_mono_ms();
	memmove(ev->batch, ev->batch + i, (ev->batch_len - i) * sizeof *ev->batch);
	ev->batch_len -= i;
}

static int events_on_frame(const struct sse_event *frame, void *arg);

/* Yields a stream.resync-required of our own, as if the service had sent it. */
static int
events_resync_now(struct td_events *ev, long long head, const char *id)
{
	char now[TD_TIME_LEN], *data;
	struct sse_event frame = { .type = "stream.resync-required", .id = id,
	    .id_len = strlen(id), .retry = -1 };
	int rc, n;

	ev->resync_on_hello = -1;
	time_format_utc(clock_wall_ms(), now);
	n = asprintf(&data, "{\"seq\":%lld,\"type\":\"stream.resync-required\",\"time\":\"%s\","
	    "\"data\":{\"reason\":\"stream-changed\"}}", head, now);
	if (n < 0)
		abort();
	frame.data = data;
	frame.data_len = (size_t)n;
	rc = events_on_frame(&frame, ev);
	free(data);
	return rc;
}

/* The SSE parser's callback: one complete frame. */
static int
events_on_frame(const struct sse_event *frame, void *arg)
{
	struct td_events *ev = arg;
	/* The layout's scan sets every member; the full scan starts from zero. */
	struct events_scan sc;
	const struct jsonscan_value *type = &sc.m[EVENTS_TYPE];
	enum events_kind kind = EVENTS_KIND_EVENT;
	struct td_event *e = NULL;
	cJSON *doc;
	int rc = -1;

	ev->framed = true;
	sc.found = 0;
	if (!events_scan_layout(frame->data, frame->data_len, &sc)) {
		memset(&sc, 0, sizeof sc);
		if (!jsonscan_object(frame->data, frame->data_len, events_on_member, &sc))
			sc.found = 0;
	}
	if (!(sc.found & 1u << EVENTS_TYPE) || type->type != JSONSCAN_STRING) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream sent a frame that is not a JSON event");
		return -1;
	}
	kind = events_kind_of(type);
	if (kind == EVENTS_KIND_HELLO) {
		doc = json_parse(frame->data, frame->data_len);
		rc = events_on_hello(ev, doc);
		cJSON_Delete(doc);
		if (rc == 0 && ev->resync_on_hello >= 0)
			rc = events_resync_now(ev, ev->resync_on_hello, frame->id);
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
		if (ev->batch_len == ev->batch_cap) {
			ev->batch_cap = ev->batch_cap == 0 ? EVENTS_BATCH : 2 * ev->batch_cap;
			ev->batch = xrealloc(ev->batch, ev->batch_cap * sizeof *ev->batch);
		}
		ev->batch[ev->batch_len++] = e;
		if (ev->batch_len >= EVENTS_BATCH && !ev->stalled)
			client_events_flush(ev);
		rc = 0;
	}
	return rc;
}

/*
 * Parses n more bytes of a 2xx body and queues what it can; the parser's
 * result.  Events left waiting for room stay in the batch.  own: the bytes
 * are the worker's, for the parser to write in (sse_feed_own).
 */
static int
events_feed(struct td_events *ev, char *data, size_t n, bool own)
{
	int rc;

	ev->framed = false;
	rc = own ? sse_feed_own(ev->parser, data, n) : sse_feed(ev->parser, data, n);
	if (ev->framed)
		ev->last_frame_ms = clock_mono_ms();
	/* Only events left waiting for room need the worker's pass over every stream. */
	if (ev->batch_len > 0) {
		client_events_flush(ev);
		if (ev->batch_len > 0)
			ev->hub->dirty = true;
	}
	if (rc == SSE_TOO_BIG) {
		events_fail(ev, TD_EVENT_STREAM_INVALID_MESSAGE,
		    "the event stream sent a frame larger than %d bytes",
		    TD_EVENTS_MAX_FRAME);
	}
	return rc;
}

/* Watches the stream's own socket for input, or stops watching it. */
static void
events_raw_watch(struct td_events *ev, bool on)
{
	struct epoll_event ee = {
		.events = on ? EPOLLIN : 0,
		.data.u64 = EVENTS_RAW_TAG | (uint64_t)(uintptr_t)ev,
	};

	epoll_ctl(ev->hub->epoll, EPOLL_CTL_MOD, ev->raw, &ee);
}

/*
 * After a piece of a 2xx body: takes the reading of the socket over from
 * libcurl when the rest of the body is simply the bytes to come (HTTP/1
 * without TLS, neither chunked nor sized) and nothing waits for room.
 * libcurl hands over the rest of the read it is in (its pieces go out before
 * it looks at the pause again); paused both ways, it neither reads nor runs
 * the transfer any more (paused for receiving only, it ran it again and
 * events went missing).
 */
static void
events_take_socket(struct td_events *ev)
{
	struct epoll_event ee = { .events = EPOLLIN };
	curl_off_t length = 0;
	curl_socket_t s;
	long version = 0;
	char *scheme = NULL;
	int fd;

	ev->raw_tried = true;
	if (ev->chunked ||
	    curl_easy_getinfo(ev->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) != CURLE_OK ||
	    length != -1 ||
	    curl_easy_getinfo(ev->easy, CURLINFO_HTTP_VERSION, &version) != CURLE_OK ||
	    (version != CURL_HTTP_VERSION_1_0 && version != CURL_HTTP_VERSION_1_1) ||
	    curl_easy_getinfo(ev->easy, CURLINFO_SCHEME, &scheme) != CURLE_OK ||
	    scheme == NULL || strcasecmp(scheme, "http") != 0 ||
	    (s = ev->sock) == CURL_SOCKET_BAD)
		return;
	if (ev->hub->rbuf == NULL)
		ev->hub->rbuf = xmalloc(EVENTS_CURL_BUFFER);
	/* Its own descriptor, so that its epoll entry is apart from libcurl's. */
	if ((fd = fcntl(s, F_DUPFD_CLOEXEC, 0)) < 0)
		return;
	ee.data.u64 = EVENTS_RAW_TAG | (uint64_t)(uintptr_t)ev;
	if (epoll_ctl(ev->hub->epoll, EPOLL_CTL_ADD, fd, &ee) != 0) {
		close(fd);
		return;
	}
	if (curl_easy_pause(ev->easy, CURLPAUSE_ALL) != CURLE_OK) {
		epoll_ctl(ev->hub->epoll, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
		return;
	}
	ev->raw = fd;
}

/*
 * curl's body writer: the SSE parser for a 2xx answer, else a bounded buffer.
 * While parsed events wait for room it pauses the transfer (curl keeps the
 * piece); the worker resumes it once they are queued.  It takes the socket
 * over after the first piece that leaves no event waiting.
 */
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
	/*
	 * Once the socket is taken, libcurl still hands over the rest of what it
	 * had read; a pause would keep that from us for good.
	 */
	if (ev->batch_len > 0 && ev->raw < 0) {
		client_events_flush(ev);
		if (ev->batch_len > 0) {
			ev->paused = true;
			ev->hub->dirty = true;
			return CURL_WRITEFUNC_PAUSE;
		}
	}
	rc = events_feed(ev, data, n, false);
	if (rc == SSE_OK && !ev->raw_tried && ev->batch_len == 0)
		events_take_socket(ev);
	return rc == SSE_OK ? n : 0;
}

/*
 * Reads the stream's own socket (events_take_socket) while it has input and
 * the events find room; on the end of the body or an error the transfer is
 * done, as libcurl would have said.
 */
static void
events_raw_read(struct events_hub *hub, struct td_events *ev)
{
	ssize_t n;
	int rc;

	for (;;) {
		if (ev->done || ev->paused)
			return;
		if (ev->batch_len > 0) {
			client_events_flush(ev);
			if (ev->batch_len > 0) {
				ev->paused = true;
				events_raw_watch(ev, false);
				hub->dirty = true;
				return;
			}
		}
		n = recv(ev->raw, hub->rbuf, EVENTS_CURL_BUFFER, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (n < 0) {
				snprintf(ev->errbuf, sizeof ev->errbuf, "receiving: %s",
				    strerror(errno));
			}
			ev->result = n == 0 ? CURLE_OK : CURLE_RECV_ERROR;
			break;
		}
		rc = events_feed(ev, hub->rbuf, (size_t)n, true);
		if (rc != SSE_OK) {
			ev->result = CURLE_WRITE_ERROR;
			break;
		}
		/* A short read took all there was; epoll says when more comes. */
		if ((size_t)n < EVENTS_CURL_BUFFER)
			return;
	}
	ev->done = true;
	events_raw_watch(ev, false);
	hub->dirty = true;
}

/* curl's header callback: keeps the status of the final answer. */
static size_t
events_on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct td_events *ev = arg;
	size_t n = size * nmemb;
	const char *p;

	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0 &&
	    (p = memchr(data, ' ', n)) != NULL) {
		ev->status = strtol(p + 1, NULL, 10);
		ev->chunked = false;
	} else if (n > 18 && strncasecmp(data, "transfer-encoding:", 18) == 0 &&
	    memmem(data + 18, n - 18, "chunked", 7) != NULL)
		ev->chunked = true;
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
	enum td_code code = name != NULL ? errcode_from_name(name) : TD_UNKNOWN;
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
	ev->hub->dirty = true;
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

/* The failure that ends a transfer that ended. */
static void
events_finish(struct td_events *ev)
{
	if (ev->status > 0 && (ev->status < 200 || ev->status > 299))
		events_service_error(ev);
	else if (ev->result == CURLE_OK) {
		events_fail(ev, TD_CONNECTION_FAILED,
		    "the service at %s ended the event stream",
		    ev->client->base_url);
	} else {
		events_fail(ev, TD_CONNECTION_FAILED,
		    "the event stream from %s failed: %s", ev->client->base_url,
		    ev->errbuf[0] != '\0' ? ev->errbuf : curl_easy_strerror(ev->result));
	}
}

/* Makes the stream's request; false when libcurl could not. */
static bool
events_prepare(struct td_events *ev)
{
	char *path, *resume;

	ev->easy = curl_easy_init();
	if (ev->easy == NULL)
		return false;
	ev->headers = curl_slist_append(ev->headers, ev->client->auth_header);
	ev->headers = curl_slist_append(ev->headers, "Accept: text/event-stream");
	ev->headers = curl_slist_append(ev->headers, "Expect:");
	if (ev->resume_id != NULL) {
		resume = xasprintf("Last-Event-ID: %s", ev->resume_id);
		ev->headers = curl_slist_append(ev->headers, resume);
		free(resume);
	}
	path = events_path(ev);
	ev->url = xasprintf("%s%s", ev->client->base_url, path);
	free(path);
	curl_easy_setopt(ev->easy, CURLOPT_URL, ev->url);
	curl_easy_setopt(ev->easy, CURLOPT_UNIX_SOCKET_PATH, ev->client->unix_socket);
	curl_easy_setopt(ev->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(ev->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(ev->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(ev->easy, CURLOPT_CONNECTTIMEOUT_MS, ev->client->timeout_ms);
	curl_easy_setopt(ev->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(ev->easy, CURLOPT_BUFFERSIZE, (long)EVENTS_CURL_BUFFER);
	curl_easy_setopt(ev->easy, CURLOPT_USERAGENT, ev->client->user_agent);
	curl_easy_setopt(ev->easy, CURLOPT_HTTPHEADER, ev->headers);
	curl_easy_setopt(ev->easy, CURLOPT_ERRORBUFFER, ev->errbuf);
	curl_easy_setopt(ev->easy, CURLOPT_WRITEFUNCTION, events_on_body);
	curl_easy_setopt(ev->easy, CURLOPT_WRITEDATA, ev);
	curl_easy_setopt(ev->easy, CURLOPT_HEADERFUNCTION, events_on_header);
	curl_easy_setopt(ev->easy, CURLOPT_HEADERDATA, ev);
	curl_easy_setopt(ev->easy, CURLOPT_PRIVATE, ev);
	return true;
}

/*
 * One worker pass over a stream: queues what waits for room, resumes or
 * fails a paused transfer, ends a finished, failed, idle or closed one.
 * The milliseconds until it needs a look again, or -1 when it leaves.
 */
static long
events_check(struct td_events *ev)
{
	int64_t now, idle;
	bool stop;

	pthread_mutex_lock(&ev->lock);
	stop = ev->closing || ev->failed != TD_OK;
	pthread_mutex_unlock(&ev->lock);
	if (stop)
		return -1;
	if (ev->batch_len > 0) {
		client_events_flush(ev);
		now = clock_mono_ms();
		if (ev->batch_len > 0) {
			if (now - ev->stall_ms < TD_EVENTS_OVERFLOW_GRACE_MS)
				return (long)(ev->stall_ms + TD_EVENTS_OVERFLOW_GRACE_MS - now);
			events_fail(ev, TD_EVENT_STREAM_OVERFLOW,
			    "more than %d events waited to be read for %d ms; the stream "
			    "stopped (resume with td_events_reopen)", TD_EVENTS_MAX_BACKLOG,
			    TD_EVENTS_OVERFLOW_GRACE_MS);
			return -1;
		}
		/* Reading stopped while the events waited; idle time starts anew. */
		ev->last_frame_ms = now;
	}
	if (ev->paused) {
		ev->paused = false;
		if (ev->raw >= 0)
			events_raw_watch(ev, true);
		else
			curl_easy_pause(ev->easy, CURLPAUSE_CONT);
		return 0;
	}
	if (ev->done) {
		events_finish(ev);
		return -1;
	}
	idle = ev->last_frame_ms + ev->idle_timeout_ms - clock_mono_ms();
	if (idle <= 0) {
		events_fail(ev, TD_EVENT_STREAM_IDLE_TIMEOUT,
		    "no event or heartbeat from %s for %ld ms",
		    ev->client->base_url, ev->idle_timeout_ms);
		return -1;
	}
	return (long)idle;
}

/* Takes the stream out of the worker's hands; td_events_close may free it then. */
static void
events_detach(struct events_hub *hub, struct td_events *ev)
{
	if (ev->raw >= 0) {
		epoll_ctl(hub->epoll, EPOLL_CTL_DEL, ev->raw, NULL);
		close(ev->raw);
		ev->raw = -1;
	}
	curl_multi_remove_handle(hub->multi, ev->easy);
	curl_easy_cleanup(ev->easy);
	ev->easy = NULL;
	pthread_mutex_lock(&ev->lock);
	ev->detached = true;
	pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
}

/* Wakes the worker (thread-safe). */
static void
events_hub_wake(struct events_hub *hub)
{
	ssize_t n = write(hub->wake[1], "x", 1);

	(void)n;
}

/* libcurl's socket callback: which sockets to watch for what. */
static int
events_on_socket(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct events_hub *hub = arg;
	struct epoll_event ee = { .data.u64 = (uint64_t)s };
	char *priv = NULL;

	if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv) == CURLE_OK && priv != NULL)
		((struct td_events *)(void *)priv)->sock = what == CURL_POLL_REMOVE ?
		    CURL_SOCKET_BAD : s;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(hub->epoll, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	ee.events = (what & CURL_POLL_IN ? EPOLLIN : 0) |
	    (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (sockp == NULL) {
		curl_multi_assign(hub->multi, s, hub);
		if (epoll_ctl(hub->epoll, EPOLL_CTL_ADD, s, &ee) == 0 || errno != EEXIST)
			return 0;
	}
	if (epoll_ctl(hub->epoll, EPOLL_CTL_MOD, s, &ee) != 0 && errno == ENOENT)
		epoll_ctl(hub->epoll, EPOLL_CTL_ADD, s, &ee);
	return 0;
}

/* libcurl's timer callback: when it wants to be called for its timeouts. */
static int
events_on_timer(CURLM *multi, long timeout_ms, void *arg)
{
	struct events_hub *hub = arg;

	(void)multi;
	hub->timer_ms = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
	return 0;
}

/*
 * Waits up to timeout ms for the sockets, the timer or a wakeup, and lets
 * libcurl work on the sockets that are ready.  A wakeup marks the hub dirty.
 */
static void
events_hub_poll(struct events_hub *hub, long timeout)
{
	struct epoll_event ready[64];
	int64_t now = clock_mono_ms();
	char drain[64];
	int n, running;

	if (hub->timer_ms >= 0 && hub->timer_ms - now < timeout)
		timeout = hub->timer_ms > now ? (long)(hub->timer_ms - now) : 0;
	n = epoll_wait(hub->epoll, ready, 64, (int)timeout);
	for (int i = 0; i < n; i++) {
		uint32_t got = ready[i].events;

		if ((ready[i].data.u64 & EVENTS_RAW_TAG) != 0) {
			events_raw_read(hub, (struct td_events *)(uintptr_t)
			    (ready[i].data.u64 & ~EVENTS_RAW_TAG));
			continue;
		}
		if (ready[i].data.u64 == (uint64_t)hub->wake[0]) {
			while (read(hub->wake[0], drain, sizeof drain) > 0)
				;
			hub->dirty = true;
			continue;
		}
		curl_multi_socket_action(hub->multi, (curl_socket_t)ready[i].data.u64,
		    (got & EPOLLIN ? CURL_CSELECT_IN : 0) |
		    (got & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
		    (got & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0), &running);
	}
	if (hub->timer_ms >= 0 && hub->timer_ms <= clock_mono_ms()) {
		hub->timer_ms = -1;
		curl_multi_socket_action(hub->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
}

/* The worker thread: every stream of a client, their frames into their queues. */
static void *
events_hub_run(void *arg)
{
	struct events_hub *hub = arg;
	struct td_events *active = NULL, *taken, *ev, **at;
	char *priv;
	int left;
	long timeout, wait;
	CURLMsg *msg;
	int64_t now;
	bool stopping;

	for (;;) {
		pthread_mutex_lock(&hub->lock);
		stopping = hub->stopping;
		taken = hub->pending;
		hub->pending = NULL;
		pthread_mutex_unlock(&hub->lock);
		while ((ev = taken) != NULL) {
			taken = ev->next;
			ev->next = active;
			active = ev;
			curl_multi_add_handle(hub->multi, ev->easy);
			hub->dirty = true;
		}
		if (stopping)
			break;
		while ((msg = curl_multi_info_read(hub->multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE ||
			    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
			    &priv) != CURLE_OK || priv == NULL)
				continue;
			ev = (struct td_events *)priv;
			ev->done = true;
			ev->result = msg->data.result;
			hub->dirty = true;
		}
		now = clock_mono_ms();
		if (!hub->dirty && now < hub->scan_due) {
			events_hub_poll(hub, (long)(hub->scan_due - now));
			continue;
		}
		/* Only now and then, or when something happened: every stream. */
		hub->dirty = false;
		timeout = 1000;
		for (at = &active; (ev = *at) != NULL;) {
			wait = events_check(ev);
			if (wait < 0) {
				*at = ev->next;
				events_detach(hub, ev);
				continue;
			}
			if (wait < timeout)
				timeout = wait;
			at = &ev->next;
		}
		hub->scan_due = now + timeout;
		events_hub_poll(hub, timeout);
	}
	/* The client goes away: streams still open (a caller's bug) just end. */
	while ((ev = active) != NULL) {
		active = ev->next;
		events_fail(ev, TD_CANCELLED, "the client was freed");
		events_detach(hub, ev);
	}
	return NULL;
}

/* The client's hub in *out, started with its first stream. */
static enum td_code
events_hub_get(struct td_client *client, struct events_hub **out,
    struct td_error *err)
{
	struct events_hub *hub;
	sigset_t all, old;
	int rc;

	pthread_mutex_lock(&events_hub_lock);
	hub = client->events_hub;
	if (hub != NULL) {
		pthread_mutex_unlock(&events_hub_lock);
		*out = hub;
		return TD_OK;
	}
	hub = xcalloc(1, sizeof *hub);
	hub->multi = curl_multi_init();
	if (hub->multi == NULL) {
		pthread_mutex_unlock(&events_hub_lock);
		free(hub);
		return client_fail(err, TD_CONNECTION_FAILED,
		    "libcurl could not make a handle");
	}
	hub->wake[0] = hub->wake[1] = -1;
	hub->epoll = epoll_create1(EPOLL_CLOEXEC);
	if (hub->epoll < 0 || pipe2(hub->wake, O_CLOEXEC | O_NONBLOCK) != 0 ||
	    epoll_ctl(hub->epoll, EPOLL_CTL_ADD, hub->wake[0],
	    &(struct epoll_event){ .events = EPOLLIN,
	    .data.u64 = (uint64_t)hub->wake[0] }) != 0) {
		rc = errno;
		pthread_mutex_unlock(&events_hub_lock);
		for (int i = 0; i < 2; i++) {
			if (hub->wake[i] >= 0)
				close(hub->wake[i]);
		}
		if (hub->epoll >= 0)
			close(hub->epoll);
		curl_multi_cleanup(hub->multi);
		free(hub);
		return client_fail(err, TD_IO_ERROR, "cannot make a poll set: %s",
		    strerror(rc));
	}
	hub->timer_ms = -1;
	curl_multi_setopt(hub->multi, CURLMOPT_SOCKETFUNCTION, events_on_socket);
	curl_multi_setopt(hub->multi, CURLMOPT_SOCKETDATA, hub);
	curl_multi_setopt(hub->multi, CURLMOPT_TIMERFUNCTION, events_on_timer);
	curl_multi_setopt(hub->multi, CURLMOPT_TIMERDATA, hub);
	pthread_mutex_init(&hub->lock, NULL);
	/* Signals (Ctrl-C) stay with the caller's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&hub->thread, NULL, events_hub_run, hub);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)	/* what top -H and perf show for it */
		pthread_setname_np(hub->thread, "td-events");
	if (rc != 0) {
		pthread_mutex_unlock(&events_hub_lock);
		curl_multi_cleanup(hub->multi);
		pthread_mutex_destroy(&hub->lock);
		close(hub->wake[0]);
		close(hub->wake[1]);
		close(hub->epoll);
		free(hub);
		return client_fail(err, TD_IO_ERROR, "cannot start a thread: %s",
		    strerror(rc));
	}
	client->events_hub = hub;
	client->events_stop = events_hub_stop;
	pthread_mutex_unlock(&events_hub_lock);
	*out = hub;
	return TD_OK;
}

/* Ends the event streams' worker thread, before the client is freed. */
static void
events_hub_stop(struct td_client *client)
{
	struct events_hub *hub = client->events_hub;

	if (hub == NULL)
		return;
	pthread_mutex_lock(&hub->lock);
	hub->stopping = true;
	pthread_mutex_unlock(&hub->lock);
	events_hub_wake(hub);
	pthread_join(hub->thread, NULL);
	curl_multi_cleanup(hub->multi);
	pthread_mutex_destroy(&hub->lock);
	close(hub->wake[0]);
	close(hub->wake[1]);
	close(hub->epoll);
	free(hub->rbuf);
	free(hub);
	client->events_hub = NULL;
}

/* Hands a new stream to the worker. */
static void
events_hub_add(struct events_hub *hub, struct td_events *ev)
{
	ev->hub = hub;
	pthread_mutex_lock(&hub->lock);
	ev->next = hub->pending;
	hub->pending = ev;
	pthread_mutex_unlock(&hub->lock);
	events_hub_wake(hub);
}

/* Returns once the worker no longer touches ev. */
static void
events_hub_drop(struct td_events *ev)
{
	struct events_hub *hub = ev->hub;
	struct td_events **at;
	bool found = false;

	pthread_mutex_lock(&ev->lock);
	found = ev->detached;
	pthread_mutex_unlock(&ev->lock);
	if (hub == NULL || found)
		return;
	pthread_mutex_lock(&hub->lock);
	for (at = &hub->pending; *at != NULL; at = &(*at)->next) {
		if (*at == ev) {
			*at = ev->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&hub->lock);
	if (found)
		return;
	events_hub_wake(hub);
	pthread_mutex_lock(&ev->lock);
	while (!ev->detached)
		pthread_cond_wait(&ev->cond, &ev->lock);
	pthread_mutex_unlock(&ev->lock);
}

/* Frees what td_events_open made. */
static void
client_events_free(struct td_events *ev)
{
	while (ev->count > 0) {
		td_event_free(ev->queue[ev->head]);
		ev->head = (ev->head + 1) % TD_EVENTS_MAX_BACKLOG;
		ev->count--;
	}
	for (size_t i = 0; i < ev->batch_len; i++)
		td_event_free(ev->batch[i]);
	free(ev->batch);
	events_slab_retire(ev);
	if (ev->easy != NULL)
		curl_easy_cleanup(ev->easy);
	curl_slist_free_all(ev->headers);
	free(ev->url);
	sse_free(ev->parser);
	buf_free(&ev->error_body);
	close(ev->notify);
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
	struct events_hub *hub;
	struct td_events *ev;
	enum td_code rc;

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
	if ((rc = events_hub_get(client, &hub, err)) != TD_OK)
		return rc;
	ev = xcalloc(1, sizeof *ev);
	ev->raw = -1;
	ev->sock = CURL_SOCKET_BAD;
	if ((ev->notify = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		free(ev);
		return client_fail(err, TD_IO_ERROR, "cannot make an eventfd: %s",
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
	ev->last_frame_ms = clock_mono_ms();
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

	if (events_prepare(ev))
		events_hub_add(hub, ev);
	else {
		events_fail(ev, TD_CONNECTION_FAILED, "libcurl could not make a handle");
		ev->detached = true;
	}
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
	uint64_t drained;
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
			if (ev->count-- == TD_EVENTS_MAX_BACKLOG && ev->stalled)
				events_hub_wake(ev->hub);
			ev->yielded_seq = e->seq;
			/* One read resets the eventfd's count. */
			if (ev->count == 0 && ev->failed == TD_OK && ev->notified) {
				n = read(ev->notify, &drained, sizeof drained);
				(void)n;
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
			rc = TD_TIMEOUT;
			break;
		}
	}
	events_leave(ev);
	/* Formatted outside the lock, which the worker takes for every event. */
	if (rc == TD_TIMEOUT)
		client_fail(err, TD_TIMEOUT, "no event within %ld ms", timeout_ms);
	return rc;
}

int
td_events_fd(const struct td_events *ev)
{
	return ev->notify;
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
	pthread_cond_broadcast(&ev->cond);
	while (ev->callers > 0)
		pthread_cond_wait(&ev->cond, &ev->lock);
	pthread_mutex_unlock(&ev->lock);
	events_hub_drop(ev);
	client_events_free(ev);
}
