/* taskdeck run --attempts N, runs apply, runs discard (docs/cli.md, Attempts). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "xalloc.h"

#define ATTEMPTS_CLI_MAX 8
#define ATTEMPTS_POLL_MS 300

static const struct cli_option apply_options[] = {
	{ "yes", false },
	{ "keep", false },
	{ NULL, false }
};

/* Whether every run of g ended and every check is done. */
static bool
attempts_settled(const struct td_attempt_group *g)
{
	for (size_t i = 0; i < g->count; i++) {
		const struct td_attempt *a = &g->attempts[i];

		if (a->check_status == NULL || strcmp(a->check_status, "running") == 0)
			return false;
	}
	return true;
}

/* One line per attempt: index, run, status, model, files +/-, check, worktree. */
static void
attempts_print(const struct td_attempt_group *g)
{
	out_kv("group", g->id);
	out_kv("status", g->status);
	printf("%-3s %-28s %-10s %-16s %-14s %-8s %s\n", "#", "RUN", "STATUS", "MODEL",
	    "FILES +/-", "CHECK", "CWD");
	for (size_t i = 0; i < g->count; i++) {
		const struct td_attempt *a = &g->attempts[i];
		char files[48] = "-";

		if (a->measured)
			snprintf(files, sizeof files, "%ld +%ld -%ld", a->files, a->additions,
			    a->deletions);
		printf("%-3d %-28s %-10s %-16s %-14s %-8s %s\n", a->index, a->run_id,
		    a->run_status, a->model ? a->model : "-", files,
		    a->check_status ? a->check_status : "-",
		    strcmp(a->state, "removed") == 0 ? "(removed)" : a->cwd);
	}
}

/* Splits --model M1,M2 into models; how many (at most max). */
static size_t
attempts_models(char *list, const char **models, size_t max)
{
	size_t n = 0;

	for (char *save = NULL, *m = strtok_r(list, ",", &save); m != NULL && n < max;
	    m = strtok_r(NULL, ",", &save)) {
		if (*m != '\0')
			models[n++] = m;
	}
	return n;
}

int
cli_attempts_run(struct cli *cli, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *count_text = cli_get(cli, "attempts"), *models[ATTEMPTS_CLI_MAX];
	char *model_list = xstrdup_or_null(cli_get(cli, "model")), *end = NULL, *cwd;
	struct td_attempts_request rq = {
		.project = cli_get(cli, "project"),
		.prompt = argv[0],
		.check = cli_get(cli, "check"),
		.provider = cli_get(cli, "provider"),
		.framework = cli_get(cli, "framework"),
		.effort = cli_get(cli, "effort"),
		.permission_profile = cli_get(cli, "permission"),
		.network = cli_has(cli, "network") ? 1 : cli_has(cli, "no-network") ? -1 : 0,
	};
	struct td_attempt_group *g = NULL;
	struct td_error err;
	long n = strtol(count_text, &end, 10);
	int rc;

	if (end == count_text || *end != '\0' || n < 1 || n > ATTEMPTS_CLI_MAX) {
		free(model_list);
		return cli_usage_error(cli, "--attempts takes a number from 1 to %d",
		    ATTEMPTS_CLI_MAX);
	}
	if (rq.project == NULL || cli_get(cli, "session") != NULL || cli_has(cli, "follow") ||
	    cli_has(cli, "plan-first")) {
		free(model_list);
		return cli_usage_error(cli, "--attempts needs --project and goes with neither "
		    "--session, --follow nor --plan-first");
	}
	rq.count = (int)n;
	if (model_list != NULL)
		rq.model_count = attempts_models(model_list, models, ATTEMPTS_CLI_MAX);
	rq.models = models;
	cwd = cli_get(cli, "cwd") != NULL ? realpath(cli_get(cli, "cwd"), NULL) : getcwd(NULL, 0);
	if (cwd == NULL) {
		fprintf(stderr, "taskdeck: cannot resolve the directory: %s\n", strerror(errno));
		free(model_list);
		return CLI_EXIT_USAGE;
	}
	rq.cwd = cwd;
	opts.idempotency_key = cli_get(cli, "idempotency-key");
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		goto done;
	if (td_create_attempts(cli->client, &rq, &opts, &g, &err) != TD_OK) {
		rc = cli_fail(&err);
		goto done;
	}
	while (cli_has(cli, "wait") && !attempts_settled(g)) {
		struct td_attempt_group *next;
		struct timespec tick = { 0, ATTEMPTS_POLL_MS * 1000L * 1000L };

		nanosleep(&tick, NULL);
		if (td_get_attempts(cli->client, g->id, &opts, &next, &err) != TD_OK) {
			rc = cli_fail(&err);
			goto done;
		}
		td_attempt_group_free(g);
		g = next;
	}
	if (cli->json)
		out_json(g->json);
	else
		attempts_print(g);
done:
	td_attempt_group_free(g);
	free(model_list);
	free(cwd);
	return rc;
}

/* taskdeck runs apply RUN [--yes] [--keep] */
static int
cmd_runs_apply_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_attempt_group *g = NULL;
	struct td_error err;
	int rc;

	(void)argc;
	if (!cli_has(cli, "yes") && !isatty(STDIN_FILENO))
		return cli_usage_error(cli, "apply changes your files: confirm with --yes "
		    "(stdin is not a terminal)");
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (!cli_has(cli, "yes")) {
		fprintf(stderr, "Apply the changes of run %s to the attempts' directory%s? ",
		    argv[0], cli_has(cli, "keep") ? "" : " and remove the group's worktrees");
		if (!cli_confirmed()) {
			fprintf(stderr, "taskdeck: nothing was applied\n");
			return CLI_EXIT_SERVICE;
		}
	}
	if (td_apply_attempt(cli->client, argv[0], cli_has(cli, "keep"), &opts, &g,
	    &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json) {
		out_json(g->json);
	} else {
		out_kv("applied", argv[0]);
		out_kv("into", g->cwd);
		out_kv("group", g->id);
	}
	td_attempt_group_free(g);
	return CLI_EXIT_OK;
}

/* taskdeck runs discard RUN */
static int
cmd_runs_discard_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_attempt_group *g = NULL;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_discard_attempt(cli->client, argv[0], &opts, &g, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json) {
		out_json(g->json);
	} else {
		out_kv("discarded", argv[0]);
		out_kv("group", g->id);
	}
	td_attempt_group_free(g);
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_runs_apply_entry = {
	"runs", "apply", "RUN [--yes] [--keep]",
	"Put the changes of an attempt (run --attempts) into the directory the\n"
	"attempts started from, all or nothing: your uncommitted work is kept, and\n"
	"when a change does not apply nothing changes (attempt_conflict, exit 5).\n"
	"Then the group's worktrees and branches are removed (--keep keeps them).\n"
	"On a terminal it asks [y/N]; --yes does not ask.",
	apply_options, 1, 1, cmd_runs_apply_exec
};

const struct cli_cmd cmd_runs_discard_entry = {
	"runs", "discard", "RUN",
	"Remove the worktree and branch of an attempt (run --attempts).",
	cli_no_options, 1, 1, cmd_runs_discard_exec
};
