/*
 * Runs that survive a restart (issue 15, docs/service.md "Restart"), through
 * a real taskdeckd and taskdeck-agent with replay transcripts: kill -9 and
 * SIGTERM at each waiting point and during a streaming run, a loop of random
 * kill -9 points over a multi-step run, cancel between a restart and the
 * resume, the output kept and the history gap recorded (issue 17, finding 10).
 * The final state of a run that finishes on a full disk (issue 17, finding 3)
 * is tested in the full-disk rig: test-fulldisk.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness.h"
#include "json.h"
#include "timeutil.h"

#define FINAL_WAIT_MS 40000
#define STATE_WAIT_MS 20000

TestSuite(durable, .init = svc_setup, .fini = svc_teardown, .timeout = 180);

enum stop_kind { KILL9, SIGTERM_STOP };

static cJSON *
run_get(const char *id)
{
	return http_get_json(&svc, "/api/v1/runs/%s", id);
}

static void
stop_service(enum stop_kind kind)
{
	if (kind == KILL9)
		svc_kill(&svc);
	else
		svc_stop(&svc);
}

/* The run's stored history (GET /runs/:id/events). */
static cJSON *
history(const char *run_id)
{
	return http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", run_id);
}

/*
 * The history read a few events at a time, following the Link rel="next" of
 * each page; it must be the whole history, in the same order, also when the
 * run spans several streams.
 */
static cJSON *
history_paged(const char *run_id, int limit, int *pages)
{
	cJSON *all = cJSON_CreateArray();
	char path[512];

	snprintf(path, sizeof path, "/api/v1/runs/%s/events?limit=%d", run_id, limit);
	for (*pages = 0; *pages < 1000; (*pages)++) {
		struct http_resp r = http_api(&svc, "GET", path, NULL);
		char *link, *lt, *gt;
		cJSON *e;

		cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
		cJSON_ArrayForEach(e, r.json)
			cJSON_AddItemToArray(all, cJSON_Duplicate(e, true));
		link = http_header(&r, "Link");
		http_resp_free(&r);
		if (link == NULL)
			break;
		lt = strchr(link, '<');
		gt = lt ? strchr(lt, '>') : NULL;
		cr_assert(gt != NULL && strstr(gt, "rel=\"next\""), "%s", link);
		snprintf(path, sizeof path, "%.*s", (int)(gt - lt - 1), lt + 1);
		free(link);
	}
	return all;
}

/* Events of type in the history (with phase, of run.progress only that phase). */
static int
history_count(const cJSON *h, const char *type, const char *phase)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, h) {
		if (strcmp(json_str_or_none(e, "type"), type) != 0)
			continue;
		if (phase != NULL && strcmp(json_str_or_none(cJSON_GetObjectItem(e, "data"), "phase"),
		    phase) != 0)
			continue;
		n++;
	}
	return n;
}

/* How many distinct streams the history spans. */
static int
history_streams(const cJSON *h)
{
	const cJSON *e;
	char seen[8][64];
	int n = 0;

	cJSON_ArrayForEach(e, h) {
		const char *sid = json_str_or_none(e, "streamId");
		bool found = false;

		for (int i = 0; i < n; i++)
			found = found || strcmp(seen[i], sid) == 0;
		if (!found && n < 8)
			snprintf(seen[n++], sizeof seen[0], "%s", sid);
	}
	return n;
}

/* Occurrences of needle in hay. */
static int
occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* Polls until the run's history holds run.progress resumed. */
static void
resumed_wait(const char *run_id)
{
	int64_t deadline = clock_mono_ms() + STATE_WAIT_MS;

	for (;;) {
		cJSON *h = history(run_id);
		int n = history_count(h, "run.progress", "resumed");

		cJSON_Delete(h);
		if (n > 0)
			return;
		cr_assert(clock_mono_ms() < deadline, "run %s never resumed", run_id);
		usleep(50000);
	}
}

static cJSON *
artifacts_of(const char *session)
{
	return http_get_json(&svc, "/api/v1/sessions/%s/artifacts", session);
}

/*
 * A plan awaiting approval when the service stops is the same plan after the
 * restart (version, revision, the run's attention); approving it resumes the
 * agent there, and the run completes with its one artifact.  With wait_first,
 * the approval comes once the resumed agent has asked again; without, before.
 */
static void
plan_survives(enum stop_kind kind, bool wait_first)
{
	char *project = http_project_new(&svc, "durable");
	cJSON *run = http_replay_run(&svc, "do it", project, "plan", ",\"turnIntent\":\"plan-first\"");
	const char *id = json_get_string(run, "id"), *session = json_get_string(run, "sessionId");
	cJSON *plan, *before, *after, *now, *h, *arts;
	char path[128], body[256];
	struct http_resp r;

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	before = run_get(id);
	cr_assert_not_null(cJSON_GetObjectItem(before, "attention"));
	stop_service(kind);
	svc_restart(&svc);

	after = run_get(id);
	cr_expect_str_eq(json_str_or_none(after, "status"), "running");
	cr_expect(cJSON_Compare(cJSON_GetObjectItem(before, "attention"),
	    cJSON_GetObjectItem(after, "attention"), true), "attention changed: %s -> %s",
	    cJSON_PrintUnformatted(cJSON_GetObjectItem(before, "attention")),
	    cJSON_PrintUnformatted(cJSON_GetObjectItem(after, "attention")));
	now = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_str_eq(json_str_or_none(now, "status"), "awaiting-approval");
	cr_expect_eq(json_num(now, "version"), json_num(plan, "version"));
	cr_expect_eq(json_num(now, "revision"), json_num(plan, "revision"));
	cJSON_Delete(now);
	if (wait_first) {
		resumed_wait(id);
		usleep(700000);	/* the agent proposes again: rebound, not a new version */
		now = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
		cr_expect_eq(json_num(now, "version"), json_num(plan, "version"));
		cr_expect_eq(json_num(now, "revision"), json_num(plan, "revision"));
		cJSON_Delete(now);
	}

	snprintf(path, sizeof path, "/api/v1/sessions/%s/plan/respond", session);
	snprintf(body, sizeof body, "{\"decision\":\"approve\",\"version\":%ld,\"revision\":%ld}",
	    (long)json_num(plan, "version"), (long)json_num(plan, "revision"));
	r = http_api(&svc, "POST", path, body);
	cr_assert_eq(r.status, 200, "approve after the restart: %ld %s", r.status, r.body);
	http_resp_free(&r);
	cJSON_Delete(run_final_within(&svc, id, "completed", FINAL_WAIT_MS));
	now = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_eq(json_num(now, "version"), 1, "the resumed run proposed a new version");
	cr_expect_str_eq(json_str_or_none(now, "status"), "completed");
	cJSON_Delete(now);
	arts = artifacts_of(session);
	cr_expect_eq(cJSON_GetArraySize(arts), 1, "%s", cJSON_PrintUnformatted(arts));
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(arts, 0), "name"), "report.md");
	cJSON_Delete(arts);
	h = history(id);
	cr_expect_eq(history_count(h, "run.progress", "resumed"), 1);
	cr_expect_eq(history_count(h, "run.started", NULL), 1, "the whole history is kept");
	cr_expect_eq(history_count(h, "run.finished", NULL), 1);
	cr_expect_eq(history_streams(h), 2, "the history spans both streams");
	cJSON_Delete(h);
	cJSON_Delete(before);
	cJSON_Delete(after);
	cJSON_Delete(plan);
	cJSON_Delete(run);
	free(project);
}

Test(durable, plan_awaiting_approval_survives_kill_9)
{
	plan_survives(KILL9, false);
}

Test(durable, plan_awaiting_approval_survives_sigterm)
{
	plan_survives(SIGTERM_STOP, true);
}

static void
prompt_allow(const char *id)
{
	char path[128];
	struct http_resp r;

	snprintf(path, sizeof path, "/app/v1/permissions/%s", id);
	r = http_api(&svc, "POST", path, "{\"decision\":\"allow\"}");
	cr_assert_eq(r.status, 200, "allow %s: %ld %s", id, r.status, r.body);
	cr_expect_str_eq(json_str_or_none(r.json, "status"), "allowed");
	http_resp_free(&r);
}

/*
 * A pending permission prompt is the same prompt (id, status) after the
 * restart; answering it resumes the agent there; the run asks each of its
 * three questions once and completes with its two artifacts.
 */
static void
prompt_survives(enum stop_kind kind, bool wait_first)
{
	char *project = http_project_new(&svc, "durable");
	cJSON *run = http_replay_run(&svc, "do it", project, "ask", ",\"permissionProfile\":\"ask\"");
	const char *id = json_get_string(run, "id"), *session = json_get_string(run, "sessionId");
	cJSON *p, *now, *all, *arts, *r;
	char last[64];

	p = prompt_wait_pending(&svc, id, NULL, STATE_WAIT_MS);
	stop_service(kind);
	svc_restart(&svc);
	r = run_get(id);
	cr_expect_str_eq(json_str_or_none(r, "status"), "running");
	cJSON_Delete(r);
	now = http_get_json(&svc, "/app/v1/permissions/%s", json_get_string(p, "id"));
	cr_expect_str_eq(json_str_or_none(now, "status"), "pending");
	cr_expect(cJSON_Compare(p, now, true), "the prompt changed: %s -> %s",
	    cJSON_PrintUnformatted(p), cJSON_PrintUnformatted(now));
	cJSON_Delete(now);
	if (wait_first) {
		resumed_wait(id);
		usleep(700000);
	}
	prompt_allow(json_get_string(p, "id"));
	snprintf(last, sizeof last, "%s", json_get_string(p, "id"));
	for (int i = 0; i < 2; i++) {
		cJSON *next = prompt_wait_pending(&svc, id, last, STATE_WAIT_MS);

		snprintf(last, sizeof last, "%s", json_get_string(next, "id"));
		prompt_allow(last);
		cJSON_Delete(next);
	}
	cJSON_Delete(run_final_within(&svc, id, "completed", FINAL_WAIT_MS));
	all = http_get_json(&svc, "/app/v1/permissions?run=%s&status=all", id);
	cr_expect_eq(cJSON_GetArraySize(all), 3, "each question asked once: %s",
	    cJSON_PrintUnformatted(all));
	cJSON_Delete(all);
	arts = artifacts_of(session);
	cr_expect_eq(cJSON_GetArraySize(arts), 2, "%s", cJSON_PrintUnformatted(arts));
	cJSON_Delete(arts);
	cJSON_Delete(p);
	cJSON_Delete(run);
	free(project);
}

Test(durable, pending_prompt_survives_kill_9)
{
	prompt_survives(KILL9, true);
}

Test(durable, pending_prompt_survives_sigterm)
{
	prompt_survives(SIGTERM_STOP, false);
}

/*
 * A run streaming its output when the service stops resumes from its last
 * checkpoint and completes: its output holds each part once, its one save is
 * not made twice, the history says resumed, and (after kill -9 only) records
 * the gap of events that may be missing.
 */
static void
streaming_survives(enum stop_kind kind)
{
	char *project = http_project_new(&svc, "durable");
	cJSON *run = http_replay_run(&svc, "do it", project, "steady", "");
	const char *id = json_get_string(run, "id"), *session = json_get_string(run, "sessionId");
	cJSON *r, *h, *arts;
	const char *out;

	run_output_wait(&svc, id, STATE_WAIT_MS, "tick 3\n");
	stop_service(kind);
	svc_restart(&svc);
	r = run_get(id);
	cr_expect_str_eq(json_str_or_none(r, "status"), "running");
	cJSON_Delete(r);
	r = run_final_within(&svc, id, "completed", FINAL_WAIT_MS);
	out = json_str_or_none(r, "output");
	cr_expect_eq(occurrences(out, "Starting; progress.md"), 1, "%s", out);
	cr_expect_eq(occurrences(out, "tick 30\n"), 1, "%s", out);
	cr_expect_eq(occurrences(out, "tick 1\n"), 1, "%s", out);
	cr_expect(strstr(out, "Done.") != NULL, "%s", out);
	cJSON_Delete(r);
	arts = artifacts_of(session);
	cr_expect_eq(cJSON_GetArraySize(arts), 1, "saved once: %s", cJSON_PrintUnformatted(arts));
	cJSON_Delete(arts);
	h = history(id);
	{
		int pages;
		cJSON *paged = history_paged(id, 7, &pages);

		cr_expect_gt(pages, 3);
		cr_expect_eq(history_streams(h), 2);
		cr_expect(cJSON_Compare(h, paged, true), "paging by 7 lost or repeated events: "
		    "%d of %d", cJSON_GetArraySize(paged), cJSON_GetArraySize(h));
		cJSON_Delete(paged);
	}
	cr_expect_eq(history_count(h, "run.progress", "resumed"), 1);
	cr_expect_eq(history_count(h, "run.history-gap", NULL), kind == KILL9 ? 1 : 0);
	cr_expect_eq(history_count(h, "run.started", NULL), 1);
	cr_expect_eq(history_count(h, "run.finished", NULL), 1);
	cJSON_Delete(h);
	cJSON_Delete(run);
	free(project);
}

Test(durable, streaming_run_survives_kill_9)
{
	streaming_survives(KILL9);
}

Test(durable, streaming_run_survives_sigterm)
{
	streaming_survives(SIGTERM_STOP);
}

/*
 * Issue 17, finding 10: a run that cannot resume keeps the output it had
 * streamed (it used to end with "").
 */
Test(durable, a_run_past_the_limit_keeps_its_output)
{
	char *project = http_project_new(&svc, "durable");
	cJSON *run = http_replay_run(&svc, "do it", project, "steady", "");
	const char *id = json_get_string(run, "id");
	cJSON *r, *h;

	run_output_wait(&svc, id, STATE_WAIT_MS, "tick 2\n");
	usleep(400000);	/* the output is stored within 200 ms of its arrival */
	svc_kill(&svc);
	svc_set_run_setting(&svc, "resumeLimit", 0);
	svc_restart(&svc);
	r = run_get(id);
	cr_expect_str_eq(json_str_or_none(r, "status"), "failed");
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(r, "error"), "code"), "resume_limit");
	cr_expect(strstr(json_str_or_none(r, "output"), "Starting; progress.md") != NULL &&
	    strstr(json_str_or_none(r, "output"), "tick 1\n") != NULL,
	    "the streamed output is lost: \"%s\"", json_str_or_none(r, "output"));
	cJSON_Delete(r);
	h = history(id);
	cr_expect_eq(history_count(h, "run.history-gap", NULL), 1);
	cr_expect_eq(history_count(h, "run.finished", NULL), 1);
	cJSON_Delete(h);
	cJSON_Delete(run);
	free(project);
}

/*
 * A checkpoint over 1 MiB read back from a damaged database (the service
 * stores at most 768 KiB) fails the resumed run with checkpoint_invalid, as a
 * checkpoint the agent cannot read does, not with runtime_crashed.
 */
Test(durable, oversized_checkpoint_fails_checkpoint_invalid)
{
	char *project = http_project_new(&svc, "durable");
	cJSON *run = http_replay_run(&svc, "do it", project, "steady", "");
	const char *id = json_get_string(run, "id");
	size_t pad = 1100 * 1024;
	char *cp = malloc(pad + 16), *db_path;
	sqlite3 *db;
	sqlite3_stmt *st;
	cJSON *r;

	run_output_wait(&svc, id, STATE_WAIT_MS, "tick 2\n");
	svc_kill(&svc);
	memcpy(cp, "{\"pad\":\"", 8);
	memset(cp + 8, 'x', pad);
	memcpy(cp + 8 + pad, "\"}", 3);
	cr_assert(asprintf(&db_path, "%s/taskdeck.db", svc.home) > 0);
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "UPDATE runs SET checkpoint = ?1 WHERE id = ?2", -1,
	    &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, cp, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_changes(db), 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	svc_restart(&svc);
	r = run_final_within(&svc, id, "failed", FINAL_WAIT_MS);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(r, "error"), "code"),
	    "checkpoint_invalid", "%s", json_str_or_none(cJSON_GetObjectItem(r, "error"),
	    "message"));
	cJSON_Delete(r);
	cJSON_Delete(run);
	free(project);
	free(db_path);
	free(cp);
}

/*
 * A long run: 500 steps, each a tool result of about 64 KiB (about 32 MiB of
 * conversation), killed (-9) near step 450.  It resumes from its last step:
 * the tool calls made after the restart are those of the steps left, not of
 * hundreds of steps redone, and each step's output is there once.
 */
Test(durable, a_500_step_run_resumes_near_where_it_was_killed)
{
	char *project, *out;
	cJSON *run, *r, *h, *e;
	const char *id, *resumed_stream = NULL;
	int64_t deadline;
	int pages, after = 0, reads = 0;
	char want[32], last[128] = "";

	svc_stop(&svc);
	svc_set_run_setting(&svc, "maxTurns", 1000);
	svc_restart(&svc);
	project = http_project_new(&svc, "long");
	run = http_replay_run(&svc, "read long.txt 499 times", project, "longrun", "");
	id = json_get_string(run, "id");
	/* The history, read on from the last event seen, until step 450's output. */
	deadline = clock_mono_ms() + 400000;
	for (bool seen = false; !seen;) {
		char path[512];
		cJSON *page;

		snprintf(path, sizeof path, "/api/v1/runs/%s/events?limit=1000%s%s", id,
		    last[0] ? "&after=" : "", last);
		page = http_get_json(&svc, "%s", path);
		cJSON_ArrayForEach(e, page) {
			const char *delta = json_str_or_none(cJSON_GetObjectItem(e, "data"), "delta");

			cr_assert(strcmp(json_str_or_none(e, "type"), "run.finished") != 0,
			    "the run ended before step 450");
			seen |= strcmp(json_str_or_none(e, "type"), "run.output") == 0 &&
			    strcmp(delta, "step 450\n") == 0;
			snprintf(last, sizeof last, "%s:%.0f", json_str_or_none(e, "streamId"),
			    json_num(e, "seq"));
		}
		cJSON_Delete(page);
		cr_assert_lt(clock_mono_ms(), deadline, "the run never reached step 450");
		if (!seen)
			usleep(20000);
	}
	svc_kill(&svc);
	svc_restart(&svc);
	r = run_final_within(&svc, id, "completed", 400000);
	out = (char *)json_str_or_none(r, "output");
	for (int k = 2; k <= 500; k++) {
		snprintf(want, sizeof want, "step %d\n", k);
		cr_expect_eq(occurrences(out, want), 1, "%s is in the output %d times", want,
		    occurrences(out, want));
	}
	cr_expect_eq(occurrences(out, "All 500 steps done."), 1);
	cJSON_Delete(r);

	/* The read_file calls made by the resumed agent (the stream after the restart). */
	h = history_paged(id, 1000, &pages);
	cJSON_ArrayForEach(e, h) {
		const cJSON *d = cJSON_GetObjectItem(e, "data");

		if (strcmp(json_str_or_none(e, "type"), "run.progress") == 0 &&
		    strcmp(json_str_or_none(d, "phase"), "resumed") == 0)
			resumed_stream = json_str_or_none(e, "streamId");
		if (resumed_stream != NULL && strcmp(json_str_or_none(e, "type"), "run.tool") == 0 &&
		    strcmp(json_str_or_none(e, "streamId"), resumed_stream) == 0 &&
		    strcmp(json_str_or_none(d, "status"), "started") == 0) {
			after++;
			reads += strcmp(json_str_or_none(d, "name"), "read_file") == 0;
		}
	}
	cr_expect_not_null(resumed_stream, "no run.progress resumed");
	cr_expect(after >= 1 && after <= 60, "%d tool calls after the restart (%d reads): the "
	    "run did not resume near step 450", after, reads);
	cJSON_Delete(h);
	cJSON_Delete(run);
	free(project);
}

/* Cancel between a restart and the resume (the run waits for a slot), and after. */
Test(durable, cancel_between_restart_and_resume)
{
	char *project = http_project_new(&svc, "durable");
	cJSON *a = http_replay_run(&svc, "do it", project, "steady", ""), *b = http_replay_run(&svc, "do it", project, "steady", "");
	const char *ida = json_get_string(a, "id"), *idb = json_get_string(b, "id");
	struct http_resp r;
	char path[128];
	cJSON *run, *h;
	int64_t t0;

	run_output_wait(&svc, ida, STATE_WAIT_MS, "tick 1\n");
	run_output_wait(&svc, idb, STATE_WAIT_MS, "tick 1\n");
	svc_kill(&svc);
	svc_set_run_setting(&svc, "maxConcurrent", 1);
	svc_restart(&svc);
	run = run_get(idb);
	cr_expect_str_eq(json_str_or_none(run, "status"), "running");
	cJSON_Delete(run);
	/* b waits for a's slot: no agent; cancel ends it at once. */
	snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", idb);
	t0 = mono_ms();
	r = http_api(&svc, "POST", path, NULL);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	run = run_final_within(&svc, idb, "cancelled", FINAL_WAIT_MS);
	cr_expect_lt(mono_ms() - t0, 3000, "the cancel waited for a slot");
	cJSON_Delete(run);
	h = history(idb);
	cr_expect_eq(history_count(h, "run.progress", "resumed"), 0, "b never resumed");
	cJSON_Delete(h);
	/* a resumed: cancel works as always. */
	resumed_wait(ida);
	snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", ida);
	r = http_api(&svc, "POST", path, NULL);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	cJSON_Delete(run_final_within(&svc, ida, "cancelled", FINAL_WAIT_MS));
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(project);
}

/*
 * At least 20 kill -9 points at random moments over multi-step runs: every
 * run ends completed or, past runs.resumeLimit, failed with resume_limit;
 * none stays running; a completed run has each step's text once and its one
 * artifact once.
 */
Test(durable, random_kill_9_loop)
{
	enum { KILLS = 20, MAX_RUNS = 24 };
	char *project = http_project_new(&svc, "durable");
	char ids[MAX_RUNS][64], sessions[MAX_RUNS][64];
	int nruns = 0, completed = 0, limited = 0;
	unsigned seed = (unsigned)getpid() ^ (unsigned)mono_ms();
	int64_t t0 = mono_ms();

	svc_stop(&svc);
	svc_set_run_setting(&svc, "resumeLimit", 3);
	svc_restart(&svc);
	fprintf(stderr, "random_kill_9_loop: seed %u\n", seed);
	for (int k = 0; k < KILLS; k++) {
		cJSON *r;
		bool live = false;

		for (int i = 0; i < nruns; i++) {
			r = run_get(ids[i]);
			const char *st = json_str_or_none(r, "status");

			cr_assert(strcmp(st, "running") == 0 || strcmp(st, "queued") == 0 ||
			    strcmp(st, "completed") == 0 || (strcmp(st, "failed") == 0 &&
			    strcmp(json_str_or_none(cJSON_GetObjectItem(r, "error"), "code"),
			    "resume_limit") == 0), "run %s: %s", ids[i], cJSON_PrintUnformatted(r));
			live = live || strcmp(st, "running") == 0 || strcmp(st, "queued") == 0;
			cJSON_Delete(r);
		}
		if (!live && nruns < MAX_RUNS) {
			r = http_replay_run(&svc, "do it", project, "steps", "");
			snprintf(ids[nruns], sizeof ids[0], "%s", json_get_string(r, "id"));
			snprintf(sessions[nruns++], sizeof sessions[0], "%s",
			    json_get_string(r, "sessionId"));
			cJSON_Delete(r);
		}
		usleep(1000 * (useconds_t)(50 + rand_r(&seed) % 900));
		svc_kill(&svc);
		svc_restart(&svc);
	}
	for (int i = 0; i < nruns; i++) {
		cJSON *r = run_final_within(&svc, ids[i], NULL, FINAL_WAIT_MS), *arts;
		const char *st = json_str_or_none(r, "status"), *out = json_str_or_none(r, "output");

		if (strcmp(st, "completed") == 0) {
			completed++;
			for (int s = 1; s <= 5; s++) {
				char step[32];

				snprintf(step, sizeof step, "Step %d: writing step%d.md.", s, s);
				cr_expect_eq(occurrences(out, step), 1, "run %s: %s", ids[i], out);
			}
			cr_expect_eq(occurrences(out, "All steps done; report.md is saved."), 1,
			    "run %s: %s", ids[i], out);
			arts = artifacts_of(sessions[i]);
			cr_expect_eq(cJSON_GetArraySize(arts), 1, "run %s saved twice: %s", ids[i],
			    cJSON_PrintUnformatted(arts));
			cJSON_Delete(arts);
		} else {
			cr_expect_str_eq(st, "failed");
			cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(r, "error"), "code"),
			    "resume_limit");
			limited++;
		}
		cJSON_Delete(r);
	}
	fprintf(stderr, "random_kill_9_loop: %d runs, %d completed, %d resume_limit, %ld ms\n",
	    nruns, completed, limited, mono_ms() - t0);
	/* Which runs complete depends on the random points; completing across restarts is
	 * asserted by the tests above. */
	free(project);
}
