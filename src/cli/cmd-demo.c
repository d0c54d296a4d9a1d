/* taskdeck demo: the demo project and its four runs, for the dashboard */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "ids.h"
#include "xalloc.h"

#define DEMO_PROJECT "demo"
#define DEMO_TRIES 3
#define DEMO_RETRY_MS 500

static int cmd_demo_exec(struct cli *, int, char **);

static const struct cli_option demo_options[] = {
	{ "again", false },
	{ NULL, false }
};

const struct cli_cmd cmd_demo_entry = {
	"demo", NULL, "[--again]",
	"On a running service, create (or reuse) the project \"demo\", whose session\n"
	"defaults use the replay provider, and start four runs, each in a session of\n"
	"its own: one streaming output for about 10 minutes (demo-stream), one\n"
	"waiting for plan approval (plan), one that finishes with artifacts\n"
	"(research) and one that fails (fail).  Prints the project and run ids.\n"
	"When the demo project already has runs nothing is started; --again starts\n"
	"another set of four.",
	demo_options, 0, 0, cmd_demo_exec
};

/* One demo run: the replay transcript, its prompt and what it shows. */
struct demo_run {
	const char *model;
	const char *turn_intent;
	const char *prompt;
	const char *shows;
};

/* Started in this order: the live one last, so that it is the newest session,
 * the one the dashboard opens on. */
static const struct demo_run demo_runs[] = {
	{ "fail", NULL, "A task that fails",
	  "fails" },
	{ "research", NULL, "Research SQLite WAL mode",
	  "finishes with report.md" },
	{ "plan", "plan-first", "Plan, then write a report",
	  "waits for plan approval" },
	{ "demo-stream", NULL, "Stream a status report",
	  "streams output for about 10 minutes" },
};
#define DEMO_RUN_COUNT (sizeof demo_runs / sizeof demo_runs[0])

/* True for the failures that a second try of the same request may get past. */
static bool
demo_transient(const struct td_error *err)
{
	return err->code == TD_CONNECTION_FAILED || err->code == TD_TIMEOUT ||
	    err->code == TD_UNAVAILABLE || err->code == TD_IDEMPOTENCY_UNAVAILABLE;
}

/* The wait before a retry. */
static void
demo_pause(void)
{
	struct timespec ts = { 0, DEMO_RETRY_MS * 1000000L };

	nanosleep(&ts, NULL);
}

/* The first project named "demo" (all pages are looked at), or *out NULL when none. */
static enum td_code
demo_find_project(struct cli *cli, struct td_project **out, struct td_error *err)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_project_list *page;
	char *next = NULL;
	enum td_code rc;

	*out = NULL;
	do {
		rc = td_list_projects(cli->client, 0, next, &opts, &page, err);
		free(next);
		next = NULL;
		if (rc != TD_OK)
			return rc;
		for (size_t i = 0; i < page->count && *out == NULL && rc == TD_OK; i++) {
			struct td_project *p = &page->items[i];

			if (strcmp(p->name, DEMO_PROJECT) == 0)
				rc = td_get_project(cli->client, p->id, &opts, out, err);
		}
		if (*out == NULL && rc == TD_OK) {
			next = page->next_cursor;
			page->next_cursor = NULL;
		}
		td_project_list_free(page);
	} while (next != NULL && rc == TD_OK);
	return rc;
}

/* Creates the demo project; retried with the same idempotency key. */
static enum td_code
demo_create_project(struct cli *cli, const char *nonce, struct td_project **out,
    struct td_error *err)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_new_project np = {
		.name = DEMO_PROJECT,
		.description = "Made by `taskdeck demo`: replayed runs to try the dashboard on.",
	};
	char *key = xasprintf("demo-%s-project", nonce);
	enum td_code rc;

	opts.idempotency_key = key;
	for (int i = 0; i < DEMO_TRIES; i++) {
		if (i > 0)
			demo_pause();
		rc = td_create_project(cli->client, &np, &opts, out, err);
		if (rc == TD_OK || !demo_transient(err))
			break;
	}
	free(key);
	return rc;
}

/* Makes the project's session defaults use the replay provider. */
static enum td_code
demo_set_defaults(struct cli *cli, const char *project_id, struct td_error *err)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_session_defaults *d, *after;
	enum td_code rc;

	if ((rc = td_get_session_defaults(cli->client, project_id, &opts, &d, err)) != TD_OK)
		return rc;
	if (d->provider == NULL || strcmp(d->provider, "replay") != 0) {
		rc = td_update_session_defaults(cli->client, project_id, d->updated_at,
		    "{\"provider\":\"replay\"}", &opts, &after, err);
		td_session_defaults_free(after);
	}
	td_session_defaults_free(d);
	return rc;
}

/* True (in *has) when the project has at least one run. */
static enum td_code
demo_has_runs(struct cli *cli, const char *project_id, bool *has, struct td_error *err)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_run_filter filter = { .project_id = project_id };
	struct td_run_list *page;
	enum td_code rc;

	if ((rc = td_list_runs(cli->client, &filter, 1, NULL, &opts, &page, err)) != TD_OK)
		return rc;
	*has = page->count > 0;
	td_run_list_free(page);
	return TD_OK;
}

/* Starts one demo run in a new session; retried with the same idempotency key. */
static enum td_code
demo_start(struct cli *cli, const char *project_id, const char *nonce,
    const struct demo_run *dr, struct td_run **out, struct td_error *err)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_run_request rq = {
		.project = project_id,
		.prompt = dr->prompt,
		.turn_intent = dr->turn_intent,
		.provider = "replay",
		.model = dr->model,
	};
	char *key = xasprintf("demo-%s-%s", nonce, dr->model);
	enum td_code rc;

	opts.idempotency_key = key;
	for (int i = 0; i < DEMO_TRIES; i++) {
		if (i > 0)
			demo_pause();
		rc = td_start_run(cli->client, &rq, &opts, out, err);
		if (rc == TD_OK || !demo_transient(err))
			break;
	}
	free(key);
	return rc;
}

/* Prints the project and the runs started (NULL entries were not started). */
static void
demo_print(const struct cli *cli, const struct td_project *p, struct td_run *const *runs)
{
	struct buf json;

	if (!cli->json) {
		printf("project  %s  %s\n", p->id, p->name);
		for (size_t i = 0; i < DEMO_RUN_COUNT; i++) {
			if (runs[i] != NULL)
				printf("run      %s  %-11s  %s\n", runs[i]->id,
				    demo_runs[i].model, demo_runs[i].shows);
		}
		return;
	}
	buf_init(&json, 0);
	buf_printf(&json, "{\"project\":%s,\"runs\":[", p->json);
	for (size_t i = 0, n = 0; i < DEMO_RUN_COUNT; i++) {
		if (runs[i] != NULL)
			buf_printf(&json, "%s%s", n++ > 0 ? "," : "", runs[i]->json);
	}
	buf_appends(&json, "]}");
	out_json(json.data);
	buf_free(&json);
}

/* taskdeck demo [--again] */
/*
 * How the user can run this program again: "taskdeck" when the one on PATH is
 * this one, else its full path (a build tree's, which is not on PATH).
 */
static void
demo_self_command(char *out, size_t size)
{
	char exe[PATH_MAX], real[PATH_MAX], cand[PATH_MAX + 16];
	const char *path = getenv("PATH");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash, *libs;

	snprintf(out, size, "taskdeck");
	if (n <= 0)
		return;
	exe[n] = '\0';
	/* A libtool build runs <dir>/.libs/taskdeck (or lt-taskdeck) for <dir>/taskdeck. */
	if ((libs = strstr(exe, "/.libs/")) != NULL && strchr(libs + 7, '/') == NULL) {
		memcpy(libs, "/taskdeck", sizeof "/taskdeck");
	}
	for (const char *p = path; p != NULL && *p != '\0';) {
		const char *end = strchr(p, ':');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		if (len > 0 && len < PATH_MAX) {
			snprintf(cand, sizeof cand, "%.*s/taskdeck", (int)len, p);
			if (access(cand, X_OK) == 0) {
				/* The first taskdeck on PATH is what the user would run. */
				if (realpath(cand, real) != NULL && (slash = realpath(exe, cand)) != NULL &&
				    strcmp(real, cand) == 0)
					return;
				break;
			}
		}
		p = end != NULL ? end + 1 : NULL;
	}
	snprintf(out, size, "%s", exe);
}

/* Appends s to out (of size, used *n) quoted for sh when it needs it. */
static void
demo_sh_quote(char *out, size_t size, size_t *n, const char *s)
{
	bool plain = s[0] != '\0' &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/.,:@%+=-") ==
	    strlen(s);

	if (plain) {
		*n += (size_t)snprintf(out + *n, *n < size ? size - *n : 0, "%s", s);
		return;
	}
	*n += (size_t)snprintf(out + *n, *n < size ? size - *n : 0, "'");
	for (const char *p = s; *p != '\0'; p++)
		*n += (size_t)snprintf(out + *n, *n < size ? size - *n : 0, *p == '\'' ? "'\\''" : "%c",
		    *p);
	*n += (size_t)snprintf(out + *n, *n < size ? size - *n : 0, "'");
}

/*
 * The command that opens the dashboard on this service from the user's
 * shell: the program, and before it the TASKDECK_HOME and TASKDECK_URL this
 * command found the service with (absolute, quoted), since a shell without
 * them finds another service or none.
 */
static void
demo_open_command(char *out, size_t size)
{
	static const char *const vars[] = { "TASKDECK_HOME", "TASKDECK_URL" };
	char self[PATH_MAX], abs[PATH_MAX];
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);

		if (v == NULL || v[0] == '\0')
			continue;
		if (i == 0 && realpath(v, abs) != NULL)
			v = abs;
		n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s=", vars[i]);
		demo_sh_quote(out, size, &n, v);
		n += (size_t)snprintf(out + n, n < size ? size - n : 0, " ");
	}
	demo_self_command(self, sizeof self);
	demo_sh_quote(out, size, &n, self);
}

static int
cmd_demo_exec(struct cli *cli, int argc, char **argv)
{
	struct td_run *runs[DEMO_RUN_COUNT] = { NULL };
	struct td_project *project = NULL;
	struct td_error err;
	char nonce[17];
	bool has_runs = false;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	random_hex(nonce, 8);
	if (demo_find_project(cli, &project, &err) != TD_OK)
		return cli_fail(&err);
	if (project == NULL && demo_create_project(cli, nonce, &project, &err) != TD_OK)
		return cli_fail(&err);
	if (demo_set_defaults(cli, project->id, &err) != TD_OK ||
	    demo_has_runs(cli, project->id, &has_runs, &err) != TD_OK) {
		td_project_free(project);
		return cli_fail(&err);
	}
	if (has_runs && !cli_has(cli, "again")) {
		if (cli->json)
			demo_print(cli, project, runs);
		else
			printf("project  %s  %s\n", project->id, project->name);
		fprintf(stderr, "taskdeck: the demo project already has runs; nothing started "
		    "(--again starts another set)\n");
		td_project_free(project);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < DEMO_RUN_COUNT && rc == CLI_EXIT_OK; i++) {
		if (demo_start(cli, project->id, nonce, &demo_runs[i], &runs[i], &err) != TD_OK)
			rc = cli_fail(&err);
	}
	demo_print(cli, project, runs);
	if (rc == CLI_EXIT_OK && !cli->json) {
		char command[3 * PATH_MAX];

		demo_open_command(command, sizeof command);
		printf("\nOpen the dashboard from your shell to watch them:\n\n  %s\n", command);
		if (getenv("TASKDECK_TOKEN") != NULL && getenv("TASKDECK_TOKEN")[0] != '\0')
			printf("\n(with the same TASKDECK_TOKEN exported)\n");
	}
	for (size_t i = 0; i < DEMO_RUN_COUNT; i++)
		td_run_free(runs[i]);
	td_project_free(project);
	return rc;
}
