/*
 * A connector's rows, what connectors.c and credentials.c both stand on: the
 * only writer of the connectors and connector_bindings tables, a connector
 * as the API shows it, its connector.updated event, and the end of a write.
 * It calls neither of them.  The writers run with the store locked, inside
 * the caller's transaction.
 */
#ifndef TD_SERVICE_CONNECTOR_ROWS_H
#define TD_SERVICE_CONNECTOR_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include <cjson/cJSON.h>

#include "errors.h"
#include "problem.h"

#define CONNECTOR_COLUMNS "id, name, kind, enabled, transport, created_at, updated_at"

struct service;
struct store;

/* The bindings of a connector, in their order; store locked. */
cJSON *connector_bindings_load(struct store *st, const char *id);
/* The connector of a row selected with CONNECTOR_COLUMNS, its bindings loaded; store locked. */
cJSON *connector_from_row(struct store *st, sqlite3_stmt *s);
/* The connector as the API shows it, or NULL; store locked. */
cJSON *connector_load_locked(struct store *st, const char *id);
/* connector.updated with the connector's metadata and action ("created", "updated", ...). */
void connector_emit(struct service *svc, const cJSON *c, const char *action);
/* A new custom connector's row (transport: its stored form). */
bool connector_rows_insert(struct store *st, const char *id, const char *name, bool enabled,
    const cJSON *transport, int64_t now);
/* Its name (NULL keeps it) and transport, updatedAt moved on. */
bool connector_rows_update(struct store *st, const char *id, const char *name,
    const cJSON *transport);
/* 1 when set, 0 when there is no connector id, -1 when it cannot be stored. */
int connector_rows_set_enabled(struct store *st, const char *id, bool enabled);
/* Deletes the row of id (its bindings go with it). */
bool connector_rows_delete(struct store *st, const char *id);
/* Replaces the bindings of id; every credential must exist. */
enum td_code connector_rows_bindings_store(struct store *st, const char *id,
    const cJSON *bindings, struct problem *p);
/* Removes every binding of credential_id; binders (its connectors' ids) get a new updatedAt. */
bool connector_rows_unbind(struct store *st, const char *credential_id, const cJSON *binders,
    int64_t now);
/*
 * Ends a write of the what ("connector", "credential") id, begun with the
 * store locked and store_begin: commits (rc TD_OK) or rolls back, then loads
 * the result into *out with load and emits it with emit(svc, *out, action);
 * unlocks the store.
 */
enum td_code conn_write_end(struct service *svc, const char *what, const char *id,
    enum td_code rc, const char *action, cJSON **out, struct problem *p,
    cJSON *(*load)(struct store *st, const char *id),
    void (*emit)(struct service *svc, const cJSON *c, const char *action));

#endif
