/* The taskdeck command line, run as a user would, against a real taskdeckd. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(cli, .init = svc_setup, .fini = svc_teardown, .timeout = 120);

struct run {
	int status;
	char *out;
	char *err;
};

/* The token of a home, or "" when it has none. */
static char *
home_token(const char *home)
{
	char path[512], *t;

	snprintf(path, sizeof path, "%s/token", home);
	if ((t = harness_slurp(path, NULL)) == NULL)
		return strdup("");
	t[strcspn(t, "\r\n")] = '\0';
	return t;
}

/*
 * Runs "taskdeck ARGS" with the home of s; captures stdout and stderr and
 * asserts that neither shows the token.
 */
static struct run
cli(const struct svc *s, const char *fmt, ...)
{
	char args[2048], errpath[512];
	struct run r;
	va_list ap;
	char *token;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/cli.stderr", s->home);
	r.status = run_capture(s, &r.out, "%s %s 2>%s", harness_bin("taskdeck"),
	    args, errpath);
	r.err = harness_slurp(errpath, NULL);
	cr_assert_not_null(r.err);
	token = home_token(s->home);
	if (token[0] != '\0') {
		cr_assert_null(strstr(r.out, token), "token on stdout of %s", args);
		cr_assert_null(strstr(r.err, token), "token on stderr of %s", args);
	}
	free(token);
	return r;
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Creates a project through the CLI; returns its id (free it). */
static char *
create(const char *name)
{
	struct run r = cli(&svc, "--json projects create '%s'", name);
	cJSON *doc;
	char *id;

	cr_assert_eq(r.status, 0, "create: %s", r.err);
	doc = json_doc(r.out);
	id = strdup(json_str(doc, "id"));
	cJSON_Delete(doc);
	run_free(&r);
	return id;
}

Test(cli, projects_create_show_update)
{
	struct run r;
	cJSON *doc, *meta;
	char *id;

	r = cli(&svc, "--json projects create Alpha --description 'first one' "
	    "--context 'be brief' --metadata '{\"team\":\"blue\"}'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	id = strdup(json_str(doc, "id"));
	cr_assert_eq(strncmp(id, "prj_", 4), 0);
	cr_assert_str_eq(json_str(doc, "name"), "Alpha");
	cr_assert_str_eq(json_str(doc, "description"), "first one");
	cr_assert_str_eq(json_str(cJSON_GetObjectItem(doc, "metadata"), "team"), "blue");
	cJSON_Delete(doc);
	run_free(&r);

	r = cli(&svc, "projects show %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "id", id);
	assert_text_kv(r.out, "name", "Alpha");
	assert_text_kv(r.out, "context", "be brief");
	assert_text_kv(r.out, "metadata", "{\"team\":\"blue\"}");
	run_free(&r);

	/* Global options also work after the command. */
	r = cli(&svc, "projects update %s --name Gamma --metadata '{\"team\":null,\"x\":1}' --json", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_str_eq(json_str(doc, "name"), "Gamma");
	meta = cJSON_GetObjectItem(doc, "metadata");
	cr_assert_null(cJSON_GetObjectItem(meta, "team"));
	cr_assert_eq(cJSON_GetObjectItem(meta, "x")->valueint, 1);
	cJSON_Delete(doc);
	run_free(&r);

	r = cli(&svc, "projects update %s --patch '{\"description\":\"patched\"}' --context c2", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "name", "Gamma");
	assert_text_kv(r.out, "description", "patched");
	assert_text_kv(r.out, "context", "c2");
	run_free(&r);

	r = cli(&svc, "projects update %s", id);
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "usage: taskdeck projects update"), "%s", r.err);
	run_free(&r);

	r = cli(&svc, "projects create Bad --metadata '[1]'");
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	free(id);
}

Test(cli, projects_list_table_and_json)
{
	char *a = create("Alpha project"), *b = create("Beta"), *c = create("Gamma");
	const char *header, *row_c, *row_a;
	struct run r;
	cJSON *doc;

	r = cli(&svc, "projects list");
	cr_assert_eq(r.status, 0, "%s", r.err);
	header = r.out;
	cr_assert_eq(strncmp(header, "ID", 2), 0, "%s", r.out);
	row_c = strstr(r.out, c);
	row_a = strstr(r.out, a);
	cr_assert(row_c != NULL && row_a != NULL && row_c < row_a, "newest first:\n%s", r.out);
	/* Aligned columns: every name starts under "NAME". */
	cr_assert_eq(strstr(row_a, "Alpha project") - row_a, strstr(header, "NAME") - header,
	    "misaligned:\n%s", r.out);
	cr_assert_eq(strstr(row_c, "Gamma") - row_c, strstr(header, "NAME") - header);
	run_free(&r);

	r = cli(&svc, "projects list --json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_eq(cJSON_GetArraySize(doc), 3);
	cr_assert_str_eq(json_str(cJSON_GetArrayItem(doc, 0), "id"), c);
	cr_assert_str_eq(json_str(cJSON_GetArrayItem(doc, 1), "name"), "Beta");
	cJSON_Delete(doc);
	run_free(&r);

	/* One page of two; the next page is named on stderr. */
	r = cli(&svc, "--json projects list --limit 2");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_eq(cJSON_GetArraySize(doc), 2);
	cJSON_Delete(doc);
	cr_assert_not_null(strstr(r.err, "--cursor"), "%s", r.err);
	run_free(&r);

	r = cli(&svc, "--json projects list --cursor %s", b);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_eq(cJSON_GetArraySize(doc), 1);
	cr_assert_str_eq(json_str(cJSON_GetArrayItem(doc, 0), "id"), a);
	cJSON_Delete(doc);
	run_free(&r);
	free(a);
	free(b);
	free(c);
}

Test(cli, idempotent_create)
{
	struct run r1, r2, r3;
	cJSON *d1, *d2;

	r1 = cli(&svc, "--json projects create Once --idempotency-key key-1");
	r2 = cli(&svc, "--json projects create Once --idempotency-key key-1");
	cr_assert_eq(r1.status, 0, "%s", r1.err);
	cr_assert_eq(r2.status, 0, "%s", r2.err);
	d1 = json_doc(r1.out);
	d2 = json_doc(r2.out);
	cr_assert_str_eq(json_str(d1, "id"), json_str(d2, "id"));
	r3 = cli(&svc, "projects create Once --description other --idempotency-key key-1");
	cr_assert_eq(r3.status, 5, "%s", r3.err);
	cr_assert_not_null(strstr(r3.err, "taskdeck: idempotency_conflict: "), "%s", r3.err);
	cJSON_Delete(d1);
	cJSON_Delete(d2);
	run_free(&r1);
	run_free(&r2);
	run_free(&r3);
}

Test(cli, unknown_project_exits_4)
{
	struct run r = cli(&svc, "projects show prj_000000000000000000000000");

	cr_assert_eq(r.status, 4, "%s", r.err);
	cr_assert_str_eq(r.out, "");
	cr_assert_eq(strncmp(r.err, "taskdeck: not_found: ", 21), 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, " (request req_"), "%s", r.err);
	run_free(&r);

	r = cli(&svc, "defaults get prj_000000000000000000000000");
	cr_assert_eq(r.status, 4, "%s", r.err);
	run_free(&r);
}

Test(cli, defaults_get_set_and_stale)
{
	char *id = create("Defaults");
	struct run r;
	char *created;
	cJSON *doc, *defs;

	r = cli(&svc, "defaults get %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "projectId", id);
	assert_text_kv(r.out, "model", "-");
	created = text_kv(r.out, "updatedAt");
	cr_assert_not_null(created);
	run_free(&r);

	r = cli(&svc, "defaults set %s model=m1 effort=low permissionProfile=read-only", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "model", "m1");
	assert_text_kv(r.out, "effort", "low");
	assert_text_kv(r.out, "permissionProfile", "read-only");
	assert_text_kv(r.out, "network", "-");
	run_free(&r);
	r = cli(&svc, "defaults set %s network=true", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "network", "true");
	run_free(&r);

	/* Pinned to the first read: the write above made it stale. */
	r = cli(&svc, "defaults set %s model=m2 --expected-updated-at %s", id, created);
	cr_assert_eq(r.status, 5, "%s", r.err);
	cr_assert_eq(strncmp(r.err, "taskdeck: stale_write: ", 23), 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "(request req_"));
	run_free(&r);

	r = cli(&svc, "defaults set %s --clear model", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_free(&r);
	r = cli(&svc, "--json defaults get %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	defs = cJSON_GetObjectItem(doc, "defaults");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(defs, "model")));
	cr_assert_str_eq(json_str(defs, "effort"), "low");
	cJSON_Delete(doc);
	run_free(&r);

	r = cli(&svc, "defaults set %s effort=extreme", id);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert_eq(strncmp(r.err, "taskdeck: invalid_request: ", 27), 0, "%s", r.err);
	run_free(&r);

	r = cli(&svc, "defaults set %s model", id);
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
	free(created);
	free(id);
}

Test(cli, routing_get_set)
{
	struct run r;
	cJSON *doc, *sub;

	r = cli(&svc, "routing get");
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "framework", "taskdeck");
	assert_text_kv(r.out, "reviewer.enabled", "false");
	run_free(&r);

	r = cli(&svc, "routing set reviewer.enabled=true reviewer.model=rv subagent.maxConcurrent=3");
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "reviewer.enabled", "true");
	assert_text_kv(r.out, "reviewer.model", "rv");
	assert_text_kv(r.out, "subagent.maxConcurrent", "3");
	run_free(&r);

	r = cli(&svc, "--json routing set --patch '{\"subagent\":{\"enabled\":true,\"model\":\"sm\"}}'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	sub = cJSON_GetObjectItem(doc, "subagent");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(sub, "enabled")));
	cr_assert_str_eq(json_str(sub, "model"), "sm");
	cr_assert_eq(cJSON_GetObjectItem(sub, "maxConcurrent")->valueint, 3);
	cJSON_Delete(doc);
	run_free(&r);

	r = cli(&svc, "routing set subagent.maxConcurrent=99");
	cr_assert_eq(r.status, 1, "%s", r.err);
	run_free(&r);
	r = cli(&svc, "routing set");
	cr_assert_eq(r.status, 2, "%s", r.err);
	run_free(&r);
}

Test(cli, doctor)
{
	struct run r = cli(&svc, "doctor");
	cJSON *doc;

	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "ready", "yes");
	cr_assert_not_null(strstr(r.out, "CHECK"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "token-file"), "%s", r.out);
	run_free(&r);

	r = cli(&svc, "doctor --json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ready")));
	cJSON_Delete(doc);
	run_free(&r);
}

Test(cli, usage_errors_exit_2)
{
	const char *lines[] = { "bogus", "projects show", "projects show a b",
		"--timeout abc doctor", "projects list --nope", "projects list --limit 0",
		"defaults", NULL };

	for (const char **l = lines; *l != NULL; l++) {
		struct run r = cli(&svc, "%s", *l);

		cr_assert_eq(r.status, 2, "taskdeck %s exited %d", *l, r.status);
		cr_assert_str_eq(r.out, "", "taskdeck %s", *l);
		cr_assert_neq(r.err[0], '\0', "taskdeck %s said nothing", *l);
		run_free(&r);
	}
}

Test(cli, help_and_version)
{
	struct run r = cli(&svc, "--help");

	/* grouped, a line a group */
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "projects     list show create"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "daemon       start stop status"), "%s", r.out);
	run_free(&r);
	r = cli(&svc, "help --all");
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "projects create NAME"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "daemon start"));
	run_free(&r);
	r = cli(&svc, "projects update --help");
	cr_assert_eq(r.status, 0);
	cr_assert_eq(strncmp(r.out, "usage: taskdeck projects update PROJECT", 39), 0, "%s", r.out);
	run_free(&r);
	r = cli(&svc, "--version");
	cr_assert_eq(r.status, 0);
	cr_assert_eq(strncmp(r.out, "taskdeck ", 9), 0);
	run_free(&r);
}

/* A home without a service, for the daemon commands. */
static struct svc offline;

/* The pid in a home's discovery file, or 0. */
static long
discovery_pid(const char *home)
{
	char path[512], *text;
	cJSON *doc;
	long pid = 0;

	snprintf(path, sizeof path, "%s/service.json", home);
	if ((text = harness_slurp(path, NULL)) == NULL)
		return 0;
	doc = cJSON_Parse(text);
	if (cJSON_IsNumber(cJSON_GetObjectItem(doc, "pid")))
		pid = (long)cJSON_GetObjectItem(doc, "pid")->valuedouble;
	cJSON_Delete(doc);
	free(text);
	return pid;
}

/* True when pid has exited (a zombie not yet reaped by init counts). */
static bool
process_gone(long pid)
{
	char path[64], *stat;
	const char *paren;
	bool gone;

	if (kill((pid_t)pid, 0) != 0)
		return true;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((stat = harness_slurp(path, NULL)) == NULL)
		return true;
	paren = strrchr(stat, ')');
	gone = paren != NULL && paren[1] == ' ' && paren[2] == 'Z';
	free(stat);
	return gone;
}

static void
offline_setup(void)
{
	memset(&offline, 0, sizeof offline);
	snprintf(offline.home, sizeof offline.home, "/tmp/tdtest-cli-XXXXXX");
	cr_assert_not_null(mkdtemp(offline.home));
}

/* Also stops a daemon that a failed test left running. */
static void
offline_teardown(void)
{
	long pid = discovery_pid(offline.home);

	if (pid > 0)
		kill((pid_t)pid, SIGTERM);
	svc_destroy(&offline);
}

TestSuite(cli_offline, .init = offline_setup, .fini = offline_teardown, .timeout = 120);

Test(cli_offline, no_service_exits_3)
{
	struct run r;

	r = cli(&offline, "projects list");
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "taskdeck: service_not_found: "), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "taskdeck daemon start"), "%s", r.err);
	run_free(&r);

	r = cli(&offline, "daemon status");
	cr_assert_eq(r.status, 3, "%s", r.err);
	assert_text_kv(r.out, "status", "not running");
	run_free(&r);

	r = cli(&offline, "daemon stop");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "taskdeckd is not running\n");
	run_free(&r);
}

Test(cli_offline, daemon_start_status_stop)
{
	struct run r;
	char url[128];
	long pid;
	cJSON *doc;

	r = cli(&offline, "daemon start");
	cr_assert_eq(r.status, 0, "%s", r.err);
	pid = discovery_pid(offline.home);
	cr_assert_gt(pid, 0, "no discovery file after start");
	cr_assert_eq(kill((pid_t)pid, 0), 0);
	cr_assert_eq(sscanf(r.out, "taskdeckd started at %127s", url), 1, "%s", r.out);
	cr_assert_eq(strncmp(url, "http://127.0.0.1:", 17), 0, "%s", url);
	run_free(&r);

	r = cli(&offline, "daemon start");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "already running"), "%s", r.out);
	cr_assert_eq(discovery_pid(offline.home), pid);
	run_free(&r);

	r = cli(&offline, "daemon status");
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_text_kv(r.out, "status", "running");
	assert_text_kv(r.out, "url", url);
	assert_text_kv(r.out, "ready", "yes");
	run_free(&r);

	r = cli(&offline, "--json daemon status");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "running")));
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ready")));
	cr_assert_eq((long)cJSON_GetObjectItem(doc, "pid")->valuedouble, pid);
	cJSON_Delete(doc);
	run_free(&r);

	/* The CLI reaches the daemon it started. */
	r = cli(&offline, "projects create FromDaemon");
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_free(&r);

	r = cli(&offline, "daemon stop");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(discovery_pid(offline.home), 0, "discovery file left behind");
	cr_assert(process_gone(pid), "taskdeckd %ld still runs", pid);
	run_free(&r);

	r = cli(&offline, "daemon status");
	cr_assert_eq(r.status, 3, "%s", r.err);
	run_free(&r);

	/* A start right after a stop works: the lock is free. */
	r = cli(&offline, "daemon start");
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_free(&r);
	r = cli(&offline, "daemon stop");
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_free(&r);
}
