/* taskdeckd: the local, token-authenticated taskdeck service. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "artifacts.h"
#include "cache.h"
#include "changes.h"
#include "connector-test.h"
#include "events.h"
#include "files.h"
#include "http.h"
#include "idem.h"
#include "ids.h"
#include "log.h"
#include "runtimes.h"
#include "sandbox.h"
#include "notify.h"
#include "oauth.h"
#include "plans.h"
#include "service.h"
#include "secrets.h"
#include "session-delete.h"
#include "attempts.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

#define SHUTDOWN_GRACE_MS 5000
#define CACHE_SLOTS 1024

struct options {
	char addr[64];
	int port;
	bool detach;
	const char *log_path;
	enum log_level log_level;
	size_t idem_capacity;
	size_t events_window_bytes;	/* 0: EVENTS_WINDOW_BYTES */
	long events_heartbeat_ms;	/* 0: EVENTS_HEARTBEAT_MS */
};

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: taskdeckd [--listen [ADDR:]PORT] [--foreground | --detach]\n"
	    "                 [--log FILE] [--log-level debug|info|warn|error]\n"
	    "                 [--idempotency-capacity N] [--events-window-bytes N]\n"
	    "                 [--events-heartbeat-ms N]\n"
	    "                 [--version] [--help]\n"
	    "\n"
	    "The local taskdeck service.  Listens on 127.0.0.1 (an ephemeral port\n"
	    "unless --listen says otherwise) and writes the discovery file that\n"
	    "clients read.  TASKDECK_HOME, when set, holds all its files.\n");
}

static bool
parse_listen(const char *arg, struct options *o)
{
	const char *colon = strrchr(arg, ':');
	const char *port = colon ? colon + 1 : arg;
	char *end;
	long n;

	if (colon != NULL) {
		size_t len = (size_t)(colon - arg);
		if (len == 0 || len >= sizeof o->addr)
			return false;
		memcpy(o->addr, arg, len);
		o->addr[len] = '\0';
		if (strcmp(o->addr, "localhost") == 0)
			strcpy(o->addr, "127.0.0.1");
	}
	n = strtol(port, &end, 10);
	if (*port == '\0' || *end != '\0' || n < 0 || n > 65535)
		return false;
	o->port = (int)n;
	return true;
}

static bool
parse_level(const char *arg, enum log_level *level)
{
	static const char *names[] = { "debug", "info", "warn", "error" };

	for (int i = 0; i < 4; i++) {
		if (strcmp(arg, names[i]) == 0) {
			*level = (enum log_level)i;
			return true;
		}
	}
	return false;
}

static int
parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "detach", no_argument, NULL, 'd' },
		{ "log", required_argument, NULL, 'L' },
		{ "log-level", required_argument, NULL, 'v' },
		{ "idempotency-capacity", required_argument, NULL, 'i' },
		{ "events-window-bytes", required_argument, NULL, 'w' },
		{ "events-heartbeat-ms", required_argument, NULL, 'b' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	strcpy(o->addr, "127.0.0.1");
	o->log_level = LOG_LEVEL_INFO;
	o->idem_capacity = IDEM_DEFAULT_CAPACITY;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (!parse_listen(optarg, o)) {
				fprintf(stderr, "taskdeckd: --listen wants [ADDR:]PORT, got %s\n", optarg);
				return 2;
			}
			break;
		case 'f':
			o->detach = false;
			break;
		case 'd':
			o->detach = true;
			break;
		case 'L':
			o->log_path = optarg;
			break;
		case 'v':
			if (!parse_level(optarg, &o->log_level)) {
				fprintf(stderr, "taskdeckd: unknown log level %s\n", optarg);
				return 2;
			}
			break;
		case 'i':
			o->idem_capacity = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || o->idem_capacity == 0) {
				fprintf(stderr, "taskdeckd: --idempotency-capacity wants a positive number\n");
				return 2;
			}
			break;
		case 'w':
			o->events_window_bytes = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || o->events_window_bytes == 0) {
				fprintf(stderr, "taskdeckd: --events-window-bytes wants a positive number\n");
				return 2;
			}
			break;
		case 'b':
			o->events_heartbeat_ms = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || o->events_heartbeat_ms < 100 ||
			    o->events_heartbeat_ms > 86400000L) {
				fprintf(stderr, "taskdeckd: --events-heartbeat-ms wants 100 to 86400000\n");
				return 2;
			}
			break;
		case 'V':
			printf("taskdeckd %s\n", TD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/*
 * --detach: the parent waits on a pipe until the child is ready (or says
 * why it is not), prints that, and exits; the child goes on in its own
 * session.  Returns the write end in the child; never returns in the parent.
 */
static int
detach(void)
{
	int fds[2];
	pid_t pid;
	char msg[1024];
	ssize_t n;
	size_t len = 0;

	if (pipe2(fds, O_CLOEXEC) != 0) {
		perror("taskdeckd: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("taskdeckd: fork");
		exit(1);
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		close(fds[0]);
		setsid();
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			close(null);
		}
		return fds[1];
	}
	close(fds[1]);
	while (len < sizeof msg - 1 &&
	    (n = read(fds[0], msg + len, sizeof msg - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	msg[len] = '\0';
	if (strncmp(msg, "ok ", 3) == 0) {
		printf("taskdeckd ready at %s (pid %ld)\n", msg + 3, (long)pid);
		exit(0);
	}
	fprintf(stderr, "taskdeckd: %s\n", len ? msg : "the service exited during start-up");
	exit(1);
}

/* Reports a start-up failure to the console or, detached, to the waiting parent. */
static int
taskdeckd_fail(int ready_fd, bool log_to_file, char *err)
{
	log_error("%s", err);
	if (ready_fd >= 0) {
		if (write(ready_fd, err, strlen(err)) < 0)
			log_error("cannot report to the parent process");
	} else if (log_to_file) {
		fprintf(stderr, "taskdeckd: %s\n", err);
	}
	free(err);
	return 1;
}

/*
 * Opens the service's files and store, then starts its parts in order: what a
 * crash left is swept before the supervisor resumes runs, and the HTTP
 * server and the discovery file come last.  false with *err (malloc'd);
 * what was started is in svc for taskdeckd_stop.
 */
static bool
taskdeckd_start(struct service *svc, const struct options *opts, int *lock_fd, char **err)
{
	int removed;

	if (!files_lock(&svc->paths, lock_fd, err) ||
	    !files_load_token(&svc->paths, svc->token, err) ||
	    (svc->settings = settings_load(svc->paths.settings, err)) == NULL ||
	    (svc->store = store_open(svc->paths.database, err)) == NULL)
		return false;
	/* No same-user process reads our memory; the API keys leave the environment. */
	prctl(PR_SET_DUMPABLE, 0);
	settings_take_api_keys(svc->settings);
	/* Before any thread or command: empty cgroups that dead taskdeck processes left. */
	if ((removed = sandbox_cgroups_init()) > 0)
		log_info("removed %d cgroups of commands whose taskdeck process died", removed);
	svc->agent_path = runtimes_find_agent(&svc->agent_found_by);
	svc->replay_dir = runtimes_find_replay_dir(&svc->replay_found_by);
	svc->idem = idem_new(opts->idem_capacity, IDEM_TTL_MS, NULL);
	svc->cache = cache_new(CACHE_SLOTS);
	svc->secrets = secrets_new(svc->paths.secret_key);
	svc->started_at = clock_wall_ms();
	random_hex(svc->stream_id, 16);
	svc->events = events_new(svc);
	if (opts->events_window_bytes > 0)
		events_set_window_bytes(svc->events, opts->events_window_bytes);
	if (opts->events_heartbeat_ms > 0)
		events_set_heartbeat_ms(svc->events, opts->events_heartbeat_ms);
	svc->notify = notify_new(svc);	/* notify.command, or NULL */
	svc->signins = oauth_signins_new();
	svc->run_ended = plans_run_ended;	/* a run's end closes its plan and prompts */
	if (!artifacts_init(svc, err) ||
	    (svc->changes = changes_start(svc, err)) == NULL)
		return false;
	session_delete_sweep(svc);	/* what a crash after a delete left */
	attempts_sweep(svc);		/* attempts a crash or a deleted session left */
	svc->attempts = attempts_start(svc);
	svc->session_deleted = attempts_session_deleted;
	svc->run_finished = session_delete_run_finished;
	if ((svc->supervisor = supervisor_start(svc, err)) == NULL)
		return false;
	session_delete_resume(svc);	/* the deletes a stop interrupted */
	svc->http = http_start(svc, opts->addr, opts->port, svc->paths.socket, err);
	if (svc->http == NULL)
		return false;
	svc->port = http_port(svc->http);
	snprintf(svc->base_url, sizeof svc->base_url, "http://127.0.0.1:%d", svc->port);
	return files_write_discovery(svc, err);
}

/*
 * Stops the threads taskdeckd_start started; graceful (a signal after a good
 * start): no new client finds the service, requests in flight finish.
 */
static void
taskdeckd_stop(struct service *svc, bool graceful)
{
	if (graceful) {
		atomic_store(&svc->shutting_down, true);
		files_remove_discovery(&svc->paths);
	}
	events_shutdown(svc->events);
	if (svc->http != NULL)
		http_stop(svc->http, graceful ? SHUTDOWN_GRACE_MS : 0);
	/* A connector test still running owns a server process: let it close it. */
	if (graceful && !connector_tests_drain(CONNECTOR_TEST_TIMEOUT_MS * 3))
		log_warn("connector tests still running at exit");
	supervisor_stop(svc->supervisor);
	changes_stop(svc->changes);
	attempts_stop(svc->attempts);
	svc->attempts = NULL;
}

/* Frees what taskdeckd_start made; clean (a graceful stop): every event is written. */
static void
taskdeckd_free(struct service *svc, bool clean, int lock_fd)
{
	notify_free(svc->notify);
	svc->notify = NULL;
	oauth_signins_free(svc->signins);
	svc->signins = NULL;
	events_free(svc->events);
	if (clean && svc->store != NULL)
		supervisor_clean_stop(svc);	/* every event is written */
	idem_free(svc->idem);
	cache_free(svc->cache);
	secrets_free(svc->secrets);
	store_close(svc->store);
	settings_free(svc->settings);
	free(svc->agent_path);
	free(svc->replay_dir);
	if (lock_fd >= 0)
		close(lock_fd);
	sodium_memzero(svc->token, sizeof svc->token);
}

int
main(int argc, char **argv)
{
	struct service svc = { 0 };
	struct options opts = { 0 };
	sigset_t sigs;
	FILE *logfp = NULL;
	char *err = NULL;
	int rc, sig, lock_fd = -1, ready_fd = -1;

	if ((rc = parse_options(argc, argv, &opts)) >= 0)
		return rc;
	svc.user_umask = umask(077);
	if (sodium_init() < 0) {
		fprintf(stderr, "taskdeckd: libsodium failed to initialise\n");
		return 1;
	}
	if (!paths_init(&svc.paths)) {
		fprintf(stderr, "taskdeckd: set HOME or TASKDECK_HOME\n");
		return 1;
	}
	if (!files_make_dirs(&svc.paths, &err)) {
		fprintf(stderr, "taskdeckd: %s\n", err);
		free(err);
		paths_free(&svc.paths);
		return 1;
	}
	if (opts.detach) {
		ready_fd = detach();
		if (opts.log_path == NULL)
			opts.log_path = svc.paths.log;
	}
	if (opts.log_path != NULL) {
		logfp = fopen(opts.log_path, "ae");
		if (logfp == NULL)
			return taskdeckd_fail(ready_fd, false, xasprintf("cannot open the log %s: %s",
			    opts.log_path, strerror(errno)));
	}
	log_init("taskdeckd", logfp, opts.log_level);

	/* The signals are taken by sigwait() below; every thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!taskdeckd_start(&svc, &opts, &lock_fd, &err)) {
		rc = taskdeckd_fail(ready_fd, logfp != NULL, err);
		taskdeckd_stop(&svc, false);
		taskdeckd_free(&svc, false, lock_fd);
		goto out;
	}
	log_info("taskdeckd %s ready at %s (home %s)", TD_VERSION, svc.base_url,
	    svc.paths.data_dir);
	if (ready_fd >= 0) {
		char *ok = xasprintf("ok %s", svc.base_url);
		if (write(ready_fd, ok, strlen(ok)) < 0)
			log_warn("cannot report readiness to the parent process");
		free(ok);
		close(ready_fd);
	}
	do {
		if (sigwait(&sigs, &sig) != 0)
			sig = SIGTERM;
	} while (sig == SIGHUP);
	log_info("received %s: finishing requests in flight", strsignal(sig));
	taskdeckd_stop(&svc, true);
	taskdeckd_free(&svc, true, lock_fd);
	log_info("taskdeckd stopped");
	rc = 0;
out:
	paths_free(&svc.paths);
	if (logfp != NULL)
		fclose(logfp);
	return rc;
}
