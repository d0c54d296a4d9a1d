/*
 * The project domain (projects.h): the only writer of the projects and
 * project_defaults tables; a project and its defaults as the API shows them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "events.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "projects.h"
#include "resource.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

const char *const projects_default_fields[] = { "framework", "provider", "model",
	"effort", "permissionProfile", "network", NULL };

#define PROJECT_COLUMNS "id, name, description, context, metadata, created_at, updated_at"
/* The columns project_from_row reads. */
#define PROJECT_SELECT "SELECT " PROJECT_COLUMNS ", archived_at FROM projects"

static cJSON *
project_from_row(sqlite3_stmt *s)
{
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "id", resource_text(s, 0));
	cJSON_AddStringToObject(p, "name", resource_text(s, 1));
	cJSON_AddStringToObject(p, "description", resource_text(s, 2));
	cJSON_AddStringToObject(p, "context", resource_text(s, 3));
	cJSON_AddItemToObject(p, "metadata", resource_json_column(s, 4));
	resource_add_time(p, "createdAt", sqlite3_column_int64(s, 5));
	resource_add_time(p, "updatedAt", sqlite3_column_int64(s, 6));
	resource_add_time_or_null(p, "archivedAt", s, 7);
	return p;
}

cJSON *
projects_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, PROJECT_SELECT " WHERE id = ?1"), id,
	    project_from_row);
}

static const char *
string_or_empty(const cJSON *obj, const char *key)
{
	const char *v = json_get_string(obj, key);

	return v ? v : "";
}

static void
bind_metadata(sqlite3_stmt *s, int i, const cJSON *meta)
{
	char *text = cJSON_IsObject(meta) ? json_print(meta) : xstrdup("{}");

	sqlite3_bind_text(s, i, text, -1, free);
}

/* Binds name, description, context and metadata of p to ?2 to ?5. */
static void
bind_project_fields(sqlite3_stmt *s, const cJSON *p)
{
	sqlite3_bind_text(s, 2, json_get_string(p, "name"), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, string_or_empty(p, "description"), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, string_or_empty(p, "context"), -1, SQLITE_STATIC);
	bind_metadata(s, 5, cJSON_GetObjectItemCaseSensitive(p, "metadata"));
}

cJSON *
projects_list(struct store *st, const char *cursor, int limit, enum resource_archived which,
    char *next)
{
	cJSON *arr = cJSON_CreateArray();
	struct resource_page pg;
	sqlite3_stmt *s = store_stmt(st, PROJECT_SELECT " WHERE (?1 IS NULL OR id < ?1)"
	    " AND " RESOURCE_ARCHIVED_WHERE("archived_at", 3) " ORDER BY id DESC LIMIT ?2");

	sqlite3_bind_int(s, 3, (int)which);
	resource_page_start(&pg, s, 1, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, project_from_row(s));
	sqlite3_reset(s);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

bool
projects_create(struct store *st, const char *id, const cJSON *fields, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO projects (" PROJECT_COLUMNS ")"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	bind_project_fields(s, fields);
	sqlite3_bind_int64(s, 6, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	if (ok) {
		s = store_stmt(st, "INSERT INTO project_defaults (project_id, defaults,"
		    " updated_at) VALUES (?1, '{}', ?2)");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, now);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	return ok;
}

bool
projects_update(struct store *st, const char *id, const cJSON *fields, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE projects SET name = ?2, description = ?3,"
	    " context = ?4, metadata = ?5, updated_at = " RESOURCE_NEXT_TIME(6)
	    " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	bind_project_fields(s, fields);
	sqlite3_bind_int64(s, 6, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
projects_framework_used(struct store *st, const char *framework)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM project_defaults"
	    " WHERE json_extract(defaults, '$.framework') = ?1 LIMIT 1");
	bool used;

	sqlite3_bind_text(s, 1, framework, -1, SQLITE_STATIC);
	used = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	return used;
}

cJSON *
projects_defaults_load(struct store *st, const char *project_id, int64_t *updated_at)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT defaults, updated_at"
	    " FROM project_defaults WHERE project_id = ?1");
	cJSON *res = NULL;

	sqlite3_bind_text(s, 1, project_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *stored = resource_json_column(s, 0);
		cJSON *defaults;

		*updated_at = sqlite3_column_int64(s, 1);
		res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "projectId", project_id);
		resource_add_time(res, "updatedAt", *updated_at);
		defaults = cJSON_AddObjectToObject(res, "defaults");
		for (const char *const *f = projects_default_fields; *f; f++) {
			const char *v = json_get_string(stored, *f);
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(stored, *f);

			/* network is the one boolean default (the sandbox, docs/agent.md) */
			cJSON_AddItemToObject(defaults, *f, cJSON_IsBool(b) ? cJSON_Duplicate(b, false) :
			    v ? cJSON_CreateString(v) : cJSON_CreateNull());
		}
		cJSON_Delete(stored);
	}
	sqlite3_reset(s);
	return res;
}

bool
projects_defaults_store(struct store *st, const char *project_id, char *defaults, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE project_defaults SET defaults = ?2,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE project_id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, project_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, defaults, -1, free);
	sqlite3_bind_int64(s, 3, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
projects_archive(struct store *st, const char *id, bool archived, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE projects SET archived_at = CASE WHEN ?3"
	    " THEN COALESCE(archived_at, ?2) END, updated_at = " RESOURCE_NEXT_TIME(2)
	    " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	sqlite3_bind_int(s, 3, archived);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

static void
projects_internal(struct problem *p)
{
	problem_set(p, TD_INTERNAL_ERROR, NULL, "%s", errcode_default_message(TD_INTERNAL_ERROR));
}

/*
 * After a create or update of project id (ok: committed): the project, emitted
 * as project.updated, or NULL with an internal error in p.  Unlocks the store.
 */
static cJSON *
projects_answer_locked(struct service *svc, const char *id, bool ok, struct problem *p)
{
	cJSON *project = ok ? projects_load(svc->store, id) : NULL;

	if (project != NULL)
		events_emit(svc->events, "project.updated", id, NULL, NULL,
		    cJSON_Duplicate(project, true));
	store_unlock(svc->store);
	if (project == NULL)
		projects_internal(p);
	return project;
}

cJSON *
projects_create_request(struct service *svc, const cJSON *fields, char id[TD_ID_MAX],
    struct problem *p)
{
	struct store *st = svc->store;
	bool ok;

	id_new("prj", id);
	store_lock(st);
	ok = store_begin(st) && projects_create(st, id, fields, clock_wall_ms());
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	return projects_answer_locked(svc, id, ok, p);
}

/* Writes the merge patch into project (its editable members) and archived. */
static bool
projects_patch_locked(struct store *st, const char *id, cJSON *project, const cJSON *patch)
{
	static const char *const editable_fields[] = { "name", "description", "context",
		"metadata", NULL };
	const cJSON *archived = cJSON_GetObjectItemCaseSensitive(patch, "archived");
	cJSON *editable = cJSON_CreateObject();
	bool ok;

	for (const char *const *f = editable_fields; *f; f++)
		cJSON_AddItemToObject(editable, *f,
		    cJSON_DetachItemFromObjectCaseSensitive(project, *f));
	editable = json_merge_patch(editable, patch);
	ok = projects_update(st, id, editable, clock_wall_ms());
	if (ok && archived != NULL)
		ok = projects_archive(st, id, cJSON_IsTrue(archived), clock_wall_ms());
	cJSON_Delete(editable);
	return ok;
}

cJSON *
projects_update_request(struct service *svc, const char *id, const cJSON *patch,
    struct problem *p)
{
	struct store *st = svc->store;
	cJSON *project;
	bool ok;

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		projects_internal(p);
		return NULL;
	}
	project = projects_load(st, id);
	if (project == NULL) {
		store_rollback(st);
		store_unlock(st);
		problem_not_found(p, "project", id);
		return NULL;
	}
	ok = projects_patch_locked(st, id, project, patch);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	cache_drop(svc->cache, id);
	cJSON_Delete(project);
	return projects_answer_locked(svc, id, ok, p);
}

/* The stored text of defaults merged with patch: only the keys that are set. */
static char *
projects_defaults_merge(cJSON *res, const cJSON *patch)
{
	cJSON *defaults = cJSON_DetachItemFromObjectCaseSensitive(res, "defaults");
	char *text;

	defaults = json_merge_patch(defaults, patch);
	for (const char *const *f = projects_default_fields; *f; f++) {
		if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(defaults, *f)))
			cJSON_DeleteItemFromObjectCaseSensitive(defaults, *f);
	}
	text = json_print(defaults);
	cJSON_Delete(defaults);
	return text;
}

cJSON *
projects_defaults_update(struct service *svc, const char *id, int64_t expected,
    const char *expected_text, const cJSON *patch, struct problem *p)
{
	struct store *st = svc->store;
	int64_t current;
	cJSON *res;
	bool ok;

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		projects_internal(p);
		return NULL;
	}
	res = projects_defaults_load(st, id, &current);
	if (res == NULL || current != expected) {
		store_rollback(st);
		store_unlock(st);
		if (res == NULL)
			return problem_not_found(p, "project", id), NULL;
		p->details = cJSON_CreateObject();
		cJSON_AddItemToObject(p->details, "current", res);
		problem_set(p, TD_STALE_WRITE, NULL, "The defaults changed since %s; re-read them "
		    "and write again.", expected_text);
		return NULL;
	}
	ok = projects_defaults_store(st, id, projects_defaults_merge(res, patch), clock_wall_ms());
	cJSON_Delete(res);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	res = ok ? projects_defaults_load(st, id, &current) : NULL;
	store_unlock(st);
	if (res == NULL)
		projects_internal(p);
	return res;
}
