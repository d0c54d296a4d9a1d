/* taskdeck runs changes, diff and revert, run as a user would against a real taskdeckd. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

TestSuite(cli_changes, .init = svc_setup, .fini = svc_teardown, .timeout = 120);

#define NOTES "alpha\nbeta\ngamma\n"

struct run {
	int status;
	char *out;
	char *err;
};

/*
 * Runs "taskdeck ARGS" (stdin from /dev/null) with the home of svc, from dir
 * (NULL: where the test runs); stdout and stderr kept.
 */
static struct run
cli_in(const char *dir, const char *fmt, ...)
{
	char args[4096], errpath[512];
	struct run r;
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/cli.stderr", svc.home);
	r.status = run_capture(&svc, &r.out, "cd '%s' && %s %s </dev/null 2>%s",
	    dir != NULL ? dir : ".", harness_bin("taskdeck"), args, errpath);
	r.err = harness_slurp(errpath, &len);
	cr_assert_not_null(r.err);
	return r;
}

#define cli(...) cli_in(NULL, __VA_ARGS__)

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* A workspace of the user's (outside taskdeck's home) with notes.txt (mode 0755); its
 * path, free() it with workspace_free. */
static char *
user_workspace(void)
{
	char *dir = strdup("/tmp/tdchanges-XXXXXX"), file[600];
	FILE *fp;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/notes.txt", dir);
	fp = fopen(file, "w");
	cr_assert_not_null(fp);
	fputs(NOTES, fp);
	fclose(fp);
	cr_assert_eq(chmod(file, 0755), 0);
	return dir;
}

static void
workspace_free(char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}

/*
 * In a new project named name, runs the replayed transcript model in dir
 * until it completes; the run's id (free it).
 */
static char *
replay_run(const char *name, const char *model, const char *dir, const char *prompt)
{
	struct run r = cli("--json projects create %s", name);
	char *project, *id;
	cJSON *doc;

	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	project = strdup(json_str(doc, "id"));
	cJSON_Delete(doc);
	run_free(&r);
	r = cli("--json run --project %s --cwd %s --provider replay --model %s "
	    "--permission workspace-write --wait --wait-timeout 60 '%s'", project, dir, model,
	    prompt);
	cr_assert_eq(r.status, 0, "run: %s %s", r.out, r.err);
	doc = json_doc(r.out);
	cr_assert_str_eq(json_str(doc, "status"), "completed");
	id = strdup(json_str(doc, "id"));
	cJSON_Delete(doc);
	run_free(&r);
	free(project);
	return id;
}

/* Runs workspace-edits in dir until it ends; the run's id (free it). */
static char *
edit_run(const char *dir)
{
	return replay_run("Edits", "workspace-edits", dir, "Fix the notes.");
}

static char *
file_text(const char *dir, const char *name)
{
	char path[600];
	size_t len;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return harness_slurp(path, &len);
}

Test(cli_changes, list_diff_and_stat)
{
	char *dir = user_workspace(), *id = edit_run(dir);
	struct run r;
	cJSON *doc, *files;

	r = cli("runs changes %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "M  +1 -1  notes.txt\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "A  +3 -0  report.md\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, " 2 files changed, 4 insertions(+), 1 deletion(-)\n"),
	    "%s", r.out);
	run_free(&r);

	/* runs show (and the dashboard's detail, the same lines) sums them up. */
	r = cli("runs show %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "\nchanges: 2 files +4 -1\n"), "%s", r.out);
	run_free(&r);

	r = cli("--json runs changes %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	files = cJSON_GetObjectItemCaseSensitive(doc, "files");
	cr_assert_eq(cJSON_GetArraySize(files), 2);
	cr_expect_str_eq(json_str(cJSON_GetArrayItem(files, 0), "path"), "notes.txt");
	cr_expect_str_eq(json_str(cJSON_GetArrayItem(files, 1), "status"), "added");
	cJSON_Delete(doc);
	run_free(&r);

	r = cli("runs diff %s --stat", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, " notes.txt | 2 +-\n report.md | 3 +++\n"
	    " 2 files changed, 4 insertions(+), 1 deletion(-)\n");
	run_free(&r);

	/* One file, piped: plain text (no colour, no pager), only that file. */
	r = cli("runs diff %s notes.txt", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "diff --git a/notes.txt b/notes.txt\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"),
	    "%s", r.out);
	cr_expect_null(strstr(r.out, "report.md"), "%s", r.out);
	cr_expect_null(strchr(r.out, '\033'), "colour in a pipe: %s", r.out);
	run_free(&r);

	r = cli("runs diff %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "+++ b/report.md\n"), "%s", r.out);
	run_free(&r);

	/* On a terminal (script(1) gives it one): coloured as git colours, unless NO_COLOR. */
	r.status = run_capture(&svc, &r.out, "PAGER=cat script -qec '%s runs diff %s notes.txt' "
	    "/dev/null </dev/null", harness_bin("taskdeck"), id);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\033[31m-beta\033[m"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\033[32m+BETA\033[m"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\033[36m@@ -1,3 +1,3 @@\033[m"), "%s", r.out);
	free(r.out);
	r.status = run_capture(&svc, &r.out, "NO_COLOR=1 PAGER=cat script -qec '%s runs diff %s "
	    "notes.txt' /dev/null </dev/null", harness_bin("taskdeck"), id);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_null(strchr(r.out, '\033'), "NO_COLOR: %s", r.out);
	cr_expect_not_null(strstr(r.out, "+BETA"), "%s", r.out);
	free(r.out);

	/* Through $PAGER on a terminal, as git does; never when piped. */
	r.status = run_capture(&svc, &r.out, "NO_COLOR=1 PAGER='sed s/^/paged:/' script -qec "
	    "'%s runs diff %s notes.txt' /dev/null </dev/null", harness_bin("taskdeck"), id);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "paged:+BETA"), "%s", r.out);
	free(r.out);
	r.status = run_capture(&svc, &r.out, "PAGER='sed s/^/paged:/' %s runs diff %s notes.txt "
	    "</dev/null", harness_bin("taskdeck"), id);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_null(strstr(r.out, "paged:"), "%s", r.out);
	free(r.out);

	r = cli("runs changes %s --from start", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "A  +3 -0  report.md\n"), "the session's start is the run's: %s",
	    r.out);
	run_free(&r);
	r = cli("runs changes %s --from run_00000000000000000000000000", id);
	cr_expect_eq(r.status, 1, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "invalid_request"), "%s", r.err);
	run_free(&r);

	r = cli("runs diff %s missing.txt", id);
	cr_expect_eq(r.status, 4, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "not_found"), "%s", r.err);
	run_free(&r);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, revert_refuses_a_later_edit_then_force_puts_back_the_bytes)
{
	char *dir = user_workspace(), *id = edit_run(dir), path[600], *text;
	struct stat st;
	struct run r;
	FILE *fp;

	/* Off a terminal, a revert is only done when confirmed with --yes. */
	r = cli("runs revert %s", id);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "--yes"), "%s", r.err);
	run_free(&r);

	/* The user edits a file the run changed: the revert refuses and names it. */
	snprintf(path, sizeof path, "%s/notes.txt", dir);
	fp = fopen(path, "a");
	cr_assert_not_null(fp);
	fputs("delta\n", fp);
	fclose(fp);
	r = cli("runs revert %s --yes", id);
	cr_expect_eq(r.status, 5, "a conflict exits 5: %s", r.err);
	cr_expect_not_null(strstr(r.err, "revert_conflict"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  notes.txt: "), "the file is named: %s", r.err);
	cr_expect_not_null(strstr(r.err, "--force"), "%s", r.err);
	cr_expect_null(strstr(r.err, "report.md"), "%s", r.err);
	run_free(&r);
	text = file_text(dir, "notes.txt");
	cr_expect_str_eq(text, "alpha\nBETA\ngamma\ndelta\n", "nothing was reverted");
	free(text);
	text = file_text(dir, "report.md");
	cr_expect_not_null(text, "nothing was reverted");
	free(text);

	r = cli("runs revert %s --yes --force", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "reverted notes.txt\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "reverted report.md\n"), "%s", r.out);
	run_free(&r);
	text = file_text(dir, "notes.txt");
	cr_expect_str_eq(text, NOTES, "the bytes from before the run");
	free(text);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0755, "the mode from before the run");
	snprintf(path, sizeof path, "%s/report.md", dir);
	cr_expect_neq(access(path, F_OK), 0, "the file the run added is gone");

	r = cli("runs changes %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "reverted at "), "%s", r.out);
	run_free(&r);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, on_a_terminal_revert_asks_naming_the_files)
{
	char *dir = user_workspace(), *id = edit_run(dir), *text, path[600];
	struct run r;

	/* script(1) gives taskdeck a terminal; the answer comes on it. */
	r.status = run_capture(&svc, &r.out, "printf 'n\\n' | script -qec '%s runs revert %s' "
	    "/dev/null", harness_bin("taskdeck"), id);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Revert run "), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "  M notes.txt"), "the question names the files: %s", r.out);
	cr_expect_not_null(strstr(r.out, "  A report.md"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "[y/N]"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "nothing was reverted"), "%s", r.out);
	free(r.out);
	text = file_text(dir, "notes.txt");
	cr_expect_str_eq(text, "alpha\nBETA\ngamma\n", "no means no");
	free(text);

	r.status = run_capture(&svc, &r.out, "printf 'y\\n' | script -qec '%s runs revert %s' "
	    "/dev/null", harness_bin("taskdeck"), id);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "reverted: 2 files"), "%s", r.out);
	free(r.out);
	text = file_text(dir, "notes.txt");
	cr_expect_str_eq(text, NOTES);
	free(text);
	snprintf(path, sizeof path, "%s/report.md", dir);
	cr_expect_neq(access(path, F_OK), 0);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, changes_that_left_a_name_out_say_they_are_incomplete)
{
	char *dir = user_workspace(), *id, path[600];
	struct run r;
	FILE *fp;

	/* A name that is not UTF-8 is left out of every snapshot. */
	snprintf(path, sizeof path, "%s/bad\377name", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fclose(fp);
	id = edit_run(dir);
	r = cli("runs changes %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "M  +1 -1  notes.txt\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "incomplete: files may be missing: 1 names that are "
	    "not UTF-8 were left out\n"), "%s", r.out);
	run_free(&r);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, a_path_is_taken_from_where_the_user_stands)
{
	char *dir = user_workspace(), *id = edit_run(dir), sub[600];
	struct run r;

	snprintf(sub, sizeof sub, "%s/sub", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);

	/* In the workspace, what the shell completes: ./notes.txt */
	r = cli_in(dir, "runs diff %s ./notes.txt", id);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "diff --git a/notes.txt b/notes.txt\n"), "%s", r.out);
	cr_expect_null(strstr(r.out, "report.md"), "only that file: %s", r.out);
	run_free(&r);
	r = cli_in(dir, "runs diff %s ./notes.txt --stat", id);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, " notes.txt | 2 +-\n"
	    " 1 file changed, 1 insertion(+), 1 deletion(-)\n");
	run_free(&r);

	/* From a directory inside it, relative to that directory. */
	r = cli_in(sub, "runs diff %s ../report.md", id);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "+++ b/report.md\n"), "%s", r.out);
	run_free(&r);
	r = cli_in(sub, "runs diff %s notes.txt", id);
	cr_expect_eq(r.status, 4, "sub/notes.txt was not changed: %s", r.out);
	run_free(&r);

	/* An absolute path inside the workspace, from anywhere. */
	r = cli_in("/", "runs diff %s '%s/notes.txt'", id, dir);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "+BETA\n"), "%s", r.out);
	run_free(&r);

	/* Outside the workspace a relative path is the workspace's, as before. */
	r = cli_in("/", "runs diff %s notes.txt", id);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "+BETA\n"), "%s", r.out);
	run_free(&r);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, stat_lines_up_a_path_that_is_not_ascii)
{
	char *dir = user_workspace(), script[600], *id;
	struct run r;
	FILE *fp;

	/* The command the transcript runs writes a file whose name is not ASCII. */
	snprintf(script, sizeof script, "%s/approve.sh", dir);
	fp = fopen(script, "w");
	cr_assert_not_null(fp);
	fputs("printf 'one\\ntwo\\nthree\\n' > \"\303\274n\303\257code.txt\"\n", fp);
	fclose(fp);
	id = replay_run("Unicode", "sandbox-approve", dir, "Write them.");

	r = cli("runs diff %s --stat", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, " later.md    | 1 +\n"
	    " \303\274n\303\257code.txt | 3 +++\n"
	    " 2 files changed, 4 insertions(+)\n", "the bars line up:\n%s", r.out);
	run_free(&r);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, diff_json_is_json)
{
	char *dir = user_workspace(), *id = edit_run(dir);
	cJSON *doc, *files;
	struct run r;

	/* The diff in a JSON document, as the SDK's getRunDiff gives it: {text, truncated}. */
	r = cli("--json runs diff %s notes.txt", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_not_null(doc, "not JSON: %s", r.out);
	cr_expect_not_null(strstr(json_str(doc, "text"), "+BETA\n"), "%s", r.out);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "truncated")), "%s", r.out);
	cJSON_Delete(doc);
	run_free(&r);

	/* --stat: the changes of runs changes --json, of PATH when given. */
	r = cli("runs diff %s --stat --json", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_not_null(doc, "not JSON: %s", r.out);
	files = cJSON_GetObjectItemCaseSensitive(doc, "files");
	cr_expect_eq(cJSON_GetArraySize(files), 2, "%s", r.out);
	cJSON_Delete(doc);
	run_free(&r);
	r = cli("runs diff %s report.md --stat --json", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_doc(r.out);
	cr_assert_not_null(doc, "not JSON: %s", r.out);
	files = cJSON_GetObjectItemCaseSensitive(doc, "files");
	cr_expect_eq(cJSON_GetArraySize(files), 1, "%s", r.out);
	cr_expect_str_eq(json_str(cJSON_GetArrayItem(files, 0), "path"), "report.md");
	cJSON_Delete(doc);
	run_free(&r);
	free(id);
	workspace_free(dir);
}

/* A file the store keeps by its hash only (here a .gitignore'd one) cannot be put back: said. */
Test(cli_changes, revert_names_the_files_it_cannot_put_back)
{
	char *dir = user_workspace(), path[600], *id, *text;
	struct run r;
	FILE *fp;

	snprintf(path, sizeof path, "%s/.gitignore", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("*.log\n", fp);
	fclose(fp);
	snprintf(path, sizeof path, "%s/secret.log", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("keep me\n", fp);
	fclose(fp);
	snprintf(path, sizeof path, "%s/approve.sh", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("echo more >> secret.log\necho delta >> notes.txt\n", fp);
	fclose(fp);
	id = replay_run("Ignored", "sandbox-approve", dir, "Log it.");

	/* Refused: the ignored file is named, and --force is not said to overwrite it. */
	r = cli("runs revert %s --yes", id);
	cr_expect_eq(r.status, 5, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  secret.log: not stored"), "%s", r.err);
	cr_expect_null(strstr(r.err, "--force` overwrites it\n"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "leaves"), "what --force does with it: %s", r.err);
	run_free(&r);

	/* Forced: the others are put back, and the one left as it is is named. */
	r = cli("runs revert %s --yes --force", id);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "reverted notes.txt\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.err, "secret.log"), "the file left as the run made it: %s",
	    r.err);
	run_free(&r);
	text = file_text(dir, "notes.txt");
	cr_expect_str_eq(text, NOTES);
	free(text);
	text = file_text(dir, "secret.log");
	cr_expect_str_eq(text, "keep me\nmore\n", "left as it is");
	free(text);
	free(id);
	workspace_free(dir);
}

Test(cli_changes, a_file_name_s_escapes_never_reach_the_terminal)
{
	char *dir = user_workspace(), script[600], *id;
	struct run r;
	FILE *fp;

	/* The command the transcript runs names a file with a title and a clear-screen escape. */
	snprintf(script, sizeof script, "%s/approve.sh", dir);
	fp = fopen(script, "w");
	cr_assert_not_null(fp);
	fputs("printf 'x\\n' > \"$(printf 'a\\033]2;owned\\007\\033[2J\\302\\233b.txt')\"\n", fp);
	fclose(fp);
	id = replay_run("Escapes", "sandbox-approve", dir, "Write them.");

	r = cli("runs changes %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_null(strchr(r.out, '\033'), "an escape reached the terminal: %s", r.out);
	cr_expect_null(strstr(r.out, "\302\233"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "a?]2;owned??[2J?b.txt"), "%s", r.out);
	run_free(&r);

	r = cli("runs diff %s --stat", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_null(strchr(r.out, '\033'), "an escape reached the terminal: %s", r.out);
	cr_expect_not_null(strstr(r.out, " a?]2;owned??[2J?b.txt | 1 +"), "%s", r.out);
	run_free(&r);

	/* The diff names it as git does: quoted, its controls in octal. */
	r = cli("runs diff %s", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_null(strchr(r.out, '\033'), "an escape reached the terminal: %s", r.out);
	cr_expect_not_null(strstr(r.out, "\"b/a\\033]2;owned\\a\\033[2J\\302\\233b.txt\""),
	    "%s", r.out);
	run_free(&r);

	/* The question before [y/N] shows the name, not what it does to the screen. */
	r.status = run_capture(&svc, &r.out, "printf 'n\\n' | script -qec '%s runs revert %s' "
	    "/dev/null", harness_bin("taskdeck"), id);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect_null(strchr(r.out, '\033'), "an escape reached the terminal: %s", r.out);
	cr_expect_not_null(strstr(r.out, "  A a?]2;owned??[2J?b.txt"), "%s", r.out);
	free(r.out);
	free(id);
	workspace_free(dir);
}
