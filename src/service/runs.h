/*
 * The run domain (runs.c): rendering of runs and sessions and their events,
 * shared by the supervisor and the route files above it; and the rules of a
 * session configuration (route-sessions.c).
 */
#ifndef TD_SERVICE_RUNS_H
#define TD_SERVICE_RUNS_H

#include <stdbool.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

struct service;
struct store;
struct http_response;

/* The configuration members, NULL-terminated. */
extern const char *const config_fields[];

/* The columns run_from_row reads, in its order. */
#define RUN_COLUMNS "id, session_id, project_id, status, prompt, permission_profile," \
	" turn_intent, config, cwd, created_at, started_at, finished_at, cancel_requested_at," \
	" progress_phase, progress_at, attention, output, error_code, error_message," \
	" input_tokens, output_tokens, updated_at, network, review"
/* A run row (RUN_COLUMNS) as the API shows it. */
cJSON *run_from_row(sqlite3_stmt *s);
/* The columns session_from_row reads, with a FROM clause. */
#define SESSION_SELECT "SELECT s.id, s.project_id, s.title, s.cwd, s.workspace," \
	" s.created_at, s.updated_at, r.id, r.status FROM sessions s" \
	" LEFT JOIN runs r ON r.id = (SELECT MAX(id) FROM runs WHERE session_id = s.id)"
/* A session row (SESSION_SELECT) as the API shows it. */
cJSON *session_from_row(sqlite3_stmt *s);
/* The session with id as the API shows it, or NULL.  Only while the store is locked. */
cJSON *session_load(struct store *st, const char *id);
/* The run with id as the API shows it, or NULL.  Only while the store is locked. */
cJSON *run_load(struct store *st, const char *id);
/*
 * Emit an event (events.h) about a run, with its project and session, and
 * session.updated with the session as the API shows it.  Only while the
 * store is locked.  run_emit consumes data.
 */
void run_emit(struct service *svc, const char *type, const char *run_id, cJSON *data);
void session_emit_updated(struct service *svc, const char *session_id);
/* Moves the session's updatedAt to now (RESOURCE_NEXT_TIME); false on a store error. */
bool session_touch(struct store *st, const char *session_id, int64_t now);
/* {"status": status}, the data of run.queued, run.started and run.finished. */
cJSON *run_status_data(const char *status);
/* True for completed, failed and cancelled. */
bool run_status_final(const char *status);

/*
 * Checks the member types of a configuration object (a request's config or
 * a patch): each member null or a string from the allowed values.  On a
 * problem answers 400 naming prefix.member and returns false.
 */
bool config_types_valid(const cJSON *cfg, const char *prefix, struct http_response *r);
/*
 * Checks that cfg forms a usable compound configuration (docs/http-api.md,
 * Sessions): on a problem answers 422 invalid_configuration and returns false.
 */
bool config_usable(const struct service *svc, const cJSON *cfg, struct http_response *r);
/* The model a run uses: cfg's, else its provider's defaultModel; owned by svc or cfg. */
const char *config_effective_model(const struct service *svc, const cJSON *cfg);

#endif
