/*
 * What connectors.c and credentials.c both stand on: the refusal of a
 * request, a connector's row as the API shows it, its connector.updated
 * event, and the end of a write.  It calls neither of them.
 */
#ifndef TD_SERVICE_CONNECTOR_ROWS_H
#define TD_SERVICE_CONNECTOR_ROWS_H

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
