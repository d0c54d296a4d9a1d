/*
 * The MCP client: JSON-RPC 2.0 over stdio (newline-delimited messages) or
 * Streamable HTTP (one POST per message; the answer is JSON or an SSE
 * stream), with the server/discover probe and the initialize fallback.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "sandbox.h"
#include "redact.h"
#include "sse.h"
#include "xalloc.h"

#define MCP_MODERN_VERSION "2026-07-28"
#define MCP_LEGACY_VERSION "2025-11-25"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_CLIENT_NAME "taskdeck"

/* Earlier revisions this client speaks (an initialize answer must name one). */
static const char *const known_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26",
	"2024-11-05", NULL };

/* A closed event stream is resumed (GET with Last-Event-ID) at most this often per request. */
#define MCP_MAX_RESUMES 5
/* The wait before resuming when the server named no retry. */
#define MCP_DEFAULT_RETRY_MS 1000
/* The time a notifications/cancelled gets. */
#define MCP_CANCEL_NOTICE_MS 1000

/* How long a stdio server gets to exit by itself, then after SIGTERM. */
#define MCP_CLOSE_GRACE_MS 50
#define MCP_TERM_GRACE_MS 1000

enum rpc_status {
	RPC_OK = 0,
	RPC_FAILED = -1,	/* transport failure, timeout, garbage: err says */
	RPC_ERROR = -2,		/* the server answered with a JSON-RPC error (or HTTP 4xx) */
};

struct mcp_client {
	bool http;
	struct mcp_limits lim;
	int cancel_fd;
	long next_id;
	bool ready;		/* handshake done */
	bool modern;		/* server/discover worked: every request carries _meta */
	char *version;
	char *server_name;

	/* stdio */
	pid_t pid;
	int to_fd;		/* the server's stdin (a socket: MSG_NOSIGNAL) */
	int from_fd;		/* its stdout */
	int err_fd;		/* its stderr */
	struct buf in;		/* stdout bytes not yet split into lines */
	size_t scanned;		/* bytes of in already known to hold no newline */
	char *tail;		/* the last stderr bytes, a ring of lim.stderr_tail_bytes */
	size_t tail_len;
	size_t tail_pos;
	bool exited;
	int wstatus;
	bool sandboxed;		/* started by sandbox_spawn */
	enum { FAIL_OTHER, FAIL_TIMEOUT, FAIL_EXITED, FAIL_CANCELLED } failure;	/* of the last failed request */
	bool discarding;	/* skipping the rest of an oversized line */
	char *root_uri;		/* file:// URI answered to roots/list, or NULL */
	/* What started the server, to start it again after a probe that killed it. */
	char *program;
	char **argv;		/* argv[0] is the command as given */
	char **envp;		/* copies: wiped when freed (credentials) */
	char *cwd;
	struct sandbox_policy policy;	/* a copy; its strings are the caller's */
	bool has_policy;

	/* Streamable HTTP */
	CURL *curl;
	char *url;
	struct curl_slist *user_headers;
	char *session;		/* Mcp-Session-Id */
	CURL *aux;		/* answers to the server's requests, sent while a stream is open */
	long last_status;	/* HTTP status of the last exchange */
	CURLM *multi;		/* a request's transfer and the standalone stream, together */
	CURL *get;		/* the standalone event stream (GET), NULL when not open */
	struct http_exchange *getx;
	struct curl_slist *get_headers;
	bool get_refused;	/* the server does not offer it (405, or not a stream) */
	cJSON *replies;		/* answers to the server's requests, not yet sent */
	char *challenge;	/* the Bearer challenge of the last 401 or 403 insufficient_scope */
	mcp_elicit_fn elicit;	/* who answers elicitation/create, or NULL */
	void *elicit_ud;
	void (*elicit_ud_free)(void *);
	long asked_ms;		/* time spent asking someone during the current request */
	cJSON *deferred;	/* requests of the server to answer outside curl's callbacks */
	bool tools_changed;	/* notifications/tools/list_changed came */
	mcp_progress_fn progress;	/* who hears notifications/progress, or NULL */
	void *progress_ud;
};

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "10 s" or "1500 ms". */
static void
fmt_duration(int ms, char *out, size_t len)
{
	if (ms % 1000 == 0)
		snprintf(out, len, "%d s", ms / 1000);
	else
		snprintf(out, len, "%d ms", ms);
}

static void
fmt_size(size_t bytes, char *out, size_t len)
{
	if (bytes % (1024 * 1024) == 0)
		snprintf(out, len, "%zu MiB", bytes / (1024 * 1024));
	else if (bytes % 1024 == 0)
		snprintf(out, len, "%zu KiB", bytes / 1024);
	else
		snprintf(out, len, "%zu bytes", bytes);
}

static void
limits_fill(struct mcp_limits *dst, const struct mcp_limits *src)
{
	memset(dst, 0, sizeof *dst);
	if (src != NULL)
		*dst = *src;
	if (dst->request_timeout_ms <= 0)
		dst->request_timeout_ms = MCP_DEFAULT_TIMEOUT_MS;
	if (dst->max_message_bytes == 0)
		dst->max_message_bytes = MCP_DEFAULT_MAX_MESSAGE;
	if (dst->max_tools == 0)
		dst->max_tools = MCP_DEFAULT_MAX_TOOLS;
	if (dst->stderr_tail_bytes == 0)
		dst->stderr_tail_bytes = MCP_DEFAULT_STDERR_TAIL;
}

static struct mcp_client *
client_new(const struct mcp_limits *lim)
{
	struct mcp_client *c = xcalloc(1, sizeof *c);

	limits_fill(&c->lim, lim);
	c->cancel_fd = -1;
	c->next_id = 1;
	c->pid = -1;
	c->to_fd = c->from_fd = c->err_fd = -1;
	buf_init(&c->in, 0);
	return c;
}

void
mcp_set_elicitation(struct mcp_client *c, mcp_elicit_fn fn, void *ud, void (*ud_free)(void *))
{
	if (c == NULL)
		return;
	if (c->elicit_ud_free != NULL)
		c->elicit_ud_free(c->elicit_ud);
	c->elicit = fn;
	c->elicit_ud = ud;
	c->elicit_ud_free = ud_free;
}

const char *
mcp_auth_challenge(const struct mcp_client *c)
{
	return c != NULL ? c->challenge : NULL;
}

void
mcp_set_root(struct mcp_client *c, const char *dir)
{
	if (c == NULL)
		return;
	free(c->root_uri);
	c->root_uri = NULL;
	if (dir != NULL && dir[0] == '/') {
		struct buf b;

		/* file:// and the path, its bytes outside [A-Za-z0-9/._~-] percent-encoded. */
		buf_init(&b, 0);
		buf_appends(&b, "file://");
		for (const unsigned char *p = (const unsigned char *)dir; *p; p++) {
			if (isalnum(*p) || strchr("/._~-", *p) != NULL)
				buf_append(&b, p, 1);
			else
				buf_printf(&b, "%%%02X", *p);
		}
		c->root_uri = buf_steal(&b);
	}
}

void
mcp_set_cancel_fd(struct mcp_client *c, int fd)
{
	if (c != NULL)
		c->cancel_fd = fd;
}

const char *
mcp_protocol_version(const struct mcp_client *c)
{
	return c != NULL && c->ready ? c->version : NULL;
}

int
mcp_server_pid(const struct mcp_client *c)
{
	return c != NULL && !c->http ? (int)c->pid : -1;
}

const char *
mcp_server_name(const struct mcp_client *c)
{
	return c != NULL ? c->server_name : NULL;
}

static bool
cancel_requested(const struct mcp_client *c)
{
	struct pollfd p = { .fd = c->cancel_fd, .events = POLLIN };

	return c->cancel_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* --- stdio: spawning ------------------------------------------------------ */

/* The value of NAME in envp, or NULL. */
static const char *
env_lookup(char *const envp[], const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

/*
 * The program to execute: command itself when it holds a slash, else the
 * first executable match in the server's PATH (envp's, else ours).
 */
static char *
resolve_command(const char *command, char *const envp[])
{
	const char *path;
	char *dirs, *save = NULL;

	if (strchr(command, '/') != NULL)
		return xstrdup(command);
	path = env_lookup(envp, "PATH");
	if (path == NULL)
		path = getenv("PATH");
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	dirs = xstrdup(path);
	for (char *d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
		char *cand = xasprintf("%s/%s", *d ? d : ".", command);
		struct stat st;

		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
			free(dirs);
			return cand;
		}
		free(cand);
	}
	free(dirs);
	return NULL;
}

/*
 * THE one place where a stdio server process is created: in the run's
 * sandbox when there is a policy (sandbox_spawn, which also puts it in its own
 * process group), else with posix_spawn in a new process group.  Returns 0
 * with *pid, or -1 with err set.
 */
static int
spawn_server(const struct sandbox_policy *policy, const char *program, char *const argv[],
    char *const envp[], const char *cwd, int in_fd, int out_fd, int err_fd, pid_t *pid,
    char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, defaults;
	int rc;

	if (policy != NULL) {
		const int fds[3] = { in_fd, out_fd, err_fd };
		struct sandbox_policy pol = *policy;
		char why[768];
		char **sargv;
		size_t n = 0;

		while (argv[n] != NULL)
			n++;
		sargv = xcalloc(n + 1, sizeof *sargv);
		sargv[0] = (char *)program;	/* resolved here: the same path inside */
		for (size_t i = 1; i < n; i++)
			sargv[i] = argv[i];
		/* the connector's definition: the user's, so its paths may be bound */
		pol.programs = (const char *const *)sargv;
		rc = sandbox_spawn(&pol, cwd, sargv, envp, fds, pid, why, sizeof why);
		free(sargv);
		if (rc != 0)
			set_err(err, errlen, "cannot start the server: %s", why);
		return rc != 0 ? -1 : 0;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	if (cwd != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, cwd);
	sigemptyset(&none);
	sigfillset(&defaults);
	sigdelset(&defaults, SIGKILL);
	sigdelset(&defaults, SIGSTOP);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(pid, program, &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		set_err(err, errlen, "cannot start the server: %s: %s", argv[0], strerror(rc));
	return rc != 0 ? -1 : 0;
}

struct mcp_client *
mcp_open_stdio(const char *command, char *const args[], char *const envp[], const char *cwd,
    const struct mcp_limits *lim, char *err, size_t errlen)
{
	return mcp_open_stdio_sandboxed(NULL, command, args, envp, cwd, lim, err, errlen);
}

static char **
strv_copy(char *const v[], size_t skip_front)
{
	size_t n = 0;
	char **out;

	while (v != NULL && v[n] != NULL)
		n++;
	out = xcalloc(n + 1 + skip_front, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i + skip_front] = xstrdup(v[i]);
	return out;
}

static void
strv_wipe_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++) {
		explicit_bzero(v[i], strlen(v[i]));
		free(v[i]);
	}
	free(v);
}

static void stdio_stop(struct mcp_client *c);

/* Starts (or starts again) the saved command; 0, or -1 with err set. */
static int
stdio_start(struct mcp_client *c, char *err, size_t errlen)
{
	int sv[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
		set_err(err, errlen, "cannot start the server: %s", strerror(errno));
		goto fail;
	}
	if (spawn_server(c->has_policy ? &c->policy : NULL, c->program, c->argv, c->envp, c->cwd, sv[1], outp[1],
	    errp[1], &c->pid, err, errlen) != 0) {
		c->pid = -1;
		goto fail;
	}
	close(sv[1]);
	close(outp[1]);
	close(errp[1]);
	c->to_fd = sv[0];
	c->from_fd = outp[0];
	c->err_fd = errp[0];
	fcntl(c->from_fd, F_SETFL, O_NONBLOCK);
	fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
	fcntl(c->to_fd, F_SETFL, O_NONBLOCK);
	c->sandboxed = c->has_policy;
	c->exited = false;
	buf_reset(&c->in);
	c->scanned = 0;
	c->tail_len = c->tail_pos = 0;
	return 0;

fail:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return -1;
}

struct mcp_client *
mcp_open_stdio_sandboxed(const struct sandbox_policy *policy, const char *command,
    char *const args[], char *const envp[], const char *cwd, const struct mcp_limits *lim,
    char *err, size_t errlen)
{
	static char *const no_env[] = { NULL };
	struct mcp_client *c;
	char *program;

	if (command == NULL || *command == '\0') {
		set_err(err, errlen, "no command to start");
		return NULL;
	}
	if (envp == NULL)
		envp = no_env;
	program = resolve_command(command, envp);
	if (program == NULL) {
		set_err(err, errlen, "cannot start the server: %s: command not found", command);
		return NULL;
	}
	c = client_new(lim);
	c->program = program;
	c->argv = strv_copy(args, 1);
	c->argv[0] = xstrdup(command);
	c->envp = strv_copy(envp, 0);
	c->cwd = xstrdup_or_null(cwd);
	if (policy != NULL) {
		c->policy = *policy;
		c->has_policy = true;
	}
	c->tail = xmalloc(c->lim.stderr_tail_bytes);
	if (stdio_start(c, err, errlen) != 0) {
		mcp_close(c);
		return NULL;
	}
	return c;
}

/* --- stdio: stderr tail, reading and writing ------------------------------ */

static void
tail_add(struct mcp_client *c, const char *s, size_t n)
{
	size_t cap = c->lim.stderr_tail_bytes;

	for (size_t i = 0; i < n; i++) {
		c->tail[c->tail_pos] = s[i];
		c->tail_pos = (c->tail_pos + 1) % cap;
		if (c->tail_len < cap)
			c->tail_len++;
	}
}

/* Reads what stderr has; false at its end. */
static bool
drain_stderr(struct mcp_client *c)
{
	char chunk[4096];

	if (c->err_fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(c->err_fd, chunk, sizeof chunk);

		if (n > 0) {
			tail_add(c, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		close(c->err_fd);
		c->err_fd = -1;
		return false;
	}
}

/*
 * The stderr tail as one printable line: control characters and bytes
 * outside ASCII become spaces or '?', runs of blanks one space.
 */
static void
tail_text(const struct mcp_client *c, char *out, size_t len)
{
	size_t cap = c->lim.stderr_tail_bytes, start, o = 0;
	bool space = true;
	char *raw;

	if (len == 0)
		return;
	/* The secrets go first, from the raw bytes: a full ring may begin inside one. */
	raw = xmalloc(c->tail_len + 1);
	start = (c->tail_pos + cap - c->tail_len) % cap;
	for (size_t i = 0; i < c->tail_len; i++)
		raw[i] = c->tail[(start + i) % cap];
	redact_text(c->lim.secrets, raw, c->tail_len, REDACT_CUT_END |
	    (c->tail_len == cap ? REDACT_CUT_START : 0));
	for (size_t i = 0; i < c->tail_len && o + 1 < len; i++) {
		unsigned char ch = (unsigned char)raw[i];

		if (isspace(ch) || ch < 0x20 || ch == 0x7f) {
			if (!space)
				out[o++] = ' ';
			space = true;
			continue;
		}
		out[o++] = ch < 0x80 ? (char)ch : '?';
		space = false;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	explicit_bzero(raw, c->tail_len);
	free(raw);
}

/* A message from the server, with every secret masked in its strings; NULL when not JSON. */
static cJSON *
message_parse(const struct mcp_client *c, const char *text, size_t len)
{
	cJSON *msg = json_parse(text, len);

	redact_json(c->lim.secrets, msg);
	return msg;
}

static void
reap(struct mcp_client *c, int wait_ms)
{
	long deadline = now_ms() + wait_ms;

	while (!c->exited && c->pid > 0) {
		pid_t r = waitpid(c->pid, &c->wstatus, WNOHANG);

		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			c->exited = true;
			break;
		}
		if (now_ms() >= deadline)
			break;
		usleep(5000);
	}
}

/* "the server exited during X (status N): <stderr tail>" */
static void
exited_err(struct mcp_client *c, const char *during, char *err, size_t errlen)
{
	char tail[1024], how[64] = "";
	long deadline = now_ms() + 500;

	/* Its last words may still be on their way. */
	while (c->err_fd >= 0 && now_ms() < deadline) {
		struct pollfd p = { .fd = c->err_fd, .events = POLLIN };

		poll(&p, 1, 50);
		if (!drain_stderr(c))
			break;
	}
	reap(c, 300);
	if (c->exited && WIFEXITED(c->wstatus))
		snprintf(how, sizeof how, " with status %d", WEXITSTATUS(c->wstatus));
	else if (c->exited && WIFSIGNALED(c->wstatus))
		snprintf(how, sizeof how, " on signal %d", WTERMSIG(c->wstatus));
	tail_text(c, tail, sizeof tail);
	c->failure = FAIL_EXITED;
	set_err(err, errlen, "the server exited during %s%s%s%s", during, how,
	    *tail ? ": " : " (nothing on stderr)", tail);
}

static void
timeout_err(struct mcp_client *c, const char *during, char *err, size_t errlen)
{
	char d[32], tail[512];

	fmt_duration(c->lim.request_timeout_ms, d, sizeof d);
	c->failure = FAIL_TIMEOUT;
	if (c->http) {
		set_err(err, errlen, "no answer within %s (%s)", d, during);
		return;
	}
	tail_text(c, tail, sizeof tail);
	set_err(err, errlen, "no answer within %s (%s)%s%s", d, during, *tail ? "; stderr: " : "",
	    tail);
}

static void
cancelled_err(struct mcp_client *c, char *err, size_t errlen)
{
	c->failure = FAIL_CANCELLED;
	set_err(err, errlen, "cancelled");
}

static void
too_big_err(const struct mcp_client *c, char *err, size_t errlen)
{
	char s[32];

	fmt_size(c->lim.max_message_bytes, s, sizeof s);
	set_err(err, errlen, "message over %s from the server", s);
}

/* Writes one line to the server's stdin before the deadline. */
static int
stdio_write(struct mcp_client *c, const char *line, size_t len, long deadline,
    const char *during, char *err, size_t errlen)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(c->to_fd, line + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p[2] = { { .fd = c->to_fd, .events = POLLOUT },
				{ .fd = c->cancel_fd, .events = POLLIN } };
			long left = deadline - now_ms();

			if (left <= 0) {
				timeout_err(c, during, err, errlen);
				return -1;
			}
			drain_stderr(c);
			if (poll(p, c->cancel_fd >= 0 ? 2 : 1, (int)(left < 100 ? left : 100)) > 0 &&
			    (p[1].revents & POLLIN)) {
				cancelled_err(c, err, errlen);
				return -1;
			}
			continue;
		}
		exited_err(c, during, err, errlen);
		return -1;
	}
	return 0;
}

/*
 * The next line from the server's stdout (NUL-terminated in *line, which the
 * caller frees), waiting until the deadline.
 */
static int
stdio_read_line(struct mcp_client *c, long deadline, const char *during, char **line,
    size_t *len, char *err, size_t errlen)
{
	char chunk[65536];

	for (;;) {
		char *nl = c->in.len > c->scanned ?
		    memchr(c->in.data + c->scanned, '\n', c->in.len - c->scanned) : NULL;

		if (c->discarding) {
			/* The rest of a line over the bound: dropped up to its end. */
			if (nl != NULL) {
				size_t n = (size_t)(nl - c->in.data) + 1;

				memmove(c->in.data, nl + 1, c->in.len - n);
				c->in.len -= n;
				c->in.data[c->in.len] = '\0';
				c->discarding = false;
			} else {
				buf_reset(&c->in);
			}
			c->scanned = 0;
			if (!c->discarding)
				continue;
		} else if (nl != NULL) {
			size_t n = (size_t)(nl - c->in.data);

			if (n > c->lim.max_message_bytes) {
				memmove(c->in.data, nl + 1, c->in.len - n - 1);
				c->in.len -= n + 1;
				c->in.data[c->in.len] = '\0';
				c->scanned = 0;
				too_big_err(c, err, errlen);
				return -1;
			}
			*line = xstrndup(c->in.data, n);
			*len = n;
			memmove(c->in.data, nl + 1, c->in.len - n - 1);
			c->in.len -= n + 1;
			c->in.data[c->in.len] = '\0';
			c->scanned = 0;
			return 0;
		}
		c->scanned = c->in.len;
		if (!c->discarding && c->in.len > c->lim.max_message_bytes) {
			/* This request fails; the connection goes on after the line's end. */
			buf_reset(&c->in);
			c->scanned = 0;
			c->discarding = true;
			too_big_err(c, err, errlen);
			return -1;
		}
		if (c->from_fd < 0) {
			exited_err(c, during, err, errlen);
			return -1;
		}

		struct pollfd p[3] = { { .fd = c->from_fd, .events = POLLIN },
			{ .fd = c->err_fd, .events = POLLIN },
			{ .fd = c->cancel_fd, .events = POLLIN } };
		long left = deadline - now_ms();
		int r;

		if (left <= 0) {
			timeout_err(c, during, err, errlen);
			return -1;
		}
		r = poll(p, 3, (int)left);
		if (r < 0 && errno != EINTR) {
			set_err(err, errlen, "cannot wait for the server: %s", strerror(errno));
			return -1;
		}
		if (p[2].revents & POLLIN) {
			cancelled_err(c, err, errlen);
			return -1;
		}
		if (p[1].revents)
			drain_stderr(c);
		if (p[0].revents) {
			ssize_t n = read(c->from_fd, chunk, sizeof chunk);

			if (n > 0) {
				buf_append(&c->in, chunk, (size_t)n);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(c->from_fd);
				c->from_fd = -1;
			}
		}
	}
}

/* --- messages ------------------------------------------------------------- */

static cJSON *
request_new(struct mcp_client *c, long id, const char *method, cJSON *params)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	if (id > 0)
		cJSON_AddNumberToObject(msg, "id", (double)id);
	cJSON_AddStringToObject(msg, "method", method);
	if (params == NULL)
		params = cJSON_CreateObject();
	if (c->modern && id > 0) {
		cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

		if (!cJSON_IsObject(meta)) {
			cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
			meta = cJSON_AddObjectToObject(params, "_meta");
		}
		if (cJSON_GetObjectItemCaseSensitive(meta, MCP_META_VERSION) == NULL)
			cJSON_AddStringToObject(meta, MCP_META_VERSION, MCP_MODERN_VERSION);
	}
	cJSON_AddItemToObject(msg, "params", params);
	return msg;
}

/*
 * The answer to a request from the server (id mid): ping, roots/list (the
 * workspace, when the client has one); elicitation and sampling are declined
 * with an error that says why; anything else is "Method not found".
 */
static cJSON *
server_request_reply(struct mcp_client *c, const cJSON *mid, const char *method,
    const cJSON *params)
{
	cJSON *r = cJSON_CreateObject(), *e = NULL, *answer;

	cJSON_AddStringToObject(r, "jsonrpc", "2.0");
	cJSON_AddItemToObject(r, "id", cJSON_Duplicate(mid, true));
	if (strcmp(method, "elicitation/create") == 0 && c->elicit != NULL) {
		long t0 = now_ms();

		answer = c->elicit(c, params, c->elicit_ud);
		c->asked_ms += now_ms() - t0;
		if (!cJSON_IsObject(answer)) {
			cJSON_Delete(answer);
			answer = cJSON_CreateObject();
			cJSON_AddStringToObject(answer, "action", "decline");
		}
		cJSON_AddItemToObject(r, "result", answer);
	} else if (strcmp(method, "ping") == 0) {
		cJSON_AddObjectToObject(r, "result");
	} else if (strcmp(method, "roots/list") == 0 && c->root_uri != NULL) {
		cJSON *root = cJSON_CreateObject();

		cJSON_AddStringToObject(root, "uri", c->root_uri);
		cJSON_AddStringToObject(root, "name", "workspace");
		cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(r, "result"),
		    "roots"), root);
	} else {
		e = cJSON_AddObjectToObject(r, "error");
		cJSON_AddNumberToObject(e, "code", -32601);
	}
	if (e == NULL)
		return r;
	if (strcmp(method, "elicitation/create") == 0)
		cJSON_AddStringToObject(e, "message", "Declined: taskdeck has no one to answer "
		    "this form here (elicitation is not supported)");
	else if (strcmp(method, "sampling/createMessage") == 0)
		cJSON_AddStringToObject(e, "message", "Declined: taskdeck does not let MCP servers "
		    "use the run's model (sampling is not supported)");
	else
		cJSON_AddStringToObject(e, "message", "Method not found");
	return r;
}

/* A notification from the server: tools/list_changed noted, progress told. */
static void
notification_note(struct mcp_client *c, const char *method, const cJSON *params)
{
	const cJSON *progress = cJSON_GetObjectItemCaseSensitive(params, "progress");
	const cJSON *total = cJSON_GetObjectItemCaseSensitive(params, "total");

	if (strcmp(method, "notifications/tools/list_changed") == 0)
		c->tools_changed = true;
	else if (strcmp(method, "notifications/progress") == 0 && c->progress != NULL &&
	    cJSON_IsNumber(progress))
		c->progress(c->progress_ud, progress->valuedouble,
		    cJSON_IsNumber(total) ? total->valuedouble : -1,
		    json_get_string(params, "message"));
}

/*
 * What one message from the server means to a request with this id:
 * 1 = it is the answer (*out set), 0 = something else (skip it), -1 = not
 * JSON-RPC.  *reply is set when the server asked something of us.
 */
static int
classify(struct mcp_client *c, cJSON *msg, long id, cJSON **out, cJSON **reply)
{
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	const cJSON *mid = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");

	*reply = NULL;
	if (!cJSON_IsObject(msg) || !cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
		return -1;
	if (cJSON_IsString(method)) {
		if (mid != NULL && !cJSON_IsNull(mid))
			*reply = server_request_reply(c, mid, method->valuestring,
			    cJSON_GetObjectItemCaseSensitive(msg, "params"));
		else
			notification_note(c, method->valuestring,
			    cJSON_GetObjectItemCaseSensitive(msg, "params"));
		return 0;
	}
	if (!cJSON_IsNumber(mid) || (long)mid->valuedouble != id)
		return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg, "result")) ||
		    cJSON_GetObjectItemCaseSensitive(msg, "error") != NULL ? 0 : -1;
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg, "result")) &&
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg, "error")))
		return -1;
	*out = msg;
	return 1;
}

/*
 * Splits an answer into its result (detached into *result) or its error
 * (RPC_ERROR with a message naming the method).
 */
static int
answer_take(cJSON *msg, const char *method, cJSON **result, int *code, char *err,
    size_t errlen)
{
	cJSON *e = cJSON_GetObjectItemCaseSensitive(msg, "error");

	if (cJSON_IsObject(e)) {
		const cJSON *ec = cJSON_GetObjectItemCaseSensitive(e, "code");
		const char *em = json_get_string(e, "message");

		if (code != NULL)
			*code = cJSON_IsNumber(ec) ? (int)ec->valuedouble : 0;
		set_err(err, errlen, "the server refused %s: %.300s (code %d)", method,
		    em != NULL ? em : "(no message)", cJSON_IsNumber(ec) ? (int)ec->valuedouble : 0);
		return RPC_ERROR;
	}
	*result = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
	return RPC_OK;
}

static int stdio_send_json(struct mcp_client *c, cJSON *msg, long deadline, const char *during,
    char *err, size_t errlen);

static int
stdio_rpc(struct mcp_client *c, long id, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	long deadline = now_ms() + c->lim.request_timeout_ms;
	cJSON *msg = request_new(c, id, method, params);

	if (stdio_send_json(c, msg, deadline, during, err, errlen) != 0)
		return RPC_FAILED;
	for (;;) {
		char *line;
		size_t len;
		cJSON *in, *answer = NULL, *reply = NULL;
		int k;

		if (stdio_read_line(c, deadline, during, &line, &len, err, errlen) != 0)
			return RPC_FAILED;
		if (len == 0 || (len == 1 && line[0] == '\r')) {
			free(line);
			continue;
		}
		in = message_parse(c, line, len);
		free(line);
		{
			long asked = c->asked_ms;

			k = in != NULL ? classify(c, in, id, &answer, &reply) : -1;
			deadline += c->asked_ms - asked;
		}
		if (k < 0) {
			/* A stray line (a log line, a banner): skipped, as other clients do.
			 * Its text is not logged: it may hold anything. */
			log_warn("mcp: the server (pid %d) wrote a line on stdout that is not a "
			    "JSON-RPC 2.0 message (%zu bytes, during %s); skipped", (int)c->pid, len,
			    during);
			cJSON_Delete(in);
			continue;
		}
		if (reply != NULL && stdio_send_json(c, reply, deadline, during, err, errlen) != 0) {
			cJSON_Delete(in);
			return RPC_FAILED;
		}
		if (k == 1) {
			int rc = answer_take(in, method, result, code, err, errlen);

			cJSON_Delete(in);
			return rc;
		}
		cJSON_Delete(in);
	}
}

/* Sends msg (consumed) as one line. */
static int
stdio_send_json(struct mcp_client *c, cJSON *msg, long deadline, const char *during,
    char *err, size_t errlen)
{
	char *text = json_print(msg);
	size_t len = strlen(text);
	int rc;

	cJSON_Delete(msg);
	if (len > c->lim.max_message_bytes) {
		char s[32];

		free(text);
		fmt_size(c->lim.max_message_bytes, s, sizeof s);
		set_err(err, errlen, "message over %s to the server", s);
		return -1;
	}
	text = xrealloc(text, len + 2);
	text[len++] = '\n';
	text[len] = '\0';
	rc = stdio_write(c, text, len, deadline, during, err, errlen);
	free(text);
	return rc;
}

/* --- Streamable HTTP ------------------------------------------------------ */

/*
 * One HTTP exchange.  The body of a 2xx event stream that a request awaits
 * is parsed as it arrives: the answer ends the exchange at once, requests
 * from the server are answered while the stream stays open.  Any other body
 * is kept (bounded), for JSON answers and for the reason of an HTTP error.
 */
struct http_exchange {
	struct mcp_client *c;
	CURL *curl;
	bool standalone;	/* the GET stream: outlives requests, never stopped by an answer */
	long id;		/* the request's id; 0 for a notification or a reply */
	struct buf body;
	bool too_big;
	bool started;		/* the first body bytes were seen */
	struct sse_parser *parser;	/* when the body is an event stream */
	cJSON *answer;
	bool garbage;
	char last_id[256];	/* the stream's last event id */
	long retry;		/* its last retry field, -1 when none */
	char content_type[128];
	char session[256];
	char www_auth[1024];	/* WWW-Authenticate of a 401 or 403 */
	bool headers_done;	/* the response's header block has ended */
};

static int http_on_event(const struct sse_event *ev, void *ud);

static size_t
http_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct http_exchange *x = ud;

	if (!x->started) {
		long status = 0;

		x->started = true;
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
		if ((x->id > 0 || x->standalone) && status / 100 == 2 &&
		    strncasecmp(x->content_type, "text/event-stream", 17) == 0)
			x->parser = sse_new(x->c->lim.max_message_bytes, http_on_event, x);
		if (x->standalone && x->parser == NULL) {
			x->c->get_refused = true;
			return 0;
		}
	}
	if (x->parser != NULL) {
		int rc = sse_feed(x->parser, data, size * n);

		if (rc == SSE_TOO_BIG)
			x->too_big = true;
		/* The answer (or garbage) stops the transfer here. */
		return rc == SSE_OK ? size * n : 0;
	}
	if (!buf_append(&x->body, data, size * n)) {
		x->too_big = true;
		return 0;
	}
	return size * n;
}

static void
header_value(const char *line, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), v;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	v = nl + 1;
	while (v < len && (line[v] == ' ' || line[v] == '\t'))
		v++;
	while (len > v && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	snprintf(out, outlen, "%.*s", (int)(len - v), line + v);
}

static size_t
http_on_header(char *data, size_t size, size_t n, void *ud)
{
	struct http_exchange *x = ud;

	header_value(data, size * n, "Content-Type", x->content_type, sizeof x->content_type);
	header_value(data, size * n, "Mcp-Session-Id", x->session, sizeof x->session);
	header_value(data, size * n, "WWW-Authenticate", x->www_auth, sizeof x->www_auth);
	if (size * n <= 2 && (data[0] == '\r' || data[0] == '\n'))
		x->headers_done = true;
	return size * n;
}

static int
http_on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return cancel_requested(((struct http_exchange *)ud)->c) ? 1 : 0;
}

struct mcp_client *
mcp_open_http(const char *url, const char *const *headers, const struct mcp_limits *lim,
    char *err, size_t errlen)
{
	struct mcp_client *c;

	if (url == NULL || (strncasecmp(url, "http://", 7) != 0 &&
	    strncasecmp(url, "https://", 8) != 0)) {
		set_err(err, errlen, "the URL must start with http:// or https://");
		return NULL;
	}
	c = client_new(lim);
	c->http = true;
	c->url = xstrdup(url);
	c->curl = curl_easy_init();
	c->multi = curl_multi_init();
	if (c->curl == NULL || c->multi == NULL) {
		set_err(err, errlen, "cannot set up an HTTP client");
		mcp_close(c);
		return NULL;
	}
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i++) {
		struct curl_slist *l = curl_slist_append(c->user_headers, headers[i]);

		if (l == NULL) {
			set_err(err, errlen, "cannot set up an HTTP client");
			mcp_close(c);
			return NULL;
		}
		c->user_headers = l;
	}
	return c;
}

/*
 * The headers of every request: the user's, the session, the protocol
 * version once one is known (the probe names 2026-07-28), and Mcp-Method on
 * a modern server.  method NULL = not a JSON-RPC message (GET, DELETE).
 */
static struct curl_slist *
http_headers(const struct mcp_client *c, const char *method, const char *accept)
{
	struct curl_slist *h = NULL;
	char line[320];

	for (struct curl_slist *l = c->user_headers; l != NULL; l = l->next)
		h = curl_slist_append(h, l->data);
	if (method != NULL)
		h = curl_slist_append(h, "Content-Type: application/json");
	snprintf(line, sizeof line, "Accept: %s", accept);
	h = curl_slist_append(h, line);
	if (c->modern || c->version != NULL) {
		snprintf(line, sizeof line, "MCP-Protocol-Version: %s",
		    c->modern ? MCP_MODERN_VERSION : c->version);
		h = curl_slist_append(h, line);
	}
	if (c->modern && method != NULL) {
		snprintf(line, sizeof line, "Mcp-Method: %s", method);
		h = curl_slist_append(h, line);
	}
	if (c->session != NULL) {
		snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
		h = curl_slist_append(h, line);
	}
	return h;
}

static void
http_setup(CURL *h, const char *url, struct curl_slist *headers, long timeout_ms)
{
	/* 0 = no timeout of curl's own. */
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 0L);
}

/*
 * Answers a request the server made on an open stream: POSTed on a handle
 * of its own (the stream's is busy).  reply is consumed.
 */
static void
http_send_reply(struct mcp_client *c, cJSON *reply)
{
	char *text = json_print(reply);
	struct curl_slist *h;

	cJSON_Delete(reply);
	if (c->aux == NULL && (c->aux = curl_easy_init()) == NULL) {
		free(text);
		return;
	}
	h = http_headers(c, "response", "application/json, text/event-stream");
	http_setup(c->aux, c->url, h, c->lim.request_timeout_ms);
	curl_easy_setopt(c->aux, CURLOPT_POST, 1L);
	curl_easy_setopt(c->aux, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c->aux, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	if (curl_easy_perform(c->aux) != CURLE_OK)
		log_warn("mcp: cannot answer a request of the server at its URL");
	curl_slist_free_all(h);
	free(text);
}

static int
http_on_event(const struct sse_event *ev, void *ud)
{
	struct http_exchange *x = ud;
	cJSON *msg, *answer = NULL, *reply = NULL;
	int k;

	if (ev->id != NULL && *ev->id != '\0')
		snprintf(x->last_id, sizeof x->last_id, "%s", ev->id);
	if (ev->retry >= 0)
		x->retry = ev->retry;
	if (ev->data_len == 0 || x->answer != NULL)
		return 0;	/* a priming event, or one after the answer */
	msg = message_parse(x->c, ev->data, ev->data_len);
	if (msg != NULL && x->c->elicit != NULL &&
	    cJSON_GetObjectItemCaseSensitive(msg, "id") != NULL &&
	    strcmp(json_get_string(msg, "method") ? json_get_string(msg, "method") : "",
	    "elicitation/create") == 0) {
		/* Someone is asked: not from inside curl's callback. */
		if (x->c->deferred == NULL)
			x->c->deferred = cJSON_CreateArray();
		cJSON_AddItemToArray(x->c->deferred, msg);
		return 0;
	}
	k = msg != NULL ? classify(x->c, msg, x->id, &answer, &reply) : -1;
	if (reply != NULL) {
		/* Sent once the transfers are back in our hands (not from a callback). */
		if (x->c->replies == NULL)
			x->c->replies = cJSON_CreateArray();
		cJSON_AddItemToArray(x->c->replies, reply);
	}
	if (k < 0 && x->standalone) {
		log_warn("mcp: the server sent an event that is not a JSON-RPC 2.0 message on its "
		    "stream; skipped");
		cJSON_Delete(msg);
		return 0;
	}
	if (k < 0) {
		x->garbage = true;
		cJSON_Delete(msg);
		return 1;
	}
	if (k == 1) {
		x->answer = msg;
		return x->standalone ? 0 : 1;
	}
	cJSON_Delete(msg);
	return 0;
}

/* The server's reason in an error body: a JSON-RPC error's message, an
 * "error" string or description, else the text itself; printable, cut. */
static void
http_reason(const struct buf *body, char *out, size_t len)
{
	cJSON *j = body->len > 0 ? json_parse(body->data, body->len) : NULL;
	const char *text = body->data != NULL ? body->data : "";
	size_t o = 0;
	bool space = true;

	if (j != NULL) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		const char *m = cJSON_IsObject(e) ? json_get_string(e, "message") :
		    cJSON_IsString(e) ? e->valuestring : NULL;
		const char *d = json_get_string(j, "error_description");

		if (d == NULL)
			d = json_get_string(j, "message");
		if (m != NULL || d != NULL) {
			snprintf(out, len, "%.200s%s%.200s", m ? m : "", m && d ? ": " : "",
			    d ? d : "");
			cJSON_Delete(j);
			for (char *p = out; *p; p++)
				if ((unsigned char)*p < 0x20)
					*p = ' ';
			return;
		}
		cJSON_Delete(j);
	}
	for (size_t i = 0; text[i] != '\0' && o + 1 < len && o < 300; i++) {
		unsigned char ch = (unsigned char)text[i];

		if (isspace(ch) || ch < 0x20 || ch == 0x7f) {
			if (!space)
				out[o++] = ' ';
			space = true;
			continue;
		}
		out[o++] = ch < 0x80 ? (char)ch : '?';
		space = false;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	if (len > 0)
		out[o] = '\0';
}

/*
 * The value of auth-param name in a WWW-Authenticate challenge (quoted or a
 * token), printable ASCII only; "" when absent.
 */
static void
challenge_param(const char *challenge, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name), o = 0;

	out[0] = '\0';
	for (const char *p = challenge; (p = strcasestr(p, name)) != NULL; p += nl) {
		const char *v = p + nl;
		bool quoted;

		if (p != challenge && p[-1] != ' ' && p[-1] != ',' && p[-1] != '\t')
			continue;
		while (*v == ' ')
			v++;
		if (*v++ != '=')
			continue;
		while (*v == ' ')
			v++;
		quoted = *v == '"';
		v += quoted;
		for (; *v && o + 1 < len; v++) {
			if (quoted ? *v == '"' : (*v == ',' || *v == ' '))
				break;
			if (quoted && *v == '\\' && v[1] != '\0')
				v++;
			out[o++] = (unsigned char)*v >= 0x20 && (unsigned char)*v < 0x7f ? *v : '?';
		}
		out[o] = '\0';
		return;
	}
}

/*
 * A 401 (or a 403 insufficient_scope) with a Bearer challenge: the server
 * wants an OAuth sign-in.  The message says so, with what the challenge
 * names (the resource metadata, the scope), and how to give a token.
 */
static bool
sign_in_err(const struct http_exchange *x, long status, const char *method, char *err,
    size_t errlen)
{
	char meta[512], scope[256], error[64];

	if ((status != 401 && status != 403) || strncasecmp(x->www_auth, "Bearer", 6) != 0)
		return false;
	challenge_param(x->www_auth, "resource_metadata", meta, sizeof meta);
	challenge_param(x->www_auth, "scope", scope, sizeof scope);
	challenge_param(x->www_auth, "error", error, sizeof error);
	if (status == 403 && strcmp(error, "insufficient_scope") != 0)
		return false;
	/* The scope first: a tool line's summary keeps only the start. */
	set_err(err, errlen, "sign-in needed%s%s%s: the server answered HTTP %ld to %s and asks "
	    "for an OAuth %s%s%s; sign in with 'taskdeck connectors login'", *scope ? " (scope " :
	    "", scope, *scope ? ")" : "", status, method,
	    status == 403 ? "token with more scope" : "sign-in", *meta ? ", described at " : "",
	    meta);
	return true;
}

/* Waits ms (bounded by the deadline); false when cancelled. */
static bool
pause_ms(struct mcp_client *c, long ms, long deadline)
{
	long until = now_ms() + ms;

	if (until > deadline)
		until = deadline;
	while (now_ms() < until) {
		struct pollfd p = { .fd = c->cancel_fd, .events = POLLIN };
		long left = until - now_ms();

		if (poll(&p, c->cancel_fd >= 0 ? 1 : 0, (int)(left > 0 ? left : 0)) > 0)
			return false;
	}
	return true;
}

static void
exchange_init(struct http_exchange *x, struct mcp_client *c, long id)
{
	memset(x, 0, sizeof *x);
	x->c = c;
	x->id = id;
	x->retry = -1;
	buf_init(&x->body, c->lim.max_message_bytes);
}

static void
exchange_done(struct http_exchange *x)
{
	sse_free(x->parser);
	x->parser = NULL;
	cJSON_Delete(x->answer);
	x->answer = NULL;
	buf_free(&x->body);
}

static void
flush_replies(struct mcp_client *c)
{
	while (c->deferred != NULL && cJSON_GetArraySize(c->deferred) > 0) {
		cJSON *q = cJSON_DetachItemFromArray(c->deferred, 0);

		http_send_reply(c, server_request_reply(c, cJSON_GetObjectItemCaseSensitive(q, "id"),
		    json_get_string(q, "method"), cJSON_GetObjectItemCaseSensitive(q, "params")));
		cJSON_Delete(q);
	}
	while (c->replies != NULL && cJSON_GetArraySize(c->replies) > 0)
		http_send_reply(c, cJSON_DetachItemFromArray(c->replies, 0));
}

/* Closes the standalone stream (it is opened again by the next request). */
static void
get_stream_close(struct mcp_client *c)
{
	if (c->get == NULL)
		return;
	curl_multi_remove_handle(c->multi, c->get);
	curl_easy_cleanup(c->get);
	c->get = NULL;
	curl_slist_free_all(c->get_headers);
	c->get_headers = NULL;
	exchange_done(c->getx);
	free(c->getx);
	c->getx = NULL;
}

/*
 * Opens the standalone event stream (GET) once a session is set up, so that
 * requests the server makes outside of a request of ours (elicitation,
 * roots, sampling, ping) reach us while we wait.  A server that does not
 * offer it (405, or no event stream) is not asked again.
 */
static void
get_stream_open(struct mcp_client *c)
{
	if (c->get != NULL || c->get_refused || !c->ready || c->modern)
		return;
	if ((c->get = curl_easy_init()) == NULL)
		return;
	c->getx = xmalloc(sizeof *c->getx);
	exchange_init(c->getx, c, 0);
	c->getx->standalone = true;
	c->getx->curl = c->get;
	c->get_headers = http_headers(c, NULL, "text/event-stream");
	http_setup(c->get, c->url, c->get_headers, 0);
	curl_easy_setopt(c->get, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(c->get, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->get, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(c->get, CURLOPT_WRITEDATA, c->getx);
	curl_easy_setopt(c->get, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(c->get, CURLOPT_HEADERDATA, c->getx);
	curl_multi_add_handle(c->multi, c->get);
	/*
	 * Until the server has taken the stream (its headers came), or 2 s: a
	 * server may answer on a GET that reaches it after the request it
	 * belongs to as if it were a resumption.
	 */
	for (long until = now_ms() + 2000; now_ms() < until && !c->getx->headers_done;) {
		int running, queued;
		CURLMsg *m;

		curl_multi_perform(c->multi, &running);
		if ((m = curl_multi_info_read(c->multi, &queued)) != NULL && m->msg == CURLMSG_DONE &&
		    m->easy_handle == c->get) {
			long status = 0;

			curl_easy_getinfo(c->get, CURLINFO_RESPONSE_CODE, &status);
			if (status / 100 != 2)
				c->get_refused = true;
			get_stream_close(c);
			return;
		}
		curl_multi_poll(c->multi, NULL, 0, 50, NULL);
	}
}

/*
 * Runs the transfer set up on c->curl (for x) next to the standalone stream,
 * until it ends, the answer to x's request arrives on either, the deadline
 * passes or the call is cancelled.  The curl code of x's transfer.
 */
static CURLcode
http_run(struct mcp_client *c, struct http_exchange *x, long deadline)
{
	CURLcode cc = CURLE_OK;
	bool done = false;

	if (c->multi == NULL && (c->multi = curl_multi_init()) == NULL)
		return curl_easy_perform(c->curl);
	if (x->id > 0)
		get_stream_open(c);
	curl_multi_add_handle(c->multi, c->curl);
	if (c->getx != NULL)
		c->getx->id = x->id;
	for (;;) {
		CURLMsg *m;
		int running, left_msgs;
		long left;

		curl_multi_perform(c->multi, &running);
		while ((m = curl_multi_info_read(c->multi, &left_msgs)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			if (m->easy_handle == c->curl) {
				cc = m->data.result;
				done = true;
			} else if (m->easy_handle == c->get) {
				long status = 0;

				curl_easy_getinfo(c->get, CURLINFO_RESPONSE_CODE, &status);
				if (status / 100 != 2)
					c->get_refused = true;
				if (c->getx->answer != NULL && x->answer == NULL) {
					x->answer = c->getx->answer;
					c->getx->answer = NULL;
				}
				get_stream_close(c);
			}
		}
		{
			long asked = c->asked_ms;

			flush_replies(c);
			deadline += c->asked_ms - asked;
		}
		if (c->getx != NULL && c->getx->answer != NULL && x->answer == NULL) {
			x->answer = c->getx->answer;
			c->getx->answer = NULL;
		}
		if (done || x->answer != NULL)
			break;
		left = deadline - now_ms();
		if (left <= 0) {
			cc = CURLE_OPERATION_TIMEDOUT;
			break;
		}
		if (cancel_requested(c)) {
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		curl_multi_poll(c->multi, NULL, 0, (int)(left < 100 ? left : 100), NULL);
	}
	curl_multi_remove_handle(c->multi, c->curl);
	if (c->getx != NULL)
		c->getx->id = 0;
	return cc;
}

/*
 * Performs one exchange on the main handle: a POST of text (a message), or a
 * GET of the event stream after last_event_id (text NULL).  Returns the
 * curl code; *status the HTTP status.
 */
static CURLcode
http_perform(struct mcp_client *c, struct http_exchange *x, const char *text,
    const char *method, const char *last_event_id, long deadline, long *status)
{
	struct curl_slist *h;
	CURLcode cc;

	h = http_headers(c, text != NULL ? method : NULL, text != NULL ?
	    "application/json, text/event-stream" : "text/event-stream");
	if (last_event_id != NULL) {
		char line[300];

		snprintf(line, sizeof line, "Last-Event-ID: %s", last_event_id);
		h = curl_slist_append(h, line);
	}
	x->curl = c->curl;
	/* http_run keeps the deadline (it moves while someone is asked). */
	http_setup(c->curl, c->url, h, c->multi != NULL ? 0 : deadline - now_ms());
	if (text != NULL) {
		curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	} else {
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, http_on_progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	cc = http_run(c, x, deadline);
	*status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	return cc;
}

/*
 * The outcome of a finished exchange that found no answer: RPC_FAILED or
 * RPC_ERROR with err set, or 1 when an event stream ended cleanly without
 * the answer (it may be resumed).
 */
static int
http_outcome(struct mcp_client *c, struct http_exchange *x, CURLcode cc, long status,
    long id, const char *method, const char *during, cJSON **answer, char *err,
    size_t errlen)
{
	c->last_status = status;
	if (x->answer != NULL) {
		*answer = x->answer;
		x->answer = NULL;
		return RPC_OK;
	}
	if (x->too_big) {
		too_big_err(c, err, errlen);
	} else if (x->garbage) {
		set_err(err, errlen, "not JSON-RPC: the server sent an event that is not a "
		    "JSON-RPC 2.0 message (during %s)", during);
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		timeout_err(c, during, err, errlen);
	} else if (cc == CURLE_ABORTED_BY_CALLBACK) {
		cancelled_err(c, err, errlen);
	} else if (status >= 400) {
		char reason[400] = "";

		http_reason(&x->body, reason, sizeof reason);
		redact_text(c->lim.secrets, reason, strlen(reason), REDACT_CUT_END);
		if (sign_in_err(x, status, method, err, errlen)) {
			free(c->challenge);
			c->challenge = xstrdup(x->www_auth);
			return RPC_ERROR;
		}
		if (status == 404 && c->session != NULL)
			set_err(err, errlen, "the server ended the session (HTTP 404 to %s)%s%s",
			    method, *reason ? ": " : "", reason);
		else
			set_err(err, errlen, "the server answered HTTP %ld to %s%s%s", status,
			    method, *reason ? ": " : "", reason);
		return RPC_ERROR;
	} else if (cc != CURLE_OK) {
		set_err(err, errlen, "cannot reach the server (%s): %s", during,
		    curl_easy_strerror(cc));
	} else if (id <= 0) {
		if (status / 100 == 2)
			return RPC_OK;
		set_err(err, errlen, "the server answered HTTP %ld to %s", status, method);
	} else if (x->parser != NULL) {
		set_err(err, errlen, "the server's event stream ended without an answer "
		    "(during %s)", during);
		return 1;
	} else {
		cJSON *in = x->body.len > 0 ? message_parse(c, x->body.data, x->body.len) : NULL;
		cJSON *reply = NULL;

		if (in != NULL && classify(c, in, id, answer, &reply) == 1) {
			cJSON_Delete(reply);
			return RPC_OK;
		}
		cJSON_Delete(reply);
		cJSON_Delete(in);
		set_err(err, errlen, "not JSON-RPC: the server's answer to %s is not a "
		    "JSON-RPC 2.0 response (HTTP %ld)", method, status);
	}
	return RPC_FAILED;
}

/*
 * POSTs one message (consumed) and, for a request, finds the answer with its
 * id in the JSON body or the event stream.  An event stream that ends
 * without the answer is resumed with GET and Last-Event-ID after the
 * server's retry time, as long as it named event ids.
 */
static int
http_post(struct mcp_client *c, cJSON *msg, long id, const char *method, const char *during,
    long deadline, cJSON **answer, char *err, size_t errlen)
{
	struct http_exchange x;
	char *text = json_print(msg);
	char last_id[256];
	long status = 0, retry;
	CURLcode cc;
	int rc;

	cJSON_Delete(msg);
	*answer = NULL;
	exchange_init(&x, c, id);
	cc = http_perform(c, &x, text, method, NULL, deadline, &status);
	free(text);
	if (x.session[0] != '\0' && c->session == NULL && status / 100 == 2)
		c->session = xstrdup(x.session);
	rc = http_outcome(c, &x, cc, status, id, method, during, answer, err, errlen);
	for (int resumes = 0; rc == 1 && x.last_id[0] != '\0' && resumes < MCP_MAX_RESUMES;
	    resumes++) {
		snprintf(last_id, sizeof last_id, "%s", x.last_id);
		retry = x.retry >= 0 ? x.retry : MCP_DEFAULT_RETRY_MS;
		exchange_done(&x);
		if (now_ms() + retry >= deadline) {
			timeout_err(c, during, err, errlen);
			return RPC_FAILED;
		}
		if (!pause_ms(c, retry, deadline)) {
			cancelled_err(c, err, errlen);
			return RPC_FAILED;
		}
		exchange_init(&x, c, id);
		cc = http_perform(c, &x, NULL, method, last_id, deadline, &status);
		rc = http_outcome(c, &x, cc, status, id, method, during, answer, err, errlen);
		if (rc == RPC_ERROR) {
			set_err(err, errlen, "the server's event stream ended without an answer and "
			    "could not be resumed (HTTP %ld, during %s)", status, during);
			rc = RPC_FAILED;
		}
		if (x.last_id[0] == '\0')
			snprintf(x.last_id, sizeof x.last_id, "%s", last_id);
	}
	exchange_done(&x);
	return rc == 1 ? RPC_FAILED : rc;
}

static int initialize(struct mcp_client *c, char *err, size_t errlen);

static int
http_rpc(struct mcp_client *c, long id, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	long deadline = now_ms() + c->lim.request_timeout_ms;
	bool had_session = c->session != NULL;
	cJSON *again = c->ready && had_session ? cJSON_Duplicate(params, true) : NULL;
	cJSON *answer = NULL;
	int rc = http_post(c, request_new(c, id, method, params), id, method, during, deadline,
	    &answer, err, errlen);

	/* The server forgot the session: one new initialization, then the request again. */
	if (rc == RPC_ERROR && c->last_status == 404 && again != NULL && !c->modern) {
		char why[512];

		free(c->session);
		c->session = NULL;
		get_stream_close(c);
		if (initialize(c, why, sizeof why) != 0) {
			set_err(err, errlen, "the server ended the session and a new one could not "
			    "be started: %s", why);
			cJSON_Delete(again);
			return RPC_FAILED;
		}
		id = c->next_id++;
		deadline = now_ms() + c->lim.request_timeout_ms;
		rc = http_post(c, request_new(c, id, method, again), id, method, during, deadline,
		    &answer, err, errlen);
		again = NULL;
	}
	cJSON_Delete(again);
	if (rc != RPC_OK)
		return rc;
	rc = answer_take(answer, method, result, code, err, errlen);
	cJSON_Delete(answer);
	return rc;
}

/* --- requests, whatever the transport -------------------------------------- */

/* Sends a notification (params consumed, NULL = {}) within ms. */
static int
notify_within(struct mcp_client *c, const char *method, cJSON *params, long ms, char *err,
    size_t errlen)
{
	cJSON *msg = request_new(c, 0, method, params);

	if (c->http) {
		cJSON *answer = NULL;
		int rc = http_post(c, msg, 0, method, "the handshake", now_ms() + ms, &answer, err,
		    errlen);

		cJSON_Delete(answer);
		return rc == RPC_OK ? 0 : -1;
	}
	return stdio_send_json(c, msg, now_ms() + ms, "the handshake", err, errlen);
}

static int
notify(struct mcp_client *c, const char *method, char *err, size_t errlen)
{
	return notify_within(c, method, NULL, c->lim.request_timeout_ms, err, errlen);
}

/*
 * Tells the server that request id is abandoned (its time ran out, or the
 * run was cancelled), so that it can stop working on it.  Best effort.
 */
static void
notify_cancelled(struct mcp_client *c, long id, const char *reason)
{
	cJSON *params = cJSON_CreateObject();
	int fd = c->cancel_fd;
	char ignored[256];

	cJSON_AddNumberToObject(params, "requestId", (double)id);
	cJSON_AddStringToObject(params, "reason", reason);
	c->cancel_fd = -1;	/* the notice itself is not cancelled */
	notify_within(c, "notifications/cancelled", params, MCP_CANCEL_NOTICE_MS, ignored,
	    sizeof ignored);
	c->cancel_fd = fd;
}

/* params is consumed; *result is the answer's result on RPC_OK. */
static int
rpc(struct mcp_client *c, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	long id = c->next_id++;
	int rc;

	*result = NULL;
	c->failure = FAIL_OTHER;
	if (c->http)
		rc = http_rpc(c, id, method, params, during, result, code, err, errlen);
	else
		rc = stdio_rpc(c, id, method, params, during, result, code, err, errlen);
	/* initialize is never cancelled (the specification says so); the probe neither. */
	if (rc == RPC_FAILED && c->ready &&
	    (c->failure == FAIL_TIMEOUT || c->failure == FAIL_CANCELLED)) {
		bool timed_out = c->failure == FAIL_TIMEOUT;

		notify_cancelled(c, id, timed_out ? "timed out" : "cancelled");
		c->failure = timed_out ? FAIL_TIMEOUT : FAIL_CANCELLED;
	}
	return rc;
}

static cJSON *
client_info(void)
{
	cJSON *info = cJSON_CreateObject();

	cJSON_AddStringToObject(info, "name", MCP_CLIENT_NAME);
	cJSON_AddStringToObject(info, "version", TD_VERSION);
	return info;
}

/* What the client offers: roots (the workspace) when it has one. */
static cJSON *
client_capabilities(const struct mcp_client *c)
{
	cJSON *caps = cJSON_CreateObject();

	if (c->root_uri != NULL)
		cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "roots"), "listChanged", false);
	if (c->elicit != NULL)
		cJSON_AddObjectToObject(cJSON_AddObjectToObject(caps, "elicitation"), "form");
	return caps;
}

static void
keep_server_name(struct mcp_client *c, const cJSON *result)
{
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(result, "serverInfo");
	const char *name = json_get_string(info, "name");

	free(c->server_name);
	c->server_name = name != NULL ? xstrndup(name, strnlen(name, 200)) : NULL;
}

/* server/discover: 1 = a modern server, 0 = fall back, -1 = failed. */
static int
try_discover(struct mcp_client *c, char *err, size_t errlen)
{
	cJSON *params = cJSON_CreateObject();
	cJSON *meta = cJSON_AddObjectToObject(params, "_meta");
	cJSON *result = NULL;
	const cJSON *versions;
	int rc, code = 0;
	bool ours = false;

	cJSON_AddStringToObject(meta, MCP_META_VERSION, MCP_MODERN_VERSION);
	cJSON_AddItemToObject(meta, "io.modelcontextprotocol/clientInfo", client_info());
	cJSON_AddItemToObject(meta, "io.modelcontextprotocol/clientCapabilities",
	    client_capabilities(c));
	c->modern = true;	/* headers of the probe */
	rc = rpc(c, "server/discover", params, "the handshake", &result, &code, err, errlen);
	c->modern = false;
	if (rc == RPC_ERROR && code == -32022) {
		/* UnsupportedProtocolVersionError: a server of a later revision only. */
		set_err(err, errlen, "the server speaks only MCP revisions this client does not "
		    "know (it refused %s)", MCP_MODERN_VERSION);
		return -1;
	}
	if (rc == RPC_ERROR)
		return 0;
	/*
	 * On stdio a server of an earlier revision may also ignore the probe, or
	 * exit on it: fall back to initialize, on a fresh process in the second case.
	 */
	if (rc == RPC_FAILED && !c->http && c->failure == FAIL_TIMEOUT)
		return 0;
	if (rc == RPC_FAILED && !c->http && c->failure == FAIL_EXITED && c->program != NULL) {
		stdio_stop(c);
		return stdio_start(c, err, errlen) == 0 ? 0 : -1;
	}
	if (rc == RPC_FAILED)
		return -1;
	versions = cJSON_GetObjectItemCaseSensitive(result, "supportedVersions");
	for (const cJSON *v = cJSON_IsArray(versions) ? versions->child : NULL; v; v = v->next)
		if (cJSON_IsString(v) && strcmp(v->valuestring, MCP_MODERN_VERSION) == 0)
			ours = true;
	if (ours) {
		keep_server_name(c, result);
		c->modern = true;
		c->version = xstrdup(MCP_MODERN_VERSION);
	}
	cJSON_Delete(result);
	/* An answer without our version: a server of another era; initialize decides. */
	return ours ? 1 : 0;
}

static int
initialize(struct mcp_client *c, char *err, size_t errlen)
{
	cJSON *params = cJSON_CreateObject(), *result = NULL;
	const char *version;

	cJSON_AddStringToObject(params, "protocolVersion", MCP_LEGACY_VERSION);
	cJSON_AddItemToObject(params, "capabilities", client_capabilities(c));
	cJSON_AddItemToObject(params, "clientInfo", client_info());
	free(c->session);
	c->session = NULL;
	if (rpc(c, "initialize", params, "the handshake", &result, NULL, err, errlen) != RPC_OK)
		return -1;
	version = json_get_string(result, "protocolVersion");
	if (version == NULL || strlen(version) > 32) {
		cJSON_Delete(result);
		set_err(err, errlen, "not JSON-RPC: the server's initialize answer has no "
		    "protocolVersion");
		return -1;
	}
	{
		bool known = false;

		for (size_t i = 0; known_versions[i] != NULL; i++)
			known = known || strcmp(version, known_versions[i]) == 0;
		if (!known) {
			set_err(err, errlen, "the server answered MCP revision %s, which this client "
			    "does not know (it speaks %s to %s)", version,
			    known_versions[sizeof known_versions / sizeof *known_versions - 2],
			    known_versions[0]);
			cJSON_Delete(result);
			return -1;
		}
	}
	free(c->version);
	c->version = xstrdup(version);
	keep_server_name(c, result);
	cJSON_Delete(result);
	return notify(c, "notifications/initialized", err, errlen);
}

int
mcp_handshake(struct mcp_client *c, char *err, size_t errlen)
{
	int k;

	if (c->ready)
		return 0;
	k = try_discover(c, err, errlen);
	if (k < 0)
		return -1;
	if (k == 0 && initialize(c, err, errlen) != 0)
		return -1;
	c->ready = true;
	return 0;
}

/* --- tools ------------------------------------------------------------------ */

void
mcp_tools_free(struct mcp_tool *tools, size_t n)
{
	for (size_t i = 0; tools != NULL && i < n; i++) {
		free(tools[i].name);
		free(tools[i].description);
		cJSON_Delete(tools[i].input_schema);
	}
	free(tools);
}

static bool
tool_from_json(const cJSON *t, struct mcp_tool *out)
{
	const char *name = json_get_string(t, "name");
	const char *desc = json_get_string(t, "description");
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(t, "annotations");

	if (name == NULL || *name == '\0' || strlen(name) > 256)
		return false;
	out->name = xstrdup(name);
	out->description = xstrdup(desc != NULL ? desc : "");
	if (cJSON_IsObject(schema)) {
		out->input_schema = cJSON_Duplicate(schema, true);
	} else {
		out->input_schema = cJSON_CreateObject();
		cJSON_AddStringToObject(out->input_schema, "type", "object");
	}
	out->read_only_hint = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, "readOnlyHint"));
	return true;
}

int
mcp_list_tools(struct mcp_client *c, struct mcp_tool **tools, size_t *n, char *err,
    size_t errlen)
{
	struct mcp_tool *list = NULL;
	size_t count = 0, cap = 0;
	char *cursor = NULL;
	int pages = 0;

	*tools = NULL;
	*n = 0;
	if (!c->ready) {
		set_err(err, errlen, "no handshake yet");
		return -1;
	}
	do {
		cJSON *params = cJSON_CreateObject(), *result = NULL;
		const cJSON *arr, *next;

		if (cursor != NULL)
			cJSON_AddStringToObject(params, "cursor", cursor);
		free(cursor);
		cursor = NULL;
		if (rpc(c, "tools/list", params, "tools/list", &result, NULL, err, errlen) != RPC_OK)
			goto fail;
		arr = cJSON_GetObjectItemCaseSensitive(result, "tools");
		if (!cJSON_IsArray(arr)) {
			cJSON_Delete(result);
			set_err(err, errlen, "not JSON-RPC: the tools/list answer has no tools array");
			goto fail;
		}
		for (const cJSON *t = arr->child; t != NULL; t = t->next) {
			if (count >= c->lim.max_tools) {
				cJSON_Delete(result);
				set_err(err, errlen, "the server lists more than %zu tools",
				    c->lim.max_tools);
				goto fail;
			}
			if (count == cap) {
				cap = cap ? cap * 2 : 16;
				list = xrealloc(list, cap * sizeof *list);
			}
			memset(&list[count], 0, sizeof list[count]);
			if (tool_from_json(t, &list[count]))
				count++;
		}
		next = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
		if (cJSON_IsString(next) && *next->valuestring != '\0')
			cursor = xstrndup(next->valuestring, strnlen(next->valuestring, 4096));
		cJSON_Delete(result);
		/* A server that keeps handing out cursors with no tools ends here. */
		if (++pages > (int)c->lim.max_tools + 1 && cursor != NULL) {
			set_err(err, errlen, "the server's tools/list pages never end");
			goto fail;
		}
	} while (cursor != NULL);
	*tools = list;
	*n = count;
	return 0;

fail:
	free(cursor);
	mcp_tools_free(list, count);
	return -1;
}

int
mcp_call_tool(struct mcp_client *c, const char *name, const cJSON *arguments, cJSON **result,
    char *err, size_t errlen)
{
	cJSON *params = cJSON_CreateObject();
	char during[300];
	int rc;

	*result = NULL;
	if (!c->ready) {
		cJSON_Delete(params);
		set_err(err, errlen, "no handshake yet");
		return -1;
	}
	cJSON_AddStringToObject(params, "name", name);
	cJSON_AddItemToObject(params, "arguments", arguments != NULL ?
	    cJSON_Duplicate(arguments, true) : cJSON_CreateObject());
	if (c->progress != NULL)	/* one call at a time: one token is enough */
		cJSON_AddStringToObject(cJSON_AddObjectToObject(params, "_meta"), "progressToken",
		    "taskdeck-call");
	snprintf(during, sizeof during, "the call of %.200s", name);
	rc = rpc(c, "tools/call", params, during, result, NULL, err, errlen);
	return rc == RPC_OK ? 0 : -1;
}

bool
mcp_tools_changed(struct mcp_client *c)
{
	bool changed = c->tools_changed;

	c->tools_changed = false;
	return changed;
}

void
mcp_set_progress(struct mcp_client *c, mcp_progress_fn fn, void *ud)
{
	c->progress = fn;
	c->progress_ud = ud;
}

/* --- closing ---------------------------------------------------------------- */

/* DELETE of the session, as the transport asks; its outcome does not matter. */
static void
http_end_session(struct mcp_client *c)
{
	struct curl_slist *h = http_headers(c, NULL, "application/json, text/event-stream");

	http_setup(c->curl, c->url, h, 2000L);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
	curl_easy_perform(c->curl);
	curl_slist_free_all(h);
}

/* Ends the stdio server: its whole process group, reaped; its descriptors closed. */
static void
stdio_stop(struct mcp_client *c)
{
	if (c->to_fd >= 0)
		close(c->to_fd);	/* a well-behaved server exits at the end of its input */
	c->to_fd = -1;
	if (c->pid > 0) {
		pid_t pgid = c->pid;

		reap(c, MCP_CLOSE_GRACE_MS);
		if (!c->exited) {
			kill(-pgid, SIGTERM);
			reap(c, MCP_TERM_GRACE_MS);
		}
		/* Whatever is left of the group, the leader included (a sandbox's pid
		 * namespace ends with its bwrap). */
		if (c->sandboxed && !c->exited)
			sandbox_kill(c->pid);
		else
			kill(-pgid, SIGKILL);
		if (!c->exited && waitpid(c->pid, &c->wstatus, 0) == c->pid)
			c->exited = true;
		if (c->sandboxed && c->exited) {
			char bound[160];

			sandbox_limits_end(c->pid, c->wstatus, bound, sizeof bound);
		}
	}
	if (c->from_fd >= 0)
		close(c->from_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->from_fd = c->err_fd = -1;
}

void
mcp_close(struct mcp_client *c)
{
	if (c == NULL)
		return;
	stdio_stop(c);
	get_stream_close(c);
	if (c->curl != NULL && c->session != NULL)
		http_end_session(c);
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	if (c->aux != NULL)
		curl_easy_cleanup(c->aux);
	if (c->multi != NULL)
		curl_multi_cleanup(c->multi);
	cJSON_Delete(c->replies);
	cJSON_Delete(c->deferred);
	if (c->elicit_ud_free != NULL)
		c->elicit_ud_free(c->elicit_ud);
	free(c->root_uri);
	free(c->challenge);
	/* The headers may hold credentials. */
	for (struct curl_slist *l = c->user_headers; l != NULL; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(c->user_headers);
	buf_free(&c->in);
	free(c->tail);
	free(c->program);
	strv_wipe_free(c->argv);
	strv_wipe_free(c->envp);
	free(c->cwd);
	free(c->url);
	free(c->session);
	free(c->version);
	free(c->server_name);
	free(c);
}
