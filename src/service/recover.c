/*
 * Recovery at start-up (supervisor-int.h): settles what an earlier service
 * process left running, and records a clean stop.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "events.h"
#include "frameworks.h"
#include "log.h"
#include "plans.h"
#include "resource.h"
#include "runs.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "supervisor-int.h"
#include "timeutil.h"
#include "xalloc.h"

/* What recover found of one run left running by an earlier process. */
struct left_run {
	char id[TD_ID_MAX], session[TD_ID_MAX], project[TD_ID_MAX];
	char framework[32];
	int resumes;
	bool cancel;
	const char *status, *code;	/* NULL status: it resumes */
	char *message;
};

/* Whether the last stop was clean; forgets it for the next one.  In the caller's transaction. */
static bool
recover_clean_stop_locked(struct store *st, bool *clean)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT value = '1' FROM service_state"
	    " WHERE key = 'clean_stop'");
	bool ok;

	*clean = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) != 0;
	sqlite3_reset(s);
	s = store_stmt(st, "DELETE FROM service_state WHERE key = 'clean_stop'");
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

/* The runs left running, into *left (*n of them). */
static void
recover_left_read_locked(struct store *st, struct left_run **left, size_t *n)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT id, session_id, project_id,"
	    " json_extract(config, '$.framework'), resumes,"
	    " cancel_requested_at IS NOT NULL FROM runs WHERE status = 'running' ORDER BY id");

	while (sqlite3_step(s) == SQLITE_ROW) {
		struct left_run *l;

		*left = xrealloc(*left, (*n + 1) * sizeof **left);
		l = memset(&(*left)[(*n)++], 0, sizeof **left);
		snprintf(l->id, sizeof l->id, "%s", resource_text(s, 0));
		snprintf(l->session, sizeof l->session, "%s", resource_text(s, 1));
		snprintf(l->project, sizeof l->project, "%s", resource_text(s, 2));
		snprintf(l->framework, sizeof l->framework, "%s", resource_text(s, 3));
		l->resumes = sqlite3_column_int(s, 4);
		l->cancel = sqlite3_column_int(s, 5) != 0;
	}
	sqlite3_reset(s);
}

/* How run l ends (its status, code and message), or status NULL when it resumes. */
static void
recover_decide(struct left_run *l, int max)
{
	if (l->cancel) {
		l->status = "cancelled";
	} else if (frameworks_external(l->framework)) {
		l->status = "failed";
		l->code = "service_restarted";
		l->message = xstrdup("The service restarted while the run was executing.");
	} else if (l->resumes >= max) {
		l->status = "failed";
		l->code = "resume_limit";
		l->message = xasprintf("The service restarted while the run was executing, "
		    "and the run has resumed %d time%s already (runs.resumeLimit).",
		    l->resumes, l->resumes == 1 ? "" : "s");
	}
}

/* After the commit: run.history-gap when the stop was not clean, run.finished when it ended. */
static void
recover_publish_locked(struct service *svc, const struct left_run *l, bool clean)
{
	cache_drop(svc->cache, l->id);
	if (!clean) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "reason", "The service did not stop cleanly: "
		    "events it published in its last moments may be missing from this "
		    "run's history.");
		cJSON_AddNumberToObject(d, "maxMs", EVENTS_FLUSH_MS);
		events_emit(svc->events, "run.history-gap", l->project, l->session, l->id, d);
	}
	if (l->status != NULL)
		runs_emit_finished_locked(svc, l->id, l->status, l->code, l->message);
}

/*
 * DESIGN section 8: what a previous process left running resumes, unless
 * it was being cancelled (cancelled), runs an external framework (failed,
 * service_restarted) or has resumed runs.resumeLimit times (failed,
 * resume_limit).  Ended runs' saves become
 * visible and their plans and prompts close; those of resuming runs stay.
 * After a stop that was not clean, each run left running gets
 * run.history-gap (docs/events.md).  The ids to resume go to *resume.
 */
bool
recover_runs(struct service *svc, char (**resume)[TD_ID_MAX], size_t *nresume, char **err)
{
	struct store *st = svc->store;
	int max = settings_resume_limit(svc->settings);
	struct left_run *left = NULL;
	size_t n = 0, ended = 0;
	int64_t now = clock_wall_ms();
	bool ok, clean = false;

	*resume = NULL;
	*nresume = 0;
	store_lock(st);
	ok = store_begin(st) && recover_clean_stop_locked(st, &clean);
	if (ok)
		recover_left_read_locked(st, &left, &n);
	for (size_t i = 0; ok && i < n; i++) {
		struct left_run *l = &left[i];

		recover_decide(l, max);
		if (l->status == NULL) {
			ok = runs_resume_count(st, l->id, now);
			*resume = xrealloc(*resume, (*nresume + 1) * sizeof **resume);
			snprintf((*resume)[(*nresume)++], TD_ID_MAX, "%s", l->id);
			continue;
		}
		ended++;
		ok = runs_end_left_locked(svc, l->id, l->status, l->code, l->message, now);
	}
	ok = ok && plans_recover_locked(svc);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	for (size_t i = 0; ok && i < n; i++)
		recover_publish_locked(svc, &left[i], clean);
	store_unlock(st);
	for (size_t i = 0; i < n; i++)
		free(left[i].message);
	free(left);
	if (!ok) {
		free(*resume);
		*resume = NULL;
		*nresume = 0;
		*err = xstrdup("cannot settle the runs of the previous service process");
		return false;
	}
	if (*nresume > 0)
		log_info("%zu run(s) were executing when the service last stopped; they resume",
		    *nresume);
	if (ended > 0)
		log_warn("%zu run(s) were executing when the service last stopped and cannot "
		    "resume; they end", ended);
	return true;
}

void
supervisor_clean_stop(struct service *svc)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;

	store_lock(st);
	s = store_stmt(st, "INSERT OR REPLACE INTO service_state (key, value)"
	    " VALUES ('clean_stop', '1')");
	if (sqlite3_step(s) != SQLITE_DONE)
		log_warn("cannot record the clean stop; the next start marks a history gap");
	sqlite3_reset(s);
	store_unlock(st);
}
