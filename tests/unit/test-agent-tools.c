/* The agent's path confinement and UTF-8 helpers, without a process around them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/workspace.h"
#include "buf.h"

static char tmp[PATH_MAX];	/* holds ws/ and outside/ */
static char root[PATH_MAX];	/* canonical workspace */

static void
setup(void)
{
	char path[PATH_MAX + 32];

	snprintf(tmp, sizeof tmp, "/tmp/td-ws-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(path, sizeof path, "%s/ws", tmp);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_not_null(realpath(path, root));
	snprintf(path, sizeof path, "%s/outside", tmp);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/real", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/in-link", root);
	cr_assert_eq(symlink("real", path), 0);
	snprintf(path, sizeof path, "%s/out-link", root);
	cr_assert_eq(symlink("../outside", path), 0);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void
teardown(void)
{
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(workspace, .init = setup, .fini = teardown);

static void
expect_ok(const char *path, const char *rel)
{
	struct workspace_path wp;
	char *why = NULL;
	char abs[PATH_MAX * 2];

	cr_assert(workspace_resolve(root, path, &wp, &why), "%s refused: %s", path, why);
	cr_expect_str_eq(wp.rel, rel, "%s", path);
	if (strcmp(rel, ".") == 0)
		snprintf(abs, sizeof abs, "%s", root);
	else
		snprintf(abs, sizeof abs, "%s/%s", root, rel);
	cr_expect_str_eq(wp.abs, abs, "%s", path);
	workspace_path_free(&wp);
}

static void
expect_refused(const char *path, const char *says)
{
	struct workspace_path wp;
	char *why = NULL;

	cr_assert_not(workspace_resolve(root, path, &wp, &why), "%s accepted as %s", path, wp.rel);
	cr_assert_not_null(why);
	cr_expect(strstr(why, says) != NULL, "%s: \"%s\" does not say %s", path, why, says);
	cr_expect_null(wp.abs);
	free(why);
}

Test(workspace, relative_paths_are_folded)
{
	expect_ok("a.txt", "a.txt");
	expect_ok("./a/b/../c.txt", "a/c.txt");
	expect_ok("a//b///c", "a/b/c");
	expect_ok(".", ".");
	expect_ok("a/..", ".");
	expect_ok("real/new/deeper/file", "real/new/deeper/file");
}

Test(workspace, dot_dot_above_the_root_is_refused)
{
	expect_refused("..", "escapes");
	expect_refused("../outside/a.txt", "escapes");
	expect_ok("../ws/a.txt", "a.txt");
	expect_refused("a/../../b", "escapes");
	expect_refused("real/../../../etc/passwd", "escapes");
}

Test(workspace, absolute_paths_must_be_inside)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof path, "%s/x/y.txt", root);
	expect_ok(path, "x/y.txt");
	expect_ok(root, ".");
	expect_refused("/etc/passwd", "outside the workspace");
	expect_refused("/", "outside the workspace");
	snprintf(path, sizeof path, "%s/../outside/f", root);
	expect_refused(path, "outside the workspace");
	/* A non-canonical spelling of a path inside is fine. */
	snprintf(path, sizeof path, "%s/ws/./real/../a", tmp);
	expect_ok(path, "a");
}

Test(workspace, symbolic_links_are_followed_only_inside)
{
	char path[PATH_MAX + 32];

	expect_ok("in-link/f.txt", "real/f.txt");
	expect_ok("in-link", "real");
	expect_refused("out-link", "symbolic link");
	expect_refused("out-link/new.txt", "symbolic link");
	/* ".." is folded before links are resolved: this stays inside. */
	expect_ok("out-link/../a", "a");
	snprintf(path, sizeof path, "%s/dangling", root);
	cr_assert_eq(symlink("/nonexistent-td/dir", path), 0);
	expect_refused("dangling", "points nowhere");
	expect_refused("dangling/file", "points nowhere");
	snprintf(path, sizeof path, "%s/loop", root);
	cr_assert_eq(symlink("loop", path), 0);
	expect_refused("loop/x", "loop");
}

Test(workspace, empty_and_long_paths_are_refused)
{
	char *longp = malloc(PATH_MAX + 10);

	expect_refused("", "empty");
	memset(longp, 'a', PATH_MAX + 9);
	longp[PATH_MAX + 9] = '\0';
	expect_refused(longp, "too long");
	free(longp);
}

Test(workspace, mkdirs_creates_and_refuses_links)
{
	char path[PATH_MAX + 32];
	struct stat st;

	cr_assert(workspace_mkdirs(root, "n1/n2/n3"));
	snprintf(path, sizeof path, "%s/n1/n2/n3", root);
	cr_expect_eq(stat(path, &st), 0);
	cr_expect(S_ISDIR(st.st_mode));
	cr_expect(workspace_mkdirs(root, "n1/n2"), "existing directories are fine");
	cr_expect_not(workspace_mkdirs(root, "out-link/x"));
	snprintf(path, sizeof path, "%s/outside/x", tmp);
	cr_expect_neq(stat(path, &st), 0, "created through a link");
}

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
