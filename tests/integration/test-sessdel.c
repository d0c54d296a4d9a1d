/*
 * Deleting a session (docs/http-api.md, "Deleting a session") against a real
 * taskdeckd: its rows and files go, other sessions and an external workspace
 * stay; a busy session is refused unless forced; the session's event stream
 * ends with session.deleted; a kill -9 between the commit and the removal of
 * the files leaves files that the next start sweeps.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness.h"

#define FINAL_WAIT_MS 60000

TestSuite(sessdel, .init = svc_setup, .fini = svc_teardown, .timeout = 180);

struct session_run {
	char run[64];
	char session[64];
};

/* A completed run of model (cwd: an external workspace, or NULL for a managed one). */
static struct session_run
run_done(const char *project, const char *model, const char *cwd)
{
	char extra[PATH_MAX + 16] = "";
	struct session_run sr;
	cJSON *run;

	if (cwd != NULL)
		snprintf(extra, sizeof extra, ",\"cwd\":\"%s\"", cwd);
	run = http_replay_run(&svc, "write and save", project, model, extra);
	snprintf(sr.run, sizeof sr.run, "%s", json_str(run, "id"));
	snprintf(sr.session, sizeof sr.session, "%s", json_str(run, "sessionId"));
	cJSON_Delete(run);
	cJSON_Delete(run_final_within(&svc, sr.run, "completed", FINAL_WAIT_MS));
	return sr;
}

static bool exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether the path printed from fmt exists. */
static bool
exists(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

/*
 * The rows naming session in every table that holds a session's data (and
 * run_messages of no run); the service must be stopped (its lock is exclusive).
 */
static long
rows_of(const char *session)
{
	static const char *const queries[] = {
		"SELECT count(*) FROM sessions WHERE id = ?1",
		"SELECT count(*) FROM runs WHERE session_id = ?1",
		"SELECT count(*) FROM run_events WHERE session_id = ?1",
		"SELECT count(*) FROM artifacts WHERE session_id = ?1",
		"SELECT count(*) FROM run_changes WHERE session_id = ?1",
		"SELECT count(*) FROM plans WHERE session_id = ?1",
		"SELECT count(*) FROM permission_prompts WHERE session_id = ?1",
		"SELECT count(*) FROM run_messages WHERE run_id NOT IN (SELECT id FROM runs)",
	};
	char db_path[PATH_MAX];
	long total = 0;
	sqlite3 *db;

	snprintf(db_path, sizeof db_path, "%s/taskdeck.db", svc.home);
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
		sqlite3_stmt *s;

		cr_assert_eq(sqlite3_prepare_v2(db, queries[i], -1, &s, NULL), SQLITE_OK, "%s: %s",
		    queries[i], sqlite3_errmsg(db));
		sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		if (sqlite3_column_int64(s, 0) > 0)
			fprintf(stderr, "%s: %lld\n", queries[i], sqlite3_column_int64(s, 0));
		total += (long)sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return total;
}

/* The files of the artifact store (contents, not the tmp directory). */
static int
artifact_contents(void)
{
	char path[PATH_MAX], sub[PATH_MAX + 64];
	struct dirent *e, *f;
	int n = 0;
	DIR *d, *s;

	snprintf(path, sizeof path, "%s/artifacts", svc.home);
	d = opendir(path);
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strlen(e->d_name) != 2 || e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		s = opendir(sub);
		while (s != NULL && (f = readdir(s)) != NULL)
			n += f->d_name[0] != '.';
		if (s != NULL)
			closedir(s);
	}
	closedir(d);
	return n;
}

static struct http_resp
delete_session(const char *session, const char *query)
{
	char path[160];

	snprintf(path, sizeof path, "/api/v1/sessions/%s%s", session, query ? query : "");
	return http_api(&svc, "DELETE", path, NULL);
}

static long status_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The status of GET of the path printed from fmt. */
static long
status_of(const char *fmt, ...)
{
	char path[256];
	struct http_resp r;
	long status;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	r = http_api(&svc, "GET", path, NULL);
	status = r.status;
	http_resp_free(&r);
	return status;
}

/* Whether the JSON array member key of doc holds the string want. */
static bool
lists(const cJSON *doc, const char *key, const char *want)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc, key))
		if (cJSON_IsString(item) && strcmp(item->valuestring, want) == 0)
			return true;
	return false;
}

/*
 * Whether the session's managed workspace is gone within FINAL_WAIT_MS: a
 * delete that finishes after its runs removes its files after the rows.
 */
static bool
workspace_gone(const char *session)
{
	long deadline = mono_ms() + FINAL_WAIT_MS;

	while (mono_ms() < deadline) {
		if (!exists("%s/workspaces/%s", svc.home, session))
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* Whether GET /sessions/:id answers 404 within FINAL_WAIT_MS. */
static bool
session_gone(const char *session)
{
	long deadline = mono_ms() + FINAL_WAIT_MS;

	while (mono_ms() < deadline) {
		if (status_of("/api/v1/sessions/%s", session) == 404)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

Test(sessdel, rows_and_files_go_other_sessions_and_external_workspace_stay)
{
	char *project = http_project_new(&svc, "sessdel"), ext[PATH_MAX],
	    managed[PATH_MAX + 128], tmpl[] = "sessdel-ext-XXXXXX";
	struct session_run gone, outside, other;
	struct http_resp r;
	cJSON *doc, *list;
	int contents;

	/* Outside taskdeck's home, as a caller's own directory is. */
	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, ext));
	snprintf(managed, sizeof managed, "%s/mine.txt", ext);
	FILE *fp = fopen(managed, "w");
	cr_assert_not_null(fp);
	fputs("the caller's own file\n", fp);
	fclose(fp);

	gone = run_done(project, "multi-file", NULL);
	outside = run_done(project, "multi-file", ext);
	other = run_done(project, "multi-file", NULL);
	snprintf(managed, sizeof managed, "%s/workspaces/%s", svc.home, gone.session);
	cr_assert(exists("%s/%s", managed, "data/results.csv"), "the run wrote no file");
	cr_assert(exists("%s/changes/%s.git", svc.home, gone.session));
	contents = artifact_contents();
	cr_assert_gt(contents, 0);

	r = delete_session(gone.session, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	doc = json_doc(r.body);
	cr_expect_eq(json_num(doc, "runs"), 1);
	cr_expect(lists(doc, "removed", managed), "%s", r.body);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "kept")), 0, "%s", r.body);
	cJSON_Delete(doc);
	http_resp_free(&r);

	cr_expect_eq(status_of("/api/v1/sessions/%s", gone.session), 404);
	cr_expect_eq(status_of("/api/v1/runs/%s", gone.run), 404);
	cr_expect_eq(status_of("/api/v1/runs/%s/events", gone.run), 404);
	cr_expect_eq(status_of("/api/v1/runs/%s/changes", gone.run), 404);
	cr_expect(!exists("%s/changes/%s.git", svc.home, gone.session));
	cr_expect(!exists("%s/workspaces/%s", svc.home, gone.session));
	list = http_get_json(&svc, "/api/v1/sessions?project=%s", project);
	cr_expect_eq(cJSON_GetArraySize(list), 2);
	cJSON_Delete(list);
	r = delete_session(gone.session, NULL);
	cr_expect_eq(r.status, 404, "a second delete: %ld %s", r.status, r.body);
	http_resp_free(&r);

	/* The same contents are saved by the other sessions: they stay. */
	cr_expect_eq(artifact_contents(), contents, "%d %d", artifact_contents(), contents);
	cr_expect_eq(status_of("/api/v1/runs/%s", other.run), 200);
	cr_expect_eq(status_of("/api/v1/runs/%s/changes", other.run), 200);
	cr_expect(exists("%s/workspaces/%s/data/results.csv", svc.home, other.session));
	cr_expect(exists("%s/changes/%s.git", svc.home, other.session));
	list = http_get_json(&svc, "/api/v1/sessions/%s/artifacts", other.session);
	cr_expect_eq(cJSON_GetArraySize(list), 3);
	cJSON_Delete(list);

	/* An external workspace is the caller's: kept, with every file in it. */
	r = delete_session(outside.session, "?force=false");
	cr_assert_eq(r.status, 200, "%s", r.body);
	doc = json_doc(r.body);
	cr_expect(lists(doc, "kept", ext), "%s", r.body);
	cJSON_Delete(doc);
	http_resp_free(&r);
	cr_expect(exists("%s/%s", ext, "mine.txt"));
	cr_expect(exists("%s/%s", ext, "data/results.csv"));
	cr_expect(!exists("%s/changes/%s.git", svc.home, outside.session));

	svc_stop(&svc);
	cr_expect_eq(rows_of(gone.session), 0);
	cr_expect_eq(rows_of(outside.session), 0);
	cr_expect_gt(rows_of(other.session), 0);
	svc_restart(&svc);

	/* The last session that saved them: the contents go too. */
	r = delete_session(other.session, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cr_expect_eq(artifact_contents(), 0, "%d", artifact_contents());
	snprintf(managed, sizeof managed, "rm -rf '%s'", ext);
	cr_expect_eq(system(managed), 0);
	free(project);
}

struct stream {
	char session[64];
	struct http_resp r;
};

static void *
read_stream(void *arg)
{
	struct stream *s = arg;
	char path[160];

	snprintf(path, sizeof path, "/api/v1/events?session=%s", s->session);
	s->r = http_api(&svc, "GET", path, NULL);
	return NULL;
}

Test(sessdel, busy_session_refused_then_forced_and_its_stream_ends)
{
	char *project = http_project_new(&svc, "busy");
	cJSON *run = http_replay_run(&svc, "write the report", project, "plan",
	    ",\"turnIntent\":\"plan-first\"");
	char run_id[64], session[64];
	struct stream st = { 0 };
	struct http_resp r;
	pthread_t t;
	cJSON *doc;

	snprintf(run_id, sizeof run_id, "%s", json_str(run, "id"));
	snprintf(session, sizeof session, "%s", json_str(run, "sessionId"));
	cJSON_Delete(run);
	cJSON_Delete(plan_wait_pending(&svc, session, 1, 30000));

	r = delete_session(session, NULL);
	cr_assert_eq(r.status, 409, "%ld %s", r.status, r.body);
	cr_expect_str_eq(http_error_code(&r), "session_busy");
	http_resp_free(&r);
	doc = http_get_json(&svc, "/api/v1/runs/%s", run_id);
	cr_expect_str_eq(json_str(doc, "status"), "running");
	cJSON_Delete(doc);
	r = delete_session(session, "?force=yes");
	cr_expect_eq(r.status, 400, "%ld %s", r.status, r.body);
	http_resp_free(&r);

	snprintf(st.session, sizeof st.session, "%s", session);
	cr_assert_eq(pthread_create(&t, NULL, read_stream, &st), 0);
	usleep(500 * 1000);
	/* 202 while the cancelled run ends (200 had it ended already). */
	r = delete_session(session, "?force=true");
	cr_assert(r.status == 202 || r.status == 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	pthread_join(t, NULL);
	cr_assert(session_gone(session));

	/* The stream ended by itself (not at curl's timeout) with session.deleted. */
	cr_expect_eq(st.r.status, 200, "the session's stream: %ld", st.r.status);
	cr_expect_not_null(st.r.body);
	cr_expect_not_null(strstr(st.r.body ? st.r.body : "", "event: session.deleted"),
	    "%s", st.r.body ? st.r.body : "");
	http_resp_free(&st.r);
	cr_expect_eq(status_of("/api/v1/runs/%s", run_id), 404);
	cr_expect_eq(status_of("/api/v1/sessions/%s/plan", session), 404);
	cr_expect(workspace_gone(session));
	r = delete_session("ses_00000000000000000000000000", NULL);
	cr_expect_eq(r.status, 404, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	svc_stop(&svc);
	cr_expect_eq(rows_of(session), 0);
	free(project);
}

Test(sessdel, kill9_after_the_commit_next_start_sweeps_the_files)
{
	char *project = http_project_new(&svc, "crash");
	struct session_run gone = run_done(project, "multi-file", NULL);
	struct session_run kept = run_done(project, "multi-file", NULL);
	char cmd[512];

	svc_stop(&svc);
	setenv("TASKDECK_TEST_DIE_AFTER_DELETE_COMMIT", "1", 1);
	svc_restart(&svc);
	unsetenv("TASKDECK_TEST_DIE_AFTER_DELETE_COMMIT");
	/* curl, not http_api: the service dies under the request. */
	snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -X DELETE -H 'Authorization: Bearer %s'"
	    " '%s/api/v1/sessions/%s'", svc.token, svc.url, gone.session);
	cr_expect_neq(system(cmd), 0, "the service answered the delete");
	svc_kill(&svc);

	/* The rows are gone, the files not yet. */
	cr_assert_eq(rows_of(gone.session), 0);
	cr_assert(exists("%s/changes/%s.git", svc.home, gone.session));
	cr_assert(exists("%s/workspaces/%s", svc.home, gone.session));

	svc_restart(&svc);
	cr_expect(!exists("%s/changes/%s.git", svc.home, gone.session));
	cr_expect(!exists("%s/workspaces/%s", svc.home, gone.session));
	cr_expect(exists("%s/changes/%s.git", svc.home, kept.session));
	cr_expect(exists("%s/workspaces/%s/data/results.csv", svc.home, kept.session));
	cr_expect_eq(status_of("/api/v1/runs/%s", kept.run), 200);
	cr_expect_eq(artifact_contents(), 3, "%d", artifact_contents());
	free(project);
}

Test(sessdel, cli_delete_exit_codes)
{
	char *project = http_project_new(&svc, "cli");
	struct session_run done = run_done(project, "multi-file", NULL);
	cJSON *run = http_replay_run(&svc, "write the report", project, "plan",
	    ",\"turnIntent\":\"plan-first\"");
	const char *td = harness_bin("taskdeck");
	char busy[64], busy_run[64];
	char *out;
	int status;

	snprintf(busy, sizeof busy, "%s", json_str(run, "sessionId"));
	snprintf(busy_run, sizeof busy_run, "%s", json_str(run, "id"));
	cJSON_Delete(run);
	cJSON_Delete(plan_wait_pending(&svc, busy, 1, 30000));

	/* Off a terminal, --yes is required: nothing is deleted without it. */
	status = run_capture(&svc, &out, "%s sessions delete %s 2>&1 </dev/null", td, done.session);
	cr_expect_eq(status, 2, "%s", out);
	cr_expect_not_null(strstr(out, "--yes"), "%s", out);
	free(out);
	cr_expect_eq(status_of("/api/v1/sessions/%s", done.session), 200);

	status = run_capture(&svc, &out, "%s sessions delete %s --yes 2>&1", td, busy);
	cr_expect_eq(status, 5, "%s", out);
	cr_expect_not_null(strstr(out, "--force"), "%s", out);
	free(out);
	cr_expect_eq(status_of("/api/v1/runs/%s", busy_run), 200);

	status = run_capture(&svc, &out, "%s sessions delete %s --yes 2>&1", td, done.session);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect_not_null(strstr(out, done.session), "%s", out);
	free(out);
	cr_expect_eq(status_of("/api/v1/sessions/%s", done.session), 404);

	status = run_capture(&svc, &out, "%s --json sessions delete %s --force --yes 2>&1", td,
	    busy);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect(strstr(out, "\"deleting\":true") != NULL || strstr(out, "\"runs\":1") != NULL,
	    "%s", out);
	free(out);
	cr_assert(session_gone(busy));
	cr_expect_eq(status_of("/api/v1/runs/%s", busy_run), 404);

	status = run_capture(&svc, &out, "%s sessions delete %s --yes 2>&1", td, busy);
	cr_expect_eq(status, 4, "%s", out);
	free(out);
	free(project);
}

/* POST /runs with an Idempotency-Key; the answer (free it). */
static struct http_resp
start_keyed(const char *project, const char *key)
{
	char body[256], header[128];
	const char *extra[] = { header, NULL };

	snprintf(header, sizeof header, "Idempotency-Key: %s", key);
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"keyed\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", project);
	return http_req(&svc, "POST", "/api/v1/runs", body, extra, true);
}

Test(sessdel, a_retry_after_the_delete_makes_a_new_run_not_a_dead_one)
{
	char *project = http_project_new(&svc, "idem");
	struct http_resp r = start_keyed(project, "sessdel-retry-1");
	char run[64], session[64];

	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	snprintf(run, sizeof run, "%s", json_str(r.json, "id"));
	snprintf(session, sizeof session, "%s", json_str(r.json, "sessionId"));
	http_resp_free(&r);
	cJSON_Delete(run_final_within(&svc, run, "completed", FINAL_WAIT_MS));
	r = start_keyed(project, "sessdel-retry-1");
	cr_assert_str_eq(json_str(r.json, "id"), run, "the key replays while the run exists");
	http_resp_free(&r);

	r = delete_session(session, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	r = start_keyed(project, "sessdel-retry-1");
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	cr_expect_str_neq(json_str(r.json, "id"), run, "the retry replayed a deleted run");
	cr_expect_eq(status_of("/api/v1/runs/%s", json_str(r.json, "id")), 200);
	http_resp_free(&r);
	free(project);
}

/*
 * Restarts the service with an agent that never answers and ignores the
 * cancel: its runs stay running until the supervisor kills them, 5 s after
 * a cancel (CANCEL_GRACE_MS).
 */
static void
restart_with_a_deaf_agent(void)
{
	char agent[PATH_MAX];
	FILE *f;

	snprintf(agent, sizeof agent, "%s/deaf-agent", svc.home);
	f = fopen(agent, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\nexec sleep 60\n", f);
	fclose(f);
	cr_assert_eq(chmod(agent, 0755), 0);
	svc_stop(&svc);
	setenv("TASKDECK_AGENT", agent, 1);
	svc_restart(&svc);
	unsetenv("TASKDECK_AGENT");
}

/* Starts a run of the deaf agent and waits until it is running; its ids. */
static struct session_run
run_running(const char *project)
{
	cJSON *run = http_replay_run(&svc, "never ends", project, "quick", "");
	struct session_run sr;
	long deadline = mono_ms() + FINAL_WAIT_MS;
	bool running = false;

	snprintf(sr.run, sizeof sr.run, "%s", json_str(run, "id"));
	snprintf(sr.session, sizeof sr.session, "%s", json_str(run, "sessionId"));
	cJSON_Delete(run);
	while (!running && mono_ms() < deadline) {
		cJSON *doc = http_get_json(&svc, "/api/v1/runs/%s", sr.run);

		running = strcmp(json_str(doc, "status"), "running") == 0;
		cJSON_Delete(doc);
		if (!running)
			usleep(50 * 1000);
	}
	cr_assert(running, "the run %s never ran", sr.run);
	return sr;
}

Test(sessdel, a_forced_delete_answers_at_once_and_ends_when_the_runs_end)
{
	char *project, body[256];
	struct session_run sr;
	struct http_resp r;
	cJSON *doc;

	restart_with_a_deaf_agent();
	project = http_project_new(&svc, "deaf");
	sr = run_running(project);

	r = delete_session(sr.session, "?force=true");
	cr_assert_eq(r.status, 202, "%ld %s", r.status, r.body);
	doc = json_doc(r.body);
	cr_expect_str_eq(json_str(doc, "id"), sr.session);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "deleting")), "%s", r.body);
	cr_expect(lists(doc, "cancelled", sr.run), "%s", r.body);
	cJSON_Delete(doc);
	http_resp_free(&r);

	/* Meanwhile: the session says so, takes no new run, and the service answers. */
	doc = http_get_json(&svc, "/api/v1/sessions/%s", sr.session);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "deleting")));
	cJSON_Delete(doc);
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"sessionId\":\"%s\",\"prompt\":\"more\"}",
	    project, sr.session);
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_expect_eq(r.status, 409, "%ld %s", r.status, r.body);
	cr_expect_str_eq(http_error_code(&r), "session_busy");
	cr_expect_not_null(strstr(r.body ? r.body : "", "\"deleting\":true"), "%s", r.body);
	http_resp_free(&r);
	cr_expect_eq(status_of("/api/v1/projects/%s", project), 200);
	r = delete_session(sr.session, "?force=true");
	cr_expect_eq(r.status, 202, "a second forced delete: %ld %s", r.status, r.body);
	http_resp_free(&r);

	cr_assert(session_gone(sr.session), "the session outlived its cancelled run");
	cr_expect_eq(status_of("/api/v1/runs/%s", sr.run), 404);
	cr_expect(workspace_gone(sr.session));
	svc_stop(&svc);
	cr_expect_eq(rows_of(sr.session), 0);
	free(project);
}

Test(sessdel, a_forced_delete_pending_at_a_kill9_is_finished_by_the_next_start)
{
	char *project;
	struct session_run sr, other;
	struct http_resp r;

	restart_with_a_deaf_agent();
	project = http_project_new(&svc, "deaf-kill");
	other = run_running(project);
	sr = run_running(project);
	r = delete_session(sr.session, "?force=true");
	cr_assert_eq(r.status, 202, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	svc_kill(&svc);

	svc_restart(&svc);
	cr_assert(session_gone(sr.session), "the restarted service forgot the delete");
	cr_expect_eq(status_of("/api/v1/runs/%s", sr.run), 404);
	cr_expect_eq(status_of("/api/v1/sessions/%s", other.session), 200,
	    "a session nobody deleted is kept");
	free(project);
}
