/* The live log of the selected run or session: follow, wrap, timestamps, filter. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "timeutil.h"
#include "tui/run-detail.h"
#include "tui/tui.h"

static void
log_title(const struct tui *t, char *buf, size_t len)
{
	const struct m_log *l = &t->m.log;
	char id[64], count[48] = "", search[MODEL_QUERY_MAX + 48] = "", cost[96] = "";
	char tok[32], cached[32];
	size_t index, total;

	if (l->scope_id == NULL) {
		snprintf(buf, len, "Log");
		return;
	}
	draw_short_id(t, l->scope_id, id, sizeof id);
	if (l->filter[0] != '\0')
		snprintf(count, sizeof count, " (%zu line%s)", l->match_count,
		    l->match_count == 1 ? "" : "s");
	if (l->search[0] != '\0') {
		model_log_search_count(&t->m, &index, &total);
		if (index > 0)
			snprintf(search, sizeof search, " /%s %zu/%zu", l->search, index, total);
		else
			snprintf(search, sizeof search, " /%s (%zu)", l->search, total);
	}
	/* A run's tokens as its row shows them, the cached part apart, and its
	 * cost where settings.json's pricing gives one. */
	for (size_t i = 0; l->run_scope && i < t->m.run_count; i++) {
		const struct m_run *r = &t->m.runs[i];
		size_t n = 0;

		if (r->id == NULL || strcmp(r->id, l->scope_id) != 0)
			continue;
		if (r->tokens > 0) {
			run_detail_tokens(r->tokens, true, tok, sizeof tok);
			run_detail_tokens(r->cached, false, cached, sizeof cached);
			n = (size_t)snprintf(cost, sizeof cost, " %s%s%s%s", tok,
			    r->cached > 0 ? ", " : "", r->cached > 0 ? cached : "",
			    r->cached > 0 ? " cached" : "");
		}
		if (r->has_cost && n < sizeof cost)
			snprintf(cost + n, sizeof cost - n, " $%.4f", r->cost);
	}
	/* Tokens and cost last: a narrow title cuts them before the filter and search. */
	snprintf(buf, len, "Log: %s (%s)%s%s%s%s%s%s%s%s%s", id, l->run_scope ? "run" : "session",
	    l->follow ? " follow" : "", l->wrap ? " wrap" : "",
	    l->timestamps && l->relative ? " +time" : "",
	    l->loading ? " loading" : "", l->filter[0] != '\0' ? " &" : "", l->filter, count,
	    search, cost);
}

/* Marks in mask the bytes of text inside a match of query (ASCII case folded). */
static void
log_mask(const char *text, size_t len, const char *query, unsigned char *mask)
{
	size_t q = strlen(query);

	if (q == 0 || q > len)
		return;
	for (size_t i = 0; i + q <= len; i++) {
		if (strncasecmp(text + i, query, q) == 0) {
			memset(mask + i, 1, q);
			i += q - 1;
		}
	}
}

/* When the run of a line started (ms since the epoch), 0 when unknown. */
static long long
log_run_start_ms(const struct tui *t, const char *run_id)
{
	int64_t ms;

	for (size_t i = 0; run_id != NULL && i < t->m.run_count; i++) {
		const struct m_run *r = &t->m.runs[i];

		if (r->id == NULL || strcmp(r->id, run_id) != 0)
			continue;
		if ((r->started_at != NULL && time_parse_utc(r->started_at, &ms)) ||
		    (r->created_at != NULL && time_parse_utc(r->created_at, &ms)))
			return (long long)ms;
	}
	return 0;
}

/* "+12.4s", "+3m05s", "+1h02m" (before the start "-0.3s"), 7 columns. */
static void
log_relative(long long d, char *out, size_t len)
{
	const char *sign = d < 0 ? "-" : "+";
	long long a = d < 0 ? -d : d, s = a / 1000;
	char v[24];

	if (a < 60000)
		snprintf(v, sizeof v, "%s%lld.%llds", sign, s, a % 1000 / 100);
	else if (s < 3600)
		snprintf(v, sizeof v, "%s%lldm%02llds", sign, s / 60, s % 60);
	else
		snprintf(v, sizeof v, "%s%lldh%02lldm", sign, s / 3600, s / 60 % 60);
	snprintf(out, len, "%7s", v);
}

/* The meta part of a line's prefix: time and, in session scope, the run. */
static void
log_meta(const struct tui *t, const struct log_line *ln, char *out, size_t len)
{
	char id[64] = "", rel[24];
	long long start;
	int n = 0;

	out[0] = '\0';
	if (t->m.log.timestamps && t->m.log.relative && ln->ms > 0 &&
	    (start = log_run_start_ms(t, ln->run_id)) > 0) {
		log_relative(ln->ms - start, rel, sizeof rel);
		n = snprintf(out, len, "%s ", rel);
	} else if (t->m.log.timestamps && ln->time[0] != '\0')
		n = snprintf(out, len, "%s ", ln->time);
	if (!t->m.log.run_scope && ln->run_id != NULL && n >= 0 && (size_t)n < len) {
		draw_tail_id(t, ln->run_id, id, sizeof id);
		snprintf(out + n, len - (size_t)n, "%s ", id);
	}
}

/* The glyph of a line's kind and a space, "" for output. */
static const char *
log_glyph(const struct tui *t, const struct log_line *ln, char *out, size_t len)
{
	if (ln->kind == LOG_OUTPUT && !ln->error)
		return "";
	snprintf(out, len, "%s ", ln->error ? t->g->log_error :
	    (size_t)ln->kind < 8 ? t->g->log[ln->kind] : "?");
	return out;
}

static enum tui_style
log_style(const struct log_line *ln)
{
	static const enum tui_style styles[] = {
		[LOG_OUTPUT] = ST_NORMAL, [LOG_TOOL] = ST_QUEUED, [LOG_PROGRESS] = ST_DIM,
		[LOG_STATUS] = ST_OK, [LOG_PERMISSION] = ST_ATTENTION,
		[LOG_PLAN] = ST_ATTENTION, [LOG_ARTIFACT] = ST_OK, [LOG_NOTICE] = ST_RUNNING,
	};

	if (ln->error)
		return ST_ERROR;
	return (size_t)ln->kind < sizeof styles / sizeof styles[0] ? styles[ln->kind] : ST_NORMAL;
}

/* Draws the prefix of a line at row y; returns its columns. */
static int
log_draw_prefix(struct tui *t, const char *meta, const char *glyph, unsigned attr,
    int y, int x, int w)
{
	int used = draw_text(y, x, w, meta, draw_attr(t, ST_DIM));

	return used + draw_text(y, x + used, w - used, glyph, attr);
}

/*
 * Rows a line takes in r (wrapped or not); with draw, draws them from row y
 * on, leaving out its first skip rows and stopping at the pane's end.
 */
static int
log_line(struct tui *t, const struct log_line *ln, const struct rect *r, int y,
    int skip, bool draw, bool current)
{
	static unsigned char mask[MODEL_LINE_MAX + 1];
	const char *query = t->m.log.filter, *search = t->m.log.search;
	char meta[128], gbuf[32];
	const char *glyph = log_glyph(t, ln, gbuf, sizeof gbuf);
	size_t len = strlen(ln->text), at = 0, n;
	int pw, rows = 0, used;
	unsigned attr = draw_attr(t, log_style(ln));
	unsigned base = ln->kind == LOG_OUTPUT && !ln->error ? draw_attr(t, ST_NORMAL) : attr;
	/* Filter and search matches highlighted; the current search match stands out. */
	unsigned hl = current ? draw_attr(t, ST_SELECTED) | A_BOLD | A_UNDERLINE :
	    draw_attr(t, ST_MATCH);
	const unsigned char *mk = NULL;

	log_meta(t, ln, meta, sizeof meta);
	pw = draw_width(meta) + draw_width(glyph);
	if (pw > r->w / 2)
		pw = r->w / 2;
	if (draw && (query[0] != '\0' || search[0] != '\0') && len <= MODEL_LINE_MAX) {
		memset(mask, 0, len);
		log_mask(ln->text, len, query, mask);
		log_mask(ln->text, len, search, mask);
		mk = mask;
	}
	if (!t->m.log.wrap) {
		if (draw && skip == 0) {
			int room, fit;

			used = log_draw_prefix(t, meta, glyph, attr, y, r->x, pw);
			room = r->w - used;
			n = draw_fit(ln->text, len, room, &fit);
			if (n < len && room > 1) {
				/* Cut: the last column says so (w wraps instead). */
				n = draw_fit(ln->text, len, room - 1, &fit);
				draw_span(y, r->x + used, fit, ln->text, n, mk, base, hl);
				draw_text(y, r->x + used + fit, 1, t->g->ellipsis,
				    draw_attr(t, ST_DIM));
			} else
				draw_span(y, r->x + used, room, ln->text, len, mk, base, hl);
		}
		return 1;
	}
	do {
		size_t next;

		/* At a space when a word would be cut (draw_wrap), else where it fits. */
		n = draw_wrap(ln->text + at, len - at, r->w - pw, &next);
		if (next == 0)
			next = n = 1;
		if (draw && rows >= skip && y < r->y + r->h) {
			if (rows == 0)
				log_draw_prefix(t, meta, glyph, attr, y, r->x, pw);
			draw_span(y, r->x + pw, r->w - pw, ln->text + at, n,
			    mk != NULL ? mk + at : NULL, base, hl);
			y++;
		}
		at += next;
		rows++;
	} while (at < len);
	return rows;
}

/* "4,000". */
static void
log_thousands(size_t n, char *out, size_t len)
{
	char d[32];
	size_t k = (size_t)snprintf(d, sizeof d, "%zu", n), o = 0;

	for (size_t j = 0; j < k && o + 2 < len; j++) {
		if (j > 0 && (k - j) % 3 == 0)
			out[o++] = ',';
		out[o++] = d[j];
	}
	out[o] = '\0';
}

static void
log_draw(struct tui *t, const struct rect *r)
{
	struct m_log *l = &t->m.log;
	size_t count = model_log_visible(&t->m), top, i, unseen;
	int y = r->y, rows, skip = 0, need;

	if (l->scope_id == NULL) {
		draw_text(r->y, r->x + 1, r->w - 1, "no run selected", draw_attr(t, ST_DIM));
		return;
	}
	if (count == 0) {
		draw_text(r->y, r->x + 1, r->w - 1, l->loading ? "loading..." :
		    l->filter[0] != '\0' ? "no line matches the filter" : "no events yet",
		    draw_attr(t, ST_DIM));
		return;
	}
	model_log_fit(&t->m, (size_t)r->h);
	if (l->follow && l->wrap) {
		/* From the newest line up until the pane is full. */
		top = count;
		need = r->h;
		while (top > 0 && need > 0) {
			rows = log_line(t, model_log_line(&t->m, top - 1), r, 0, 0, false, false);
			top--;
			if (rows > need)
				skip = rows - need;
			need -= rows;
		}
		l->top = top;
	} else {
		if (l->top >= count)
			l->top = count - 1;
		top = l->top;
	}
	for (i = top; i < count && y < r->y + r->h; i++) {
		rows = log_line(t, model_log_line(&t->m, i), r, y, skip, true,
		    model_log_search_current(&t->m, i));
		y += rows - skip;
		skip = 0;
	}
	/* Not following: what is below the pane is said on its last row, the
	 * lines that arrived since the end was last shown first. */
	unseen = model_log_unseen(&t->m, i);
	if (!l->follow && i < count) {
		char below[128], f[32];
		const char *fk;
		int w;

		fk = draw_key("follow", "f", f, sizeof f);
		if (unseen > 0)
			snprintf(below, sizeof below, " %zu new line%s below (%s follows) ", unseen,
			    unseen == 1 ? "" : "s", fk);
		else
			snprintf(below, sizeof below, " %zu more line%s below (%s follows) ",
			    count - i, count - i == 1 ? "" : "s", fk);
		w = draw_width(below);
		if (w < r->w)
			draw_text(r->y + r->h - 1, r->x + r->w - w, w, below, draw_attr(t, ST_TITLE));
	}
	/* Where the view is, on the box's bottom edge (as less's and vim's ruler). */
	if (i < count || top > 0) {
		char ruler[96], a[32], b[32];
		int w;

		log_thousands(i, a, sizeof a);
		log_thousands(count, b, sizeof b);
		snprintf(ruler, sizeof ruler, " line %s/%s %zu%% ", a, b, i * 100 / count);
		w = draw_width(ruler);
		if (w + 2 < r->w)
			draw_text(r->y + r->h, r->x + r->w - w - 1, w, ruler, draw_attr(t, ST_DIM));
	}
}

const struct view_ops view_log = {
	.name = "Log",
	.where = W_LOG,
	.title = log_title,
	.draw = log_draw,
};
