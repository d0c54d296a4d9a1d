/*
 * The stdio transport of the MCP client (mcp-int.h): the server as a child
 * process, sandboxed when asked, one JSON-RPC message per line.
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
#include "mcp-int.h"
#include "sandbox.h"
#include "redact.h"
#include "sse.h"
#include "xalloc.h"

/* How long a stdio server gets to exit by itself, then after SIGTERM. */
#define MCP_CLOSE_GRACE_MS 50
#define MCP_TERM_GRACE_MS 1000

static const struct mcp_transport_ops stdio_ops;

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
			mcp_set_err(err, errlen, "cannot start the server: %s", why);
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
		mcp_set_err(err, errlen, "cannot start the server: %s: %s", argv[0], strerror(rc));
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
		mcp_set_err(err, errlen, "cannot start the server: %s", strerror(errno));
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
		mcp_set_err(err, errlen, "no command to start");
		return NULL;
	}
	if (envp == NULL)
		envp = no_env;
	program = resolve_command(command, envp);
	if (program == NULL) {
		mcp_set_err(err, errlen, "cannot start the server: %s: command not found", command);
		return NULL;
	}
	c = mcp_client_new(&stdio_ops, lim);
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
	size_t cap = c->lim.stderr_tail_bytes, start;
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
	mcp_printable_line(raw, c->tail_len, out, len);
	explicit_bzero(raw, c->tail_len);
	free(raw);
}

static void
reap(struct mcp_client *c, int wait_ms)
{
	long deadline = mcp_now_ms() + wait_ms;

	while (!c->exited && c->pid > 0) {
		pid_t r = waitpid(c->pid, &c->wstatus, WNOHANG);

		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			c->exited = true;
			break;
		}
		if (mcp_now_ms() >= deadline)
			break;
		usleep(5000);
	}
}

/* "the server exited during X (status N): <stderr tail>" */
static void
exited_err(struct mcp_client *c, const char *during, char *err, size_t errlen)
{
	char tail[1024], how[64] = "";
	long deadline = mcp_now_ms() + 500;

	/* Its last words may still be on their way. */
	while (c->err_fd >= 0 && mcp_now_ms() < deadline) {
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
	mcp_set_err(err, errlen, "the server exited during %s%s%s%s", during, how,
	    *tail ? ": " : " (nothing on stderr)", tail);
}

/* "; stderr: <its last bytes>", or nothing when it wrote none. */
static void
stdio_timeout_detail(const struct mcp_client *c, char *out, size_t len)
{
	char tail[512];

	tail_text(c, tail, sizeof tail);
	snprintf(out, len, "%s%s", *tail ? "; stderr: " : "", tail);
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
			long left = deadline - mcp_now_ms();

			if (left <= 0) {
				mcp_timeout_err(c, during, err, errlen);
				return -1;
			}
			drain_stderr(c);
			if (poll(p, c->cancel_fd >= 0 ? 2 : 1, (int)(left < 100 ? left : 100)) > 0 &&
			    (p[1].revents & POLLIN)) {
				mcp_cancelled_err(c, err, errlen);
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
				mcp_too_big_err(c, err, errlen);
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
			mcp_too_big_err(c, err, errlen);
			return -1;
		}
		if (c->from_fd < 0) {
			exited_err(c, during, err, errlen);
			return -1;
		}

		struct pollfd p[3] = { { .fd = c->from_fd, .events = POLLIN },
			{ .fd = c->err_fd, .events = POLLIN },
			{ .fd = c->cancel_fd, .events = POLLIN } };
		long left = deadline - mcp_now_ms();
		int r;

		if (left <= 0) {
			mcp_timeout_err(c, during, err, errlen);
			return -1;
		}
		r = poll(p, 3, (int)left);
		if (r < 0 && errno != EINTR) {
			mcp_set_err(err, errlen, "cannot wait for the server: %s", strerror(errno));
			return -1;
		}
		if (p[2].revents & POLLIN) {
			mcp_cancelled_err(c, err, errlen);
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

/* The transport's watch: the lines read stay in c->in but for the notice taken. */
static int
stdio_watch(struct mcp_client *c, const cJSON *mid, int ms)
{
	long deadline = mcp_now_ms() + ms;
	char chunk[65536];

	for (;;) {
		size_t from = 0;
		char *nl;

		while (c->in.len > from &&
		    (nl = memchr(c->in.data + from, '\n', c->in.len - from)) != NULL) {
			size_t start = from, n = (size_t)(nl - (c->in.data + start));

			from = start + n + 1;
			/* The rest of an oversized line is not a message. */
			if ((start == 0 && c->discarding) || n > c->lim.max_message_bytes ||
			    !mcp_line_cancels(c, c->in.data + start, n, mid))
				continue;
			memmove(c->in.data + start, nl + 1, c->in.len - from);
			c->in.len -= n + 1;
			c->in.data[c->in.len] = '\0';
			c->scanned = 0;
			return 1;
		}
		if (c->from_fd < 0)
			return 1;

		/* Past the bound, nothing more is read until the call takes its lines. */
		bool full = c->in.len > c->lim.max_message_bytes;
		struct pollfd p[2] = { { .fd = full ? -1 : c->from_fd, .events = POLLIN },
			{ .fd = c->err_fd, .events = POLLIN } };
		long left = deadline - mcp_now_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(p, 2, (int)left);
		if (r < 0 && errno != EINTR)
			return 0;
		if (r > 0 && p[1].revents)
			drain_stderr(c);
		if (r > 0 && p[0].revents) {
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

static int stdio_send_json(struct mcp_client *c, cJSON *msg, long deadline, const char *during,
    char *err, size_t errlen);

static int
stdio_rpc(struct mcp_client *c, long id, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	long deadline = mcp_now_ms() + c->lim.request_timeout_ms;
	cJSON *msg = mcp_request_new(c, id, method, params);

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
		in = mcp_message_parse(c, line, len);
		free(line);
		{
			long asked = c->asked_ms;

			k = in != NULL ? mcp_classify(c, in, id, &answer, &reply) : -1;
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
			int rc = mcp_answer_take(in, method, result, code, err, errlen);

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
		mcp_fmt_size(c->lim.max_message_bytes, s, sizeof s);
		mcp_set_err(err, errlen, "message over %s to the server", s);
		return -1;
	}
	text = xrealloc(text, len + 2);
	text[len++] = '\n';
	text[len] = '\0';
	rc = stdio_write(c, text, len, deadline, during, err, errlen);
	free(text);
	return rc;
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

/* --- the transports --------------------------------------------------------- */

/*
 * On stdio a server of an earlier revision may also ignore the probe, or
 * exit on it: fall back to initialize, on a fresh process in the second case.
 */
static int
stdio_probe_failed(struct mcp_client *c, char *err, size_t errlen)
{
	if (c->failure == FAIL_TIMEOUT)
		return 0;
	if (c->failure == FAIL_EXITED && c->program != NULL) {
		stdio_stop(c);
		return stdio_start(c, err, errlen) == 0 ? 0 : -1;
	}
	return -1;
}

static int
stdio_notify(struct mcp_client *c, cJSON *msg, const char *method, long deadline, char *err,
    size_t errlen)
{
	(void)method;
	return stdio_send_json(c, msg, deadline, "the handshake", err, errlen);
}

static int
stdio_pid(const struct mcp_client *c)
{
	return (int)c->pid;
}

static void
stdio_close(struct mcp_client *c)
{
	stdio_stop(c);
	buf_free(&c->in);
	free(c->tail);
	free(c->program);
	strv_wipe_free(c->argv);
	strv_wipe_free(c->envp);
	free(c->cwd);
}

static const struct mcp_transport_ops stdio_ops = {
	.rpc = stdio_rpc,
	.notify = stdio_notify,
	.probe_failed = stdio_probe_failed,
	.timeout_detail = stdio_timeout_detail,
	.pid = stdio_pid,
	.watch = stdio_watch,
	.close = stdio_close,
};
