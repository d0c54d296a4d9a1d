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
