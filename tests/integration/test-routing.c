/*
 * Agent routing through a real taskdeckd (docs/agent.md "Subagents"): with
 * subagent.enabled the model gets run_subagent, whose child loops run on the
 * routing's model in the run's workspace, their tool calls tagged with the
 * subagent's id, their usage added to the run's; without it the tool does not
 * exist; maxConcurrent 1 runs two children one after the other, 2 side by side.
 * The replay transcripts subagent and subagent-task play both sides.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"
#include "json.h"

TestSuite(routing, .init = svc_setup, .fini = svc_teardown, .timeout = 60);

/* The run's run.tool events, in order. */
static cJSON *
tool_events(const char *run)
{
	cJSON *events = http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", run), *e;
	cJSON *out = cJSON_CreateArray();

	cJSON_ArrayForEach(e, events) {
		if (strcmp(json_get_string(e, "type"), "run.tool") == 0)
			cJSON_AddItemToArray(out, cJSON_Duplicate(cJSON_GetObjectItem(e, "data"),
			    true));
	}
	cJSON_Delete(events);
	return out;
}

static void
set_routing(const char *body)
{
	struct http_resp r = http_api(&svc, "PATCH", "/api/v1/settings/agent-routing", body);

	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
}

Test(routing, subagents_run_on_the_routing_model_and_their_usage_counts)
{
	char *project, path[1024], *notes;
	cJSON *run, *final, *tools, *t, *usage;
	int sub_ends = 0, child_writes = 0;
	const char *ids[2] = { NULL, NULL };

	set_routing("{\"subagent\":{\"enabled\":true,\"provider\":\"replay\","
	    "\"model\":\"subagent-task\",\"maxConcurrent\":2}}");
	project = http_project_new(&svc, "routing");
	run = http_replay_run(&svc, "split the work", project, "subagent", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	cr_expect(strstr(json_str(final, "output"), "Both subagents finished.") != NULL, "%s",
	    json_str(final, "output"));
	cr_expect(strstr(json_str(final, "output"), "sub-task done") == NULL,
	    "a subagent's text went to the run's output");
	/* the run's own turns (2,100 + 70) and two subagents' (220 + 15 each) */
	usage = cJSON_GetObjectItem(final, "usage");
	cr_expect_eq(json_num(usage, "inputTokens"), 2540);
	cr_expect_eq(json_num(usage, "outputTokens"), 100);

	tools = tool_events(json_str(run, "id"));
	cJSON_ArrayForEach(t, tools) {
		const char *name = json_get_string(t, "name"), *status = json_get_string(t, "status");
		const char *sub = json_get_string(t, "subagent");

		if (strcmp(name, "run_subagent") == 0) {
			cr_expect_null(sub);
			if (strcmp(status, "started") == 0) {
				cr_assert_lt(ids[1] == NULL ? 0 : 2, 2, "a third run_subagent");
				ids[ids[0] == NULL ? 0 : 1] = json_get_string(t, "callId");
			} else {
				cr_expect_str_eq(status, "completed", "%s", json_get_string(t, "summary"));
				sub_ends++;
			}
		} else if (strcmp(name, "write_file") == 0 && strcmp(status, "completed") == 0) {
			/* each child's call carries the id of the call that started it */
			cr_assert_not_null(sub, "a subagent's write_file without its id");
			cr_expect(strcmp(sub, ids[0]) == 0 || strcmp(sub, ids[1]) == 0, "%s", sub);
			child_writes++;
		}
	}
	cr_expect_eq(sub_ends, 2);
	cr_expect_eq(child_writes, 2);
	{
		char *out = NULL;
		int rc = run_capture(&svc, &out, "'%s' run --follow --project %s --provider replay "
		    "--model subagent 'split' 2>&1 >/dev/null", harness_bin("taskdeck"), project);

		cr_expect_eq(rc, 0, "%s", out);
		cr_expect(strstr(out, "[tool]   \u21b3 write_file completed") != NULL,
		    "a subagent's call is not nested in --follow: %s", out);
		cr_expect(strstr(out, "[tool] run_subagent completed") != NULL, "%s", out);
		free(out);
	}
	snprintf(path, sizeof path, "%s", json_str(final, "cwd"));
	strncat(path, "/sub/notes.md", sizeof path - strlen(path) - 1);
	notes = harness_slurp(path, NULL);
	cr_expect_str_eq(notes ? notes : "(missing)", "written by a subagent\n");
	free(notes);
	cJSON_Delete(tools);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
}

Test(routing, without_subagent_enabled_there_is_no_subagent_tool)
{
	char *project;
	cJSON *run, *final, *tools, *t;
	int failed = 0;

	project = http_project_new(&svc, "routing");
	run = http_replay_run(&svc, "split the work", project, "subagent", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	tools = tool_events(json_str(run, "id"));
	cJSON_ArrayForEach(t, tools) {
		cr_expect_str_eq(json_get_string(t, "name"), "run_subagent");
		if (strcmp(json_get_string(t, "status"), "failed") == 0) {
			cr_expect(strstr(json_get_string(t, "summary"), "no tool named") != NULL, "%s",
			    json_get_string(t, "summary"));
			failed++;
		}
	}
	cr_expect_eq(failed, 2);
	cJSON_Delete(tools);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
}

/* Milliseconds of an event's "time" (RFC 3339 UTC with milliseconds). */
static long long
event_ms(const cJSON *e)
{
	const char *t = json_get_string(e, "time");
	struct tm tm = { 0 };
	const char *rest = t ? strptime(t, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;

	cr_assert_not_null(rest, "%s", t ? t : "(no time)");
	return (long long)timegm(&tm) * 1000 + (*rest == '.' ? atol(rest + 1) : 0);
}

/*
 * From the first run_subagent start to the last run_subagent end, in ms; with
 * *interleaved whether a child's call came between the other child's calls.
 */
static long long
subagents_span(int max_concurrent, bool *interleaved)
{
	char *project, routing[256];
	cJSON *run, *final, *events, *e;
	long long first = -1, last = -1;
	const char *prev = NULL;
	int switches = 0;

	snprintf(routing, sizeof routing, "{\"subagent\":{\"enabled\":true,\"provider\":null,"
	    "\"model\":\"subagent-task\",\"maxConcurrent\":%d}}", max_concurrent);
	set_routing(routing);
	project = http_project_new(&svc, "routing");
	run = http_replay_run(&svc, "split the work", project, "subagent", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	events = http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", json_str(run, "id"));
	cJSON_ArrayForEach(e, events) {
		const cJSON *d = cJSON_GetObjectItem(e, "data");
		const char *sub = json_get_string(d, "subagent");

		if (strcmp(json_get_string(e, "type"), "run.tool") != 0)
			continue;
		if (strcmp(json_get_string(d, "name"), "run_subagent") == 0) {
			if (first < 0)
				first = event_ms(e);
			last = event_ms(e);
		} else if (sub != NULL) {
			if (prev != NULL && strcmp(prev, sub) != 0)
				switches++;
			prev = sub;
		}
	}
	*interleaved = switches > 1;
	cJSON_Delete(events);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
	return last - first;
}

/* Each child waits 1 s before its first call: one at a time takes 2 s, two at once 1 s. */
Test(routing, at_most_max_concurrent_subagents_run_at_once)
{
	bool interleaved;
	long long one = subagents_span(1, &interleaved);

	cr_log_info("two subagents, maxConcurrent 1: %lld ms", one);
	cr_expect_geq(one, 1900, "two subagents ran at once under maxConcurrent 1");
	cr_expect_not(interleaved, "the calls of two subagents interleaved under maxConcurrent 1");
	one = subagents_span(2, &interleaved);
	cr_log_info("two subagents, maxConcurrent 2: %lld ms", one);
	cr_expect_lt(one, 1600, "two subagents ran one after the other under maxConcurrent 2");
}

/* The run's run.review events, in order. */
static cJSON *
review_events(const char *run)
{
	cJSON *events = http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", run), *e;
	cJSON *out = cJSON_CreateArray();

	cJSON_ArrayForEach(e, events) {
		if (strcmp(json_get_string(e, "type"), "run.review") == 0)
			cJSON_AddItemToArray(out, cJSON_Duplicate(cJSON_GetObjectItem(e, "data"),
			    true));
	}
	cJSON_Delete(events);
	return out;
}

static char *
ws_text(const cJSON *run, const char *rel)
{
	char path[1024];
	char *text;

	snprintf(path, sizeof path, "%s/%s", json_str(run, "cwd"), rel);
	text = harness_slurp(path, NULL);
	return text ? text : strdup("(missing)");
}

/*
 * A reviewer that requests changes: the model gets the findings and one more
 * round (it edits answer.md), the second review's verdict is the run's; the
 * reviews' tokens count.  A reviewer that approves ends the run at once.
 */
Test(routing, a_reviewer_sends_the_work_back_once_and_its_verdict_is_kept)
{
	char *project, *text, *out = NULL;
	cJSON *run, *final, *reviews, *r, *usage;

	set_routing("{\"reviewer\":{\"enabled\":true,\"provider\":null,"
	    "\"model\":\"review-changes\"}}");
	project = http_project_new(&svc, "routing");
	run = http_replay_run(&svc, "write answer.md", project, "reviewed", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	cr_expect(strstr(json_str(final, "output"), "Wrote answer.md.") != NULL, "%s",
	    json_str(final, "output"));
	cr_expect(strstr(json_str(final, "output"), "Fixed answer.md after the review.") != NULL,
	    "no second round: %s", json_str(final, "output"));
	text = ws_text(final, "answer.md");
	cr_expect_str_eq(text, "final\n");
	free(text);
	reviews = review_events(json_str(run, "id"));
	cr_assert_eq(cJSON_GetArraySize(reviews), 2, "%s", cJSON_PrintUnformatted(reviews));
	r = cJSON_GetArrayItem(reviews, 0);
	cr_expect_str_eq(json_get_string(r, "verdict"), "changes_requested");
	cr_expect_eq(json_num(r, "round"), 1);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "findings"), 0)),
	    "answer.md still says draft");
	/* the model was given the findings: the replay played the afterReview turn */
	r = cJSON_GetObjectItem(final, "review");
	cr_assert(cJSON_IsObject(r), "the run has no review");
	cr_expect_str_eq(json_get_string(r, "verdict"), "changes_requested");
	cr_expect_eq(json_num(r, "round"), 2);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "findings")), 2);
	/* four turns of the run (4,600 + 90) and two reviews (300 + 30 each) */
	usage = cJSON_GetObjectItem(final, "usage");
	cr_expect_eq(json_num(usage, "inputTokens"), 5200);
	cr_expect_eq(json_num(usage, "outputTokens"), 150);
	cr_expect_eq(run_capture(&svc, &out, "'%s' runs wait %s 2>&1", harness_bin("taskdeck"),
	    json_str(run, "id")), 0, "%s", out);
	cr_expect(strstr(out, "changes_requested (round 2)") != NULL, "%s", out);
	free(out);
	cJSON_Delete(reviews);
	cJSON_Delete(final);
	cJSON_Delete(run);

	set_routing("{\"reviewer\":{\"model\":\"review-approve\"}}");
	run = http_replay_run(&svc, "write answer.md", project, "reviewed", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	cr_expect(strstr(json_str(final, "output"), "Fixed") == NULL, "%s", json_str(final, "output"));
	text = ws_text(final, "answer.md");
	cr_expect_str_eq(text, "draft\n");
	free(text);
	reviews = review_events(json_str(run, "id"));
	cr_expect_eq(cJSON_GetArraySize(reviews), 1);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(final, "review"), "verdict"),
	    "approved");
	cJSON_Delete(reviews);
	cJSON_Delete(final);
	cJSON_Delete(run);

	set_routing("{\"reviewer\":{\"enabled\":false}}");
	run = http_replay_run(&svc, "write answer.md", project, "reviewed", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(final, "review")), "a review without a reviewer");
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
}

/*
 * The reviewer on a provider of its own (an OpenAI-compatible fake server): it
 * gets its model and key, and reads the task, the answer and the changed file.
 */
Test(routing, the_reviewer_reads_the_task_the_answer_and_the_changed_files)
{
	struct fake_reply reply = { .status = 200, .content_type = "text/event-stream" };
	struct fake_provider *fp;
	struct buf b;
	char settings[1024], *project;
	const struct fake_request *req;
	cJSON *run, *final, *body, *msgs;
	const char *user;

	buf_init(&b, 0);
	fake_openai_text(&b, "APPROVE\nanswer.md is there.");
	fake_openai_delta(&b, "{}", "stop");
	fake_openai_usage(&b, 400, 7);
	fake_openai_done(&b);
	reply.body = buf_steal(&b);
	fp = fake_provider_start(&reply, 1);
	setenv("TD_TEST_ROUTING_KEY", "sk-routing-reviewer", 1);
	snprintf(settings, sizeof settings,
	    "{\"defaults\": {\"provider\": \"replay\"},"
	    " \"providers\": {"
	    "  \"replay\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"},"
	    "  \"fake-openai\": {\"kind\": \"openai\", \"baseUrl\": \"%s/v1\","
	    "   \"apiKeyEnv\": \"TD_TEST_ROUTING_KEY\", \"defaultModel\": \"gpt-test\"}}}",
	    fake_provider_url(fp, ""));
	svc_stop(&svc);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
	set_routing("{\"reviewer\":{\"enabled\":true,\"provider\":\"fake-openai\","
	    "\"model\":\"reviewer-x\"}}");
	project = http_project_new(&svc, "routing");
	run = http_replay_run(&svc, "write answer.md for me", project, "reviewed", "");
	final = run_final_within(&svc, json_str(run, "id"), "completed", 30000);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(final, "review"), "verdict"),
	    "approved");
	cr_expect_eq(json_num(cJSON_GetObjectItem(final, "usage"), "inputTokens"), 2100 + 400);
	cr_assert_eq(fake_provider_count(fp), 1);
	req = fake_provider_request(fp, 0);
	cr_expect_str_eq(req->authorization ? req->authorization : "(none)",
	    "Bearer sk-routing-reviewer");
	body = cJSON_Parse(req->body);
	cr_expect_str_eq(json_get_string(body, "model"), "reviewer-x");
	msgs = cJSON_GetObjectItem(body, "messages");
	cr_expect(strstr(json_get_string(cJSON_GetArrayItem(msgs, 0), "content"),
	    "APPROVE or REQUEST CHANGES") != NULL);
	user = json_get_string(cJSON_GetArrayItem(msgs, 1), "content");
	cr_assert_not_null(user);
	cr_expect(strstr(user, "Task:\nwrite answer.md for me\n") != NULL, "%s", user);
	cr_expect(strstr(user, "final answer:\nWrote answer.md.") != NULL, "%s", user);
	cr_expect(strstr(user, "added answer.md\n") != NULL, "%s", user);
	cr_expect(strstr(user, "--- answer.md\ndraft\n") != NULL, "%s", user);
	cJSON_Delete(body);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
	fake_provider_stop(fp);
	free(reply.body);
}

/* A routing that names a provider settings.json does not have fails the run at its start. */
Test(routing, a_routing_provider_that_is_not_configured_fails_the_run)
{
	char *project;
	cJSON *run, *final;

	set_routing("{\"reviewer\":{\"enabled\":true,\"provider\":\"nowhere\",\"model\":null}}");
	project = http_project_new(&svc, "routing");
	run = http_replay_run(&svc, "x", project, "quick", "");
	final = run_final_within(&svc, json_str(run, "id"), "failed", 30000);
	cr_expect(strstr(json_str(cJSON_GetObjectItem(final, "error"), "message"),
	    "the reviewer provider nowhere of the agent routing is not configured") != NULL, "%s",
	    json_str(cJSON_GetObjectItem(final, "error"), "message"));
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
}

/*
 * The routing's framework is the default of a new session that names none
 * (request, project defaults, settings): with codex there, a run asked of
 * the replay provider is refused as codex's, where taskdeck would take it.
 */
Test(routing, the_routing_framework_is_the_default_of_new_sessions)
{
	char *project = http_project_new(&svc, "routing"), body[512];
	struct http_resp r;

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"hi\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", project);
	set_routing("{\"framework\":\"codex\"}");
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_expect_eq(r.status, 422, "a new session did not take codex: %d %s", r.status, r.body);
	cr_expect(strstr(r.body, "codex") != NULL, "%s", r.body);
	http_resp_free(&r);
	set_routing("{\"framework\":\"taskdeck\"}");
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_expect_eq(r.status, 201, "%s", r.body);
	http_resp_free(&r);
	free(project);
}
