/*
 * The run domain (runs.h): rendering a run as the API shows it and the run
 * events.  Below the supervisor and the HTTP routes; above the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json.h"
#include "resource.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

void
run_emit(struct service *svc, const char *type, const char *run_id, cJSON *data)
{
	sqlite3_stmt *s = store_stmt(svc->store,
	    "SELECT project_id, session_id FROM runs WHERE id = ?1");

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		events_emit(svc->events, type, resource_text(s, 0), resource_text(s, 1),
		    run_id, data);
	else
		cJSON_Delete(data);
	sqlite3_reset(s);
}

/* A JSON object {"status": status}. */
cJSON *
run_status_data(const char *status)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "status", status);
	return d;
}

bool
run_status_final(const char *status)
{
	return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
	    strcmp(status, "cancelled") == 0;
}

cJSON *
run_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject(), *progress, *usage;
	const char *status = resource_text(s, 3);
	bool final = run_status_final(status);

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "sessionId", resource_text(s, 1));
	cJSON_AddStringToObject(j, "projectId", resource_text(s, 2));
	cJSON_AddStringToObject(j, "status", status);
	cJSON_AddStringToObject(j, "prompt", resource_text(s, 4));
	cJSON_AddStringToObject(j, "permissionProfile", resource_text(s, 5));
	resource_add_text_or_null(j, "turnIntent", s, 6);
	cJSON_AddItemToObject(j, "config", resource_json_column(s, 7));
	cJSON_AddStringToObject(j, "cwd", resource_text(s, 8));
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 9));
	resource_add_time_or_null(j, "startedAt", s, 10);
	resource_add_time_or_null(j, "finishedAt", s, 11);
	resource_add_time_or_null(j, "cancelRequestedAt", s, 12);
	if (sqlite3_column_type(s, 13) == SQLITE_NULL) {
		cJSON_AddNullToObject(j, "progress");
	} else {
		progress = cJSON_AddObjectToObject(j, "progress");
		cJSON_AddStringToObject(progress, "phase", resource_text(s, 13));
		resource_add_time(progress, "updatedAt", sqlite3_column_int64(s, 14));
	}
	if (!final && sqlite3_column_type(s, 15) != SQLITE_NULL)
		cJSON_AddItemToObject(j, "attention", resource_json_column(s, 15));
	if (final)
		cJSON_AddStringToObject(j, "output", resource_text(s, 16));
	if (strcmp(status, "failed") == 0) {
		cJSON *err = cJSON_AddObjectToObject(j, "error");
		cJSON_AddStringToObject(err, "code", resource_text(s, 17));
		cJSON_AddStringToObject(err, "message", resource_text(s, 18));
	}
	usage = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(usage, "inputTokens", (double)sqlite3_column_int64(s, 19));
	cJSON_AddNumberToObject(usage, "outputTokens", (double)sqlite3_column_int64(s, 20));
	resource_add_time(j, "updatedAt", sqlite3_column_int64(s, 21));
	cJSON_AddBoolToObject(j, "network", sqlite3_column_int(s, 22) != 0);
	if (sqlite3_column_type(s, 23) == SQLITE_NULL)
		cJSON_AddNullToObject(j, "review");
	else
		cJSON_AddItemToObject(j, "review", resource_json_column(s, 23));
	return j;
}

cJSON *
run_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?1"), id,
	    run_from_row);
}


cJSON *
session_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "projectId", resource_text(s, 1));
	cJSON_AddStringToObject(j, "title", resource_text(s, 2));
	cJSON_AddStringToObject(j, "cwd", resource_text(s, 3));
	cJSON_AddStringToObject(j, "workspace", resource_text(s, 4));
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 5));
	resource_add_time(j, "updatedAt", sqlite3_column_int64(s, 6));
	if (sqlite3_column_type(s, 7) == SQLITE_NULL) {
		cJSON_AddNullToObject(j, "lastRun");
	} else {
		cJSON *last = cJSON_AddObjectToObject(j, "lastRun");
		cJSON_AddStringToObject(last, "id", resource_text(s, 7));
		cJSON_AddStringToObject(last, "status", resource_text(s, 8));
	}
	return j;
}

cJSON *
session_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, SESSION_SELECT " WHERE s.id = ?1"), id,
	    session_from_row);
}

bool
session_touch(struct store *st, const char *session_id, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE sessions SET updated_at = "
	    RESOURCE_NEXT_TIME(2) " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

void
session_emit_updated(struct service *svc, const char *id)
{
	cJSON *j = session_load(svc->store, id);

	if (j != NULL)
		events_emit(svc->events, "session.updated", json_get_string(j, "projectId"),
		    id, NULL, j);
}
