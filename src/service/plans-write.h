/*
 * A person's decision on a session's plan (docs/http-api.md, Plans), checked
 * and applied in one transaction so that of two clients deciding the same
 * state exactly one wins, then handed to the run through the supervisor.
 */
#ifndef TD_SERVICE_PLANS_WRITE_H
#define TD_SERVICE_PLANS_WRITE_H

#include <cjson/cJSON.h>

struct service;
struct problem;

/*
 * Applies decision (approve, revise with feedback, reject) to the plan of
 * session_id at version and revision: the plan as it is now, or NULL with
 * *p (not_found, plan_not_pending, stale_plan with details.current,
 * internal_error).  Takes the store lock.
 */
cJSON *plans_respond(struct service *svc, const char *session_id, const char *decision,
    const char *feedback, long long version, long long revision, struct problem *p);

#endif
