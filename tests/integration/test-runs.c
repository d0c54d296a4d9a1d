/*
 * Runs and sessions of a real taskdeckd with the real taskdeck-agent and the
 * replay transcripts (docs/http-api.md Runs and Sessions, docs/settings.md).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "timeutil.h"

#define FINAL_WAIT_MS 30000

/* Tests that start their own service (a prepared settings.json) use runs_home. */
TestSuite(runs, .init = svc_setup, .fini = svc_teardown, .timeout = 60);
TestSuite(runs_home, .fini = svc_teardown, .timeout = 60);

static struct http_resp api_f(const char *, const char *, ...) __attribute__((format(printf, 2, 3)));

/* A request from fmt, which gives "PATH BODY": the path ends at the first space. */
static struct http_resp
api_f(const char *method, const char *fmt, ...)
{
	char path[256], body[4096];
	const char *sep;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	sep = strchr(body, ' ');
	cr_assert_not_null(sep);
	snprintf(path, sizeof path, "%.*s", (int)(sep - body), body);
	return http_api(&svc, method, path, sep + 1);
}

static cJSON *
run_get(const char *id)
{
	return http_get_json(&svc, "/api/v1/runs/%s", id);
}

/* Polls until the run has status; asserts it happens within timeout_ms. */
static void
run_wait_status(const char *id, const char *status, int timeout_ms)
{
	int64_t end = clock_mono_ms() + timeout_ms;
	char last[32] = "";

	for (;;) {
		cJSON *run = run_get(id);

		snprintf(last, sizeof last, "%s", json_str_or_none(run, "status"));
		cJSON_Delete(run);
		if (strcmp(last, status) == 0)
			return;
		cr_assert_lt(clock_mono_ms(), end, "run %s is still %s, want %s", id, last, status);
		usleep(50000);
	}
}

/* Asserts an error answer: status, code, and a details member when key is given. */
static void
expect_error(struct http_resp *r, long status, const char *code, const char *key,
    const char *value, const char *what)
{
	const cJSON *details = cJSON_GetObjectItem(cJSON_GetObjectItem(r->json, "error"),
	    "details");

	cr_expect_eq(r->status, status, "%s: status %ld, want %ld (%s)", what, r->status,
	    status, r->body);
	cr_expect_str_eq(http_error_code(r) ? http_error_code(r) : "(none)", code, "%s: %s",
	    what, r->body);
	if (key != NULL)
		cr_expect_str_eq(json_str_or_none(details, key), value, "%s: details.%s in %s", what,
		    key, r->body);
}

static int
array_size(const cJSON *j)
{
	return cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
}

/* A private directory for a test; rm -rf'd by dir_remove. */
static void
dir_make(char *out, size_t n)
{
	snprintf(out, n, "/tmp/tdruns-XXXXXX");
	cr_assert_not_null(mkdtemp(out));
}

static void
dir_remove(const char *dir)
{
	char *out;

	chmod(dir, 0700);
	run_capture(NULL, &out, "chmod -R u+rwx '%s'; rm -rf '%s'", dir, dir);
	free(out);
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* /proc/PID/<name> into buf with NULs turned into spaces; its length or -1. */
static ssize_t
proc_read(pid_t pid, const char *name, char *buf, size_t n)
{
	char path[64];
	FILE *f;
	size_t len;

	snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, name);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	len = fread(buf, 1, n - 1, f);
	fclose(f);
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (len > 0 && buf[len - 1] == ' ')
		len--;
	buf[len] = '\0';
	return (ssize_t)len;
}

/* True while pid exists and is not a zombie. */
static bool
proc_alive(pid_t pid)
{
	char stat[512], *p;

	if (proc_read(pid, "stat", stat, sizeof stat) < 0)
		return false;
	p = strrchr(stat, ')');
	return p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static pid_t
proc_parent(pid_t pid)
{
	char stat[512], *p;

	if (proc_read(pid, "stat", stat, sizeof stat) < 0 || (p = strrchr(stat, ')')) == NULL)
		return -1;
	return (pid_t)strtol(p + 4, NULL, 10);
}

/* Calls fn for every live process; stops when fn returns false. */
static void
proc_each(bool (*fn)(pid_t, void *), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end == '\0' && pid > 0 && proc_alive((pid_t)pid) && !fn((pid_t)pid, arg))
			break;
	}
	closedir(d);
}

struct agent_scan {
	pid_t service;
	pid_t found[16];
	int n;
};

/* The agents: children of the service running taskdeck-agent. */
static bool
agent_match(pid_t pid, void *arg)
{
	struct agent_scan *sc = arg;
	char cmd[1024], exe[PATH_MAX], link[64];
	ssize_t n;

	if (proc_parent(pid) != sc->service || sc->n >= 16)
		return true;
	snprintf(link, sizeof link, "/proc/%ld/exe", (long)pid);
	n = readlink(link, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (strstr(exe, "taskdeck-agent") != NULL ||
	    (proc_read(pid, "cmdline", cmd, sizeof cmd) > 0 && strstr(cmd, "taskdeck-agent")))
		sc->found[sc->n++] = pid;
	return true;
}

static int
agents_of(pid_t service, pid_t *out, int max)
{
	struct agent_scan sc = { .service = service };

	proc_each(agent_match, &sc);
	for (int i = 0; i < sc.n && i < max; i++)
		out[i] = sc.found[i];
	return sc.n;
}

struct command_scan {
	const char *cmdline;
	const char *cwd;
	int n;
};

static bool
command_match(pid_t pid, void *arg)
{
	struct command_scan *sc = arg;
	char cmd[256], link[64], cwd[PATH_MAX];
	ssize_t n;

	if (proc_read(pid, "cmdline", cmd, sizeof cmd) < 0 || strcmp(cmd, sc->cmdline) != 0)
		return true;
	snprintf(link, sizeof link, "/proc/%ld/cwd", (long)pid);
	n = readlink(link, cwd, sizeof cwd - 1);
	if (n > 0) {
		cwd[n] = '\0';
		if (strcmp(cwd, sc->cwd) == 0)
			sc->n++;
	}
	return true;
}

/* How many live processes run cmdline (arguments joined by spaces) in dir cwd. */
static int
commands_in(const char *cmdline, const char *cwd)
{
	struct command_scan sc = { cmdline, cwd, 0 };

	proc_each(command_match, &sc);
	return sc.n;
}

/* Polls cond(arg) for up to ms; its last value. */
static bool
eventually(bool (*cond)(void *), void *arg, int ms)
{
	int64_t end = clock_mono_ms() + ms;

	while (!cond(arg)) {
		if (clock_mono_ms() > end)
			return false;
		usleep(50000);
	}
	return true;
}

/* ---------------------------------------------------------------- cwd --- */

struct cwd_case {
	const char *path;	/* below the test directory unless it is relative */
	const char *reason;
	bool root_bypasses;	/* permission bits that root ignores */
};

static const struct cwd_case bad_cwds[] = {
	{ "relative/dir", "not-absolute", false },
	{ "./here", "not-absolute", false },
	{ "/missing", "not-found", false },
	{ "/missing/deeper", "not-found", false },
	{ "/file", "not-a-directory", false },
	{ "/file/sub", "not-a-directory", false },
	{ "/readonly", "not-writable", true },
};

Test(runs, cwd_rules)
{
	char dir[64], path[256], real[128], want[PATH_MAX], *project;
	struct http_resp r;
	cJSON *run, *ses, *list;
	FILE *f;

	project = http_project_new(&svc, "cwd");
	dir_make(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/file", dir);
	f = fopen(path, "w");
	fputs("x", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/readonly", dir);
	cr_assert_eq(mkdir(path, 0500), 0);
	snprintf(real, sizeof real, "%s/real", dir);
	cr_assert_eq(mkdir(real, 0700), 0);
	snprintf(path, sizeof path, "%s/link", dir);
	cr_assert_eq(symlink(real, path), 0);

	for (size_t i = 0; i < sizeof bad_cwds / sizeof bad_cwds[0]; i++) {
		const struct cwd_case *c = &bad_cwds[i];

		if (c->root_bypasses && geteuid() == 0) {
			cr_log_info("running as root: skipping the %s row (root ignores mode 0500)",
			    c->reason);
			continue;
		}
		snprintf(path, sizeof path, "%s%s", c->path[0] == '/' ? dir : "", c->path);
		r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"p\","
		    "\"cwd\":\"%s\",\"config\":{\"model\":\"quick\"}}", project, path);
		expect_error(&r, 400, "invalid_cwd", "reason", c->reason, path);
		http_resp_free(&r);
	}
	list = http_get_json(&svc, "/api/v1/sessions?project=%s", project);
	cr_expect_eq(array_size(list), 0, "a refused cwd made a session: %s",
	    cJSON_PrintUnformatted(list));
	cJSON_Delete(list);

	/* A symlink (and a path with . and //) is recorded as the directory itself. */
	cr_assert_not_null(realpath(real, want));
	snprintf(path, sizeof path, "%s/keep.txt", real);
	f = fopen(path, "w");
	fputs("mine", f);
	fclose(f);
	const char *spellings[] = { "/link", "//real/./" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s%s", dir, spellings[i]);
		run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"cwd\":\"%s\","
		    "\"config\":{\"model\":\"quick\"}}", project, path);
		cr_expect_str_eq(json_str_or_none(run, "cwd"), want, "run cwd for %s", path);
		ses = http_get_json(&svc, "/api/v1/sessions/%s", json_get_string(run, "sessionId"));
		cr_expect_str_eq(json_str_or_none(ses, "cwd"), want, "session cwd for %s", path);
		cr_expect_str_eq(json_str_or_none(ses, "workspace"), "external");
		cJSON_Delete(ses);
		cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
		cJSON_Delete(run);
	}
	/* The caller's directory is theirs: nothing is deleted. */
	cr_expect(is_dir(real), "the external directory was removed");
	cr_expect_eq(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/keep.txt", real);
	cr_expect_eq(access(path, F_OK), 0, "a file of the external directory was removed");

	/* No cwd: a managed workspace under the home, and the application defaults. */
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\"}", project);
	ses = http_get_json(&svc, "/api/v1/sessions/%s", json_get_string(run, "sessionId"));
	snprintf(want, sizeof want, "%s/workspaces/%s", svc.home, json_get_string(run, "sessionId"));
	cr_expect_str_eq(json_str_or_none(ses, "workspace"), "managed");
	cr_expect_str_eq(json_str_or_none(ses, "cwd"), want);
	cr_expect_str_eq(json_str_or_none(run, "cwd"), want);
	cr_expect(is_dir(want), "the managed workspace %s does not exist", want);
	cJSON *cfg = cJSON_GetObjectItem(run, "config");
	cr_expect_str_eq(json_str_or_none(cfg, "framework"), "taskdeck");
	cr_expect_str_eq(json_str_or_none(cfg, "provider"), "replay");
	cr_expect_str_eq(json_str_or_none(cfg, "model"), "research", "the provider's defaultModel");
	cr_expect_str_eq(json_str_or_none(cfg, "effort"), "medium");
	cr_expect_str_eq(json_str_or_none(run, "permissionProfile"), "workspace-write");
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cr_expect(is_dir(want), "the managed workspace vanished after the run");
	cJSON_Delete(ses);
	cJSON_Delete(run);
	dir_remove(dir);
	free(project);
}

/* ------------------------------------------------------ session reuse --- */

Test(runs, session_reuse_and_refusals)
{
	char dir[64], other[64], real[PATH_MAX], sid[64], *p, *q;
	cJSON *run1, *run2, *run3, *ses, *list;
	struct http_resp r;
	char updated[40];

	p = http_project_new(&svc, "reuse");
	q = http_project_new(&svc, "other");
	dir_make(dir, sizeof dir);
	dir_make(other, sizeof other);
	cr_assert_not_null(realpath(dir, real));

	run1 = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"first\",\"cwd\":\"%s\","
	    "\"config\":{\"model\":\"quick\"}}", p, dir);
	snprintf(sid, sizeof sid, "%s", json_get_string(run1, "sessionId"));
	cJSON_Delete(run_final_within(&svc, json_get_string(run1, "id"), "completed", FINAL_WAIT_MS));
	ses = http_get_json(&svc, "/api/v1/sessions/%s", sid);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(ses, "lastRun"), "id"), json_str_or_none(run1, "id"));
	snprintf(updated, sizeof updated, "%s", json_str_or_none(ses, "updatedAt"));
	cJSON_Delete(ses);

	run2 = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"second\",\"sessionId\":\"%s\"}", p, sid);
	cr_expect_str_eq(json_str_or_none(run2, "sessionId"), sid, "the session was not reused");
	cr_expect_str_eq(json_str_or_none(run2, "cwd"), real);
	cr_expect(cJSON_Compare(cJSON_GetObjectItem(run2, "config"),
	    cJSON_GetObjectItem(run1, "config"), true), "the session's configuration applies");
	cJSON_Delete(run_final_within(&svc, json_get_string(run2, "id"), "completed", FINAL_WAIT_MS));

	ses = http_get_json(&svc, "/api/v1/sessions/%s", sid);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(ses, "lastRun"), "id"), json_str_or_none(run2, "id"));
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(ses, "lastRun"), "status"), "completed");
	cr_expect_gt(strcmp(json_str_or_none(ses, "updatedAt"), updated), 0,
	    "session updatedAt did not move on");
	cr_expect_str_eq(json_str_or_none(ses, "title"), "first");
	cJSON_Delete(ses);
	list = http_get_json(&svc, "/api/v1/sessions?project=%s", p);
	cr_expect_eq(array_size(list), 1, "continuing made another session");
	cJSON_Delete(list);

	/* The same directory, spelled differently, is accepted. */
	run3 = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"third\",\"sessionId\":\"%s\","
	    "\"cwd\":\"%s/.\"}", p, sid, dir);
	cJSON_Delete(run_final_within(&svc, json_get_string(run3, "id"), "completed", FINAL_WAIT_MS));
	list = http_get_json(&svc, "/api/v1/runs?session=%s", sid);
	cr_assert_eq(array_size(list), 3);
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(list, 0), "id"), json_str_or_none(run3, "id"), "newest first");
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(list, 1), "id"), json_str_or_none(run2, "id"));
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(list, 2), "id"), json_str_or_none(run1, "id"));
	cJSON_Delete(list);

	r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"x\",\"sessionId\":\"%s\","
	    "\"cwd\":\"%s\"}", p, sid, other);
	expect_error(&r, 409, "cwd_mismatch", NULL, NULL, "another cwd");
	http_resp_free(&r);
	r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"x\",\"sessionId\":\"%s\"}",
	    q, sid);
	expect_error(&r, 400, "invalid_request", "field", "sessionId", "another project's session");
	http_resp_free(&r);
	r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"x\","
	    "\"sessionId\":\"ses_0123456789abcdef01234567\"}", p);
	expect_error(&r, 404, "not_found", "resource", "session", "unknown session");
	http_resp_free(&r);
	r = http_api(&svc, "POST", "/api/v1/runs",
	    "{\"project\":\"prj_0123456789abcdef01234567\",\"prompt\":\"x\"}");
	expect_error(&r, 404, "not_found", "resource", "project", "unknown project");
	http_resp_free(&r);
	r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"x\",\"sessionId\":\"%s\","
	    "\"config\":{\"model\":\"quick\"}}", p, sid);
	expect_error(&r, 400, "invalid_request", "field", "config", "config with sessionId");
	http_resp_free(&r);

	list = http_get_json(&svc, "/api/v1/runs?session=%s", sid);
	cr_expect_eq(array_size(list), 3, "a refused request made a run");
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/runs?project=%s", q);
	cr_expect_eq(array_size(list), 0, "a refused request made a run in the other project");
	cJSON_Delete(list);
	cJSON_Delete(run1);
	cJSON_Delete(run2);
	cJSON_Delete(run3);
	dir_remove(dir);
	dir_remove(other);
	free(p);
	free(q);
}

/* --------------------------------------------------------- precedence --- */

static const char precedence_settings[] =
    "{\"defaults\": {\"framework\": \"taskdeck\", \"provider\": \"alt\", \"model\": null,\n"
    "               \"effort\": \"high\", \"permissionProfile\": \"read-only\"},\n"
    " \"providers\": {\"replay\": {\"kind\": \"replay\", \"defaultModel\": \"research\"},\n"
    "               \"alt\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"}}}\n";

struct precedence_case {
	const char *project_defaults;	/* a patch, or NULL */
	const char *request;		/* extra members of the run request */
	const char *provider, *model, *effort, *profile;
};

/*
 * Member by member: request config, project defaults, settings defaults
 * (provider alt, effort high, read-only), provider defaultModel.
 */
static const struct precedence_case precedence[] = {
	{ NULL, "", "alt", "quick", "high", "read-only" },
	{ NULL, ",\"config\":{\"provider\":\"replay\"}", "replay", "research", "high", "read-only" },
	{ "{\"model\":\"fail\",\"permissionProfile\":\"full-access\"}", "",
	  "alt", "fail", "high", "full-access" },
	{ "{\"model\":\"fail\",\"effort\":\"low\"}", ",\"config\":{\"model\":\"quick\"}",
	  "alt", "quick", "low", "read-only" },
	{ "{\"provider\":\"replay\",\"effort\":\"medium\"}", "", "replay", "research", "medium",
	  "read-only" },
	{ "{\"provider\":\"replay\",\"model\":\"fail\",\"permissionProfile\":\"ask\"}",
	  ",\"config\":{\"effort\":\"low\"},\"permissionProfile\":\"workspace-write\"",
	  "replay", "fail", "low", "workspace-write" },
};

#define NPREC (sizeof precedence / sizeof precedence[0])

static void
defaults_patch(const char *project, const char *patch)
{
	cJSON *d = http_get_json(&svc, "/api/v1/projects/%s/session-defaults", project);
	struct http_resp r = api_f("PATCH", "/api/v1/projects/%s/session-defaults "
	    "{\"expectedUpdatedAt\":\"%s\",\"patch\":%s}", project, json_get_string(d, "updatedAt"), patch);

	cr_assert_eq(r.status, 200, "defaults %s: %s", patch, r.body);
	http_resp_free(&r);
	cJSON_Delete(d);
}

static void
expect_config(const cJSON *cfg, const struct precedence_case *c, const char *what, size_t row)
{
	cr_expect_str_eq(json_str_or_none(cfg, "framework"), "taskdeck", "row %zu %s", row, what);
	cr_expect_str_eq(json_str_or_none(cfg, "provider"), c->provider, "row %zu %s", row, what);
	cr_expect_str_eq(json_str_or_none(cfg, "model"), c->model, "row %zu %s", row, what);
	cr_expect_str_eq(json_str_or_none(cfg, "effort"), c->effort, "row %zu %s", row, what);
}

Test(runs_home, configuration_precedence)
{
	char *projects[NPREC], *runs[NPREC], sessions[NPREC][64];
	cJSON *run, *cfg;

	svc_prepare_home(&svc);
	svc_write_file(&svc, "settings.json", precedence_settings);
	svc_restart(&svc);

	for (size_t i = 0; i < NPREC; i++) {
		const struct precedence_case *c = &precedence[i];

		projects[i] = http_project_new(&svc, "precedence");
		if (c->project_defaults != NULL)
			defaults_patch(projects[i], c->project_defaults);
		run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\"%s}", projects[i], c->request);
		runs[i] = strdup(json_get_string(run, "id"));
		snprintf(sessions[i], sizeof sessions[i], "%s", json_get_string(run, "sessionId"));
		expect_config(cJSON_GetObjectItem(run, "config"), c, "run config", i);
		cr_expect_str_eq(json_str_or_none(run, "permissionProfile"), c->profile, "row %zu profile", i);
		cfg = http_get_json(&svc, "/api/v1/sessions/%s/config", sessions[i]);
		expect_config(cfg, c, "session config", i);
		cr_expect_eq(json_num(cfg, "revision"), 1);
		cJSON_Delete(cfg);
		cJSON_Delete(run);
	}
	for (size_t i = 0; i < NPREC; i++) {
		run = run_final_within(&svc, runs[i], NULL, FINAL_WAIT_MS);
		cr_expect_str_eq(json_str_or_none(run, "status"),
		    strcmp(precedence[i].model, "fail") == 0 ? "failed" : "completed",
		    "row %zu ran %s", i, precedence[i].model);
		cJSON_Delete(run);
	}

	/* New defaults reach new sessions only. */
	defaults_patch(projects[2], "{\"model\":\"quick\",\"effort\":\"low\"}");
	cfg = http_get_json(&svc, "/api/v1/sessions/%s/config", sessions[2]);
	expect_config(cfg, &precedence[2], "existing session after a defaults change", 2);
	cr_expect_eq(json_num(cfg, "revision"), 1);
	cJSON_Delete(cfg);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"again\",\"sessionId\":\"%s\"}",
	    projects[2], sessions[2]);
	expect_config(cJSON_GetObjectItem(run, "config"), &precedence[2], "next run", 2);
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "failed", FINAL_WAIT_MS));
	cJSON_Delete(run);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"new\"}", projects[2]);
	expect_config(cJSON_GetObjectItem(run, "config"), &(struct precedence_case){
	    NULL, NULL, "alt", "quick", "low", NULL }, "new session", 2);
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cJSON_Delete(run);
	for (size_t i = 0; i < NPREC; i++) {
		free(projects[i]);
		free(runs[i]);
	}
}

/* ------------------------------------------------ session configuration --- */

struct bad_config {
	const char *patch;
	long status;
	const char *code;
	const char *field;
};

static const struct bad_config bad_configs[] = {
	{ "{\"provider\":\"nope\"}", 422, "invalid_configuration", "provider" },
	{ "{\"provider\":null}", 422, "invalid_configuration", "provider" },
	{ "{\"framework\":\"codex\"}", 422, "invalid_configuration", "framework" },
	{ "{\"framework\":\"claude-code\",\"model\":\"quick\"}", 422, "invalid_configuration",
	  "framework" },
	{ "{\"model\":\"no-such-transcript\"}", 422, "invalid_configuration", "model" },
	{ "{\"model\":\"../replay/quick\"}", 422, "invalid_configuration", "model" },
	{ "{\"effort\":\"extreme\"}", 400, "invalid_request", "patch.effort" },
	{ "{\"colour\":\"red\"}", 400, "invalid_request", "patch.colour" },
};

Test(runs, session_configuration_revisions)
{
	char sid[64];
	struct http_resp r;
	cJSON *run, *cfg, *snap, *cur;

	char *p = http_project_new(&svc, "config");
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"config\":{\"model\":\"quick\"}}", p);
	snprintf(sid, sizeof sid, "%s", json_get_string(run, "sessionId"));
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cJSON_Delete(run);

	cfg = http_get_json(&svc, "/api/v1/sessions/%s/config", sid);
	cr_expect_eq(json_num(cfg, "revision"), 1);
	cr_expect_str_eq(json_str_or_none(cfg, "sessionId"), sid);
	cr_expect_str_eq(json_str_or_none(cfg, "provider"), "replay");
	cr_expect_str_eq(json_str_or_none(cfg, "model"), "quick");
	cr_expect_str_eq(json_str_or_none(cfg, "effort"), "medium");
	cJSON_Delete(cfg);

	r = api_f("PATCH", "/api/v1/sessions/%s/config {\"expectedRevision\":1,"
	    "\"patch\":{\"effort\":\"high\"}}", sid);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_eq(json_num(r.json, "revision"), 2);
	cr_expect_str_eq(json_str_or_none(r.json, "effort"), "high");
	cr_expect_str_eq(json_str_or_none(r.json, "model"), "quick", "an omitted key is kept");
	cr_expect_str_eq(json_str_or_none(r.json, "provider"), "replay", "an omitted key is kept");
	http_resp_free(&r);

	r = api_f("PATCH", "/api/v1/sessions/%s/config {\"expectedRevision\":1,"
	    "\"patch\":{\"effort\":\"low\"}}", sid);
	expect_error(&r, 409, "stale_write", NULL, NULL, "stale revision");
	cur = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"),
	    "details"), "current");
	cr_expect_eq(json_num(cur, "revision"), 2, "details.current: %s",
	    r.body);
	cr_expect_str_eq(json_str_or_none(cur, "effort"), "high");
	http_resp_free(&r);

	snap = http_get_json(&svc, "/api/v1/sessions/%s/config", sid);
	for (size_t i = 0; i < sizeof bad_configs / sizeof bad_configs[0]; i++) {
		const struct bad_config *b = &bad_configs[i];

		r = api_f("PATCH", "/api/v1/sessions/%s/config {\"expectedRevision\":2,"
		    "\"patch\":%s}", sid, b->patch);
		expect_error(&r, b->status, b->code, "field", b->field, b->patch);
		http_resp_free(&r);
		cfg = http_get_json(&svc, "/api/v1/sessions/%s/config", sid);
		cr_expect(cJSON_Compare(cfg, snap, true), "%s changed the configuration: %s",
		    b->patch, cJSON_PrintUnformatted(cfg));
		cJSON_Delete(cfg);
	}
	cJSON_Delete(snap);

	/* null clears: the next run falls back to the provider's defaultModel. */
	r = api_f("PATCH", "/api/v1/sessions/%s/config {\"expectedRevision\":2,"
	    "\"patch\":{\"model\":null}}", sid);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_eq(json_num(r.json, "revision"), 3);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(r.json, "model")), "model: %s", r.body);
	cr_expect_str_eq(json_str_or_none(r.json, "effort"), "high");
	http_resp_free(&r);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"sessionId\":\"%s\"}", p, sid);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(run, "config"), "model"), "research");
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(run, "config"), "effort"), "high");
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cJSON_Delete(run);

	r = http_api(&svc, "GET", "/api/v1/sessions/ses_0123456789abcdef01234567/config", NULL);
	expect_error(&r, 404, "not_found", NULL, NULL, "unknown session");
	http_resp_free(&r);
	r = http_api(&svc, "PATCH", "/api/v1/sessions/ses_0123456789abcdef01234567/config",
	    "{\"expectedRevision\":1,\"patch\":{}}");
	expect_error(&r, 404, "not_found", NULL, NULL, "unknown session");
	http_resp_free(&r);
	free(p);
}

/* ------------------------------------------------------- session busy --- */

Test(runs, one_active_run_per_session)
{
	char sid[64], id[64];
	struct http_resp r;
	cJSON *run;
	char *p = http_project_new(&svc, "busy");

	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"config\":{\"model\":\"steady\"}}", p);
	snprintf(sid, sizeof sid, "%s", json_get_string(run, "sessionId"));
	snprintf(id, sizeof id, "%s", json_get_string(run, "id"));
	cJSON_Delete(run);
	r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"q\",\"sessionId\":\"%s\"}",
	    p, sid);
	expect_error(&r, 409, "session_busy", NULL, NULL, "while queued or starting");
	http_resp_free(&r);
	run_wait_status(id, "running", 10000);
	r = api_f("POST", "/api/v1/runs {\"project\":\"%s\",\"prompt\":\"q\",\"sessionId\":\"%s\"}",
	    p, sid);
	expect_error(&r, 409, "session_busy", NULL, NULL, "while running");
	http_resp_free(&r);
	/* Another session of the same project is not affected. */
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"config\":{\"model\":\"quick\"}}", p);
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cJSON_Delete(run);

	r = api_f("POST", "/api/v1/runs/%s/cancel {}", id);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cJSON_Delete(run_final_within(&svc, id, "cancelled", FINAL_WAIT_MS));
	r = api_f("PATCH", "/api/v1/sessions/%s/config {\"expectedRevision\":1,"
	    "\"patch\":{\"model\":\"quick\"}}", sid);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"q\",\"sessionId\":\"%s\"}", p, sid);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(run, "config"), "model"), "quick");
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cJSON_Delete(run);
	free(p);
}

/* -------------------------------------------------------- idempotency --- */

struct racer {
	const char *body;
	char id[64];
	long status;
	bool replayed;
};

static void *
race_start(void *arg)
{
	struct racer *rc = arg;
	const char *key[] = { "Idempotency-Key: run-fifty", NULL };
	struct http_resp r = http_req(&svc, "POST", "/api/v1/runs", rc->body, key, true);
	char *rep = http_header(&r, "Idempotent-Replayed");

	rc->status = r.status;
	rc->replayed = rep != NULL && strcmp(rep, "true") == 0;
	if (json_get_string(r.json, "id"))
		snprintf(rc->id, sizeof rc->id, "%s", json_get_string(r.json, "id"));
	free(rep);
	http_resp_free(&r);
	return NULL;
}

Test(runs, fifty_concurrent_starts_with_one_key_make_one_run)
{
	enum { N = 50 };
	struct racer racers[N];
	pthread_t th[N];
	char body[256];
	struct http_resp r;
	cJSON *list;
	int replays = 0;
	char *p = http_project_new(&svc, "idem");

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"once\","
	    "\"config\":{\"model\":\"quick\"}}", p);
	memset(racers, 0, sizeof racers);
	for (int i = 0; i < N; i++) {
		racers[i].body = body;
		cr_assert_eq(pthread_create(&th[i], NULL, race_start, &racers[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++) {
		cr_expect_eq(racers[i].status, 201, "racer %d: %ld", i, racers[i].status);
		cr_expect_str_eq(racers[i].id, racers[0].id, "racer %d got another run", i);
		replays += racers[i].replayed;
	}
	cr_expect_eq(replays, N - 1, "every duplicate is a replay");
	list = http_get_json(&svc, "/api/v1/runs?project=%s", p);
	cr_expect_eq(array_size(list), 1, "%d runs exist", array_size(list));
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/sessions?project=%s", p);
	cr_expect_eq(array_size(list), 1, "%d sessions exist", array_size(list));
	cJSON_Delete(list);

	const char *key[] = { "Idempotency-Key: run-fifty", NULL };
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"twice\","
	    "\"config\":{\"model\":\"quick\"}}", p);
	r = http_req(&svc, "POST", "/api/v1/runs", body, key, true);
	expect_error(&r, 422, "idempotency_conflict", NULL, NULL, "same key, other body");
	http_resp_free(&r);
	list = http_get_json(&svc, "/api/v1/runs?project=%s", p);
	cr_expect_eq(array_size(list), 1);
	cJSON_Delete(list);
	cJSON_Delete(run_final_within(&svc, racers[0].id, "completed", FINAL_WAIT_MS));
	free(p);
}

/* ---------------------------------------------------- max concurrency --- */

static const char one_at_a_time[] =
    "{\"defaults\": {\"provider\": \"replay\"},\n"
    " \"providers\": {\"replay\": {\"kind\": \"replay\", \"defaultModel\": \"research\"}},\n"
    " \"runs\": {\"maxConcurrent\": 1}}\n";

Test(runs_home, max_concurrent_queues_and_a_queued_run_can_be_cancelled)
{
	char *p;
	cJSON *a, *b, *c, *run, *fa, *fb;
	struct http_resp r;

	svc_prepare_home(&svc);
	svc_write_file(&svc, "settings.json", one_at_a_time);
	svc_restart(&svc);
	p = http_project_new(&svc, "one");
	a = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"a\",\"config\":{\"model\":\"steady\"}}", p);
	b = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"b\",\"config\":{\"model\":\"quick\"}}", p);
	c = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"c\",\"config\":{\"model\":\"quick\"}}", p);
	cr_expect_str_eq(json_str_or_none(b, "status"), "queued");
	cr_expect_str_eq(json_str_or_none(c, "status"), "queued");
	run_wait_status(json_get_string(a, "id"), "running", 10000);

	r = api_f("POST", "/api/v1/runs/%s/cancel {}", json_get_string(c, "id"));
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(json_str_or_none(r.json, "status"), "cancelled", "a queued run ends at once");
	cr_expect_not_null(json_get_string(r.json, "cancelRequestedAt"));
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(r.json, "startedAt")));
	http_resp_free(&r);

	/* While a runs, b waits. */
	for (int i = 0; i < 5; i++) {
		run = run_get(json_get_string(a, "id"));
		bool a_running = strcmp(json_str_or_none(run, "status"), "running") == 0;
		cJSON_Delete(run);
		run = run_get(json_get_string(b, "id"));
		if (a_running)
			cr_expect_str_eq(json_str_or_none(run, "status"), "queued", "b started while a runs");
		cJSON_Delete(run);
		usleep(200000);
	}
	fa = run_final_within(&svc, json_get_string(a, "id"), "completed", FINAL_WAIT_MS);
	fb = run_final_within(&svc, json_get_string(b, "id"), "completed", FINAL_WAIT_MS);
	cr_expect_geq(strcmp(json_str_or_none(fb, "startedAt"), json_str_or_none(fa, "finishedAt")), 0,
	    "b started at %s, before a finished at %s", json_str_or_none(fb, "startedAt"),
	    json_str_or_none(fa, "finishedAt"));
	run = run_get(json_get_string(c, "id"));
	cr_expect_str_eq(json_str_or_none(run, "status"), "cancelled");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(run, "startedAt")), "the cancelled run ran");
	cJSON_Delete(run);
	cJSON_Delete(fa);
	cJSON_Delete(fb);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	free(p);
}

/* ------------------------------------------------------------- cancel --- */

struct command_wait {
	const char *cwd;
};

static bool
sleep_running(void *arg)
{
	return commands_in("sleep 60", ((struct command_wait *)arg)->cwd) > 0;
}

static bool
sleep_gone(void *arg)
{
	return !sleep_running(arg);
}

Test(runs, cancel_during_a_tool_call)
{
	char ws[PATH_MAX], id[64], requested[40];
	struct http_resp r;
	cJSON *run, *fin, *done;
	int64_t t0;
	char *p = http_project_new(&svc, "cancel");

	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\","
	    "\"config\":{\"model\":\"long-command\"}}", p);
	snprintf(id, sizeof id, "%s", json_get_string(run, "id"));
	cr_assert_not_null(realpath(json_get_string(run, "cwd"), ws));
	cJSON_Delete(run);
	struct command_wait cw = { ws };
	cr_assert(eventually(sleep_running, &cw, 15000), "no `sleep 60` started in %s", ws);

	t0 = clock_mono_ms();
	r = api_f("POST", "/api/v1/runs/%s/cancel {}", id);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_not_null(json_get_string(r.json, "cancelRequestedAt"), "%s", r.body);
	snprintf(requested, sizeof requested, "%s", json_get_string(r.json, "cancelRequestedAt"));
	http_resp_free(&r);
	r = api_f("POST", "/api/v1/runs/%s/cancel {}", id);
	cr_expect_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(json_str_or_none(r.json, "cancelRequestedAt"), requested,
	    "a second cancel moved cancelRequestedAt");
	http_resp_free(&r);

	fin = run_final_within(&svc, id, "cancelled", FINAL_WAIT_MS);
	cr_expect_lt(clock_mono_ms() - t0, 5000, "cancelling took %lld ms",
	    (long long)(clock_mono_ms() - t0));
	cr_expect_str_eq(json_str_or_none(fin, "cancelRequestedAt"), requested);
	cr_expect_not_null(json_get_string(fin, "finishedAt"));
	cr_expect_not_null(json_get_string(fin, "output"), "a cancelled run has its output so far");
	cr_expect_gt(strlen(json_str_or_none(fin, "output")), 0, "the text before the command is kept");
	cr_expect(cJSON_GetObjectItem(fin, "error") == NULL ||
	    cJSON_IsNull(cJSON_GetObjectItem(fin, "error")), "a cancelled run has no error");
	cr_expect(eventually(sleep_gone, &cw, 3000), "`sleep 60` survived the cancel");

	/* Cancelling a final run changes nothing. */
	r = api_f("POST", "/api/v1/runs/%s/cancel {}", id);
	cr_expect_eq(r.status, 200);
	cr_expect(cJSON_Compare(r.json, fin, true), "cancel of a cancelled run changed it: %s",
	    r.body);
	http_resp_free(&r);
	cJSON_Delete(fin);

	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"config\":{\"model\":\"quick\"}}", p);
	done = run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS);
	r = api_f("POST", "/api/v1/runs/%s/cancel {}", json_get_string(run, "id"));
	cr_expect_eq(r.status, 200);
	cr_expect(cJSON_Compare(r.json, done, true), "cancel of a completed run changed it: %s",
	    r.body);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(r.json, "cancelRequestedAt")));
	http_resp_free(&r);
	cJSON_Delete(done);
	cJSON_Delete(run);

	r = http_api(&svc, "POST", "/api/v1/runs/run_0123456789abcdef01234567/cancel", NULL);
	expect_error(&r, 404, "not_found", NULL, NULL, "unknown run");
	http_resp_free(&r);
	free(p);
}

/* ------------------------------------------------------------ crashes --- */

struct agent_wait {
	pid_t service;
	pid_t pids[16];
	int want;
	int n;
};

static bool
agents_up(void *arg)
{
	struct agent_wait *aw = arg;

	aw->n = agents_of(aw->service, aw->pids, 16);
	return aw->n >= aw->want;
}

static bool
agents_dead(void *arg)
{
	struct agent_wait *aw = arg;

	for (int i = 0; i < aw->n; i++)
		if (proc_alive(aw->pids[i]))
			return false;
	return true;
}

Test(runs, a_killed_agent_fails_the_run_and_the_service_carries_on)
{
	struct agent_wait aw = { .service = svc.pid, .want = 1 };
	struct http_resp r;
	cJSON *run, *fin, *err;
	char *p = http_project_new(&svc, "crash");

	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"config\":{\"model\":\"steady\"}}", p);
	cr_assert(eventually(agents_up, &aw, 10000), "no taskdeck-agent child of %ld",
	    (long)svc.pid);
	cr_assert_eq(aw.n, 1);
	usleep(500000);
	cr_assert_eq(kill(aw.pids[0], SIGKILL), 0);

	fin = run_final_within(&svc, json_get_string(run, "id"), "failed", FINAL_WAIT_MS);
	err = cJSON_GetObjectItem(fin, "error");
	cr_expect_str_eq(json_str_or_none(err, "code"), "runtime_crashed");
	cr_expect_gt(strlen(json_str_or_none(err, "message")), 0);
	cJSON_Delete(fin);
	cJSON_Delete(run);

	r = http_api(&svc, "GET", "/api/v1/doctor", NULL);
	cr_expect_eq(r.status, 200);
	http_resp_free(&r);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"p\",\"config\":{\"model\":\"quick\"}}", p);
	cJSON_Delete(run_final_within(&svc, json_get_string(run, "id"), "completed", FINAL_WAIT_MS));
	cJSON_Delete(run);
	free(p);
}

struct saved {
	char session[64];
	cJSON *list;		/* the session's artifacts */
	char *bytes[8];		/* their content, in list order */
};

static void
saved_read(struct saved *s)
{
	cJSON *a;
	int i = 0;

	s->list = http_get_json(&svc, "/api/v1/sessions/%s/artifacts", s->session);
	cr_assert_gt(array_size(s->list), 0, "a research run saved nothing: %s",
	    cJSON_PrintUnformatted(s->list));
	cJSON_ArrayForEach(a, s->list) {
		char path[128];
		struct http_resp r;

		cr_assert_lt(i, 8);
		snprintf(path, sizeof path, "/api/v1/artifacts/%s/content", json_get_string(a, "id"));
		r = http_api(&svc, "GET", path, NULL);
		cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
		cr_expect_eq((double)strlen(r.body), json_num(a, "size"),
		    "%s: size", path);
		s->bytes[i++] = strdup(r.body);
		http_resp_free(&r);
	}
}

static void
saved_free(struct saved *s)
{
	cJSON_Delete(s->list);
	for (int i = 0; i < 8; i++)
		free(s->bytes[i]);
}

static bool
file_exists(void *path)
{
	return access(path, F_OK) == 0;
}

static bool
running_count_is(void *arg)
{
	const char *project = arg;
	cJSON *list = http_get_json(&svc, "/api/v1/runs?project=%s&status=running", project);
	int n = array_size(list);

	cJSON_Delete(list);
	return n == 4;
}

static void
db_integrity_ok(const char *home)
{
	char path[512];
	sqlite3 *db;
	sqlite3_stmt *st;

	snprintf(path, sizeof path, "%s/taskdeck.db", home);
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK,
	    "open %s", path);
	cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK,
	    "%s", sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sqlite3_errmsg(db));
	cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

Test(runs, kill_9_of_the_service_during_runs)
{
	enum { DONE = 3, LIVE = 7 };
	struct saved saved[DONE];
	char done_ids[DONE][64], live_ids[LIVE][64], live_sessions[LIVE][64], was[LIVE][16];
	char live_files[LIVE][PATH_MAX];
	struct agent_wait aw = { .want = 4 };
	cJSON *run, *list;
	int running = 0;
	char *p = http_project_new(&svc, "restart");

	memset(saved, 0, sizeof saved);
	for (int i = 0; i < DONE; i++) {
		run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"r\","
		    "\"config\":{\"model\":\"research\"}}", p);
		snprintf(done_ids[i], sizeof done_ids[i], "%s", json_get_string(run, "id"));
		snprintf(saved[i].session, sizeof saved[i].session, "%s", json_get_string(run, "sessionId"));
		cJSON_Delete(run);
	}
	for (int i = 0; i < DONE; i++) {
		cJSON_Delete(run_final_within(&svc, done_ids[i], "completed", FINAL_WAIT_MS));
		saved_read(&saved[i]);
	}
	for (int i = 0; i < LIVE; i++) {
		run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"s\","
		    "\"config\":{\"model\":\"steady\"}}", p);
		snprintf(live_ids[i], sizeof live_ids[i], "%s", json_get_string(run, "id"));
		snprintf(live_sessions[i], sizeof live_sessions[i], "%s", json_get_string(run, "sessionId"));
		snprintf(live_files[i], sizeof live_files[i], "%.4000s/progress.md",
		    json_str_or_none(run, "cwd"));
		cJSON_Delete(run);
	}
	cr_assert(eventually(running_count_is, p, 10000), "4 runs never ran at once");
	aw.service = svc.pid;
	cr_assert(eventually(agents_up, &aw, 5000), "%d agents, want 4", aw.n);
	for (int i = 0; i < LIVE; i++) {
		run = run_get(live_ids[i]);
		snprintf(was[i], sizeof was[i], "%s", json_str_or_none(run, "status"));
		cJSON_Delete(run);
		if (strcmp(was[i], "running") != 0)
			continue;
		running++;
		/* steady saves progress.md first: let that save be staged. */
		cr_expect(eventually(file_exists, live_files[i], 5000), "%s never written",
		    live_files[i]);
	}
	cr_assert_eq(running, 4);
	usleep(500000);

	svc_kill(&svc);
	cr_expect(eventually(agents_dead, &aw, 3000), "agents of the killed service live on");
	svc_restart(&svc);

	/*
	 * durable (issue 15): the runs that were executing resume from their last
	 * checkpoint and complete; what they saved before the crash is not saved
	 * twice.  The queued ones start and complete.
	 */
	for (int i = 0; i < LIVE; i++) {
		cJSON_Delete(run_final_within(&svc, live_ids[i], "completed", FINAL_WAIT_MS));
		if (strcmp(was[i], "running") == 0) {
			list = http_get_json(&svc, "/api/v1/sessions/%s/artifacts", live_sessions[i]);
			cr_expect_eq(array_size(list), 1, "%s", cJSON_PrintUnformatted(list));
			cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(list, 0), "name"),
			    "progress.md");
			cJSON_Delete(list);
		} else {
			cr_expect_str_eq(was[i], "queued");
		}
	}
	for (int i = 0; i < DONE; i++) {
		run = run_get(done_ids[i]);
		cr_expect_str_eq(json_str_or_none(run, "status"), "completed");
		cJSON_Delete(run);
	}

	svc_stop(&svc);
	db_integrity_ok(svc.home);
	svc_restart(&svc);
	for (int i = 0; i < DONE; i++) {
		struct saved now = { .list = NULL };

		snprintf(now.session, sizeof now.session, "%s", saved[i].session);
		saved_read(&now);
		cr_expect(cJSON_Compare(now.list, saved[i].list, true),
		    "artifacts of %s changed: %s", now.session, cJSON_PrintUnformatted(now.list));
		for (int j = 0; j < 8 && saved[i].bytes[j]; j++)
			cr_expect_str_eq(now.bytes[j] ? now.bytes[j] : "(none)", saved[i].bytes[j],
			    "content of artifact %d of %s", j, now.session);
		saved_free(&now);
		saved_free(&saved[i]);
	}
	free(p);
}

/* ---------------------------------------------- outcomes and listing --- */

static char *
next_link(const struct http_resp *r)
{
	char *link = http_header(r, "Link"), *path = NULL;
	char *lt, *gt;

	if (link != NULL && (lt = strchr(link, '<')) && (gt = strchr(lt, '>')) &&
	    strstr(gt, "rel=\"next\""))
		path = strndup(lt + 1, (size_t)(gt - lt - 1));
	free(link);
	return path;
}

Test(runs, outcomes_filters_and_paging)
{
	char s1[64];
	cJSON *q1, *q2, *f, *fin, *list;
	struct http_resp r;
	char *p = http_project_new(&svc, "list"), *path;
	int pages = 0;

	q1 = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"q\",\"config\":{\"model\":\"quick\"}}", p);
	snprintf(s1, sizeof s1, "%s", json_get_string(q1, "sessionId"));
	f = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"f\",\"config\":{\"model\":\"fail\"}}", p);

	fin = run_final_within(&svc, json_get_string(q1, "id"), "completed", FINAL_WAIT_MS);
	cr_expect_gt(strlen(json_str_or_none(fin, "output")), 0, "a completed run has output");
	cr_expect(cJSON_GetObjectItem(fin, "error") == NULL ||
	    cJSON_IsNull(cJSON_GetObjectItem(fin, "error")));
	cr_expect_not_null(json_get_string(fin, "startedAt"));
	cr_expect_leq(strcmp(json_str_or_none(fin, "startedAt"), json_str_or_none(fin, "finishedAt")), 0);
	cJSON_Delete(fin);
	fin = run_final_within(&svc, json_get_string(f, "id"), "failed", FINAL_WAIT_MS);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(fin, "error"), "code"), "replay_failed");
	cr_expect_gt(strlen(json_str_or_none(cJSON_GetObjectItem(fin, "error"), "message")), 0);
	cr_expect_not_null(json_get_string(fin, "output"));
	cJSON_Delete(fin);
	q2 = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"q\",\"sessionId\":\"%s\"}", p, s1);
	cJSON_Delete(run_final_within(&svc, json_get_string(q2, "id"), "completed", FINAL_WAIT_MS));

	list = http_get_json(&svc, "/api/v1/runs?session=%s", s1);
	cr_expect_eq(array_size(list), 2);
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/runs?project=%s&status=completed", p);
	cr_expect_eq(array_size(list), 2);
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(list, 0), "id"), json_str_or_none(q2, "id"));
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/runs?project=%s&status=failed", p);
	cr_expect_eq(array_size(list), 1);
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(list, 0), "id"), json_str_or_none(f, "id"));
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/runs?project=%s&status=running", p);
	cr_expect_eq(array_size(list), 0);
	cJSON_Delete(list);

	/* Pages of one, newest first, linked by rel="next", the last without a link. */
	const char *want[] = { json_get_string(q2, "id"), json_get_string(f, "id"), json_get_string(q1, "id") };
	char first[128];
	snprintf(first, sizeof first, "/api/v1/runs?project=%s&limit=1", p);
	path = strdup(first);
	while (path != NULL) {
		r = http_api(&svc, "GET", path, NULL);
		cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
		cr_assert_eq(array_size(r.json), 1, "%s", r.body);
		cr_assert_lt(pages, 3, "more pages than runs");
		cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(r.json, 0), "id"), want[pages]);
		pages++;
		free(path);
		path = next_link(&r);
		http_resp_free(&r);
	}
	cr_expect_eq(pages, 3);

	const char *bad[] = { "status=done", "limit=0", "cursor=nope", "", "session=banana" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char q[256];

		snprintf(q, sizeof q, "/api/v1/runs?%s%s%s", i < 3 ? "project=" : "",
		    i < 3 ? p : "", i < 3 ? "&" : "");
		snprintf(q + strlen(q), sizeof q - strlen(q), "%s", bad[i]);
		r = http_api(&svc, "GET", q, NULL);
		expect_error(&r, 400, "invalid_request", NULL, NULL, q);
		http_resp_free(&r);
	}
	cJSON_Delete(q1);
	cJSON_Delete(q2);
	cJSON_Delete(f);
	free(p);
}

/* ----------------------------------------------------------- settings --- */

struct bad_settings {
	const char *text;
	const char *says;	/* part of the message besides the file name */
};

static const struct bad_settings bad_settings[] = {
	{ "this is not JSON {", "JSON" },
	{ "{\"providers\": {\"x\": {\"kind\": \"magic\", \"defaultModel\": \"m\"}}}", "kind" },
	{ "{\"providers\": {\"replay\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"}},"
	  " \"defaults\": {\"provider\": \"ghost\"}}", "ghost" },
	{ "{\"providers\": {\"replay\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"}},"
	  " \"runs\": {\"maxConcurrent\": 0}}", "maxConcurrent" },
	{ "{\"providers\": {\"o\": {\"kind\": \"openai\", \"defaultModel\": \"m\"}}}", "baseUrl" },
	{ "{\"providers\": {\"replay\": {\"kind\": \"replay\"}}}", "defaultModel" },
	{ "[]", "object" },
};

Test(runs_home, a_broken_settings_file_stops_the_start)
{
	char file[600], *err, *text;
	struct stat st;
	cJSON *j;

	for (size_t i = 0; i < sizeof bad_settings / sizeof bad_settings[0]; i++) {
		svc_prepare_home(&svc);
		svc_write_file(&svc, "settings.json", bad_settings[i].text);
		snprintf(file, sizeof file, "%s/settings.json", svc.home);
		cr_expect_eq(run_capture(NULL, &err, "TASKDECK_HOME='%s' timeout 10 %s --foreground"
		    " 2>&1 >/dev/null", svc.home, harness_bin("taskdeckd")), 1,
		    "%s: taskdeckd did not exit 1", bad_settings[i].text);
		cr_expect_not_null(strstr(err, file), "the message does not name %s: %s", file, err);
		cr_expect_not_null(strstr(err, bad_settings[i].says), "%s: %s",
		    bad_settings[i].text, err);
		free(err);
		snprintf(file, sizeof file, "%s/service.json", svc.home);
		cr_expect_neq(access(file, F_OK), 0, "a discovery file was left");
		svc_destroy(&svc);
	}

	/* A missing file is written with the defaults, private. */
	svc_start(&svc);
	snprintf(file, sizeof file, "%s/settings.json", svc.home);
	cr_assert_eq(stat(file, &st), 0, "no settings.json was written");
	cr_expect_eq(st.st_mode & 0777, 0600);
	run_capture(NULL, &text, "cat '%s'", file);
	j = cJSON_Parse(text);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "providers"),
	    "replay"), "kind"), "replay");
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(j, "defaults"), "provider"), "replay");
	cJSON_Delete(j);
	free(text);
}
