/* termtext: what others name, shown on a terminal without its control characters. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "termtext.h"

static void
expect_line(const char *in, const char *out)
{
	char *got = termtext_line(in);

	cr_expect_str_eq(got, out, "termtext_line(\"%s\")", in);
	free(got);
}

Test(termtext, controls_become_question_marks)
{
	expect_line("plain.txt", "plain.txt");
	expect_line("\033[2Jclear", "?[2Jclear");
	expect_line("bell\a", "bell?");
	expect_line("del\177", "del?");
	/* C1: CSI (U+009B) as UTF-8 is one character, one '?'. */
	expect_line("csi\302\2332J", "csi?2J");
	/* A byte that begins no UTF-8 character, and a cut one. */
	expect_line("raw\233x", "raw?x");
	expect_line("cut\303", "cut?");
	/* Overlong ESC (C0 9B) is not UTF-8. */
	expect_line("over\300\233", "over??");
	/* A bidirectional override turns "gnp.exe" around on screen. */
	expect_line("\342\200\256gnp.exe", "?gnp.exe");
	/* Text beyond ASCII stays. */
	expect_line("\303\274n\303\257code \360\237\231\202", "\303\274n\303\257code \360\237\231\202");
	expect_line("a\nb\tc", "a b c");
	expect_line(NULL, "-");
}

Test(termtext, a_style_keeps_newlines_and_tabs)
{
	const struct termtext_style keep = { "\n", "\t" }, indent = { "\n  ", NULL };
	struct buf b;

	buf_init(&b, 0);
	termtext_append(&b, "a\nb\tc\033", &keep);
	cr_expect_str_eq(b.data, "a\nb\tc?");
	buf_free(&b);
	buf_init(&b, 0);
	termtext_append(&b, "a\nb\tc", &indent);
	cr_expect_str_eq(b.data, "a\n  b?c");
	buf_free(&b);
}

Test(termtext, displayable_is_the_same_rule)
{
	cr_expect(termtext_safe("r\303\251sum\303\251.md"));
	cr_expect(!termtext_safe("x\033"));
	cr_expect(!termtext_safe("x\302\205"));
	cr_expect(!json_text_displayable("\342\201\246x"));
	cr_expect(json_text_displayable("\342\200\224 dash"));
}
