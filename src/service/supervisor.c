/*
 * The supervisor (supervisor.h): a scheduler thread moves queued runs to
 * running (runs_start) while slots are free, runs left running by an
 * earlier process first, and gives each a run thread (supervisor-run.c).
 * Cancels and people's answers reach a run thread through its wake-up
 * eventfd.
 *
 * Lock order: the store lock before sv->mu, never the reverse.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "runs.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "supervisor-int.h"
#include "timeutil.h"
#include "xalloc.h"

static void
supervisor_wake(struct agent_run *ar)
{
	uint64_t one = 1;

	if (write(ar->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("cannot wake the thread of %s: %s", ar->id, strerror(errno));
}

/* Gives up to slots runs waiting to resume their thread; how many. */
static int
supervisor_start_resumes(struct supervisor *sv, int slots)
{
	char id[TD_ID_MAX];
	int n = 0;

	while (n < slots) {
		pthread_mutex_lock(&sv->mu);
		if (sv->nresume == 0) {
			pthread_mutex_unlock(&sv->mu);
			break;
		}
		snprintf(id, sizeof id, "%s", sv->resume_ids[0]);
		memmove(sv->resume_ids, sv->resume_ids + 1, --sv->nresume * sizeof *sv->resume_ids);
		pthread_mutex_unlock(&sv->mu);
		run_thread_start(sv, id, true, false);
		n++;
	}
	return n;
}

/* Moves up to slots queued runs to running and starts their threads. */
static void
supervisor_start_queued(struct supervisor *sv, int slots)
{
	struct store *st = sv->svc->store;
	char ids[64][TD_ID_MAX];
	int64_t now = clock_wall_ms();
	size_t n;

	if (slots > 64)
		slots = 64;
	store_lock(st);
	n = runs_queued(st, ids, (size_t)slots);
	for (size_t i = 0; i < n; i++) {
		if (runs_start(sv->svc, ids[i], now))
			run_thread_start(sv, ids[i], false, false);
	}
	store_unlock(st);
}

static void *
supervisor_scheduler_thread(void *arg)
{
	struct supervisor *sv = arg;
	int max = settings_max_concurrent(sv->svc->settings);

	pthread_mutex_lock(&sv->mu);
	while (!sv->stopping) {
		while (!sv->kicked && !sv->stopping)
			pthread_cond_wait(&sv->cond, &sv->mu);
		if (sv->stopping)
			break;
		sv->kicked = false;
		int slots = max - sv->nactive;
		pthread_mutex_unlock(&sv->mu);
		if (slots > 0)
			slots -= supervisor_start_resumes(sv, slots);
		if (slots > 0)
			supervisor_start_queued(sv, slots);
		pthread_mutex_lock(&sv->mu);
	}
	pthread_mutex_unlock(&sv->mu);
	return NULL;
}

struct supervisor *
supervisor_start(struct service *svc, char **err)
{
	struct supervisor *sv;
	char (*resume)[TD_ID_MAX];
	size_t nresume;

	if (!recover_runs(svc, &resume, &nresume, err))
		return NULL;
	sv = xcalloc(1, sizeof *sv);
	sv->svc = svc;
	sv->kicked = true;	/* queued runs, and runs to resume, of an earlier process */
	sv->resume_ids = resume;
	sv->nresume = nresume;
	pthread_mutex_init(&sv->mu, NULL);
	pthread_cond_init(&sv->cond, NULL);
	if (pthread_create(&sv->scheduler, NULL, supervisor_scheduler_thread, sv) != 0) {
		*err = xstrdup("cannot start the run scheduler");
		free(sv->resume_ids);
		free(sv);
		return NULL;
	}
	return sv;
}

void
supervisor_kick(struct supervisor *sv)
{
	pthread_mutex_lock(&sv->mu);
	sv->kicked = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->mu);
}

/* Takes run_id out of the runs waiting to resume; under sv->mu. */
static bool
supervisor_resume_take(struct supervisor *sv, const char *run_id)
{
	for (size_t i = 0; i < sv->nresume; i++) {
		if (strcmp(sv->resume_ids[i], run_id) == 0) {
			memmove(sv->resume_ids + i, sv->resume_ids + i + 1,
			    (--sv->nresume - i) * sizeof *sv->resume_ids);
			return true;
		}
	}
	return false;
}

bool
supervisor_cancel(struct supervisor *sv, const char *run_id)
{
	bool found = false, waiting;

	pthread_mutex_lock(&sv->mu);
	for (struct agent_run *ar = sv->runs; ar; ar = ar->next) {
		if (strcmp(ar->id, run_id) == 0) {
			ar->cancel_requested = true;
			supervisor_wake(ar);
			found = true;
			break;
		}
	}
	/* A run waiting to resume gets its thread now, which ends it cancelled. */
	waiting = !found && !sv->stopping && supervisor_resume_take(sv, run_id);
	pthread_mutex_unlock(&sv->mu);
	if (waiting)
		run_thread_start(sv, run_id, true, true);
	return found || waiting;
}

bool
supervisor_respond(struct supervisor *sv, const char *run_id, long long request_id,
    cJSON *result)
{
	struct queued_response *q = xcalloc(1, sizeof *q), **pp;

	q->request_id = request_id;
	q->result = result;
	pthread_mutex_lock(&sv->mu);
	for (struct agent_run *ar = sv->runs; ar; ar = ar->next) {
		if (strcmp(ar->id, run_id) != 0)
			continue;
		for (pp = &ar->responses; *pp; pp = &(*pp)->next)
			;
		*pp = q;
		q = NULL;
		supervisor_wake(ar);
		break;
	}
	/*
	 * An answer for a run still waiting to resume is in the store; the
	 * run moves to the front of the line, and its agent finds the answer there.
	 */
	if (q != NULL && supervisor_resume_take(sv, run_id)) {
		/* supervisor_resume_take left room for one. */
		memmove(sv->resume_ids + 1, sv->resume_ids, sv->nresume * sizeof *sv->resume_ids);
		snprintf(sv->resume_ids[0], TD_ID_MAX, "%s", run_id);
		sv->nresume++;
		sv->kicked = true;
		pthread_cond_broadcast(&sv->cond);
	}
	pthread_mutex_unlock(&sv->mu);
	run_thread_responses_free(q);
	return q == NULL;
}

int
supervisor_active(struct supervisor *sv)
{
	int n;

	pthread_mutex_lock(&sv->mu);
	n = sv->nactive;
	pthread_mutex_unlock(&sv->mu);
	return n;
}

void
supervisor_stop(struct supervisor *sv)
{
	if (sv == NULL)
		return;
	pthread_mutex_lock(&sv->mu);
	sv->stopping = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->mu);
	pthread_join(sv->scheduler, NULL);

	pthread_mutex_lock(&sv->mu);
	for (struct agent_run *ar = sv->runs; ar; ar = ar->next) {
		ar->stop_requested = true;
		supervisor_wake(ar);
	}
	while (sv->nactive > 0)
		pthread_cond_wait(&sv->cond, &sv->mu);
	pthread_mutex_unlock(&sv->mu);
	pthread_mutex_destroy(&sv->mu);
	pthread_cond_destroy(&sv->cond);
	free(sv->resume_ids);
	free(sv);
}

