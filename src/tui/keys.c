/* The keys of the dashboard: one table drives dispatch and the help; the mouse. */
#define NCURSES_WIDECHAR 1
#include <ctype.h>
#include <curses.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <unistd.h>
#include <wchar.h>

#include "buf.h"

#include "tui/tui.h"
#include "xalloc.h"

/* Moves the focused pane by delta rows. */
static unsigned
key_move(struct tui *t, long delta)
{
	tui_need(t, model_move(&t->m, delta, tui_page_rows(t)));
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_up(struct tui *t, int key)
{
	(void)key;
	return key_move(t, -1);
}

static unsigned
key_down(struct tui *t, int key)
{
	(void)key;
	return key_move(t, 1);
}

static unsigned
key_page_up(struct tui *t, int key)
{
	(void)key;
	return key_move(t, -(long)tui_page_rows(t));
}

static unsigned
key_page_down(struct tui *t, int key)
{
	(void)key;
	return key_move(t, (long)tui_page_rows(t));
}

static unsigned
key_first(struct tui *t, int key)
{
	(void)key;
	return key_move(t, LONG_MIN);
}

static unsigned
key_last(struct tui *t, int key)
{
	unsigned f = key_move(t, LONG_MAX);

	(void)key;
	if (tui_where(t) == W_LOG)
		model_log_follow(&t->m, true);
	return f;
}

static unsigned
key_tab(struct tui *t, int key)
{
	model_focus_next(&t->m, key == TUI_KEY(KEY_BTAB) ? -1 : 1);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_enter(struct tui *t, int key)
{
	(void)key;
	model_focus_next(&t->m, 1);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_download(struct tui *t, int key)
{
	(void)key;
	modal_download(t);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_right(struct tui *t, int key)
{
	struct job job = { .kind = JOB_CONNECTORS };

	if (key == '4')
		tui_submit(t, &job);
	model_show_right(&t->m, (enum right_view)(key - '1'));
	model_focus(&t->m, PANE_RIGHT);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_new_run(struct tui *t, int key)
{
	const struct m_project *p = model_project(&t->m);
	const struct m_session *s = model_session(&t->m);

	if (p == NULL) {
		model_message(&t->m, t->now_ms, true, "no project selected");
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == 'N' && s == NULL) {
		model_message(&t->m, t->now_ms, true, "no session selected");
		return TUI_HANDLED | TUI_REDRAW;
	}
	snprintf(t->modal_id, sizeof t->modal_id, "%s", p->id);
	snprintf(t->modal_name, sizeof t->modal_name, "%s", p->name);
	snprintf(t->modal_session, sizeof t->modal_session, "%s", key == 'N' ? s->id : "");
	modal_open(t, MODAL_PROMPT);
	return TUI_HANDLED | TUI_REDRAW;
}

/* True for a run that has ended. */
static bool
keys_run_final(const struct m_run *r)
{
	return r->status != NULL && (strcmp(r->status, "completed") == 0 ||
	    strcmp(r->status, "failed") == 0 || strcmp(r->status, "cancelled") == 0);
}

static unsigned
key_cancel(struct tui *t, int key)
{
	const struct m_run *r = model_run(&t->m);
	struct job job = { .kind = JOB_CANCEL_RUN };
	char what[512];

	(void)key;
	if (t->m.mark_count > 0)
		return action_bulk(t, "cancel");
	if (r == NULL)
		modal_notice(t, "No run selected: nothing to cancel.");
	else if (keys_run_final(r)) {
		model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
		modal_notice(t, "Nothing to cancel: %s has already %s.", what,
		    strcmp(r->status, "cancelled") == 0 ? "been cancelled" : r->status);
	} else {
		job.id = r->id;
		model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
		modal_confirm(t, &job, "Cancel %s? [y/N]\n%s", what, r->id);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* Appends "label: text" to b when text is set. */
static void
keys_detail(struct buf *b, const char *label, const char *text)
{
	if (text != NULL && *text != '\0')
		buf_printf(b, "%s%s: %s", b->len > 0 ? "\n\n" : "", label, text);
}

/* The last message and the focused item's texts, whole, in a box: what the
 * message line and the rows cut to fit. */
static unsigned
key_details(struct tui *t, int key)
{
	const struct m_run *r = model_run(&t->m);
	const struct m_plan *p = &t->m.plan;
	const struct m_artifact *a = model_artifact(&t->m);
	const struct m_session *s = model_session(&t->m);
	const struct m_project *pr = model_project(&t->m);
	struct buf b;

	(void)key;
	buf_init(&b, 1 << 20);
	keys_detail(&b, "Last message", t->m.message);
	switch (t->m.focus) {
	case PANE_PROJECTS:
		keys_detail(&b, "Project", pr != NULL ? pr->name : NULL);
		break;
	case PANE_SESSIONS:
		keys_detail(&b, "Session", s != NULL ? s->title : NULL);
		break;
	default:
		if (t->m.focus == PANE_RIGHT && t->m.right == RIGHT_PLAN && p->present) {
			keys_detail(&b, "Plan", p->summary);
			for (size_t i = 0; i < p->step_count; i++) {
				buf_printf(&b, "%s%zu. [%s] %s", i == 0 ? "\n\nSteps:\n" : "\n", i + 1,
				    p->steps[i].status != NULL ? p->steps[i].status : "?",
				    p->steps[i].title != NULL ? p->steps[i].title : "");
			}
			keys_detail(&b, "Feedback", p->feedback);
		} else if (t->m.focus == PANE_RIGHT && t->m.right == RIGHT_CHANGES &&
		    model_change(&t->m) != NULL) {
			const struct m_change *f = model_change(&t->m);

			keys_detail(&b, "File", f->path);
			buf_printf(&b, "\n\nChange: %c %s", f->status, f->binary ? "binary" :
			    f->too_large ? "too large" : "");
			if (!f->binary && !f->too_large)
				buf_printf(&b, "+%ld -%ld", f->additions, f->deletions);
			keys_detail(&b, "Run", t->m.changes.run_id);
		} else if (t->m.focus == PANE_RIGHT && t->m.right == RIGHT_ARTIFACTS && a != NULL) {
			keys_detail(&b, "Artifact", a->name);
			keys_detail(&b, "Path", a->path);
		} else if (r != NULL) {
			keys_detail(&b, "Prompt", r->prompt);
			keys_detail(&b, "Status", r->status);
			keys_detail(&b, "Error", r->error_code);
			keys_detail(&b, "Error message", r->error_message);
		}
		break;
	}
	if (b.len == 0)
		buf_printf(&b, "Nothing to show: no message yet and nothing selected.");
	modal_show_text(t, "Details", buf_steal(&b));
	return TUI_HANDLED | TUI_REDRAW;
}

/* Archives (or brings back) the selected project or session, after [y/N]. */
static unsigned
key_archive(struct tui *t, int key)
{
	const struct m_project *p = model_project(&t->m);
	const struct m_session *s = model_session(&t->m);
	bool session = t->m.focus == PANE_SESSIONS, archived;
	struct job job = { .kind = JOB_ARCHIVE, .run_scope = session };
	const char *name, *kind = session ? "session" : "project";
	char other[32];

	(void)key;
	if (session ? s == NULL : p == NULL) {
		model_message(&t->m, t->now_ms, true, "no %s selected", kind);
		return TUI_HANDLED | TUI_REDRAW;
	}
	job.id = session ? s->id : p->id;
	name = session ? (s->title != NULL && s->title[0] != '\0' ? s->title : s->id) : p->name;
	archived = session ? s->archived : p->archived;
	job.decision = (char *)(archived ? "unarchive" : "archive");
	job.text = (char *)name;
	if (keys_action_key("show-archived", other, sizeof other) == NULL)
		other[0] = '\0';
	if (archived)
		modal_confirm(t, &job, "Unarchive %s \"%s\"? It comes back into the list. [y/N]",
		    kind, name);
	else
		modal_confirm(t, &job, "Archive %s \"%s\"? It leaves the list%s%s%s; nothing is "
		    "deleted. [y/N]", kind, name, other[0] != '\0' ? " (" : "", other,
		    other[0] != '\0' ? " shows archived ones)" : "");
	return TUI_HANDLED | TUI_REDRAW;
}

/*
 * Deletes the selected session after a [y/N] that names it, what goes and
 * what stays (an external workspace); a run of it still going is cancelled.
 */
static unsigned
key_delete_session(struct tui *t, int key)
{
	const struct m_session *s = model_session(&t->m);
	struct job job = { .kind = JOB_DELETE_SESSION, .force = true };
	const char *name, *st;
	bool going, managed;

	(void)key;
	if (s == NULL) {
		model_message(&t->m, t->now_ms, true, "no session selected");
		return TUI_HANDLED | TUI_REDRAW;
	}
	name = s->title != NULL && s->title[0] != '\0' ? s->title : s->id;
	st = s->last_run_status;
	going = st != NULL && (strcmp(st, "queued") == 0 || strcmp(st, "running") == 0);
	/* A managed workspace is <data>/workspaces/<session id>. */
	managed = s->cwd != NULL && strlen(s->cwd) > strlen(s->id) &&
	    strcmp(s->cwd + strlen(s->cwd) - strlen(s->id), s->id) == 0 &&
	    strstr(s->cwd, "/workspaces/") != NULL;
	job.id = s->id;
	job.text = (char *)name;
	modal_confirm(t, &job, "Delete session \"%s\" with its runs%s? Their logs, plans, "
	    "artifacts and changes go%s%s. [y/N]", name,
	    going ? " (its run still going is cancelled)" : "",
	    managed ? ", and its workspace; " : "; its workspace ",
	    managed ? "nothing else" : "stays");
	return TUI_HANDLED | TUI_REDRAW;
}

/* Lists the archived projects and sessions too (dimmed), or leaves them out. */
static unsigned
key_show_archived(struct tui *t, int key)
{
	(void)key;
	t->m.show_archived = !t->m.show_archived;
	model_message(&t->m, t->now_ms, false, "archived projects and sessions %s",
	    t->m.show_archived ? "shown (dimmed, [archived])" : "hidden");
	tui_need(t, NEED_PROJECTS | NEED_SESSIONS);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_reread(struct tui *t, int key)
{
	(void)key;
	if (t->m.conn == CONN_RECONNECTING) {
		/* Unreachable: try the service now, not when the backoff ends. */
		model_conn(&t->m, CONN_RECONNECTING, t->now_ms);
		model_message(&t->m, t->now_ms, false, "reconnecting now");
		return TUI_HANDLED | TUI_REDRAW;
	}
	tui_reread(t);
	model_message(&t->m, t->now_ms, false, "re-reading everything");
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_permission(struct tui *t, int key)
{
	(void)key;
	model_permission_show(&t->m);
	if (model_modal_permission(&t->m) == NULL)
		model_message(&t->m, t->now_ms, false, "no permission prompt is pending");
	return TUI_HANDLED | TUI_REDRAW;
}

/* The id the focused pane is about: the selected item, or the log's/plan's run. */
static const char *
keys_focused_id(const struct tui *t, const char **kind)
{
	const struct model *m = &t->m;
	const struct m_run *r = model_run(m);

	switch (tui_where(t)) {
	case W_PROJECTS:
		*kind = "projects";
		return model_project(m) != NULL ? model_project(m)->id : NULL;
	case W_SESSIONS:
		*kind = "sessions";
		return model_session(m) != NULL ? model_session(m)->id : NULL;
	case W_ARTIFACTS:
		*kind = "artifacts";
		return model_artifact(m) != NULL ? model_artifact(m)->id : NULL;
	default:
		*kind = "runs";
		return r != NULL ? r->id : NULL;
	}
}

/* 'y' copies the focused id; 'Y' a CLI command about it. */
static unsigned
key_copy(struct tui *t, int key)
{
	const char *kind, *id = keys_focused_id(t, &kind);
	char text[512];

	if (id == NULL) {
		model_message(&t->m, t->now_ms, true, "nothing selected to copy");
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == 'y')
		snprintf(text, sizeof text, "%s", id);
	else if (strcmp(kind, "artifacts") == 0)
		snprintf(text, sizeof text, "taskdeck artifacts download %s", id);
	else
		snprintf(text, sizeof text, "taskdeck %s show %s", kind, id);
	tui_osc52(text);
	model_message(&t->m, t->now_ms, false, "copied: %s", text);
	return TUI_HANDLED | TUI_REDRAW;
}

/* 'v' in the log: the lines shown (filter applied) in $PAGER (less when unset). */
static unsigned
key_pager(struct tui *t, int key)
{
	char path[4096];
	FILE *fp = tui_temp_file(path, sizeof path, ".log");
	size_t n = model_log_visible(&t->m);

	(void)key;
	if (fp == NULL) {
		model_message(&t->m, t->now_ms, true, "cannot make a temporary file");
		return TUI_HANDLED | TUI_REDRAW;
	}
	for (size_t i = 0; i < n; i++) {
		const struct log_line *l = model_log_line(&t->m, i);

		fprintf(fp, "%s%s%s\n", l->time, l->time[0] != '\0' ? " " : "", l->text);
	}
	fclose(fp);
	tui_external(t, "PAGER", "less", path);
	unlink(path);
	return TUI_HANDLED | TUI_REDRAW;
}

/* 'h' / 'l', Left / Right: the pane to the left / right (as Shift-Tab / Tab). */
static unsigned
key_pane_left(struct tui *t, int key)
{
	(void)key;
	model_focus_next(&t->m, -1);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_pane_right(struct tui *t, int key)
{
	(void)key;
	model_focus_next(&t->m, 1);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_command(struct tui *t, int key)
{
	(void)key;
	modal_open(t, MODAL_COMMAND);
	return TUI_HANDLED | TUI_REDRAW;
}

/* P, S, U: focus Projects, Sessions, Runs (1-4 the right pane). */
static unsigned
key_focus(struct tui *t, int key)
{
	model_focus(&t->m, key == 'P' ? PANE_PROJECTS : key == 'S' ? PANE_SESSIONS : PANE_RUNS);
	return TUI_HANDLED | TUI_REDRAW;
}

/* H: every message of the message line, newest last. */
static unsigned
key_messages(struct tui *t, int key)
{
	(void)key;
	t->messages_top = SIZE_MAX;
	modal_open(t, MODAL_MESSAGES);
	return TUI_HANDLED | TUI_REDRAW;
}

/* ] / [ in a session's Log: the first line of the next / previous run. */
static unsigned
key_run_jump(struct tui *t, int key)
{
	size_t index, total;
	const char *run;
	char id[64];

	if (t->m.log.run_scope) {
		char sk[32], nk[32], pk[32];
		const char *s = keys_action_key("scope", sk, sizeof sk);
		const char *n = keys_action_key("next-run", nk, sizeof nk);
		const char *p = keys_action_key("previous-run", pk, sizeof pk);

		model_message(&t->m, t->now_ms, true, "the Log shows one run: %s shows its session's "
		    "runs, then %s and %s jump between them", s != NULL ? s : "(no key)",
		    n != NULL ? n : "(no key)", p != NULL ? p : "(no key)");
		return TUI_HANDLED | TUI_REDRAW;
	}
	run = model_log_run_jump(&t->m, key == ']' ? 1 : -1, &index, &total);
	if (run == NULL)
		model_message(&t->m, t->now_ms, false, "no %s run in this log (%zu run%s)",
		    key == ']' ? "later" : "earlier", total, total == 1 ? "" : "s");
	else {
		draw_short_id(t, run, id, sizeof id);
		model_message(&t->m, t->now_ms, false, "run %zu of %zu: %s", index, total, id);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* '@': the next run, in any project, that needs the user; its plan or prompt. */
static unsigned
key_attention(struct tui *t, int key)
{
	struct m_attention a;
	bool plan;

	(void)key;
	if (!model_attention_next(&t->m, t->attention_last[0] != '\0' ?
	    t->attention_last : NULL, &a, &plan)) {
		model_message(&t->m, t->now_ms, false, "no run needs you");
		return TUI_HANDLED | TUI_REDRAW;
	}
	snprintf(t->attention_last, sizeof t->attention_last, "%s", a.run_id);
	tui_jump(t, a.project_id, a.session_id, a.run_id);
	if (plan) {
		model_show_right(&t->m, RIGHT_PLAN);
		model_focus(&t->m, PANE_RIGHT);
		model_message(&t->m, t->now_ms, false, "%s waits for a plan decision", a.run_id);
	} else {
		model_focus(&t->m, PANE_RUNS);
		model_permission_show(&t->m);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_help(struct tui *t, int key)
{
	(void)key;
	modal_open(t, MODAL_HELP);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_quit(struct tui *t, int key)
{
	(void)key;
	t->quit = true;
	return TUI_HANDLED | TUI_QUIT;
}

static unsigned
key_filter(struct tui *t, int key)
{
	(void)key;
	modal_open(t, MODAL_FILTER);
	return TUI_HANDLED | TUI_REDRAW;
}

/* 's' in Projects, Sessions, Runs: the next order (newest, status, name). */
static unsigned
key_sort(struct tui *t, int key)
{
	char k[32];

	(void)key;
	model_list_sort_next(&t->m, t->m.focus);
	model_message(&t->m, t->now_ms, false, "%s by %s (%s: the next order)",
	    tui_view(t, t->m.focus)->name, model_sort_name(t->m.sort[t->m.focus]),
	    keys_action_key("sort", k, sizeof k) != NULL ? k : "s");
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_search(struct tui *t, int key)
{
	(void)key;
	modal_open(t, MODAL_SEARCH);
	return TUI_HANDLED | TUI_REDRAW;
}

/* n / N in the Log while a search is active (keys_dispatch passes them on
 * to the new run's rows without one). */
static unsigned
key_search_next(struct tui *t, int key)
{
	modal_search_next(t, key == 'n' ? 1 : -1);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_list_filter(struct tui *t, int key)
{
	(void)key;
	modal_open(t, MODAL_LIST_FILTER);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_follow(struct tui *t, int key)
{
	(void)key;
	model_log_follow(&t->m, !t->m.log.follow);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_wrap(struct tui *t, int key)
{
	(void)key;
	model_log_toggle_wrap(&t->m);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_timestamps(struct tui *t, int key)
{
	(void)key;
	model_log_toggle_timestamps(&t->m);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_scope(struct tui *t, int key)
{
	(void)key;
	tui_need(t, model_log_scope(&t->m, !t->m.log.run_scope));
	return TUI_HANDLED | TUI_REDRAW;
}

/* The plan awaiting a decision, or NULL after saying there is none. */
static const struct m_plan *
keys_pending_plan(struct tui *t)
{
	const struct m_plan *p = &t->m.plan;

	if (!p->present || p->status == NULL || strcmp(p->status, "awaiting-approval") != 0 ||
	    p->session_id == NULL) {
		model_message(&t->m, t->now_ms, true, "no plan is awaiting approval");
		return NULL;
	}
	return p;
}

static unsigned
key_plan(struct tui *t, int key)
{
	const struct m_plan *p = keys_pending_plan(t);
	struct job job = { .kind = JOB_PLAN_RESPOND };
	char what[512];

	if (p == NULL)
		return TUI_HANDLED | TUI_REDRAW;
	job.id = p->session_id;
	job.version = p->version;
	job.revision = p->revision;
	model_describe(&t->m, NULL, p->session_id, p->run_id, what, sizeof what);
	if (key == 'a') {
		job.decision = "approve";
		modal_confirm(t, &job, "Approve plan v%ld r%ld of %s? [y/N]\n%s", p->version,
		    p->revision, what, p->session_id);
	} else if (key == 'x') {
		job.decision = "reject";
		modal_confirm(t, &job, "Reject plan v%ld r%ld of %s? The run will be cancelled. "
		    "[y/N]\n%s", p->version, p->revision, what, p->session_id);
	} else {
		snprintf(t->modal_id, sizeof t->modal_id, "%s", p->session_id);
		t->modal_version = p->version;
		t->modal_revision = p->revision;
		modal_open(t, MODAL_FEEDBACK);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* Space: enable or disable the selected connector; t: test it; L: sign in to it. */
static unsigned
key_connector(struct tui *t, int key)
{
	const struct m_connector *c = model_connector(&t->m);
	struct job job = { .kind = key == 't' ? JOB_CONNECTOR_TEST :
		key == 'L' ? JOB_CONNECTOR_LOGIN : JOB_CONNECTOR_ENABLE };

	if (c == NULL) {
		model_message(&t->m, t->now_ms, true, "no connector selected");
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == 'L' && (c->transport == NULL || strcmp(c->transport, "http") != 0)) {
		model_message(&t->m, t->now_ms, true, "only an http connector signs in");
		return TUI_HANDLED | TUI_REDRAW;
	}
	job.id = c->id;
	job.decision = key != ' ' ? NULL : c->enabled ? "disable" : "enable";
	tui_submit(t, &job);
	if (key == 't') {
		model_connector_tested(&t->m, c->id, "testing...");
		model_message(&t->m, t->now_ms, false, "testing %s (up to a minute)",
		    c->name != NULL ? c->name : c->id);
	} else if (key == 'L') {
		model_connector_tested(&t->m, c->id, "signing in...");
		model_message(&t->m, t->now_ms, false, "signing in to %s: asking its server",
		    c->name != NULL ? c->name : c->id);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* 'R': revert the selected run's changes, after a [y/N] naming the files. */
static unsigned
key_revert(struct tui *t, int key)
{
	const struct m_run *r = model_run(&t->m);
	const struct m_changes *c = &t->m.changes;
	struct job job = { .kind = JOB_REVERT };
	char files[600], what[512];
	size_t n = 0, i;

	(void)key;
	if (r == NULL) {
		modal_notice(t, "No run selected: nothing to revert.");
	} else if (!keys_run_final(r)) {
		model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
		modal_notice(t, "%s is still %s: revert it once it has ended.", what, r->status);
	} else if (c->run_id == NULL || strcmp(c->run_id, r->id) != 0) {
		const char *k = keys_action_key("revert", files, sizeof files);

		model_show_right(&t->m, RIGHT_CHANGES);
		model_message(&t->m, t->now_ms, false, "the changes of %s: %s again reverts them",
		    r->id, k != NULL ? k : "revert");
	} else if (c->reverted_at != NULL) {
		modal_notice(t, "%s is already reverted (at %s): nothing to revert.", r->id,
		    c->reverted_at);
	} else if (c->file_count == 0) {
		model_message(&t->m, t->now_ms, true, c->loading ? "reading the changes of %s" :
		    "%s changed no file: nothing to revert", r->id);
	} else {
		size_t added = 0;

		files[0] = '\0';
		for (i = 0; i < c->file_count; i++)
			added += c->files[i].status == 'A';
		for (i = 0; i < c->file_count && n + 64 < sizeof files; i++)
			n += (size_t)snprintf(files + n, sizeof files - n, "%s%s%s",
			    i > 0 ? ", " : "", c->files[i].path,
			    c->files[i].status == 'A' ? " (deleted)" : "");
		if (i < c->file_count)
			snprintf(files + n, sizeof files - n, " and %zu more", c->file_count - i);
		job.id = r->id;
		model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
		if (added > 0)
			modal_confirm(t, &job, "Revert %s? It puts back %zu file%s as before the run "
			    "and deletes the %zu the run added: %s [y/N]\n%s", what,
			    c->file_count - added, c->file_count - added == 1 ? "" : "s", added, files,
			    r->id);
		else
			modal_confirm(t, &job, "Revert %s? It puts back %zu file%s as before the run: "
			    "%s [y/N]\n%s", what, c->file_count, c->file_count == 1 ? "" : "s", files,
			    r->id);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* 'A': apply the selected run's attempt to the group's directory, after a [y/N] naming it. */
static unsigned
key_apply_attempt(struct tui *t, int key)
{
	const struct m_run *r = model_run(&t->m);
	const struct m_attempts *g = &t->m.attempts;
	const struct m_attempt *a = r != NULL ? model_attempt(&t->m, r->id) : NULL;
	struct job job = { .kind = JOB_APPLY_ATTEMPT };
	char what[512], files[64];

	(void)key;
	if (r == NULL) {
		modal_notice(t, "No run selected: nothing to apply.");
	} else if (!model_is_attempt(&t->m, r->id)) {
		modal_notice(t, "%s is not an attempt of a group: nothing to apply.", r->id);
	} else if (t->m.right != RIGHT_CHANGES || a == NULL) {
		const char *k = keys_action_key("apply-attempt", files, sizeof files);

		model_show_right(&t->m, RIGHT_CHANGES);
		model_message(&t->m, t->now_ms, false, "the attempts of %s's group: %s again "
		    "applies it", r->id, k != NULL ? k : "apply-attempt");
	} else if (g->status == NULL || strcmp(g->status, "active") != 0) {
		modal_notice(t, "The attempts of %s are %s already: nothing to apply.", r->id,
		    g->status != NULL ? g->status : "closed");
	} else if (!keys_run_final(r)) {
		model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
		modal_notice(t, "%s is still %s: apply it once it has ended.", what, r->status);
	} else {
		if (a->measured)
			snprintf(files, sizeof files, "%ld file%s +%ld -%ld", a->files,
			    a->files == 1 ? "" : "s", a->additions, a->deletions);
		else
			snprintf(files, sizeof files, "its changes");
		job.id = r->id;
		modal_confirm(t, &job, "Apply attempt %d (%s, check %s) of %zu: %s into %s? The "
		    "other attempts' worktrees and branches are removed. [y/N]\n%s", a->index,
		    a->model != NULL ? a->model : "the default model",
		    a->check != NULL ? a->check : "-", g->count, files,
		    g->cwd != NULL ? g->cwd : "its directory", r->id);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* '=': the selected run's attempt and the next one of its group, whole diffs side by side. */
static unsigned
key_compare_attempts(struct tui *t, int key)
{
	const struct m_run *r = model_run(&t->m);
	struct job job = { .kind = JOB_DIFF, .decision = "compare" };
	const char *other;

	(void)key;
	if (r == NULL || model_attempt(&t->m, r->id) == NULL || t->m.attempts.count < 2) {
		modal_notice(t, "%s is not an attempt of a group shown here: nothing to compare.",
		    r != NULL ? r->id : "No run selected:");
		return TUI_HANDLED | TUI_REDRAW;
	}
	if ((other = model_attempts_compare(&t->m)) == NULL)
		return TUI_HANDLED | TUI_REDRAW;
	job.id = t->m.attempts.cmp[0].run;
	tui_submit(t, &job);
	job.id = (char *)other;
	tui_submit(t, &job);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
key_nothing(struct tui *t, int key)
{
	(void)t;
	(void)key;
	return TUI_HANDLED;
}

/*
 * Every key: dispatch goes down this table (first match of key and the
 * focused pane); help lists the rows that have a label.  The configuration
 * file may give an action another key (keys_bind): keys_now then holds it,
 * and the handler still gets the row's own key (what it tells apart).
 */
static const struct keys_binding {
	int key;
	unsigned where;
	const char *label;	/* NULL: another key of the row above */
	const char *where_text;
	const char *help;
	unsigned (*fn)(struct tui *t, int key);
	const char *action;	/* its name in the configuration file; NULL: fixed */
} keys_table[] = {
	{ '\t', W_ANY, "Tab / S-Tab", "anywhere", "next / previous pane", key_tab, "next-pane" },
	{ TUI_KEY(KEY_BTAB), W_ANY, NULL, NULL, NULL, key_tab, "previous-pane" },
	{ TUI_KEY(KEY_UP), W_ANY, "Up Down k j", "lists, log", "move / scroll one line",
	    key_up, "up" },
	{ 'k', W_ANY, NULL, NULL, NULL, key_up, "up" },
	{ TUI_KEY(KEY_DOWN), W_ANY, NULL, NULL, NULL, key_down, "down" },
	{ 'j', W_ANY, NULL, NULL, NULL, key_down, "down" },
	{ TUI_KEY(KEY_PPAGE), W_ANY, "PgUp PgDn", "lists, log", "one page", key_page_up, "page-up" },
	{ TUI_KEY(KEY_NPAGE), W_ANY, NULL, NULL, NULL, key_page_down, "page-down" },
	{ 'g', W_ANY, "g G Home End", "lists, log", "first / last; G in the log follows",
	    key_first, "first" },
	{ TUI_KEY(KEY_HOME), W_ANY, NULL, NULL, NULL, key_first, "first" },
	{ 'G', W_ANY, NULL, NULL, NULL, key_last, "last" },
	{ TUI_KEY(KEY_END), W_ANY, NULL, NULL, NULL, key_last, "last" },
	{ '\r', W_PROJECTS | W_SESSIONS | W_RUNS, "Enter", "left panes",
	    "focus the next pane to the right", key_enter, "open" },
	{ TUI_KEY(KEY_ENTER), W_PROJECTS | W_SESSIONS | W_RUNS, NULL, NULL, NULL, key_enter, "open" },
	{ '\r', W_ARTIFACTS, "Enter", "Artifacts", "download the selected artifact",
	    key_download, "download" },
	{ TUI_KEY(KEY_ENTER), W_ARTIFACTS, NULL, NULL, NULL, key_download, "download" },
	{ '1', W_ANY, "1 2 3 4 5", "anywhere", "show Log, Plan, Artifacts, Connectors, Changes",
	    key_right, "log" },
	{ '2', W_ANY, NULL, NULL, NULL, key_right, "plan" },
	{ '3', W_ANY, NULL, NULL, NULL, key_right, "artifacts" },
	{ '4', W_ANY, NULL, NULL, NULL, key_right, "connectors" },
	{ '5', W_ANY, NULL, NULL, NULL, key_right, "changes" },
	/* n / N: a new run everywhere; in the Log, while a search is active,
	 * the next / previous match (less, vim). */
	{ 'n', W_LOG, "n N", "Log, searching", "next / previous search match (no search: "
	    "new run)", key_search_next, "search-next" },
	{ 'N', W_LOG, NULL, NULL, NULL, key_search_next, "search-previous" },
	{ 'n', W_ANY, "n", "anywhere", "new run in the selected project (:new)",
	    key_new_run, "new-run" },
	{ 'N', W_ANY, "N", "anywhere",
	    "new run continuing the selected session (:continue)", key_new_run, "continue" },
	{ 'c', W_RUNS | W_LOG, "c", "Runs, Log", "cancel the selected run (the marked ones)",
	    key_cancel, "cancel" },
	{ 'i', W_RUNS | W_LOG, "i", "Runs, Log", "the run's detail: settings, tokens, result",
	    action_detail, "detail" },
	{ ' ', W_RUNS, "Space", "Runs",
	    "mark / unmark the run (cancel, approve, rerun then act on the marked)",
	    action_mark, "mark" },
	{ '*', W_RUNS, "*", "Runs", "mark every run shown (the / filter applied)",
	    action_mark_all, "mark-all" },
	{ 'u', W_RUNS, "u Esc", "Runs", "clear the marks", action_unmark, "unmark-all" },
	{ TUI_ESC, W_RUNS, NULL, NULL, NULL, action_unmark, NULL },
	{ '.', W_RUNS | W_LOG, ".", "Runs, Log",
	    "run again: same prompt and settings, same session (the marked ones)",
	    action_rerun, "rerun" },
	{ 'a', W_RUNS, "a", "Runs", "approve the plan the run waits for (the marked ones)",
	    action_approve, "approve-runs" },
	{ '$', W_ANY, "$", "anywhere", "a shell ($SHELL) in the session's workspace",
	    action_shell, "shell" },
	{ 'r', W_ANY, "r", "anywhere", "re-read everything (unreachable: reconnect now)",
	    key_reread, "reread" },
	{ '!', W_ANY, "!", "anywhere", "show the pending permission prompt", key_permission,
	    "permission" },
	{ '@', W_ANY, "@", "anywhere",
	    "jump to the next run that needs you (any project)", key_attention, "attention" },
	{ 'h', W_ANY, "h l Left Right", "anywhere", "pane to the left / right", key_pane_left,
	    "pane-left" },
	{ TUI_KEY(KEY_LEFT), W_ANY, NULL, NULL, NULL, key_pane_left, "pane-left" },
	{ 'l', W_ANY, NULL, NULL, NULL, key_pane_right, "pane-right" },
	{ TUI_KEY(KEY_RIGHT), W_ANY, NULL, NULL, NULL, key_pane_right, "pane-right" },
	{ 'y', W_ANY, "y", "anywhere", "copy the selected id (OSC 52)", key_copy, "copy-id" },
	{ 'Y', W_ANY, "Y", "anywhere", "copy a taskdeck command for it", key_copy, "copy-command" },
	{ ':', W_ANY, ":", "anywhere",
	    "command: :project :session :run :cancel :approve :sort :filter :new :messages "
	    ":help :q (Tab completes, Up/Down history)", key_command, "command" },
	{ 'P', W_ANY, "P S U", "anywhere", "focus Projects, Sessions, Runs (1-4: the right pane)",
	    key_focus, "focus-projects" },
	{ 'S', W_ANY, NULL, NULL, NULL, key_focus, "focus-sessions" },
	{ 'U', W_ANY, NULL, NULL, NULL, key_focus, "focus-runs" },
	{ 'H', W_ANY, "H", "anywhere", "message history: every message, newest last (:messages)",
	    key_messages, "messages" },
	{ '?', W_ANY, "?", "anywhere", "this help", key_help, "help" },
	{ 'q', W_ANY, "q Ctrl-C", "anywhere", "quit", key_quit, "quit" },
	{ '/', W_LISTS, "/", "lists",
	    "filter the list as you type (Enter keeps, Esc clears)", key_list_filter, "filter" },
	{ '/', W_LOG, "/", "Log", "search: Enter jumps to a match, n / N the next ones",
	    key_search, "search" },
	{ '&', W_LOG, "&", "Log", "filter: only the lines holding it (empty or Esc clears)",
	    key_filter, "log-filter" },
	{ 's', W_PROJECTS | W_SESSIONS | W_RUNS, "s", "left panes",
	    "sort: newest, by status (needs you first), by name", key_sort, "sort" },
	{ 'M', W_ANY, "M", "anywhere", "the last message and the selected item's texts, whole",
	    key_details, "details" },
	{ 'z', W_PROJECTS | W_SESSIONS, "z", "Projects, Sessions",
	    "archive the selected project or session (unarchive an archived one)", key_archive,
	    "archive" },
	{ 'Z', W_PROJECTS | W_SESSIONS, "Z", "Projects, Sessions",
	    "show the archived ones too (dimmed) / hide them", key_show_archived,
	    "show-archived" },
	{ 'D', W_SESSIONS, "D", "Sessions",
	    "delete the selected session with its runs ([y/N] names it)", key_delete_session,
	    "delete" },
	{ 'f', W_LOG, "f", "Log", "follow on/off", key_follow, "follow" },
	{ 'w', W_LOG, "w", "Log", "wrap long lines on/off", key_wrap, "wrap" },
	{ 't', W_LOG, "t", "Log", "timestamps: clock, since the run started, none",
	    key_timestamps, "timestamps" },
	{ 's', W_LOG, "s", "Log", "scope: the run or the whole session", key_scope, "scope" },
	{ ']', W_LOG, "] [", "Log", "session scope: the next / previous run's first line",
	    key_run_jump, "next-run" },
	{ '[', W_LOG, NULL, NULL, NULL, key_run_jump, "previous-run" },
	{ 'v', W_LOG, "v", "Log", "the lines shown in $PAGER (less)", key_pager, "pager" },
	{ 'v', W_ARTIFACTS, "v", "Artifacts", "view it in $PAGER (less), nothing saved",
	    action_open_artifact, "view" },
	{ 'E', W_ARTIFACTS, "E", "Artifacts", "open it in $EDITOR (vi), nothing saved",
	    action_open_artifact, "edit" },
	{ ' ', W_CONNECTORS, "Space", "Connectors", "enable / disable the selected connector",
	    key_connector, "toggle" },
	{ 't', W_CONNECTORS, "t", "Connectors", "test it: connect and list its tools",
	    key_connector, "test" },
	{ 'L', W_CONNECTORS, "L", "Connectors", "sign in (OAuth, http): shows the URL to open",
	    key_connector, "login" },
	{ 'R', W_RUNS | W_CHANGES, "R", "Runs, Changes",
	    "revert the selected run's changes to its files ([y/N] names them)", key_revert,
	    "revert" },
	{ 'A', W_RUNS | W_CHANGES, "A", "Runs, Changes",
	    "apply the selected run's attempt to its directory ([y/N] names it)",
	    key_apply_attempt, "apply-attempt" },
	{ '=', W_CHANGES, "=", "Changes",
	    "an attempt's whole diff beside the next attempt's (= again: back)",
	    key_compare_attempts, "compare-attempts" },
	{ 'a', W_PLAN, "a", "Plan", "approve", key_plan, "approve" },
	{ 'e', W_PLAN, "e", "Plan", "revise: write feedback", key_plan, "revise" },
	{ 'x', W_PLAN, "x", "Plan", "reject (the run is cancelled)", key_plan, "reject" },
	{ TUI_ESC, W_ANY, "Esc", "modal, editor", "close without acting", key_nothing, NULL },
};

#define KEYS_COUNT (sizeof keys_table / sizeof keys_table[0])

/* The key each row answers to now: 0 its own, -1 none (given to another action). */
static int keys_now[KEYS_COUNT];

static int
keys_current(size_t i)
{
	return keys_now[i] == 0 ? keys_table[i].key : keys_now[i];
}

/* The help text of a row, or of the labelled row of its group. */
static const char *
keys_row_help(size_t i)
{
	while (i > 0 && keys_table[i].label == NULL)
		i--;
	return keys_table[i].help;
}

/* Names of the keys that are not one character. */
static const struct {
	int code;
	const char *name;
} keys_names[] = {
	{ '\t', "Tab" }, { '\r', "Enter" }, { ' ', "Space" }, { TUI_ESC, "Esc" },
	{ TUI_KEY(KEY_BTAB), "S-Tab" }, { TUI_KEY(KEY_UP), "Up" },
	{ TUI_KEY(KEY_DOWN), "Down" }, { TUI_KEY(KEY_LEFT), "Left" },
	{ TUI_KEY(KEY_RIGHT), "Right" }, { TUI_KEY(KEY_PPAGE), "PgUp" },
	{ TUI_KEY(KEY_NPAGE), "PgDn" }, { TUI_KEY(KEY_HOME), "Home" },
	{ TUI_KEY(KEY_END), "End" }, { TUI_KEY(KEY_ENTER), "Enter" },
	{ TUI_KEY(KEY_BACKSPACE), "Backspace" }, { TUI_KEY(KEY_DC), "Delete" },
	{ TUI_KEY(KEY_IC), "Insert" },
};

/* A key's name: "x", "Space", "Ctrl-X", "F5", "PgUp". */
static void
keys_name(int key, char *out, size_t len)
{
	char u[8];
	mbstate_t st;
	size_t n;

	for (size_t i = 0; i < sizeof keys_names / sizeof keys_names[0]; i++) {
		if (keys_names[i].code == key) {
			snprintf(out, len, "%s", keys_names[i].name);
			return;
		}
	}
	if (key > TUI_KEY(KEY_F0) && key <= TUI_KEY(KEY_F(12))) {
		snprintf(out, len, "F%d", key - TUI_KEY(KEY_F0));
		return;
	}
	if (key > 0 && key < 0x20) {
		snprintf(out, len, "Ctrl-%c", '@' + key);
		return;
	}
	memset(&st, 0, sizeof st);
	if (key < 0x80)
		snprintf(out, len, "%c", key);
	else if (key < TUI_KEY_FN && (n = wcrtomb(u, (wchar_t)key, &st)) != (size_t)-1 &&
	    n < sizeof u) {
		u[n] = '\0';
		snprintf(out, len, "%s", u);
	} else
		snprintf(out, len, "U+%04X", (unsigned)key);
}

/* One UTF-8 character, all of s: its code point, or -1. */
static int
keys_utf8(const unsigned char *s)
{
	int n = s[0] < 0x80 ? 0 : (s[0] & 0xe0) == 0xc0 ? 1 : (s[0] & 0xf0) == 0xe0 ? 2 :
	    (s[0] & 0xf8) == 0xf0 ? 3 : -1;
	int c;

	if (n < 0)
		return -1;
	c = n == 0 ? s[0] : n == 1 ? s[0] & 0x1f : n == 2 ? s[0] & 0x0f : s[0] & 0x07;
	for (int i = 1; i <= n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		c = c << 6 | (s[i] & 0x3f);
	}
	return s[n + 1] == '\0' && c > 0x20 && c != 0x7f && c < 0x110000 ? c : -1;
}

int
keys_parse(const char *text)
{
	if (text == NULL || text[0] == '\0' || strlen(text) >= 16)
		return -1;
	if (strncasecmp(text, "Ctrl-", 5) == 0 || strncasecmp(text, "C-", 2) == 0) {
		const char *c = text + (text[1] == '-' ? 2 : 5);

		/* Ctrl-C always quits; Ctrl-I, Ctrl-M and Ctrl-[ are Tab, Enter, Esc. */
		if (c[0] != '\0' && c[1] == '\0' && isalpha((unsigned char)c[0]) &&
		    strchr("cimCIM", c[0]) == NULL)
			return TUI_CTRL(toupper((unsigned char)c[0]));
		return -1;
	}
	if ((text[0] == 'F' || text[0] == 'f') && isdigit((unsigned char)text[1])) {
		char *end;
		long f = strtol(text + 1, &end, 10);

		return *end == '\0' && f >= 1 && f <= 12 ? TUI_KEY(KEY_F((int)f)) : -1;
	}
	for (size_t i = 0; i < sizeof keys_names / sizeof keys_names[0]; i++) {
		if (strcasecmp(text, keys_names[i].name) == 0)
			return keys_names[i].code == TUI_ESC ? -1 : keys_names[i].code;
	}
	return keys_utf8((const unsigned char *)text);
}

/* The row of an action a key.ACTION line changes: its character key
 * (arrows, Tab, Enter stay), else its first; KEYS_COUNT for none. */
static size_t
keys_action_row(const char *action)
{
	size_t row = KEYS_COUNT;

	for (size_t i = 0; i < KEYS_COUNT; i++) {
		const struct keys_binding *b = &keys_table[i];

		if (b->action == NULL || strcmp(b->action, action) != 0)
			continue;
		if (row == KEYS_COUNT || (b->key > 0x20 && b->key < TUI_KEY_FN &&
		    !(keys_table[row].key > 0x20 && keys_table[row].key < TUI_KEY_FN)))
			row = i;
	}
	return row;
}

const char *
keys_action_key(const char *action, char *buf, size_t len)
{
	size_t row = keys_action_row(action);

	if (row == KEYS_COUNT || keys_current(row) < 0)
		return NULL;
	/* Enter stays the name of the Enter rows. */
	keys_name(keys_current(row), buf, len);
	return buf;
}

unsigned
keys_action(struct tui *t, const char *action)
{
	size_t row = keys_action_row(action);

	return row == KEYS_COUNT ? 0 : keys_table[row].fn(t, keys_table[row].key);
}

bool
keys_bind(const char *action, int key, char *why, size_t len)
{
	size_t row = keys_action_row(action);
	char name[32], other[32];

	why[0] = '\0';
	if (row == KEYS_COUNT) {
		snprintf(why, len, "no action named '%s' (see taskdeck(1))", action);
		return false;
	}
	keys_name(key, name, sizeof name);
	/* The key leaves the actions it did in the same panes. */
	for (size_t i = 0; i < KEYS_COUNT; i++) {
		const struct keys_binding *b = &keys_table[i];

		if (i == row || keys_current(i) != key || !(b->where & keys_table[row].where))
			continue;
		if (b->action == NULL || strcmp(b->action, action) != 0) {
			keys_name(keys_table[i].key, other, sizeof other);
			snprintf(why, len, "%s no longer does %s (its key was %s)", name,
			    b->action != NULL ? b->action : "what it did", other);
		}
		keys_now[i] = -1;
	}
	keys_now[row] = key;
	return true;
}

/* The label of row i's group (it and the unlabelled rows after it): the
 * table's, or the keys given now when the configuration changed one. */
static const char *
keys_label(size_t i, char *buf, size_t len)
{
	bool changed = false;
	size_t n = 0, end = i + 1;
	char name[32];

	while (end < KEYS_COUNT && keys_table[end].label == NULL)
		end++;
	for (size_t k = i; k < end; k++)
		changed = changed || keys_now[k] != 0;
	if (!changed)
		return keys_table[i].label;
	buf[0] = '\0';
	for (size_t k = i; k < end && n < len; k++) {
		if (keys_current(k) < 0)
			continue;
		keys_name(keys_current(k), name, sizeof name);
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n > 0 ? " " : "", name);
	}
	return n > 0 ? buf : "(no key)";
}

/* Keys of the modals and editors: in the help, not in the dispatch table. */
static const struct {
	const char *label, *where_text, *help;
} keys_modal_help[] = {
	{ "a", "permission", "allow this tool call ([y/N])" },
	{ "d", "permission", "deny this tool call ([y/N])" },
	{ "A", "permission", "allow EVERY tool for the rest of the run ([y/N])" },
	{ "Esc", "permission", "hide the prompt (! shows it again)" },
	{ "Enter", "editor", "submit (prompt, feedback, directory, filter, search)" },
	{ "Ctrl-J", "editor", "new line (prompt, feedback)" },
	{ "Ctrl-T", "prompt editor", "plan-first on/off" },
	{ "Ctrl-P", "prompt editor", "next permission profile" },
	{ "Ctrl-O", "prompt editor", "write the prompt in $EDITOR (vi)" },
	{ "Tab", "prompt editor", "edit the provider, then the model, then the text again" },
	{ "Ctrl-U", "editor", "erase up to the cursor" },
	{ "<- -> Home End", "editor", "move the cursor (Ctrl-A, Ctrl-E: start, end)" },
	{ "Bksp Del", "editor", "erase a character" },
	{ "Tab S-Tab", ": palette", "complete the verb or its argument; again: the next / previous" },
	{ "Up Down", ": palette", "the lines run before (Ctrl-P, Ctrl-N)" },
	{ "Up Down", "editor, / list", "the line above / below; in a list's filter: the matches" },
	{ "y / other", "[y/N]", "only y confirms; anything else is No" },
};

static bool
keys_help_row(size_t i, unsigned *mask, const char **keys, const char **where,
    const char **text)
{
	size_t n = 0;

	for (size_t k = 0; k < sizeof keys_table / sizeof keys_table[0]; k++) {
		if (keys_table[k].label == NULL)
			continue;
		if (n++ == i) {
			static char labels[KEYS_COUNT][64];

			*mask = keys_table[k].where;
			*keys = keys_label(k, labels[k], sizeof labels[k]);
			*where = keys_table[k].where_text;
			*text = keys_table[k].help;
			return true;
		}
	}
	i -= n;
	if (i < sizeof keys_modal_help / sizeof keys_modal_help[0]) {
		*mask = W_ANY;
		*keys = keys_modal_help[i].label;
		*where = keys_modal_help[i].where_text;
		*text = keys_modal_help[i].help;
		return true;
	}
	return false;
}

/* The keys' and where's columns of the help; its descriptions wrap beside them. */
#define HELP_TEXT_X 32

/*
 * The help's lines: the rows of the pane it was opened from (and anywhere,
 * modals, editors), or every row with help_all, each description wrapped at
 * tw columns (keys and where on its first line only); returns how many, and
 * line want's parts when asked.
 */
static size_t
help_lines(const struct tui *t, int tw, size_t want, const char **keys, const char **where,
    const char **text, size_t *text_len)
{
	const char *k, *w, *x;
	unsigned mask;
	size_t n = 0;

	for (size_t i = 0; keys_help_row(i, &mask, &k, &w, &x); i++) {
		size_t len = strlen(x), off = 0, next, part;

		if (!t->help_all && !(mask & t->help_where))
			continue;
		do {
			part = draw_wrap(x + off, len - off, tw, &next);
			if (n++ == want && keys != NULL) {
				*keys = off == 0 ? k : "";
				*where = off == 0 ? w : "";
				*text = x + off;
				*text_len = part;
			}
			off += next;
		} while (off < len && next > 0);
	}
	return n;
}

static void
help_draw(struct tui *t)
{
	const char *keys, *where, *text;
	char line[256], title[160];
	size_t n, body, len;
	int h, tw, x, bw = 0;
	unsigned mask;
	struct rect r;

	snprintf(title, sizeof title, "Keys: %s (Tab %s, j/k scroll, Esc closes)",
	    t->help_all ? "all" : tui_view(t, t->m.focus)->name,
	    t->help_all ? "this pane" : "all keys");
	/* The box's width first: the longest description's, else the screen's
	 * (modal_box keeps a column each side); then its lines. */
	for (size_t i = 0; keys_help_row(i, &mask, &keys, &where, &text); i++)
		if (draw_width(text) > bw)
			bw = draw_width(text);
	bw += 4 + HELP_TEXT_X;
	tw = (t->cols - 2 < bw ? t->cols - 2 : bw) - 4 - HELP_TEXT_X;
	n = help_lines(t, tw > 8 ? tw : 8, SIZE_MAX, NULL, NULL, NULL, NULL);
	h = (int)n + 3;
	if (h > t->rows - 4)
		h = t->rows - 4;
	r = modal_box(t, bw, h, title);
	tw = r.w - HELP_TEXT_X;
	n = help_lines(t, tw > 8 ? tw : 8, SIZE_MAX, NULL, NULL, NULL, NULL);
	body = r.h > 2 ? (size_t)r.h - 2 : 1;
	if (t->help_top + body > n)
		t->help_top = n > body ? n - body : 0;
	for (size_t i = 0; i < body && t->help_top + i < n; i++) {
		help_lines(t, tw > 8 ? tw : 8, t->help_top + i, &keys, &where, &text, &len);
		snprintf(line, sizeof line, "%-16s %-14s ", keys, where);
		x = draw_text(r.y + (int)i, r.x, r.w, line, A_NORMAL);
		draw_span(r.y + (int)i, r.x + x, r.w - x, text, len, NULL, A_NORMAL, A_NORMAL);
	}
	snprintf(line, sizeof line, "%zu-%zu of %zu   Mouse: a click selects, the wheel scrolls",
	    n > 0 ? t->help_top + 1 : 0, t->help_top + body < n ? t->help_top + body : n, n);
	draw_text(r.y + r.h - 1, r.x, r.w, line, draw_attr(t, ST_DIM));
}

/* j/k, arrows, pages scroll; Tab: this pane / all keys; anything else closes. */
static unsigned
help_key(struct tui *t, int key)
{
	if (modal_scroll(key, t->rows > 10 ? t->rows - 10 : 1, &t->help_top))
		return TUI_HANDLED | TUI_REDRAW;
	if (key == '\t') {
		t->help_all = !t->help_all;
		t->help_top = 0;
	} else {
		modal_close(t);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

void
keys_init(void)
{
	modal_register(MODAL_HELP, help_draw, help_key);
	detail_init();
	screen_register_keys(keys_action_key);
	draw_register_keys(keys_action_key);
}

/* The names of a pane set, for "works in ..." messages: "Runs and the Log (1)". */
static const char *
keys_where_name(unsigned where, char *buf, size_t len)
{
	static const struct {
		unsigned w;
		const char *name;
	} names[] = {
		{ W_PROJECTS, "Projects" }, { W_SESSIONS, "Sessions" }, { W_RUNS, "Runs" },
		{ W_LOG, "the Log (1)" }, { W_PLAN, "the Plan (2)" },
		{ W_ARTIFACTS, "the Artifacts (3)" }, { W_CONNECTORS, "the Connectors (4)" },
		{ W_CHANGES, "the Changes (5)" },
	};
	size_t count = 0, seen = 0, n = 0;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		count += (where & names[i].w) != 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof names / sizeof names[0] && n < len; i++) {
		if (!(where & names[i].w))
			continue;
		seen++;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", seen == 1 ? "" : seen == count ?
		    " and " : ", ", names[i].name);
	}
	return count > 0 ? buf : "another pane";
}

/* One key: the modal first, then the table, then the focused view. */
unsigned
keys_dispatch(struct tui *t, int key)
{
	enum modal_kind k = modal_current(t);
	const struct view_ops *v;
	unsigned where, f;
	char label[64], panes[160];

	if (t->too_small)
		return key == 'q' ? key_quit(t, key) : 0;
	if (k != MODAL_NONE) {
		f = modal_key(t, key);
		if ((f & TUI_HANDLED) || k != MODAL_PERMISSION)
			return f | TUI_REDRAW;
	}
	where = tui_where(t);
	for (size_t i = 0; i < KEYS_COUNT; i++) {
		/* The search's n / N only while there is one (less, vim): else a new run. */
		if (keys_table[i].fn == key_search_next && t->m.log.search[0] == '\0')
			continue;
		if (keys_current(i) == key && (keys_table[i].where & where))
			return keys_table[i].fn(t, keys_table[i].key);
	}
	v = tui_view(t, t->m.focus);
	if (v->key != NULL && ((f = v->key(t, key)) & TUI_HANDLED))
		return f;
	/* A key dashboard.conf moved to another: say which one does it now. */
	for (size_t i = 0; i < KEYS_COUNT; i++) {
		char now[32];

		if (keys_table[i].key != key || keys_now[i] <= 0 || !(keys_table[i].where & where))
			continue;
		keys_name(keys_now[i], now, sizeof now);
		keys_name(key, label, sizeof label);
		model_message(&t->m, t->now_ms, false, "%s is now %s (key.%s in dashboard.conf): %s",
		    label, now, keys_table[i].action, keys_row_help(i));
		return TUI_HANDLED | TUI_REDRAW;
	}
	/* A key of another pane: say where it works rather than nothing. */
	for (size_t i = 0; i < KEYS_COUNT; i++) {
		const struct keys_binding *b = &keys_table[i];
		size_t l = i;

		if (keys_current(i) != key)
			continue;
		/* A key of a labelled row's group: the label row tells. */
		while (l > 0 && keys_table[l].label == NULL)
			l--;
		b = &keys_table[l];
		model_message(&t->m, t->now_ms, false, "%s (%s) works in %s; ? lists the keys",
		    keys_label(l, label, sizeof label), b->help,
		    keys_where_name(b->where, panes, sizeof panes));
		return TUI_HANDLED | TUI_REDRAW;
	}
	return 0;
}

/* The pane whose box (borders included) holds y, x; -1 for none. */
static int
keys_pane_at(const struct tui *t, int y, int x)
{
	for (int p = 0; p < PANE__COUNT; p++) {
		const struct rect *r = &t->box[p];

		if (y >= r->y - 1 && y <= r->y + r->h && x >= r->x - 1 && x <= r->x + r->w)
			return p;
	}
	return -1;
}

/* A click focuses and selects; the wheel scrolls the pane under the pointer. */
unsigned
keys_mouse(struct tui *t)
{
	MEVENT me;
	const struct view_ops *v;
	enum pane old = t->m.focus;
	int p;

	if (getmouse(&me) != OK || t->too_small || modal_current(t) != MODAL_NONE)
		return 0;
	if (me.y == 0 && (me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))) {
		for (int i = 0; i < 5; i++) {
			if (me.x >= t->tab_x[i] && me.x < t->tab_x[i + 1])
				return key_right(t, '1' + i);
		}
		return 0;
	}
	if ((p = keys_pane_at(t, me.y, me.x)) < 0)
		return 0;
	if (me.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
		model_focus(&t->m, (enum pane)p);
		tui_need(t, model_move(&t->m, me.bstate & BUTTON4_PRESSED ? -3 : 3,
		    tui_page_rows(t)));
		model_focus(&t->m, old);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (!(me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
		return 0;
	model_focus(&t->m, (enum pane)p);
	v = tui_view(t, (enum pane)p);
	if (v->click != NULL && me.y >= t->box[p].y && me.y < t->box[p].y + t->box[p].h)
		v->click(t, me.y - t->box[p].y);
	return TUI_HANDLED | TUI_REDRAW;
}
