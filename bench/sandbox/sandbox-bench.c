/*
 * bench/sandbox: what the sandbox adds to one run_command.  Times, from spawn to
 * the collected exit, the command as run_command starts it (output to a pipe that
 * is read until EOF) with and without the sandbox, interleaved in the same run:
 * "plain" (fork, setsid, exec of /bin/sh -c: run_command before the sandbox),
 * "workspace-write" (sandbox_spawn_shell: the strict sandbox, network off,
 * taskdeck's and the credential paths hidden, the default resource bounds) and
 * "full-access" (a pid namespace and the bounds only).
 *
 * usage: sandbox-bench WORKSPACE REPS COMMAND
 * prints one line per mode: mode median_ms p90_ms min_ms
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"
#include "sandbox.h"

enum { PLAIN, WORKSPACE_WRITE, FULL_ACCESS, MODES };
static const char *const mode_names[MODES] = { "plain", "workspace-write", "full-access" };

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One command in mode; its wall time in ms, or -1. */
static double
once(int mode, const struct sandbox_policy *pol, const char *ws, char *const argv[],
    char *const envp[])
{
	char buf[65536], err[1024];
	int p[2], status, fds[3];
	double t0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	t0 = now_ms();
	if (mode == PLAIN) {
		pid = fork();
		if (pid == 0) {
			int null = open("/dev/null", O_RDONLY);

			setsid();
			if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 ||
			    chdir(ws) != 0)
				_exit(126);
			execve("/bin/sh", argv, envp);
			_exit(127);
		}
		if (pid < 0)
			return -1;
	} else {
		fds[0] = -1, fds[1] = p[1], fds[2] = p[1];
		/* as run_command starts it: the command through a descriptor */
		if (sandbox_spawn_shell(pol, ws, argv[2], envp, fds, &pid, err, sizeof err) != 0) {
			fprintf(stderr, "sandbox-bench: %s\n", err);
			return -1;
		}
	}
	close(p[1]);
	while (read(p[0], buf, sizeof buf) > 0)
		;
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (mode != PLAIN)
		sandbox_limits_end(pid, status, err, sizeof err);
	/* what run_command does once the shell is collected: its group goes too (the
	 * sandbox's pid namespace is gone with bwrap already) */
	kill(-pid, SIGKILL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "sandbox-bench: %s: the command failed (status %d)\n",
		    mode_names[mode], status);
		return -1;
	}
	return now_ms() - t0;
}

int
main(int argc, char **argv)
{
	struct td_paths paths;
	char **hidden;
	double *times[MODES];
	int reps;

	if (argc != 4 || (reps = atoi(argv[2])) < 1 || reps > 100000) {
		fprintf(stderr, "usage: sandbox-bench WORKSPACE REPS COMMAND\n");
		return 2;
	}
	if (!paths_init(&paths)) {
		fprintf(stderr, "sandbox-bench: set HOME or TASKDECK_HOME\n");
		return 2;
	}
	hidden = sandbox_hidden_paths(&paths, NULL);
	char *cmd_argv[] = { "/bin/sh", "-c", argv[3], NULL };
	char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp", "LANG=C.UTF-8", NULL };
	/* the default runs.commandLimits (docs/settings.md), as run_command gets them */
	const struct sandbox_limits limits = { .memory = 2048LL << 20, .processes = 512,
		.cpu_seconds = 3600, .tmp_size = 1024LL << 20 };
	struct sandbox_policy pols[MODES] = {
		[WORKSPACE_WRITE] = { .profile = SANDBOX_WORKSPACE_WRITE, .workspace = argv[1],
			.hidden = (const char *const *)hidden, .limits = &limits },
		[FULL_ACCESS] = { .profile = SANDBOX_FULL_ACCESS, .workspace = argv[1],
			.limits = &limits },
	};

	for (int m = 0; m < MODES; m++)
		times[m] = calloc((size_t)reps, sizeof(double));
	/* one warm-up of each, then the modes interleaved */
	for (int m = 0; m < MODES; m++)
		if (once(m, &pols[m], argv[1], cmd_argv, envp) < 0)
			return 1;
	for (int r = 0; r < reps; r++)
		for (int m = 0; m < MODES; m++)
			if ((times[m][r] = once(m, &pols[m], argv[1], cmd_argv, envp)) < 0)
				return 1;
	for (int m = 0; m < MODES; m++) {
		qsort(times[m], (size_t)reps, sizeof(double), cmp);
		printf("%s %.3f %.3f %.3f\n", mode_names[m], times[m][reps / 2],
		    times[m][(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1], times[m][0]);
		free(times[m]);
	}
	sandbox_hidden_free(hidden);
	paths_free(&paths);
	return 0;
}
