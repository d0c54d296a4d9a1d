/*
 * events-bench: subscribers to the event stream of a fresh project, replay
 * runs started in it, and what arrived at each subscriber's td_events_next:
 * events per second and the delay from the service's "time" stamp (set when
 * it emitted the event) to the client's clock at receipt.  Prints key=value
 * lines for bench/events/run.  Finds the service like the CLI does.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "taskdeck.h"
#include "timeutil.h"
#include "xalloc.h"

struct sub {
	struct td_events *ev;
	int runs;		/* run.finished events still to wait for */
	long long events, outputs;
	double *lat_ms;		/* one per event */
	size_t lat_len, lat_cap;
	double first_mono, last_mono;	/* receipt, in ms */
	int64_t first_time, last_time;	/* the service's stamps, in ms */
	enum td_code failed;
	char message[640];
};

/* The wall clock in milliseconds, with the sub-millisecond part. */
static double
bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static double
bench_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* Records one event of s; false when s is done (all runs finished or dropped). */
static bool
bench_take(struct sub *s, struct td_event *e)
{
	double now = bench_now_ms();
	int64_t stamp;

	s->last_mono = bench_mono_ms();
	if (s->events++ == 0)
		s->first_mono = s->last_mono;
	if (e->time != NULL && td_time_parse(e->time, &stamp)) {
		if (s->lat_len == s->lat_cap) {
			s->lat_cap = s->lat_cap ? s->lat_cap * 2 : 16384;
			s->lat_ms = xrealloc(s->lat_ms, s->lat_cap * sizeof *s->lat_ms);
		}
		s->lat_ms[s->lat_len++] = now - (double)stamp;
		if (s->first_time == 0)
			s->first_time = stamp;
		s->last_time = stamp;
	}
	s->outputs += strcmp(e->type, "run.output") == 0;
	if (strcmp(e->type, "stream.resync-required") == 0) {
		s->failed = TD_EVENT_STREAM_OVERFLOW;
		snprintf(s->message, sizeof s->message, "the service dropped "
		    "this subscriber: stream.resync-required %.200s", e->data_json);
		s->runs = 0;
	}
	s->runs -= strcmp(e->type, "run.finished") == 0;
	td_event_free(e);
	return s->runs > 0;
}

/*
 * One consumer for every subscriber, as a dashboard would do it: poll() on
 * each stream's descriptor, then drain the ready ones without blocking.
 */
static void
bench_consume_all(struct sub *s, int n)
{
	struct pollfd *pfd = xcalloc((size_t)n, sizeof *pfd);
	int open = n;
	struct td_event *e;
	struct td_error err;

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = td_events_fd(s[i].ev), .events = POLLIN };
	while (open > 0) {
		if (poll(pfd, (nfds_t)n, 120000) <= 0)
			break;
		for (int i = 0; i < n; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & POLLIN))
				continue;
			for (;;) {
				enum td_code rc = td_events_next(s[i].ev, 0, &e, &err);

				if (rc == TD_TIMEOUT)
					break;
				if (rc != TD_OK) {
					s[i].failed = err.code;
					snprintf(s[i].message, sizeof s[i].message, "%s: %s",
					    err.code_name, err.message);
				}
				if (rc != TD_OK || !bench_take(&s[i], e)) {
					pfd[i].fd = -1;
					open--;
					break;
				}
			}
		}
	}
	free(pfd);
}

static int
bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
bench_pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return n == 0 ? 0 : v[i < n ? i : n - 1];
}

/* The fake service of `events-bench fake N`: one connection, N events, then open. */
struct fake {
	int lfd;
	struct buf body;
};

static void *
bench_fake_serve(void *arg)
{
	struct fake *f = arg;
	char req[8192];
	size_t off = 0;
	ssize_t n;
	int fd = accept(f->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	n = recv(fd, req, sizeof req, 0);
	(void)n;
	while (off < f->body.len && (n = send(fd, f->body.data + off,
	    f->body.len - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)n;
	/* Open until the client goes. */
	while (recv(fd, req, sizeof req, 0) > 0)
		;
	close(fd);
	return NULL;
}

/*
 * The client core alone: N run.output events as taskdeckd renders them,
 * from a local socket, taken with td_events_next.
 */
static int
bench_fake(long count)
{
	static const char stream[] = "5f0c2bd9a4e14c5e8d0e7f6a1b2c3de1";
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct td_connect_options o = {
		.token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	};
	socklen_t len = sizeof sa;
	struct fake f = { .lfd = socket(AF_INET, SOCK_STREAM, 0) };
	struct td_client *c;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	pthread_t t;
	char url[64];
	double t0, t1;
	long got = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (f.lfd < 0 || bind(f.lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    getsockname(f.lfd, (struct sockaddr *)&sa, &len) != 0 || listen(f.lfd, 1) != 0)
		return 1;
	buf_init(&f.body, 0);
	buf_printf(&f.body, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	    "Connection: close\r\n\r\nid: %s:0\nevent: stream.hello\ndata: "
	    "{\"type\":\"stream.hello\",\"streamId\":\"%s\",\"headSeq\":0,"
	    "\"heartbeatMs\":10000}\n\n", stream, stream);
	for (long i = 1; i <= count; i++) {
		buf_printf(&f.body, "id: %s:%ld\nevent: run.output\ndata: {\"seq\":%ld,"
		    "\"type\":\"run.output\",\"time\":\"2026-11-21T06:40:00.123Z\","
		    "\"projectId\":\"prj_01a1fce40696000141ad6beb\",\"sessionId\":"
		    "\"ses_01a1fce40e560000cd75abb6\",\"runId\":\"run_01a1fce40e55000193d40dd6\","
		    "\"data\":{\"delta\":\"d%05ld, \"}}\n\n", stream, i, i, i % 100000);
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(sa.sin_port));
	o.base_url = url;
	pthread_create(&t, NULL, bench_fake_serve, &f);
	if (td_connect(&c, &o, &err) != TD_OK || td_events_open(c, NULL, NULL, &ev, &err) != TD_OK)
		return 1;
	t0 = bench_mono_ms();
	while (got < count && td_events_next(ev, 10000, &e, &err) == TD_OK) {
		got++;
		td_event_free(e);
	}
	t1 = bench_mono_ms();
	if (got < count)
		fprintf(stderr, "events-bench: fake: %s: %s\n", err.code_name, err.message);
	printf("fake_events=%ld\nfake_bytes=%zu\nfake_span_ms=%.1f\nfake_events_per_s=%.0f\n",
	    got, f.body.len, t1 - t0, (double)got * 1000.0 / (t1 - t0));
	td_events_close(ev);
	td_client_free(c);
	pthread_join(t, NULL);
	close(f.lfd);
	buf_free(&f.body);
	return got == count ? 0 : 3;
}

int
main(int argc, char **argv)
{
	int subs = argc > 1 ? atoi(argv[1]) : 1, runs = argc > 2 ? atoi(argv[2]) : 1;
	const char *model = argc > 3 ? argv[3] : "burst";
	struct td_new_project np = { .name = "bench-events" };
	struct td_events_options eo = { .idle_timeout_ms = 120000 };
	struct td_event_filter f = { 0 };
	struct td_client *c;
	struct td_project *p;
	struct td_error err;
	struct sub *s;
	double *all = NULL, span, agg_span = 0, t0 = 0, t1 = 0;
	size_t all_len = 0;
	long long total = 0;
	int failed = 0;

	if (argc > 1 && strcmp(argv[1], "fake") == 0)
		return bench_fake(argc > 2 ? atol(argv[2]) : 1000000);
	if (subs < 1 || subs > 256 || runs < 1 || runs > 64) {
		fprintf(stderr, "usage: events-bench [SUBSCRIBERS [RUNS [MODEL]]] | "
		    "events-bench fake [EVENTS]\n");
		return 2;
	}
	if (td_connect(&c, NULL, &err) != TD_OK ||
	    td_create_project(c, &np, NULL, &p, &err) != TD_OK) {
		fprintf(stderr, "events-bench: %s\n", err.message);
		return 1;
	}
	f.project_id = p->id;
	s = xcalloc((size_t)subs, sizeof *s);
	for (int i = 0; i < subs; i++) {
		s[i].runs = runs;
		if (td_events_open(c, &f, &eo, &s[i].ev, &err) != TD_OK ||
		    td_events_ready(s[i].ev, 10000, &err) != TD_OK) {
			fprintf(stderr, "events-bench: subscriber %d: %s\n", i, err.message);
			return 1;
		}
	}
	for (int i = 0; i < runs; i++) {
		struct td_run_request rq = {
			.project = p->id, .prompt = "burst", .provider = "replay",
			.model = model,
		};
		struct td_run *r;

		if (td_start_run(c, &rq, NULL, &r, &err) != TD_OK) {
			fprintf(stderr, "events-bench: start: %s\n", err.message);
			return 1;
		}
		td_run_free(r);
	}
	bench_consume_all(s, subs);
	for (int i = 0; i < subs; i++) {
		td_events_close(s[i].ev);
		if (s[i].failed != TD_OK) {
			failed++;
			fprintf(stderr, "events-bench: subscriber %d: %s\n", i, s[i].message);
		}
		total += s[i].events;
		if (i == 0 || s[i].first_mono < t0)
			t0 = s[i].first_mono;
		if (i == 0 || s[i].last_mono > t1)
			t1 = s[i].last_mono;
		all = xrealloc(all, (all_len + s[i].lat_len + 1) * sizeof *all);
		memcpy(all + all_len, s[i].lat_ms, s[i].lat_len * sizeof *all);
		all_len += s[i].lat_len;
	}
	agg_span = t1 - t0;
	qsort(all, all_len, sizeof *all, bench_cmp);
	span = s[0].last_mono - s[0].first_mono;
	printf("subscribers=%d\nruns=%d\nmodel=%s\n", subs, runs, model);
	printf("events_per_subscriber=%lld\noutputs_per_subscriber=%lld\n",
	    s[0].events, s[0].outputs);
	printf("client_span_ms=%.1f\nclient_events_per_s=%.0f\n", span,
	    span > 0 ? (double)s[0].events * 1000.0 / span : 0);
	printf("service_span_ms=%lld\nservice_events_per_s=%.0f\n",
	    (long long)(s[0].last_time - s[0].first_time),
	    s[0].last_time > s[0].first_time ? (double)s[0].events * 1000.0 /
	    (double)(s[0].last_time - s[0].first_time) : 0);
	printf("all_subscribers_events=%lld\nall_subscribers_events_per_s=%.0f\n", total,
	    agg_span > 0 ? (double)total * 1000.0 / agg_span : 0);
	printf("latency_p50_ms=%.2f\nlatency_p99_ms=%.2f\nlatency_max_ms=%.2f\n",
	    bench_pct(all, all_len, 0.50), bench_pct(all, all_len, 0.99),
	    all_len > 0 ? all[all_len - 1] : 0);
	printf("failed_subscribers=%d\n", failed);
	for (int i = 0; i < subs; i++)
		free(s[i].lat_ms);
	free(s);
	free(all);
	td_project_free(p);
	td_client_free(c);
	return failed > 0 ? 3 : 0;
}
