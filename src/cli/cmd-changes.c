/* taskdeck runs changes|diff|revert: what a run changed in its workspace, and undoing it */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "json.h"
#include "termtext.h"
#include "xalloc.h"

/* How long runs revert waits for the service's answer without --timeout. */
#define CHANGES_REVERT_WAIT_MS (10L * 60 * 1000)

/* Width of --stat's bar of + and -, as git's default on an 80-column terminal. */
#define CHANGES_STAT_BAR 50

static const struct cli_option changes_options[] = {
	{ "from", true },
	{ NULL, false }
};

static const struct cli_option diff_options[] = {
	{ "from", true },
	{ "stat", false },
	{ NULL, false }
};

static const struct cli_option revert_options[] = {
	{ "force", false },
	{ "yes", false },
	{ NULL, false }
};

/* "N files changed, A insertions(+), D deletions(-)", as git says it. */
static void
changes_totals(FILE *fp, long files, long additions, long deletions)
{
	fprintf(fp, " %ld file%s changed", files, files == 1 ? "" : "s");
	if (additions > 0 || deletions == 0)
		fprintf(fp, ", %ld insertion%s(+)", additions, additions == 1 ? "" : "s");
	if (deletions > 0)
		fprintf(fp, ", %ld deletion%s(-)", deletions, deletions == 1 ? "" : "s");
	fputc('\n', fp);
}

/* Reads the changes of run_id (--from applied); an exit code. */
static int
changes_fetch(struct cli *cli, const char *run_id, struct td_changes **out)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_run_changes(cli->client, run_id, cli_get(cli, "from"), &opts, out,
	    &err) != TD_OK)
		return cli_fail(&err);
	return CLI_EXIT_OK;
}

/* taskdeck runs changes RUN [--from start|RUN] */
static int
cmd_runs_changes_exec(struct cli *cli, int argc, char **argv)
{
	struct td_changes *ch;
	int rc, width = 0;

	(void)argc;
	if ((rc = changes_fetch(cli, argv[0], &ch)) != CLI_EXIT_OK)
		return rc;
	if (cli->json) {
		out_json(ch->json);
		td_changes_free(ch);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < ch->file_count; i++) {
		const struct td_change_file *f = &ch->files[i];
		int n = snprintf(NULL, 0, "+%ld -%ld", f->additions, f->deletions);

		if (n > width)
			width = n;
	}
	for (size_t i = 0; i < ch->file_count; i++) {
		const struct td_change_file *f = &ch->files[i];
		char counts[64];

		if (f->binary || f->too_large)
			snprintf(counts, sizeof counts, "%s", f->binary ? "binary" : "too large");
		else
			snprintf(counts, sizeof counts, "+%ld -%ld", f->additions, f->deletions);
		char *name = termtext_line(f->path);

		printf("%c  %-*s  %s\n", td_change_letter(f->status), width, counts, name);
		free(name);
	}
	if (ch->file_count == 0)
		printf("no changes%s\n", ch->live ? " yet (the run goes on)" : "");
	else
		changes_totals(stdout, ch->total_files, ch->total_additions, ch->total_deletions);
	if (ch->reverted_at != NULL)
		printf("reverted at %s\n", ch->reverted_at);
	if (ch->incomplete_reason != NULL) {
		char *why = termtext_line(ch->incomplete_reason);

		printf("incomplete: files may be missing: %s\n", why);
		free(why);
	}
	td_changes_free(ch);
	return CLI_EXIT_OK;
}

/* Where diff output goes: stdout, or a pager on a terminal. */
struct changes_out {
	FILE *fp;
	bool pager;
	bool color;
};

/* Opens $PAGER (default "less -R") when stdout is a terminal, as git does. */
static void
changes_out_open(struct changes_out *o)
{
	const char *pager = getenv("PAGER");
	const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
	bool tty = isatty(STDOUT_FILENO);

	o->fp = stdout;
	o->pager = false;
	o->color = tty && (no_color == NULL || no_color[0] == '\0') &&
	    (term == NULL || strcmp(term, "dumb") != 0);
	if (!tty)
		return;
	if (pager == NULL || pager[0] == '\0')
		pager = "less -R";
	if (strcmp(pager, "cat") == 0)
		return;
	/* less quits at once when the diff fits on the screen, and keeps colours. */
	setenv("LESS", "FRX", 0);
	fflush(stdout);
	signal(SIGPIPE, SIG_IGN);
	if ((o->fp = popen(pager, "w")) == NULL)
		o->fp = stdout;
	else
		o->pager = true;
}

static void
changes_out_close(struct changes_out *o)
{
	if (o->pager)
		pclose(o->fp);
	else
		fflush(o->fp);
}

/* Writes a unified diff, coloured as git colours it when o->color. */
static void
changes_print_diff(const struct changes_out *o, const char *text)
{
	bool header = false;

	while (*text != '\0') {
		size_t n = strcspn(text, "\n");
		const char *color = NULL;

		if (strncmp(text, "diff --git ", 11) == 0)
			header = true;
		else if (strncmp(text, "@@", 2) == 0)
			header = false;
		if (o->color) {
			if (header || strncmp(text, "Binary files ", 13) == 0)
				color = "\033[1m";
			else if (text[0] == '@')
				color = "\033[36m";
			else if (text[0] == '+')
				color = "\033[32m";
			else if (text[0] == '-')
				color = "\033[31m";
		}
		fprintf(o->fp, "%s%.*s%s\n", color != NULL ? color : "", (int)n, text,
		    color != NULL ? "\033[m" : "");
		text += n;
		if (*text == '\n')
			text++;
	}
}

/* The bar of --stat: additions + then deletions -, scaled to CHANGES_STAT_BAR. */
static void
changes_stat_bar(const struct changes_out *o, long add, long del, long most)
{
	long plus = add, minus = del;

	if (most > CHANGES_STAT_BAR) {
		plus = add * CHANGES_STAT_BAR / most + (add > 0 && add * CHANGES_STAT_BAR < most);
		minus = del * CHANGES_STAT_BAR / most + (del > 0 && del * CHANGES_STAT_BAR < most);
	}
	fputs(o->color && plus > 0 ? "\033[32m" : "", o->fp);
	for (long i = 0; i < plus; i++)
		fputc('+', o->fp);
	fputs(o->color && plus > 0 ? "\033[m" : "", o->fp);
	fputs(o->color && minus > 0 ? "\033[31m" : "", o->fp);
	for (long i = 0; i < minus; i++)
		fputc('-', o->fp);
	fputs(o->color && minus > 0 ? "\033[m" : "", o->fp);
}

/* Columns a UTF-8 path takes: its characters, not its bytes. */
static int
changes_width(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* --stat: one line per file (path, count, bar) and the totals, like git diff --stat. */
static int
changes_print_stat(struct cli *cli, const char *run_id, const char *only)
{
	long most = 0, files = 0, adds = 0, dels = 0;
	bool bin = false;
	struct changes_out o;
	struct td_changes *ch;
	int rc, pw = 0, cw = 1;

	if ((rc = changes_fetch(cli, run_id, &ch)) != CLI_EXIT_OK)
		return rc;
	for (size_t i = 0; i < ch->file_count; i++) {
		const struct td_change_file *f = &ch->files[i];
		long sum = f->additions + f->deletions;
		int w = snprintf(NULL, 0, "%ld", sum);

		if (only != NULL && strcmp(f->path, only) != 0)
			continue;
		char *name = termtext_line(f->path);

		if (changes_width(name) > pw)
			pw = changes_width(name);
		free(name);
		if (w > cw)
			cw = w;
		if (sum > most)
			most = sum;
		bin = bin || f->binary || f->too_large;
		files++;
		adds += f->additions;
		dels += f->deletions;
	}
	if (only != NULL && files == 0) {
		fprintf(stderr, "taskdeck: run %s did not change %s\n", run_id, only);
		td_changes_free(ch);
		return CLI_EXIT_NOT_FOUND;
	}
	if (cw < 3 && bin)
		cw = 3;		/* "Bin" */
	changes_out_open(&o);
	for (size_t i = 0; i < ch->file_count; i++) {
		const struct td_change_file *f = &ch->files[i];
		char *name;

		if (only != NULL && strcmp(f->path, only) != 0)
			continue;
		name = termtext_line(f->path);
		fprintf(o.fp, " %s%*s | ", name, pw - changes_width(name), "");
		free(name);
		if (f->binary || f->too_large)
			fprintf(o.fp, "%*s%s", cw, "Bin", f->too_large ? " (too large)" : "");
		else {
			fprintf(o.fp, "%*ld ", cw, f->additions + f->deletions);
			changes_stat_bar(&o, f->additions, f->deletions, most);
		}
		fputc('\n', o.fp);
	}
	if (files == 0)
		fprintf(o.fp, "no changes\n");
	else
		changes_totals(o.fp, files, adds, dels);
	changes_out_close(&o);
	td_changes_free(ch);
	return CLI_EXIT_OK;
}

/* Appends the parts of rel to the absolute path abs ('.' dropped, '..' goes up). */
static void
changes_path_join(char *abs, size_t size, const char *rel)
{
	while (*rel != '\0') {
		size_t n = strcspn(rel, "/"), len = strlen(abs);

		if (n == 2 && strncmp(rel, "..", 2) == 0) {
			char *slash = strrchr(abs, '/');

			if (slash != NULL)
				*(slash == abs ? slash + 1 : slash) = '\0';
		} else if (n > 0 && !(n == 1 && rel[0] == '.')) {
			snprintf(abs + len, size - len, "%s%.*s",
			    len > 0 && abs[len - 1] == '/' ? "" : "/", (int)n, rel);
		}
		rel += n;
		rel += *rel == '/';
	}
}

/* The rest of path after the directory dir, or NULL when it is not inside dir. */
static const char *
changes_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (strncmp(path, dir, n) != 0 || path[n] != '/' || path[n + 1] == '\0')
		return NULL;
	return path + n + 1;
}

/*
 * PATH as the service takes it, relative to the run's workspace, from PATH as
 * the user gives it: like git, relative to where they stand when that is
 * inside the workspace (./notes.txt, ../notes.txt from a subdirectory), or
 * absolute; any other path is the workspace's, as it is.  A new string in *out.
 */
static int
changes_workspace_path(struct cli *cli, const char *run_id, const char *path, char **out)
{
	struct td_request_options opts = cli_request_options(cli);
	char abs[8192] = "", here[4096], *real = NULL;
	const char *rest = NULL;
	struct td_run *run;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_run(cli->client, run_id, &opts, &run, &err) != TD_OK)
		return cli_fail(&err);
	if (run->cwd != NULL)
		real = realpath(run->cwd, NULL);
	if (path[0] == '/')
		changes_path_join(abs, sizeof abs, path);
	else if (getcwd(here, sizeof here) != NULL && run->cwd != NULL &&
	    (strcmp(here, run->cwd) == 0 || (real != NULL && strcmp(here, real) == 0) ||
	    changes_path_under(here, run->cwd) != NULL ||
	    (real != NULL && changes_path_under(here, real) != NULL))) {
		snprintf(abs, sizeof abs, "%s", here);
		changes_path_join(abs, sizeof abs, path);
	}
	if (abs[0] != '\0' && run->cwd != NULL) {
		rest = changes_path_under(abs, run->cwd);
		if (rest == NULL && real != NULL)
			rest = changes_path_under(abs, real);
	}
	if (rest != NULL)
		*out = xstrdup(rest);
	else if (path[0] != '/' && strncmp(path, "./", 2) == 0) {
		abs[0] = '\0';
		changes_path_join(abs, sizeof abs, path);
		*out = xstrdup(abs[0] == '/' ? abs + 1 : abs);
	} else
		*out = xstrdup(path);
	free(real);
	td_run_free(run);
	return CLI_EXIT_OK;
}

/* Prints doc as one JSON line and deletes it. */
static void
changes_print_json(cJSON *doc)
{
	char *text = json_print(doc);

	out_json(text);
	free(text);
	cJSON_Delete(doc);
}

/* --stat --json: the changes as runs changes --json prints them, of PATH only when given. */
static int
changes_print_stat_json(struct cli *cli, const char *run_id, const char *only)
{
	struct td_changes *ch;
	cJSON *doc, *files, *f, *next;
	int rc;

	if ((rc = changes_fetch(cli, run_id, &ch)) != CLI_EXIT_OK)
		return rc;
	doc = json_parse(ch->json, strlen(ch->json));
	td_changes_free(ch);
	if (doc == NULL)
		abort();	/* libtaskdeck parsed it already */
	files = cJSON_GetObjectItemCaseSensitive(doc, "files");
	for (f = files != NULL && only != NULL ? files->child : NULL; f != NULL; f = next) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(f, "path");

		next = f->next;
		if (!cJSON_IsString(path) || strcmp(path->valuestring, only) != 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(files, f));
	}
	if (only != NULL && cJSON_GetArraySize(files) == 0) {
		fprintf(stderr, "taskdeck: run %s did not change %s\n", run_id, only);
		cJSON_Delete(doc);
		return CLI_EXIT_NOT_FOUND;
	}
	changes_print_json(doc);
	return CLI_EXIT_OK;
}

/* taskdeck runs diff RUN [PATH] [--stat] [--from start|RUN] */
static int
cmd_runs_diff_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct changes_out o;
	struct td_error err;
	char *text, *path = NULL;
	bool truncated;
	int rc;

	if (argc > 1 &&
	    (rc = changes_workspace_path(cli, argv[0], argv[1], &path)) != CLI_EXIT_OK)
		return rc;
	if (cli_has(cli, "stat")) {
		rc = cli->json ? changes_print_stat_json(cli, argv[0], path) :
		    changes_print_stat(cli, argv[0], path);
		free(path);
		return rc;
	}
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK) {
		free(path);
		return rc;
	}
	if (td_get_run_diff(cli->client, argv[0], path, cli_get(cli, "from"), &opts, &text,
	    &truncated, &err) != TD_OK) {
		rc = cli_fail(&err);
		if (err.code == TD_NOT_FOUND && path != NULL)
			fprintf(stderr, "taskdeck: `taskdeck runs changes %s` lists the files "
			    "it changed\n", argv[0]);
		free(path);
		return rc;
	}
	free(path);
	if (cli->json) {
		cJSON *doc = cJSON_CreateObject();

		if (doc == NULL || cJSON_AddStringToObject(doc, "text", text) == NULL ||
		    cJSON_AddBoolToObject(doc, "truncated", truncated) == NULL)
			abort();
		free(text);
		changes_print_json(doc);
		return CLI_EXIT_OK;
	}
	changes_out_open(&o);
	changes_print_diff(&o, text);
	changes_out_close(&o);
	if (truncated)
		fprintf(stderr, "taskdeck: the diff was cut at 8 MiB; give a PATH for the rest\n");
	free(text);
	return CLI_EXIT_OK;
}

/* Asks on the terminal whether to revert the files listed; true for y or yes. */
static bool
changes_confirm(const char *run_id, const struct td_changes *ch, bool force)
{
	fprintf(stderr, "Revert run %s? It puts back %zu file%s as %s before the run%s:\n",
	    run_id, ch->file_count, ch->file_count == 1 ? "" : "s",
	    ch->file_count == 1 ? "it was" : "they were",
	    force ? ", over any later change" : "");
	for (size_t i = 0; i < ch->file_count; i++) {
		char *name = termtext_line(ch->files[i].path);

		fprintf(stderr, "  %c %s\n", td_change_letter(ch->files[i].status), name);
		free(name);
	}
	return cli_confirmed();
}

/* True for a conflict of a file kept by its hash only, which no revert can put back. */
static bool
changes_not_stored(const struct td_revert_conflict *c)
{
	return c->reason != NULL && strncmp(c->reason, "not stored", 10) == 0;
}

/*
 * A revert refused for conflicts: names them and says what --force does: it
 * overwrites the files changed since, and leaves those not stored as they
 * are; exit 5.
 */
static int
changes_conflicted(const char *run_id, const struct td_error *err, const struct td_revert *rv)
{
	size_t stored = 0, lost = 0;
	int rc = cli_fail(err);

	for (size_t i = 0; rv != NULL && i < rv->conflict_count; i++) {
		char *name = termtext_line(rv->conflicts[i].path);
		char *why = termtext_line(rv->conflicts[i].reason != NULL ?
		    rv->conflicts[i].reason : "changed");

		fprintf(stderr, "  %s: %s\n", name, why);
		free(why);
		free(name);
		if (changes_not_stored(&rv->conflicts[i]))
			lost++;
		else
			stored++;
	}
	fprintf(stderr, "taskdeck: nothing was reverted; `taskdeck runs revert %s --force`", run_id);
	if (stored > 0)
		fprintf(stderr, " overwrites %s", lost > 0 ? "the files changed since" :
		    stored == 1 ? "it" : "them");
	if (lost > 0)
		fprintf(stderr, "%s leaves %s as %s, and puts back the others", stored > 0 ?
		    "," : "", lost == 1 ? "the file not stored" : "the files not stored",
		    lost == 1 ? "it is" : "they are");
	fputc('\n', stderr);
	return rc;
}

/*
 * After a revert: the files of ch it did not put back (kept by their hash
 * only, so the run's version stays), on stderr.
 */
static void
changes_left(const struct td_changes *ch, const struct td_revert *rv)
{
	for (size_t i = 0; i < ch->file_count; i++) {
		bool done = false;

		for (size_t j = 0; j < rv->reverted_count && !done; j++)
			done = strcmp(rv->reverted[j], ch->files[i].path) == 0;
		if (!done) {
			char *name = termtext_line(ch->files[i].path);

			fprintf(stderr, "taskdeck: not put back: %s (kept by its size and hash "
			    "only: too large or ignored)\n", name);
			free(name);
		}
	}
}

/* taskdeck runs revert RUN [--force] [--yes] */
static int
cmd_runs_revert_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	bool force = cli_has(cli, "force"), confirm = !cli_has(cli, "yes");
	struct td_revert *rv = NULL;
	struct td_changes *ch;
	struct td_error err;
	enum td_code code;
	int rc;

	(void)argc;
	if (confirm && !isatty(STDIN_FILENO))
		return cli_usage_error(cli, "revert rewrites files: confirm with --yes "
		    "(stdin is not a terminal)");
	if ((rc = changes_fetch(cli, argv[0], &ch)) != CLI_EXIT_OK)
		return rc;
	if (confirm) {
		if (ch->file_count == 0) {
			fprintf(stderr, "taskdeck: run %s changed no file; nothing to revert\n",
			    argv[0]);
			td_changes_free(ch);
			return CLI_EXIT_OK;
		}
		if (!changes_confirm(argv[0], ch, force)) {
			fprintf(stderr, "taskdeck: nothing was reverted\n");
			td_changes_free(ch);
			return CLI_EXIT_SERVICE;
		}
	}
	/* The revert happens once asked, however long it takes: wait for its answer. */
	if (cli->timeout_ms == 0)
		opts.timeout_ms = CHANGES_REVERT_WAIT_MS;
	code = td_revert_run(cli->client, argv[0], force, &opts, &rv, &err);
	if (code == TD_REVERT_CONFLICT) {
		rc = changes_conflicted(argv[0], &err, rv);
		td_revert_free(rv);
		td_changes_free(ch);
		return rc;
	}
	if (code != TD_OK) {
		td_changes_free(ch);
		rc = cli_fail(&err);
		if (code == TD_RUN_ACTIVE)
			fprintf(stderr, "taskdeck: wait for it to end (`taskdeck runs wait %s`) "
			    "or cancel it first\n", argv[0]);
		if (code == TD_TIMEOUT)
			fprintf(stderr, "taskdeck: the revert may still happen: `taskdeck runs "
			    "changes %s` shows revertedAt once it did\n", argv[0]);
		return rc;
	}
	if (cli->json)
		out_json(rv->json);
	else {
		for (size_t i = 0; i < rv->reverted_count; i++) {
			char *name = termtext_line(rv->reverted[i]);

			printf("reverted %s\n", name);
			free(name);
		}
		printf("run %s reverted: %zu file%s\n", rv->run_id, rv->reverted_count,
		    rv->reverted_count == 1 ? "" : "s");
	}
	/* a run reverted before: nothing was to be put back this time */
	if (ch->reverted_at == NULL)
		changes_left(ch, rv);
	td_changes_free(ch);
	td_revert_free(rv);
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_runs_changes_entry = {
	"runs", "changes", "RUN [--from start|RUN]",
	"List the files a run changed in its workspace: A added, M modified,\n"
	"D deleted, T type changed, with lines added and removed, and the totals.\n"
	"--from start compares with the session's start, --from RUN with the end\n"
	"of another run of the session.",
	changes_options, 1, 1, cmd_runs_changes_exec
};

const struct cli_cmd cmd_runs_diff_entry = {
	"runs", "diff", "RUN [PATH] [--stat] [--from start|RUN]",
	"Show what a run changed as a unified diff (of PATH, or of every file),\n"
	"coloured and through $PAGER (less -R) on a terminal unless NO_COLOR;\n"
	"plain when piped.  --stat: one line per file, like git diff --stat.",
	diff_options, 1, 2, cmd_runs_diff_exec
};

const struct cli_cmd cmd_runs_revert_entry = {
	"runs", "revert", "RUN [--force] [--yes]",
	"Put the files a run changed back as they were before it (files it did\n"
	"not touch stay as they are).  On a terminal it asks [y/N] naming them;\n"
	"--yes does not ask.  When a file was changed again since, nothing is\n"
	"reverted: the files are listed, exit 5; --force overwrites them.",
	revert_options, 1, 1, cmd_runs_revert_exec
};
