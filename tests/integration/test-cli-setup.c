/*
 * The readiness commands of the CLI against a real taskdeckd: runtimes,
 * setup --status / --repair, install-cli (--json), and taskdeck setup against
 * a fake OpenAI-compatible provider, with flags and on a terminal (a pty).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"
#include "taskdeck.h"

static char tmp[256];

static void
setup(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/tdsetup-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	setenv("XDG_BIN_HOME", tmp, 1);
	svc_start(&svc);
	svc_export_env(&svc);
}

static void
teardown(void)
{
	char cmd[400];

	svc_destroy(&svc);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	unsetenv("XDG_BIN_HOME");
	unsetenv("TD_FAKE_KEY");
}

TestSuite(cli_setup, .init = setup, .fini = teardown, .timeout = 120);

/* Runs the CLI with args; its stdout parsed as JSON (asserts it parses). */
static cJSON *
cli_json(int want_rc, const char *args)
{
	char *out = NULL;
	int rc = run_capture(&svc, &out, "'%s' %s", harness_bin("taskdeck"), args);
	cJSON *doc = cJSON_Parse(out);

	cr_expect_eq(rc, want_rc, "taskdeck %s: exit %d, want %d: %s", args, rc, want_rc, out);
	cr_assert_not_null(doc, "taskdeck %s printed no JSON: %s", args, out);
	free(out);
	return doc;
}

Test(cli_setup, runtimes_status_repair_install_json)
{
	cJSON *doc;
	char launcher[300];

	doc = cli_json(0, "runtimes --json");
	cr_expect(cJSON_IsArray(doc));
	cr_expect_eq(cJSON_GetArraySize(doc), 4);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(doc, 0), "framework"), "taskdeck");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(doc, 0), "status"), "ready");
	cJSON_Delete(doc);

	doc = cli_json(0, "setup --status --json");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ok")));
	cr_expect_not_null(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "steps"), "runtime"));
	cJSON_Delete(doc);

	doc = cli_json(0, "setup --repair --json");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ok")));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "changed")));
	cJSON_Delete(doc);

	doc = cli_json(0, "install-cli --json");
	snprintf(launcher, sizeof launcher, "%s/taskdeck", tmp);
	cr_expect_str_eq(json_get_string(doc, "path"), launcher);
	cr_expect_eq(access(launcher, X_OK), 0);
	cJSON_Delete(doc);

	/* A foreign file: exit 1 and the conflict code, the file untouched. */
	{
		FILE *f = fopen(launcher, "w");
		char back[64] = "";
		fputs("mine\n", f);
		fclose(f);
		doc = cli_json(1, "install-cli --json");
		cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(doc, "error"), "code"),
		    "configuration_conflict");
		cJSON_Delete(doc);
		f = fopen(launcher, "r");
		cr_assert_not_null(fgets(back, sizeof back, f));
		fclose(f);
		cr_expect_str_eq(back, "mine\n");
	}
}

/* The fake provider's script: the model list, then one chat completion. */
static struct fake_reply replies[6];

static struct fake_provider *
start_provider(void)
{
	struct fake_provider *fp;
	static char models[] = "{\"object\":\"list\",\"data\":[{\"id\":\"tiny-1\",\"object\":"
	    "\"model\"},{\"id\":\"tiny-2\",\"object\":\"model\"}]}";
	static char done[] = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{"
	    "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ready\"},"
	    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}";

	replies[0] = (struct fake_reply){ 200, "application/json", models, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "application/json", done, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	if (fp != NULL)
		fake_provider_script_gets(fp, 1);	/* setup's model list */
	return fp;
}

static cJSON *
read_settings(void)
{
	char path[400], *text;
	FILE *f;
	long n;
	cJSON *doc;

	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	text = calloc(1, 300000);
	n = (long)fread(text, 1, 299999, f);
	fclose(f);
	cr_assert(n > 0);
	cr_expect_null(strstr(text, "sk-fake-secret"), "the key is in settings.json");
	doc = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(doc);
	return doc;
}

static void
expect_provider(const char *name, const char *url, const char *model)
{
	cJSON *doc = read_settings(), *p;

	p = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "providers"), name);
	cr_assert_not_null(p, "no provider %s", name);
	cr_expect_str_eq(json_get_string(p, "kind"), "openai");
	cr_expect_str_eq(json_get_string(p, "baseUrl"), url);
	cr_expect_str_eq(json_get_string(p, "apiKeyEnv"), "TD_FAKE_KEY");
	cr_expect_str_eq(json_get_string(p, "defaultModel"), model);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(doc, "defaults"), "provider"), name);
	cJSON_Delete(doc);
}

static void
expect_requests(struct fake_provider *fp, const char *model)
{
	const struct fake_request *r;
	char want[64];

	cr_assert_eq(fake_provider_count(fp), 2, "a model list and one test request");
	r = fake_provider_request(fp, 0);
	cr_expect_str_eq(r->path, "/v1/models");
	cr_expect_str_eq(r->authorization ? r->authorization : "(none)", "Bearer sk-fake-secret");
	r = fake_provider_request(fp, 1);
	cr_expect_str_eq(r->path, "/v1/chat/completions");
	snprintf(want, sizeof want, "\"model\":\"%s\"", model);
	cr_expect(strstr(r->body, want) != NULL, "%s", r->body);
}

Test(cli_setup, flags_against_a_fake_provider)
{
	struct fake_provider *fp = start_provider();
	char url[200], args[600];
	cJSON *doc;

	snprintf(url, sizeof url, "%s", fake_provider_url(fp, "/v1"));
	setenv("TD_FAKE_KEY", "sk-fake-secret", 1);
	snprintf(args, sizeof args, "setup --provider local --base-url %s --api-key-env "
	    "TD_FAKE_KEY --model tiny-2 --json", url);
	doc = cli_json(0, args);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ok")));
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "tested")));
	cr_expect_eq(cJSON_GetObjectItem(doc, "models")->valueint, 2);
	cJSON_Delete(doc);
	expect_requests(fp, "tiny-2");
	fake_provider_stop(fp);
	expect_provider("local", url, "tiny-2");

	/* The service accepts what setup wrote. */
	svc_stop(&svc);
	svc_restart(&svc);
	doc = cli_json(0, "setup --json");	/* no terminal, no flags: shows the settings */
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(doc, "defaults"), "provider"), "local");
	cJSON_Delete(doc);
}

Test(cli_setup, a_model_the_provider_lacks_changes_nothing)
{
	struct fake_provider *fp = start_provider();
	char args[600];
	cJSON *before, *after, *doc;

	before = read_settings();
	setenv("TD_FAKE_KEY", "sk-fake-secret", 1);
	snprintf(args, sizeof args, "setup --provider local --base-url %s --api-key-env "
	    "TD_FAKE_KEY --model huge-9 --json", fake_provider_url(fp, "/v1"));
	doc = cli_json(1, args);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ok")));
	cJSON_Delete(doc);
	cr_expect_eq(fake_provider_count(fp), 1, "no test request for a model not offered");
	fake_provider_stop(fp);
	after = read_settings();
	cr_expect(cJSON_Compare(before, after, true), "settings.json changed");
	cJSON_Delete(before);
	cJSON_Delete(after);
}

Test(cli_setup, key_value_is_never_taken_on_argv_or_stdin)
{
	char *out = NULL;
	int rc = run_capture(&svc, &out, "echo sk-x | '%s' setup --api-key-stdin "
	    "--api-key-env X 2>&1", harness_bin("taskdeck"));

	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "--api-key-stdin goes with --provider") != NULL, "%s", out);
	free(out);
	rc = run_capture(&svc, &out, "'%s' setup --provider openai --api-key-env sk-123=abc "
	    "2>&1", harness_bin("taskdeck"));
	cr_expect_eq(rc, 2, "a key where a name belongs is refused: %s", out);
	free(out);
}

/* Reads the pty until text appears (or timeout); all output into b. */
static bool
pty_wait(int fd, struct buf *b, const char *text, int timeout_ms)
{
	long end = mono_ms() + timeout_ms;
	char chunk[4096];

	while (b->data == NULL || strstr(b->data, text) == NULL) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;
		long left = end - mono_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		n = read(fd, chunk, sizeof chunk);
		if (n <= 0)
			return false;
		buf_append(b, chunk, (size_t)n);
	}
	return true;
}

static void
pty_say(int fd, const char *line)
{
	cr_assert_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
}

Test(cli_setup, interactive_on_a_terminal)
{
	struct fake_provider *fp = start_provider();
	char url[200], line[256];
	struct buf out;
	int fd, status;
	pid_t pid;

	snprintf(url, sizeof url, "%s", fake_provider_url(fp, "/v1"));
	setenv("TD_FAKE_KEY", "sk-fake-secret", 1);
	buf_init(&out, 0);
	pid = forkpty(&fd, NULL, NULL, NULL);
	cr_assert(pid >= 0);
	if (pid == 0) {
		execl(harness_bin("taskdeck"), "taskdeck", "setup", (char *)NULL);
		_exit(127);
	}
	cr_assert(pty_wait(fd, &out, "Which model provider?", 20000), "%s", out.data);
	cr_assert(pty_wait(fd, &out, "Choice", 5000), "%s", out.data);
	pty_say(fd, "1\n");
	cr_assert(pty_wait(fd, &out, "Base URL", 5000), "%s", out.data);
	snprintf(line, sizeof line, "%s\n", url);
	pty_say(fd, line);
	cr_assert(pty_wait(fd, &out, "Environment variable", 5000), "%s", out.data);
	pty_say(fd, "TD_FAKE_KEY\n");
	cr_assert(pty_wait(fd, &out, "2) tiny-2", 20000), "the model list: %s", out.data);
	cr_assert(pty_wait(fd, &out, "Model (number or name)", 5000), "%s", out.data);
	pty_say(fd, "2\n");
	cr_expect(pty_wait(fd, &out, "Restart the service", 20000), "%s", out.data);
	pty_wait(fd, &out, "\x04never", 2000);	/* drain to EOF */
	close(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", out.data);
	expect_requests(fp, "tiny-2");
	fake_provider_stop(fp);
	expect_provider("ollama", url, "tiny-2");
	buf_free(&out);
}

Test(cli_setup, client_core_calls)
{
	struct td_client *c = client_connect();
	struct td_runtime_list *l = NULL;
	struct td_setup_result *r = NULL;
	struct td_error err;
	char *json = NULL;

	cr_assert_eq(td_list_runtimes(c, NULL, &l, &err), TD_OK, "%s", err.message);
	cr_expect_eq(l->count, 4);
	cr_expect_str_eq(l->items[0].framework, "taskdeck");
	cr_expect_str_eq(l->items[0].source, "managed");
	cr_expect(l->items[0].data_complete);
	cr_expect_str_eq(l->items[1].framework, "claude-code");
	cr_expect_str_eq(l->items[1].min_version, "2.0.0");
	td_runtime_list_free(l);

	cr_assert_eq(td_bootstrap(c, "status", NULL, &r, &err), TD_OK, "%s", err.message);
	cr_expect(r->ok);
	td_setup_result_free(r);
	cr_expect_eq(td_bootstrap(c, "reboot", NULL, &r, &err), TD_INVALID_ARGUMENT);
	cr_expect_null(r);
	cr_expect_eq(td_request_json(c, "POST", "/api/v1/bootstrap", "{\"action\":\"x\"}", NULL,
	    &json, &err), TD_INVALID_REQUEST);
	free(json);

	cr_assert_eq(td_install_cli(c, NULL, &r, &err), TD_OK, "%s", err.message);
	cr_expect(r->ok);
	cr_expect(r->changed);
	cr_expect_not_null(r->path);
	cr_expect(!r->on_path);
	cr_expect_gt(r->next_action_count, 0u);
	td_setup_result_free(r);
	cr_assert_eq(td_install_cli(c, NULL, &r, &err), TD_OK, "%s", err.message);
	cr_expect(!r->changed);
	td_setup_result_free(r);
	td_client_free(c);
}

/* A client timeout on an install: the CLI says it proves nothing and re-reads the state. */
Test(cli_setup, install_timeout_rereads_the_status)
{
	char launcher[300], *out = NULL;
	int rc = 0;
	bool timed_out = false;

	snprintf(launcher, sizeof launcher, "%s/taskdeck", tmp);
	for (int i = 0; i < 20 && !timed_out; i++) {
		unlink(launcher);
		free(out);
		rc = run_capture(&svc, &out, "'%s' --timeout 1 --json install-cli 2>&1",
		    harness_bin("taskdeck"));
		timed_out = strstr(out, "timeout") != NULL;
	}
	cr_assert(timed_out, "no install timed out after 1 ms in 20 tries: %s", out);
	cr_expect_eq(rc, 1, "%s", out);
	cr_expect(strstr(out, "does not prove") != NULL, "%s", out);
	cr_expect(strstr(out, "\"steps\"") != NULL, "the status was read again: %s", out);
	free(out);
}

/* --- keycred: a key given on stdin or typed is stored as a credential --- */

#define KEY1 "sk-typed-KEY-1a2b3c4d"
#define KEY2 "sk-rotated-KEY-9z8y7x"

/* path's bytes do not contain needle (a missing file is fine). */
static void
expect_file_lacks(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rb");
	char *data;
	size_t n;

	if (f == NULL)
		return;
	data = malloc(64 * 1024 * 1024);
	cr_assert_not_null(data);
	n = fread(data, 1, 64 * 1024 * 1024, f);
	fclose(f);
	cr_expect_null(memmem(data, n, needle, strlen(needle)), "%s holds the key", path);
	free(data);
}

static void
expect_key_nowhere(const char *key)
{
	char path[512], cmd[700];
	char *out = NULL;

	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	expect_file_lacks(path, key);
	snprintf(path, sizeof path, "%s/taskdeckd.log", svc.home);
	expect_file_lacks(path, key);
	/* Every file of the home: the database, its WAL, the log. */
	snprintf(cmd, sizeof cmd, "grep -rl -F -e '%s' '%s' 2>/dev/null; "
	    "grep -l -F -e '%s' /proc/[0-9]*/cmdline 2>/dev/null | grep -v \"/proc/$$/\" "
	    "| while read f; do tr '\\0' ' ' < $f | grep -v -e grep; done; true",
	    key, svc.home, key);
	run_capture(&svc, &out, "%s", cmd);
	cr_expect_str_eq(out ? out : "", "", "the key was found: %s", out);
	free(out);
}

static void
start_replies(struct buf *run_reply)
{
	static char models[] = "{\"object\":\"list\",\"data\":[{\"id\":\"tiny-1\",\"object\":"
	    "\"model\"},{\"id\":\"tiny-2\",\"object\":\"model\"}]}";
	static char done[] = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{"
	    "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ready\"},"
	    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}";

	buf_init(run_reply, 0);
	fake_openai_text(run_reply, "Hello from the fake provider.");
	fake_openai_delta(run_reply, "{}", "stop");
	fake_openai_usage(run_reply, 10, 5);
	fake_openai_done(run_reply);
	replies[0] = (struct fake_reply){ 200, "application/json", models, 0, 0, NULL, 0 };
	replies[1] = (struct fake_reply){ 200, "application/json", done, 0, 0, NULL, 0 };
	replies[2] = (struct fake_reply){ 200, "text/event-stream", run_reply->data, 0, 0, NULL, 0 };
	replies[3] = (struct fake_reply){ 200, "application/json", models, 0, 0, NULL, 0 };
	replies[4] = (struct fake_reply){ 200, "application/json", done, 0, 0, NULL, 0 };
	replies[5] = (struct fake_reply){ 200, "text/event-stream", run_reply->data, 0, 0, NULL, 0 };
}

static const char *
auth(struct fake_provider *fp, size_t i)
{
	const struct fake_request *r = fake_provider_request(fp, i);

	return r != NULL && r->authorization ? r->authorization : "(none)";
}

/* Runs setup with key on stdin; the credential id it stored. */
static char *
setup_stdin(const char *url, const char *key)
{
	char args[900];
	cJSON *doc, *p;
	char *id;

	snprintf(args, sizeof args, "setup --provider local --base-url %s --api-key-stdin "
	    "--model tiny-2 --json < '%s/key.txt'", url, tmp);
	{
		char path[400];
		FILE *f;

		snprintf(path, sizeof path, "%s/key.txt", tmp);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fprintf(f, "%s\n", key);
		fclose(f);
	}
	doc = cli_json(0, args);
	{
		char path[400];

		snprintf(path, sizeof path, "%s/key.txt", tmp);
		unlink(path);
	}
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "tested")));
	p = cJSON_GetObjectItem(doc, "provider");
	cr_assert_not_null(json_get_string(p, "apiKeyCredential"), "%s", cJSON_PrintUnformatted(doc));
	cr_expect_null(json_get_string(p, "apiKeyEnv"));
	id = strdup(json_get_string(p, "apiKeyCredential"));
	cJSON_Delete(doc);
	return id;
}

/* bootstrap status: the provider step. */
static void
expect_provider_step(bool ok, const char *says)
{
	struct http_resp r = http_req(&svc, "POST", "/api/v1/bootstrap",
	    "{\"action\":\"status\"}", NULL, true);
	const cJSON *st;

	cr_assert_eq(r.status, 200, "%s", r.body);
	st = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "steps"), "provider");
	cr_assert_not_null(st, "%s", r.body);
	cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItem(st, "ok")), ok, "%s", r.body);
	cr_expect(json_get_string(st, "message") && strstr(json_get_string(st, "message"), says) != NULL, "%s", r.body);
	http_resp_free(&r);
}

static cJSON *
run_once(void)
{
	struct http_resp r;
	char body[400], *project;
	cJSON *run;

	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"keyed\"}", NULL, true);
	cr_assert_eq(r.status, 201, "%s", r.body);
	project = strdup(json_get_string(r.json, "id"));
	http_resp_free(&r);
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"hi\",\"config\":"
	    "{\"provider\":\"local\",\"model\":\"tiny-2\"}}", project);
	free(project);
	r = http_req(&svc, "POST", "/api/v1/runs", body, NULL, true);
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), 90000);
	http_resp_free(&r);
	cr_assert_not_null(run);
	return run;
}

Test(cli_setup, api_key_stdin_is_a_credential_the_run_uses)
{
	struct buf run_reply;
	struct fake_provider *fp;
	struct http_resp r;
	char url[200], path[300], *id, *id2;
	cJSON *doc, *p, *run;
	int named = 0;

	start_replies(&run_reply);
	fp = fake_provider_start(replies, 6);
	cr_assert_not_null(fp);
	fake_provider_script_gets(fp, 1);	/* setup's model list */
	snprintf(url, sizeof url, "%s", fake_provider_url(fp, "/v1"));
	id = setup_stdin(url, KEY1);
	cr_expect(strncmp(id, "cred_", 5) == 0, "%s", id);
	cr_expect_str_eq(auth(fp, 0), "Bearer " KEY1, "setup lists the models with the key");
	cr_expect_str_eq(auth(fp, 1), "Bearer " KEY1, "setup tests with the key");
	doc = read_settings();
	p = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "providers"), "local");
	cr_expect_str_eq(json_get_string(p, "apiKeyCredential"), id);
	cJSON_Delete(doc);

	/* The service reads the settings at start: a run authenticates with the credential. */
	svc_stop(&svc);
	svc_restart(&svc);
	run = run_once();
	cr_expect_str_eq(json_get_string(run, "status"), "completed", "%s", cJSON_PrintUnformatted(run));
	cJSON_Delete(run);
	cr_expect_str_eq(auth(fp, 2), "Bearer " KEY1, "the run's request");
	expect_provider_step(true, "its key is in the credential");
	expect_key_nowhere(KEY1);

	/* A credential a provider names is in use. */
	snprintf(path, sizeof path, "/api/v1/credentials/%s", id);
	r = http_req(&svc, "DELETE", path, NULL, NULL, true);
	cr_expect_eq(r.status, 409, "%s", r.body);
	cr_expect_str_eq(http_error_code(&r), "credential_in_use");
	cr_expect(strstr(r.body, "local") != NULL, "names the provider: %s", r.body);
	http_resp_free(&r);

	/* Re-running setup rotates the same credential. */
	fake_provider_script_gets(fp, 1);
	id2 = setup_stdin(url, KEY2);
	cr_expect_str_eq(id2, id, "the same credential, rotated");
	cr_expect_str_eq(auth(fp, 3), "Bearer " KEY2);
	r = http_req(&svc, "GET", "/api/v1/credentials", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	{
		const cJSON *c;

		const cJSON *list = cJSON_IsArray(r.json) ? r.json :
		    cJSON_GetObjectItem(r.json, "items");

		cJSON_ArrayForEach(c, list) {
			if (json_get_string(c, "name") && strcmp(json_get_string(c, "name"), "provider-local") == 0)
				named++;
		}
	}
	cr_expect_eq(named, 1, "one credential provider-local: %s", r.body);
	http_resp_free(&r);
	svc_stop(&svc);
	svc_restart(&svc);
	run = run_once();
	cr_expect_str_eq(json_get_string(run, "status"), "completed", "%s", cJSON_PrintUnformatted(run));
	cJSON_Delete(run);
	cr_expect_str_eq(auth(fp, 5), "Bearer " KEY2, "the run uses the rotated key");
	expect_key_nowhere(KEY2);

	/*
	 * A credential named by its name, in settings.json as it is on disk (setup
	 * wrote it, the service was not restarted): in use too.
	 */
	{
		cJSON *set = read_settings(), *spare;
		char *text, *other;

		r = http_req(&svc, "POST", "/api/v1/credentials", "{\"name\":\"spare-key\","
		    "\"kind\":\"api-key\",\"secret\":\"sk-spare\"}", NULL, true);
		cr_assert_eq(r.status, 201, "%s", r.body);
		other = strdup(json_get_string(r.json, "id"));
		http_resp_free(&r);
		spare = cJSON_Parse("{\"kind\":\"openai\",\"baseUrl\":\"http://127.0.0.1:9/v1\","
		    "\"apiKeyEnv\":null,\"apiKeyCredential\":\"spare-key\",\"defaultModel\":\"m\"}");
		cJSON_AddItemToObject(cJSON_GetObjectItem(set, "providers"), "spare", spare);
		text = cJSON_Print(set);
		svc_write_file(&svc, "settings.json", text);
		free(text);
		cJSON_Delete(set);
		snprintf(path, sizeof path, "/api/v1/credentials/%s", other);
		r = http_req(&svc, "DELETE", path, NULL, NULL, true);
		cr_expect_eq(r.status, 409, "by name, on disk: %s", r.body);
		cr_expect(strstr(r.body, "spare") != NULL, "%s", r.body);
		http_resp_free(&r);
		free(other);
	}
	/* Deleted anyway (force): the next run fails and says what to do. */
	snprintf(path, sizeof path, "/api/v1/credentials/%s?force=true", id);
	r = http_req(&svc, "DELETE", path, NULL, NULL, true);
	cr_expect(r.status == 204 || r.status == 200, "%s", r.body);
	http_resp_free(&r);
	expect_provider_step(false, "does not exist");
	/* doctor fails the provider check and says what to do. */
	r = http_req(&svc, "GET", "/api/v1/doctor", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	{
		const cJSON *c, *check = NULL;

		cJSON_ArrayForEach(c, cJSON_GetObjectItem(r.json, "checks"))
			if (json_get_string(c, "id") && strcmp(json_get_string(c, "id"), "provider") == 0)
				check = c;
		cr_assert_not_null(check, "%s", r.body);
		cr_expect_str_eq(json_get_string(check, "status"), "fail", "%s", r.body);
		cr_expect(strstr(json_get_string(check, "message"), "does not exist") != NULL, "%s", r.body);
		cr_expect(strstr(r.body, "taskdeck setup") != NULL, "%s", r.body);
	}
	http_resp_free(&r);
	run = run_once();
	cr_expect_str_eq(json_get_string(run, "status"), "failed");
	cr_expect(strstr(cJSON_PrintUnformatted(run), "taskdeck setup") != NULL, "%s",
	    cJSON_PrintUnformatted(run));
	cJSON_Delete(run);
	fake_provider_stop(fp);
	buf_free(&run_reply);
	free(id);
	free(id2);
}

Test(cli_setup, interactive_typed_key_with_echo_off)
{
	struct buf run_reply, out;
	struct fake_provider *fp;
	char url[200], line[256];
	int fd, status;
	pid_t pid;
	cJSON *doc, *p;

	start_replies(&run_reply);
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	fake_provider_script_gets(fp, 1);	/* setup's model list */
	snprintf(url, sizeof url, "%s", fake_provider_url(fp, "/v1"));
	buf_init(&out, 0);
	pid = forkpty(&fd, NULL, NULL, NULL);
	cr_assert(pid >= 0);
	if (pid == 0) {
		execl(harness_bin("taskdeck"), "taskdeck", "setup", (char *)NULL);
		_exit(127);
	}
	cr_assert(pty_wait(fd, &out, "Choice", 20000), "%s", out.data);
	pty_say(fd, "1\n");
	cr_assert(pty_wait(fd, &out, "Base URL", 5000), "%s", out.data);
	snprintf(line, sizeof line, "%s\n", url);
	pty_say(fd, line);
	cr_assert(pty_wait(fd, &out, "Environment variable, * or -", 5000), "%s", out.data);
	pty_say(fd, "*\n");
	cr_assert(pty_wait(fd, &out, "API key (not shown): ", 5000), "%s", out.data);
	usleep(200000);		/* let it turn the echo off */
	pty_say(fd, KEY1 "\n");
	cr_assert(pty_wait(fd, &out, "Model (number or name)", 20000), "%s", out.data);
	pty_say(fd, "2\n");
	cr_expect(pty_wait(fd, &out, "Restart the service", 20000), "%s", out.data);
	pty_wait(fd, &out, "\x04never", 2000);
	close(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", out.data);
	cr_expect_null(strstr(out.data, KEY1), "the key was echoed: %s", out.data);
	cr_expect(strstr(out.data, "provider-ollama") != NULL, "%s", out.data);
	cr_expect_str_eq(auth(fp, 0), "Bearer " KEY1);
	doc = read_settings();
	p = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "providers"), "ollama");
	cr_expect(json_get_string(p, "apiKeyCredential") && strncmp(json_get_string(p, "apiKeyCredential"), "cred_", 5)
	    == 0);
	cJSON_Delete(doc);
	expect_key_nowhere(KEY1);
	fake_provider_stop(fp);
	buf_free(&out);
	buf_free(&run_reply);
}

/*
 * A run rate-limited once: the agent waits as the provider asked (the
 * provider's maxRetries reaches it), the run completes, and the wait is a
 * run.progress "retrying" event that `runs logs` shows.
 */
Test(cli_setup, a_rate_limited_run_waits_and_says_so)
{
	static char limited[] = "{\"error\":{\"message\":\"Rate limit reached for tiny-2\","
	    "\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}";
	struct buf run_reply;
	struct fake_provider *fp;
	char settings[1024], *out = NULL;
	cJSON *run, *events, *ev, *retry = NULL;

	buf_init(&run_reply, 0);
	fake_openai_text(&run_reply, "Hello after the wait.");
	fake_openai_delta(&run_reply, "{}", "stop");
	fake_openai_done(&run_reply);
	replies[0] = (struct fake_reply){ 429, "application/json", limited, 0, 0,
	    "Retry-After: 1\n", 0 };
	replies[1] = (struct fake_reply){ 200, "text/event-stream", run_reply.data, 0, 0, NULL, 0 };
	fp = fake_provider_start(replies, 2);
	cr_assert_not_null(fp);
	snprintf(settings, sizeof settings, "{\"providers\": {\"local\": {\"kind\": \"openai\","
	    " \"baseUrl\": \"%s\", \"apiKeyEnv\": null, \"defaultModel\": \"tiny-2\","
	    " \"maxRetries\": 3}}, \"defaults\": {\"provider\": \"local\"}}",
	    fake_provider_url(fp, "/v1"));
	svc_stop(&svc);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
	run = run_once();
	cr_assert_str_eq(json_get_string(run, "status"), "completed", "%s",
	    json_get_string(cJSON_GetObjectItem(run, "error"), "message"));
	cr_expect_eq(fake_provider_count(fp), 2);

	events = http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", json_get_string(run, "id"));
	cJSON_ArrayForEach(ev, events) {
		const cJSON *d = cJSON_GetObjectItem(ev, "data");

		if (strcmp(json_get_string(ev, "type"), "run.progress") == 0 &&
		    json_get_string(d, "phase") != NULL &&
		    strcmp(json_get_string(d, "phase"), "retrying") == 0)
			retry = (cJSON *)d;
	}
	cr_assert_not_null(retry, "no run.progress retrying among %d events",
	    cJSON_GetArraySize(events));
	cr_expect_eq(json_num(retry, "attempt"), 1);
	cr_expect_eq(json_num(retry, "maxRetries"), 3);
	cr_expect_eq(json_num(retry, "delayMs"), 1000);
	cr_expect_str_eq(json_get_string(retry, "reason"), "rate_limited");
	cr_expect_str_eq(json_get_string(retry, "message"), "rate limited, retrying in 1 s (retry 1 of 3)");
	cJSON_Delete(events);

	run_capture(&svc, &out, "'%s' runs logs %s 2>&1", harness_bin("taskdeck"),
	    json_get_string(run, "id"));
	cr_expect(out != NULL && strstr(out, "rate limited, retrying in 1 s") != NULL, "%s", out);
	free(out);
	cJSON_Delete(run);
	fake_provider_stop(fp);
	buf_free(&run_reply);
}
