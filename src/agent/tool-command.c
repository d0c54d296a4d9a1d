/*
 * run_command: /bin/sh in the workspace, in the sandbox of the run's profile
 * (src/common/sandbox.h, docs/agent.md "The sandbox"); the command reaches the shell
 * through a descriptor, not its command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"
#include "json.h"
#include "sandbox.h"
#include "timeutil.h"
#include "tools.h"
#include "xalloc.h"

#define COMMAND_MAX 65536
#define BOUND_MAX 160		/* what a resource bound did, for the status line */

extern char **environ;

/* The variables a command keeps unless the profile is full-access; TMPDIR is /tmp. */
static const char *const command_env_keep[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "TZ",
};

struct command_env {
	char **vars;		/* NULL-terminated */
	bool owned;
};

static void
command_env_make(struct command_env *env, bool full)
{
	size_t n = 0, max = sizeof command_env_keep / sizeof *command_env_keep;

	if (full) {
		env->vars = environ;
		env->owned = false;
		return;
	}
	env->vars = xcalloc(max + 3, sizeof *env->vars);
	env->owned = true;
	env->vars[n++] = xstrdup("TMPDIR=/tmp");	/* the sandbox's private /tmp */
	for (size_t i = 0; i < max; i++) {
		const char *v = getenv(command_env_keep[i]);

		if (v != NULL)
			env->vars[n++] = xasprintf("%s=%s", command_env_keep[i], v);
	}
	if (getenv("PATH") == NULL)
		env->vars[n++] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
}

static void
command_env_free(struct command_env *env)
{
	if (!env->owned)
		return;
	for (char **v = env->vars; *v; v++)
		free(*v);
	free(env->vars);
}

struct command_run {
	pid_t pid;
	int fd;			/* read end of the output pipe; -1 after EOF */
	struct buf out;		/* the first max bytes */
	size_t max;
	long long dropped;	/* bytes past max */
	bool exited;
	int status;
};

static void
command_read(struct command_run *r)
{
	char chunk[16384];

	for (;;) {
		ssize_t n = read(r->fd, chunk, sizeof chunk);
		size_t keep;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(r->fd);
			r->fd = -1;
			return;
		}
		keep = r->out.len < r->max ? r->max - r->out.len : 0;
		if (keep > (size_t)n)
			keep = (size_t)n;
		buf_append(&r->out, chunk, keep);
		r->dropped += n - (ssize_t)keep;
	}
}

/*
 * Kills the sandbox with everything in it and collects it.  Once collected, the
 * pid may be another process's: only its group, which outlives the pid while
 * members are left (an unconfined command's), is killed then.
 */
static void
command_kill(struct command_run *r)
{
	if (r->exited) {
		killpg(r->pid, SIGKILL);
		return;
	}
	sandbox_kill(r->pid);
	while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
		;
	r->exited = true;
}

/* Reads what the killed group left in the pipe, for at most a second. */
static void
command_drain(struct command_run *r)
{
	int64_t end = clock_mono_ms() + 1000;

	while (r->fd >= 0) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		int64_t left = end - clock_mono_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		command_read(r);
	}
	if (r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
	}
}

enum command_end { COMMAND_EXITED, COMMAND_TIMEOUT, COMMAND_CANCELLED };

static enum command_end
command_wait(struct host *host, struct command_run *r, long timeout_ms)
{
	int64_t deadline = clock_mono_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = host_cancel_fd(host), .events = POLLIN },
			{ .fd = r->fd, .events = POLLIN },
		};
		int64_t left = deadline - clock_mono_ms();

		if (host_cancelled(host))
			return COMMAND_CANCELLED;
		if (waitpid(r->pid, &r->status, WNOHANG) == r->pid) {
			r->exited = true;
			return COMMAND_EXITED;
		}
		if (left <= 0)
			return COMMAND_TIMEOUT;
		/* The shell's exit is noticed by waitpid: poll in short steps. */
		if (poll(pfd, r->fd >= 0 ? 2 : 1, left > 50 ? 50 : (int)left) > 0 &&
		    r->fd >= 0 && pfd[1].revents)
			command_read(r);
	}
}

/* Whether out (the command's output) holds needle. */
static bool
output_says(const struct command_run *r, const char *needle)
{
	return r->out.data != NULL &&
	    memmem(r->out.data, r->out.len, needle, strlen(needle)) != NULL;
}

/*
 * For a failed command whose output shows a bound that makes calls fail instead
 * of killing (docs/agent.md "Resource bounds"): which, in bound (left as is otherwise).
 */
static void
command_bound_seen(const struct command_run *r, const struct sandbox_limits *lim,
    char *bound, size_t len)
{
	/* a memory cgroup kills instead of failing calls: sandbox_limits_end says so */
	bool rlimit = lim->memory > 0 && !sandbox_memory_cgroup();

	if (bound[0] != '\0')
		return;
	/* ASan, TSan and MSan reserve terabytes of shadow memory, which RLIMIT_DATA counts */
	if (rlimit && output_says(r, "ReserveShadowMemoryRange failed"))
		snprintf(bound, len, "memory limit %lld MiB per process: a sanitizer build needs "
		    "runs.commandLimits.memoryMiB 0", lim->memory >> 20);
	else if (rlimit && (output_says(r, "Cannot allocate memory") ||
	    output_says(r, "memory exhausted") || output_says(r, "out of memory") ||
	    output_says(r, "MemoryError")))
		snprintf(bound, len, "memory limit %lld MiB per process: an allocation failed",
		    lim->memory >> 20);
	else if (lim->tmp_size > 0 && output_says(r, "No space left on device"))
		snprintf(bound, len, "/tmp and /dev/shm hold at most %lld MiB each: a write "
		    "failed", lim->tmp_size >> 20);
}

static void
command_report(struct command_run *r, const char *command, enum command_end end,
    const struct agent_config *cfg, char *bound, int64_t ms, struct tool_result *res)
{
	char status[192];

	if (end != COMMAND_TIMEOUT && (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0))
		command_bound_seen(r, &cfg->limits, bound, BOUND_MAX);
	if (end == COMMAND_TIMEOUT)
		snprintf(status, sizeof status, "timed out after %ld ms; killed",
		    cfg->command_timeout_ms);
	else if (bound[0] != '\0' && strncmp(bound, "killed", 6) == 0)
		snprintf(status, sizeof status, "%s", bound);
	else if (WIFEXITED(r->status))
		snprintf(status, sizeof status, "exit status %d%s%s", WEXITSTATUS(r->status),
		    bound[0] ? "; " : "", bound);
	else
		snprintf(status, sizeof status, "killed by signal %d%s%s", WTERMSIG(r->status),
		    bound[0] ? "; " : "", bound);
	buf_printf(&res->content, "$ %s\n%s\n", command, status);
	agent_utf8_append(&res->content, r->out.data ? r->out.data : "", r->out.len);
	if (r->dropped > 0)
		buf_printf(&res->content, "\n[output truncated: %lld more bytes]\n", r->dropped);
	res->failed = end == COMMAND_TIMEOUT || !WIFEXITED(r->status) ||
	    WEXITSTATUS(r->status) != 0;
	tool_result_summary(res, "%s in %.1f s", status, (double)ms / 1000);
}

int
tool_run_command(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const char *command = json_get_string(args, "command");
	struct command_run r = { .fd = -1, .max = tool_output_max(ctx) };
	struct sandbox_policy policy = {
		.profile = agent_sandbox_profile(ctx->cfg->profile),
		.workspace = ctx->cfg->workspace,
		.network = ctx->cfg->network,
		.hidden = (const char *const *)ctx->cfg->hidden,
		.allow_unconfined = ctx->cfg->allow_unconfined,
		.limits = &ctx->cfg->limits,
	};
	struct command_env env;
	enum command_end end;
	int64_t started;
	int pipefd[2], fds[3];
	char err[1024], bound[BOUND_MAX];
	int rc;

	if (command == NULL || command[0] == '\0' || strlen(command) > COMMAND_MAX) {
		tool_result_fail(res, "the argument \"command\" must be a non-empty string "
		    "of at most %d bytes", COMMAND_MAX);
		return AGENT_OK;
	}
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		tool_result_fail(res, "cannot run the command: %s", strerror(errno));
		return AGENT_OK;
	}
	command_env_make(&env, ctx->cfg->profile == PROFILE_FULL_ACCESS);
	started = clock_mono_ms();
	fds[0] = -1, fds[1] = pipefd[1], fds[2] = pipefd[1];
	rc = sandbox_spawn_shell(&policy, ctx->cfg->workspace, command, env.vars, fds, &r.pid,
	    err, sizeof err);
	close(pipefd[1]);
	command_env_free(&env);
	if (rc != 0) {
		close(pipefd[0]);
		tool_result_fail(res, "cannot run the command: %s", err);
		return AGENT_OK;
	}
	r.fd = pipefd[0];
	fcntl(r.fd, F_SETFL, O_NONBLOCK);
	buf_init(&r.out, 0);

	end = command_wait(ctx->host, &r, ctx->cfg->command_timeout_ms);
	/* Nothing the command started outlives it: its pid namespace goes too. */
	command_kill(&r);
	command_drain(&r);
	sandbox_limits_end(r.pid, r.status, bound, sizeof bound);
	if (end == COMMAND_CANCELLED) {
		tool_result_summary(res, "cancelled");
		res->failed = true;
	} else
		command_report(&r, command, end, ctx->cfg, bound, clock_mono_ms() - started, res);
	buf_free(&r.out);
	return end == COMMAND_CANCELLED ? AGENT_CANCELLED : AGENT_OK;
}

void
tool_describe_command(const cJSON *args, char *out, size_t len)
{
	const char *c = json_get_string(args, "command");

	snprintf(out, len, "run: %s", c ? c : "");
}
