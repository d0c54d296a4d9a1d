/*
 * Attempts: the sweep at start-up and the worker thread that measures each
 * ended attempt and runs its group's check command (attempts.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attempts-git.h"
#include "attempts-int.h"
#include "attempts.h"
#include "log.h"
#include "sandbox.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define ATTEMPTS_CHECK_TIMEOUT_MS (10 * 60 * 1000)

struct attempts {
	struct service *svc;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;
	bool orphans;	/* a session was deleted: remove its attempts */
};

/* Removes the active attempts whose session was deleted; how many. */
static long
attempts_orphans(struct service *svc)
{
	struct attempt_row *rows;
	size_t n;
	long removed = 0;

	pthread_mutex_lock(&attempts_mu);
	store_lock(svc->store);
	rows = attempt_rows(svc->store, ATTEMPT_ROW_SELECT
	    "WHERE a.state = 'active' AND NOT EXISTS (SELECT 1 FROM sessions s"
	    " WHERE s.id = a.session_id)", NULL, &n);
	store_unlock(svc->store);
	for (size_t i = 0; i < n; i++) {
		if (attempt_remove(svc, &rows[i])) {
			removed++;
			store_lock(svc->store);
			attempts_rows_discard_if_done(svc->store, rows[i].group);
			store_unlock(svc->store);
		}
	}
	pthread_mutex_unlock(&attempts_mu);
	attempt_rows_free(rows, n);
	return removed;
}

void
attempts_sweep(struct service *svc)
{
	struct attempt_row *rows;
	size_t n;
	long made = 0;

	/* a group a crash caught being made: its rows came first, so all of it is listed */
	store_lock(svc->store);
	rows = attempt_rows(svc->store, ATTEMPT_ROW_SELECT "WHERE g.status = 'preparing'",
	    NULL, &n);
	store_unlock(svc->store);
	for (size_t i = 0; i < n; i++) {
		attempts_git_worktree_remove(rows[i].git_dir, rows[i].branch, rows[i].path);
		if (i + 1 == n || strcmp(rows[i].group, rows[i + 1].group) != 0) {
			store_lock(svc->store);
			attempts_rows_group_delete(svc->store, rows[i].group);
			store_unlock(svc->store);
			made++;
		}
	}
	attempt_rows_free(rows, n);
	store_lock(svc->store);
	attempts_rows_sweep(svc->store);
	store_unlock(svc->store);
	n = (size_t)attempts_orphans(svc);
	if (made + (long)n > 0)
		log_info("attempts: removed %ld groups a crash left half made and %zu attempts "
		    "of deleted sessions", made, n);
}

/* Runs the group's check command in the attempt's worktree; status into *status. */
static void
attempts_check_run(struct attempts *w, const struct attempt_row *a, char *status, int *code,
    char **output)
{
	struct service *svc = w->svc;
	char **hidden = sandbox_hidden_paths(&svc->paths, NULL);
	struct sandbox_policy policy = {
		.profile = SANDBOX_WORKSPACE_WRITE,
		.workspace = a->path,
		.network = false,
		.hidden = (const char *const *)hidden,
		.allow_unconfined = settings_allow_unconfined(svc->settings),
	};
	const char *path = getenv("PATH");
	char path_env[4096], home_env[PATH_MAX + 8], err[512];
	char *envp[] = { path_env, home_env, "LANG=C.UTF-8", NULL };
	char buf[ATTEMPTS_CHECK_OUTPUT_MAX + 1];
	size_t len = 0;
	int pipes[2], fds[3], wstatus = 0;
	long long deadline = clock_mono_ms() + ATTEMPTS_CHECK_TIMEOUT_MS;
	pid_t pid, got = 0;
	bool killed = false;

	snprintf(path_env, sizeof path_env, "PATH=%s", path ? path : "/usr/bin:/bin");
	snprintf(home_env, sizeof home_env, "HOME=%s", a->path);
	*code = -1;
	if (pipe2(pipes, O_CLOEXEC) != 0) {
		snprintf(status, 16, "error");
		*output = xasprintf("no pipe: %s", strerror(errno));
		sandbox_hidden_free(hidden);
		return;
	}
	fds[0] = -1;
	fds[1] = fds[2] = pipes[1];
	if (sandbox_spawn_shell(&policy, a->cwd, a->check, envp, fds, &pid, err,
	    sizeof err) != 0) {
		close(pipes[0]);
		close(pipes[1]);
		snprintf(status, 16, "error");
		*output = xstrdup(err);
		sandbox_hidden_free(hidden);
		return;
	}
	close(pipes[1]);
	sandbox_hidden_free(hidden);
	for (;;) {
		struct pollfd pfd = { .fd = pipes[0], .events = POLLIN };
		char chunk[4096];
		ssize_t r;
		bool stop;

		pthread_mutex_lock(&w->mu);
		stop = w->stop;
		pthread_mutex_unlock(&w->mu);
		if (stop || clock_mono_ms() > deadline) {
			killed = true;
			break;
		}
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		r = read(pipes[0], chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && len < ATTEMPTS_CHECK_OUTPUT_MAX; i++)
			buf[len++] = chunk[i];
	}
	close(pipes[0]);
	if (killed)
		sandbox_kill(pid);
	while ((got = waitpid(pid, &wstatus, 0)) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	*output = xstrdup(buf);
	if (killed) {
		snprintf(status, 16, "error");
	} else {
		*code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
		snprintf(status, 16, "%s", *code == 0 ? "passed" : "failed");
	}
}

/* Measures one ended attempt and runs its check; false when none waits. */
static bool
attempts_finish_one(struct attempts *w)
{
	struct service *svc = w->svc;
	struct store *st = svc->store;
	struct attempt_row *rows;
	char why[ATTEMPTS_WHY], status[16] = "none", *patch, *index, *output = NULL;
	long files = 0, added = 0, deleted = 0;
	int code = -1;
	size_t n;
	bool measured;

	pthread_mutex_lock(&attempts_mu);
	store_lock(st);
	rows = attempt_rows(st, ATTEMPT_ROW_SELECT
	    "WHERE a.state = 'active' AND a.check_status IS NULL AND EXISTS"
	    " (SELECT 1 FROM runs r WHERE r.id = a.run_id AND r.status IN"
	    " ('completed', 'failed', 'cancelled')) LIMIT 1", NULL, &n);
	store_unlock(st);
	if (n == 0) {
		pthread_mutex_unlock(&attempts_mu);
		free(rows);
		return false;
	}
	patch = attempts_scratch(svc, rows[0].group, "-measure.patch");
	index = attempts_scratch(svc, rows[0].group, "-measure.index");
	measured = attempts_git_patch(rows[0].git_dir, rows[0].path, rows[0].base, index, patch,
	    &files, &added, &deleted, why, sizeof why);
	if (!measured)
		log_warn("attempts %s: attempt %d not measured: %s", rows[0].group, rows[0].idx,
		    why);
	unlink(patch);
	free(patch);
	free(index);
	store_lock(st);
	attempts_rows_measured(st, rows[0].group, rows[0].idx, measured, files, added, deleted,
	    rows[0].check != NULL ? "running" : "none");
	attempts_group_touch(st, rows[0].group, NULL);
	attempts_emit(svc, "attempts.updated", rows[0].group, rows[0].session, rows[0].run);
	store_unlock(st);
	pthread_mutex_unlock(&attempts_mu);
	if (rows[0].check != NULL) {
		attempts_check_run(w, &rows[0], status, &code, &output);
		store_lock(st);
		attempts_rows_checked(st, rows[0].group, rows[0].idx, status, code,
		    output ? output : "");
		attempts_group_touch(st, rows[0].group, NULL);
		attempts_emit(svc, "attempts.updated", rows[0].group, rows[0].session,
		    rows[0].run);
		store_unlock(st);
		free(output);
	}
	attempt_rows_free(rows, n);
	return true;
}

static void *
attempts_main(void *arg)
{
	struct attempts *w = arg;

	for (;;) {
		struct timespec until;
		bool stop, orphans;

		pthread_mutex_lock(&w->mu);
		stop = w->stop;
		orphans = w->orphans;
		w->orphans = false;
		pthread_mutex_unlock(&w->mu);
		if (stop)
			break;
		if (orphans)
			attempts_orphans(w->svc);
		if (attempts_finish_one(w))
			continue;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&w->mu);
		if (!w->stop)
			pthread_cond_timedwait(&w->cond, &w->mu, &until);
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

struct attempts *
attempts_start(struct service *svc)
{
	struct attempts *w = xcalloc(1, sizeof *w);

	w->svc = svc;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, attempts_main, w) != 0) {
		log_error("attempts: no worker thread; checks do not run");
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cond);
		free(w);
		return NULL;
	}
	return w;
}

void
attempts_session_deleted(struct service *svc, const char *session_id)
{
	struct attempts *w = svc->attempts;

	(void)session_id;	/* the worker removes every attempt whose session is gone */
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->orphans = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
}

void
attempts_stop(struct attempts *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	free(w);
}
