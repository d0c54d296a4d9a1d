/* A connector's rows: the writer of connectors and connector_bindings (connector-rows.h). */

#include <stdlib.h>

#include "connector-rows.h"
#include "events.h"
#include "json.h"
#include "resource.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"

/* The bindings of a connector, in their order.  Store locked. */
cJSON *
connector_bindings_load(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT credential_id, target FROM connector_bindings"
	    " WHERE connector_id = ?1 ORDER BY position");
	cJSON *arr = cJSON_CreateArray();

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "credentialId", resource_text(s, 0));
		cJSON_AddStringToObject(b, "target", resource_text(s, 1));
		cJSON_AddItemToArray(arr, b);
	}
	sqlite3_reset(s);
	return arr;
}

cJSON *
connector_from_row(struct store *st, sqlite3_stmt *s)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "id", resource_text(s, 0));
	cJSON_AddStringToObject(c, "name", resource_text(s, 1));
	cJSON_AddStringToObject(c, "kind", resource_text(s, 2));
	cJSON_AddBoolToObject(c, "enabled", sqlite3_column_int(s, 3) != 0);
	cJSON_AddItemToObject(c, "transport", resource_json_column(s, 4));
	cJSON_AddItemToObject(c, "credentialBindings",
	    connector_bindings_load(st, resource_text(s, 0)));
	resource_add_time(c, "createdAt", sqlite3_column_int64(s, 5));
	resource_add_time(c, "updatedAt", sqlite3_column_int64(s, 6));
	return c;
}

cJSON *
connector_load_locked(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st,
	    "SELECT " CONNECTOR_COLUMNS " FROM connectors WHERE id = ?1");
	cJSON *c = NULL;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		c = connector_from_row(st, s);
	sqlite3_reset(s);
	return c;
}

void
connector_emit(struct service *svc, const cJSON *c, const char *action)
{
	cJSON *d = cJSON_CreateObject();

	for (const char *const *f = (const char *const[]){ "id", "name", "kind", NULL }; *f; f++)
		cJSON_AddStringToObject(d, *f, json_get_string(c, *f));
	cJSON_AddBoolToObject(d, "enabled",
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "enabled")));
	cJSON_AddStringToObject(d, "action", action);
	events_emit(svc->events, "connector.updated", NULL, NULL, NULL, d);
}

bool
connector_rows_insert(struct store *st, const char *id, const char *name, bool enabled,
    const cJSON *transport, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO connectors (" CONNECTOR_COLUMNS ")"
	    " VALUES (?1, ?2, 'custom', ?3, ?4, ?5, ?5)");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, enabled);
	sqlite3_bind_text(s, 4, json_print(transport), -1, free);
	sqlite3_bind_int64(s, 5, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
connector_rows_update(struct store *st, const char *id, const char *name,
    const cJSON *transport)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE connectors SET name = coalesce(?2, name),"
	    " transport = ?3, updated_at = " RESOURCE_NEXT_TIME(4) " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (name != NULL)
		sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, json_print(transport), -1, free);
	sqlite3_bind_int64(s, 4, clock_wall_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

int
connector_rows_set_enabled(struct store *st, const char *id, bool enabled)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE connectors SET enabled = ?2,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1");
	int r;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, enabled);
	sqlite3_bind_int64(s, 3, clock_wall_ms());
	if (sqlite3_step(s) != SQLITE_DONE)
		r = -1;
	else
		r = sqlite3_changes(sqlite3_db_handle(s)) == 0 ? 0 : 1;
	sqlite3_reset(s);
	return r;
}

bool
connector_rows_delete(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "DELETE FROM connectors WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

enum td_code
connector_rows_bindings_store(struct store *st, const char *id, const cJSON *bindings,
    struct problem *p)
{
	sqlite3_stmt *s = store_stmt(st, "DELETE FROM connector_bindings WHERE connector_id = ?1");
	const cJSON *b;
	int pos = 0;
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	if (!ok)
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot write the bindings");
	cJSON_ArrayForEach(b, bindings) {
		const char *cred = json_get_string(b, "credentialId");
		bool exists;

		s = store_stmt(st, "SELECT 1 FROM credentials WHERE id = ?1");
		sqlite3_bind_text(s, 1, cred, -1, SQLITE_STATIC);
		exists = sqlite3_step(s) == SQLITE_ROW;
		sqlite3_reset(s);
		if (!exists)
			return problem_set(p, TD_INVALID_REQUEST, "credentialBindings",
			    "there is no credential %s", cred);
		s = store_stmt(st, "INSERT INTO connector_bindings (connector_id, position,"
		    " credential_id, target) VALUES (?1, ?2, ?3, ?4)");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 2, pos++);
		sqlite3_bind_text(s, 3, cred, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, json_get_string(b, "target"), -1, SQLITE_STATIC);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
		if (!ok)
			return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot write the bindings");
	}
	return TD_OK;
}

bool
connector_rows_unbind(struct store *st, const char *credential_id, const cJSON *binders,
    int64_t now)
{
	const cJSON *b;
	sqlite3_stmt *s;
	bool ok = true;

	cJSON_ArrayForEach(b, binders) {
		s = store_stmt(st, "UPDATE connectors SET updated_at = " RESOURCE_NEXT_TIME(2)
		    " WHERE id = ?1");
		sqlite3_bind_text(s, 1, b->valuestring, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, now);
		if (sqlite3_step(s) != SQLITE_DONE)
			ok = false;
		sqlite3_reset(s);
	}
	if (!ok)
		return false;
	s = store_stmt(st, "DELETE FROM connector_bindings WHERE credential_id = ?1");
	sqlite3_bind_text(s, 1, credential_id, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

enum td_code
conn_write_end(struct service *svc, const char *what, const char *id, enum td_code rc,
    const char *action, cJSON **out, struct problem *p,
    cJSON *(*load)(struct store *st, const char *id),
    void (*emit)(struct service *svc, const cJSON *c, const char *action))
{
	struct store *st = svc->store;

	if (rc == TD_OK && !store_commit(st))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the %s", what);
	else if (rc != TD_OK)
		store_rollback(st);
	if (rc == TD_OK) {
		*out = load(st, id);
		if (*out == NULL)
			rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "the %s vanished", what);
		else
			emit(svc, *out, action);
	}
	store_unlock(st);
	return rc;
}
