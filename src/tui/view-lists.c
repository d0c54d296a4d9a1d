/* The left column's panes: projects, sessions of the project, runs of the session. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"
#include "tui/run-detail.h"
#include "tui/tui.h"
#include "units.h"
#include "xalloc.h"

static void runs_age(const char *at, long long now_ms, char *out, size_t len);
static long long runs_ms(const char *from, const char *to, long long now_ms);
static void runs_tokens(long long n, char *out, size_t len);
static void runs_cost(bool known, double usd, char *out, size_t len);

/* Columns at the right of a wide list row: age, duration, tokens, cost. */
#define RUNS_COLS 39

/* Draws one row of a list at y (marker already drawn) with attr as the base. */
typedef void (*list_row_fn)(struct tui *t, size_t i, int y, int x, int w, unsigned attr);

/* A list pane: the selected row marked "> ", reverse video when focused;
 * with a filter, only the matching rows (top counts among them). */
static void
list_draw(struct tui *t, const struct rect *r, enum pane pane, struct m_cursor *cur,
    size_t count, list_row_fn row, const char *empty)
{
	bool focused = t->m.focus == pane;
	size_t shown, *rows;

	if (count == 0) {
		draw_text(r->y, r->x + 2, r->w - 2, empty, draw_attr(t, ST_DIM));
		return;
	}
	rows = draw_list_rows(t, pane, cur, (size_t)r->h, &shown);
	if (shown == 0)
		draw_text(r->y, r->x + 2, r->w - 2, "no match", draw_attr(t, ST_DIM));
	for (int i = 0; i < r->h && cur->top + (size_t)i < shown; i++) {
		size_t k = rows[cur->top + (size_t)i];
		bool sel = k == cur->sel;
		unsigned attr = sel ? draw_attr(t, focused ? ST_SELECTED : ST_SELECTED_DIM) :
		    draw_attr(t, ST_NORMAL);

		if (sel)
			draw_fill(r->y + i, r->x, r->w, attr);
		draw_text(r->y + i, r->x, 2, sel ? "> " : "  ", attr);
		row(t, k, r->y + i, r->x + 2, r->w - 2, attr);
	}
	free(rows);
}

/* A click on a list's row: select it (top is the list's first shown row). */
static unsigned
list_click(struct tui *t, enum pane pane, const struct m_cursor *cur, int row)
{
	size_t want = draw_list_nth(t, pane, cur->top + (size_t)row);

	if (want == SIZE_MAX)
		return TUI_HANDLED;
	tui_need(t, model_select(&t->m, pane, want));
	return TUI_HANDLED | TUI_REDRAW;
}

/* "Name ↓newest", "Name /query (2 of 5) ↓status" with a filter. */
static void
list_title(const struct tui *t, enum pane pane, const char *name, size_t count, char *buf,
    size_t len)
{
	size_t n;

	(void)count;
	draw_list_title(t, pane, name, buf, len);
	n = strlen(buf);
	if (n < len)
		snprintf(buf + n, len - n, " %s%s%s", t->ascii ? "sort:" : "↓",
		    model_sort_name(t->m.sort[pane]), t->m.show_archived &&
		    (pane == PANE_PROJECTS || pane == PANE_SESSIONS) ? " +archived" : "");
}

/* An archived row: dim (keeping the selection's reverse), after "[archived] ". */
static int
list_archived(struct tui *t, bool archived, int y, int x, int w, unsigned *attr)
{
	if (!archived)
		return 0;
	*attr = draw_attr(t, ST_DIM) | (*attr & (A_REVERSE | A_BOLD));
	return draw_text(y, x, w, "[archived] ", *attr);
}

static void
projects_title(const struct tui *t, char *buf, size_t len)
{
	list_title(t, PANE_PROJECTS, "Projects", t->m.project_count, buf, len);
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

	used += list_archived(t, t->m.projects[i].archived, y, x + used, w - used, &attr);
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
lists_sessions_title(const struct tui *t, char *buf, size_t len)
{
	list_title(t, PANE_SESSIONS, "Sessions", t->m.session_count, buf, len);
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
	n += (size_t)list_archived(t, s->archived, y, x + (int)n, w - (int)n, &attr);
	/* A wide pane: the last run's status first, then age (of the last
	 * change), duration and tokens (its runs among the project's last
	 * ones read) at the right, as the runs show them. */
	if (w - (int)n >= 12 + RUNS_COLS + 16) {
		unsigned bits = attr & (A_REVERSE | A_BOLD);
		int si = draw_status_index(s->last_run_status), used = (int)n;
		long long now = clock_wall_ms(), ms = -1, tokens = 0;
		char badge[64], age[32], dur[32], tok[32], usd[32], cols[128];
		bool priced = true;
		double cost = 0;

		for (size_t k = 0; k < t->m.project_run_count; k++) {
			const struct m_run *r = &t->m.project_runs[k];
			long long d;

			if (r->session_id == NULL || strcmp(r->session_id, s->id) != 0)
				continue;
			d = runs_ms(r->started_at, r->finished_at, now);
			if (d >= 0)
				ms = (ms < 0 ? 0 : ms) + d;
			tokens += r->tokens > 0 ? r->tokens : 0;
			cost += r->has_cost ? r->cost : 0;
			priced = priced && (r->has_cost || r->tokens == 0);
		}
		snprintf(badge, sizeof badge, "%s %-9s ", si >= 0 ? t->g->status[si] : " ",
		    s->last_run_status != NULL ? s->last_run_status : "-");
		used += draw_text(y, x + used, w - used, badge,
		    draw_attr(t, draw_status_style(s->last_run_status)) | bits);
		runs_age(s->updated_at, now, age, sizeof age);
		units_format_duration(ms, dur, sizeof dur);
		runs_tokens(tokens, tok, sizeof tok);
		runs_cost(priced && tokens > 0, cost, usd, sizeof usd);
		snprintf(cols, sizeof cols, "%8s %7s %10s %8s", age, dur, tok, usd);
		draw_text(y, x + w - RUNS_COLS + 2, RUNS_COLS - 2, cols, draw_attr(t, ST_DIM) | bits);
		draw_text(y, x + used, w - used - RUNS_COLS, line, attr);
		t->ages_shown = true;
		return;
	}
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
	.title = lists_sessions_title,
	.draw = sessions_draw,
	.click = sessions_click,
};

static void
runs_title(const struct tui *t, char *buf, size_t len)
{
	list_title(t, PANE_RUNS, "Runs", t->m.run_count, buf, len);
}

/* "2m ago", "3h ago" for an RFC 3339 time; "-" when unknown. */
static void
runs_age(const char *at, long long now_ms, char *out, size_t len)
{
	int64_t ms;
	long long s;

	if (at == NULL || !time_parse_utc(at, &ms)) {
		snprintf(out, len, "-");
		return;
	}
	s = (now_ms - ms) / 1000;
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, len, "%llds ago", s);
	else if (s < 3600)
		snprintf(out, len, "%lldm ago", s / 60);
	else if (s < 86400)
		snprintf(out, len, "%lldh ago", s / 3600);
	else
		snprintf(out, len, "%lldd ago", s / 86400);
}

/* Milliseconds from start to end (or now); -1 before it started. */
static long long
runs_ms(const char *from, const char *to, long long now_ms)
{
	int64_t a, b = now_ms;

	if (from == NULL || !time_parse_utc(from, &a) || (to != NULL && !time_parse_utc(to, &b)))
		return -1;
	return b - a > 0 ? b - a : 0;
}

/* "$0.0123", "$12.34", or nothing without a price (never a guess). */
static void
runs_cost(bool known, double usd, char *out, size_t len)
{
	if (!known)
		snprintf(out, len, "%s", "");
	else if (usd < 10)
		snprintf(out, len, "$%.4f", usd);
	else
		snprintf(out, len, "$%.2f", usd);
}

/* Tokens as every row, the Log's title, the run detail and `runs show` say them. */
static void
runs_tokens(long long n, char *out, size_t len)
{
	run_detail_tokens(n, true, out, len);
}


/*
 * " +12 -3" (green, red) right-aligned before column end of a run row whose
 * text takes used columns; the columns it took (0: no room for it).
 */
static int
runs_changes(struct tui *t, const struct m_run *r, int y, int x, int end, int used,
    unsigned bits)
{
	char add[24], del[24];
	int aw = snprintf(add, sizeof add, " +%ld", r->additions);
	int dw = snprintf(del, sizeof del, " -%ld", r->deletions);

	if (end - used < aw + dw + 8)
		return 0;
	draw_text(y, x + end - aw - dw, aw, add, draw_attr(t, ST_OK) | bits);
	draw_text(y, x + end - dw, dw, del, draw_attr(t, ST_FAIL) | bits);
	return aw + dw;
}

static void
runs_row(struct tui *t, size_t i, int y, int x, int w, unsigned attr)
{
	const struct m_run *r = &t->m.runs[i];
	int si = draw_status_index(r->status), used;
	unsigned sel_bits = attr & (A_REVERSE | A_BOLD);
	char badge[64], line[1024];
	size_t n = 0;
	bool wide;
	int end;

	snprintf(badge, sizeof badge, "%s %-9s ", si >= 0 ? t->g->status[si] : "?",
	    r->status != NULL ? r->status : "?");
	/* While runs are marked, a column says which. */
	used = t->m.mark_count == 0 ? 0 : draw_text(y, x, w, model_marked(&t->m, r->id) ?
	    (t->ascii ? "v " : "\u2713 ") : "  ", draw_attr(t, ST_ATTENTION) | sel_bits);
	used += draw_text(y, x + used, w - used, badge,
	    draw_attr(t, draw_status_style(r->status)) | sel_bits);
	if (r->attention != NULL || r->permission_pending) {
		used += draw_text(y, x + used, w - used,
		    r->permission_pending ? "!perm " : "!plan ",
		    draw_attr(t, ST_ATTENTION) | sel_bits);
	}
	for (const char *p = r->prompt != NULL ? r->prompt : ""; *p != '\0' &&
	    n + 1 < sizeof line; p++)
		line[n++] = *p == '\n' || *p == '\r' ? ' ' : *p;
	line[n] = '\0';
	wide = w - used >= RUNS_COLS + 16;
	end = wide ? w - RUNS_COLS : w;
	/* What it changed in its workspace so far, at the end of the prompt's room. */
	if (r->has_changes && r->files > 0)
		end -= runs_changes(t, r, y, x, end, used, sel_bits);
	draw_text(y, x + used, end - used, line, attr);
	/* A wide pane: age, duration and tokens at the right. */
	if (wide) {
		char age[32], dur[32], tok[32], usd[32], cols[128];
		long long now = clock_wall_ms();

		runs_age(r->created_at, now, age, sizeof age);
		units_format_duration(runs_ms(r->started_at, r->finished_at, now), dur, sizeof dur);
		runs_tokens(r->tokens, tok, sizeof tok);
		runs_cost(r->has_cost, r->cost, usd, sizeof usd);
		snprintf(cols, sizeof cols, "%8s %7s %10s %8s", age, dur, tok, usd);
		draw_text(y, x + w - RUNS_COLS + 2, RUNS_COLS - 2, cols, draw_attr(t, ST_DIM) |
		    (attr & (A_REVERSE | A_BOLD)));
		t->ages_shown = true;
	}
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
