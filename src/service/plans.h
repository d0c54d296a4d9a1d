/*
 * Plans and permission prompts (docs/http-api.md, Plans and Permission
 * prompts): what route-plans.c, route-permissions.c and the supervisor's run
 * threads share.  plan_propose, plan_step and prompt_ask take the store lock;
 * the others run while it is held.
 */
#ifndef TD_SERVICE_PLANS_H
#define TD_SERVICE_PLANS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "errors.h"

struct service;
struct store;

/* The session's plan as the API shows it, or NULL. */
cJSON *plan_load(struct store *st, const char *session_id);
/* plan.updated with the session's plan. */
void plan_emit(struct service *svc, const char *session_id);
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
 */
bool plans_run_ended(struct service *svc, const char *run_id, const char *status);
/* Inside the start-up transaction: every open plan abandoned, every pending prompt expired. */
bool plans_recover(struct service *svc);

/* The prompt with id as the API shows it, or NULL. */
cJSON *prompt_load(struct store *st, const char *id);
/*
 * The agent's permission.ask: records a prompt and emits run.permission.
 * *allow_now is set when the run was answered allow-run: the prompt is
 * recorded as allowed and the caller answers allow at once.
 */
enum td_code prompt_ask(struct service *svc, const char *run_id, long long request_id,
    const cJSON *params, bool *allow_now, char **message);
/* The pending prompts of run_id, or of every run, become expired (plans_run_ended, plans_recover). */
bool prompts_run_ended(struct service *svc, const char *run_id);
bool prompts_recover(struct service *svc);

#endif
