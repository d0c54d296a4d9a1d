/* taskdeck run, runs, sessions and artifacts, run as a user would against a real taskdeckd. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

TestSuite(cli_runs, .init = svc_setup, .fini = svc_teardown, .timeout = 120);

struct run {
	int status;
	char *out;
	char *err;
};

/*
 * Runs "cd DIR && taskdeck ARGS" (dir NULL: no cd) with the home of svc;
 * captures stdout and stderr and asserts that neither shows the token.
 */
static struct run
cli_at(const char *dir, const char *fmt, ...)
{
	char args[4096], errpath[512];
	struct run r;
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/cli.stderr", svc.home);
	r.status = run_capture(&svc, &r.out, "%s%s%s%s %s 2>%s", dir != NULL ? "cd '" : "",
	    dir != NULL ? dir : "", dir != NULL ? "' && " : "", harness_bin("taskdeck"),
	    args, errpath);
	r.err = harness_slurp(errpath, &len);
	cr_assert_not_null(r.err);
	cr_assert_null(strstr(r.out, svc.token), "token on stdout of %s", args);
	cr_assert_null(strstr(r.err, svc.token), "token on stderr of %s", args);
	return r;
}

#define cli(...) cli_at(NULL, __VA_ARGS__)

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* A new project's id (free it). */
static char *
create_project(const char *name)
{
	struct run r = cli("--json projects create '%s'", name);
	cJSON *doc;
	char *id;

	cr_assert_eq(r.status, 0, "create: %s", r.err);
	doc = json_doc(r.out);
	id = strdup(json_str(doc, "id"));
	cJSON_Delete(doc);
	run_free(&r);
	return id;
}

/* Runs a replay transcript with --wait --json; returns the final run. */
static cJSON *
run_replay(const char *project, const char *model, int want_status)
{
	struct run r = cli("--json run --project %s --provider replay --model %s "
	    "--wait --wait-timeout 60 'Write a short report.'", project, model);
	cJSON *doc;

	cr_assert_eq(r.status, want_status, "run %s: exit %d: %s", model, r.status, r.err);
	doc = json_doc(r.out);
	run_free(&r);
	return doc;
}

/* The session's copy of an artifact path; free() it. */
static char *
workspace_bytes(const char *session, const char *path, size_t *len)
{
	struct run r = cli("--json sessions show %s", session);
	char file[PATH_MAX + 64], *data;
	cJSON *doc;

	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	snprintf(file, sizeof file, "%s/%s", json_str(doc, "cwd"), path);
	data = harness_slurp(file, len);
	cr_assert_not_null(data, "no %s", file);
	cJSON_Delete(doc);
	run_free(&r);
	return data;
}

static void
assert_file_bytes(const char *file, const char *want, size_t want_len)
{
	size_t len;
	char *got = harness_slurp(file, &len);

	cr_assert_not_null(got, "no %s", file);
	cr_assert_eq(len, want_len, "%s has %zu bytes, expected %zu", file, len, want_len);
	cr_assert(memcmp(got, want, len) == 0, "%s differs", file);
	free(got);
}

Test(cli_runs, run_wait_list_download)
{
	char *project = create_project("Research");
	cJSON *run = run_replay(project, "research", 0), *arts, *report = NULL, *item;
	char *session = strdup(json_str(run, "sessionId")), *want;
	char dir[512], file[1024];
	size_t want_len;
	struct run r;

	cr_assert_str_eq(json_str(run, "status"), "completed");
	cr_assert_gt(strlen(json_str(run, "output")), 0);

	r = cli("--json artifacts list %s", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	arts = json_doc(r.out);
	cr_assert(cJSON_IsArray(arts));
	cJSON_ArrayForEach(item, arts) {
		if (strcmp(json_str(item, "name"), "report.md") == 0)
			report = item;
	}
	cr_assert_not_null(report, "no report.md in %s", r.out);
	cr_assert_str_eq(json_str(report, "runId"), json_str(run, "id"));
	run_free(&r);

	r = cli("artifacts list %s", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(strncmp(r.out, "ID ", 3), 0, "%s", r.out);
	cr_assert_not_null(strstr(r.out, json_str(report, "id")));
	cr_assert_not_null(strstr(r.out, "report.md"));
	run_free(&r);

	want = workspace_bytes(session, json_str(report, "path"), &want_len);
	snprintf(dir, sizeof dir, "%s/downloads", svc.home);
	r = cli("artifacts download %s --out %s", json_str(report, "id"), dir);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(file, sizeof file, "%s/report.md", dir);
	cr_assert_not_null(strstr(r.out, file), "%s", r.out);
	assert_file_bytes(file, want, want_len);
	run_free(&r);

	/* An existing file is kept unless --force. */
	r = cli("artifacts download %s --out %s", json_str(report, "id"), dir);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "--force"), "%s", r.err);
	run_free(&r);
	r = cli("artifacts download %s --out %s --force", json_str(report, "id"), dir);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_file_bytes(file, want, want_len);
	run_free(&r);

	/* A whole session, by path. */
	snprintf(dir, sizeof dir, "%s/session", svc.home);
	r = cli("--json artifacts download --session %s --out %s", session, dir);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(file, sizeof file, "%s/%s", dir, json_str(report, "path"));
	assert_file_bytes(file, want, want_len);
	run_free(&r);

	free(want);
	cJSON_Delete(arts);
	cJSON_Delete(run);
	free(session);
	free(project);
}

Test(cli_runs, run_prints_ids_and_output)
{
	char *project = create_project("Quick");
	struct run r = cli("run --project %s --provider replay --model quick --wait 'hello'",
	    project);
	char *run_id, *session, *value;

	cr_assert_eq(r.status, 0, "%s", r.err);
	run_id = text_kv(r.out, "run");
	session = text_kv(r.out, "session");
	cr_assert_not_null(run_id, "%s", r.out);
	cr_assert_not_null(session, "%s", r.out);
	cr_assert_eq(strncmp(run_id, "run_", 4), 0);
	cr_assert_eq(strncmp(session, "ses_", 4), 0);
	assert_text_kv(r.out, "status", "completed");
	cr_assert_not_null(strstr(r.out, "\noutput: "), "%s", r.out);
	run_free(&r);

	r = cli("runs list --session %s", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, run_id), "%s", r.out);
	run_free(&r);
	r = cli("runs show %s", run_id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "id", run_id);
	assert_text_kv(r.out, "config.model", "quick");
	run_free(&r);
	r = cli("sessions list --project %s", project);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, session), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "completed"), "%s", r.out);
	run_free(&r);

	/* Without --wait: the ids and the first status. */
	r = cli("run --project %s --session %s 'again'", project, session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "session", session);
	value = text_kv(r.out, "status");
	cr_assert(value != NULL && (strcmp(value, "queued") == 0 ||
	    strcmp(value, "running") == 0), "%s", r.out);
	free(value);
	free(run_id);
	run_id = text_kv(r.out, "run");
	run_free(&r);
	r = cli("runs wait %s --wait-timeout 60", run_id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "status", "completed");
	run_free(&r);

	free(run_id);
	free(session);
	free(project);
}

/* A wait timeout exits 3, says the run goes on, and leaves it running. */
Test(cli_runs, wait_timeout_then_cancel)
{
	char *project = create_project("Slow");
	struct run r = cli("run --project %s --provider replay --model slow --wait "
	    "--wait-timeout 1 'take your time'", project);
	char *run_id, *value;
	cJSON *doc;

	cr_assert_eq(r.status, 3, "exit %d: %s", r.status, r.err);
	run_id = text_kv(r.out, "run");
	cr_assert_not_null(run_id, "%s", r.out);
	cr_assert_not_null(strstr(r.err, run_id), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "goes on"), "%s", r.err);
	run_free(&r);

	r = cli("--json runs show %s", run_id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_str_eq(json_str(doc, "status"), "running");
	cJSON_Delete(doc);
	run_free(&r);

	r = cli("runs cancel %s", run_id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	value = text_kv(r.out, "cancelRequestedAt");
	cr_assert_not_null(value, "%s", r.out);
	cr_assert_str_neq(value, "-");
	free(value);
	run_free(&r);
	r = cli("runs wait %s --wait-timeout 30", run_id);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_text_kv(r.out, "status", "cancelled");
	cr_assert_not_null(strstr(r.err, "cancelled"), "%s", r.err);
	run_free(&r);
	free(run_id);
	free(project);
}

Test(cli_runs, failed_run_exits_1)
{
	char *project = create_project("Fail");
	struct run r = cli("run --project %s --provider replay --model fail --wait 'x'",
	    project);

	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_text_kv(r.out, "status", "failed");
	cr_assert_not_null(strstr(r.err, "failed"), "%s", r.err);
	run_free(&r);
	free(project);
}

/* No artifact saved; an unknown artifact id exits 4 with the ids and no token. */
Test(cli_runs, missing_artifact)
{
	char *project = create_project("Nothing");
	cJSON *run = run_replay(project, "no-artifact", 0);
	const char *unknown = "art_000000000000000000000000";
	struct run r;

	cr_assert_str_eq(json_str(run, "status"), "completed");
	r = cli("artifacts list %s", json_str(run, "sessionId"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "no artifacts\n");
	run_free(&r);

	r = cli("artifacts download %s --out %s/none", unknown, svc.home);
	cr_assert_eq(r.status, 4, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, unknown), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "run unknown"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "not_found"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "HTTP 404"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "request req_"), "%s", r.err);
	cr_assert_str_eq(r.out, "");
	run_free(&r);

	r = cli("artifacts download --session %s --out %s/none", json_str(run, "sessionId"),
	    svc.home);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "no artifacts"), "%s", r.err);
	run_free(&r);
	cJSON_Delete(run);
	free(project);
}

/*
 * The spec's download failure: the service answers 500 internal_error (here
 * because the stored content is gone).  The report names the run and the
 * artifact, the error with its HTTP status and request id, and says not to
 * restart the run.
 */
Test(cli_runs, failed_download_report)
{
	char *project = create_project("Broken");
	cJSON *run = run_replay(project, "research", 0), *arts, *a;
	char store[1024], dir[512];
	const char *version;
	struct run r;

	r = cli("--json artifacts list %s", json_str(run, "sessionId"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	arts = json_doc(r.out);
	run_free(&r);
	a = cJSON_GetArrayItem(arts, 0);
	cr_assert_not_null(a);
	version = json_str(a, "version") + strlen("sha256:");
	/* The store layout of src/service/artifacts.h: artifacts/<2 hex>/<64 hex>. */
	snprintf(store, sizeof store, "%s/artifacts/%.2s/%s", svc.home, version, version);
	cr_assert_eq(unlink(store), 0, "%s: %s", store, strerror(errno));

	snprintf(dir, sizeof dir, "%s/broken", svc.home);
	r = cli("artifacts download %s --out %s", json_str(a, "id"), dir);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, json_str(a, "id")), "%s", r.err);
	cr_assert_not_null(strstr(r.err, json_str(run, "id")), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "internal_error (HTTP 500)"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "request req_"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "do not restart the run"), "%s", r.err);
	cr_assert_str_eq(r.out, "");
	run_free(&r);
	cJSON_Delete(arts);
	cJSON_Delete(run);
	free(project);
}

Test(cli_runs, sessions_config_get_set)
{
	char *project = create_project("Config");
	cJSON *run = run_replay(project, "quick", 0);
	const char *session = json_str(run, "sessionId");
	struct run r;

	r = cli("sessions config get %s", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "revision", "1");
	assert_text_kv(r.out, "provider", "replay");
	assert_text_kv(r.out, "model", "quick");
	run_free(&r);

	r = cli("sessions config set %s effort=high", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "revision", "2");
	assert_text_kv(r.out, "effort", "high");
	run_free(&r);

	r = cli("sessions config set %s effort=low --revision 1", session);
	cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "stale_write"), "%s", r.err);
	run_free(&r);

	r = cli("sessions config set %s provider=no-such-provider", session);
	cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "invalid_configuration"), "%s", r.err);
	run_free(&r);

	r = cli("--json sessions config set %s effort= --revision 2", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "\"effort\":null"), "%s", r.out);
	run_free(&r);

	r = cli("sessions config set %s effort", session);
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	cJSON_Delete(run);
	free(project);
}

/* A relative --cwd is taken from the current directory; the session records it. */
Test(cli_runs, relative_cwd)
{
	char *project = create_project("Here");
	char base[512], sub[600], real[PATH_MAX], rm[700];
	cJSON *run, *session;
	struct run r;

	/* beside the home: a cwd inside taskdeck's own directories is refused */
	snprintf(base, sizeof base, "%s-work", svc.home);
	snprintf(sub, sizeof sub, "%s/sub", base);
	cr_assert(mkdir(base, 0700) == 0);
	cr_assert(mkdir(sub, 0700) == 0);
	cr_assert_not_null(realpath(sub, real));
	r = cli_at(base, "--json run --project %s --provider replay --model quick "
	    "--cwd sub --wait 'here'", project);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run = json_doc(r.out);
	cr_assert_str_eq(json_str(run, "cwd"), real);
	run_free(&r);
	r = cli("--json sessions show %s", json_str(run, "sessionId"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	session = json_doc(r.out);
	cr_assert_str_eq(json_str(session, "cwd"), real);
	cr_assert_str_eq(json_str(session, "workspace"), "external");
	cJSON_Delete(session);
	run_free(&r);
	cJSON_Delete(run);
	free(project);
	snprintf(rm, sizeof rm, "rm -rf '%s'", base);
	cr_expect_eq(system(rm), 0);
}

Test(cli_runs, usage_errors)
{
	struct run r = cli("run 'no project'");

	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	r = cli("run --project prj_000000000000000000000000 --wait-timeout 5 'no wait'");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "--wait"), "%s", r.err);
	run_free(&r);
	r = cli("runs wait run_000000000000000000000000 --wait-timeout soon");
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	r = cli("artifacts download");
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	r = cli("runs list --all-projects --project prj_000000000000000000000000");
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	r = cli("runs show run_000000000000000000000000");
	cr_assert_eq(r.status, 4, "%s", r.err);
	run_free(&r);
	r = cli("run --project prj_000000000000000000000000 'unknown project'");
	cr_assert_eq(r.status, 4, "%s", r.err);
	run_free(&r);
}

/* runs cancel of a run that has ended: said on stderr, exit 5, the run unchanged. */
Test(cli_runs, cancel_of_an_ended_run)
{
	char *project = create_project("Ended");
	struct run r = cli("run --project %s --provider replay --model quick --wait 'done soon'",
	    project);
	char *run_id;

	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	run_id = text_kv(r.out, "run");
	cr_assert_not_null(run_id, "%s", r.out);
	run_free(&r);
	r = cli("runs cancel %s", run_id);
	cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "already ended (completed)"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "nothing to cancel"), "%s", r.err);
	run_free(&r);
	r = cli("runs show %s", run_id);
	assert_text_kv(r.out, "status", "completed");
	assert_text_kv(r.out, "cancelRequestedAt", "-");
	run_free(&r);
	free(run_id);
	free(project);
}

/* A profile the service does not know is a usage error (2), before any request. */
Test(cli_runs, unknown_permission_is_usage)
{
	char *project = create_project("Yolo");
	struct run r = cli("run --project %s --permission yolo 'anything goes'", project);

	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "workspace-write"), "%s", r.err);
	run_free(&r);
	r = cli("runs list --project %s", project);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "run_"), "a run started: %s", r.out);
	run_free(&r);
	free(project);
}

/* -h, help COMMAND, run's usage naming --framework, -f for --follow. */
Test(cli_runs, help_and_short_options)
{
	char *project = create_project("Helped");
	struct run r = cli("help run");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "usage: taskdeck run --project P"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "--framework F"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "-f|--follow"), "%s", r.out);
	run_free(&r);
	r = cli("run -h");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "usage: taskdeck run --project P"), "%s", r.out);
	run_free(&r);
	r = cli("help runs cancel");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "usage: taskdeck runs cancel RUN"), "%s", r.out);
	run_free(&r);
	r = cli("help runs");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "runs watch"), "%s", r.out);
	cr_assert_null(strstr(r.out, "projects list"), "%s", r.out);
	run_free(&r);
	r = cli("-h");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "Work with runs:"), "%s", r.out);
	run_free(&r);
	r = cli("help no-such-command");
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	r = cli("run --project %s --provider replay --model quick -f 'Say hello'", project);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.out, "Hello from taskdeck"), "%s", r.out);
	cr_assert_not_null(strstr(r.err, "completed"), "%s", r.err);
	run_free(&r);
	free(project);
}

/* In a pipe, a table's last column is whole (a terminal gets it cut to its width). */
Test(cli_runs, doctor_messages_whole_in_a_pipe)
{
	struct run r = cli("doctor");
	const char *line = r.out;

	cr_assert_not_null(strstr(r.out, "CHECK"), "%s", r.out);
	while (line != NULL && *line != '\0') {
		const char *end = strchr(line, '\n');
		size_t n = end != NULL ? (size_t)(end - line) : strlen(line);

		cr_expect(n < 3 || strncmp(line + n - 3, "\u2026", 3) != 0, "a cut line: %.*s", (int)n,
		    line);
		line = end != NULL ? end + 1 : NULL;
	}
	run_free(&r);
}

/* The members of a run that say how it was started, as runs show --json gives them. */
static cJSON *
run_settings(const char *run_id)
{
	static const char *const keep[] = { "sessionId", "projectId", "prompt",
		"permissionProfile", "turnIntent", "config", "network", "cwd", NULL };
	struct run r = cli("--json runs show %s", run_id);
	cJSON *doc, *out = cJSON_CreateObject();

	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	for (size_t i = 0; keep[i] != NULL; i++) {
		cJSON *v = cJSON_GetObjectItem(doc, keep[i]);

		cr_assert_not_null(v, "no %s in %s", keep[i], r.out);
		cJSON_AddItemToObject(out, keep[i], cJSON_Duplicate(v, true));
	}
	cJSON_Delete(doc);
	run_free(&r);
	return out;
}

/* runs rerun: a new run in the same session with the same prompt and settings. */
Test(cli_runs, rerun_same_prompt_and_settings)
{
	char *project = create_project("Again");
	struct run r = cli("run --project %s --provider replay --model fail --permission "
	    "read-only --network --wait 'Fail, then again'", project);
	char *old_id, *new_id, *session, *a, *b;
	cJSON *then, *now;

	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	old_id = text_kv(r.out, "run");
	session = text_kv(r.out, "session");
	run_free(&r);

	r = cli("runs rerun %s", old_id);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	new_id = text_kv(r.out, "run");
	cr_assert_not_null(new_id, "%s", r.out);
	cr_assert_str_neq(new_id, old_id);
	assert_text_kv(r.out, "session", session);
	run_free(&r);

	then = run_settings(old_id);
	now = run_settings(new_id);
	a = cJSON_PrintUnformatted(then);
	b = cJSON_PrintUnformatted(now);
	cr_expect_str_eq(b, a, "the rerun was started otherwise");
	cr_expect(strstr(a, "\"permissionProfile\":\"read-only\"") != NULL &&
	    strstr(a, "\"model\":\"fail\"") != NULL && strstr(a, "\"network\":true") != NULL,
	    "%s", a);
	free(a);
	free(b);
	cJSON_Delete(then);
	cJSON_Delete(now);
	r = cli("runs wait %s --wait-timeout 60", new_id);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	run_free(&r);

	/* --follow: the new run's output as it comes, and how it ended (exit as run --wait). */
	r = cli("runs rerun %s --follow", old_id);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.out, "Let me start on that."), "%s", r.out);
	cr_assert_not_null(strstr(r.err, "in session "), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "failed: replay_failed"), "%s", r.err);
	run_free(&r);

	/* A session whose model changed since would not run it the same: exit 5, said. */
	r = cli("sessions config set %s model=quick", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_free(&r);
	r = cli("runs rerun %s", old_id);
	cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "model quick"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "model=fail"), "%s", r.err);
	run_free(&r);
	free(old_id);
	free(new_id);
	free(session);
	free(project);
}

/* A plan-first run still waiting cannot run again (exit 5); once cancelled it can, plan-first. */
Test(cli_runs, rerun_of_an_active_run_then_cancelled)
{
	char *project = create_project("Plans");
	struct run r = cli("run --project %s --provider replay --model plan --plan-first "
	    "'Plan, then write'", project);
	char *run_id, *new_id;
	cJSON *doc;

	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	run_id = text_kv(r.out, "run");
	run_free(&r);

	r = cli("runs rerun %s", run_id);
	cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, run_id), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "cancel it first"), "%s", r.err);
	run_free(&r);

	r = cli("runs cancel %s", run_id);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	run_free(&r);
	r = cli("runs wait %s --wait-timeout 30", run_id);
	run_free(&r);
	r = cli("--json runs rerun %s", run_id);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	doc = json_doc(r.out);
	new_id = strdup(json_str(doc, "id"));
	cr_expect_str_eq(json_str(doc, "turnIntent"), "plan-first");
	cr_expect_str_eq(json_str(doc, "prompt"), "Plan, then write");
	cJSON_Delete(doc);
	run_free(&r);
	r = cli("runs cancel %s", new_id);
	run_free(&r);
	free(new_id);
	free(run_id);
	free(project);
}

/* runs show: the members, then what the dashboard's detail view adds, in its words. */
Test(cli_runs, show_says_tokens_duration_artifacts)
{
	char *project = create_project("Shown");
	struct run r = cli("run --project %s --provider replay --model research --wait "
	    "'Write a short report.'", project);
	char *run_id, *line;

	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	run_id = text_kv(r.out, "run");
	run_free(&r);
	r = cli("runs show %s", run_id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "status", "completed");
	assert_text_kv(r.out, "config.model", "research");
	line = text_kv(r.out, "tokens");
	cr_assert_not_null(line, "%s", r.out);
	cr_expect(strstr(line, " tok (in ") != NULL && strstr(line, ", cached ") != NULL,
	    "tokens: %s", line);
	free(line);
	line = text_kv(r.out, "duration");
	cr_assert_not_null(line, "%s", r.out);
	cr_expect(line[strlen(line) - 1] == 's' || line[strlen(line) - 1] == 'm', "%s", line);
	free(line);
	line = text_kv(r.out, "artifacts");
	cr_assert_not_null(line, "%s", r.out);
	cr_expect(strstr(line, "report.md (") != NULL, "artifacts: %s", line);
	free(line);
	run_free(&r);
	free(run_id);
	free(project);
}

/* artifacts view: the bytes in $PAGER from a private file that is gone after, nothing saved. */
Test(cli_runs, artifacts_view_in_pager)
{
	char *project = create_project("Viewed");
	cJSON *run = run_replay(project, "research", 0), *arts, *item;
	char *session = strdup(json_str(run, "sessionId")), *want, *seen, *mode;
	const char *art = NULL, *path = NULL;
	char tmp[512], rec[512], pager[2048];
	size_t want_len, seen_len;
	struct run r;

	r = cli("--json artifacts list %s", session);
	cr_assert_eq(r.status, 0, "%s", r.err);
	arts = json_doc(r.out);
	cJSON_ArrayForEach(item, arts) {
		if (strcmp(json_str(item, "name"), "report.md") == 0) {
			art = json_str(item, "id");
			path = json_str(item, "path");
		}
	}
	cr_assert_not_null(art, "no report.md in %s", r.out);
	run_free(&r);
	want = workspace_bytes(session, path, &want_len);
	snprintf(tmp, sizeof tmp, "%s/viewtmp", svc.home);
	snprintf(rec, sizeof rec, "%s/viewed", svc.home);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	cr_assert_eq(mkdir(rec, 0700), 0);
	/* The "pager" records the bytes and the mode of the file it is given. */
	snprintf(pager, sizeof pager, "cp \\\"\\$1\\\" %s/bytes; stat -c %%a \\\"\\$1\\\" >%s/mode; :",
	    rec, rec);
	r.status = run_capture(&svc, &r.out, "cd %s && TMPDIR=%s PAGER=\"%s\" %s artifacts view "
	    "%s 2>&1", svc.home, tmp, pager, harness_bin("taskdeck"), art);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.out);
	free(r.out);
	snprintf(pager, sizeof pager, "%s/bytes", rec);
	seen = harness_slurp(pager, &seen_len);
	cr_assert_not_null(seen, "the pager got no file");
	cr_expect(seen_len == want_len && memcmp(seen, want, want_len) == 0,
	    "the pager got other bytes");
	snprintf(pager, sizeof pager, "%s/mode", rec);
	mode = harness_slurp(pager, &seen_len);
	cr_assert_not_null(mode);
	cr_expect_str_eq(mode, "600\n");
	cr_expect_eq(rmdir(tmp), 0, "the temporary file is still in %s", tmp);
	snprintf(pager, sizeof pager, "%s/report.md", svc.home);
	cr_expect_neq(access(pager, F_OK), 0, "view saved the artifact");
	free(seen);
	free(mode);
	free(want);
	cJSON_Delete(arts);
	cJSON_Delete(run);
	free(session);
	free(project);
}
