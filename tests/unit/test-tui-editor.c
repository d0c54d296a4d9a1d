/* The dashboard's text editor: UTF-8 aware insert, moves and erase, bounds, keys. */
#include <criterion/criterion.h>
#include <curses.h>
#include <locale.h>
#include <string.h>

#include "tui/tui.h"

static void
utf8_locale(void)
{
	cr_assert_not_null(setlocale(LC_ALL, "C.UTF-8"), "no C.UTF-8 locale");
}

TestSuite(tui_editor, .init = utf8_locale);

/* Types the wide characters of s. */
static void
type(struct editor *e, const wchar_t *s)
{
	for (; *s != L'\0'; s++)
		cr_assert(editor_key(e, (int)*s) & TUI_HANDLED);
}

Test(tui_editor, inserts_utf8_and_moves_by_character)
{
	struct editor e;

	editor_init(&e, 64, false, NULL);
	type(&e, L"a日b");
	cr_assert_str_eq(e.text, "a日b");
	cr_assert_eq(e.len, 5);
	editor_key(&e, TUI_KEY(KEY_LEFT));
	cr_assert_eq(e.cur, 4, "left skips one character (b), at %zu", e.cur);
	editor_key(&e, TUI_KEY(KEY_LEFT));
	cr_assert_eq(e.cur, 1, "left skips the three bytes of 日, at %zu", e.cur);
	type(&e, L"é");
	cr_assert_str_eq(e.text, "aé日b");
	editor_key(&e, TUI_KEY(KEY_RIGHT));
	cr_assert_eq(e.cur, 6);
	editor_key(&e, TUI_KEY(KEY_HOME));
	cr_assert_eq(e.cur, 0);
	editor_key(&e, TUI_KEY(KEY_LEFT));
	cr_assert_eq(e.cur, 0, "left at the start stays");
	editor_key(&e, TUI_KEY(KEY_END));
	cr_assert_eq(e.cur, e.len);
	editor_key(&e, TUI_KEY(KEY_RIGHT));
	cr_assert_eq(e.cur, e.len, "right at the end stays");
	editor_free(&e);
}

Test(tui_editor, backspace_and_delete_erase_whole_characters)
{
	struct editor e;

	editor_init(&e, 64, false, "x日本y");
	cr_assert_eq(e.cur, e.len, "the cursor starts at the end");
	editor_key(&e, TUI_KEY(KEY_LEFT));
	editor_key(&e, TUI_KEY(KEY_BACKSPACE));
	cr_assert_str_eq(e.text, "x日y");
	editor_key(&e, 127);
	cr_assert_str_eq(e.text, "xy");
	cr_assert_eq(e.cur, 1);
	editor_key(&e, TUI_KEY(KEY_HOME));
	editor_key(&e, TUI_KEY(KEY_BACKSPACE));
	cr_assert_str_eq(e.text, "xy", "backspace at the start erases nothing");
	editor_key(&e, TUI_KEY(KEY_DC));
	cr_assert_str_eq(e.text, "y");
	type(&e, L"日");
	editor_key(&e, TUI_KEY(KEY_LEFT));
	editor_key(&e, TUI_KEY(KEY_DC));
	cr_assert_str_eq(e.text, "y");
	editor_key(&e, TUI_KEY(KEY_END));
	editor_key(&e, TUI_KEY(KEY_DC));
	cr_assert_str_eq(e.text, "y", "delete at the end erases nothing");
	editor_key(&e, TUI_CTRL('u'));
	cr_assert_str_eq(e.text, "");
	editor_free(&e);
}

Test(tui_editor, enter_escape_and_ctrl_j)
{
	struct editor line, box;

	editor_init(&line, 32, false, "q");
	editor_init(&box, 32, true, "first");
	cr_assert(editor_key(&line, '\r') & EDITOR_DONE);
	cr_assert(editor_key(&line, TUI_KEY(KEY_ENTER)) & EDITOR_DONE);
	cr_assert(editor_key(&line, '\n') & EDITOR_DONE, "Ctrl-J ends a one-line editor");
	cr_assert(editor_key(&line, TUI_ESC) & EDITOR_CANCEL);
	cr_assert_str_eq(line.text, "q");

	cr_assert_not(editor_key(&box, '\n') & (EDITOR_DONE | EDITOR_CANCEL));
	type(&box, L"second");
	cr_assert_str_eq(box.text, "first\nsecond");
	editor_key(&box, TUI_KEY(KEY_HOME));
	cr_assert_eq(box.cur, 6, "Home goes to the start of the cursor's line");
	editor_key(&box, TUI_KEY(KEY_LEFT));
	editor_key(&box, TUI_KEY(KEY_HOME));
	cr_assert_eq(box.cur, 0);
	editor_key(&box, TUI_KEY(KEY_END));
	cr_assert_eq(box.cur, 5, "End stops before the newline");
	cr_assert(editor_key(&box, '\r') & EDITOR_DONE, "Enter submits a box");
	editor_free(&line);
	editor_free(&box);
}

Test(tui_editor, other_keys_are_left_to_the_caller)
{
	struct editor e;

	editor_init(&e, 32, true, "abc");
	cr_assert_eq(editor_key(&e, TUI_CTRL('t')), 0u);
	cr_assert_eq(editor_key(&e, TUI_CTRL('p')), 0u);
	cr_assert_eq(editor_key(&e, TUI_KEY(KEY_F(5))), 0u);
	cr_assert_eq(editor_key(&e, TUI_KEY(KEY_PPAGE)), 0u);
	cr_assert_str_eq(e.text, "abc");
	editor_free(&e);
}

Test(tui_editor, bounded_and_never_cuts_a_character)
{
	struct editor e;

	/* 8 bytes: 7 of text. */
	editor_init(&e, 8, false, "aaaaa日日");
	cr_assert_str_eq(e.text, "aaaaa", "the initial text is cut before a partial character");
	type(&e, L"b");
	cr_assert_str_eq(e.text, "aaaaab");
	cr_assert(editor_key(&e, (int)L'日') & TUI_HANDLED);
	cr_assert_str_eq(e.text, "aaaaab", "a character that does not fit is not inserted");
	type(&e, L"c");
	cr_assert_str_eq(e.text, "aaaaabc");
	cr_assert(editor_key(&e, 'd') & TUI_HANDLED);
	cr_assert_eq(e.len, 7);
	cr_assert_str_eq(e.text, "aaaaabc");
	editor_free(&e);
}

Test(tui_editor, up_and_down_move_between_lines_of_a_box)
{
	struct editor e;

	editor_init(&e, 64, true, "first line\nab\nthird 日本 line");
	/* At the end of the third line (column 13). */
	cr_assert(editor_key(&e, TUI_KEY(KEY_UP)) & TUI_HANDLED);
	cr_assert_eq(e.cur, 13, "up from column 14 ends at the end of 'ab', at %zu", e.cur);
	cr_assert(editor_key(&e, TUI_KEY(KEY_UP)) & TUI_HANDLED);
	cr_assert_eq(e.cur, 2, "up keeps column 2 on the first line, at %zu", e.cur);
	editor_key(&e, TUI_KEY(KEY_UP));
	cr_assert_eq(e.cur, 0, "up on the first line goes to its start");
	editor_key(&e, TUI_KEY(KEY_RIGHT));
	editor_key(&e, TUI_KEY(KEY_RIGHT));
	editor_key(&e, TUI_KEY(KEY_DOWN));
	editor_key(&e, TUI_KEY(KEY_DOWN));
	cr_assert_eq(e.cur, 16, "down twice from column 2 is column 2 of the third line, at %zu",
	    e.cur);
	type(&e, L"X");
	cr_assert_str_eq(e.text, "first line\nab\nthXird 日本 line");
	editor_key(&e, TUI_KEY(KEY_DOWN));
	cr_assert_eq(e.cur, e.len, "down on the last line goes to its end");
	editor_free(&e);

	/* Columns count characters, not bytes. */
	editor_init(&e, 64, true, "日本語 text\nabcdef");
	editor_key(&e, TUI_KEY(KEY_LEFT));
	editor_key(&e, TUI_KEY(KEY_LEFT));
	editor_key(&e, TUI_KEY(KEY_UP));
	cr_assert_eq(e.cur, strlen("日本語 "), "column 4 above is after '日本語 ', at %zu", e.cur);
	editor_key(&e, TUI_KEY(KEY_DOWN));
	cr_assert_eq(e.cur, strlen("日本語 text\nabcd"), "at %zu", e.cur);
	editor_free(&e);

	editor_init(&e, 64, false, "one line");
	cr_assert_eq(editor_key(&e, TUI_KEY(KEY_UP)) & TUI_HANDLED, 0,
	    "a one-line editor leaves Up to its owner (the palette's history)");
	editor_free(&e);
}
