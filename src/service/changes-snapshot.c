/*
 * A snapshot of a run's workspace, on the snapshot thread (changes-int.h):
 * the tree of the workspace now, recorded in the run's row; a step that
 * changed something also updates the run's counts and emits run.changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "changes-int.h"
#include "log.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define CHANGES_REPLACED_WHY "the session's directory was replaced since its first snapshot " \
	"(moved, or a link or another directory is at its path): it is no longer read"
/* The paths a run.changes event names. */
#define CHANGES_EVENT_PATHS 20

/* No snapshot was taken: the run's changes stay those of the snapshot before, and say why. */
static void
changes_snapshot_failed(struct changes *c, const struct changes_job *job, bool replaced)
{
	struct store *st = c->svc->store;
	struct changes_row row;

	log_warn("run %s: no snapshot of its workspace; the run goes on", job->run_id);
	if (replaced) {
		store_lock(st);
		if (changes_row_get(st, job->run_id, &row))
			changes_row_end_why(st, job->run_id, CHANGES_REPLACED_WHY);
		store_unlock(st);
		return;
	}
	/* The changes stay those of the snapshot before, and say so. */
	changes_failed_mark(c, job->run_id, true);
	store_lock(st);
	if (changes_row_get(st, job->run_id, &row))
		changes_row_end_why(st, job->run_id, CHANGES_FAILED_WHY);
	store_unlock(st);
}

/*
 * Why the snapshot of job lacks part of the workspace (why: the walk's
 * reason, taken), with what a late start adds, cut at CHANGES_WHY_MAX; NULL
 * when it is whole.
 */
static char *
changes_snapshot_why(struct changes *c, struct changes_job *job, char *why)
{
	bool late;

	pthread_mutex_lock(&c->mu);
	job->walked = true;
	late = job->late;
	pthread_mutex_unlock(&c->mu);
	if (late) {
		char *both = xasprintf("the agent started before the start snapshot was "
		    "complete (after %d ms): what it changed meanwhile may be missing%s%s",
		    CHANGES_START_WAIT_MS, why ? "; " : "", why ? why : "");
		free(why);
		why = both;
	}
	if (why != NULL && strlen(why) >= CHANGES_WHY_MAX)
		why[CHANGES_WHY_MAX - 1] = '\0';
	return why;
}

/*
 * A step that changed the tree from row's end: the run's new counts into its
 * row, and run.changes.  The counts change only for the paths this step
 * changed: their lines from the start to the last snapshot go, from the start
 * to this one come, so a step reads what it changed, not everything the run did.
 */
static void
changes_snapshot_step(struct changes *c, const struct changes_job *job,
    struct changes_session *s, const struct changes_row *row, const git_oid *tree,
    const char *why)
{
	struct store *st = c->svc->store;
	git_diff *total, *step, *before;
	long files, adds, dels, old_adds, old_dels, new_adds, new_dels;
	const char **paths = NULL;
	size_t npaths;
	cJSON *data, *names;

	total = changes_tree_diff(s->repo, &row->start, tree, NULL);
	step = changes_tree_diff(s->repo, &row->end, tree, NULL);
	before = changes_tree_diff(s->repo, &row->start, &row->end, NULL);
	if (total == NULL || step == NULL || before == NULL)
		goto out;
	paths = changes_paths(step, &npaths);
	changes_lines_of(s->repo, before, paths, npaths, &old_adds, &old_dels);
	changes_lines_of(s->repo, total, paths, npaths, &new_adds, &new_dels);
	files = (long)git_diff_num_deltas(total);
	adds = row->additions - old_adds + new_adds;
	dels = row->deletions - old_dels + new_dels;
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "runId", job->run_id);
	cJSON_AddNumberToObject(data, "seq", (double)row->steps + 1);
	cJSON_AddNumberToObject(data, "files", (double)files);
	cJSON_AddNumberToObject(data, "additions", (double)adds);
	cJSON_AddNumberToObject(data, "deletions", (double)dels);
	names = cJSON_AddArrayToObject(data, "paths");
	for (size_t i = 0; i < git_diff_num_deltas(step) && i < CHANGES_EVENT_PATHS; i++)
		cJSON_AddItemToArray(names, cJSON_CreateString(
		    git_diff_get_delta(step, i)->new_file.path));
	store_lock(st);
	if (changes_row_update(st, job->run_id, tree, files, adds, dels, why)) {
		changes_failed_mark(c, job->run_id, false);
		cache_drop(c->svc->cache, job->run_id);
		run_emit(c->svc, "run.changes", job->run_id, data);
	} else {
		log_error("run %s: cannot record a snapshot", job->run_id);
		changes_failed_mark(c, job->run_id, true);
		cJSON_Delete(data);
	}
	store_unlock(st);
out:
	free(paths);
	git_diff_free(total);
	git_diff_free(step);
	git_diff_free(before);
}

/* A test hook: a start snapshot waits after its listing until this file exists. */
#define CHANGES_TEST_HOLD_ENV "TASKDECK_TEST_CHANGES_HOLD"
#define CHANGES_TEST_HOLD_MS 60000

struct changes_listed {
	struct changes *c;
	struct changes_job *job;
};

/*
 * A start snapshot has listed the workspace: its run may start, the files
 * are read meanwhile (changes_walk, split).  The job is the thread's from now on.
 */
static void
changes_start_listed(void *arg)
{
	struct changes_listed *l = arg;
	const char *hold = getenv(CHANGES_TEST_HOLD_ENV);

	pthread_mutex_lock(&l->c->mu);
	if (l->job->wait && !l->job->late) {
		l->job->listed = true;	/* the asker leaves the job to the thread */
		pthread_cond_broadcast(&l->c->cond);
	}
	pthread_mutex_unlock(&l->c->mu);
	for (int64_t t0 = clock_mono_ms(); hold != NULL && hold[0] != '\0' &&
	    access(hold, F_OK) != 0 && clock_mono_ms() - t0 < CHANGES_TEST_HOLD_MS;)
		usleep(10 * 1000);
}

void
changes_do_snapshot(struct changes *c, struct changes_job *job)
{
	struct changes_listed listed = { c, job };
	struct store *st = c->svc->store;
	struct changes_session *s = changes_session_get(c, job->session_id);
	struct changes_row row;
	git_oid tree;
	char *why = NULL;
	bool found, replaced = false;

	if (s == NULL || !changes_take(c, s, job->workspace, job->hidden,
	    job->when == CHANGES_START ? changes_start_listed : NULL, &listed, &tree, &why, true,
	    &replaced)) {
		changes_snapshot_failed(c, job, replaced);
		return;
	}
	why = changes_snapshot_why(c, job, why);
	if (job->when == CHANGES_END)
		changes_session_save(c, s);
	store_lock(st);
	found = changes_row_get(st, job->run_id, &row);
	if (!found && !changes_row_insert(st, job->run_id, job->session_id, &tree, why))
		log_error("run %s: cannot record its first snapshot", job->run_id);
	if (!found) {
		cache_drop(c->svc->cache, job->run_id);
	} else if (git_oid_equal(&row.end, &tree) && strcmp(row.end_why, why ? why : "") != 0) {
		bool recorded = changes_row_end_why(st, job->run_id, why);

		changes_failed_mark(c, job->run_id, !recorded);
		if (!recorded)
			log_error("run %s: cannot record a snapshot", job->run_id);
	} else if (git_oid_equal(&row.end, &tree)) {
		changes_failed_mark(c, job->run_id, false);
	}
	store_unlock(st);
	if (found && !git_oid_equal(&row.end, &tree))
		changes_snapshot_step(c, job, s, &row, &tree, why);
	free(why);
}
