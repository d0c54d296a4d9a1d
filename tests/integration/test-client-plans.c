/* libtaskdeck and the CLI: plans and permission prompts against a real taskdeckd and agent. */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "taskdeck.h"

TestSuite(plans, .init = svc_setup_env, .fini = svc_teardown, .timeout = 120);
TestSuite(plans_offline, .timeout = 120);

/* Starts a replay run: model "plan" plan-first, or "ask" with profile ask. */
static struct td_run *
start(struct td_client *c, const char *project, const char *model)
{
	bool plan = strcmp(model, "plan") == 0;
	struct td_run_request rq = {
		.project = project, .prompt = "Write a short report.",
		.permission_profile = plan ? "workspace-write" : "ask",
		.turn_intent = plan ? "plan-first" : NULL,
		.provider = "replay", .model = model,
	};
	struct td_error err;
	struct td_run *r;

	cr_assert_eq(td_start_run(c, &rq, NULL, &r, &err), TD_OK, "start %s: %s (%s)",
	    model, err.message, err.code_name);
	return r;
}

/* Waits until the run needs a decision on plan version; the run. */
static struct td_run *
wait_attention(struct td_client *c, const char *run_id, long version)
{
	struct td_wait_options w = { .timeout_ms = 30000, .return_on_attention = true };
	struct td_error err;
	struct td_run *r;

	cr_assert_eq(td_wait_for_run(c, run_id, &w, &r, &err), TD_OK, "wait %s: %s",
	    run_id, err.message);
	cr_assert_str_eq(r->status, "running", "run %s ended %s (%s: %s)", run_id,
	    r->status, r->error_code, r->error_message);
	cr_assert_str_eq(r->attention.kind, "plan-approval");
	cr_assert_eq(r->attention.plan_version, version);
	cr_assert_geq(r->attention.plan_revision, 1);
	cr_assert_not_null(r->attention.since);
	return r;
}

static struct td_run *
wait_final(struct td_client *c, const char *run_id)
{
	struct td_wait_options w = { .timeout_ms = 60000 };
	struct td_error err;
	struct td_run *r;

	cr_assert_eq(td_wait_for_run(c, run_id, &w, &r, &err), TD_OK, "wait %s: %s",
	    run_id, err.message);
	return r;
}

static struct td_plan *
get_plan(struct td_client *c, const char *session_id)
{
	struct td_error err;
	struct td_plan *p;

	cr_assert_eq(td_get_session_plan(c, session_id, NULL, &p, &err), TD_OK,
	    "plan of %s: %s", session_id, err.message);
	return p;
}

/* A wait stops at attention only when asked to; a timed-out wait leaves the run waiting. */
Test(plans, wait_with_and_without_attention)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Attention");
	struct td_run *r = start(c, project, "plan"), *seen, *again;
	struct td_wait_options w = { .timeout_ms = 1500 };
	struct td_plan *p;
	struct td_error err;
	long t0;

	seen = wait_attention(c, r->id, 1);
	p = get_plan(c, r->session_id);
	cr_assert_str_eq(p->status, "awaiting-approval");
	cr_assert_str_eq(p->run_id, r->id);
	cr_assert_eq(p->version, seen->attention.plan_version);
	cr_assert_eq(p->revision, seen->attention.plan_revision);

	t0 = mono_ms();
	cr_assert_eq(td_wait_for_run(c, r->id, &w, &again, &err), TD_TIMEOUT,
	    "a plain wait returned at attention");
	cr_assert_null(again);
	cr_assert_lt(mono_ms() - t0, 5000);
	cr_assert_not_null(strstr(err.message, "goes on"), "%s", err.message);
	cr_assert_eq(td_get_run(c, r->id, NULL, &again, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(again->status, "running");
	cr_assert_str_eq(again->attention.kind, "plan-approval");
	td_run_free(again);

	cr_assert_eq(td_respond_session_plan(c, r->session_id, "reject", p->version,
	    p->revision, NULL, NULL, NULL, &err), TD_OK, "%s", err.message);
	again = wait_final(c, r->id);
	cr_assert_str_eq(again->status, "cancelled");
	cr_assert_null(again->attention.kind);
	td_run_free(again);
	td_plan_free(p);
	td_run_free(seen);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

/* Propose, revise twice (stale pairs refused), approve: the steps complete, the run too. */
Test(plans, revise_twice_then_approve)
{
	static const char *const feedback[] = { "use the 2025 figures", "keep it short" };
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Cycle");
	struct td_run *r = start(c, project, "plan"), *seen;
	struct td_plan *p, *after, *stale;
	struct td_artifact_list *arts;
	struct td_error err;
	long old_version, old_revision;
	bool report = false;

	seen = wait_attention(c, r->id, 1);
	td_run_free(seen);
	p = get_plan(c, r->session_id);
	cr_assert_eq(p->version, 1);
	cr_assert_eq(p->step_count, 3);
	for (size_t i = 0; i < p->step_count; i++) {
		cr_assert_not_null(p->steps[i].id);
		cr_assert_str_eq(p->steps[i].status, "pending");
	}
	cr_assert_not_null(strstr(p->steps[1].title, "report.md"), "%s", p->steps[1].title);
	cr_assert_null(p->feedback);

	for (int i = 0; i < 2; i++) {
		cr_assert_eq(td_respond_session_plan(c, r->session_id, "revise", p->version,
		    p->revision, feedback[i], NULL, &after, &err), TD_OK, "revise: %s",
		    err.message);
		cr_assert_gt(after->revision, p->revision);
		cr_assert_str_neq(after->status, "awaiting-approval");
		td_plan_free(after);
		old_version = p->version;
		old_revision = p->revision;
		td_plan_free(p);
		seen = wait_attention(c, r->id, old_version + 1);
		td_run_free(seen);
		p = get_plan(c, r->session_id);
		cr_assert_eq(p->version, old_version + 1);
		cr_assert_str_eq(p->status, "awaiting-approval");
		cr_assert_not_null(strstr(p->summary, feedback[i]), "summary: %s", p->summary);
		cr_assert_str_eq(p->feedback, feedback[i]);

		/* The pair read before the revision is no longer current. */
		cr_assert_eq(td_respond_session_plan(c, r->session_id, "approve",
		    old_version, old_revision, NULL, NULL, &stale, &err), TD_STALE_PLAN,
		    "old pair: %s", err.message);
		cr_assert_null(stale);
		cr_assert_eq(err.http_status, 409);
		cr_assert_str_eq(err.code_name, "stale_plan");
		cr_assert_eq(td_respond_session_plan(c, r->session_id, "approve",
		    p->version, p->revision + 1, NULL, NULL, NULL, &err), TD_STALE_PLAN);
	}
	cr_assert_eq(p->version, 3);

	cr_assert_eq(td_respond_session_plan(c, r->session_id, "approve", p->version,
	    p->revision, NULL, NULL, &after, &err), TD_OK, "approve: %s", err.message);
	cr_assert_str_eq(after->status, "approved");
	cr_assert_eq(after->version, 3);
	td_plan_free(after);
	seen = wait_final(c, r->id);
	cr_assert_str_eq(seen->status, "completed", "%s: %s", seen->error_code,
	    seen->error_message);
	td_run_free(seen);

	td_plan_free(p);
	p = get_plan(c, r->session_id);
	cr_assert_str_eq(p->status, "completed");
	cr_assert_eq(p->version, 3);
	for (size_t i = 0; i < p->step_count; i++)
		cr_assert_str_eq(p->steps[i].status, "completed", "step %s", p->steps[i].id);

	/* Nothing awaits a decision any more. */
	cr_assert_eq(td_respond_session_plan(c, r->session_id, "approve", p->version,
	    p->revision, NULL, NULL, NULL, &err), TD_PLAN_NOT_PENDING, "%s", err.message);
	cr_assert_eq(err.http_status, 409);

	cr_assert_eq(td_list_artifacts(c, r->session_id, false, 0, NULL, NULL, &arts,
	    &err), TD_OK, "%s", err.message);
	for (size_t i = 0; i < arts->count; i++)
		report |= strcmp(arts->items[i].name, "report.md") == 0;
	cr_assert(report, "no report.md saved");
	td_artifact_list_free(arts);
	td_plan_free(p);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

struct racer {
	struct td_client *c;
	const char *session_id;
	long version, revision;
	enum td_code rc;
	char code[64];
};

static void *
race_approve(void *arg)
{
	struct racer *x = arg;
	struct td_error err;

	x->rc = td_respond_session_plan(x->c, x->session_id, "approve", x->version,
	    x->revision, NULL, NULL, NULL, &err);
	snprintf(x->code, sizeof x->code, "%s", x->rc == TD_OK ? "ok" : err.code_name);
	return NULL;
}

/* Two clients approve the same state at once: exactly one wins. */
Test(plans, concurrent_approvals_one_wins)
{
	struct td_client *c = client_connect(), *c2 = client_connect();
	char *project = client_new_project(c, "Race");
	struct td_run *r = start(c, project, "plan"), *seen;
	struct racer x[2];
	pthread_t t[2];
	struct td_plan *p;

	seen = wait_attention(c, r->id, 1);
	td_run_free(seen);
	p = get_plan(c, r->session_id);
	for (int i = 0; i < 2; i++) {
		x[i] = (struct racer){ i == 0 ? c : c2, r->session_id, p->version,
		    p->revision, TD_UNKNOWN, "" };
		cr_assert_eq(pthread_create(&t[i], NULL, race_approve, &x[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_assert((x[0].rc == TD_OK) != (x[1].rc == TD_OK), "results %s and %s",
	    x[0].code, x[1].code);
	cr_assert(x[0].rc == TD_STALE_PLAN || x[1].rc == TD_STALE_PLAN,
	    "results %s and %s", x[0].code, x[1].code);
	seen = wait_final(c, r->id);
	cr_assert_str_eq(seen->status, "completed");
	td_run_free(seen);
	td_plan_free(p);
	td_run_free(r);
	free(project);
	td_client_free(c2);
	td_client_free(c);
}

/* Arguments are checked before anything is sent. */
Test(plans_offline, argument_checks)
{
	struct td_connect_options o = { .base_url = "http://127.0.0.1:9",
	    .token = "0123456789abcdef" };
	struct td_permission_list *list;
	struct td_permission *perm;
	struct td_client *c;
	struct td_error err;
	struct td_plan *p;

	cr_assert_eq(td_connect(&c, &o, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_get_session_plan(c, "", NULL, &p, &err), TD_INVALID_ARGUMENT);
	cr_assert_null(p);
	cr_assert_eq(td_respond_session_plan(c, "ses_x", "maybe", 1, 1, NULL, NULL, &p,
	    &err), TD_INVALID_ARGUMENT);
	cr_assert_null(p);
	cr_assert_not_null(strstr(err.message, "approve, revise or reject"));
	cr_assert_eq(td_respond_session_plan(c, "ses_x", "revise", 1, 1, NULL, NULL, &p,
	    &err), TD_INVALID_ARGUMENT);
	cr_assert_not_null(strstr(err.message, "feedback"));
	cr_assert_eq(td_respond_session_plan(c, "ses_x", "revise", 1, 1, "", NULL, &p,
	    &err), TD_INVALID_ARGUMENT);
	cr_assert_eq(td_respond_session_plan(c, "ses_x", "approve", 0, 1, NULL, NULL, &p,
	    &err), TD_INVALID_ARGUMENT);
	cr_assert_eq(td_respond_session_plan(c, "ses_x", "approve", 1, 0, NULL, NULL, &p,
	    &err), TD_INVALID_ARGUMENT);
	cr_assert_eq(td_answer_permission(c, "prm_x", "yes", NULL, &perm, &err),
	    TD_INVALID_ARGUMENT);
	cr_assert_null(perm);
	cr_assert_eq(td_answer_permission(c, NULL, "allow", NULL, &perm, &err),
	    TD_INVALID_ARGUMENT);
	cr_assert_eq(td_get_permission(c, "", NULL, &perm, &err), TD_INVALID_ARGUMENT);
	cr_assert_eq(td_list_permissions(c, NULL, NULL, -1, NULL, NULL, &list, &err),
	    TD_INVALID_ARGUMENT);
	cr_assert_null(list);
	/* A valid call reaches the network, which is not there. */
	cr_assert_eq(td_respond_session_plan(c, "ses_x", "approve", 1, 1, NULL, NULL, &p,
	    &err), TD_CONNECTION_FAILED);
	cr_assert_eq(td_answer_permission(c, "prm_x", "allow-run", NULL, &perm, &err),
	    TD_CONNECTION_FAILED);
	td_plan_free(NULL);
	td_permission_free(NULL);
	td_permission_list_free(NULL);
	td_client_free(c);
}

/* --- the CLI --------------------------------------------------------------- */

struct cli_run {
	int status;
	char *out;
	char *err;
};

/* Runs "taskdeck ARGS < /dev/null" with the home of svc (home NULL: none); captures both outputs. */
static struct cli_run
cli_in(const char *home, const char *fmt, ...)
{
	char args[4096], errpath[600];
	struct cli_run r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/cli.stderr", home != NULL ? home : "/tmp");
	if (home == NULL)
		snprintf(errpath, sizeof errpath, "/tmp/td-plans-%d.stderr", (int)getpid());
	r.status = run_capture(home != NULL ? &svc : NULL, &r.out, "%s %s </dev/null 2>%s",
	    harness_bin("taskdeck"), args, errpath);
	r.err = harness_slurp(errpath, NULL);
	if (home == NULL)
		unlink(errpath);
	cr_assert_not_null(r.err);
	if (home != NULL) {
		cr_assert_null(strstr(r.out, svc.token), "token on stdout of %s", args);
		cr_assert_null(strstr(r.err, svc.token), "token on stderr of %s", args);
	}
	return r;
}

#define cli(...) cli_in(svc.home, __VA_ARGS__)

static void
cli_free(struct cli_run *r)
{
	free(r->out);
	free(r->err);
}

/* Usage errors are found before the service is asked: exit 2. */
Test(plans_offline, cli_usage_errors)
{
	struct cli_run r;

	r = cli_in(NULL, "plan reject ses_x");
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "--yes"), "%s", r.err);
	cli_free(&r);
	r = cli_in(NULL, "plan approve ses_x --version 2");
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "go together"), "%s", r.err);
	cli_free(&r);
	r = cli_in(NULL, "plan approve ses_x --version 2 --revision x");
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cli_free(&r);
	r = cli_in(NULL, "plan revise ses_x");
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "--feedback"), "%s", r.err);
	cli_free(&r);
	r = cli_in(NULL, "permissions allow");
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cli_free(&r);
	r = cli_in(NULL, "permissions list --run ''");
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cli_free(&r);
}

/* plan show, revise, a stale pinned approve, approve; then reject --yes in another session. */
Test(plans, cli_plan_cycle_and_reject)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "CLI plans");
	struct td_run *r, *seen;
	struct cli_run out;
	long revision;
	char *v;

	out = cli("run --project %s --plan-first --provider replay --model plan 'Report'",
	    project);
	cr_assert_eq(out.status, 0, "%s", out.err);
	v = text_kv(out.out, "run");
	cr_assert_not_null(v, "%s", out.out);
	cr_assert_eq(td_get_run(c, v, NULL, &r, NULL), TD_OK);
	free(v);
	cli_free(&out);
	seen = wait_attention(c, r->id, 1);
	revision = seen->attention.plan_revision;
	td_run_free(seen);

	out = cli("plan show %s", r->session_id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "status", "awaiting-approval");
	assert_text_kv(out.out, "version", "1");
	assert_text_kv(out.out, "run", r->id);
	cr_assert_not_null(strstr(out.out, "STEP"), "%s", out.out);
	cr_assert_not_null(strstr(out.out, "Write report.md"), "%s", out.out);
	cr_assert_not_null(strstr(out.out, "pending"), "%s", out.out);
	cr_assert_not_null(strstr(out.err, "plan approve"), "%s", out.err);
	cli_free(&out);

	out = cli("plan revise %s --feedback 'cite the 2025 figures'", r->session_id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cli_free(&out);
	seen = wait_attention(c, r->id, 2);
	td_run_free(seen);
	out = cli("plan show %s", r->session_id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "version", "2");
	assert_text_kv(out.out, "feedback", "cite the 2025 figures");
	cr_assert_not_null(strstr(out.out, "cite the 2025 figures"), "%s", out.out);
	cli_free(&out);

	/* The pair of version 1, pinned: refused, exit 5, and it says so. */
	out = cli("plan approve %s --version 1 --revision %ld", r->session_id, revision);
	cr_assert_eq(out.status, 5, "exit %d: %s", out.status, out.err);
	cr_assert_not_null(strstr(out.err, "stale_plan"), "%s", out.err);
	cr_assert_not_null(strstr(out.err, "no longer at version 1"), "%s", out.err);
	cli_free(&out);

	out = cli("plan approve %s", r->session_id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "status", "approved");
	cli_free(&out);
	out = cli("runs wait %s --wait-timeout 60", r->id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "status", "completed");
	cli_free(&out);
	out = cli("--json plan show %s", r->session_id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert_not_null(strstr(out.out, "\"status\":\"completed\""), "%s", out.out);
	cli_free(&out);
	out = cli("plan approve %s", r->session_id);
	cr_assert_eq(out.status, 5, "exit %d: %s", out.status, out.err);
	cr_assert_not_null(strstr(out.err, "plan_not_pending"), "%s", out.err);
	cli_free(&out);
	td_run_free(r);

	/* Reject: refused without --yes off a terminal, then the run ends cancelled. */
	r = start(c, project, "plan");
	seen = wait_attention(c, r->id, 1);
	td_run_free(seen);
	out = cli("plan reject %s", r->session_id);
	cr_assert_eq(out.status, 2, "exit %d: %s", out.status, out.err);
	cli_free(&out);
	out = cli("plan show %s", r->session_id);
	assert_text_kv(out.out, "status", "awaiting-approval");
	cli_free(&out);
	out = cli("plan reject %s --yes", r->session_id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "status", "rejected");
	cli_free(&out);
	seen = wait_final(c, r->id);
	cr_assert_str_eq(seen->status, "cancelled");
	td_run_free(seen);
	td_run_free(r);

	out = cli("plan show ses_00000000000000000000000000");
	cr_assert_eq(out.status, 4, "exit %d: %s", out.status, out.err);
	cli_free(&out);
	free(project);
	td_client_free(c);
}

/* The pending prompt of a run, waited for; its id (free it). */
static char *
next_prompt(struct td_client *c, const char *run_id, const char *tool)
{
	long deadline = mono_ms() + 30000;
	struct td_permission_list *list;
	struct td_error err;
	char *id = NULL;

	while (id == NULL) {
		cr_assert_lt(mono_ms(), deadline, "no %s prompt for %s", tool, run_id);
		cr_assert_eq(td_list_permissions(c, "pending", run_id, 0, NULL, NULL, &list,
		    &err), TD_OK, "%s", err.message);
		cr_assert_leq(list->count, 1, "%zu prompts pending at once", list->count);
		if (list->count == 1) {
			cr_assert_str_eq(list->items[0].tool, tool);
			cr_assert_str_eq(list->items[0].status, "pending");
			cr_assert_null(list->items[0].decision);
			id = strdup(list->items[0].id);
		}
		td_permission_list_free(list);
		if (id == NULL)
			usleep(100 * 1000);
	}
	return id;
}

/* allow, deny and allow-run on an ask run: only the allowed actions happen. */
Test(plans, cli_permissions_ask_run)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Ask");
	struct td_run *r = start(c, project, "ask"), *seen;
	struct td_artifact_list *arts;
	struct td_session *s;
	struct td_error err;
	struct cli_run out;
	char *id, path[PATH_MAX];
	bool allowed = false, second = false;
	struct stat st;

	cr_assert_str_eq(r->permission_profile, "ask");
	id = next_prompt(c, r->id, "write_file");
	/* A prompt is no plan decision: no attention. */
	cr_assert_eq(td_get_run(c, r->id, NULL, &seen, &err), TD_OK);
	cr_assert_str_eq(seen->status, "running");
	cr_assert_null(seen->attention.kind);
	td_run_free(seen);

	out = cli("permissions list");
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert_not_null(strstr(out.out, id), "%s", out.out);
	cr_assert_not_null(strstr(out.out, "write_file"), "%s", out.out);
	cli_free(&out);
	out = cli("permissions show %s", id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "input.path", "allowed.md");
	cli_free(&out);

	out = cli("permissions allow %s", id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "status", "allowed");
	assert_text_kv(out.out, "decision", "allow");
	cli_free(&out);
	/* Answering twice: exit 5, and nothing changes. */
	out = cli("permissions deny %s", id);
	cr_assert_eq(out.status, 5, "exit %d: %s", out.status, out.err);
	cr_assert_not_null(strstr(out.err, "permission_not_pending"), "%s", out.err);
	cr_assert_not_null(strstr(out.err, "already allowed"), "%s", out.err);
	cli_free(&out);
	free(id);

	id = next_prompt(c, r->id, "run_command");
	out = cli("permissions deny %s", id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	assert_text_kv(out.out, "status", "denied");
	cli_free(&out);
	free(id);

	id = next_prompt(c, r->id, "write_file");
	out = cli("--json permissions allow %s --run", id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert_not_null(strstr(out.out, "\"decision\":\"allow-run\""), "%s", out.out);
	cli_free(&out);
	free(id);

	seen = wait_final(c, r->id);
	cr_assert_str_eq(seen->status, "completed", "%s: %s", seen->error_code,
	    seen->error_message);
	td_run_free(seen);

	out = cli("permissions list --run %s", r->id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert_str_eq(out.out, "no pending permission prompts\n");
	cli_free(&out);
	out = cli("permissions list --all --run %s", r->id);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert_not_null(strstr(out.out, "denied"), "%s", out.out);
	cr_assert_not_null(strstr(out.out, "run_command"), "%s", out.out);
	cli_free(&out);
	out = cli("permissions allow prm_00000000000000000000000000");
	cr_assert_eq(out.status, 4, "exit %d: %s", out.status, out.err);
	cli_free(&out);

	/* The files: the allowed writes happened, the denied command did not. */
	cr_assert_eq(td_get_session(c, r->session_id, NULL, &s, &err), TD_OK);
	snprintf(path, sizeof path, "%s/ran.txt", s->cwd);
	cr_assert_neq(stat(path, &st), 0, "the denied command ran");
	snprintf(path, sizeof path, "%s/allowed.md", s->cwd);
	cr_assert_eq(stat(path, &st), 0, "allowed.md was not written");
	td_session_free(s);
	cr_assert_eq(td_list_artifacts(c, r->session_id, false, 0, NULL, NULL, &arts,
	    &err), TD_OK, "%s", err.message);
	for (size_t i = 0; i < arts->count; i++) {
		allowed |= strcmp(arts->items[i].name, "allowed.md") == 0;
		second |= strcmp(arts->items[i].name, "second.md") == 0;
		cr_assert_str_neq(arts->items[i].name, "ran.txt");
	}
	cr_assert(allowed && second, "artifacts: allowed.md %d, second.md %d", allowed,
	    second);
	td_artifact_list_free(arts);
	td_run_free(r);
	free(project);
	td_client_free(c);
}
