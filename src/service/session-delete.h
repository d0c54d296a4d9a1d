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
 * DELETE /sessions/:id: session_delete (*status 200).  With force, when runs
 * of the session are queued or running: the session is marked as being
 * deleted (new runs into it are refused), its runs are cancelled as POST
 * /runs/:id/cancel does, and when some have not ended yet the answer is
 * *status 202 {id, deleting: true, cancelled: [run ids]}: the end of its last
 * run finishes the delete (session_delete_run_finished), on that run's
 * thread.  NULL with *p (not_found, session_busy).  Takes the store lock.
 */
cJSON *session_delete_request(struct service *svc, const char *id, bool force, int *status,
    struct problem *p);
/*
 * svc->run_finished: after run run_id has ended (its state committed),
 * finishes the delete of its session when the session is marked as being
 * deleted and none of its runs is left.  Takes the store lock.
 */
void session_delete_run_finished(struct service *svc, const char *run_id);
/*
 * At start-up, once runs have resumed: goes on with the deletes a stop
 * interrupted (sessions marked as being deleted), as a forced delete.
 */
void session_delete_resume(struct service *svc);
/*
 * At start-up, before runs resume: removes the changes stores, managed
 * workspaces and artifact contents that no session or artifact row names.
 */
void session_delete_sweep(struct service *svc);

#endif
