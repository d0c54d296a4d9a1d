/* taskdeck sessions list|show|archive|unarchive|delete|config get|config set */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "xalloc.h"

static int cmd_sessions_list_exec(struct cli *, int, char **);
static int cmd_sessions_show_exec(struct cli *, int, char **);
static int cmd_sessions_archive_exec(struct cli *, int, char **);
static int cmd_sessions_delete_exec(struct cli *, int, char **);
static int cmd_sessions_config_get_exec(struct cli *, int, char **);
static int cmd_sessions_config_set_exec(struct cli *, int, char **);

static const struct cli_option sessions_list_options[] = {
	{ "project", true },
	{ "limit", true },
	{ "cursor", true },
	{ "archived", false },
	{ NULL, false }
};

static const struct cli_option sessions_config_set_options[] = {
	{ "revision", true },
	{ NULL, false }
};

const struct cli_cmd cmd_sessions_list_entry = {
	"sessions", "list", "[PROJECT | --project P] [--archived] [--limit N] [--cursor C]",
	"List the sessions of a project (a name or an id; else the current\n"
	"project), newest first.  Archived sessions are left out; --archived lists\n"
	"only them.",
	sessions_list_options, 0, 1, cmd_sessions_list_exec
};

const struct cli_cmd cmd_sessions_archive_entry = {
	"sessions", "archive", "SESSION",
	"Archive a session: hidden from its project's list (and the dashboard);\n"
	"runs started in it still work.",
	cli_no_options, 1, 1, cmd_sessions_archive_exec
};

static const struct cli_option sessions_delete_options[] = {
	{ "force", false },
	{ "yes", false },
	{ NULL, false }
};

const struct cli_cmd cmd_sessions_delete_entry = {
	"sessions", "delete", "SESSION [--force] [--yes]",
	"Delete a session with its runs, their events, plans, prompts, artifacts\n"
	"and workspace changes, and its managed workspace; a directory you gave\n"
	"as --cwd is kept with its files.  Asks first on a terminal (--yes off\n"
	"one).  Refused (exit 5) while a run of it is queued or running; --force\n"
	"cancels them first.",
	sessions_delete_options, 1, 1, cmd_sessions_delete_exec
};

const struct cli_cmd cmd_sessions_unarchive_entry = {
	"sessions", "unarchive", "SESSION",
	"Bring an archived session back into its project's list.",
	cli_no_options, 1, 1, cmd_sessions_archive_exec
};

const struct cli_cmd cmd_sessions_show_entry = {
	"sessions", "show", "SESSION",
	"Show one session: its directory, workspace kind and last run.",
	cli_no_options, 1, 1, cmd_sessions_show_exec
};

const struct cli_cmd cmd_sessions_config_get_entry = {
	"sessions", "config get", "SESSION",
	"Show a session's configuration and its revision.",
	cli_no_options, 1, 1, cmd_sessions_config_get_exec
};

const struct cli_cmd cmd_sessions_config_set_entry = {
	"sessions", "config set", "SESSION KEY=VALUE... [--revision N]",
	"Change a session's configuration (framework, provider, model, effort);\n"
	"KEY= or KEY=null clears a key.  The write is refused (exit 5) when the\n"
	"configuration changed since it was read, or since revision N.",
	sessions_config_set_options, 2, -1, cmd_sessions_config_set_exec
};

/* taskdeck sessions list [PROJECT | --project P] */
static int
cmd_sessions_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = {
		"ID", "WORKSPACE", "LAST RUN", "STATUS", "AGE", "TITLE" };
	const char *project = argc > 0 ? argv[0] : cli_get(cli, "project");
	struct td_session_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	if (project == NULL)
		return cli_usage_error(cli, "give a project, or make one current with "
		    "`taskdeck use PROJECT`");
	if (argc > 0 && cli_get(cli, "project") != NULL)
		return cli_usage_error(cli, "give the project once");
	if ((rc = cli_list_start(cli, &l, 6, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_sessions_archived(cli->client, project, cli_has(cli, "archived") ?
		    TD_ARCHIVED_ONLY : TD_ARCHIVED_HIDE, l.limit, cli_list_cursor(&l),
		    &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_session *s = &page->items[i];
			char age[16];
			const char *row[] = { s->id, s->workspace, s->last_run.id,
			    s->last_run.status, age, s->title };

			out_age(s->created_at, age);
			cli_list_add(&l, s->json, row);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_session_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, "sessions");
}

/* Prints one session. */
static void
sessions_print(const struct cli *cli, const struct td_session *s)
{
	if (cli->json)
		out_json(s->json);
	else {
		out_kv("id", s->id);
		out_kv("projectId", s->project_id);
		out_kv("title", s->title);
		out_kv("cwd", s->cwd);
		out_kv("workspace", s->workspace);
		out_kv("createdAt", s->created_at);
		out_kv("updatedAt", s->updated_at);
		out_kv("lastRun.id", s->last_run.id);
		out_kv("lastRun.status", s->last_run.status);
		out_kv("archivedAt", s->archived_at);
	}
}

/* taskdeck sessions show SESSION, archive SESSION, unarchive SESSION */
static int
cmd_sessions_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_session *s;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_session(cli->client, argv[0], &opts, &s, &err) != TD_OK)
		return cli_fail(&err);
	sessions_print(cli, s);
	td_session_free(s);
	return CLI_EXIT_OK;
}

static int
cmd_sessions_archive_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	bool archive = strcmp(cli->cmd->name, "archive") == 0;
	struct td_session *s;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_archive_session(cli->client, argv[0], archive, &opts, &s, &err) != TD_OK)
		return cli_fail(&err);
	sessions_print(cli, s);
	td_session_free(s);
	return CLI_EXIT_OK;
}

/* Prints a session configuration. */
static void
sessions_config_print(const struct cli *cli, const struct td_session_config *cfg)
{
	char revision[32];

	if (cli->json) {
		out_json(cfg->json);
		return;
	}
	snprintf(revision, sizeof revision, "%ld", cfg->revision);
	out_kv("sessionId", cfg->session_id);
	out_kv("revision", revision);
	out_kv("framework", cfg->framework);
	out_kv("provider", cfg->provider);
	out_kv("model", cfg->model);
	out_kv("effort", cfg->effort);
	out_kv("updatedAt", cfg->updated_at);
}

/* taskdeck sessions config get SESSION */
static int
cmd_sessions_config_get_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_session_config *cfg;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_session_config(cli->client, argv[0], &opts, &cfg, &err) != TD_OK)
		return cli_fail(&err);
	sessions_config_print(cli, cfg);
	td_session_config_free(cfg);
	return CLI_EXIT_OK;
}

/* The patch of KEY=VALUE arguments: KEY= and KEY=null clear KEY. */
static char *
sessions_config_patch(const struct cli *cli, int argc, char **argv)
{
	cJSON *patch = cJSON_CreateObject();
	char *text;

	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		char *key;

		if (eq == NULL || eq == argv[i]) {
			cJSON_Delete(patch);
			cli_usage_error(cli, "expected KEY=VALUE, not '%s'", argv[i]);
			return NULL;
		}
		key = xstrndup(argv[i], (size_t)(eq - argv[i]));
		cJSON_DeleteItemFromObjectCaseSensitive(patch, key);
		if (eq[1] == '\0' || strcmp(eq + 1, "null") == 0)
			cJSON_AddNullToObject(patch, key);
		else
			cJSON_AddStringToObject(patch, key, eq + 1);
		free(key);
	}
	text = json_print(patch);
	cJSON_Delete(patch);
	return text;
}

/* taskdeck sessions config set: reads the revision (unless given), then writes. */
static int
cmd_sessions_config_set_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *revision_text = cli_get(cli, "revision");
	struct td_session_config *cfg;
	struct td_error err;
	long revision = 0;
	char *patch, *end;
	int rc;

	if (revision_text != NULL) {
		errno = 0;
		revision = strtol(revision_text, &end, 10);
		if (errno != 0 || *end != '\0' || revision < 1)
			return cli_usage_error(cli, "--revision takes a positive number");
	}
	if ((patch = sessions_config_patch(cli, argc - 1, argv + 1)) == NULL)
		return CLI_EXIT_USAGE;
	rc = cli_connect(cli);
	if (rc == CLI_EXIT_OK && revision == 0) {
		if (td_get_session_config(cli->client, argv[0], &opts, &cfg, &err) == TD_OK) {
			revision = cfg->revision;
			td_session_config_free(cfg);
		} else
			rc = cli_fail(&err);
	}
	if (rc == CLI_EXIT_OK) {
		if (td_update_session_config(cli->client, argv[0], revision, patch,
		    &opts, &cfg, &err) == TD_OK) {
			sessions_config_print(cli, cfg);
			td_session_config_free(cfg);
		} else
			rc = cli_fail(&err);
	}
	free(patch);
	return rc;
}

/* The runs of session id (counted over every page); -1 when they cannot be listed. */
static long
sessions_run_count(struct cli *cli, const char *id)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_run_filter f = { .session_id = id };
	struct td_run_list *page;
	struct td_error err;
	char *cursor = NULL;
	long n = 0;

	do {
		if (td_list_runs(cli->client, &f, 1000, cursor, &opts, &page, &err) != TD_OK) {
			free(cursor);
			return -1;
		}
		n += (long)page->count;
		free(cursor);
		cursor = page->next_cursor != NULL ? xstrdup(page->next_cursor) : NULL;
		td_run_list_free(page);
	} while (cursor != NULL);
	return n;
}

/* Asks on the terminal whether to delete session s, naming what goes and what stays. */
static bool
sessions_delete_confirm(struct cli *cli, const struct td_session *s, bool force)
{
	bool managed = s->workspace != NULL && strcmp(s->workspace, "managed") == 0;
	long runs = sessions_run_count(cli, s->id);

	fprintf(stderr, "Delete session %s \"%s\"", s->id, s->title);
	if (runs >= 0)
		fprintf(stderr, " and its %ld run%s", runs, runs == 1 ? "" : "s");
	fprintf(stderr, "%s?\n", force ? " (cancelling any still queued or running)" : "");
	fprintf(stderr, "  removed: the runs' events, plans, prompts, artifacts and workspace "
	    "changes%s%s\n", managed ? ", and the managed workspace " : "",
	    managed ? s->cwd : "");
	if (!managed)
		fprintf(stderr, "  kept: the workspace %s and its files\n", s->cwd);
	return cli_confirmed();
}

/* taskdeck sessions delete SESSION [--force] [--yes] */
/* A NULL-terminated list of strings as a JSON array. */
static cJSON *
strv_json(char *const *v)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]));
	return arr;
}

/* What `sessions delete` did: deleted (what went and stayed), or waiting for cancelled runs. */
static void
sessions_delete_print(const struct cli *cli, const struct td_session_deleted *d)
{
	if (cli->json) {
		cJSON *j = cJSON_CreateObject();
		char *text;

		cJSON_AddStringToObject(j, "id", d->id);
		if (d->deleting) {
			cJSON_AddBoolToObject(j, "deleting", true);
			cJSON_AddItemToObject(j, "cancelled", strv_json(d->cancelled));
		} else {
			cJSON_AddNumberToObject(j, "runs", (double)d->runs);
			cJSON_AddItemToObject(j, "removed", strv_json(d->removed));
			cJSON_AddItemToObject(j, "kept", strv_json(d->kept));
		}
		text = json_print(j);
		out_json(text);
		free(text);
		cJSON_Delete(j);
	} else if (d->deleting) {
		out_kv("deleting", d->id);
		for (size_t i = 0; d->cancelled[i] != NULL; i++)
			out_kv("cancelled", d->cancelled[i]);
		fprintf(stderr, "taskdeck: the session is deleted when its cancelled runs have "
		    "ended; no new run is admitted into it\n");
	} else {
		char runs[32];

		snprintf(runs, sizeof runs, "%ld", d->runs);
		out_kv("deleted", d->id);
		out_kv("runs", runs);
		for (size_t i = 0; d->removed[i] != NULL; i++)
			out_kv("removed", d->removed[i]);
		for (size_t i = 0; d->kept[i] != NULL; i++)
			out_kv("kept", d->kept[i]);
	}
}

static int
cmd_sessions_delete_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	bool force = cli_has(cli, "force"), confirm = !cli_has(cli, "yes");
	struct td_session_deleted *d;
	struct td_session *s;
	struct td_error err;
	enum td_code code;
	int rc;

	(void)argc;
	if (confirm && !isatty(STDIN_FILENO))
		return cli_usage_error(cli, "delete removes the session for good: confirm with "
		    "--yes (stdin is not a terminal)");
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (confirm) {
		if (td_get_session(cli->client, argv[0], &opts, &s, &err) != TD_OK)
			return cli_fail(&err);
		if (!sessions_delete_confirm(cli, s, force)) {
			fprintf(stderr, "taskdeck: nothing was deleted\n");
			td_session_free(s);
			return CLI_EXIT_SERVICE;
		}
		td_session_free(s);
	}
	code = td_delete_session(cli->client, argv[0], force, &opts, &d, &err);
	if (code != TD_OK) {
		rc = cli_fail(&err);
		if (code == TD_SESSION_BUSY)
			fprintf(stderr, "taskdeck: `taskdeck sessions delete %s --force` cancels its "
			    "runs first\n", argv[0]);
		return rc;
	}
	sessions_delete_print(cli, d);
	td_session_deleted_free(d);
	return CLI_EXIT_OK;
}
