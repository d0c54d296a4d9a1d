/* A box of UTF-8 text: insert, move by character, erase.  No curses calls (draw.c draws it). */
#include <curses.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "tui/tui.h"
#include "xalloc.h"

/* True for a byte that continues a UTF-8 sequence. */
static bool
editor_cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

void
editor_init(struct editor *e, size_t cap, bool multiline, const char *text)
{
	size_t n = text != NULL ? strlen(text) : 0;

	e->cap = cap;
	e->text = xmalloc(cap);
	if (n > cap - 1) {
		n = cap - 1;
		while (n > 0 && editor_cont(text[n]))
			n--;
	}
	if (n > 0)
		memcpy(e->text, text, n);
	e->text[n] = '\0';
	e->len = e->cur = n;
	e->multiline = multiline;
}

void
editor_free(struct editor *e)
{
	free(e->text);
	e->text = NULL;
	e->len = e->cur = e->cap = 0;
}

/* Inserts bytes s[0..n) at the cursor when they fit. */
static void
editor_insert(struct editor *e, const char *s, size_t n)
{
	if (e->len + n + 1 > e->cap)
		return;
	memmove(e->text + e->cur + n, e->text + e->cur, e->len - e->cur + 1);
	memcpy(e->text + e->cur, s, n);
	e->len += n;
	e->cur += n;
}

/* Offset of the character before / after off. */
static size_t
editor_prev(const struct editor *e, size_t off)
{
	if (off == 0)
		return 0;
	off--;
	while (off > 0 && editor_cont(e->text[off]))
		off--;
	return off;
}

static size_t
editor_next(const struct editor *e, size_t off)
{
	if (off >= e->len)
		return e->len;
	off++;
	while (off < e->len && editor_cont(e->text[off]))
		off++;
	return off;
}

/* Removes the bytes [from, to). */
static void
editor_erase(struct editor *e, size_t from, size_t to)
{
	memmove(e->text + from, e->text + to, e->len - to + 1);
	e->len -= to - from;
	e->cur = from;
}

static unsigned
editor_cancel(struct editor *e)
{
	(void)e;
	return TUI_HANDLED | EDITOR_CANCEL;
}

static unsigned
editor_done(struct editor *e)
{
	(void)e;
	return TUI_HANDLED | EDITOR_DONE;
}

/* Ctrl-J: a newline in a box, Enter in a line. */
static unsigned
editor_newline(struct editor *e)
{
	if (!e->multiline)
		return TUI_HANDLED | EDITOR_DONE;
	editor_insert(e, "\n", 1);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
editor_left(struct editor *e)
{
	e->cur = editor_prev(e, e->cur);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
editor_right(struct editor *e)
{
	e->cur = editor_next(e, e->cur);
	return TUI_HANDLED | TUI_REDRAW;
}

/* Home and End: the start and end of the cursor's line. */
static unsigned
editor_home(struct editor *e)
{
	while (e->cur > 0 && e->text[e->cur - 1] != '\n')
		e->cur--;
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
editor_end(struct editor *e)
{
	while (e->cur < e->len && e->text[e->cur] != '\n')
		e->cur++;
	return TUI_HANDLED | TUI_REDRAW;
}

/* The start of the line holding off. */
static size_t
editor_line_start(const struct editor *e, size_t off)
{
	while (off > 0 && e->text[off - 1] != '\n')
		off--;
	return off;
}

/* From off, n characters on, stopping at the line's end. */
static size_t
editor_column(const struct editor *e, size_t off, size_t n)
{
	while (n-- > 0 && off < e->len && e->text[off] != '\n')
		off = editor_next(e, off);
	return off;
}

/* Up and Down in a box: the same column of the line above / below (its
 * end when shorter); on the first / last line, its start / end. */
static unsigned
editor_vertical(struct editor *e, int dir)
{
	size_t start = editor_line_start(e, e->cur), col = 0, end;

	if (!e->multiline)
		return 0;
	for (size_t k = start; k < e->cur; k = editor_next(e, k))
		col++;
	if (dir < 0) {
		e->cur = start == 0 ? 0 : editor_column(e, editor_line_start(e, start - 1), col);
		return TUI_HANDLED | TUI_REDRAW;
	}
	for (end = e->cur; end < e->len && e->text[end] != '\n'; end++)
		;
	e->cur = end == e->len ? e->len : editor_column(e, end + 1, col);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
editor_up(struct editor *e)
{
	return editor_vertical(e, -1);
}

static unsigned
editor_down(struct editor *e)
{
	return editor_vertical(e, 1);
}

static unsigned
editor_backspace(struct editor *e)
{
	if (e->cur > 0)
		editor_erase(e, editor_prev(e, e->cur), e->cur);
	return TUI_HANDLED | TUI_REDRAW;
}

static unsigned
editor_delete(struct editor *e)
{
	if (e->cur < e->len)
		editor_erase(e, e->cur, editor_next(e, e->cur));
	return TUI_HANDLED | TUI_REDRAW;
}

/* Ctrl-U: everything before the cursor. */
static unsigned
editor_kill(struct editor *e)
{
	editor_erase(e, 0, e->cur);
	return TUI_HANDLED | TUI_REDRAW;
}

static const struct {
	int key;
	unsigned (*fn)(struct editor *e);
} editor_keys[] = {
	{ TUI_ESC, editor_cancel },
	{ '\r', editor_done },
	{ TUI_KEY(KEY_ENTER), editor_done },
	{ '\n', editor_newline },
	{ TUI_KEY(KEY_LEFT), editor_left },
	{ TUI_KEY(KEY_RIGHT), editor_right },
	{ TUI_KEY(KEY_UP), editor_up },
	{ TUI_KEY(KEY_DOWN), editor_down },
	{ TUI_KEY(KEY_HOME), editor_home },
	{ TUI_CTRL('a'), editor_home },
	{ TUI_KEY(KEY_END), editor_end },
	{ TUI_CTRL('e'), editor_end },
	{ TUI_KEY(KEY_BACKSPACE), editor_backspace },
	{ 127, editor_backspace },
	{ 8, editor_backspace },
	{ TUI_KEY(KEY_DC), editor_delete },
	{ TUI_CTRL('u'), editor_kill },
};

unsigned
editor_key(struct editor *e, int key)
{
	char mb[MB_LEN_MAX];
	mbstate_t st;
	size_t n;

	for (size_t i = 0; i < sizeof editor_keys / sizeof editor_keys[0]; i++) {
		if (editor_keys[i].key == key)
			return editor_keys[i].fn(e);
	}
	if ((key & TUI_KEY_FN) != 0 || key < 32 || !iswprint((wint_t)key))
		return 0;
	memset(&st, 0, sizeof st);
	n = wcrtomb(mb, (wchar_t)key, &st);
	if (n == (size_t)-1)
		return TUI_HANDLED;
	editor_insert(e, mb, n);
	return TUI_HANDLED | TUI_REDRAW;
}
