/*
 * The writes people ask of runs (docs/http-api.md, Runs): admitting one and
 * cancelling one.  Each takes the store lock itself, owns its transaction,
 * publishes after the commit and tells the supervisor; a refusal is a
 * struct problem.
 */
#ifndef TD_SERVICE_RUNS_WRITE_H
#define TD_SERVICE_RUNS_WRITE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "ids.h"

struct service;
struct problem;

/*
 * Admits the run a POST /runs body asks for (a body whose members the
 * route checked): resolves and checks cwd, the project, the session and
 * the configuration (probing an external framework's CLI without the store
 * lock), creates a new session (and its managed workspace), inserts the run
 * as queued and kicks the supervisor.  true with run_id set, or false with
 * *p (not_found, invalid_request, invalid_cwd, cwd_mismatch, session_busy,
 * invalid_configuration, workspace problems, internal_error).
 */
bool runs_create(struct service *svc, const cJSON *body, char run_id[TD_ID_MAX],
    struct problem *p);
/*
 * Asks run id to stop: a queued run ends cancelled at once, a running one
 * through the supervisor.  false with *p (internal_error) when neither could
 * be done; an unknown run is no error (its read answers 404).
 */
bool runs_cancel(struct service *svc, const char *id, struct problem *p);

#endif
