/* taskdeck events, and the live part of taskdeck run --follow */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "termtext.h"
#include "timeutil.h"
#include "xalloc.h"

/* Longest data summary on a readable line, in bytes. */
#define EVENTS_SUMMARY_MAX 160
/* Reconnect delays: from the first to the cap, doubling. */
#define EVENTS_BACKOFF_FIRST_MS 500
#define EVENTS_BACKOFF_MAX_MS 10000

static int cmd_events_exec(struct cli *, int, char **);

static const struct cli_option events_options[] = {
	{ "project", true },
	{ "session", true },
	{ "run", true },
	{ NULL, false }
};

const struct cli_cmd cmd_events_entry = {
	"events", NULL, "[--project P] [--session S] [--run R]",
	"Print events as they happen until Ctrl-C: time, type, ids and a short\n"
	"summary (with --json, one event object per line).  A lost connection is\n"
	"resumed where it stopped.",
	events_options, 0, 0, cmd_events_exec
};

/* Written by the SIGINT handler; polled with the stream. */
static int events_sigpipe[2] = { -1, -1 };

static void
events_on_sigint(int sig)
{
	int saved_errno = errno;
	ssize_t n = write(events_sigpipe[1], "x", 1);

	(void)sig;
	(void)n;
	errno = saved_errno;
}

/* Routes SIGINT to the pipe; false when no pipe could be made. */
static bool
events_catch_sigint(struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = events_on_sigint };

	if (pipe2(events_sigpipe, O_CLOEXEC | O_NONBLOCK) != 0)
		return false;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, old);
	return true;
}

static void
events_release_sigint(const struct sigaction *old)
{
	sigaction(SIGINT, old, NULL);
	close(events_sigpipe[0]);
	close(events_sigpipe[1]);
	events_sigpipe[0] = events_sigpipe[1] = -1;
}

/*
 * Waits up to timeout_ms (< 0: no limit) for the stream's fd or Ctrl-C;
 * false on Ctrl-C.
 */
static bool
events_poll(const struct td_events *ev, long timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = events_sigpipe[0], .events = POLLIN },
		{ .fd = ev != NULL ? td_events_fd(ev) : -1, .events = POLLIN },
	};

	if (poll(pfd, 2, timeout_ms < 0 ? -1 : (int)timeout_ms) < 0 && errno != EINTR)
		return true;
	return (pfd[0].revents & POLLIN) == 0;
}

/* Appends s made safe for a terminal (termtext), newlines kept when keep_newlines. */
static void
events_clean(struct buf *b, const char *s, bool keep_newlines)
{
	const struct termtext_style style = { keep_newlines ? "\n" : " ", "\t" };

	termtext_append(b, s, &style);
}

/* Members of data named by a space-separated list, joined by sep. */
static void
events_fields(struct buf *b, const cJSON *data, const char *const *keys)
{
	bool first = true;

	for (; *keys != NULL; keys++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, *keys);
		char *text;

		if (v == NULL || cJSON_IsNull(v))
			continue;
		if (!first)
			buf_appends(b, " ");
		first = false;
		if (cJSON_IsString(v))
			events_clean(b, v->valuestring, false);
		else {
			text = json_print(v);
			events_clean(b, text, false);
			free(text);
		}
	}
}

/* What a readable line shows of each type's data; others show the JSON. */
static const struct events_summary {
	const char *type;
	const char *keys[5];
} events_summaries[] = {
	{ "run.output", { "delta" } },
	{ "run.queued", { "status" } },
	{ "run.started", { "status" } },
	{ "run.progress", { "phase", "message" } },
	{ "run.tool", { "name", "status", "summary", "subagent" } },
	{ "run.review", { "verdict", "summary" } },
	{ "run.permission", { "tool", "status", "summary" } },
	{ "run.finished", { "status", "error" } },
	{ "run.history-gap", { "reason" } },	/* after a crash (docs/events.md) */
	{ "stream.resync-required", { "reason" } },
	{ "session.updated", { "id", "title" } },
	{ "project.updated", { "id", "name" } },
	{ "artifact.saved", { "id", "name", "path" } },
};

/* run.attention in words: what the run waits for and what answers it, or that it waits no more. */
static void
events_attention(struct buf *b, const cJSON *data, const char *run_id)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(data, "attention");
	const char *kind = json_get_string(a, "kind");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "planVersion");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(a, "planRevision");

	if (kind == NULL)
		buf_appends(b, "nothing waits for you any more");
	else if (strcmp(kind, "plan-approval") == 0 && cJSON_IsNumber(v) && cJSON_IsNumber(r))
		buf_printf(b, "plan v%.0f r%.0f waits for approval (taskdeck plan approve|revise|"
		    "reject %s)", v->valuedouble, r->valuedouble, run_id != NULL ? run_id : "RUN");
	else
		events_clean(b, kind, false);
}

/* A short, one-line summary of an event's data into b. */
static void
events_summary(struct buf *b, const struct td_event *e)
{
	cJSON *data = json_parse(e->data_json, strlen(e->data_json));
	size_t start = b->len;

	if (strcmp(e->type, "run.attention") == 0) {
		events_attention(b, data, e->run_id);
		goto cut;
	}
	for (size_t i = 0; i < sizeof events_summaries / sizeof events_summaries[0]; i++) {
		if (strcmp(e->type, events_summaries[i].type) == 0) {
			events_fields(b, data, events_summaries[i].keys);
			goto cut;
		}
	}
	events_clean(b, e->data_json, false);
cut:
	if (b->len - start > EVENTS_SUMMARY_MAX) {
		size_t n = start + EVENTS_SUMMARY_MAX;

		/* Do not cut a UTF-8 sequence. */
		while (n > start && ((unsigned char)b->data[n] & 0xc0) == 0x80)
			n--;
		b->len = n;
		b->data[n] = '\0';
		buf_appends(b, "...");
	}
	cJSON_Delete(data);
}

/* One readable line: time, type, the most specific id, the summary. */
static void
events_print_line(const struct td_event *e)
{
	const char *t = e->time != NULL ? strchr(e->time, 'T') : NULL;
	const char *id = e->run_id != NULL ? e->run_id : e->session_id != NULL ?
	    e->session_id : e->project_id;
	struct buf b;

	buf_init(&b, 0);
	buf_printf(&b, "%.12s  %-16s %s  ", t != NULL ? t + 1 : "-", e->type,
	    id != NULL ? id : "-");
	events_summary(&b, e);
	puts(b.data);
	buf_free(&b);
}

/* Prints one event of `taskdeck events`. */
static void
events_print(const struct cli *cli, const struct td_event *e)
{
	if (cli->json)
		out_json(e->json);
	else if (strcmp(e->type, "stream.resync-required") == 0) {
		struct buf b;

		buf_init(&b, 0);
		events_summary(&b, e);
		printf("-- resync required (%s): events were missed; re-read what "
		    "you need with `taskdeck runs show` / `sessions list`\n", b.data);
		buf_free(&b);
	} else
		events_print_line(e);
	fflush(stdout);
}

/* Failures after which reconnecting cannot help. */
static bool
events_permanent(enum td_code code)
{
	static const enum td_code permanent[] = {
		TD_UNAUTHORIZED, TD_FORBIDDEN, TD_INVALID_REQUEST, TD_NOT_FOUND,
		TD_METHOD_NOT_ALLOWED, TD_INVALID_ARGUMENT,
	};

	for (size_t i = 0; i < sizeof permanent / sizeof permanent[0]; i++) {
		if (code == permanent[i])
			return true;
	}
	return false;
}

/* Waits for stream.hello while watching Ctrl-C; TD_CANCELLED on Ctrl-C. */
static enum td_code
events_await_ready(struct td_events *ev, long timeout_ms, struct td_error *err)
{
	enum td_code rc;

	for (long waited = 0; ; waited += 100) {
		rc = td_events_ready(ev, 100, err);
		if (rc != TD_TIMEOUT || (timeout_ms >= 0 && waited >= timeout_ms))
			return rc;
		if (!events_poll(NULL, 0))
			return TD_CANCELLED;
	}
}

/*
 * Replaces a broken stream by a resumed one, after a growing delay; the
 * service is found again each time (a restarted one may have a new port).
 * False on Ctrl-C or a failure that reconnecting cannot mend (printed).
 */
static bool
events_reconnect(struct cli *cli, struct td_events **ev, const struct td_error *why,
    int *rc)
{
	struct td_connect_options opts = { .request_timeout_ms = cli->timeout_ms };
	long delay = EVENTS_BACKOFF_FIRST_MS;
	struct td_events *fresh;
	struct td_client *client;
	struct td_error err = *why;

	for (;;) {
		if (events_permanent(err.code)) {
			*rc = cli_fail(&err);
			return false;
		}
		fprintf(stderr, "taskdeck: event stream lost (%s: %s); reconnecting "
		    "in %.1f s\n", err.code_name, err.message, delay / 1000.0);
		if (!events_poll(NULL, delay))
			return false;
		delay = delay * 2 > EVENTS_BACKOFF_MAX_MS ? EVENTS_BACKOFF_MAX_MS :
		    delay * 2;
		if (td_connect(&client, &opts, &err) != TD_OK)
			continue;
		if (td_events_reopen(client, *ev, &fresh, &err) != TD_OK) {
			td_client_free(client);
			continue;
		}
		switch (events_await_ready(fresh, -1, &err)) {
		case TD_OK:
			td_events_close(*ev);
			td_client_free(cli->client);
			cli->client = client;
			*ev = fresh;
			fprintf(stderr, "taskdeck: reconnected; resuming the event stream\n");
			return true;
		case TD_CANCELLED:
			td_events_close(fresh);
			td_client_free(client);
			return false;
		default:
			td_events_close(fresh);
			td_client_free(client);
			break;
		}
	}
}

/* taskdeck events [--project P] [--session S] [--run R] */
static int
cmd_events_exec(struct cli *cli, int argc, char **argv)
{
	struct td_event_filter filter = {
		.project_id = cli_get(cli, "project"),
		.session_id = cli_get(cli, "session"),
		.run_id = cli_get(cli, "run"),
	};
	struct sigaction old;
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	enum td_code code;
	int rc;

	(void)argc;
	(void)argv;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (!events_catch_sigint(&old)) {
		fprintf(stderr, "taskdeck: cannot make a pipe: %s\n", strerror(errno));
		return CLI_EXIT_SERVICE;
	}
	if (td_events_open(cli->client, &filter, NULL, &ev, &err) != TD_OK) {
		events_release_sigint(&old);
		return cli_fail(&err);
	}
	code = events_await_ready(ev, -1, &err);
	if (code != TD_OK && code != TD_CANCELLED)
		rc = cli_fail(&err);
	while (code == TD_OK) {
		if (!events_poll(ev, -1))
			break;
		code = td_events_next(ev, 0, &e, &err);
		if (code == TD_OK) {
			if (strcmp(e->type, "stream.resync-required") == 0 && !cli->json)
				fprintf(stderr, "taskdeck: the stream asks for a resync\n");
			events_print(cli, e);
			td_event_free(e);
		} else if (code == TD_TIMEOUT)
			code = TD_OK;
		else if (events_reconnect(cli, &ev, &err, &rc))
			code = TD_OK;
	}
	td_events_close(ev);
	events_release_sigint(&old);
	return rc;
}

struct td_events *
cli_events_for_run(struct cli *cli, const char *project_id, const char *session_id)
{
	struct td_event_filter filter = {
		.project_id = project_id,
		.session_id = session_id,
	};
	struct td_events *ev;
	struct td_error err;
	long wait = cli->timeout_ms > 0 ? cli->timeout_ms : TD_DEFAULT_TIMEOUT_MS;

	if (td_events_open(cli->client, &filter, NULL, &ev, &err) != TD_OK)
		goto fail;
	if (td_events_ready(ev, wait, &err) == TD_OK)
		return ev;
	td_events_close(ev);
fail:
	fprintf(stderr, "taskdeck: no live events (%s: %s); waiting for the end "
	    "of the run instead\n", err.code_name, err.message);
	return NULL;
}

/* runs logs --timestamps: each line begins with its event's time (UTC). */
static bool events_timestamps;

/* True for the events printed as one line on stderr ([tool] ...). */
static bool
events_is_line(const struct td_event *e)
{
	return strcmp(e->type, "run.tool") == 0 || strcmp(e->type, "run.review") == 0 ||
	    strcmp(e->type, "run.progress") == 0 || strcmp(e->type, "run.permission") == 0 ||
	    strcmp(e->type, "run.attention") == 0;
}

/* The delta of a run.output event (malloc'd), or NULL when it has none. */
static char *
events_delta(const struct td_event *e)
{
	cJSON *data;
	const char *delta;
	char *copy = NULL;

	if (strcmp(e->type, "run.output") != 0)
		return NULL;
	data = json_parse(e->data_json, strlen(e->data_json));
	if ((delta = json_get_string(data, "delta")) != NULL && *delta != '\0')
		copy = xstrdup(delta);
	cJSON_Delete(data);
	return copy;
}

/* The "TIME " prefix of a line with --timestamps ("" without). */
static const char *
events_stamp(const struct td_event *e)
{
	static char stamp[TD_TIME_LEN + 1];
	int64_t ms;

	if (!events_timestamps)
		return "";
	if (e->time != NULL && time_parse_utc(e->time, &ms)) {
		time_format_utc(ms, stamp);
		strcat(stamp, " ");
	} else
		snprintf(stamp, sizeof stamp, "%-24s ", "-");
	return stamp;
}

/*
 * Prints an event for people: the output (from byte from of its delta) on
 * stdout, tools, progress and prompts as one line on stderr; with --json the
 * event as it came.
 */
static void
events_print_from(const struct cli *cli, const struct td_event *e, size_t from, bool *at_bol)
{
	char *delta;
	struct buf b;

	if (cli->json) {
		out_json(e->json);
		fflush(stdout);
		return;
	}
	buf_init(&b, 0);
	if ((delta = events_delta(e)) != NULL && from < strlen(delta)) {
		events_clean(&b, delta + from, true);
		if (events_timestamps) {
			/* the time at the start of each line */
			for (const char *p = b.data; *p != '\0'; p++) {
				if (*at_bol)
					fputs(events_stamp(e), stdout);
				putchar(*p);
				*at_bol = *p == '\n';
			}
		} else {
			fputs(b.data, stdout);
			*at_bol = b.data[b.len - 1] == '\n';
		}
		fflush(stdout);
	} else if (events_is_line(e)) {
		bool sub = strcmp(e->type, "run.tool") == 0 && strstr(e->data_json, "\"subagent\"");

		events_summary(&b, e);
		/* a subagent's call, nested under the run_subagent call that started it */
		fprintf(stderr, "%s[%s] %s%s\n", events_stamp(e), e->type + 4,
		    sub ? "  \u21b3 " : "", b.data);
	}
	free(delta);
	buf_free(&b);
}

/* Prints one event of the followed run: output to stdout, the rest to stderr. */
static void
events_follow_print(const struct cli *cli, const struct td_event *e, bool *at_bol)
{
	events_print_from(cli, e, 0, at_bol);
}

/* The id and tool of a run.permission event that asks (status pending); false else. */
static bool
events_pending_prompt(const struct td_event *e, char *id, size_t id_len, char *tool,
    size_t tool_len)
{
	cJSON *data;
	const char *status;
	bool pending;

	if (strcmp(e->type, "run.permission") != 0)
		return false;
	data = json_parse(e->data_json, strlen(e->data_json));
	status = json_get_string(data, "status");
	pending = status != NULL && strcmp(status, "pending") == 0 &&
	    json_get_string(data, "promptId") != NULL;
	if (pending) {
		snprintf(id, id_len, "%s", json_get_string(data, "promptId"));
		snprintf(tool, tool_len, "%s", json_get_string(data, "tool") != NULL ?
		    json_get_string(data, "tool") : "the tool");
	}
	cJSON_Delete(data);
	return pending;
}

/* Under a prompt that asks: its id and the commands that answer it. */
static void
events_prompt_hint(const struct td_event *e)
{
	char id[128], tool[128];

	if (events_pending_prompt(e, id, sizeof id, tool, sizeof tool))
		fprintf(stderr, "taskdeck: the run waits for prompt %s: answer with "
		    "`taskdeck permissions allow %s` or `taskdeck permissions deny %s`\n",
		    id, id, id);
}

/* The exit code for run.finished, and its message on stderr. */
static int
events_follow_end(const struct td_event *e, const char *run_id, bool at_bol)
{
	cJSON *data = json_parse(e->data_json, strlen(e->data_json));
	const char *status = json_get_string(data, "status");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(data, "error");
	int rc;

	if (!at_bol) {
		putchar('\n');
		fflush(stdout);
	}
	rc = status != NULL && strcmp(status, "completed") == 0 ? CLI_EXIT_OK :
	    CLI_EXIT_SERVICE;
	/* The last line says how it ended, whatever the output was. */
	if (rc == CLI_EXIT_OK)
		fprintf(stderr, "taskdeck: run %s completed\n", run_id);
	else {
		fprintf(stderr, "taskdeck: run %s %s", run_id,
		    status != NULL ? status : "ended");
		if (json_get_string(error, "code") != NULL) {
			fprintf(stderr, ": %s: %s", json_get_string(error, "code"),
			    json_get_string(error, "message") != NULL ?
			    json_get_string(error, "message") : "");
		}
		fputc('\n', stderr);
	}
	cJSON_Delete(data);
	return rc;
}

/*
 * What following a run keeps: the last of its events handled (a live event
 * of that stream at or before it was printed already, from the history or
 * live; an event of another stream is of a later service start, since the
 * live stream is always the newest) and the question asked on the terminal.
 */
struct events_follow {
	const char *run_id;
	char stream[64];	/* "" before the first event */
	long long seq;
	bool at_bol;
	bool no_output;		/* runs watch: no run.output */
	char ask_id[128];	/* the prompt asked "[y/N]" about, "" none */
	char ask_tool[128];
};

/* What cli_follow_run starts from (runs logs and watch set it, run -f clears it). */
static struct events_follow events_start = { .at_bol = true };

/* True when e was handled already (same stream, not after the last handled). */
static bool
events_seen(const struct events_follow *f, const struct td_event *e)
{
	return f->stream[0] != '\0' && e->stream_id != NULL &&
	    strcmp(e->stream_id, f->stream) == 0 && e->seq <= f->seq;
}

static void
events_mark(struct events_follow *f, const struct td_event *e)
{
	if (e->stream_id == NULL)
		return;
	snprintf(f->stream, sizeof f->stream, "%s", e->stream_id);
	f->seq = e->seq;
}

/* The question on the terminal, when one can be asked there. */
static bool
events_can_ask(const struct cli *cli)
{
	return !cli->json && isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
}

/*
 * Keeps the question in step with e: a prompt that asks is asked "[y/N]"
 * (one at a time; another one gets the commands that answer it), and the
 * prompt asked about that was answered elsewhere (or expired) takes its
 * question away, so that the next line typed is not taken as an answer.
 */
static void
events_question(struct cli *cli, struct events_follow *f, const struct td_event *e)
{
	char id[128], tool[128];
	cJSON *data;
	const char *pid, *status;

	if (strcmp(e->type, "run.permission") != 0)
		return;
	if (events_pending_prompt(e, id, sizeof id, tool, sizeof tool)) {
		if (!cli->json)
			events_prompt_hint(e);
		if (!events_can_ask(cli) || f->ask_id[0] != '\0')
			return;
		snprintf(f->ask_id, sizeof f->ask_id, "%s", id);
		snprintf(f->ask_tool, sizeof f->ask_tool, "%s", tool);
		fprintf(stderr, "Allow %s (prompt %s)? [y/N] ", tool, id);
		fflush(stderr);
		return;
	}
	data = json_parse(e->data_json, strlen(e->data_json));
	pid = json_get_string(data, "promptId");
	status = json_get_string(data, "status");
	if (f->ask_id[0] != '\0' && pid != NULL && strcmp(pid, f->ask_id) == 0) {
		fprintf(stderr, "\ntaskdeck: prompt %s was answered elsewhere (%s); no answer "
		    "is needed here\n", pid, status != NULL ? status : "answered");
		f->ask_id[0] = '\0';
	}
	cJSON_Delete(data);
}

/* The line typed for the question: y allows, anything else denies. */
static void
events_answer(struct cli *cli, struct events_follow *f)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_permission *p;
	struct td_error err;
	char line[64];
	ssize_t n = read(STDIN_FILENO, line, sizeof line - 1);
	const char *decision;

	if (n <= 0) {
		fprintf(stderr, "\ntaskdeck: no answer; prompt %s stays pending\n", f->ask_id);
		f->ask_id[0] = '\0';
		return;
	}
	line[n] = '\0';
	decision = line[0] == 'y' || line[0] == 'Y' ? "allow" : "deny";
	if (td_answer_permission(cli->client, f->ask_id, decision, &opts, &p, &err) != TD_OK)
		fprintf(stderr, "taskdeck: prompt %s not answered: %s: %s\n", f->ask_id,
		    err.code_name, err.message);
	else {
		fprintf(stderr, "taskdeck: %s %s\n", strcmp(decision, "allow") == 0 ?
		    "allowed" : "denied", f->ask_tool);
		td_permission_free(p);
	}
	f->ask_id[0] = '\0';
}

/*
 * A prompt of the run that waits since before the live events: asked (or
 * its commands shown) as one that arrives live would be.
 */
static void
events_pending_now(struct cli *cli, struct events_follow *f)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_permission_list *list;
	struct td_error err;

	if (td_list_permissions(cli->client, "pending", f->run_id, 1, NULL, &opts, &list,
	    &err) != TD_OK)
		return;
	if (list->count > 0) {
		const struct td_permission *p = &list->items[0];

		if (!cli->json)
			fprintf(stderr, "taskdeck: the run waits for prompt %s: answer with "
			    "`taskdeck permissions allow %s` or `taskdeck permissions deny %s`\n",
			    p->id, p->id, p->id);
		if (events_can_ask(cli)) {
			snprintf(f->ask_id, sizeof f->ask_id, "%s", p->id);
			snprintf(f->ask_tool, sizeof f->ask_tool, "%s", p->tool);
			fprintf(stderr, "Allow %s (prompt %s)? [y/N] ", p->tool, p->id);
			fflush(stderr);
		}
	}
	td_permission_list_free(list);
}

/* Handles one event of the run; true (and *rc) when it ended the run. */
static bool
events_follow_one(struct cli *cli, struct events_follow *f, const struct td_event *e, int *rc)
{
	if (e->run_id == NULL || strcmp(e->run_id, f->run_id) != 0 || events_seen(f, e))
		return false;
	events_mark(f, e);
	if (!f->no_output || strcmp(e->type, "run.output") != 0)
		events_follow_print(cli, e, &f->at_bol);
	events_question(cli, f, e);
	if (strcmp(e->type, "run.finished") != 0)
		return false;
	*rc = events_follow_end(e, f->run_id, cli->json || f->at_bol);
	return true;
}

/*
 * After a resync (the service restarted, or events were lost): the run's
 * events stored after the last one handled, in order across the streams;
 * true (and *rc) when they hold its end.  False with *rc unchanged when the
 * history cannot be read (the live events go on).
 */
static bool
events_catch_up(struct cli *cli, struct events_follow *f, int *rc)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_run_event_list *page;
	struct td_error err;
	char after[96];
	bool more, done = false;

	if (f->stream[0] != '\0')
		snprintf(after, sizeof after, "%s:%lld", f->stream, f->seq);
	else
		after[0] = '\0';
	do {
		if (td_list_run_events(cli->client, f->run_id, after, 500, &opts, &page,
		    &err) != TD_OK) {
			fprintf(stderr, "%staskdeck: cannot read the run's history (%s: %s); "
			    "events may be missing\n", f->at_bol ? "" : "\n", err.code_name,
			    err.message);
			return false;
		}
		for (size_t i = 0; i < page->count && !done; i++)
			done = events_follow_one(cli, f, page->items[i], rc);
		more = !done && page->next_after != NULL;
		if (more)
			snprintf(after, sizeof after, "%s", page->next_after);
		td_run_event_list_free(page);
	} while (more);
	return done;
}

int
cli_follow_run(struct cli *cli, struct td_events *ev, const char *run_id)
{
	struct events_follow f = events_start;
	struct sigaction old;
	struct td_event *e;
	struct td_error err;
	int rc = CLI_FOLLOW_LOST;
	bool done = false;

	events_start = (struct events_follow){ .at_bol = true };
	f.run_id = run_id;
	f.ask_id[0] = '\0';
	if (!events_catch_sigint(&old)) {
		td_events_close(ev);
		return CLI_FOLLOW_LOST;
	}
	/* After the history: what waits for an answer already. */
	if (f.stream[0] != '\0')
		events_pending_now(cli, &f);
	while (!done) {
		struct pollfd pfd[3] = {
			{ .fd = events_sigpipe[0], .events = POLLIN },
			{ .fd = td_events_fd(ev), .events = POLLIN },
			{ .fd = f.ask_id[0] != '\0' ? STDIN_FILENO : -1, .events = POLLIN },
		};

		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			continue;
		if (pfd[0].revents & POLLIN) {
			fprintf(stderr, "\ntaskdeck: stopped following; run %s goes on "
			    "(`taskdeck runs cancel %s` cancels it)\n", run_id, run_id);
			rc = CLI_EXIT_INTERRUPTED;
			break;
		}
		if (pfd[2].revents & (POLLIN | POLLHUP)) {
			events_answer(cli, &f);
			continue;
		}
		if (td_events_next(ev, 0, &e, &err) != TD_OK) {
			if (err.code == TD_TIMEOUT)
				continue;
			if (!f.at_bol)
				fputc('\n', stdout);
			f.at_bol = true;
			fflush(stdout);
			/* A restarted service resumes the run: follow it there. */
			if (!events_reconnect(cli, &ev, &err, &rc)) {
				if (rc == CLI_FOLLOW_LOST)
					rc = CLI_EXIT_INTERRUPTED;
				break;
			}
			continue;
		}
		if (strcmp(e->type, "stream.resync-required") == 0)
			done = events_catch_up(cli, &f, &rc);
		else
			done = events_follow_one(cli, &f, e, &rc);
		td_event_free(e);
	}
	td_events_close(ev);
	events_release_sigint(&old);
	return rc;
}

/*
 * Where the lines of a run's history begin: per event, how many lines begin
 * in it (an output delta may begin several, or none when it goes on with a
 * line) and the byte of its delta after which the last `keep` lines begin.
 */
struct events_lines {
	size_t *starts;		/* per event: lines that begin in it */
	size_t total;
};

/*
 * Counts the lines beginning in each event, the output's as they are
 * printed; with --json each event is one line.
 */
static void
events_count_lines(const struct cli *cli, struct td_event *const *ev, size_t n,
    struct events_lines *lines)
{
	bool at_bol = true;

	lines->starts = xcalloc(n + 1, sizeof *lines->starts);
	lines->total = 0;
	for (size_t i = 0; i < n; i++) {
		char *delta = cli->json ? NULL : events_delta(ev[i]);

		if (cli->json)
			lines->starts[i] = 1;
		else if (delta != NULL) {
			for (const char *p = delta; *p != '\0'; p++) {
				if (at_bol)
					lines->starts[i]++;
				at_bol = *p == '\n';
			}
		} else if (events_is_line(ev[i]))
			lines->starts[i] = 1;
		free(delta);
		lines->total += lines->starts[i];
	}
}

/* The byte of an output event's delta where its line number `skip` (from 0) begins. */
static size_t
events_line_offset(const struct td_event *e, size_t skip, bool at_bol)
{
	char *delta = events_delta(e);
	size_t at = 0, seen = 0;

	for (const char *p = delta; p != NULL && *p != '\0'; p++) {
		if (at_bol && seen++ == skip)
			break;
		at_bol = *p == '\n';
		at++;
	}
	free(delta);
	return at;
}

/* An RFC 3339 time ("2026-11-26T02:45:00Z", "...+01:00", fractions) in ms; false when not one. */
static bool
events_parse_time(const char *s, int64_t *ms)
{
	struct tm tm = { 0 };
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	long frac_ms = 0, scale = 100, offset_min = 0;
	time_t t;

	if (p == NULL)
		return false;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac_ms += (*p - '0') * scale;
	}
	if (*p == 'Z' || *p == 'z')
		p++;
	else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		offset_min = ((p[1] - '0') * 10 + (p[2] - '0')) * 60 + (p[4] - '0') * 10 +
		    (p[5] - '0');
		if (*p == '-')
			offset_min = -offset_min;
		p += 6;
	} else
		return false;
	if (*p != '\0' || (t = timegm(&tm)) == (time_t)-1)
		return false;
	*ms = ((int64_t)t - offset_min * 60) * 1000 + frac_ms;
	return true;
}

bool
cli_logs_since(const char *text, int64_t *ms)
{
	static const struct {
		char unit;
		long long ms;
	} units[] = { { 's', 1000 }, { 'm', 60000 }, { 'h', 3600000 }, { 'd', 86400000 } };
	char *end;
	double n;

	if (events_parse_time(text, ms))
		return true;
	n = strtod(text, &end);
	if (end == text || !(n >= 0) || end[0] == '\0' || end[1] != '\0')
		return false;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (*end == units[i].unit) {
			*ms = clock_wall_ms() - (int64_t)(n * (double)units[i].ms);
			return true;
		}
	}
	return false;
}

/*
 * The run's events after after_id, all pages of them, into *kept (*n): what
 * watch leaves out (output) and what is older than o->since_ms are dropped.
 */
static enum td_code
events_history_read(struct cli *cli, const char *run_id, const struct cli_logs *o, bool watch,
    struct td_event ***kept, size_t *n, struct td_error *err)
{
	struct td_request_options opts = cli_request_options(cli);
	char after_id[96] = "";
	bool more;

	do {
		struct td_run_event_list *page = NULL;

		/* Event ids (STREAM:SEQ) page a history that spans restarts (docs/events.md). */
		if (td_list_run_events(cli->client, run_id, after_id, 500, &opts, &page,
		    err) != TD_OK)
			return err->code;
		*kept = xrealloc(*kept, (*n + page->count + 1) * sizeof **kept);
		for (size_t i = 0; i < page->count; i++) {
			struct td_event *e = page->items[i];
			int64_t at;

			/* The live stream starts after the last one read here. */
			events_mark(&events_start, e);
			if (watch && strcmp(e->type, "run.output") == 0)
				continue;
			if (o->since_ms > 0 && strcmp(e->type, "run.finished") != 0 &&
			    (e->time == NULL || !time_parse_utc(e->time, &at) || at < o->since_ms))
				continue;
			(*kept)[(*n)++] = e;
			page->items[i] = NULL;
		}
		more = page->next_after != NULL;
		if (more)
			snprintf(after_id, sizeof after_id, "%s", page->next_after);
		td_run_event_list_free(page);
	} while (more);
	return TD_OK;
}

/*
 * Prints the kept events, the output's last tail lines only (tail < 0: all),
 * and frees them; *at_bol after, *finished when run.finished was among them.
 */
static int
events_history_print(struct cli *cli, const char *run_id, struct td_event **kept, size_t n,
    long tail, bool *at_bol, bool *finished)
{
	struct events_lines lines = { 0 };
	size_t skip = 0;
	bool dropping = false;	/* the output's line so far is before the tail */
	bool stream_bol = true;	/* the output so far ends a line, printed or not */
	int rc = CLI_EXIT_OK;

	events_count_lines(cli, kept, n, &lines);
	if (tail >= 0 && lines.total > (size_t)tail)
		skip = lines.total - (size_t)tail;
	for (size_t i = 0; i < n; i++) {
		struct td_event *e = kept[i];

		if ((skip > 0 && skip >= lines.starts[i]) || (dropping && lines.starts[i] == 0)) {
			/* before the tail: only how the output's lines stood */
			char *delta = cli->json ? NULL : events_delta(e);

			skip -= lines.starts[i];
			if (delta != NULL) {
				stream_bol = delta[strlen(delta) - 1] == '\n';
				dropping = !stream_bol;
			}
			free(delta);
		} else if (skip > 0 || dropping) {
			/* the tail begins inside this output */
			size_t from = events_line_offset(e, skip, stream_bol);

			skip = 0;
			dropping = false;
			events_print_from(cli, e, from, at_bol);
			stream_bol = *at_bol;
		} else {
			events_follow_print(cli, e, at_bol);
			stream_bol = *at_bol;
		}
		if (strcmp(e->type, "run.finished") == 0) {
			*finished = true;
			rc = events_follow_end(e, run_id, *at_bol);
		}
		td_event_free(e);
	}
	free(lines.starts);
	return rc;
}

/*
 * taskdeck runs logs RUN [--follow] and taskdeck runs watch RUN: the run's
 * past events from the durable history, then (follow, watch) the live ones
 * until it ends.  The live subscription opens first, so nothing falls
 * between; what the history printed is not printed again.  watch leaves the
 * output out: status, progress, tools, prompts, then how it ended.  Of the
 * history, logs prints the events since o->since_ms, and of their lines the
 * last o->tail.
 */
static int
events_run_history(struct cli *cli, const char *run_id, const struct cli_logs *o, bool watch)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_event_filter filter = { .run_id = run_id };
	struct td_event **kept = NULL;
	struct td_events *ev = NULL;
	struct td_run *run = NULL;
	struct td_error err;
	size_t nkept = 0;
	bool at_bol = true, finished = false;
	int rc;

	events_timestamps = o->timestamps;
	events_start = (struct events_follow){ .at_bol = true };
	if (td_get_run(cli->client, run_id, &opts, &run, &err) != TD_OK)
		return cli_fail(&err);
	if (o->follow && td_events_open(cli->client, &filter, NULL, &ev, &err) == TD_OK &&
	    td_events_ready(ev, cli->timeout_ms > 0 ? cli->timeout_ms : TD_DEFAULT_TIMEOUT_MS,
	    &err) != TD_OK) {
		td_events_close(ev);
		ev = NULL;
	}
	if (events_history_read(cli, run->id, o, watch, &kept, &nkept, &err) != TD_OK) {
		for (size_t i = 0; i < nkept; i++)
			td_event_free(kept[i]);
		free(kept);
		td_events_close(ev);
		td_run_free(run);
		return cli_fail(&err);
	}
	rc = events_history_print(cli, run->id, kept, nkept, o->tail, &at_bol, &finished);
	free(kept);
	if (!at_bol && !finished)
		putchar('\n');
	if (finished || !o->follow) {
		td_events_close(ev);
		td_run_free(run);
		return rc;
	}
	if (ev == NULL) {
		fprintf(stderr, "taskdeck: no live events; `taskdeck runs wait %s` waits for "
		    "the end\n", run->id);
		td_run_free(run);
		return CLI_EXIT_UNREACHABLE;
	}
	events_start.no_output = watch;
	rc = cli_follow_run(cli, ev, run->id);
	td_run_free(run);
	return rc == CLI_FOLLOW_LOST ? CLI_EXIT_UNREACHABLE : rc;
}

int
cli_runs_logs(struct cli *cli, const char *run_id, const struct cli_logs *o)
{
	return events_run_history(cli, run_id, o, false);
}

int
cli_runs_watch(struct cli *cli, const char *run_id)
{
	struct cli_logs o = { .follow = true, .tail = -1 };

	return events_run_history(cli, run_id, &o, true);
}
