/*
 * The agent process (supervisor-int.h): spawning taskdeck-agent with its
 * environment, writing its stdin, copying its stderr into the log, and
 * reaping it.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "json.h"
#include "log.h"
#include "supervisor-int.h"
#include "timeutil.h"
#include "xalloc.h"

/* Writes one line to the agent's stdin; false once the agent is gone. */
bool
agent_proc_send(struct run_state *rs, const cJSON *msg)
{
	char *text = json_print(msg);
	size_t len = strlen(text), off = 0;
	bool ok = true;

	text = realloc(text, len + 2);
	if (text == NULL)
		abort();
	text[len++] = '\n';
	while (rs->in_fd >= 0 && off < len) {
		ssize_t n = write(rs->in_fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = false;
			break;
		}
		off += (size_t)n;
	}
	sodium_memzero(text, len);	/* the start line holds the API key */
	free(text);
	return ok && rs->in_fd >= 0;
}

/* Copies the agent's stderr into the log, a chunk at a time; false at end of file. */
bool
agent_proc_read_stderr(struct run_state *rs)
{
	char chunk[4096];
	ssize_t n = read(rs->err_fd, chunk, sizeof chunk - 1);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	chunk[n] = '\0';
	chunk[strcspn(chunk, "\r")] = '\0';
	if (n > 0 && chunk[strlen(chunk) - 1] == '\n')
		chunk[strlen(chunk) - 1] = '\0';
	log_debug("agent %s: %s", rs->ar->id, chunk);
	return true;
}

/* Builds the agent's environment: a few variables of ours, nothing secret. */
static char **
agent_proc_environment(void)
{
	static const char *const keep[] = { "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR",
		"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TASKDECK_BWRAP", NULL };
	char **env = xcalloc(sizeof keep / sizeof keep[0] + 1, sizeof *env);
	int n = 0;

	for (const char *const *k = keep; *k; k++) {
		const char *v = getenv(*k);
		if (v != NULL)
			env[n++] = xasprintf("%s=%s", *k, v);
	}
	if (getenv("PATH") == NULL)
		env[n++] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
	return env;
}

static void
agent_proc_environment_free(char **env)
{
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/* Starts the agent in its own process group; false with errno set. */
bool
agent_proc_spawn(struct run_state *rs, const char *path, mode_t user_umask)
{
	int in[2], out[2], err[2];
	char *argv[] = { (char *)"taskdeck-agent", NULL };
	char **env = agent_proc_environment();
	pid_t parent = getpid();
	sigset_t none;

	sigemptyset(&none);
	if (pipe2(in, O_CLOEXEC) != 0) {
		agent_proc_environment_free(env);
		return false;
	}
	if (pipe2(out, O_CLOEXEC) != 0) {
		close(in[0]), close(in[1]);
		agent_proc_environment_free(env);
		return false;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		agent_proc_environment_free(env);
		return false;
	}
	rs->pid = fork();
	if (rs->pid == 0) {
		/* Only async-signal-safe calls from here on. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(125);
		sigaction(SIGPIPE, &dfl, NULL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* What the run writes in the workspace is the user's, with the user's modes. */
		umask(user_umask);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0 ||
		    chdir(rs->workspace) != 0)
			_exit(126);
		execve(path, argv, env);
		_exit(127);
	}
	agent_proc_environment_free(env);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (rs->pid < 0) {
		int e = errno;
		close(in[1]), close(out[0]), close(err[0]);
		errno = e;
		return false;
	}
	setpgid(rs->pid, rs->pid);
	rs->in_fd = in[1];
	rs->out_fd = out[0];
	rs->err_fd = err[0];
	return true;
}

/* Reaps the agent, killing its group when it lingers; the wait status. */
int
agent_proc_reap(struct run_state *rs)
{
	int64_t deadline = clock_mono_ms() + EXIT_WAIT_MS;
	int status = 0;

	for (;;) {
		pid_t p = waitpid(rs->pid, &status, WNOHANG);
		if (p == rs->pid || (p < 0 && errno != EINTR))
			return status;
		if (clock_mono_ms() >= deadline) {
			kill(-rs->pid, SIGKILL);
			while (waitpid(rs->pid, &status, 0) < 0 && errno == EINTR)
				;
			return status;
		}
		usleep(20000);
	}
}
