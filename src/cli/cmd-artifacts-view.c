/* taskdeck artifacts view: an artifact in $PAGER, nothing saved */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "xalloc.h"

static int cmd_artifacts_view_exec(struct cli *, int, char **);

const struct cli_cmd cmd_artifacts_view_entry = {
	"artifacts", "view", "ARTIFACT",
	"Show an artifact in $PAGER (less when unset) without saving it: its bytes\n"
	"go to a private temporary file (0600), removed when the pager exits.",
	cli_no_options, 1, 1, cmd_artifacts_view_exec
};

static enum td_code
view_write(void *ud, const void *data, size_t len)
{
	return fwrite(data, 1, len, ud) == len ? TD_OK : TD_IO_ERROR;
}

/* Runs "$PAGER path" through sh (it may carry options); its exit status. */
static int
view_pager(const char *path)
{
	const char *pager = getenv("PAGER");
	struct sigaction ignore = { .sa_handler = SIG_IGN }, old;
	char *line;
	int status = -1;
	pid_t pid;

	if (pager == NULL || *pager == '\0')
		pager = "less";
	line = xasprintf("%s \"$1\"", pager);
	/* Ctrl-C is the pager's; the file is removed after it either way. */
	sigemptyset(&ignore.sa_mask);
	sigaction(SIGINT, &ignore, &old);
	if ((pid = fork()) == 0) {
		sigaction(SIGINT, &old, NULL);
		execl("/bin/sh", "sh", "-c", line, "sh", path, (char *)NULL);
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old, NULL);
	free(line);
	return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* taskdeck artifacts view ARTIFACT */
static int
cmd_artifacts_view_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *dir = getenv("TMPDIR");
	struct td_artifact *a;
	struct td_error err;
	char path[4096], suffix[32] = "";
	const char *dot;
	enum td_code rc;
	FILE *fp;
	int fd, status;

	(void)argc;
	if ((status = cli_connect(cli)) != CLI_EXIT_OK)
		return status;
	if (td_get_artifact(cli->client, argv[0], &opts, &a, &err) != TD_OK)
		return cli_fail(&err);
	/* The file keeps the name's extension, for the pager's highlighting. */
	dot = a->name != NULL ? strrchr(a->name, '.') : NULL;
	if (dot != NULL && strlen(dot) < sizeof suffix)
		snprintf(suffix, sizeof suffix, "%s", dot);
	td_artifact_free(a);
	snprintf(path, sizeof path, "%s/taskdeck-XXXXXX%s",
	    dir != NULL && *dir == '/' ? dir : "/tmp", suffix);
	if ((fd = mkstemps(path, (int)strlen(suffix))) < 0 || (fp = fdopen(fd, "w")) == NULL) {
		fprintf(stderr, "taskdeck: cannot make a temporary file: %s\n", strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return CLI_EXIT_SERVICE;
	}
	rc = td_download_artifact(cli->client, argv[0], 0, view_write, fp, &opts, NULL, &err);
	if (fclose(fp) != 0 && rc == TD_OK) {
		fprintf(stderr, "taskdeck: cannot write %s: %s\n", path, strerror(errno));
		unlink(path);
		return CLI_EXIT_SERVICE;
	}
	if (rc != TD_OK) {
		unlink(path);
		return cli_fail(&err);
	}
	status = view_pager(path);
	unlink(path);
	if (status != 0) {
		fprintf(stderr, "taskdeck: the pager exited with %d\n", status);
		return CLI_EXIT_SERVICE;
	}
	return CLI_EXIT_OK;
}
