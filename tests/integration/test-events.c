/*
 * The event stream through a real taskdeckd and taskdeck-agent (docs/events.md):
 * order, filters, resume, heartbeats, liveness, the durable history of a run,
 * many subscribers with a slow one, and shutdown with streams open.  The
 * streams are read with raw libcurl and the SSE parser of src/common.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "buf.h"
#include "harness.h"
#include "json.h"
#include "sse.h"
#include "timeutil.h"

#define FINAL_WAIT_MS 30000
#define SSE_MAX_EVENT (1024 * 1024)

TestSuite(events, .init = svc_setup, .fini = svc_teardown, .timeout = 90);

/* One received event. */
struct rec {
	char type[48];
	char id[80];
	cJSON *json;		/* the data, parsed */
	int64_t at_ms;		/* clock_mono_ms() when it arrived */
};

/* A subscriber on its own thread. */
struct sub {
	char url[512];
	char last_id[128];
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct rec *recs;
	size_t n, cap;
	atomic_bool stop;
	bool ended;
	long status;
	CURLcode rc;
	struct sse_parser *parser;
};

static int
on_event(const struct sse_event *e, void *ud)
{
	struct sub *s = ud;
	struct rec r = { 0 };

	snprintf(r.type, sizeof r.type, "%s", e->type);
	snprintf(r.id, sizeof r.id, "%s", e->id);
	r.json = cJSON_Parse(e->data);
	r.at_ms = clock_mono_ms();
	pthread_mutex_lock(&s->mu);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->recs = realloc(s->recs, s->cap * sizeof *s->recs);
	}
	s->recs[s->n++] = r;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static size_t
sub_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct sub *s = ud;

	if (atomic_load(&s->stop))
		return 0;
	if (sse_feed(s->parser, ptr, size * nmemb) != SSE_OK)
		return 0;
	return size * nmemb;
}

static int
sub_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct sub *s = ud;

	(void)a, (void)b, (void)c, (void)d;
	return atomic_load(&s->stop) ? 1 : 0;
}

static void *
sub_thread(void *arg)
{
	struct sub *s = arg;
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char line[256];

	snprintf(line, sizeof line, "Authorization: Bearer %s", svc.token);
	h = curl_slist_append(h, line);
	if (s->last_id[0]) {
		snprintf(line, sizeof line, "Last-Event-ID: %s", s->last_id);
		h = curl_slist_append(h, line);
	}
	curl_easy_setopt(c, CURLOPT_URL, s->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sub_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, sub_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
	s->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s->status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	pthread_mutex_lock(&s->mu);
	s->ended = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Opens /api/v1/events?query (may be "") with an optional Last-Event-ID. */
static struct sub *
sub_open(const char *query, const char *last_id)
{
	struct sub *s = calloc(1, sizeof *s);

	snprintf(s->url, sizeof s->url, "%s/api/v1/events%s%s", svc.url,
	    query[0] ? "?" : "", query);
	if (last_id != NULL)
		snprintf(s->last_id, sizeof s->last_id, "%s", last_id);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->parser = sse_new(SSE_MAX_EVENT, on_event, s);
	cr_assert_eq(pthread_create(&s->thread, NULL, sub_thread, s), 0);
	return s;
}

static void
sub_close(struct sub *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->n; i++)
		cJSON_Delete(s->recs[i].json);
	free(s->recs);
	sse_free(s->parser);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static const char *
rec_run(const struct rec *r)
{
	const cJSON *v = cJSON_GetObjectItem(r->json, "runId");

	return cJSON_IsString(v) ? v->valuestring : "";
}

static uint64_t
rec_seq(const struct rec *r)
{
	const cJSON *v = cJSON_GetObjectItem(r->json, "seq");

	return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
}

/* The index of the first event from index from of type (and run, if given), or -1. */
static long
sub_find(struct sub *s, size_t from, const char *type, const char *run)
{
	long found = -1;

	pthread_mutex_lock(&s->mu);
	for (size_t i = from; i < s->n && found < 0; i++) {
		if (strcmp(s->recs[i].type, type) == 0 && (run == NULL ||
		    strcmp(rec_run(&s->recs[i]), run) == 0))
			found = (long)i;
	}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* Waits up to timeout_ms for such an event; its index. */
static long
sub_wait(struct sub *s, const char *type, const char *run, int timeout_ms)
{
	int64_t deadline = clock_mono_ms() + timeout_ms;
	long i;

	while ((i = sub_find(s, 0, type, run)) < 0) {
		struct timespec ts;

		pthread_mutex_lock(&s->mu);
		if (s->ended) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->cond, &s->mu, &ts);
		pthread_mutex_unlock(&s->mu);
		if (clock_mono_ms() > deadline)
			break;
	}
	cr_assert_geq(i, 0, "no %s event%s%s within %d ms", type, run ? " for " : "",
	    run ? run : "", timeout_ms);
	return i;
}

/* Waits until the stream has ended (the service closed it); false after timeout_ms. */
static bool
sub_wait_end(struct sub *s, int timeout_ms)
{
	int64_t deadline = clock_mono_ms() + timeout_ms;
	bool ended;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		ended = s->ended;
		pthread_mutex_unlock(&s->mu);
		if (ended || clock_mono_ms() > deadline)
			return ended;
		usleep(20000);
	}
}

static char *
new_project(const char *name)
{
	char body[128];
	struct http_resp r;
	char *id;

	snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
	r = http_api(&svc, "POST", "/api/v1/projects", body);
	cr_assert_eq(r.status, 201, "%s", r.body);
	id = strdup(json_get_string(r.json, "id"));
	http_resp_free(&r);
	return id;
}

/* Starts a run of the replay model in project (or in session, when given); its id. */
static char *
start_run(const char *project, const char *session, const char *model, char **session_out)
{
	char body[256];
	struct http_resp r;
	char *id;

	if (session != NULL)
		snprintf(body, sizeof body, "{\"project\":\"%s\",\"sessionId\":\"%s\","
		    "\"prompt\":\"go\"}", project, session);
	else
		snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"go\","
		    "\"config\":{\"model\":\"%s\"}}", project, model);
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_assert_eq(r.status, 201, "%s", r.body);
	id = strdup(json_get_string(r.json, "id"));
	if (session_out != NULL)
		*session_out = strdup(json_get_string(r.json, "sessionId"));
	http_resp_free(&r);
	return id;
}

/* The run's output once final. */
static char *
run_output(const char *id)
{
	cJSON *run = run_wait_final(&svc, id, FINAL_WAIT_MS);
	char *out;

	cr_assert_not_null(run, "run %s did not finish", id);
	out = strdup(json_get_string(run, "output") ? json_get_string(run, "output") : "");
	cJSON_Delete(run);
	return out;
}

/* The streamId of the discovery file. */
static void
discovery_stream_id(char out[40])
{
	char path[512], text[1024];
	FILE *fp;
	size_t n;
	cJSON *j;

	snprintf(path, sizeof path, "%s/service.json", svc.home);
	fp = fopen(path, "r");
	cr_assert_not_null(fp);
	n = fread(text, 1, sizeof text - 1, fp);
	fclose(fp);
	text[n] = '\0';
	j = cJSON_Parse(text);
	cr_assert_not_null(json_get_string(j, "streamId"));
	snprintf(out, 40, "%s", json_get_string(j, "streamId"));
	cJSON_Delete(j);
}

/* The deltas of run's run.output events from s, concatenated, in order. */
static char *
deltas_of(struct sub *s, const char *run)
{
	struct buf b;
	char *out;

	buf_init(&b, 64 * 1024 * 1024);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++) {
		const cJSON *d = cJSON_GetObjectItem(s->recs[i].json, "data");

		if (strcmp(s->recs[i].type, "run.output") == 0 &&
		    strcmp(rec_run(&s->recs[i]), run) == 0)
			buf_append(&b, json_get_string(d, "delta"),
			    strlen(json_get_string(d, "delta")));
	}
	pthread_mutex_unlock(&s->mu);
	out = strdup(b.data ? b.data : "");
	buf_free(&b);
	return out;
}

/* Asserts that the events with a seq arrive with strictly increasing seq and matching ids. */
static void
assert_ordered(struct sub *s, const char *stream_id)
{
	uint64_t last = 0;
	char want[96];

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++) {
		uint64_t seq = rec_seq(&s->recs[i]);

		if (strncmp(s->recs[i].type, "stream.", 7) == 0)
			continue;
		cr_assert_gt(seq, last, "event %zu (%s) has seq %" PRIu64 " after %" PRIu64,
		    i, s->recs[i].type, seq, last);
		snprintf(want, sizeof want, "%s:%" PRIu64, stream_id, seq);
		cr_assert_str_eq(s->recs[i].id, want);
		last = seq;
	}
	pthread_mutex_unlock(&s->mu);
}

Test(events, hello_first_then_a_run_in_order)
{
	char stream_id[40], *project, *run, *output, *deltas;
	const cJSON *queued_run;
	struct sub *s;
	long queued, started, out1, finished, sess;

	discovery_stream_id(stream_id);
	s = sub_open("", NULL);
	cr_assert_eq(sub_wait(s, "stream.hello", NULL, 5000), 0, "hello is not first");
	cr_expect_str_eq(json_get_string(s->recs[0].json, "streamId"), stream_id);
	cr_expect_eq(cJSON_GetObjectItem(s->recs[0].json, "heartbeatMs")->valuedouble, 10000);

	project = new_project("order");
	run = start_run(project, NULL, "quick", NULL);
	output = run_output(run);
	finished = sub_wait(s, "run.finished", run, 10000);
	sess = sub_find(s, (size_t)finished, "session.updated", NULL);
	if (sess < 0) {
		usleep(500000);
		sess = sub_find(s, (size_t)finished, "session.updated", NULL);
	}
	queued = sub_find(s, 0, "run.queued", run);
	started = sub_find(s, 0, "run.started", run);
	out1 = sub_find(s, 0, "run.output", run);
	cr_assert(queued > 0 && started > queued && out1 > started && finished > out1 &&
	    sess > finished, "order: queued %ld started %ld output %ld finished %ld "
	    "session.updated %ld", queued, started, out1, finished, sess);
	cr_expect_gt(sub_find(s, 0, "project.updated", NULL), 0);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(s->recs[finished].json, "data"),
	    "status"), "completed");
	cr_expect_str_eq(json_get_string(s->recs[queued].json, "projectId"), project);
	/* run.queued carries the run as GET /runs/:id showed it then: no fetch needed. */
	queued_run = cJSON_GetObjectItem(cJSON_GetObjectItem(s->recs[queued].json, "data"), "run");
	cr_expect_str_eq(json_get_string(queued_run, "id"), run);
	cr_expect_str_eq(json_get_string(queued_run, "status"), "queued");
	cr_expect_str_eq(json_get_string(queued_run, "prompt"), "go");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(queued_run, "config"), "model"),
	    "quick");
	cr_expect_str_eq(json_get_string(queued_run, "projectId"), project);
	cr_expect_not_null(json_get_string(queued_run, "sessionId"));
	assert_ordered(s, stream_id);
	deltas = deltas_of(s, run);
	cr_expect_str_eq(deltas, output);
	sub_close(s);
	free(deltas);
	free(output);
	free(run);
	free(project);
}

/* How many non-control events of s have key == value. */
static size_t
count_matching(struct sub *s, const char *key, const char *value)
{
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++) {
		const char *v = json_get_string(s->recs[i].json, key);

		if (strncmp(s->recs[i].type, "stream.", 7) != 0 && v != NULL &&
		    strcmp(v, value) == 0)
			n++;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Every non-control event of s has key == value; their count. */
static size_t
assert_all_match(struct sub *s, const char *key, const char *value)
{
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++) {
		if (strncmp(s->recs[i].type, "stream.", 7) == 0)
			continue;
		cr_assert_str_eq(json_get_string(s->recs[i].json, key) ?
		    json_get_string(s->recs[i].json, key) : "(null)", value,
		    "a %s event passed the filter %s=%s", s->recs[i].type, key, value);
		n++;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

Test(events, filters_by_run_session_and_project)
{
	char *p1 = new_project("one"), *p2 = new_project("two");
	char *s1, *r1, *r2, *r3, q[128], head[128];
	struct sub *all, *by_run, *by_session, *by_project;
	const char *const bad[][2] = {
		{ "run=nope", "run" }, { "session=run_0123", "session" },
		{ "project=ses_01a1fce23fc5000150a11b70", "project" },
	};

	all = sub_open("", NULL);
	sub_wait(all, "stream.hello", NULL, 5000);
	snprintf(head, sizeof head, "%s", all->recs[0].id);
	r1 = start_run(p1, NULL, "quick", &s1);
	free(run_output(r1));
	r2 = start_run(p2, NULL, "quick", NULL);
	free(run_output(r2));
	r3 = start_run(p1, s1, NULL, NULL);
	free(run_output(r3));
	sub_wait(all, "run.finished", r3, 10000);
	usleep(300000);

	/* Replayed from the window after the hello of all: the same events, filtered. */
	snprintf(q, sizeof q, "run=%s", r2);
	by_run = sub_open(q, head);
	snprintf(q, sizeof q, "session=%s", s1);
	by_session = sub_open(q, head);
	snprintf(q, sizeof q, "project=%s", p2);
	by_project = sub_open(q, head);
	sub_wait(by_run, "run.finished", r2, 5000);
	sub_wait(by_session, "run.finished", r3, 5000);
	sub_wait(by_project, "run.finished", r2, 5000);
	usleep(300000);
	cr_expect_eq(assert_all_match(by_run, "runId", r2), count_matching(all, "runId", r2));
	cr_expect_eq(assert_all_match(by_session, "sessionId", s1),
	    count_matching(all, "sessionId", s1));
	cr_expect_eq(assert_all_match(by_project, "projectId", p2),
	    count_matching(all, "projectId", p2));
	cr_expect_gt(sub_find(by_session, 0, "run.finished", r1), 0);
	cr_expect_lt(sub_find(by_project, 0, "run.queued", r1), 0);

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char path[128];
		struct http_resp r;

		snprintf(path, sizeof path, "/api/v1/events?%s", bad[i][0]);
		r = http_api(&svc, "GET", path, NULL);
		cr_expect_eq(r.status, 400, "%s: %ld", bad[i][0], r.status);
		cr_expect_str_eq(http_error_code(&r), "invalid_request");
		cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(
		    cJSON_GetObjectItem(r.json, "error"), "details"), "parameter"), bad[i][1]);
		http_resp_free(&r);
	}
	sub_close(all);
	sub_close(by_run);
	sub_close(by_session);
	sub_close(by_project);
	free(p1), free(p2), free(s1), free(r1), free(r2), free(r3);
}

Test(events, a_burst_arrives_whole_and_in_order)
{
	char stream_id[40], q[128], *project = new_project("burst"), *run, *output, *deltas;
	struct sub *s;
	size_t outputs;

	discovery_stream_id(stream_id);
	snprintf(q, sizeof q, "project=%s", project);
	s = sub_open(q, NULL);
	sub_wait(s, "stream.hello", NULL, 5000);
	run = start_run(project, NULL, "burst", NULL);
	output = run_output(run);
	sub_wait(s, "run.finished", run, 20000);
	assert_ordered(s, stream_id);
	outputs = count_matching(s, "runId", run);
	cr_expect_geq(outputs, 10000 + 3, "only %zu events of the run arrived", outputs);
	deltas = deltas_of(s, run);
	cr_expect_eq(strlen(output), 80000);
	cr_expect_str_eq(deltas, output, "the deltas do not add up to the output");
	sub_close(s);
	free(deltas), free(output), free(run), free(project);
}

Test(events, resume_after_a_drop_has_no_gap_and_no_duplicate)
{
	char stream_id[40], last[128], id[128], *project = new_project("resume"), *run;
	struct sub *a, *b, *c;
	uint64_t last_seq, expect;

	discovery_stream_id(stream_id);
	a = sub_open("", NULL);
	sub_wait(a, "stream.hello", NULL, 5000);
	free(run_output(run = start_run(project, NULL, "quick", NULL)));
	sub_wait(a, "run.finished", run, 10000);
	free(run);
	usleep(200000);
	pthread_mutex_lock(&a->mu);
	snprintf(last, sizeof last, "%s", a->recs[a->n - 1].id);
	last_seq = rec_seq(&a->recs[a->n - 1]);
	pthread_mutex_unlock(&a->mu);
	sub_close(a);

	/* What happens while nobody listens comes on resume, once. */
	free(run_output(run = start_run(project, NULL, "quick", NULL)));
	b = sub_open("", last);
	sub_wait(b, "run.finished", run, 10000);
	usleep(200000);
	cr_assert_str_eq(b->recs[0].type, "stream.hello");
	/* A standard client takes the hello's id as its own: it names the resume point,
	 * not the head, or a drop right after it would skip the replay (finding 12). */
	cr_expect_str_eq(b->recs[0].id, last, "the hello of a resumed stream");
	expect = last_seq + 1;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 1; i < b->n; i++) {
		if (strncmp(b->recs[i].type, "stream.", 7) == 0)
			continue;
		cr_assert_eq(rec_seq(&b->recs[i]), expect, "event %zu: seq %" PRIu64
		    ", expected %" PRIu64, i, rec_seq(&b->recs[i]), expect);
		expect++;
	}
	pthread_mutex_unlock(&b->mu);
	cr_expect_gt(expect, last_seq + 5, "the missed run was not replayed");
	sub_close(b);
	free(run);

	/* Not resumable: told so, never a silent live-only stream (finding 7). */
	{
		char upper[128], plus[128], huge[128], minus[128], future[128];
		const char *bad[] = { "not-an-id", upper, plus, huge, minus, future };

		snprintf(upper, sizeof upper, "%s", last);
		for (char *p = upper; *p != ':'; p++)
			if (*p >= 'a' && *p <= 'f')
				*p = (char)(*p - 'a' + 'A');
		snprintf(plus, sizeof plus, "%s:+%" PRIu64, stream_id, last_seq);
		snprintf(huge, sizeof huge, "%s:18446744073709551616", stream_id);
		snprintf(minus, sizeof minus, "%s:-1", stream_id);
		snprintf(future, sizeof future, "%s:%" PRIu64, stream_id, last_seq + 1000000);
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			c = sub_open("", bad[i]);
			sub_wait(c, "stream.resync-required", NULL, 5000);
			cr_expect_str_eq(c->recs[0].type, "stream.hello", "%s", bad[i]);
			cr_expect_str_eq(c->recs[1].type, "stream.resync-required", "%s", bad[i]);
			cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(c->recs[1].json,
			    "data"), "reason"), "stream-changed", "%s", bad[i]);
			sub_close(c);
		}
	}
	/* Spaces around a good id are trimmed: the replay comes. */
	{
		char spaced[160];

		snprintf(spaced, sizeof spaced, " %s ", last);
		c = sub_open("", spaced);
		sub_wait(c, "run.finished", NULL, 5000);
		cr_expect_str_eq(c->recs[0].type, "stream.hello");
		cr_expect_eq(rec_seq(&c->recs[1]), last_seq + 1, "the replay after a trimmed id");
		sub_close(c);
	}

	/* Older than the window: expired. */
	free(run_output(run = start_run(project, NULL, "burst", NULL)));
	snprintf(id, sizeof id, "%s:1", stream_id);
	c = sub_open("", id);
	sub_wait(c, "stream.resync-required", NULL, 5000);
	cr_expect_str_eq(c->recs[0].type, "stream.hello");
	cr_expect_str_eq(c->recs[1].type, "stream.resync-required");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(c->recs[1].json, "data"),
	    "reason"), "expired");
	sub_close(c);
	free(run);

	/* Another stream (the service restarted): stream-changed. */
	svc_stop(&svc);
	svc_restart(&svc);
	c = sub_open("", last);
	sub_wait(c, "stream.resync-required", NULL, 5000);
	cr_expect_str_neq(json_get_string(c->recs[0].json, "streamId"), stream_id);
	cr_expect_str_eq(c->recs[1].type, "stream.resync-required");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(c->recs[1].json, "data"),
	    "reason"), "stream-changed");
	sub_close(c);
	free(project);
}

/* A run's stored history: GET /api/v1/runs/:id/events, all pages. */
static cJSON *
history(const char *run, int limit, size_t *pages)
{
	cJSON *all = cJSON_CreateArray();
	char path[256];
	uint64_t after = 0;

	*pages = 0;
	for (;;) {
		struct http_resp r;
		char *link;
		int n;

		snprintf(path, sizeof path, "/api/v1/runs/%s/events?after=%" PRIu64 "&limit=%d",
		    run, after, limit);
		r = http_api(&svc, "GET", path, NULL);
		cr_assert_eq(r.status, 200, "%s", r.body);
		cr_assert(cJSON_IsArray(r.json));
		n = cJSON_GetArraySize(r.json);
		(*pages)++;
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(all, cJSON_Duplicate(cJSON_GetArrayItem(r.json, i), 1));
		if (n > 0)
			after = (uint64_t)cJSON_GetObjectItem(cJSON_GetArrayItem(r.json, n - 1),
			    "seq")->valuedouble;
		link = http_header(&r, "Link");
		http_resp_free(&r);
		if (link == NULL)
			break;
		cr_assert(strstr(link, "rel=\"next\"") != NULL, "%s", link);
		free(link);
		cr_assert_lt(*pages, 100);
	}
	return all;
}

Test(events, the_history_of_a_run_outlives_the_window_and_restarts)
{
	char stream_id[40], path[128], *project = new_project("history"), *run, *output;
	struct http_resp r;
	cJSON *h, *h2;
	size_t pages;
	struct buf b;
	int n;

	discovery_stream_id(stream_id);
	run = start_run(project, NULL, "quick", NULL);
	output = run_output(run);
	h = history(run, 2, &pages);
	n = cJSON_GetArraySize(h);
	cr_assert_geq(n, 4);
	cr_expect_eq(pages, (size_t)(n + 1) / 2);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(h, 0), "type"), "run.queued");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(h, n - 1), "type"), "run.finished");
	buf_init(&b, 1 << 20);
	for (int i = 0; i < n; i++) {
		cJSON *e = cJSON_GetArrayItem(h, i);

		cr_expect_str_eq(json_get_string(e, "runId"), run);
		cr_expect_str_eq(json_get_string(e, "streamId"), stream_id);
		if (i > 0)
			cr_expect_gt(cJSON_GetObjectItem(e, "seq")->valuedouble,
			    cJSON_GetObjectItem(cJSON_GetArrayItem(h, i - 1), "seq")->valuedouble);
		if (strcmp(json_get_string(e, "type"), "run.output") == 0) {
			const char *d = json_get_string(cJSON_GetObjectItem(e, "data"), "delta");
			buf_append(&b, d, strlen(d));
		}
	}
	cr_expect_str_eq(b.data ? b.data : "", output);
	buf_free(&b);

	svc_stop(&svc);
	svc_restart(&svc);
	h2 = history(run, 1000, &pages);
	cr_expect_eq(pages, 1);
	cr_expect(cJSON_Compare(h, h2, true), "the history changed across a restart");

	r = http_api(&svc, "GET", "/api/v1/runs/run_01a1fce2402a000170b29930/events", NULL);
	cr_expect_eq(r.status, 404);
	http_resp_free(&r);
	snprintf(path, sizeof path, "/api/v1/runs/%s/events?after=-1", run);
	r = http_api(&svc, "GET", path, NULL);
	cr_expect_eq(r.status, 400);
	http_resp_free(&r);
	cJSON_Delete(h), cJSON_Delete(h2);
	free(output), free(run), free(project);
}

Test(events, a_run_cut_by_a_crash_ends_in_its_history)
{
	char stream_id[40], *project = new_project("crash"), *run;
	cJSON *h, *last, *err;
	size_t pages;
	int n;

	discovery_stream_id(stream_id);
	run = start_run(project, NULL, "slow", NULL);
	for (int i = 0; i < 100; i++) {
		char path[128];
		struct http_resp r;
		bool running;

		snprintf(path, sizeof path, "/api/v1/runs/%s", run);
		r = http_api(&svc, "GET", path, NULL);
		running = strcmp(json_get_string(r.json, "status"), "running") == 0;
		http_resp_free(&r);
		if (running)
			break;
		usleep(50000);
	}
	/* Past one history batch, so that what the first process sent is stored. */
	usleep(600000);
	svc_kill(&svc);
	svc_restart(&svc);
	/*
	 * durable (issue 15): the run resumes in the new stream; its history
	 * records the possible gap, then the resume.  A cancel ends it there.
	 */
	{
		char path[128];
		struct http_resp r;
		cJSON *fin;

		snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", run);
		usleep(300000);
		r = http_api(&svc, "POST", path, NULL);
		cr_expect_eq(r.status, 200);
		http_resp_free(&r);
		fin = run_wait_final(&svc, run, 20000);
		cr_assert_not_null(fin);
		cJSON_Delete(fin);
	}
	h = history(run, 1000, &pages);
	n = cJSON_GetArraySize(h);
	cr_assert_geq(n, 5);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(h, 0), "type"), "run.queued");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(h, 0), "streamId"), stream_id);
	{
		int gap = -1, resumed = -1;

		for (int i = 0; i < n; i++) {
			cJSON *e = cJSON_GetArrayItem(h, i);
			const char *t = json_get_string(e, "type");

			if (strcmp(t, "run.history-gap") == 0 && gap < 0) {
				gap = i;
				cr_expect_str_neq(json_get_string(e, "streamId"), stream_id);
			}
			if (strcmp(t, "run.progress") == 0 && resumed < 0 && strcmp(json_get_string(
			    cJSON_GetObjectItem(e, "data"), "phase"), "resumed") == 0)
				resumed = i;
		}
		cr_expect(gap > 0 && resumed > gap, "gap at %d, resumed at %d", gap, resumed);
	}
	last = cJSON_GetArrayItem(h, n - 1);
	cr_expect_str_eq(json_get_string(last, "type"), "run.finished");
	cr_expect_str_neq(json_get_string(last, "streamId"), stream_id);
	err = cJSON_GetObjectItem(cJSON_GetObjectItem(last, "data"), "error");
	cr_expect_null(err);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(last, "data"), "status"), "cancelled");
	cJSON_Delete(h);
	free(run), free(project);
}

/* The VmRSS of pid in KiB. */
static long
rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *fp;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	fp = fopen(path, "r");
	cr_assert_not_null(fp);
	while (fgets(line, sizeof line, fp) != NULL) {
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	}
	fclose(fp);
	return kib;
}

/* A raw connection that asks for the stream; rcvbuf > 0 shrinks its receive buffer. */
static int
raw_stream(const char *query, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)svc.port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char req[512];
	int n;

	cr_assert_geq(fd, 0);
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
	n = snprintf(req, sizeof req, "GET /api/v1/events%s%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", query[0] ? "?" : "", query,
	    svc.port, svc.token);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	return fd;
}

/*
 * Reads fd until text appears (until_eof false) or to EOF; *seen tells
 * whether text appeared.  False after timeout_ms, or at an early EOF.
 */
static bool
raw_read(int fd, const char *text, bool until_eof, int timeout_ms, bool *seen)
{
	int64_t deadline = clock_mono_ms() + timeout_ms;
	size_t tl = strlen(text), len = 0;
	char buf[65536 + 128];

	*seen = false;
	while (clock_mono_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, buf + len, 65536);
		if (n <= 0)
			return n == 0 && until_eof;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, text) != NULL) {
			*seen = true;
			if (!until_eof)
				return true;
		}
		/* Keep the tail that may hold the start of text. */
		if (len > tl) {
			memmove(buf, buf + len - tl, tl);
			len = tl;
		}
	}
	return false;
}

static bool
raw_wait_for(int fd, const char *text, int timeout_ms)
{
	bool seen;

	return raw_read(fd, text, false, timeout_ms, &seen);
}

#define READERS 199

/* One reader of the many-subscribers test, driven by curl multi. */
struct reader {
	CURL *easy;
	struct sse_parser *parser;
	const char *run;
	uint64_t last_seq;
	bool out_of_order, hello, finished;
	size_t outputs;
	struct buf deltas;
};

/*
 * Two hundred streams in one thread must keep up with a burst, so the
 * readers scan the frames instead of parsing them: the service renders
 * "seq" first and ids and the burst's deltas need no escapes.
 */
static int
reader_event(const struct sse_event *e, void *ud)
{
	struct reader *rd = ud;
	const char *p;
	uint64_t seq;

	if (strcmp(e->type, "stream.hello") == 0) {
		rd->hello = true;
		return 0;
	}
	if (strncmp(e->type, "stream.", 7) == 0)
		return 0;
	cr_assert(strncmp(e->data, "{\"seq\":", 7) == 0, "%s", e->data);
	seq = strtoull(e->data + 7, NULL, 10);
	if (seq <= rd->last_seq)
		rd->out_of_order = true;
	rd->last_seq = seq;
	if (rd->run == NULL || (p = strstr(e->data, "\"runId\":\"")) == NULL ||
	    strncmp(p + 9, rd->run, strlen(rd->run)) != 0)
		return 0;
	if (strcmp(e->type, "run.output") == 0) {
		cJSON *j = cJSON_Parse(e->data);
		const cJSON *delta = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"), "delta");

		cr_assert(cJSON_IsString(delta), "%s", e->data);
		rd->outputs++;
		buf_appends(&rd->deltas, delta->valuestring);
		cJSON_Delete(j);
	} else if (strcmp(e->type, "run.finished") == 0) {
		rd->finished = true;
	}
	return 0;
}

static size_t
reader_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct reader *rd = ud;

	return sse_feed(rd->parser, ptr, size * nmemb) == SSE_OK ? size * nmemb : 0;
}

/* Runs the multi handle until every reader satisfies done (hello or finished). */
static bool
multi_until(CURLM *m, struct reader *rds, bool finished, int timeout_ms)
{
	int64_t deadline = clock_mono_ms() + timeout_ms;

	while (clock_mono_ms() < deadline) {
		int running, ready = 0;

		curl_multi_perform(m, &running);
		for (int i = 0; i < READERS; i++)
			ready += finished ? rds[i].finished : rds[i].hello;
		if (ready == READERS)
			return true;
		curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	return false;
}

Test(events, many_subscribers_and_one_that_never_reads)
{
	static struct reader rds[READERS];
	const char *asan = getenv("ASAN_OPTIONS");
	char *asan_saved = asan ? strdup(asan) : NULL, asan_small[512];
	char q[256], auth[128], *project = new_project("many"), *other = new_project("other");
	char *run, *run2, *output;
	struct curl_slist *h;
	CURLM *m = curl_multi_init();
	long rss0, rss1;
	int slow, extra[256 - READERS];
	bool seen;
	struct http_resp r;

	/* Freed memory waits in ASan's quarantine (256 MiB): keep it small here. */
	snprintf(asan_small, sizeof asan_small, "%s%squarantine_size_mb=8",
	    asan ? asan : "", asan ? ":" : "");
	svc_stop(&svc);
	setenv("ASAN_OPTIONS", asan_small, 1);
	/* Heartbeats an hour apart: below, only the reaping of closed streams frees a slot. */
	svc.args[0] = "--events-heartbeat-ms";
	svc.args[1] = "3600000";
	svc_restart(&svc);
	if (asan_saved != NULL)
		setenv("ASAN_OPTIONS", asan_saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(asan_saved);

	snprintf(auth, sizeof auth, "Authorization: Bearer %s", svc.token);
	h = curl_slist_append(NULL, auth);
	snprintf(q, sizeof q, "%s/api/v1/events?project=%s", svc.url, project);
	for (int i = 0; i < READERS; i++) {
		rds[i].easy = curl_easy_init();
		rds[i].parser = sse_new(SSE_MAX_EVENT, reader_event, &rds[i]);
		buf_init(&rds[i].deltas, 1 << 20);
		curl_easy_setopt(rds[i].easy, CURLOPT_URL, q);
		curl_easy_setopt(rds[i].easy, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(rds[i].easy, CURLOPT_WRITEFUNCTION, reader_write);
		curl_easy_setopt(rds[i].easy, CURLOPT_WRITEDATA, &rds[i]);
		curl_multi_add_handle(m, rds[i].easy);
	}
	/*
	 * A small receive buffer, but not smaller than a few loopback segments
	 * (64 KiB): with 4 KiB the receiver could only ever advertise a zero
	 * window, data then moved by zero-window probes whose backoff stalled the
	 * drain below for more than 30 s now and then.
	 */
	slow = raw_stream("", 256 * 1024);
	cr_assert(multi_until(m, rds, false, 20000), "not every reader got its hello");
	cr_assert(raw_wait_for(slow, "\"heartbeatMs\":3600000", 5000),
	    "the hello names the period set by --events-heartbeat-ms");
	rss0 = rss_kib(svc.pid);

	/*
	 * A paced run (a delta every 200 ms): every reader must keep up with it.
	 * A burst would measure how fast this one test thread parses 200 copies
	 * of it under ASan, and readers that fall behind are rightly dropped.
	 */
	run = start_run(project, NULL, "steady", NULL);
	for (int i = 0; i < READERS; i++)
		rds[i].run = run;
	cr_assert(multi_until(m, rds, true, 60000), "not every reader saw the run finish");
	output = run_output(run);
	for (int i = 0; i < READERS; i++) {
		cr_expect_not(rds[i].out_of_order, "reader %d got events out of order", i);
		cr_expect_gt(rds[i].outputs, 20, "reader %d got %zu deltas", i, rds[i].outputs);
		cr_expect_str_eq(rds[i].deltas.data, output, "reader %d", i);
	}

	/*
	 * The reader that never read is unfiltered: four bursts elsewhere (about
	 * 11 MB of frames) take it past its queue (8,192 frames, about 2.4 MB)
	 * and the socket buffers (about 1.5 MiB) with room to spare; it is told
	 * it is too slow and closed.
	 */
	for (int i = 0; i < 4; i++) {
		free(run_output(run2 = start_run(other, NULL, "burst", NULL)));
		free(run2);
	}
	rss1 = rss_kib(svc.pid);
	cr_expect_lt(rss1 - rss0, 64 * 1024, "the service grew by %ld KiB", rss1 - rss0);
	cr_expect(raw_read(slow, "slow-consumer", true, 30000, &seen),
	    "the slow stream stayed open");
	cr_expect(seen, "no slow-consumer resync for the slow reader");
	close(slow);

	/* 256 streams at most: fill up with idle ones, then one more is refused. */
	for (int i = 0; i < 256 - READERS; i++) {
		extra[i] = raw_stream(q + strcspn(q, "?") + 1, 0);
		cr_assert(raw_wait_for(extra[i], "stream.hello", 5000), "stream %d", READERS + i);
	}
	r = http_api(&svc, "GET", "/api/v1/events", NULL);
	cr_expect_eq(r.status, 503, "%ld %s", r.status, r.body ? r.body : "");
	cr_expect_str_eq(http_error_code(&r), "service_unavailable");
	http_resp_free(&r);
	for (int i = 0; i < 256 - READERS; i++)
		close(extra[i]);
	/*
	 * A closed stream frees its slot without a write to find it gone (issue 17,
	 * finding 8): with no heartbeat for an hour, a client that comes back gets
	 * in.  The 60 s only end the wait; they are not the measure.
	 */
	{
		int64_t until = clock_mono_ms() + 60000;
		bool in = false;

		while (!in && clock_mono_ms() < until) {
			int again = raw_stream(q + strcspn(q, "?") + 1, 0);

			in = raw_wait_for(again, "stream.hello", 300);
			close(again);
		}
		cr_expect(in, "no stream accepted after closing 256 - %d of them", READERS);
	}

	for (int i = 0; i < READERS; i++) {
		curl_multi_remove_handle(m, rds[i].easy);
		curl_easy_cleanup(rds[i].easy);
		sse_free(rds[i].parser);
		buf_free(&rds[i].deltas);
	}
	curl_multi_cleanup(m);
	curl_slist_free_all(h);
	free(output), free(run), free(project), free(other);
}

Test(events, liveness_and_heartbeats_while_the_provider_is_silent)
{
	char q[128], *project = new_project("slow"), *run;
	struct sub *s;
	long started, first, second, beat;
	int64_t t0, t1, t2;

	snprintf(q, sizeof q, "project=%s", project);
	s = sub_open(q, NULL);
	sub_wait(s, "stream.hello", NULL, 5000);
	run = start_run(project, NULL, "slow", NULL);
	started = sub_wait(s, "run.started", run, 5000);
	t0 = s->recs[started].at_ms;
	beat = sub_wait(s, "stream.heartbeat", NULL, 12000);
	cr_expect_not_null(json_get_string(s->recs[beat].json, "time"));
	/* A heartbeat has no id: the last event id stays that of the event before. */
	cr_expect_str_eq(s->recs[beat].id, s->recs[beat - 1].id);
	sub_wait(s, "run.output", run, 30000);

	first = -1;
	second = -1;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++) {
		const cJSON *d = cJSON_GetObjectItem(s->recs[i].json, "data");

		if (strcmp(s->recs[i].type, "run.progress") != 0 ||
		    !cJSON_IsTrue(cJSON_GetObjectItem(d, "liveness")))
			continue;
		cr_expect_str_eq(json_get_string(d, "message"), "waiting for the provider");
		if (first < 0)
			first = (long)i;
		else if (second < 0)
			second = (long)i;
		else
			cr_expect_fail("a third liveness update in 25 s");
	}
	pthread_mutex_unlock(&s->mu);
	cr_assert(first >= 0 && second >= 0, "fewer than two liveness updates");
	t1 = s->recs[first].at_ms - t0;
	t2 = s->recs[second].at_ms - t0;
	cr_expect(t1 >= 8000 && t1 <= 12000, "the first liveness update came after %lld ms",
	    (long long)t1);
	cr_expect(t2 >= 18000 && t2 <= 22000, "the second liveness update came after %lld ms",
	    (long long)t2);
	cr_expect_gt(sub_find(s, (size_t)beat + 1, "stream.heartbeat", NULL), beat,
	    "one heartbeat only in 25 s");
	sub_close(s);
	free(run), free(project);
}

Test(events, sigterm_with_streams_open_exits_promptly)
{
	struct sub *subs[10];
	int64_t t0;

	for (int i = 0; i < 10; i++)
		subs[i] = sub_open("", NULL);
	for (int i = 0; i < 10; i++)
		sub_wait(subs[i], "stream.hello", NULL, 5000);
	t0 = clock_mono_ms();
	svc_stop(&svc);
	cr_expect_lt(clock_mono_ms() - t0, 3000, "taskdeckd took %lld ms to stop",
	    (long long)(clock_mono_ms() - t0));
	for (int i = 0; i < 10; i++) {
		cr_expect(sub_wait_end(subs[i], 2000), "stream %d is still open", i);
		sub_close(subs[i]);
	}
}

/* The replay window is bounded in bytes too (issue 17, finding 6): 4,096 events
 * of up to 636 KiB each could hold 2.5 GiB.  With 256 KiB, a resume point a
 * few events back (far inside the last 4,096) has expired after 10 events of
 * 50 KB; one event back has not. */
Test(events, the_replay_window_is_bounded_in_bytes)
{
	const char *args[] = { "--events-window-bytes", "262144", NULL };
	static char body[60000];
	char stream_id[40], id[128], last[128];
	struct http_resp r;
	struct sub *a, *c;
	uint64_t first;
	size_t n;

	svc_stop(&svc);
	svc_start_with(&svc, args);
	discovery_stream_id(stream_id);
	a = sub_open("", NULL);
	sub_wait(a, "stream.hello", NULL, 5000);
	n = (size_t)snprintf(body, sizeof body, "{\"name\":\"big\",\"context\":\"");
	memset(body + n, 'c', 50000);
	n += 50000;
	snprintf(body + n, sizeof body - n, "\"}");
	for (int i = 0; i < 10; i++) {
		r = http_api(&svc, "POST", "/api/v1/projects", body);
		cr_assert_eq(r.status, 201, "%s", r.body);
		http_resp_free(&r);
	}
	for (int i = 0; i < 100 && a->n < 11; i++)
		usleep(50000);
	pthread_mutex_lock(&a->mu);
	cr_assert_geq(a->n, 11, "10 project events");
	first = rec_seq(&a->recs[1]);
	snprintf(last, sizeof last, "%s", a->recs[a->n - 2].id);
	pthread_mutex_unlock(&a->mu);
	sub_close(a);

	snprintf(id, sizeof id, "%s:%" PRIu64, stream_id, first);
	c = sub_open("", id);
	sub_wait(c, "stream.resync-required", NULL, 5000);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(c->recs[1].json, "data"),
	    "reason"), "expired", "10 events back, 500 KB ago");
	sub_close(c);
	c = sub_open("", last);
	sub_wait(c, "project.updated", NULL, 5000);
	cr_expect_str_eq(c->recs[1].type, "project.updated", "one event back is replayed");
	sub_close(c);
}
