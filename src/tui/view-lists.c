/* The left column's panes: projects, sessions of the project, runs of the session. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "tui/tui.h"

/* Draws one row of a list at y (marker already drawn) with attr as the base. */
typedef void (*list_row_fn)(struct tui *t, size_t i, int y, int x, int w, unsigned attr);

/* A list pane: the selected row marked "> ", reverse video when focused. */
static void
list_draw(struct tui *t, const struct rect *r, enum pane pane, struct m_cursor *cur,
    size_t count, list_row_fn row, const char *empty)
{
	bool focused = t->m.focus == pane;

	if (count == 0) {
		draw_text(r->y, r->x + 2, r->w - 2, empty, draw_attr(t, ST_DIM));
		return;
	}
	model_cursor_fit(cur, count, (size_t)r->h);
	for (int i = 0; i < r->h && cur->top + (size_t)i < count; i++) {
		size_t k = cur->top + (size_t)i;
		bool sel = k == cur->sel;
		unsigned attr = sel ? draw_attr(t, focused ? ST_SELECTED : ST_SELECTED_DIM) :
		    draw_attr(t, ST_NORMAL);

		if (sel)
			draw_fill(r->y + i, r->x, r->w, attr);
		draw_text(r->y + i, r->x, 2, sel ? "> " : "  ", attr);
		row(t, k, r->y + i, r->x + 2, r->w - 2, attr);
	}
}

/* A click on a list's row: select it (top is the list's first shown row). */
static unsigned
list_click(struct tui *t, enum pane pane, const struct m_cursor *cur, int row)
{
	tui_need(t, model_select(&t->m, pane, cur->top + (size_t)row));
	return TUI_HANDLED | TUI_REDRAW;
}

static void
projects_title(const struct tui *t, char *buf, size_t len)
{
	(void)t;
	snprintf(buf, len, "Projects");
}

/* "! " before a row whose project or session has a run that needs the user. */
static int
list_badge(struct tui *t, bool on, int y, int x, int w, unsigned attr)
{
	if (!on || w < 4)
		return 0;
	return draw_text(y, x, 2, "! ", draw_attr(t, ST_ATTENTION) | (attr & (A_REVERSE | A_BOLD)));
}

static void
projects_row(struct tui *t, size_t i, int y, int x, int w, unsigned attr)
{
	int used = list_badge(t, model_attention_in(&t->m, t->m.projects[i].id, NULL), y, x, w,
	    attr);

	draw_text(y, x + used, w - used, t->m.projects[i].name, attr);
}

static void
projects_draw(struct tui *t, const struct rect *r)
{
	list_draw(t, r, PANE_PROJECTS, &t->m.projects_cur, t->m.project_count,
	    projects_row, t->m.conn == CONN_LIVE ? "no projects" :
	    t->m.conn_problem == PROBLEM_UNAUTHORIZED ? "unauthorized" :
	    t->m.conn_problem == PROBLEM_UNREACHABLE ? "unreachable" : "connecting");
}

static unsigned
projects_click(struct tui *t, int row)
{
	return list_click(t, PANE_PROJECTS, &t->m.projects_cur, row);
}

const struct view_ops view_projects = {
	.name = "Projects",
	.where = W_PROJECTS,
	.title = projects_title,
	.draw = projects_draw,
	.click = projects_click,
};

static void
sessions_title(const struct tui *t, char *buf, size_t len)
{
	(void)t;
	snprintf(buf, len, "Sessions");
}

static void
sessions_row(struct tui *t, size_t i, int y, int x, int w, unsigned attr)
{
	const struct m_session *s = &t->m.sessions[i];
	const char *title = s->title != NULL && *s->title != '\0' ? s->title : s->id;
	char line[1024];
	size_t n = 0;

	/* The title on one line: newlines of a prompt become spaces. */
	for (const char *p = title; *p != '\0' && n + 1 < sizeof line; p++)
		line[n++] = *p == '\n' || *p == '\r' ? ' ' : *p;
	line[n] = '\0';
	n = (size_t)list_badge(t, model_attention_in(&t->m, s->project_id, s->id), y, x, w, attr);
	draw_text(y, x + (int)n, w - (int)n, line, attr);
}

static void
sessions_draw(struct tui *t, const struct rect *r)
{
	list_draw(t, r, PANE_SESSIONS, &t->m.sessions_cur, t->m.session_count,
	    sessions_row, model_project(&t->m) != NULL ? "no sessions" : "");
}

static unsigned
sessions_click(struct tui *t, int row)
{
	return list_click(t, PANE_SESSIONS, &t->m.sessions_cur, row);
}

const struct view_ops view_sessions = {
	.name = "Sessions",
	.where = W_SESSIONS,
	.title = sessions_title,
	.draw = sessions_draw,
	.click = sessions_click,
};

static void
runs_title(const struct tui *t, char *buf, size_t len)
{
	(void)t;
	snprintf(buf, len, "Runs");
}

static void
runs_row(struct tui *t, size_t i, int y, int x, int w, unsigned attr)
{
	const struct m_run *r = &t->m.runs[i];
	int si = draw_status_index(r->status), used;
	unsigned sel_bits = attr & (A_REVERSE | A_BOLD);
	char badge[64], line[1024];
	size_t n = 0;

	snprintf(badge, sizeof badge, "%s %-9s ", si >= 0 ? t->g->status[si] : "?",
	    r->status != NULL ? r->status : "?");
	used = draw_text(y, x, w, badge, draw_attr(t, draw_status_style(r->status)) | sel_bits);
	if (r->attention != NULL || r->permission_pending) {
		used += draw_text(y, x + used, w - used,
		    r->permission_pending ? "!perm " : "!plan ",
		    draw_attr(t, ST_ATTENTION) | sel_bits);
	}
	for (const char *p = r->prompt != NULL ? r->prompt : ""; *p != '\0' &&
	    n + 1 < sizeof line; p++)
		line[n++] = *p == '\n' || *p == '\r' ? ' ' : *p;
	line[n] = '\0';
	draw_text(y, x + used, w - used, line, attr);
}

static void
runs_draw(struct tui *t, const struct rect *r)
{
	list_draw(t, r, PANE_RUNS, &t->m.runs_cur, t->m.run_count, runs_row,
	    model_session(&t->m) != NULL ? "no runs" : "");
}

static unsigned
runs_click(struct tui *t, int row)
{
	return list_click(t, PANE_RUNS, &t->m.runs_cur, row);
}

const struct view_ops view_runs = {
	.name = "Runs",
	.where = W_RUNS,
	.title = runs_title,
	.draw = runs_draw,
	.click = runs_click,
};
