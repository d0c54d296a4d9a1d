/* taskdeckd as a process: its files, restarts, crashes and refusals. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

TestSuite(lifecycle, .timeout = 60);

static char *
file_text(const char *dir, const char *name)
{
	char path[512];
	FILE *f;
	char *data = NULL;
	size_t cap = 0;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	if (getdelim(&data, &cap, '\0', f) < 0) {
		free(data);
		data = strdup("");
	}
	fclose(f);
	return data;
}

static mode_t
file_mode(const char *dir, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	cr_assert_eq(stat(path, &st), 0, "%s missing", path);
	return st.st_mode & 0777;
}

/* Runs taskdeckd in home in the foreground; returns its exit status and stderr. */
static int
run_daemon(const char *home, char **err, const char *extra)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "TASKDECK_HOME='%s' timeout 10 %s --foreground %s 2>&1 >/dev/null",
	    home, harness_bin("taskdeckd"), extra ? extra : "");
	return run_capture(NULL, err, "%s", cmd);
}

Test(lifecycle, files_are_private_and_discovery_is_complete)
{
	struct svc s;
	char *token, *disc;
	cJSON *d;

	svc_start(&s);
	token = file_text(s.home, "token");
	cr_assert_not_null(token);
	cr_expect_eq(strlen(token), 65, "64 hex digits and a newline");
	cr_expect_eq(strspn(token, "0123456789abcdef"), 64);
	cr_expect_eq(file_mode(s.home, "token"), 0600);
	cr_expect_eq(file_mode(s.home, "taskdeck.db"), 0600);
	cr_expect_eq(file_mode(s.home, "service.json"), 0600);

	disc = file_text(s.home, "service.json");
	d = cJSON_Parse(disc);
	cr_assert_not_null(d);
	for (const char *const *k = (const char *const[]){ "baseUrl", "pid", "version",
	    "startedAt", "streamId", "tokenFile", NULL }; *k; k++)
		cr_expect_not_null(cJSON_GetObjectItem(d, *k), "discovery lacks %s", *k);
	cr_expect_null(strstr(disc, s.token), "the discovery file holds the token");
	cJSON_Delete(d);
	free(disc);
	free(token);
	svc_destroy(&s);
}

Test(lifecycle, data_and_token_survive_a_restart)
{
	struct svc s;
	char *id, path[128], token[80];
	struct http_resp r;

	svc_start(&s);
	id = http_project_new(&s, "durable");
	snprintf(token, sizeof token, "%s", s.token);
	svc_stop(&s);
	svc_restart(&s);
	cr_expect_str_eq(s.token, token, "the token changed across a restart");
	snprintf(path, sizeof path, "/api/v1/projects/%s", id);
	r = http_req(&s, "GET", path, NULL, NULL, true);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(cJSON_GetObjectItem(r.json, "name")->valuestring, "durable");
	http_resp_free(&r);
	free(id);
	svc_destroy(&s);
}

Test(lifecycle, kill_9_loses_no_acknowledged_write)
{
	struct svc s;
	char *ids[20], path[128];
	struct http_resp r;

	svc_start(&s);
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof name, "n%d", i);
		ids[i] = http_project_new(&s, name);
	}
	svc_kill(&s);
	svc_restart(&s);	/* a stale discovery file and lock must not stop it */
	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof path, "/api/v1/projects/%s", ids[i]);
		r = http_req(&s, "GET", path, NULL, NULL, true);
		cr_expect_eq(r.status, 200, "project %d lost", i);
		http_resp_free(&r);
		free(ids[i]);
	}
	r = http_req(&s, "GET", "/api/v1/doctor", NULL, NULL, true);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "ready")), "%s", r.body);
	http_resp_free(&r);
	svc_destroy(&s);
}

Test(lifecycle, loose_token_permissions_are_refused)
{
	struct svc s;
	char path[512], *err;
	struct http_resp r;

	svc_start(&s);
	snprintf(path, sizeof path, "%s/token", s.home);
	chmod(path, 0644);
	/* While running, doctor reports it. */
	r = http_req(&s, "GET", "/api/v1/doctor", NULL, NULL, true);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "ready")));
	cr_expect_gt(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "nextActions")), 0);
	cr_expect_not_null(strstr(r.body, "chmod"), "%s", r.body);
	cr_expect_null(strstr(r.body, s.token));
	http_resp_free(&r);
	svc_stop(&s);

	/* At start, it refuses. */
	cr_expect_eq(run_daemon(s.home, &err, NULL), 1);
	cr_expect_not_null(strstr(err, "chmod 600"), "message: %s", err);
	free(err);
	chmod(path, 0600);
	chmod(s.home, 0755);
	cr_expect_eq(run_daemon(s.home, &err, NULL), 1);
	cr_expect_not_null(strstr(err, "chmod 700"), "message: %s", err);
	free(err);
	chmod(s.home, 0700);
	svc_destroy(&s);
}

Test(lifecycle, a_damaged_token_file_is_refused)
{
	struct svc s;
	char path[512], *err;
	FILE *f;

	svc_start(&s);
	svc_stop(&s);
	snprintf(path, sizeof path, "%s/token", s.home);
	f = fopen(path, "w");
	fputs("not-a-token\n", f);
	fclose(f);
	cr_expect_eq(run_daemon(s.home, &err, NULL), 1);
	cr_expect_not_null(strstr(err, "does not hold a token"), "message: %s", err);
	free(err);
	svc_destroy(&s);
}

Test(lifecycle, one_service_per_home)
{
	struct svc s;
	char *err;

	svc_start(&s);
	cr_expect_eq(run_daemon(s.home, &err, NULL), 1);
	cr_expect_not_null(strstr(err, "already running"), "message: %s", err);
	cr_expect_not_null(strstr(err, s.url), "the message names the running service: %s", err);
	free(err);
	svc_destroy(&s);
}

Test(lifecycle, bad_options_and_non_loopback_addresses)
{
	char home[] = "/tmp/tdtest-XXXXXX", *err;

	cr_assert_not_null(mkdtemp(home));
	cr_expect_eq(run_daemon(home, &err, "--listen 0.0.0.0:0"), 1);
	cr_expect_not_null(strstr(err, "loopback"), "message: %s", err);
	free(err);
	cr_expect_eq(run_daemon(home, &err, "--listen banana"), 2);
	free(err);
	cr_expect_eq(run_daemon(home, &err, "--no-such-option"), 2);
	free(err);
	run_capture(NULL, &err, "rm -rf '%s'", home);
	free(err);
}

Test(lifecycle, detach_reports_readiness_and_sigterm_cleans_up)
{
	char home[] = "/tmp/tdtest-XXXXXX", *out, *disc;
	cJSON *d;
	pid_t pid;

	cr_assert_not_null(mkdtemp(home));
	cr_assert_eq(run_capture(NULL, &out, "TASKDECK_HOME='%s' %s --detach", home,
	    harness_bin("taskdeckd")), 0);
	cr_expect_not_null(strstr(out, "taskdeckd ready at http://127.0.0.1:"), "%s", out);
	free(out);
	disc = file_text(home, "service.json");
	cr_assert_not_null(disc, "no discovery file after --detach returned");
	d = cJSON_Parse(disc);
	pid = (pid_t)cJSON_GetObjectItem(d, "pid")->valuedouble;
	cJSON_Delete(d);
	free(disc);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
		usleep(10000);
	cr_expect_neq(kill(pid, 0), 0, "the detached service did not stop");
	disc = file_text(home, "service.json");
	cr_expect_null(disc, "discovery file left behind");
	free(disc);
	run_capture(NULL, &out, "rm -rf '%s'", home);
	free(out);
}

Test(lifecycle, the_token_never_reaches_the_log)
{
	struct svc s;
	const char *args[] = { "--log-level", "debug", NULL };
	struct http_resp r;
	char *log;

	svc_start_with(&s, args);
	r = http_req(&s, "GET", "/api/v1/doctor", NULL, NULL, true);
	http_resp_free(&r);
	r = http_req(&s, "POST", "/api/v1/projects", "{\"name\":5}", NULL, true);
	http_resp_free(&r);
	r = http_req(&s, "GET", "/api/v1/projects", NULL, NULL, false);
	http_resp_free(&r);
	svc_stop(&s);
	log = file_text(s.home, "taskdeckd.log");
	cr_assert_not_null(log);
	cr_expect_not_null(strstr(log, "GET /api/v1/doctor 200"), "debug log lacks requests");
	cr_expect_null(strstr(log, s.token), "the token is in the log");
	free(log);
	svc_destroy(&s);
}
