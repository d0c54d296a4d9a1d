/* The agent's UTF-8 helpers and path patterns, without a process around them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/pathmatch.h"
#include "buf.h"

Test(utf8, cut_keeps_whole_characters)
{
	const char *s = "a\xc3\xa9" "b\xe2\x82\xac" "c\xf0\x9f\x98\x80";

	cr_expect_eq(agent_utf8_cut(s, 1), 1);
	cr_expect_eq(agent_utf8_cut(s, 2), 1);
	cr_expect_eq(agent_utf8_cut(s, 3), 3);
	cr_expect_eq(agent_utf8_cut(s, 5), 4);
	cr_expect_eq(agent_utf8_cut(s, 6), 4);
	cr_expect_eq(agent_utf8_cut(s, 7), 7);
	cr_expect_eq(agent_utf8_cut(s, 10), 8);
	cr_expect_eq(agent_utf8_cut(s, 12), 12);
}

Test(utf8, prefix_never_splits_a_character)
{
	char *p = agent_utf8_prefix("\xc3\xa9\xc3\xa9\xc3\xa9", 5);

	cr_expect_str_eq(p, "\xc3\xa9\xc3\xa9");
	free(p);
	p = agent_utf8_prefix("short", 100);
	cr_expect_str_eq(p, "short");
	free(p);
}

Test(utf8, append_replaces_bad_bytes_and_nuls)
{
	static const char in[] = "ok \xff x\0y \xc3 z \xed\xa0\x80 \xc3\xa9";
	struct buf b;

	buf_init(&b, 0);
	agent_utf8_append(&b, in, sizeof in - 1);
	cr_expect_str_eq(b.data, "ok \xef\xbf\xbd x\xef\xbf\xbdy \xef\xbf\xbd z "
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xc3\xa9");
	buf_free(&b);
}

Test(glob, stars_stay_within_a_component)
{
	cr_expect(pathmatch_glob("*.c", "main.c"));
	cr_expect_not(pathmatch_glob("*.c", "src/main.c"));
	cr_expect(pathmatch_glob("src/*.c", "src/main.c"));
	cr_expect_not(pathmatch_glob("src/*.c", "src/agent/loop.c"));
	cr_expect(pathmatch_glob("?ain.[ch]", "main.h"));
	cr_expect_not(pathmatch_glob("?ain.[!ch]", "main.h"));
	cr_expect(pathmatch_glob("[a-c]*", "b.txt"));
	cr_expect_not(pathmatch_glob("[a-c]*", "d.txt"));
	cr_expect(pathmatch_glob("a\\*b", "a*b"));
	cr_expect_not(pathmatch_glob("a\\*b", "axb"));
	cr_expect(pathmatch_glob("[x", "[x"));
}

Test(glob, double_star_spans_directories)
{
	cr_expect(pathmatch_glob("**/*.c", "main.c"));
	cr_expect(pathmatch_glob("**/*.c", "src/agent/loop.c"));
	cr_expect(pathmatch_glob("src/**/*.h", "src/x.h"));
	cr_expect(pathmatch_glob("src/**/*.h", "src/a/b/x.h"));
	cr_expect_not(pathmatch_glob("src/**/*.h", "lib/a/x.h"));
	cr_expect(pathmatch_glob("docs/**", "docs/a/b.md"));
	cr_expect_not(pathmatch_glob("a**b", "a/x/b"));
}

Test(gitignore, common_patterns)
{
	struct ignore_rules r = { 0 };

	ignore_rules_add(&r, "", "# build output\nbuild/\n*.o\n/top.txt\n"
	    "node_modules\n!keep.o\ndocs/*.pdf\n\n   \n");
	ignore_rules_add(&r, "sub", "local.txt\n/anchored\n");
	cr_expect(ignore_rules_match(&r, "build", true));
	cr_expect_not(ignore_rules_match(&r, "build", false));
	cr_expect(ignore_rules_match(&r, "src/build", true));
	cr_expect(ignore_rules_match(&r, "a/b/x.o", false));
	cr_expect_not(ignore_rules_match(&r, "a/b/keep.o", false));
	cr_expect(ignore_rules_match(&r, "top.txt", false));
	cr_expect_not(ignore_rules_match(&r, "src/top.txt", false));
	cr_expect(ignore_rules_match(&r, "x/node_modules", true));
	cr_expect(ignore_rules_match(&r, "docs/a.pdf", false));
	cr_expect_not(ignore_rules_match(&r, "docs/x/a.pdf", false));
	cr_expect(ignore_rules_match(&r, "sub/local.txt", false));
	cr_expect(ignore_rules_match(&r, "sub/deeper/local.txt", false));
	cr_expect_not(ignore_rules_match(&r, "local.txt", false));
	cr_expect(ignore_rules_match(&r, "sub/anchored", false));
	cr_expect_not(ignore_rules_match(&r, "sub/x/anchored", false));
	ignore_rules_truncate(&r, 6);
	cr_expect_not(ignore_rules_match(&r, "sub/local.txt", false));
	ignore_rules_free(&r);
}
