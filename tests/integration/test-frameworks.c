/*
 * External frameworks through a real taskdeckd (docs/frameworks.md): runs
 * with framework claude-code and codex drive the real CLIs from the npm
 * registry (scripts/test-deps, $TD_CACHE), their model endpoint pointed at
 * tests/integration/fake-provider.c speaking the Anthropic Messages stream
 * and the OpenAI Responses stream.  Fake CLIs (shell scripts) on PATH stand
 * for a wrong version or a CLI that is not there.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"
#include "json.h"

#define FINAL_WAIT_MS 90000
#define ANTHROPIC_KEY "sk-ant-test-4f1c9e2b7a"
#define OPENAI_KEY "sk-oai-test-8d3a6b0c51"

static struct fake_provider *fake;
static struct fake_reply replies[4];
static char workspace[PATH_MAX];
static char envdir[PATH_MAX];		/* bin, user (HOME), tmp: outside TASKDECK_HOME */
static char *project;
static const char *settings_extra = "";	/* more members of settings.json, or "" */

static void
remove_tree(char *dir)
{
	char cmd[PATH_MAX + 16];

	if (dir[0] == '\0')
		return;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	dir[0] = '\0';
}

static void
teardown(void)
{
	svc_destroy(&svc);
	remove_tree(workspace);
	remove_tree(envdir);
	if (fake != NULL)
		fake_provider_stop(fake);
	fake = NULL;
	free(project);
	project = NULL;
	settings_extra = "";
	unsetenv("TASKDECK_BWRAP");
	for (size_t i = 0; i < sizeof replies / sizeof *replies; i++) {
		free(replies[i].body);
		replies[i].body = NULL;
	}
}

TestSuite(frameworks, .fini = teardown, .timeout = 180);

/* The CLI of the npm cache, or NULL (the test is skipped) without TD_CACHE. */
static const char *
cache_cli(const char *framework)
{
	static char path[PATH_MAX];
	const char *cache = getenv("TD_CACHE");
	struct stat st;

	if (cache == NULL || cache[0] == '\0')
		return NULL;
	if (strcmp(framework, "claude-code") == 0)
		snprintf(path, sizeof path, "%s/npm/claude-code/node_modules/@anthropic-ai/"
		    "claude-code/bin/claude.exe", cache);
	else
		snprintf(path, sizeof path, "%s/npm/codex/node_modules/@openai/codex/bin/codex.js",
		    cache);
	cr_assert(stat(path, &st) == 0, "TD_CACHE is set but %s is missing: run "
	    "scripts/test-deps", path);
	return path;
}

static void
need_cli(const char *framework)
{
	if (cache_cli(framework) == NULL)
		cr_skip_test("TD_CACHE is not set: run ./quickstart check (the real %s CLI "
		    "comes from the npm registry)", framework);
}

/*
 * $envdir/bin, first on PATH; HOME for the CLIs' own state is $envdir/user.  Not
 * under the service's home nor /tmp: the sandbox the CLIs run in hides TASKDECK_HOME
 * and has a /tmp of its own.
 */
static void
prepare_path(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];

	snprintf(envdir, sizeof envdir, "/var/tmp/tdfw-env-XXXXXX");
	cr_assert_not_null(mkdtemp(envdir));
	snprintf(dir, sizeof dir, "%.4000s/bin", envdir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s:/usr/local/bin:/usr/bin:/bin", dir);
	setenv("PATH", path, 1);
	snprintf(dir, sizeof dir, "%.4000s/user", envdir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	setenv("HOME", dir, 1);
	snprintf(dir, sizeof dir, "%.4000s/tmp", envdir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	setenv("TMPDIR", dir, 1);
	/* Outside the service's home: taskdeck's own directories are no run's cwd. */
	snprintf(workspace, sizeof workspace, "/tmp/tdfw-ws-XXXXXX");
	cr_assert_not_null(mkdtemp(workspace));
	cr_assert_not_null(realpath(workspace, dir));
	snprintf(workspace, sizeof workspace, "%s", dir);
}

/* Puts the real CLI on PATH as name. */
static void
link_cli(const char *framework, const char *name)
{
	char link[PATH_MAX + 64];

	snprintf(link, sizeof link, "%s/bin/%s", envdir, name);
	cr_assert_eq(symlink(cache_cli(framework), link), 0);
}

/* Puts a shell script on PATH as name. */
static void
fake_cli(const char *name, const char *script)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof path, "%s/bin/%s", envdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", script);
	fclose(f);
	chmod(path, 0755);
}

/* Starts the service with providers pointed at the fake server (or nowhere). */
static void
start_service(void)
{
	char settings[2048];
	const char *base = fake ? fake_provider_url(fake, "") : "http://127.0.0.1:9";
	char url[256];

	snprintf(url, sizeof url, "%s", base);
	setenv("TD_TEST_ANTHROPIC_KEY", ANTHROPIC_KEY, 1);
	setenv("TD_TEST_OPENAI_KEY", OPENAI_KEY, 1);
	snprintf(settings, sizeof settings,
	    "{\"defaults\": {\"framework\": \"taskdeck\", \"provider\": \"replay\"},"
	    " \"providers\": {"
	    "  \"replay\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"},"
	    "  \"fake-anthropic\": {\"kind\": \"anthropic\", \"baseUrl\": \"%s\","
	    "   \"apiKeyEnv\": \"TD_TEST_ANTHROPIC_KEY\", \"defaultModel\": \"claude-test\"},"
	    "  \"fake-login\": {\"kind\": \"anthropic\", \"baseUrl\": \"%s\","
	    "   \"defaultModel\": \"claude-test\"},"
	    "  \"fake-openai\": {\"kind\": \"openai\", \"baseUrl\": \"%s/v1\","
	    "   \"apiKeyEnv\": \"TD_TEST_OPENAI_KEY\", \"defaultModel\": \"gpt-test\"}}%s}",
	    url, url, url, settings_extra);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
}

static void
new_project(void)
{
	struct http_resp r = http_req(&svc, "POST", "/api/v1/projects",
	    "{\"name\":\"frameworks\"}", NULL, true);

	cr_assert_eq(r.status, 201, "%s", r.body);
	free(project);
	project = strdup(json_get_string(r.json, "id"));
	http_resp_free(&r);
}

/* POST /runs with the framework and provider; the response. */
static struct http_resp
start_run(const char *framework, const char *provider, const char *profile,
    const char *extra, const char *prompt)
{
	char body[PATH_MAX + 2048];

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"%s\","
	    "\"permissionProfile\":\"%s\",\"cwd\":\"%s\",\"config\":{\"framework\":\"%s\","
	    "\"provider\":\"%s\"}%s}", project, prompt, profile, workspace, framework,
	    provider, extra ? extra : "");
	return http_req(&svc, "POST", "/api/v1/runs", body, NULL, true);
}

/* The run's stored events of one type. */
static cJSON *
run_events(const char *run_id, const char *type)
{
	char path[256];
	struct http_resp r;
	cJSON *out = cJSON_CreateArray(), *e;

	snprintf(path, sizeof path, "/api/v1/runs/%s/events?limit=1000", run_id);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cJSON_ArrayForEach(e, r.json) {
		if (strcmp(json_get_string(e, "type"), type) == 0)
			cJSON_AddItemToArray(out, cJSON_Duplicate(e, true));
	}
	http_resp_free(&r);
	return out;
}

/* A run.tool event with name and status, or NULL. */
static const cJSON *
find_tool(const cJSON *tools, const char *name, const char *status)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, tools) {
		const cJSON *d = cJSON_GetObjectItem(e, "data");

		if (strcmp(json_get_string(d, "name"), name) == 0 &&
		    strcmp(json_get_string(d, "status"), status) == 0)
			return d;
	}
	return NULL;
}

static char *
read_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 64], *text = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	if (getdelim(&text, &len, '\0', f) < 0) {
		free(text);
		text = strdup("");
	}
	fclose(f);
	return text;
}

static long
usage_of(const cJSON *run, const char *key)
{
	const cJSON *u = cJSON_GetObjectItem(run, "usage");

	return (long)cJSON_GetNumberValue(cJSON_GetObjectItem(u, key));
}

/* Anthropic: text, then a tool_use block; then the final answer. */
static void
script_claude(const char *tool, const char *input_json, const char *final_text)
{
	struct buf b;

	buf_init(&b, 0);
	fake_anthropic_start(&b, 100);
	fake_anthropic_text_block(&b, 0, "I will use a tool.");
	fake_anthropic_tool_block(&b, 1, "toolu_01", tool, input_json, 16);
	fake_anthropic_stop(&b, "tool_use", 20);
	replies[0] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		.body = buf_steal(&b), .chunk = 97, .chunk_delay_us = 2000 };
	buf_init(&b, 0);
	fake_anthropic_start(&b, 150);
	fake_anthropic_text_block(&b, 0, final_text);
	fake_anthropic_stop(&b, "end_turn", 3);
	replies[1] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		.body = buf_steal(&b), .chunk = 97, .chunk_delay_us = 2000 };
	fake = fake_provider_start(replies, 2);
}

/* Responses: a function call; then the final answer. */
static void
script_codex(const char *tool, const char *args_json, const char *final_text)
{
	struct buf b;

	buf_init(&b, 0);
	fake_responses_start(&b, "resp_1");
	fake_responses_function_call(&b, 0, "call_1", tool, args_json, 16);
	fake_responses_completed(&b, "resp_1", 200, 30);
	replies[0] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		.body = buf_steal(&b), .chunk = 97, .chunk_delay_us = 2000 };
	buf_init(&b, 0);
	fake_responses_start(&b, "resp_2");
	fake_responses_text(&b, 0, "msg_2", final_text, 7);
	fake_responses_completed(&b, "resp_2", 260, 8);
	replies[1] = (struct fake_reply){ .status = 200, .content_type = "text/event-stream",
		.body = buf_steal(&b), .chunk = 97, .chunk_delay_us = 2000 };
	fake = fake_provider_start(replies, 2);
}

/* The run's workspace changes list path as added, and a run.changes event said so. */
static void
expect_added(const char *run_id, const char *path)
{
	cJSON *c = http_get_json(&svc, "/api/v1/runs/%s/changes", run_id), *events;
	const cJSON *f, *e;
	bool listed = false, told = false;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(c, "files"))
		listed |= strcmp(json_str_or_none(f, "path"), path) == 0 &&
		    strcmp(json_str_or_none(f, "status"), "added") == 0;
	cr_expect(listed, "%s is not among the run's changes: %s", path,
	    cJSON_PrintUnformatted(c));
	cJSON_Delete(c);
	events = run_events(run_id, "run.changes");
	cJSON_ArrayForEach(e, events) {
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(cJSON_GetObjectItem(e, "data"), "paths"))
			told |= strcmp(cJSON_GetStringValue(p), path) == 0;
	}
	cr_expect(told, "no run.changes names %s: %s", path, cJSON_PrintUnformatted(events));
	cJSON_Delete(events);
}

/* The real claude writes a file with its Write tool; output, tool events and usage. */
Test(frameworks, claude_code_run_completes)
{
	char input[PATH_MAX + 128];
	struct http_resp r;
	cJSON *run, *tools;
	const cJSON *t;
	char *text;

	need_cli("claude-code");
	svc_prepare_home(&svc);
	prepare_path();
	link_cli("claude-code", "claude");
	snprintf(input, sizeof input, "{\"file_path\":\"%s/notes/claude.md\","
	    "\"content\":\"# Written by claude\\n\"}", workspace);
	script_claude("Write", input, "Done: notes/claude.md is written.");
	start_service();
	new_project();

	r = start_run("claude-code", "fake-anthropic", "workspace-write", NULL,
	    "Write notes/claude.md");
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(run);
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(run));
	cr_assert_str_eq(json_get_string(run, "output"),
	    "I will use a tool.\n\nDone: notes/claude.md is written.");
	cr_assert_eq(usage_of(run, "inputTokens"), 250);
	cr_assert_eq(usage_of(run, "outputTokens"), 23);
	text = read_file(workspace, "notes/claude.md");
	cr_assert_not_null(text, "claude did not write the file");
	cr_assert_str_eq(text, "# Written by claude\n");
	free(text);

	tools = run_events(json_get_string(run, "id"), "run.tool");
	cr_assert_not_null(t = find_tool(tools, "Write", "started"), "%s",
	    cJSON_PrintUnformatted(tools));
	cr_assert_str_eq(json_get_string(t, "summary"), "write notes/claude.md");
	cr_assert_str_eq(json_get_string(t, "callId"), "toolu_01");
	cr_assert_not_null(find_tool(tools, "Write", "completed"));
	cJSON_Delete(tools);
	expect_added(json_get_string(run, "id"), "notes/claude.md");

	/* The key reached the model endpoint through claude's environment. */
	cr_assert_geq(fake_provider_count(fake), 2);
	cr_assert_str_eq(fake_provider_request(fake, 0)->api_key, ANTHROPIC_KEY);
	cr_assert(strstr(fake_provider_request(fake, 0)->path, "/v1/messages") ==
	    fake_provider_request(fake, 0)->path);
	cJSON_Delete(run);
	http_resp_free(&r);
}

/* The real codex runs a command with exec_command; output, tool events and usage. */
Test(frameworks, codex_run_completes)
{
	struct http_resp r;
	cJSON *run, *tools;
	const cJSON *t;
	char *text;

	need_cli("codex");
	svc_prepare_home(&svc);
	prepare_path();
	link_cli("codex", "codex");
	script_codex("exec_command", "{\"cmd\":\"printf 'from codex\\\\n' > codex.txt\"}",
	    "Wrote codex.txt.");
	start_service();
	new_project();

	r = start_run("codex", "fake-openai", "workspace-write", NULL, "Write codex.txt");
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(run);
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(run));
	cr_assert_str_eq(json_get_string(run, "output"), "Wrote codex.txt.");
	cr_assert_eq(usage_of(run, "inputTokens"), 460);
	cr_assert_eq(usage_of(run, "outputTokens"), 38);
	text = read_file(workspace, "codex.txt");
	cr_assert_not_null(text, "codex did not run the command");
	cr_assert_str_eq(text, "from codex\n");
	free(text);

	tools = run_events(json_get_string(run, "id"), "run.tool");
	cr_assert_not_null(t = find_tool(tools, "command", "started"), "%s",
	    cJSON_PrintUnformatted(tools));
	cr_assert(strstr(json_get_string(t, "summary"), "codex.txt") != NULL);
	cr_assert_not_null(find_tool(tools, "command", "completed"));
	cJSON_Delete(tools);
	expect_added(json_get_string(run, "id"), "codex.txt");

	cr_assert_geq(fake_provider_count(fake), 2);
	cr_assert_str_eq(fake_provider_request(fake, 0)->path, "/v1/responses");
	cr_assert_str_eq(fake_provider_request(fake, 0)->authorization, "Bearer " OPENAI_KEY);
	cJSON_Delete(run);
	http_resp_free(&r);
}

/* The bytes of a file as lowercase hex (what od -tx1 prints); malloc'd. */
static char *
file_hex(const char *dir, const char *name)
{
	char path[PATH_MAX + 64], *hex;
	unsigned char bytes[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s is missing", path);
	n = fread(bytes, 1, sizeof bytes, f);
	fclose(f);
	cr_assert_gt(n, 8);
	hex = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", bytes[i]);
	return hex;
}

/* Fails when secret is anywhere in text (what names it). */
static void
assert_no_secret(const char *text, const char *secret, const char *what)
{
	cr_assert(text == NULL || strstr(text, secret) == NULL, "the secret is in %s", what);
}

/*
 * The CLI's command (Bash for claude, exec_command for codex) tries to read
 * TASKDECK_HOME's token and secret.key and to write outside the workspace, then
 * writes inside it.  In taskdeck's sandbox the reads find nothing, the outside
 * write fails, the inside write lands, and neither secret reaches the model,
 * the run's events, its output or the service's log.
 */
static void
commands_are_confined(const char *framework)
{
	bool claude = strcmp(framework, "claude-code") == 0;
	char cmd[3 * PATH_MAX], input[4 * PATH_MAX], path[PATH_MAX + 64];
	char *token, *secret, *log;
	struct http_resp r, ev;
	cJSON *run;

	svc_prepare_home(&svc);
	prepare_path();
	link_cli(framework, claude ? "claude" : "codex");
	snprintf(cmd, sizeof cmd, "cat %s/token; od -An -tx1 -v %s/secret.key | tr -d "
	    "'[:space:]'; echo; echo escaped > %s/escape.txt; echo inside > inside.txt; "
	    "echo finished", svc.home, svc.home, envdir);
	if (claude) {
		snprintf(input, sizeof input, "{\"command\":\"%s\",\"description\":\"probe\"}",
		    cmd);
		script_claude("Bash", input, "Probed.");
	} else {
		snprintf(input, sizeof input, "{\"cmd\":\"%s\"}", cmd);
		script_codex("exec_command", input, "Probed.");
	}
	/* the key of stored credentials (written by the service once credentials exist) */
	svc_write_file(&svc, "secret.key", "k3y0f-st0red-cred3ntials-9f2c4e1");
	start_service();
	new_project();
	token = read_file(svc.home, "token");
	cr_assert_not_null(token);
	token[strcspn(token, "\r\n")] = '\0';
	cr_assert_gt(strlen(token), 16);
	secret = file_hex(svc.home, "secret.key");

	r = start_run(framework, claude ? "fake-anthropic" : "fake-openai", "workspace-write",
	    NULL, "Probe the sandbox");
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(run);
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s: %s", framework,
	    cJSON_PrintUnformatted(run));
	cr_assert_str_eq(json_get_string(run, "output"), claude ?
	    "I will use a tool.\n\nProbed." : "Probed.");

	/* The command ran, and its result went back to the model. */
	cr_assert_geq(fake_provider_count(fake), 2, "%s never came back to the model", framework);
	cr_assert_not_null(strstr(fake_provider_request(fake, 1)->body, "finished"), "%s: %s",
	    framework, fake_provider_request(fake, 1)->body);
	{
		char *inside = read_file(workspace, "inside.txt");

		cr_assert_not_null(inside, "%s: the command could not write its workspace",
		    framework);
		cr_assert_str_eq(inside, "inside\n");
		free(inside);
	}
	snprintf(path, sizeof path, "%s/escape.txt", envdir);
	cr_assert_neq(access(path, F_OK), 0, "%s: the command wrote outside its workspace",
	    framework);

	/* Neither secret anywhere. */
	for (size_t i = 0; i < fake_provider_count(fake); i++) {
		assert_no_secret(fake_provider_request(fake, i)->body, token, "a model request");
		assert_no_secret(fake_provider_request(fake, i)->body, secret, "a model request");
	}
	snprintf(path, sizeof path, "/api/v1/runs/%s/events?limit=1000",
	    json_get_string(run, "id"));
	ev = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_assert_eq(ev.status, 200);
	assert_no_secret(ev.body, token, "the run's events");
	assert_no_secret(ev.body, secret, "the run's events");
	assert_no_secret(ev.body, "k3y0f-st0red", "the run's events");
	assert_no_secret(json_get_string(run, "output"), token, "the output");
	log = read_file(svc.home, "taskdeckd.log");
	assert_no_secret(log, token, "the service's log");
	assert_no_secret(log, secret, "the service's log");
	free(log);
	free(token);
	free(secret);
	http_resp_free(&ev);
	cJSON_Delete(run);
	http_resp_free(&r);
}

Test(frameworks, claude_code_commands_are_confined)
{
	need_cli("claude-code");
	commands_are_confined("claude-code");
}

Test(frameworks, codex_commands_are_confined)
{
	need_cli("codex");
	commands_are_confined("codex");
}

/*
 * No key (apiKeyEnv null): the real claude uses its own login, the credentials
 * file of the user's ~/.claude bound read-only into its private home; its
 * command cannot change that file, nor see the rest of the user's ~/.claude.
 */
Test(frameworks, claude_code_login_is_read_only)
{
	static const char creds[] = "{\"claudeAiOauth\":{\"accessToken\":"
	    "\"sk-ant-oat01-taskdeck-test-login\",\"refreshToken\":\"sk-ant-ort01-test\","
	    "\"expiresAt\":4102444800000,\"scopes\":[\"user:inference\",\"user:profile\"],"
	    "\"subscriptionType\":\"pro\"}}\n";
	char path[PATH_MAX + 64], input[PATH_MAX + 256];
	struct http_resp r;
	cJSON *run;
	char *text;
	FILE *f;

	need_cli("claude-code");
	svc_prepare_home(&svc);
	prepare_path();
	link_cli("claude-code", "claude");
	snprintf(path, sizeof path, "%s/user/.claude", envdir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/user/.claude/.credentials.json", envdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(creds, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/user/.claude/settings.json", envdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("{\"env\": {\"USER_SETTING\": \"private-setting-7c1\"}}\n", f);
	fclose(f);
	snprintf(input, sizeof input, "{\"command\":\"echo tampered > "
	    "$HOME/.claude/.credentials.json; cat %s/user/.claude/settings.json; "
	    "echo finished\",\"description\":\"probe\"}", envdir);
	script_claude("Bash", input, "Probed.");
	start_service();
	new_project();

	r = start_run("claude-code", "fake-login", "workspace-write", NULL, "Probe the login");
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(run);
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(run));
	cr_assert_geq(fake_provider_count(fake), 2);
	/* The login reached the model endpoint. */
	cr_assert_not_null(fake_provider_request(fake, 0)->authorization, "no login was sent");
	cr_assert_str_eq(fake_provider_request(fake, 0)->authorization,
	    "Bearer sk-ant-oat01-taskdeck-test-login");
	/* The command ran, could not change the login, and saw no other file of ~/.claude. */
	cr_assert_not_null(strstr(fake_provider_request(fake, 1)->body, "finished"));
	cr_assert_null(strstr(fake_provider_request(fake, 1)->body, "private-setting-7c1"),
	    "the command read the user's ~/.claude");
	snprintf(path, sizeof path, "%s/user", envdir);
	text = read_file(path, ".claude/.credentials.json");
	cr_assert_str_eq(text, creds, "the command changed the user's login");
	free(text);
	cJSON_Delete(run);
	http_resp_free(&r);
}

/* Waits for the run's one pending prompt and answers it (decision NULL: leaves it
 * pending); the prompt (NULL: none came). */
static cJSON *
prompt_answer(const char *run_id, const char *decision)
{
	char path[256], body[64];
	struct http_resp r, a;
	cJSON *p;

	snprintf(path, sizeof path, "/app/v1/permissions?run=%s", run_id);
	for (long t0 = mono_ms();; usleep(100000)) {
		r = http_req(&svc, "GET", path, NULL, NULL, true);
		cr_assert_eq(r.status, 200, "%s", r.body);
		if (cJSON_GetArraySize(r.json) == 1)
			break;
		http_resp_free(&r);
		if (mono_ms() - t0 > 60000)
			return NULL;
	}
	p = cJSON_Duplicate(cJSON_GetArrayItem(r.json, 0), true);
	http_resp_free(&r);
	if (decision == NULL)
		return p;
	snprintf(path, sizeof path, "/app/v1/permissions/%s", json_get_string(p, "id"));
	snprintf(body, sizeof body, "{\"decision\":\"%s\"}", decision);
	a = http_req(&svc, "POST", path, body, NULL, true);
	cr_assert_eq(a.status, 200, "%s", a.body);
	http_resp_free(&a);
	return p;
}

/*
 * ask with the real claude: its permission prompt tool (taskdeck-agent
 * --permission-server, an MCP server claude starts in the sandbox) turns claude's
 * question about its Write into a taskdeck prompt; allow writes the file, deny
 * does not and the tool is reported denied; a cancel while the prompt waits ends
 * the run at once.
 */
Test(frameworks, claude_code_ask_goes_through_taskdeck_prompts)
{
	char input[PATH_MAX + 128];
	struct http_resp r;
	cJSON *run, *tools, *prompt;

	need_cli("claude-code");
	for (int i = 0; i < 3; i++) {
		bool allow = i == 0;

		svc_prepare_home(&svc);
		prepare_path();
		link_cli("claude-code", "claude");
		snprintf(input, sizeof input, "{\"file_path\":\"%s/asked.md\","
		    "\"content\":\"# asked\\n\"}", workspace);
		script_claude("Write", input, allow ? "Written." : "Not written.");
		start_service();
		new_project();
		r = start_run("claude-code", "fake-anthropic", "ask", NULL, "Write asked.md");
		cr_assert_eq(r.status, 201, "%s", r.body);
		prompt = prompt_answer(json_get_string(r.json, "id"), i == 2 ? NULL :
		    allow ? "allow" : "deny");
		cr_assert_not_null(prompt, "claude's question never became a taskdeck prompt");
		if (i == 2) {
			char path[256];
			struct http_resp c;
			long t0 = mono_ms();

			snprintf(path, sizeof path, "/api/v1/runs/%s/cancel",
			    json_get_string(r.json, "id"));
			c = http_req(&svc, "POST", path, NULL, NULL, true);
			cr_assert_eq(c.status, 200, "%s", c.body);
			http_resp_free(&c);
			run = run_wait_final(&svc, json_get_string(r.json, "id"), 30000);
			cr_assert_not_null(run);
			cr_assert_str_eq(json_get_string(run, "status"), "cancelled");
			cr_assert_lt(mono_ms() - t0, 10000, "the cancel waited for the prompt");
			cr_assert_null(read_file(workspace, "asked.md"));
			cJSON_Delete(prompt);
			cJSON_Delete(run);
			http_resp_free(&r);
			teardown();
			continue;
		}
		cr_assert_str_eq(json_get_string(prompt, "tool"), "Write");
		cr_assert_str_eq(json_get_string(prompt, "summary"), "write asked.md");
		cr_assert_str_eq(json_get_string(cJSON_GetObjectItem(prompt, "input"), "content"),
		    "# asked\n");
		run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
		cr_assert_not_null(run);
		cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
		    cJSON_PrintUnformatted(run));
		tools = run_events(json_get_string(run, "id"), "run.tool");
		if (allow) {
			char *text = read_file(workspace, "asked.md");

			cr_assert_not_null(text, "allowed, but claude did not write");
			cr_assert_str_eq(text, "# asked\n");
			free(text);
			cr_assert_not_null(find_tool(tools, "Write", "completed"), "%s",
			    cJSON_PrintUnformatted(tools));
		} else {
			cr_assert_null(read_file(workspace, "asked.md"), "denied, but claude wrote");
			cr_assert_not_null(find_tool(tools, "Write", "denied"), "%s",
			    cJSON_PrintUnformatted(tools));
		}
		cJSON_Delete(tools);
		cJSON_Delete(prompt);
		cJSON_Delete(run);
		http_resp_free(&r);
		teardown();
	}
}

/* read-only with the real CLIs: claude's Write is refused, codex's sandbox stops the write. */
Test(frameworks, read_only_is_honoured)
{
	char input[PATH_MAX + 128];
	struct http_resp r;
	cJSON *run, *tools;
	const char *framework = NULL;

	need_cli("claude-code");
	need_cli("codex");
	for (int i = 0; i < 2; i++) {
		framework = i == 0 ? "claude-code" : "codex";
		svc_prepare_home(&svc);
		prepare_path();
		if (i == 0) {
			link_cli("claude-code", "claude");
			snprintf(input, sizeof input, "{\"file_path\":\"%s/ro.md\","
			    "\"content\":\"no\"}", workspace);
			script_claude("Write", input, "Could not write.");
		} else {
			link_cli("codex", "codex");
			script_codex("exec_command", "{\"cmd\":\"echo no > ro.md\"}",
			    "Could not write.");
		}
		start_service();
		new_project();
		r = start_run(framework, i == 0 ? "fake-anthropic" : "fake-openai", "read-only",
		    NULL, "Try to write ro.md");
		cr_assert_eq(r.status, 201, "%s", r.body);
		run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
		cr_assert_not_null(run);
		cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s: %s", framework,
		    cJSON_PrintUnformatted(run));
		cr_assert_null(read_file(workspace, "ro.md"), "%s wrote in a read-only run",
		    framework);
		/*
		 * codex 0.169.0 prints no command_execution item for a command that
		 * exits non-zero (here "Read-only file system"): nothing to map.
		 */
		tools = run_events(json_get_string(run, "id"), "run.tool");
		if (i == 0)
			cr_assert_not_null(find_tool(tools, "Write", "denied"), "%s",
			    cJSON_PrintUnformatted(tools));
		cJSON_Delete(tools);
		cr_assert_geq(fake_provider_count(fake), 2, "%s never came back to the model",
		    framework);
		cJSON_Delete(run);
		http_resp_free(&r);
		teardown();
	}
}

/* Processes whose working directory is dir (the run's workspace), into pids. */
static int
processes_in(const char *dir, long *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL) {
		char link[64], cwd[PATH_MAX];
		long pid = strtol(de->d_name, NULL, 10);
		ssize_t len;

		if (pid <= 0)
			continue;
		snprintf(link, sizeof link, "/proc/%ld/cwd", pid);
		if ((len = readlink(link, cwd, sizeof cwd - 1)) <= 0)
			continue;
		cwd[len] = '\0';
		if (strcmp(cwd, dir) == 0 && n < max)
			pids[n++] = pid;
	}
	closedir(d);
	return n;
}

/* The pid of `sleep 300` running in dir, or 0. */
static long
find_sleeper(const char *dir)
{
	long pids[64];
	int n = processes_in(dir, pids, 64);

	for (int i = 0; i < n; i++) {
		char path[64], cmd[64] = "";
		FILE *f;
		size_t len;

		snprintf(path, sizeof path, "/proc/%ld/cmdline", pids[i]);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		len = fread(cmd, 1, sizeof cmd - 1, f);
		fclose(f);
		if (len == 10 && memcmp(cmd, "sleep\0" "300\0", 10) == 0)
			return pids[i];
	}
	return 0;
}

/* Cancel while the CLI's tool runs `sleep 300`: the run ends and nothing survives it. */
static void
cancel_mid_run(const char *framework, const char *provider)
{
	struct http_resp r, c;
	char path[256];
	long pids[64], sleeper = 0;
	cJSON *run;
	long t0;
	int n;

	start_service();
	new_project();
	r = start_run(framework, provider, "workspace-write", NULL, "Sleep a while");
	cr_assert_eq(r.status, 201, "%s", r.body);
	for (t0 = mono_ms(); mono_ms() - t0 < 60000 && sleeper == 0; usleep(100000))
		sleeper = find_sleeper(workspace);
	cr_assert_gt(sleeper, 0, "the CLI never ran the sleeping command");
	n = processes_in(workspace, pids, 64);
	cr_assert_geq(n, 2, "the CLI and its command should run in the workspace");

	snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", json_get_string(r.json, "id"));
	c = http_req(&svc, "POST", path, NULL, NULL, true);
	cr_assert_eq(c.status, 200, "%s", c.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), 30000);
	cr_assert_not_null(run);
	cr_assert_str_eq(json_get_string(run, "status"), "cancelled");
	/* Nothing of the run outlives it: not the CLI, not what its tool started. */
	for (t0 = mono_ms(); mono_ms() - t0 < 5000; usleep(100000)) {
		if (processes_in(workspace, pids, 64) == 0)
			break;
	}
	n = processes_in(workspace, pids, 64);
	cr_assert_eq(n, 0, "%d process(es) of the run survived it (first pid %ld)", n,
	    n ? pids[0] : 0L);
	cr_assert_neq(kill((pid_t)sleeper, 0), 0, "the command's sleep survived the run");
	cJSON_Delete(run);
	http_resp_free(&c);
	http_resp_free(&r);
}

Test(frameworks, claude_code_cancel_kills_everything)
{
	need_cli("claude-code");
	svc_prepare_home(&svc);
	prepare_path();
	link_cli("claude-code", "claude");
	script_claude("Bash", "{\"command\":\"setsid sleep 301 & exec sleep 300\","
	    "\"description\":\"sleep\"}", "not reached");
	cancel_mid_run("claude-code", "fake-anthropic");
}

Test(frameworks, codex_cancel_kills_everything)
{
	need_cli("codex");
	svc_prepare_home(&svc);
	prepare_path();
	link_cli("codex", "codex");
	script_codex("exec_command", "{\"cmd\":\"setsid sleep 301 & exec sleep 300\"}",
	    "not reached");
	cancel_mid_run("codex", "fake-openai");
}

/*
 * A CLI that ignores SIGTERM and leaves a detached process behind (its own
 * session): the adapter's process group kill and its sweep of what the CLI
 * orphaned still end everything.  A shell script plays claude here, since the
 * real CLIs clean up after themselves on SIGTERM.
 */
Test(frameworks, cancel_kills_a_stubborn_cli)
{
	svc_prepare_home(&svc);
	prepare_path();
	fake_cli("claude", "[ \"$1\" = --version ] && { echo '2.1.330 (Claude Code)'; exit 0; }\n"
	    "trap '' TERM\n"
	    "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}'\n"
	    "setsid sh -c \"trap '' TERM HUP; sleep 301\" &\n"
	    "sleep 300 &\n"
	    "wait");
	cancel_mid_run("claude-code", "fake-anthropic");
}

/*
 * A fake CLI records its argv, environment and stdin (sections "==args==",
 * "==env==", "==prompt==") in rec.txt in the workspace; in a read-only run, where
 * its sandbox lets it write nothing there, as its first line of output instead
 * (without the API key, which an output never holds).
 */
#define FAKE_RECORD \
    "prompt=$(cat)\n" \
    "rec=$(printf '==args==\\n'; printf '%s\\n' \"$@\"; printf '==env==\\n'; env;" \
    " printf '==prompt==\\n%s\\n' \"$prompt\")\n" \
    "if ! printf '%s' \"$rec\" > rec.txt 2>/dev/null; then\n" \
    " text=$(printf '%s\\n' \"$rec\" | grep -v API_KEY | sed -e 's/\\\\/\\\\\\\\/g'" \
    " -e 's/\"/\\\\\"/g' | awk 'BEGIN{ORS=\"\"} {print $0 \"\\\\n\"}')\n"

static const char fake_claude[] =
    "[ \"$1\" = --version ] && { echo '2.1.330 (Claude Code)'; exit 0; }\n"
    FAKE_RECORD
    " printf '%s\\n' \"{\\\"type\\\":\\\"assistant\\\",\\\"message\\\":{\\\"id\\\":\\\"rec\\\","
    "\\\"content\\\":[{\\\"type\\\":\\\"text\\\",\\\"text\\\":\\\"$text\\\"}]}}\"\n"
    "fi\n"
    "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}'\n"
    "case $prompt in\n"
    "*crash*) echo 'fatal: nope' >&2; exit 3;;\n"
    "*leak-result*) echo \"{\\\"type\\\":\\\"result\\\",\\\"subtype\\\":\\\"error_during_execution\\\","
    "\\\"is_error\\\":true,\\\"result\\\":\\\"the endpoint refused the key $ANTHROPIC_API_KEY\\\"}\";;\n"
    "*leak-stderr*) printf 'fatal: the key %s was refused\\n%0390d%s\\n' \"$ANTHROPIC_API_KEY\" 0"
    " \"$ANTHROPIC_API_KEY\" >&2; exit 3;;\n"
    "*turns*) echo '{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true,"
    "\"usage\":{\"input_tokens\":7,\"output_tokens\":2}}';;\n"
    "*) echo '{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":[{\"type\":"
    "\"text\",\"text\":\"fine\"}],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}';"
    " echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"fine\"}';;\n"
    "esac";

static const char fake_codex[] =
    "[ \"$1\" = --version ] && { echo 'codex-cli 0.169.0'; exit 0; }\n"
    FAKE_RECORD
    " printf '%s\\n' \"{\\\"type\\\":\\\"item.completed\\\",\\\"item\\\":{\\\"id\\\":\\\"rec\\\","
    "\\\"type\\\":\\\"agent_message\\\",\\\"text\\\":\\\"$text\\\"}}\"\n"
    "fi\n"
    "echo '{\"type\":\"thread.started\",\"thread_id\":\"t\"}'\n"
    "echo '{\"type\":\"turn.started\"}'\n"
    "echo '{\"type\":\"error\",\"message\":\"stream disconnected\"}'\n"
    "echo '{\"type\":\"turn.failed\",\"error\":{\"message\":\"boom\"}}'\n"
    "exit 1";

/* A section of the fake CLI's record (rec.txt, else the run's output); malloc'd. */
static char *
record(const cJSON *run, const char *section)
{
	char *all = read_file(workspace, "rec.txt"), head[64], *at, *end, *out;

	if (all == NULL) {
		const char *o = json_get_string(run, "output");

		cr_assert_not_null(o);
		all = strdup(o);
	}
	snprintf(head, sizeof head, "==%s==\n", section);
	at = strstr(all, head);
	cr_assert_not_null(at, "no %s in the record: %s", section, all);
	at += strlen(head);
	end = strstr(at, "\n==");
	out = strndup(at, end ? (size_t)(end - at) + 1 : strlen(at));
	free(all);
	return out;
}

/* Whether text holds line (without its newline) as a whole line. */
static bool
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *at = strstr(text, line); at != NULL; at = strstr(at + 1, line)) {
		if ((at == text || at[-1] == '\n') && (at[n] == '\n' || at[n] == '\0'))
			return true;
	}
	return false;
}

static void
unlink_rec(void)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof path, "%s/rec.txt", workspace);
	unlink(path);
}

/* Starts a run and waits for its end; the run.  session may be NULL. */
static cJSON *
run_to_end(const char *framework, const char *provider, const char *profile,
    const char *session, const char *prompt)
{
	char extra[128] = "";
	struct http_resp r;
	cJSON *run;

	if (session != NULL) {
		char body[PATH_MAX + 512];

		snprintf(body, sizeof body, "{\"sessionId\":\"%s\",\"project\":\"%s\","
		    "\"prompt\":\"%s\",\"permissionProfile\":\"%s\"}", session, project, prompt,
		    profile);
		r = http_req(&svc, "POST", "/api/v1/runs", body, NULL, true);
	} else
		r = start_run(framework, provider, profile, extra, prompt);
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(run);
	http_resp_free(&r);
	return run;
}

static const char *
error_member(const cJSON *run, const char *key)
{
	return json_get_string(cJSON_GetObjectItem(run, "error"), key);
}

/*
 * Recorded lines of each CLI played by a script: the flags each profile maps
 * to, the key only in the CLI's environment, failures as the CLI reports
 * them, and a continued session's history in the prompt.
 */
Test(frameworks, cli_lines_and_flags)
{
	char *args, *env, *prompt;
	cJSON *run;

	svc_prepare_home(&svc);
	prepare_path();
	fake_cli("claude", fake_claude);
	fake_cli("codex", fake_codex);
	start_service();
	new_project();

	run = run_to_end("claude-code", "fake-anthropic", "workspace-write", NULL, "say fine");
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(run));
	cr_assert_str_eq(json_get_string(run, "output"), "fine");
	cr_assert_eq(usage_of(run, "inputTokens"), 5);
	args = record(run, "args");
	env = record(run, "env");
	cr_assert_not_null(strstr(args, "-p\n--output-format\nstream-json\n"), "%s", args);
	cr_assert_not_null(strstr(args, "--permission-mode\nacceptEdits\n--allowedTools\nBash\n"));
	cr_assert_not_null(strstr(args, "--model\nclaude-test\n"));
	cr_assert_null(strstr(args, ANTHROPIC_KEY), "the key is in claude's argv");
	cr_assert_not_null(strstr(env, "ANTHROPIC_API_KEY=" ANTHROPIC_KEY "\n"));
	cr_assert_not_null(strstr(env, "ANTHROPIC_BASE_URL=http://127.0.0.1:9\n"), "%s", env);
	cr_assert_null(strstr(env, "TD_TEST_ANTHROPIC_KEY"), "the service's variables leak");
	/* In the sandbox: a private home and temporary directory. */
	cr_assert(has_line(env, "HOME=/tmp/home"), "%s", env);
	cr_assert(has_line(env, "TMPDIR=/tmp/tmp"), "%s", env);
	free(args);
	free(env);
	unlink_rec();

	/* The same session again: the earlier run is in the prompt. */
	{
		char sid[64];

		snprintf(sid, sizeof sid, "%s", json_get_string(run, "sessionId"));
		cJSON_Delete(run);
		run = run_to_end(NULL, NULL, "read-only", sid, "now crash");
	}
	cr_assert_null(read_file(workspace, "rec.txt"), "a read-only run wrote its workspace");
	prompt = record(run, "prompt");
	cr_assert_not_null(strstr(prompt, "Earlier in this session:\n\nUser: say fine\n\n"
	    "You answered: fine\n\n"), "%s", prompt);
	cr_assert(strlen(prompt) > 10 && strcmp(prompt + strlen(prompt) - 10, "now crash\n") == 0,
	    "%s", prompt);
	free(prompt);
	args = record(run, "args");
	cr_assert_not_null(strstr(args, "--permission-mode\ndefault\n--disallowedTools\n"
	    "Bash,Edit,MultiEdit,Write,NotebookEdit\n"), "%s", args);
	free(args);
	cr_assert_str_eq(json_get_string(run, "status"), "failed");
	cr_assert_str_eq(error_member(run, "code"), "framework_crashed");
	cr_assert_not_null(strstr(error_member(run, "message"), "exited with status 3"), "%s",
	    error_member(run, "message"));
	cr_assert_not_null(strstr(error_member(run, "message"), "fatal: nope"));
	cJSON_Delete(run);

	run = run_to_end("claude-code", "fake-anthropic", "full-access", NULL, "too many turns");
	cr_assert_str_eq(json_get_string(run, "status"), "failed");
	cr_assert_str_eq(error_member(run, "code"), "max_turns");
	cr_assert_eq(usage_of(run, "outputTokens"), 2);
	args = record(run, "args");
	env = record(run, "env");
	cr_assert_not_null(strstr(args, "--permission-mode\nbypassPermissions\n"), "%s", args);
	/* full-access: the user's own home, as the built-in agent's commands get it. */
	cr_assert(!has_line(env, "HOME=/tmp/home"), "%s", env);
	free(args);
	free(env);
	unlink_rec();
	cJSON_Delete(run);

	run = run_to_end("codex", "fake-openai", "workspace-write", NULL, "anything");
	cr_assert_str_eq(json_get_string(run, "status"), "failed");
	cr_assert_str_eq(error_member(run, "code"), "framework_error");
	cr_assert_str_eq(error_member(run, "message"), "codex: boom");
	args = record(run, "args");
	env = record(run, "env");
	cr_assert_not_null(strstr(args, "exec\n--json\n"), "%s", args);
	/* codex's own sandbox cannot nest in taskdeck's, which confines it instead. */
	cr_assert_not_null(strstr(args, "--sandbox\ndanger-full-access\n"), "%s", args);
	cr_assert_not_null(strstr(args, "approval_policy=\"never\"\n"));
	cr_assert_not_null(strstr(args, "base_url=\""), "%s", args);
	cr_assert_null(strstr(args, OPENAI_KEY), "the key is in codex's argv");
	cr_assert_not_null(strstr(env, "TASKDECK_CODEX_API_KEY=" OPENAI_KEY "\n"));
	cr_assert(has_line(env, "HOME=/tmp/home"), "%s", env);
	free(args);
	free(env);
	cJSON_Delete(run);
}

/*
 * The API key a CLI echoes (an error of its endpoint, its stderr) is masked in
 * the run's error, also when the stderr line is cut at its bound inside the
 * key: its beginning is masked then too.
 */
Test(frameworks, a_key_the_cli_echoes_is_masked)
{
	const char *msg;
	cJSON *run;

	svc_prepare_home(&svc);
	prepare_path();
	fake_cli("claude", fake_claude);
	start_service();
	new_project();

	run = run_to_end("claude-code", "fake-anthropic", "workspace-write", NULL, "leak-result");
	cr_assert_str_eq(json_get_string(run, "status"), "failed");
	msg = error_member(run, "message");
	cr_assert_not_null(msg);
	cr_expect_null(strstr(msg, ANTHROPIC_KEY), "%s", msg);
	cr_expect_not_null(strstr(msg, "refused the key ********************"), "%s", msg);
	cJSON_Delete(run);

	run = run_to_end("claude-code", "fake-anthropic", "workspace-write", NULL, "leak-stderr");
	cr_assert_str_eq(json_get_string(run, "status"), "failed");
	cr_assert_str_eq(error_member(run, "code"), "framework_crashed");
	msg = error_member(run, "message");
	cr_assert_not_null(msg);
	/* The last line, cut at 400 bytes: 390 zeros and the key's first 10 bytes. */
	cr_expect_null(strstr(msg, "sk-ant-tes"), "%s", msg);
	cr_expect_not_null(strstr(msg, "0000**********"), "%s", msg);
	cJSON_Delete(run);
}

/* A run.progress event whose message holds text, or NULL. */
static bool
has_progress(const char *run_id, const char *text)
{
	cJSON *events = run_events(run_id, "run.progress"), *e;
	bool found = false;

	cJSON_ArrayForEach(e, events) {
		const char *m = json_get_string(cJSON_GetObjectItem(e, "data"), "message");

		if (m != NULL && strstr(m, text) != NULL)
			found = true;
	}
	cJSON_Delete(events);
	return found;
}

/*
 * No sandbox here (bwrap missing): as for the built-in agent's commands, the
 * CLI does not start but under full-access, or unconfined with a visible
 * warning when runs.allowUnconfinedCommands is on.
 */
Test(frameworks, no_sandbox_fails_closed)
{
	char *env;
	cJSON *run;

	svc_prepare_home(&svc);
	prepare_path();
	fake_cli("claude", fake_claude);
	setenv("TASKDECK_BWRAP", "/nonexistent/bwrap", 1);
	start_service();
	new_project();

	run = run_to_end("claude-code", "fake-anthropic", "workspace-write", NULL, "say fine");
	cr_assert_str_eq(json_get_string(run, "status"), "failed", "%s",
	    cJSON_PrintUnformatted(run));
	cr_assert_str_eq(error_member(run, "code"), "sandbox_unavailable");
	cr_assert_not_null(strstr(error_member(run, "message"), "bubblewrap"), "%s",
	    error_member(run, "message"));
	cr_assert_null(read_file(workspace, "rec.txt"), "claude ran without a sandbox");
	cJSON_Delete(run);

	/* full-access needs no sandbox, as for the built-in agent. */
	run = run_to_end("claude-code", "fake-anthropic", "full-access", NULL, "say fine");
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(run));
	unlink_rec();
	cJSON_Delete(run);

	settings_extra = ", \"runs\": {\"allowUnconfinedCommands\": true}";
	svc_stop(&svc);
	start_service();
	run = run_to_end("claude-code", "fake-anthropic", "workspace-write", NULL, "say fine");
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(run));
	cr_assert(has_progress(json_get_string(run, "id"), "run unconfined"),
	    "no visible warning that claude ran unconfined: %s",
	    cJSON_PrintUnformatted(run_events(json_get_string(run, "id"), "run.progress")));
	env = record(run, "env");
	cr_assert(!has_line(env, "HOME=/tmp/home"), "%s", env);
	free(env);
	cJSON_Delete(run);
}

/* A 422 invalid_configuration whose message or details name each of words. */
static void
assert_refused(struct http_resp *r, const char *const *words)
{
	const cJSON *err = cJSON_GetObjectItem(r->json, "error");
	char *text = cJSON_PrintUnformatted(err);

	cr_assert_eq(r->status, 422, "%ld %s", r->status, r->body);
	cr_assert_str_eq(http_error_code(r), "invalid_configuration");
	for (const char *const *w = words; *w; w++)
		cr_assert(strstr(text, *w) != NULL, "\"%s\" is not in %s", *w, text);
	free(text);
}

/* No claude on PATH: startRun is refused, saying which runtime and why. */
Test(frameworks, missing_runtime_is_refused)
{
	struct http_resp r;

	svc_prepare_home(&svc);
	prepare_path();
	start_service();
	new_project();
	r = start_run("claude-code", "fake-anthropic", "workspace-write", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "claude-code", "missing", NULL });
	http_resp_free(&r);
	r = start_run("codex", "fake-openai", "workspace-write", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "codex", "missing", NULL });
	http_resp_free(&r);
}

/* Fake CLIs on PATH that say a version below the minimum: outdated, refused. */
Test(frameworks, wrong_version_is_refused)
{
	struct http_resp r;

	svc_prepare_home(&svc);
	prepare_path();
	fake_cli("claude", "[ \"$1\" = --version ] && echo '0.1.0 (Claude Code)'; exit 0");
	fake_cli("codex", "[ \"$1\" = --version ] && echo 'codex-cli 0.0.1'; exit 0");
	start_service();
	new_project();
	r = start_run("claude-code", "fake-anthropic", "workspace-write", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "claude-code", "outdated", "0.1.0", NULL });
	http_resp_free(&r);
	r = start_run("codex", "fake-openai", "workspace-write", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "codex", "outdated", "0.0.1", NULL });
	http_resp_free(&r);
}

/* What a CLI cannot honour is refused, never run wider. */
Test(frameworks, what_cannot_be_mapped_is_refused)
{
	struct http_resp r;

	need_cli("claude-code");
	need_cli("codex");
	svc_prepare_home(&svc);
	prepare_path();
	link_cli("claude-code", "claude");
	link_cli("codex", "codex");
	start_service();
	new_project();
	r = start_run("codex", "fake-openai", "ask", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "codex", "ask", NULL });
	http_resp_free(&r);
	r = start_run("codex", "fake-openai", "workspace-write",
	    ",\"turnIntent\":\"plan-first\"", "hi");
	assert_refused(&r, (const char *const[]){ "codex", "plan-first", NULL });
	http_resp_free(&r);
	r = start_run("claude-code", "fake-openai", "workspace-write", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "claude-code", "anthropic", NULL });
	http_resp_free(&r);
	r = start_run("codex", "replay", "read-only", NULL, "hi");
	assert_refused(&r, (const char *const[]){ "codex", "openai", NULL });
	http_resp_free(&r);
}

/*
 * durable (issue 15): a run of an external framework cannot resume after a
 * restart (the CLI's conversation lives in its own process): kill -9 ends it
 * failed service_restarted at the next start, SIGTERM failed service_stopped,
 * while runs of the built-in framework resume (tests/integration/test-durable.c).
 */
static void
external_run_at_a_restart(bool kill9)
{
	struct http_resp r;
	char flag[PATH_MAX + 16];
	cJSON *run;
	long t0;

	svc_prepare_home(&svc);
	prepare_path();
	fake_cli("claude", "[ \"$1\" = --version ] && { echo '2.1.330 (Claude Code)'; exit 0; }\n"
	    "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}'\n"
	    "touch started.flag\n"
	    "exec sleep 300");
	start_service();
	new_project();
	r = start_run("claude-code", "fake-anthropic", "workspace-write", NULL, "Sleep a while");
	cr_assert_eq(r.status, 201, "%s", r.body);
	snprintf(flag, sizeof flag, "%s/started.flag", workspace);
	for (t0 = mono_ms(); mono_ms() - t0 < 30000 && access(flag, F_OK) != 0; usleep(50000))
		;
	cr_assert_eq(access(flag, F_OK), 0, "the fake claude never started");
	if (kill9)
		svc_kill(&svc);
	else
		svc_stop(&svc);
	svc_restart(&svc);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), 10000);
	cr_assert_not_null(run, "the external run did not end at the restart");
	cr_expect_str_eq(json_get_string(run, "status"), "failed");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(run, "error"), "code"),
	    kill9 ? "service_restarted" : "service_stopped");
	cJSON_Delete(run);
	http_resp_free(&r);
}

Test(frameworks, an_external_run_fails_service_restarted_after_kill_9)
{
	external_run_at_a_restart(true);
}

Test(frameworks, an_external_run_fails_service_stopped_on_sigterm)
{
	external_run_at_a_restart(false);
}
