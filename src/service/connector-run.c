/* What a run gets of the connectors: its start message's list, secret.resolve (connector-run.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connector-oauth.h"
#include "connector-rows.h"
#include "connector-run.h"
#include "connectors.h"
#include "credentials.h"
#include "json.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

/* Adds a custom stdio connector's state directory (made when missing) to c. */
static void
connector_run_state_dir_add(const struct service *svc, cJSON *c)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "transport");
	const char *type = json_get_string(t, "type");
	char *dir;

	if (type == NULL || strcmp(type, "stdio") != 0)
		return;
	if ((dir = connector_state_dir(svc, json_get_string(c, "id"), true)) != NULL)
		cJSON_AddStringToObject(c, "stateDirectory", dir);
	free(dir);
}

cJSON *
connectors_for_run(struct service *svc)
{
	struct store *st = svc->store;
	cJSON *arr = cJSON_CreateArray();
	sqlite3_stmt *s;

	connectors_refresh_oauth(svc);	/* the run's agent gets tokens that still work */
	store_lock(st);
	s = store_stmt(st, "SELECT " CONNECTOR_COLUMNS " FROM connectors WHERE enabled != 0"
	    " ORDER BY id");
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *c = connector_from_row(st, s);

		cJSON_DeleteItemFromObjectCaseSensitive(c, "enabled");
		cJSON_DeleteItemFromObjectCaseSensitive(c, "createdAt");
		cJSON_DeleteItemFromObjectCaseSensitive(c, "updatedAt");
		connector_run_state_dir_add(svc, c);
		cJSON_AddItemToArray(arr, c);
	}
	sqlite3_reset(s);
	store_unlock(st);
	return arr;
}

/* The target of credential_id in connector_id's bindings of a run's start message, or NULL. */
static const char *
connector_run_binding_target(const cJSON *run_connectors, const char *connector_id,
    const char *credential_id)
{
	const cJSON *c, *b;

	cJSON_ArrayForEach(c, run_connectors) {
		const char *id = json_get_string(c, "id");
		if (id == NULL || strcmp(id, connector_id) != 0)
			continue;
		cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(c, "credentialBindings")) {
			const char *cred = json_get_string(b, "credentialId");
			if (cred != NULL && strcmp(cred, credential_id) == 0)
				return json_get_string(b, "target");
		}
	}
	return NULL;
}

enum td_code
connector_secret_resolve(struct service *svc, const cJSON *run_connectors,
    const cJSON *params, char **value, cJSON *meta, char **message)
{
	const char *con = json_get_string(params, "connectorId");
	const char *cred = json_get_string(params, "credentialId");
	const char *target;
	struct store *st = svc->store;
	sqlite3_stmt *s;
	bool bound;
	char *why = NULL;
	double expires_at = 0;
	cJSON *c;

	*value = NULL;
	if (con == NULL || cred == NULL) {
		*message = xstrdup("secret.resolve needs connectorId and credentialId");
		return TD_INVALID_REQUEST;
	}
	target = connector_run_binding_target(run_connectors, con, cred);
	if (target == NULL) {
		*message = xstrdup("that credential is not bound to a connector of this run");
		return TD_FORBIDDEN;
	}
	store_lock(st);
	s = store_stmt(st, "SELECT 1 FROM connector_bindings b JOIN connectors c"
	    " ON c.id = b.connector_id WHERE b.connector_id = ?1 AND b.credential_id = ?2"
	    " AND b.target = ?3 AND c.enabled != 0");
	sqlite3_bind_text(s, 1, con, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, cred, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, target, -1, SQLITE_STATIC);
	bound = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	if (!bound) {
		store_unlock(st);
		*message = xstrdup("that binding was removed or its connector disabled since "
		    "the run started");
		return TD_FORBIDDEN;
	}
	store_unlock(st);
	if (strcasecmp(target, "header:Authorization") == 0 &&
	    connector_oauth_renew(svc, con, json_get_string(params, "rejected"), &expires_at) &&
	    meta != NULL && expires_at > 0)
		cJSON_AddNumberToObject(meta, "expiresAt", expires_at);
	store_lock(st);
	if (!credential_value(svc, cred, target, value, &why)) {
		store_unlock(st);
		*message = why;
		return TD_INTERNAL_ERROR;
	}
	store_unlock(st);
	if (meta != NULL && (c = credential_get(svc, cred)) != NULL) {
		const char *version = json_get_string(c, "updatedAt");

		if (version != NULL)
			cJSON_AddStringToObject(meta, "version", version);
		cJSON_Delete(c);
	}
	return TD_OK;
}
