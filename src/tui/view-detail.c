/*
 * The run detail ('i' on a run): every setting, count and result of one run,
 * in the words of `taskdeck runs show` (run-detail.c), scrollable, read again
 * as the run's events arrive, its duration moving while it runs.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "timeutil.h"
#include "tui/run-detail.h"
#include "tui/tui.h"
#include "xalloc.h"

/* The width of the key column. */
#define DETAIL_KEY_W 18

/* The rows of the detail as drawn: key (or "" on a continued row) and text. */
struct detail_rows {
	struct {
		char key[32];
		char *text;
	} *rows;
	size_t count;
	int width;		/* of the value column */
};

static void
detail_row(struct detail_rows *d, const char *key, const char *s, size_t len)
{
	d->rows = xrealloc(d->rows, (d->count + 1) * sizeof *d->rows);
	snprintf(d->rows[d->count].key, sizeof d->rows[d->count].key, "%s", key);
	d->rows[d->count].text = xstrndup(s, len);
	d->count++;
}

/* One line of run_detail_lines: its value wrapped at spaces, each '\n' a new row. */
static void
detail_line(void *ctx, const char *key, const char *value)
{
	struct detail_rows *d = ctx;
	size_t len = strlen(value), at = 0, nl, n, next;
	bool first = true;

	if (len == 0)
		detail_row(d, key, "", 0);
	while (at < len) {
		nl = strcspn(value + at, "\n");
		n = draw_wrap(value + at, nl, d->width, &next);
		if (next == 0)
			next = n > 0 ? n : nl;	/* always move on */
		detail_row(d, first ? key : "", value + at, n);
		first = false;
		at += next;
		if (next >= nl && at < len && value[at] == '\n')
			at++;
	}
}

static void
detail_rows_free(struct detail_rows *d)
{
	for (size_t i = 0; i < d->count; i++)
		free(d->rows[i].text);
	free(d->rows);
}

/* The artifacts of the run among the session's (the Artifacts list), for the detail. */
static size_t
detail_artifacts(const struct tui *t, struct run_detail_artifact **out)
{
	const struct model *m = &t->m;
	size_t n = 0;

	*out = xcalloc(m->artifact_count + 1, sizeof **out);
	for (size_t i = 0; i < m->artifact_count; i++) {
		const struct m_artifact *a = &m->artifacts[i];

		if (a->run_id != NULL && strcmp(a->run_id, t->detail_id) == 0)
			(*out)[n++] = (struct run_detail_artifact){
				a->path != NULL ? a->path : a->name, a->size };
	}
	return n;
}

/* Where the run is: its project's name and its session's title, when listed. */
static void
detail_where(const struct tui *t, struct detail_rows *d)
{
	const struct model *m = &t->m;
	const struct td_run *r = t->detail;

	for (size_t i = 0; r->project_id != NULL && i < m->project_count; i++) {
		if (m->projects[i].id != NULL && strcmp(m->projects[i].id, r->project_id) == 0 &&
		    m->projects[i].name != NULL)
			detail_line(d, "project", m->projects[i].name);
	}
	for (size_t i = 0; r->session_id != NULL && i < m->session_count; i++) {
		if (m->sessions[i].id != NULL && strcmp(m->sessions[i].id, r->session_id) == 0 &&
		    m->sessions[i].title != NULL)
			detail_line(d, "session", m->sessions[i].title);
	}
}

static void
detail_draw(struct tui *t)
{
	struct detail_rows d = { 0 };
	struct run_detail_artifact *arts;
	char title[256], shortid[64], foot[128];
	size_t n, body;
	struct rect r;

	draw_short_id(t, t->detail_id, shortid, sizeof shortid);
	snprintf(title, sizeof title, "Run %s (j/k scroll, Esc closes)", shortid);
	r = modal_box(t, t->cols - 4, t->rows - 2, title);
	if (t->detail == NULL) {
		draw_text(r.y, r.x, r.w, "reading the run...", draw_attr(t, ST_DIM));
		return;
	}
	d.width = r.w - DETAIL_KEY_W > 10 ? r.w - DETAIL_KEY_W : 10;
	detail_where(t, &d);
	n = detail_artifacts(t, &arts);
	run_detail_lines(t->detail, arts, n, clock_wall_ms(), detail_line, &d);
	free(arts);
	body = r.h > 1 ? (size_t)r.h - 1 : 1;
	if (t->detail_top + body > d.count)
		t->detail_top = d.count > body ? d.count - body : 0;
	for (size_t i = 0; i < body && t->detail_top + i < d.count; i++) {
		int y = r.y + (int)i;

		draw_text(y, r.x, DETAIL_KEY_W - 1, d.rows[t->detail_top + i].key,
		    draw_attr(t, ST_DIM));
		draw_text(y, r.x + DETAIL_KEY_W, r.w - DETAIL_KEY_W,
		    d.rows[t->detail_top + i].text, A_NORMAL);
	}
	snprintf(foot, sizeof foot, "%zu-%zu of %zu", d.count > 0 ? t->detail_top + 1 : 0,
	    t->detail_top + body < d.count ? t->detail_top + body : d.count, d.count);
	draw_text(r.y + r.h - 1, r.x, r.w, foot, draw_attr(t, ST_DIM));
	/* A running run's duration moves: redrawn once a second, as the ages are. */
	if (!td_run_is_final(t->detail))
		t->ages_shown = true;
	detail_rows_free(&d);
}

/* j/k, arrows, pages, g/G scroll; Esc and q close; other keys are ignored. */
static unsigned
detail_key(struct tui *t, int key)
{
	if (modal_scroll(key, t->rows > 6 ? t->rows - 6 : 1, &t->detail_top))
		return TUI_HANDLED | TUI_REDRAW;
	if (key == TUI_ESC || key == 'q' || key == 'i') {
		modal_close(t);
		return TUI_HANDLED | TUI_REDRAW;
	}
	return TUI_HANDLED;
}

void
detail_init(void)
{
	modal_register(MODAL_DETAIL, detail_draw, detail_key);
}

static void
detail_read(struct tui *t)
{
	struct job job = { .kind = JOB_RUN, .id = t->detail_id };

	tui_submit(t, &job);
}

void
tui_detail_open(struct tui *t, const char *run_id)
{
	if (strcmp(t->detail_id, run_id) != 0) {
		td_run_free(t->detail);
		t->detail = NULL;
	}
	snprintf(t->detail_id, sizeof t->detail_id, "%s", run_id);
	t->detail_top = 0;
	modal_open(t, MODAL_DETAIL);
	detail_read(t);
}

void
tui_detail_result(struct tui *t, struct job_result *r)
{
	if (r->job.kind != JOB_RUN || r->code != TD_OK || r->run == NULL ||
	    r->run->id == NULL || strcmp(r->run->id, t->detail_id) != 0)
		return;
	td_run_free(t->detail);
	t->detail = r->run;
	r->run = NULL;
	t->dirty = true;
}

void
tui_detail_event(struct tui *t, const struct td_event *e)
{
	if (t->modal != MODAL_DETAIL || e->run_id == NULL || e->type == NULL ||
	    strcmp(e->run_id, t->detail_id) != 0 || strcmp(e->type, "run.output") == 0)
		return;
	detail_read(t);
}

void
tui_detail_free(struct tui *t)
{
	td_run_free(t->detail);
	t->detail = NULL;
	t->detail_id[0] = '\0';
}
