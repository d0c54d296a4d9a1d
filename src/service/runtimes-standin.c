/*
 * STAND-IN for the readiness branch's runtimes.c (issue 16), so that this branch
 * builds and its tests run before that is merged: same API (runtimes.h).  Delete
 * this file and its Makefile.am line when merging readiness.
 *
 * Only the external frameworks: the CLI is looked up on the service's PATH, run
 * with --version (no shell, 5 s at most, 4 KiB of output), and its first
 * "X.Y.Z" compared with the minimum of docs/frameworks.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtimes.h"
#include "timeutil.h"

#define VERSION_WAIT_MS 5000

static const struct {
	const char *framework, *program;
	int min[3];
} standin_table[] = {
	{ "claude-code", "claude", { 2, 0, 0 } },
	{ "codex", "codex", { 0, 44, 0 } },
};

const char *
runtime_status_name(enum runtime_status s)
{
	static const char *const names[] = {
		[RUNTIME_READY] = "ready", [RUNTIME_MISSING] = "missing",
		[RUNTIME_BROKEN] = "broken", [RUNTIME_OUTDATED] = "outdated",
	};

	return names[s];
}

/* The first executable regular file named program on PATH, into out. */
static bool
standin_find(const char *program, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;
	struct stat st;

	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		if (end == p)
			continue;
		if ((size_t)snprintf(out, len, "%.*s/%s", (int)(end - p), p, program) >= len)
			continue;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return true;
	}
	out[0] = '\0';
	return false;
}

/* Runs path --version; its first line in line, false when it failed or hung. */
static bool
standin_version_output(const char *path, char *line, size_t len)
{
	char *const argv[] = { (char *)path, (char *)"--version", NULL };
	int fds[2], status = 0;
	size_t got = 0;
	int64_t deadline = td_mono_ms() + VERSION_WAIT_MS;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		setpgid(0, 0);
		if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(null, 2) < 0)
			_exit(126);
		execv(path, argv);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return false;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int64_t left = deadline - td_mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		n = read(fds[0], line + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == len - 1)
			break;
	}
	close(fds[0]);
	line[got] = '\0';
	line[strcspn(line, "\n")] = '\0';
	kill(-pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int
runtimes_probe(const struct service *svc, const char *framework, struct runtime_info *out)
{
	char line[4096];
	const char *v;
	int n[3];
	size_t i;

	(void)svc;
	memset(out, 0, sizeof *out);
	snprintf(out->framework, sizeof out->framework, "%s", framework ? framework : "");
	snprintf(out->source, sizeof out->source, "external");
	for (i = 0; i < sizeof standin_table / sizeof *standin_table; i++) {
		if (framework != NULL && strcmp(standin_table[i].framework, framework) == 0)
			break;
	}
	out->status = RUNTIME_MISSING;
	if (i == sizeof standin_table / sizeof *standin_table) {
		snprintf(out->message, sizeof out->message, "unknown framework");
		return -1;
	}
	if (!standin_find(standin_table[i].program, out->path, sizeof out->path)) {
		snprintf(out->message, sizeof out->message, "%s is not on the service's PATH",
		    standin_table[i].program);
		return 0;
	}
	out->status = RUNTIME_BROKEN;
	if (!standin_version_output(out->path, line, sizeof line)) {
		snprintf(out->message, sizeof out->message, "%s --version failed",
		    standin_table[i].program);
		return 0;
	}
	for (v = line; *v && sscanf(v, "%d.%d.%d", &n[0], &n[1], &n[2]) != 3; v++)
		;
	if (*v == '\0') {
		snprintf(out->message, sizeof out->message, "%s --version printed no version",
		    standin_table[i].program);
		return 0;
	}
	snprintf(out->version, sizeof out->version, "%d.%d.%d", n[0], n[1], n[2]);
	for (int k = 0; k < 3; k++) {
		if (n[k] != standin_table[i].min[k]) {
			out->status = n[k] > standin_table[i].min[k] ? RUNTIME_READY : RUNTIME_OUTDATED;
			break;
		}
		out->status = RUNTIME_READY;
	}
	if (out->status == RUNTIME_OUTDATED)
		snprintf(out->message, sizeof out->message, "%s %s is older than %d.%d.%d",
		    standin_table[i].program, out->version, standin_table[i].min[0],
		    standin_table[i].min[1], standin_table[i].min[2]);
	else
		snprintf(out->message, sizeof out->message, "%s %s", standin_table[i].program,
		    out->version);
	return 0;
}
