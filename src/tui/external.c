/*
 * Other programs on the dashboard's terminal: $PAGER for the log, $EDITOR
 * for a long prompt.  The screen is handed over (endwin) and taken back; the
 * loop waits meanwhile (events queue up in the client core, the worker goes
 * on).  And the terminal's clipboard (OSC 52).  Below the modals and the
 * keys, which call it.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tui/tui.h"
#include "xalloc.h"

/*
 * Runs "sh -c line sh arg" on the terminal, in cwd (NULL: here) with env
 * ("NAME=value" strings, NULL-ended; NULL: none) added, and takes the screen
 * back after.  what names it in the message of a failure.  0 when it exited 0
 * (any_status: with any status but the shell's 126 and 127, could not run it).
 */
static int
external_run(struct tui *t, const char *what, const char *line, const char *arg,
    const char *cwd, char *const *env, bool any_status)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;
	int status = -1;
	pid_t pid;

	def_prog_mode();
	endwin();
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (size_t i = 0; env != NULL && env[i] != NULL; i++)
			putenv(env[i]);
		if (cwd != NULL && chdir(cwd) != 0) {
			fprintf(stderr, "taskdeck: cannot enter %s: %s\n", cwd, strerror(errno));
			_exit(126);
		}
		execl("/bin/sh", "sh", "-c", line, "sh", arg, (char *)NULL);
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* A Ctrl-C meant for the program is not the dashboard's: drop it. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
	reset_prog_mode();
	clearok(curscr, TRUE);
	t->dirty = true;
	if (pid < 0 || !WIFEXITED(status) || (WEXITSTATUS(status) != 0 && (!any_status ||
	    WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127))) {
		model_message(&t->m, t->now_ms, true, "%s did not succeed%s", what,
		    pid < 0 ? ": cannot start it" : "");
		return -1;
	}
	return 0;
}

int
tui_external(struct tui *t, const char *var, const char *fallback, const char *path)
{
	const char *cmd = getenv(var);
	char line[4200], what[4200];

	if (cmd == NULL || *cmd == '\0')
		cmd = fallback;
	/* The command as the shell reads it (it may hold options), the file as $1. */
	snprintf(line, sizeof line, "%s \"$1\"", cmd);
	snprintf(what, sizeof what, "%s (%s)", var, cmd);
	return external_run(t, what, line, path, NULL, NULL, false);
}

int
tui_shell(struct tui *t, const char *cwd, const char *session_id, const char *project_id)
{
	const char *shell = getenv("SHELL");
	char session[200], project[200], what[4200];
	char *env[] = { session, project, NULL };

	if (shell == NULL || *shell == '\0')
		shell = "/bin/sh";
	/* Said here: the child's stderr would be behind the screen taken back at once. */
	if (access(cwd, X_OK) != 0) {
		model_message(&t->m, t->now_ms, true, "cannot open a shell in %s: %s", cwd,
		    strerror(errno));
		return -1;
	}
	snprintf(session, sizeof session, "TASKDECK_SESSION=%s", session_id);
	snprintf(project, sizeof project, "TASKDECK_PROJECT=%s", project_id);
	snprintf(what, sizeof what, "$SHELL (%s)", shell);
	/* The shell itself, not through sh -c's words: "$1" is its path.  It exits
	 * with its last command's status, which is no failure of the shell's. */
	return external_run(t, what, "exec \"$1\"", shell, cwd, env, true);
}

/* A private temporary file (0600); its path into path; the open FILE, or NULL. */
FILE *
tui_temp_file(char *path, size_t len, const char *suffix)
{
	const char *dir = getenv("TMPDIR");
	int fd;
	FILE *fp;

	snprintf(path, len, "%s/taskdeck-XXXXXX%s", dir != NULL && *dir == '/' ? dir : "/tmp",
	    suffix);
	if ((fd = mkstemps(path, (int)strlen(suffix))) < 0)
		return NULL;
	if ((fp = fdopen(fd, "w+")) == NULL) {
		close(fd);
		unlink(path);
	}
	return fp;
}

void
tui_osc52(const char *text)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(text), o = 0;
	char *out = xmalloc(n / 3 * 4 + 16);

	memcpy(out, "\033]52;c;", 7);
	o = 7;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)text[i] << 16;

		v |= i + 1 < n ? (unsigned char)text[i + 1] << 8 : 0;
		v |= i + 2 < n ? (unsigned char)text[i + 2] : 0;
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o++] = '\a';
	fflush(stdout);
	if (write(STDOUT_FILENO, out, o) < 0) {
		/* no terminal to tell: nothing copied */
	}
	free(out);
}
