/*
 * The supervisor: one taskdeck-agent process per executing run, spoken to
 * over the host protocol (docs/host-protocol.md).  It starts queued runs in
 * creation order while fewer than runs.maxConcurrent execute, persists every
 * state change, and finalizes each run exactly once.
 */
#ifndef TD_SERVICE_SUPERVISOR_H
#define TD_SERVICE_SUPERVISOR_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct service;
struct supervisor;

/*
 * Settles what an earlier service process left and starts the scheduler
 * (docs/service.md, Restart): running runs resume from their checkpoint,
 * before queued runs get a slot; those being cancelled end cancelled, those
 * of external frameworks fail service_restarted, those past runs.resumeLimit
 * fail resume_limit.  NULL with *err set.
 */
struct supervisor *supervisor_start(struct service *svc, char **err);
/*
 * After the last event is written at a stop: records the clean stop, so the
 * next start marks no history gap (docs/events.md).
 */
void supervisor_clean_stop(struct service *svc);
/* A run may have been queued or a slot freed: look for work. */
void supervisor_kick(struct supervisor *sv);
/* Asks the agent of a running run to stop; false when it has none. */
bool supervisor_cancel(struct supervisor *sv, const char *run_id);
/*
 * Hands the answer to the agent's request request_id to the run's thread,
 * which sends it; takes result.  False (result freed) when the run has no
 * agent any more.
 */
bool supervisor_respond(struct supervisor *sv, const char *run_id, long long request_id,
    cJSON *result);
/* How many runs have an agent now. */
int supervisor_active(struct supervisor *sv);
/*
 * Stops the agents (runs that can resume stay running for the next start,
 * those of external frameworks end failed with service_stopped; queued runs
 * stay queued), joins every thread and frees sv.
 */
void supervisor_stop(struct supervisor *sv);

#endif
