/*
 * The project domain (projects.c; docs/http-api.md, Projects): the only
 * writer of the projects and project_defaults tables.  Every call but the
 * writes people ask (the last three, which take it) only while the store is
 * locked.
 */
#ifndef TD_SERVICE_PROJECTS_H
#define TD_SERVICE_PROJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ids.h"
#include "resource.h"

struct problem;
struct service;
struct store;

/* The members of a project's defaults, NULL-terminated. */
extern const char *const projects_default_fields[];

/* The project with id as the API shows it, or NULL. */
cJSON *projects_load(struct store *st, const char *id);
/*
 * A page of projects as the API shows them, newest first, below cursor (a
 * project id, NULL for the first page), at most limit, archived or not as
 * which says; next (TD_ID_MAX
 * bytes) gets the cursor of the next page, "" at the end.
 */
cJSON *projects_list(struct store *st, const char *cursor, int limit,
    enum resource_archived which, char *next);
/* Stores project id with fields (name, description, context, metadata) and empty defaults. */
bool projects_create(struct store *st, const char *id, const cJSON *fields, int64_t now);
/* Replaces the name, description, context and metadata of project id. */
bool projects_update(struct store *st, const char *id, const cJSON *fields, int64_t now);
/*
 * Archives project id (archivedAt: the first archiving's time, kept by a
 * second one) or brings it back (archivedAt null).
 */
bool projects_archive(struct store *st, const char *id, bool archived, int64_t now);
/* The defaults resource of a project, or NULL when the project is unknown. */
cJSON *projects_defaults_load(struct store *st, const char *project_id, int64_t *updated_at);
/* True when the session defaults of some project name this framework. */
bool projects_framework_used(struct store *st, const char *framework);
/* Replaces the stored defaults (JSON text, taken and freed). */
bool projects_defaults_store(struct store *st, const char *project_id, char *defaults,
    int64_t now);

/*
 * The writes people ask of projects; each takes the store lock, owns its
 * transaction and publishes project.updated after the commit.  A new project
 * with fields (checked by the route): the project with its new id, or NULL
 * with *p (internal_error).
 */
cJSON *projects_create_request(struct service *svc, const cJSON *fields, char id[TD_ID_MAX],
    struct problem *p);
/*
 * A merge patch of project id's editable members, and archived: the project,
 * or NULL with *p (not_found, internal_error).
 */
cJSON *projects_update_request(struct service *svc, const char *id, const cJSON *patch,
    struct problem *p);
/*
 * A merge patch of project id's defaults last updated at expected (text:
 * expected_text): the defaults resource, or NULL with *p (not_found,
 * stale_write with details.current, internal_error).  Publishes nothing.
 */
cJSON *projects_defaults_update(struct service *svc, const char *id, int64_t expected,
    const char *expected_text, const cJSON *patch, struct problem *p);

#endif
