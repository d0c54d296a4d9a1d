/*
 * Agent routing (routing.h): the only writer of its row of the settings
 * table.
 */
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "resource.h"
#include "routing.h"
#include "store.h"

/* The routing resource, or NULL.  Only while the store is locked. */
cJSON *
routing_load(struct store *st, int64_t *updated_at)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT value, updated_at FROM settings"
	    " WHERE key = 'agent-routing'");
	cJSON *res = NULL;

	if (sqlite3_step(s) == SQLITE_ROW) {
		res = resource_json_column(s, 0);
		*updated_at = sqlite3_column_int64(s, 1);
		resource_add_time(res, "updatedAt", *updated_at);
	}
	sqlite3_reset(s);
	return res;
}

bool
routing_store(struct store *st, const cJSON *routing, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE settings SET value = ?1,"
	    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE key = 'agent-routing'");
	bool ok;

	sqlite3_bind_text(s, 1, json_print(routing), -1, free);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}
