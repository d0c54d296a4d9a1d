/* notify.command: see notify.h and docs/settings.md. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ids.h"
#include "json.h"
#include "log.h"
#include "notify.h"
#include "resource.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define NOTIFY_QUEUE_MAX 64
#define NOTIFY_ARGS_MAX 32
/* A command that takes longer is killed. */
#define NOTIFY_TIMEOUT_MS 10000

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
 * THE SEAM: starts argv with envp and no terminal (stdin, stdout, stderr on
 * /dev/null) and returns its pid, or -1.  A plain fork and exec for now;
 * the sandbox helper's sandbox_spawn (read-only profile, no network) goes
 * here once branch `sandbox` is merged (see the report of issue 14).
 */
static pid_t
notify_spawn(char *const argv[], char *const envp[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setpgid(0, 0);
		execvpe(argv[0], argv, envp);
		_exit(127);
	}
	return pid;
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
	int status;
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
	if ((pid = notify_spawn(argv, envp)) < 0) {
		log_warn("notify.command could not start: %s", strerror(errno));
		return;
	}
	deadline = td_mono_ms() + NOTIFY_TIMEOUT_MS;
	while ((got = waitpid(pid, &status, WNOHANG)) == 0 && td_mono_ms() < deadline)
		usleep(20000);
	if (got == 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
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
	return n;
}

void
notify_free(struct notify *n)
{
	if (n == NULL)
		return;
	pthread_mutex_lock(&n->mu);
	n->stop = true;
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->thread, NULL);
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

void
notify_event(struct notify *n, const char *type, const char *project_id,
    const char *run_id, const cJSON *data)
{
	const char *kind = NULL;
	struct notify_item *it;

	if (n == NULL || type == NULL || run_id == NULL || project_id == NULL)
		return;
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
