/* The plan of the selected session: version, revision, status, summary, steps, feedback. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "tui/tui.h"

/* Rows written so far (row 0 is the plan's first) and the pane they go into. */
struct plan_out {
	struct tui *t;
	const struct rect *r;
	size_t row;
	size_t top;
};

/* Writes text wrapped at the pane's width, indented by indent columns. */
static void
plan_out_emit(struct plan_out *o, const char *text, unsigned attr, int indent)
{
	const struct rect *r = o->r;
	size_t len = strlen(text), at = 0, n, nl, next;
	int w = r->w - indent;

	if (w < 4) {
		indent = 0;
		w = r->w;
	}
	do {
		nl = strcspn(text + at, "\n");
		n = draw_wrap(text + at, nl, w, &next);
		if (o->row >= o->top && o->row < o->top + (size_t)r->h) {
			draw_span(r->y + (int)(o->row - o->top), r->x + indent, w, text + at, n,
			    NULL, attr, attr);
		}
		o->row++;
		at += next;
		if (next == nl && at < len && text[at] == '\n')
			at++;
	} while (at < len);
}

static void
plan_title(const struct tui *t, char *buf, size_t len)
{
	const struct m_plan *p = &t->m.plan;

	if (!p->present)
		snprintf(buf, len, "Plan");
	else
		snprintf(buf, len, "Plan v%ld r%ld: %s", p->version, p->revision,
		    p->status != NULL ? p->status : "?");
}

/* The glyph and style of a step's status. */
static const char *
plan_step_glyph(const struct tui *t, const char *status, enum tui_style *st)
{
	static const struct {
		const char *status;
		int glyph;
		enum tui_style style;
	} steps[] = {
		{ "pending", 0, ST_QUEUED },
		{ "in-progress", 1, ST_RUNNING },
		{ "completed", 2, ST_OK },
		{ "failed", 3, ST_FAIL },
	};

	for (size_t i = 0; status != NULL && i < sizeof steps / sizeof steps[0]; i++) {
		if (strcmp(status, steps[i].status) == 0) {
			*st = steps[i].style;
			return t->g->status[steps[i].glyph];
		}
	}
	*st = ST_NORMAL;
	return "?";
}

static void
plan_draw(struct tui *t, const struct rect *r)
{
	struct m_plan *p = &t->m.plan;
	struct plan_out o = { t, r, 0, t->m.plan_top };
	bool pending = p->status != NULL && strcmp(p->status, "awaiting-approval") == 0;
	char line[1024], run[64];
	enum tui_style st;

	if (model_session(&t->m) == NULL) {
		draw_text(r->y, r->x + 1, r->w - 1, "no session selected", draw_attr(t, ST_DIM));
		return;
	}
	if (!p->present) {
		draw_text(r->y, r->x + 1, r->w - 1, "no plan in this session",
		    draw_attr(t, ST_DIM));
		return;
	}
	draw_short_id(t, p->run_id, run, sizeof run);
	snprintf(line, sizeof line, "Plan v%ld r%ld  %s  run %s", p->version, p->revision,
	    p->status != NULL ? p->status : "?", run);
	plan_out_emit(&o, line, draw_attr(t, pending ? ST_ATTENTION : ST_NORMAL) | A_BOLD, 1);
	plan_out_emit(&o, "", A_NORMAL, 1);
	if (p->summary != NULL && *p->summary != '\0') {
		plan_out_emit(&o, p->summary, A_NORMAL, 1);
		plan_out_emit(&o, "", A_NORMAL, 1);
	}
	snprintf(line, sizeof line, "Steps (%zu):", p->step_count);
	plan_out_emit(&o, line, A_BOLD, 1);
	for (size_t i = 0; i < p->step_count; i++) {
		const struct m_plan_step *s = &p->steps[i];
		const char *g = plan_step_glyph(t, s->status, &st);

		snprintf(line, sizeof line, "%s %zu. %s", g, i + 1,
		    s->title != NULL ? s->title : "");
		plan_out_emit(&o, line, draw_attr(t, st == ST_QUEUED ? ST_NORMAL : st), 3);
	}
	if (p->feedback != NULL && *p->feedback != '\0') {
		plan_out_emit(&o, "", A_NORMAL, 1);
		plan_out_emit(&o, "Feedback:", A_BOLD, 1);
		plan_out_emit(&o, p->feedback, A_NORMAL, 3);
	}
	if (pending) {
		char a[32], e[32], x[32];

		snprintf(line, sizeof line, "%s approve  %s revise  %s reject",
		    draw_key("approve", "a", a, sizeof a), draw_key("revise", "e", e, sizeof e),
		    draw_key("reject", "x", x, sizeof x));
		plan_out_emit(&o, "", A_NORMAL, 1);
		plan_out_emit(&o, line, draw_attr(t, ST_ATTENTION), 1);
	}
	if (t->m.plan_top > 0 && t->m.plan_top + (size_t)r->h > o.row)
		t->m.plan_top = o.row > (size_t)r->h ? o.row - (size_t)r->h : 0;
}

const struct view_ops view_plan = {
	.name = "Plan",
	.where = W_PLAN,
	.title = plan_title,
	.draw = plan_draw,
};
