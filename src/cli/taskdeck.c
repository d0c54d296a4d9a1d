/* taskdeck: the command line of the taskdeck service. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "termtext.h"
#include "tui/tui.h"
#include "xalloc.h"

static int cli_dashboard(struct cli *cli, int argc, char **argv);
static int cli_unknown(const char *what, int argc, char **argv);

static const struct cli_option cli_dashboard_options[] = {
	{ "no-mouse", false },
	{ "monochrome", false },
	{ NULL, false }
};

static const struct cli_cmd cmd_dashboard_entry = {
	"dashboard", NULL, "[--no-mouse] [--monochrome]",
	"the dashboard (also taskdeck without a command); --monochrome: no colour",
	cli_dashboard_options, 0, 0, cli_dashboard
};

const struct cli_cmd *const cli_cmds[] = {
	&cmd_dashboard_entry,
	&cmd_doctor_entry,
	&cmd_projects_list_entry,
	&cmd_projects_show_entry,
	&cmd_projects_create_entry,
	&cmd_projects_update_entry,
	&cmd_projects_archive_entry,
	&cmd_projects_unarchive_entry,
	&cmd_defaults_get_entry,
	&cmd_defaults_set_entry,
	&cmd_routing_get_entry,
	&cmd_routing_set_entry,
	&cmd_daemon_start_entry,
	&cmd_daemon_stop_entry,
	&cmd_daemon_status_entry,
	&cmd_run_entry,
	&cmd_runs_list_entry,
	&cmd_runs_show_entry,
	&cmd_runs_wait_entry,
	&cmd_runs_logs_entry,
	&cmd_runs_watch_entry,
	&cmd_runs_cancel_entry,
	&cmd_runs_rerun_entry,
	&cmd_runs_changes_entry,
	&cmd_runs_diff_entry,
	&cmd_runs_revert_entry,
	&cmd_runs_apply_entry,
	&cmd_runs_discard_entry,
	&cmd_sessions_list_entry,
	&cmd_sessions_show_entry,
	&cmd_sessions_archive_entry,
	&cmd_sessions_unarchive_entry,
	&cmd_sessions_delete_entry,
	&cmd_sessions_config_get_entry,
	&cmd_sessions_config_set_entry,
	&cmd_artifacts_list_entry,
	&cmd_artifacts_show_entry,
	&cmd_artifacts_download_entry,
	&cmd_artifacts_view_entry,
	&cmd_events_entry,
	&cmd_plan_show_entry,
	&cmd_plan_approve_entry,
	&cmd_plan_revise_entry,
	&cmd_plan_reject_entry,
	&cmd_permissions_list_entry,
	&cmd_permissions_show_entry,
	&cmd_permissions_allow_entry,
	&cmd_permissions_deny_entry,
	&cmd_demo_entry,
	/* connectors and credentials */
	&cmd_connectors_list_entry,
	&cmd_connectors_show_entry,
	&cmd_connectors_add_entry,
	&cmd_connectors_update_entry,
	&cmd_connectors_enable_entry,
	&cmd_connectors_disable_entry,
	&cmd_connectors_remove_entry,
	&cmd_connectors_test_entry,
	&cmd_connectors_login_entry,
	&cmd_credentials_list_entry,
	&cmd_credentials_show_entry,
	&cmd_credentials_create_entry,
	&cmd_credentials_update_entry,
	&cmd_credentials_delete_entry,
	/* readiness */
	&cmd_runtimes_entry,
	&cmd_setup_entry,
	&cmd_install_cli_entry,
	/* the current project */
	&cmd_use_entry,
	&cmd_completion_entry,
	&cmd_acp_entry,
	NULL
};

/* What an option's value or a command's first argument names. */
enum cli_ref {
	CLI_REF_NONE,
	CLI_REF_PROJECT,	/* a project id or name: the id is passed on */
	CLI_REF_SESSION,	/* a session id or title */
	CLI_REF_RUN,		/* a run id, its tail or a unique beginning */
	CLI_REF_CONNECTOR,	/* a connector id or name */
	CLI_REF_PLAN,		/* a session id or title, or a run: its session */
};

/*
 * The commands that name a project or a session by their first argument,
 * and those that take the current project (`taskdeck use`,
 * TASKDECK_PROJECT) when given none: as their --project when they have one
 * and got neither --project nor --session, else as their first argument when
 * it is missing or KEY=VALUE.  Every --project and --session option names
 * one too.
 */
static const struct cli_names {
	const struct cli_cmd *cmd;
	enum cli_ref arg;
	bool current_project;
} cli_names[] = {
	{ &cmd_use_entry, CLI_REF_PROJECT, false },
	{ &cmd_projects_show_entry, CLI_REF_PROJECT, false },
	{ &cmd_projects_update_entry, CLI_REF_PROJECT, false },
	{ &cmd_projects_archive_entry, CLI_REF_PROJECT, false },
	{ &cmd_projects_unarchive_entry, CLI_REF_PROJECT, false },
	{ &cmd_defaults_get_entry, CLI_REF_PROJECT, true },
	{ &cmd_defaults_set_entry, CLI_REF_PROJECT, true },
	{ &cmd_run_entry, CLI_REF_NONE, true },
	{ &cmd_runs_list_entry, CLI_REF_NONE, true },
	{ &cmd_sessions_list_entry, CLI_REF_PROJECT, true },
	{ &cmd_sessions_show_entry, CLI_REF_SESSION, false },
	{ &cmd_sessions_archive_entry, CLI_REF_SESSION, false },
	{ &cmd_sessions_unarchive_entry, CLI_REF_SESSION, false },
	{ &cmd_sessions_delete_entry, CLI_REF_SESSION, false },
	{ &cmd_sessions_config_get_entry, CLI_REF_SESSION, false },
	{ &cmd_sessions_config_set_entry, CLI_REF_SESSION, false },
	{ &cmd_artifacts_list_entry, CLI_REF_SESSION, false },
	{ &cmd_plan_show_entry, CLI_REF_PLAN, false },
	{ &cmd_plan_approve_entry, CLI_REF_PLAN, false },
	{ &cmd_plan_revise_entry, CLI_REF_PLAN, false },
	{ &cmd_plan_reject_entry, CLI_REF_PLAN, false },
	{ &cmd_runs_show_entry, CLI_REF_RUN, false },
	{ &cmd_runs_wait_entry, CLI_REF_RUN, false },
	{ &cmd_runs_logs_entry, CLI_REF_RUN, false },
	{ &cmd_runs_watch_entry, CLI_REF_RUN, false },
	{ &cmd_runs_cancel_entry, CLI_REF_RUN, false },
	{ &cmd_runs_rerun_entry, CLI_REF_RUN, false },
	{ &cmd_runs_changes_entry, CLI_REF_RUN, false },
	{ &cmd_runs_diff_entry, CLI_REF_RUN, false },
	{ &cmd_runs_revert_entry, CLI_REF_RUN, false },
	{ &cmd_connectors_show_entry, CLI_REF_CONNECTOR, false },
	{ &cmd_connectors_update_entry, CLI_REF_CONNECTOR, false },
	{ &cmd_connectors_enable_entry, CLI_REF_CONNECTOR, false },
	{ &cmd_connectors_disable_entry, CLI_REF_CONNECTOR, false },
	{ &cmd_connectors_remove_entry, CLI_REF_CONNECTOR, false },
	{ &cmd_connectors_test_entry, CLI_REF_CONNECTOR, false },
	{ &cmd_connectors_login_entry, CLI_REF_CONNECTOR, false },
};

enum { CLI_GLOBAL_JSON = 1000, CLI_GLOBAL_TIMEOUT, CLI_GLOBAL_HELP, CLI_GLOBAL_VERSION,
	CLI_GLOBAL_WIDE, CLI_GLOBAL_OUTPUT };
/* getopt_long value of a command's own option i. */
#define CLI_OPTION_BASE 2000

const struct option cli_globals[] = {
	{ "json", no_argument, NULL, CLI_GLOBAL_JSON },
	{ "timeout", required_argument, NULL, CLI_GLOBAL_TIMEOUT },
	{ "help", no_argument, NULL, CLI_GLOBAL_HELP },
	{ "version", no_argument, NULL, CLI_GLOBAL_VERSION },
	{ "wide", no_argument, NULL, CLI_GLOBAL_WIDE },
	{ "output", required_argument, NULL, CLI_GLOBAL_OUTPUT },
	{ NULL, 0, NULL, 0 }
};
#define CLI_GLOBAL_COUNT (sizeof cli_globals / sizeof cli_globals[0] - 1)

/* Prints "GROUP NAME USAGE" for one command. */
static void
cli_print_cmd(FILE *fp, const struct cli_cmd *cmd)
{
	fprintf(fp, "%s%s%s%s%s", cmd->group, cmd->name ? " " : "",
	    cmd->name ? cmd->name : "", *cmd->usage ? " " : "", cmd->usage);
}

char
cli_short(const char *name)
{
	static const struct {
		const char *name;
		char letter;
	} shorts[] = { { "follow", 'f' }, { "help", 'h' }, { "output", 'o' } };

	for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; i++) {
		if (strcmp(name, shorts[i].name) == 0)
			return shorts[i].letter;
	}
	return 0;
}

/*
 * The help of one command: usage, summary, and its options as the command
 * table has them (so that none is left out of the help).
 */
static void
cli_print_cmd_help(const struct cli_cmd *cmd)
{
	printf("usage: taskdeck ");
	cli_print_cmd(stdout, cmd);
	printf("\n\n%s\n", cmd->summary);
	if (cmd->options[0].name != NULL) {
		printf("\noptions:");
		for (const struct cli_option *o = cmd->options; o->name != NULL; o++) {
			if (cli_short(o->name) != 0)
				printf(" -%c,", cli_short(o->name));
			printf(" --%s%s", o->name, o->has_value ? " VALUE" : "");
		}
		putchar('\n');
	}
	printf("\nglobal options: --json, --timeout MS, -h/--help (taskdeck --help)\n");
}

/* taskdeck -h: the groups by what they are for, a line each (help --all: every command). */
static void
cli_print_overview(FILE *fp)
{
	/* As gh groups its commands; a group lists its subcommands, a
	 * one-word command says what it does. */
	static const struct {
		const char *title;
		struct {
			const char *group, *what;
		} rows[8];
	} sections[] = {
		{ "Work with runs", { { "run", "start a run (-f follows it, --wait waits for it)" },
		    { "runs", NULL }, { "plan", NULL }, { "permissions", NULL },
		    { "events", "print events as they happen" } } },
		{ "Organise", { { "projects", NULL }, { "sessions", NULL }, { "artifacts", NULL },
		    { "use", "make a project current (as a kubectl context)" },
		    { "dashboard", "the dashboard (also taskdeck without a command)" } } },
		{ "Configure", { { "defaults", NULL }, { "routing", NULL }, { "connectors", NULL },
		    { "credentials", NULL } } },
		{ "Set up and run the service", { { "setup", "choose a provider and a key" },
		    { "doctor", "check that the service is ready" }, { "daemon", NULL },
		    { "runtimes", "the agent frameworks and their runtimes" },
		    { "install-cli", "install the taskdeck launcher" },
		    { "demo", "a demo project with runs to look at" },
		    { "completion", "the completion script of bash, zsh or fish" } } },
	};

	fprintf(fp, "usage: taskdeck [--json | -o wide] [--timeout MS] COMMAND [ARGS]\n"
	    "Without a command taskdeck opens the dashboard.\n");
	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
		fprintf(fp, "\n%s:\n", sections[i].title);
		for (size_t k = 0; k < 8 && sections[i].rows[k].group != NULL; k++) {
			const char *g = sections[i].rows[k].group;
			int n = 0;

			fprintf(fp, "  %-13s", g);
			if (sections[i].rows[k].what != NULL)
				fputs(sections[i].rows[k].what, fp);
			for (const struct cli_cmd *const *c = cli_cmds;
			    sections[i].rows[k].what == NULL && *c != NULL; c++) {
				if (strcmp((*c)->group, g) == 0 && (*c)->name != NULL &&
				    (n == 0 || strcmp((*c)->name, c[-1]->name) != 0))
					fprintf(fp, "%s%s", n++ > 0 ? " " : "", (*c)->name);
			}
			fputc('\n', fp);
		}
	}
	fprintf(fp, "\nGlobal options: --json, -o wide, --timeout MS, -h/--help, --version\n\n"
	    "taskdeck help COMMAND (or COMMAND -h) shows a command's help;\n"
	    "taskdeck help --all lists every command with its usage.  See taskdeck(1)\n"
	    "for exit codes and environment.\n");
}

/* The overall help, or that of one group when group is not NULL. */
static void
cli_print_help(FILE *fp, const char *group)
{
	fprintf(fp, "usage: taskdeck [--json | -o wide] [--timeout MS] COMMAND [ARGS]\n\n"
	    "Commands:\n");
	for (const struct cli_cmd *const *c = cli_cmds; *c != NULL; c++) {
		if (group != NULL && strcmp((*c)->group, group) != 0)
			continue;
		fputs("  ", fp);
		cli_print_cmd(fp, *c);
		fputs("\n      ", fp);
		for (const char *s = (*c)->summary; *s != '\0'; s++) {
			fputc(*s, fp);
			if (*s == '\n')
				fputs("      ", fp);
		}
		fputc('\n', fp);
	}
	fprintf(fp, "\nGlobal options:\n"
	    "  --json        print the JSON the service returned (also -o json)\n"
	    "  --wide        tables with every column uncut (also -o wide)\n"
	    "  --timeout MS  deadline of each request (default %d)\n"
	    "  -h, --help    show help (also after a command; or: taskdeck help COMMAND)\n"
	    "  --version     show the version\n\n"
	    "Without a command taskdeck opens the dashboard.  See taskdeck(1)\n"
	    "for exit codes and environment.\n",
	    TD_DEFAULT_TIMEOUT_MS);
}

const struct cli_option cli_no_options[] = {
	{ NULL, false }
};

const struct cli_option cli_page_options[] = {
	{ "limit", true },
	{ "cursor", true },
	{ NULL, false }
};

const char *
cli_get(const struct cli *cli, const char *name)
{
	const char *value = NULL;

	for (size_t i = 0; i < cli->value_count; i++) {
		if (strcmp(cli->values[i].name, name) == 0)
			value = cli->values[i].value;
	}
	return value;
}

bool
cli_has(const struct cli *cli, const char *name)
{
	for (size_t i = 0; i < cli->value_count; i++) {
		if (strcmp(cli->values[i].name, name) == 0)
			return true;
	}
	return false;
}

bool
cli_value_in(const char *const *values, const char *value)
{
	for (; *values != NULL; values++) {
		if (strcmp(*values, value) == 0)
			return true;
	}
	return false;
}

cJSON *
cli_json_object(const char *text)
{
	cJSON *doc = json_parse(text, strlen(text));

	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

int
cli_usage_error(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	fputs("taskdeck: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cli != NULL && cli->cmd != NULL) {
		fputs("usage: taskdeck ", stderr);
		cli_print_cmd(stderr, cli->cmd);
		fputc('\n', stderr);
	} else
		fputs("Try 'taskdeck --help'.\n", stderr);
	return CLI_EXIT_USAGE;
}

int
cli_fail(const struct td_error *err)
{
	char *message = termtext_line(err->message);

	fprintf(stderr, "taskdeck: %s: %s", err->code_name, message);
	free(message);
	if (err->request_id[0] != '\0')
		fprintf(stderr, " (request %s)", err->request_id);
	fputc('\n', stderr);
	return cli_exit_code(err);
}

int
cli_exit_code(const struct td_error *err)
{
	switch (err->code) {
	case TD_OK:
		return CLI_EXIT_OK;
	case TD_INVALID_ARGUMENT:
		return CLI_EXIT_USAGE;
	case TD_NOT_FOUND:
		return CLI_EXIT_NOT_FOUND;
	case TD_SERVICE_NOT_FOUND:
	case TD_CONNECTION_FAILED:
	case TD_TIMEOUT:
		return CLI_EXIT_UNREACHABLE;
	case TD_SESSION_BUSY:
	case TD_CONFIGURATION_CONFLICT:
		return CLI_EXIT_CONFLICT;
	default:
		if (err->http_status == 409 || err->http_status == 422)
			return CLI_EXIT_CONFLICT;
		return CLI_EXIT_SERVICE;
	}
}

int
cli_connect(struct cli *cli)
{
	struct td_connect_options opts = { .request_timeout_ms = cli->timeout_ms };
	struct td_error err;

	if (cli->client != NULL)
		return CLI_EXIT_OK;
	if (td_connect(&cli->client, &opts, &err) != TD_OK)
		return cli_fail(&err);
	return CLI_EXIT_OK;
}

struct td_request_options
cli_request_options(const struct cli *cli)
{
	struct td_request_options opts = { .timeout_ms = cli->timeout_ms };

	return opts;
}

/* Parses --timeout MS into cli. */
static bool
cli_set_timeout(struct cli *cli, const char *text)
{
	char *end;
	long ms;

	errno = 0;
	ms = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || ms <= 0)
		return false;
	cli->timeout_ms = ms;
	return true;
}

/* How many words of argv a command name ("config get") takes; 0: no match. */
static int
cli_match_name(const char *name, int argc, char **argv)
{
	int words = 0;

	while (*name != '\0') {
		size_t n = strcspn(name, " ");

		if (words >= argc || strlen(argv[words]) != n ||
		    strncmp(argv[words], name, n) != 0)
			return 0;
		words++;
		name += n;
		name += strspn(name, " ");
	}
	return words;
}

/* The command named by argv[0] and the next words; *words says how many it used. */
static const struct cli_cmd *
cli_find(int argc, char **argv, int *words)
{
	int n;

	for (const struct cli_cmd *const *c = cli_cmds; *c != NULL; c++) {
		if (strcmp((*c)->group, argv[0]) != 0)
			continue;
		if ((*c)->name == NULL) {
			*words = 1;
			return *c;
		}
		if ((n = cli_match_name((*c)->name, argc - 1, argv + 1)) > 0) {
			*words = n + 1;
			return *c;
		}
	}
	return NULL;
}

/* True when some command belongs to group. */
static bool
cli_is_group(const char *group)
{
	for (const struct cli_cmd *const *c = cli_cmds; *c != NULL; c++) {
		if (strcmp((*c)->group, group) == 0)
			return true;
	}
	return false;
}

/* Handles a global option (or an error); returns -1 to go on, else an exit code. */
static int
cli_global(struct cli *cli, int ch, char **argv)
{
	switch (ch) {
	case CLI_GLOBAL_JSON:
		cli->json = true;
		return -1;
	case CLI_GLOBAL_TIMEOUT:
		if (cli_set_timeout(cli, optarg))
			return -1;
		return cli_usage_error(cli,
		    "--timeout takes a positive number of milliseconds");
	case CLI_GLOBAL_HELP:
		if (cli->cmd == NULL)
			cli_print_overview(stdout);
		else
			cli_print_cmd_help(cli->cmd);
		return CLI_EXIT_OK;
	case CLI_GLOBAL_WIDE:
		out_set_wide(true);
		return -1;
	case CLI_GLOBAL_OUTPUT:
		if (strcmp(optarg, "wide") == 0)
			out_set_wide(true);
		else if (strcmp(optarg, "json") == 0)
			cli->json = true;
		else
			return cli_usage_error(cli, "-o takes wide or json, not '%s'", optarg);
		return -1;
	case CLI_GLOBAL_VERSION:
		printf("taskdeck %s\n", td_version());
		return CLI_EXIT_OK;
	case ':':
		return cli_usage_error(cli, "option %s needs a value", argv[optind - 1]);
	default:
		return cli_usage_error(cli, "unknown option %s", argv[optind - 1]);
	}
}

/*
 * Parses the options of cli->cmd (and the global ones, anywhere) from argv,
 * whose argv[0] is the command's last word; a command's option of the same
 * name as a global one wins.  Returns -1 to go on, else an exit code; *first
 * is the index of the first argument.
 */
static int
cli_parse(struct cli *cli, int argc, char **argv, int *first)
{
	const struct cli_option *o;
	struct option *longopts;
	char *shorts;
	size_t n = 0;
	int ch, rc = -1;

	for (o = cli->cmd->options; o->name != NULL; o++)
		n++;
	longopts = xcalloc(n + CLI_GLOBAL_COUNT + 1, sizeof *longopts);
	memcpy(longopts + n, cli_globals, CLI_GLOBAL_COUNT * sizeof *longopts);
	for (size_t i = 0; i < n; i++) {
		longopts[i] = (struct option){
			cli->cmd->options[i].name,
			cli->cmd->options[i].has_value ? required_argument : no_argument,
			NULL, CLI_OPTION_BASE + (int)i };
	}
	/* ":h" then the short forms of the command's options ("x:" with a value). */
	shorts = xcalloc(2 * n + 5, 1);
	memcpy(shorts, ":ho:", 4);
	for (size_t i = 0, k = 4; i < n; i++) {
		if (cli_short(cli->cmd->options[i].name) == 0)
			continue;
		shorts[k++] = cli_short(cli->cmd->options[i].name);
		if (cli->cmd->options[i].has_value)
			shorts[k++] = ':';
	}
	cli->values = xcalloc(argc, sizeof *cli->values);
	opterr = 0;
	optind = 0;
	while (rc == -1 && (ch = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		for (size_t i = 0; i < n && ch > 0 && ch < 128; i++) {
			if (cli_short(cli->cmd->options[i].name) == ch)
				ch = CLI_OPTION_BASE + (int)i;
		}
		if (ch == 'h')
			ch = CLI_GLOBAL_HELP;
		else if (ch == 'o')
			ch = CLI_GLOBAL_OUTPUT;
		if (ch >= CLI_OPTION_BASE) {
			cli->values[cli->value_count++] = (struct cli_value){
				cli->cmd->options[ch - CLI_OPTION_BASE].name, optarg };
		} else
			rc = cli_global(cli, ch, argv);
	}
	free(shorts);
	free(longopts);
	*first = optind;
	return rc;
}

/* taskdeck help [COMMAND...]: the help of everything, a group or a command. */
static int
cli_help_cmd(int argc, char **argv)
{
	const struct cli_cmd *cmd;
	int words;

	if (argc == 0) {
		cli_print_overview(stdout);
		return CLI_EXIT_OK;
	}
	if (argc == 1 && strcmp(argv[0], "--all") == 0) {
		cli_print_help(stdout, NULL);
		return CLI_EXIT_OK;
	}
	cmd = cli_find(argc, argv, &words);
	if (cmd != NULL && words == argc) {
		cli_print_cmd_help(cmd);
		return CLI_EXIT_OK;
	}
	if (cmd == NULL && argc == 1 && cli_is_group(argv[0])) {
		cli_print_help(stdout, argv[0]);
		return CLI_EXIT_OK;
	}
	return cli_unknown("no command to help with:", argc, argv);
}

/* Keeps s (malloc'd) until the end of main; returns it. */
static char *
cli_keep(struct cli *cli, char *s)
{
	cli->owned = xrealloc(cli->owned, (cli->owned_count + 1) * sizeof *cli->owned);
	cli->owned[cli->owned_count++] = s;
	return s;
}

/*
 * Among the sessions titled exactly text (several: the title alone is
 * ambiguous), the one whose plan waits for a decision; NULL when not exactly
 * one does.  A plan command means that one (two demo sessions share a title).
 */
static char *
cli_plan_waiting(struct cli *cli, const char *text)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_project_list *projects;
	struct td_error err;
	char *found = NULL;
	size_t waiting = 0;

	if (td_list_projects_archived(cli->client, TD_ARCHIVED_ALL, 1000, NULL, &opts, &projects,
	    &err) != TD_OK)
		return NULL;
	for (size_t i = 0; i < projects->count; i++) {
		struct td_session_list *ss;

		if (td_list_sessions_archived(cli->client, projects->items[i].id, TD_ARCHIVED_ALL,
		    1000, NULL, &opts, &ss, &err) != TD_OK)
			continue;
		for (size_t k = 0; k < ss->count; k++) {
			struct td_plan *plan;

			if (ss->items[k].title == NULL || strcmp(ss->items[k].title, text) != 0 ||
			    td_get_session_plan(cli->client, ss->items[k].id, &opts, &plan,
			    &err) != TD_OK)
				continue;
			if (plan->status != NULL && strcmp(plan->status, "awaiting-approval") == 0 &&
			    waiting++ == 0)
				found = xstrdup(ss->items[k].id);
			td_plan_free(plan);
		}
		td_session_list_free(ss);
	}
	td_project_list_free(projects);
	if (waiting != 1) {
		free(found);
		return NULL;
	}
	return found;
}

/*
 * The session of a plan command: a run (its id, or a piece of it) names its
 * own session, a session its id or title.  A title no session has is tried
 * as a piece of a run id.  Returns an exit code.
 */
static int
cli_resolve_plan(struct cli *cli, const char *text, const char **id)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err, serr;
	struct td_run *run;
	char *found = NULL;
	enum td_code rc = TD_NOT_FOUND;

	if (strncmp(text, "run_", 4) != 0) {
		rc = td_find_session(cli->client, NULL, text, &opts, &found, &serr);
		if (rc == TD_OK) {
			*id = cli_keep(cli, found);
			return CLI_EXIT_OK;
		}
		if (rc == TD_INVALID_ARGUMENT && (found = cli_plan_waiting(cli, text)) != NULL) {
			*id = cli_keep(cli, found);
			return CLI_EXIT_OK;
		}
		if (rc != TD_NOT_FOUND)
			return cli_fail(&serr);
	}
	if (td_find_run(cli->client, text, &opts, &found, &err) != TD_OK)
		return cli_fail(rc == TD_NOT_FOUND && err.code == TD_NOT_FOUND &&
		    strncmp(text, "run_", 4) != 0 ? &serr : &err);
	rc = td_get_run(cli->client, found, &opts, &run, &err);
	free(found);
	if (rc != TD_OK)
		return cli_fail(&err);
	*id = cli_keep(cli, xstrdup(run->session_id));
	td_run_free(run);
	return CLI_EXIT_OK;
}

/*
 * The id of a project or session named by text (an id, a name, or the
 * unique beginning of one); a session among those of project_id when it is
 * not NULL.  Returns an exit code: 2 when the name is ambiguous (the
 * candidates are listed), 4 when nothing matches.
 */
static int
cli_resolve_one(struct cli *cli, enum cli_ref ref, const char *text,
    const char *project_id, const char **id)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	enum td_code rc;
	char *found;
	int exit;

	static const char *const prefixes[] = {
		[CLI_REF_PROJECT] = "prj_", [CLI_REF_SESSION] = "ses_", [CLI_REF_PLAN] = "ses_",
		[CLI_REF_RUN] = "run_", [CLI_REF_CONNECTOR] = "con_",
	};

	/* an id, or nothing (the command's usage error), needs no service */
	if (*text == '\0' || (strncmp(text, prefixes[ref], 4) == 0 &&
	    (ref != CLI_REF_RUN || strlen(text) >= 28))) {
		*id = text;
		return CLI_EXIT_OK;
	}
	if ((exit = cli_connect(cli)) != CLI_EXIT_OK)
		return exit;
	switch (ref) {
	case CLI_REF_PROJECT:
		rc = td_find_project(cli->client, text, &opts, &found, &err);
		break;
	case CLI_REF_RUN:
		rc = td_find_run(cli->client, text, &opts, &found, &err);
		break;
	case CLI_REF_CONNECTOR:
		rc = td_find_connector(cli->client, text, &opts, &found, &err);
		break;
	case CLI_REF_PLAN:
		return cli_resolve_plan(cli, text, id);
	default:
		rc = td_find_session(cli->client, project_id, text, &opts, &found, &err);
		break;
	}
	if (rc != TD_OK)
		return cli_fail(&err);
	*id = cli_keep(cli, found);
	return CLI_EXIT_OK;
}

/* True when cli->cmd has an option of this name. */
static bool
cli_takes(const struct cli *cli, const char *name)
{
	for (const struct cli_option *o = cli->cmd->options; o->name != NULL; o++) {
		if (strcmp(o->name, name) == 0)
			return true;
	}
	return false;
}

/* What an option names: --project a project, --session a session. */
static enum cli_ref
cli_option_ref(const char *name)
{
	return strcmp(name, "project") == 0 ? CLI_REF_PROJECT :
	    strcmp(name, "session") == 0 ? CLI_REF_SESSION :
	    strcmp(name, "run") == 0 ? CLI_REF_RUN : CLI_REF_NONE;
}

/*
 * The current project for a command given none; says on stderr which one
 * when it comes from `taskdeck use` (TASKDECK_PROJECT is set in the very
 * shell).  *id NULL when there is none.  Returns an exit code.
 */
static int
cli_use_current(struct cli *cli, const char **id)
{
	struct td_request_options opts = cli_request_options(cli);
	enum cli_context_source source;
	struct td_project *p;
	struct td_error err;
	char *current;
	int rc;

	*id = NULL;
	if ((rc = cli_current_project(cli, &current, &source)) != CLI_EXIT_OK ||
	    current == NULL)
		return rc;
	*id = cli_keep(cli, current);
	if (source != CLI_CONTEXT_STORED)
		return CLI_EXIT_OK;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_project(cli->client, current, &opts, &p, &err) != TD_OK) {
		rc = cli_fail(&err);
		fprintf(stderr, "taskdeck: (the current project %s; `taskdeck use --clear` "
		    "forgets it)\n", current);
		return rc;
	}
	fprintf(stderr, "taskdeck: in project %s, the current one (`taskdeck use` to change)\n",
	    p->name);
	td_project_free(p);
	return CLI_EXIT_OK;
}

/*
 * Turns the names among the command's options and first argument into ids,
 * and puts in the current project where the command needs one and got none.
 * Returns -1 to go on, else an exit code.
 */
static int
cli_resolve(struct cli *cli, int *argc, char ***argv)
{
	struct cli_names names = { cli->cmd, CLI_REF_NONE, false };
	const char *project = NULL, *current, *id;
	bool session = false;
	int rc;

	for (size_t i = 0; i < sizeof cli_names / sizeof cli_names[0]; i++) {
		if (cli_names[i].cmd == cli->cmd)
			names = cli_names[i];
	}
	for (int pass = CLI_REF_PROJECT; pass <= CLI_REF_RUN; pass++) {
		for (size_t i = 0; i < cli->value_count; i++) {
			enum cli_ref ref = cli_option_ref(cli->values[i].name);

			if ((int)ref != pass || cli->values[i].value == NULL)
				continue;
			if ((rc = cli_resolve_one(cli, ref, cli->values[i].value, project,
			    &cli->values[i].value)) != CLI_EXIT_OK)
				return rc;
			if (ref == CLI_REF_PROJECT)
				project = cli->values[i].value;
			else if (ref == CLI_REF_SESSION)
				session = true;
		}
	}
	if (names.current_project && names.arg == CLI_REF_PROJECT && project == NULL &&
	    (*argc == 0 || strchr((*argv)[0], '=') != NULL)) {
		if ((rc = cli_use_current(cli, &current)) != CLI_EXIT_OK)
			return rc;
		if (current == NULL)
			return cli_usage_error(cli, "give a project, or make one current with "
			    "`taskdeck use PROJECT`");
		cli->args = xcalloc(*argc + 2, sizeof *cli->args);
		cli->args[0] = (char *)current;
		memcpy(cli->args + 1, *argv, *argc * sizeof **argv);
		*argv = cli->args;
		(*argc)++;
		return -1;
	}
	if (names.current_project && project == NULL && !session &&
	    cli_takes(cli, "project") && !cli_has(cli, "all-projects") &&
	    !cli_has(cli, "attention")) {
		if ((rc = cli_use_current(cli, &current)) != CLI_EXIT_OK)
			return rc;
		if (current != NULL) {
			cli->values = xrealloc(cli->values,
			    (cli->value_count + 1) * sizeof *cli->values);
			cli->values[cli->value_count++] = (struct cli_value){ "project", current };
			project = current;
		}
	}
	if (names.arg != CLI_REF_NONE && *argc > 0) {
		if ((rc = cli_resolve_one(cli, names.arg, (*argv)[0], project, &id)) !=
		    CLI_EXIT_OK)
			return rc;
		(*argv)[0] = (char *)id;
	}
	return -1;
}

/* Edit distance of a and b, ignoring case (both short). */
static size_t
cli_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], diag, up;

	if (la >= 63 || lb >= 63)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = diag + (tolower((unsigned char)a[i - 1]) !=
			    tolower((unsigned char)b[j - 1]));

			up = row[j];
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/*
 * The command nearest to what argv names ("runs list" for "rusn lsit"), when
 * near enough to be a typing slip; into out, false when none is.  Within a
 * group when argv[0] is one.
 */
static bool
cli_nearest(int argc, char **argv, char *out, size_t len)
{
	bool in_group = cli_is_group(argv[0]);
	size_t best = (size_t)-1, d;
	char word[64];

	for (const struct cli_cmd *const *c = cli_cmds; *c != NULL; c++) {
		if (in_group && strcmp((*c)->group, argv[0]) != 0)
			continue;
		/* in half steps: a one-word command loses ties when two words were typed */
		d = 2 * cli_distance(argv[0], (*c)->group);
		if ((*c)->name != NULL && argc > 1) {
			snprintf(word, sizeof word, "%.*s", (int)strcspn((*c)->name, " "),
			    (*c)->name);
			d += 2 * cli_distance(argv[1], word);
		} else if (argc > 1)
			d += 1;
		if (d < best) {
			best = d;
			snprintf(out, len, "%s%s%s", (*c)->group,
			    (*c)->name != NULL && argc > 1 ? " " : "",
			    (*c)->name != NULL && argc > 1 ? (*c)->name : "");
		}
	}
	return best > 0 && best / 2 <= 1 + strlen(argc > 1 ? argv[1] : argv[0]) / 3;
}

/*
 * The commands whose name begins with word, in their groups ("runs diff" for
 * "diff", "projects archive' or 'sessions archive" for "archive"), as the
 * quoted list of cli_unknown; false when there is none.
 */
static bool
cli_grouped(const char *word, char *out, size_t len)
{
	const struct cli_cmd *found[16];
	size_t n = 0, used = 0, wlen = strlen(word);

	for (const struct cli_cmd *const *c = cli_cmds; *c != NULL && n < 16; c++) {
		const char *name = (*c)->name;

		if (name == NULL || strncasecmp(name, word, wlen) != 0 ||
		    (name[wlen] != '\0' && name[wlen] != ' '))
			continue;
		/* "sessions config" once, for "config get" and "config set" */
		if (n == 0 || strcmp(found[n - 1]->group, (*c)->group) != 0)
			found[n++] = *c;
	}
	out[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		used += (size_t)snprintf(out + used, len - used, "%s%s %.*s",
		    i == 0 ? "" : i + 1 == n ? "' or '" : "', '", found[i]->group,
		    (int)strcspn(found[i]->name, " "), found[i]->name);
	}
	return n > 0;
}

/* "taskdeck: unknown command 'X'", and the nearest one when there is one; exit 2. */
static int
cli_unknown(const char *what, int argc, char **argv)
{
	char near[512];

	if ((!cli_is_group(argv[0]) && cli_grouped(argv[0], near, sizeof near)) ||
	    cli_nearest(argc, argv, near, sizeof near))
		fprintf(stderr, "taskdeck: %s '%s'; did you mean '%s'?\n", what,
		    argc > 1 && cli_is_group(argv[0]) ? argv[1] : argv[0], near);
	else
		fprintf(stderr, "taskdeck: %s '%s'\n", what,
		    argc > 1 && cli_is_group(argv[0]) ? argv[1] : argv[0]);
	fputs("Try 'taskdeck help'.\n", stderr);
	return CLI_EXIT_USAGE;
}

/* Finds, parses and runs the command of argv. */
static int
cli_run(struct cli *cli, int argc, char **argv)
{
	int words, first, argn, rc;

	if (strcmp(argv[0], "help") == 0)
		return cli_help_cmd(argc - 1, argv + 1);
	if (strcmp(argv[0], "__complete") == 0)
		return cli_complete(argc - 1, argv + 1);
	cli->cmd = cli_find(argc, argv, &words);
	if (cli->cmd == NULL && cli_is_group(argv[0])) {
		if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			cli_print_help(stdout, argv[0]);
			return CLI_EXIT_OK;
		}
		if (argc > 1 && argv[1][0] != '-')
			return cli_unknown("unknown command", argc, argv);
		cli_print_help(stderr, argv[0]);
		return CLI_EXIT_USAGE;
	}
	if (cli->cmd == NULL)
		return cli_unknown("unknown command", argc, argv);
	argc -= words - 1;
	argv += words - 1;
	rc = cli_parse(cli, argc, argv, &first);
	if (rc != -1)
		return rc;
	argn = argc - first;
	argv += first;
	if (argn < cli->cmd->min_args)
		return cli_usage_error(cli, "missing arguments");
	if (cli->cmd->max_args >= 0 && argn > cli->cmd->max_args)
		return cli_usage_error(cli, "too many arguments");
	if ((rc = cli_resolve(cli, &argn, &argv)) != -1)
		return rc;
	return cli->cmd->exec(cli, argn, argv);
}

/* Opens the dashboard once the service answers; not without a terminal. */
static int
cli_dashboard(struct cli *cli, int argc, char **argv)
{
	struct tui_options o = { .no_mouse = cli_has(cli, "no-mouse"),
	    .monochrome = cli_has(cli, "monochrome"), .timeout_ms = cli->timeout_ms };
	struct td_request_options ro = { .timeout_ms = cli->timeout_ms ? cli->timeout_ms : 5000 };
	struct td_doctor_report *report = NULL;
	struct td_error err;
	int rc;

	(void)argc;
	(void)argv;
	enum cli_context_source source;
	char *current = NULL;

	tui_config_load(&o);
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	/* Opens in the current project, as k9s in the current context. */
	if (cli_current_project(cli, &current, &source) == CLI_EXIT_OK && current != NULL)
		snprintf(o.project, sizeof o.project, "%s", current);
	free(current);
	if (td_doctor(cli->client, &ro, &report, &err) != TD_OK &&
	    cli_exit_code(&err) == CLI_EXIT_UNREACHABLE)
		return cli_fail(&err);
	td_doctor_report_free(report);
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		fputs("taskdeck: the dashboard needs a terminal; try 'taskdeck --help'\n", stderr);
		return CLI_EXIT_USAGE;
	}
	return tui_main(cli->client, &o);
}

/* Global options, then the command (none: the dashboard). */
int
main(int argc, char **argv)
{
	struct cli cli = { 0 };
	int ch, rc = -1;

	opterr = 0;
	while (rc == -1 && (ch = getopt_long(argc, argv, "+:ho:", cli_globals, NULL)) != -1)
		rc = cli_global(&cli, ch == 'h' ? CLI_GLOBAL_HELP : ch == 'o' ? CLI_GLOBAL_OUTPUT :
		    ch, argv);
	if (rc == -1 && optind == argc) {
		cli.cmd = &cmd_dashboard_entry;
		rc = cli_dashboard(&cli, 0, argv);
	}
	if (rc == -1)
		rc = cli_run(&cli, argc - optind, argv + optind);
	td_client_free(cli.client);
	free(cli.values);
	free(cli.args);
	for (size_t i = 0; i < cli.owned_count; i++)
		free(cli.owned[i]);
	free(cli.owned);
	return rc;
}
