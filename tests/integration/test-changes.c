/*
 * A run's workspace changes through a real taskdeckd: replay transcripts
 * written by the test change files through write_file, run_command and a
 * connector server; the changes are listed, diffed, reverted, and survive a
 * kill -9 of the service.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define FINAL_WAIT_MS 60000
/* a workspace path: base and a short name */
#define WS_MAX (PATH_MAX + 64)

static char base[PATH_MAX];	/* the test's directory, under the build directory */

static void
write_bytes(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void
write_text(const char *path, const char *text, mode_t mode)
{
	write_bytes(path, text, strlen(text), mode);
}

static void
setup(void)
{
	char tmpl[] = "changes-it-XXXXXX", dir[PATH_MAX + 16];

	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, base));
	snprintf(dir, sizeof dir, "%s/replay", base);
	cr_assert_eq(mkdir(dir, 0700), 0);
	setenv("TD_TEST_NO_REPLAY_DIR", "1", 1);
	setenv("TASKDECK_REPLAY_DIR", dir, 1);
	svc_setup();
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];

	svc_teardown();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
}

TestSuite(changes, .init = setup, .fini = teardown, .timeout = 180);

/* A fresh workspace base/name (0700); its path into ws. */
static void
workspace(const char *name, char ws[WS_MAX])
{
	snprintf(ws, WS_MAX, "%s/%s", base, name);
	cr_assert_eq(mkdir(ws, 0700), 0, "%s: %s", ws, strerror(errno));
}

static void
ws_write(const char *ws, const char *name, const char *text, mode_t mode)
{
	char path[WS_MAX + PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", ws, name);
	write_text(path, text, mode);
}

/* The transcript model: turns is the JSON array of its turns. */
static void
transcript(const char *model, const char *turns)
{
	char path[PATH_MAX + 64], *text = NULL;
	cJSON *doc;

	cr_assert_geq(asprintf(&text, "{\"turns\":%s}", turns), 0);
	doc = cJSON_Parse(text);
	cr_assert_not_null(doc, "a malformed transcript: %s", text);
	cJSON_Delete(doc);
	snprintf(path, sizeof path, "%s/replay/%s.json", base, model);
	write_text(path, text, 0644);
	free(text);
}

/* A run of model in ws, or in session (with its model); its id (malloc'd). */
static char *
run_in(const char *project, const char *ws, const char *session, const char *model)
{
	char extra[128] = "";
	cJSON *run;
	char *id;

	if (session != NULL)
		snprintf(extra, sizeof extra, ",\"sessionId\":\"%s\"", session);
	else
		snprintf(extra, sizeof extra, ",\"config\":{\"provider\":\"replay\",\"model\":\"%s\"}",
		    model);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"change files\",\"cwd\":\"%s\""
	    "%s}", project, ws, extra);
	id = strdup(json_str(run, "id"));
	cJSON_Delete(run);
	return id;
}

/* The run, final and completed. */
static cJSON *
run_done(const char *id)
{
	return run_final_within(&svc, id, "completed", FINAL_WAIT_MS);
}

static cJSON *
changes_of(const char *id, const char *query)
{
	return http_get_json(&svc, "/api/v1/runs/%s/changes%s", id, query ? query : "");
}

/* The entry of path in a changes answer, or NULL. */
static const cJSON *
file_of(const cJSON *changes, const char *path)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(changes, "files"))
		if (strcmp(json_str_or_none(f, "path"), path) == 0)
			return f;
	return NULL;
}

/* Asserts path is listed with status, line counts and modes (NULL: null). */
static void
expect_file(const cJSON *changes, const char *path, const char *status, int adds, int dels,
    const char *old_mode, const char *new_mode)
{
	const cJSON *f = file_of(changes, path);
	char *text = cJSON_PrintUnformatted(changes);

	cr_assert_not_null(f, "%s is not listed: %s", path, text);
	cr_expect_str_eq(json_str_or_none(f, "status"), status, "%s: %s", path, text);
	cr_expect_eq(json_num(f, "additions"), adds, "%s: %s", path, text);
	cr_expect_eq(json_num(f, "deletions"), dels, "%s: %s", path, text);
	if (old_mode == NULL)
		cr_expect(cJSON_IsNull(cJSON_GetObjectItem(f, "oldMode")), "%s: %s", path, text);
	else
		cr_expect_str_eq(json_str_or_none(f, "oldMode"), old_mode, "%s: %s", path, text);
	if (new_mode == NULL)
		cr_expect(cJSON_IsNull(cJSON_GetObjectItem(f, "newMode")), "%s: %s", path, text);
	else
		cr_expect_str_eq(json_str_or_none(f, "newMode"), new_mode, "%s: %s", path, text);
	free(text);
}

/* GET the diff (path may be NULL); the response (free it). */
static struct http_resp
diff_of(const char *id, const char *path)
{
	char url[PATH_MAX];

	if (path != NULL)
		snprintf(url, sizeof url, "/api/v1/runs/%s/changes/diff?path=%s", id, path);
	else
		snprintf(url, sizeof url, "/api/v1/runs/%s/changes/diff", id);
	return http_api(&svc, "GET", url, NULL);
}

static struct http_resp
revert(const char *id, const char *body)
{
	char url[256];

	snprintf(url, sizeof url, "/api/v1/runs/%s/revert", id);
	return http_api(&svc, "POST", url, body);
}

/* The file's bytes, or NULL when it does not exist; *mode its permission bits. */
static char *
ws_read(const char *ws, const char *name, mode_t *mode)
{
	char path[WS_MAX + PATH_MAX];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", ws, name);
	if (lstat(path, &st) != 0)
		return NULL;
	if (mode != NULL)
		*mode = st.st_mode & 07777;
	return harness_slurp(path, NULL);
}

static void
expect_ws_file(const char *ws, const char *name, const char *text, mode_t mode)
{
	mode_t got = 0;
	char *data = ws_read(ws, name, &got);

	cr_assert_not_null(data, "%s is missing", name);
	cr_expect_str_eq(data, text, "%s holds other bytes", name);
	cr_expect_eq(got, mode, "%s has mode %o, not %o", name, got, mode);
	free(data);
}

/* The umask this test (and so the service it starts) runs with. */
static mode_t
test_umask(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return mask;
}

static void
expect_ws_mode(const char *ws, const char *name, mode_t mode)
{
	char path[WS_MAX + PATH_MAX];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", ws, name);
	cr_assert_eq(lstat(path, &st), 0, "%s is missing", name);
	cr_expect_eq(st.st_mode & 07777, mode, "%s has mode %o, not %o", name,
	    st.st_mode & 07777, mode);
}

static void
expect_ws_absent(const char *ws, const char *name)
{
	char *data = ws_read(ws, name, NULL);

	cr_expect_null(data, "%s is still there", name);
	free(data);
}

/* The run's stored run.changes events. */
static int
changes_events(const char *id, cJSON **last)
{
	cJSON *events = http_get_json(&svc, "/api/v1/runs/%s/events", id), *e;
	int n = 0;

	*last = NULL;
	cJSON_ArrayForEach(e, events) {
		if (strcmp(json_str_or_none(e, "type"), "run.changes") == 0) {
			n++;
			cJSON_Delete(*last);
			*last = cJSON_Duplicate(cJSON_GetObjectItem(e, "data"), 1);
		}
	}
	cJSON_Delete(events);
	return n;
}

Test(changes, write_file_and_commands_are_listed_diffed_and_reverted)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run;
	cJSON *r, *c, *last;
	struct http_resp d;
	char *ct;

	workspace("ws-main", ws);
	ws_write(ws, "keep.txt", "untouched\n", 0644);
	ws_write(ws, "edit.txt", "one\ntwo\nthree\n", 0644);
	ws_write(ws, "gone.sh", "#!/bin/sh\necho gone\n", 0755);
	ws_write(ws, "old.txt", "moved text\n", 0644);
	ws_write(ws, "script.sh", "#!/bin/sh\necho hi\n", 0644);
	ws_write(ws, "swap.txt", "a file, then a link\n", 0644);
	ws_write(ws, "nest", "a file, then a directory\n", 0644);
	transcript("changes-main", "["
	    "{\"text\":\"Writing.\",\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"docs/new.md\",\"content\":\"# New\\nline two\\n\"}}]},"
	    "{\"text\":\"Editing.\",\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"sed -i 's/two/TWO/' edit.txt && rm gone.sh && mv old.txt moved.txt"
	    " && chmod +x script.sh && printf 'a\\\\000b' > blob.bin && rm swap.txt"
	    " && ln -s keep.txt swap.txt && rm nest && mkdir nest && echo in > nest/inner\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-main");
	r = run_done(run);
	c = cJSON_GetObjectItem(r, "changes");
	cr_assert(cJSON_IsObject(c), "the run has no changes: %s", cJSON_PrintUnformatted(r));
	cr_expect_eq(json_num(c, "files"), 10);
	/* the counts kept step by step are those of the whole comparison */
	cr_expect_eq(json_num(c, "additions"), 5);
	cr_expect_eq(json_num(c, "deletions"), 5);
	cJSON_Delete(r);

	/* What the run made is the user's, with the user's umask (the service's own is 077). */
	expect_ws_mode(ws, "docs", 0755 & ~test_umask());
	expect_ws_mode(ws, "docs/new.md", 0644 & ~test_umask());
	expect_ws_mode(ws, "nest", 0777 & ~test_umask());
	expect_ws_mode(ws, "moved.txt", 0644);	/* mv keeps the mode */
	expect_ws_mode(ws, "blob.bin", 0666 & ~test_umask());

	c = changes_of(run, NULL);
	cr_expect_eq(cJSON_IsFalse(cJSON_GetObjectItem(c, "live")), 1);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(c, "incomplete")));
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(c, "incompleteReason")));
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 10);
	expect_file(c, "docs/new.md", "added", 2, 0, NULL, "100644");
	expect_file(c, "edit.txt", "modified", 1, 1, "100644", "100644");
	expect_file(c, "gone.sh", "deleted", 0, 2, "100755", NULL);
	expect_file(c, "old.txt", "deleted", 0, 1, "100644", NULL);
	expect_file(c, "moved.txt", "added", 1, 0, NULL, "100644");
	expect_file(c, "script.sh", "modified", 0, 0, "100644", "100755");
	expect_file(c, "blob.bin", "added", 0, 0, NULL, "100644");
	expect_file(c, "swap.txt", "type-changed", 0, 0, "100644", "120000");
	expect_file(c, "nest", "deleted", 0, 1, "100644", NULL);
	expect_file(c, "nest/inner", "added", 1, 0, NULL, "100644");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(file_of(c, "blob.bin"), "binary")));
	cr_expect_null(file_of(c, "keep.txt"), "an untouched file is listed");
	/* sorted by path */
	cr_expect_str_eq(json_str_or_none(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "files"), 0),
	    "path"), "blob.bin");
	cr_expect_eq(json_num(cJSON_GetObjectItem(c, "totals"), "additions"), 5);
	cr_expect_eq(json_num(cJSON_GetObjectItem(c, "totals"), "deletions"), 5);
	cJSON_Delete(c);

	d = diff_of(run, "edit.txt");
	cr_assert_eq(d.status, 200, "%s", d.body);
	ct = http_header(&d, "Content-Type");
	cr_expect_str_eq(ct, "text/x-diff; charset=utf-8");
	free(ct);
	cr_expect_not_null(strstr(d.body, "diff --git a/edit.txt b/edit.txt\n"), "%s", d.body);
	cr_expect_not_null(strstr(d.body, "--- a/edit.txt\n+++ b/edit.txt\n"), "%s", d.body);
	cr_expect_not_null(strstr(d.body, "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"), "%s",
	    d.body);
	http_resp_free(&d);
	d = diff_of(run, NULL);
	cr_assert_eq(d.status, 200, "%s", d.body);
	cr_expect_not_null(strstr(d.body, "Binary files /dev/null and b/blob.bin differ"), "%s",
	    d.body);
	cr_expect_not_null(strstr(d.body, "old mode 100644\nnew mode 100755"), "%s", d.body);
	cr_expect_not_null(strstr(d.body, "+++ b/docs/new.md"), "%s", d.body);
	cr_expect_not_null(strstr(d.body, "diff --git a/swap.txt b/swap.txt\n"), "%s", d.body);
	cr_expect_null(strstr(d.body, "untouched"), "%s", d.body);
	http_resp_free(&d);
	d = diff_of(run, "keep.txt");
	cr_expect_eq(d.status, 404, "%s", d.body);
	http_resp_free(&d);

	cr_expect_geq(changes_events(run, &last), 1, "no run.changes event");
	cr_expect_eq(json_num(last, "files"), 10);
	cr_expect_str_eq(json_str_or_none(last, "runId"), run);
	cr_expect(cJSON_IsArray(cJSON_GetObjectItem(last, "paths")));
	cJSON_Delete(last);

	/* The user changes a file the run did not touch: the revert leaves it alone. */
	ws_write(ws, "keep.txt", "the user's edit\n", 0644);
	d = revert(run, "{}");
	cr_assert_eq(d.status, 200, "%s", d.body);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d.json, "reverted")), 10, "%s", d.body);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(d.json, "incomplete")), "%s", d.body);
	cr_expect_not_null(json_get_string(d.json, "revertedAt"), "%s", d.body);
	http_resp_free(&d);
	expect_ws_file(ws, "edit.txt", "one\ntwo\nthree\n", 0644);
	expect_ws_file(ws, "gone.sh", "#!/bin/sh\necho gone\n", 0755);
	expect_ws_file(ws, "old.txt", "moved text\n", 0644);
	expect_ws_file(ws, "script.sh", "#!/bin/sh\necho hi\n", 0644);
	expect_ws_file(ws, "keep.txt", "the user's edit\n", 0644);
	expect_ws_absent(ws, "moved.txt");
	expect_ws_absent(ws, "blob.bin");
	expect_ws_absent(ws, "docs/new.md");
	expect_ws_absent(ws, "docs");
	expect_ws_file(ws, "swap.txt", "a file, then a link\n", 0644);
	expect_ws_file(ws, "nest", "a file, then a directory\n", 0644);
	c = changes_of(run, NULL);
	cr_expect_not_null(json_get_string(c, "revertedAt"));
	cJSON_Delete(c);
	free(run);
	free(project);
}

Test(changes, a_later_edit_refuses_the_revert_until_it_is_forced)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run;
	struct http_resp d;
	const cJSON *conflict;

	workspace("ws-conflict", ws);
	ws_write(ws, "notes.txt", "first\n", 0644);
	transcript("changes-conflict", "["
	    "{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"notes.txt\",\"content\":\"first\\nby the run\\n\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-conflict");
	cJSON_Delete(run_done(run));

	ws_write(ws, "notes.txt", "first\nby the run\nby the user\n", 0644);
	d = revert(run, NULL);
	cr_assert_eq(d.status, 409, "%s", d.body);
	cr_expect_str_eq(http_error_code(&d), "revert_conflict");
	conflict = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(d.json, "error"), "details"), "conflicts"), 0);
	cr_expect_str_eq(json_str_or_none(conflict, "path"), "notes.txt", "%s", d.body);
	cr_expect_not_null(json_get_string(conflict, "reason"), "%s", d.body);
	http_resp_free(&d);
	expect_ws_file(ws, "notes.txt", "first\nby the run\nby the user\n", 0644);

	d = revert(run, "{\"force\":true}");
	cr_assert_eq(d.status, 200, "%s", d.body);
	http_resp_free(&d);
	expect_ws_file(ws, "notes.txt", "first\n", 0644);
	/* Nothing changed since: the same answer; then a change makes it a conflict. */
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d.json, "reverted")), 0, "%s", d.body);
	http_resp_free(&d);
	ws_write(ws, "notes.txt", "again\n", 0644);
	d = revert(run, NULL);
	cr_expect_eq(d.status, 409, "%s", d.body);
	cr_expect_str_eq(http_error_code(&d), "revert_conflict");
	http_resp_free(&d);
	free(run);
	free(project);
}

Test(changes, runs_of_a_session_compare_with_each_other_and_the_start)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *one, *two, *other;
	char q[128];
	cJSON *r, *c;
	struct http_resp d;
	char *session;

	workspace("ws-session", ws);
	/* Each run of it adds f<N>.txt, N the number of files there before. */
	transcript("changes-count", "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"echo one > f$(ls | wc -l).txt\"}}]},{\"text\":\"Done.\"}]");
	one = run_in(project, ws, NULL, "changes-count");
	r = run_done(one);
	session = strdup(json_str(r, "sessionId"));
	cJSON_Delete(r);
	two = run_in(project, ws, session, NULL);
	cJSON_Delete(run_done(two));

	c = changes_of(two, NULL);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1);
	expect_file(c, "f1.txt", "added", 1, 0, NULL, "100644");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "from"), "runId")));
	cJSON_Delete(c);
	c = changes_of(two, "?from=start");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 2);
	expect_file(c, "f0.txt", "added", 1, 0, NULL, "100644");
	expect_file(c, "f1.txt", "added", 1, 0, NULL, "100644");
	cJSON_Delete(c);
	snprintf(q, sizeof q, "?from=%s", one);
	c = changes_of(two, q);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1);
	cr_expect_str_eq(json_str_or_none(cJSON_GetObjectItem(c, "from"), "runId"), one);
	cJSON_Delete(c);

	/* A run of another session is no base; an unknown run is a 404. */
	other = run_in(project, ws, NULL, "changes-count");
	cJSON_Delete(run_done(other));
	snprintf(q, sizeof q, "/api/v1/runs/%s/changes?from=%s", two, other);
	d = http_api(&svc, "GET", q, NULL);
	cr_expect_eq(d.status, 400, "%s", d.body);
	cr_expect_str_eq(http_error_code(&d), "invalid_request");
	http_resp_free(&d);
	d = http_api(&svc, "GET", "/api/v1/runs/run_0000000000000000000000ff/changes", NULL);
	cr_expect_eq(d.status, 404, "%s", d.body);
	http_resp_free(&d);
	free(session);
	free(one);
	free(two);
	free(other);
	free(project);
}

Test(changes, a_link_to_the_token_is_a_link_and_its_bytes_never_show)
{
	char ws[WS_MAX], turns[2 * PATH_MAX], tokfile[PATH_MAX + 16], *project, *run, *token;
	struct http_resp d;
	cJSON *c;

	project = http_project_new(&svc, "changes");
	workspace("ws-link", ws);
	snprintf(tokfile, sizeof tokfile, "%s/token", svc.home);
	token = harness_slurp(tokfile, NULL);
	cr_assert_not_null(token);
	snprintf(turns, sizeof turns, "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"ln -s %s tok && ln tok hard 2>/dev/null; echo ok > plain.txt\"}}]},"
	    "{\"text\":\"Done.\"}]", tokfile);
	transcript("changes-link", turns);
	run = run_in(project, ws, NULL, "changes-link");
	cJSON_Delete(run_done(run));

	c = changes_of(run, NULL);
	expect_file(c, "tok", "added", 1, 0, NULL, "120000");
	expect_file(c, "plain.txt", "added", 1, 0, NULL, "100644");
	cJSON_Delete(c);
	d = diff_of(run, NULL);
	cr_assert_eq(d.status, 200, "%s", d.body);
	cr_expect_not_null(strstr(d.body, tokfile), "the link's target is not shown: %s", d.body);
	cr_expect_null(strstr(d.body, token), "the token's bytes are in the diff");
	http_resp_free(&d);
	free(token);
	free(run);
	free(project);
}

Test(changes, a_revert_waits_for_the_end_of_the_run)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run;
	struct http_resp d;

	workspace("ws-active", ws);
	transcript("changes-slow", "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"a.txt\",\"content\":\"a\\n\"}}]},{\"delayMs\":4000,\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-slow");
	d = revert(run, NULL);
	cr_expect_eq(d.status, 409, "%s", d.body);
	cr_expect_str_eq(http_error_code(&d), "run_active");
	http_resp_free(&d);
	cJSON_Delete(run_done(run));
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	http_resp_free(&d);
	expect_ws_absent(ws, "a.txt");
	free(run);
	free(project);
}

/* Polls the run's changes until it lists path; asserts it does within timeout_ms. */
static void
changes_wait(const char *run, const char *path, int timeout_ms)
{
	long until = mono_ms() + timeout_ms;

	for (;;) {
		cJSON *c = changes_of(run, NULL);
		bool listed = file_of(c, path) != NULL;

		cJSON_Delete(c);
		if (listed)
			return;
		cr_assert_lt(mono_ms(), until, "%s was never listed", path);
		usleep(100 * 1000);
	}
}

Test(changes, the_changes_survive_a_kill_9_mid_run)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run;
	cJSON *c;

	workspace("ws-kill", ws);
	transcript("changes-kill", "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"before-kill.txt\",\"content\":\"1\\n2\\n\"}}]},"
	    "{\"delayMs\":3000,\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-kill");
	changes_wait(run, "before-kill.txt", 20000);
	svc_kill(&svc);
	svc_restart(&svc);
	c = changes_of(run, NULL);
	expect_file(c, "before-kill.txt", "added", 2, 0, NULL, "100644");
	cJSON_Delete(c);
	cJSON_Delete(run_final_within(&svc, run, NULL, FINAL_WAIT_MS));
	c = changes_of(run, NULL);
	expect_file(c, "before-kill.txt", "added", 2, 0, NULL, "100644");
	cJSON_Delete(c);
	free(run);
	free(project);
}

/* POST body to path, asserting 201; the id created (until the next call). */
static const char *
id_of_created(const char *path, const char *body)
{
	struct http_resp r = http_api(&svc, "POST", path, body);
	static char id[64];

	cr_assert_eq(r.status, 201, "POST %s %s: %d %s", path, body, (int)r.status, r.body);
	snprintf(id, sizeof id, "%s", json_str(r.json, "id"));
	http_resp_free(&r);
	return id;
}

Test(changes, a_connector_server_writing_into_the_workspace_is_seen)
{
	char ws[WS_MAX], fs[PATH_MAX], body[3 * PATH_MAX], turns[2 * PATH_MAX], url[128];
	const char *cache = getenv("TD_CACHE");
	char *project, *run;
	struct http_resp r, d;
	struct stat st;
	cJSON *c;

	if (cache == NULL || *cache == '\0')
		cr_skip_test("TD_CACHE is not set: run ./quickstart check for the MCP servers");
	snprintf(fs, sizeof fs, "%s/npm/server-filesystem/node_modules/@modelcontextprotocol/"
	    "server-filesystem/dist/index.js", cache);
	cr_assert_eq(stat(fs, &st), 0, "%s is missing: run scripts/test-deps", fs);
	project = http_project_new(&svc, "changes");
	workspace("ws-connector", ws);
	ws_write(ws, "kept.txt", "kept\n", 0644);
	snprintf(body, sizeof body, "{\"name\":\"fs\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"node\",\"args\":[\"%s\",\"%s\"]}}", fs, ws);
	snprintf(url, sizeof url, "/api/v1/connectors/%s/enabled",
	    id_of_created("/api/v1/connectors", body));
	r = http_api(&svc, "PUT", url, "{\"enabled\":true}");
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	snprintf(turns, sizeof turns, "[{\"toolCalls\":[{\"name\":\"fs__write_file\",\"arguments\":"
	    "{\"path\":\"%s/from-server.txt\",\"content\":\"written by the server\\n\"}}]},"
	    "{\"text\":\"Done.\"}]", ws);
	transcript("changes-connector", turns);
	run = run_in(project, ws, NULL, "changes-connector");
	cJSON_Delete(run_done(run));
	/* Other runs of this suite must not start the server. */
	r = http_api(&svc, "PUT", url, "{\"enabled\":false}");
	http_resp_free(&r);

	c = changes_of(run, NULL);
	expect_file(c, "from-server.txt", "added", 1, 0, NULL, "100644");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1);
	cJSON_Delete(c);
	d = diff_of(run, "from-server.txt");
	cr_expect_eq(d.status, 200, "%s", d.body);
	cr_expect_not_null(strstr(d.body, "+written by the server\n"), "%s", d.body);
	http_resp_free(&d);
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	http_resp_free(&d);
	expect_ws_absent(ws, "from-server.txt");
	expect_ws_file(ws, "kept.txt", "kept\n", 0644);
	free(run);
	free(project);
}

/* Files under the session's store matching a find(1) -path pattern. */
static int
store_files(const char *session, const char *pattern)
{
	char cmd[PATH_MAX + 256], out[32] = "";
	FILE *p;

	snprintf(cmd, sizeof cmd, "find '%s/changes/%s.git/objects' -path '%s' -type f | wc -l",
	    svc.home, session, pattern);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(out, sizeof out, p));
	pclose(p);
	return atoi(out);
}

Test(changes, a_store_is_packed_and_still_reads)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run, *session;
	long until;
	struct http_resp d;
	cJSON *r, *c;

	workspace("ws-pack", ws);
	transcript("changes-many", "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"for i in $(seq 1 300); do echo line $i > f$i.txt; done\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-many");
	r = run_done(run);
	session = strdup(json_str(r, "sessionId"));
	cJSON_Delete(r);
	/* The snapshot thread packs once it has nothing else to do. */
	until = mono_ms() + 20000;
	while (store_files(session, "*/objects/pack/*.pack") == 0) {
		cr_assert_lt(mono_ms(), until, "the store was never packed");
		usleep(100 * 1000);
	}
	cr_expect_eq(store_files(session, "*/objects/[0-9a-f][0-9a-f]/*"), 0,
	    "objects are still loose after the pack");
	c = changes_of(run, NULL);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 300);
	expect_file(c, "f123.txt", "added", 1, 0, NULL, "100644");
	cJSON_Delete(c);
	d = diff_of(run, "f123.txt");
	cr_expect_eq(d.status, 200, "%s", d.body);
	cr_expect_not_null(strstr(d.body, "+line 123\n"), "%s", d.body);
	http_resp_free(&d);
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	http_resp_free(&d);
	expect_ws_absent(ws, "f123.txt");
	free(session);
	free(run);
	free(project);
}

Test(changes, run_changes_arrives_on_the_event_stream)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run, *text;
	char out[PATH_MAX + 32], cmd[3 * PATH_MAX], needle[128];
	long until;
	bool seen;

	workspace("ws-stream", ws);
	snprintf(out, sizeof out, "%s/stream.txt", base);
	/* The global stream, read by curl for 15 s at most; it ends when the test does. */
	snprintf(cmd, sizeof cmd, "curl -sN --max-time 15 -H 'Authorization: Bearer %s' "
	    "'%s/api/v1/events' > '%s' 2>/dev/null &", svc.token, svc.url, out);
	cr_assert_eq(system(cmd), 0);
	usleep(300 * 1000);
	transcript("changes-stream", "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"streamed.txt\",\"content\":\"s\\n\"}}]},{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-stream");
	cJSON_Delete(run_done(run));
	snprintf(needle, sizeof needle, "\"runId\":\"%s\"", run);
	until = mono_ms() + 10000;
	for (;;) {
		text = harness_slurp(out, NULL);
		seen = text != NULL && strstr(text, "event: run.changes") != NULL &&
		    strstr(text, "\"paths\":[\"streamed.txt\"]") != NULL && strstr(text, needle);
		if (seen || mono_ms() > until)
			break;
		free(text);
		usleep(100 * 1000);
	}
	cr_expect(seen, "no run.changes of the run on the stream: %s", text ? text : "(nothing)");
	free(text);
	free(run);
	free(project);
}

/* ---- an attacker: a racing process, links, hard links ---------------------------- */

#define MARKER "OUTSIDE-MARKER-5d2c41"
#define MARKER_HOME "HOME-MARKER-93be07"

/* Whether any object of any store of the service holds needle. */
static bool
stores_hold(const char *needle)
{
	char cmd[2 * PATH_MAX];
	char *out;
	size_t len;
	bool found;

	snprintf(cmd, sizeof cmd, "for g in '%s'/changes/*.git; do git --git-dir=\"$g\" "
	    "cat-file --batch-all-objects --batch; done > '%s/objects.txt' 2>/dev/null",
	    svc.home, base);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s/objects.txt", base);
	out = harness_slurp(cmd, &len);
	cr_assert_not_null(out);
	cr_assert_gt(len, 0, "the stores hold no object at all");
	found = memmem(out, len, needle, strlen(needle)) != NULL;
	free(out);
	return found;
}

/* Files below dir whose name matches pattern (find -name). */
static int
files_named(const char *dir, const char *pattern)
{
	char cmd[2 * PATH_MAX], out[32] = "";
	FILE *p;

	snprintf(cmd, sizeof cmd, "find '%s' -name '%s' | wc -l", dir, pattern);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(out, sizeof out, p));
	pclose(p);
	return atoi(out);
}

/* A process swapping ws/a with ws/b and ws/c with ws/d (RENAME_EXCHANGE) until killed. */
static pid_t
swapper_start(const char *ws, const char *a, const char *b, const char *c, const char *d)
{
	char pa[WS_MAX + 8], pb[WS_MAX + 8], pc[WS_MAX + 8], pd[WS_MAX + 8];
	pid_t pid;

	snprintf(pa, sizeof pa, "%s/%s", ws, a);
	snprintf(pb, sizeof pb, "%s/%s", ws, b);
	snprintf(pc, sizeof pc, "%s/%s", ws, c);
	snprintf(pd, sizeof pd, "%s/%s", ws, d);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		time_t end = time(NULL) + 170;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* A revert may remove a directory the start saw as a link: go on. */
		while (time(NULL) < end) {
			renameat2(AT_FDCWD, pa, AT_FDCWD, pb, RENAME_EXCHANGE);
			renameat2(AT_FDCWD, pc, AT_FDCWD, pd, RENAME_EXCHANGE);
		}
		_exit(0);
	}
	return pid;
}

static void
swapper_stop(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* The service's token file (a static buffer). */
static const char *
token_path(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/token", svc.home);
	return path;
}

Test(changes, a_swapped_directory_racing_snapshots_and_reverts_leaks_and_writes_nothing_outside)
{
	char ws[WS_MAX], outside[WS_MAX], path[WS_MAX + 64], turns[16384], *project, *run;
	char *tok, *data;
	size_t off = 0;
	pid_t swapper;
	struct http_resp d;
	int reverts_ok = 0;

	project = http_project_new(&svc, "changes");
	workspace("ws-race", ws);
	/* outside: what a link of the workspace points at, with the names the run writes */
	snprintf(outside, sizeof outside, "%s/outside", base);
	cr_assert_eq(mkdir(outside, 0700), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof path, "%s/w-%d", outside, i);
		write_text(path, MARKER "\n", 0644);
	}
	snprintf(path, sizeof path, "%s/b.txt", outside);
	write_text(path, MARKER "\n", 0644);
	snprintf(path, sizeof path, "%s/c.txt", svc.home);
	write_text(path, MARKER_HOME "\n", 0600);
	snprintf(path, sizeof path, "%s/d", ws);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/e", ws);
	cr_assert_eq(mkdir(path, 0755), 0);
	ws_write(ws, "d/b.txt", "before\n", 0644);
	ws_write(ws, "e/c.txt", "before\n", 0644);
	snprintf(path, sizeof path, "%s/s", ws);
	cr_assert_eq(symlink(outside, path), 0);
	snprintf(path, sizeof path, "%s/h", ws);
	cr_assert_eq(symlink(svc.home, path), 0);
	off += (size_t)snprintf(turns + off, sizeof turns - off, "[");
	for (int i = 0; i < 8; i++)
		off += (size_t)snprintf(turns + off, sizeof turns - off, "{\"toolCalls\":["
		    "{\"name\":\"write_file\",\"arguments\":{\"path\":\"d/w-%d\",\"content\":\"new\\n\"}},"
		    "{\"name\":\"write_file\",\"arguments\":{\"path\":\"e/n-%d\",\"content\":\"new\\n\"}},"
		    "{\"name\":\"write_file\",\"arguments\":{\"path\":\"d/b.txt\",\"content\":\"%d\\n\"}},"
		    "{\"name\":\"write_file\",\"arguments\":{\"path\":\"e/c.txt\",\"content\":\"%d\\n\"}}"
		    "]},", i, i, i, i);
	snprintf(turns + off, sizeof turns - off, "{\"text\":\"Done.\"}]");
	transcript("changes-race", turns);

	swapper = swapper_start(ws, "d", "s", "e", "h");
	run = run_in(project, ws, NULL, "changes-race");
	cJSON_Delete(run_done(run));
	for (int i = 0; i < 30; i++) {
		d = revert(run, "{\"force\":true}");
		cr_expect(d.status == 200 || d.status == 500, "%d %s", (int)d.status, d.body);
		reverts_ok += d.status == 200;
		http_resp_free(&d);
	}
	swapper_stop(swapper);

	/* Outside and in the service's home: every file as it was, nothing added. */
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof path, "%s/w-%d", outside, i);
		data = harness_slurp(path, NULL);
		cr_expect_str_eq(data ? data : "(deleted)", MARKER "\n", "%s was changed", path);
		free(data);
	}
	snprintf(path, sizeof path, "%s/b.txt", outside);
	data = harness_slurp(path, NULL);
	cr_expect_str_eq(data ? data : "(deleted)", MARKER "\n", "%s was changed", path);
	free(data);
	snprintf(path, sizeof path, "%s/c.txt", svc.home);
	data = harness_slurp(path, NULL);
	cr_expect_str_eq(data ? data : "(deleted)", MARKER_HOME "\n", "%s was changed", path);
	free(data);
	cr_expect_eq(files_named(outside, "*"), 1 + 9, "files were added outside");
	cr_expect_eq(files_named(svc.home, "n-*"), 0, "files were written in the service's home");
	cr_expect_eq(files_named(svc.home, ".taskdeck-revert-*"), 0);
	cr_expect_eq(files_named(outside, ".taskdeck-revert-*"), 0);
	/* Nothing of outside or of the service's home in a store or a diff. */
	tok = harness_slurp(token_path(), NULL);
	cr_assert_not_null(tok);
	cr_expect(!stores_hold(MARKER), "a file outside the workspace is in a store");
	cr_expect(!stores_hold(MARKER_HOME), "a file of the service's home is in a store");
	cr_expect(!stores_hold(tok), "the token is in a store");
	d = diff_of(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	cr_expect_null(strstr(d.body, MARKER), "%s", d.body);
	cr_expect_null(strstr(d.body, MARKER_HOME), "%s", d.body);
	http_resp_free(&d);
	cr_log_info("%d of 30 reverts under the race put every file back", reverts_ok);
	free(tok);
	free(run);
	free(project);
}

Test(changes, a_link_put_where_the_run_added_a_file_goes_and_its_target_stays)
{
	char ws[WS_MAX], outside[WS_MAX], path[WS_MAX + 64], *project, *run, *data;
	struct http_resp d;

	project = http_project_new(&svc, "changes");
	workspace("ws-unlink", ws);
	snprintf(outside, sizeof outside, "%s/outside-unlink", base);
	cr_assert_eq(mkdir(outside, 0700), 0);
	snprintf(path, sizeof path, "%s/target.txt", outside);
	write_text(path, MARKER "\n", 0644);
	snprintf(path, sizeof path, "%s/x.txt", outside);
	write_text(path, MARKER "\n", 0644);
	transcript("changes-unlink", "[{\"toolCalls\":["
	    "{\"name\":\"write_file\",\"arguments\":{\"path\":\"added.txt\",\"content\":\"a\\n\"}},"
	    "{\"name\":\"write_file\",\"arguments\":{\"path\":\"newdir/x.txt\",\"content\":\"x\\n\"}}"
	    "]},{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-unlink");
	cJSON_Delete(run_done(run));
	/* After the run, the file it added becomes a link to a file outside, its directory a
	 * link to a directory outside holding a file of the same name. */
	snprintf(path, sizeof path, "%s/added.txt", ws);
	cr_assert_eq(unlink(path), 0);
	snprintf(outside + strlen(outside), sizeof outside - strlen(outside), "/target.txt");
	cr_assert_eq(symlink(outside, path), 0);
	*strrchr(outside, '/') = '\0';
	snprintf(path, sizeof path, "%s/newdir/x.txt", ws);
	cr_assert_eq(unlink(path), 0);
	snprintf(path, sizeof path, "%s/newdir", ws);
	cr_assert_eq(rmdir(path), 0);
	cr_assert_eq(symlink(outside, path), 0);

	d = revert(run, NULL);
	cr_expect_eq(d.status, 409, "%s", d.body);
	http_resp_free(&d);
	d = revert(run, "{\"force\":true}");
	http_resp_free(&d);
	snprintf(path, sizeof path, "%s/target.txt", outside);
	data = harness_slurp(path, NULL);
	cr_expect_str_eq(data ? data : "(deleted)", MARKER "\n", "the link's target went");
	free(data);
	snprintf(path, sizeof path, "%s/x.txt", outside);
	data = harness_slurp(path, NULL);
	cr_expect_str_eq(data ? data : "(deleted)", MARKER "\n", "a file outside went");
	free(data);
	expect_ws_absent(ws, "added.txt");
	free(run);
	free(project);
}

Test(changes, a_hard_link_to_a_hidden_file_is_never_read)
{
	char ws[WS_MAX], path[WS_MAX + 64], key[PATH_MAX], *project, *run, *tok, *secret;
	size_t len;
	cJSON *c;

	project = http_project_new(&svc, "changes");
	workspace("ws-hard", ws);
	snprintf(path, sizeof path, "%s/token-copy", ws);
	cr_assert_eq(link(token_path(), path), 0, "%s", strerror(errno));
	snprintf(key, sizeof key, "%s/secret.key", svc.home);
	secret = harness_slurp(key, &len);
	snprintf(path, sizeof path, "%s/key-copy", ws);
	if (secret != NULL)
		cr_assert_eq(link(key, path), 0, "%s", strerror(errno));
	/* The database's WAL, in the service's home as the key: read_file refuses both. */
	snprintf(key, sizeof key, "%s/taskdeck.db-wal", svc.home);
	snprintf(path, sizeof path, "%s/wal-copy", ws);
	cr_assert_eq(link(key, path), 0, "%s: %s", key, strerror(errno));
	transcript("changes-hard", "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"echo done > plain.txt\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-hard");
	cJSON_Delete(run_done(run));
	c = changes_of(run, NULL);
	expect_file(c, "plain.txt", "added", 1, 0, NULL, "100644");
	cr_expect_null(file_of(c, "token-copy"));
	cr_expect_null(file_of(c, "key-copy"), "a hard link to the key is in the changes");
	cr_expect_null(file_of(c, "wal-copy"), "a hard link to the database's WAL is in the changes");
	cJSON_Delete(c);
	tok = harness_slurp(token_path(), NULL);
	cr_assert_not_null(tok);
	cr_expect(!stores_hold(tok), "the token is in a store");
	free(tok);
	free(secret);
	free(run);
	free(project);
}

/* ---- what a snapshot cannot record is said ------------------------------------- */

/* The changes' incompleteReason, asserting they are incomplete (a static copy). */
static const char *
incomplete_reason(const char *run)
{
	static char why[1024];
	cJSON *c = changes_of(run, NULL);
	char *text = cJSON_PrintUnformatted(c);

	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c, "incomplete")), "not incomplete: %s", text);
	snprintf(why, sizeof why, "%s", json_str_or_none(c, "incompleteReason"));
	free(text);
	cJSON_Delete(c);
	return why;
}

Test(changes, a_tree_too_deep_and_names_not_utf8_make_the_changes_incomplete)
{
	char ws[WS_MAX], path[WS_MAX + 512], *project = http_project_new(&svc, "changes"), *run;
	const char *why;
	struct http_resp d;
	cJSON *c;
	size_t n;

	workspace("ws-deep", ws);
	n = (size_t)snprintf(path, sizeof path, "%s", ws);
	for (int i = 0; i < 130; i++) {
		n += (size_t)snprintf(path + n, sizeof path - n, "/x");
		cr_assert_eq(mkdir(path, 0755), 0, "%s", strerror(errno));
	}
	snprintf(path + n, sizeof path - n, "/deep.txt");
	write_text(path, "deep\n", 0644);
	transcript("changes-deep", "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"echo more >> $(find x -name deep.txt) && printf b > \\\"$(printf "
	    "'bad\\\\377name')\\\" && echo ok > ok.txt\"}}]},{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-deep");
	cJSON_Delete(run_done(run));
	c = changes_of(run, NULL);
	expect_file(c, "ok.txt", "added", 1, 0, NULL, "100644");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1);
	cJSON_Delete(c);
	why = incomplete_reason(run);
	cr_expect_not_null(strstr(why, "deeper than 127 levels"), "%s", why);
	cr_expect_not_null(strstr(why, "1 names that are not UTF-8"), "%s", why);
	snprintf(path, sizeof path, "%s/bad\377name", ws);
	cr_expect_eq(access(path, F_OK), 0, "the run did not make the name");
	/* The revert puts back what it knows and says what it could not see. */
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(d.json, "incomplete")), "%s", d.body);
	cr_expect_not_null(strstr(json_str_or_none(d.json, "incompleteReason"), "deeper than"), "%s",
	    d.body);
	http_resp_free(&d);
	expect_ws_absent(ws, "ok.txt");
	free(run);
	free(project);
}

/* Waits until the run's changes no longer say a snapshot is pending. */
static void
changes_settled(const char *run)
{
	for (long until = mono_ms() + 120000;; usleep(100 * 1000)) {
		cJSON *c = changes_of(run, NULL);
		const char *why = json_str_or_none(c, "incompleteReason");
		bool pending = strstr(why, "still being taken") != NULL ||
		    strstr(why, "not taken yet") != NULL;

		cJSON_Delete(c);
		if (!pending)
			return;
		cr_assert_lt(mono_ms(), until, "the run's snapshots were never recorded");
	}
}

Test(changes, a_run_in_a_big_cwd_starts_within_seconds_and_its_changes_are_exact)
{
	char ws[WS_MAX], path[WS_MAX + 64], *project = http_project_new(&svc, "changes"), *run;
	char *shown;
	cJSON *c;
	long t0, started = -1, slowest = 0, final;
	int fd;

	/* 80,000 files, each its own blob to write: the first snapshot takes seconds. */
	workspace("ws-big", ws);
	for (int d = 0; d < 80; d++) {
		int dir;

		snprintf(path, sizeof path, "%s/d%02d", ws, d);
		cr_assert_eq(mkdir(path, 0755), 0);
		dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(dir, 0);
		for (int i = 0; i < 1000; i++) {
			char name[16], text[32];
			int n = snprintf(text, sizeof text, "file %d of %d\n", i, d);

			snprintf(name, sizeof name, "f%03d", i);
			fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			cr_assert_geq(fd, 0);
			cr_assert_eq(write(fd, text, (size_t)n), n);
			close(fd);
		}
		close(dir);
	}
	usleep(200 * 1000);	/* older than the clock's granularity: listed, read later */
	transcript("changes-big", "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"first.txt\",\"content\":\"1\\n\"}}]},{\"text\":\"Done.\"}]");
	t0 = mono_ms();
	run = run_in(project, ws, NULL, "changes-big");
	snprintf(path, sizeof path, "%s/first.txt", ws);
	while (mono_ms() - t0 < 120000) {
		long a = mono_ms();
		struct http_resp r = http_api(&svc, "GET", "/api/v1/projects", NULL);

		cr_expect_eq(r.status, 200);
		http_resp_free(&r);
		if (mono_ms() - a > slowest)
			slowest = mono_ms() - a;
		if (access(path, F_OK) == 0) {
			started = mono_ms() - t0;
			break;
		}
		usleep(50 * 1000);
	}
	cr_log_info("the agent wrote its first file %ld ms after POST /runs; the slowest "
	    "GET /projects took %ld ms", started, slowest);
	cr_expect_geq(started, 0, "the agent never wrote");
	cr_expect_lt(started, 6000, "the agent wrote %ld ms after POST /runs", started);
	cr_expect_lt(slowest, 1000, "a GET took %ld ms during the snapshot", slowest);
	/* Final within the end snapshot's 5 s of waiting, the snapshot then still going. */
	cJSON_Delete(run_done(run));
	final = mono_ms() - t0;
	cr_log_info("the run was final %ld ms after POST /runs", final);
	cr_expect_lt(final, 16000, "the run was final %ld ms after POST /runs", final);
	/*
	 * The start listed the workspace before the agent wrote (what it wrote is
	 * its change, and the changes are whole), or, on a slow machine, the
	 * listing took over 2 s and the changes say the agent started before it.
	 */
	changes_settled(run);
	c = changes_of(run, NULL);
	shown = cJSON_PrintUnformatted(c);
	cr_log_info("%s", shown);
	if (cJSON_IsTrue(cJSON_GetObjectItem(c, "incomplete")))
		cr_expect_not_null(strstr(json_str_or_none(c, "incompleteReason"),
		    "before the start snapshot was complete"), "%s", shown);
	expect_file(c, "first.txt", "added", 1, 0, NULL, "100644");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1, "%s", shown);
	free(shown);
	cJSON_Delete(c);
	free(run);
	free(project);
}

/*
 * The start snapshot is held (a test hook) after it listed the workspace:
 * the run starts and writes, another process changes and removes files, then
 * the snapshot reads.  Every file changed before it was read is named in the
 * reason the changes are incomplete, and never silently taken for its start;
 * what the run made is its change; what nobody touched is no change.
 */
Test(changes, a_file_changed_before_the_start_snapshot_read_it_is_named)
{
	char ws[WS_MAX], path[WS_MAX + 64], release[PATH_MAX + 16], cmd[3 * WS_MAX];
	char *project = http_project_new(&svc, "changes"), *run, *text;
	const char *why;
	cJSON *c;

	workspace("ws-held", ws);
	snprintf(path, sizeof path, "%s/d", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	for (int i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof name, "d/f%03d.txt", i);
		ws_write(ws, name, name, 0644);
	}
	ws_write(ws, "edit.txt", "before the run\n", 0644);
	ws_write(ws, "other.txt", "before the run\n", 0644);
	ws_write(ws, "gone.txt", "before the run\n", 0644);
	usleep(200 * 1000);	/* older than the clock's granularity: listed, read later */
	snprintf(release, sizeof release, "%s/release", base);
	svc_stop(&svc);
	setenv("TASKDECK_TEST_CHANGES_HOLD", release, 1);
	svc_restart(&svc);
	unsetenv("TASKDECK_TEST_CHANGES_HOLD");
	transcript("changes-held", "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"edit.txt\",\"content\":\"by the run\\n\"}},{\"name\":\"write_file\","
	    "\"arguments\":{\"path\":\"made.txt\",\"content\":\"new\\n\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-held");
	/* The run writes while its start snapshot is held: it started after the listing. */
	snprintf(path, sizeof path, "%s/made.txt", ws);
	for (long until = mono_ms() + 60000; access(path, F_OK) != 0; usleep(20 * 1000))
		cr_assert_lt(mono_ms(), until, "the run did not write while its start was held");
	snprintf(cmd, sizeof cmd, "printf 'by another process\\n' > '%s/other.txt' && "
	    "rm '%s/gone.txt'", ws, ws);
	cr_assert_eq(system(cmd), 0);
	write_text(release, "", 0600);
	cJSON_Delete(run_done(run));
	changes_settled(run);
	c = changes_of(run, NULL);
	text = cJSON_PrintUnformatted(c);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c, "incomplete")), "%s", text);
	why = json_str_or_none(c, "incompleteReason");
	cr_expect_not_null(strstr(why, "edit.txt"), "%s", text);
	cr_expect_not_null(strstr(why, "other.txt"), "%s", text);
	cr_expect_not_null(strstr(why, "gone.txt"), "%s", text);
	cr_expect_null(strstr(why, "d/f"), "%s", text);
	expect_file(c, "made.txt", "added", 1, 0, NULL, "100644");
	for (int i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof name, "d/f%03d.txt", i);
		cr_expect_null(file_of(c, name), "%s is listed: %s", name, text);
	}
	free(text);
	cJSON_Delete(c);
	free(run);
	free(project);
}

/* A run in a fresh workspace ws-name writing name.txt of n bytes; its changes. */
static cJSON *
run_writing(const char *project, const char *name, size_t n)
{
	char ws[WS_MAX], dir[64], file[64], model[64], *turns = malloc(n + 512), *text = malloc(n + 1);
	char *run;
	cJSON *c;

	cr_assert(turns != NULL && text != NULL);
	memset(text, 'q', n);
	text[n] = '\0';
	snprintf(dir, sizeof dir, "ws-%s", name);
	workspace(dir, ws);
	snprintf(file, sizeof file, "%s.txt", name);
	snprintf(model, sizeof model, "changes-%s", name);
	snprintf(turns, n + 512, "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"%s\",\"content\":\"%s\"}}]},{\"text\":\"Done.\"}]", file, text);
	transcript(model, turns);
	run = run_in(project, ws, NULL, model);
	cJSON_Delete(run_done(run));
	c = changes_of(run, NULL);
	free(run);
	free(turns);
	free(text);
	return c;
}

Test(changes, the_stores_of_all_sessions_are_bounded_by_total_quota_bytes)
{
	char path[PATH_MAX], *text, *project;
	cJSON *settings, *c;

	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	text = harness_slurp(path, NULL);
	settings = text ? cJSON_Parse(text) : cJSON_CreateObject();
	free(text);
	cJSON_DeleteItemFromObject(settings, "changes");
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(settings, "changes"), "totalQuotaBytes",
	    3000);
	text = cJSON_Print(settings);
	svc_stop(&svc);
	write_text(path, text, 0600);
	free(text);
	cJSON_Delete(settings);
	svc_restart(&svc);
	project = http_project_new(&svc, "changes");

	/* Each run its own session and store: the first fills the room of all of them. */
	c = run_writing(project, "first", 2500);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(file_of(c, "first.txt"), "tooLarge")), "%s",
	    cJSON_PrintUnformatted(c));
	cJSON_Delete(c);
	c = run_writing(project, "second", 2500);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(file_of(c, "second.txt"), "tooLarge")),
	    "a second session's store went past changes.totalQuotaBytes");
	cJSON_Delete(c);
	free(project);
}

/* Opens (made with create) 20 nested directories of 250-byte names below ws; -1 when missing. */
static int
long_dirs(const char *ws, bool create)
{
	char name[251];
	int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC), next;

	memset(name, 'n', 250);
	name[250] = '\0';
	for (int i = 0; i < 20 && fd >= 0; i++) {
		if (create)
			cr_assert_eq(mkdirat(fd, name, 0755), 0, "%s", strerror(errno));
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	return fd;
}

Test(changes, a_path_longer_than_path_max_is_listed_and_reverted)
{
	char ws[WS_MAX], *project = http_project_new(&svc, "changes"), *run, *text, got[16] = "";
	struct http_resp d;
	cJSON *c;
	int dir, fd;

	/* A file 5,000 bytes below the workspace, which the run deletes. */
	workspace("ws-long", ws);
	dir = long_dirs(ws, true);
	cr_assert_geq(dir, 0);
	fd = openat(dir, "f.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	cr_assert_eq(write(fd, "deep\n", 5), 5);
	close(fd);
	close(dir);
	transcript("changes-long", "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"find . -name f.txt -delete\"}}]},{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-long");
	cJSON_Delete(run_done(run));
	c = changes_of(run, NULL);
	text = cJSON_PrintUnformatted(c);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1, "%s", text);
	cr_expect_gt(strlen(json_str_or_none(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "files"),
	    0), "path")), 5000, "%s", text);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(c, "incomplete")), "%s", text);
	free(text);
	cJSON_Delete(c);
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d.json, "reverted")), 1, "%s", d.body);
	http_resp_free(&d);
	dir = long_dirs(ws, false);
	cr_assert_geq(dir, 0);
	fd = openat(dir, "f.txt", O_RDONLY | O_CLOEXEC);
	cr_expect_geq(fd, 0, "f.txt was not put back");
	if (fd >= 0) {
		cr_expect_eq(read(fd, got, sizeof got - 1), 5);
		close(fd);
	}
	cr_expect_str_eq(got, "deep\n");
	close(dir);
	free(run);
	free(project);
}

Test(changes, a_name_with_a_newline_adds_no_line_to_the_diff_of_a_file_not_stored)
{
	char ws[WS_MAX], path[WS_MAX + 64], *project, *run;
	struct http_resp d;

	project = http_project_new(&svc, "changes");
	workspace("ws-quoted", ws);
	/* An ignored file is kept by its size and hash, as one too large. */
	snprintf(path, sizeof path, "%s/.gitignore", ws);
	write_text(path, "*.bin\n", 0644);
	transcript("changes-quoted", "[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"big\\n+++ b/forged\\\\\\\"\\u00e9.bin\",\"content\":\"x\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-quoted");
	cJSON_Delete(run_done(run));
	d = diff_of(run, NULL);
	cr_assert_eq(d.status, 200, "%s", d.body);
	/* Quoted as git quotes it: \n, \\, \" and the bytes past ASCII in octal. */
	cr_expect_not_null(strstr(d.body, "diff --git \"a/big\\n+++ b/forged\\\\\\\"\\303\\251.bin\" "
	    "\"b/big\\n+++ b/forged\\\\\\\"\\303\\251.bin\"\nFiles \"a/big"), "%s", d.body);
	cr_expect_null(strstr(d.body, "\n+++ b/forged"), "a line was injected: %s", d.body);
	http_resp_free(&d);
	free(run);
	free(project);
}

/* The uid and gid of the other local user of the tests below. */
#define OTHER_UID 4242

/* Runs the shell command line cmd as OTHER_UID (setpriv); its exit status. */
static int
as_other_user(const char *cmd)
{
	char *line = NULL;
	int rc;

	cr_assert_geq(asprintf(&line, "setpriv --reuid=%d --regid=%d --clear-groups sh -c '%s'",
	    OTHER_UID, OTHER_UID, cmd), 0);
	rc = system(line);
	free(line);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The status of doctor's check id ("" when it has none). */
static char *
doctor_check(const char *id, char **message)
{
	cJSON *d = http_get_json(&svc, "/api/v1/doctor"), *c;
	char *status = strdup("");

	*message = strdup("");
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(d, "checks"))
		if (strcmp(json_str_or_none(c, "id"), id) == 0) {
			free(status);
			free(*message);
			status = strdup(json_str_or_none(c, "status"));
			*message = strdup(json_str_or_none(c, "message"));
		}
	cJSON_Delete(d);
	return status;
}

/*
 * Another user renames the directory of a session (it is in a directory of
 * theirs) and puts a link to the user's ~/.ssh in its place after the run:
 * the revert, forced or not, refuses it and writes, deletes and reads
 * nothing there; a new run in the session is refused too; doctor warned
 * about the directory from the start.
 */
Test(changes, a_workspace_swapped_for_a_link_by_another_user_is_never_reverted_into)
{
	char home[WS_MAX], ws[WS_MAX + 8], ssh[WS_MAX], cmd[5 * WS_MAX], *project, *run, *session;
	char *status, *message, *data;
	struct http_resp d;
	cJSON *r;

	if (geteuid() != 0)
		cr_skip_test("the other user's swap needs root (setpriv to uid %d); skipped",
		    OTHER_UID);
	/* base: the other user may pass through it, as through /home. */
	cr_assert_eq(chmod(base, 0711), 0);
	workspace("other-home", home);
	cr_assert_eq(chown(home, OTHER_UID, OTHER_UID), 0);
	cr_assert_eq(chmod(home, 0755), 0);
	snprintf(ws, sizeof ws, "%s/proj", home);
	cr_assert_eq(mkdir(ws, 0755), 0);
	ws_write(ws, "authorized_keys", "the user's own key\n", 0600);
	workspace("dot-ssh", ssh);
	ws_write(ssh, "id_rsa", "the user's private key\n", 0600);

	project = http_project_new(&svc, "changes");
	transcript("changes-swapped", "["
	    "{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"rm authorized_keys && echo made by the run > id_rsa\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-swapped");
	r = run_done(run);
	session = strdup(json_str(r, "sessionId"));
	cJSON_Delete(r);
	status = doctor_check("workspaces", &message);
	cr_expect_str_eq(status, "warn", "doctor: %s", message);
	cr_expect_not_null(strstr(message, home), "doctor names no directory: %s", message);
	free(status);
	free(message);

	snprintf(cmd, sizeof cmd, "mv %s %s.old && ln -s %s %s", ws, ws, ssh, ws);
	cr_assert_eq(as_other_user(cmd), 0, "the other user could not swap %s", ws);
	for (int forced = 0; forced < 2; forced++) {
		d = revert(run, forced ? "{\"force\":true}" : NULL);
		cr_expect_eq(d.status, 409, "%s", d.body);
		cr_expect_str_eq(http_error_code(&d) ? http_error_code(&d) : "(none)",
		    "workspace_replaced", "%s", d.body);
		http_resp_free(&d);
	}
	expect_ws_file(ssh, "id_rsa", "the user's private key\n", 0600);
	expect_ws_absent(ssh, "authorized_keys");
	/* The link's target was not read into the store either. */
	cr_expect(!stores_hold("the user's private key"), "the store holds a file of the target");

	snprintf(cmd, sizeof cmd, "{\"project\":\"%s\",\"prompt\":\"again\",\"sessionId\":\"%s\"}",
	    project, session);
	d = http_api(&svc, "POST", "/api/v1/runs", cmd);
	cr_expect_eq(d.status, 409, "%s", d.body);
	cr_expect_str_eq(http_error_code(&d) ? http_error_code(&d) : "(none)",
	    "workspace_replaced", "%s", d.body);
	http_resp_free(&d);

	/* The directory back where it was: the revert goes through. */
	snprintf(cmd, sizeof cmd, "rm %s && mv %s.old %s", ws, ws, ws);
	cr_assert_eq(as_other_user(cmd), 0);
	d = revert(run, NULL);
	cr_expect_eq(d.status, 200, "%s", d.body);
	http_resp_free(&d);
	data = ws_read(ws, "authorized_keys", NULL);
	cr_expect_str_eq(data ? data : "(none)", "the user's own key\n");
	free(data);
	expect_ws_file(ssh, "id_rsa", "the user's private key\n", 0600);
	free(session);
	free(run);
	free(project);
}

/* Whether a directory above base is another user's or open to others' writes. */
static bool
base_open_to_others(void)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	snprintf(dir, sizeof dir, "%s", base);
	while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (stat(dir, &st) != 0 || (st.st_uid != geteuid() && st.st_uid != 0) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
			return true;
	}
	return false;
}

/* A directory only the user can rename gives no warning. */
Test(changes, doctor_does_not_warn_about_a_private_workspace)
{
	char ws[WS_MAX], *project, *run, *status, *message;

	if (base_open_to_others())
		cr_skip_test("the build directory %s is below one others can write: skipped", base);
	workspace("ws-private", ws);
	ws_write(ws, "a.txt", "a\n", 0644);
	project = http_project_new(&svc, "changes");
	transcript("changes-private", "[{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-private");
	cJSON_Delete(run_done(run));
	status = doctor_check("workspaces", &message);
	cr_expect_str_eq(status, "ok", "doctor: %s", message);
	free(status);
	free(message);
	free(run);
	free(project);
}

/* The largest stat cache the service's log reports after a snapshot, in bytes. */
static long long
stat_cache_bytes_logged(void)
{
	char path[PATH_MAX], *log, *p;
	long long most = -1, n;

	snprintf(path, sizeof path, "%s/taskdeckd.log", svc.home);
	log = harness_slurp(path, NULL);
	cr_assert_not_null(log);
	for (p = log; (p = strstr(p, "stat cache ")) != NULL; p++)
		if (sscanf(p, "stat cache %lld bytes", &n) == 1 && n > most)
			most = n;
	free(log);
	return most;
}

/*
 * 2,000 files under 40 nested directories of 240-byte names (paths of up to
 * 9,700 bytes), all deleted by the run: the stat cache keeps names, not
 * paths (well under 4 MiB, where whole paths took 10 MB), and the changes
 * come in pages of at most 1 MiB of paths that the client reads through.
 */
Test(changes, deep_long_names_keep_the_stat_cache_small_and_the_changes_paged, .timeout = 600)
{
	char ws[WS_MAX], name[241], *project, *run, *out = NULL, url[256], at[32], *session;
	const char *cursor;
	char *prev = strdup("");
	long seen = 0, pages = 0;
	long long cache;
	struct http_resp d;
	cJSON *c, *f, *doc;
	int fd, next;

	svc_stop(&svc);
	svc.args[0] = "--log-level";
	svc.args[1] = "debug";
	svc_restart(&svc);
	project = http_project_new(&svc, "changes");
	workspace("ws-deep", ws);
	memset(name, 'd', 240);
	name[240] = '\0';
	fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int level = 0; level < 40; level++) {
		cr_assert_eq(mkdirat(fd, name, 0755), 0, "%s", strerror(errno));
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = next;
		cr_assert_geq(fd, 0);
		for (int i = 0; i < 50; i++) {
			char file[16];
			int one;

			snprintf(file, sizeof file, "f%02d", i);
			one = openat(fd, file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			cr_assert_eq(write(one, "x\n", 2), 2);
			close(one);
		}
	}
	close(fd);
	/*
	 * A first run of the session reads the tree into its stat cache, so that
	 * the second's start is whole once listed, before its rm runs (a first
	 * start read after the rm would name what went: tests below).
	 */
	transcript("changes-deep", "[{\"text\":\"Looked.\"}]");
	run = run_in(project, ws, NULL, "changes-deep");
	c = run_done(run);
	session = strdup(json_str(c, "sessionId"));
	cJSON_Delete(c);
	free(run);
	transcript("changes-deep", "[{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":"
	    "{\"command\":\"rm -rf d*\"}}]},{\"text\":\"Done.\"}]");
	run = run_in(project, ws, session, NULL);
	free(session);
	cJSON_Delete(run_done(run));
	/* The end snapshot of so long paths may take longer than a run waits for it. */
	for (long until = mono_ms() + 120000;; usleep(500 * 1000)) {
		bool ending;

		c = changes_of(run, "?limit=1");
		ending = strstr(json_str_or_none(c, "incompleteReason"), "still being taken") != NULL;
		cJSON_Delete(c);
		if (!ending)
			break;
		cr_assert_lt(mono_ms(), until, "the end snapshot was never taken");
	}

	cache = stat_cache_bytes_logged();
	cr_expect_gt(cache, 0, "no snapshot logged its stat cache");
	cr_expect_lt(cache, 4LL << 20, "the stat cache took %lld bytes for 2,040 entries", cache);

	for (cursor = NULL;; pages++) {
		long page_bytes = 0, last = 0;

		if (cursor == NULL)
			snprintf(url, sizeof url, "/api/v1/runs/%s/changes", run);
		else
			snprintf(url, sizeof url, "/api/v1/runs/%s/changes?cursor=%s", run, cursor);
		d = http_api(&svc, "GET", url, NULL);
		cr_assert_eq(d.status, 200, "%s: %.300s", url, d.body);
		cr_expect_eq(json_num(cJSON_GetObjectItem(d.json, "totals"), "files"), 2000, "%.300s",
		    d.body);
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(d.json, "files")) {
			const char *path = json_str_or_none(f, "path");

			cr_expect_gt(strcmp(path, prev), 0, "not in path order across pages");
			free(prev);
			prev = strdup(path);
			last = (long)strlen(path);
			page_bytes += last;
			seen++;
		}
		cr_expect_leq(page_bytes - last, 1L << 20, "a page of %ld bytes of paths", page_bytes);
		cursor = json_get_string(d.json, "nextCursor");
		if (cursor == NULL) {
			cr_expect(cJSON_IsNull(cJSON_GetObjectItem(d.json, "nextCursor")), "%.300s",
			    d.body);
			http_resp_free(&d);
			break;
		}
		cursor = strcpy(at, cursor);
		http_resp_free(&d);
		cr_assert_lt(pages, 100, "the pages do not end");
	}
	cr_expect_eq(seen, 2000);
	cr_expect_geq(pages, 8, "%ld pages: not cut by bytes", pages + 1);
	free(prev);

	/* A small limit, and what is not a cursor or a limit. */
	c = changes_of(run, "?limit=7");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 7);
	cr_expect_str_eq(json_str_or_none(c, "nextCursor"), "7");
	cJSON_Delete(c);
	for (int i = 0; i < 5; i++) {
		static const char *const bad[] = { "?limit=0", "?limit=1001", "?cursor=",
			"?cursor=abc", "?limit=" };

		snprintf(url, sizeof url, "/api/v1/runs/%s/changes%s", run, bad[i]);
		d = http_api(&svc, "GET", url, NULL);
		cr_expect_eq(d.status, 400, "%s: %s", url, d.body);
		http_resp_free(&d);
	}

	/* The client core (through the CLI) reads every page into one list. */
	cr_expect_eq(run_capture(&svc, &out, "%s --json runs changes %s", harness_bin("taskdeck"),
	    run), 0);
	doc = cJSON_Parse(out);
	cr_assert_not_null(doc, "the CLI printed no JSON");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "files")), 2000);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(doc, "nextCursor")));
	cJSON_Delete(doc);
	free(out);
	free(run);
	free(project);
}

/* The bytes of the objects of every store (what du --apparent-size counts of them). */
static long long
stores_bytes(void)
{
	char cmd[2 * PATH_MAX], *out = NULL;
	long long n;

	snprintf(cmd, sizeof cmd, "find '%s'/changes -path '*.git/objects/*' -type f "
	    "-printf '%%s\\n' | awk '{ n += $1 } END { print n + 0 }'", svc.home);
	cr_assert_eq(run_capture(NULL, &out, "%s", cmd), 0);
	n = atoll(out);
	free(out);
	return n;
}

/*
 * changes.quotaBytes holds a store, whatever the workspace holds: 1,600
 * links whose targets (1,200 random characters each) no quota can turn into
 * a pointer, in 4 steps, and 160 files of 4 KB that do not compress.  The store
 * stays within its 1 MiB (and some room for what a loose object adds); the
 * changes say what was left out.
 */
Test(changes, quota_bytes_holds_a_store, .timeout = 300)
{
	char path[PATH_MAX], ws[WS_MAX], *text, *project, *run, turns[4096];
	cJSON *settings, *c;
	long long bytes;
	size_t n = 0;

	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	text = harness_slurp(path, NULL);
	settings = text ? cJSON_Parse(text) : cJSON_CreateObject();
	free(text);
	cJSON_DeleteItemFromObject(settings, "changes");
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(settings, "changes"), "quotaBytes",
	    1048576);
	text = cJSON_Print(settings);
	svc_stop(&svc);
	write_text(path, text, 0600);
	free(text);
	cJSON_Delete(settings);
	svc_restart(&svc);
	project = http_project_new(&svc, "changes");
	workspace("ws-quota", ws);
	n += (size_t)snprintf(turns + n, sizeof turns - n, "[");
	for (int step = 0; step < 4; step++)
		n += (size_t)snprintf(turns + n, sizeof turns - n, "{\"toolCalls\":[{\"name\":"
		    "\"run_command\",\"arguments\":{\"command\":\"mkdir -p d%d && for i in $(seq 400);"
		    " do ln -s $(head -c 900 /dev/urandom | base64 -w0) d%d/l$i; done; "
		    "for i in $(seq 40); do head -c 4000 /dev/urandom > d%d/f$i; done\"}}]},",
		    step, step, step);
	snprintf(turns + n, sizeof turns - n, "{\"text\":\"Done.\"}]");
	transcript("changes-quota", turns);
	run = run_in(project, ws, NULL, "changes-quota");
	cJSON_Delete(run_done(run));
	bytes = stores_bytes();
	c = changes_of(run, NULL);
	cr_expect_gt(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 100);
	cr_expect_leq(bytes, 1048576 + 64 * 1024, "the store holds %lld bytes for a quota of "
	    "1 MiB", bytes);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c, "incomplete")), "nothing was left out");
	cr_expect_not_null(strstr(json_str_or_none(c, "incompleteReason"), "quotaBytes"), "%s",
	    json_str_or_none(c, "incompleteReason"));
	cJSON_Delete(c);
	free(run);
	free(project);
}

/* The most bytes the service's log says one snapshot read to hash its big files. */
static long long
pointer_bytes_logged(void)
{
	char path[PATH_MAX], *log, *p;
	long long most = -1, n;

	snprintf(path, sizeof path, "%s/taskdeckd.log", svc.home);
	log = harness_slurp(path, NULL);
	cr_assert_not_null(log);
	for (p = log; (p = strstr(p, "by size and hash (")) != NULL; p++)
		if (sscanf(p, "by size and hash (%lld bytes hashed", &n) == 1 && n > most)
			most = n;
	free(log);
	return most;
}

/*
 * Three sparse files of 20 GiB with a few bytes of data each: a snapshot
 * reads their data only, not 256 MiB of holes each (which held the one
 * snapshot thread for half a minute while other sessions' runs waited); a
 * change of their data is still seen.
 */
Test(changes, sparse_files_are_hashed_by_their_data_only, .timeout = 300)
{
	char ws[WS_MAX], path[WS_MAX + 16], *project, *run, *text;
	struct stat st;
	cJSON *c;
	long long read_bytes;

	svc_stop(&svc);
	svc.args[0] = "--log-level";
	svc.args[1] = "debug";
	svc_restart(&svc);
	project = http_project_new(&svc, "changes");
	workspace("ws-sparse", ws);
	ws_write(ws, "small.txt", "small\n", 0644);
	transcript("changes-sparse", "["
	    "{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":{\"command\":\"for i in 1 2 3;"
	    " do truncate -s 20G big$i && printf data$i | dd of=big$i bs=1 seek=1000000"
	    " conv=notrunc 2>/dev/null; done\"}}]},"
	    "{\"toolCalls\":[{\"name\":\"run_command\",\"arguments\":{\"command\":"
	    "\"printf more | dd of=big2 bs=1 seek=5000000000 conv=notrunc 2>/dev/null\"}}]},"
	    "{\"text\":\"Done.\"}]");
	run = run_in(project, ws, NULL, "changes-sparse");
	cJSON_Delete(run_done(run));
	snprintf(path, sizeof path, "%s/big1", ws);
	cr_assert_eq(stat(path, &st), 0);
	if ((long long)st.st_blocks * 512 > (1LL << 20))
		cr_skip_test("the file system here keeps no sparse files (%lld bytes on disk)",
		    (long long)st.st_blocks * 512);
	read_bytes = pointer_bytes_logged();
	cr_expect_geq(read_bytes, 0, "no snapshot logged what it hashed");
	cr_expect_lt(read_bytes, 1LL << 20, "a snapshot read %lld bytes of three sparse files",
	    read_bytes);
	c = changes_of(run, NULL);
	text = cJSON_PrintUnformatted(c);
	for (int i = 1; i <= 3; i++) {
		char name[8];

		snprintf(name, sizeof name, "big%d", i);
		cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(file_of(c, name), "tooLarge")), "%s: %s",
		    name, text);
	}
	free(text);
	cJSON_Delete(c);
	/* The second step changed big2's data: a run.changes event named it. */
	{
		cJSON *last = NULL;

		cr_expect_geq(changes_events(run, &last), 2, "the data written later was not seen");
		cJSON_Delete(last);
	}
	free(run);
	free(project);
}
