/* The artifacts of the selected session: name, path, size, version, run. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/tui.h"
#include "units.h"

/* Column widths for an inner width w; path 0 when it does not fit. */
static void
artifacts_columns(int w, int *name, int *path, int *size, int *version, int *run)
{
	*size = 10;
	*version = 9;
	*run = 9;
	*name = w - 2 - *size - *version - *run;
	*path = 0;
	if (*name > 40) {
		*path = *name / 2;
		*name -= *path;
	}
	if (*name < 4)
		*name = 4;
}

static void
artifacts_title(const struct tui *t, char *buf, size_t len)
{
	const struct m_session *s = model_session(&t->m);
	char id[64];

	if (s == NULL) {
		snprintf(buf, len, "Artifacts");
		return;
	}
	draw_short_id(t, s->id, id, sizeof id);
	if (model_list_query(&t->m, PANE_RIGHT)[0] != '\0') {
		char name[96];

		snprintf(name, sizeof name, "Artifacts: %s", id);
		draw_list_title(t, PANE_RIGHT, name, buf, len);
	} else
		snprintf(buf, len, "Artifacts: %s (%zu)", id, t->m.artifact_count);
}

/* The version without "sha256:", 8 characters. */
static void
artifacts_version(const char *v, char *out, size_t len)
{
	const char *colon = v != NULL ? strchr(v, ':') : NULL;

	snprintf(out, len, "%.8s", v == NULL ? "-" : colon != NULL ? colon + 1 : v);
}

static void
artifacts_draw(struct tui *t, const struct rect *r)
{
	struct model *m = &t->m;
	bool focused = m->focus == PANE_RIGHT;
	int cn, cp, cs, cv, cr, x;
	char size[32], version[16], run[64];
	size_t shown, *rows;

	if (model_session(m) == NULL) {
		draw_text(r->y, r->x + 1, r->w - 1, "no session selected", draw_attr(t, ST_DIM));
		return;
	}
	if (m->artifact_count == 0) {
		draw_text(r->y, r->x + 1, r->w - 1, "no artifacts in this session",
		    draw_attr(t, ST_DIM));
		return;
	}
	artifacts_columns(r->w, &cn, &cp, &cs, &cv, &cr);
	x = r->x + 2;
	draw_text(r->y, x, cn - 1, "NAME", A_BOLD);
	x += cn;
	if (cp > 0) {
		draw_text(r->y, x, cp - 1, "PATH", A_BOLD);
		x += cp;
	}
	draw_text(r->y, x, cs - 1, "SIZE", A_BOLD);
	draw_text(r->y, x + cs, cv - 1, "VERSION", A_BOLD);
	draw_text(r->y, x + cs + cv, cr, "RUN", A_BOLD);
	if (r->h < 2)
		return;
	rows = draw_list_rows(t, PANE_RIGHT, &m->artifacts_cur, (size_t)(r->h - 1), &shown);
	if (shown == 0)
		draw_text(r->y + 1, r->x + 2, r->w - 2, "no match", draw_attr(t, ST_DIM));
	for (int i = 0; i < r->h - 1; i++) {
		size_t k;
		const struct m_artifact *a;
		unsigned attr;
		int y = r->y + 1 + i;

		if (m->artifacts_cur.top + (size_t)i >= shown)
			break;
		k = rows[m->artifacts_cur.top + (size_t)i];
		a = &m->artifacts[k];
		attr = k != m->artifacts_cur.sel ? draw_attr(t, ST_NORMAL) :
		    draw_attr(t, focused ? ST_SELECTED : ST_SELECTED_DIM);
		if (k == m->artifacts_cur.sel)
			draw_fill(y, r->x, r->w, attr);
		draw_text(y, r->x, 2, k == m->artifacts_cur.sel ? "> " : "  ", attr);
		x = r->x + 2;
		draw_text(y, x, cn - 1, a->name != NULL ? a->name : "-", attr);
		x += cn;
		if (cp > 0) {
			draw_text(y, x, cp - 1, a->path != NULL ? a->path : "-", attr);
			x += cp;
		}
		units_format_size(a->size, size, sizeof size);
		draw_text(y, x, cs - 1, size, attr);
		artifacts_version(a->version, version, sizeof version);
		draw_text(y, x + cs, cv - 1, version, attr);
		draw_tail_id(t, a->run_id, run, sizeof run);
		draw_text(y, x + cs + cv, cr, run, attr);
	}
	free(rows);
}

static unsigned
artifacts_click(struct tui *t, int row)
{
	size_t k;

	if (row < 1 ||
	    (k = draw_list_nth(t, PANE_RIGHT, t->m.artifacts_cur.top + (size_t)row - 1)) == SIZE_MAX)
		return TUI_HANDLED;
	tui_need(t, model_select(&t->m, PANE_RIGHT, k));
	return TUI_HANDLED | TUI_REDRAW;
}

const struct view_ops view_artifacts = {
	.name = "Artifacts",
	.where = W_ARTIFACTS,
	.title = artifacts_title,
	.draw = artifacts_draw,
	.click = artifacts_click,
};
