/* A person's decision on a plan (plans-write.h). */
#include <string.h>

#include "plans-write.h"
#include "plans.h"
#include "problem.h"
#include "service.h"
#include "sessions.h"
#include "store.h"
#include "supervisor.h"

/* Whether the pending plan p may take the decision on version and revision; else *pr. */
static bool
plans_respond_check_locked(struct store *st, const char *session_id,
    const struct pending_plan *p, long long version, long long revision, struct problem *pr)
{
	if (!p->found) {
		if (sessions_exists(st, session_id))
			problem_set(pr, TD_PLAN_NOT_PENDING, NULL, "%s",
			    errcode_default_message(TD_PLAN_NOT_PENDING));
		else
			problem_not_found(pr, "session", session_id);
		return false;
	}
	if (p->version != version || p->revision != revision) {
		pr->details = cJSON_CreateObject();
		cJSON_AddItemToObject(pr->details, "current", plan_load(st, session_id));
		problem_set(pr, TD_STALE_PLAN, NULL, "%s", errcode_default_message(TD_STALE_PLAN));
		return false;
	}
	if (strcmp(p->status, "awaiting-approval") != 0 || !p->run_running) {
		problem_set(pr, TD_PLAN_NOT_PENDING, NULL, "%s",
		    errcode_default_message(TD_PLAN_NOT_PENDING));
		return false;
	}
	return true;
}

cJSON *
plans_respond(struct service *svc, const char *session_id, const char *decision,
    const char *feedback, long long version, long long revision, struct problem *pr)
{
	struct store *st = svc->store;
	struct pending_plan p = { 0 };
	cJSON *plan = NULL;
	bool ok;

	store_lock(st);
	ok = store_begin(st);
	if (ok)
		plan_pending_read(st, session_id, &p);
	if (ok && !plans_respond_check_locked(st, session_id, &p, version, revision, pr)) {
		store_rollback(st);
		store_unlock(st);
		cJSON_Delete(p.steps);
		return NULL;
	}
	ok = ok && plan_decision_apply_locked(svc, session_id, &p, decision, feedback);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		plan_emit_locked(svc, session_id);
		plan_attention_emit_locked(svc, p.run_id, NULL);
		plan = plan_load(st, session_id);
		supervisor_respond(svc->supervisor, p.run_id, p.request_id,
		    decision_result(decision, feedback, p.steps));
		if (strcmp(decision, "reject") == 0)
			supervisor_cancel(svc->supervisor, p.run_id);
	}
	store_unlock(st);
	cJSON_Delete(p.steps);
	if (plan == NULL)
		problem_set(pr, TD_INTERNAL_ERROR, NULL, "%s",
		    errcode_default_message(TD_INTERNAL_ERROR));
	return plan;
}
