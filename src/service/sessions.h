/*
 * The session domain (sessions.c): the only writer of the sessions table; a
 * session as the API shows it; the rules of a session configuration
 * (docs/http-api.md, Sessions).
 */
#ifndef TD_SERVICE_SESSIONS_H
#define TD_SERVICE_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "ids.h"
#include "resource.h"

struct service;
struct store;
struct problem;
struct td_paths;

/* The columns session_from_row reads, with a FROM clause. */
#define SESSION_SELECT "SELECT s.id, s.project_id, s.title, s.cwd, s.workspace," \
	" s.created_at, s.updated_at, r.id, r.status, s.archived_at, s.deleting_at" \
	" FROM sessions s" \
	" LEFT JOIN runs r ON r.id = (SELECT MAX(id) FROM runs WHERE session_id = s.id)"
/* A session row (SESSION_SELECT) as the API shows it. */
cJSON *session_from_row(sqlite3_stmt *s);
/* The session with id as the API shows it, or NULL.  Only while the store is locked. */
cJSON *session_load(struct store *st, const char *id);
/*
 * The directories of the sessions not archived that work in a directory of
 * the user's (not a managed workspace), newest first, at most max:
 * [{"id", "cwd"}].  Only while the store is locked.
 */
cJSON *sessions_external_cwds(struct store *st, int max);
/* True when the session id exists.  Only while the store is locked. */
bool sessions_exists(struct store *st, const char *id);
/*
 * A page of the sessions of project as the API shows them, newest first,
 * below cursor (a session id, NULL for the first page), at most limit,
 * archived or not as which says; next
 * (TD_ID_MAX bytes) gets the cursor of the next page, "" at the end.  NULL
 * when there is no such project.  Only while the store is locked.
 */
cJSON *sessions_list(struct store *st, const char *project, const char *cursor, int limit,
    enum resource_archived which, char *next);
/*
 * Archives session id (archivedAt: the first archiving's time) or brings it
 * back (null).  Only while the store is locked; false on a store error.
 */
bool sessions_archive(struct store *st, const char *id, bool archived, int64_t now);
/*
 * Deletes the session's row (its runs and what hangs on them must be gone);
 * false when it cannot.  In the caller's transaction.
 */
bool sessions_delete(struct store *st, const char *id);
/*
 * Marks session id as being deleted (a forced delete waiting for its runs;
 * the first mark's time stays).  Only while locked; false on a store error.
 */
bool sessions_mark_deleting(struct store *st, const char *id, int64_t now);
/* Whether session id is marked as being deleted.  Only while locked. */
bool sessions_is_deleting(struct store *st, const char *id);
/* The ids of up to max sessions marked as being deleted, oldest mark first.  Only while locked. */
size_t sessions_deleting(struct store *st, char (*ids)[TD_ID_MAX], size_t max);
/* session.updated with the session as the API shows it.  Only while the store is locked. */
void session_emit_updated_locked(struct service *svc, const char *session_id);
/* Moves the session's updatedAt to now (RESOURCE_NEXT_TIME); false on a store error. */
bool session_touch(struct store *st, const char *session_id, int64_t now);
/*
 * Stores a new session titled by the first line of prompt, in cwd (managed:
 * a workspace of the service's own), with its configuration.  Only while
 * the store is locked; false on a store error.
 */
bool sessions_create(struct store *st, const char *id, const char *project, const char *prompt,
    const char *cwd, bool managed, const cJSON *cfg, int64_t now);
/*
 * The configuration resource of a session, or NULL.  *revision gets its
 * revision.  Only while the store is locked.
 */
cJSON *sessions_config_load(struct store *st, const char *id, long *revision);
/* Replaces the configuration, one revision up.  Only while locked; false on a store error. */
bool sessions_config_store(struct store *st, const char *id, const cJSON *cfg, int64_t now);

/*
 * Archives session id or brings it back, and publishes session.updated: the
 * session, or NULL with *p (not_found, internal_error).  Takes the store lock.
 */
cJSON *sessions_archive_request(struct service *svc, const char *id, bool archived,
    struct problem *p);
/*
 * Applies patch (an omitted key kept, null clearing it) to the configuration
 * of session id at revision expected, when the result is usable (which may
 * probe an external framework's CLI under the store lock), and publishes
 * session.updated: the new configuration, or NULL with *p (not_found,
 * stale_write with details.current, invalid_configuration, internal_error).
 * Takes the store lock.
 */
cJSON *sessions_config_update(struct service *svc, const char *id, long expected,
    const cJSON *patch, struct problem *p);

/* The configuration members, NULL-terminated. */
extern const char *const config_fields[];
/*
 * Checks the member types of a configuration object (a request's config or
 * a patch): each member null or a string from the allowed values.  On a
 * problem fills *p (invalid_request naming prefix.member) and returns false.
 */
bool config_types_valid(const cJSON *cfg, const char *prefix, struct problem *p);
/*
 * Checks that cfg forms a usable compound configuration (docs/http-api.md,
 * Sessions): on a problem fills *p (invalid_configuration) and returns false.
 */
bool config_usable(const struct service *svc, const cJSON *cfg, struct problem *p);
/* The model a run uses: cfg's, else its provider's defaultModel; owned by svc or cfg. */
const char *config_effective_model(const struct service *svc, const cJSON *cfg);
/*
 * The configuration of a new session, member by member: the request, the
 * project defaults, the application defaults, the provider default.
 */
cJSON *config_for_new_session(struct service *svc, const cJSON *request,
    const cJSON *project_defaults);
/* The run's configuration: the session's, with cleared members at their defaults. */
cJSON *config_for_run(struct service *svc, const cJSON *session_cfg);

/*
 * Canonicalizes a requested cwd into out (PATH_MAX bytes): an existing
 * directory the service can read and write, else false with invalid_cwd in p
 * (details.reason).  paths non-NULL also refuses /, taskdeck's own directories
 * and another session's workspace.
 */
bool sessions_cwd_resolve(const struct td_paths *paths, const char *cwd, char *out,
    struct problem *p);

#endif
