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
	{ "run.attention", { "attention" } },
	{ "run.finished", { "status", "error" } },
	{ "run.history-gap", { "reason" } },	/* after a crash (docs/events.md) */
	{ "stream.resync-required", { "reason" } },
	{ "session.updated", { "id", "title" } },
	{ "project.updated", { "id", "name" } },
	{ "artifact.saved", { "id", "name", "path" } },
};

/* A short, one-line summary of an event's data into b. */
static void
events_summary(struct buf *b, const struct td_event *e)
{
	cJSON *data = json_parse(e->data_json, strlen(e->data_json));
	size_t start = b->len;

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
	if (e->time != NULL && td_time_parse(e->time, &ms)) {
		td_time_format(ms, stamp);
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
 * On a terminal: asks "Allow TOOL? [y/N]" for the prompt that e asks and
 * answers it (y allows, any other line denies; end of input leaves it for
 * another answer).  False on Ctrl-C.
 */
static bool
events_ask(struct cli *cli, const struct td_event *e)
{
	struct td_request_options opts = cli_request_options(cli);
	char id[128], tool[128], line[64];
	struct pollfd pfd[2] = {
		{ .fd = events_sigpipe[0], .events = POLLIN },
		{ .fd = STDIN_FILENO, .events = POLLIN },
	};
	struct td_permission *p;
	struct td_error err;
	const char *decision;
	ssize_t n;

	if (cli->json || !isatty(STDIN_FILENO) || !isatty(STDERR_FILENO) ||
	    !events_pending_prompt(e, id, sizeof id, tool, sizeof tool))
		return true;
	fprintf(stderr, "Allow %s (prompt %s)? [y/N] ", tool, id);
	fflush(stderr);
	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return true;
		if (pfd[0].revents & POLLIN) {
			fputc('\n', stderr);
			return false;
		}
		if (pfd[1].revents & (POLLIN | POLLHUP))
			break;
	}
	n = read(STDIN_FILENO, line, sizeof line - 1);
	if (n <= 0) {
		fprintf(stderr, "\ntaskdeck: no answer; the prompt stays pending\n");
		return true;
	}
	line[n] = '\0';
	decision = line[0] == 'y' || line[0] == 'Y' ? "allow" : "deny";
	if (td_answer_permission(cli->client, id, decision, &opts, &p, &err) != TD_OK) {
		fprintf(stderr, "taskdeck: prompt %s not answered: %s: %s\n", id, err.code_name,
		    err.message);
		return true;
	}
	fprintf(stderr, "taskdeck: %s %s\n", strcmp(decision, "allow") == 0 ? "allowed" :
	    "denied", tool);
	td_permission_free(p);
	return true;
}

/* What cli_follow_run_from prints (runs logs: all; runs watch: no output). */
static bool events_no_output;
/* Events at or before this seq were printed from the history already. */
static long long events_after_seq;

int
cli_follow_run(struct cli *cli, struct td_events *ev, const char *run_id)
{
	struct sigaction old;
	bool at_bol = true;
	struct td_event *e;
	struct td_error err;
	int rc = CLI_FOLLOW_LOST;

	if (!events_catch_sigint(&old)) {
		td_events_close(ev);
		return CLI_FOLLOW_LOST;
	}
	for (;;) {
		if (!events_poll(ev, -1)) {
			fprintf(stderr, "\ntaskdeck: stopped following; run %s goes on "
			    "(`taskdeck runs cancel %s` cancels it)\n", run_id, run_id);
			rc = CLI_EXIT_INTERRUPTED;
			break;
		}
		if (td_events_next(ev, 0, &e, &err) != TD_OK) {
			if (err.code == TD_TIMEOUT)
				continue;
			fprintf(stderr, "%staskdeck: event stream lost (%s: %s); waiting "
			    "for the end of the run instead\n", at_bol ? "" : "\n",
			    err.code_name, err.message);
			break;
		}
		if (strcmp(e->type, "stream.resync-required") == 0) {
			fprintf(stderr, "%staskdeck: events were missed; waiting for the "
			    "end of the run instead\n", at_bol ? "" : "\n");
			td_event_free(e);
			break;
		}
		if (e->run_id != NULL && strcmp(e->run_id, run_id) == 0 &&
		    e->seq > events_after_seq) {
			if (!events_no_output || strcmp(e->type, "run.output") != 0)
				events_follow_print(cli, e, &at_bol);
			if (!cli->json)
				events_prompt_hint(e);
			if (!events_ask(cli, e)) {
				fprintf(stderr, "taskdeck: stopped following; run %s goes on "
				    "(`taskdeck runs cancel %s` cancels it)\n", run_id, run_id);
				rc = CLI_EXIT_INTERRUPTED;
				td_event_free(e);
				break;
			}
			if (strcmp(e->type, "run.finished") == 0) {
				rc = cli->json ? events_follow_end(e, run_id, true) :
				    events_follow_end(e, run_id, at_bol);
				td_event_free(e);
				break;
			}
		}
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
			*ms = td_now_ms() - (int64_t)(n * (double)units[i].ms);
			return true;
		}
	}
	return false;
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
	struct events_lines lines = { 0 };
	struct td_events *ev = NULL;
	struct td_run *run = NULL;
	struct td_error err;
	size_t nkept = 0, skip = 0;
	long long after = 0;
	char after_id[64] = "";
	bool at_bol = true, finished = false, more, follow = o->follow;
	bool dropping = false;	/* the output's line so far is before the tail */
	bool stream_bol = true;	/* the output so far ends a line, printed or not */
	int rc = CLI_EXIT_OK;

	events_timestamps = o->timestamps;
	if (td_get_run(cli->client, run_id, &opts, &run, &err) != TD_OK)
		return cli_fail(&err);
	if (follow && td_events_open(cli->client, &filter, NULL, &ev, &err) == TD_OK &&
	    td_events_ready(ev, cli->timeout_ms > 0 ? cli->timeout_ms : TD_DEFAULT_TIMEOUT_MS,
	    &err) != TD_OK) {
		td_events_close(ev);
		ev = NULL;
	}
	do {
		struct td_run_event_list *page = NULL;

		/* Event ids (STREAM:SEQ) page a history that spans restarts (docs/events.md). */
		if (td_list_run_events(cli->client, run->id, after_id, 500, &opts, &page,
		    &err) != TD_OK) {
			for (size_t i = 0; i < nkept; i++)
				td_event_free(kept[i]);
			free(kept);
			td_events_close(ev);
			td_run_free(run);
			return cli_fail(&err);
		}
		kept = xrealloc(kept, (nkept + page->count + 1) * sizeof *kept);
		for (size_t i = 0; i < page->count; i++) {
			struct td_event *e = page->items[i];
			int64_t at;

			after = e->seq > after ? e->seq : after;
			if (watch && strcmp(e->type, "run.output") == 0)
				continue;
			if (o->since_ms > 0 && strcmp(e->type, "run.finished") != 0 &&
			    (e->time == NULL || !td_time_parse(e->time, &at) || at < o->since_ms))
				continue;
			kept[nkept++] = e;
			page->items[i] = NULL;
		}
		more = page->next_after != NULL;
		if (more)
			snprintf(after_id, sizeof after_id, "%s", page->next_after);
		td_run_event_list_free(page);
	} while (more);
	events_count_lines(cli, kept, nkept, &lines);
	if (o->tail >= 0 && lines.total > (size_t)o->tail)
		skip = lines.total - (size_t)o->tail;
	for (size_t i = 0; i < nkept; i++) {
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
			events_print_from(cli, e, from, &at_bol);
			stream_bol = at_bol;
		} else {
			events_follow_print(cli, e, &at_bol);
			stream_bol = at_bol;
		}
		if (strcmp(e->type, "run.finished") == 0) {
			finished = true;
			rc = events_follow_end(e, run->id, at_bol);
		}
		td_event_free(e);
	}
	free(kept);
	free(lines.starts);
	if (!at_bol && !finished)
		putchar('\n');
	if (finished || !follow) {
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
	events_after_seq = after;
	events_no_output = watch;
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
