/*
 * Attempts through a real taskdeckd: three replayed attempts of one prompt in
 * a git repository with uncommitted and untracked work, each in its own
 * worktree; the repository untouched until apply, apply bringing exactly one
 * attempt's changes, a conflict refused with nothing changed, and no
 * worktree or branch left after apply, discard, a deleted session or a
 * kill -9 and a restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define FINAL_WAIT_MS 60000

static char base[PATH_MAX];	/* the test's directory */

static void
write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* dir/name's bytes, or NULL when it does not exist (free it). */
static char *
read_in(const char *dir, const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return harness_slurp(path, NULL);
}

static void
write_in(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	write_text(path, text);
}

/* What a shell command prints (asserts exit 0); free it. */
static char *
sh(const char *fmt, ...)
{
	char cmd[PATH_MAX * 3], *out = NULL;
	size_t len = 0, cap = 0;
	char buf[4096];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	cr_assert_not_null(f, "%s", cmd);
	while (fgets(buf, sizeof buf, f) != NULL) {
		size_t n = strlen(buf);
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			out = realloc(out, cap);
		}
		memcpy(out + len, buf, n + 1);
		len += n;
	}
	cr_assert_eq(pclose(f), 0, "%s failed: %s", cmd, out ? out : "");
	return out != NULL ? out : strdup("");
}

/* The transcript model: writes path with text, then says done. */
static void
transcript(const char *model, const char *tool_calls)
{
	char path[PATH_MAX + 64], *text = NULL;
	cJSON *doc;

	cr_assert_geq(asprintf(&text, "{\"turns\":[{\"text\":\"Working.\\n\",\"toolCalls\":[%s],"
	    "\"usage\":{\"inputTokens\":100,\"outputTokens\":10}},{\"text\":\"Done.\","
	    "\"usage\":{\"inputTokens\":120,\"outputTokens\":5}}]}", tool_calls), 0);
	doc = cJSON_Parse(text);
	cr_assert_not_null(doc, "a malformed transcript: %s", text);
	cJSON_Delete(doc);
	snprintf(path, sizeof path, "%s/replay/%s.json", base, model);
	write_text(path, text);
	free(text);
}

static void
setup(void)
{
	char tmpl[] = "attempts-it-XXXXXX", dir[PATH_MAX + 16];

	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, base));
	snprintf(dir, sizeof dir, "%s/replay", base);
	cr_assert_eq(mkdir(dir, 0700), 0);
	setenv("TD_TEST_NO_REPLAY_DIR", "1", 1);
	setenv("TASKDECK_REPLAY_DIR", dir, 1);
	transcript("att-one", "{\"name\":\"write_file\",\"arguments\":{\"path\":\"one.txt\","
	    "\"content\":\"the first attempt\\n\"}}");
	transcript("att-two", "{\"name\":\"write_file\",\"arguments\":{\"path\":\"two.txt\","
	    "\"content\":\"the second attempt\\n\"}},{\"name\":\"edit_file\",\"arguments\":"
	    "{\"path\":\"shared.txt\",\"old_string\":\"line 2\",\"new_string\":\"LINE TWO\"}}");
	transcript("att-three", "{\"name\":\"edit_file\",\"arguments\":{\"path\":\"shared.txt\","
	    "\"old_string\":\"line 1\",\"new_string\":\"line one by the third attempt\"}}");
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

TestSuite(attempts, .init = setup, .fini = teardown, .timeout = 240);

/* A repository base/name: shared.txt and README committed, README changed, notes untracked. */
static void
repository(const char *name, char repo[PATH_MAX])
{
	char *out;

	cr_assert_lt(snprintf(repo, PATH_MAX, "%.*s/%s", PATH_MAX - 64, base, name), PATH_MAX);
	cr_assert_eq(mkdir(repo, 0700), 0);
	write_in(repo, "shared.txt", "line 1\nline 2\nline 3\n");
	write_in(repo, "README", "the project\n");
	out = sh("cd '%s' && git init -q && git add -A && git -c user.name=t -c "
	    "user.email=t@t commit -qm first && echo ok", repo);
	free(out);
	write_in(repo, "README", "the project\nthe user's unsaved work\n");
	write_in(repo, "notes.txt", "untracked notes\n");
}

/* The repository's state: status, and the contents that matter. */
static char *
repo_state(const char *repo)
{
	return sh("cd '%s' && git status --porcelain --untracked-files=all && cat shared.txt "
	    "README notes.txt && git stash list && git rev-parse HEAD", repo);
}

/* The number of worktrees and of taskdeck branches of the repository. */
static void
expect_clean(const char *repo, const char *when)
{
	char *wt = sh("cd '%s' && git worktree list --porcelain | grep -c '^worktree ' || true",
	    repo);
	char *br = sh("cd '%s' && git branch --list 'taskdeck/*'", repo);

	cr_expect_eq(atoi(wt), 1, "%s: worktrees left: %s", when, wt);
	cr_expect_str_eq(br, "", "%s: branches left: %s", when, br);
	free(wt);
	free(br);
}

/* POST /attempts: the group (asserts 201). */
static cJSON *
attempts_new(const char *project, const char *cwd, int n, const char *models,
    const char *check)
{
	char body[PATH_MAX * 2];
	struct http_resp r;
	cJSON *g;

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"make it better\","
	    "\"attempts\":%d,\"models\":%s,\"cwd\":\"%s\",\"config\":{\"provider\":\"replay\"}"
	    "%s%s%s}", project, n, models, cwd, check ? ",\"check\":\"" : "", check ? check : "",
	    check ? "\"" : "");
	r = http_api(&svc, "POST", "/api/v1/attempts", body);
	cr_assert_eq(r.status, 201, "%s: %ld %s", body, r.status, r.body);
	g = cJSON_Duplicate(r.json, true);
	http_resp_free(&r);
	return g;
}

static const cJSON *
attempt_at(const cJSON *g, int i)
{
	const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "attempts"), i);

	cr_assert_not_null(a);
	return a;
}

/* Waits for every run of the group to end and every check to be done; the group. */
static cJSON *
group_settled(const char *id)
{
	for (int tries = 0; tries < 600; tries++) {
		cJSON *g = http_get_json(&svc, "/api/v1/attempts/%s", id);
		const cJSON *a;
		bool done = true;

		cJSON_ArrayForEach(a, cJSON_GetObjectItem(g, "attempts")) {
			const char *st = json_str_or_none(cJSON_GetObjectItem(a, "check"), "status");

			done = done && (strcmp(st, "passed") == 0 || strcmp(st, "failed") == 0 ||
			    strcmp(st, "none") == 0 || strcmp(st, "error") == 0);
		}
		if (done)
			return g;
		cJSON_Delete(g);
		usleep(100 * 1000);
	}
	cr_assert_fail("the attempts of %s did not settle", id);
	return NULL;
}

static struct http_resp
run_post(const char *run, const char *what, const char *body)
{
	char url[256];

	snprintf(url, sizeof url, "/api/v1/runs/%s/%s", run, what);
	return http_api(&svc, "POST", url, body);
}

Test(attempts, three_attempts_one_applied)
{
	char repo[PATH_MAX], *before, *after, *s;
	char *project = http_project_new(&svc, "attempts");
	cJSON *g, *done;
	struct http_resp r;
	const char *id;

	repository("three", repo);
	before = repo_state(repo);
	g = attempts_new(project, repo, 3, "[\"att-one\",\"att-two\",\"att-three\"]",
	    "test -f one.txt");
	id = json_str(g, "id");
	cr_expect_str_eq(json_str(g, "kind"), "git");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(g, "attempts")), 3);
	for (int i = 0; i < 3; i++) {
		const cJSON *a = attempt_at(g, i);
		const char *cwd = json_str(a, "cwd");
		char want[256];

		snprintf(want, sizeof want, "taskdeck/attempt-%s-%d", id, i + 1);
		cr_expect_str_eq(json_str(a, "branch"), want);
		cr_expect(strncmp(cwd, svc.home, strlen(svc.home)) == 0,
		    "the worktree %s is not the service's", cwd);
		cr_expect(strncmp(cwd, repo, strlen(repo)) != 0, "the worktree is in the repo");
		/* each starts from the user's tree: HEAD, the change, the untracked file */
		s = read_in(cwd, "README");
		cr_expect_str_eq(s, "the project\nthe user's unsaved work\n");
		free(s);
		s = read_in(cwd, "notes.txt");
		cr_expect_str_eq(s, "untracked notes\n");
		free(s);
	}
	cr_expect_str_eq(json_str(attempt_at(g, 1), "model"), "att-two");
	for (int i = 0; i < 3; i++)
		cJSON_Delete(run_final_within(&svc, json_str(attempt_at(g, i), "runId"),
		    "completed", FINAL_WAIT_MS));
	done = group_settled(id);
	cr_expect_str_eq(json_str(cJSON_GetObjectItem(attempt_at(done, 0), "check"), "status"),
	    "passed");
	cr_expect_str_eq(json_str(cJSON_GetObjectItem(attempt_at(done, 1), "check"), "status"),
	    "failed");
	cr_expect_eq(json_num(cJSON_GetObjectItem(attempt_at(done, 1), "changes"), "files"), 2);
	cr_expect_eq(json_num(cJSON_GetObjectItem(attempt_at(done, 0), "changes"), "additions"),
	    1);
	/* the repository untouched while the attempts ran */
	after = repo_state(repo);
	cr_expect_str_eq(after, before);
	free(after);

	r = run_post(json_str(attempt_at(done, 1), "runId"), "apply", NULL);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_expect_str_eq(json_str(r.json, "status"), "applied");
	http_resp_free(&r);
	s = read_in(repo, "two.txt");
	cr_expect_str_eq(s, "the second attempt\n");
	free(s);
	s = read_in(repo, "shared.txt");
	cr_expect_str_eq(s, "line 1\nLINE TWO\nline 3\n");
	free(s);
	cr_expect_null(read_in(repo, "one.txt"), "another attempt's file came along");
	s = read_in(repo, "README");
	cr_expect_str_eq(s, "the project\nthe user's unsaved work\n");
	free(s);
	s = read_in(repo, "notes.txt");
	cr_expect_str_eq(s, "untracked notes\n");
	free(s);
	expect_clean(repo, "after apply");
	for (int i = 0; i < 3; i++) {
		struct stat sb;
		cr_expect_neq(stat(json_str(attempt_at(done, i), "cwd"), &sb), 0);
	}

	/* one apply per group */
	r = run_post(json_str(attempt_at(done, 0), "runId"), "apply", NULL);
	cr_expect_eq(r.status, 409);
	cr_expect_str_eq(http_error_code(&r), "attempt_group_closed");
	http_resp_free(&r);

	/* the apply is taken back, the user's work kept */
	{
		char url[128];
		snprintf(url, sizeof url, "/api/v1/attempts/%s/revert", id);
		r = http_api(&svc, "POST", url, NULL);
	}
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	after = repo_state(repo);
	cr_expect_str_eq(after, before);
	free(after);
	cJSON_Delete(g);
	cJSON_Delete(done);
	free(before);
	free(project);
}

Test(attempts, conflict_refused_nothing_changed)
{
	char repo[PATH_MAX], *s, *state;
	char *project = http_project_new(&svc, "conflict");
	cJSON *g, *done;
	struct http_resp r;
	char url[128];

	repository("conflict", repo);
	g = attempts_new(project, repo, 2, "[\"att-three\",\"att-one\"]", NULL);
	done = group_settled(json_str(g, "id"));
	/* no check command: none ran */
	cr_expect_str_eq(json_str(cJSON_GetObjectItem(attempt_at(done, 0), "check"), "status"),
	    "none");
	/* the user changes the line the third attempt changed */
	write_in(repo, "shared.txt", "line 1 by the user\nline 2\nline 3\n");
	state = repo_state(repo);
	r = run_post(json_str(attempt_at(done, 0), "runId"), "apply", NULL);
	cr_expect_eq(r.status, 409, "%ld %s", r.status, r.body);
	cr_expect_str_eq(http_error_code(&r), "attempt_conflict");
	http_resp_free(&r);
	s = repo_state(repo);
	cr_expect_str_eq(s, state);
	free(s);
	free(state);

	/* discard one, then the group: no worktree or branch left */
	r = run_post(json_str(attempt_at(done, 1), "runId"), "discard", NULL);
	cr_expect_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_expect_str_eq(json_str(attempt_at(r.json, 1), "state"), "removed");
	cr_expect_str_eq(json_str(attempt_at(r.json, 0), "state"), "active");
	http_resp_free(&r);
	snprintf(url, sizeof url, "/api/v1/attempts/%s/discard", json_str(g, "id"));
	r = http_api(&svc, "POST", url, NULL);
	cr_expect_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_expect_str_eq(json_str(r.json, "status"), "discarded");
	http_resp_free(&r);
	expect_clean(repo, "after discard");
	cJSON_Delete(g);
	cJSON_Delete(done);
	free(project);
}

Test(attempts, outside_git_a_copy)
{
	char dir[PATH_MAX], *s;
	char *project = http_project_new(&svc, "plain");
	cJSON *g, *done;
	struct http_resp r;

	snprintf(dir, sizeof dir, "%.*s/plain", PATH_MAX - 64, base);
	cr_assert_eq(mkdir(dir, 0700), 0);
	write_in(dir, "shared.txt", "line 1\nline 2\nline 3\n");
	g = attempts_new(project, dir, 2, "[\"att-two\",\"att-one\"]", NULL);
	cr_expect_str_eq(json_str(g, "kind"), "copy");
	done = group_settled(json_str(g, "id"));
	cr_expect_null(read_in(dir, "two.txt"));
	r = run_post(json_str(attempt_at(done, 0), "runId"), "apply", NULL);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	s = read_in(dir, "shared.txt");
	cr_expect_str_eq(s, "line 1\nLINE TWO\nline 3\n");
	free(s);
	cr_expect_null(read_in(dir, "one.txt"));
	cr_expect_null(read_in(dir, ".git"), "the directory became a repository");
	cJSON_Delete(g);
	cJSON_Delete(done);
	free(project);
}

Test(attempts, no_stray_worktree_after_kill_or_delete)
{
	char repo[PATH_MAX], url[256];
	char *project = http_project_new(&svc, "crash");
	cJSON *g, *done;
	struct http_resp r;
	int old_port = svc.port;

	repository("crash", repo);
	g = attempts_new(project, repo, 2, "[\"att-one\",\"att-two\"]", NULL);
	done = group_settled(json_str(g, "id"));

	/* a deleted session takes its attempt's worktree and branch along */
	snprintf(url, sizeof url, "/api/v1/sessions/%s",
	    json_str(attempt_at(done, 0), "sessionId"));
	r = http_api(&svc, "DELETE", url, NULL);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	for (int tries = 0; tries < 100; tries++) {
		char *br = sh("cd '%s' && git branch --list 'taskdeck/*' | wc -l", repo);
		int n = atoi(br);
		free(br);
		if (n == 1)
			break;
		usleep(100 * 1000);
	}
	{
		char *br = sh("cd '%s' && git branch --list 'taskdeck/*' | wc -l", repo);
		char *wt = sh("cd '%s' && git worktree list --porcelain | grep -c '^worktree '",
		    repo);
		cr_expect_eq(atoi(br), 1, "the deleted session's branch is left");
		cr_expect_eq(atoi(wt), 2, "the deleted session's worktree is left");
		free(br);
		free(wt);
	}

	/* kill -9, a restart on another port: the group is still listed and removable */
	svc_kill(&svc);
	svc_restart(&svc);
	cr_log_info("restarted: port %d, was %d", svc.port, old_port);
	snprintf(url, sizeof url, "/api/v1/attempts/%s/discard", json_str(g, "id"));
	r = http_api(&svc, "POST", url, NULL);
	cr_expect_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_resp_free(&r);
	expect_clean(repo, "after kill -9 and discard");
	cJSON_Delete(g);
	cJSON_Delete(done);
	free(project);
}

/*
 * Requests without end (a dashboard's refreshes, its mistakes) keep the service
 * up: each of its statements is prepared and cached once.
 */
Test(attempts, many_requests_service_stays_up)
{
	char repo[PATH_MAX], url[256];
	char *project = http_project_new(&svc, "reads");
	cJSON *g, *done, *again;

	repository("reads", repo);
	g = attempts_new(project, repo, 2, "[\"att-one\",\"att-two\"]", NULL);
	done = group_settled(json_str(g, "id"));
	for (int i = 0; i < 300; i++) {
		struct http_resp r;

		snprintf(url, sizeof url, "/api/v1/attempts/%s", json_str(g, "id"));
		r = http_api(&svc, "GET", url, NULL);
		cr_assert_eq(r.status, 200, "read %d: %ld %s", i, r.status, r.body);
		http_resp_free(&r);
		/* a run that is no attempt: looked up by its run id, refused */
		r = http_api(&svc, "POST", "/api/v1/runs/run_0000000000000000000000ff/discard",
		    NULL);
		cr_assert_eq(r.status, 404, "discard %d: %ld %s", i, r.status, r.body);
		http_resp_free(&r);
	}
	again = http_get_json(&svc, "/api/v1/attempts/%s", json_str(g, "id"));
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(again, "attempts")), 2);
	cJSON_Delete(again);
	snprintf(url, sizeof url, "/api/v1/attempts/%s/discard", json_str(g, "id"));
	{
		struct http_resp r = http_api(&svc, "POST", url, NULL);

		cr_expect_eq(r.status, 200, "%ld %s", r.status, r.body);
		http_resp_free(&r);
	}
	expect_clean(repo, "after the reads and a discard");
	cJSON_Delete(g);
	cJSON_Delete(done);
	free(project);
}

Test(attempts, bad_requests)
{
	char *project = http_project_new(&svc, "bad");
	char body[PATH_MAX + 512];
	struct http_resp r;

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"x\",\"attempts\":9,"
	    "\"cwd\":\"%s\"}", project, base);
	r = http_api(&svc, "POST", "/api/v1/attempts", body);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(http_error_code(&r), "invalid_request");
	http_resp_free(&r);
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"x\",\"attempts\":2,"
	    "\"cwd\":\"%s\"}", project, svc.home);
	r = http_api(&svc, "POST", "/api/v1/attempts", body);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(http_error_code(&r), "invalid_cwd");
	http_resp_free(&r);
	r = http_api(&svc, "POST", "/api/v1/runs/run_000000000000000000000000/apply", NULL);
	cr_expect_eq(r.status, 404);
	http_resp_free(&r);
	free(project);
}

Test(attempts, cli_run_attempts_apply)
{
	char repo[PATH_MAX], *out = NULL, *s;
	char *project = http_project_new(&svc, "cli");
	const char *td = harness_bin("taskdeck");
	const cJSON *a;
	cJSON *g;
	int rc;

	repository("cli", repo);
	rc = run_capture(&svc, &out, "'%s' run --attempts 2 --model att-two,att-one "
	    "--provider replay --project %s --cwd '%s' --check 'test -f one.txt' --wait --json "
	    "'make it better'", td, project, repo);
	cr_assert_eq(rc, 0, "%s", out);
	g = json_doc(out);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(g, "attempts")), 2, "%s", out);
	a = attempt_at(g, 1);
	cr_expect_str_eq(json_str(a, "model"), "att-one");
	cr_expect_str_eq(json_str(cJSON_GetObjectItem(a, "check"), "status"), "passed", "%s", out);
	cr_expect_str_eq(json_str(cJSON_GetObjectItem(attempt_at(g, 0), "check"), "status"),
	    "failed", "%s", out);
	cr_expect_str_eq(json_str(cJSON_GetObjectItem(a, "run"), "status"), "completed");
	free(out);
	out = NULL;
	rc = run_capture(&svc, &out, "'%s' runs apply %s </dev/null 2>&1", td,
	    json_str(a, "runId"));
	cr_expect_eq(rc, 2, "apply without --yes and no terminal: %s", out);
	cr_expect_null(read_in(repo, "one.txt"));
	free(out);
	out = NULL;
	rc = run_capture(&svc, &out, "'%s' runs apply %s --yes", td, json_str(a, "runId"));
	cr_expect_eq(rc, 0, "%s", out);
	assert_text_kv(out, "into", repo);
	s = read_in(repo, "one.txt");
	cr_expect_str_eq(s, "the first attempt\n");
	free(s);
	expect_clean(repo, "after taskdeck runs apply");
	free(out);
	cJSON_Delete(g);
	free(project);
}

Test(attempts, kill9_while_made_next_start_removes_them)
{
	char repo[PATH_MAX], cmd[PATH_MAX * 2];
	char *project = http_project_new(&svc, "half");
	char *wt, *before;
	cJSON *list;

	repository("half", repo);
	before = repo_state(repo);
	svc_stop(&svc);
	setenv("TASKDECK_TEST_DIE_AFTER_WORKTREES", "1", 1);
	svc_restart(&svc);
	unsetenv("TASKDECK_TEST_DIE_AFTER_WORKTREES");
	/* curl, not http_api: the service dies under the request. */
	snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -X POST -H 'Authorization: Bearer %s'"
	    " -H 'Content-Type: application/json' '%s/api/v1/attempts' -d '{\"project\":\"%s\","
	    "\"prompt\":\"x\",\"attempts\":3,\"cwd\":\"%s\",\"config\":{\"provider\":\"replay\","
	    "\"model\":\"att-one\"}}'", svc.token, svc.url, project, repo);
	cr_expect_neq(system(cmd), 0, "the service answered");
	svc_kill(&svc);
	/* the crash left 3 worktrees and branches */
	wt = sh("cd '%s' && git worktree list --porcelain | grep -c '^worktree '", repo);
	cr_assert_eq(atoi(wt), 4, "%s", wt);
	free(wt);

	svc_restart(&svc);
	expect_clean(repo, "after the start that followed the crash");
	list = http_get_json(&svc, "/api/v1/attempts?project=%s", project);
	cr_expect_eq(cJSON_GetArraySize(list), 0);
	cJSON_Delete(list);
	wt = repo_state(repo);
	cr_expect_str_eq(wt, before);
	free(wt);
	free(before);
	free(project);
}
