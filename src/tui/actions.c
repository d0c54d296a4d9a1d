/*
 * What the run list's marks, the run detail and "open in place" do: keys.c
 * binds them.  Marked runs (Space, '*', 'u') are cancelled, approved or run
 * again together after one [y/N] that says how many and which; an artifact
 * opens in $PAGER or $EDITOR from a private temporary file; a shell opens in
 * the session's workspace.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "tui/tui.h"
#include "xalloc.h"

/* At most this many runs are named in a bulk action's question. */
#define ACTION_NAMED_MAX 6

unsigned
action_detail(struct tui *t, int key)
{
	const struct m_run *r = model_run(&t->m);

	(void)key;
	if (r == NULL || r->id == NULL)
		model_message(&t->m, t->now_ms, true, "no run selected");
	else
		tui_detail_open(t, r->id);
	return TUI_HANDLED | TUI_REDRAW;
}

unsigned
action_mark(struct tui *t, int key)
{
	(void)key;
	if (!model_mark_toggle(&t->m))
		model_message(&t->m, t->now_ms, true, "no run selected");
	else
		tui_need(t, model_move(&t->m, 1, tui_page_rows(t)));
	return TUI_HANDLED | TUI_REDRAW;
}

unsigned
action_mark_all(struct tui *t, int key)
{
	char buf[32];
	const char *clear = draw_key("unmark-all", NULL, buf, sizeof buf);

	(void)key;
	model_mark_visible(&t->m);
	model_message(&t->m, t->now_ms, false, "%zu marked (%s%sEsc clears)", t->m.mark_count,
	    clear != NULL ? clear : "", clear != NULL ? " or " : "");
	return TUI_HANDLED | TUI_REDRAW;
}

unsigned
action_unmark(struct tui *t, int key)
{
	if (model_marks_clear(&t->m))
		model_message(&t->m, t->now_ms, false, "marks cleared");
	else if (key != TUI_ESC)
		model_message(&t->m, t->now_ms, false, "no run is marked");
	return TUI_HANDLED | TUI_REDRAW;
}

/* "run_…c1edd3 (Write a rep…)" for the question. */
static void
action_name(struct tui *t, struct buf *b, const char *id, const char *prompt)
{
	char shortid[64], text[40];
	size_t n = 0;

	draw_short_id(t, id, shortid, sizeof shortid);
	for (const char *p = prompt != NULL ? prompt : ""; *p != '\0' && n < 24; p++)
		text[n++] = *p == '\n' ? ' ' : *p;
	text[n] = '\0';
	buf_printf(b, "%s%s%s%s%s", b->len > 0 ? ", " : "", shortid, n > 0 ? " (" : "",
	    text, n > 0 ? (prompt[n] != '\0' ? "...)" : ")") : "");
}

/*
 * verb ("cancel", "approve", "rerun") on the marked runs, else on the selected
 * one: one [y/N] that says how many and which, then one job for all.
 */
unsigned
action_bulk(struct tui *t, const char *verb)
{
	static const struct {
		const char *verb, *ask;
	} asks[] = {
		{ "cancel", "Cancel" }, { "approve", "Approve the plan of" }, { "rerun", "Run again" },
	};
	const struct m_run *sel = model_run(&t->m);
	struct job job = { .kind = JOB_BULK, .decision = (char *)verb };
	struct buf ids, names;
	const char *ask = verb;
	size_t n = t->m.mark_count;

	for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
		if (strcmp(asks[i].verb, verb) == 0)
			ask = asks[i].ask;
	}
	if (n == 0 && (sel == NULL || sel->id == NULL)) {
		modal_notice(t, "No run selected (and none marked): nothing to %s.", verb);
		return TUI_HANDLED | TUI_REDRAW;
	}
	buf_init(&ids, 0);
	buf_init(&names, 0);
	if (n == 0)
		buf_printf(&ids, "%s", sel->id);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&ids, "%s%s", i > 0 ? " " : "", t->m.marks[i].id);
		if (i < ACTION_NAMED_MAX)
			action_name(t, &names, t->m.marks[i].id, t->m.marks[i].prompt);
	}
	if (n > ACTION_NAMED_MAX)
		buf_printf(&names, " and %zu more", n - ACTION_NAMED_MAX);
	job.text = ids.data;
	if (n == 0) {
		/* One run: by its names, as c asks, its id below. */
		char what[512];

		model_describe(&t->m, NULL, NULL, sel->id, what, sizeof what);
		modal_confirm(t, &job, "%s %s? [y/N]\n%s", ask, what, sel->id);
	} else
		modal_confirm(t, &job, "%s %zu marked run%s: %s? [y/N]", ask, n, n == 1 ? "" : "s",
		    names.data);
	buf_free(&ids);
	buf_free(&names);
	return TUI_HANDLED | TUI_REDRAW;
}

unsigned
action_rerun(struct tui *t, int key)
{
	(void)key;
	return action_bulk(t, "rerun");
}

unsigned
action_approve(struct tui *t, int key)
{
	(void)key;
	return action_bulk(t, "approve");
}

unsigned
tui_bulk_result(struct tui *t, const struct job_result *r)
{
	const char *verb = r->job.decision != NULL ? r->job.decision : "";
	size_t all = r->done_count + r->failed_count;

	if (r->code != TD_OK) {
		model_message(&t->m, t->now_ms, true, "%s failed: %s: %s", verb, r->err.code_name,
		    r->err.message);
		return NEED_NONE;
	}
	model_message(&t->m, t->now_ms, r->failed_count > 0, "%s: %zu of %zu succeeded%s%s%s",
	    verb, r->done_count, all, r->summary != NULL && *r->summary != '\0' ? " (" : "",
	    r->summary != NULL ? r->summary : "",
	    r->summary != NULL && *r->summary != '\0' ? ")" : "");
	model_marks_clear(&t->m);
	/* One run run again: the new one is selected once listed (its Log, its Changes). */
	if (strcmp(verb, "rerun") == 0 && r->done_count == 1 && r->failed_count == 0 &&
	    r->summary != NULL && strncmp(r->summary, "started ", 8) == 0 &&
	    r->job.text != NULL && strchr(r->job.text, ' ') == NULL) {
		char id[128];

		snprintf(id, sizeof id, "%.*s", (int)strcspn(r->summary + 8, ",; "), r->summary + 8);
		tui_jump(t, NULL, NULL, id);
	}
	return NEED_RUNS | NEED_PROJECT_RUNS | NEED_SESSIONS | NEED_PLAN;
}

/* 'v' (pager) and 'E' ($EDITOR) on an artifact: its bytes into a private file first. */
unsigned
action_open_artifact(struct tui *t, int key)
{
	const struct m_artifact *a = model_artifact(&t->m);
	struct job job = { .kind = JOB_OPEN_ARTIFACT, .decision = key == 'v' ? "pager" :
	    "editor" };
	const char *dot;
	char path[4096], suffix[32] = "";
	FILE *fp;

	if (a == NULL || a->id == NULL) {
		model_message(&t->m, t->now_ms, true, "no artifact selected");
		return TUI_HANDLED | TUI_REDRAW;
	}
	/* The file keeps the name's extension, for the pager's and editor's highlighting. */
	dot = a->name != NULL ? strrchr(a->name, '.') : NULL;
	if (dot != NULL && strlen(dot) < sizeof suffix && strchr(dot, '/') == NULL)
		snprintf(suffix, sizeof suffix, "%s", dot);
	if ((fp = tui_temp_file(path, sizeof path, suffix)) == NULL) {
		model_message(&t->m, t->now_ms, true, "cannot make a temporary file");
		return TUI_HANDLED | TUI_REDRAW;
	}
	fclose(fp);
	job.id = a->id;
	job.path = path;
	job.label = a->name;
	tui_submit(t, &job);
	model_message(&t->m, t->now_ms, false, "reading %s for %s", a->name != NULL ? a->name :
	    a->id, key == 'v' ? "$PAGER" : "$EDITOR");
	return TUI_HANDLED | TUI_REDRAW;
}

unsigned
tui_open_artifact_result(struct tui *t, const struct job_result *r)
{
	bool pager = r->job.decision != NULL && strcmp(r->job.decision, "pager") == 0;

	if (r->code != TD_OK)
		model_message(&t->m, t->now_ms, true, "cannot open %s: %s: %s",
		    r->job.label != NULL ? r->job.label : r->job.id, r->err.code_name,
		    r->err.message);
	else if (r->job.path != NULL && chmod(r->job.path, 0600) == 0)
		tui_external(t, pager ? "PAGER" : "EDITOR", pager ? "less" : "vi", r->job.path);
	/* Nothing is kept: the file goes with the job's result (worker.c). */
	return NEED_NONE;
}

unsigned
action_shell(struct tui *t, int key)
{
	const struct m_session *s = model_session(&t->m);

	(void)key;
	if (s == NULL || s->cwd == NULL) {
		model_message(&t->m, t->now_ms, true, "no session selected");
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (tui_shell(t, s->cwd, s->id, s->project_id) == 0)
		model_message(&t->m, t->now_ms, false, "back from the shell in %s", s->cwd);
	return TUI_HANDLED | TUI_REDRAW;
}
