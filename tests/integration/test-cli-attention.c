/*
 * What needs you, from the CLI, against a real taskdeckd: runs list
 * --attention (every project's runs that wait for a person, with what they
 * wait for), plan approve/show by RUN, and runs and connectors named as git
 * and docker take them (an id's tail or unique beginning, a connector's
 * name).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(cli_attention, .init = svc_setup, .fini = svc_teardown, .timeout = 180);

struct run {
	int status;
	char *out;
	char *err;
};

/* "taskdeck ARGS" for the service, stdout and stderr captured. */
static struct run
cli(const char *fmt, ...)
{
	char args[4096], errpath[512];
	struct run r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/cli.stderr", svc.home);
	r.status = run_capture(&svc, &r.out, "XDG_CONFIG_HOME=%s/xdg TASKDECK_PROJECT= %s %s 2>%s",
	    svc.home, harness_bin("taskdeck"), args, errpath);
	r.err = harness_slurp(errpath, NULL);
	cr_assert_not_null(r.err);
	return r;
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* "taskdeck ARGS" on a terminal (script(1)'s pty) COLUMNS wide; stdout and stderr, no '\r'. */
static struct run
cli_tty(int columns, const char *args)
{
	char cmd[4096];
	struct run r;

	snprintf(cmd, sizeof cmd, "XDG_CONFIG_HOME=%s/xdg TASKDECK_PROJECT= COLUMNS=%d %s %s",
	    svc.home, columns, harness_bin("taskdeck"), args);
	r.status = run_capture(&svc, &r.out, "script -qec '%s' /dev/null </dev/null", cmd);
	for (char *p = r.out, *q = r.out;; p++) {
		if (*p != '\r')
			*q++ = *p;
		if (*p == '\0')
			break;
	}
	r.err = strdup("");
	return r;
}

/* Characters (not bytes) of the longest line of text. */
static size_t
widest_line(const char *text)
{
	size_t widest = 0, w = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
		if (*p == '\n') {
			w = 0;
			continue;
		}
		if ((*p & 0xc0) != 0x80 && ++w > widest)
			widest = w;
	}
	return widest;
}

/* Starts a replay run of model (extra: more options); its id (free it). */
static char *
run_start(const char *project, const char *model, const char *extra, const char *prompt)
{
	struct run r = cli("--json run --project '%s' --provider replay --model %s %s '%s'",
	    project, model, extra, prompt);
	cJSON *doc;
	char *id;

	cr_assert_eq(r.status, 0, "run %s: exit %d: %s", model, r.status, r.err);
	doc = json_doc(r.out);
	id = strdup(json_str(doc, "id"));
	cJSON_Delete(doc);
	run_free(&r);
	return id;
}

/* Waits until `taskdeck CHECK` prints text (60 s). */
static bool
cli_waits_for(const char *check, const char *text)
{
	for (int i = 0; i < 600; i++) {
		struct run r = cli("%s", check);
		bool found = strstr(r.out, text) != NULL;

		run_free(&r);
		if (found)
			return true;
		usleep(100000);
	}
	return false;
}

Test(cli_attention, runs_by_the_tail_or_beginning_of_their_id)
{
	char *p = http_project_new(&svc, "shorts");
	char *a = run_start("shorts", "quick", "--wait", "First");
	char *b = run_start("shorts", "quick", "--wait", "Second");
	const char *tail = a + strlen(a) - 6;
	char prefix[16];
	struct run r;

	r = cli("--json runs show %s", tail);
	cr_assert_eq(r.status, 0, "by the tail the dashboard shows: %s", r.err);
	cr_expect_not_null(strstr(r.out, a), "%s", r.out);
	run_free(&r);
	/* the tail as the dashboard shows it, with its ellipsis */
	r = cli("--json runs show '…%s'", tail);
	cr_expect_eq(r.status, 0, "by …tail: %s", r.err);
	run_free(&r);
	r = cli("runs logs %s", b + strlen(b) - 8);
	cr_expect_eq(r.status, 0, "logs by a tail: %s", r.err);
	run_free(&r);
	/* both begin alike: the beginning alone is ambiguous, the candidates named */
	snprintf(prefix, sizeof prefix, "%.8s", a + 4);
	if (strncmp(a, b, 12) == 0) {
		r = cli("runs show %s", prefix);
		cr_expect_eq(r.status, 2, "an ambiguous beginning: exit %d", r.status);
		cr_expect_not_null(strstr(r.err, a), "%s", r.err);
		cr_expect_not_null(strstr(r.err, b), "%s", r.err);
		run_free(&r);
	}
	r = cli("--json runs show run_%.*s", (int)strlen(a) - 4 - 2, a + 4);
	cr_expect_eq(r.status, 0, "a unique beginning with run_: %s", r.err);
	cr_expect_not_null(strstr(r.out, a), "%s", r.out);
	run_free(&r);
	r = cli("runs show zzzzzz");
	cr_expect_eq(r.status, 4, "no such run: exit %d: %s", r.status, r.err);
	run_free(&r);
	r = cli("--json permissions list --run %s", tail);
	cr_expect_eq(r.status, 0, "--run by a tail: %s", r.err);
	run_free(&r);
	/* runs rerun --wait, as run --wait: the new run's status and output at its end */
	r = cli("runs rerun %s --wait --wait-timeout 60", tail);
	cr_expect_eq(r.status, 0, "rerun --wait: exit %d: %s", r.status, r.err);
	cr_expect_not_null(strstr(r.out, "status: completed"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Hello from taskdeck"), "%s", r.out);
	run_free(&r);
	r = cli("runs rerun %s --wait-timeout 5", tail);
	cr_expect_eq(r.status, 2, "--wait-timeout without --wait: exit %d", r.status);
	run_free(&r);
	free(a);
	free(b);
	free(p);
}

Test(cli_attention, connectors_by_name)
{
	struct run r = cli("--json connectors show web");

	cr_assert_eq(r.status, 0, "the built-in web connector by its name: %s", r.err);
	cr_expect_not_null(strstr(r.out, "con_web"), "%s", r.out);
	run_free(&r);
	r = cli("connectors show no-such-connector");
	cr_expect_eq(r.status, 4, "exit %d: %s", r.status, r.err);
	run_free(&r);
}

Test(cli_attention, runs_list_attention_and_plan_by_run)
{
	char *p1 = http_project_new(&svc, "planning"), *p2 = http_project_new(&svc, "asking");
	char *plan = run_start("planning", "plan", "--plan-first", "Plan, then write");
	char *ask = run_start("asking", "ask", "--permission ask", "Write with care");
	char *done = run_start("asking", "quick", "--wait", "Done already");
	struct run r;
	cJSON *doc;

	cr_assert(cli_waits_for("runs list --attention", plan), "the plan never waited");
	cr_assert(cli_waits_for("runs list --attention", ask), "the prompt never waited");
	r = cli("--wide runs list --attention");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "WAITS FOR"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "plan v1 r"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "permission: write_file"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "planning"), "the project: %s", r.out);
	cr_expect_not_null(strstr(r.out, "taskdeck plan approve|revise|reject"), "%s", r.out);
	cr_expect_null(strstr(r.out, done), "an ended run waits for nobody: %s", r.out);
	run_free(&r);
	r = cli("--json runs list --attention");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_expect_eq(cJSON_GetArraySize(doc), 2, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"waitsFor\":\"plan-approval\""), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"waitsFor\":\"permission\""), "%s", r.out);
	cJSON_Delete(doc);
	run_free(&r);

	/* the attention in the run's log in words, not JSON */
	r = cli("runs logs %s", plan);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "[attention] plan v1 r"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "waits for approval (taskdeck plan approve|revise|reject"),
	    "%s", r.err);
	cr_expect_null(strstr(r.err, "\"kind\""), "raw JSON: %s", r.err);
	run_free(&r);
	/* runs list --all-projects fits 80 columns: runs by their tails, no session */
	r = cli_tty(80, "runs list --all-projects");
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect_leq(widest_line(r.out), 80, "%s", r.out);
	cr_expect_not_null(strstr(r.out, plan + strlen(plan) - 8), "%s", r.out);
	cr_expect_null(strstr(r.out, "SESSION"), "%s", r.out);
	run_free(&r);
	r = cli_tty(160, "runs list --all-projects");
	cr_expect_not_null(strstr(r.out, plan), "whole ids on a wide terminal: %s", r.out);
	run_free(&r);

	/* the plan by its run (the tail), not its session */
	r = cli("plan show %s", plan + strlen(plan) - 6);
	cr_assert_eq(r.status, 0, "plan show RUN: %s", r.err);
	cr_expect_not_null(strstr(r.out, plan), "%s", r.out);
	run_free(&r);
	r = cli("plan approve %s", plan);
	cr_assert_eq(r.status, 0, "plan approve RUN: %s", r.err);
	run_free(&r);
	{
		char check[128];

		snprintf(check, sizeof check, "runs show %s", plan);
		cr_expect(cli_waits_for(check, "status: completed"), "the approved run did not end");
	}
	r = cli("runs cancel %s", ask + strlen(ask) - 6);
	cr_expect_eq(r.status, 0, "cancel by a tail: %s", r.err);
	run_free(&r);
	cr_expect(cli_waits_for("runs list --attention", "no runs waiting for you"),
	    "the list did not empty");
	free(plan);
	free(ask);
	free(done);
	free(p1);
	free(p2);
}

Test(cli_attention, plan_by_a_title_two_sessions_share)
{
	char *p = http_project_new(&svc, "twins");
	char *done = run_start("twins", "quick", "--wait", "Same title");
	char *plan = run_start("twins", "plan", "--plan-first", "Same title");
	char check[128];
	struct run r;

	snprintf(check, sizeof check, "plan show %s", plan);
	cr_assert(cli_waits_for(check, "awaiting-approval"), "the plan never waited");
	/* two sessions are titled so; only one has a plan that waits: that one */
	r = cli("plan show 'Same title'");
	cr_expect_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_expect_not_null(strstr(r.out, plan), "%s", r.out);
	run_free(&r);
	r = cli("sessions show 'Same title'");
	cr_expect_eq(r.status, 2, "elsewhere the title stays ambiguous: exit %d", r.status);
	run_free(&r);
	r = cli("plan reject %s --yes", plan);
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_free(&r);
	free(done);
	free(plan);
	free(p);
}
