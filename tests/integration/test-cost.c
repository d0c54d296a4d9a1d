/*
 * Usage and cost through a real taskdeckd (docs/http-api.md "Usage and cost"):
 * the cache tokens a provider reports reach the run, the session and the
 * project; settings.json's pricing gives them a cost, and nothing without a
 * price gets one; runs.maxCostPerRun ends a run budget_exceeded.  The fake
 * servers answer with Anthropic's and OpenAI's real usage shapes.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"
#include "json.h"

TestSuite(cost, .init = svc_setup, .fini = svc_teardown, .timeout = 60);

/* Anthropic's price of claude-test and OpenAI's of gpt-test, USD per million tokens. */
#define PRICING \
	" \"pricing\": {" \
	"  \"fake-anthropic\": {\"claude-test\": {\"input\": 3, \"output\": 15," \
	"   \"cacheRead\": 0.3, \"cacheWrite\": 3.75}}," \
	"  \"fake-openai\": {\"gpt-test\": {\"input\": 2, \"output\": 8, \"cacheRead\": 0.5}}}"

/* Restarts the service with the fake providers at fp, pricing and runs (a member list or ""). */
static void
configure(struct fake_provider *fp, const char *runs)
{
	char settings[2048];

	setenv("TD_TEST_COST_KEY", "sk-cost-test", 1);
	snprintf(settings, sizeof settings,
	    "{\"defaults\": {\"provider\": \"replay\"},"
	    " \"providers\": {"
	    "  \"replay\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"},"
	    "  \"fake-anthropic\": {\"kind\": \"anthropic\", \"baseUrl\": \"%s\","
	    "   \"apiKeyEnv\": \"TD_TEST_COST_KEY\", \"defaultModel\": \"claude-test\"},"
	    "  \"fake-openai\": {\"kind\": \"openai\", \"baseUrl\": \"%s/v1\","
	    "   \"apiKeyEnv\": \"TD_TEST_COST_KEY\", \"defaultModel\": \"gpt-test\"}},"
	    PRICING ",\"runs\": {\"maxConcurrent\": 4%s}}",
	    fake_provider_url(fp, ""), fake_provider_url(fp, ""), runs);
	svc_stop(&svc);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
}

/*
 * An Anthropic answer: 100 new input tokens, 1,000 read from the cache, 200
 * written to it; with call, a write_file call of out.txt instead of text.
 */
static char *
anthropic_answer(bool call)
{
	struct buf b;

	buf_init(&b, 0);
	fake_anthropic_start_cached(&b, 100, 1000, 200);
	if (call)
		fake_anthropic_tool_block(&b, 0, "toolu_01", "write_file",
		    "{\"path\": \"out.txt\", \"content\": \"x\"}", 8);
	else
		fake_anthropic_text_block(&b, 0, "Done.");
	fake_anthropic_stop(&b, call ? "tool_use" : "end_turn", 50);
	return buf_steal(&b);
}

/* The line of text holding needle (malloc'd), or NULL. */
static char *
line_with(const char *text, const char *needle)
{
	const char *at = strstr(text, needle), *from, *to;

	if (at == NULL)
		return NULL;
	for (from = at; from > text && from[-1] != '\n'; from--)
		;
	to = strchr(at, '\n');
	return strndup(from, to ? (size_t)(to - from) : strlen(from));
}

static void
expect_usage(const cJSON *u, double in, double out, double cread, double cwrite)
{
	cr_expect_eq(json_num(u, "inputTokens"), in, "inputTokens %g", json_num(u, "inputTokens"));
	cr_expect_eq(json_num(u, "outputTokens"), out, "outputTokens %g",
	    json_num(u, "outputTokens"));
	cr_expect_eq(json_num(u, "cacheReadTokens"), cread, "cacheReadTokens %g",
	    json_num(u, "cacheReadTokens"));
	cr_expect_eq(json_num(u, "cacheWriteTokens"), cwrite, "cacheWriteTokens %g",
	    json_num(u, "cacheWriteTokens"));
}

static void
expect_cost(const cJSON *obj, double want)
{
	const cJSON *c = cJSON_GetObjectItem(obj, "cost");

	cr_assert(cJSON_IsNumber(c), "no cost in %s", cJSON_PrintUnformatted(obj));
	cr_expect(c->valuedouble > want - 1e-9 && c->valuedouble < want + 1e-9,
	    "cost %.9f, want %.9f", c->valuedouble, want);
}

Test(cost, cache_tokens_and_cost_of_runs_sessions_and_projects)
{
	struct buf b;
	struct fake_reply replies[2] = {
		{ .status = 200, .content_type = "text/event-stream" },
		{ .status = 200, .content_type = "text/event-stream" },
	};
	struct fake_provider *fp;
	char *project, *out = NULL, *line;
	cJSON *run, *final, *list, *usage, *replay, *by;
	char *session;

	replies[0].body = anthropic_answer(false);
	buf_init(&b, 0);
	fake_openai_text(&b, "Done too.");
	fake_openai_delta(&b, "{}", "stop");
	fake_openai_usage_cached(&b, 500, 10, 400);
	fake_openai_done(&b);
	replies[1].body = buf_steal(&b);
	fp = fake_provider_start(replies, 2);
	configure(fp, "");
	project = http_project_new(&svc, "cost");

	/* (100 x 3 + 50 x 15 + 1,000 x 0.3 + 200 x 3.75) / 10^6 USD */
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"answer\",\"config\":"
	    "{\"provider\":\"fake-anthropic\",\"model\":\"claude-test\"}}", project);
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	expect_usage(cJSON_GetObjectItem(final, "usage"), 1300, 50, 1000, 200);
	expect_cost(final, 0.0021);
	session = strdup(json_str(run, "sessionId"));

	/* OpenAI: 400 of the 500 prompt tokens cached; (100 x 2 + 10 x 8 + 400 x 0.5) / 10^6 */
	cJSON_Delete(final);
	final = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"again\",\"config\":"
	    "{\"provider\":\"fake-openai\",\"model\":\"gpt-test\"}}", project);
	cJSON_Delete(run);
	run = final;
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	expect_usage(cJSON_GetObjectItem(final, "usage"), 500, 10, 400, 0);
	expect_cost(final, 0.00048);
	cJSON_Delete(final);

	/* The first session has the first run; the project adds both up, with each model's part. */
	usage = http_get_json(&svc, "/api/v1/sessions/%s/usage", session);
	expect_usage(usage, 1300, 50, 1000, 200);
	cr_expect_eq(json_num(usage, "runs"), 1);
	expect_cost(usage, 0.0021);
	cJSON_Delete(usage);
	usage = http_get_json(&svc, "/api/v1/projects/%s/usage", project);
	expect_usage(usage, 1800, 60, 1400, 200);
	cr_expect_eq(json_num(usage, "runs"), 2);
	expect_cost(usage, 0.00258);
	by = cJSON_GetObjectItem(usage, "byModel");
	cr_assert_eq(cJSON_GetArraySize(by), 2, "%s", cJSON_PrintUnformatted(usage));
	cr_expect_str_eq(json_str(cJSON_GetArrayItem(by, 0), "provider"), "fake-anthropic");
	cr_expect_str_eq(json_str(cJSON_GetArrayItem(by, 0), "model"), "claude-test");
	expect_cost(cJSON_GetArrayItem(by, 0), 0.0021);
	expect_cost(cJSON_GetArrayItem(by, 1), 0.00048);
	cJSON_Delete(usage);

	/* The list shows each run's cost too. */
	list = http_get_json(&svc, "/api/v1/runs?project=%s", project);
	cr_assert_eq(cJSON_GetArraySize(list), 2);
	expect_cost(cJSON_GetArrayItem(list, 0), 0.00048);
	expect_cost(cJSON_GetArrayItem(list, 1), 0.0021);
	cJSON_Delete(list);

	/* The CLI: a COST column, and the cost and cache counts of one run. */
	cr_assert_eq(run_capture(&svc, &out, "%s runs list --project %s", harness_bin("taskdeck"),
	    project), 0);
	cr_expect(strstr(out, "COST") != NULL && strstr(out, "$0.0021") != NULL &&
	    strstr(out, "$0.0005") != NULL, "%s", out);
	free(out);
	cr_assert_eq(run_capture(&svc, &out, "%s runs show %s", harness_bin("taskdeck"),
	    json_str(run, "id")), 0);
	cr_expect(strstr(out, "usage.cacheReadTokens: 400\n") != NULL, "%s", out);
	cr_expect(strstr(out, "cost: 0.00048\n") != NULL, "%s", out);
	free(out);

	/* A replay run has no price: no cost for it, nor for the project it is in. */
	replay = http_replay_run(&svc, "hello", project, "quick", "");
	final = run_final_within(&svc, json_str(replay, "id"), "completed", 30000);
	cr_expect(json_num(cJSON_GetObjectItem(final, "usage"), "inputTokens") > 0);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(final, "cost")), "%s",
	    cJSON_PrintUnformatted(final));
	cJSON_Delete(final);
	cr_assert_eq(run_capture(&svc, &out, "%s runs list --project %s", harness_bin("taskdeck"),
	    project), 0);
	line = line_with(out, json_str(replay, "id"));
	cr_expect(line != NULL && strstr(line, " - ") != NULL && strchr(line, '$') == NULL,
	    "the replay run's row has a cost: %s", out);
	free(line);
	free(out);
	usage = http_get_json(&svc, "/api/v1/projects/%s/usage", project);
	cr_expect_eq(json_num(usage, "runs"), 3);
	cr_expect_eq(json_num(usage, "cacheReadTokens"), 1400);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(usage, "cost")), "%s",
	    cJSON_PrintUnformatted(usage));
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(usage, "byModel")), 3);
	cJSON_Delete(usage);

	cJSON_Delete(replay);
	cJSON_Delete(run);
	free(session);
	free(project);
	fake_provider_stop(fp);
	free(replies[0].body);
	free(replies[1].body);
}

Test(cost, usage_of_an_unknown_session_or_project_is_not_found)
{
	struct http_resp r = http_api(&svc, "GET", "/api/v1/sessions/ses_nothere/usage", NULL);

	cr_expect_eq(r.status, 404, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	r = http_api(&svc, "GET", "/api/v1/projects/prj_nothere/usage", NULL);
	cr_expect_eq(r.status, 404, "%ld %s", r.status, r.body);
	http_resp_free(&r);
}

/* The first answer costs 0.0021 USD: past a limit of 0.001, it is not acted on. */
Test(cost, max_cost_per_run_ends_the_run_budget_exceeded)
{
	struct fake_reply reply = { .status = 200, .content_type = "text/event-stream" };
	struct fake_provider *fp;
	char *project, path[4096];
	cJSON *run, *final, *err;

	reply.body = anthropic_answer(true);
	fp = fake_provider_start(&reply, 1);
	configure(fp, ", \"maxCostPerRun\": 0.001");
	project = http_project_new(&svc, "cost");
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"answer\",\"config\":"
	    "{\"provider\":\"fake-anthropic\",\"model\":\"claude-test\"}}", project);
	final = run_final_within(&svc, json_str(run, "id"), "failed", 30000);
	err = cJSON_GetObjectItem(final, "error");
	cr_expect_str_eq(json_str(err, "code"), "budget_exceeded");
	cr_expect(strstr(json_str(err, "message"), "(runs.maxCostPerRun") != NULL, "%s",
	    json_str(err, "message"));
	cr_expect_eq(fake_provider_count(fp), 1, "the answer was acted on");
	cr_expect(cJSON_GetObjectItem(final, "cwd") != NULL);
	snprintf(path, sizeof path, "%s/out.txt", json_str(final, "cwd"));
	cr_expect_neq(access(path, F_OK), 0, "the call of the answer past the limit ran");
	expect_cost(final, 0.0021);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
	fake_provider_stop(fp);
	free(reply.body);
}
