/*
 * Workspace files through descriptors (src/common/wsfile.c): confinement to the
 * workspace, the hidden set checked on what is opened, writes made beside the
 * target and renamed over it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wsfile.h"

static char tmp[PATH_MAX];	/* holds ws/ and outside/ */
static char root[PATH_MAX];	/* canonical workspace */
static struct wsfile_root *files;

static void
at(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", root, rel);
}

static void
put(const char *rel, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	at(path, sizeof path, rel);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void
setup(void)
{
	char path[PATH_MAX + 64];
	char *why = NULL;
	const char *hidden[4];
	char h1[PATH_MAX + 64], h2[PATH_MAX + 64];

	snprintf(tmp, sizeof tmp, "/tmp/td-wsfile-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(path, sizeof path, "%s/ws", tmp);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_not_null(realpath(path, root));
	snprintf(path, sizeof path, "%s/outside", tmp);
	cr_assert_eq(mkdir(path, 0755), 0);
	at(path, sizeof path, "real");
	cr_assert_eq(mkdir(path, 0755), 0);
	at(path, sizeof path, "in-link");
	cr_assert_eq(symlink("real", path), 0);
	at(path, sizeof path, "out-link");
	cr_assert_eq(symlink("../outside", path), 0);
	/* what the sandbox hides: a directory and a file inside the workspace */
	at(path, sizeof path, "data");
	cr_assert_eq(mkdir(path, 0700), 0);
	put("data/token", "TOKEN-SECRET\n");
	put("netrc", "machine x password SECRET\n");
	put("real/f.txt", "fine\n");
	at(h1, sizeof h1, "data");
	at(h2, sizeof h2, "netrc");
	hidden[0] = h1;
	hidden[1] = h2;
	hidden[2] = "/nonexistent-td-hidden";
	hidden[3] = NULL;
	files = wsfile_root_open(root, hidden, &why);
	cr_assert_not_null(files, "%s", why);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void
teardown(void)
{
	wsfile_root_free(files);
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(wsfile, .init = setup, .fini = teardown);

static void
expect_ok(const char *path, const char *rel)
{
	struct stat st;
	char *got = NULL, *why = NULL;
	int fd;

	cr_assert_eq(wsfile_open(files, path, O_PATH, &fd, &st, &got, &why), WSFILE_OK,
	    "%s refused: %s", path, why);
	cr_expect_str_eq(got, rel, "%s", path);
	close(fd);
	free(got);
}

static void
expect_refused(const char *path, enum wsfile_status status, const char *says)
{
	struct stat st;
	char *rel = NULL, *why = NULL;
	int fd = -1;

	cr_assert_eq(wsfile_open(files, path, O_RDONLY | O_NONBLOCK, &fd, &st, &rel, &why),
	    status, "%s: %s", path, why ? why : rel);
	cr_expect_eq(fd, -1);
	cr_expect_null(rel);
	cr_assert_not_null(why);
	cr_expect(strstr(why, says) != NULL, "%s: \"%s\" does not say %s", path, why, says);
	free(why);
}

Test(wsfile, relative_paths_are_folded)
{
	put("a.txt", "a");
	expect_ok("a.txt", "a.txt");
	expect_ok("./real/x/../f.txt", "real/f.txt");
	expect_ok("real//f.txt", "real/f.txt");
	expect_ok(".", ".");
	expect_ok("real/..", ".");
}

Test(wsfile, dot_dot_above_the_root_is_refused)
{
	expect_refused("..", WSFILE_ESCAPES, "path escapes the workspace");
	expect_refused("../outside", WSFILE_ESCAPES, "path escapes the workspace");
	expect_refused("real/../../outside", WSFILE_ESCAPES, "path escapes the workspace");
}

Test(wsfile, absolute_paths_must_be_inside)
{
	char path[PATH_MAX + 64];

	at(path, sizeof path, "real/f.txt");
	expect_ok(path, "real/f.txt");
	expect_ok(root, ".");
	expect_refused("/etc/passwd", WSFILE_ESCAPES, "path escapes the workspace");
	expect_refused("/", WSFILE_ESCAPES, "path escapes the workspace");
}

Test(wsfile, symbolic_links_are_followed_only_inside)
{
	char path[PATH_MAX + 64];

	expect_ok("in-link/f.txt", "in-link/f.txt");
	expect_ok("in-link", "real");
	expect_refused("out-link", WSFILE_ESCAPES, "path escapes the workspace");
	expect_refused("out-link/x", WSFILE_ESCAPES, "path escapes the workspace");
	at(path, sizeof path, "abs-link");
	cr_assert_eq(symlink("/etc/passwd", path), 0);
	expect_refused("abs-link", WSFILE_ESCAPES, "path escapes the workspace");
	at(path, sizeof path, "loop");
	cr_assert_eq(symlink("loop", path), 0);
	expect_refused("loop", WSFILE_FAILED, "symbolic links");
	expect_refused("missing.txt", WSFILE_MISSING, "no such file");
	expect_refused("", WSFILE_INVALID, "empty");
}

Test(wsfile, hidden_paths_are_refused_however_named)
{
	char path[PATH_MAX + 64];

	expect_refused("data/token", WSFILE_HIDDEN, "path is hidden");
	expect_refused("data", WSFILE_HIDDEN, "path is hidden");
	expect_refused("netrc", WSFILE_HIDDEN, "path is hidden");
	expect_refused("real/../data/token", WSFILE_HIDDEN, "path is hidden");
	/* through links, intermediate or last */
	at(path, sizeof path, "to-data");
	cr_assert_eq(symlink("data", path), 0);
	expect_refused("to-data/token", WSFILE_HIDDEN, "path is hidden");
	at(path, sizeof path, "to-token");
	cr_assert_eq(symlink("data/token", path), 0);
	expect_refused("to-token", WSFILE_HIDDEN, "path is hidden");
	/* a hard link to a hidden file */
	{
		char target[PATH_MAX + 64];

		at(target, sizeof target, "netrc");
		at(path, sizeof path, "real/netrc-copy");
		cr_assert_eq(link(target, path), 0);
		expect_refused("real/netrc-copy", WSFILE_HIDDEN, "path is hidden");
	}
	/* a hidden directory moved elsewhere in the workspace stays hidden */
	{
		char from[PATH_MAX + 64], to[PATH_MAX + 64];

		at(from, sizeof from, "data");
		at(to, sizeof to, "real/moved");
		cr_assert_eq(rename(from, to), 0);
		expect_refused("real/moved/token", WSFILE_HIDDEN, "path is hidden");
	}
}

Test(wsfile, hard_links_into_hidden_directories_are_refused)
{
	char from[PATH_MAX + 64], to[PATH_MAX + 64];

	/* several multiply linked files in the hidden directory, the token's link last */
	for (int i = 0; i < 5; i++) {
		char name[32];

		snprintf(name, sizeof name, "data/k%d", i);
		put(name, "key");
		at(from, sizeof from, name);
		snprintf(name, sizeof name, "data/k%d-again", i);
		at(to, sizeof to, name);
		cr_assert_eq(link(from, to), 0);
	}
	at(from, sizeof from, "data/token");
	at(to, sizeof to, "real/token-link");
	cr_assert_eq(link(from, to), 0);
	expect_refused("real/token-link", WSFILE_HIDDEN, "path is hidden");
	at(from, sizeof from, "data/k3");
	at(to, sizeof to, "real/k3-link");
	cr_assert_eq(link(from, to), 0);
	expect_refused("real/k3-link", WSFILE_HIDDEN, "path is hidden");
	/* a file linked twice outside the hidden set is fine */
	at(from, sizeof from, "real/f.txt");
	at(to, sizeof to, "real/f-again.txt");
	cr_assert_eq(link(from, to), 0);
	expect_ok("real/f-again.txt", "real/f-again.txt");
}

Test(wsfile, the_workspace_itself_may_be_a_hidden_path)
{
	const char *hidden[] = { root, NULL };
	struct wsfile_root *r;
	struct stat st;
	char *rel, *why;
	int fd;

	r = wsfile_root_open(root, hidden, &why);
	cr_assert_not_null(r, "%s", why);
	cr_expect_eq(wsfile_open(r, "real/f.txt", O_RDONLY, &fd, &st, &rel, &why), WSFILE_OK);
	close(fd);
	free(rel);
	/* nor are its multiply linked files */
	{
		char from[PATH_MAX + 64], to[PATH_MAX + 64];

		at(from, sizeof from, "real/f.txt");
		at(to, sizeof to, "real/f-linked.txt");
		cr_assert_eq(link(from, to), 0);
		cr_expect_eq(wsfile_open(r, "real/f-linked.txt", O_RDONLY, &fd, &st, &rel, &why),
		    WSFILE_OK, "%s", why);
		close(fd);
		free(rel);
	}
	wsfile_root_free(r);
}

Test(wsfile, subdirectories_of_a_listing_skip_hidden_ones)
{
	struct stat st;
	char *rel, *why;
	int fd, sub;

	cr_assert_eq(wsfile_open(files, ".", O_RDONLY | O_DIRECTORY, &fd, &st, &rel, &why),
	    WSFILE_OK, "%s", why);
	sub = wsfile_open_subdir(files, fd, "real");
	cr_expect_geq(sub, 0, "%s", strerror(errno));
	close(sub);
	cr_expect_eq(wsfile_open_subdir(files, fd, "data"), -1);
	cr_expect_eq(errno, EACCES);
	cr_expect_eq(wsfile_open_subdir(files, fd, "in-link"), -1, "a link is not entered");
	close(fd);
	free(rel);
}

static char *
slurp(const char *rel)
{
	char path[PATH_MAX + 64], *buf = calloc(1, 4096);
	FILE *f;

	at(path, sizeof path, rel);
	f = fopen(path, "r");
	if (f == NULL) {
		free(buf);
		return NULL;
	}
	if (fread(buf, 1, 4095, f) == 0)
		buf[0] = '\0';
	fclose(f);
	return buf;
}

static enum wsfile_status
write_text(const char *path, const char *text, char **why)
{
	char *rel = NULL;
	enum wsfile_status s;

	*why = NULL;
	s = wsfile_write(files, path, text, strlen(text), &rel, why);
	free(rel);
	return s;
}

Test(wsfile, writes_create_directories_and_replace_files)
{
	char *why, *text, path[PATH_MAX + 64];
	struct stat st;

	cr_assert_eq(write_text("n1/n2/new.txt", "one", &why), WSFILE_OK, "%s", why);
	text = slurp("n1/n2/new.txt");
	cr_expect_str_eq(text, "one");
	free(text);
	at(path, sizeof path, "n1/n2/new.txt");
	cr_assert_eq(chmod(path, 0750), 0);
	cr_assert_eq(write_text("n1/n2/new.txt", "two", &why), WSFILE_OK, "%s", why);
	text = slurp("n1/n2/new.txt");
	cr_expect_str_eq(text, "two");
	free(text);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0750, "a replaced file keeps its mode");
	cr_assert_eq(write_text("in-link/via-link.txt", "three", &why), WSFILE_OK, "%s", why);
	text = slurp("real/via-link.txt");
	cr_expect_str_eq(text, "three");
	free(text);
	/* no temporary file is left beside it */
	{
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof cmd, "ls -a '%s/n1/n2' | grep -q td-write", root);
		cr_expect_neq(system(cmd), 0);
	}
}

Test(wsfile, writes_refuse_hidden_outside_and_links)
{
	char *why, path[PATH_MAX + 64];
	struct stat st;

	cr_expect_eq(write_text("data/planted", "x", &why), WSFILE_HIDDEN, "%s", why);
	free(why);
	cr_expect_eq(write_text("data/sub/planted", "x", &why), WSFILE_HIDDEN, "%s", why);
	free(why);
	at(path, sizeof path, "data/sub");
	cr_expect_neq(stat(path, &st), 0, "a directory was made in a hidden one");
	cr_expect_eq(write_text("netrc", "x", &why), WSFILE_HIDDEN, "%s", why);
	free(why);
	cr_expect_eq(write_text("out-link/planted", "x", &why), WSFILE_ESCAPES, "%s", why);
	free(why);
	cr_expect_eq(write_text("../planted", "x", &why), WSFILE_ESCAPES, "%s", why);
	free(why);
	snprintf(path, sizeof path, "%s/outside/planted", tmp);
	cr_expect_neq(stat(path, &st), 0, "written outside the workspace");
	put("real/target.txt", "target");
	at(path, sizeof path, "last-link");
	cr_assert_eq(symlink("real/target.txt", path), 0);
	cr_expect_eq(write_text("last-link", "x", &why), WSFILE_FAILED, "%s", why);
	cr_expect(strstr(why, "symbolic link") != NULL, "%s", why);
	free(why);
	cr_expect_eq(write_text(".", "x", &why), WSFILE_INVALID, "%s", why);
	free(why);
	cr_expect_eq(write_text("real", "x", &why), WSFILE_FAILED, "%s", why);
	free(why);
}
