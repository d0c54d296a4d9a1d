/*
 * Plans and permission prompts through a real taskdeckd and taskdeck-agent
 * with the replay transcripts plan.json and ask.json (docs/http-api.md,
 * Plans and Permission prompts).
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "timeutil.h"

#define FINAL_WAIT_MS 30000
#define STATE_WAIT_MS 20000

TestSuite(plans, .init = svc_setup, .fini = svc_teardown, .timeout = 90);
TestSuite(permissions, .init = svc_setup, .fini = svc_teardown, .timeout = 90);

static cJSON *
plan_run_start(const char *project)
{
	return http_replay_run(&svc, "write the report", project, "plan", ",\"turnIntent\":\"plan-first\"");
}

/* POST .../plan/respond; feedback NULL for none. */
static struct http_resp
plan_respond(const char *session, const char *decision, long version, long revision,
    const char *feedback)
{
	char path[128], body[512];

	snprintf(path, sizeof path, "/api/v1/sessions/%s/plan/respond", session);
	if (feedback != NULL)
		snprintf(body, sizeof body, "{\"decision\":\"%s\",\"version\":%ld,"
		    "\"revision\":%ld,\"feedback\":\"%s\"}", decision, version, revision, feedback);
	else
		snprintf(body, sizeof body, "{\"decision\":\"%s\",\"version\":%ld,"
		    "\"revision\":%ld}", decision, version, revision);
	return http_api(&svc, "POST", path, body);
}

/* Responds and asserts 200; the plan after the decision. */
static cJSON *
plan_decide(const char *session, const char *decision, const cJSON *plan, const char *feedback)
{
	struct http_resp r = plan_respond(session, decision, json_num(plan, "version"),
	    json_num(plan, "revision"), feedback);
	cJSON *j;

	cr_assert_eq(r.status, 200, "%s: %ld %s", decision, r.status, r.body);
	j = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return j;
}

static const char *
error_code(const struct http_resp *r)
{
	const char *c = http_error_code(r);

	return c ? c : "(none)";
}

/* The attention of the run, or NULL (owned by run). */
static const cJSON *
attention_of(const cJSON *run)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(run, "attention");

	return cJSON_IsObject(a) ? a : NULL;
}

/* Asserts that name is among the session's artifacts. */
static bool
has_artifact(const char *session, const char *name)
{
	cJSON *arts = http_get_json(&svc, "/api/v1/sessions/%s/artifacts", session), *a;
	bool found = false;

	cJSON_ArrayForEach(a, arts)
		found = found || strcmp(json_str_or_none(a, "name"), name) == 0;
	cJSON_Delete(arts);
	return found;
}

Test(plans, full_cycle_propose_revise_twice_approve_complete)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = plan_run_start(project), *plan, *after, *r, *step;
	const char *run_id = json_get_string(run, "id");
	const char *session = json_get_string(run, "sessionId");
	const cJSON *att;
	long approved_revision;

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	cr_expect_eq(json_num(plan, "revision"), 1);
	cr_expect_str_eq(json_str_or_none(plan, "runId"), run_id);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(plan, "feedback")));
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(plan, "steps")), 3);
	cJSON_ArrayForEach(step, cJSON_GetObjectItem(plan, "steps")) {
		cr_expect_str_eq(json_str_or_none(step, "status"), "pending");
		cr_expect_neq(strlen(json_str_or_none(step, "id")), 0);
	}
	r = http_get_json(&svc, "/api/v1/runs/%s", run_id);
	cr_expect_str_eq(json_str_or_none(r, "status"), "running");
	att = attention_of(r);
	cr_assert_not_null(att, "no attention on a run awaiting plan approval");
	cr_expect_str_eq(json_str_or_none(att, "kind"), "plan-approval");
	cr_expect_eq(json_num(att, "planVersion"), 1);
	cr_expect_eq(json_num(att, "planRevision"), 1);
	cr_expect_not_null(json_get_string(att, "since"));
	cJSON_Delete(r);

	after = plan_decide(session, "revise", plan, "use 2025 figures");
	cr_expect_str_eq(json_str_or_none(after, "status"), "superseded");
	cr_expect_eq(json_num(after, "revision"), 2);
	cr_expect_str_eq(json_str_or_none(after, "feedback"), "use 2025 figures");
	cJSON_Delete(after);
	cJSON_Delete(plan);

	plan = plan_wait_pending(&svc, session, 2, STATE_WAIT_MS);
	cr_expect_eq(json_num(plan, "revision"), 3);
	cr_expect(strstr(json_str_or_none(plan, "summary"), "use 2025 figures") != NULL,
	    "summary %s", json_str_or_none(plan, "summary"));
	r = http_get_json(&svc, "/api/v1/runs/%s", run_id);
	att = attention_of(r);
	cr_assert_not_null(att);
	cr_expect_eq(json_num(att, "planVersion"), 2);
	cr_expect_eq(json_num(att, "planRevision"), 3);
	cJSON_Delete(r);

	after = plan_decide(session, "revise", plan, "keep it short");
	cJSON_Delete(after);
	cJSON_Delete(plan);
	plan = plan_wait_pending(&svc, session, 3, STATE_WAIT_MS);
	cr_expect(strstr(json_str_or_none(plan, "summary"), "keep it short") != NULL);
	cr_expect_str_eq(json_str_or_none(plan, "feedback"), "keep it short");

	after = plan_decide(session, "approve", plan, NULL);
	cr_expect_str_eq(json_str_or_none(after, "status"), "approved");
	approved_revision = json_num(after, "revision");
	cr_expect_eq(approved_revision, json_num(plan, "revision") + 1);
	cJSON_Delete(after);
	cJSON_Delete(plan);

	r = run_wait_final(&svc, run_id, FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "completed");
	cr_expect_null(attention_of(r));
	cJSON_Delete(r);

	plan = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_str_eq(json_str_or_none(plan, "status"), "completed");
	cr_expect_eq(json_num(plan, "version"), 3);
	/* Six step updates (in-progress and completed for three steps), then completion. */
	cr_expect_eq(json_num(plan, "revision"), approved_revision + 7, "revision %ld",
	    json_num(plan, "revision"));
	cJSON_ArrayForEach(step, cJSON_GetObjectItem(plan, "steps"))
		cr_expect_str_eq(json_str_or_none(step, "status"), "completed");
	cJSON_Delete(plan);
	cr_expect(has_artifact(session, "report.md"));
	cJSON_Delete(run);
	free(project);
}

Test(plans, stale_and_invalid_decisions)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = plan_run_start(project), *plan, *r;
	const char *run_id = json_get_string(run, "id");
	const char *session = json_get_string(run, "sessionId");
	struct http_resp h;
	char path[128];

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	h = plan_respond(session, "approve", 2, 1, NULL);
	cr_expect_eq(h.status, 409);
	cr_expect_str_eq(error_code(&h), "stale_plan");
	r = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(h.json, "error"),
	    "details"), "current");
	cr_expect_eq(json_num(r, "version"), 1, "details.current: %s", h.body);
	cr_expect_eq(json_num(r, "revision"), 1);
	http_resp_free(&h);
	h = plan_respond(session, "approve", 1, 7, NULL);
	cr_expect_eq(h.status, 409);
	cr_expect_str_eq(error_code(&h), "stale_plan");
	http_resp_free(&h);

	h = plan_respond(session, "revise", 1, 1, NULL);
	cr_expect_eq(h.status, 400, "revise without feedback: %s", h.body);
	cr_expect(strstr(h.body, "\"field\":\"feedback\"") != NULL, "%s", h.body);
	http_resp_free(&h);
	h = plan_respond(session, "maybe", 1, 1, NULL);
	cr_expect_eq(h.status, 400);
	http_resp_free(&h);
	snprintf(path, sizeof path, "/api/v1/sessions/%s/plan/respond", session);
	h = http_api(&svc, "POST", path, "{\"decision\":\"approve\",\"version\":1}");
	cr_expect_eq(h.status, 400, "no revision: %s", h.body);
	http_resp_free(&h);
	h = plan_respond("ses_000000000000000000000000", "approve", 1, 1, NULL);
	cr_expect_eq(h.status, 404);
	http_resp_free(&h);

	/* Nothing above changed the plan. */
	r = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_eq(json_num(r, "revision"), 1);
	cr_expect_str_eq(json_str_or_none(r, "status"), "awaiting-approval");
	cJSON_Delete(r);

	cJSON_Delete(plan_decide(session, "approve", plan, NULL));
	cJSON_Delete(plan);
	r = run_wait_final(&svc, run_id, FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "completed");
	cJSON_Delete(r);
	plan = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	h = plan_respond(session, "approve", json_num(plan, "version"), json_num(plan, "revision"), NULL);
	cr_expect_eq(h.status, 409);
	cr_expect_str_eq(error_code(&h), "plan_not_pending");
	http_resp_free(&h);
	cJSON_Delete(plan);
	cJSON_Delete(run);
	free(project);
}

Test(plans, a_session_without_plan_is_404)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = http_replay_run(&svc, "write the report", project, "quick", ""), *r;
	struct http_resp h;
	char path[128];

	r = run_wait_final(&svc, json_get_string(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cJSON_Delete(r);
	snprintf(path, sizeof path, "/api/v1/sessions/%s/plan", json_get_string(run, "sessionId"));
	h = http_api(&svc, "GET", path, NULL);
	cr_expect_eq(h.status, 404);
	cr_expect(strstr(h.body, "\"resource\":\"plan\"") != NULL, "%s", h.body);
	http_resp_free(&h);
	h = plan_respond(json_get_string(run, "sessionId"), "approve", 1, 1, NULL);
	cr_expect_eq(h.status, 409);
	cr_expect_str_eq(error_code(&h), "plan_not_pending");
	http_resp_free(&h);
	h = http_api(&svc, "GET", "/api/v1/sessions/ses_000000000000000000000000/plan", NULL);
	cr_expect_eq(h.status, 404);
	cr_expect(strstr(h.body, "\"resource\":\"session\"") != NULL, "%s", h.body);
	http_resp_free(&h);
	cJSON_Delete(run);
	free(project);
}

struct racer {
	const char *session;
	long version, revision;
	pthread_barrier_t *barrier;
	long status;
	char code[32];
};

static void *
racer_thread(void *arg)
{
	struct racer *rc = arg;
	struct http_resp h;

	pthread_barrier_wait(rc->barrier);
	h = plan_respond(rc->session, "approve", rc->version, rc->revision, NULL);
	rc->status = h.status;
	snprintf(rc->code, sizeof rc->code, "%s", http_error_code(&h) ? http_error_code(&h) : "");
	http_resp_free(&h);
	return NULL;
}

Test(plans, two_concurrent_approvals_exactly_one_wins)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = plan_run_start(project), *plan, *r;
	const char *session = json_get_string(run, "sessionId");
	pthread_barrier_t barrier;
	struct racer rc[2];
	pthread_t t[2];
	int wins = 0, stale = 0;

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	pthread_barrier_init(&barrier, NULL, 2);
	for (int i = 0; i < 2; i++) {
		rc[i] = (struct racer){ .session = session, .version = json_num(plan, "version"),
			.revision = json_num(plan, "revision"), .barrier = &barrier };
		cr_assert_eq(pthread_create(&t[i], NULL, racer_thread, &rc[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		wins += rc[i].status == 200;
		stale += rc[i].status == 409 && strcmp(rc[i].code, "stale_plan") == 0;
	}
	pthread_barrier_destroy(&barrier);
	cr_expect_eq(wins, 1, "%ld %s / %ld %s", rc[0].status, rc[0].code, rc[1].status,
	    rc[1].code);
	cr_expect_eq(stale, 1);
	r = run_wait_final(&svc, json_get_string(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "completed");
	cJSON_Delete(r);
	cJSON_Delete(plan);
	cJSON_Delete(run);
	free(project);
}

Test(plans, reject_cancels_the_run)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = plan_run_start(project), *plan, *after, *r;
	const char *session = json_get_string(run, "sessionId");

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	after = plan_decide(session, "reject", plan, NULL);
	cr_expect_str_eq(json_str_or_none(after, "status"), "rejected");
	cJSON_Delete(after);
	r = run_wait_final(&svc, json_get_string(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "cancelled");
	cJSON_Delete(r);
	after = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_str_eq(json_str_or_none(after, "status"), "rejected");
	cr_expect_eq(json_num(after, "revision"), 2);
	cr_expect_not(has_artifact(session, "report.md"));
	cJSON_Delete(after);
	cJSON_Delete(plan);
	cJSON_Delete(run);
	free(project);
}

Test(plans, cancelling_a_waiting_run_abandons_its_plan)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = plan_run_start(project), *plan, *r;
	const char *session = json_get_string(run, "sessionId");
	char path[128];
	struct http_resp h;

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", json_get_string(run, "id"));
	h = http_api(&svc, "POST", path, NULL);
	cr_expect_eq(h.status, 200);
	http_resp_free(&h);
	r = run_wait_final(&svc, json_get_string(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "cancelled");
	cJSON_Delete(r);
	r = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_str_eq(json_str_or_none(r, "status"), "abandoned");
	cr_expect_eq(json_num(r, "revision"), 2);
	cJSON_Delete(r);
	/* The run's history ends with the plan abandoned and the attention cleared. */
	r = http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", json_get_string(run, "id"));
	{
		const cJSON *ev, *last_plan = NULL, *last_att = NULL;

		cJSON_ArrayForEach(ev, r) {
			if (strcmp(json_str_or_none(ev, "type"), "plan.updated") == 0)
				last_plan = cJSON_GetObjectItem(ev, "data");
			if (strcmp(json_str_or_none(ev, "type"), "run.attention") == 0)
				last_att = cJSON_GetObjectItem(ev, "data");
		}
		cr_assert_not_null(last_plan);
		cr_expect_str_eq(json_str_or_none(last_plan, "status"), "abandoned");
		cr_assert_not_null(last_att);
		cr_expect(cJSON_IsNull(cJSON_GetObjectItem(last_att, "attention")));
	}
	cJSON_Delete(r);
	h = plan_respond(session, "approve", 1, 1, NULL);
	cr_expect_eq(h.status, 409);
	http_resp_free(&h);
	cJSON_Delete(plan);
	cJSON_Delete(run);
	free(project);
}

static struct http_resp
prompt_answer(const char *id, const char *decision)
{
	char path[128], body[64];

	snprintf(path, sizeof path, "/app/v1/permissions/%s", id);
	snprintf(body, sizeof body, "{\"decision\":\"%s\"}", decision);
	return http_api(&svc, "POST", path, body);
}

/* Answers the prompt, asserting 200 and the resulting status. */
static void
prompt_decide(const cJSON *prompt, const char *decision, const char *status)
{
	struct http_resp h = prompt_answer(json_get_string(prompt, "id"), decision);

	cr_assert_eq(h.status, 200, "%s: %ld %s", decision, h.status, h.body);
	cr_expect_str_eq(json_str_or_none(h.json, "status"), status);
	cr_expect_str_eq(json_str_or_none(h.json, "decision"), decision);
	cr_expect_not_null(json_get_string(h.json, "answeredAt"));
	http_resp_free(&h);
}

static bool
file_in(const char *dir, const char *name)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static cJSON *
ask_run_start(const char *project)
{
	return http_replay_run(&svc, "write the report", project, "ask", ",\"permissionProfile\":\"ask\"");
}

Test(permissions, allow_deny_allow_run)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = ask_run_start(project), *p, *r, *all;
	const char *run_id = json_get_string(run, "id");
	const char *session = json_get_string(run, "sessionId");
	struct http_resp h;

	p = prompt_wait_pending(&svc, run_id, NULL, STATE_WAIT_MS);
	cr_expect_str_eq(json_str_or_none(p, "tool"), "write_file");
	cr_expect_str_eq(json_str_or_none(p, "status"), "pending");
	cr_expect_str_eq(json_str_or_none(p, "sessionId"), session);
	cr_expect_str_eq(json_str_or_none(p, "projectId"), project);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(p, "input"), "path"), "allowed.md");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(p, "decision")));
	r = http_get_json(&svc, "/api/v1/runs/%s", run_id);
	cr_expect_str_eq(json_str_or_none(r, "status"), "running");
	cr_expect_null(cJSON_GetObjectItem(r, "attention"), "a prompt sets no attention");
	cJSON_Delete(r);
	prompt_decide(p, "allow", "allowed");
	h = prompt_answer(json_get_string(p, "id"), "deny");
	cr_expect_eq(h.status, 409);
	cr_expect_str_eq(error_code(&h), "permission_not_pending");
	http_resp_free(&h);
	cJSON_Delete(p);

	p = prompt_wait_pending(&svc, run_id, NULL, STATE_WAIT_MS);
	cr_expect_str_eq(json_str_or_none(p, "tool"), "run_command");
	prompt_decide(p, "deny", "denied");
	cJSON_Delete(p);

	p = prompt_wait_pending(&svc, run_id, NULL, STATE_WAIT_MS);
	cr_expect_str_eq(json_str_or_none(p, "tool"), "write_file");
	prompt_decide(p, "allow-run", "allowed");
	cJSON_Delete(p);

	r = run_wait_final(&svc, run_id, FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "completed");
	cr_expect(file_in(json_str_or_none(r, "cwd"), "allowed.md"));
	cr_expect(file_in(json_str_or_none(r, "cwd"), "second.md"));
	cr_expect_not(file_in(json_str_or_none(r, "cwd"), "ran.txt"), "a denied command ran");
	cJSON_Delete(r);
	cr_expect(has_artifact(session, "allowed.md"));
	cr_expect(has_artifact(session, "second.md"));

	all = http_get_json(&svc, "/app/v1/permissions?run=%s&status=all", run_id);
	cr_expect_eq(cJSON_GetArraySize(all), 3);
	/* Newest first. */
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(all, 0), "decision"), "allow-run");
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(all, 1), "status"), "denied");
	cJSON_Delete(all);
	all = http_get_json(&svc, "/app/v1/permissions?run=%s", run_id);
	cr_expect_eq(cJSON_GetArraySize(all), 0);
	cJSON_Delete(all);

	h = prompt_answer("prm_000000000000000000000000", "allow");
	cr_expect_eq(h.status, 404);
	http_resp_free(&h);
	h = http_api(&svc, "GET", "/app/v1/permissions/prm_000000000000000000000000", NULL);
	cr_expect_eq(h.status, 404);
	http_resp_free(&h);
	h = http_api(&svc, "GET", "/app/v1/permissions?status=maybe", NULL);
	cr_expect_eq(h.status, 400);
	http_resp_free(&h);
	h = http_req(&svc, "GET", "/app/v1/permissions", NULL, NULL, false);
	cr_expect_eq(h.status, 401);
	http_resp_free(&h);
	cJSON_Delete(run);
	free(project);
}

Test(permissions, allow_run_answers_the_later_prompts)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = ask_run_start(project), *p, *r, *all, *it;
	const char *run_id = json_get_string(run, "id");
	struct http_resp h;
	char path[128];
	int auto_allowed = 0;

	p = prompt_wait_pending(&svc, run_id, NULL, STATE_WAIT_MS);
	prompt_decide(p, "allow-run", "allowed");
	snprintf(path, sizeof path, "/app/v1/permissions/%s", json_get_string(p, "id"));
	h = http_api(&svc, "GET", path, NULL);
	cr_expect_eq(h.status, 200);
	cr_expect_str_eq(json_str_or_none(h.json, "decision"), "allow-run");
	http_resp_free(&h);
	cJSON_Delete(p);
	r = run_wait_final(&svc, run_id, FINAL_WAIT_MS);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_str_or_none(r, "status"), "completed");
	cr_expect(file_in(json_str_or_none(r, "cwd"), "ran.txt"));
	cr_expect(file_in(json_str_or_none(r, "cwd"), "second.md"));
	cJSON_Delete(r);
	all = http_get_json(&svc, "/app/v1/permissions?run=%s&status=all", run_id);
	cr_expect_eq(cJSON_GetArraySize(all), 3);
	cJSON_ArrayForEach(it, all) {
		cr_expect_str_eq(json_str_or_none(it, "status"), "allowed");
		cr_expect_str_eq(json_str_or_none(it, "decision"), "allow-run");
		auto_allowed++;
	}
	cr_expect_eq(auto_allowed, 3);
	cJSON_Delete(all);
	cJSON_Delete(run);
	free(project);
}

Test(permissions, restart_past_the_resume_limit_expires_the_prompt)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = ask_run_start(project), *p, *r;
	const char *run_id = json_get_string(run, "id");

	p = prompt_wait_pending(&svc, run_id, NULL, STATE_WAIT_MS);
	svc_kill(&svc);
	/* durable: past runs.resumeLimit the run cannot resume */
	svc_set_run_setting(&svc, "resumeLimit", 0);
	svc_restart(&svc);
	r = http_get_json(&svc, "/api/v1/runs/%s", run_id);
	cr_expect_str_eq(json_str_or_none(r, "status"), "failed");
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(r, "error"), "code"),
	    "resume_limit");
	cJSON_Delete(r);
	r = http_get_json(&svc, "/app/v1/permissions/%s", json_get_string(p, "id"));
	cr_expect_str_eq(json_str_or_none(r, "status"), "expired");
	cJSON_Delete(r);
	r = http_get_json(&svc, "/app/v1/permissions");
	cr_expect_eq(cJSON_GetArraySize(r), 0);
	cJSON_Delete(r);
	cJSON_Delete(p);
	cJSON_Delete(run);
	free(project);
}

Test(plans, restart_past_the_resume_limit_abandons_the_plan)
{
	char *project = http_project_new(&svc, "plans");
	cJSON *run = plan_run_start(project), *plan, *r;
	const char *session = json_get_string(run, "sessionId");

	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	svc_kill(&svc);
	/* durable: past runs.resumeLimit the run cannot resume */
	svc_set_run_setting(&svc, "resumeLimit", 0);
	svc_restart(&svc);
	r = http_get_json(&svc, "/api/v1/runs/%s", json_get_string(run, "id"));
	cr_expect_str_eq(json_str_or_none(r, "status"), "failed");
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(r, "error"), "code"),
	    "resume_limit");
	cr_expect_null(attention_of(r));
	cJSON_Delete(r);
	r = http_get_json(&svc, "/api/v1/sessions/%s/plan", session);
	cr_expect_str_eq(json_str_or_none(r, "status"), "abandoned");
	cJSON_Delete(r);
	cJSON_Delete(plan);
	cJSON_Delete(run);
	free(project);
}

/* A raw SSE subscriber: the text of the stream, collected on a thread. */
struct raw_sub {
	pthread_t thread;
	pthread_mutex_t mu;
	char url[512];
	char *text;
	size_t len;
	atomic_bool stop;
};

static size_t
raw_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct raw_sub *s = ud;
	size_t n = size * nmemb;

	if (atomic_load(&s->stop))
		return 0;
	pthread_mutex_lock(&s->mu);
	s->text = realloc(s->text, s->len + n + 1);
	memcpy(s->text + s->len, ptr, n);
	s->len += n;
	s->text[s->len] = '\0';
	pthread_mutex_unlock(&s->mu);
	return n;
}

static int
raw_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct raw_sub *s = ud;

	(void)a, (void)b, (void)c, (void)d;
	return atomic_load(&s->stop) ? 1 : 0;
}

static void *
raw_thread(void *arg)
{
	struct raw_sub *s = arg;
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char line[256];

	snprintf(line, sizeof line, "Authorization: Bearer %s", svc.token);
	h = curl_slist_append(h, line);
	curl_easy_setopt(c, CURLOPT_URL, s->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, raw_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, raw_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
	curl_easy_perform(c);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return NULL;
}

/* Waits until the stream holds all of the given strings (NULL-terminated). */
static bool
raw_wait(struct raw_sub *s, const char *const *needles)
{
	int64_t deadline = clock_mono_ms() + STATE_WAIT_MS;

	for (;;) {
		bool all = true;

		pthread_mutex_lock(&s->mu);
		for (const char *const *n = needles; *n; n++)
			all = all && s->text != NULL && strstr(s->text, *n) != NULL;
		pthread_mutex_unlock(&s->mu);
		if (all)
			return true;
		if (clock_mono_ms() > deadline)
			return false;
		usleep(50000);
	}
}

Test(plans, events_plan_updated_attention_permission)
{
	char *project = http_project_new(&svc, "plans");
	struct raw_sub sub = { 0 };
	cJSON *run, *plan, *r, *p;
	const char *session;

	pthread_mutex_init(&sub.mu, NULL);
	snprintf(sub.url, sizeof sub.url, "%s/api/v1/events?project=%s", svc.url, project);
	cr_assert_eq(pthread_create(&sub.thread, NULL, raw_thread, &sub), 0);
	cr_assert(raw_wait(&sub, (const char *const[]){ "stream.hello", NULL }));

	run = plan_run_start(project);
	session = json_get_string(run, "sessionId");
	plan = plan_wait_pending(&svc, session, 1, STATE_WAIT_MS);
	cr_expect(raw_wait(&sub, (const char *const[]){ "event: plan.updated",
	    "\"status\":\"awaiting-approval\"", "event: run.attention",
	    "\"kind\":\"plan-approval\"", NULL }), "%s", sub.text);
	cJSON_Delete(plan_decide(session, "approve", plan, NULL));
	cr_expect(raw_wait(&sub, (const char *const[]){ "\"attention\":null",
	    "\"status\":\"approved\"", NULL }), "%s", sub.text);
	r = run_wait_final(&svc, json_get_string(run, "id"), FINAL_WAIT_MS);
	cJSON_Delete(r);
	cJSON_Delete(plan);
	cJSON_Delete(run);

	run = ask_run_start(project);
	p = prompt_wait_pending(&svc, json_get_string(run, "id"), NULL, STATE_WAIT_MS);
	cr_expect(raw_wait(&sub, (const char *const[]){ "event: run.permission",
	    "\"status\":\"pending\"", "\"tool\":\"write_file\"", NULL }), "%s", sub.text);
	prompt_decide(p, "allow-run", "allowed");
	cr_expect(raw_wait(&sub, (const char *const[]){ "\"tool\":\"run_command\"",
	    NULL }), "%s", sub.text);
	r = run_wait_final(&svc, json_get_string(run, "id"), FINAL_WAIT_MS);
	cJSON_Delete(r);
	cJSON_Delete(p);
	cJSON_Delete(run);

	atomic_store(&sub.stop, true);
	pthread_join(sub.thread, NULL);
	pthread_mutex_destroy(&sub.mu);
	free(sub.text);
	free(project);
}
