/* The taskdeck command line: one struct cli_cmd per subcommand. */
#ifndef TD_CLI_H
#define TD_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "taskdeck.h"

/* Exit codes, as documented in docs/cli.md and taskdeck(1). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_SERVICE 1	/* the service answered with an error */
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_UNREACHABLE 3	/* no service, or it cannot be reached */
#define CLI_EXIT_NOT_FOUND 4
#define CLI_EXIT_CONFLICT 5	/* 409 and 422: stale_write, idempotency_conflict, ... */
#define CLI_EXIT_INTERRUPTED 130	/* Ctrl-C stopped a wait; the run goes on */

struct cli_option {
	const char *name;	/* long name without "--" */
	bool has_value;
};

/* taskdeck.c: the options of a command that takes none, and of a paged listing. */
extern const struct cli_option cli_no_options[];
extern const struct cli_option cli_page_options[];	/* --limit N, --cursor C */

struct cli_value {
	const char *name;
	const char *value;	/* NULL for a flag */
};

struct cli;

struct cli_cmd {
	const char *group;	/* "projects" */
	const char *name;	/* "list", or NULL for a one-word command */
	const char *usage;	/* arguments and options, for help */
	const char *summary;
	const struct cli_option *options;	/* ends with { NULL } */
	int min_args;
	int max_args;		/* -1 for no limit */
	int (*exec)(struct cli *cli, int argc, char **argv);
};

struct cli {
	bool json;		/* --json: print the service's JSON */
	long timeout_ms;	/* --timeout, 0 for the default */
	const struct cli_cmd *cmd;
	struct cli_value *values;	/* options given to cmd, in order */
	size_t value_count;
	struct td_client *client;	/* made by cli_connect */
	char **owned;		/* ids resolved from names, freed at exit */
	size_t owned_count;
	char **args;		/* the arguments with the current project put first, or NULL */
};

extern const struct cli_cmd cmd_doctor_entry;
extern const struct cli_cmd cmd_projects_list_entry;
extern const struct cli_cmd cmd_projects_show_entry;
extern const struct cli_cmd cmd_projects_create_entry;
extern const struct cli_cmd cmd_projects_update_entry;
extern const struct cli_cmd cmd_projects_archive_entry;
extern const struct cli_cmd cmd_projects_unarchive_entry;
extern const struct cli_cmd cmd_defaults_get_entry;
extern const struct cli_cmd cmd_defaults_set_entry;
extern const struct cli_cmd cmd_routing_get_entry;
extern const struct cli_cmd cmd_routing_set_entry;
extern const struct cli_cmd cmd_daemon_start_entry;
extern const struct cli_cmd cmd_daemon_stop_entry;
extern const struct cli_cmd cmd_daemon_status_entry;
extern const struct cli_cmd cmd_run_entry;
extern const struct cli_cmd cmd_runs_list_entry;
extern const struct cli_cmd cmd_runs_show_entry;
extern const struct cli_cmd cmd_runs_wait_entry;
extern const struct cli_cmd cmd_runs_logs_entry;
extern const struct cli_cmd cmd_runs_watch_entry;
extern const struct cli_cmd cmd_runs_cancel_entry;
extern const struct cli_cmd cmd_runs_rerun_entry;
/* a run's workspace changes: cmd-changes.c */
extern const struct cli_cmd cmd_runs_changes_entry;
extern const struct cli_cmd cmd_runs_diff_entry;
extern const struct cli_cmd cmd_runs_revert_entry;
/* attempts: cmd-attempts.c; cli_attempts_run is run --attempts N */
extern const struct cli_cmd cmd_runs_apply_entry;
extern const struct cli_cmd cmd_runs_discard_entry;
int cli_attempts_run(struct cli *cli, char **argv);
extern const struct cli_cmd cmd_sessions_list_entry;
extern const struct cli_cmd cmd_sessions_show_entry;
extern const struct cli_cmd cmd_sessions_archive_entry;
extern const struct cli_cmd cmd_sessions_unarchive_entry;
extern const struct cli_cmd cmd_sessions_delete_entry;
extern const struct cli_cmd cmd_sessions_config_get_entry;
extern const struct cli_cmd cmd_sessions_config_set_entry;
extern const struct cli_cmd cmd_artifacts_list_entry;
extern const struct cli_cmd cmd_artifacts_show_entry;
extern const struct cli_cmd cmd_artifacts_download_entry;
extern const struct cli_cmd cmd_artifacts_view_entry;
extern const struct cli_cmd cmd_events_entry;
extern const struct cli_cmd cmd_plan_show_entry;
extern const struct cli_cmd cmd_plan_approve_entry;
extern const struct cli_cmd cmd_plan_revise_entry;
extern const struct cli_cmd cmd_plan_reject_entry;
extern const struct cli_cmd cmd_permissions_list_entry;
extern const struct cli_cmd cmd_permissions_show_entry;
extern const struct cli_cmd cmd_permissions_allow_entry;
extern const struct cli_cmd cmd_permissions_deny_entry;
extern const struct cli_cmd cmd_demo_entry;
/* connectors and credentials */
extern const struct cli_cmd cmd_connectors_list_entry;
extern const struct cli_cmd cmd_connectors_show_entry;
extern const struct cli_cmd cmd_connectors_add_entry;
extern const struct cli_cmd cmd_connectors_update_entry;
extern const struct cli_cmd cmd_connectors_enable_entry;
extern const struct cli_cmd cmd_connectors_disable_entry;
extern const struct cli_cmd cmd_connectors_remove_entry;
extern const struct cli_cmd cmd_connectors_test_entry;
extern const struct cli_cmd cmd_connectors_login_entry;
/*
 * A secret from fd (standard input): all of it up to 16384 bytes, without
 * its final line break; NULL with *why.  Wipe and free it.
 */
char *cli_secret_read_fd(int fd, const char **why);
extern const struct cli_cmd cmd_credentials_list_entry;
extern const struct cli_cmd cmd_credentials_show_entry;
extern const struct cli_cmd cmd_credentials_create_entry;
extern const struct cli_cmd cmd_credentials_update_entry;
extern const struct cli_cmd cmd_credentials_delete_entry;
/* readiness: cmd-readiness.c, cmd-setup.c */
extern const struct cli_cmd cmd_runtimes_entry;
extern const struct cli_cmd cmd_install_cli_entry;
extern const struct cli_cmd cmd_setup_entry;
/* the current project: cmd-use.c */
extern const struct cli_cmd cmd_use_entry;

/* cmd-use.c */
/* Where the current project came from. */
enum cli_context_source { CLI_CONTEXT_NONE, CLI_CONTEXT_ENV, CLI_CONTEXT_STORED };
/*
 * The current project of this service: TASKDECK_PROJECT (a name or an id,
 * resolved), else the one stored by `taskdeck use`.  *id is NULL with
 * CLI_CONTEXT_NONE; an exit code other than CLI_EXIT_OK was printed.
 */
int cli_current_project(struct cli *cli, char **id, enum cli_context_source *source);

extern const struct cli_cmd cmd_completion_entry;

/* taskdeck as an ACP agent: cmd-acp.c */
extern const struct cli_cmd cmd_acp_entry;
/*
 * acp-diff.c: the text a file had before a run changed it, from its text now and
 * the run's unified diff of it (malloc'd); NULL when the diff does not fit the
 * text (changed since), or is binary or a deletion.  *added: the run created it.
 */
char *acp_diff_old_text(const char *new_text, const char *diff, bool *added);
/* cmd-daemon.c: starts taskdeckd (quietly) when none runs; an exit code. */
int cli_daemon_ensure(const struct cli *cli);

/* Words that options take (NULL-terminated), checked and completed from here. */
extern const char *const cli_permission_profiles[];	/* cmd-runs.c: --permission */
extern const char *const cli_shells[];	/* cmd-completion.c: completion SHELL */

/* taskdeck.c */
/* Every command, in the order of taskdeck --help; ends with NULL. */
extern const struct cli_cmd *const cli_cmds[];
/* The global options (getopt_long's table; ends with a NULL name). */
extern const struct option cli_globals[];
/* The short form of an option of this name (-f for --follow, -h, -o), or 0. */
char cli_short(const char *name);
/* True when value is one of values (NULL-terminated). */
bool cli_value_in(const char *const *values, const char *value);
/* The last value of an option, or NULL when not given. */
const char *cli_get(const struct cli *cli, const char *name);
/* True when an option (a flag or one with a value) was given. */
bool cli_has(const struct cli *cli, const char *name);
/* Connects cli->client (once); returns an exit code (CLI_EXIT_OK on success). */
int cli_connect(struct cli *cli);
/* Per-call options with --timeout applied. */
struct td_request_options cli_request_options(const struct cli *cli);
/* Parses text that must be a JSON object; NULL otherwise. */
cJSON *cli_json_object(const char *text);
/* Prints "taskdeck: <message>" and the command's usage; returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints an error as "taskdeck: <code>: <message> (request <id>)"; returns its exit code. */
int cli_fail(const struct td_error *err);
/* The exit code of an error, without printing it. */
int cli_exit_code(const struct td_error *err);

/* cmd-readiness.c: setup --status and setup --repair; exit codes */
int cli_setup_status(struct cli *cli);
int cli_setup_repair(struct cli *cli);

/* cmd-events.c */
/* cli_follow_run's answer when the stream broke: wait for the run another way. */
#define CLI_FOLLOW_LOST (-1)
/*
 * Subscribes to the events of a project (and session, when not NULL) and
 * waits until the stream is up, before a run starts; NULL (and a note on
 * stderr) when it cannot.
 */
struct td_events *cli_events_for_run(struct cli *cli, const char *project_id,
    const char *session_id);
/*
 * Prints run_id's events from ev (consumed) until run.finished: output to
 * stdout as it comes, tools and progress to stderr.  The exit code as for
 * run --wait, CLI_EXIT_INTERRUPTED on Ctrl-C, or CLI_FOLLOW_LOST.
 */
int cli_follow_run(struct cli *cli, struct td_events *ev, const char *run_id);
/* What runs logs prints. */
struct cli_logs {
	bool follow;		/* -f: then the live events until the run ends */
	long tail;		/* --tail N: the last N lines of the history; -1 all */
	long long since_ms;	/* --since: the history from then on; 0 all */
	bool timestamps;	/* --timestamps: each line begins with its time (UTC) */
};
/* --since: a duration back from now ("10m", "2h", "30s", "1d") or an RFC 3339 time, in ms. */
bool cli_logs_since(const char *text, int64_t *ms);
/* runs logs RUN [--follow]: the durable history, then the live events. */
int cli_runs_logs(struct cli *cli, const char *run_id, const struct cli_logs *o);
/* runs watch RUN: status, progress, tools and prompts until the run ends. */
int cli_runs_watch(struct cli *cli, const char *run_id);

/* complete.c: taskdeck __complete WORD... (the last word is the one completed). */
int cli_complete(int argc, char **argv);

/* output.c */
struct out_table {
	size_t columns;
	size_t rows;		/* not counting the header */
	char **cells;		/* header first, row by row */
};

/* "[y/N] " on stderr after a question, then the answer: true for y or yes (any case). */
bool cli_confirmed(void);
/* --wide: tables print every column uncut, also on a terminal. */
void out_set_wide(bool wide);
/* The width a table is fitted to: the terminal's, 0 in a pipe or a file or with --wide. */
size_t out_table_room(void);
/* A table whose last column is its free text (a prompt, a title, a message). */
void out_table_init(struct out_table *t, size_t columns, const char *const *header);
/* Adds one row of t->columns cells (NULL prints as "-"). */
void out_table_add(struct out_table *t, const char *const *row);
void out_table_print(const struct out_table *t);
void out_table_free(struct out_table *t);

/*
 * A listing: every page, or one page of --limit N from --cursor.  A list
 * command calls cli_list_start, then per page fetches cli_list_cursor,
 * cli_list_add for each item and cli_list_next, and ends with cli_list_end:
 *
 *	do {
 *		if (td_list_x(cli->client, l.limit, cli_list_cursor(&l), &l.opts,
 *		    &page, &err) != TD_OK) {
 *			l.rc = cli_fail(&err);
 *			break;
 *		}
 *		for (each item)
 *			cli_list_add(&l, item->json, row);
 *		more = cli_list_next(&l, &page->next_cursor);
 *		td_x_list_free(page);
 *	} while (more);
 *	return cli_list_end(cli, &l, "xs");
 */
struct cli_list {
	struct td_request_options opts;	/* with --timeout */
	long limit;		/* --limit, 0 for every page */
	const char *cursor;	/* --cursor, or NULL */
	char *next;		/* the next page's cursor, or NULL */
	size_t count;		/* items added */
	int rc;			/* the exit code so far */
	struct out_table table;
	struct buf json;	/* the JSON array so far, without its ']' */
};

/*
 * Parses --limit (1 to 1000) and --cursor and connects; on CLI_EXIT_OK l is
 * ready for the first page, else the exit code is returned (a usage error
 * printed) and l needs no freeing.
 */
int cli_list_start(struct cli *cli, struct cli_list *l, size_t columns,
    const char *const *header);
/* The cursor of the page to fetch now. */
const char *cli_list_cursor(const struct cli_list *l);
/* Adds one item: its JSON and its table row (as out_table_add). */
void cli_list_add(struct cli_list *l, const char *json, const char *const *row);
/* After a page: takes *next_cursor (left NULL); true when another page is due. */
bool cli_list_next(struct cli_list *l, char **next_cursor);
/*
 * Ends a listing: when l->rc is CLI_EXIT_OK, the JSON array with --json, else
 * the table or "no NOUN", and a hint on stderr when a further page is left.
 * Frees l; returns l->rc.
 */
int cli_list_end(struct cli *cli, struct cli_list *l, const char *noun);
/* The age of an RFC 3339 time, as kubectl shows it ("5s", "3m", "2h", "4d"); "-" when unknown. */
void out_age(const char *time, char out[16]);
/* "key: value", control characters made harmless; NULL prints as "-". */
void out_kv(const char *key, const char *value);
/* One "key: value" line per scalar of obj, nested keys joined with dots. */
void out_flat(const cJSON *obj, const char *prefix);
/* A JSON document on its own line. */
void out_json(const char *json);
/* A whole item: its JSON with --json, else its members as out_flat prints them. */
void out_doc(const struct cli *cli, const char *json);

#endif
