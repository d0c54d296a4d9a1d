/* taskdeck daemon start|stop|status: the taskdeckd of this home. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "timeutil.h"
#include "xalloc.h"

/* How long stop waits for the service to go. */
#define DAEMON_STOP_WAIT_MS 10000

static int cmd_daemon_start_exec(struct cli *, int, char **);
static int cmd_daemon_stop_exec(struct cli *, int, char **);
static int cmd_daemon_status_exec(struct cli *, int, char **);

static const struct cli_option daemon_start_options[] = {
	{ "listen", true },
	{ "log", true },
	{ "log-level", true },
	{ NULL, false }
};

const struct cli_cmd cmd_daemon_start_entry = {
	"daemon", "start", "[--listen [ADDR:]PORT] [--log FILE] [--log-level LEVEL]",
	"Start taskdeckd in the background for this home, unless it runs already.",
	daemon_start_options, 0, 0, cmd_daemon_start_exec
};

const struct cli_cmd cmd_daemon_stop_entry = {
	"daemon", "stop", "",
	"Stop the taskdeckd of this home and wait (up to 10 s) until it is gone.",
	cli_no_options, 0, 0, cmd_daemon_stop_exec
};

const struct cli_cmd cmd_daemon_status_entry = {
	"daemon", "status", "",
	"Say whether taskdeckd runs for this home, where, and whether it is ready.\n"
	"Exits 3 when it does not run.",
	cli_no_options, 0, 0, cmd_daemon_status_exec
};

/* Reads one line of a /proc file of pid into buf; false when there is none. */
static bool
daemon_proc_line(long pid, const char *what, char *buf, size_t size)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof path, "/proc/%ld/%s", pid, what);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	return ok;
}

/* False when pid is gone or a zombie. */
static bool
daemon_alive(long pid)
{
	char stat[512];
	const char *paren;

	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return false;
	if (!daemon_proc_line(pid, "stat", stat, sizeof stat))
		return true;
	/* "pid (comm) state ...": comm may hold spaces and parentheses. */
	paren = strrchr(stat, ')');
	return paren == NULL || paren[1] != ' ' || paren[2] != 'Z';
}

/*
 * The service of this home, as td_discover finds it, and only when its pid
 * is a taskdeckd: after a crash the pid may belong to another program.
 */
static enum td_code
daemon_find(struct td_service_info **out, struct td_error *err)
{
	enum td_code rc = td_discover(out, err);
	char comm[64];

	if (rc != TD_OK || !daemon_proc_line((*out)->pid, "comm", comm, sizeof comm))
		return rc;
	comm[strcspn(comm, "\n")] = '\0';
	if (strcmp(comm, "taskdeckd") == 0)
		return TD_OK;
	snprintf(err->message, sizeof err->message,
	    "%s names pid %ld, which is not taskdeckd; "
	    "start one with `taskdeck daemon start`", (*out)->discovery_file,
	    (*out)->pid);
	td_service_info_free(*out);
	*out = NULL;
	err->code = TD_SERVICE_NOT_FOUND;
	snprintf(err->code_name, sizeof err->code_name, "%s",
	    td_code_string(TD_SERVICE_NOT_FOUND));
	return TD_SERVICE_NOT_FOUND;
}

/* The taskdeckd to run: next to this program, else in TD_BINDIR; NULL: PATH. */
static char *
daemon_program(void)
{
	char self[4096], *slash, *path;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL)
			*slash = '\0';
		path = xasprintf("%s/taskdeckd", self);
		if (access(path, X_OK) == 0)
			return path;
		free(path);
		/* An uninstalled libtool build runs this program from .libs/. */
		if ((slash = strrchr(self, '/')) != NULL && strcmp(slash, "/.libs") == 0) {
			*slash = '\0';
			path = xasprintf("%s/taskdeckd", self);
			if (access(path, X_OK) == 0)
				return path;
			free(path);
		}
	}
	if (access(TD_BINDIR "/taskdeckd", X_OK) == 0)
		return xstrdup(TD_BINDIR "/taskdeckd");
	return NULL;
}

/* Runs taskdeckd --detach with our options; returns its exit status. */
static int
daemon_spawn(const struct cli *cli)
{
	static const char *const passed[][2] = {
		{ "listen", "--listen" }, { "log", "--log" }, { "log-level", "--log-level" }
	};
	char *program = daemon_program();
	const char *args[8];
	int n = 0, status = -1, null;
	pid_t pid;

	args[n++] = program != NULL ? program : "taskdeckd";
	args[n++] = "--detach";
	for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) {
		const char *value = cli_get(cli, passed[i][0]);

		if (value != NULL) {
			args[n++] = passed[i][1];
			args[n++] = value;
		}
	}
	args[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* Its "ready" line is ours to print; its errors go to our stderr. */
		if ((null = open("/dev/null", O_RDWR)) >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		execvp(args[0], (char *const *)args);
		fprintf(stderr, "taskdeck: cannot run %s: %s\n", args[0],
		    strerror(errno));
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(program);
	if (pid < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Prints where the service runs. */
static void
daemon_report(const struct cli *cli, const struct td_service_info *info,
    const char *what)
{
	if (cli->json)
		out_json(info->json);
	else
		printf("%s at %s (pid %ld)\n", what, info->base_url, info->pid);
}

int
cli_daemon_ensure(const struct cli *cli)
{
	struct td_service_info *info;
	struct td_error err;
	int status;
	const char *url = getenv("TASKDECK_URL");

	if (url != NULL && url[0] != '\0')
		return CLI_EXIT_OK;	/* a service named by URL: not ours to start */
	if (daemon_find(&info, &err) == TD_OK) {
		td_service_info_free(info);
		return CLI_EXIT_OK;
	}
	if (err.code != TD_SERVICE_NOT_FOUND)
		return cli_fail(&err);
	if ((status = daemon_spawn(cli)) != 0) {
		fprintf(stderr, "taskdeck: taskdeckd did not start (exit status %d)\n", status);
		return CLI_EXIT_SERVICE;
	}
	return CLI_EXIT_OK;
}

/* taskdeck daemon start: spawns taskdeckd --detach unless one runs. */
static int
cmd_daemon_start_exec(struct cli *cli, int argc, char **argv)
{
	struct td_service_info *info;
	struct td_error err;
	int status;

	if (daemon_find(&info, &err) == TD_OK) {
		daemon_report(cli, info, "taskdeckd is already running");
		td_service_info_free(info);
		return CLI_EXIT_OK;
	}
	if (err.code != TD_SERVICE_NOT_FOUND)
		return cli_fail(&err);
	status = daemon_spawn(cli);
	if (status != 0) {
		fprintf(stderr, "taskdeck: taskdeckd did not start (exit status %d)\n",
		    status);
		return CLI_EXIT_SERVICE;
	}
	if (daemon_find(&info, &err) != TD_OK)
		return cli_fail(&err);
	daemon_report(cli, info, "taskdeckd started");
	td_service_info_free(info);
	return CLI_EXIT_OK;
}

/* taskdeck daemon stop: SIGTERM, then waits for the process to end. */
static int
cmd_daemon_stop_exec(struct cli *cli, int argc, char **argv)
{
	const struct timespec pause = { 0, 50 * 1000 * 1000 };
	struct td_service_info *info;
	struct td_error err;
	int64_t deadline;
	int rc = CLI_EXIT_OK;

	if (daemon_find(&info, &err) != TD_OK) {
		if (err.code != TD_SERVICE_NOT_FOUND)
			return cli_fail(&err);
		printf("taskdeckd is not running\n");
		return CLI_EXIT_OK;
	}
	if (kill((pid_t)info->pid, SIGTERM) != 0 && errno != ESRCH) {
		fprintf(stderr, "taskdeck: cannot signal taskdeckd (pid %ld): %s\n",
		    info->pid, strerror(errno));
		td_service_info_free(info);
		return CLI_EXIT_SERVICE;
	}
	/*
	 * The discovery file goes first, but the lock stays until the process
	 * ends: wait for that so that a start right after works.
	 */
	deadline = clock_mono_ms() + DAEMON_STOP_WAIT_MS;
	while (daemon_alive(info->pid) && clock_mono_ms() < deadline)
		nanosleep(&pause, NULL);
	if (daemon_alive(info->pid)) {
		fprintf(stderr, "taskdeck: taskdeckd (pid %ld) did not stop within %d s\n",
		    info->pid, DAEMON_STOP_WAIT_MS / 1000);
		rc = CLI_EXIT_SERVICE;
	} else
		printf("taskdeckd stopped (pid %ld)\n", info->pid);
	td_service_info_free(info);
	return rc;
}

/* Prints the status as JSON: the discovery fields plus running and ready. */
static void
daemon_status_json(const struct td_service_info *info,
    const struct td_doctor_report *d)
{
	cJSON *doc = info != NULL ? json_parse(info->json, strlen(info->json)) : NULL;
	char *text;

	if (doc == NULL)
		doc = cJSON_CreateObject();
	cJSON_AddBoolToObject(doc, "running", info != NULL);
	if (info != NULL && d != NULL)
		cJSON_AddBoolToObject(doc, "ready", d->ready);
	else if (info != NULL)
		cJSON_AddNullToObject(doc, "ready");
	text = json_print(doc);
	out_json(text);
	free(text);
	cJSON_Delete(doc);
}

/* taskdeck daemon status: the discovery file and the doctor's verdict. */
static int
cmd_daemon_status_exec(struct cli *cli, int argc, char **argv)
{
	struct td_connect_options copts = { .request_timeout_ms = cli->timeout_ms };
	struct td_request_options opts = cli_request_options(cli);
	struct td_doctor_report *d = NULL;
	struct td_service_info *info;
	struct td_error err;
	int rc = CLI_EXIT_OK;

	if (daemon_find(&info, &err) != TD_OK) {
		if (err.code != TD_SERVICE_NOT_FOUND)
			return cli_fail(&err);
		if (cli->json)
			daemon_status_json(NULL, NULL);
		else
			printf("status: not running\n");
		return CLI_EXIT_UNREACHABLE;
	}
	copts.base_url = info->base_url;
	if (td_connect(&cli->client, &copts, &err) != TD_OK ||
	    td_doctor(cli->client, &opts, &d, &err) != TD_OK)
		rc = cli_fail(&err);
	if (cli->json)
		daemon_status_json(info, d);
	else {
		out_kv("status", "running");
		out_kv("url", info->base_url);
		printf("pid: %ld\n", info->pid);
		out_kv("version", info->version);
		out_kv("startedAt", info->started_at);
		out_kv("ready", d == NULL ? "unknown" : d->ready ? "yes" : "no");
	}
	td_doctor_report_free(d);
	td_service_info_free(info);
	return rc;
}
