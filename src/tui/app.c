/*
 * The dashboard's loop: poll() the terminal, the event stream, the worker's
 * results, the signals and a timer; handlers change the model and return
 * flags; the screen is drawn once per pass when something changed.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "timeutil.h"
#include "tui/tui.h"
#include "xalloc.h"

/* Events taken from the stream per pass (a few ms of work, so that a key
 * waits for no more), and results from the worker. */
#define APP_EVENT_BATCH 1000
#define APP_RESULT_BATCH 512
#define APP_CONNECT_CHECK_MS 250
#define APP_DOCTOR_MS 30000
/* At most one frame per this many ms while events pour in. */
#define APP_FRAME_MS 16

static const int app_backoff_s[] = { 1, 2, 4, 8, 10 };

/* The loop's own state beside struct tui. */
struct app {
	struct tui *t;
	struct td_events *ev;
	char *last_id;		/* where a new subscription resumes */
	int attempt;		/* failed connections in a row */
	bool reconnect;		/* the next live stream follows a failure */
	long long check_ms;	/* CONN_CONNECTING: next td_events_ready */
	long long doctor_ms;
	long long last_draw_ms;
	long long visual_ms;	/* the screen changes by itself then (countdowns), or 0 */
	int sigfd;
};

/* Reads every key waiting on the terminal. */
static void
app_keys_read(struct tui *t)
{
	wint_t wc;
	int rc, key;

	while ((rc = get_wch(&wc)) != ERR) {
		if (rc == KEY_CODE_YES && wc == KEY_MOUSE) {
			keys_mouse(t);
			t->dirty = true;
			continue;
		}
		if (rc == KEY_CODE_YES && wc == KEY_RESIZE) {
			t->dirty = true;
			continue;
		}
		key = rc == KEY_CODE_YES ? TUI_KEY((int)wc) : (int)wc;
		if (keys_dispatch(t, key) & (TUI_REDRAW | TUI_HANDLED))
			t->dirty = true;
		if (t->quit)
			return;
	}
}

/* --- HTTP results -------------------------------------------------------- */

/* "code: message" of a failed job into a message line. */
static void
app_fail(struct tui *t, const char *what, const struct job_result *r)
{
	model_message(&t->m, t->now_ms, true, "%s: %s: %s", what, r->err.code_name,
	    r->err.message);
}

/* A failed read: said only while live (reconnecting says enough). */
static void
app_read_failed(struct tui *t, const struct job_result *r)
{
	if (r->code == TD_UNAUTHORIZED)
		model_conn_problem(&t->m, PROBLEM_UNAUTHORIZED);
	if (t->m.conn == CONN_LIVE && r->code != TD_CANCELLED)
		app_fail(t, "refresh failed", r);
}

static unsigned
res_doctor(struct tui *t, const struct job_result *r)
{
	if (r->code == TD_OK)
		model_set_doctor(&t->m, r->doctor);
	return NEED_NONE;
}

static unsigned
res_projects(struct tui *t, const struct job_result *r)
{
	unsigned need = model_set_projects(&t->m, r->projects);

	/* The first list: open where the last start left, or in the current project. */
	if (t->start_project[0] != '\0') {
		char project[128], session[128], run[128];

		memcpy(project, t->start_project, sizeof project);
		memcpy(session, t->start_session, sizeof session);
		memcpy(run, t->start_run, sizeof run);
		t->start_project[0] = t->start_session[0] = t->start_run[0] = '\0';
		tui_jump(t, project, session[0] != '\0' ? session : NULL,
		    run[0] != '\0' ? run : NULL);
	}
	return r->job.archived ? need | palette_projects_read(t) : need;
}

static unsigned
res_sessions(struct tui *t, const struct job_result *r)
{
	unsigned need = model_set_sessions(&t->m, r->job.id, r->sessions);

	return r->job.archived ? need | palette_sessions_read(t, r->job.id) : need;
}

static unsigned
res_runs(struct tui *t, const struct job_result *r)
{
	return model_set_runs(&t->m, r->job.id, r->runs);
}

static unsigned
res_run(struct tui *t, const struct job_result *r)
{
	unsigned need = model_put_run(&t->m, r->run);

	/* ':run ID': now that its project and session are known, go there. */
	if (t->jump_run[0] != '\0' && r->run->id != NULL && strcmp(r->run->id, t->jump_run) == 0) {
		t->jump_run[0] = '\0';
		tui_jump(t, r->run->project_id, r->run->session_id, r->run->id);
		model_focus(&t->m, PANE_RUNS);
	}
	return need;
}

static unsigned
res_project_runs(struct tui *t, const struct job_result *r)
{
	model_set_project_runs(&t->m, r->job.id, r->runs);
	return NEED_NONE;
}

static unsigned
res_attention(struct tui *t, const struct job_result *r)
{
	model_set_attention(&t->m, r->runs);
	return NEED_NONE;
}

static unsigned
res_connectors(struct tui *t, const struct job_result *r)
{
	model_set_connectors(&t->m, r->connectors);
	return NEED_NONE;
}

static unsigned
res_connector_enable(struct tui *t, const struct job_result *r)
{
	if (r->code != TD_OK) {
		app_fail(t, r->job.decision != NULL ? r->job.decision : "connector", r);
		return NEED_NONE;
	}
	model_put_connector(&t->m, r->connector);
	model_message(&t->m, t->now_ms, false, "%s %s", r->connector->name != NULL ?
	    r->connector->name : r->job.id, r->connector->enabled ? "enabled" : "disabled");
	return NEED_NONE;
}

static unsigned
res_connector_test(struct tui *t, const struct job_result *r)
{
	char text[600];

	if (r->code != TD_OK) {
		app_fail(t, "test failed", r);
		snprintf(text, sizeof text, "error: %s", r->err.code_name);
	} else if (r->connector_test->success) {
		snprintf(text, sizeof text, "ok, %ld tools", r->connector_test->tool_count);
		model_message(&t->m, t->now_ms, false, "test %s: ok, %ld tools: %s", r->job.id,
		    r->connector_test->tool_count, r->connector_test->message != NULL ?
		    r->connector_test->message : "");
	} else {
		snprintf(text, sizeof text, "failed: %s", r->connector_test->message != NULL ?
		    r->connector_test->message : "?");
		model_message(&t->m, t->now_ms, true, "test %s failed: %s", r->job.id,
		    r->connector_test->message != NULL ? r->connector_test->message : "?");
	}
	model_connector_tested(&t->m, r->job.id, text);
	return NEED_NONE;
}

static unsigned
res_connector_login(struct tui *t, const struct job_result *r)
{
	const struct m_connector *c = NULL;
	char text[600];

	for (size_t i = 0; i < t->m.connector_count; i++)
		if (strcmp(t->m.connectors[i].id, r->job.id) == 0)
			c = &t->m.connectors[i];
	if (r->code != TD_OK) {
		app_fail(t, "sign-in failed", r);
		snprintf(text, sizeof text, "sign-in failed: %s", r->err.message[0] != '\0' ?
		    r->err.message : r->err.code_name);
	} else if (r->login_url == NULL) {
		snprintf(text, sizeof text, "signed in");
		model_message(&t->m, t->now_ms, false, "%s: signed in with the client's "
		    "credentials", r->job.id);
	} else {
		snprintf(text, sizeof text, "sign-in begun: open the URL");
		modal_open(t, MODAL_SIGNIN);
		t->modal_url = xstrdup(r->login_url);
		snprintf(t->modal_name, sizeof t->modal_name, "%s",
		    c != NULL && c->name != NULL ? c->name : r->job.id);
	}
	model_connector_tested(&t->m, r->job.id, text);
	return NEED_NONE;
}

static unsigned
res_artifacts(struct tui *t, const struct job_result *r)
{
	model_set_artifacts(&t->m, r->job.id, r->artifacts);
	return NEED_NONE;
}

static unsigned
res_plan(struct tui *t, const struct job_result *r)
{
	model_set_plan(&t->m, r->job.id, r->plan);
	return NEED_NONE;
}

static unsigned
res_permissions(struct tui *t, const struct job_result *r)
{
	model_set_permissions(&t->m, r->permissions);
	return NEED_NONE;
}

static unsigned
res_history(struct tui *t, const struct job_result *r)
{
	struct job next;

	if (r->code != TD_OK) {
		model_log_history(&t->m, r->job.id, NULL, 0, true);
		app_read_failed(t, r);
		return NEED_NONE;
	}
	model_log_history(&t->m, r->job.id, r->events, r->event_count, !r->more);
	if (r->more && r->event_count > 0 && t->m.log.scope_id != NULL &&
	    strcmp(t->m.log.scope_id, r->job.id) == 0) {
		next = r->job;
		worker_event_id(r->events[r->event_count - 1], next.after, sizeof next.after);
		tui_submit(t, &next);
	}
	return NEED_NONE;
}

static unsigned
res_start_run(struct tui *t, const struct job_result *r)
{
	char key[32];

	if (r->code != TD_OK) {
		/* The whole start is kept: n (or N) in that project offers it again. */
		job_clear(&t->draft);
		job_copy(&t->draft, &r->job);
		t->has_draft = true;
		if (keys_action_key(r->job.session != NULL ? "continue" : "new-run", key,
		    sizeof key) == NULL)
			snprintf(key, sizeof key, "%s", r->job.session != NULL ? ":continue" : ":new");
		model_message(&t->m, t->now_ms, true, "start failed (%s reopens your prompt): %s: %s",
		    key, r->err.code_name, r->err.message);
		return NEED_NONE;
	}
	job_clear(&t->draft);
	t->has_draft = false;
	if (r->attempts != NULL) {
		const struct td_attempt *first = r->attempts->count > 0 ? &r->attempts->attempts[0] :
		    NULL;

		model_message(&t->m, t->now_ms, false, "started %zu attempts (%s) in %s",
		    r->attempts->count, r->attempts->id, r->attempts->cwd != NULL ?
		    r->attempts->cwd : "?");
		/* Its runs are attempts: the group shows with the first one's changes. */
		model_attempts_event(&t->m, r->attempts->json);
		snprintf(t->want_session, sizeof t->want_session, "%s",
		    first != NULL && first->session_id != NULL ? first->session_id : "");
		snprintf(t->want_run, sizeof t->want_run, "%s",
		    first != NULL && first->run_id != NULL ? first->run_id : "");
		return NEED_SESSIONS | NEED_PROJECT_RUNS | NEED_ATTEMPTS;
	}
	model_message(&t->m, t->now_ms, false, "started %s", r->run->id);
	snprintf(t->want_session, sizeof t->want_session, "%s",
	    r->run->session_id != NULL ? r->run->session_id : "");
	snprintf(t->want_run, sizeof t->want_run, "%s", r->run->id != NULL ? r->run->id : "");
	return model_put_run(&t->m, r->run) | NEED_SESSIONS | NEED_PROJECT_RUNS;
}

static unsigned
res_cancel_run(struct tui *t, const struct job_result *r)
{
	if (r->code != TD_OK) {
		app_fail(t, "cancel failed", r);
		return NEED_NONE;
	}
	model_message(&t->m, t->now_ms, false, "cancel requested: %s", r->run->id);
	return model_put_run(&t->m, r->run);
}

static unsigned
res_archive(struct tui *t, const struct job_result *r)
{
	bool archive = r->job.decision != NULL && strcmp(r->job.decision, "archive") == 0;
	const char *k;
	char key[32];

	if (r->code != TD_OK) {
		app_fail(t, archive ? "archive failed" : "unarchive failed", r);
		return NEED_NONE;
	}
	k = keys_action_key("show-archived", key, sizeof key);
	if (archive && !t->m.show_archived && k != NULL)
		model_message(&t->m, t->now_ms, false, "archived %s (%s shows the archived ones)",
		    r->job.text != NULL ? r->job.text : r->job.id, k);
	else
		model_message(&t->m, t->now_ms, false, "%s %s", archive ? "archived" : "unarchived",
		    r->job.text != NULL ? r->job.text : r->job.id);
	return r->job.run_scope ? NEED_SESSIONS : NEED_PROJECTS;
}

static unsigned
res_delete_session(struct tui *t, const struct job_result *r)
{
	if (r->code != TD_OK) {
		app_fail(t, "delete failed", r);
		return NEED_NONE;
	}
	model_message(&t->m, t->now_ms, false, r->deleting ? "deleting session %s: its "
	    "runs are cancelled, it goes when they have ended" : "deleted session %s",
	    r->job.text != NULL ? r->job.text : r->job.id);
	return NEED_SESSIONS;
}

static unsigned
res_plan_respond(struct tui *t, const struct job_result *r)
{
	static const struct {
		const char *decision, *done;
	} said[] = {
		{ "approve", "plan approved" },
		{ "revise", "feedback sent: the agent revises the plan" },
		{ "reject", "plan rejected: the run is cancelled" },
	};
	const char *done = "plan answered";

	if (r->code != TD_OK) {
		app_fail(t, r->job.decision != NULL ? r->job.decision : "plan", r);
		return NEED_PLAN;
	}
	for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
		if (r->job.decision != NULL && strcmp(r->job.decision, said[i].decision) == 0)
			done = said[i].done;
	}
	model_message(&t->m, t->now_ms, false, "%s", done);
	model_set_plan(&t->m, r->job.id, r->plan);
	return NEED_RUNS | NEED_PROJECT_RUNS;
}

static unsigned
res_permission_answer(struct tui *t, const struct job_result *r)
{
	if (r->code != TD_OK)
		app_fail(t, "answer failed", r);
	else if (r->permission != NULL)
		model_message(&t->m, t->now_ms, false, "%s %s for %s: %s",
		    r->permission->tool != NULL ? r->permission->tool : "prompt", r->job.id,
		    r->permission->run_id != NULL ? r->permission->run_id : "-",
		    r->permission->status != NULL ? r->permission->status : r->job.decision);
	return NEED_PERMISSIONS;
}

static unsigned
res_download(struct tui *t, const struct job_result *r)
{
	if (r->progress) {
		model_download_progress(&t->m, r->job.label, r->verifying, r->done, r->total);
		return NEED_NONE;
	}
	model_download_end(&t->m);
	if (r->job.path != NULL)
		tui_download_track(t, r->job.path, true);
	if (r->code == TD_OK)
		model_message(&t->m, t->now_ms, false, "download complete: %s", r->job.path);
	else
		model_message(&t->m, t->now_ms, true,
		    "download failed: run %s artifact %s: %s: %s",
		    r->job.run_id != NULL ? r->job.run_id : "-", r->job.id, r->err.code_name,
		    r->err.message);
	return NEED_NONE;
}

static unsigned
res_changes(struct tui *t, const struct job_result *r)
{
	if (r->code != TD_OK)
		app_read_failed(t, r);
	model_set_changes(&t->m, r->job.id, r->code == TD_OK ? r->changes : NULL);
	return NEED_NONE;
}

static unsigned
res_diff(struct tui *t, const struct job_result *r)
{
	if (r->job.decision != NULL && strcmp(r->job.decision, "compare") == 0) {
		model_set_attempt_diff(&t->m, r->job.id, r->code == TD_OK ? r->diff : NULL);
		return NEED_NONE;
	}
	model_set_diff(&t->m, r->job.id, r->job.path, r->code == TD_OK ? r->diff : NULL);
	return NEED_NONE;
}

/* Files of a revert's conflicts, "a (reason), b (reason)", into buf. */
static void
app_conflicts_text(const struct td_revert *rv, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; rv != NULL && i < rv->conflict_count && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s (%s)", i > 0 ? ", " : "",
		    rv->conflicts[i].path, rv->conflicts[i].reason != NULL ?
		    rv->conflicts[i].reason : "changed since");
}

static unsigned
res_revert(struct tui *t, const struct job_result *r)
{
	struct job force = { .kind = JOB_REVERT, .id = r->job.id, .force = true };
	char files[512];

	if (r->code == TD_REVERT_CONFLICT && !r->job.force) {
		app_conflicts_text(r->revert, files, sizeof files);
		modal_confirm(t, &force, "Nothing was reverted: %zu file%s changed since the run: "
		    "%s. Overwrite %s with what %s before the run (force)? [y/N]",
		    r->revert != NULL ? r->revert->conflict_count : 0,
		    r->revert != NULL && r->revert->conflict_count == 1 ? "" : "s", files,
		    r->revert != NULL && r->revert->conflict_count == 1 ? "it" : "them",
		    r->revert != NULL && r->revert->conflict_count == 1 ? "it was" : "they were");
		return NEED_NONE;
	}
	if (r->code != TD_OK) {
		app_fail(t, "revert failed", r);
		return NEED_CHANGES;
	}
	model_message(&t->m, t->now_ms, false, "reverted %s: %zu file%s put back", r->job.id,
	    r->revert->reverted_count, r->revert->reverted_count == 1 ? "" : "s");
	return NEED_CHANGES;
}

/* The models the model field of the new-run editor offers, for the provider asked about. */
static unsigned
res_models(struct tui *t, const struct job_result *r)
{
	struct job_result *own = (struct job_result *)r;

	if (strcmp(r->job.id, t->models_for) != 0)
		return NEED_NONE;
	td_model_list_free(t->models);
	t->models = own->models;
	own->models = NULL;
	return NEED_NONE;
}

static unsigned
res_attempts(struct tui *t, const struct job_result *r)
{
	if (r->code != TD_OK)
		app_read_failed(t, r);
	model_set_attempts(&t->m, r->job.id, r->code == TD_OK ? r->attempts : NULL);
	return NEED_NONE;
}

/* An apply: what went where, or why nothing changed (a conflict says so in a box). */
static unsigned
res_apply_attempt(struct tui *t, const struct job_result *r)
{
	if (r->code == TD_ATTEMPT_CONFLICT) {
		modal_notice(t, "Nothing was applied: the changes of %s do not apply to %s as it "
		    "is now (those lines changed since). %s", r->job.id,
		    t->m.attempts.cwd != NULL ? t->m.attempts.cwd : "the directory",
		    r->err.message);
		return NEED_ATTEMPTS;
	}
	if (r->code != TD_OK) {
		app_fail(t, "apply failed", r);
		return NEED_ATTEMPTS;
	}
	model_set_attempts(&t->m, r->attempts->id, r->attempts);
	model_message(&t->m, t->now_ms, false, "applied %s into %s", r->job.id,
	    r->attempts->cwd != NULL ? r->attempts->cwd : "its directory");
	return NEED_ATTEMPTS | NEED_CHANGES;
}

/* What each finished job does to the model; reads need TD_OK. */
static const struct {
	unsigned (*fn)(struct tui *t, const struct job_result *r);
	bool read;		/* a plain read: failures only say so */
} app_results[] = {
	[JOB_DOCTOR] = { res_doctor, false },
	[JOB_PROJECTS] = { res_projects, true },
	[JOB_SESSIONS] = { res_sessions, true },
	[JOB_RUNS] = { res_runs, true },
	[JOB_RUN] = { res_run, true },
	[JOB_PROJECT_RUNS] = { res_project_runs, true },
	[JOB_ARTIFACTS] = { res_artifacts, true },
	[JOB_PLAN] = { res_plan, false },
	[JOB_PERMISSIONS] = { res_permissions, true },
	[JOB_HISTORY] = { res_history, false },
	[JOB_START_RUN] = { res_start_run, false },
	[JOB_CANCEL_RUN] = { res_cancel_run, false },
	[JOB_PLAN_RESPOND] = { res_plan_respond, false },
	[JOB_PERMISSION_ANSWER] = { res_permission_answer, false },
	[JOB_DOWNLOAD] = { res_download, false },
	[JOB_ATTENTION] = { res_attention, true },
	[JOB_CONNECTORS] = { res_connectors, true },
	[JOB_CONNECTOR_ENABLE] = { res_connector_enable, false },
	[JOB_CONNECTOR_TEST] = { res_connector_test, false },
	[JOB_CONNECTOR_LOGIN] = { res_connector_login, false },
	[JOB_BULK] = { tui_bulk_result, false },
	[JOB_OPEN_ARTIFACT] = { tui_open_artifact_result, false },
	[JOB_CHANGES] = { res_changes, false },
	[JOB_DIFF] = { res_diff, false },
	[JOB_REVERT] = { res_revert, false },
	[JOB_ATTEMPTS] = { res_attempts, false },
	[JOB_APPLY_ATTEMPT] = { res_apply_attempt, false },
	[JOB_ARCHIVE] = { res_archive, false },
	[JOB_DELETE_SESSION] = { res_delete_session, false },
	[JOB_MODELS] = { res_models, true },
};

static void
app_result(struct tui *t, const struct job_result *r)
{
	if ((size_t)r->job.kind >= sizeof app_results / sizeof app_results[0])
		return;
	if (r->job.kind == JOB_PLAN && r->code != TD_OK && r->code != TD_NOT_FOUND) {
		app_read_failed(t, r);
		return;
	}
	if (r->job.kind == JOB_RUN && r->code != TD_OK && r->job.id != NULL &&
	    strcmp(r->job.id, t->jump_run) == 0) {
		t->jump_run[0] = '\0';
		app_fail(t, "run", r);
		t->dirty = true;
		return;
	}
	if (app_results[r->job.kind].read && r->code != TD_OK) {
		app_read_failed(t, r);
		return;
	}
	tui_need(t, app_results[r->job.kind].fn(t, r));
	tui_select_wanted(t);
	t->dirty = true;
}

/* Submits a job of kind for id (NULL: nothing to ask for). */
static void
app_job(struct tui *t, enum job_kind kind, const char *id)
{
	struct job job = { .kind = kind };

	if (id == NULL && kind != JOB_PROJECTS && kind != JOB_PERMISSIONS &&
	    kind != JOB_ATTENTION && kind != JOB_CONNECTORS)
		return;
	job.id = (char *)id;
	job.archived = t->m.show_archived;
	tui_submit(t, &job);
}

/* The Changes view: the selected run's list when it is another run or changed, then
 * the selected file's diff. */
static void
app_flush_changes(struct tui *t, unsigned need)
{
	const char *want = model_changes_want(&t->m), *path;
	struct job job = { .kind = JOB_DIFF };

	if (want == NULL)
		return;
	if ((need & (NEED_CHANGES | NEED_RUNS)) || t->m.changes.run_id == NULL ||
	    strcmp(want, t->m.changes.run_id) != 0) {
		model_changes_ask(&t->m, want);
		app_job(t, JOB_CHANGES, want);
	}
	if ((path = model_changes_diff_due(&t->m)) != NULL) {
		job.id = t->m.changes.run_id;
		job.path = (char *)path;
		tui_submit(t, &job);
	}
}

/* The attempt group of the selected run: read when it is another or changed. */
static void
app_flush_attempts(struct tui *t, unsigned need)
{
	const char *want = model_attempts_want(&t->m);

	if (want == NULL)
		return;
	if ((need & NEED_ATTEMPTS) || t->m.attempts.group_id == NULL ||
	    strcmp(want, t->m.attempts.group_id) != 0) {
		model_attempts_ask(&t->m, want);
		app_job(t, JOB_ATTEMPTS, want);
	}
}

/* Turns the NEED_* bits collected in this pass into jobs. */
static void
app_flush_need(struct tui *t)
{
	const struct m_project *p = model_project(&t->m);
	const struct m_session *s = model_session(&t->m);
	unsigned need = t->need;
	struct job job = { .kind = JOB_HISTORY };

	t->need = 0;
	if (need & NEED_PROJECTS) {
		app_job(t, JOB_PROJECTS, NULL);
		app_job(t, JOB_ATTENTION, NULL);
		if (t->m.right == RIGHT_CONNECTORS)
			app_job(t, JOB_CONNECTORS, NULL);
	}
	if (need & NEED_PERMISSIONS)
		app_job(t, JOB_PERMISSIONS, NULL);
	if (need & NEED_SESSIONS)
		app_job(t, JOB_SESSIONS, p != NULL ? p->id : NULL);
	if (need & NEED_PROJECT_RUNS)
		app_job(t, JOB_PROJECT_RUNS, p != NULL ? p->id : NULL);
	if (need & NEED_RUNS)
		app_job(t, JOB_RUNS, s != NULL ? s->id : NULL);
	else if (need & NEED_NEW_RUNS) {
		for (size_t i = 0; i < t->m.run_count; i++) {
			if (t->m.runs[i].prompt == NULL || t->m.runs[i].tokens < 0)
				app_job(t, JOB_RUN, t->m.runs[i].id);
		}
	}
	/* A run of another session that ended: its tokens count in its session's row. */
	if (need & NEED_NEW_RUNS) {
		for (size_t i = 0; i < t->m.project_run_count; i++) {
			const struct m_run *r = &t->m.project_runs[i];

			if (r->tokens < 0 && r->id != NULL && (s == NULL || r->session_id == NULL ||
			    strcmp(r->session_id, s->id) != 0))
				app_job(t, JOB_RUN, r->id);
		}
	}
	if (need & NEED_ARTIFACTS)
		app_job(t, JOB_ARTIFACTS, s != NULL ? s->id : NULL);
	if (need & NEED_PLAN)
		app_job(t, JOB_PLAN, s != NULL ? s->id : NULL);
	app_flush_changes(t, need);
	app_flush_attempts(t, need);
	if ((need & NEED_HISTORY) && t->m.log.scope_id != NULL) {
		job.id = t->m.log.scope_id;
		job.run_scope = t->m.log.run_scope;
		tui_submit(t, &job);
	}
}

static void
app_results_read(struct tui *t)
{
	struct job_result *r;

	for (int i = 0; i < APP_RESULT_BATCH && (r = worker_take(t->w)) != NULL; i++) {
		app_result(t, r);
		tui_detail_result(t, r);
		job_result_free(r);
	}
}

/* --- The event stream ---------------------------------------------------- */

/* The stream broke (or never came up; why in err, or NULL): close it and
 * retry after the backoff. */
static void
app_stream_fail(struct app *a, const struct td_error *err)
{
	struct tui *t = a->t;
	char *id;
	int delay;

	model_conn_problem(&t->m, err != NULL && err->code == TD_UNAUTHORIZED ?
	    PROBLEM_UNAUTHORIZED : PROBLEM_UNREACHABLE);
	if (a->ev != NULL) {
		if ((id = td_events_last_id(a->ev)) != NULL) {
			free(a->last_id);
			a->last_id = id;
		}
		td_events_close(a->ev);
		a->ev = NULL;
	}
	delay = app_backoff_s[a->attempt < 4 ? a->attempt : 4];
	a->attempt++;
	a->reconnect = true;
	model_conn(&t->m, CONN_RECONNECTING, t->now_ms + delay * 1000LL);
	t->dirty = true;
}

/*
 * Before a reconnect: finds the service again, as `taskdeck events` does.  A
 * restarted service usually listens on another port (and a refused token may
 * have been replaced in the token file).  When the discovery file names
 * another URL, or the token was refused, the client and its worker are made
 * anew; jobs still running on the old ones are cancelled (everything is read
 * again once live).  No service found: the old client goes on failing.
 */
static void
app_rediscover(struct app *a)
{
	struct tui *t = a->t;
	struct td_connect_options o = { .request_timeout_ms = t->opt.timeout_ms };
	struct td_client *fresh;
	struct worker *w;
	struct td_error err;

	if (td_connect(&fresh, &o, &err) != TD_OK)
		return;
	if (t->m.conn_problem != PROBLEM_UNAUTHORIZED &&
	    strcmp(td_client_base_url(fresh), td_client_base_url(t->client)) == 0) {
		td_client_free(fresh);
		return;
	}
	if ((w = worker_new(fresh)) == NULL) {
		td_client_free(fresh);
		return;
	}
	worker_free(t->w);
	t->w = w;
	for (size_t i = 0; i < sizeof t->downloading / sizeof t->downloading[0]; i++) {
		free(t->downloading[i]);
		t->downloading[i] = NULL;
	}
	if (t->m.download_active) {
		model_download_end(&t->m);
		model_message(&t->m, t->now_ms, true,
		    "download interrupted: the service moved; Enter on the artifact resumes it");
	}
	if (t->own_client)
		td_client_free(t->client);
	t->client = fresh;
	t->own_client = true;
}

/* Subscribes to every event, resuming after the last one seen. */
static void
app_stream_open(struct app *a)
{
	struct td_events_options o = { .last_event_id = a->last_id };
	struct td_error err;

	if (a->reconnect)
		app_rediscover(a);
	if (td_events_open(a->t->client, NULL, &o, &a->ev, &err) != TD_OK) {
		a->ev = NULL;
		app_stream_fail(a, &err);
		return;
	}
	model_conn(&a->t->m, CONN_CONNECTING, 0);
	a->check_ms = a->t->now_ms + APP_CONNECT_CHECK_MS;
	a->t->dirty = true;
}

/* The stream is up: after a failure, everything shown is read again. */
static void
app_stream_live(struct app *a)
{
	struct tui *t = a->t;

	model_conn(&t->m, CONN_LIVE, 0);
	a->attempt = 0;
	tui_reread(t);
	if (a->reconnect)
		model_resynced(&t->m, t->now_ms);
	a->reconnect = false;
	a->doctor_ms = t->now_ms + APP_DOCTOR_MS;
	t->dirty = true;
}

/* Takes up to a batch of events from the stream. */
static void
app_events_read(struct app *a)
{
	struct tui *t = a->t;
	struct td_event *e;
	struct td_error err;
	enum td_code rc = TD_OK;

	for (int i = 0; i < APP_EVENT_BATCH && a->ev != NULL; i++) {
		rc = td_events_next(a->ev, 0, &e, &err);
		if (rc != TD_OK)
			break;
		if (t->m.conn == CONN_CONNECTING)
			app_stream_live(a);
		tui_need(t, model_apply_event(&t->m, e));
		tui_detail_event(t, e);
		if (e->type != NULL && strcmp(e->type, "stream.resync-required") == 0) {
			model_resynced(&t->m, t->now_ms);
			tui_need(t, NEED_EVERYTHING);
		}
		td_event_free(e);
	}
	if (rc != TD_OK && rc != TD_TIMEOUT)
		app_stream_fail(a, &err);
}

/* Timers: the connecting check, the reconnect, the doctor. */
static void
app_timers(struct app *a)
{
	struct tui *t = a->t;
	struct td_error err;
	enum td_code rc;
	struct job job = { .kind = JOB_DOCTOR };

	if (t->m.conn == CONN_CONNECTING && a->ev != NULL && t->now_ms >= a->check_ms) {
		rc = td_events_ready(a->ev, 0, &err);
		if (rc == TD_OK)
			app_stream_live(a);
		else if (rc == TD_TIMEOUT)
			a->check_ms = t->now_ms + APP_CONNECT_CHECK_MS;
		else
			app_stream_fail(a, &err);
	}
	if (t->m.conn == CONN_RECONNECTING && t->now_ms >= t->m.conn_retry_at_ms)
		app_stream_open(a);
	if (t->now_ms >= a->doctor_ms) {
		tui_submit(t, &job);
		a->doctor_ms = t->now_ms + APP_DOCTOR_MS;
	}
	if (a->visual_ms > 0 && t->now_ms >= a->visual_ms)
		t->dirty = true;
}

/* When what is drawn changes by itself: message expiry, countdowns. */
static long long
app_visual_deadline(const struct tui *t)
{
	const struct model *m = &t->m;
	long long d = 0, left;

	if (m->message[0] != '\0' && t->now_ms < m->message_until_ms)
		d = m->message_until_ms;
	if (m->resynced_at_ms > 0 && t->now_ms < m->resynced_at_ms + 5000 &&
	    (d == 0 || m->resynced_at_ms + 5000 < d))
		d = m->resynced_at_ms + 5000;
	/* Ages and durations on the screen move on: once a second, as a countdown. */
	if (t->ages_shown && (d == 0 || t->now_ms + 1000 < d))
		d = t->now_ms + 1000;
	if (m->conn == CONN_RECONNECTING) {
		left = m->conn_retry_at_ms - t->now_ms;
		left = left > 0 ? t->now_ms + (left - 1) % 1000 + 1 : t->now_ms;
		if (d == 0 || left < d)
			d = left;
	}
	return d;
}

/* Milliseconds poll() may sleep: up to the nearest deadline; -1 for none. */
static int
app_timeout(const struct app *a)
{
	const struct tui *t = a->t;
	long long d = a->doctor_ms;

	if (t->m.conn == CONN_CONNECTING && a->ev != NULL && a->check_ms < d)
		d = a->check_ms;
	if (t->m.conn == CONN_RECONNECTING && t->m.conn_retry_at_ms < d)
		d = t->m.conn_retry_at_ms;
	if (a->visual_ms > 0 && a->visual_ms < d)
		d = a->visual_ms;
	if (t->dirty || t->m.dirty) {
		if (a->last_draw_ms + APP_FRAME_MS < d)
			d = a->last_draw_ms + APP_FRAME_MS;
	}
	d -= t->now_ms;
	if (d < 0)
		return 0;
	return d > INT_MAX ? INT_MAX : (int)d;
}

/* --- Terminal ------------------------------------------------------------ */

/* Takes the new size of the terminal after SIGWINCH. */
static void
app_resize(struct tui *t)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resizeterm(ws.ws_row, ws.ws_col);
	clear();
	t->dirty = true;
}

/* Handles the signals read from the signalfd. */
static void
app_signals(struct app *a)
{
	struct signalfd_siginfo si;

	while (read(a->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGWINCH)
			app_resize(a->t);
		else
			a->t->quit = true;
	}
}

/* Sets the terminal up: keys unbuffered, no echo, colours, mouse. */
static void
app_screen(struct tui *t)
{
	const char *no_color = getenv("NO_COLOR");
	bool utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	bool plain = t->opt.monochrome || (no_color != NULL && *no_color != '\0');

	initscr();
	cbreak();
	noecho();
	nonl();
	intrflush(stdscr, FALSE);
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	t->color = !plain && has_colors();
	t->ascii = plain || !utf8;
	t->utf8 = utf8;
	draw_init(t);
	if (!t->opt.no_mouse) {
		/*
		 * Every button event, releases included: ncurses drops an event
		 * outside the mask and goes back to a blocking read for the next
		 * key, which would stop the loop until one came (the release that
		 * follows every press).  keys_mouse() ignores what it does not use.
		 */
		mousemask(ALL_MOUSE_EVENTS, NULL);
		mouseinterval(0);
	}
}

/* The bell and the window title when runs start needing the user (options). */
static void
app_notify(struct tui *t)
{
	long n;
	char seq[96];

	if (t->opt.bell && t->m.attention_seen > t->bell_seen) {
		if (t->m.conn == CONN_LIVE)
			beep();
		t->bell_seen = t->m.attention_seen;
	}
	if (!t->opt.title)
		return;
	n = t->m.conn == CONN_LIVE ? (long)model_attention_count(&t->m) : 0;
	if (n == t->title_count)
		return;
	t->title_count = n;
	/* OSC 2, ended by ST (not BEL, which is the bell). */
	if (n > 0)
		snprintf(seq, sizeof seq, "\033]2;taskdeck: %ld need you\033\\", n);
	else
		snprintf(seq, sizeof seq, "\033]2;taskdeck\033\\");
	fflush(stdout);
	if (write(STDOUT_FILENO, seq, strlen(seq)) < 0)
		t->opt.title = false;
}

/* One pass's draw, at most one per APP_FRAME_MS unless now (a key's answer). */
static void
app_draw(struct app *a, bool now)
{
	struct tui *t = a->t;

	if (!(t->dirty || t->m.dirty) || (!now && t->now_ms < a->last_draw_ms + APP_FRAME_MS))
		return;
	t->dirty = t->m.dirty = false;
	draw_screen(t);
	if (!t->too_small)
		modal_draw(t);
	screen_flush(t);
	app_notify(t);
	a->last_draw_ms = t->now_ms;
	a->visual_ms = app_visual_deadline(t);
}

/* The loop; returns when q, Ctrl-C or a signal ends it. */
static void
app_loop(struct app *a)
{
	struct tui *t = a->t;
	struct pollfd fds[4];
	int n, evi;

	while (!t->quit) {
		fds[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = worker_fd(t->w), .events = POLLIN };
		fds[2] = (struct pollfd){ .fd = a->sigfd, .events = POLLIN };
		n = 3;
		evi = -1;
		if (a->ev != NULL && t->m.conn != CONN_RECONNECTING) {
			evi = n;
			fds[n++] = (struct pollfd){ .fd = td_events_fd(a->ev), .events = POLLIN };
		}
		t->now_ms = clock_mono_ms();
		if (poll(fds, (nfds_t)n, app_timeout(a)) < 0 && errno != EINTR)
			break;
		t->now_ms = clock_mono_ms();
		if (fds[2].revents & POLLIN)
			app_signals(a);
		/* A key's answer is drawn at once, before a batch of events and
		 * whatever the frame limit says: keys and clicks stay quick while a
		 * run streams. */
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			app_keys_read(t);
			app_flush_need(t);
			app_draw(a, true);
		}
		if (fds[0].revents & (POLLHUP | POLLERR))
			t->quit = true;
		if (fds[1].revents & POLLIN)
			app_results_read(t);
		if (evi >= 0 && (fds[evi].revents & (POLLIN | POLLHUP | POLLERR)))
			app_events_read(a);
		app_timers(a);
		app_flush_need(t);
		palette_tick(t);
		app_draw(a, false);
	}
}

int
tui_main(struct td_client *client, const struct tui_options *o)
{
	struct tui *t = xcalloc(1, sizeof *t);
	struct app a = { .t = t, .sigfd = -1 };
	sigset_t set, old;

	setlocale(LC_ALL, "");
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	a.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	t->client = client;
	t->opt = *o;
	t->cur_y = t->cur_x = -1;
	t->title_count = -1;
	if (getcwd(t->download_dir, sizeof t->download_dir) == NULL)
		snprintf(t->download_dir, sizeof t->download_dir, ".");
	model_init(&t->m);
	t->w = worker_new(client);
	if (a.sigfd < 0 || t->w == NULL) {
		fprintf(stderr, "taskdeck: cannot start the dashboard: %s\n", strerror(errno));
		worker_free(t->w);
		model_free(&t->m);
		if (a.sigfd >= 0)
			close(a.sigfd);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		free(t);
		return 1;
	}
	keys_init();
	app_screen(t);
	t->now_ms = clock_mono_ms();
	palette_init(t);
	/* Said where it is seen; stderr (shown after q) has every line. */
	if (o->config_problems == 1)
		model_message(&t->m, t->now_ms, true, "%s", o->config_problem);
	else if (o->config_problems > 1)
		model_message(&t->m, t->now_ms, true, "%d lines wrong (all on stderr after q): %s",
		    o->config_problems, o->config_problem);
	a.doctor_ms = t->now_ms + APP_DOCTOR_MS;
	tui_reread(t);
	app_stream_open(&a);
	app_flush_need(t);
	t->dirty = true;
	app_draw(&a, true);
	app_loop(&a);
	endwin();
	td_events_close(a.ev);
	worker_free(t->w);
	modal_free(t);
	tui_detail_free(t);
	palette_free(t);
	td_model_list_free(t->models);
	job_clear(&t->draft);
	for (size_t i = 0; i < sizeof t->downloading / sizeof t->downloading[0]; i++)
		free(t->downloading[i]);
	model_free(&t->m);
	if (t->own_client)
		td_client_free(t->client);
	free(a.last_id);
	close(a.sigfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(t);
	return 0;
}
