/* notify.command: see notify.h and docs/settings.md. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "notify.h"
#include "resource.h"
#include "sandbox.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define NOTIFY_QUEUE_MAX 64
#define NOTIFY_ARGS_MAX 32
/* A command that takes longer is killed. */
#define NOTIFY_TIMEOUT_MS 10000
/* What the command prints is copied into the service log, up to this much. */
#define NOTIFY_OUTPUT_MAX 4096

struct notify_item {
	char run_id[TD_ID_MAX];
	char project_id[TD_ID_MAX];
	char kind[32];
};

struct notify {
	struct service *svc;
	const cJSON *command;		/* array of strings, owned by the settings */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct notify_item queue[NOTIFY_QUEUE_MAX];
	size_t head, count;
	bool stop;
};

/*
 * Starts argv with envp in the sandbox of a read-only run (docs/settings.md,
 * "notify"): nothing writable but a private /tmp, taskdeck's own files and the
 * credential files hidden, the network on (a push service needs it), nothing
 * it starts outliving it.  Its stdout and stderr go to *out (a pipe).  This
 * thread lives as long as the service, as sandbox_spawn asks.
 */
static pid_t
notify_spawn(struct notify *n, char *const argv[], char *const envp[], int *out)
{
	char **hidden = sandbox_hidden_paths(&n->svc->paths, NULL);
	struct sandbox_policy policy = {
		.profile = SANDBOX_READ_ONLY,
		.network = true,
		.hidden = (const char *const *)hidden,
		.allow_unconfined = settings_allow_unconfined(n->svc->settings),
	};
	const char *programs[NOTIFY_ARGS_MAX + 1] = { NULL };
	int configured = cJSON_GetArraySize(n->command);
	char err[512];
	int p[2], fds[3];
	pid_t pid = -1;

	/* the user's notify.command; not the run's id, kind and project name after it */
	for (int i = 0; i < configured && i < NOTIFY_ARGS_MAX && argv[i] != NULL; i++)
		programs[i] = argv[i];
	policy.programs = programs;
	*out = -1;
	if (pipe2(p, O_CLOEXEC) != 0) {
		log_warn("notify.command: no pipe: %s", strerror(errno));
		sandbox_hidden_free(hidden);
		return -1;
	}
	fds[0] = -1;
	fds[1] = p[1];
	fds[2] = p[1];
	if (sandbox_spawn(&policy, "/", argv, envp, fds, &pid, err, sizeof err) != 0) {
		log_warn("notify.command could not start: %s", err);
		close(p[0]);
		pid = -1;
	} else {
		*out = p[0];
	}
	close(p[1]);
	sandbox_hidden_free(hidden);
	return pid;
}

/* Copies what the command prints into the log, a line at a time, until EOF or the deadline. */
static void
notify_drain(int fd, const char *run_id, long long deadline)
{
	char buf[NOTIFY_OUTPUT_MAX + 1];
	size_t len = 0;
	bool cut = false;

	for (;;) {
		long long left = deadline - clock_mono_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char chunk[1024];
		ssize_t got;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		got = read(fd, chunk, sizeof chunk);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++) {
			if (len < NOTIFY_OUTPUT_MAX)
				buf[len++] = chunk[i];
			else
				cut = true;
		}
	}
	buf[len] = '\0';
	for (char *line = buf, *nl; line != NULL && *line != '\0'; line = nl) {
		if ((nl = strchr(line, '\n')) != NULL)
			*nl++ = '\0';
		log_info("notify.command for run %s: %s", run_id, line);
	}
	if (cut)
		log_info("notify.command for run %s: (output cut at %d bytes)", run_id,
		    NOTIFY_OUTPUT_MAX);
}

/* The project's name, or its id when it has none (store locked here). */
static void
notify_project_name(struct service *svc, const char *id, char *out, size_t len)
{
	sqlite3_stmt *s;

	snprintf(out, len, "%s", id);
	store_lock(svc->store);
	s = store_stmt(svc->store, "SELECT name FROM projects WHERE id = ?1");
	if (s != NULL) {
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW && resource_text(s, 0) != NULL)
			snprintf(out, len, "%s", resource_text(s, 0));
		sqlite3_reset(s);
	}
	store_unlock(svc->store);
}

/* Runs the command for one item and waits for it (killed after the timeout). */
static void
notify_run(struct notify *n, const struct notify_item *it)
{
	char name[512], path_env[4096];
	char *argv[NOTIFY_ARGS_MAX + 4];
	/* No secret reaches it: only PATH, LANG and the notification. */
	const char *path = getenv("PATH");
	char *envp[] = { path_env, "LANG=C.UTF-8", NULL };
	const cJSON *a;
	size_t argc = 0;
	long long deadline;
	int status, out;
	pid_t pid, got;

	notify_project_name(n->svc, it->project_id, name, sizeof name);
	snprintf(path_env, sizeof path_env, "PATH=%s", path != NULL ? path : "/usr/bin:/bin");
	cJSON_ArrayForEach(a, n->command) {
		if (argc < NOTIFY_ARGS_MAX)
			argv[argc++] = a->valuestring;
	}
	argv[argc++] = (char *)it->run_id;
	argv[argc++] = (char *)it->kind;
	argv[argc++] = name;
	argv[argc] = NULL;
	if ((pid = notify_spawn(n, argv, envp, &out)) < 0)
		return;
	deadline = clock_mono_ms() + NOTIFY_TIMEOUT_MS;
	notify_drain(out, it->run_id, deadline);
	close(out);
	while ((got = waitpid(pid, &status, WNOHANG)) == 0 && clock_mono_ms() < deadline)
		usleep(20000);
	if (got == 0) {
		sandbox_kill(pid);
		waitpid(pid, &status, 0);
		log_warn("notify.command for run %s took over %d s: killed",
		    it->run_id, NOTIFY_TIMEOUT_MS / 1000);
	} else if (got > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		log_warn("notify.command for run %s exited %d", it->run_id,
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static void *
notify_main(void *arg)
{
	struct notify *n = arg;
	struct notify_item it;

	pthread_mutex_lock(&n->mu);
	for (;;) {
		while (n->count == 0 && !n->stop)
			pthread_cond_wait(&n->cv, &n->mu);
		if (n->stop)
			break;
		it = n->queue[n->head];
		n->head = (n->head + 1) % NOTIFY_QUEUE_MAX;
		n->count--;
		pthread_mutex_unlock(&n->mu);
		notify_run(n, &it);
		pthread_mutex_lock(&n->mu);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

static void notify_on_event(void *arg, const char *type, const char *project_id,
    const char *run_id, const cJSON *data);

struct notify *
notify_new(struct service *svc)
{
	const cJSON *cmd = settings_notify_command(svc->settings);
	struct notify *n;

	if (cmd == NULL)
		return NULL;
	n = xcalloc(1, sizeof *n);
	n->svc = svc;
	n->command = cmd;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	if (pthread_create(&n->thread, NULL, notify_main, n) != 0) {
		log_warn("cannot start the notify thread");
		pthread_cond_destroy(&n->cv);
		pthread_mutex_destroy(&n->mu);
		free(n);
		return NULL;
	}
	if (!events_listen(svc->events, notify_on_event, n))
		log_warn("notify.command cannot listen to the events");
	return n;
}

void
notify_free(struct notify *n)
{
	if (n == NULL)
		return;
	events_unlisten(n->svc->events, notify_on_event, n);
	pthread_mutex_lock(&n->mu);
	n->stop = true;
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->thread, NULL);
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

/* The events' listener: the news it notifies of is queued, the rest ignored. */
static void
notify_on_event(void *arg, const char *type, const char *project_id, const char *run_id,
    const cJSON *data)
{
	struct notify *n = arg;
	const char *kind = NULL;
	struct notify_item *it;

	if (strcmp(type, "run.attention") == 0)
		kind = json_get_string(cJSON_GetObjectItemCaseSensitive(data, "attention"), "kind");
	else if (strcmp(type, "run.permission") == 0 &&
	    json_get_string(data, "status") != NULL &&
	    strcmp(json_get_string(data, "status"), "pending") == 0)
		kind = "permission";
	else if (strcmp(type, "run.finished") == 0)
		kind = json_get_string(data, "status");
	if (kind == NULL)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->count < NOTIFY_QUEUE_MAX) {
		it = &n->queue[(n->head + n->count) % NOTIFY_QUEUE_MAX];
		snprintf(it->run_id, sizeof it->run_id, "%s", run_id);
		snprintf(it->project_id, sizeof it->project_id, "%s", project_id);
		snprintf(it->kind, sizeof it->kind, "%s", kind);
		n->count++;
		pthread_cond_signal(&n->cv);
	} else
		log_warn("notify queue full: run %s %s not notified",
		    run_id, kind);
	pthread_mutex_unlock(&n->mu);
}
