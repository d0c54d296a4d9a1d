/* The rows and helpers both connectors.c and credentials.c stand on (connector-rows.h). */

#include "connector-rows.h"
#include "events.h"
#include "json.h"
#include "resource.h"
#include "service.h"
#include "store.h"

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
