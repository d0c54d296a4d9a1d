/* The connectors of the service (MCP servers the agents may use): state, test. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/tui.h"

static void
connectors_title(const struct tui *t, char *buf, size_t len)
{
	if (model_list_query(&t->m, PANE_RIGHT)[0] != '\0')
		draw_list_title(t, PANE_RIGHT, "Connectors", buf, len);
	else
		snprintf(buf, len, "Connectors (%zu)", t->m.connector_count);
}

static void
connectors_draw(struct tui *t, const struct rect *r)
{
	struct model *m = &t->m;
	bool focused = m->focus == PANE_RIGHT;
	int cs = 10, cn = r->w / 4 > 12 ? r->w / 4 : 12, ck = 23, x;
	size_t shown, *rows;

	if (m->connector_count == 0) {
		draw_text(r->y, r->x + 1, r->w - 1, "no connectors", draw_attr(t, ST_DIM));
		return;
	}
	x = r->x + 2;
	draw_text(r->y, x, cs - 1, "STATE", A_BOLD);
	draw_text(r->y, x + cs, cn - 1, "NAME", A_BOLD);
	draw_text(r->y, x + cs + cn, ck - 1, "KIND", A_BOLD);
	draw_text(r->y, x + cs + cn + ck, r->w - (x - r->x) - cs - cn - ck, "LAST TEST",
	    A_BOLD);
	if (r->h < 2)
		return;
	rows = draw_list_rows(t, PANE_RIGHT, &m->connectors_cur, (size_t)(r->h - 1), &shown);
	if (shown == 0)
		draw_text(r->y + 1, r->x + 2, r->w - 2, "no match", draw_attr(t, ST_DIM));
	for (int i = 0; i < r->h - 1; i++) {
		size_t k;
		const struct m_connector *c;
		bool sel;
		unsigned attr, bits;
		char kind[64];
		int y = r->y + 1 + i;

		if (m->connectors_cur.top + (size_t)i >= shown)
			break;
		k = rows[m->connectors_cur.top + (size_t)i];
		sel = k == m->connectors_cur.sel;
		c = &m->connectors[k];
		attr = !sel ? draw_attr(t, ST_NORMAL) :
		    draw_attr(t, focused ? ST_SELECTED : ST_SELECTED_DIM);
		bits = attr & (A_REVERSE | A_BOLD);
		if (sel)
			draw_fill(y, r->x, r->w, attr);
		draw_text(y, r->x, 2, sel ? "> " : "  ", attr);
		x = r->x + 2;
		draw_text(y, x, cs - 1, c->enabled ? "enabled" : "disabled",
		    draw_attr(t, c->enabled ? ST_OK : ST_DIM) | bits);
		draw_text(y, x + cs, cn - 1, c->name != NULL ? c->name : c->id, attr);
		/* The extra paths a stdio server may use (connectors show lists them). */
		if (c->paths > 0)
			snprintf(kind, sizeof kind, "%s %s +%zu path%s", c->kind != NULL ? c->kind :
			    "-", c->transport != NULL ? c->transport : "", c->paths,
			    c->paths == 1 ? "" : "s");
		else
			snprintf(kind, sizeof kind, "%s %s", c->kind != NULL ? c->kind : "-",
			    c->transport != NULL ? c->transport : "");
		draw_text(y, x + cs + cn, ck - 1, kind, attr);
		draw_text(y, x + cs + cn + ck, r->w - (x - r->x) - cs - cn - ck,
		    c->test != NULL ? c->test : "-", attr);
	}
	free(rows);
}

static unsigned
connectors_click(struct tui *t, int row)
{
	size_t k;

	if (row < 1 || (k = draw_list_nth(t, PANE_RIGHT,
	    t->m.connectors_cur.top + (size_t)row - 1)) == SIZE_MAX)
		return TUI_HANDLED;
	tui_need(t, model_select(&t->m, PANE_RIGHT, k));
	return TUI_HANDLED | TUI_REDRAW;
}

const struct view_ops view_connectors = {
	.name = "Connectors",
	.where = W_CONNECTORS,
	.title = connectors_title,
	.draw = connectors_draw,
	.click = connectors_click,
};
