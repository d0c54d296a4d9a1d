/*
 * Readiness and setup through a real taskdeckd: GET /runtimes, POST /bootstrap,
 * POST /cli/install, the doctor checks and an uninstalled build finding its data.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static char tmp[256];		/* scratch directory of one test */
static char *saved_path;

static void
setup(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/tdready-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	saved_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	unsetenv("TASKDECK_AGENT");
	unsetenv("TD_TEST_NO_REPLAY_DIR");
}

static void
teardown(void)
{
	char cmd[400];

	if (svc.home[0] != '\0') {
		svc_stop(&svc);
		umount2(svc.home, MNT_DETACH);	/* doctor_fails_on_a_full_disk; else EINVAL */
	}
	svc_destroy(&svc);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	setenv("PATH", saved_path, 1);
	free(saved_path);
	unsetenv("TASKDECK_AGENT");
	unsetenv("XDG_BIN_HOME");
	unsetenv("TD_TEST_NO_REPLAY_DIR");
}

TestSuite(readiness, .init = setup, .fini = teardown, .timeout = 120);

/* obj as JSON text for a failure message (one static buffer). */
static const char *
js(const cJSON *obj)
{
	static char text[16384];

	if (!cJSON_PrintPreallocated((cJSON *)obj, text, sizeof text, false))
		snprintf(text, sizeof text, "(too long)");
	return text;
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

/* The runtime entry of framework from GET /runtimes (a copy; cJSON_Delete it). */
static cJSON *
runtime_of(const char *framework)
{
	struct http_resp r = http_req(&svc, "GET", "/api/v1/runtimes", NULL, NULL, true);
	cJSON *e, *found = NULL;

	cr_assert_eq(r.status, 200, "runtimes: %s", r.body);
	cr_assert(cJSON_IsArray(r.json));
	cr_assert_eq(cJSON_GetArraySize(r.json), 4, "four frameworks: %s", r.body);
	cJSON_ArrayForEach(e, r.json) {
		if (json_get_string(e, "framework") && strcmp(json_get_string(e, "framework"), framework) == 0)
			found = cJSON_Duplicate(e, true);
	}
	http_resp_free(&r);
	cr_assert_not_null(found, "no %s in runtimes", framework);
	return found;
}

static void
expect_runtime(const char *framework, const char *status, const char *version)
{
	cJSON *rt = runtime_of(framework);

	cr_expect_str_eq(json_get_string(rt, "status"), status, "%s: %s", framework, js(rt));
	if (version != NULL)
		cr_expect_str_eq(json_get_string(rt, "version") ? json_get_string(rt, "version") : "(none)", version,
		    "%s version", framework);
	cr_expect_str_eq(json_get_string(rt, "source"), strcmp(framework, "taskdeck") == 0 ? "managed" :
	    "external");
	cJSON_Delete(rt);
}

static cJSON *
bootstrap(const char *action)
{
	char body[64];
	struct http_resp r;
	cJSON *res;

	snprintf(body, sizeof body, "{\"action\":\"%s\"}", action);
	r = http_req(&svc, "POST", "/api/v1/bootstrap", body, NULL, true);
	cr_assert_eq(r.status, 200, "bootstrap %s: %s", action, r.body);
	res = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return res;
}

static bool
has_action(const cJSON *res, const char *action)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, cJSON_GetObjectItem(res, "actions"))
		if (cJSON_IsString(a) && strcmp(a->valuestring, action) == 0)
			return true;
	return false;
}

/* A fake CLI on PATH: a script that prints line for --version (or exits code). */
static void
fake_cli(const char *dir, const char *name, const char *line, int code)
{
	char path[512], text[512];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(text, sizeof text, "#!/bin/sh\n[ \"$1\" = --version ] || exit 64\n"
	    "echo '%s'\nexit %d\n", line, code);
	write_file(path, text, 0755);
}

Test(readiness, external_runtimes_on_path)
{
	char bin[300], path[4400], claude[400];

	snprintf(bin, sizeof bin, "%s/bin", tmp);
	mkdir(bin, 0700);
	fake_cli(bin, "claude", "1.0.3 (Claude Code)", 0);
	fake_cli(bin, "codex", "codex-cli 0.60.1", 0);
	snprintf(path, sizeof path, "%s:%s", bin, saved_path);
	setenv("PATH", path, 1);
	svc_start(&svc);
	setenv("PATH", saved_path, 1);

	expect_runtime("taskdeck", "ready", NULL);
	expect_runtime("claude-code", "outdated", "1.0.3");
	expect_runtime("codex", "ready", "0.60.1");

	/* A new version replaces the binary: seen at once, not served from a cache. */
	fake_cli(bin, "claude", "2.1.330 (Claude Code)", 0);
	expect_runtime("claude-code", "ready", "2.1.330");
	/* Present but not executable, then failing, then gone. */
	snprintf(claude, sizeof claude, "%s/claude", bin);
	cr_assert_eq(chmod(claude, 0644), 0);
	expect_runtime("claude-code", "broken", NULL);
	fake_cli(bin, "claude", "no such option", 3);
	expect_runtime("claude-code", "broken", NULL);
	fake_cli(bin, "claude", "Claude Code (no number)", 0);
	expect_runtime("claude-code", "broken", NULL);
	unlink(claude);
	expect_runtime("claude-code", "missing", NULL);
	{
		cJSON *rt = runtime_of("claude-code");
		cr_expect_null(cJSON_GetObjectItem(rt, "path"), "a missing runtime has no path");
		cJSON_Delete(rt);
	}
}

Test(readiness, configured_path_wins_over_path)
{
	char bin[300], other[300], path[4400], settings[1024];
	cJSON *rt;

	snprintf(bin, sizeof bin, "%s/bin", tmp);
	snprintf(other, sizeof other, "%s/other", tmp);
	mkdir(bin, 0700);
	mkdir(other, 0700);
	fake_cli(bin, "codex", "codex-cli 0.60.1", 0);
	fake_cli(other, "codex", "codex-cli 0.12.0", 0);
	snprintf(path, sizeof path, "%s:%s", bin, saved_path);
	setenv("PATH", path, 1);
	svc_prepare_home(&svc);
	snprintf(settings, sizeof settings, "{\"providers\":{\"replay\":{\"kind\":\"replay\",\"defaultModel\":\"quick\"}},"
	    "\"runtimes\":{\"codex\":{\"path\":\"%s/codex\"}}}", other);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
	setenv("PATH", saved_path, 1);

	rt = runtime_of("codex");
	cr_expect_str_eq(json_get_string(rt, "status"), "outdated");
	cr_expect_str_eq(json_get_string(rt, "version"), "0.12.0");
	cr_expect_str_eq(json_get_string(rt, "foundBy"), "settings");
	cr_expect_str_eq(json_get_string(rt, "minVersion"), "0.50.0");
	cJSON_Delete(rt);
}

struct boot_arg {
	cJSON *res;
};

static void *
boot_thread(void *p)
{
	struct boot_arg *a = p;

	a->res = bootstrap("runtime");
	return NULL;
}

/* A copy of the build's agent, named by TASKDECK_AGENT. */
static void
copy_agent(char *agent, size_t size)
{
	char cmd[1200];

	snprintf(agent, size, "%s/agent/taskdeck-agent", tmp);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/agent' && cp '%s' '%s'", tmp,
	    harness_bin("taskdeck-agent"), agent);
	cr_assert_eq(system(cmd), 0);
	setenv("TASKDECK_AGENT", agent, 1);
}

Test(readiness, bootstrap_repairs_a_removed_agent_once)
{
	enum { N = 4 };
	struct boot_arg args[N] = { 0 };
	pthread_t th[N];
	char agent[512];
	int restored = 0;
	cJSON *rt;

	copy_agent(agent, sizeof agent);
	svc_start(&svc);
	expect_runtime("taskdeck", "ready", NULL);
	cr_assert_eq(unlink(agent), 0);
	expect_runtime("taskdeck", "missing", NULL);
	rt = bootstrap("status");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(rt, "ok")), "status with no agent is not ok");
	cr_expect(cJSON_GetArraySize(cJSON_GetObjectItem(rt, "nextActions")) > 0);
	cJSON_Delete(rt);

	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, boot_thread, &args[i]), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(args[i].res, "ok")), "%s",
		    js(args[i].res));
		restored += has_action(args[i].res, "restored-agent");
		cJSON_Delete(args[i].res);
	}
	cr_expect_eq(restored, 1, "the agent was restored %d times, not once", restored);
	cr_expect_eq(access(agent, X_OK), 0, "the agent is back and executable");
	expect_runtime("taskdeck", "ready", NULL);

	/* Idempotent: nothing left to do. */
	rt = bootstrap("runtime");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(rt, "ok")));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(rt, "changed")));
	cJSON_Delete(rt);
}

Test(readiness, bootstrap_makes_the_agent_executable_again)
{
	char agent[512];
	cJSON *rt;

	copy_agent(agent, sizeof agent);
	svc_start(&svc);
	cr_assert_eq(chmod(agent, 0644), 0);
	expect_runtime("taskdeck", "broken", NULL);
	rt = bootstrap("runtime");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(rt, "ok")), "%s", js(rt));
	cr_expect(has_action(rt, "made-executable"));
	cJSON_Delete(rt);
	expect_runtime("taskdeck", "ready", NULL);
}

Test(readiness, bootstrap_reports_what_it_cannot_repair)
{
	cJSON *rt, *err;

	char blocker[300], agent[400];

	/* The agent's directory cannot exist (its parent is a file): no repair possible. */
	snprintf(blocker, sizeof blocker, "%s/file", tmp);
	write_file(blocker, "not a directory\n", 0600);
	snprintf(agent, sizeof agent, "%s/bin/taskdeck-agent", blocker);
	setenv("TASKDECK_AGENT", agent, 1);
	svc_start(&svc);
	expect_runtime("taskdeck", "missing", NULL);
	rt = bootstrap("runtime");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(rt, "ok")), "%s", js(rt));
	err = cJSON_GetObjectItem(rt, "error");
	cr_expect(json_get_string(err, "code") != NULL && (strcmp(json_get_string(err, "code"), "permission_denied") == 0 ||
	    strcmp(json_get_string(err, "code"), "runtime_missing") == 0), "%s", js(rt));
	cr_expect_not_null(json_get_string(err, "message"));
	cJSON_Delete(rt);
	expect_runtime("taskdeck", "missing", NULL);
}

Test(readiness, bootstrap_rejects_unknown_actions)
{
	struct http_resp r;

	svc_start(&svc);
	r = http_req(&svc, "POST", "/api/v1/bootstrap", "{\"action\":\"reboot\"}", NULL, true);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(http_error_code(&r), "invalid_request");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"),
	    "details"), "field"), "action");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/bootstrap", "{}", NULL, true);
	cr_expect_eq(r.status, 400, "no action: %s", r.body);
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/bootstrap", "{\"action\":\"status\"}", NULL, false);
	cr_expect_eq(r.status, 401, "setup needs the token");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/cli/install", NULL, NULL, false);
	cr_expect_eq(r.status, 401, "install needs the token");
	http_resp_free(&r);
}

Test(readiness, bootstrap_status_of_a_fresh_home)
{
	cJSON *st, *steps;

	svc_start(&svc);
	st = bootstrap("status");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(st, "ok")), "%s", js(st));
	steps = cJSON_GetObjectItem(st, "steps");
	for (const char *const *k = (const char *const[]){ "token", "settings",
	    "dataDirectories", "runtime", "provider", NULL }; *k; k++)
		cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(steps, *k), "ok")),
		    "step %s", *k);
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(steps, "provider"), "name"), "replay");
	cJSON_Delete(st);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (f == NULL)
		return NULL;
	buf = calloc(1, 65536);
	*len = fread(buf, 1, 65535, f);
	fclose(f);
	return buf;
}

static cJSON *
install(void)
{
	struct http_resp r = http_req(&svc, "POST", "/api/v1/cli/install", NULL, NULL, true);
	cJSON *res;

	cr_assert_eq(r.status, 200, "install: %s", r.body);
	res = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return res;
}

Test(readiness, cli_install_and_conflict)
{
	char bin[300], launcher[400], cmd[800], *out = NULL, *before, *after;
	const char foreign[] = "#!/bin/sh\necho my own taskdeck\n";
	size_t blen, alen;
	cJSON *res;

	snprintf(bin, sizeof bin, "%s/bin", tmp);
	snprintf(launcher, sizeof launcher, "%s/taskdeck", bin);
	setenv("XDG_BIN_HOME", bin, 1);
	svc_start(&svc);

	res = install();
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(res, "ok")), "%s", js(res));
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(res, "changed")));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(res, "onPath")), "%s is not on PATH", bin);
	cr_expect_str_eq(json_get_string(res, "path"), launcher);
	cr_expect_not_null(json_get_string(res, "nextAction"));
	cJSON_Delete(res);
	cr_assert_eq(access(launcher, X_OK), 0, "the launcher is executable");
	/* The launcher reaches this service without any environment. */
	snprintf(cmd, sizeof cmd, "env -u TASKDECK_HOME -u TASKDECK_URL -u TASKDECK_TOKEN "
	    "'%s' doctor --json", launcher);
	cr_expect_eq(run_capture(&svc, &out, "%s", cmd), 0, "launcher doctor: %s", out);
	cr_expect(out != NULL && strstr(out, "\"ready\"") != NULL, "%s", out);
	free(out);

	res = install();
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(res, "ok")));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(res, "changed")), "a second install changes nothing");
	cJSON_Delete(res);

	/* A foreign file is never overwritten. */
	write_file(launcher, foreign, 0755);
	before = slurp(launcher, &blen);
	res = install();
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(res, "ok")), "%s", js(res));
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(res, "error"), "code"), "configuration_conflict");
	cJSON_Delete(res);
	after = slurp(launcher, &alen);
	cr_expect_eq(alen, blen);
	cr_expect(alen == strlen(foreign) && memcmp(after, foreign, alen) == 0,
	    "the foreign file changed");
	free(before);
	free(after);
}

Test(readiness, cli_install_sees_path)
{
	char bin[300], path[4400];
	cJSON *res;

	snprintf(bin, sizeof bin, "%s/bin", tmp);
	mkdir(bin, 0700);
	setenv("XDG_BIN_HOME", bin, 1);
	snprintf(path, sizeof path, "%s:%s", saved_path, bin);
	setenv("PATH", path, 1);
	svc_start(&svc);
	setenv("PATH", saved_path, 1);
	res = install();
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(res, "onPath")), "%s", js(res));
	cJSON_Delete(res);
}

/* The doctor check named id, or NULL. */
static const cJSON *
doctor_check(const cJSON *doc, const char *id)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "checks"))
		if (json_get_string(c, "id") && strcmp(json_get_string(c, "id"), id) == 0)
			return c;
	return NULL;
}

static cJSON *
doctor(void)
{
	struct http_resp r = http_req(&svc, "GET", "/api/v1/doctor", NULL, NULL, true);
	cJSON *res;

	cr_assert_eq(r.status, 200);
	res = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return res;
}

static void
start_with_settings(const char *extra)
{
	char settings[1024];
	int port = harness_closed_port();

	svc_prepare_home(&svc);
	snprintf(settings, sizeof settings, "{\"providers\":{\"replay\":{\"kind\":\"replay\",\"defaultModel\":\"quick\"},"
	    "\"closed\":{\"kind\":\"openai\",\"baseUrl\":\"http://127.0.0.1:%d/v1\",\"defaultModel\":\"m\"},"
	    "\"keyed\":{\"kind\":\"openai\",\"baseUrl\":\"http://127.0.0.1:%d/v1\","
	    "\"apiKeyEnv\":\"TD_READINESS_UNSET_KEY\",\"defaultModel\":\"m\"}}%s}", port, port,
	    extra);
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
}

Test(readiness, doctor_disk_thresholds)
{
	cJSON *doc;
	const cJSON *c;

	start_with_settings(",\"doctor\":{\"diskWarnMiB\":1048576,\"diskFailMiB\":0}");
	doc = doctor();
	c = doctor_check(doc, "disk-space");
	cr_assert_not_null(c);
	cr_expect_str_eq(json_get_string(c, "status"), "warn", "%s", json_get_string(c, "message"));
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ready")), "a warning keeps it ready");
	cJSON_Delete(doc);
	svc_destroy(&svc);

	start_with_settings(",\"doctor\":{\"diskFailMiB\":1048576}");
	doc = doctor();
	c = doctor_check(doc, "disk-space");
	cr_expect_str_eq(json_get_string(c, "status"), "fail", "%s", json_get_string(c, "message"));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ready")), "not ready below diskFailMiB");
	cJSON_Delete(doc);
	svc_destroy(&svc);

	start_with_settings("");
	doc = doctor();
	c = doctor_check(doc, "disk-space");
	cr_expect_str_eq(json_get_string(c, "status"), "ok", "%s", json_get_string(c, "message"));
	c = doctor_check(doc, "runtime-taskdeck");
	cr_expect_str_eq(json_get_string(c, "status"), "ok");
	cr_expect(strstr(json_get_string(c, "message"), "build tree") != NULL, "%s", json_get_string(c, "message"));
	c = doctor_check(doc, "runtime-codex");
	cr_expect_not_null(c);
	cJSON_Delete(doc);
}

Test(readiness, doctor_provider_checks)
{
	cJSON *doc;
	const cJSON *c;

	unsetenv("TD_READINESS_UNSET_KEY");
	start_with_settings(",\"defaults\":{\"provider\":\"keyed\"}");
	doc = doctor();
	c = doctor_check(doc, "provider");
	cr_expect_str_eq(json_get_string(c, "status"), "fail", "%s", json_get_string(c, "message"));
	cr_expect(strstr(json_get_string(c, "message"), "TD_READINESS_UNSET_KEY") != NULL);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ready")));
	cJSON_Delete(doc);
	svc_destroy(&svc);

	start_with_settings(",\"defaults\":{\"provider\":\"closed\"}");
	doc = doctor();
	c = doctor_check(doc, "provider");
	cr_expect_str_eq(json_get_string(c, "status"), "warn", "%s", json_get_string(c, "message"));
	cr_expect(strstr(json_get_string(c, "message"), "not reachable") != NULL, "%s", json_get_string(c, "message"));
	cJSON_Delete(doc);
}

Test(readiness, uninstalled_build_finds_its_data)
{
	struct http_resp r;
	char path[128], *project;
	cJSON *doc, *run;
	const cJSON *c;

	unsetenv("TASKDECK_REPLAY_DIR");
	setenv("TD_TEST_NO_REPLAY_DIR", "1", 1);
	svc_start(&svc);
	doc = doctor();
	c = doctor_check(doc, "replay-transcripts");
	cr_expect_str_eq(json_get_string(c, "status"), "ok", "%s", json_get_string(c, "message"));
	cr_expect(strstr(json_get_string(c, "message"), "(found: build tree)") != NULL, "%s", json_get_string(c, "message"));
	cJSON_Delete(doc);

	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"p\"}", NULL, true);
	cr_assert_eq(r.status, 201);
	project = strdup(json_get_string(r.json, "id"));
	http_resp_free(&r);
	snprintf(path, sizeof path, "{\"project\":\"%s\",\"prompt\":\"hi\",\"config\":"
	    "{\"provider\":\"replay\",\"model\":\"quick\"}}", project);
	r = http_req(&svc, "POST", "/api/v1/runs", path, NULL, true);
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = run_wait_final(&svc, json_get_string(r.json, "id"), 60000);
	http_resp_free(&r);
	cr_assert_not_null(run);
	cr_expect_str_eq(json_get_string(run, "status"), "completed", "%s", js(run));
	cJSON_Delete(run);
	free(project);
}

/*
 * A real full disk: the home on a 4 MiB tmpfs (needs root to mount; skipped
 * otherwise, the thresholds test above still runs).
 */
Test(readiness, doctor_fails_on_a_full_disk)
{
	char settings[256], fill[400], block[65536];
	cJSON *doc;
	const cJSON *c;
	int fd;

	svc_prepare_home(&svc);
	if (mount("tmpfs", svc.home, "tmpfs", 0, "size=4m,mode=700") != 0)
		cr_skip_test("cannot mount a tmpfs here (%s): needs root", strerror(errno));
	snprintf(settings, sizeof settings, "{\"providers\":{\"replay\":{\"kind\":\"replay\","
	    "\"defaultModel\":\"quick\"}},\"doctor\":{\"diskWarnMiB\":0,\"diskFailMiB\":0}}");
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
	doc = doctor();
	c = doctor_check(doc, "disk-space");
	cr_expect_str_eq(json_get_string(c, "status"), "ok", "%s", json_get_string(c, "message"));
	cJSON_Delete(doc);

	snprintf(fill, sizeof fill, "%s/fill", svc.home);
	fd = open(fill, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	memset(block, 'f', sizeof block);
	while (write(fd, block, sizeof block) > 0)
		;
	while (write(fd, block, 512) > 0)
		;
	close(fd);
	doc = doctor();
	c = doctor_check(doc, "disk-space");
	cr_expect_str_eq(json_get_string(c, "status"), "fail", "%s", json_get_string(c, "message"));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ready")), "not ready on a full disk");
	cJSON_Delete(doc);

	unlink(fill);
	doc = doctor();
	cr_expect_str_eq(json_get_string(doctor_check(doc, "disk-space"), "status"), "ok");
	cJSON_Delete(doc);
	svc_stop(&svc);
	cr_expect_eq(umount2(svc.home, MNT_DETACH), 0);
}

Test(readiness, status_reads_and_runtime_writes_missing_settings)
{
	char path[400];
	cJSON *st;

	svc_start(&svc);
	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	cr_assert_eq(unlink(path), 0);
	st = bootstrap("status");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(st, "ok")));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(st,
	    "steps"), "settings"), "ok")));
	cJSON_Delete(st);
	cr_expect_neq(access(path, F_OK), 0, "status wrote settings.json");
	st = bootstrap("runtime");
	cr_expect(has_action(st, "wrote-default-settings"), "%s", js(st));
	cJSON_Delete(st);
	cr_expect_eq(access(path, F_OK), 0);

	/* A settings file that does not parse is left as it is. */
	svc_write_file(&svc, "settings.json", "{not json");
	st = bootstrap("runtime");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(st, "ok")));
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(st, "error"), "code"), "configuration_conflict");
	cJSON_Delete(st);
	{
		FILE *f = fopen(path, "r");
		char back[32] = "";
		cr_assert_not_null(f);
		cr_expect_not_null(fgets(back, sizeof back, f));
		fclose(f);
		cr_expect_str_eq(back, "{not json");
	}
}

Test(readiness, a_copy_outside_the_build_tree_uses_installed_paths)
{
	char home[300], cmd[4096], daemon[500], cli[500], *out = NULL;
	cJSON *doc;

	/* harness_bin answers in one static buffer */
	snprintf(daemon, sizeof daemon, "%s", harness_bin("taskdeckd"));
	snprintf(cli, sizeof cli, "%s", harness_bin("taskdeck"));
	snprintf(home, sizeof home, "%s/home", tmp);
	mkdir(home, 0700);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s/taskdeckd' && TASKDECK_HOME='%s' "
	    "'%s/taskdeckd' --detach >/dev/null && TASKDECK_HOME='%s' '%s' runtimes --json; "
	    "rc=$?; TASKDECK_HOME='%s' '%s' daemon stop >/dev/null; exit $rc",
	    daemon, tmp, home, tmp, home, cli, home, cli);
	cr_assert_eq(run_capture(NULL, &out, "%s", cmd), 0, "%s", out);
	doc = cJSON_Parse(out);
	cr_assert_not_null(doc, "%s", out);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(doc, 0), "foundBy"), "installed", "%s", out);
	cJSON_Delete(doc);
	free(out);
}

Test(readiness, doctor_fails_when_the_default_framework_is_missing)
{
	cJSON *doc;
	const cJSON *c;

	setenv("PATH", "/usr/bin:/bin", 1);	/* no claude here */
	start_with_settings(",\"defaults\":{\"framework\":\"claude-code\"}");
	setenv("PATH", saved_path, 1);
	doc = doctor();
	c = doctor_check(doc, "runtime-claude-code");
	cr_assert_not_null(c);
	cr_expect_str_eq(json_get_string(c, "status"), "fail", "%s", json_get_string(c, "message"));
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "ready")));
	c = doctor_check(doc, "runtime-codex");
	cr_expect_str_neq(json_get_string(c, "status"), "fail", "codex is not the default");
	cJSON_Delete(doc);
}
