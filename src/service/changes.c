/*
 * A run's workspace changes (changes.h): the snapshot thread and its queue.
 * Snapshots, reverts and the removal of a deleted session's store run on one
 * thread of their own (changes-snapshot.c, changes-revert.c), in the order
 * they were asked, so the snapshots of a session never interleave; between
 * jobs the thread packs the stores' loose objects.  The parts of the module
 * and who calls whom: changes-int.h.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "changes-int.h"
#include "paths.h"
#include "ids.h"
#include "log.h"
#include "sandbox.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

/* How long a run's end waits for its end snapshot before it is final anyway. */
#define CHANGES_END_WAIT_MS 5000

static void
changes_job_free(struct changes_job *job)
{
	free(job->workspace);
	sandbox_hidden_free(job->hidden);
	cJSON_Delete(job->answer);
	cJSON_Delete(job->problem.details);
	free(job);
}

/* Closes the store of a deleted session without saving its stat cache, and removes it. */
static void
changes_do_forget(struct changes *c, struct changes_job *job)
{
	struct changes_session *s, **pp;
	char *path;

	for (pp = &c->sessions; (s = *pp) != NULL; pp = &s->next) {
		if (strcmp(s->id, job->session_id) == 0) {
			*pp = s->next;
			changes_walker_free(s->walker);
			git_repository_free(s->repo);
			free(s);
			break;
		}
	}
	path = changes_repo_path(c->svc, job->session_id);
	if (!paths_remove_tree(path)) {
		job->answer = NULL;
		log_warn("changes: cannot remove %s: %s", path, strerror(errno));
	} else {
		job->answer = cJSON_CreateTrue();
	}
	free(path);
}

/*
 * Packs a batch of each store with CHANGES_PACK_LOOSE loose objects or more,
 * when no job waits; whether a store has more to pack.
 */
static bool
changes_pack_idle(struct changes *c)
{
	bool more = false;

	for (struct changes_session *s = c->sessions; s != NULL; s = s->next) {
		int64_t t0 = clock_mono_ms();
		size_t n = changes_walker_loose(s->walker);

		if (n < CHANGES_PACK_LOOSE)
			continue;
		if (changes_walker_pack(s->walker)) {
			log_debug("changes: packed %zu objects of session %s in %lldms",
			    n - changes_walker_loose(s->walker), s->id,
			    (long long)(clock_mono_ms() - t0));
		} else {
			const git_error *e = git_error_last();
			log_warn("changes: cannot pack the store of session %s: %s", s->id,
			    e ? e->message : "?");
			continue;
		}
		more = more || changes_walker_loose(s->walker) >= CHANGES_PACK_LOOSE;
	}
	return more;
}

static void *
changes_thread(void *arg)
{
	struct changes *c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct changes_job *job = c->head;

		if (job == NULL) {
			if (c->stopping)
				break;
			pthread_cond_wait(&c->cond, &c->mu);
			continue;
		}
		c->head = job->next;
		if (c->head == NULL)
			c->tail = NULL;
		pthread_mutex_unlock(&c->mu);
		if (job->kind == JOB_SNAPSHOT)
			changes_do_snapshot(c, job);
		else if (job->kind == JOB_FORGET)
			changes_do_forget(c, job);
		else
			changes_do_revert(c, job);
		pthread_mutex_lock(&c->mu);
		if (job->late && job->when == CHANGES_END)
			changes_marks_set(&c->ending, job->run_id, false);
		if (job->wait) {
			job->done = true;
			pthread_cond_broadcast(&c->cond);
		} else {
			changes_job_free(job);
		}
		/* A batch at a time, so a job that comes meanwhile waits for one batch only. */
		for (bool more = true; more && c->head == NULL && !c->stopping;) {
			pthread_mutex_unlock(&c->mu);
			more = changes_pack_idle(c);
			pthread_mutex_lock(&c->mu);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

struct changes *
changes_start(struct service *svc, char **err)
{
	struct changes *c = xcalloc(1, sizeof *c);

	c->svc = svc;
	c->dir = xasprintf("%s/changes", svc->paths.data_dir);
	c->total = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, changes_thread, c) != 0) {
		*err = xstrdup("the snapshot thread could not start");
		free(c->dir);
		free(c);
		return NULL;
	}
	return c;
}

void
changes_stop(struct changes *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	while (c->sessions != NULL) {
		struct changes_session *s = c->sessions;
		c->sessions = s->next;
		changes_session_close(c, s);
	}
	changes_marks_clear(&c->failed);
	changes_marks_clear(&c->ending);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cond);
	free(c->dir);
	if (c->git > 0)
		git_libgit2_shutdown();
	free(c);
}

/* How a wait for a job ended. */
enum changes_waited {
	WAITED_DONE,		/* the job is done (the caller frees it), or was not waited for */
	WAITED_LISTED,		/* a start listed the workspace: it goes on (the thread frees it) */
	WAITED_LATE,		/* the workspace was not read in time (the thread frees it) */
};

/*
 * Queues job; with job->wait, returns once it is done (the caller frees it),
 * or once a start snapshot listed the workspace (changes_walk, split), or,
 * with wait_ms > 0, once the workspace is not read wait_ms after: then the
 * job is late.  In the last two the thread frees it.
 */
static enum changes_waited
changes_queue(struct changes *c, struct changes_job *job, int wait_ms)
{
	struct timespec until;
	enum changes_waited how;

	pthread_mutex_lock(&c->mu);
	if (job->kind == JOB_SNAPSHOT && job->when == CHANGES_STEP && !job->wait) {
		for (struct changes_job *q = c->head; q != NULL; q = q->next) {
			if (q->kind == JOB_SNAPSHOT && q->when == CHANGES_STEP &&
			    strcmp(q->run_id, job->run_id) == 0) {
				pthread_mutex_unlock(&c->mu);
				changes_job_free(job);
				return WAITED_DONE;
			}
		}
	}
	if (c->tail != NULL)
		c->tail->next = job;
	else
		c->head = job;
	c->tail = job;
	pthread_cond_broadcast(&c->cond);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (job->wait && !job->done && !job->listed) {
		if (wait_ms <= 0 || job->walked) {
			pthread_cond_wait(&c->cond, &c->mu);
		} else if (pthread_cond_timedwait(&c->cond, &c->mu, &until) == ETIMEDOUT &&
		    !job->walked && !job->done && !job->listed) {
			job->late = true;
			job->wait = false;
			if (job->kind == JOB_SNAPSHOT && job->when == CHANGES_END)
				changes_marks_set(&c->ending, job->run_id, true);
		}
	}
	how = job->done ? WAITED_DONE : job->listed ? WAITED_LISTED : job->late ? WAITED_LATE :
	    WAITED_DONE;
	if (how == WAITED_LISTED)
		job->wait = false;	/* the thread frees it when it is done */
	pthread_mutex_unlock(&c->mu);
	return how;
}

void
changes_snapshot(struct changes *c, enum changes_when when, const char *run_id,
    const char *session_id, const char *workspace, char *const *hidden, bool wait)
{
	struct changes_job *job;
	char **copy = NULL;
	enum changes_waited how;

	if (c == NULL || workspace == NULL)
		return;
	job = xcalloc(1, sizeof *job);
	job->kind = JOB_SNAPSHOT;
	job->when = when;
	job->wait = wait;
	snprintf(job->run_id, sizeof job->run_id, "%s", run_id);
	snprintf(job->session_id, sizeof job->session_id, "%s", session_id);
	job->workspace = xstrdup(workspace);
	for (size_t i = 0; hidden != NULL && hidden[i] != NULL; i++)
		copy = sandbox_hidden_add(copy, hidden[i]);
	job->hidden = copy;
	/*
	 * A run starts once its start is listed, or after CHANGES_START_WAIT_MS;
	 * it is final once its end is read, or after CHANGES_END_WAIT_MS: said then.
	 */
	how = changes_queue(c, job, when == CHANGES_START ? CHANGES_START_WAIT_MS :
	    when == CHANGES_END ? CHANGES_END_WAIT_MS : 0);
	if (how == WAITED_DONE && wait)
		changes_job_free(job);
	else if (how == WAITED_LATE)
		log_warn("run %s: its %s snapshot takes more than %d ms: the run goes on, its "
		    "changes say they are incomplete meanwhile", run_id,
		    when == CHANGES_START ? "start" : "end",
		    when == CHANGES_START ? CHANGES_START_WAIT_MS : CHANGES_END_WAIT_MS);
}

cJSON *
changes_revert(struct service *svc, const char *run_id, bool force, struct problem *p)
{
	struct changes_job *job = xcalloc(1, sizeof *job);
	cJSON *answer;

	job->kind = JOB_REVERT;
	job->wait = true;
	job->force = force;
	snprintf(job->run_id, sizeof job->run_id, "%s", run_id);
	changes_queue(svc->changes, job, 0);
	answer = job->answer;
	job->answer = NULL;
	if (answer == NULL) {
		*p = job->problem;
		job->problem.details = NULL;
	}
	changes_job_free(job);
	return answer;
}

/* ---- deleting a session ---------------------------------------------------------- */

bool
changes_forget(struct changes *c, const char *session_id)
{
	struct changes_job *job;
	bool ok;

	if (c == NULL)
		return true;
	job = xcalloc(1, sizeof *job);
	job->kind = JOB_FORGET;
	job->wait = true;
	snprintf(job->session_id, sizeof job->session_id, "%s", session_id);
	changes_queue(c, job, 0);
	ok = job->answer != NULL;
	changes_job_free(job);
	return ok;
}

long
changes_sweep(struct service *svc)
{
	char *dir = xasprintf("%s/changes", svc->paths.data_dir);
	DIR *d = opendir(dir);
	struct dirent *e;
	long removed = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char id[TD_ID_MAX];
		sqlite3_stmt *s;
		bool found;

		if (len <= 4 || len - 4 >= sizeof id || strcmp(e->d_name + len - 4, ".git") != 0)
			continue;
		snprintf(id, sizeof id, "%.*s", (int)(len - 4), e->d_name);
		if (!id_valid(id, "ses"))
			continue;
		store_lock(svc->store);
		s = store_stmt(svc->store, "SELECT 1 FROM sessions WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		found = sqlite3_step(s) == SQLITE_ROW;
		sqlite3_reset(s);
		store_unlock(svc->store);
		if (found)
			continue;
		if (changes_forget(svc->changes, id))
			removed++;
	}
	if (d != NULL)
		closedir(d);
	free(dir);
	return removed;
}
