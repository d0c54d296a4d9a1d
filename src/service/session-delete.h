/*
 * Deleting a session (an extension beyond the spec; docs/http-api.md,
 * "Deleting a session"): its rows, each through the module that writes the
 * table, in one transaction; then its files (the changes store, the managed
 * workspace, artifact contents no row names), which the next start sweeps
 * when a crash came between the two.  An external workspace is never touched.
 */
#ifndef TD_SERVICE_SESSION_DELETE_H
#define TD_SERVICE_SESSION_DELETE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ids.h"

struct service;
struct problem;

/*
 * The ids of up to max queued or running runs of session id; how many in
 * all, or -1 when there is no such session.  Takes the store lock.
 */
long session_delete_active(struct service *svc, const char *id, char (*ids)[TD_ID_MAX],
    size_t max);
/*
 * Deletes session id when none of its runs is queued or running: the answer
 * ({id, runs, removed: [paths], kept: [paths]}), or NULL with *p (not_found,
 * session_busy).  Emits session.deleted and ends the session's streams.
 */
cJSON *session_delete(struct service *svc, const char *id, struct problem *p);
/*
 * DELETE /sessions/:id: session_delete, after (force) cancelling the
 * session's queued and running runs as POST /runs/:id/cancel does and
 * waiting up to 15 s for them to end; NULL with *p (not_found, session_busy).
 */
cJSON *session_delete_request(struct service *svc, const char *id, bool force,
    struct problem *p);
/*
 * At start-up, before runs resume: removes the changes stores, managed
 * workspaces and artifact contents that no session or artifact row names.
 */
void session_delete_sweep(struct service *svc);

#endif
