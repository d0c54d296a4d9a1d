/*
 * A signed-in connector's DPoP key (connectors.h): its tokens are bound to
 * it (RFC 9449), so every request to the server carries a proof of it.  It
 * is a credential like the token's ("OAuth DPoP key of ID", kind secret,
 * sealed, never shown) bound to the connector's header:DPoP: the MCP client
 * takes the value of that header as the key to make each request's proof
 * with (mcp.h), never sends it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connectors.h"
#include "json.h"
#include "log.h"
#include "problem.h"
#include "service.h"
#include "xalloc.h"

#define OAUTH_DPOP_TARGET "header:DPoP"

/* Binds credential cid to connector id's header:DPoP (in place of another). */
static bool
oauth_dpop_bind(struct service *svc, const char *id, const char *cid, char **why)
{
	struct problem p = { 0 };
	cJSON *con = connector_get(svc, id), *bindings, *b, *body, *updated = NULL;
	bool ok;

	if (con == NULL) {
		*why = xstrdup("the connector was removed during the sign-in");
		return false;
	}
	bindings = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(con, "credentialBindings"), true);
	if (!cJSON_IsArray(bindings)) {
		cJSON_Delete(bindings);
		bindings = cJSON_CreateArray();
	}
	for (b = bindings->child; b != NULL; b = b->next)
		if (json_get_string(b, "target") != NULL &&
		    strcasecmp(json_get_string(b, "target"), OAUTH_DPOP_TARGET) == 0)
			break;
	if (b != NULL && strcmp(json_get_string(b, "credentialId") ?: "", cid) == 0) {
		cJSON_Delete(bindings);
		cJSON_Delete(con);
		return true;
	}
	if (b != NULL)
		cJSON_Delete(cJSON_DetachItemViaPointer(bindings, b));
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "credentialId", cid);
	cJSON_AddStringToObject(b, "target", OAUTH_DPOP_TARGET);
	cJSON_AddItemToArray(bindings, b);
	body = cJSON_CreateObject();
	cJSON_AddItemToObject(body, "transport", cJSON_Duplicate(
	    cJSON_GetObjectItemCaseSensitive(con, "transport"), true));
	cJSON_AddItemToObject(body, "credentialBindings", bindings);
	ok = connector_update(svc, id, body, &updated, &p) == TD_OK;
	if (!ok)
		*why = xasprintf("cannot bind the DPoP key: %s", p.message);
	cJSON_Delete(body);
	cJSON_Delete(updated);
	cJSON_Delete(p.details);
	cJSON_Delete(con);
	return ok;
}

bool
connector_oauth_keep_dpop(struct service *svc, const char *id, const char *key, char **why)
{
	char *name = xasprintf("OAuth DPoP key of %s", id), *cid, *ignored = NULL;
	struct problem p = { 0 };
	bool ok = true;

	if (why == NULL)
		why = &ignored;
	if (key == NULL) {
		/* A bearer token now: the key of an earlier sign-in goes, and its binding. */
		if ((cid = connector_oauth_credential(svc, name)) != NULL &&
		    credential_delete(svc, cid, true, &p) == TD_OK)
			log_info("oauth: the DPoP key of connector %s was deleted", id);
		cJSON_Delete(p.details);
	} else {
		cid = connector_oauth_keep(svc, name, "the key the connector's OAuth tokens are bound "
		    "to (DPoP): each request carries a proof of it", "DPoP key", key, why);
		ok = cid != NULL && oauth_dpop_bind(svc, id, cid, why);
	}
	free(cid);
	free(name);
	free(ignored);
	return ok;
}
