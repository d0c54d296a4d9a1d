/*
 * The servers people run models on, through a real taskdeckd and agent
 * (docs/agent.md "What each server sends"): for each, a loopback fake that
 * sends that server's bytes (fake_dialect_answer) takes a run through a
 * two-step task, reading then writing, and makes the checks the server makes
 * (DeepSeek refuses a conversation whose reasoning was not passed back).
 * Then what breaks runs on them: an answer cut at the output limit, usage
 * only in message_delta, an account without quota, a stream that ends
 * cleanly mid-answer, servers that send no call ids.
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

TestSuite(dialects, .init = svc_setup, .fini = svc_teardown, .timeout = 120);

/* Restarts the service with provider "fake" of kind at fp (anthropic: no /v1). */
static void
configure(struct fake_provider *fp, const char *kind, const char *model, const char *runs)
{
	char settings[2048];

	setenv("TD_TEST_DIALECT_KEY", "sk-dialect-test", 1);
	snprintf(settings, sizeof settings,
	    "{\"defaults\": {\"provider\": \"fake\"},"
	    " \"providers\": {"
	    "  \"fake\": {\"kind\": \"%s\", \"baseUrl\": \"%s\","
	    "   \"apiKeyEnv\": \"TD_TEST_DIALECT_KEY\", \"defaultModel\": \"%s\","
	    "   \"maxRetries\": 2}},"
	    " \"pricing\": {\"fake\": {\"%s\": {\"input\": 3, \"output\": 15}}},"
	    " \"runs\": {\"maxConcurrent\": 2%s}}",
	    kind, fake_provider_url(fp, strcmp(kind, "anthropic") == 0 ? "" : "/v1"), model, model,
	    runs);
	svc_stop(&svc);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
}

/* A fresh directory for a run's cwd (malloc'd). */
static char *
workdir(void)
{
	char tmpl[] = "/tmp/td-dialect-XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	return strdup(tmpl);
}

static void
put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static char *
get(const char *dir, const char *name)
{
	char path[1024];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return harness_slurp(path, NULL);
}

/* Starts a run of the task in dir with the fake provider; its final state. */
static cJSON *
run_in(const char *dir, const char *model, const char *effort, const char *status)
{
	char *project = http_project_new(&svc, "dialects");
	cJSON *run, *final;

	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"Copy the notes into "
	    "out.txt.\",\"cwd\":\"%s\",\"config\":{\"provider\":\"fake\",\"model\":\"%s\","
	    "\"effort\":\"%s\"}}", project, dir, model, effort);
	final = run_final_within(&svc, json_str(run, "id"), status, 60000);
	cJSON_Delete(run);
	free(project);
	return final;
}

static cJSON *
request_json(struct fake_provider *fp, size_t i)
{
	const struct fake_request *r = fake_provider_request(fp, i);

	cr_assert_not_null(r, "no request %zu", i);
	return cJSON_Parse(r->body);
}

/* The messages of request i whose role is role, in order. */
static cJSON *
messages_of(cJSON *body, const char *role, int n)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, cJSON_GetObjectItem(body, "messages")) {
		if (strcmp(json_get_string(m, "role"), role) == 0 && n-- == 0)
			return (cJSON *)m;
	}
	return NULL;
}

struct dialect_case {
	enum fake_dialect d;
	const char *model;
	const char *effort;
	bool reasons;		/* the server sends reasoning (thinking) */
	bool two_reads;		/* the first answer reads two files at once */
};

/*
 * The table p31b and later work extend: each server and what its run must
 * show.  Ollama sends its two reads with index 0 each; DeepSeek checks that
 * its reasoning_content comes back.
 */
static const struct dialect_case dialect_cases[] = {
	{ FAKE_OPENAI, "gpt-test", "medium", false, true },
	{ FAKE_DEEPSEEK, "deepseek-v4-flash", "medium", true, false },
	{ FAKE_OLLAMA, "qwen3:8b", "medium", true, true },
	{ FAKE_LLAMACPP, "qwen3-8b", "medium", true, false },
	{ FAKE_VLLM, "Qwen/Qwen3-8B", "medium", true, true },
	{ FAKE_LMSTUDIO, "qwen/qwen3-8b", "medium", true, false },
	{ FAKE_ANTHROPIC, "claude-sonnet-4-5", "high", true, true },
};

/* The reasoning the answer of step i brought back in request i + 1, if it must. */
static void
expect_reasoning_back(const struct dialect_case *c, cJSON *body, const char *said)
{
	const cJSON *m = messages_of(body, "assistant", 0);
	char *text;

	cr_assert_not_null(m, "%s: no assistant message", fake_dialect_name(c->d));
	text = cJSON_PrintUnformatted(m);
	cr_expect(strstr(text, said) != NULL, "%s: the reasoning did not come back: %s",
	    fake_dialect_name(c->d), text);
	if (c->d == FAKE_ANTHROPIC)
		cr_expect(strstr(text, "\"signature\":\"EqQBCgIYAhIM") != NULL &&
		    strstr(text, "\"type\":\"thinking\"") != NULL, "%s", text);
	free(text);
}

static void
two_step_run(const struct dialect_case *c)
{
	const char *kind = c->d == FAKE_ANTHROPIC ? "anthropic" : "openai";
	struct fake_call reads[2] = {
		{ NULL, "read_file", "{\"path\": \"a.txt\"}", 0 },
		{ NULL, "read_file", "{\"path\": \"b.txt\"}", 0 },
	};
	struct fake_call write = { NULL, "write_file",
		"{\"path\": \"out.txt\", \"content\": \"alpha notes\\nbeta notes\\n\"}", 0 };
	struct fake_reply replies[3];
	struct fake_provider *fp;
	char *dir = workdir(), *out, *body2;
	cJSON *final, *b1, *b2;
	const char *name = fake_dialect_name(c->d);

	put(dir, "a.txt", "alpha notes\n");
	put(dir, "b.txt", "beta notes\n");
	for (int i = 0; i < 3; i++)
		replies[i] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		    .chunk = 97 };
	replies[0].body = fake_dialect_answer(c->d, c->reasons ? "The user wants the notes; "
	    "read them first." : NULL, NULL, reads, c->two_reads ? 2 : 1, false, 900, 40);
	replies[1].body = fake_dialect_answer(c->d, c->reasons ? "Both read; now write them "
	    "out." : NULL, "Writing out.txt.", &write, 1, false, 1100, 60);
	replies[2].body = fake_dialect_answer(c->d, NULL, "Done: out.txt has the notes.", NULL, 0,
	    false, 1300, 12);
	if (!c->two_reads)
		write.args = "{\"path\": \"out.txt\", \"content\": \"alpha notes\\n\"}";
	if (!c->two_reads) {
		free(replies[1].body);
		replies[1].body = fake_dialect_answer(c->d, c->reasons ? "Read; now write them "
		    "out." : NULL, "Writing out.txt.", &write, 1, false, 1100, 60);
	}
	fp = fake_provider_start(replies, 3);
	if (c->d == FAKE_OLLAMA) {
		fake_provider_info(fp, "/api/version", "{\"version\":\"0.20.0\"}");
		fake_provider_info(fp, "/api/show", "{\"parameters\":\"num_ctx 16384\","
		    "\"model_info\":{\"general.architecture\":\"qwen3\","
		    "\"qwen3.context_length\":40960},\"capabilities\":[\"completion\",\"tools\","
		    "\"thinking\"]}");
	}
	fake_dialect_check(c->d, fp);
	configure(fp, kind, c->model, "");
	final = run_in(dir, c->model, c->effort, NULL);
	cr_expect_str_eq(json_str(final, "status"), "completed", "%s: %s", name,
	    cJSON_PrintUnformatted(final));
	cr_expect_eq(fake_provider_count(fp), 3, "%s: %zu requests", name, fake_provider_count(fp));
	out = get(dir, "out.txt");
	cr_expect(out != NULL && strcmp(out, c->two_reads ? "alpha notes\nbeta notes\n" :
	    "alpha notes\n") == 0, "%s: out.txt is %s", name, out ? out : "(none)");
	free(out);
	cr_expect(strstr(json_str(final, "output"), "Done: out.txt has the notes.") != NULL,
	    "%s: %s", name, json_str(final, "output"));
	cr_expect(json_num(cJSON_GetObjectItem(final, "usage"), "inputTokens") == 3300, "%s: %s",
	    name, cJSON_PrintUnformatted(cJSON_GetObjectItem(final, "usage")));

	/* Ollama's questions go to Ollama only, not to any server behind a /v1 URL. */
	cr_expect_eq(fake_provider_info_asked(fp, "/api/show"), c->d == FAKE_OLLAMA, "%s", name);

	/* The second request: each read's own result, under its own id. */
	b2 = request_json(fp, 1);
	body2 = cJSON_PrintUnformatted(b2);
	cr_expect(strstr(body2, "alpha notes") != NULL, "%s: %s", name, body2);
	if (c->two_reads && c->d != FAKE_ANTHROPIC) {
		const cJSON *r0 = messages_of(b2, "tool", 0), *r1 = messages_of(b2, "tool", 1);
		const cJSON *calls = cJSON_GetObjectItem(messages_of(b2, "assistant", 0),
		    "tool_calls");

		cr_assert_eq(cJSON_GetArraySize(calls), 2, "%s: the reads were glued: %s", name,
		    body2);
		cr_assert(r0 != NULL && r1 != NULL, "%s: %s", name, body2);
		cr_expect(strstr(json_get_string(r0, "content"), "alpha notes") != NULL &&
		    strstr(json_get_string(r1, "content"), "beta notes") != NULL, "%s: %s", name,
		    body2);
		cr_expect_str_neq(json_get_string(r0, "tool_call_id"),
		    json_get_string(r1, "tool_call_id"));
		cr_expect_str_eq(json_get_string(r0, "tool_call_id"),
		    json_get_string(cJSON_GetArrayItem(calls, 0), "id"));
		cr_expect_str_eq(json_get_string(r1, "tool_call_id"),
		    json_get_string(cJSON_GetArrayItem(calls, 1), "id"));
	} else if (c->two_reads) {
		cr_expect(strstr(body2, "beta notes") != NULL, "%s: %s", name, body2);
	}
	if (c->reasons)
		expect_reasoning_back(c, b2, "read them first.");
	if (c->d == FAKE_ANTHROPIC) {
		b1 = request_json(fp, 0);
		cr_expect_eq(json_num(cJSON_GetObjectItem(b1, "thinking"), "budget_tokens"), 16384,
		    "effort high asks for extended thinking");
		cr_expect_eq(json_num(b1, "max_tokens"), 64000, "the model's output limit");
		cJSON_Delete(b1);
	}
	free(body2);
	cJSON_Delete(b2);
	cJSON_Delete(final);
	fake_provider_stop(fp);
	for (int i = 0; i < 3; i++)
		free(replies[i].body);
	free(dir);
}

Test(dialects, each_server_completes_a_read_then_write_run)
{
	for (size_t i = 0; i < sizeof dialect_cases / sizeof *dialect_cases; i++)
		two_step_run(&dialect_cases[i]);
}

/* A write_file call of path with content (and append), as JSON text (malloc'd). */
static char *
write_args(const char *path, const char *content, bool append)
{
	cJSON *a = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(a, "path", path);
	cJSON_AddStringToObject(a, "content", content);
	if (append)
		cJSON_AddTrueToObject(a, "append");
	text = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return text;
}

/*
 * A write of 40 KB that the output limit cuts at 30 KB, inside the call's
 * arguments: the run goes on, the model is told (the server refuses the next
 * request unless it says so) and writes the file in two parts.
 */
static void
cut_write_run(enum fake_dialect d, const char *model)
{
	const char *kind = d == FAKE_ANTHROPIC ? "anthropic" : "openai";
	struct buf content;
	char *whole, *first, *rest, *dir = workdir(), *got;
	struct fake_call call = { NULL, "write_file", NULL, 0 };
	struct fake_reply replies[4];
	struct fake_provider *fp;
	cJSON *final;

	buf_init(&content, 0);
	for (int i = 0; content.len < 40000; i++)
		buf_printf(&content, "line %05d of the big report\n", i);
	whole = write_args("big.txt", content.data, false);
	first = strndup(content.data, 20000);
	call.args = whole;
	call.cut_at = 30000;
	for (int i = 0; i < 4; i++)
		replies[i] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		    .chunk = 4096 };
	replies[0].body = fake_dialect_answer(d, NULL, "Writing the report.", &call, 1, true, 500,
	    8192);
	call.args = rest = write_args("big.txt", first, false);
	call.cut_at = 0;
	replies[1].body = fake_dialect_answer(d, NULL, NULL, &call, 1, false, 900, 5000);
	free(rest);
	call.args = rest = write_args("big.txt", content.data + 20000, true);
	replies[2].body = fake_dialect_answer(d, NULL, NULL, &call, 1, false, 900, 5000);
	free(rest);
	replies[3].body = fake_dialect_answer(d, NULL, "Wrote big.txt in two parts.", NULL, 0,
	    false, 900, 10);
	fp = fake_provider_start(replies, 4);
	fake_provider_check(fp, 1, NULL, "output limit", 400, "{\"error\":{\"message\":\"the model "
	    "was not told that its answer was cut\",\"type\":\"invalid_request_error\"}}");
	configure(fp, kind, model, "");
	final = run_in(dir, model, "medium", NULL);
	cr_expect_str_eq(json_str(final, "status"), "completed", "%s: %s", fake_dialect_name(d),
	    cJSON_PrintUnformatted(final));
	cr_expect_eq(fake_provider_count(fp), 4, "%s: %zu requests", fake_dialect_name(d),
	    fake_provider_count(fp));
	got = get(dir, "big.txt");
	cr_expect(got != NULL && strcmp(got, content.data) == 0, "%s: big.txt has %zu bytes",
	    fake_dialect_name(d), got ? strlen(got) : 0);
	free(got);
	cJSON_Delete(final);
	fake_provider_stop(fp);
	for (int i = 0; i < 4; i++)
		free(replies[i].body);
	free(first);
	free(whole);
	buf_free(&content);
	free(dir);
}

Test(dialects, a_write_cut_at_the_output_limit_is_told_and_written_in_parts)
{
	cut_write_run(FAKE_VLLM, "Qwen/Qwen3-8B");
	cut_write_run(FAKE_ANTHROPIC, "claude-sonnet-4-5");
}

/* LiteLLM, Bedrock proxies, Open WebUI: input tokens only in message_delta. */
Test(dialects, usage_sent_only_in_message_delta_is_counted)
{
	struct fake_reply reply = { .status = 200, .content_type = "text/event-stream" };
	struct fake_provider *fp;
	struct buf b;
	char *dir = workdir();
	cJSON *final, *usage;

	buf_init(&b, 0);
	fake_anthropic_event(&b, "message_start", "{\"type\":\"message_start\",\"message\":{"
	    "\"id\":\"msg_litellm\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],"
	    "\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,"
	    "\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}");
	fake_anthropic_text_block(&b, 0, "Nothing to do.");
	fake_anthropic_event(&b, "message_delta", "{\"type\":\"message_delta\",\"delta\":{"
	    "\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":"
	    "10000,\"output_tokens\":200,\"cache_creation_input_tokens\":0,"
	    "\"cache_read_input_tokens\":0}}");
	fake_anthropic_event(&b, "message_stop", "{\"type\":\"message_stop\"}");
	reply.body = b.data;
	fp = fake_provider_start(&reply, 1);
	configure(fp, "anthropic", "claude-sonnet-4-5", "");
	final = run_in(dir, "claude-sonnet-4-5", "medium", "completed");
	usage = cJSON_GetObjectItem(final, "usage");
	cr_expect_eq(json_num(usage, "inputTokens"), 10000, "%s", cJSON_PrintUnformatted(usage));
	cr_expect_eq(json_num(usage, "outputTokens"), 200);
	/* (10,000 x 3 + 200 x 15) / 10^6 USD */
	cr_expect(json_num(final, "cost") > 0.0329 && json_num(final, "cost") < 0.0331, "cost %g",
	    json_num(final, "cost"));
	cJSON_Delete(final);
	fake_provider_stop(fp);
	buf_free(&b);
	free(dir);
}

/* OpenAI's 429 insufficient_quota: no wait brings credit back, so no retry. */
Test(dialects, insufficient_quota_fails_at_once_and_says_why)
{
	struct fake_reply replies[3];
	struct fake_provider *fp;
	struct buf b;
	char *dir = workdir();
	cJSON *final, *err;

	buf_init(&b, 0);
	fake_openai_error(&b, "insufficient_quota", "insufficient_quota", "You exceeded your "
	    "current quota, please check your plan and billing details. For more information on "
	    "this error, read the docs: https://platform.openai.com/docs/guides/error-codes/"
	    "api-errors.");
	for (int i = 0; i < 3; i++)
		replies[i] = (struct fake_reply){ .status = 429, .content_type = "application/json",
		    .body = b.data };
	fp = fake_provider_start(replies, 3);
	configure(fp, "openai", "gpt-test", "");
	final = run_in(dir, "gpt-test", "medium", "failed");
	err = cJSON_GetObjectItem(final, "error");
	cr_expect_str_eq(json_str(err, "code"), "provider_error");
	cr_expect(strstr(json_str(err, "message"), "no quota or credit left") != NULL &&
	    strstr(json_str(err, "message"), "You exceeded your current quota") != NULL, "%s",
	    json_str(err, "message"));
	cr_expect_eq(fake_provider_count(fp), 1, "retried %zu times", fake_provider_count(fp) - 1);
	cJSON_Delete(final);
	fake_provider_stop(fp);
	buf_free(&b);
	free(dir);
}

/*
 * A server that ends its answer cleanly in the middle (a close, no error):
 * the turn is asked again, and the output has the answer once.
 */
Test(dialects, a_stream_ended_cleanly_mid_answer_is_asked_again)
{
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct buf b;
	char *dir = workdir(), *full;
	cJSON *final;

	buf_init(&b, 0);
	fake_openai_delta(&b, "{\"role\":\"assistant\",\"content\":\"\"}", NULL);
	fake_openai_text(&b, "The notes are ");
	replies[0] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = b.data };
	full = fake_dialect_answer(FAKE_OPENAI, NULL, "The notes are in a.txt.", NULL, 0, false,
	    300, 9);
	replies[1] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = full };
	fp = fake_provider_start(replies, 2);
	configure(fp, "openai", "gpt-test", "");
	final = run_in(dir, "gpt-test", "medium", "completed");
	cr_expect_eq(fake_provider_count(fp), 2);
	cr_expect_str_eq(json_str(final, "output"), "The notes are in a.txt.");
	cJSON_Delete(final);
	fake_provider_stop(fp);
	buf_free(&b);
	free(full);
	free(dir);
}

/* A server that sends calls without ids: the ids the agent makes differ from turn to turn. */
Test(dialects, made_up_call_ids_differ_between_turns)
{
	struct fake_call a = { "", "read_file", "{\"path\": \"a.txt\"}", 0 };
	struct fake_call b = { "", "read_file", "{\"path\": \"b.txt\"}", 0 };
	struct fake_reply replies[3];
	struct fake_provider *fp;
	char *dir = workdir();
	cJSON *final, *body;
	const char *id0, *id1;

	put(dir, "a.txt", "alpha\n");
	put(dir, "b.txt", "beta\n");
	replies[0] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = fake_dialect_answer(FAKE_OLLAMA, NULL, NULL, &a, 1, false, 100, 5) };
	replies[1] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = fake_dialect_answer(FAKE_OLLAMA, NULL, NULL, &b, 1, false, 100, 5) };
	replies[2] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = fake_dialect_answer(FAKE_OLLAMA, NULL, "Read both.", NULL, 0, false, 100, 5) };
	fp = fake_provider_start(replies, 3);
	configure(fp, "openai", "qwen3:8b", "");
	final = run_in(dir, "qwen3:8b", "medium", "completed");
	body = request_json(fp, 2);
	id0 = json_get_string(cJSON_GetArrayItem(cJSON_GetObjectItem(messages_of(body, "assistant",
	    0), "tool_calls"), 0), "id");
	id1 = json_get_string(cJSON_GetArrayItem(cJSON_GetObjectItem(messages_of(body, "assistant",
	    1), "tool_calls"), 0), "id");
	cr_assert(id0 != NULL && id1 != NULL);
	cr_expect_str_neq(id0, id1, "both turns' calls are %s", id0);
	cr_expect_str_eq(json_get_string(messages_of(body, "tool", 0), "tool_call_id"), id0);
	cr_expect_str_eq(json_get_string(messages_of(body, "tool", 1), "tool_call_id"), id1);
	cJSON_Delete(body);
	cJSON_Delete(final);
	fake_provider_stop(fp);
	for (int i = 0; i < 3; i++)
		free(replies[i].body);
	free(dir);
}

static void
set_routing(const char *body)
{
	struct http_resp r = http_api(&svc, "PATCH", "/api/v1/settings/agent-routing", body);

	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
}

/*
 * runs.maxCostPerRun is the run's, subagents included: the second child
 * passes it and stops; the parent sends no request after it.
 */
Test(dialects, the_cost_limit_holds_across_subagents)
{
	struct fake_call subs[2] = {
		{ NULL, "run_subagent", "{\"description\": \"one\", \"prompt\": \"Read a.txt.\"}", 0 },
		{ NULL, "run_subagent", "{\"description\": \"two\", \"prompt\": \"Read b.txt.\"}", 0 },
	};
	struct fake_reply replies[5];
	struct fake_provider *fp;
	char *dir = workdir();
	cJSON *final, *err;

	for (int i = 0; i < 5; i++)
		replies[i] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream" };
	/* USD: the parent 0.003, each child 0.03 (10,000 input tokens at 3 per million) */
	replies[0].body = fake_dialect_answer(FAKE_OPENAI, NULL, NULL, subs, 2, false, 1000, 0);
	replies[1].body = fake_dialect_answer(FAKE_OPENAI, NULL, "a.txt says alpha.", NULL, 0,
	    false, 10000, 0);
	replies[2].body = fake_dialect_answer(FAKE_OPENAI, NULL, "b.txt says beta.", NULL, 0,
	    false, 10000, 0);
	replies[3].body = fake_dialect_answer(FAKE_OPENAI, NULL, "Both read.", NULL, 0, false,
	    10000, 0);
	replies[4].body = fake_dialect_answer(FAKE_OPENAI, NULL, "Again.", NULL, 0, false, 10000,
	    0);
	fp = fake_provider_start(replies, 5);
	configure(fp, "openai", "gpt-test", ", \"maxCostPerRun\": 0.05");
	set_routing("{\"subagent\":{\"enabled\":true,\"provider\":\"fake\",\"model\":\"gpt-test\","
	    "\"maxConcurrent\":1}}");
	final = run_in(dir, "gpt-test", "medium", "failed");
	err = cJSON_GetObjectItem(final, "error");
	cr_expect_str_eq(json_str(err, "code"), "budget_exceeded", "%s",
	    cJSON_PrintUnformatted(final));
	cr_expect_eq(fake_provider_count(fp), 3, "%zu paid requests",
	    fake_provider_count(fp));
	/* at most one request past the limit */
	cr_expect(json_num(final, "cost") < 0.05 + 0.0301, "cost %g", json_num(final, "cost"));
	cJSON_Delete(final);
	fake_provider_stop(fp);
	for (int i = 0; i < 5; i++)
		free(replies[i].body);
	free(dir);
}

/*
 * The reasoning of an answer survives a kill -9 of the service: the resumed
 * run sends DeepSeek the first answer's reasoning_content from the checkpoint.
 */
Test(dialects, reasoning_comes_back_after_a_resume)
{
	struct fake_call read = { NULL, "read_file", "{\"path\": \"a.txt\"}", 0 };
	struct fake_call write = { NULL, "write_file",
		"{\"path\": \"out.txt\", \"content\": \"alpha notes\\n\"}", 0 };
	struct fake_reply replies[4];
	struct fake_provider *fp;
	char *dir = workdir(), *project, *out, *body;
	cJSON *run, *final;

	put(dir, "a.txt", "alpha notes\n");
	for (int i = 0; i < 4; i++)
		replies[i] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		    .chunk = 64 };
	replies[0].body = fake_dialect_answer(FAKE_DEEPSEEK, "Read the notes first.", NULL, &read,
	    1, false, 900, 40);
	/* the answer the kill interrupts: slow; its text is out after the checkpoint before it */
	replies[1].body = fake_dialect_answer(FAKE_DEEPSEEK, "Now write them out.",
	    "Writing out.txt.", &write, 1, false, 1100, 60);
	replies[1].chunk_delay_us = 200000;
	replies[2].body = fake_dialect_answer(FAKE_DEEPSEEK, "Now write them out.", NULL, &write,
	    1, false, 1100, 60);
	replies[3].body = fake_dialect_answer(FAKE_DEEPSEEK, NULL, "Done.", NULL, 0, false, 1300,
	    5);
	fp = fake_provider_start(replies, 4);
	fake_dialect_check(FAKE_DEEPSEEK, fp);
	configure(fp, "openai", "deepseek-v4-flash", "");
	project = http_project_new(&svc, "dialects");
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"Copy the notes into "
	    "out.txt.\",\"cwd\":\"%s\",\"config\":{\"provider\":\"fake\",\"model\":"
	    "\"deepseek-v4-flash\"}}", project, dir);
	run_output_wait(&svc, json_str(run, "id"), 30000, "Writing");
	cr_assert_eq(fake_provider_count(fp), 2);
	svc_kill(&svc);
	svc_restart(&svc);
	final = run_final_within(&svc, json_str(run, "id"), "completed", 60000);
	cr_expect_eq(fake_provider_count(fp), 4, "%zu requests", fake_provider_count(fp));
	body = fake_provider_count(fp) > 2 ? strdup(fake_provider_request(fp, 2)->body) : NULL;
	cr_expect(body != NULL && strstr(body, "\"reasoning_content\":\"Read the notes first.\"") !=
	    NULL, "the resumed request: %s", body ? body : "(none)");
	out = get(dir, "out.txt");
	cr_expect(out != NULL && strcmp(out, "alpha notes\n") == 0, "out.txt: %s", out ? out :
	    "(none)");
	free(out);
	free(body);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
	fake_provider_stop(fp);
	for (int i = 0; i < 4; i++)
		free(replies[i].body);
	free(dir);
}

/* Whole calls without ids, each with index 0 (or none): each is a call of its own. */
Test(dialects, whole_calls_without_ids_are_calls_of_their_own)
{
	struct fake_call reads[2] = {
		{ "", "read_file", "{\"path\": \"a.txt\"}", 0 },
		{ "", "read_file", "{\"path\": \"b.txt\"}", 0 },
	};
	struct fake_reply replies[2];
	struct fake_provider *fp;
	char *dir = workdir();
	cJSON *final, *body;

	put(dir, "a.txt", "alpha\n");
	put(dir, "b.txt", "beta\n");
	replies[0] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = fake_dialect_answer(FAKE_OLLAMA, NULL, NULL, reads, 2, false, 100, 5) };
	replies[1] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
	    .body = fake_dialect_answer(FAKE_OLLAMA, NULL, "Read both.", NULL, 0, false, 100, 5) };
	fp = fake_provider_start(replies, 2);
	configure(fp, "openai", "qwen3:8b", "");
	final = run_in(dir, "qwen3:8b", "medium", "completed");
	body = request_json(fp, 1);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(messages_of(body, "assistant", 0),
	    "tool_calls")), 2);
	cr_expect(strstr(json_get_string(messages_of(body, "tool", 0), "content"), "alpha") != NULL);
	cr_expect(strstr(json_get_string(messages_of(body, "tool", 1), "content"), "beta") != NULL);
	cJSON_Delete(body);
	cJSON_Delete(final);
	fake_provider_stop(fp);
	for (int i = 0; i < 2; i++)
		free(replies[i].body);
	free(dir);
}
