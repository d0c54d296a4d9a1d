/*
 * paths_renamable: which directories another user can rename (so that a
 * link or a directory of theirs takes the place of a session's directory).
 * The other user's cases need root (chown); they are skipped otherwise.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"

#define OTHER_UID 4242

static char top[PATH_MAX];

static void
setup(void)
{
	char tmpl[] = "/tmp/td-paths-XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, top));
}

static void
teardown(void)
{
	paths_remove_tree(top);
}

TestSuite(paths, .init = setup, .fini = teardown);

/* dir below top, made with mode and (when uid is not -1) that owner; its path. */
static const char *
make(const char *name, mode_t mode, int uid)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof path, "%s/%s", top, name);
	cr_assert_eq(mkdir(path, 0700), 0, "%s", path);
	cr_assert_eq(chmod(path, mode), 0);
	if (uid >= 0)
		cr_assert_eq(chown(path, (uid_t)uid, (gid_t)uid), 0);
	return path;
}

Test(paths, a_private_directory_is_not_renamable)
{
	char *why;

	cr_assert_eq(chmod(top, 0700), 0);
	why = paths_renamable(make("mine", 0755, -1));
	cr_expect_null(why, "%s", why);
	free(why);
}

Test(paths, a_directory_others_may_write_into_is_renamable_unless_sticky)
{
	char *why;

	cr_assert_eq(chmod(top, 0777), 0);
	why = paths_renamable(make("open", 0755, -1));
	cr_expect_not_null(why, "a directory in a world-writable one");
	cr_expect_not_null(why ? strstr(why, "writable by other users") : NULL, "%s", why);
	free(why);
	/* Sticky, as /tmp: only the entry's owner (the user here) may rename it. */
	cr_assert_eq(chmod(top, 01777), 0);
	why = paths_renamable(make("sticky-mine", 0755, -1));
	cr_expect_null(why, "%s", why);
	free(why);
}

Test(paths, another_users_directory_above_or_entry_in_a_sticky_one_is_renamable)
{
	char sub[PATH_MAX + 80], *why;
	const char *theirs;

	if (geteuid() != 0)
		cr_skip_test("another user's directory needs root (chown); skipped");
	cr_assert_eq(chmod(top, 0755), 0);
	theirs = make("theirs", 0755, OTHER_UID);
	snprintf(sub, sizeof sub, "%s/proj", theirs);
	cr_assert_eq(mkdir(sub, 0755), 0);
	why = paths_renamable(sub);
	cr_expect_not_null(why ? strstr(why, "owned by another user") : NULL, "%s", why);
	free(why);
	/* In a sticky directory, an entry of another user's is theirs to rename. */
	cr_assert_eq(chmod(top, 01777), 0);
	why = paths_renamable(make("sticky-theirs", 0755, OTHER_UID));
	cr_expect_not_null(why, "another user's entry in a sticky directory");
	free(why);
}
