/*
 * A long run on a small window through a real taskdeckd and taskdeck-agent:
 * 300 steps, each a read of a 20 KiB file, under a 32,768-token window, with
 * a fake OpenAI-compatible server that answers each request from what it is
 * sent (the step after the last tool result it sees; a summary when asked
 * without tools).  It completes, compacting on the way; killed with -9
 * halfway, the service resumes it and only the request in flight is asked
 * again.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"

#define STEPS 300
#define FILES 5
#define FILE_BYTES (20 * 1024)
#define FINAL_WAIT_MS 600000

TestSuite(longrun, .init = svc_setup, .fini = svc_teardown, .timeout = 900);

/* What the fake server saw, and where it holds a request for the test to kill the service. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int asked[STEPS + 1];	/* requests for each step */
	int summaries;
	int hold_at;		/* the step whose request waits for released; -1: none */
	bool holding, released;
} gen = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, 0, -1, false, false };

/* The step a request asks for: the one after its last tool result's call_N, else 0. */
static int
step_of(const cJSON *req)
{
	const cJSON *m;
	int step = 0;

	cJSON_ArrayForEach(m, cJSON_GetObjectItem(req, "messages")) {
		const char *id = json_get_string(m, "tool_call_id");

		if (id != NULL && strncmp(id, "call_", 5) == 0)
			step = atoi(id + 5) + 1;
	}
	return step;
}

static struct fake_reply
answer(void *ud, const char *body)
{
	cJSON *req = cJSON_Parse(body);
	struct buf b;
	int step;

	buf_init(&b, 0);
	if (cJSON_GetObjectItem(req, "tools") == NULL) {
		pthread_mutex_lock(&gen.mu);
		gen.summaries++;
		pthread_mutex_unlock(&gen.mu);
		fake_openai_text(&b, "SUMMARY: the agent reads the five files in turn, as asked.");
		fake_openai_delta(&b, "{}", "stop");
	} else {
		step = step_of(req);
		pthread_mutex_lock(&gen.mu);
		gen.asked[step < STEPS ? step : STEPS]++;
		if (step == gen.hold_at && !gen.released) {
			struct timespec until;

			gen.holding = true;
			pthread_cond_broadcast(&gen.cv);
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 60;
			while (!gen.released && pthread_cond_timedwait(&gen.cv, &gen.mu, &until) == 0)
				;
		}
		pthread_mutex_unlock(&gen.mu);
		if (step >= STEPS) {
			fake_openai_text(&b, "All 300 steps done.");
			fake_openai_delta(&b, "{}", "stop");
		} else {
			char id[32], args[64];

			snprintf(id, sizeof id, "call_%d", step);
			snprintf(args, sizeof args, "{\"path\":\"f%d.txt\"}", step % FILES);
			fake_openai_tool_call(&b, 0, id, "read_file", args, 64);
			fake_openai_delta(&b, "{}", "tool_calls");
		}
	}
	/* About 4 bytes a token, as servers count JSON-heavy prompts. */
	fake_openai_usage(&b, (int)(strlen(body) / 4), 20);
	fake_openai_done(&b);
	cJSON_Delete(req);
	return (struct fake_reply){ .status = 200, .body = buf_steal(&b) };
}

/* A workspace of FILES files of FILE_BYTES each; its path in dir. */
static void
workspace(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/tdlong-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	for (int i = 0; i < FILES; i++) {
		char path[600];
		FILE *f;

		snprintf(path, sizeof path, "%s/f%d.txt", dir, i);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		for (int n = 0; n < FILE_BYTES; n += 64)
			fprintf(f, "file %d, line %05d: some text of the long run to be read....\n", i,
			    n / 64);
		fclose(f);
	}
}

/*
 * Waits until the service has stored the result of call step - 1: its
 * run.tool completed is followed in the run's history by run.progress
 * "thinking", which the agent sends after that result's checkpoint line, and
 * the service handles the lines in order, storing each checkpoint at once.
 * Then the request for step is the only work the checkpoint lacks (the
 * agent's lines before it may still be in the pipe while the service writes).
 */
static void
wait_stored(const char *run_id, int step)
{
	char call[32];
	long after = 0;
	bool tool = false, stored = false;

	snprintf(call, sizeof call, "call_%d", step - 1);
	for (int i = 0; i < 600 && !stored; i++) {
		cJSON *page = http_get_json(&svc, "/api/v1/runs/%s/events?after=%ld&limit=1000",
		    run_id, after), *e;

		cJSON_ArrayForEach(e, page) {
			const cJSON *d = cJSON_GetObjectItem(e, "data");
			const char *type = json_str_or_none(e, "type");

			after = (long)json_num(e, "seq");
			if (strcmp(type, "run.tool") == 0 &&
			    strcmp(json_str_or_none(d, "callId"), call) == 0 &&
			    strcmp(json_str_or_none(d, "status"), "completed") == 0)
				tool = true;
			else if (tool && strcmp(type, "run.progress") == 0 &&
			    strcmp(json_str_or_none(d, "phase"), "thinking") == 0)
				stored = true;
		}
		if (cJSON_GetArraySize(page) < 1000 && !stored)
			usleep(50000);
		cJSON_Delete(page);
	}
	cr_assert(stored, "the result of %s was never stored", call);
}

/* settings.json: the fake as provider "local", its model's window 32,768 tokens. */
static void
settings(struct fake_provider *fp)
{
	char text[1024];

	snprintf(text, sizeof text, "{\"providers\": {\"local\": {\"kind\": \"openai\", "
	    "\"baseUrl\": \"%s\", \"apiKeyEnv\": null, \"defaultModel\": \"tiny\", \"models\": "
	    "{\"tiny\": {\"contextWindow\": 32768}}}}, \"defaults\": {\"provider\": \"local\"}, "
	    "\"runs\": {\"maxTurns\": 400}}", fake_provider_url(fp, "/v1"));
	svc_stop(&svc);
	svc_write_file(&svc, "settings.json", text);
	svc_restart(&svc);
}

static void
long_run(bool kill9)
{
	struct fake_provider *fp = fake_provider_start_fn(answer, NULL);
	char dir[400], *project;
	cJSON *run, *final;
	const char *id;
	int redone = 0, never = 0;
	struct buf which;

	cr_assert_not_null(fp);
	gen.hold_at = kill9 ? STEPS / 2 : -1;
	settings(fp);
	workspace(dir, sizeof dir);
	project = http_project_new(&svc, "longrun");
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"Read f0.txt to f4.txt in "
	    "turn, %d times in all.\",\"cwd\":\"%s\",\"config\":{\"provider\":\"local\","
	    "\"model\":\"tiny\"}}", project, STEPS, dir);
	id = json_get_string(run, "id");
	if (kill9) {
		pthread_mutex_lock(&gen.mu);
		while (!gen.holding)
			pthread_cond_wait(&gen.cv, &gen.mu);
		pthread_mutex_unlock(&gen.mu);
		wait_stored(id, STEPS / 2);
		svc_kill(&svc);
		svc_restart(&svc);
		pthread_mutex_lock(&gen.mu);
		gen.released = true;
		pthread_cond_broadcast(&gen.cv);
		pthread_mutex_unlock(&gen.mu);
	}
	final = run_wait_final(&svc, id, FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_assert_str_eq(json_str_or_none(final, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(cJSON_GetObjectItem(final, "error")));
	cr_expect(strstr(json_str_or_none(final, "output"), "All 300 steps done.") != NULL);
	pthread_mutex_lock(&gen.mu);
	buf_init(&which, 0);
	for (int k = 0; k <= STEPS; k++) {
		never += gen.asked[k] == 0;
		redone += gen.asked[k] > 1 ? gen.asked[k] - 1 : 0;
		if (gen.asked[k] != 1)
			buf_printf(&which, " step %d: %d", k, gen.asked[k]);
	}
	cr_expect_eq(never, 0, "a step was never asked for:%s", which.data ? which.data : "");
	cr_expect_eq(redone, kill9 ? 1 : 0, "requests asked again: %d:%s", redone,
	    which.data ? which.data : "");
	buf_free(&which);
	if (kill9)
		cr_expect_eq(gen.asked[STEPS / 2], 2, "the request in flight is asked again");
	/* Each step adds about 6,000 tokens: a summary every few steps, not every step. */
	cr_expect(gen.summaries >= STEPS / 20 && gen.summaries <= STEPS / 2, "%d summaries",
	    gen.summaries);
	pthread_mutex_unlock(&gen.mu);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
	fake_provider_stop(fp);
	{
		char cmd[500];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		cr_expect_eq(system(cmd), 0);
	}
}

Test(longrun, three_hundred_reads_of_20_kib_on_a_32k_window_complete)
{
	long_run(false);
}

Test(longrun, killed_halfway_it_resumes_and_asks_again_only_the_request_in_flight)
{
	long_run(true);
}
