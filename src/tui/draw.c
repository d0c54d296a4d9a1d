/* Drawing helpers and the screen's frame: title line, boxes, message line, status bar. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include "termtext.h"
#include "tui/tui.h"
#include "xalloc.h"

static const struct tui_glyphs draw_utf8 = {
	.ellipsis = "…",
	.crumb = " › ",
	.status = { "◌", "●", "✔", "✘", "⊘" },
	.log = { " ", "⚙", "·", "▶", "?", "☰", "✔", "!" },
	.log_error = "✘",
	.conn_live = "●",
	.conn_down = "○",
	.bar_full = "█",
	.bar_empty = "░",
};

static const struct tui_glyphs draw_ascii = {
	.ellipsis = "~",
	.crumb = " > ",
	.status = { ".", "*", "+", "x", "-" },
	.log = { " ", "#", ".", ">", "?", "=", "+", "!" },
	.log_error = "x",
	.conn_live = "*",
	.conn_down = "o",
	.bar_full = "#",
	.bar_empty = "-",
};

static const char *const draw_statuses[] = {
	"queued", "running", "completed", "failed", "cancelled"
};

static const enum tui_style draw_status_styles[] = {
	ST_QUEUED, ST_RUNNING, ST_OK, ST_FAIL, ST_QUEUED
};

/* Colour pairs; a style's pair 0 means no colour. */
enum { PAIR_RUNNING = 1, PAIR_OK, PAIR_FAIL, PAIR_TITLE, PAIR_ATTENTION, PAIR_MATCH, PAIR_QUEUED };

static const struct {
	short fg, bg;
} draw_pairs[] = {
	[PAIR_RUNNING] = { COLOR_YELLOW, -1 },
	[PAIR_OK] = { COLOR_GREEN, -1 },
	[PAIR_FAIL] = { COLOR_RED, -1 },
	[PAIR_TITLE] = { COLOR_CYAN, -1 },
	[PAIR_ATTENTION] = { COLOR_MAGENTA, -1 },
	[PAIR_MATCH] = { COLOR_BLACK, COLOR_YELLOW },
	[PAIR_QUEUED] = { COLOR_BLUE, -1 },
};

/* Each style without colour (NO_COLOR) and with it. */
static const struct {
	unsigned mono;
	unsigned color;
	short pair;
} draw_styles[ST__COUNT] = {
	[ST_NORMAL] = { A_NORMAL, A_NORMAL, 0 },
	[ST_SELECTED] = { A_REVERSE, A_REVERSE, 0 },
	[ST_SELECTED_DIM] = { A_BOLD, A_BOLD, 0 },
	[ST_TITLE] = { A_BOLD | A_REVERSE, A_BOLD, PAIR_TITLE },
	[ST_DIM] = { A_NORMAL, A_DIM, 0 },
	[ST_QUEUED] = { A_BOLD, A_NORMAL, PAIR_QUEUED },
	[ST_RUNNING] = { A_BOLD, A_BOLD, PAIR_RUNNING },
	[ST_OK] = { A_BOLD, A_NORMAL, PAIR_OK },
	[ST_FAIL] = { A_BOLD, A_BOLD, PAIR_FAIL },
	[ST_ATTENTION] = { A_BOLD, A_BOLD, PAIR_ATTENTION },
	[ST_MATCH] = { A_REVERSE, A_NORMAL, PAIR_MATCH },
	[ST_ERROR] = { A_BOLD, A_BOLD, PAIR_FAIL },
	[ST_BAR] = { A_NORMAL, A_NORMAL, 0 },
};

static const struct tui_glyphs *draw_g = &draw_ascii;

/* Colours the configuration file gives a style ("color.bar = white,blue"):
 * pair DRAW_CUSTOM_PAIR + style; -1 is the terminal's default. */
#define DRAW_CUSTOM_PAIR 16
/* A style drawn on the bars when color.bar is set: its colour on the bar's
 * background (pair DRAW_BAR_PAIR + style). */
#define DRAW_BAR_PAIR (DRAW_CUSTOM_PAIR + ST__COUNT)
static const char *const draw_style_names[ST__COUNT] = {
	[ST_NORMAL] = "normal", [ST_SELECTED] = "selected",
	[ST_SELECTED_DIM] = "selected-dim", [ST_TITLE] = "title", [ST_DIM] = "dim",
	[ST_QUEUED] = "queued", [ST_RUNNING] = "running", [ST_OK] = "ok", [ST_FAIL] = "fail",
	[ST_ATTENTION] = "attention", [ST_MATCH] = "match", [ST_ERROR] = "error",
	[ST_BAR] = "bar",
};
static struct {
	bool set;
	short fg, bg;
} draw_custom[ST__COUNT];

/* "red", "default", "208": a colour number, -1 for default; false when none. */
static bool
draw_color_parse(const char *v, short *out)
{
	static const char *const names[] = { "black", "red", "green", "yellow", "blue",
	    "magenta", "cyan", "white" };
	char *end;
	long n;

	if (strcasecmp(v, "default") == 0) {
		*out = -1;
		return true;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcasecmp(v, names[i]) == 0) {
			*out = (short)i;
			return true;
		}
	}
	n = strtol(v, &end, 10);
	if (end == v || *end != '\0' || n < 0 || n > 255)
		return false;
	*out = (short)n;
	return true;
}

bool
draw_color_set(const char *element, const char *value, char *why, size_t len)
{
	char fg[32], bg[32] = "default";
	const char *comma = strchr(value, ',');
	short f, b;

	for (int st = 0; st < ST__COUNT; st++) {
		if (draw_style_names[st] == NULL || strcmp(draw_style_names[st], element) != 0)
			continue;
		if (comma == NULL)
			snprintf(fg, sizeof fg, "%s", value);
		else if ((size_t)(comma - value) < sizeof fg) {
			snprintf(fg, sizeof fg, "%.*s", (int)(comma - value), value);
			snprintf(bg, sizeof bg, "%s", comma + 1);
		} else
			fg[0] = '\0';
		if (!draw_color_parse(fg, &f) || !draw_color_parse(bg, &b)) {
			snprintf(why, len, "'%s' is not FG or FG,BG (black, red, green, yellow, "
			    "blue, magenta, cyan, white, default or 0-255)", value);
			return false;
		}
		draw_custom[st].set = true;
		draw_custom[st].fg = f;
		draw_custom[st].bg = b;
		return true;
	}
	snprintf(why, len, "no element named '%s' (see taskdeck(1))", element);
	return false;
}

/* Box lines: the terminal's line drawing, or ASCII outside a UTF-8 locale. */
enum { LN_H, LN_V, LN_UL, LN_UR, LN_LL, LN_LR, LN_LT, LN_RT, LN__COUNT };
static const cchar_t *draw_lines[LN__COUNT];
static cchar_t draw_ascii_lines[LN__COUNT];

/* Picks glyphs and, unless monochrome, sets up the colour pairs. */
void
draw_init(struct tui *t)
{
	static const wchar_t ascii[LN__COUNT] = { L'-', L'|', L'+', L'+', L'+', L'+', L'+', L'+' };
	wchar_t wc[2] = { 0, 0 };

	t->g = t->ascii ? &draw_ascii : &draw_utf8;
	draw_g = t->g;
	for (int i = 0; i < LN__COUNT; i++) {
		wc[0] = ascii[i];
		setcchar(&draw_ascii_lines[i], wc, A_NORMAL, 0, NULL);
		draw_lines[i] = &draw_ascii_lines[i];
	}
	if (t->utf8) {
		draw_lines[LN_H] = WACS_HLINE;
		draw_lines[LN_V] = WACS_VLINE;
		draw_lines[LN_UL] = WACS_ULCORNER;
		draw_lines[LN_UR] = WACS_URCORNER;
		draw_lines[LN_LL] = WACS_LLCORNER;
		draw_lines[LN_LR] = WACS_LRCORNER;
		draw_lines[LN_LT] = WACS_LTEE;
		draw_lines[LN_RT] = WACS_RTEE;
	}
	if (!t->color)
		return;
	start_color();
	use_default_colors();
	for (size_t i = 1; i < sizeof draw_pairs / sizeof draw_pairs[0]; i++)
		init_pair((short)i, draw_pairs[i].fg, draw_pairs[i].bg);
	/* Colours the terminal does not have fall back to its default. */
	for (int st = 0; st < ST__COUNT; st++) {
		if (draw_custom[st].set)
			init_pair((short)(DRAW_CUSTOM_PAIR + st),
			    draw_custom[st].fg < COLORS ? draw_custom[st].fg : -1,
			    draw_custom[st].bg < COLORS ? draw_custom[st].bg : -1);
	}
	if (!draw_custom[ST_BAR].set)
		return;
	for (int st = 0; st < ST__COUNT; st++) {
		short fg = draw_custom[st].set ? draw_custom[st].fg : draw_styles[st].pair > 0 ?
		    draw_pairs[draw_styles[st].pair].fg : draw_custom[ST_BAR].fg;

		init_pair((short)(DRAW_BAR_PAIR + st), fg < COLORS ? fg : -1,
		    draw_custom[ST_BAR].bg < COLORS ? draw_custom[ST_BAR].bg : -1);
	}
}

unsigned
draw_attr(const struct tui *t, enum tui_style s)
{
	if (!t->color)
		return draw_styles[s].mono;
	/* A colour of the configuration: its pair, the style's attributes but reverse. */
	if (draw_custom[s].set)
		return (draw_styles[s].color & ~(unsigned)A_REVERSE) |
		    (unsigned)COLOR_PAIR(DRAW_CUSTOM_PAIR + (int)s);
	return draw_styles[s].color | (unsigned)COLOR_PAIR(draw_styles[s].pair);
}

static const char *(*draw_keys)(const char *action, char *buf, size_t len);

void
draw_register_keys(const char *(*key)(const char *action, char *buf, size_t len))
{
	draw_keys = key;
}

const char *
draw_key(const char *action, const char *dflt, char *buf, size_t len)
{
	const char *k = draw_keys != NULL ? draw_keys(action, buf, len) : NULL;

	return k != NULL ? k : dflt;
}

unsigned
draw_attr_bar(const struct tui *t, enum tui_style s)
{
	if (!t->color || !draw_custom[ST_BAR].set)
		return draw_attr(t, s);
	return (draw_styles[s].color & ~(unsigned)A_REVERSE) |
	    (unsigned)COLOR_PAIR(DRAW_BAR_PAIR + (int)s);
}

/* Decodes one character of s[0..len); its byte count, *wc and *w its columns. */
static size_t
draw_decode(const char *s, size_t len, wchar_t *wc, int *w)
{
	mbstate_t st;
	size_t n;

	memset(&st, 0, sizeof st);
	n = mbrtowc(wc, s, len, &st);
	if (n == 0)
		n = 1;
	if (n == (size_t)-1 || n == (size_t)-2) {
		*wc = L'?';
		*w = 1;
		return 1;
	}
	if (*wc == L'\t')
		*wc = L' ';
	else if (termtext_unsafe(s, len) != 0) {
		*wc = L'?';
		*w = 1;
		return n;
	}
	*w = wcwidth(*wc);
	if (*w < 0) {
		*wc = L'?';
		*w = 1;
	}
	return n;
}

int
draw_width(const char *s)
{
	size_t len = strlen(s), i = 0;
	int cols = 0, w;
	wchar_t wc;

	while (i < len) {
		i += draw_decode(s + i, len - i, &wc, &w);
		cols += w;
	}
	return cols;
}

size_t
draw_fit(const char *s, size_t len, int cols, int *used)
{
	size_t i = 0, n;
	int total = 0, w;
	wchar_t wc;

	while (i < len) {
		n = draw_decode(s + i, len - i, &wc, &w);
		if (total + w > cols)
			break;
		total += w;
		i += n;
	}
	if (used != NULL)
		*used = total;
	return i;
}

size_t
draw_wrap(const char *s, size_t len, int cols, size_t *next)
{
	size_t n = draw_fit(s, len, cols, NULL), k;

	if (n == 0 && len > 0) {
		n = 1;
		while (n < len && ((unsigned char)s[n] & 0xc0) == 0x80)
			n++;
	}
	if (n < len && s[n] != ' ') {
		for (k = n; k > 0 && s[k - 1] != ' '; k--)
			;
		if (k > 0)
			n = k;
	}
	*next = n;
	while (*next < len && s[*next] == ' ')
		(*next)++;
	while (n > 0 && s[n - 1] == ' ')
		n--;
	return n;
}

int
draw_span(int y, int x, int maxw, const char *s, size_t len,
    const unsigned char *mask, unsigned attr, unsigned hl)
{
	wchar_t buf[256];
	size_t i = 0, nb = 0, n;
	int cols = 0, w;
	bool cur = false, on;
	wchar_t wc;

	if (maxw <= 0)
		return 0;
	move(y, x);
	while (i < len) {
		n = draw_decode(s + i, len - i, &wc, &w);
		if (cols + w > maxw)
			break;
		on = mask != NULL && mask[i];
		if ((on != cur || nb == sizeof buf / sizeof buf[0]) && nb > 0) {
			attrset((attr_t)(cur ? hl : attr));
			addnwstr(buf, (int)nb);
			nb = 0;
		}
		cur = on;
		buf[nb++] = wc;
		cols += w;
		i += n;
	}
	if (nb > 0) {
		attrset((attr_t)(cur ? hl : attr));
		addnwstr(buf, (int)nb);
	}
	attrset(A_NORMAL);
	return cols;
}

int
draw_text(int y, int x, int maxw, const char *s, unsigned attr)
{
	size_t len = strlen(s), n;
	int used, ew;

	if (maxw <= 0)
		return 0;
	n = draw_fit(s, len, maxw, &used);
	if (n == len)
		return draw_span(y, x, maxw, s, len, NULL, attr, attr);
	ew = draw_width(draw_g->ellipsis);
	n = draw_fit(s, len, maxw - ew, &used);
	draw_span(y, x, used, s, n, NULL, attr, attr);
	draw_span(y, x + used, ew, draw_g->ellipsis, strlen(draw_g->ellipsis), NULL,
	    attr, attr);
	return used + ew;
}

void
draw_fill(int y, int x, int w, unsigned attr)
{
	if (w <= 0)
		return;
	attrset((attr_t)attr);
	mvhline(y, x, ' ', w);
	attrset(A_NORMAL);
}

/* " title " over the rule at y of a box from x, w wide. */
void
draw_title(const struct tui *t, int y, int x, int w, const char *title, bool focused)
{
	int used;

	if (title == NULL || *title == '\0' || w <= 6)
		return;
	mvaddstr(y, x + 1, " ");
	used = draw_text(y, x + 2, w - 5, title, draw_attr(t, focused ? ST_TITLE : ST_NORMAL));
	mvaddstr(y, x + 2 + used, " ");
}

/* A horizontal rule with a title: the top of a box or a separator. */
static void
draw_rule(const struct tui *t, int y, int x, int w, const cchar_t *left,
    const cchar_t *right, const char *title, bool focused)
{
	mvadd_wch(y, x, left);
	mvhline_set(y, x + 1, draw_lines[LN_H], w - 2);
	mvadd_wch(y, x + w - 1, right);
	draw_title(t, y, x, w, title, focused);
}

/* A separator inside a box: ├───┤ at y from x, w wide. */
void
draw_separator(const struct tui *t, int y, int x, int w)
{
	draw_rule(t, y, x, w, draw_lines[LN_LT], draw_lines[LN_RT], NULL, false);
}

void
draw_box(const struct tui *t, const struct rect *r, const char *title, bool focused)
{
	draw_rule(t, r->y, r->x, r->w, draw_lines[LN_UL], draw_lines[LN_UR], title, focused);
	mvvline_set(r->y + 1, r->x, draw_lines[LN_V], r->h - 2);
	mvvline_set(r->y + 1, r->x + r->w - 1, draw_lines[LN_V], r->h - 2);
	mvadd_wch(r->y + r->h - 1, r->x, draw_lines[LN_LL]);
	mvhline_set(r->y + r->h - 1, r->x + 1, draw_lines[LN_H], r->w - 2);
	mvadd_wch(r->y + r->h - 1, r->x + r->w - 1, draw_lines[LN_LR]);
}

void
draw_short_id(const struct tui *t, const char *id, char *out, size_t len)
{
	if (id == NULL) {
		snprintf(out, len, "-");
		return;
	}
	/* Ids share their time prefix: keep the kind and the distinct end. */
	if (strlen(id) <= 12 || id[3] != '_')
		snprintf(out, len, "%s", id);
	else
		snprintf(out, len, "%.4s%s%s", id, t->g->ellipsis, id + strlen(id) - 6);
}

void
draw_tail_id(const struct tui *t, const char *id, char *out, size_t len)
{
	size_t n = id != NULL ? strlen(id) : 0;

	if (n <= 8)
		snprintf(out, len, "%s", n > 0 ? id : "-");
	else
		snprintf(out, len, "%s%s", t->g->ellipsis, id + n - 6);
}

int
draw_status_index(const char *status)
{
	for (size_t i = 0; status != NULL && i < 5; i++) {
		if (strcmp(status, draw_statuses[i]) == 0)
			return (int)i;
	}
	return -1;
}

enum tui_style
draw_status_style(const char *status)
{
	int i = draw_status_index(status);

	return i < 0 ? ST_NORMAL : draw_status_styles[i];
}

/*
 * Lays the text out in r's width from row first on: draws the rows inside r
 * when draw is set; *cy and *cx get the cursor's row (counted from the text's
 * first row) and column.
 */
static void
editor_layout(const struct editor *e, const struct rect *r, unsigned attr, int first,
    bool draw, int *cy, int *cx)
{
	size_t i = 0, n;
	int row = 0, col = 0, used;

	*cy = *cx = 0;
	for (;;) {
		if (i == e->cur && (i >= e->len || e->text[i] == '\n')) {
			*cy = row;
			*cx = col;
		}
		if (i >= e->len)
			break;
		if (e->text[i] == '\n') {
			row++;
			col = 0;
			i++;
			continue;
		}
		n = 1;
		while (i + n < e->len && ((unsigned char)e->text[i + n] & 0xc0) == 0x80)
			n++;
		draw_fit(e->text + i, n, INT_MAX, &used);
		/* A word that does not fit the row's rest starts the next row (one
		 * longer than a row is cut where the row ends). */
		if (col > 0 && e->text[i] != ' ' && (i == 0 || e->text[i - 1] == ' ')) {
			size_t w = strcspn(e->text + i, " \n");
			int ww;

			draw_fit(e->text + i, w, INT_MAX, &ww);
			if (col + ww > r->w && ww <= r->w) {
				row++;
				col = 0;
			}
		}
		if (col + used > r->w && e->text[i] == ' ' && col == r->w) {
			/* A space after a full row hangs at its end, not at the next row's start. */
			if (i == e->cur) {
				*cy = row;
				*cx = r->w - 1;
			}
			col += used;
			i += n;
			continue;
		}
		if (col + used > r->w) {
			row++;
			col = 0;
		}
		if (i == e->cur) {
			*cy = row;
			*cx = col;
		}
		if (draw && row >= first && row - first < r->h)
			draw_span(r->y + row - first, r->x + col, used, e->text + i, n, NULL,
			    attr, attr);
		col += used;
		i += n;
	}
	if (*cx >= r->w) {
		(*cy)++;
		*cx = 0;
	}
}

void
editor_draw(const struct editor *e, const struct rect *r, unsigned attr, int *cy, int *cx)
{
	int row, col, first = 0;

	editor_layout(e, r, attr, 0, false, &row, &col);
	if (row >= r->h)
		first = row - r->h + 1;
	editor_layout(e, r, attr, first, true, &row, &col);
	*cy = r->y + row - first;
	*cx = r->x + col;
}


size_t *
draw_list_rows(struct tui *t, enum pane p, struct m_cursor *cur, size_t height, size_t *shown)
{
	size_t count = model_list_count(&t->m, p), n = 0;
	size_t *rows = xcalloc(count > 0 ? count : 1, sizeof *rows);
	struct m_cursor fc = { .sel = 0, .top = cur->top };

	for (size_t k = 0; k < count; k++) {
		if (!model_list_match(&t->m, p, k))
			continue;
		if (k == cur->sel)
			fc.sel = n;
		rows[n++] = k;
	}
	model_cursor_fit(&fc, n, height);
	cur->top = fc.top;
	*shown = n;
	return rows;
}

size_t
draw_list_nth(const struct tui *t, enum pane p, size_t want)
{
	size_t count = model_list_count(&t->m, p), n = 0;

	for (size_t k = 0; k < count; k++) {
		if (model_list_match(&t->m, p, k) && n++ == want)
			return k;
	}
	return SIZE_MAX;
}

void
draw_list_title(const struct tui *t, enum pane p, const char *name, char *buf, size_t len)
{
	const char *q = model_list_query(&t->m, p);
	size_t count = model_list_count(&t->m, p), n = 0;

	if (q[0] == '\0') {
		snprintf(buf, len, "%s", name);
		return;
	}
	for (size_t k = 0; k < count; k++)
		n += model_list_match(&t->m, p, k);
	snprintf(buf, len, "%s /%s (%zu of %zu)", name, q, n, count);
}
