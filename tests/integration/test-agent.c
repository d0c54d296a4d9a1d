/*
 * taskdeck-agent, the real binary, driven over its host protocol: this test
 * plays the service (start line, answers to requests, cancel) and, for the
 * HTTP providers, a fake model server (fake-provider.c).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <netinet/in.h>
#include <unistd.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"
#include "timeutil.h"
#include "xalloc.h"

TestSuite(agent, .timeout = 30);

struct agent {
	pid_t pid;
	int in;
	int out;
	char dir[128];		/* private temp dir: ws/, replay/, outside/, stderr */
	char ws[160];
	char replay[160];
	char err_path[160];
	struct buf pending;	/* stdout bytes not yet split into lines */
	struct buf raw;		/* all of stdout */
	cJSON *lines;		/* every line, parsed */
	struct buf output;	/* the output deltas, joined */
	const char *permission;	/* answer to permission.ask: allow, deny, error; wait: none */
	const char *const *permissions;	/* if set: answers to permission.ask in turn */
	int asked;
	/* Answers to plan.propose in turn: approve, reject, revise:FEEDBACK; past the end: none. */
	const char *const *plan_answers;
	int proposals;
	bool artifact_fail;
	/* secret.resolve: the value of credential secret_cred bound to connector secret_con ("*": any). */
	const char *secret_con;
	const char *secret_cred;
	const char *secret;
	int status;		/* exit status once reaped, -1 before */
};

static void
agent_init(struct agent *a)
{
	memset(a, 0, sizeof *a);
	snprintf(a->dir, sizeof a->dir, "/tmp/td-agent-test-XXXXXX");
	cr_assert_not_null(mkdtemp(a->dir));
	snprintf(a->ws, sizeof a->ws, "%s/ws", a->dir);
	snprintf(a->replay, sizeof a->replay, "%s/replay", a->dir);
	snprintf(a->err_path, sizeof a->err_path, "%s/stderr.log", a->dir);
	cr_assert_eq(mkdir(a->ws, 0755), 0);
	cr_assert_eq(mkdir(a->replay, 0755), 0);
	buf_init(&a->pending, 0);
	buf_init(&a->raw, 0);
	buf_init(&a->output, 0);
	a->lines = cJSON_CreateArray();
	a->permission = "allow";
	a->pid = -1;
	a->in = a->out = -1;
	a->status = -1;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void
agent_cleanup(struct agent *a)
{
	if (a->pid > 0 && a->status < 0) {
		kill(a->pid, SIGKILL);
		waitpid(a->pid, NULL, 0);
	}
	if (a->in >= 0)
		close(a->in);
	if (a->out >= 0)
		close(a->out);
	nftw(a->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	buf_free(&a->pending);
	buf_free(&a->raw);
	buf_free(&a->output);
	cJSON_Delete(a->lines);
}

static const char *
srcdir(void)
{
	return getenv("TD_SRCDIR") ? getenv("TD_SRCDIR") : ".";
}

/* A start line for a run in a's workspace; tests change members as needed. */
static cJSON *
start_line(const struct agent *a, const char *kind, const char *model, const char *profile)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *run = cJSON_AddObjectToObject(s, "run");
	cJSON *config = cJSON_AddObjectToObject(s, "config");
	cJSON *prov = cJSON_AddObjectToObject(s, "provider");
	cJSON *project = cJSON_AddObjectToObject(s, "project");
	cJSON *limits = cJSON_AddObjectToObject(s, "limits");
	char replay[512];

	snprintf(replay, sizeof replay, "%s/data/replay", srcdir());
	cJSON_AddStringToObject(s, "type", "start");
	cJSON_AddStringToObject(run, "id", "run_0000000000000000000test");
	cJSON_AddStringToObject(run, "sessionId", "ses_0000000000000000000test");
	cJSON_AddStringToObject(run, "projectId", "prj_0000000000000000000test");
	cJSON_AddStringToObject(run, "prompt", "Write a short report and save it.");
	cJSON_AddStringToObject(run, "permissionProfile", profile);
	cJSON_AddNullToObject(run, "turnIntent");
	cJSON_AddStringToObject(run, "workspace", a->ws);
	cJSON_AddStringToObject(config, "framework", "taskdeck");
	cJSON_AddStringToObject(config, "provider", kind);
	cJSON_AddStringToObject(config, "model", model);
	cJSON_AddStringToObject(config, "effort", "medium");
	cJSON_AddStringToObject(prov, "kind", kind);
	cJSON_AddNullToObject(prov, "baseUrl");
	cJSON_AddNullToObject(prov, "apiKey");
	cJSON_AddStringToObject(prov, "replayDir", replay);
	cJSON_AddStringToObject(project, "name", "Agent tests");
	cJSON_AddStringToObject(project, "context", "Tests of taskdeck-agent.");
	cJSON_AddArrayToObject(s, "history");
	cJSON_AddNumberToObject(limits, "maxTurns", 10);
	cJSON_AddNumberToObject(limits, "commandTimeoutMs", 20000);
	cJSON_AddNumberToObject(limits, "maxToolOutputBytes", 65536);
	return s;
}

static void
set_string(cJSON *obj, const char *key, const char *value)
{
	cJSON_ReplaceItemInObject(obj, key, value ? cJSON_CreateString(value) : cJSON_CreateNull());
}

static cJSON *
member(cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static void
agent_write(struct agent *a, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(a->in, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		cr_assert_gt(n, 0, "writing to the agent: %s", strerror(errno));
		data += n;
		len -= (size_t)n;
	}
}

static void
agent_send(struct agent *a, cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);

	agent_write(a, text, strlen(text));
	agent_write(a, "\n", 1);
	free(text);
	cJSON_Delete(msg);
}

/* Starts taskdeck-agent in a->ws with extra environment; sends start (consumed) when given. */
static void
agent_spawn_env(struct agent *a, cJSON *start, const char *env)
{
	int in[2], out[2];

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	a->pid = fork();
	cr_assert_geq(a->pid, 0);
	if (a->pid == 0) {
		int err = open(a->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err, 2);
		if (chdir(a->ws) != 0)
			_exit(126);
		if (env != NULL)
			putenv((char *)env);
		execl(harness_bin("taskdeck-agent"), "taskdeck-agent", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	a->in = in[1];
	a->out = out[0];
	signal(SIGPIPE, SIG_IGN);
	if (start != NULL)
		agent_send(a, start);
}

static void
agent_spawn(struct agent *a, cJSON *start)
{
	agent_spawn_env(a, start, NULL);
}

/* The next line from the agent, parsed (owned by a), or NULL at EOF or timeout. */
static cJSON *
agent_line(struct agent *a, int timeout_ms)
{
	int64_t end = clock_mono_ms() + timeout_ms;

	for (;;) {
		char *nl = a->pending.data ? memchr(a->pending.data, '\n', a->pending.len) : NULL;
		char chunk[65536];
		struct pollfd pfd = { .fd = a->out, .events = POLLIN };
		int64_t left;
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - a->pending.data);
			cJSON *msg = cJSON_ParseWithLength(a->pending.data, len);
			char *rest;

			cr_assert(cJSON_IsObject(msg), "not a JSON object: %.*s", (int)len,
			    a->pending.data);
			cr_assert_lt(len + 1, 1024 * 1024, "a line over 1 MiB");
			cr_assert_not_null(json_get_string(msg, "type"), "a line without a type");
			rest = xstrndup(nl + 1, a->pending.len - len - 1);
			buf_reset(&a->pending);
			buf_appends(&a->pending, rest);
			free(rest);
			cJSON_AddItemToArray(a->lines, msg);
			if (strcmp(json_get_string(msg, "type"), "output") == 0)
				buf_appends(&a->output, json_get_string(msg, "delta"));
			return msg;
		}
		left = end - clock_mono_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return NULL;
		n = read(a->out, chunk, sizeof chunk);
		if (n <= 0)
			return NULL;
		buf_append(&a->pending, chunk, (size_t)n);
		buf_append(&a->raw, chunk, (size_t)n);
	}
}

/* The service's answer to plan.propose; approve gives the steps ids st<version>-<n>. */
static void
plan_answer(struct agent *a, const cJSON *params, cJSON *result)
{
	const char *answer = a->plan_answers[a->proposals++];
	const cJSON *s;
	cJSON *steps;
	int n = 0;

	if (strncmp(answer, "revise:", 7) == 0) {
		cJSON_AddStringToObject(result, "decision", "revise");
		cJSON_AddStringToObject(result, "feedback", answer + 7);
		return;
	}
	cJSON_AddStringToObject(result, "decision", answer);
	if (strcmp(answer, "approve") != 0)
		return;
	steps = cJSON_AddArrayToObject(result, "steps");
	cJSON_ArrayForEach(s, member((cJSON *)params, "steps")) {
		cJSON *step = cJSON_CreateObject();
		char id[32];

		snprintf(id, sizeof id, "st%d-%d", a->proposals, ++n);
		cJSON_AddStringToObject(step, "id", id);
		cJSON_AddStringToObject(step, "title", json_get_string(s, "title"));
		cJSON_AddItemToArray(steps, step);
	}
}

static void
agent_answer(struct agent *a, const cJSON *req)
{
	const char *method = json_get_string(req, "method");
	cJSON *params = member((cJSON *)req, "params");
	cJSON *resp;

	if (strcmp(method, "plan.propose") == 0 &&
	    (a->plan_answers == NULL || a->plan_answers[a->proposals] == NULL))
		return;		/* the user has not decided */
	if (strcmp(method, "permission.ask") == 0 && a->permissions == NULL &&
	    strcmp(a->permission, "wait") == 0)
		return;		/* nobody answers */
	resp = cJSON_CreateObject();

	cJSON_AddStringToObject(resp, "type", "response");
	cJSON_AddNumberToObject(resp, "id", member((cJSON *)req, "id")->valuedouble);
	if ((strcmp(method, "artifact.save") == 0 && a->artifact_fail) ||
	    (strcmp(method, "permission.ask") == 0 && strcmp(a->permission, "error") == 0)) {
		cJSON *e = cJSON_AddObjectToObject(resp, "error");

		cJSON_AddStringToObject(e, "code", "internal_error");
		cJSON_AddStringToObject(e, "message", "the test said no");
	} else if (strcmp(method, "artifact.save") == 0) {
		cJSON *art = cJSON_AddObjectToObject(cJSON_AddObjectToObject(resp, "result"),
		    "artifact");
		const char *path = json_get_string(params, "path");
		const char *name = json_get_string(params, "name");

		cr_assert_not_null(path);
		cJSON_AddStringToObject(art, "id", "art_000000000000000000000001");
		cJSON_AddStringToObject(art, "name", name ? name : path);
		cJSON_AddStringToObject(art, "path", path);
		cJSON_AddStringToObject(art, "version", "sha256:00");
		cJSON_AddNumberToObject(art, "size", 1);
	} else if (strcmp(method, "permission.ask") == 0) {
		cJSON_AddStringToObject(cJSON_AddObjectToObject(resp, "result"), "decision",
		    a->permissions ? a->permissions[a->asked++] : a->permission);
	} else if (strcmp(method, "plan.propose") == 0) {
		plan_answer(a, params, cJSON_AddObjectToObject(resp, "result"));
	} else if (strcmp(method, "plan.step") == 0) {
		cJSON_AddObjectToObject(resp, "result");
	} else if (strcmp(method, "permission.withdraw") == 0) {
		cJSON_AddBoolToObject(cJSON_AddObjectToObject(resp, "result"), "withdrawn", true);
	} else if (strcmp(method, "secret.resolve") == 0) {
		if (a->secret != NULL && json_get_string(params, "connectorId") != NULL &&
		    json_get_string(params, "credentialId") != NULL &&
		    (strcmp(a->secret_con, "*") == 0 ||
		    strcmp(json_get_string(params, "connectorId"), a->secret_con) == 0) &&
		    strcmp(json_get_string(params, "credentialId"), a->secret_cred) == 0) {
			cJSON_AddStringToObject(cJSON_AddObjectToObject(resp, "result"), "value",
			    a->secret);
		} else {
			cJSON *e = cJSON_AddObjectToObject(resp, "error");

			cJSON_AddStringToObject(e, "code", "not_found");
			cJSON_AddStringToObject(e, "message", "no such credential for this connector");
		}
	} else
		cr_assert_fail("unexpected request %s", method);
	agent_send(a, resp);
}

/* Waits for the agent to exit; returns its exit status (or 128+signal). */
static int
agent_exit(struct agent *a, int timeout_ms)
{
	int64_t end = clock_mono_ms() + timeout_ms;
	int st;

	while (waitpid(a->pid, &st, WNOHANG) == 0) {
		cr_assert_lt(clock_mono_ms(), end, "the agent did not exit");
		usleep(10000);
	}
	a->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return a->status;
}

/*
 * Reads until finish, answering requests; asserts that finish is the last
 * line and that the agent then exits 0.  Returns the finish line.
 */
static cJSON *
agent_finish(struct agent *a, int timeout_ms)
{
	int64_t end = clock_mono_ms() + timeout_ms;
	cJSON *msg, *finish = NULL;

	while ((msg = agent_line(a, (int)(end - clock_mono_ms()))) != NULL) {
		if (strcmp(json_get_string(msg, "type"), "request") == 0)
			agent_answer(a, msg);
		if (strcmp(json_get_string(msg, "type"), "finish") == 0) {
			finish = msg;
			break;
		}
	}
	cr_assert_not_null(finish, "no finish line in %d ms", timeout_ms);
	cr_assert_null(agent_line(a, 5000), "a line after finish");
	cr_assert_eq(agent_exit(a, 5000), 0, "the agent exited with %d", a->status);
	cr_expect_str_eq(json_get_string(finish, "output"), a->output.data ? a->output.data : "",
	    "finish.output is not the concatenation of the deltas");
	return finish;
}

static const char *
finish_code(const cJSON *finish)
{
	return json_get_string(member((cJSON *)finish, "error"), "code");
}

static const char *
finish_message(const cJSON *finish)
{
	return json_get_string(member((cJSON *)finish, "error"), "message");
}

static long
usage_of(const cJSON *msg, const char *key)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(u ? u : msg, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

/* The n-th (0-based) line of type whose key equals value (key may be NULL). */
static cJSON *
find_line(const struct agent *a, const char *type, const char *key, const char *value, int n)
{
	cJSON *l;

	cJSON_ArrayForEach(l, a->lines) {
		if (strcmp(json_get_string(l, "type"), type) != 0)
			continue;
		if (key != NULL && (json_get_string(l, key) == NULL || strcmp(json_get_string(l, key), value) != 0))
			continue;
		if (n-- == 0)
			return l;
	}
	return NULL;
}

static int
count_lines(const struct agent *a, const char *type, const char *key, const char *value)
{
	int n = 0;

	while (find_line(a, type, key, value, n) != NULL)
		n++;
	return n;
}

/* The final tool line (not "started") of the i-th call of tool name. */
static cJSON *
tool_end(const struct agent *a, const char *name, int i)
{
	cJSON *l;

	cJSON_ArrayForEach(l, a->lines) {
		if (strcmp(json_get_string(l, "type"), "tool") != 0 || strcmp(json_get_string(l, "name"), name) != 0 ||
		    strcmp(json_get_string(l, "status"), "started") == 0)
			continue;
		if (i-- == 0)
			return l;
	}
	return NULL;
}

static char *
ws_file(const struct agent *a, const char *rel)
{
	char path[512];

	snprintf(path, sizeof path, "%s/%s", a->ws, rel);
	return harness_slurp(path, NULL);
}

/* Expects the workspace file rel of a to hold want. */
static void
expect_ws_file(const struct agent *a, const char *rel, const char *want)
{
	char *content = ws_file(a, rel);

	cr_expect_str_eq(content ? content : "(missing)", want, "workspace file %s", rel);
	free(content);
}

static bool
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void
write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(content, f);
	fclose(f);
}

/* Writes a transcript into a's own replay dir and points start at it. */
static void
use_transcript(struct agent *a, cJSON *start, const char *name, const char *json)
{
	char path[512];

	snprintf(path, sizeof path, "%s/%s.json", a->replay, name);
	write_file(path, json);
	set_string(member(start, "provider"), "replayDir", a->replay);
	set_string(member(start, "config"), "model", name);
}

/* Replay */

Test(agent, replay_research_end_to_end)
{
	struct agent a;
	cJSON *start, *finish, *req, *transcript, *call;
	char path[512], *want, *got, *doc;

	agent_init(&a);
	start = start_line(&a, "replay", "research", "workspace-write");
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_null(member(finish, "error"));

	req = find_line(&a, "request", "method", "artifact.save", 0);
	cr_assert_not_null(req, "no artifact.save request");
	cr_expect_str_eq(json_get_string(member(req, "params"), "path"), "report.md");
	cr_expect_str_eq(json_get_string(member(req, "params"), "name"), "report.md");
	cr_expect_str_eq(json_get_string(member(req, "params"), "mediaType"), "text/markdown");

	/* The file is really written, with the transcript's content. */
	snprintf(path, sizeof path, "%s/data/replay/research.json", srcdir());
	doc = harness_slurp(path, NULL);
	cr_assert_not_null(doc);
	transcript = cJSON_Parse(doc);
	call = cJSON_GetArrayItem(member(cJSON_GetArrayItem(member(transcript, "turns"), 1),
	    "toolCalls"), 0);
	want = (char *)json_get_string(member(call, "arguments"), "content");
	got = ws_file(&a, "report.md");
	cr_assert_not_null(got, "report.md is not in the workspace");
	cr_expect_str_eq(got, want);
	cr_expect_gt(strlen(got), 2000, "the report is not a few KB");
	cr_expect(strncmp(got, "# ", 2) == 0, "the report is not markdown");
	free(got);
	cJSON_Delete(transcript);
	free(doc);

	cr_expect(strstr(json_get_string(finish, "output"), "report.md") != NULL);
	cr_expect_gt(usage_of(finish, "inputTokens"), 0);
	cr_expect_gt(usage_of(finish, "outputTokens"), 0);
	cr_expect_geq(count_lines(&a, "usage", NULL, NULL), 1);
	cr_expect_str_eq(json_get_string(tool_end(&a, "write_file", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, "save_artifact", 0), "status"), "completed");
	cr_expect_not_null(find_line(&a, "tool", "status", "started", 0));
	for (const char *const *ph = (const char *const[]){ "starting", "thinking", "tool",
	    "writing", "finishing", NULL }; *ph; ph++)
		cr_expect_not_null(find_line(&a, "progress", "phase", *ph, 0), "no %s phase", *ph);
	agent_cleanup(&a);
}

Test(agent, replay_multi_file_saves_three_files)
{
	struct agent a;
	cJSON *finish;
	static const char *const files[] = { "notes/summary.md", "data/results.csv",
	    "data/metrics.json" };

	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "multi-file", "workspace-write"));
	finish = agent_finish(&a, 10000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed");
	cr_expect_eq(count_lines(&a, "request", "method", "artifact.save"), 3);
	for (int i = 0; i < 3; i++) {
		char *content = ws_file(&a, files[i]);

		cr_expect_not_null(content, "%s missing", files[i]);
		cr_expect_gt(content ? strlen(content) : 0, 10);
		free(content);
		cr_expect_str_eq(json_get_string(member(find_line(&a, "request", "method", "artifact.save", i),
		    "params"), "path"), files[i]);
	}
	agent_cleanup(&a);
}

Test(agent, replay_recorded_failure)
{
	struct agent a;
	cJSON *finish;

	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "fail", "workspace-write"));
	finish = agent_finish(&a, 10000);
	cr_assert_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "replay_failed");
	cr_expect_gt(strlen(finish_message(finish)), 10);
	cr_expect_str_eq(json_get_string(finish, "output"), "Let me start on that. ");
	agent_cleanup(&a);
}

Test(agent, replay_missing_transcript)
{
	static const char *const names[] = { "no-such-transcript", "../../etc/passwd", ".hidden" };

	for (int i = 0; i < 3; i++) {
		struct agent a;
		cJSON *finish;

		agent_init(&a);
		agent_spawn(&a, start_line(&a, "replay", names[i], "workspace-write"));
		finish = agent_finish(&a, 10000);
		cr_expect_str_eq(json_get_string(finish, "status"), "failed");
		cr_expect_str_eq(finish_code(finish), "replay_not_found", "%s", names[i]);
		agent_cleanup(&a);
	}
}

Test(agent, replay_invalid_transcripts_fail_clearly)
{
	static const struct {
		const char *json;
		const char *says;
	} bad[] = {
		{ "{\"turns\": [", "not valid JSON" },
		{ "{\"turns\": []}", "1 to" },
		{ "{\"turns\": [{\"toolCalls\": [{\"name\": \"list_files\", \"arguments\": {}}]}]}",
		  "last turn" },
		{ "{\"turns\": [{\"text\": 5}]}", "turns[0].text" },
		{ "{\"turns\": [{\"txet\": \"typo\"}]}", "txet" },
		{ "{\"turns\": [{\"delayMs\": -1, \"text\": \"x\"}]}", "delayMs" },
		{ "{\"turns\": [{\"fail\": {\"code\": \"made_up\", \"message\": \"m\"}}]}", "fail" },
		{ "{\"turns\": [{\"id\": \"a\", \"onDecision\": {\"approve\": \"nowhere\"}, "
		  "\"toolCalls\": [{\"name\": \"propose_plan\", \"arguments\": {}}]}, {\"text\": \"x\"}]}",
		  "onDecision.approve must name" },
		{ "{\"turns\": [{\"id\": \"a\", \"onDecision\": {\"approve\": \"a\"}, "
		  "\"toolCalls\": [{\"name\": \"list_files\", \"arguments\": {}}]}, {\"text\": \"x\"}]}",
		  "needs a propose_plan call" },
		{ "{\"turns\": [{\"id\": \"a\", \"toolCalls\": [{\"name\": \"list_files\", "
		  "\"arguments\": {}}]}, {\"id\": \"a\", \"text\": \"x\"}]}", "used twice" },
	};

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct agent a;
		cJSON *start, *finish;

		agent_init(&a);
		start = start_line(&a, "replay", "x", "workspace-write");
		use_transcript(&a, start, "bad", bad[i].json);
		agent_spawn(&a, start);
		finish = agent_finish(&a, 10000);
		cr_expect_str_eq(json_get_string(finish, "status"), "failed");
		cr_expect_str_eq(finish_code(finish), "invalid_provider_response");
		cr_expect(strstr(finish_message(finish), bad[i].says) != NULL,
		    "transcript %zu: \"%s\" does not say %s", i, finish_message(finish), bad[i].says);
		agent_cleanup(&a);
	}
}

/* Whether this process has a child left (zombies are reaped on the way). */
static bool
children_left(int wait_ms)
{
	int64_t end = clock_mono_ms() + wait_ms;

	for (;;) {
		pid_t p = waitpid(-1, NULL, WNOHANG);

		if (p < 0 && errno == ECHILD)
			return false;
		if (p == 0 && clock_mono_ms() > end)
			return true;
		if (p == 0)
			usleep(20000);
	}
}

Test(agent, cancel_during_a_command_kills_it)
{
	struct agent a;
	cJSON *msg, *finish, *cancel;
	int64_t sent;

	/* Orphans of the agent become our children, so a surviving sleep is seen. */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "long-command", "workspace-write"));
	while ((msg = agent_line(&a, 5000)) != NULL) {
		if (strcmp(json_get_string(msg, "type"), "tool") == 0 && strcmp(json_get_string(msg, "status"), "started") == 0)
			break;
	}
	cr_assert_not_null(msg, "run_command never started");
	cr_assert_str_eq(json_get_string(msg, "name"), "run_command");
	usleep(300000);
	cancel = cJSON_CreateObject();
	cJSON_AddStringToObject(cancel, "type", "cancel");
	sent = clock_mono_ms();
	agent_send(&a, cancel);
	finish = agent_finish(&a, 45000);
	/* Half the command's sleep 60: the cancel ended it. */
	cr_expect_lt(clock_mono_ms() - sent, 30000, "finish took %lld ms",
	    (long long)(clock_mono_ms() - sent));
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	cr_expect_null(member(finish, "error"));
	cr_expect_str_eq(json_get_string(finish, "output"), "Running a long command.\n");
	cr_expect_str_eq(json_get_string(tool_end(&a, "run_command", 0), "status"), "failed");
	cr_expect_not(children_left(1000), "a process of the command survived the cancel");
	agent_cleanup(&a);
}

Test(agent, cancel_during_a_replay_delay)
{
	struct agent a;
	cJSON *finish, *cancel;
	int64_t sent;

	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "slow", "workspace-write"));
	cr_assert_not_null(agent_line(&a, 5000));
	usleep(200000);
	cancel = cJSON_CreateObject();
	cJSON_AddStringToObject(cancel, "type", "cancel");
	sent = clock_mono_ms();
	agent_send(&a, cancel);
	finish = agent_finish(&a, 20000);
	/* Below the transcript's 25 s delay: the cancel ended the wait. */
	cr_expect_lt(clock_mono_ms() - sent, 15000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	cr_expect_str_eq(json_get_string(finish, "output"), "");
	agent_cleanup(&a);
}

Test(agent, end_of_input_cancels_the_run)
{
	struct agent a;
	cJSON *finish;

	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "slow", "workspace-write"));
	cr_assert_not_null(agent_line(&a, 5000));
	close(a.in);
	a.in = -1;
	finish = agent_finish(&a, 5000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	agent_cleanup(&a);
}

/* Tools and profiles */

/* outside/secret.txt next to the workspace, ws/link -> outside, ws/dangle -> outside/newdir. */
static void
make_outside(struct agent *a, char *outside, size_t len)
{
	char path[512], target[512];

	snprintf(outside, len, "%s/outside", a->dir);
	cr_assert_eq(mkdir(outside, 0755), 0);
	snprintf(path, sizeof path, "%s/secret.txt", outside);
	write_file(path, "secret\n");
	snprintf(path, sizeof path, "%s/link", a->ws);
	cr_assert_eq(symlink(outside, path), 0);
	snprintf(path, sizeof path, "%s/dangle", a->ws);
	snprintf(target, sizeof target, "%s/newdir", outside);
	cr_assert_eq(symlink(target, path), 0);
}

Test(agent, paths_stay_inside_the_workspace)
{
	struct agent a;
	cJSON *start, *finish;
	char outside[256], json[4096], path[512];
	static const struct {
		const char *tool;
		const char *says;
	} want[] = {
		{ "write_file", "escapes the workspace" },
		{ "write_file", "escapes the workspace" },
		{ "write_file", "escapes the workspace" },
		{ "read_file", "escapes the workspace" },
		{ "read_file", "escapes the workspace" },
		{ "write_file", "escapes the workspace" },
		{ "write_file", NULL },
		{ "save_artifact", "escapes the workspace" },
		{ "list_files", "escapes the workspace" },
		{ "write_file", NULL },
	};
	int nth[4] = { 0 };
	char *in, *deep;

	agent_init(&a);
	make_outside(&a, outside, sizeof outside);
	snprintf(json, sizeof json, "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"../escape.txt\", \"content\": \"x\"}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"%s/abs.txt\", \"content\": \"x\"}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"link/evil.txt\", \"content\": \"x\"}},"
	    "{\"name\": \"read_file\", \"arguments\": {\"path\": \"link/secret.txt\"}},"
	    "{\"name\": \"read_file\", \"arguments\": {\"path\": \"%s/secret.txt\"}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"dangle/x.txt\", \"content\": \"x\"}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"%s/sub/../inside.txt\", \"content\": \"ok\"}},"
	    "{\"name\": \"save_artifact\", \"arguments\": {\"path\": \"link/secret.txt\"}},"
	    "{\"name\": \"list_files\", \"arguments\": {\"path\": \"link\"}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"notes/../notes/./deep/in.txt\", \"content\": \"ok\"}}"
	    "]}, {\"text\": \"done\"}]}", outside, outside, a.ws);
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "escape", json);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));

	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		int k = want[i].tool[0] == 'w' ? 0 : want[i].tool[0] == 'r' ? 1 :
		    want[i].tool[0] == 's' ? 2 : 3;
		cJSON *end = tool_end(&a, want[i].tool, nth[k]++);

		cr_assert_not_null(end, "call %zu has no tool line", i);
		if (want[i].says == NULL) {
			cr_expect_str_eq(json_get_string(end, "status"), "completed", "call %zu: %s", i,
			    json_get_string(end, "summary"));
			continue;
		}
		cr_expect_str_eq(json_get_string(end, "status"), "failed", "call %zu was not refused", i);
		cr_expect(strstr(json_get_string(end, "summary"), want[i].says) != NULL,
		    "call %zu: \"%s\" does not say %s", i, json_get_string(end, "summary"), want[i].says);
	}
	snprintf(path, sizeof path, "%s/escape.txt", a.dir);
	cr_expect_not(exists(path), "../escape.txt was written");
	snprintf(path, sizeof path, "%s/abs.txt", outside);
	cr_expect_not(exists(path));
	snprintf(path, sizeof path, "%s/evil.txt", outside);
	cr_expect_not(exists(path), "written through the symlink");
	snprintf(path, sizeof path, "%s/newdir", outside);
	cr_expect_not(exists(path), "created through the dangling symlink");
	cr_expect_eq(count_lines(&a, "request", NULL, NULL), 0, "asked to save a file outside");
	in = ws_file(&a, "inside.txt");
	deep = ws_file(&a, "notes/deep/in.txt");
	cr_expect_str_eq(in ? in : "(missing)", "ok");
	cr_expect_str_eq(deep ? deep : "(missing)", "ok");
	free(in);
	free(deep);
	agent_cleanup(&a);
}

static const char side_effects[] = "{\"turns\": [{\"toolCalls\": ["
    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"written\"}},"
    "{\"name\": \"run_command\", \"arguments\": {\"command\": \"echo ran > made.txt\"}},"
    "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"given.txt\", \"old_string\": \"given\","
    " \"new_string\": \"edited\"}},"
    "{\"name\": \"read_file\", \"arguments\": {\"path\": \"given.txt\"}},"
    "{\"name\": \"list_files\", \"arguments\": {}}"
    "]}, {\"text\": \"done\"}]}";

static void
run_side_effects(struct agent *a, const char *profile, const char *permission)
{
	cJSON *start, *finish;
	char path[512];

	agent_init(a);
	a->permission = permission;
	snprintf(path, sizeof path, "%s/given.txt", a->ws);
	write_file(path, "given\n");
	start = start_line(a, "replay", "x", profile);
	use_transcript(a, start, "side-effects", side_effects);
	agent_spawn(a, start);
	finish = agent_finish(a, 10000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_str_eq(json_get_string(tool_end(a, "read_file", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(a, "list_files", 0), "status"), "completed");
}

Test(agent, read_only_profile_denies_writes_and_commands)
{
	struct agent a;
	char path[512];

	run_side_effects(&a, "read-only", "allow");
	cr_expect_str_eq(json_get_string(tool_end(&a, "write_file", 0), "status"), "denied");
	cr_expect(strstr(json_get_string(tool_end(&a, "write_file", 0), "summary"), "read-only profile"));
	cr_expect_str_eq(json_get_string(tool_end(&a, "run_command", 0), "status"), "denied");
	cr_expect_str_eq(json_get_string(tool_end(&a, "edit_file", 0), "status"), "denied");
	cr_expect(strstr(json_get_string(tool_end(&a, "edit_file", 0), "summary"), "read-only profile"));
	expect_ws_file(&a, "given.txt", "given\n");
	snprintf(path, sizeof path, "%s/a.txt", a.ws);
	cr_expect_not(exists(path));
	snprintf(path, sizeof path, "%s/made.txt", a.ws);
	cr_expect_not(exists(path));
	cr_expect_eq(count_lines(&a, "request", NULL, NULL), 0, "read-only asked permission");
	agent_cleanup(&a);
}

Test(agent, ask_profile_runs_what_the_user_allows)
{
	struct agent a;
	cJSON *ask;

	run_side_effects(&a, "ask", "allow");
	cr_expect_eq(count_lines(&a, "request", "method", "permission.ask"), 3);
	ask = find_line(&a, "request", "method", "permission.ask", 0);
	cr_assert_not_null(ask);
	cr_expect_str_eq(json_get_string(member(ask, "params"), "tool"), "write_file");
	cr_expect_str_eq(json_get_string(member(member(ask, "params"), "input"), "path"), "a.txt");
	cr_expect_gt(strlen(json_get_string(member(ask, "params"), "summary")), 0);
	ask = find_line(&a, "request", "method", "permission.ask", 1);
	cr_expect_str_eq(json_get_string(member(ask, "params"), "tool"), "run_command");
	ask = find_line(&a, "request", "method", "permission.ask", 2);
	cr_expect_str_eq(json_get_string(member(ask, "params"), "tool"), "edit_file");
	cr_expect_str_eq(json_get_string(member(member(ask, "params"), "input"), "old_string"),
	    "given");
	cr_expect_str_eq(json_get_string(member(ask, "params"), "summary"), "edit given.txt");
	cr_expect_str_eq(json_get_string(tool_end(&a, "edit_file", 0), "status"), "completed");
	expect_ws_file(&a, "given.txt", "edited\n");
	cr_expect_str_eq(json_get_string(tool_end(&a, "write_file", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, "run_command", 0), "status"), "completed");
	expect_ws_file(&a, "a.txt", "written");
	expect_ws_file(&a, "made.txt", "ran\n");
	agent_cleanup(&a);
}

Test(agent, ask_profile_honours_deny_and_errors)
{
	static const char *const answers[] = { "deny", "error" };

	for (int i = 0; i < 2; i++) {
		struct agent a;
		char path[512];

		run_side_effects(&a, "ask", answers[i]);
		cr_expect_eq(count_lines(&a, "request", "method", "permission.ask"), 3);
		cr_expect_str_eq(json_get_string(tool_end(&a, "edit_file", 0), "status"), "denied");
		expect_ws_file(&a, "given.txt", "given\n");
		cr_expect_str_eq(json_get_string(tool_end(&a, "write_file", 0), "status"), "denied");
		cr_expect(strstr(json_get_string(tool_end(&a, "write_file", 0), "summary"), "denied by the user"));
		cr_expect_str_eq(json_get_string(tool_end(&a, "run_command", 0), "status"), "denied");
		snprintf(path, sizeof path, "%s/a.txt", a.ws);
		cr_expect_not(exists(path), "written after %s", answers[i]);
		snprintf(path, sizeof path, "%s/made.txt", a.ws);
		cr_expect_not(exists(path), "command ran after %s", answers[i]);
		agent_cleanup(&a);
	}
}

Test(agent, commands_get_a_reduced_environment_and_a_timeout)
{
	static const char json[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"run_command\", \"arguments\": {\"command\": \"env > env.txt; pwd > pwd.txt\"}},"
	    "{\"name\": \"run_command\", \"arguments\": {\"command\": \"echo out; echo err >&2; exit 3\"}},"
	    "{\"name\": \"run_command\", \"arguments\": {\"command\": \"sleep 90 & sleep 60\"}}"
	    "]}, {\"text\": \"done\"}]}";
	static const char *const profiles[] = { "workspace-write", "full-access" };

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	for (int i = 0; i < 2; i++) {
		struct agent a;
		cJSON *start, *finish, *end;
		char *env, *pwd;
		int64_t t0 = clock_mono_ms();

		agent_init(&a);
		start = start_line(&a, "replay", "x", profiles[i]);
		cJSON_ReplaceItemInObject(member(start, "limits"), "commandTimeoutMs",
		    cJSON_CreateNumber(400));
		use_transcript(&a, start, "commands", json);
		agent_spawn_env(&a, start, "TD_AGENT_TEST_MARKER=visible");
		finish = agent_finish(&a, 45000);
		cr_assert_str_eq(json_get_string(finish, "status"), "completed");
		/* Half the sleep: the 400 ms timeout stopped it, however slow the machine. */
		cr_expect_lt(clock_mono_ms() - t0, 30000, "the timeout did not stop sleep 60");
		env = ws_file(&a, "env.txt");
		pwd = ws_file(&a, "pwd.txt");
		cr_assert_not_null(env);
		cr_expect_eq(strstr(env, "TD_AGENT_TEST_MARKER=visible") != NULL, i == 1,
		    "profile %s: wrong environment", profiles[i]);
		cr_expect(strstr(env, "PATH=") != NULL);
		cr_expect_eq(strncmp(pwd ? pwd : "", a.ws, strlen(a.ws)), 0);
		end = tool_end(&a, "run_command", 1);
		cr_expect_str_eq(json_get_string(end, "status"), "failed");
		cr_expect(strstr(json_get_string(end, "summary"), "exit status 3") != NULL, "%s", json_get_string(end, "summary"));
		end = tool_end(&a, "run_command", 2);
		cr_expect_str_eq(json_get_string(end, "status"), "failed");
		cr_expect(strstr(json_get_string(end, "summary"), "timed out") != NULL, "%s", json_get_string(end, "summary"));
		free(env);
		free(pwd);
		agent_cleanup(&a);
		cr_expect_not(children_left(1000), "a background process outlived its command");
	}
}

Test(agent, repeated_failing_call_ends_the_run)
{
	static const char json[] = "{\"turns\": ["
	    "{\"toolCalls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"missing.txt\"}}]},"
	    "{\"toolCalls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"missing.txt\"}}]},"
	    "{\"toolCalls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"missing.txt\"}}]},"
	    "{\"text\": \"never\"}]}";
	struct agent a;
	cJSON *start, *finish;

	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "stuck", json);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "tool_loop");
	cr_expect_eq(count_lines(&a, "tool", "status", "failed"), 3);
	agent_cleanup(&a);
}

Test(agent, max_tokens_per_run_ends_the_run_budget_exceeded)
{
	static const char json[] = "{\"turns\": ["
	    "{\"toolCalls\": [{\"name\": \"list_files\", \"arguments\": {}}],"
	    " \"usage\": {\"inputTokens\": 500, \"outputTokens\": 100}},"
	    "{\"text\": \"Writing.\", \"toolCalls\": [{\"name\": \"write_file\", \"arguments\":"
	    " {\"path\": \"late.txt\", \"content\": \"x\"}}],"
	    " \"usage\": {\"inputTokens\": 600, \"outputTokens\": 100}},"
	    "{\"text\": \"never\"}]}";
	struct agent a;
	cJSON *start, *finish;
	char *late;

	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	cJSON_AddNumberToObject(member(start, "limits"), "maxTokensPerRun", 1000);
	use_transcript(&a, start, "costly", json);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "budget_exceeded");
	cr_expect(strstr(finish_message(finish), "used 1300 tokens, its limit is 1000 "
	    "(runs.maxTokensPerRun") != NULL, "%s", finish_message(finish));
	cr_expect_eq(usage_of(finish, "inputTokens"), 1100);
	/* The answer that passed the limit is not acted on. */
	late = ws_file(&a, "late.txt");
	cr_expect_null(late, "the call of the answer over the limit ran");
	free(late);
	cr_expect_eq(count_lines(&a, "tool", "status", "started"), 1);
	agent_cleanup(&a);
}

Test(agent, max_turns_ends_the_run)
{
	static const char json[] = "{\"turns\": ["
	    "{\"toolCalls\": [{\"name\": \"list_files\", \"arguments\": {}}]},"
	    "{\"toolCalls\": [{\"name\": \"list_files\", \"arguments\": {\"recursive\": true}}]},"
	    "{\"text\": \"never\"}]}";
	struct agent a;
	cJSON *start, *finish;

	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	cJSON_ReplaceItemInObject(member(start, "limits"), "maxTurns", cJSON_CreateNumber(2));
	use_transcript(&a, start, "long", json);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "max_turns");
	/* The message names the limit and what to do. */
	cr_expect(strstr(finish_message(finish), "limit of 2 model turns (runs.maxTurns)") != NULL,
	    "%s", finish_message(finish));
	agent_cleanup(&a);
}

Test(agent, failed_artifact_save_is_reported_and_the_run_goes_on)
{
	struct agent a;
	cJSON *finish, *end;

	agent_init(&a);
	a.artifact_fail = true;
	agent_spawn(&a, start_line(&a, "replay", "research", "workspace-write"));
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "completed");
	end = tool_end(&a, "save_artifact", 0);
	cr_expect_str_eq(json_get_string(end, "status"), "failed");
	cr_expect(strstr(json_get_string(end, "summary"), "the test said no") != NULL, "%s", json_get_string(end, "summary"));
	agent_cleanup(&a);
}

Test(agent, cancel_while_waiting_for_permission)
{
	struct agent a;
	cJSON *start, *msg, *finish, *cancel;
	char path[512];

	agent_init(&a);
	start = start_line(&a, "replay", "x", "ask");
	use_transcript(&a, start, "side-effects", side_effects);
	agent_spawn(&a, start);
	while ((msg = agent_line(&a, 5000)) != NULL && strcmp(json_get_string(msg, "type"), "request") != 0)
		;
	cr_assert_not_null(msg, "no permission.ask");
	cr_assert_str_eq(json_get_string(msg, "method"), "permission.ask");
	cancel = cJSON_CreateObject();
	cJSON_AddStringToObject(cancel, "type", "cancel");
	agent_send(&a, cancel);
	finish = agent_finish(&a, 3000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	snprintf(path, sizeof path, "%s/a.txt", a.ws);
	cr_expect_not(exists(path), "written without an answer");
	agent_cleanup(&a);
}

Test(agent, bad_calls_are_reported_to_the_model)
{
	static const char json[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"no_such_tool\", \"arguments\": {}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"x.txt\", \"content\": 5}},"
	    "{\"name\": \"read_file\", \"arguments\": {}},"
	    "{\"name\": \"read_file\", \"arguments\": {\"path\": \".\"}},"
	    "{\"name\": \"save_artifact\", \"arguments\": {\"path\": \"missing.md\"}},"
	    "{\"name\": \"run_command\", \"arguments\": {\"command\": \"\"}}"
	    "]}, {\"text\": \"carried on\", \"usage\": {}}]}";
	struct agent a;
	cJSON *start, *finish;

	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "bad-calls", json);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "completed");
	cr_expect_str_eq(json_get_string(finish, "output"), "carried on");
	cr_expect_eq(count_lines(&a, "tool", "status", "failed"), 6);
	cr_expect(strstr(json_get_string(tool_end(&a, "no_such_tool", 0), "summary"), "no tool named") != NULL);
	cr_expect_eq(count_lines(&a, "request", NULL, NULL), 0);
	agent_cleanup(&a);
}

Test(agent, long_output_is_cut_and_lines_stay_small)
{
	size_t big = 300 * 1024;
	struct buf json;
	struct agent a;
	cJSON *start, *finish;
	const char *out;

	buf_init(&json, 0);
	buf_appends(&json, "{\"turns\": [{\"text\": \"");
	/* Control characters grow sixfold in JSON: the worst case for line size. */
	for (size_t i = 0; i < big; i++)
		buf_appends(&json, i % 2 ? "\\u0001" : "\\u00e9");
	buf_appends(&json, "\"}]}");
	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "chatty", json.data);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "completed");
	out = json_get_string(finish, "output");
	cr_expect_leq(strlen(out), 128 * 1024);
	cr_expect_gt(strlen(out), 100 * 1024);
	cr_expect(strstr(out, "[output truncated]") != NULL);
	cr_expect_geq(count_lines(&a, "output", NULL, NULL), 2, "one huge output line");
	agent_cleanup(&a);
	buf_free(&json);
}

/* Host protocol errors */

static void
expect_protocol_exit(struct agent *a)
{
	cJSON *l;

	while ((l = agent_line(a, 5000)) != NULL)
		cr_expect_str_neq(json_get_string(l, "type"), "finish", "finish after a protocol error");
	cr_expect_eq(agent_exit(a, 5000), 3, "exit status %d", a->status);
}

Test(agent, overlong_line_from_the_host_ends_the_agent)
{
	size_t len = 1024 * 1024 + 16;
	char *big = xmalloc(len);
	struct agent a;

	memset(big, 'a', len);
	/* After the start line, during a run. */
	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "slow", "workspace-write"));
	cr_assert_not_null(agent_line(&a, 5000));
	agent_write(&a, big, len);
	expect_protocol_exit(&a);
	agent_cleanup(&a);

	/* As the first line. */
	agent_init(&a);
	agent_spawn(&a, NULL);
	agent_write(&a, big, len);
	expect_protocol_exit(&a);
	agent_cleanup(&a);
	free(big);
}

Test(agent, malformed_lines_from_the_host_end_the_agent)
{
	static const char *const lines[] = {
		"not json\n", "[1,2]\n", "{\"type\":\"unknown\"}\n",
		"{\"type\":\"response\",\"id\":0,\"result\":{}}\n",
	};

	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		struct agent a;

		agent_init(&a);
		agent_spawn(&a, start_line(&a, "replay", "slow", "workspace-write"));
		cr_assert_not_null(agent_line(&a, 5000));
		agent_write(&a, lines[i], strlen(lines[i]));
		expect_protocol_exit(&a);
		agent_cleanup(&a);
	}

	/* A start line that lacks what the agent needs. */
	struct agent a;
	cJSON *start;

	agent_init(&a);
	start = start_line(&a, "replay", "quick", "workspace-write");
	cJSON_DeleteItemFromObject(member(start, "run"), "prompt");
	agent_spawn(&a, start);
	expect_protocol_exit(&a);
	agent_cleanup(&a);

	agent_init(&a);
	start = start_line(&a, "replay", "quick", "workspace-write");
	set_string(member(start, "run"), "turnIntent", "plan-later");
	agent_spawn(&a, start);
	expect_protocol_exit(&a);
	agent_cleanup(&a);
}

/* Plan-first runs and permission answers */

static cJSON *
plan_start(struct agent *a, const char *model, const char *profile)
{
	cJSON *start = start_line(a, "replay", model, profile);

	set_string(member(start, "run"), "turnIntent", "plan-first");
	return start;
}

/* The i-th request of method, asserted to exist. */
static cJSON *
request_params(const struct agent *a, const char *method, int i)
{
	cJSON *req = find_line(a, "request", "method", method, i);

	cr_assert_not_null(req, "no %s request #%d", method, i);
	return member(req, "params");
}

/* Index in a's lines of the n-th line matching type/key/value, or -1. */
static int
line_index(const struct agent *a, const char *type, const char *key, const char *value, int n)
{
	cJSON *want = find_line(a, type, key, value, n), *l;
	int i = 0;

	cJSON_ArrayForEach(l, a->lines) {
		if (l == want)
			return i;
		i++;
	}
	return -1;
}

Test(agent, plan_revised_twice_then_approved_and_carried_out)
{
	static const char *const answers[] = { "revise:Add a section on risks.",
	    "revise:Keep it under a page.", "approve", NULL };
	static const char *const steps[][2] = {
		{ "st3-1", "in-progress" }, { "st3-1", "completed" }, { "st3-2", "in-progress" },
		{ "st3-2", "completed" }, { "st3-3", "in-progress" }, { "st3-3", "completed" },
	};
	struct agent a;
	cJSON *finish, *p;
	char *report;

	agent_init(&a);
	a.plan_answers = answers;
	agent_spawn(&a, plan_start(&a, "plan", "workspace-write"));
	finish = agent_finish(&a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));

	cr_assert_eq(count_lines(&a, "request", "method", "plan.propose"), 3);
	p = request_params(&a, "plan.propose", 0);
	cr_expect_null(strstr(json_get_string(p, "summary"), "Revised"), "%s", json_get_string(p, "summary"));
	cr_expect_eq(cJSON_GetArraySize(member(p, "steps")), 3);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(member(p, "steps"), 1), "title"), "Write report.md");
	cr_expect_str_eq(json_get_string(request_params(&a, "plan.propose", 1), "summary"),
	    "Revised after feedback: Add a section on risks.");
	cr_expect_str_eq(json_get_string(request_params(&a, "plan.propose", 2), "summary"),
	    "Revised after feedback: Keep it under a page.");
	cr_expect(strstr(json_get_string(tool_end(&a, "propose_plan", 0), "summary"),
	    "Add a section on risks.") != NULL, "%s", json_get_string(tool_end(&a, "propose_plan", 0), "summary"));
	cr_expect_str_eq(json_get_string(tool_end(&a, "propose_plan", 2), "summary"), "plan approved (3 steps)");

	/* The steps carry the service's ids, in order, around the work they describe. */
	cr_assert_eq(count_lines(&a, "request", "method", "plan.step"), 6);
	for (int i = 0; i < 6; i++) {
		p = request_params(&a, "plan.step", i);
		cr_expect_str_eq(json_get_string(p, "stepId"), steps[i][0], "plan.step #%d", i);
		cr_expect_str_eq(json_get_string(p, "status"), steps[i][1], "plan.step #%d", i);
	}
	/* Nothing was written before the approval. */
	cr_expect_gt(line_index(&a, "tool", "name", "write_file", 0),
	    line_index(&a, "request", "method", "plan.propose", 2));
	cr_expect_str_eq(json_get_string(request_params(&a, "artifact.save", 0), "path"), "report.md");
	cr_expect_eq(count_lines(&a, "request", "method", "artifact.save"), 1);
	report = ws_file(&a, "report.md");
	cr_expect(report != NULL && strncmp(report, "# Report", 8) == 0, "report.md missing");
	free(report);
	cr_expect(strstr(json_get_string(finish, "output"), "report.md") != NULL);
	cr_expect_eq(count_lines(&a, "tool", "status", "failed"), 0);
	agent_cleanup(&a);
}

Test(agent, rejected_plan_cancels_the_run)
{
	static const char *const answers[] = { "reject", NULL };
	struct agent a;
	cJSON *finish;
	char path[512];

	agent_init(&a);
	a.plan_answers = answers;
	agent_spawn(&a, plan_start(&a, "plan", "workspace-write"));
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	cr_expect_null(member(finish, "error"));
	cr_expect_eq(count_lines(&a, "request", "method", "plan.propose"), 1);
	cr_expect_eq(count_lines(&a, "request", "method", "plan.step"), 0);
	cr_expect_str_eq(json_get_string(tool_end(&a, "propose_plan", 0), "summary"), "plan rejected");
	cr_expect_null(tool_end(&a, "update_plan_step", 0), "the model went on after a reject");
	snprintf(path, sizeof path, "%s/report.md", a.ws);
	cr_expect_not(exists(path));
	agent_cleanup(&a);
}

Test(agent, side_effects_wait_for_an_approved_plan)
{
	static const char *const answers[] = { "approve", NULL };
	static const char head[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"early.txt\", \"content\": \"x\"}},"
	    "{\"name\": \"run_command\", \"arguments\": {\"command\": \"echo x > cmd.txt\"}},"
	    "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"given.txt\", \"old_string\": \"given\", \"new_string\": \"x\"}},"
	    "{\"name\": \"save_artifact\", \"arguments\": {\"path\": \"given.txt\"}},"
	    "{\"name\": \"update_plan_step\", \"arguments\": {\"stepId\": \"s1\", \"status\": \"completed\"}},"
	    "{\"name\": \"propose_plan\", \"arguments\": {\"summary\": \"none\", \"steps\": []}},"
	    "{\"name\": \"propose_plan\", \"arguments\": {\"steps\": [{\"title\": \"t\"}]}},"
	    "{\"name\": \"propose_plan\", \"arguments\": {\"summary\": \"long\", \"steps\": [{\"title\": \"";
	static const char tail[] = "\"}]}}]},"
	    "{\"toolCalls\": [{\"name\": \"propose_plan\", \"arguments\": {\"summary\": \"Write late.txt\","
	    " \"steps\": [{\"title\": \"Write late.txt\"}, {\"title\": \"Save it\"}]}}]},"
	    "{\"toolCalls\": ["
	    "{\"name\": \"update_plan_step\", \"arguments\": {\"stepId\": \"s1\", \"status\": \"in-progress\"}},"
	    "{\"name\": \"update_plan_step\", \"arguments\": {\"stepId\": \"{{step1}}\", \"status\": \"in-progress\"}},"
	    "{\"name\": \"write_file\", \"arguments\": {\"path\": \"late.txt\", \"content\": \"y\"}},"
	    "{\"name\": \"save_artifact\", \"arguments\": {\"path\": \"late.txt\"}}"
	    "]}, {\"text\": \"done\"}]}";
	struct agent a;
	struct buf json;
	cJSON *start, *finish, *end;
	char path[512];

	buf_init(&json, 0);
	buf_appends(&json, head);
	for (int i = 0; i < 201; i++)
		buf_appends(&json, "\xc3\xa9");	/* 201 characters, 402 bytes */
	buf_appends(&json, tail);
	agent_init(&a);
	a.plan_answers = answers;
	snprintf(path, sizeof path, "%s/given.txt", a.ws);
	write_file(path, "given\n");
	start = plan_start(&a, "x", "ask");
	use_transcript(&a, start, "early", json.data);
	buf_free(&json);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 10000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));

	for (const char *const *t = (const char *const[]){ "write_file", "run_command",
	    "edit_file", "save_artifact", NULL }; *t; t++) {
		end = tool_end(&a, *t, 0);
		cr_expect_str_eq(json_get_string(end, "status"), "failed", "%s before approval", *t);
		cr_expect(strstr(json_get_string(end, "summary"), "propose_plan") != NULL, "%s", json_get_string(end, "summary"));
	}
	cr_expect(strstr(json_get_string(tool_end(&a, "update_plan_step", 0), "summary"), "no approved plan"));
	for (int i = 0; i < 3; i++)
		cr_expect_str_eq(json_get_string(tool_end(&a, "propose_plan", i), "status"), "failed",
		    "bad plan %d was accepted", i);
	cr_expect(strstr(json_get_string(tool_end(&a, "propose_plan", 2), "summary"), "200 characters"));
	snprintf(path, sizeof path, "%s/early.txt", a.ws);
	cr_expect_not(exists(path));
	snprintf(path, sizeof path, "%s/cmd.txt", a.ws);
	cr_expect_not(exists(path));
	expect_ws_file(&a, "given.txt", "given\n");

	/* One proposal reached the service; only the approved work asked and saved. */
	cr_expect_eq(count_lines(&a, "request", "method", "plan.propose"), 1);
	cr_expect_eq(count_lines(&a, "request", "method", "permission.ask"), 1);
	cr_expect_str_eq(json_get_string(request_params(&a, "permission.ask", 0), "tool"), "write_file");
	cr_expect_gt(line_index(&a, "request", "method", "permission.ask", 0),
	    line_index(&a, "request", "method", "plan.propose", 0));
	cr_expect_eq(count_lines(&a, "request", "method", "artifact.save"), 1);
	cr_expect_str_eq(json_get_string(request_params(&a, "artifact.save", 0), "path"), "late.txt");
	/* s1 is not an id the service gave: refused; the service's id works. */
	end = tool_end(&a, "update_plan_step", 1);
	cr_expect_str_eq(json_get_string(end, "status"), "failed");
	cr_expect(strstr(json_get_string(end, "summary"), "st1-1") != NULL, "%s", json_get_string(end, "summary"));
	cr_expect_eq(count_lines(&a, "request", "method", "plan.step"), 1);
	cr_expect_str_eq(json_get_string(request_params(&a, "plan.step", 0), "stepId"), "st1-1");
	snprintf(path, sizeof path, "%s/late.txt", a.ws);
	cr_expect(exists(path));
	agent_cleanup(&a);
}

Test(agent, plan_tools_exist_only_in_plan_first_runs)
{
	struct agent a;
	cJSON *finish, *end;

	agent_init(&a);
	agent_spawn(&a, start_line(&a, "replay", "plan", "workspace-write"));
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "completed");
	end = tool_end(&a, "propose_plan", 0);
	cr_expect_str_eq(json_get_string(end, "status"), "failed");
	cr_expect(strstr(json_get_string(end, "summary"), "no tool named") != NULL, "%s", json_get_string(end, "summary"));
	cr_expect_eq(count_lines(&a, "request", "method", "plan.propose"), 0);
	cr_expect_eq(count_lines(&a, "request", "method", "plan.step"), 0);
	agent_cleanup(&a);
}

Test(agent, cancel_while_waiting_for_a_plan_decision)
{
	struct agent a;
	cJSON *msg, *finish, *cancel;
	int64_t sent;
	char path[512];

	agent_init(&a);
	agent_spawn(&a, plan_start(&a, "plan", "workspace-write"));
	while ((msg = agent_line(&a, 5000)) != NULL && strcmp(json_get_string(msg, "type"), "request") != 0)
		;
	cr_assert_not_null(msg, "no plan.propose");
	cr_assert_str_eq(json_get_string(msg, "method"), "plan.propose");
	cr_expect_null(agent_line(&a, 1500), "the agent did not wait for the decision");
	cancel = cJSON_CreateObject();
	cJSON_AddStringToObject(cancel, "type", "cancel");
	sent = clock_mono_ms();
	agent_send(&a, cancel);
	/* No decision ever comes: only the cancel can end it, within the wait. */
	finish = agent_finish(&a, 30000);
	cr_expect_lt(clock_mono_ms() - sent, 30000, "the cancel took %lld ms",
	    (long long)(clock_mono_ms() - sent));
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	snprintf(path, sizeof path, "%s/report.md", a.ws);
	cr_expect_not(exists(path));
	agent_cleanup(&a);
}

Test(agent, ask_transcript_does_only_what_was_allowed)
{
	static const struct {
		const char *const answers[3];	/* allowed.md, the command, second.md */
		bool allowed, ran, second;
	} cases[] = {
		{ { "allow", "deny", "deny" }, true, false, false },
		{ { "deny", "allow", "allow" }, false, true, true },
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *saved = cases[i].allowed ? "allowed.md" : "second.md";
		struct agent a;
		cJSON *finish;
		char path[512], *ran;

		agent_init(&a);
		a.permissions = cases[i].answers;
		agent_spawn(&a, start_line(&a, "replay", "ask", "ask"));
		finish = agent_finish(&a, 10000);
		cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
		cr_expect_eq(count_lines(&a, "request", "method", "permission.ask"), 3);
		cr_expect_str_eq(json_get_string(request_params(&a, "permission.ask", 1), "tool"), "run_command");
		snprintf(path, sizeof path, "%s/allowed.md", a.ws);
		cr_expect_eq(exists(path), cases[i].allowed, "case %zu: allowed.md", i);
		snprintf(path, sizeof path, "%s/second.md", a.ws);
		cr_expect_eq(exists(path), cases[i].second, "case %zu: second.md", i);
		ran = ws_file(&a, "ran.txt");
		cr_expect_eq(ran != NULL, cases[i].ran, "case %zu: ran.txt", i);
		if (ran != NULL)
			cr_expect_str_eq(ran, "hi\n");
		free(ran);
		cr_expect_eq(count_lines(&a, "tool", "status", "denied"),
		    3 - cases[i].allowed - cases[i].ran - cases[i].second, "case %zu", i);
		cr_expect_eq(count_lines(&a, "request", "method", "artifact.save"), 1, "case %zu", i);
		cr_expect_str_eq(json_get_string(request_params(&a, "artifact.save", 0), "path"), saved);
		cr_expect_str_eq(json_get_string(tool_end(&a, "save_artifact", cases[i].allowed ? 1 : 0),
		    "status"), "failed", "case %zu: a save of a file never written", i);
		agent_cleanup(&a);
	}
}

/* HTTP providers against the fake server */

#define TEST_KEY "sk-test-SECRET-0123456789abcdef"

static cJSON *
http_start(struct agent *a, const char *kind, struct fake_provider *fp, const char *key)
{
	cJSON *start = start_line(a, kind, "fake-model", "workspace-write");
	cJSON *prov = member(start, "provider");
	cJSON *hist = cJSON_CreateObject();

	set_string(prov, "baseUrl", fake_provider_url(fp, strcmp(kind, "openai") == 0 ? "/v1/" : ""));
	set_string(prov, "apiKey", key);
	set_string(prov, "replayDir", NULL);
	cJSON_AddStringToObject(hist, "prompt", "An earlier question");
	cJSON_AddStringToObject(hist, "output", "An earlier answer");
	cJSON_AddItemToArray(member(start, "history"), hist);
	return start;
}

/*
 * Starts a fake provider serving the n replies and an agent of provider kind
 * (with key) against it; asserts that the run completed with output.  The
 * finish line; *fp gets the provider (fake_provider_stop it).
 */
static cJSON *
provider_run_completes(struct agent *a, const char *kind, struct fake_reply *replies, size_t n,
    const char *key, struct fake_provider **fp, const char *output)
{
	cJSON *finish;

	*fp = fake_provider_start(replies, n);
	cr_assert_not_null(*fp);
	agent_init(a);
	agent_spawn(a, http_start(a, kind, *fp, key));
	finish = agent_finish(a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_str_eq(json_get_string(finish, "output"), output);
	return finish;
}

/* The request body i of fp, parsed (free it). */
static cJSON *
request_body(struct fake_provider *fp, size_t i)
{
	const struct fake_request *r = fake_provider_request(fp, i);

	cr_assert_not_null(r, "request %zu was not made", i);
	return cJSON_Parse(r->body);
}

static void
expect_no_key(const struct agent *a)
{
	char *err = harness_slurp(a->err_path, NULL);

	cr_expect_null(strstr(a->raw.data ? a->raw.data : "", TEST_KEY), "the key is in stdout");
	cr_expect_null(strstr(err ? err : "", TEST_KEY), "the key is in stderr");
	cr_expect_null(strstr(a->raw.data ? a->raw.data : "", "SECRET"), "part of the key leaked");
	free(err);
}

Test(agent, openai_text_tool_call_and_usage)
{
	struct buf one, two;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *finish, *body, *msgs, *m, *usage;
	const struct fake_request *req;

	buf_init(&one, 0);
	fake_openai_delta(&one, "{\"role\":\"assistant\",\"content\":\"\"}", NULL);
	fake_openai_text(&one, "Let me ");
	fake_openai_text(&one, "write h\xc3\xa9llo ");
	fake_openai_text(&one, "w\xc3\xb6rld.");
	fake_openai_tool_call(&one, 0, "call_abc", "write_file",
	    "{\"path\": \"notes/out.txt\", \"content\": \"h\\u00e9llo w\\u00f6rld\\n\"}", 3);
	fake_openai_tool_call(&one, 1, "call_def", "list_files", "", 1);
	fake_openai_delta(&one, "{}", "tool_calls");
	fake_openai_usage(&one, 100, 20);
	fake_openai_done(&one);
	buf_init(&two, 0);
	fake_openai_text(&two, "Wrote notes/out.txt.");
	fake_openai_delta(&two, "{}", "stop");
	fake_openai_usage_cached(&two, 150, 5, 100);
	fake_openai_done(&two);
	/* Odd chunk sizes split frames, lines and UTF-8 characters. */
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 7, 200, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream; charset=utf-8", two.data, 5, 200, NULL, 0 };
	finish = provider_run_completes(&a, "openai", replies, 2, TEST_KEY, &fp,
	    "Let me write h\xc3\xa9llo w\xc3\xb6rld.Wrote notes/out.txt.");
	cr_expect_eq(usage_of(finish, "inputTokens"), 250);
	cr_expect_eq(usage_of(finish, "outputTokens"), 25);
	cr_expect_eq(usage_of(finish, "cacheReadTokens"), 100);	/* prompt_tokens_details */
	cr_expect_eq(usage_of(finish, "cacheWriteTokens"), 0);
	usage = find_line(&a, "usage", NULL, NULL, 0);
	cr_expect_eq(usage_of(usage, "inputTokens"), 100);
	expect_ws_file(&a, "notes/out.txt", "h\xc3\xa9llo w\xc3\xb6rld\n");
	cr_expect_str_eq(json_get_string(tool_end(&a, "list_files", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(find_line(&a, "tool", "name", "write_file", 0), "callId"), "call_abc");

	cr_assert_eq(fake_provider_count(fp), 2);
	req = fake_provider_request(fp, 0);
	cr_expect_str_eq(req->path, "/v1/chat/completions");
	cr_expect_str_eq(req->authorization ? req->authorization : "(none)", "Bearer " TEST_KEY);
	body = request_body(fp, 0);
	cr_assert_not_null(body);
	cr_expect_str_eq(json_get_string(body, "model"), "fake-model");
	cr_expect(cJSON_IsTrue(member(body, "stream")));
	cr_expect(cJSON_IsTrue(member(member(body, "stream_options"), "include_usage")));
	cr_expect_eq(cJSON_GetArraySize(member(body, "tools")), 8);
	cr_expect_str_eq(json_get_string(member(cJSON_GetArrayItem(member(body, "tools"), 0), "function"),
	    "name"), "list_files");
	msgs = member(body, "messages");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 0), "role"), "system");
	cr_expect(strstr(json_get_string(cJSON_GetArrayItem(msgs, 0), "content"), "Tests of taskdeck-agent.") != NULL);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 1), "content"), "An earlier question");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 2), "role"), "assistant");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 2), "content"), "An earlier answer");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 3), "content"), "Write a short report and save it.");
	cJSON_Delete(body);

	/* The second request carries the calls and their results. */
	body = request_body(fp, 1);
	msgs = member(body, "messages");
	cr_assert_eq(cJSON_GetArraySize(msgs), 7);
	m = cJSON_GetArrayItem(msgs, 4);
	cr_expect_str_eq(json_get_string(m, "role"), "assistant");
	cr_expect_str_eq(json_get_string(m, "content"), "Let me write h\xc3\xa9llo w\xc3\xb6rld.");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(member(m, "tool_calls"), 0), "id"), "call_abc");
	cr_expect_str_eq(json_get_string(member(cJSON_GetArrayItem(member(m, "tool_calls"), 1), "function"),
	    "arguments"), "{}");
	m = cJSON_GetArrayItem(msgs, 5);
	cr_expect_str_eq(json_get_string(m, "role"), "tool");
	cr_expect_str_eq(json_get_string(m, "tool_call_id"), "call_abc");
	cr_expect(strstr(json_get_string(m, "content"), "notes/out.txt") != NULL);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 6), "tool_call_id"), "call_def");
	cJSON_Delete(body);
	expect_no_key(&a);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&two);
}

/*
 * One scripted reply, one run that must fail with code and a message that
 * says says, without a retry: one request, no "retrying" line.
 */
static void
provider_expect_failure(const char *kind, int status, const char *type, const char *body,
    const char *key, const char *code, const char *says)
{
	struct fake_reply reply = { status, type, (char *)body, 11, 0, NULL, 0 };
	struct fake_provider *fp = fake_provider_start(&reply, 1);
	struct agent a;
	cJSON *finish;

	cr_assert_not_null(fp);
	agent_init(&a);
	agent_spawn(&a, http_start(&a, kind, fp, key));
	finish = agent_finish(&a, 15000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish) ? finish_code(finish) : "(none)", code, "%s", body);
	cr_expect(finish_message(finish) && strstr(finish_message(finish), says) != NULL,
	    "\"%s\" does not say %s", finish_message(finish), says);
	cr_expect_eq(fake_provider_count(fp), 1, "HTTP %d was sent %zu times", status,
	    fake_provider_count(fp));
	cr_expect_eq(count_lines(&a, "progress", "phase", "retrying"), 0, "HTTP %d was retried",
	    status);
	expect_no_key(&a);
	if (key == NULL && fake_provider_count(fp) > 0) {
		cr_expect_null(fake_provider_request(fp, 0)->authorization);
		cr_expect_null(fake_provider_request(fp, 0)->api_key);
	}
	agent_cleanup(&a);
	fake_provider_stop(fp);
}

Test(agent, openai_errors)
{
	char *big = xmalloc(1200 * 1024);

	provider_expect_failure("openai", 401, "application/json",
	    "{\"error\":{\"message\":\"Incorrect API key provided: " TEST_KEY ". You can find "
	    "your API key at https://platform.openai.com/account/api-keys.\","
	    "\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
	    TEST_KEY, "provider_error", "Incorrect API key provided");
	provider_expect_failure("openai", 403, "application/json",
	    "{\"error\":{\"message\":\"Project does not have access to model fake-model\","
	    "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
	    NULL, "provider_error", "does not have access");
	provider_expect_failure("openai", 400, "application/json",
	    "{\"error\":{\"message\":\"Unrecognized request argument supplied: foo\","
	    "\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}",
	    NULL, "provider_error", "Unrecognized request argument");
	provider_expect_failure("openai", 404, "text/plain", "404 page not found", NULL,
	    "provider_error", "404 page not found");
	provider_expect_failure("openai", 200, "text/event-stream",
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
	    "data: {not json}\n\n", NULL, "invalid_provider_response", "not a JSON object");
	provider_expect_failure("openai", 200, "text/event-stream",
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\","
	    "\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\": \"}}]}}]}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
	    "data: [DONE]\n\n", NULL, "invalid_provider_response", "not a JSON object");
	provider_expect_failure("openai", 200, "application/json",
	    "{\"choices\":[{\"message\":{\"content\":\"not streamed\"}}]}", NULL,
	    "invalid_provider_response", "event stream");
	provider_expect_failure("openai", 200, "text/event-stream",
	    "data: {\"error\":{\"message\":\"invalid tool schema\"}}\n\n", NULL,
	    "provider_error", "invalid tool schema");
	memcpy(big, "data: \"", 7);
	memset(big + 7, 'x', 1200 * 1024 - 10);
	memcpy(big + 1200 * 1024 - 3, "\"\n", 3);
	provider_expect_failure("openai", 200, "text/event-stream", big, NULL,
	    "invalid_provider_response", "larger than 1 MiB");
	free(big);
}

Test(agent, openai_whole_calls_without_index)
{
	/* Older Ollama: whole calls, no index, no usage, no [DONE] after finish_reason. */
	static char one[] =
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\","
	    "\"tool_calls\":[{\"id\":\"call_1\",\"function\":{\"name\":\"write_file\","
	    "\"arguments\":\"{\\\"path\\\":\\\"o.txt\\\",\\\"content\\\":\\\"ollama\\\"}\"}},"
	    "{\"id\":\"call_2\",\"function\":{\"name\":\"read_file\","
	    "\"arguments\":\"{\\\"path\\\":\\\"o.txt\\\"}\"}}]},"
	    "\"finish_reason\":null}]}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
	static char two[] =
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n";
	struct fake_reply replies[2] = {
		{ 200, "text/event-stream", one, 0, 0, NULL, 0 },
		{ 200, "text/event-stream", two, 0, 0, NULL, 0 },
	};
	struct fake_provider *fp;
	struct agent a;

	provider_run_completes(&a, "openai", replies, 2, NULL, &fp, "ok");
	expect_ws_file(&a, "o.txt", "ollama");
	cr_expect_str_eq(json_get_string(tool_end(&a, "read_file", 0), "status"), "completed");
	cr_expect_null(fake_provider_request(fp, 0)->authorization);
	agent_cleanup(&a);
	fake_provider_stop(fp);
}

Test(agent, plan_first_offers_the_plan_tools_to_the_model)
{
	static char one[] =
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n"
	    "data: [DONE]\n\n";
	struct fake_reply reply = { 200, "text/event-stream", one, 0, 0, NULL, 0 };
	struct fake_provider *fp = fake_provider_start(&reply, 1);
	struct agent a;
	cJSON *start, *finish, *body, *tools, *t, *system;
	int plan_tools = 0;

	cr_assert_not_null(fp);
	agent_init(&a);
	start = http_start(&a, "openai", fp, NULL);
	set_string(member(start, "run"), "turnIntent", "plan-first");
	agent_spawn(&a, start);
	finish = agent_finish(&a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	body = request_body(fp, 0);
	tools = member(body, "tools");
	cr_expect_eq(cJSON_GetArraySize(tools), 10);
	cJSON_ArrayForEach(t, tools) {
		const char *name = json_get_string(member(t, "function"), "name");

		plan_tools += strcmp(name, "propose_plan") == 0 ||
		    strcmp(name, "update_plan_step") == 0;
	}
	cr_expect_eq(plan_tools, 2);
	system = cJSON_GetArrayItem(member(body, "messages"), 0);
	cr_expect(strstr(json_get_string(system, "content"), "plan-first") != NULL);
	cJSON_Delete(body);
	agent_cleanup(&a);
	fake_provider_stop(fp);
}

Test(agent, openai_unreachable)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct agent a;
	cJSON *start, *finish;
	char url[64];

	/* A port that was free a moment ago: nothing listens there. */
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	close(fd);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", ntohs(addr.sin_port));
	agent_init(&a);
	start = start_line(&a, "openai", "m", "workspace-write");
	set_string(member(start, "provider"), "baseUrl", url);
	set_string(member(start, "provider"), "apiKey", TEST_KEY);
	cJSON_AddNumberToObject(member(start, "provider"), "maxRetries", 1);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 15000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "provider_unreachable");
	/* A refused connection is tried again once, then the run gives up. */
	cr_expect_eq(count_lines(&a, "progress", "phase", "retrying"), 1);
	cr_expect_str_eq(json_get_string(find_line(&a, "progress", "phase", "retrying", 0),
	    "reason"), "connection");
	cr_expect(strstr(finish_message(finish), "gave up after 1 retries") != NULL, "%s",
	    finish_message(finish));
	expect_no_key(&a);
	agent_cleanup(&a);
}

Test(agent, cancel_during_a_provider_stream)
{
	struct buf body;
	struct fake_reply reply;
	struct fake_provider *fp;
	struct agent a;
	cJSON *msg, *finish, *cancel;
	int64_t sent;

	buf_init(&body, 0);
	fake_openai_text(&body, "first ");
	for (int i = 0; i < 60; i++)
		fake_openai_text(&body, "more ");
	fake_openai_delta(&body, "{}", "stop");
	fake_openai_done(&body);
	/* One frame every 100 ms or so: about 20 s in all. */
	reply = (struct fake_reply){ 200, "text/event-stream", body.data, 64, 100000, NULL, 0 };
	fp = fake_provider_start(&reply, 1);
	agent_init(&a);
	agent_spawn(&a, http_start(&a, "openai", fp, NULL));
	while ((msg = agent_line(&a, 5000)) != NULL && strcmp(json_get_string(msg, "type"), "output") != 0)
		;
	cr_assert_not_null(msg, "no output arrived");
	cancel = cJSON_CreateObject();
	cJSON_AddStringToObject(cancel, "type", "cancel");
	sent = clock_mono_ms();
	agent_send(&a, cancel);
	finish = agent_finish(&a, 15000);
	/* Half the stream's 20 s: the cancel ended it. */
	cr_expect_lt(clock_mono_ms() - sent, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	cr_expect(strncmp(json_get_string(finish, "output"), "first ", 6) == 0);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&body);
}

Test(agent, anthropic_text_tool_use_and_usage)
{
	struct buf one, two;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *finish, *body, *msgs, *m, *block;
	const struct fake_request *req;

	buf_init(&one, 0);
	/* 150 new input tokens, 50 written to the cache: 200 in all. */
	fake_anthropic_start_cached(&one, 150, 0, 50);
	fake_anthropic_text_block(&one, 0, "I'll write the fil\xc3\xa9.");
	fake_anthropic_tool_block(&one, 1, "toolu_01", "write_file",
	    "{\"path\": \"a.md\", \"content\": \"# A\\n\"}", 4);
	fake_anthropic_stop(&one, "tool_use", 30);
	buf_init(&two, 0);
	/* 100 new input tokens, 200 read from the cache: 300 in all. */
	fake_anthropic_event(&two, "message_start", "{\"type\":\"message_start\",\"message\":"
	    "{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],"
	    "\"model\":\"fake\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{"
	    "\"input_tokens\":100,\"cache_creation_input_tokens\":0,"
	    "\"cache_read_input_tokens\":200,\"output_tokens\":1}}}");
	fake_anthropic_text_block(&two, 0, "Done: a.md.");
	fake_anthropic_stop(&two, "end_turn", 8);
	replies[0] = (struct fake_reply){ 200, "text/event-stream; charset=utf-8", one.data, 9, 200, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", two.data, 13, 200, NULL, 0 };
	finish = provider_run_completes(&a, "anthropic", replies, 2, TEST_KEY, &fp,
	    "I'll write the fil\xc3\xa9.Done: a.md.");
	cr_expect_eq(usage_of(finish, "inputTokens"), 500);
	cr_expect_eq(usage_of(finish, "outputTokens"), 38);
	cr_expect_eq(usage_of(finish, "cacheReadTokens"), 200);
	cr_expect_eq(usage_of(finish, "cacheWriteTokens"), 50);
	/* The checkpoint after the first turn keeps its cache counts for a resume. */
	cr_expect_eq(usage_of(member(find_line(&a, "checkpoint", NULL, NULL, 0), "checkpoint"),
	    "cacheWriteTokens"), 50);
	expect_ws_file(&a, "a.md", "# A\n");

	cr_assert_eq(fake_provider_count(fp), 2);
	req = fake_provider_request(fp, 0);
	cr_expect_str_eq(req->path, "/v1/messages");
	cr_expect_str_eq(req->api_key ? req->api_key : "(none)", TEST_KEY);
	cr_expect_str_eq(req->version ? req->version : "(none)", "2023-06-01");
	cr_expect_null(req->authorization);
	body = request_body(fp, 0);
	cr_expect_str_eq(json_get_string(body, "model"), "fake-model");
	cr_expect_eq(member(body, "max_tokens")->valueint, 16384);	/* a model the table does not know */
	cr_expect(cJSON_IsTrue(member(body, "stream")));
	cr_expect(strstr(json_get_string(cJSON_GetArrayItem(member(body, "system"), 0), "text"),
	    a.ws) != NULL);
	cr_expect_not_null(member(cJSON_GetArrayItem(member(body, "tools"), 2), "input_schema"));
	/* Prompt caching: the system prompt, the last tool, the last message's last block. */
	cr_expect_str_eq(json_get_string(member(cJSON_GetArrayItem(member(body, "system"), 0),
	    "cache_control"), "type"), "ephemeral");
	cr_expect_str_eq(json_get_string(member(cJSON_GetArrayItem(member(body, "tools"),
	    cJSON_GetArraySize(member(body, "tools")) - 1), "cache_control"), "type"), "ephemeral");
	cr_expect_null(member(cJSON_GetArrayItem(member(body, "tools"), 0), "cache_control"));
	m = cJSON_GetArrayItem(member(body, "messages"), 2);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(member(m, "content"), 0), "text"),
	    "Write a short report and save it.");
	cr_expect_str_eq(json_get_string(member(cJSON_GetArrayItem(member(m, "content"), 0),
	    "cache_control"), "type"), "ephemeral");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(member(body, "messages"), 0), "content"),
	    "An earlier question", "only the last message is a cache breakpoint");
	cJSON_Delete(body);

	body = request_body(fp, 1);
	msgs = member(body, "messages");
	cr_assert_eq(cJSON_GetArraySize(msgs), 5);
	m = cJSON_GetArrayItem(msgs, 3);
	cr_expect_str_eq(json_get_string(m, "role"), "assistant");
	block = cJSON_GetArrayItem(member(m, "content"), 0);
	cr_expect_str_eq(json_get_string(block, "type"), "text");
	block = cJSON_GetArrayItem(member(m, "content"), 1);
	cr_expect_str_eq(json_get_string(block, "type"), "tool_use");
	cr_expect_str_eq(json_get_string(block, "id"), "toolu_01");
	cr_expect_str_eq(json_get_string(member(block, "input"), "path"), "a.md");
	m = cJSON_GetArrayItem(msgs, 4);
	cr_expect_str_eq(json_get_string(m, "role"), "user");
	block = cJSON_GetArrayItem(member(m, "content"), 0);
	cr_expect_str_eq(json_get_string(block, "type"), "tool_result");
	cr_expect_str_eq(json_get_string(block, "tool_use_id"), "toolu_01");
	cr_expect_str_eq(json_get_string(member(block, "cache_control"), "type"), "ephemeral");
	cr_expect_null(member(cJSON_GetArrayItem(member(cJSON_GetArrayItem(msgs, 3), "content"), 1),
	    "cache_control"), "the earlier breakpoint moved on");
	cJSON_Delete(body);
	expect_no_key(&a);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&two);
}

Test(agent, anthropic_errors)
{
	struct buf b;

	provider_expect_failure("anthropic", 401, "application/json",
	    "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
	    "\"message\":\"invalid x-api-key " TEST_KEY "\"}}",
	    TEST_KEY, "provider_error", "invalid x-api-key");
	provider_expect_failure("anthropic", 400, "application/json",
	    "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
	    "\"message\":\"messages: roles must alternate\"}}",
	    NULL, "provider_error", "roles must alternate");
	provider_expect_failure("anthropic", 404, "application/json",
	    "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\","
	    "\"message\":\"model: fake-model\"}}", NULL, "provider_error", "model: fake-model");

	buf_init(&b, 0);
	fake_anthropic_text_block(&b, 0, "no message_start");
	provider_expect_failure("anthropic", 200, "text/event-stream", b.data, NULL,
	    "invalid_provider_response", "message_start");
	buf_reset(&b);
	fake_anthropic_start(&b, 10);
	fake_anthropic_tool_block(&b, 0, "toolu_x", "read_file", "{\"path\": [", 2);
	fake_anthropic_stop(&b, "tool_use", 3);
	provider_expect_failure("anthropic", 200, "text/event-stream", b.data, NULL,
	    "invalid_provider_response", "not a JSON object");
	buf_free(&b);
}

/* Provider errors that waiting can fix: retried with backoff (docs/agent.md). */

/* The i-th "retrying" progress line of a. */
static cJSON *
retry_line(const struct agent *a, int i)
{
	return find_line(a, "progress", "phase", "retrying", i);
}

static long
num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

/* A text-only OpenAI answer. */
static void
openai_answer(struct buf *b, const char *text)
{
	buf_init(b, 0);
	fake_openai_text(b, text);
	fake_openai_delta(b, "{}", "stop");
	fake_openai_usage(b, 10, 2);
	fake_openai_done(b);
}

Test(agent, openai_429_waits_as_retry_after_says_then_completes)
{
	struct buf err, ok;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *r;
	int64_t t0 = clock_mono_ms();

	buf_init(&err, 0);
	fake_openai_error(&err, "requests", "rate_limit_exceeded", "Rate limit reached for "
	    "fake-model in organization org-x on tokens per min (TPM): Limit 30000, Used 29846, "
	    "Requested 1200. Please try again in 1s.");
	openai_answer(&ok, "Done after the wait.");
	replies[0] = (struct fake_reply){ 429, "application/json", err.data, 0, 0,
	    "Retry-After: 1\nx-ratelimit-remaining-tokens: 0\n", 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", ok.data, 9, 0, NULL, 0 };
	provider_run_completes(&a, "openai", replies, 2, TEST_KEY, &fp, "Done after the wait.");
	cr_expect_eq(fake_provider_count(fp), 2);
	cr_expect_geq(clock_mono_ms() - t0, 1000, "the agent did not wait the second asked for");
	r = retry_line(&a, 0);
	cr_assert_not_null(r, "no retrying progress line");
	cr_expect_str_eq(json_get_string(r, "reason"), "rate_limited");
	cr_expect_eq(num_of(r, "attempt"), 1);
	cr_expect_eq(num_of(r, "delayMs"), 1000);
	cr_expect_str_eq(json_get_string(r, "message"), "rate limited, retrying in 1 s (retry 1 of 6)");
	cr_expect_null(retry_line(&a, 1));
	/* The same request, asked again. */
	cr_expect_str_eq(fake_provider_request(fp, 0)->body, fake_provider_request(fp, 1)->body);
	expect_no_key(&a);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&err);
	buf_free(&ok);
}

Test(agent, anthropic_529_and_overloaded_in_the_stream_are_retried)
{
	struct buf e529, broken, ok, ev;
	struct fake_reply replies[3];
	struct fake_provider *fp;
	struct agent a;
	cJSON *finish;

	buf_init(&e529, 0);
	fake_anthropic_error(&e529, "overloaded_error", "Overloaded");
	buf_init(&ev, 0);
	fake_anthropic_error(&ev, "overloaded_error", "Overloaded");
	buf_init(&broken, 0);
	fake_anthropic_start(&broken, 40);
	fake_anthropic_text_block(&broken, 0, "Partial");
	fake_anthropic_event(&broken, "error", ev.data);
	buf_init(&ok, 0);
	fake_anthropic_start(&ok, 40);
	fake_anthropic_text_block(&ok, 0, "Partial answer, whole.");
	fake_anthropic_stop(&ok, "end_turn", 6);
	replies[0] = (struct fake_reply){ 529, "application/json", e529.data, 0, 0,
	    "retry-after-ms: 30\n", 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", broken.data, 13, 0, NULL, 0 };
	replies[2] = (struct fake_reply){ 200, "text/event-stream", ok.data, 13, 0, NULL, 0 };
	/* The text the broken stream showed is not shown twice. */
	finish = provider_run_completes(&a, "anthropic", replies, 3, TEST_KEY, &fp,
	    "Partial answer, whole.");
	cr_expect_eq(fake_provider_count(fp), 3);
	cr_expect_str_eq(json_get_string(retry_line(&a, 0), "reason"), "overloaded");
	cr_expect_eq(num_of(retry_line(&a, 0), "delayMs"), 30);
	cr_expect_str_eq(json_get_string(retry_line(&a, 1), "reason"), "overloaded");
	cr_expect_eq(num_of(retry_line(&a, 1), "attempt"), 2);
	/* No retry-after: a backoff of half to all of 2 s. */
	cr_expect(num_of(retry_line(&a, 1), "delayMs") >= 1000 &&
	    num_of(retry_line(&a, 1), "delayMs") <= 2000, "%ld", num_of(retry_line(&a, 1), "delayMs"));
	/* The tokens of every attempt are counted. */
	cr_expect_eq(usage_of(finish, "inputTokens"), 80);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&e529);
	buf_free(&ev);
	buf_free(&broken);
	buf_free(&ok);
}

Test(agent, openai_503_and_a_reset_mid_stream_are_retried_without_running_the_cut_turn)
{
	struct buf e503, broken, ok;
	struct fake_reply replies[3];
	struct fake_provider *fp;
	struct agent a;
	size_t cut;
	const char *out;
	char *cut_file;

	buf_init(&e503, 0);
	fake_openai_error(&e503, "server_error", NULL, "The server is temporarily unavailable.");
	buf_init(&broken, 0);
	fake_openai_text(&broken, "Hello ");
	fake_openai_text(&broken, "there, ");
	cut = broken.len;
	fake_openai_text(&broken, "I will write it.");
	fake_openai_tool_call(&broken, 0, "call_1", "write_file",
	    "{\"path\": \"cut.txt\", \"content\": \"x\"}", 5);
	fake_openai_delta(&broken, "{}", "tool_calls");
	fake_openai_done(&broken);
	openai_answer(&ok, "Hello world.");
	replies[0] = (struct fake_reply){ 503, "application/json", e503.data, 0, 0,
	    "retry-after-ms: 20\n", 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", broken.data, 40, 20000, NULL,
	    cut + 10 };
	replies[2] = (struct fake_reply){ 200, "text/event-stream", ok.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 3);
	cr_assert_not_null(fp);
	agent_init(&a);
	agent_spawn(&a, http_start(&a, "openai", fp, NULL));
	out = json_get_string(agent_finish(&a, 15000), "output");
	cr_assert_eq(fake_provider_count(fp), 3);
	cr_expect_str_eq(json_get_string(retry_line(&a, 0), "reason"), "server_error");
	cr_expect_str_eq(json_get_string(retry_line(&a, 1), "reason"), "connection");
	cr_expect(strstr(json_get_string(retry_line(&a, 1), "message"),
	    "the connection to the provider failed, retrying in") != NULL);
	/* The broken answer shows as far as it came, then the new one from its start. */
	cr_expect_str_eq(out, "Hello there, \n\n[the answer was interrupted; the model answers "
	    "again]\n\nHello world.");
	/* Its tool call never ran. */
	cut_file = ws_file(&a, "cut.txt");
	cr_expect_null(cut_file, "the cut turn's write_file ran");
	free(cut_file);
	cr_expect_eq(count_lines(&a, "tool", NULL, NULL), 0);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&e503);
	buf_free(&broken);
	buf_free(&ok);
}

Test(agent, retries_are_bounded_by_count_and_total_wait)
{
	struct buf e500, e429;
	struct fake_reply replies[3];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish;

	/* maxRetries 2: three requests, then the provider's error with a note. */
	buf_init(&e500, 0);
	fake_openai_error(&e500, "server_error", NULL, "The server had an error while "
	    "processing your request.");
	for (int i = 0; i < 3; i++)
		replies[i] = (struct fake_reply){ 500, "application/json", e500.data, 0, 0,
		    "retry-after-ms: 10\n", 0 };
	fp = fake_provider_start(replies, 3);
	agent_init(&a);
	start = http_start(&a, "openai", fp, NULL);
	cJSON_AddNumberToObject(member(start, "provider"), "maxRetries", 2);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 15000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "provider_error");
	cr_expect(strstr(finish_message(finish), "HTTP 500: The server had an error") != NULL &&
	    strstr(finish_message(finish), "gave up after 2 retries") != NULL, "%s",
	    finish_message(finish));
	cr_expect_eq(fake_provider_count(fp), 3);
	cr_expect_eq(count_lines(&a, "progress", "phase", "retrying"), 2);
	agent_cleanup(&a);
	fake_provider_stop(fp);

	/* A Retry-After past maxRetryWaitMs: no wait at all, the run fails at once. */
	buf_init(&e429, 0);
	fake_openai_error(&e429, "requests", "rate_limit_exceeded", "Rate limit reached");
	replies[0] = (struct fake_reply){ 429, "application/json", e429.data, 0, 0,
	    "Retry-After: 120\n", 0 };
	fp = fake_provider_start(replies, 1);
	agent_init(&a);
	start = http_start(&a, "openai", fp, NULL);
	cJSON_AddNumberToObject(member(start, "provider"), "maxRetryWaitMs", 5000);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 5000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect(strstr(finish_message(finish), "a wait of 120 s more would pass the retry "
	    "limit of 5 s") != NULL, "%s", finish_message(finish));
	cr_expect_eq(fake_provider_count(fp), 1);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&e500);
	buf_free(&e429);
}

Test(agent, cancel_ends_a_retry_wait_at_once)
{
	struct buf e429;
	struct fake_reply reply;
	struct fake_provider *fp;
	struct agent a;
	cJSON *msg, *cancel, *finish;
	int64_t sent;

	buf_init(&e429, 0);
	fake_openai_error(&e429, "requests", "rate_limit_exceeded", "Rate limit reached");
	/* An HTTP date a minute ahead: Retry-After's other form. */
	{
		static char hdr[128];
		time_t when = time(NULL) + 60;
		struct tm tm;

		gmtime_r(&when, &tm);
		strftime(hdr, sizeof hdr, "Retry-After: %a, %d %b %Y %H:%M:%S GMT\n", &tm);
		reply = (struct fake_reply){ 429, "application/json", e429.data, 0, 0, hdr, 0 };
	}
	fp = fake_provider_start(&reply, 1);
	agent_init(&a);
	agent_spawn(&a, http_start(&a, "openai", fp, NULL));
	while ((msg = agent_line(&a, 5000)) != NULL &&
	    !(strcmp(json_get_string(msg, "type"), "progress") == 0 &&
	    strcmp(json_get_string(msg, "phase"), "retrying") == 0))
		;
	cr_assert_not_null(msg, "no retrying line");
	/* A minute ahead, less what the header's whole seconds and a slow machine take. */
	cr_expect(num_of(msg, "delayMs") > 30000 && num_of(msg, "delayMs") <= 60000, "%ld",
	    num_of(msg, "delayMs"));
	cancel = cJSON_CreateObject();
	cJSON_AddStringToObject(cancel, "type", "cancel");
	sent = clock_mono_ms();
	agent_send(&a, cancel);
	finish = agent_finish(&a, 30000);
	/* Half the minute of the retry's delay: the cancel ended the wait. */
	cr_expect_lt(clock_mono_ms() - sent, 30000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	cr_expect_eq(fake_provider_count(fp), 1);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&e429);
}

/* Context management (docs/agent.md, Context): compaction under a small window. */

/* An OpenAI answer that calls read_file on path, with prompt_tokens as usage. */
static void
openai_read_call(struct buf *b, const char *id, const char *path, int prompt_tokens)
{
	char args[128];

	buf_init(b, 0);
	snprintf(args, sizeof args, "{\"path\": \"%s\"}", path);
	fake_openai_tool_call(b, 0, id, "read_file", args, 64);
	fake_openai_delta(b, "{}", "tool_calls");
	fake_openai_usage(b, prompt_tokens, 10);
	fake_openai_done(b);
}

/* Writes n bytes of c into the workspace file rel of a. */
static void
ws_fill(const struct agent *a, const char *rel, char c, size_t n)
{
	char path[512], *text = xmalloc(n + 1);

	memset(text, c, n);
	text[n] = '\0';
	snprintf(path, sizeof path, "%s/%s", a->ws, rel);
	write_file(path, text);
	free(text);
}

/* The concatenated contents of request i's messages. */
static char *
request_text(struct fake_provider *fp, size_t i)
{
	return xstrdup(fake_provider_request(fp, i)->body);
}

/*
 * Two reads of 6,000 bytes under a window of 4,000 tokens, set in the start
 * line (from "settings") or said by Ollama's /api/show (from "provider").
 */
static void
small_window_run(bool from_provider)
{
	struct buf one, two, sum, fin;
	struct fake_reply replies[4];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish, *body, *msgs, *cp = NULL, *l;
	char *text;
	const char *task;

	openai_read_call(&one, "call_a", "a.txt", 400);
	/* About 0.25 tokens a byte: the next request would not fit 4,000 tokens. */
	openai_read_call(&two, "call_b", "b.txt", 3000);
	openai_answer(&sum, "SUMMARY: a.txt holds 6000 letters a; b.txt is being read.");
	openai_answer(&fin, "Both files read.");
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", two.data, 0, 0, NULL, 0 };
	replies[2] = (struct fake_reply){ 200, "text/event-stream", sum.data, 0, 0, NULL, 0 };
	replies[3] = (struct fake_reply){ 200, "text/event-stream", fin.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 4);
	cr_assert_not_null(fp);
	agent_init(&a);
	ws_fill(&a, "a.txt", 'a', 6000);
	ws_fill(&a, "b.txt", 'b', 6000);
	start = http_start(&a, "openai", fp, NULL);
	if (from_provider)
		fake_provider_info(fp, "/api/version", "{\"version\":\"0.20.0\"}");
	if (from_provider)
		fake_provider_info(fp, "/api/show", "{\"license\":\"…\",\"parameters\":"
		    "\"num_ctx                        4000\\nstop \\\"<|eot_id|>\\\"\","
		    "\"model_info\":{\"general.architecture\":\"llama\","
		    "\"llama.context_length\":131072}}");
	else
		cJSON_AddNumberToObject(member(start, "provider"), "contextWindow", 4000);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	/* The summary is not part of the run's output. */
	cr_expect_str_eq(json_get_string(finish, "output"), "Both files read.");
	cr_assert_eq(fake_provider_count(fp), 4);
	l = find_line(&a, "progress", "phase", "compacting", 0);
	cr_assert_not_null(l, "no compacting progress line");
	cr_expect(strstr(json_get_string(l, "message"), from_provider ? "4000 tokens, provider" :
	    "4000 tokens, settings") != NULL, "%s", json_get_string(l, "message"));
	cr_expect_eq(fake_provider_info_asked(fp, "/api/show"), from_provider ? 1 : 0);
	cr_expect_eq(fake_provider_info_hits(fp, "/api/show"), from_provider ? 1 : 0);
	if (!from_provider)
		cr_expect_eq(fake_provider_info_count(fp), 0);

	/* Request 2 asks for the summary: no tools, the older turns as text. */
	body = request_body(fp, 2);
	cr_expect_null(member(body, "tools"));
	text = cJSON_PrintUnformatted(member(body, "messages"));
	cr_expect(strstr(text, "An earlier question") != NULL, "the history is not summarized");
	cr_expect(strstr(text, "aaaaaaaaaa") != NULL, "a.txt's result is not summarized");
	cr_expect(strstr(text, "bbbbbbbbbb") == NULL, "the recent turn was summarized");
	free(text);
	cJSON_Delete(body);

	/* Request 3: system prompt, task with the summary, then the recent turn. */
	body = request_body(fp, 3);
	msgs = member(body, "messages");
	cr_assert_eq(cJSON_GetArraySize(msgs), 4, "%s", cJSON_PrintUnformatted(msgs));
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 0), "role"), "system");
	task = json_get_string(cJSON_GetArrayItem(msgs, 1), "content");
	cr_expect(strncmp(task, "Write a short report and save it.", 33) == 0, "%s", task);
	cr_expect(strstr(task, "SUMMARY: a.txt holds 6000 letters a") != NULL, "%s", task);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(member(cJSON_GetArrayItem(msgs, 2),
	    "tool_calls"), 0), "id"), "call_b");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(msgs, 3), "tool_call_id"), "call_b");
	cJSON_Delete(body);
	text = request_text(fp, 3);
	cr_expect(strstr(text, "aaaaaaaaaa") == NULL, "a.txt's content is still sent");
	cr_expect(strstr(text, "An earlier answer") == NULL, "the history is still sent");
	free(text);

	/* The checkpoint holds the compacted conversation: from 0, three messages. */
	cJSON_ArrayForEach(l, a.lines) {
		cJSON *c = member(l, "checkpoint");

		if (strcmp(json_get_string(l, "type"), "checkpoint") == 0 &&
		    member(c, "from")->valuedouble == 0 && cp == NULL &&
		    find_line(&a, "progress", "phase", "compacting", 0) != NULL &&
		    cJSON_GetArraySize(member(c, "append")) == 3)
			cp = c;
	}
	cr_expect_not_null(cp, "no checkpoint of the compacted conversation");
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&two);
	buf_free(&sum);
	buf_free(&fin);
}

Test(agent, a_small_context_window_summarizes_the_older_turns)
{
	small_window_run(false);
}

Test(agent, ollama_says_the_context_window)
{
	small_window_run(true);
}

Test(agent, anthropic_models_api_says_the_context_window)
{
	struct buf ok;
	struct fake_reply reply;
	struct fake_provider *fp;
	struct agent a;
	char *log;

	buf_init(&ok, 0);
	fake_anthropic_start(&ok, 20);
	fake_anthropic_text_block(&ok, 0, "Hello.");
	fake_anthropic_stop(&ok, "end_turn", 2);
	reply = (struct fake_reply){ 200, "text/event-stream", ok.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(&reply, 1);
	fake_provider_info(fp, "/v1/models/fake-model", "{\"type\":\"model\",\"id\":"
	    "\"fake-model\",\"display_name\":\"Fake\",\"created_at\":\"2025-05-14T00:00:00Z\","
	    "\"max_input_tokens\":150000,\"max_tokens\":64000}");
	agent_init(&a);
	agent_spawn(&a, http_start(&a, "anthropic", fp, TEST_KEY));
	cr_expect_str_eq(json_get_string(agent_finish(&a, 15000), "output"), "Hello.");
	cr_expect_eq(fake_provider_info_count(fp), 1);
	cr_expect_eq(fake_provider_count(fp), 1);
	log = harness_slurp(a.err_path, NULL);
	cr_expect(log != NULL && strstr(log, "a context window of 150000 tokens") != NULL, "%s", log);
	free(log);
	expect_no_key(&a);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&ok);
}

Test(agent, a_context_length_error_compacts_and_asks_again)
{
	struct buf one, err, sum, fin;
	struct fake_reply replies[4];
	struct fake_provider *fp;
	struct agent a;
	cJSON *finish;
	char *text;

	openai_read_call(&one, "call_a", "a.txt", 100);
	buf_init(&err, 0);
	fake_openai_error(&err, "invalid_request_error", "context_length_exceeded",
	    "This model's maximum context length is 8192 tokens. However, your messages "
	    "resulted in 9000 tokens. Please reduce the length of the messages.");
	openai_answer(&sum, "SUMMARY: an earlier question was answered.");
	openai_answer(&fin, "Done.");
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 400, "application/json", err.data, 0, 0, NULL, 0 };
	replies[2] = (struct fake_reply){ 200, "text/event-stream", sum.data, 0, 0, NULL, 0 };
	replies[3] = (struct fake_reply){ 200, "text/event-stream", fin.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 4);
	agent_init(&a);
	ws_fill(&a, "a.txt", 'a', 100);
	agent_spawn(&a, http_start(&a, "openai", fp, NULL));
	finish = agent_finish(&a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_str_eq(json_get_string(finish, "output"), "Done.");
	cr_assert_eq(fake_provider_count(fp), 4);
	cr_expect_not_null(find_line(&a, "progress", "phase", "compacting", 0));
	cr_expect_eq(count_lines(&a, "progress", "phase", "retrying"), 0);
	/* The request asked again is request 1 with the history summarized. */
	text = request_text(fp, 3);
	cr_expect(strstr(text, "SUMMARY: an earlier question") != NULL, "%s", text);
	cr_expect(strstr(text, "An earlier answer") == NULL, "%s", text);
	cr_expect(strstr(text, "call_a") != NULL, "the recent turn is gone: %s", text);
	free(text);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&err);
	buf_free(&sum);
	buf_free(&fin);
}

/* A context-length error with nothing older to summarize fails at once, without a retry. */
Test(agent, a_context_length_error_with_nothing_to_summarize_fails)
{
	struct buf err;
	struct fake_reply reply;
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish;

	buf_init(&err, 0);
	fake_anthropic_error(&err, "invalid_request_error",
	    "prompt is too long: 208310 tokens > 200000 maximum");
	reply = (struct fake_reply){ 400, "application/json", err.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(&reply, 1);
	agent_init(&a);
	start = http_start(&a, "anthropic", fp, NULL);
	cJSON_ReplaceItemInObject(start, "history", cJSON_CreateArray());
	agent_spawn(&a, start);
	finish = agent_finish(&a, 15000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "provider_error");
	cr_expect(strstr(finish_message(finish), "prompt is too long") != NULL &&
	    strstr(finish_message(finish), "nothing older to summarize") != NULL, "%s",
	    finish_message(finish));
	cr_expect_eq(fake_provider_count(fp), 1);
	cr_expect_eq(count_lines(&a, "progress", "phase", "retrying"), 0);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&err);
}

/* Windows smaller than assumed, told by the server (docs/agent.md, Context windows). */

/* A 20 KiB file of numbered lines in a's workspace. */
static void
ws_lines(const struct agent *a, const char *rel, size_t bytes)
{
	char path[512];
	struct buf b;

	buf_init(&b, 0);
	for (int i = 1; b.len < bytes; i++)
		buf_printf(&b, "line %05d of the big file, with some text to read\n", i);
	snprintf(path, sizeof path, "%s/%s", a->ws, rel);
	write_file(path, b.data);
	buf_free(&b);
}

/* The content of the tool message of request i's messages, or "". */
static char *
request_tool_result(struct fake_provider *fp, size_t i)
{
	cJSON *body = request_body(fp, i), *m;
	char *out = NULL;

	cJSON_ArrayForEach(m, member(body, "messages")) {
		if (strcmp(json_get_string(m, "role"), "tool") == 0) {
			free(out);
			out = xstrdup(json_get_string(m, "content"));
		}
	}
	cJSON_Delete(body);
	return out ? out : xstrdup("");
}

static bool
agent_log_has(const struct agent *a, const char *text)
{
	char *log = harness_slurp(a->err_path, NULL);
	bool has = log != NULL && strstr(log, text) != NULL;

	free(log);
	return has;
}

/* What llama.cpp, vLLM (old and new) and LM Studio answer to a prompt larger than their window. */
static const struct {
	const char *server;
	const char *body;
} too_long[] = {
	{ "llama.cpp", "{\"error\":{\"code\":400,\"message\":\"request (14000 tokens) exceeds the "
	  "available context size (12000 tokens), try increasing it\",\"type\":"
	  "\"exceed_context_size_error\",\"n_prompt_tokens\":14000,\"n_ctx\":12000}}" },
	{ "vLLM", "{\"error\":{\"message\":\"This model's maximum context length is 12000 tokens. "
	  "However, your request has 14000 input tokens. Please reduce the length of the input "
	  "messages. None\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}" },
	{ "vLLM 0.6", "{\"object\":\"error\",\"message\":\"This model's maximum context length is "
	  "12000 tokens. However, you requested 18096 tokens (14000 in the messages, 4096 in the "
	  "completion). Please reduce the length of the messages or completion.\",\"type\":"
	  "\"BadRequestError\",\"param\":null,\"code\":400}" },
	{ "LM Studio", "{\"error\":\"Trying to keep the first 14000 tokens when context the "
	  "overflows. However, the model is loaded with context length of only 12000 tokens, "
	  "which is not enough. Try to load the model with a larger context length, or provide a "
	  "shorter input\"}" },
};

/*
 * A 20 KiB read fits the 32,768 tokens assumed for an unknown model; the
 * server's window is 12,000 and it refuses: the run takes the window it
 * states, cuts the read to its share and asks again, and completes.
 */
Test(agent, a_server_that_states_a_smaller_window_gets_a_request_that_fits)
{
	for (size_t k = 0; k < sizeof too_long / sizeof *too_long; k++) {
		struct buf one, fin;
		struct fake_reply replies[3];
		struct fake_provider *fp;
		struct agent a;
		cJSON *finish;
		char *result;

		openai_read_call(&one, "call_a", "big.txt", 0);
		openai_answer(&fin, "Done.");
		replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
		replies[1] = (struct fake_reply){ 400, "application/json", (char *)too_long[k].body,
		    0, 0, NULL, 0 };
		replies[2] = (struct fake_reply){ 200, "text/event-stream", fin.data, 0, 0, NULL, 0 };
		fp = fake_provider_start(replies, 3);
		cr_assert_not_null(fp);
		agent_init(&a);
		ws_lines(&a, "big.txt", 20 * 1024);
		agent_spawn(&a, http_start(&a, "openai", fp, NULL));
		finish = agent_finish(&a, 15000);
		cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s: %s",
		    too_long[k].server, finish_message(finish));
		cr_expect_str_eq(json_get_string(finish, "output"), "Done.");
		cr_assert_eq(fake_provider_count(fp), 3, "%s", too_long[k].server);
		result = request_tool_result(fp, 1);
		cr_expect(strlen(result) > 18000, "%s: the first read was cut", too_long[k].server);
		free(result);
		result = request_tool_result(fp, 2);
		cr_expect(strlen(result) < 14000 && strstr(result, "line 00001 ") != NULL &&
		    strstr(result, "to fit the model's context window (12000 tokens)") != NULL &&
		    strstr(result, "read_file with offset and limit") != NULL, "%s: %zu bytes: %.200s",
		    too_long[k].server, strlen(result), result);
		free(result);
		cr_expect(agent_log_has(&a, "states a context window of 12000 tokens"), "%s",
		    too_long[k].server);
		cr_expect_eq(count_lines(&a, "progress", "phase", "retrying"), 0);
		agent_cleanup(&a);
		fake_provider_stop(fp);
		buf_free(&one);
		buf_free(&fin);
	}
}

/* What each server says about the window it runs a model with. */
static const struct {
	const char *server;
	const char *path;
	const char *json;
} says_window[] = {
	{ "llama.cpp", "/props", "{\"default_generation_settings\":{\"id\":0,\"id_task\":-1,"
	  "\"n_ctx\":12288,\"speculative\":false,\"is_processing\":false,\"params\":{\"n_predict\":"
	  "-1,\"temperature\":0.8}},\"total_slots\":1,\"model_path\":\"/models/fake.gguf\","
	  "\"chat_template\":\"\",\"build_info\":\"b6000-abcdef\"}" },
	{ "vLLM", "/v1/models", "{\"object\":\"list\",\"data\":[{\"id\":\"fake-model\",\"object\":"
	  "\"model\",\"created\":1730000000,\"owned_by\":\"vllm\",\"root\":\"fake-model\","
	  "\"parent\":null,\"max_model_len\":12288,\"permission\":[]}]}" },
	{ "LM Studio", "/api/v0/models/fake-model", "{\"id\":\"fake-model\",\"object\":\"model\","
	  "\"type\":\"llm\",\"publisher\":\"fake\",\"arch\":\"qwen2\",\"compatibility_type\":"
	  "\"gguf\",\"quantization\":\"Q4_K_M\",\"state\":\"loaded\",\"max_context_length\":"
	  "131072,\"loaded_context_length\":12288}" },
	{ "Ollama", "/api/ps", "{\"models\":[{\"name\":\"fake-model:latest\",\"model\":"
	  "\"fake-model:latest\",\"size\":6654289920,\"digest\":\"a2af6cc3eb7f\",\"details\":{"
	  "\"format\":\"gguf\",\"family\":\"llama\",\"parameter_size\":\"8.0B\","
	  "\"quantization_level\":\"Q4_K_M\"},\"expires_at\":\"2026-11-28T12:00:00Z\","
	  "\"size_vram\":6654289920,\"context_length\":12288}]}" },
};

Test(agent, each_local_server_says_its_window)
{
	for (size_t k = 0; k < sizeof says_window / sizeof *says_window; k++) {
		struct buf ok;
		struct fake_reply reply;
		struct fake_provider *fp;
		struct agent a;

		openai_answer(&ok, "Hello.");
		reply = (struct fake_reply){ 200, "text/event-stream", ok.data, 0, 0, NULL, 0 };
		fp = fake_provider_start(&reply, 1);
		cr_assert_not_null(fp);
		fake_provider_info(fp, says_window[k].path, says_window[k].json);
		/* Ollama says it is Ollama; only then is it asked Ollama's questions. */
		if (strcmp(says_window[k].server, "Ollama") == 0)
			fake_provider_info(fp, "/api/version", "{\"version\":\"0.20.0\"}");
		agent_init(&a);
		agent_spawn(&a, http_start(&a, "openai", fp, NULL));
		cr_expect_str_eq(json_get_string(agent_finish(&a, 15000), "output"), "Hello.");
		cr_expect_eq(fake_provider_info_hits(fp, says_window[k].path), 1, "%s",
		    says_window[k].server);
		if (strcmp(says_window[k].server, "Ollama") != 0)
			cr_expect_eq(fake_provider_info_asked(fp, "/api/ps") +
			    fake_provider_info_asked(fp, "/api/show"), 0, "%s", says_window[k].server);
		cr_expect(agent_log_has(&a, "gives fake-model a context window of 12288 tokens"),
		    "%s", says_window[k].server);
		agent_cleanup(&a);
		fake_provider_stop(fp);
		buf_free(&ok);
	}
}

/*
 * Ollama sizes a model's context when it loads it: before, /api/show gives
 * its default (4,096 when the model sets no num_ctx); once loaded, /api/ps
 * gives what it chose.  The run asks again after its first answer and does
 * not compact a conversation that fits.
 */
Test(agent, ollama_loaded_context_length_replaces_its_default)
{
	struct buf one, fin;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *finish;
	char *result;

	openai_read_call(&one, "call_a", "a.txt", 0);
	openai_answer(&fin, "Done.");
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", fin.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	fake_provider_info(fp, "/api/show", "{\"license\":\"…\",\"parameters\":\"stop \\\"<|eot_id|>"
	    "\\\"\",\"model_info\":{\"general.architecture\":\"llama\","
	    "\"llama.context_length\":131072}}");
	fake_provider_info_after(fp, "/api/ps", says_window[3].json, 1);
	fake_provider_info(fp, "/api/version", "{\"version\":\"0.20.0\"}");
	agent_init(&a);
	ws_fill(&a, "a.txt", 'a', 9000);
	agent_spawn(&a, http_start(&a, "openai", fp, NULL));
	finish = agent_finish(&a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_str_eq(json_get_string(finish, "output"), "Done.");
	cr_expect_eq(fake_provider_count(fp), 2);
	cr_expect_eq(fake_provider_info_hits(fp, "/api/show"), 1);
	cr_expect_eq(fake_provider_info_hits(fp, "/api/ps"), 1);
	cr_expect_null(find_line(&a, "progress", "phase", "compacting", 0));
	result = request_tool_result(fp, 1);
	cr_expect(strlen(result) == 9000, "the read was cut: %zu bytes", strlen(result));
	free(result);
	cr_expect(agent_log_has(&a, "loaded fake-model with a context window of 12288 tokens"));
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&fin);
}

/*
 * One read of 60 KiB under the 32,768 tokens assumed: the result is bounded
 * to its share of the window (a quarter) and says how to read on by lines.
 */
Test(agent, a_big_tool_result_is_bounded_to_its_share_of_the_window)
{
	struct buf one, fin;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *finish;
	char *result, *at;
	long next;

	openai_read_call(&one, "call_a", "big.txt", 0);
	openai_answer(&fin, "Done.");
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", fin.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	agent_init(&a);
	ws_lines(&a, "big.txt", 60 * 1024);
	agent_spawn(&a, http_start(&a, "openai", fp, NULL));
	finish = agent_finish(&a, 15000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_null(find_line(&a, "progress", "phase", "compacting", 0));
	result = request_tool_result(fp, 1);
	/* A quarter of 32,768 tokens at 3 bytes a token before any usage. */
	cr_expect(strlen(result) <= 8192 * 3 + 512, "%zu bytes", strlen(result));
	at = strstr(result, "read the rest by lines: read_file with offset=");
	cr_assert_not_null(at, "%s", result + (strlen(result) > 300 ? strlen(result) - 300 : 0));
	next = strtol(at + strlen("read the rest by lines: read_file with offset="), NULL, 10);
	/* The line it says to read from is the one the cut output ends in. */
	{
		char want[32];

		snprintf(want, sizeof want, "line %05ld ", next);
		cr_expect(strstr(result, want) != NULL, "line %ld is not the cut one", next);
		snprintf(want, sizeof want, "line %05ld ", next + 1);
		cr_expect(strstr(result, want) == NULL, "line %ld was shown", next + 1);
	}
	free(result);
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&fin);
}

/* A server that reads on forever: each request with tools asks for the next read; a summary else. */
static struct fake_reply
read_forever(void *ud, const char *body)
{
	cJSON *req = cJSON_Parse(body);
	struct buf b;
	int *n = ud;

	buf_init(&b, 0);
	if (cJSON_GetObjectItemCaseSensitive(req, "tools") == NULL) {
		fake_openai_text(&b, "SUMMARY: big.txt is being read.");
		fake_openai_delta(&b, "{}", "stop");
	} else {
		char id[32];

		snprintf(id, sizeof id, "call_%d", __atomic_fetch_add(n, 1, __ATOMIC_SEQ_CST));
		fake_openai_tool_call(&b, 0, id, "read_file", "{\"path\": \"big.txt\"}", 64);
		fake_openai_delta(&b, "{}", "tool_calls");
	}
	fake_openai_usage(&b, 0, 10);
	fake_openai_done(&b);
	cJSON_Delete(req);
	return (struct fake_reply){ .status = 200, .body = buf_steal(&b) };
}

/*
 * Each read fills what a summary leaves of a 6,000-token window: every
 * turn must compact first, which makes no progress; the run stops with
 * context_exhausted after four such turns instead of running to max_turns.
 */
Test(agent, compacting_before_every_turn_stops_with_context_exhausted)
{
	static int reads;
	struct fake_provider *fp = fake_provider_start_fn(read_forever, &reads);
	struct agent a;
	cJSON *start, *finish;

	cr_assert_not_null(fp);
	agent_init(&a);
	ws_lines(&a, "big.txt", 20 * 1024);
	start = http_start(&a, "openai", fp, NULL);
	cJSON_AddNumberToObject(member(start, "provider"), "contextWindow", 6000);
	cJSON_ReplaceItemInObject(member(start, "limits"), "maxTurns", cJSON_CreateNumber(50));
	agent_spawn(&a, start);
	finish = agent_finish(&a, 30000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "context_exhausted", "%s", finish_message(finish));
	cr_expect(strstr(finish_message(finish), "before each of the last 4 model turns") != NULL,
	    "%s", finish_message(finish));
	cr_expect_lt(__atomic_load_n(&reads, __ATOMIC_SEQ_CST), 10, "%d reads", reads);
	agent_cleanup(&a);
	fake_provider_stop(fp);
}

/*
 * A window too small for the system prompt and the tools: after summarizing
 * what there is, the request still does not fit, and the run stops at once
 * with context_exhausted instead of sending it.
 */
Test(agent, a_conversation_that_cannot_fit_stops_with_context_exhausted)
{
	struct buf sum;
	struct fake_reply reply;
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish;

	openai_answer(&sum, "SUMMARY: an earlier question was answered.");
	reply = (struct fake_reply){ 200, "text/event-stream", sum.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(&reply, 1);
	cr_assert_not_null(fp);
	agent_init(&a);
	start = http_start(&a, "openai", fp, NULL);
	cJSON_AddNumberToObject(member(start, "provider"), "contextWindow", 1024);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 15000);
	cr_expect_str_eq(json_get_string(finish, "status"), "failed");
	cr_expect_str_eq(finish_code(finish), "context_exhausted");
	cr_expect(strstr(finish_message(finish), "1024 tokens (settings)") != NULL, "%s",
	    finish_message(finish));
	cr_expect_eq(fake_provider_count(fp), 1, "only the summary was asked for");
	agent_cleanup(&a);
	fake_provider_stop(fp);
	buf_free(&sum);
}

/* Connectors (docs/connectors.md): MCP servers and the built-in web connector. */

static const char *
mcp_failserver(void)
{
	static char path[512];

	snprintf(path, sizeof path, "%s/tests/mcp-failserver", getenv("TD_BUILDDIR"));
	return path;
}

/* dist/index.js of server-everything in the test cache; skips without a cache. */
static const char *
mcp_everything(void)
{
	static char path[512];
	const char *cache = getenv("TD_CACHE");

	if (cache == NULL || *cache == '\0')
		cr_skip_test("TD_CACHE is not set: run ./quickstart check for the MCP servers");
	snprintf(path, sizeof path, "%s/npm/server-everything/node_modules/"
	    "@modelcontextprotocol/server-everything/dist/index.js", cache);
	cr_assert(exists(path), "%s is missing: run scripts/test-deps", path);
	return path;
}

/*
 * Adds a stdio connector to start; its servers carry TD_TEST_MARK=a->dir in
 * their environment so that the test can find any left behind.
 */
static cJSON *
add_stdio_connector(const struct agent *a, cJSON *start, const char *id, const char *name,
    const char *command, const char *const *args)
{
	cJSON *list = member(start, "connectors");
	cJSON *c = cJSON_CreateObject(), *t, *argv;

	if (list == NULL)
		list = cJSON_AddArrayToObject(start, "connectors");
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "name", name);
	cJSON_AddStringToObject(c, "kind", "custom");
	t = cJSON_AddObjectToObject(c, "transport");
	cJSON_AddStringToObject(t, "type", "stdio");
	cJSON_AddStringToObject(t, "command", command);
	argv = cJSON_AddArrayToObject(t, "args");
	for (; args != NULL && *args != NULL; args++)
		cJSON_AddItemToArray(argv, cJSON_CreateString(*args));
	cJSON_AddStringToObject(cJSON_AddObjectToObject(t, "env"), "TD_TEST_MARK", a->dir);
	cJSON_AddArrayToObject(c, "credentialBindings");
	cJSON_AddItemToArray(list, c);
	return c;
}

/* Live processes whose environment holds TD_TEST_MARK=a->dir. */
static int
marked_processes(const struct agent *a)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char mark[300];
	int n = 0;

	snprintf(mark, sizeof mark, "TD_TEST_MARK=%s", a->dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], *env;
		size_t len = 0;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
		if ((f = fopen(path, "rb")) == NULL)
			continue;
		env = xmalloc(1 << 20);
		len = fread(env, 1, (1 << 20) - 1, f);
		fclose(f);
		for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
			env[len] = '\0';
			if (strcmp(env + i, mark) == 0) {
				n++;
				break;
			}
		}
		free(env);
	}
	closedir(d);
	return n;
}

/*
 * A run of provider kind whose model calls tool with arguments (a tool of
 * server-everything over stdio), against a fake provider; the body of its second
 * request, parsed.  said (NULL: not wanted) gets the messages of its progress lines.
 */
static cJSON *
connector_call_request(const char *kind, const char *tool, const char *arguments,
    char *said, size_t saidlen)
{
	const char *const args[] = { mcp_everything(), "stdio", NULL };
	struct buf one, two;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish, *body;

	buf_init(&one, 0);
	buf_init(&two, 0);
	if (strcmp(kind, "anthropic") == 0) {
		fake_anthropic_start(&one, 100);
		fake_anthropic_tool_block(&one, 0, "toolu_img", tool, arguments, 2);
		fake_anthropic_stop(&one, "tool_use", 10);
		fake_anthropic_start(&two, 100);
		fake_anthropic_text_block(&two, 0, "A tiny logo.");
		fake_anthropic_stop(&two, "end_turn", 4);
	} else {
		fake_openai_tool_call(&one, 0, "call_img", tool, arguments, 2);
		fake_openai_delta(&one, "{}", "tool_calls");
		fake_openai_done(&one);
		fake_openai_text(&two, "A tiny logo.");
		fake_openai_delta(&two, "{}", "stop");
		fake_openai_done(&two);
	}
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", two.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	agent_init(&a);
	start = http_start(&a, kind, fp, TEST_KEY);
	add_stdio_connector(&a, start, "con_everything", "everything", "node", args);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 45000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s",
	    finish_message(finish));
	cr_assert_eq(fake_provider_count(fp), 2);
	body = request_body(fp, 1);
	cr_assert_not_null(body);
	fake_provider_stop(fp);
	/* What the progress lines said, one a line. */
	if (said != NULL) {
		cJSON *l;
		size_t n = 0;

		said[0] = '\0';
		for (int i = 0; (l = find_line(&a, "progress", NULL, NULL, i)) != NULL; i++)
			n += (size_t)snprintf(said + n, n < saidlen ? saidlen - n : 0, "%s\n",
			    json_get_string(l, "message") ? json_get_string(l, "message") : "");
	}
	agent_cleanup(&a);
	buf_free(&one);
	buf_free(&two);
	return body;
}

Test(agent, an_image_a_connector_returns_reaches_anthropic_as_an_image_block)
{
	cJSON *body = connector_call_request("anthropic", "everything__get-tiny-image", "{}",
	    NULL, 0), *msgs, *m, *b, *res = NULL, *img = NULL;
	char *text;

	msgs = member(body, "messages");
	cJSON_ArrayForEach(m, msgs)
		cJSON_ArrayForEach(b, member(m, "content"))
			if (cJSON_IsObject(b) && strcmp(json_get_string(b, "type"), "tool_result") == 0)
				res = b;
	text = cJSON_PrintUnformatted(body);
	cr_assert_not_null(res, "no tool_result: %.2000s", text);
	cr_assert(cJSON_IsArray(member(res, "content")), "the result is text only: %.2000s", text);
	cJSON_ArrayForEach(b, member(res, "content"))
		if (strcmp(json_get_string(b, "type"), "image") == 0)
			img = b;
	cr_assert_not_null(img, "no image block: %.2000s", text);
	cr_expect_str_eq(json_get_string(member(img, "source"), "type"), "base64");
	cr_expect_str_eq(json_get_string(member(img, "source"), "media_type"), "image/png");
	cr_expect(strncmp(json_get_string(member(img, "source"), "data"), "iVBORw0KGgo", 11) == 0);
	/* The text says what came, for a reader of the transcript. */
	cr_expect_not_null(strstr(json_get_string(cJSON_GetArrayItem(member(res, "content"), 0),
	    "text"), "[image image/png, "), "%.2000s", text);
	free(text);
	cJSON_Delete(body);
}

Test(agent, an_image_a_connector_returns_reaches_openai_in_a_user_message_after_the_result)
{
	cJSON *body = connector_call_request("openai", "everything__get-tiny-image", "{}",
	    NULL, 0), *msgs, *m, *tool = NULL, *after = NULL, *p;
	bool url = false;
	char *text = cJSON_PrintUnformatted(body);
	int i = 0, at = -1;

	msgs = member(body, "messages");
	cJSON_ArrayForEach(m, msgs) {
		if (strcmp(json_get_string(m, "role"), "tool") == 0) {
			tool = m;
			at = i;
		} else if (at >= 0 && i == at + 1) {
			after = m;
		}
		i++;
	}
	cr_assert_not_null(tool, "no tool message: %.2000s", text);
	cr_expect(cJSON_IsString(member(tool, "content")), "%.2000s", text);
	cr_expect_not_null(strstr(json_get_string(tool, "content"), "[image image/png, "));
	cr_assert_not_null(after, "nothing follows the tool message: %.2000s", text);
	cr_expect_str_eq(json_get_string(after, "role"), "user");
	cJSON_ArrayForEach(p, member(after, "content"))
		if (strcmp(json_get_string(p, "type"), "image_url") == 0 &&
		    strncmp(json_get_string(member(p, "image_url"), "url"),
		    "data:image/png;base64,iVBORw0KGgo", 33) == 0)
			url = true;
	cr_expect(url, "no image_url part: %.2000s", text);
	free(text);
	cJSON_Delete(body);
}

Test(agent, a_connector_s_progress_notifications_become_progress_lines)
{
	char said[8192];
	cJSON *body = connector_call_request("openai", "everything__trigger-long-running-operation",
	    "{\"duration\": 1, \"steps\": 3}", said, sizeof said);

	cr_expect_not_null(strstr(said, "everything: working (1 of 3)"), "%s", said);
	cr_expect_not_null(strstr(said, "everything: working (3 of 3)"), "%s", said);
	cJSON_Delete(body);
}

/* The content of the tool message in an OpenAI request body. */
static const char *
openai_tool_text(cJSON *body)
{
	cJSON *m;

	cJSON_ArrayForEach(m, member(body, "messages"))
		if (strcmp(json_get_string(m, "role"), "tool") == 0)
			return json_get_string(m, "content");
	return "";
}

Test(agent, a_servers_instructions_reach_the_model)
{
	cJSON *body = connector_call_request("openai", "everything__echo",
	    "{\"message\": \"hi\"}", NULL, 0);
	const cJSON *m;
	const char *system = "";

	cJSON_ArrayForEach(m, member(body, "messages"))
		if (strcmp(json_get_string(m, "role"), "system") == 0)
			system = json_get_string(m, "content");
	/* server-everything's instructions, on one line, under the server's name. */
	cr_expect_not_null(strstr(system, "What the connectors' servers say about using their "
	    "tools:\neverything: # Everything Server"), "%s", system);
	cr_expect_not_null(strstr(system, "Use `get-roots-list` to see client workspace roots"),
	    "%s", system);
	cr_expect_lt(strlen(system), 12000);
	cJSON_Delete(body);
}

Test(agent, an_embedded_blob_is_described_and_structured_content_given_once)
{
	cJSON *body = connector_call_request("openai", "everything__get-resource-reference",
	    "{\"resourceType\": \"Blob\", \"resourceId\": 2}", NULL, 0);
	const char *text = openai_tool_text(body);

	const char *said = strstr(text, "[resource demo://resource/dynamic/blob/2, text/plain, ");
	size_t bytes = 0;
	int used = 0;

	/*
	 * The blob is "Resource 2: This is a base64 blob created at " (45 bytes) and the
	 * server's toLocaleTimeString(), whose length follows the hour and the locale: the
	 * size is checked against that, not against one time of day.
	 */
	cr_assert_not_null(said, "%s", text);
	said += strlen("[resource demo://resource/dynamic/blob/2, text/plain, ");
	cr_assert_eq(sscanf(said, "%zu bytes of binary data, not shown]%n", &bytes, &used), 1,
	    "%s", text);
	cr_expect(used > 0, "%s", text);
	cr_expect(bytes > 45 && bytes <= 45 + 32, "%zu bytes: %s", bytes, text);
	cr_expect_null(strstr(text, "base64 blob created"), "the blob is shown: %s", text);
	cJSON_Delete(body);
	/* Its text already holds the JSON of structuredContent: not given twice. */
	body = connector_call_request("openai", "everything__get-structured-content",
	    "{\"location\": \"New York\"}", NULL, 0);
	text = openai_tool_text(body);
	cr_expect_not_null(strstr(text, "temperature"), "%s", text);
	cr_expect_null(strstr(strstr(text, "temperature") + 1, "temperature"), "given twice: %s",
	    text);
	cJSON_Delete(body);
}

/* true when the request body offers the tool name. */
static bool
offers_tool(cJSON *body, const char *name)
{
	cJSON *t;

	cJSON_ArrayForEach(t, member(body, "tools"))
		if (strcmp(json_get_string(member(t, "function"), "name"), name) == 0)
			return true;
	return false;
}

Test(agent, a_server_s_changed_tool_list_reaches_the_model_on_the_next_turn)
{
	char js[1024];
	struct buf one, two;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish, *body;

	mcp_everything();	/* node comes with the test dependencies */
	snprintf(js, sizeof js, "%s/tests/integration/mcp-changing-tools.mjs",
	    getenv("TD_SRCDIR") ? getenv("TD_SRCDIR") : "..");
	buf_init(&one, 0);
	buf_init(&two, 0);
	fake_openai_tool_call(&one, 0, "call_first", "changing__first", "{}", 2);
	fake_openai_delta(&one, "{}", "tool_calls");
	fake_openai_done(&one);
	fake_openai_text(&two, "Done.");
	fake_openai_delta(&two, "{}", "stop");
	fake_openai_done(&two);
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", two.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	agent_init(&a);
	start = http_start(&a, "openai", fp, TEST_KEY);
	add_stdio_connector(&a, start, "con_changing", "changing", "node",
	    (const char *const[]){ js, NULL });
	agent_spawn(&a, start);
	finish = agent_finish(&a, 30000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s",
	    finish_message(finish));
	body = request_body(fp, 0);
	cr_expect(offers_tool(body, "changing__first"));
	cr_expect(!offers_tool(body, "changing__second"));
	cJSON_Delete(body);
	body = request_body(fp, 1);
	cr_expect(offers_tool(body, "changing__first"));
	cr_expect(offers_tool(body, "changing__second"), "the new tool is not offered");
	cJSON_Delete(body);
	fake_provider_stop(fp);
	agent_cleanup(&a);
	buf_free(&one);
	buf_free(&two);
}

Test(agent, server_filesystem_writes_into_the_workspace_in_a_run)
{
	char fs[1024], call[512];
	const char *cache = getenv("TD_CACHE");
	struct buf one, two;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish, *body;
	const char *text;
	struct stat st;

	mcp_everything();	/* skips without the test cache */
	snprintf(fs, sizeof fs, "%s/npm/server-filesystem/node_modules/@modelcontextprotocol/"
	    "server-filesystem/dist/index.js", cache);
	cr_assert_eq(stat(fs, &st), 0, "%s is missing: run scripts/test-deps", fs);
	agent_init(&a);
	snprintf(call, sizeof call, "{\"path\": \"%s/fs-note.txt\", \"content\": "
	    "\"from server-filesystem\\n\"}", a.ws);
	buf_init(&one, 0);
	buf_init(&two, 0);
	fake_openai_tool_call(&one, 0, "call_fs", "filesystem__write_file", call, 7);
	fake_openai_delta(&one, "{}", "tool_calls");
	fake_openai_done(&one);
	fake_openai_text(&two, "Written.");
	fake_openai_delta(&two, "{}", "stop");
	fake_openai_done(&two);
	/* Slowly streamed (about a second): the server takes the roots it asked for meanwhile. */
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 32, 100000, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", two.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	start = http_start(&a, "openai", fp, TEST_KEY);
	add_stdio_connector(&a, start, "con_fs", "filesystem", "node",
	    (const char *const[]){ fs, a.ws, NULL });
	agent_spawn(&a, start);
	finish = agent_finish(&a, 45000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s",
	    finish_message(finish));
	cr_expect_str_eq(json_get_string(tool_end(&a, "filesystem__write_file", 0), "status"),
	    "completed");
	expect_ws_file(&a, "fs-note.txt", "from server-filesystem\n");
	body = request_body(fp, 1);
	text = openai_tool_text(body);
	cr_expect_not_null(strstr(text, "Successfully wrote to"), "%s", text);
	cJSON_Delete(body);
	fake_provider_stop(fp);
	cr_expect_eq(marked_processes(&a), 0, "a connector server outlived the run");
	agent_cleanup(&a);
	buf_free(&one);
	buf_free(&two);
}

Test(agent, server_filesystem_keeps_its_configured_directories_in_a_run)
{
	char fs[1024], other[1200], call[1400];
	const char *cache = getenv("TD_CACHE");
	struct buf zero, one, two, three;
	struct fake_reply replies[4];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish, *body, *con, *paths, *p, *m;
	const char *text;
	struct stat st;

	mcp_everything();	/* skips without the test cache */
	snprintf(fs, sizeof fs, "%s/npm/server-filesystem/node_modules/@modelcontextprotocol/"
	    "server-filesystem/dist/index.js", cache);
	cr_assert_eq(stat(fs, &st), 0, "%s is missing: run scripts/test-deps", fs);
	agent_init(&a);
	snprintf(other, sizeof other, "%s/notes", a.dir);
	cr_assert_eq(mkdir(other, 0700), 0);
	/*
	 * The server asks for the roots after the handshake and takes them on its
	 * own time (a realpath of each): a first call, slowly streamed, gives it
	 * time to; then a write into the workspace, then the list.
	 */
	snprintf(call, sizeof call, "{\"path\": \"%s/fs-note.txt\", \"content\": \"x\"}", a.ws);
	buf_init(&zero, 0);
	buf_init(&one, 0);
	buf_init(&two, 0);
	buf_init(&three, 0);
	fake_openai_tool_call(&zero, 0, "call_0", "filesystem__list_allowed_directories", "{}", 7);
	fake_openai_delta(&zero, "{}", "tool_calls");
	fake_openai_done(&zero);
	fake_openai_tool_call(&one, 0, "call_w", "filesystem__write_file", call, 7);
	fake_openai_delta(&one, "{}", "tool_calls");
	fake_openai_done(&one);
	fake_openai_tool_call(&two, 0, "call_fs", "filesystem__list_allowed_directories", "{}", 7);
	fake_openai_delta(&two, "{}", "tool_calls");
	fake_openai_done(&two);
	fake_openai_text(&three, "Listed.");
	fake_openai_delta(&three, "{}", "stop");
	fake_openai_done(&three);
	/* Its first answer comes slowly (about a second), for the roots to be taken meanwhile. */
	replies[0] = (struct fake_reply){ 200, "text/event-stream", zero.data, 32, 100000, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[2] = (struct fake_reply){ 200, "text/event-stream", two.data, 0, 0, NULL, 0 };
	replies[3] = (struct fake_reply){ 200, "text/event-stream", three.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 4);
	cr_assert_not_null(fp);
	start = http_start(&a, "openai", fp, TEST_KEY);
	/* Configured with a directory of the user's, which its settings give it. */
	con = add_stdio_connector(&a, start, "con_fs", "filesystem", "node",
	    (const char *const[]){ fs, other, NULL });
	paths = cJSON_AddArrayToObject(member(con, "transport"), "paths");
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "path", other);
	cJSON_AddBoolToObject(p, "write", false);
	cJSON_AddItemToArray(paths, p);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 45000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s",
	    finish_message(finish));
	expect_ws_file(&a, "fs-note.txt", "x");
	body = request_body(fp, 3);
	text = "";
	cJSON_ArrayForEach(m, member(body, "messages"))	/* the last tool message: the list */
		if (strcmp(json_get_string(m, "role"), "tool") == 0)
			text = json_get_string(m, "content");
	/* The workspace (a root) and the configured directory both. */
	cr_expect_not_null(strstr(text, other), "%s", text);
	cr_expect_not_null(strstr(text, a.ws), "%s", text);
	cJSON_Delete(body);
	fake_provider_stop(fp);
	agent_cleanup(&a);
	buf_free(&zero);
	buf_free(&one);
	buf_free(&two);
	buf_free(&three);
}

Test(agent, connector_tools_reach_a_real_mcp_server)
{
	const char *const args[] = { mcp_everything(), "stdio", NULL };
	struct agent a;
	cJSON *start, *finish, *echo, *sum;

	agent_init(&a);
	start = start_line(&a, "replay", "connector", "workspace-write");
	add_stdio_connector(&a, start, "con_everything", "everything", "node", args);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 45000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	echo = tool_end(&a, "everything__echo", 0);
	cr_assert_not_null(echo);
	cr_expect_str_eq(json_get_string(echo, "status"), "completed");
	/* The real server's answer. */
	cr_expect_str_eq(json_get_string(echo, "summary"), "echo on everything: Echo: hello from the replay");
	sum = tool_end(&a, "everything__get-sum", 0);
	cr_assert_not_null(sum);
	cr_expect_str_eq(json_get_string(sum, "status"), "completed");
	cr_expect(strstr(json_get_string(sum, "summary"), "5") != NULL, "%s", json_get_string(sum, "summary"));
	cr_expect_eq(count_lines(&a, "request", NULL, NULL), 0);
	cr_expect_eq(marked_processes(&a), 0, "a connector server outlived the run");
	agent_cleanup(&a);
}

Test(agent, a_connector_that_fails_to_start_does_not_fail_the_run)
{
	const char *const die[] = { "die", NULL };
	const char *const spawner[] = { "spawner", NULL };
	struct agent a;
	cJSON *start, *finish, *line;

	agent_init(&a);
	start = start_line(&a, "replay", "quick", "workspace-write");
	add_stdio_connector(&a, start, "con_broken", "broken", mcp_failserver(), die);
	add_stdio_connector(&a, start, "con_missing", "missing", "no-such-mcp-server", NULL);
	add_stdio_connector(&a, start, "con_fine", "fine", mcp_failserver(), spawner);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	line = tool_end(&a, "broken", 0);
	cr_assert_not_null(line);
	cr_expect_str_eq(json_get_string(line, "status"), "failed");
	cr_expect_str_eq(json_get_string(line, "summary"), "connector broken did not start: the server exited "
	    "during the handshake with status 3: fatal: cannot open the cheese database");
	line = tool_end(&a, "missing", 0);
	cr_assert_not_null(line);
	cr_expect(strstr(json_get_string(line, "summary"), "command not found") != NULL);
	cr_expect_null(tool_end(&a, "fine", 0), "a connector that started has no failure line");
	/* The spawner's sleeping grandchild went with its group. */
	cr_expect_eq(marked_processes(&a), 0, "a connector server outlived the run");
	agent_cleanup(&a);
}

static const char connector_profiles[] = "{\"turns\": [{\"toolCalls\": ["
    "{\"name\": \"fs__one\", \"arguments\": {\"text\": \"a\"}},"
    "{\"name\": \"fs__two\", \"arguments\": {\"text\": \"b\"}}"
    "]}, {\"text\": \"done\"}]}";

static void
run_connector_profile(struct agent *a, const char *profile, const char *permission)
{
	const char *const legacy[] = { "legacy", NULL };
	cJSON *start, *finish;

	agent_init(a);
	a->permission = permission;
	start = start_line(a, "replay", "x", profile);
	use_transcript(a, start, "connector-profiles", connector_profiles);
	add_stdio_connector(a, start, "con_fs", "fs", mcp_failserver(), legacy);
	agent_spawn(a, start);
	finish = agent_finish(a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_eq(marked_processes(a), 0);
}

Test(agent, read_only_runs_only_connector_tools_marked_read_only)
{
	struct agent a;

	run_connector_profile(&a, "read-only", "allow");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__one", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__one", 0), "summary"), "one on fs: one:a");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__two", 0), "status"), "denied");
	cr_expect(strstr(json_get_string(tool_end(&a, "fs__two", 0), "summary"), "read-only") != NULL);
	cr_expect_eq(count_lines(&a, "request", NULL, NULL), 0);
	agent_cleanup(&a);
}

Test(agent, ask_asks_before_every_connector_tool)
{
	struct agent a;
	cJSON *ask;

	run_connector_profile(&a, "ask", "allow");
	cr_expect_eq(count_lines(&a, "request", "method", "permission.ask"), 2);
	ask = find_line(&a, "request", "method", "permission.ask", 0);
	cr_assert_not_null(ask);
	cr_expect_str_eq(json_get_string(member(ask, "params"), "tool"), "fs__one");
	cr_expect_str_eq(json_get_string(member(member(ask, "params"), "input"), "text"), "a");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__one", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__two", 0), "status"), "completed");
	agent_cleanup(&a);
}

Test(agent, ask_deny_stops_a_connector_tool)
{
	struct agent a;

	run_connector_profile(&a, "ask", "deny");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__one", 0), "status"), "denied");
	cr_expect_str_eq(json_get_string(tool_end(&a, "fs__two", 0), "status"), "denied");
	agent_cleanup(&a);
}

static bool
contains(const char *hay, size_t len, const char *needle)
{
	return hay != NULL && memmem(hay, len, needle, strlen(needle)) != NULL;
}

Test(agent, credentials_reach_the_server_and_nothing_else)
{
	static const char secret[] = "sk-test-4f1d9a0c7e";
	static const char transcript[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"probe__env\", \"arguments\": {}}]}, {\"text\": \"done\"}]}";
	const char *const env[] = { "env", NULL };
	struct agent a;
	cJSON *start, *finish, *con, *b, *req;
	unsigned sum = 0;
	char want[128], *log;

	agent_init(&a);
	a.secret_con = "con_probe";
	a.secret_cred = "cred_probe";
	a.secret = secret;
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "probe", transcript);
	con = add_stdio_connector(&a, start, "con_probe", "probe", mcp_failserver(), env);
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "credentialId", "cred_probe");
	cJSON_AddStringToObject(b, "target", "env:TD_PROBE");
	cJSON_AddItemToArray(member(con, "credentialBindings"), b);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	req = find_line(&a, "request", "method", "secret.resolve", 0);
	cr_assert_not_null(req);
	cr_expect_str_eq(json_get_string(member(req, "params"), "connectorId"), "con_probe");
	cr_expect_str_eq(json_get_string(member(req, "params"), "credentialId"), "cred_probe");
	cr_expect_eq(count_lines(&a, "request", "method", "secret.resolve"), 1);
	/* The server got the value (its length and hash say so)... */
	for (const char *p = secret; *p; p++)
		sum = sum * 31 + (unsigned char)*p;
	snprintf(want, sizeof want, "env on probe: TD_PROBE: set, %zu bytes, hash %u",
	    strlen(secret), sum);
	cr_expect_str_eq(json_get_string(tool_end(&a, "probe__env", 0), "summary"), want);
	/* ... and it is nowhere the agent writes: its lines and its log. */
	cr_expect_not(contains(a.raw.data, a.raw.len, secret), "the secret is in a line");
	log = harness_slurp(a.err_path, NULL);
	cr_expect_not(contains(log, log ? strlen(log) : 0, secret), "the secret is in the log");
	free(log);
	agent_cleanup(&a);
}

Test(agent, an_unresolvable_credential_leaves_the_connector_out)
{
	const char *const env[] = { "env", NULL };
	struct agent a;
	cJSON *start, *finish, *con, *b, *line;

	agent_init(&a);
	start = start_line(&a, "replay", "quick", "workspace-write");
	con = add_stdio_connector(&a, start, "con_probe", "probe", mcp_failserver(), env);
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "credentialId", "cred_gone");
	cJSON_AddStringToObject(b, "target", "env:TD_PROBE");
	cJSON_AddItemToArray(member(con, "credentialBindings"), b);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	line = tool_end(&a, "probe", 0);
	cr_assert_not_null(line);
	cr_expect_str_eq(json_get_string(line, "status"), "failed");
	cr_expect(strstr(json_get_string(line, "summary"), "cred_gone could not be resolved") != NULL, "%s",
	    json_get_string(line, "summary"));
	cr_expect_eq(marked_processes(&a), 0, "the server started without its credential");
	agent_cleanup(&a);
}

Test(agent, cancel_during_a_connector_call_ends_the_server)
{
	static const char transcript[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"slow__one\", \"arguments\": {}}]}, {\"text\": \"done\"}]}";
	const char *const slowcall[] = { "slowcall", NULL };
	struct agent a;
	cJSON *start, *finish, *msg;
	int64_t t0;

	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "slow", transcript);
	add_stdio_connector(&a, start, "con_slow", "slow", mcp_failserver(), slowcall);
	agent_spawn(&a, start);
	/* The server never answers the call: cancel while the agent waits for it. */
	while ((msg = agent_line(&a, 10000)) != NULL &&
	    !(strcmp(json_get_string(msg, "type"), "tool") == 0 && strcmp(json_get_string(msg, "status"), "started") == 0))
		;
	cr_assert_not_null(msg, "the call did not start");
	usleep(200000);
	t0 = clock_mono_ms();
	agent_send(&a, cJSON_Parse("{\"type\":\"cancel\"}"));
	finish = agent_finish(&a, 10000);
	cr_expect_str_eq(json_get_string(finish, "status"), "cancelled");
	cr_expect_lt(clock_mono_ms() - t0, 5000, "the cancel waited for the server");
	cr_expect_eq(marked_processes(&a), 0, "the server outlived the cancelled run");
	agent_cleanup(&a);
}

/* A one-page HTTP server (node) on a free port; returns its pid. */
static pid_t
web_server(int *port, const char *body)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	char script[512];
	pid_t pid;

	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	close(fd);
	snprintf(script, sizeof script, "require('http').createServer((q,s)=>{s.setHeader("
	    "'Content-Type','text/plain');s.end(q.url==='/page'?%s:'nope')})"
	    ".listen(%d,'127.0.0.1')", body, *port);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execlp("node", "node", "-e", script, (char *)NULL);
		_exit(127);
	}
	return pid;
}

Test(agent, builtin_web_connector_fetches_a_url)
{
	struct agent a;
	cJSON *start, *finish, *con;
	char transcript[1024];
	int port;
	pid_t server;

	mcp_everything();	/* node comes with the test dependencies */
	server = web_server(&port, "'hello from the web server'");
	snprintf(transcript, sizeof transcript, "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"web__fetch_url\", \"arguments\": {\"url\": \"http://127.0.0.1:%d/page\"}},"
	    "{\"name\": \"web__fetch_url\", \"arguments\": {\"url\": \"file:///etc/passwd\"}}"
	    "]}, {\"text\": \"done\"}]}", port);
	for (int i = 0; i < 200; i++) {	/* node takes a moment to listen */
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		bool up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;

		close(fd);
		if (up)
			break;
		usleep(50000);
	}
	agent_init(&a);
	start = start_line(&a, "replay", "x", "read-only");
	use_transcript(&a, start, "web", transcript);
	con = cJSON_CreateObject();
	cJSON_AddStringToObject(con, "id", "con_web");
	cJSON_AddStringToObject(con, "name", "web");
	cJSON_AddStringToObject(con, "kind", "builtin");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(start, "connectors"), con);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	/* fetch_url is read-only: it runs under read-only. */
	cr_expect_str_eq(json_get_string(tool_end(&a, "web__fetch_url", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, "web__fetch_url", 0), "summary"), "HTTP 200, 25 bytes");
	cr_expect_str_eq(json_get_string(tool_end(&a, "web__fetch_url", 1), "status"), "failed");
	cr_expect(strstr(json_get_string(tool_end(&a, "web__fetch_url", 1), "summary"), "http://") != NULL);
	agent_cleanup(&a);
}

/* A connector server runs in the run's sandbox: under read-only it cannot write the workspace. */
static bool
connector_wrote_workspace(const char *profile)
{
	static const char transcript[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"sh__one\", \"arguments\": {\"text\": \"x\"}}]}, {\"text\": \"done\"}]}";
	struct agent a;
	cJSON *start, *finish;
	char script[1024], path[512];
	/* The server's path as an argument ($1), as a user's wrapper would take it: the
	 * sandbox binds a program under the host's /tmp in from its arguments. */
	const char *args[] = { "-c", script, "sh", mcp_failserver(), NULL };
	bool wrote;

	agent_init(&a);
	snprintf(script, sizeof script, "touch '%s/from-the-server' 2>/dev/null; exec \"$1\" legacy",
	    a.ws);
	start = start_line(&a, "replay", "x", profile);
	use_transcript(&a, start, "sandboxed", transcript);
	add_stdio_connector(&a, start, "con_sh", "sh", "/bin/sh", args);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_assert_str_eq(json_get_string(tool_end(&a, "sh__one", 0), "status"), "completed",
	    "%s", json_get_string(tool_end(&a, "sh__one", 0), "summary"));
	snprintf(path, sizeof path, "%s/from-the-server", a.ws);
	wrote = exists(path);
	cr_expect_eq(marked_processes(&a), 0);
	agent_cleanup(&a);
	return wrote;
}

Test(agent, connector_servers_run_in_the_sandbox_of_the_run)
{
	cr_expect_not(connector_wrote_workspace("read-only"),
	    "a connector server wrote into the workspace of a read-only run");
	cr_expect(connector_wrote_workspace("workspace-write"));
}

Test(agent, http_connector_with_a_header_credential)
{
	static const char secret[] = "Bearer tok-8c2e51f0aa";
	static const char transcript[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"remote__echo\", \"arguments\": {\"message\": \"over http\"}}]},"
	    "{\"text\": \"done\"}]}";
	const char *js = mcp_everything();
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	char url[128], portenv[32], *log;
	struct agent a;
	cJSON *start, *finish, *con, *t, *b;
	pid_t server;

	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	getsockname(fd, (struct sockaddr *)&sa, &salen);
	port = ntohs(sa.sin_port);
	close(fd);
	server = fork();
	cr_assert_geq(server, 0);
	if (server == 0) {
		snprintf(portenv, sizeof portenv, "%d", port);
		setenv("PORT", portenv, 1);
		setpgid(0, 0);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execlp("node", "node", js, "streamableHttp", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) {	/* node takes a moment to listen */
		int c = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in to = sa;
		bool up;

		to.sin_port = htons((uint16_t)port);
		up = connect(c, (struct sockaddr *)&to, sizeof to) == 0;
		close(c);
		if (up)
			break;
		usleep(50000);
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	agent_init(&a);
	a.secret_con = "con_remote";
	a.secret_cred = "cred_token";
	a.secret = secret;
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "remote", transcript);
	con = cJSON_CreateObject();
	cJSON_AddStringToObject(con, "id", "con_remote");
	cJSON_AddStringToObject(con, "name", "remote");
	cJSON_AddStringToObject(con, "kind", "custom");
	t = cJSON_AddObjectToObject(con, "transport");
	cJSON_AddStringToObject(t, "type", "http");
	cJSON_AddStringToObject(t, "url", url);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(t, "headers"), "X-Team", "tests");
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "credentialId", "cred_token");
	cJSON_AddStringToObject(b, "target", "header:Authorization");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(con, "credentialBindings"), b);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(start, "connectors"), con);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 45000);
	kill(-server, SIGKILL);
	waitpid(server, NULL, 0);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_eq(count_lines(&a, "request", "method", "secret.resolve"), 1);
	cr_expect_str_eq(json_get_string(tool_end(&a, "remote__echo", 0), "summary"),
	    "echo on remote: Echo: over http");
	cr_expect_not(contains(a.raw.data, a.raw.len, "tok-8c2e51f0aa"), "the secret is in a line");
	log = harness_slurp(a.err_path, NULL);
	cr_expect_not(contains(log, log ? strlen(log) : 0, "tok-8c2e51f0aa"),
	    "the secret is in the log");
	free(log);
	agent_cleanup(&a);
}

/* Binds the credential cred_echo to the connector con as target. */
static void
bind_echo(cJSON *con, const char *target)
{
	cJSON *b = cJSON_CreateObject(), *list = member(con, "credentialBindings");

	if (list == NULL)
		list = cJSON_AddArrayToObject(con, "credentialBindings");
	cJSON_AddStringToObject(b, "credentialId", "cred_echo");
	cJSON_AddStringToObject(b, "target", target);
	cJSON_AddItemToArray(list, b);
}

/* needle is in no line of the agent, not in its log and in no request to the model. */
static void
expect_secret_nowhere(const struct agent *a, struct fake_provider *fp, const char *needle)
{
	char *log = harness_slurp(a->err_path, NULL);

	cr_expect_not(contains(a->raw.data, a->raw.len, needle), "a line holds the secret: %s",
	    a->raw.data);
	cr_expect_not(contains(log, log ? strlen(log) : 0, needle), "the log holds the secret");
	for (size_t i = 0; i < fake_provider_count(fp); i++) {
		const char *body = fake_provider_request(fp, i)->body;

		cr_expect_not(contains(body, strlen(body), needle),
		    "request %zu to the model holds the secret: %s", i, body);
	}
	free(log);
}

/*
 * A stdio server that prints its secret on stderr while failing its handshake,
 * and one whose tool answers with it (plainly and \u-escaped): the secret is
 * masked in the tool lines (run.tool), the log, the model's instructions and
 * the tool result the model gets.
 */
Test(agent, a_secret_echoed_by_a_stdio_server_is_masked)
{
	static const char secret[] = "sk-echo-51f0aa9c7e";
	const char *const loud[] = { "loud", NULL }, *const leak[] = { "leak", NULL };
	struct buf one, two;
	struct fake_reply replies[2];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish;
	const char *summary;

	buf_init(&one, 0);
	fake_openai_tool_call(&one, 0, "call_1", "leaky__env", "{}", 2);
	fake_openai_delta(&one, "{}", "tool_calls");
	fake_openai_done(&one);
	buf_init(&two, 0);
	fake_openai_text(&two, "done");
	fake_openai_delta(&two, "{}", "stop");
	fake_openai_done(&two);
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", two.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	agent_init(&a);
	a.secret_con = "*";
	a.secret_cred = "cred_echo";
	a.secret = secret;
	start = http_start(&a, "openai", fp, TEST_KEY);
	bind_echo(add_stdio_connector(&a, start, "con_loud", "loud", mcp_failserver(), loud),
	    "env:TD_PROBE");
	bind_echo(add_stdio_connector(&a, start, "con_leaky", "leaky", mcp_failserver(), leak),
	    "env:TD_PROBE");
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	summary = json_get_string(tool_end(&a, "loud", 0), "summary");
	cr_expect(summary != NULL && strstr(summary, "refused the key ******************") != NULL,
	    "%s", summary);
	cr_assert_eq(fake_provider_count(fp), 2);
	cr_expect(contains(fake_provider_request(fp, 0)->body, strlen(fake_provider_request(fp,
	    0)->body), "refused the key ******************"), "the model is not told why loud "
	    "is unavailable: %s", fake_provider_request(fp, 0)->body);
	cr_expect(contains(fake_provider_request(fp, 1)->body, strlen(fake_provider_request(fp,
	    1)->body), "TD_PROBE is ******************"), "%s", fake_provider_request(fp, 1)->body);
	expect_secret_nowhere(&a, fp, secret);
	expect_secret_nowhere(&a, fp, "k-echo-51f0aa9c7e");	/* the \u-escaped copy */
	fake_provider_stop(fp);
	buf_free(&one);
	buf_free(&two);
	agent_cleanup(&a);
}

/*
 * An HTTP server that refuses the handshake quoting the raw credentials of
 * the Authorization header it got ("Bearer <token>" was bound): masked.
 */
Test(agent, a_secret_echoed_by_an_http_server_is_masked)
{
	static const char secret[] = "Bearer tok-echo-77e1d2c4";
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	char url[128], portarg[16];
	struct buf one;
	struct fake_reply replies[1];
	struct fake_provider *fp;
	struct agent a;
	cJSON *start, *finish, *con, *t;
	const char *summary;
	pid_t server;

	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	getsockname(fd, (struct sockaddr *)&sa, &salen);
	port = ntohs(sa.sin_port);
	close(fd);
	snprintf(portarg, sizeof portarg, "%d", port);
	server = fork();
	cr_assert_geq(server, 0);
	if (server == 0) {
		execl(mcp_failserver(), "mcp-failserver", "http-echo", portarg, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in to = sa;
		bool up;

		to.sin_port = htons((uint16_t)port);
		up = connect(c, (struct sockaddr *)&to, sizeof to) == 0;
		close(c);
		if (up)
			break;
		usleep(20000);
	}
	buf_init(&one, 0);
	fake_openai_text(&one, "done");
	fake_openai_delta(&one, "{}", "stop");
	fake_openai_done(&one);
	replies[0] = (struct fake_reply){ 200, "text/event-stream", one.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 1);
	cr_assert_not_null(fp);
	agent_init(&a);
	a.secret_con = "con_remote";
	a.secret_cred = "cred_echo";
	a.secret = secret;
	start = http_start(&a, "openai", fp, TEST_KEY);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	con = cJSON_CreateObject();
	cJSON_AddStringToObject(con, "id", "con_remote");
	cJSON_AddStringToObject(con, "name", "remote");
	cJSON_AddStringToObject(con, "kind", "custom");
	t = cJSON_AddObjectToObject(con, "transport");
	cJSON_AddStringToObject(t, "type", "http");
	cJSON_AddStringToObject(t, "url", url);
	bind_echo(con, "header:Authorization");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(start, "connectors"), con);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	summary = json_get_string(tool_end(&a, "remote", 0), "summary");
	cr_expect(summary != NULL && strstr(summary, "the token ***************** is not valid") !=
	    NULL, "%s", summary);
	expect_secret_nowhere(&a, fp, "tok-echo-77e1d2c4");
	expect_secret_nowhere(&a, fp, "ok-echo-77e1d2c4");
	fake_provider_stop(fp);
	buf_free(&one);
	agent_cleanup(&a);
}

/* Tool names providers accept: [A-Za-z0-9_-]{1,64}; a long one keeps a hash of the full name. */
Test(agent, connector_tool_names_are_sanitized)
{
	const char *const legacy[] = { "legacy", NULL };
	static const char long_name[] = "a-connector-with-a-name-far-too-long-for-any-provider-x1234567";
	struct agent a;
	cJSON *start, *finish;
	char transcript[1024], full[256], hashed[80];
	uint32_t h = 2166136261u;

	snprintf(full, sizeof full, "%s__three", long_name);
	for (const char *p = full; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(hashed, sizeof hashed, "%.55s_%08x", full, h);
	cr_assert_eq(strlen(hashed), 64);
	snprintf(transcript, sizeof transcript, "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"My_Server_v2__one\", \"arguments\": {\"text\": \"s\"}},"
	    "{\"name\": \"%s\", \"arguments\": {\"text\": \"l\"}}"
	    "]}, {\"text\": \"done\"}]}", hashed);
	agent_init(&a);
	start = start_line(&a, "replay", "x", "workspace-write");
	use_transcript(&a, start, "names", transcript);
	add_stdio_connector(&a, start, "con_a", "My Server.v2", mcp_failserver(), legacy);
	add_stdio_connector(&a, start, "con_b", long_name, mcp_failserver(), legacy);
	agent_spawn(&a, start);
	finish = agent_finish(&a, 20000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
	cr_expect_str_eq(json_get_string(tool_end(&a, "My_Server_v2__one", 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, hashed, 0), "status"), "completed");
	cr_expect_str_eq(json_get_string(tool_end(&a, hashed, 0), "summary"),
	    "three on a-connector-with-a-name-far-too-long-for-any-provider-x1234567: three:l");
	agent_cleanup(&a);
}

/* A run whose model calls forms__one of tests/mcp-failserver in mode; the permission asked allowed. */
static void
run_form_mode_answered(struct agent *a, const char *mode, const char *permission)
{
	static const char transcript[] = "{\"turns\": [{\"toolCalls\": ["
	    "{\"name\": \"forms__one\", \"arguments\": {\"text\": \"a\"}}]}, {\"text\": \"done\"}]}";
	const char *const args[] = { mode, NULL };
	cJSON *start, *finish;

	agent_init(a);
	a->permission = permission;
	start = start_line(a, "replay", "x", "workspace-write");
	use_transcript(a, start, "forms", transcript);
	add_stdio_connector(a, start, "con_forms", "forms", mcp_failserver(), args);
	agent_spawn(a, start);
	finish = agent_finish(a, 30000);
	cr_assert_str_eq(json_get_string(finish, "status"), "completed", "%s", finish_message(finish));
}

static void
run_form_mode(struct agent *a, const char *mode)
{
	run_form_mode_answered(a, mode, "allow");
}

Test(agent, a_form_its_server_gives_up_on_is_withdrawn_and_the_call_goes_on)
{
	struct agent a;
	cJSON *ask, *withdraw;
	long ask_id;

	/* Nobody answers the form: the server's notice alone ends the wait. */
	run_form_mode_answered(&a, "giveupform", "wait");
	ask = find_line(&a, "request", "method", "permission.ask", 0);
	cr_assert_not_null(ask, "the form was not asked");
	ask_id = (long)member(ask, "id")->valuedouble;
	withdraw = find_line(&a, "request", "method", "permission.withdraw", 0);
	cr_assert_not_null(withdraw, "the prompt was not withdrawn");
	cr_expect_eq((long)member(member(withdraw, "params"), "requestId")->valuedouble, ask_id,
	    "the withdrawal names another request");
	cr_expect_eq(count_lines(&a, "request", "method", "permission.withdraw"), 1);
	cr_expect_not_null(strstr(json_get_string(tool_end(&a, "forms__one", 0), "summary"),
	    "the server gave up on its form"), "%s",
	    json_get_string(tool_end(&a, "forms__one", 0), "summary"));
	agent_cleanup(&a);
}

Test(agent, a_form_too_large_is_refused_to_its_server_and_the_run_goes_on)
{
	struct agent a;
	const char *summary;

	run_form_mode(&a, "bigform");
	cr_expect_eq(count_lines(&a, "request", "method", "permission.ask"), 0,
	    "nobody is asked a 1.5 MiB form");
	summary = json_get_string(tool_end(&a, "forms__one", 0), "summary");
	cr_assert_not_null(summary);
	cr_expect_not_null(strstr(summary, "form: {\"code\":-32602,\"message\":\"Refused: the form is"),
	    "the server hears why: %s", summary);
	agent_cleanup(&a);
}

Test(agent, a_form_and_a_progress_message_cut_inside_a_character_stay_utf8)
{
	struct agent a;
	cJSON *ask, *line;
	const char *summary, *said;

	run_form_mode(&a, "cutform");
	cr_expect(json_utf8_valid(a.raw.data, a.raw.len), "a line of the agent is not UTF-8");
	ask = find_line(&a, "request", "method", "permission.ask", 0);
	cr_assert_not_null(ask);
	summary = json_get_string(member(ask, "params"), "summary");
	cr_assert_not_null(summary);
	cr_expect(json_utf8_valid(summary, strlen(summary)));
	cr_expect(strncmp(summary, "forms asks: x\303\251\303\251", 16) == 0, "%s", summary);
	said = NULL;
	for (int i = 0; (line = find_line(&a, "progress", NULL, NULL, i)) != NULL; i++) {
		const char *m = json_get_string(line, "message");

		if (m != NULL && strncmp(m, "forms: x", 8) == 0)
			said = m;
	}
	cr_assert_not_null(said, "no progress line of the server");
	cr_expect(json_utf8_valid(said, strlen(said)), "%s", said);
	cr_expect_not_null(strstr(said, "(1 of 2)"), "%s", said);
	cr_expect_not_null(strstr(json_get_string(tool_end(&a, "forms__one", 0), "summary"),
	    "form: {\"action\":\"accept\""));
	agent_cleanup(&a);
}
