/* The agent's UTF-8 helpers, without a process around them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
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
