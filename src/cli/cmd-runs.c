/* taskdeck run and taskdeck runs list|show|wait|cancel */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "timeutil.h"
#include "tui/run-detail.h"
#include "xalloc.h"

static int cmd_run_exec(struct cli *, int, char **);
static int cmd_runs_list_exec(struct cli *, int, char **);
static int cmd_runs_show_exec(struct cli *, int, char **);
static int cmd_runs_wait_exec(struct cli *, int, char **);
static int cmd_runs_cancel_exec(struct cli *, int, char **);
static int cmd_runs_rerun_exec(struct cli *, int, char **);

const char *const cli_permission_profiles[] = { "ask", "workspace-write", "read-only",
	"full-access", NULL };

static const struct cli_option run_options[] = {
	{ "project", true },
	{ "session", true },
	{ "cwd", true },
	{ "permission", true },
	{ "plan-first", false },
	{ "network", false },
	{ "no-network", false },
	{ "framework", true },
	{ "provider", true },
	{ "model", true },
	{ "effort", true },
	{ "idempotency-key", true },
	{ "wait", false },
	{ "wait-timeout", true },
	{ "follow", false },
	{ "attempts", true },
	{ "check", true },
	{ NULL, false }
};

static const struct cli_option runs_list_options[] = {
	{ "session", true },
	{ "project", true },
	{ "status", true },
	{ "limit", true },
	{ "cursor", true },
	{ "all-projects", false },
	{ "attention", false },
	{ NULL, false }
};

static const struct cli_option runs_wait_options[] = {
	{ "wait-timeout", true },
	{ NULL, false }
};

static const struct cli_option runs_rerun_options[] = {
	{ "follow", false },
	{ "wait", false },
	{ "wait-timeout", true },
	{ "idempotency-key", true },
	{ NULL, false }
};

static const struct cli_option runs_logs_options[] = {
	{ "follow", false },
	{ "tail", true },
	{ "since", true },
	{ "timestamps", false },
	{ NULL, false }
};

/* taskdeck runs logs RUN [-f] [--tail N] [--since DURATION|TIME] [--timestamps] */
static int
cmd_runs_logs_exec(struct cli *cli, int argc, char **argv)
{
	struct cli_logs o = { .follow = cli_has(cli, "follow"), .tail = -1,
	    .timestamps = cli_has(cli, "timestamps") };
	const char *tail = cli_get(cli, "tail"), *since = cli_get(cli, "since");
	int64_t since_ms;
	char *end;
	int rc;

	(void)argc;
	if (tail != NULL) {
		errno = 0;
		o.tail = strtol(tail, &end, 10);
		if (errno != 0 || end == tail || *end != '\0' || o.tail < 0)
			return cli_usage_error(cli, "--tail takes a number of lines (0 or more)");
	}
	if (since != NULL) {
		if (!cli_logs_since(since, &since_ms))
			return cli_usage_error(cli, "--since takes a duration (10m, 2h, 30s, 1d) "
			    "or an RFC 3339 time, not '%s'", since);
		o.since_ms = since_ms > 0 ? since_ms : 1;
	}
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	return cli_runs_logs(cli, argv[0], &o);
}

static int
cmd_runs_watch_exec(struct cli *cli, int argc, char **argv)
{
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	return cli_runs_watch(cli, argv[0]);
}

const struct cli_cmd cmd_runs_logs_entry = {
	"runs", "logs", "RUN [-f|--follow] [--tail N] [--since DURATION|TIME] [--timestamps]",
	"Print a run's output (stdout) and its tools, progress and prompts\n"
	"(stderr) from the service's durable history; with --follow, then the\n"
	"live events until the run ends (exit codes as for run --wait).  --tail N:\n"
	"the last N lines of the history; --since 10m (s, m, h, d) or an RFC 3339\n"
	"time: its events from then on; --timestamps: each line begins with its\n"
	"time (ISO 8601, UTC).",
	runs_logs_options, 1, 1, cmd_runs_logs_exec
};

const struct cli_cmd cmd_runs_watch_entry = {
	"runs", "watch", "RUN",
	"Watch a run until it ends: its status, progress, tools and prompts so\n"
	"far, then live, and a last line saying how it ended (exit codes as for\n"
	"run --wait).",
	cli_no_options, 1, 1, cmd_runs_watch_exec
};

const struct cli_cmd cmd_run_entry = {
	"run", NULL,
	"--project P [--session S] [--cwd DIR] [--permission PROFILE] [--plan-first]\n"
	"    [--network | --no-network] [--framework F]\n"
	"    [--provider X] [--model M] [--effort E] [--idempotency-key K]\n"
	"    [--wait [--wait-timeout SECONDS] | -f|--follow]\n"
	"    [--attempts N [--model M1,M2,...] [--check CMD]] PROMPT",
	"Start a run and print its id and session.  With --wait, wait until it ends\n"
	"and print its status and output (exit 1 when it failed or was cancelled,\n"
	"3 when --wait-timeout SECONDS passed first: the run goes on).  With\n"
	"--follow, print its output as it comes (tools and progress on stderr)\n"
	"until it ends; exit codes as for --wait.  --network lets the run's commands\n"
	"reach the network from their sandbox, --no-network not (default: the\n"
	"project's and the application's defaults, else off).  --attempts N starts\n"
	"N runs of the prompt, each in a git worktree of --cwd (default: here) with\n"
	"your uncommitted work, models of --model M1,M2 spread over them; --check CMD\n"
	"runs in each worktree after its attempt; --wait waits for all of them.\n"
	"Keep one with runs apply RUN.",
	run_options, 1, 1, cmd_run_exec
};

const struct cli_cmd cmd_runs_list_entry = {
	"runs", "list",
	"[--session S | --project P | --all-projects | --attention] [--status S] [--limit N]\n"
	"    [--cursor C]",
	"List runs, newest first: a session's, a project's (--project, else the\n"
	"current one), or those of every project when there is no current project\n"
	"or with --all-projects (then with a PROJECT column; --cursor does not apply).\n"
	"--attention: the runs of every project that wait for you, with what they\n"
	"wait for (a plan to approve, a permission prompt) and the command that\n"
	"answers it, as the dashboard's @.",
	runs_list_options, 0, 0, cmd_runs_list_exec
};

const struct cli_cmd cmd_runs_show_entry = {
	"runs", "show", "RUN",
	"Show one run.",
	cli_no_options, 1, 1, cmd_runs_show_exec
};

const struct cli_cmd cmd_runs_wait_entry = {
	"runs", "wait", "RUN [--wait-timeout SECONDS]",
	"Wait until a run ends and print its status and output (exit codes as\n"
	"for run --wait).",
	runs_wait_options, 1, 1, cmd_runs_wait_exec
};

const struct cli_cmd cmd_runs_cancel_entry = {
	"runs", "cancel", "RUN",
	"Ask the service to cancel a run; it ends \"cancelled\" shortly after.  A run\n"
	"that has already ended is left as it is: said on stderr, exit 5.",
	cli_no_options, 1, 1, cmd_runs_cancel_exec
};

const struct cli_cmd cmd_runs_rerun_entry = {
	"runs", "rerun", "RUN [--wait [--wait-timeout SECONDS] | -f|--follow] [--idempotency-key K]",
	"Start RUN again: a new run in the same session with the same prompt,\n"
	"permission profile, plan-first, config (framework, provider, model,\n"
	"effort) and network; print its id.  RUN must have ended (completed,\n"
	"failed or cancelled): an active one exits 5, and so does a session whose\n"
	"configuration changed since.  With --follow, print the new run's output\n"
	"until it ends; with --wait, wait for it and print its status and output\n"
	"(exit codes as for run --wait).",
	runs_rerun_options, 1, 1, cmd_runs_rerun_exec
};

/* True for a status a run ends with. */
static bool
runs_final(const char *status)
{
	return status != NULL && (strcmp(status, "completed") == 0 ||
	    strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0);
}

/* Triggered by SIGINT during a wait. */
static struct td_cancel *runs_interrupt;

static void
runs_on_sigint(int sig)
{
	td_cancel_trigger(runs_interrupt);
}

/* Parses --wait-timeout SECONDS (decimals allowed) into milliseconds; -1 when bad. */
static long
runs_parse_seconds(const char *text)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !(s > 0 && s <= 30 * 86400.0))
		return -1;
	return (long)(s * 1000 + 0.999);
}

/* The run's cost as shown ("$0.0123"), or "-" without a price (malloc'd). */
static char *
runs_cost_text(const struct td_run *r)
{
	return r->has_cost ? xasprintf("$%.4f", r->cost) : xstrdup("-");
}

/* Prints a final (or waited-for) run. */
static void
runs_print_result(const struct cli *cli, const struct td_run *r)
{
	char *usage;

	if (cli->json) {
		out_json(r->json);
		return;
	}
	out_kv("status", r->status);
	usage = xasprintf("%lld input tokens (%lld read from the cache, %lld written to it), "
	    "%lld output tokens", r->input_tokens, r->cache_read_tokens, r->cache_write_tokens,
	    r->output_tokens);
	out_kv("usage", usage);
	free(usage);
	if (r->has_cost) {
		char *cost = runs_cost_text(r);

		out_kv("cost", cost);
		free(cost);
	}
	if (r->error_code != NULL) {
		char *e = xasprintf("%s: %s", r->error_code,
		    r->error_message != NULL ? r->error_message : "");

		out_kv("error", e);
		free(e);
	}
	if (r->review.verdict != NULL) {
		char *v = xasprintf("%s (round %ld)", r->review.verdict, r->review.round);

		out_kv("review", v);
		free(v);
		if (r->review.summary != NULL && *r->review.summary != '\0')
			out_kv("review-findings", r->review.summary);
	}
	if (r->output != NULL)
		out_kv("output", r->output);
}

/*
 * Waits for a run and prints the result; returns the exit code: 0 completed,
 * 1 failed or cancelled, 3 on the wait's timeout, 130 on Ctrl-C.
 */
static int
runs_wait_and_print(struct cli *cli, const char *run_id, long timeout_ms)
{
	struct td_wait_options w = { .timeout_ms = timeout_ms };
	struct sigaction sa = { .sa_handler = runs_on_sigint }, old;
	struct td_error err;
	struct td_run *r;
	enum td_code rc;

	runs_interrupt = td_cancel_new();
	w.cancel = runs_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	rc = td_wait_for_run(cli->client, run_id, &w, &r, &err);
	sigaction(SIGINT, &old, NULL);
	td_cancel_free(runs_interrupt);
	runs_interrupt = NULL;
	if (rc == TD_CANCELLED) {
		fprintf(stderr, "\ntaskdeck: stopped waiting; run %s goes on "
		    "(`taskdeck runs cancel %s` cancels it)\n", run_id, run_id);
		return CLI_EXIT_INTERRUPTED;
	}
	if (rc == TD_TIMEOUT) {
		cli_fail(&err);
		fprintf(stderr, "taskdeck: run %s is still running (the timeout ends the wait, "
		    "not the run); wait again with `taskdeck runs wait %s`, or cancel it with "
		    "`taskdeck runs cancel %s`\n", run_id, run_id, run_id);
		return CLI_EXIT_UNREACHABLE;
	}
	if (rc != TD_OK)
		return cli_fail(&err);
	runs_print_result(cli, r);
	rc = strcmp(r->status, "completed") == 0 ? CLI_EXIT_OK : CLI_EXIT_SERVICE;
	if (rc != CLI_EXIT_OK) {
		fprintf(stderr, "taskdeck: run %s %s", r->id, r->status);
		if (r->error_code != NULL)
			fprintf(stderr, ": %s: %s", r->error_code,
			    r->error_message != NULL ? r->error_message : "");
		fputc('\n', stderr);
	}
	td_run_free(r);
	return rc;
}

/* An absolute form of --cwd: a relative one is taken from the current directory. */
static char *
runs_absolute_cwd(const char *cwd)
{
	char *here, *abs;

	if (cwd == NULL || cwd[0] == '/')
		return xstrdup_or_null(cwd);
	if ((here = getcwd(NULL, 0)) == NULL)
		return NULL;
	abs = xasprintf("%s/%s", here, cwd);
	free(here);
	return abs;
}

/* The project of --session when --project is not given; NULL on failure (printed). */
static char *
runs_session_project(struct cli *cli, const char *session_id, int *rc)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_session *s;
	struct td_error err;
	char *project;

	if (td_get_session(cli->client, session_id, &opts, &s, &err) != TD_OK) {
		*rc = cli_fail(&err);
		return NULL;
	}
	project = xstrdup_or_null(s->project_id);
	td_session_free(s);
	return project;
}

/* taskdeck run [options] PROMPT */
static int
cmd_run_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *timeout_text = cli_get(cli, "wait-timeout");
	struct td_run_request rq = {
		.project = cli_get(cli, "project"),
		.prompt = argv[0],
		.permission_profile = cli_get(cli, "permission"),
		.turn_intent = cli_has(cli, "plan-first") ? "plan-first" : NULL,
		.session_id = cli_get(cli, "session"),
		.framework = cli_get(cli, "framework"),
		.provider = cli_get(cli, "provider"),
		.model = cli_get(cli, "model"),
		.effort = cli_get(cli, "effort"),
		.network = cli_has(cli, "network") ? 1 : cli_has(cli, "no-network") ? -1 : 0,
	};
	bool wait = cli_has(cli, "wait"), follow = cli_has(cli, "follow");
	struct td_events *events = NULL;
	char *project = NULL, *cwd;
	long timeout_ms = 0;
	struct td_error err;
	struct td_run *r;
	int rc;

	if (cli_get(cli, "attempts") != NULL)
		return cli_attempts_run(cli, argv);
	if (cli_get(cli, "check") != NULL)
		return cli_usage_error(cli, "--check goes with --attempts");
	if (rq.project == NULL && rq.session_id == NULL)
		return cli_usage_error(cli, "--project (or --session) is required");
	if (*argv[0] == '\0')
		return cli_usage_error(cli, "the prompt is empty");
	if (timeout_text != NULL && !wait)
		return cli_usage_error(cli, "--wait-timeout SECONDS goes with --wait");
	if (timeout_text != NULL && (timeout_ms = runs_parse_seconds(timeout_text)) < 0)
		return cli_usage_error(cli, "--wait-timeout takes a positive number of seconds");
	if (follow && wait)
		return cli_usage_error(cli, "--follow and --wait do not go together");
	if (rq.permission_profile != NULL &&
	    !cli_value_in(cli_permission_profiles, rq.permission_profile))
		return cli_usage_error(cli, "--permission takes ask, workspace-write, read-only "
		    "or full-access, not '%s'", rq.permission_profile);
	opts.idempotency_key = cli_get(cli, "idempotency-key");
	cwd = runs_absolute_cwd(cli_get(cli, "cwd"));
	if (cli_get(cli, "cwd") != NULL && cwd == NULL) {
		fprintf(stderr, "taskdeck: cannot read the current directory: %s\n",
		    strerror(errno));
		return CLI_EXIT_USAGE;
	}
	rq.cwd = cwd;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK) {
		free(cwd);
		return rc;
	}
	if (rq.project == NULL)
		rq.project = project = runs_session_project(cli, rq.session_id, &rc);
	/* Subscribed before the run starts, so that none of its events is missed. */
	if (rq.project != NULL && follow)
		events = cli_events_for_run(cli, rq.project, rq.session_id);
	if (rq.project != NULL) {
		if (td_start_run(cli->client, &rq, &opts, &r, &err) != TD_OK)
			rc = cli_fail(&err);
		else if (follow) {
			fprintf(stderr, "taskdeck: run %s in session %s\n", r->id,
			    r->session_id);
			rc = events != NULL ? cli_follow_run(cli, events, r->id) :
			    CLI_FOLLOW_LOST;
			events = NULL;
			if (rc == CLI_FOLLOW_LOST)
				rc = runs_wait_and_print(cli, r->id, timeout_ms);
			td_run_free(r);
		} else {
			if (!wait && cli->json)
				out_json(r->json);
			else if (!cli->json) {
				out_kv("run", r->id);
				out_kv("session", r->session_id);
				if (!wait)
					out_kv("status", r->status);
				fflush(stdout);
			}
			if (wait)
				rc = runs_wait_and_print(cli, r->id, timeout_ms);
			td_run_free(r);
		}
	}
	td_events_close(events);
	free(project);
	free(cwd);
	return rc;
}

/* A run of runs list across projects, and its project's name. */
struct runs_row {
	const struct td_run *run;
	const char *project;
};

/* Newest first, by createdAt (RFC 3339 UTC compares as text). */
static int
runs_newest_first(const void *a, const void *b)
{
	const struct td_run *x = ((const struct runs_row *)a)->run;
	const struct td_run *y = ((const struct runs_row *)b)->run;

	return strcmp(y->created_at != NULL ? y->created_at : "",
	    x->created_at != NULL ? x->created_at : "");
}

/*
 * runs list of every project: each project's runs (up to --limit of each),
 * newest first together, then the first --limit of them, with the
 * project's name in a PROJECT column.
 */
static int
runs_list_all_projects(struct cli *cli, const char *status)
{
	static const char *const header[] = { "ID", "PROJECT", "STATUS", "SESSION", "AGE",
		"COST", "PROMPT" };
	static const char *const narrow_header[] = { "ID", "PROJECT", "STATUS", "AGE", "COST",
		"PROMPT" };
	/* Under 120 columns the whole ids leave no room: a run by its id's tail
	 * (as the dashboard shows it, and as every command takes it), no session. */
	bool narrow = out_table_room() > 0 && out_table_room() < 120;
	struct td_project_list **projects = NULL;
	struct td_run_list **lists = NULL;
	struct runs_row *rows = NULL;
	size_t nprojects = 0, nlists = 0, nruns = 0;
	char *cursor = NULL;
	struct cli_list l;
	struct td_error err;
	int rc;

	if (cli_get(cli, "cursor") != NULL)
		return cli_usage_error(cli, "--cursor pages one project's runs; give --project");
	if ((rc = cli_list_start(cli, &l, narrow ? 6 : 7, narrow ? narrow_header : header)) !=
	    CLI_EXIT_OK)
		return rc;
	do {
		struct td_project_list *page;

		if (td_list_projects(cli->client, 1000, cursor, &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		free(cursor);
		cursor = page->next_cursor;
		page->next_cursor = NULL;
		projects = xrealloc(projects, (nprojects + 1) * sizeof *projects);
		projects[nprojects++] = page;
		for (size_t i = 0; i < page->count && l.rc == CLI_EXIT_OK; i++) {
			struct td_run_filter filter = { .project_id = page->items[i].id,
			    .status = status };
			char *more = NULL;

			do {
				struct td_run_list *runs_page;

				if (td_list_runs(cli->client, &filter, l.limit, more, &l.opts,
				    &runs_page, &err) != TD_OK) {
					l.rc = cli_fail(&err);
					break;
				}
				free(more);
				more = l.limit == 0 ? runs_page->next_cursor : NULL;
				runs_page->next_cursor = NULL;
				lists = xrealloc(lists, (nlists + 1) * sizeof *lists);
				lists[nlists++] = runs_page;
				rows = xrealloc(rows, (nruns + runs_page->count + 1) * sizeof *rows);
				for (size_t k = 0; k < runs_page->count; k++) {
					rows[nruns++] = (struct runs_row){ &runs_page->items[k],
					    page->items[i].name };
				}
			} while (more != NULL);
			free(more);
		}
	} while (l.rc == CLI_EXIT_OK && cursor != NULL);
	free(cursor);
	if (l.rc == CLI_EXIT_OK && nruns > 0)
		qsort(rows, nruns, sizeof *rows, runs_newest_first);
	for (size_t i = 0; l.rc == CLI_EXIT_OK && i < nruns &&
	    (l.limit == 0 || (long)i < l.limit); i++) {
		const struct td_run *r = rows[i].run;
		char *cost = runs_cost_text(r), age[16];
		const char *row[] = { r->id, rows[i].project, r->status, r->session_id,
		    age, cost, r->prompt };
		char tail[16];

		out_age(r->created_at, age);
		if (narrow) {
			size_t n = strlen(r->id);

			snprintf(tail, sizeof tail, "\u2026%s", r->id + (n > 8 ? n - 8 : 0));
			row[0] = tail;
			row[3] = age;
			row[4] = cost;
			row[5] = r->prompt;
		}
		cli_list_add(&l, r->json, row);
		free(cost);
	}
	rc = cli_list_end(cli, &l, "runs");
	for (size_t i = 0; i < nlists; i++)
		td_run_list_free(lists[i]);
	for (size_t i = 0; i < nprojects; i++)
		td_project_list_free(projects[i]);
	free(lists);
	free(projects);
	free(rows);
	return rc;
}

/* What a running run waits for from a person, and the command that answers it; false: nothing. */
static bool
runs_waits_for(const struct td_run *r, const struct td_permission_list *prompts, char *what,
    size_t what_len, char *answer, size_t answer_len, const char **prompt_id)
{
	*prompt_id = NULL;
	if (r->attention.kind != NULL && strcmp(r->attention.kind, "plan-approval") == 0) {
		snprintf(what, what_len, "plan v%ld r%ld", r->attention.plan_version,
		    r->attention.plan_revision);
		snprintf(answer, answer_len, "taskdeck plan approve|revise|reject %s", r->id);
		return true;
	}
	for (size_t i = 0; prompts != NULL && i < prompts->count; i++) {
		const struct td_permission *p = &prompts->items[i];

		if (p->run_id == NULL || strcmp(p->run_id, r->id) != 0)
			continue;
		snprintf(what, what_len, "permission: %s %s", p->tool != NULL ? p->tool : "",
		    p->summary != NULL ? p->summary : "");
		snprintf(answer, answer_len, "taskdeck permissions allow|deny %s", p->id);
		*prompt_id = p->id;
		return true;
	}
	return false;
}

/*
 * taskdeck runs list --attention: the running runs of every project
 * (archived ones too) that wait for a person, newest first.
 */
static int
runs_list_attention(struct cli *cli)
{
	static const char *const header[] = { "ID", "PROJECT", "WAITS FOR", "ANSWER", "AGE",
		"PROMPT" };
	struct td_permission_list *prompts = NULL;
	struct td_project_list *projects = NULL;
	struct td_run_list **lists = NULL;
	struct runs_row *rows = NULL;
	size_t nlists = 0, nruns = 0;
	struct cli_list l;
	struct td_error err;
	int rc;

	if (cli_get(cli, "cursor") != NULL || cli_get(cli, "status") != NULL ||
	    cli_get(cli, "session") != NULL || cli_get(cli, "project") != NULL ||
	    cli_has(cli, "all-projects"))
		return cli_usage_error(cli, "--attention lists every project's runs that wait "
		    "for you; it goes alone (or with --limit)");
	if ((rc = cli_list_start(cli, &l, 6, header)) != CLI_EXIT_OK)
		return rc;
	if (td_list_permissions(cli->client, "pending", NULL, 1000, NULL, &l.opts, &prompts,
	    &err) != TD_OK ||
	    td_list_projects_archived(cli->client, TD_ARCHIVED_ALL, 1000, NULL, &l.opts,
	    &projects, &err) != TD_OK)
		l.rc = cli_fail(&err);
	for (size_t i = 0; l.rc == CLI_EXIT_OK && i < projects->count; i++) {
		struct td_run_filter filter = { .project_id = projects->items[i].id,
		    .status = "running" };
		struct td_run_list *page;

		if (td_list_runs(cli->client, &filter, 1000, NULL, &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		lists = xrealloc(lists, (nlists + 1) * sizeof *lists);
		lists[nlists++] = page;
		rows = xrealloc(rows, (nruns + page->count + 1) * sizeof *rows);
		for (size_t k = 0; k < page->count; k++)
			rows[nruns++] = (struct runs_row){ &page->items[k], projects->items[i].name };
	}
	if (l.rc == CLI_EXIT_OK && nruns > 0)
		qsort(rows, nruns, sizeof *rows, runs_newest_first);
	for (size_t i = 0, shown = 0; l.rc == CLI_EXIT_OK && i < nruns &&
	    (l.limit == 0 || (long)shown < l.limit); i++) {
		const struct td_run *r = rows[i].run;
		char what[512], answer[256], age[16];
		const char *prompt_id, *row[] = { r->id, rows[i].project, what, answer, age,
		    r->prompt };
		cJSON *j;
		char *json;

		if (!runs_waits_for(r, prompts, what, sizeof what, answer, sizeof answer,
		    &prompt_id))
			continue;
		out_age(r->created_at, age);
		j = cJSON_CreateObject();
		cJSON_AddItemToObject(j, "run", json_parse(r->json, strlen(r->json)));
		cJSON_AddStringToObject(j, "project", rows[i].project);
		cJSON_AddStringToObject(j, "waitsFor", prompt_id != NULL ? "permission" :
		    "plan-approval");
		if (prompt_id != NULL)
			cJSON_AddStringToObject(j, "promptId", prompt_id);
		json = cJSON_PrintUnformatted(j);
		cli_list_add(&l, json, row);
		cJSON_free(json);
		cJSON_Delete(j);
		shown++;
	}
	for (size_t i = 0; i < nlists; i++)
		td_run_list_free(lists[i]);
	free(lists);
	free(rows);
	td_project_list_free(projects);
	td_permission_list_free(prompts);
	return cli_list_end(cli, &l, "runs waiting for you");
}

/* taskdeck runs list: every page, or one page with --limit. */
static int
cmd_runs_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "ID", "STATUS", "SESSION", "AGE", "COST",
		"PROMPT" };
	struct td_run_filter filter = {
		.session_id = cli_get(cli, "session"),
		.project_id = cli_get(cli, "project"),
		.status = cli_get(cli, "status"),
	};
	struct td_run_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	if (cli_has(cli, "attention"))
		return runs_list_attention(cli);
	if (cli_has(cli, "all-projects")) {
		if (filter.session_id != NULL || filter.project_id != NULL)
			return cli_usage_error(cli, "--all-projects goes without --project "
			    "and --session");
		return runs_list_all_projects(cli, filter.status);
	}
	if (filter.session_id == NULL && filter.project_id == NULL)
		return runs_list_all_projects(cli, filter.status);
	if ((rc = cli_list_start(cli, &l, 6, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_runs(cli->client, &filter, l.limit, cli_list_cursor(&l),
		    &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_run *r = &page->items[i];
			char *cost = runs_cost_text(r), age[16];
			const char *row[] = { r->id, r->status, r->session_id,
			    age, cost, r->prompt };

			out_age(r->created_at, age);
			cli_list_add(&l, r->json, row);
			free(cost);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_run_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, "runs");
}

static void
runs_show_line(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	out_kv(key, value);
}

/*
 * What the dashboard's detail view adds to the run's members, in its words:
 * tokens, duration, and the artifacts the run saved (the newest page of its
 * session's versions).
 */
static void
runs_show_derived(struct cli *cli, const struct td_run *r)
{
	struct td_request_options opts = cli_request_options(cli);
	struct run_detail_artifact *arts = NULL;
	struct td_artifact_list *list = NULL;
	struct td_error err;
	size_t n = 0;

	if (td_list_artifacts(cli->client, r->session_id, true, 0, NULL, &opts, &list,
	    &err) == TD_OK) {
		arts = xcalloc(list->count + 1, sizeof *arts);
		for (size_t i = list->count; i-- > 0;) {
			const struct td_artifact *a = &list->items[i];

			if (a->run_id != NULL && strcmp(a->run_id, r->id) == 0)
				arts[n++] = (struct run_detail_artifact){ a->path, a->size };
		}
	}
	run_detail_derived(r, arts, n, clock_wall_ms(), runs_show_line, NULL);
	free(arts);
	td_artifact_list_free(list);
}

/* taskdeck runs show RUN */
static int
cmd_runs_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	struct td_run *r;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_run(cli->client, argv[0], &opts, &r, &err) != TD_OK)
		return cli_fail(&err);
	out_doc(cli, r->json);
	if (!cli->json)
		runs_show_derived(cli, r);
	td_run_free(r);
	return CLI_EXIT_OK;
}

/* taskdeck runs wait RUN [--wait-timeout SECONDS] */
static int
cmd_runs_wait_exec(struct cli *cli, int argc, char **argv)
{
	const char *timeout_text = cli_get(cli, "wait-timeout");
	long timeout_ms = 0;
	int rc;

	if (timeout_text != NULL && (timeout_ms = runs_parse_seconds(timeout_text)) < 0)
		return cli_usage_error(cli, "--wait-timeout takes a positive number of seconds");
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	return runs_wait_and_print(cli, argv[0], timeout_ms);
}

/* taskdeck runs cancel RUN */
static int
cmd_runs_cancel_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	struct td_run *r;
	bool ended;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	/* A run that has ended has nothing to cancel: said, exit 5 (a conflict). */
	if (td_get_run(cli->client, argv[0], &opts, &r, &err) != TD_OK)
		return cli_fail(&err);
	ended = runs_final(r->status);
	if (!ended) {
		td_run_free(r);
		if (td_cancel_run(cli->client, argv[0], &opts, &r, &err) != TD_OK)
			return cli_fail(&err);
		/* It ended by itself before the cancel arrived. */
		ended = runs_final(r->status) && strcmp(r->status, "cancelled") != 0;
	}
	if (ended) {
		fprintf(stderr, "taskdeck: run %s already ended (%s); nothing to cancel\n", r->id,
		    r->status);
		td_run_free(r);
		return CLI_EXIT_CONFLICT;
	}
	if (cli->json)
		out_json(r->json);
	else {
		out_kv("run", r->id);
		out_kv("status", r->status);
		out_kv("cancelRequestedAt", r->cancel_requested_at);
	}
	td_run_free(r);
	return CLI_EXIT_OK;
}

/* taskdeck runs rerun RUN [--follow]: the same run again, in the same session. */
static int
cmd_runs_rerun_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_events *events = NULL;
	struct td_run *old, *r;
	struct td_error err;
	int rc;

	long timeout_ms = 0;
	const char *timeout_text = cli_get(cli, "wait-timeout");
	bool wait = cli_has(cli, "wait");

	(void)argc;
	if (timeout_text != NULL && !wait)
		return cli_usage_error(cli, "--wait-timeout SECONDS goes with --wait");
	if (timeout_text != NULL && (timeout_ms = runs_parse_seconds(timeout_text)) < 0)
		return cli_usage_error(cli, "--wait-timeout takes a positive number of seconds");
	if (wait && cli_has(cli, "follow"))
		return cli_usage_error(cli, "--follow and --wait do not go together");
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	/* Subscribed before the new run starts, so that none of its events is missed. */
	if (cli_has(cli, "follow")) {
		if (td_get_run(cli->client, argv[0], &opts, &old, &err) != TD_OK)
			return cli_fail(&err);
		if (runs_final(old->status))
			events = cli_events_for_run(cli, old->project_id, old->session_id);
		td_run_free(old);
	}
	opts.idempotency_key = cli_get(cli, "idempotency-key");
	if (td_rerun_run(cli->client, argv[0], &opts, &r, &err) != TD_OK) {
		td_events_close(events);
		return cli_fail(&err);
	}
	if (cli_has(cli, "follow")) {
		fprintf(stderr, "taskdeck: run %s in session %s\n", r->id, r->session_id);
		rc = events != NULL ? cli_follow_run(cli, events, r->id) : CLI_FOLLOW_LOST;
		if (rc == CLI_FOLLOW_LOST)
			rc = runs_wait_and_print(cli, r->id, 0);
	} else if (cli->json && !wait)
		out_json(r->json);
	else if (!cli->json) {
		out_kv("run", r->id);
		out_kv("session", r->session_id);
		if (!wait)
			out_kv("status", r->status);
		fflush(stdout);
	}
	if (wait)
		rc = runs_wait_and_print(cli, r->id, timeout_ms);
	td_run_free(r);
	return rc;
}
