/*
 * The rows of the artifacts table (artifacts.h): lists and descriptors of
 * visible saves, what a download needs, making a run's saves visible and
 * artifact.saved.  The store of contents and the saves are artifacts.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifacts.h"
#include "events.h"
#include "ids.h"
#include "resource.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

#define ARTIFACT_COLUMNS "id, name, path, version, size, media_type, session_id," \
	" run_id, created_at"

static cJSON *
artifact_from_row(sqlite3_stmt *s)
{
	cJSON *a = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "id", resource_text(s, 0));
	cJSON_AddStringToObject(a, "name", resource_text(s, 1));
	cJSON_AddStringToObject(a, "path", resource_text(s, 2));
	cJSON_AddStringToObject(a, "version", resource_text(s, 3));
	cJSON_AddNumberToObject(a, "size", (double)sqlite3_column_int64(s, 4));
	cJSON_AddStringToObject(a, "mediaType", resource_text(s, 5));
	cJSON_AddStringToObject(a, "sessionId", resource_text(s, 6));
	cJSON_AddStringToObject(a, "runId", resource_text(s, 7));
	resource_add_time(a, "createdAt", sqlite3_column_int64(s, 8));
	return a;
}

void
artifacts_emit_saved(struct service *svc, const char *run_id, const char *project_id)
{
	sqlite3_stmt *s = store_stmt(svc->store, "SELECT " ARTIFACT_COLUMNS
	    " FROM artifacts WHERE run_id = ?1 AND visible = 1 ORDER BY id");

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW)
		events_emit(svc->events, "artifact.saved", project_id, resource_text(s, 6),
		    run_id, artifact_from_row(s));
	sqlite3_reset(s);
}

bool
artifacts_run_ended(struct store *st, const char *run_id)
{
	return store_exec_text(st, "UPDATE artifacts SET visible = 1 WHERE run_id = ?1", run_id);
}

cJSON *
artifacts_list(struct store *st, const char *session, bool all, const char *cursor, int limit,
    char *next)
{
	struct resource_page pg = { 0 };
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM sessions WHERE id = ?1");
	bool found;
	cJSON *arr;

	sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	if (!found)
		return NULL;
	arr = cJSON_CreateArray();
	if (all) {
		s = store_stmt(st, "SELECT " ARTIFACT_COLUMNS " FROM artifacts"
		    " WHERE session_id = ?1 AND visible = 1 AND (?2 IS NULL OR id < ?2)"
		    " ORDER BY id DESC LIMIT ?3");
	} else {
		/* The newest visible version of each path. */
		s = store_stmt(st, "SELECT " ARTIFACT_COLUMNS " FROM artifacts a"
		    " WHERE session_id = ?1 AND visible = 1 AND (?2 IS NULL OR id < ?2)"
		    " AND id = (SELECT MAX(id) FROM artifacts b WHERE b.session_id = ?1"
		    " AND b.path = a.path AND b.visible = 1)"
		    " ORDER BY id DESC LIMIT ?3");
	}
	sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
	resource_page_start(&pg, s, 2, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, artifact_from_row(s));
	sqlite3_reset(s);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

cJSON *
artifacts_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, "SELECT " ARTIFACT_COLUMNS " FROM artifacts"
	    " WHERE id = ?1 AND visible = 1"), id, artifact_from_row);
}

/* The visible artifact id, or false. */
bool
artifacts_file_load(struct store *st, const char *id, struct artifact_file *f)
{
	sqlite3_stmt *s;
	bool found;

	store_lock(st);
	s = store_stmt(st, "SELECT name, version, media_type, size FROM artifacts"
	    " WHERE id = ?1 AND visible = 1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	if (found) {
		f->name = xstrdup(resource_text(s, 0));
		f->version = xstrdup(resource_text(s, 1));
		f->media_type = xstrdup(resource_text(s, 2));
		f->size = (uint64_t)sqlite3_column_int64(s, 3);
	}
	sqlite3_reset(s);
	store_unlock(st);
	return found;
}

void
artifacts_file_free(struct artifact_file *f)
{
	free(f->name);
	free(f->version);
	free(f->media_type);
}

bool
artifacts_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM artifacts WHERE session_id = ?1"
	    " OR run_id IN (SELECT id FROM runs WHERE session_id = ?1)", session_id);
}
