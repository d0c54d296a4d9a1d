/*
 * The event stream in libtaskdeck: first against a fake SSE server that
 * sends exactly the bytes a test scripts, then against a real taskdeckd.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "harness.h"
#include "json.h"
#include "taskdeck.h"
#include "timeutil.h"
#include "xalloc.h"

#define FAKE_TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FAKE_STREAM "5f0c00000000000000000000000000e1"

/* A one-connection HTTP server that writes a scripted answer. */
struct fake_sse {
	int lfd;
	int port;
	pthread_t thread;
	const char *head;	/* status line and headers; NULL: 200 text/event-stream */
	struct buf body;
	size_t chunk;		/* bytes per write; 0: all at once */
	int pause_ms;		/* sleep after each frame ("\n\n") */
	bool hold;		/* keep the connection open after the body */
	bool chunked;		/* each write a chunk of Transfer-Encoding: chunked */
	atomic_bool stop;
	char last_event_id[160];	/* the request's Last-Event-ID, or "" */
	char url[64];
};

/* Writes all of len bytes; false when the peer went away. */
static bool
fake_write(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reads the request head and keeps its Last-Event-ID. */
static void
fake_read_request(struct fake_sse *f, int fd)
{
	char req[8192];
	size_t len = 0;
	const char *h;

	while (len < sizeof req - 1) {
		ssize_t n = recv(fd, req + len, sizeof req - 1 - len, 0);

		if (n <= 0)
			break;
		len += (size_t)n;
		req[len] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	req[len] = '\0';
	if ((h = strcasestr(req, "\r\nLast-Event-ID: ")) != NULL) {
		h += 17;
		snprintf(f->last_event_id, sizeof f->last_event_id, "%.*s",
		    (int)strcspn(h, "\r\n"), h);
	}
}

/* True once the peer closed its side (or stop was asked). */
static bool
fake_peer_gone(struct fake_sse *f, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char ch;

	if (atomic_load(&f->stop))
		return true;
	return poll(&pfd, 1, 10) == 1 && recv(fd, &ch, 1, MSG_DONTWAIT) <= 0;
}

/* Writes the scripted answer to one connection. */
static void
fake_answer(struct fake_sse *f, int fd)
{
	const char *head = f->head != NULL ? f->head : f->chunked ?
	    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	    "Cache-Control: no-store\r\nTransfer-Encoding: chunked\r\n\r\n" :
	    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	    "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
	size_t off = 0, step;
	char size[32];

	fake_read_request(f, fd);
	if (!fake_write(fd, head, strlen(head)))
		return;
	while (off < f->body.len && !atomic_load(&f->stop)) {
		const char *end = f->pause_ms > 0 ?
		    memmem(f->body.data + off, f->body.len - off, "\n\n", 2) : NULL;

		step = f->chunk > 0 ? f->chunk : f->body.len;
		if (end != NULL)
			step = (size_t)(end + 2 - (f->body.data + off));
		if (step > f->body.len - off)
			step = f->body.len - off;
		snprintf(size, sizeof size, "%zx\r\n", step);
		if ((f->chunked && !fake_write(fd, size, strlen(size))) ||
		    !fake_write(fd, f->body.data + off, step) ||
		    (f->chunked && !fake_write(fd, "\r\n", 2)))
			return;
		off += step;
		if (f->chunk > 0 && f->chunk < 16)
			usleep(50);
		if (end != NULL)
			usleep((useconds_t)f->pause_ms * 1000);
	}
	if (f->chunked && !f->hold && !fake_write(fd, "0\r\n\r\n", 5))
		return;
	while (f->hold && !fake_peer_gone(f, fd))
		;
}

/* Serves connections one after the other until stopped. */
static void *
fake_serve(void *arg)
{
	struct fake_sse *f = arg;
	struct pollfd pfd = { .fd = f->lfd, .events = POLLIN };
	int fd;

	while (!atomic_load(&f->stop)) {
		if (poll(&pfd, 1, 20) != 1 || (fd = accept(f->lfd, NULL, NULL)) < 0)
			continue;
		fake_answer(f, fd);
		close(fd);
	}
	return NULL;
}

/* A listening socket on 127.0.0.1; port set. */
static int
fake_listen(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void
fake_init(struct fake_sse *f)
{
	memset(f, 0, sizeof *f);
	buf_init(&f->body, 0);
	atomic_init(&f->stop, false);
}

static void
fake_start(struct fake_sse *f)
{
	f->lfd = fake_listen(&f->port);
	cr_assert(listen(f->lfd, 4) == 0);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
	cr_assert(pthread_create(&f->thread, NULL, fake_serve, f) == 0);
}

static void
fake_stop(struct fake_sse *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	close(f->lfd);
	buf_free(&f->body);
}

static void
fake_hello(struct fake_sse *f, long long head)
{
	buf_printf(&f->body, "id: %s:%lld\nevent: stream.hello\ndata: "
	    "{\"type\":\"stream.hello\",\"streamId\":\"%s\",\"headSeq\":%lld,"
	    "\"heartbeatMs\":10000}\n\n", FAKE_STREAM, head, FAKE_STREAM, head);
}

static void
fake_heartbeat(struct fake_sse *f)
{
	buf_appends(&f->body, "event: stream.heartbeat\ndata: "
	    "{\"type\":\"stream.heartbeat\",\"time\":\"2026-11-21T06:40:00.000Z\"}\n\n");
}

/* A run.output event with seq and delta (JSON-escaped by the caller). */
static void
fake_output(struct fake_sse *f, long long seq, const char *delta)
{
	buf_printf(&f->body, "id: %s:%lld\nevent: run.output\ndata: {\"seq\":%lld,"
	    "\"type\":\"run.output\",\"time\":\"2026-11-21T06:40:00.123Z\","
	    "\"projectId\":\"prj_1\",\"sessionId\":\"ses_1\",\"runId\":\"run_1\","
	    "\"data\":{\"delta\":\"%s\"}}\n\n", FAKE_STREAM, seq, seq, delta);
}

static struct td_client *
fake_client(const struct fake_sse *f)
{
	struct td_connect_options o = { .base_url = f->url, .token = FAKE_TOKEN };
	struct td_client *c;
	struct td_error err;

	cr_assert_eq(td_connect(&c, &o, &err), TD_OK, "%s", err.message);
	return c;
}

/* Opens a subscription to f and waits until it is up. */
static struct td_events *
fake_open(struct td_client *c, long idle_ms)
{
	struct td_events_options o = { .idle_timeout_ms = idle_ms };
	struct td_events *ev;
	struct td_error err;

	cr_assert_eq(td_events_open(c, NULL, &o, &ev, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_events_ready(ev, 5000, &err), TD_OK, "%s", err.message);
	return ev;
}

/* The next event, which must be there within 5 s. */
static struct td_event *
next_event(struct td_events *ev)
{
	struct td_event *e;
	struct td_error err;

	cr_assert_eq(td_events_next(ev, 5000, &e, &err), TD_OK, "%s: %s",
	    err.code_name, err.message);
	return e;
}

static const char *
delta_of(const struct td_event *e, char *out, size_t size)
{
	cJSON *d = json_parse(e->data_json, strlen(e->data_json));
	const char *s = json_get_string(d, "delta");

	snprintf(out, size, "%s", s != NULL ? s : "");
	cJSON_Delete(d);
	return out;
}

Test(events_fake, yields_events_in_order_and_skips_heartbeats)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	char d[64], *last;

	fake_init(&f);
	fake_hello(&f, 3);
	fake_heartbeat(&f);
	fake_output(&f, 4, "Hel");
	fake_heartbeat(&f);
	fake_heartbeat(&f);
	fake_output(&f, 9, "lo");
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);

	e = next_event(ev);
	cr_expect_eq(e->seq, 4);
	cr_expect_str_eq(e->type, "run.output");
	cr_expect_str_eq(e->stream_id, FAKE_STREAM);
	cr_expect_str_eq(e->run_id, "run_1");
	cr_expect_str_eq(e->session_id, "ses_1");
	cr_expect_str_eq(e->time, "2026-11-21T06:40:00.123Z");
	cr_expect_str_eq(delta_of(e, d, sizeof d), "Hel");
	td_event_free(e);
	e = next_event(ev);
	cr_expect_eq(e->seq, 9, "heartbeats must not be yielded");
	cr_expect_str_eq(delta_of(e, d, sizeof d), "lo");
	td_event_free(e);
	cr_expect_eq(td_events_next(ev, 300, &e, &err), TD_TIMEOUT);
	cr_expect_null(e);
	last = td_events_last_id(ev);
	cr_expect_str_eq(last, FAKE_STREAM ":9");
	free(last);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

/*
 * Events share memory blocks with their neighbours: each stays whole until it
 * is freed, in any order, also after its stream and its client are gone, and
 * a large one (past a block's share) as well.
 */
Test(events_fake, events_outlive_their_stream_and_free_in_any_order)
{
	enum { N = 300 };
	static char big[40000];
	struct td_event *kept[N + 1];
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	char d[64], want[64];

	memset(big, 'x', sizeof big - 1);
	fake_init(&f);
	fake_hello(&f, 0);
	for (long long seq = 1; seq <= N; seq++) {
		snprintf(want, sizeof want, "delta %lld", seq);
		fake_output(&f, seq, want);
	}
	fake_output(&f, N + 1, big);
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	for (int i = 0; i <= N; i++)
		kept[i] = next_event(ev);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);

	/* The even ones first, then the odd ones backwards. */
	for (int k = 0; k < N; k++) {
		int i = k < N / 2 ? 2 * k : N - 1 - 2 * (k - N / 2);

		snprintf(want, sizeof want, "delta %d", i + 1);
		cr_expect_eq(kept[i]->seq, i + 1);
		cr_expect_str_eq(kept[i]->run_id, "run_1");
		cr_expect_str_eq(delta_of(kept[i], d, sizeof d), want);
		td_event_free(kept[i]);
	}
	cr_expect_eq(strlen(kept[N]->data_json), sizeof big - 1 + strlen("{\"delta\":\"\"}"));
	td_event_free(kept[N]);
	td_event_free(NULL);
}

/* An event written with other spacing, order or members reads as the service's layout does. */
Test(events_fake, any_layout_of_an_event_reads_the_same)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e[3];
	char d[64];

	fake_init(&f);
	fake_hello(&f, 3);
	fake_output(&f, 4, "caf\\u00e9");
	buf_printf(&f.body, "id: %s:5\nevent: run.output\ndata: { \"data\" : {\"delta\":"
	    "\"caf\\u00e9\"}, \"runId\":\"run_1\",\"sessionId\":\"ses_1\", \"extra\":[1],"
	    "\"projectId\":\"prj_1\",\"time\":\"2026-11-21T06:40:00.123Z\",\"type\":"
	    "\"run.output\",\"seq\":5 }\n\n", FAKE_STREAM);
	/* The layout, then a member more: the first of a duplicate counts. */
	buf_printf(&f.body, "id: %s:6\nevent: run.output\ndata: {\"seq\":6,"
	    "\"type\":\"run.output\",\"time\":\"2026-11-21T06:40:00.123Z\","
	    "\"projectId\":\"prj_1\",\"sessionId\":\"ses_1\",\"runId\":\"run_1\","
	    "\"data\":{\"delta\":\"caf\\u00e9\"},\"runId\":\"run_2\"}\n\n", FAKE_STREAM);
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	for (int i = 0; i < 3; i++) {
		e[i] = next_event(ev);
		cr_expect_eq(e[i]->seq, 4 + i);
		cr_expect_str_eq(e[i]->type, "run.output");
		cr_expect_str_eq(e[i]->time, "2026-11-21T06:40:00.123Z");
		cr_expect_str_eq(e[i]->project_id, "prj_1");
		cr_expect_str_eq(e[i]->session_id, "ses_1");
		cr_expect_str_eq(e[i]->run_id, "run_1");
		cr_expect_str_eq(delta_of(e[i], d, sizeof d), "caf\xc3\xa9");
		td_event_free(e[i]);
	}
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, frames_split_byte_by_byte)
{
	static const char *deltas[] = { "caf\\u00e9 ", "na\xc3\xafve\\n", "\xe2\x9c\x93 done" };
	static const char *want[] = { "caf\xc3\xa9 ", "na\xc3\xafve\n", "\xe2\x9c\x93 done" };
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	char d[64];

	fake_init(&f);
	fake_hello(&f, 0);
	for (int i = 0; i < 3; i++) {
		fake_heartbeat(&f);
		fake_output(&f, i + 1, deltas[i]);
	}
	f.chunk = 1;
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	for (int i = 0; i < 3; i++) {
		e = next_event(ev);
		cr_expect_eq(e->seq, i + 1);
		cr_expect_str_eq(delta_of(e, d, sizeof d), want[i]);
		td_event_free(e);
	}
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

/*
 * taskdeckd ends a stream by closing it, and the worker then reads the socket
 * itself; an answer in chunks (a proxy's, an older service's) stays with
 * libcurl, which takes the chunks apart: frames cut across chunks arrive whole.
 */
Test(events_fake, a_chunked_answer_arrives_whole)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	char d[64], want[32];

	fake_init(&f);
	fake_hello(&f, 0);
	for (int i = 1; i <= 50; i++) {
		snprintf(want, sizeof want, "delta %d", i);
		fake_output(&f, i, want);
	}
	f.chunked = true;
	f.chunk = 7;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	for (int i = 1; i <= 50; i++) {
		e = next_event(ev);
		snprintf(want, sizeof want, "delta %d", i);
		cr_expect_eq(e->seq, i);
		cr_expect_str_eq(delta_of(e, d, sizeof d), want);
		td_event_free(e);
	}
	cr_expect_eq(td_events_next(ev, 5000, &e, &err), TD_CONNECTION_FAILED,
	    "the last chunk ends the stream: %s", err.message);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

/* One malformed frame after a good event: the good one, then the error, for good. */
static void
expect_invalid_after_one(const char *bad, size_t bad_len)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;

	fake_init(&f);
	fake_hello(&f, 0);
	fake_output(&f, 1, "ok");
	buf_append(&f.body, bad, bad_len);
	fake_output(&f, 50, "after");
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	e = next_event(ev);
	cr_expect_eq(e->seq, 1);
	td_event_free(e);
	cr_expect_eq(td_events_next(ev, 5000, &e, &err), TD_EVENT_STREAM_INVALID_MESSAGE,
	    "frame %.80s: %s", bad, err.message);
	cr_expect_null(e);
	cr_expect_eq(td_events_next(ev, 0, &e, &err), TD_EVENT_STREAM_INVALID_MESSAGE,
	    "the failure must stick");
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, malformed_frames_stop_the_stream, .timeout = 60)
{
	static const char *bad[] = {
		"event: run.output\ndata: {\"seq\":2,\"type\":\"run.output\"\n\n",
		"id: " FAKE_STREAM ":2\ndata: {\"type\":\"run.output\"}\n\n",
		"id: " FAKE_STREAM ":2\ndata: {\"seq\":2}\n\n",
		"id: " FAKE_STREAM ":3\ndata: {\"seq\":2,\"type\":\"run.output\"}\n\n",
		"id: otherstream:2\ndata: {\"seq\":2,\"type\":\"run.output\"}\n\n",
		"id: " FAKE_STREAM ":1\ndata: {\"seq\":1,\"type\":\"run.output\"}\n\n",
		"id: " FAKE_STREAM ":2\ndata: [1,2]\n\n",
		/* The service's own layout with a bad value in it. */
		"id: " FAKE_STREAM ":2\ndata: {\"seq\":2,\"type\":\"run.output\",\"time\":\"t\","
		    "\"projectId\":\"prj_1\",\"sessionId\":null,\"runId\":null,"
		    "\"data\":{\"delta\":\"a\x01\"}}\n\n",
		"id: " FAKE_STREAM ":2\ndata: {\"seq\":2,\"type\":\"run.output\",\"time\":\"t\","
		    "\"projectId\":\"prj_\xc3\",\"sessionId\":null,\"runId\":null,\"data\":{}}\n\n",
		"id: " FAKE_STREAM ":2\ndata: {\"seq\":2,\"type\":\"run.output\",\"time\":\"t\","
		    "\"projectId\":null,\"sessionId\":null,\"runId\":null,\"data\":{\"a\":}}\n\n",
	};
	struct buf big;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_invalid_after_one(bad[i], strlen(bad[i]));
	/* A frame over 1 MiB. */
	buf_init(&big, 0);
	buf_printf(&big, "id: %s:2\ndata: {\"seq\":2,\"type\":\"run.output\","
	    "\"data\":{\"delta\":\"", FAKE_STREAM);
	for (int i = 0; i < (TD_EVENTS_MAX_FRAME / 1000) + 8; i++)
		buf_printf(&big, "%01000d", 0);
	buf_appends(&big, "\"}}\n\n");
	expect_invalid_after_one(big.data, big.len);
	buf_free(&big);
}

Test(events_fake, a_stalled_consumer_overflows_after_the_backlog, .timeout = 60)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	struct pollfd pfd;
	long long want = 1;
	int got = 0;
	enum td_code rc;

	fake_init(&f);
	fake_hello(&f, 0);
	for (int i = 1; i <= 2000; i++)
		fake_output(&f, i, "x");
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	pfd = (struct pollfd){ .fd = td_events_fd(ev), .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "the fd must become readable");
	usleep(500000);		/* the 2,000 events arrive meanwhile */
	while ((rc = td_events_next(ev, 5000, &e, &err)) == TD_OK) {
		cr_expect_eq(e->seq, want++);
		got++;
		td_event_free(e);
	}
	cr_expect_eq(rc, TD_EVENT_STREAM_OVERFLOW, "%s", err.message);
	cr_expect_eq(got, TD_EVENTS_MAX_BACKLOG,
	    "the events queued before the overflow are still yielded");
	cr_expect_eq(poll(&pfd, 1, 0), 1, "a pending failure keeps the fd readable");
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, a_silent_stream_hits_the_idle_timeout)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	int64_t t0, ms;

	fake_init(&f);
	fake_hello(&f, 0);
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 500);
	t0 = clock_mono_ms();
	cr_expect_eq(td_events_next(ev, 10000, &e, &err), TD_EVENT_STREAM_IDLE_TIMEOUT,
	    "%s", err.message);
	ms = clock_mono_ms() - t0;
	/* The idle timeout (500 ms), not the call's own deadline (10 s), ended it. */
	cr_expect(ms >= 300 && ms < 8000, "the idle timeout fired after %lld ms",
	    (long long)ms);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, heartbeats_keep_an_idle_stream_alive)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;

	fake_init(&f);
	fake_hello(&f, 0);
	for (int i = 0; i < 8; i++)
		fake_heartbeat(&f);
	fake_output(&f, 1, "late");
	/* 250 ms between frames: 2.25 s in all, over twice the idle timeout. */
	f.pause_ms = 250;
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 1000);
	cr_expect_eq(td_events_next(ev, 10000, &e, &err), TD_OK, "%s", err.message);
	td_event_free(e);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, the_end_of_the_connection_fails_after_the_queue)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;

	fake_init(&f);
	fake_hello(&f, 0);
	fake_output(&f, 1, "a");
	fake_output(&f, 2, "b");
	fake_start(&f);
	c = fake_client(&f);
	ev = fake_open(c, 0);
	usleep(200000);
	for (int i = 1; i <= 2; i++) {
		e = next_event(ev);
		cr_expect_eq(e->seq, i);
		td_event_free(e);
	}
	cr_expect_eq(td_events_next(ev, 5000, &e, &err), TD_CONNECTION_FAILED, "%s",
	    err.message);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, resume_sends_last_event_id)
{
	struct td_events_options o = { .last_event_id = FAKE_STREAM ":7" };
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev, *again;
	struct td_event *e;
	struct td_error err;
	char *last;

	fake_init(&f);
	fake_hello(&f, 12);
	fake_output(&f, 8, "replayed");
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	cr_assert_eq(td_events_open(c, NULL, &o, &ev, &err), TD_OK);
	last = td_events_last_id(ev);
	cr_expect_str_eq(last, FAKE_STREAM ":7", "before any event: where it resumes");
	free(last);
	e = next_event(ev);
	cr_expect_eq(e->seq, 8, "a replayed event below headSeq is in order");
	td_event_free(e);
	cr_expect_str_eq(f.last_event_id, FAKE_STREAM ":7");
	td_events_close(ev);
	fake_stop(&f);

	/* reopen carries the position on. */
	fake_init(&f);
	fake_hello(&f, 12);
	f.hold = true;
	fake_start(&f);
	td_client_free(c);
	c = fake_client(&f);
	o.last_event_id = FAKE_STREAM ":8";
	cr_assert_eq(td_events_open(c, NULL, &o, &ev, &err), TD_OK);
	cr_assert_eq(td_events_reopen(c, ev, &again, &err), TD_OK);
	td_events_close(ev);
	cr_expect_eq(td_events_ready(again, 5000, &err), TD_OK, "%s", err.message);
	cr_expect_str_eq(f.last_event_id, FAKE_STREAM ":8");
	td_events_close(again);
	td_client_free(c);
	fake_stop(&f);
}

/* A hello whose head is behind the resume point: the service cannot replay what
 * the client holds, and the client says so with a resync (issue 17, finding 7). */
Test(events_fake, a_head_behind_the_resume_point_is_a_resync)
{
	struct td_events_options o = { .last_event_id = FAKE_STREAM ":20" };
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;

	fake_init(&f);
	fake_hello(&f, 12);
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	cr_assert_eq(td_events_open(c, NULL, &o, &ev, &err), TD_OK);
	e = next_event(ev);
	cr_expect_str_eq(e->type, "stream.resync-required");
	cr_expect_eq(e->seq, 12, "the resync carries the service's head");
	cr_expect_not_null(strstr(e->data_json, "stream-changed"), "%s", e->data_json);
	td_event_free(e);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

struct blocked_next {
	struct td_events *ev;
	enum td_code rc;
	int64_t returned_ms;
};

static void *
blocked_next_thread(void *arg)
{
	struct blocked_next *b = arg;
	struct td_event *e;
	struct td_error err;

	b->rc = td_events_next(b->ev, -1, &e, &err);
	b->returned_ms = clock_mono_ms();
	td_event_free(e);
	return NULL;
}

Test(events_fake, close_from_another_thread_is_prompt)
{
	struct blocked_next b = { .rc = TD_OK };
	struct fake_sse f;
	struct td_client *c;
	pthread_t t;
	int64_t t0, took;

	fake_init(&f);
	fake_hello(&f, 0);
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	b.ev = fake_open(c, 60000);
	cr_assert(pthread_create(&t, NULL, blocked_next_thread, &b) == 0);
	usleep(300000);
	t0 = clock_mono_ms();
	td_events_close(b.ev);
	took = clock_mono_ms() - t0;
	pthread_join(t, NULL);
	cr_expect_eq(b.rc, TD_CANCELLED);
	/* Far below the 60 s the blocked next would wait: a close that ended it. */
	cr_expect(took < 30000, "close took %lld ms", (long long)took);
	cr_expect(b.returned_ms - t0 < 30000);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, ready_fails_when_the_connection_is_refused)
{
	struct td_connect_options o = { .token = FAKE_TOKEN };
	char url[64];
	struct td_client *c;
	struct td_events *ev;
	struct td_error err;
	int port, fd = fake_listen(&port);

	close(fd);	/* bound, never listened: the port refuses */
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	o.base_url = url;
	cr_assert_eq(td_connect(&c, &o, &err), TD_OK);
	cr_assert_eq(td_events_open(c, NULL, NULL, &ev, &err), TD_OK);
	/* Refused at once, not waited out: a wait would end in the deadline's own code. */
	cr_expect_eq(td_events_ready(ev, 60000, &err), TD_CONNECTION_FAILED, "%s",
	    err.message);
	td_events_close(ev);
	td_client_free(c);
}

Test(events_fake, a_service_error_is_reported_by_ready)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_error err;

	fake_init(&f);
	f.head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\n\r\n";
	buf_appends(&f.body, "{\"error\":{\"code\":\"service_unavailable\","
	    "\"message\":\"too many subscribers\"}}");
	fake_start(&f);
	c = fake_client(&f);
	cr_assert_eq(td_events_open(c, NULL, NULL, &ev, &err), TD_OK);
	cr_expect_eq(td_events_ready(ev, 5000, &err), TD_UNAVAILABLE);
	cr_expect_eq(err.http_status, 503);
	cr_expect_str_eq(err.message, "too many subscribers");
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

Test(events_fake, ready_times_out_on_a_silent_server)
{
	struct fake_sse f;
	struct td_client *c;
	struct td_events *ev;
	struct td_error err;

	fake_init(&f);
	f.head = "";
	f.hold = true;
	fake_start(&f);
	c = fake_client(&f);
	cr_assert_eq(td_events_open(c, NULL, NULL, &ev, &err), TD_OK);
	cr_expect_eq(td_events_ready(ev, 300, &err), TD_TIMEOUT);
	td_events_close(ev);
	td_client_free(c);
	fake_stop(&f);
}

/* --- against a real taskdeckd --------------------------------------------- */

TestSuite(events_svc, .init = svc_setup_env, .fini = svc_teardown, .timeout = 120);

static struct td_client *
svc_client(void)
{
	struct td_client *c;
	struct td_error err;

	cr_assert_eq(td_connect(&c, NULL, &err), TD_OK, "%s", err.message);
	return c;
}

/* A new project's id; free() it. */
static char *
svc_project(struct td_client *c, const char *name)
{
	struct td_new_project np = { .name = name };
	struct td_project *p;
	struct td_error err;
	char *id;

	cr_assert_eq(td_create_project(c, &np, NULL, &p, &err), TD_OK, "%s", err.message);
	id = xstrdup(p->id);
	td_project_free(p);
	return id;
}

/* Starts a replay run of transcript model; its id, free() it. */
static char *
svc_start_replay(struct td_client *c, const char *project, const char *model)
{
	struct td_run_request rq = {
		.project = project, .prompt = "Say hello.", .provider = "replay",
		.model = model,
	};
	struct td_run *r;
	struct td_error err;
	char *id;

	cr_assert_eq(td_start_run(c, &rq, NULL, &r, &err), TD_OK, "%s", err.message);
	id = xstrdup(r->id);
	td_run_free(r);
	return id;
}

static struct td_events *
svc_open(struct td_client *c, const char *project, const char *last_id, long idle_ms)
{
	struct td_event_filter f = { .project_id = project };
	struct td_events_options o = { .idle_timeout_ms = idle_ms, .last_event_id = last_id };
	struct td_events *ev;
	struct td_error err;

	cr_assert_eq(td_events_open(c, &f, &o, &ev, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_events_ready(ev, 10000, &err), TD_OK, "%s: %s", err.code_name,
	    err.message);
	return ev;
}

/* What one subscriber saw of a run. */
struct seen {
	long long seqs[4096];
	size_t count;
	struct buf output;
	char *finished;		/* run.finished's status */
};

/* Takes events until run_id's run.finished (or max events); asserts order. */
static void
collect_run(struct td_events *ev, const char *run_id, struct seen *s, size_t max)
{
	struct td_event *e;
	struct td_error err;
	char d[4096];

	while (s->finished == NULL && s->count < max) {
		cr_assert_eq(td_events_next(ev, 20000, &e, &err), TD_OK, "%s: %s",
		    err.code_name, err.message);
		cr_assert(s->count == 0 || e->seq > s->seqs[s->count - 1],
		    "seq %lld after %lld", e->seq, s->seqs[s->count - 1]);
		cr_assert_str_neq(e->type, "stream.resync-required");
		s->seqs[s->count++] = e->seq;
		if (e->run_id != NULL && strcmp(e->run_id, run_id) == 0) {
			if (strcmp(e->type, "run.output") == 0)
				buf_appends(&s->output, delta_of(e, d, sizeof d));
			if (strcmp(e->type, "run.finished") == 0) {
				cJSON *data = json_parse(e->data_json, strlen(e->data_json));

				s->finished = xstrdup(json_get_string(data, "status"));
				cJSON_Delete(data);
			}
		}
		td_event_free(e);
	}
}

static void
seen_init(struct seen *s)
{
	memset(s, 0, sizeof *s);
	buf_init(&s->output, 0);
}

static void
seen_free(struct seen *s)
{
	buf_free(&s->output);
	free(s->finished);
}

Test(events_svc, a_quick_run_is_seen_in_order)
{
	struct td_client *c = svc_client();
	char *project = svc_project(c, "Events");
	struct td_events *ev = svc_open(c, project, NULL, 0);
	char *run = svc_start_replay(c, project, "quick");
	struct seen s;

	seen_init(&s);
	collect_run(ev, run, &s, 4096);
	cr_expect_str_eq(s.finished, "completed");
	cr_expect_str_eq(s.output.data, "Hello from taskdeck. This is the quick replay answer.");
	td_events_close(ev);
	seen_free(&s);
	free(run);
	free(project);
	td_client_free(c);
}

Test(events_svc, resuming_after_close_has_no_gap_and_no_duplicate)
{
	struct td_client *c = svc_client();
	char *project = svc_project(c, "Resume");
	struct td_events *all = svc_open(c, project, NULL, 0);
	struct td_events *part = svc_open(c, project, NULL, 0), *rest;
	char *run = svc_start_replay(c, project, "steady"), *last;
	struct seen ref, first, second;

	seen_init(&ref);
	seen_init(&first);
	seen_init(&second);
	collect_run(part, run, &first, 4);
	cr_assert_eq(first.count, 4);
	last = td_events_last_id(part);
	td_events_close(part);
	usleep(500000);		/* more events pass meanwhile */
	rest = svc_open(c, project, last, 0);
	collect_run(rest, run, &second, 4096);
	collect_run(all, run, &ref, 4096);
	cr_assert_eq(first.count + second.count, ref.count, "%zu + %zu events, not %zu",
	    first.count, second.count, ref.count);
	for (size_t i = 0; i < ref.count; i++) {
		long long got = i < first.count ? first.seqs[i] : second.seqs[i - first.count];

		cr_assert_eq(got, ref.seqs[i], "event %zu", i);
	}
	cr_expect_str_eq(second.finished, "completed");
	td_events_close(rest);
	td_events_close(all);
	seen_free(&ref);
	seen_free(&first);
	seen_free(&second);
	free(last);
	free(run);
	free(project);
	td_client_free(c);
}

Test(events_svc, a_frozen_service_hits_the_idle_timeout)
{
	struct td_client *c = svc_client();
	char *project = svc_project(c, "Frozen");
	struct td_events *ev = svc_open(c, project, NULL, 1000);
	char *run = svc_start_replay(c, project, "steady");
	struct td_event *e;
	struct td_error err;
	enum td_code rc;
	bool output = false;

	/* Live output every 200 ms keeps the stream busy... */
	while (!output) {
		cr_assert_eq(td_events_next(ev, 10000, &e, &err), TD_OK, "%s", err.message);
		output = strcmp(e->type, "run.output") == 0;
		td_event_free(e);
	}
	/* ...until the service stops. */
	cr_assert_eq(kill(svc.pid, SIGSTOP), 0);
	/* The idle timeout ends the wait, not the call's own deadline (another code). */
	while ((rc = td_events_next(ev, 60000, &e, &err)) == TD_OK)
		td_event_free(e);
	kill(svc.pid, SIGCONT);
	cr_expect_eq(rc, TD_EVENT_STREAM_IDLE_TIMEOUT, "%s: %s", err.code_name, err.message);
	td_events_close(ev);
	cJSON_Delete(run_wait_final(&svc, run, 30000));
	free(run);
	free(project);
	td_client_free(c);
}

/* Runs the CLI with args in the background, stdout into out_path; its pid. */
static pid_t
cli_spawn(const char *args, const char *out_path)
{
	char *cmd = xasprintf("exec %s %s >%s 2>%s.err", harness_bin("taskdeck"), args,
	    out_path, out_path);
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	return pid;
}

static char *
slurp_file(const char *path)
{
	FILE *fp = fopen(path, "r");
	struct buf b;
	char chunk[4096];
	size_t n;

	buf_init(&b, 0);
	buf_appends(&b, "");
	if (fp == NULL)
		return buf_steal(&b);
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		buf_append(&b, chunk, n);
	fclose(fp);
	return buf_steal(&b);
}

Test(events_svc, cli_events_prints_the_runs_events_as_json)
{
	struct td_client *c = svc_client();
	char *project = svc_project(c, "CLI events");
	char *run = svc_start_replay(c, project, "steady");
	char *args = xasprintf("events --json --run %s", run);
	char *out_path = xasprintf("%s/events.out", svc.home), *text, *line, *save;
	int status, lines = 0, outputs = 0, finished = 0;
	pid_t pid = cli_spawn(args, out_path);
	cJSON *final = run_wait_final(&svc, run, 30000);

	cr_assert_not_null(final);
	usleep(500000);
	kill(pid, SIGINT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	text = slurp_file(out_path);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		cJSON *doc = json_parse(line, strlen(line));
		const char *type = json_get_string(doc, "type");

		cr_assert_not_null(type, "not an event: %s", line);
		cr_expect_str_eq(json_get_string(doc, "runId"), run);
		outputs += strcmp(type, "run.output") == 0;
		finished += strcmp(type, "run.finished") == 0;
		lines++;
		cJSON_Delete(doc);
	}
	cr_expect(outputs >= 10, "%d run.output lines of %d", outputs, lines);
	cr_expect_eq(finished, 1);
	cJSON_Delete(final);
	free(text);
	free(out_path);
	free(args);
	free(run);
	free(project);
	td_client_free(c);
}

Test(events_svc, run_follow_prints_the_output_live)
{
	struct td_client *c = svc_client();
	char *project = svc_project(c, "Follow");
	char *out;
	int rc;

	rc = run_capture(&svc, &out, "%s run --follow --project %s --provider replay "
	    "--model steady 'Tick.' 2>/dev/null", harness_bin("taskdeck"), project);
	cr_expect_eq(rc, 0, "exit %d, output: %s", rc, out);
	cr_expect(strncmp(out, "Starting; progress.md records the plan.\n", 40) == 0,
	    "output: %s", out);
	cr_expect_not_null(strstr(out, "tick 1\n"), "output: %s", out);
	cr_expect_not_null(strstr(out, "tick 30"), "output: %s", out);
	free(out);
	free(project);
	td_client_free(c);
}

/* Waits up to ms for path to contain needle. */
static bool
file_waits_for(const char *path, const char *needle, int ms)
{
	for (int waited = 0; waited <= ms; waited += 50) {
		char *text = slurp_file(path);
		bool found = strstr(text, needle) != NULL;

		free(text);
		if (found)
			return true;
		usleep(50000);
	}
	return false;
}

Test(events_svc, cli_events_reconnects_after_a_restart)
{
	struct td_client *c = svc_client();
	char *out_path = xasprintf("%s/events-restart.out", svc.home);
	char *err_path = xasprintf("%s.err", out_path);
	pid_t pid = cli_spawn("events --json", out_path);
	char *before, *after, *out, *err;
	bool found;
	int status;

	usleep(500000);		/* subscribed */
	before = svc_project(c, "Before restart");
	cr_assert(file_waits_for(out_path, before, 5000), "no event of the first project");
	td_client_free(c);
	svc_stop(&svc);
	svc_restart(&svc);
	/* Events between the restart and the reconnection are lost: the resync says so. */
	cr_expect(file_waits_for(err_path, "reconnected", 20000), "no reconnection");
	c = svc_client();
	after = svc_project(c, "After restart");
	found = file_waits_for(out_path, after, 20000);
	err = slurp_file(err_path);
	cr_expect(found, "no event after the restart; stderr: %s", err);
	free(err);
	kill(pid, SIGINT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	out = slurp_file(out_path);
	err = slurp_file(err_path);
	cr_expect_not_null(strstr(out, "\"stream.resync-required\""), "stdout: %s", out);
	cr_expect_not_null(strstr(out, "stream-changed"), "stdout: %s", out);
	cr_expect_not_null(strstr(err, "event stream lost"), "stderr: %s", err);
	cr_expect_not_null(strstr(err, "reconnected"), "stderr: %s", err);
	free(out);
	free(err);
	free(before);
	free(after);
	free(err_path);
	free(out_path);
	td_client_free(c);
}
