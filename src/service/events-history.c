/*
 * The run history, read side (events.h; docs/events.md): the events of a run
 * that events.c stored in run_events, a page at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json.h"
#include "store.h"

/* One stored event as the stream showed it, plus its streamId. */
static cJSON *
history_row(sqlite3_stmt *s)
{
	cJSON *o = cJSON_CreateObject();
	const char *data = (const char *)sqlite3_column_text(s, 7);
	cJSON *d = data ? json_parse(data, strlen(data)) : NULL;
	static const char *const ids[] = { "projectId", "sessionId", "runId" };

	cJSON_AddNumberToObject(o, "seq", (double)sqlite3_column_int64(s, 0));
	cJSON_AddStringToObject(o, "type", (const char *)sqlite3_column_text(s, 1));
	cJSON_AddStringToObject(o, "time", (const char *)sqlite3_column_text(s, 2));
	for (int i = 0; i < 3; i++) {
		const char *v = (const char *)sqlite3_column_text(s, 3 + i);
		if (v != NULL)
			cJSON_AddStringToObject(o, ids[i], v);
		else
			cJSON_AddNullToObject(o, ids[i]);
	}
	cJSON_AddStringToObject(o, "streamId", (const char *)sqlite3_column_text(s, 6));
	cJSON_AddItemToObject(o, "data", d ? d : cJSON_CreateObject());
	return o;
}

cJSON *
events_history(struct store *st, const char *id, const char *after_stream, long long after,
    int limit, struct events_history_page *page)
{
	long long after_row = -1;
	sqlite3_stmt *s;
	bool exists;
	cJSON *arr;
	int n = 0;

	memset(page, 0, sizeof *page);
	s = store_stmt(st, "SELECT 1 FROM runs WHERE id = ?1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	exists = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	if (!exists)
		return NULL;
	if (after_stream[0] != '\0') {
		s = store_stmt(st, "SELECT id FROM run_events WHERE run_id = ?1 AND stream_id = ?2"
		    " AND seq <= ?3 ORDER BY id DESC LIMIT 1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, after_stream, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, after);
		after_row = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
		sqlite3_reset(s);
	}
	arr = cJSON_CreateArray();
	s = store_stmt(st, "SELECT seq, type, time, project_id, session_id, run_id, stream_id,"
	    " data FROM run_events WHERE run_id = ?1 AND (CASE WHEN ?4 >= 0 THEN id > ?4"
	    " ELSE seq > ?2 END) ORDER BY id LIMIT ?3");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, after);
	sqlite3_bind_int64(s, 3, limit + 1);
	sqlite3_bind_int64(s, 4, after_row);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (++n > limit) {
			page->more = true;
			break;
		}
		cJSON_AddItemToArray(arr, history_row(s));
		page->last = sqlite3_column_int64(s, 0);
		snprintf(page->last_stream, sizeof page->last_stream, "%s",
		    (const char *)sqlite3_column_text(s, 6));
	}
	sqlite3_reset(s);
	return arr;
}

bool
events_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM run_events WHERE session_id = ?1"
	    " OR run_id IN (SELECT id FROM runs WHERE session_id = ?1)", session_id);
}

bool
events_history_insert(struct store *st, uint64_t seq, const char *stream_id, const char *run,
    const char *session, const char *project, const char *type, const char *time,
    const char *data)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO run_events (seq, stream_id, run_id,"
	    " session_id, project_id, type, time, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
	bool ok;

	if (s == NULL)
		return false;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)seq);
	sqlite3_bind_text(s, 2, stream_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, run, -1, SQLITE_STATIC);
	if (*session)
		sqlite3_bind_text(s, 4, session, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 4);
	if (*project)
		sqlite3_bind_text(s, 5, project, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 5);
	sqlite3_bind_text(s, 6, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, time, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 8, data, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}
