/*
 * The plan domain (plans.c, docs/http-api.md, Plans): what route-plans.c and
 * the supervisor's run threads share.  plan_propose and plan_step take the
 * store lock; the others run while it is held.
 */
#ifndef TD_SERVICE_PLANS_H
#define TD_SERVICE_PLANS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errors.h"
#include "ids.h"

struct service;
struct store;

/* The session's plan as the API shows it, or NULL. */
cJSON *plan_load(struct store *st, const char *session_id);
/* plan.updated with the session's plan. */
void plan_emit_locked(struct service *svc, const char *session_id);
/*
 * The agent's plan.propose: stores a new version awaiting approval, sets the
 * run's attention and emits.  The answer comes later (supervisor_respond).
 * On a problem *message (malloc'd) says what for the agent's error response.
 */
enum td_code plan_propose(struct service *svc, const char *run_id, const char *session_id,
    long long request_id, const cJSON *params, char **message);
/* The agent's plan.step: a step of the run's approved plan changes status. */
enum td_code plan_step(struct service *svc, const char *run_id, const char *session_id,
    const cJSON *params, char **message);
/*
 * Inside the transaction that finalizes run_id: its open plan becomes
 * completed (status "completed") or abandoned, its pending prompts expired.
 * runs.c calls it as svc->run_ended, which start-up sets.
 */
bool plans_run_ended(struct service *svc, const char *run_id, const char *status);
/* Deletes the plan of session_id; false on error.  In the caller's transaction. */
bool plans_delete_session(struct store *st, const char *session_id);
/*
 * Inside the start-up transaction, after the runs that do not resume have
 * ended: the open plans and pending prompts of runs not running (any left)
 * are abandoned and expired; those of resuming runs stay as they were.
 */
bool plans_recover_locked(struct service *svc);

/* The agent's answer to plan.propose for a decision on a plan with steps. */
cJSON *decision_result(const char *decision, const char *feedback, const cJSON *steps);

/* The session's plan as route-plans.c decides on it (plan_pending_read). */
struct pending_plan {
	bool found;
	char run_id[TD_ID_MAX];
	long long version, revision, request_id;
	char status[32];
	cJSON *steps;		/* the caller frees it */
	bool run_running;
};

/* Reads the session's plan into p (p->found false when it has none). */
void plan_pending_read(struct store *st, const char *session_id, struct pending_plan *p);
/* Applies a person's decision to the pending plan p; false on a store error. */
bool plan_decision_apply_locked(struct service *svc, const char *session_id,
    const struct pending_plan *p, const char *decision, const char *feedback);
/*
 * The plan.propose of a resumed run's agent, redone after a restart.
 * When the session's plan is this run's with the same summary and step
 * titles, and awaiting approval, it is not proposed again: its request id
 * becomes request_id (the answer comes from a person, as before).  When it
 * was approved or revised since `since` (the resume), *answer is the decision
 * to send at once.  False: not the same plan (plan_propose it).
 */
bool plan_rebind(struct service *svc, const char *run_id, const char *session_id,
    long long request_id, const cJSON *params, int64_t since, cJSON **answer);
/* run.attention for run_id; attention consumed (NULL: cleared). */
void plan_attention_emit_locked(struct service *svc, const char *run_id, cJSON *attention);

#endif
