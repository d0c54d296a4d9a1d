/* taskdeck runtimes, taskdeck install-cli, and setup --status / --repair. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_runtimes_exec(struct cli *, int, char **);
static int cmd_install_cli_exec(struct cli *, int, char **);

const struct cli_cmd cmd_runtimes_entry = {
	"runtimes", NULL, "",
	"The agent frameworks and their runtimes: taskdeck (managed), claude-code and codex\n"
	"(external CLIs), acp (the configured ACP agent): status, version, where each was found.",
	cli_no_options, 0, 0, cmd_runtimes_exec
};

const struct cli_cmd cmd_install_cli_entry = {
	"install-cli", NULL, "",
	"Install the taskdeck launcher into $XDG_BIN_HOME or ~/.local/bin (of the service).\n"
	"Never overwrites a file it did not write; says whether the directory is on PATH.",
	cli_no_options, 0, 0, cmd_install_cli_exec
};

static int
cmd_runtimes_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "FRAMEWORK", "STATUS", "VERSION", "SOURCE",
		"PATH", "FOUND" };
	struct td_request_options opts = cli_request_options(cli);
	struct td_runtime_list *l;
	struct out_table table;
	struct td_error err;
	int rc;

	(void)argc;
	(void)argv;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_list_runtimes(cli->client, &opts, &l, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json) {
		out_json(l->json);
	} else {
		out_table_init(&table, 6, header);
		for (size_t i = 0; i < l->count; i++) {
			const struct td_runtime *r = &l->items[i];
			const char *row[] = { r->framework, r->status, r->version, r->source,
				r->path, r->found_by };
			out_table_add(&table, row);
		}
		out_table_print(&table);
		out_table_free(&table);
		for (size_t i = 0; i < l->count; i++)
			if (strcmp(l->items[i].status, "ready") != 0 || !l->items[i].data_complete)
				printf("%s: %s\n", l->items[i].framework, l->items[i].message);
	}
	td_runtime_list_free(l);
	return CLI_EXIT_OK;
}

/* Prints a setup result; the exit code (1 when it did not succeed). */
static int
print_result(struct cli *cli, const struct td_setup_result *r, const char *done)
{
	if (cli->json) {
		out_json(r->json);
	} else if (r->ok) {
		printf("%s\n", done);
	} else {
		fprintf(stderr, "taskdeck: %s: %s\n", r->error_code, r->error_message);
	}
	if (!cli->json)
		for (size_t i = 0; i < r->next_action_count; i++)
			out_kv("next", r->next_actions[i]);
	return r->ok ? CLI_EXIT_OK : CLI_EXIT_SERVICE;
}

/*
 * After a client timeout on a setup step: the service may still have done it.
 * Says so and reads the setup state again.
 */
static int
after_timeout(struct cli *cli, const struct td_error *first)
{
	/* The re-read gets the default deadline, not the one that just ran out. */
	struct td_request_options opts = { .timeout_ms = TD_DEFAULT_TIMEOUT_MS };
	struct td_setup_result *st;
	struct td_error err;

	fprintf(stderr, "taskdeck: %s: %s\n"
	    "taskdeck: a timeout does not prove that the step was cancelled: the service may "
	    "have finished it.  Reading the setup state again:\n", first->code_name,
	    first->message);
	if (td_bootstrap(cli->client, "status", &opts, &st, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json)
		out_json(st->json);
	else
		out_kv("setup ok", st->ok ? "yes" : "no");
	for (size_t i = 0; !cli->json && i < st->next_action_count; i++)
		out_kv("next", st->next_actions[i]);
	td_setup_result_free(st);
	return CLI_EXIT_SERVICE;
}

static int
cmd_install_cli_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_setup_result *r;
	struct td_error err;
	char done[4200];
	int rc;

	(void)argc;
	(void)argv;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_install_cli(cli->client, &opts, &r, &err) != TD_OK)
		return err.code == TD_TIMEOUT ? after_timeout(cli, &err) : cli_fail(&err);
	snprintf(done, sizeof done, "%s %s%s", r->changed ? "Installed" : "Already installed:",
	    r->path ? r->path : "?", r->on_path ? "" : " (its directory is not on PATH)");
	rc = print_result(cli, r, done);
	td_setup_result_free(r);
	return rc;
}

/* taskdeck setup --status: the first-run state; exit 1 when something needs doing. */
int
cli_setup_status(struct cli *cli)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_setup_result *r;
	struct td_error err;
	cJSON *doc, *step;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_bootstrap(cli->client, "status", &opts, &r, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json) {
		out_json(r->json);
	} else {
		doc = cli_json_object(r->json);
		out_kv("ready", r->ok ? "yes" : "no");
		cJSON_ArrayForEach(step, cJSON_GetObjectItem(doc, "steps")) {
			const cJSON *msg = cJSON_GetObjectItem(step, "message");
			char line[1024];
			snprintf(line, sizeof line, "%s  %s",
			    cJSON_IsTrue(cJSON_GetObjectItem(step, "ok")) ? "ok  " : "TODO",
			    cJSON_IsString(msg) ? msg->valuestring : "");
			out_kv(step->string, line);
		}
		cJSON_Delete(doc);
		for (size_t i = 0; i < r->next_action_count; i++)
			out_kv("next", r->next_actions[i]);
	}
	rc = r->ok ? CLI_EXIT_OK : CLI_EXIT_SERVICE;
	td_setup_result_free(r);
	return rc;
}

/* taskdeck setup --repair: bootstrap runtime. */
int
cli_setup_repair(struct cli *cli)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_setup_result *r;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_bootstrap(cli->client, "runtime", &opts, &r, &err) != TD_OK)
		return err.code == TD_TIMEOUT ? after_timeout(cli, &err) : cli_fail(&err);
	rc = print_result(cli, r, r->changed ? "The managed runtime was repaired." :
	    "The managed runtime is in order; nothing to do.");
	td_setup_result_free(r);
	return rc;
}
