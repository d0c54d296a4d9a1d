/* The connectors of the service (MCP servers the agents may use): state, test. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "tui/tui.h"

static void
connectors_title(const struct tui *t, char *buf, size_t len)
{
	snprintf(buf, len, "Connectors (%zu)", t->m.connector_count);
}

static void
connectors_draw(struct tui *t, const struct rect *r)
{
	struct model *m = &t->m;
	bool focused = m->focus == PANE_RIGHT;
	int cs = 10, cn = r->w / 4 > 12 ? r->w / 4 : 12, ck = 18, x;

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
	model_cursor_fit(&m->connectors_cur, m->connector_count, (size_t)(r->h - 1));
	for (int i = 0; i < r->h - 1; i++) {
		size_t k = m->connectors_cur.top + (size_t)i;
		const struct m_connector *c;
		bool sel = k == m->connectors_cur.sel;
		unsigned attr, bits;
		char kind[64];
		int y = r->y + 1 + i;

		if (k >= m->connector_count)
			break;
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
		snprintf(kind, sizeof kind, "%s %s", c->kind != NULL ? c->kind : "-",
		    c->transport != NULL ? c->transport : "");
		draw_text(y, x + cs + cn, ck - 1, kind, attr);
		draw_text(y, x + cs + cn + ck, r->w - (x - r->x) - cs - cn - ck,
		    c->test != NULL ? c->test : "-", attr);
	}
}

static unsigned
connectors_click(struct tui *t, int row)
{
	if (row < 1)
		return TUI_HANDLED;
	tui_need(t, model_select(&t->m, PANE_RIGHT, t->m.connectors_cur.top + (size_t)row - 1));
	return TUI_HANDLED | TUI_REDRAW;
}

const struct view_ops view_connectors = {
	.name = "Connectors",
	.where = W_CONNECTORS,
	.title = connectors_title,
	.draw = connectors_draw,
	.click = connectors_click,
};
