/* The files the selected run changed (status, +N -M, path) and the coloured diff of one. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/tui.h"

/* Files beside the diff from this inner width on; else above it. */
#define CHANGES_SIDE_BY_SIDE 110
/* Incomplete changes take the first row to say so when the pane has this many rows. */
#define CHANGES_NOTICE_MIN_H 3

static void
changes_title(const struct tui *t, char *buf, size_t len)
{
	const struct m_changes *c = &t->m.changes;
	char id[64];

	if (c->run_id == NULL) {
		snprintf(buf, len, "Changes");
		return;
	}
	draw_short_id(t, c->run_id, id, sizeof id);
	snprintf(buf, len, "Changes: %s (%zu file%s +%ld -%ld)%s%s%s", id, c->file_count,
	    c->file_count == 1 ? "" : "s", c->additions, c->deletions,
	    c->live ? " live" : "", c->reverted_at != NULL ? " reverted" : "",
	    c->incomplete != NULL ? " incomplete" : "");
}

/* Where the list and the diff go in r: beside each other when wide, else one above. */
static void
changes_layout(const struct tui *t, const struct rect *r, struct rect *list, struct rect *diff)
{
	size_t files = t->m.changes.file_count;
	int h;

	if (r->w >= CHANGES_SIDE_BY_SIDE) {
		int lw = r->w * 2 / 5 > 60 ? 60 : r->w * 2 / 5;

		*list = (struct rect){ r->y, r->x, r->h, lw };
		*diff = (struct rect){ r->y, r->x + lw + 1, r->h, r->w - lw - 1 };
		return;
	}
	h = (int)files < r->h / 3 ? (int)files : r->h / 3;
	if (h < 1)
		h = 1;
	*list = (struct rect){ r->y, r->x, h, r->w };
	*diff = (struct rect){ r->y + h + 1, r->x, r->h - h - 1, r->w };
}

static void
changes_draw_list(struct tui *t, const struct rect *r)
{
	struct m_changes *c = &t->m.changes;
	bool focused = t->m.focus == PANE_RIGHT;
	char counts[48];

	model_cursor_fit(&c->cur, c->file_count, (size_t)r->h);
	for (int i = 0; i < r->h && c->cur.top + (size_t)i < c->file_count; i++) {
		size_t k = c->cur.top + (size_t)i;
		const struct m_change *f = &c->files[k];
		bool sel = k == c->cur.sel;
		unsigned attr = !sel ? draw_attr(t, ST_NORMAL) :
		    draw_attr(t, focused ? ST_SELECTED : ST_SELECTED_DIM);
		unsigned bits = attr & (A_REVERSE | A_BOLD);
		int y = r->y + i, x = r->x;
		char letter[2] = { f->status, '\0' };

		if (sel)
			draw_fill(y, r->x, r->w, attr);
		x += draw_text(y, x, 2, sel ? "> " : "  ", attr);
		x += draw_text(y, x, 2, letter, draw_attr(t, f->status == 'A' ? ST_OK :
		    f->status == 'D' ? ST_FAIL : ST_RUNNING) | bits) + 1;
		if (f->binary || f->too_large) {
			snprintf(counts, sizeof counts, "%-11s", f->binary ? "binary" : "too large");
			x += draw_text(y, x, r->w - (x - r->x), counts, draw_attr(t, ST_DIM) | bits);
		} else {
			snprintf(counts, sizeof counts, "+%ld", f->additions);
			draw_text(y, x, 6, counts, draw_attr(t, ST_OK) | bits);
			snprintf(counts, sizeof counts, "-%ld", f->deletions);
			draw_text(y, x + 6, 6, counts, draw_attr(t, ST_FAIL) | bits);
			x += 12;
		}
		draw_text(y, x, r->w - (x - r->x), f->path, attr);
	}
}

static void
changes_draw_diff(struct tui *t, const struct rect *r)
{
	struct m_changes *c = &t->m.changes;
	static const enum tui_style styles[] = {
		[DIFF_CONTEXT] = ST_NORMAL, [DIFF_HEADER] = ST_TITLE, [DIFF_HUNK] = ST_RUNNING,
		[DIFF_ADD] = ST_OK, [DIFF_DEL] = ST_FAIL,
	};
	bool header = false;

	if (r->h < 1)
		return;
	if (c->diff_count == 0) {
		draw_text(r->y, r->x + 1, r->w - 1, c->diff_path != NULL ? "reading the diff" : "",
		    draw_attr(t, ST_DIM));
		return;
	}
	if (c->diff_top >= c->diff_count)
		c->diff_top = c->diff_count - 1;
	/* The header state of the first line shown comes from the lines above it. */
	for (size_t i = 0; i < c->diff_top; i++)
		model_diff_kind(c->diff[i], &header);
	for (int i = 0; i < r->h && c->diff_top + (size_t)i < c->diff_count; i++) {
		const char *line = c->diff[c->diff_top + (size_t)i];
		enum diff_kind k = model_diff_kind(line, &header);

		draw_text(r->y + i, r->x, r->w, line, draw_attr(t, styles[k]));
	}
}

/* The rows the selected run's attempt group takes above the files: a title, one per attempt. */
static int
changes_attempt_rows(const struct tui *t, const struct rect *r)
{
	const struct m_attempts *a = &t->m.attempts;
	int n = (int)a->count + 1;

	if (model_attempts_want(&t->m) == NULL || a->group_id == NULL || a->count == 0 ||
	    r->h < n + 3)
		return 0;
	return n;
}

/* The group's attempts: the selected run's marked; status, model, files +/-, check. */
static void
changes_draw_attempts(struct tui *t, const struct rect *r)
{
	const struct m_attempts *a = &t->m.attempts;
	const struct m_run *run = model_run(&t->m);
	char line[512], files[64], key[32], id[64];

	draw_short_id(t, a->group_id, id, sizeof id);
	if (a->status != NULL && strcmp(a->status, "active") == 0)
		snprintf(line, sizeof line, "Attempts %s: %zu, active (%s applies the selected "
		    "run's)", id, a->count, draw_key("apply-attempt", "A", key, sizeof key));
	else
		snprintf(line, sizeof line, "Attempts %s: %zu, %s", id, a->count,
		    a->status != NULL ? a->status : "?");
	draw_text(r->y, r->x + 1, r->w - 1, line, draw_attr(t, ST_TITLE));
	for (size_t i = 0; i < a->count && (int)i + 1 < r->h; i++) {
		const struct m_attempt *it = &a->items[i];
		bool sel = run != NULL && it->run_id != NULL &&
		    strcmp(it->run_id, run->id) == 0;
		bool applied = a->applied_run != NULL && it->run_id != NULL &&
		    strcmp(a->applied_run, it->run_id) == 0;

		if (it->measured)
			snprintf(files, sizeof files, "%ld file%s +%ld -%ld", it->files,
			    it->files == 1 ? "" : "s", it->additions, it->deletions);
		else
			snprintf(files, sizeof files, "not measured yet");
		draw_short_id(t, it->run_id, id, sizeof id);
		snprintf(line, sizeof line, "%s%d %-12.12s %-10.10s %-22s check %-8s %s%s",
		    sel ? "> " : "  ", it->index, it->model != NULL ? it->model : "(default)",
		    it->run_status != NULL ? it->run_status : "?", files,
		    it->check != NULL ? it->check : "-", id, applied ? " applied" :
		    it->state != NULL && strcmp(it->state, "removed") == 0 ? " removed" : "");
		draw_text(r->y + 1 + (int)i, r->x + 1, r->w - 1, line, draw_attr(t,
		    sel ? ST_SELECTED_DIM : it->check != NULL && strcmp(it->check, "failed") == 0 ?
		    ST_FAIL : ST_NORMAL));
	}
}

/* One side of '=': the attempt's index and model over its whole diff, coloured. */
static void
changes_draw_side(struct tui *t, const struct rect *r, int k)
{
	static const enum tui_style styles[] = {
		[DIFF_CONTEXT] = ST_NORMAL, [DIFF_HEADER] = ST_TITLE, [DIFF_HUNK] = ST_RUNNING,
		[DIFF_ADD] = ST_OK, [DIFF_DEL] = ST_FAIL,
	};
	const struct m_attempts *a = &t->m.attempts;
	const struct m_attempt *it = model_attempt(&t->m, a->cmp[k].run);
	char head[256], id[64];
	bool header = false;

	draw_short_id(t, a->cmp[k].run, id, sizeof id);
	snprintf(head, sizeof head, "attempt %d (%s) %s", it != NULL ? it->index : 0,
	    it != NULL && it->model != NULL ? it->model : "default", id);
	draw_text(r->y, r->x, r->w, head, draw_attr(t, ST_TITLE));
	if (a->cmp[k].lines == NULL) {
		draw_text(r->y + 1, r->x, r->w, "reading the diff", draw_attr(t, ST_DIM));
		return;
	}
	if (a->cmp[k].count == 0)
		draw_text(r->y + 1, r->x, r->w, "no change", draw_attr(t, ST_DIM));
	for (int i = 0; i + 1 < r->h && (size_t)i < a->cmp[k].count; i++) {
		enum diff_kind kind = model_diff_kind(a->cmp[k].lines[i], &header);

		draw_text(r->y + 1 + i, r->x, r->w, a->cmp[k].lines[i], draw_attr(t, styles[kind]));
	}
}

/* '=' on: two attempts' whole diffs side by side (the selected run's on the left). */
static bool
changes_draw_compare(struct tui *t, const struct rect *r)
{
	const struct m_attempts *a = &t->m.attempts;
	const struct m_run *run = model_run(&t->m);
	int half = (r->w - 1) / 2;

	if (a->cmp[0].run == NULL || run == NULL || strcmp(a->cmp[0].run, run->id) != 0 ||
	    r->h < 2)
		return false;
	changes_draw_side(t, &(struct rect){ r->y, r->x, r->h, half }, 0);
	for (int y = r->y; y < r->y + r->h; y++)
		draw_text(y, r->x + half, 1, t->utf8 && !t->ascii ? "\u2502" : "|",
		    draw_attr(t, ST_DIM));
	changes_draw_side(t, &(struct rect){ r->y, r->x + half + 1, r->h, r->w - half - 1 }, 1);
	return true;
}

static void
changes_draw(struct tui *t, const struct rect *r)
{
	const struct m_changes *c = &t->m.changes;
	struct rect list, diff, body, rest;
	int rows;

	if (model_run(&t->m) == NULL) {
		draw_text(r->y, r->x + 1, r->w - 1, "no run selected", draw_attr(t, ST_DIM));
		return;
	}
	if ((rows = changes_attempt_rows(t, r)) > 0) {
		changes_draw_attempts(t, &(struct rect){ r->y, r->x, rows, r->w });
		draw_separator(t, r->y + rows, r->x - 1, r->w + 2);
		rest = (struct rect){ r->y + rows + 1, r->x, r->h - rows - 1, r->w };
		r = &rest;
		if (changes_draw_compare(t, r))
			return;
	}
	if (c->incomplete != NULL) {
		char why[512];

		/* Files may be missing from the list: said above it, never "changed no file". */
		snprintf(why, sizeof why, "incomplete, files may be missing: %s", c->incomplete);
		draw_text(r->y, r->x + 1, r->w - 1, why, draw_attr(t, ST_FAIL));
		if (r->h < CHANGES_NOTICE_MIN_H)
			return;
		body = (struct rect){ r->y + 1, r->x, r->h - 1, r->w };
		r = &body;
	}
	if (c->file_count == 0) {
		char again[96], key[32];

		snprintf(again, sizeof again, "its changes could not be read (%s reads them again)",
		    draw_key("reread", "r", key, sizeof key));
		draw_text(r->y, r->x + 1, r->w - 1, c->failed ? again : c->loading && c->files == NULL ? "reading the changes" :
		    c->live ? "no changes yet (the run goes on)" : "the run changed no file",
		    draw_attr(t, ST_DIM));
		return;
	}
	changes_layout(t, r, &list, &diff);
	changes_draw_list(t, &list);
	if (diff.x > list.x) {
		for (int y = r->y; y < r->y + r->h; y++)
			draw_text(y, diff.x - 1, 1, t->utf8 && !t->ascii ? "\u2502" : "|",
			    draw_attr(t, ST_DIM));
	} else
		draw_separator(t, diff.y - 1, r->x - 1, r->w + 2);
	changes_draw_diff(t, &diff);
}

static unsigned
changes_click(struct tui *t, int row)
{
	const struct rect *box = &t->box[PANE_RIGHT];
	struct rect list, diff, below;
	struct rect rest;
	size_t k;
	int rows;

	if ((rows = changes_attempt_rows(t, box)) > 0) {
		rest = (struct rect){ box->y + rows + 1, box->x, box->h - rows - 1, box->w };
		box = &rest;
		row -= rows + 1;
	}
	if (t->m.changes.incomplete != NULL && box->h >= CHANGES_NOTICE_MIN_H) {
		/* The first row is the notice that files may be missing. */
		below = (struct rect){ box->y + 1, box->x, box->h - 1, box->w };
		box = &below;
		row--;
	}
	changes_layout(t, box, &list, &diff);
	if (row < 0 || row >= list.h)
		return TUI_HANDLED;
	k = t->m.changes.cur.top + (size_t)row;
	tui_need(t, model_select(&t->m, PANE_RIGHT, k));
	return TUI_HANDLED | TUI_REDRAW;
}

const struct view_ops view_changes = {
	.name = "Changes",
	.where = W_CHANGES,
	.title = changes_title,
	.draw = changes_draw,
	.click = changes_click,
};
