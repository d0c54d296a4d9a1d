/* taskdeck plan show|approve|revise|reject */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xalloc.h"

static int cmd_plan_show_exec(struct cli *, int, char **);
static int cmd_plan_approve_exec(struct cli *, int, char **);
static int cmd_plan_revise_exec(struct cli *, int, char **);
static int cmd_plan_reject_exec(struct cli *, int, char **);

static const struct cli_option plan_approve_options[] = {
	{ "version", true },
	{ "revision", true },
	{ NULL, false }
};

static const struct cli_option plan_revise_options[] = {
	{ "feedback", true },
	{ "version", true },
	{ "revision", true },
	{ NULL, false }
};

static const struct cli_option plan_reject_options[] = {
	{ "yes", false },
	{ "version", true },
	{ "revision", true },
	{ NULL, false }
};

const struct cli_cmd cmd_plan_show_entry = {
	"plan", "show", "SESSION",
	"Show a session's plan: summary, version, revision, status and steps.",
	cli_no_options, 1, 1, cmd_plan_show_exec
};

const struct cli_cmd cmd_plan_approve_entry = {
	"plan", "approve", "SESSION [--version N --revision M]",
	"Approve the plan awaiting a decision; its run goes on.  The version and\n"
	"revision are read first, or pinned with --version and --revision: a plan\n"
	"that changed since is not approved (exit 5).",
	plan_approve_options, 1, 1, cmd_plan_approve_exec
};

const struct cli_cmd cmd_plan_revise_entry = {
	"plan", "revise", "SESSION --feedback TEXT [--version N --revision M]",
	"Ask for a new version of the plan, with feedback for the agent.",
	plan_revise_options, 1, 1, cmd_plan_revise_exec
};

const struct cli_cmd cmd_plan_reject_entry = {
	"plan", "reject", "SESSION [--yes] [--version N --revision M]",
	"Reject the plan: its run ends cancelled.  Asks for confirmation on a\n"
	"terminal; elsewhere --yes is required.",
	plan_reject_options, 1, 1, cmd_plan_reject_exec
};

/* Prints a plan: key: value lines, then its steps as a table. */
static void
plan_print(const struct cli *cli, const struct td_plan *p)
{
	static const char *const header[] = { "STEP", "STATUS", "TITLE" };
	struct out_table table;
	char number[32];

	if (cli->json) {
		out_json(p->json);
		return;
	}
	out_kv("session", p->session_id);
	out_kv("run", p->run_id);
	out_kv("status", p->status);
	snprintf(number, sizeof number, "%ld", p->version);
	out_kv("version", number);
	snprintf(number, sizeof number, "%ld", p->revision);
	out_kv("revision", number);
	out_kv("summary", p->summary);
	out_kv("feedback", p->feedback);
	out_kv("updatedAt", p->updated_at);
	if (p->step_count == 0) {
		out_kv("steps", "none");
		return;
	}
	putchar('\n');
	out_table_init(&table, 3, header);
	for (size_t i = 0; i < p->step_count; i++) {
		const char *row[] = { p->steps[i].id, p->steps[i].status, p->steps[i].title };

		out_table_add(&table, row);
	}
	out_table_print(&table);
	out_table_free(&table);
}

/* taskdeck plan show SESSION */
static int
cmd_plan_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	struct td_plan *p;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_session_plan(cli->client, argv[0], &opts, &p, &err) != TD_OK)
		return cli_fail(&err);
	plan_print(cli, p);
	if (!cli->json && strcmp(p->status, "awaiting-approval") == 0) {
		fprintf(stderr, "taskdeck: decide with `taskdeck plan approve|revise|reject "
		    "%s`\n", argv[0]);
	}
	td_plan_free(p);
	return CLI_EXIT_OK;
}

/* Parses --version and --revision into *version and *revision (0: not given). */
static bool
plan_pinned(const struct cli *cli, long *version, long *revision)
{
	const char *texts[] = { cli_get(cli, "version"), cli_get(cli, "revision") };
	long *values[] = { version, revision };
	char *end;

	if ((texts[0] == NULL) != (texts[1] == NULL)) {
		cli_usage_error(cli, "--version and --revision go together");
		return false;
	}
	for (size_t i = 0; i < 2; i++) {
		*values[i] = 0;
		if (texts[i] == NULL)
			continue;
		errno = 0;
		*values[i] = strtol(texts[i], &end, 10);
		if (errno != 0 || end == texts[i] || *end != '\0' || *values[i] < 1) {
			cli_usage_error(cli, "--%s takes a positive number",
			    i == 0 ? "version" : "revision");
			return false;
		}
	}
	return true;
}

/* Asks on the terminal whether to reject; true for y or yes. */
static bool
plan_confirm_reject(const char *session_id, long version, long revision,
    const char *run_id)
{
	fprintf(stderr, "Reject plan version %ld (revision %ld) of session %s? "
	    "Run %s ends cancelled. ", version, revision, session_id,
	    run_id != NULL ? run_id : "of the plan");
	return cli_confirmed();
}

/* Says what to do after a decision that was refused; returns the exit code. */
static int
plan_refused(const struct td_error *err, const char *session_id, long version,
    long revision)
{
	int rc = cli_fail(err);

	if (err->code == TD_STALE_PLAN) {
		fprintf(stderr, "taskdeck: the plan is no longer at version %ld revision "
		    "%ld; nothing was decided.  Read it again with `taskdeck plan show "
		    "%s`\n", version, revision, session_id);
	} else if (err->code == TD_PLAN_NOT_PENDING) {
		fprintf(stderr, "taskdeck: no plan of session %s awaits a decision; "
		    "`taskdeck plan show %s` shows where it stands\n", session_id,
		    session_id);
	}
	return rc;
}

/*
 * Sends a decision on the session's plan, with the version and revision of
 * --version/--revision, else the current ones.
 */
static int
plan_decide(struct cli *cli, const char *session_id, const char *decision,
    const char *feedback)
{
	struct td_request_options opts = cli_request_options(cli);
	bool reject = strcmp(decision, "reject") == 0;
	bool confirm = reject && !cli_has(cli, "yes");
	long version, revision;
	struct td_plan *p;
	struct td_error err;
	char *run_id = NULL;
	int rc;

	if (!plan_pinned(cli, &version, &revision))
		return CLI_EXIT_USAGE;
	if (confirm && !isatty(STDIN_FILENO)) {
		return cli_usage_error(cli, "reject cancels the run: confirm with --yes "
		    "(stdin is not a terminal)");
	}
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (version == 0 || confirm) {
		if (td_get_session_plan(cli->client, session_id, &opts, &p, &err) != TD_OK)
			return cli_fail(&err);
		if (version == 0) {
			version = p->version;
			revision = p->revision;
		}
		run_id = xstrdup_or_null(p->run_id);
		td_plan_free(p);
	}
	if (confirm && !plan_confirm_reject(session_id, version, revision, run_id)) {
		fprintf(stderr, "taskdeck: the plan was not rejected\n");
		free(run_id);
		return CLI_EXIT_SERVICE;
	}
	free(run_id);
	if (td_respond_session_plan(cli->client, session_id, decision, version, revision,
	    feedback, &opts, &p, &err) != TD_OK)
		return plan_refused(&err, session_id, version, revision);
	plan_print(cli, p);
	td_plan_free(p);
	return CLI_EXIT_OK;
}

/* taskdeck plan approve SESSION */
static int
cmd_plan_approve_exec(struct cli *cli, int argc, char **argv)
{
	return plan_decide(cli, argv[0], "approve", NULL);
}

/* taskdeck plan revise SESSION --feedback TEXT */
static int
cmd_plan_revise_exec(struct cli *cli, int argc, char **argv)
{
	const char *feedback = cli_get(cli, "feedback");

	if (feedback == NULL || *feedback == '\0')
		return cli_usage_error(cli, "revise needs --feedback TEXT");
	return plan_decide(cli, argv[0], "revise", feedback);
}

/* taskdeck plan reject SESSION */
static int
cmd_plan_reject_exec(struct cli *cli, int argc, char **argv)
{
	return plan_decide(cli, argv[0], "reject", NULL);
}
