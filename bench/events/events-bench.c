/*
 * events-bench: subscribers to the event stream of a fresh project, replay
 * runs started in it, and what arrived at each subscriber's td_events_next:
 * events per second and the delay from the service's "time" stamp (set when
 * it emitted the event) to the client's clock at receipt.  Prints key=value
 * lines for bench/events/run.  Finds the service like the CLI does.
 *
 * With BENCH_PROVIDER_PORT set, it also serves an OpenAI-compatible model on
 * that port (the service's settings name it, provider "bench") whose text
 * deltas carry the wall clock at which they were written ("t=<microseconds>"):
 * the delay from there to td_events_next covers the agent's reading and its
 * output line as well, at microsecond resolution.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
	double *origin_ms;	/* provider write to receipt, one per "t=" */
	size_t origin_len, origin_cap;
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
	if (e->time != NULL && time_parse_utc(e->time, &stamp)) {
		if (s->lat_len == s->lat_cap) {
			s->lat_cap = s->lat_cap ? s->lat_cap * 2 : 16384;
			s->lat_ms = xrealloc(s->lat_ms, s->lat_cap * sizeof *s->lat_ms);
		}
		s->lat_ms[s->lat_len++] = now - (double)stamp;
		if (s->first_time == 0)
			s->first_time = stamp;
		s->last_time = stamp;
	}
	if (strcmp(e->type, "run.output") == 0) {
		s->outputs++;
		for (const char *t = e->data_json; (t = strstr(t, "t=")) != NULL; t += 2) {
			if (s->origin_len == s->origin_cap) {
				s->origin_cap = s->origin_cap ? s->origin_cap * 2 : 1024;
				s->origin_ms = xrealloc(s->origin_ms,
				    s->origin_cap * sizeof *s->origin_ms);
			}
			s->origin_ms[s->origin_len++] = now - (double)atoll(t + 2) / 1000.0;
		}
	}
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
 * One consumer thread for every subscriber: epoll on each stream's
 * descriptor (td_events_fd), then drain the ready ones without blocking.
 */
static void
bench_consume_all(struct sub *s, int n)
{
	struct epoll_event evs[256];
	int open = n, ep = epoll_create1(EPOLL_CLOEXEC);
	struct td_event *e;
	struct td_error err;

	for (int i = 0; i < n; i++) {
		struct epoll_event ee = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

		epoll_ctl(ep, EPOLL_CTL_ADD, td_events_fd(s[i].ev), &ee);
	}
	while (open > 0) {
		int ready = epoll_wait(ep, evs, 256, 120000);

		if (ready <= 0)
			break;
		for (int k = 0; k < ready; k++) {
			int i = (int)evs[k].data.u32;

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
					epoll_ctl(ep, EPOLL_CTL_DEL, td_events_fd(s[i].ev), NULL);
					open--;
					break;
				}
			}
		}
	}
	close(ep);
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

/* The model of BENCH_PROVIDER_PORT: paced text deltas stamped when written. */
struct provider {
	int lfd;
	int deltas;
	int interval_ms;
};

/* Reads a request's head and its Content-Length body; false when the peer went. */
static bool
provider_read_request(int fd)
{
	char buf[65536];
	size_t have = 0;
	char *end = NULL;
	long long clen = 0;

	while (end == NULL) {
		ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);

		if (n <= 0)
			return false;
		have += (size_t)n;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end == NULL && have == sizeof buf - 1)
			return false;
	}
	for (char *h = strcasestr(buf, "\r\ncontent-length:"); h && h < end; h = NULL)
		clen = atoll(h + 17);
	for (long long left = clen - (long long)(have - (size_t)(end + 4 - buf)); left > 0;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);

		if (n <= 0)
			return false;
		left -= n;
	}
	return true;
}

static void
provider_send(int fd, const char *text)
{
	size_t len = strlen(text), off = 0;
	ssize_t n;

	while (off < len && (n = send(fd, text + off, len - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)n;
}

/* Answers each connection's one request with the paced stream, then closes it. */
static void *
provider_serve(void *arg)
{
	struct provider *p = arg;
	int fd;

	while ((fd = accept(p->lfd, NULL, NULL)) >= 0) {
		char chunk[512];

		if (!provider_read_request(fd)) {
			close(fd);
			continue;
		}
		provider_send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Connection: close\r\n\r\n");
		for (int i = 0; i < p->deltas; i++) {
			struct timespec ts;

			usleep((useconds_t)p->interval_ms * 1000);
			clock_gettime(CLOCK_REALTIME, &ts);
			snprintf(chunk, sizeof chunk, "data: {\"id\":\"bench\",\"object\":"
			    "\"chat.completion.chunk\",\"created\":0,\"model\":\"paced\","
			    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t=%lld\\n\"},"
			    "\"finish_reason\":null}]}\n\n",
			    (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
			provider_send(fd, chunk);
		}
		provider_send(fd, "data: {\"id\":\"bench\",\"object\":\"chat.completion.chunk\","
		    "\"created\":0,\"model\":\"paced\",\"choices\":[{\"index\":0,\"delta\":{},"
		    "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
		close(fd);
	}
	return NULL;
}

/* Listens on 127.0.0.1:port and serves in a thread; false when it cannot. */
static bool
provider_start(struct provider *p, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	pthread_t t;
	int one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(p->lfd, 8) != 0)
		return false;
	if (pthread_create(&t, NULL, provider_serve, p) != 0)
		return false;
	pthread_setname_np(t, "bench-model");
	pthread_detach(t);
	return true;
}

/* The CPU time this process has used (every thread), in ms. */
static double
bench_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
}

/*
 * The CPU time, in ms, the thread of this process named name has used
 * (/proc's schedstat, in ns); -1 when there is none.
 */
static double
bench_thread_cpu_ms(const char *name)
{
	char path[64], comm[32];
	unsigned long long ns;
	double ms = -1;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	FILE *f;

	while (d != NULL && ms < 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%.16s/comm", de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(comm, sizeof comm, f) != NULL && strcspn(comm, "\n") == strlen(name) &&
		    strncmp(comm, name, strlen(name)) == 0) {
			fclose(f);
			snprintf(path, sizeof path, "/proc/self/task/%.16s/schedstat", de->d_name);
			if ((f = fopen(path, "r")) == NULL)
				continue;
			if (fscanf(f, "%llu", &ns) == 1)
				ms = (double)ns / 1e6;
		}
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return ms;
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
	double t0, t1, cpu0, cpu1, w0, w1;
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
	cpu0 = bench_cpu_ms();
	w0 = bench_thread_cpu_ms("td-events");
	while (got < count && td_events_next(ev, 10000, &e, &err) == TD_OK) {
		got++;
		td_event_free(e);
	}
	t1 = bench_mono_ms();
	cpu1 = bench_cpu_ms();
	w1 = bench_thread_cpu_ms("td-events");
	if (got < count)
		fprintf(stderr, "events-bench: fake: %s: %s\n", err.code_name, err.message);
	printf("fake_events=%ld\nfake_bytes=%zu\nfake_span_ms=%.1f\nfake_events_per_s=%.0f\n",
	    got, f.body.len, t1 - t0, (double)got * 1000.0 / (t1 - t0));
	/* Every thread of the process: the client core's two and the fake's sender. */
	printf("fake_cpu_ms=%.1f\nfake_cpu_ns_per_event=%.0f\n", cpu1 - cpu0,
	    got > 0 ? (cpu1 - cpu0) * 1e6 / (double)got : 0);
	/* The client core's worker alone: it reads and parses, so it bounds the rate. */
	if (w0 >= 0 && w1 >= 0 && got > 0)
		printf("fake_worker_ns_per_event=%.0f\n", (w1 - w0) * 1e6 / (double)got);
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
	const char *pport = getenv("BENCH_PROVIDER_PORT");
	struct provider prov = { .deltas = 250, .interval_ms = 20 };
	double *origin = NULL;
	size_t origin_len = 0;
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
	if (pport != NULL && !provider_start(&prov, atoi(pport))) {
		fprintf(stderr, "events-bench: cannot serve the model on port %s\n", pport);
		return 1;
	}
	if (pport != NULL)
		model = "paced";
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
			.project = p->id, .prompt = "burst",
			.provider = pport != NULL ? "bench" : "replay",
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
		origin = xrealloc(origin, (origin_len + s[i].origin_len + 1) * sizeof *origin);
		if (s[i].origin_len > 0)
			memcpy(origin + origin_len, s[i].origin_ms, s[i].origin_len * sizeof *origin);
		origin_len += s[i].origin_len;
	}
	qsort(origin, origin_len, sizeof *origin, bench_cmp);
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
	if (origin_len > 0)
		printf("origin_samples=%zu\norigin_p50_ms=%.3f\norigin_p99_ms=%.3f\n"
		    "origin_max_ms=%.3f\n", origin_len, bench_pct(origin, origin_len, 0.50),
		    bench_pct(origin, origin_len, 0.99), origin[origin_len - 1]);
	printf("failed_subscribers=%d\n", failed);
	free(origin);
	for (int i = 0; i < subs; i++) {
		free(s[i].lat_ms);
		free(s[i].origin_ms);
	}
	free(s);
	free(all);
	td_project_free(p);
	td_client_free(c);
	return failed > 0 ? 3 : 0;
}
