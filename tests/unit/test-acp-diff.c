/* acp_diff_old_text (src/cli/acp-diff.c): a run's unified diff applied backwards. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void
expect_old(const char *now, const char *diff, const char *want, bool want_added)
{
	bool added = !want_added;
	char *old = acp_diff_old_text(now, diff, &added);

	cr_assert_not_null(old, "no old text for\n%s", diff);
	cr_expect_str_eq(old, want);
	cr_expect_eq(added, want_added);
	free(old);
}

Test(acp_diff, a_modified_file_with_two_hunks)
{
	expect_old("a\nB\nc\nd\ne\nf\ng\nh\nI\nj\nnew\n",
	    "diff --git a/f b/f\n--- a/f\n+++ b/f\n"
	    "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
	    "@@ -8,3 +8,4 @@\n h\n-i\n+I\n j\n+new\n",
	    "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", false);
}

Test(acp_diff, an_added_file)
{
	expect_old("x\ny\n", "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n"
	    "@@ -0,0 +1,2 @@\n+x\n+y\n", "", true);
}

Test(acp_diff, lines_without_a_final_line_break)
{
	/* The old file ended without one, the new one with one. */
	expect_old("a\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
	    "a\nb", false);
	/* The new one ends without one. */
	expect_old("a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
	    "a\nb\n", false);
	/* Lines only removed at the start. */
	expect_old("c\n", "--- a/f\n+++ b/f\n@@ -1,3 +1 @@\n-a\n-b\n c\n", "a\nb\nc\n", false);
	/* Everything removed but the file is still there, empty. */
	expect_old("", "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n", "a\nb\n", false);
}

Test(acp_diff, what_cannot_be_shown)
{
	bool added;

	/* The file changed since the diff: its lines are not the diff's. */
	cr_expect_null(acp_diff_old_text("a\nX\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
	    &added));
	cr_expect_null(acp_diff_old_text("", "diff --git a/f b/f\nBinary files a/f and b/f differ\n",
	    &added));
	cr_expect_null(acp_diff_old_text("", "diff --git a/f b/f\ndeleted file mode 100644\n"
	    "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", &added));
	cr_expect_null(acp_diff_old_text("a\n", "", &added));
	cr_expect_null(acp_diff_old_text("a\n", "--- a/f\n+++ b/f\n@@ -1 +5 @@\n-a\n+b\n", &added));
	cr_expect_null(acp_diff_old_text("a\n", "--- a/f\n+++ b/f\n@@ garbage\n", &added));
}
