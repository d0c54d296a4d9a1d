/*
 * Signed-in connectors' tokens (connector-oauth.h; the sign-in itself is
 * oauth.c): stored as sealed bearer credentials bound to the connector's
 * header:Authorization, with a sealed refresh record beside each, and
 * renewed before they are due.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "connector-oauth.h"
#include "connectors.h"
#include "credentials.h"
#include "json.h"
#include "log.h"
#include "oauth.h"
#include "problem.h"
#include "secrets.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

/* How a token credential's description names its scope. */
#define OAUTH_SCOPE_PREFIX "granted scope: "

/* The credential bound to the connector's header:Authorization, or NULL. */
static const char *
connector_oauth_bound(const cJSON *connector)
{
	const cJSON *b;

	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(connector, "credentialBindings")) {
		const char *target = json_get_string(b, "target");

		if (target != NULL && strcasecmp(target, "header:Authorization") == 0)
			return json_get_string(b, "credentialId");
	}
	return NULL;
}

/* The id of the credential named name (one page of up to 200 at a time), or NULL. */
static char *
connector_oauth_credential(struct service *svc, const char *name)
{
	char cursor[TD_ID_MAX] = "", next[TD_ID_MAX];
	char *found = NULL;

	do {
		cJSON *page = credentials_list(svc, *cursor ? cursor : NULL, 200, next), *c;

		cJSON_ArrayForEach(c, page) {
			const char *n = json_get_string(c, "name");

			if (found == NULL && n != NULL && strcmp(n, name) == 0)
				found = xstrdup(json_get_string(c, "id"));
		}
		cJSON_Delete(page);
		snprintf(cursor, sizeof cursor, "%s", next);
	} while (found == NULL && *cursor != '\0');
	return found;
}

/*
 * Keeps value in the credential of kind secret named name (sealed like every
 * other, never shown; description for people), made or rotated; its id
 * (malloc'd), or NULL with *why saying which thing (what) could not be kept.
 */
static char *
connector_oauth_keep(struct service *svc, const char *name, const char *description,
    const char *what, const char *value, char **why)
{
	struct problem p = { 0 };
	cJSON *body = cJSON_CreateObject(), *cred = NULL;
	char *id = connector_oauth_credential(svc, name);
	bool ok;

	cJSON_AddStringToObject(body, "secret", value);
	if (id != NULL) {
		ok = credential_update(svc, id, body, &cred, &p) == TD_OK;
	} else {
		cJSON_AddStringToObject(body, "name", name);
		cJSON_AddStringToObject(body, "kind", "secret");
		cJSON_AddStringToObject(body, "description", description);
		ok = credential_create(svc, body, &cred, &p) == TD_OK;
		if (ok)
			id = xstrdup(json_get_string(cred, "id"));
	}
	sodium_memzero(cJSON_GetObjectItemCaseSensitive(body, "secret")->valuestring,
	    strlen(value));
	cJSON_Delete(body);
	if (!ok) {
		*why = xasprintf("cannot keep the %s: %s", what, p.message);
		free(id);
		id = NULL;
	}
	cJSON_Delete(p.details);
	cJSON_Delete(cred);
	return id;
}

/*
 * Keeps the refresh record of connector id (the bearer credential it renews
 * added): a credential of kind secret "OAuth refresh of ID", made or rotated.
 * A client secret is not kept in it: it goes to its own credential "OAuth
 * client secret of ID", which the record names (clientSecretCredential) and a
 * renewal reads.
 */
static bool
connector_oauth_store_record(struct service *svc, const char *id, const char *bearer_id, const char *record,
    char **why)
{
	cJSON *rec = json_parse(record, strlen(record)), *secret;
	char *name, *rid, *text;

	if (rec == NULL) {
		*why = xstrdup("cannot keep the refresh token");
		return false;
	}
	secret = cJSON_GetObjectItemCaseSensitive(rec, "clientSecret");
	if (cJSON_IsString(secret)) {
		name = xasprintf("OAuth client secret of %s", id);
		rid = connector_oauth_keep(svc, name, "the client secret the renewals of the "
		    "connector's OAuth token use", "client secret", secret->valuestring, why);
		free(name);
		sodium_memzero(secret->valuestring, strlen(secret->valuestring));
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "clientSecret");
		if (rid == NULL) {
			cJSON_Delete(rec);
			return false;
		}
		cJSON_AddStringToObject(rec, "clientSecretCredential", rid);
		free(rid);
	}
	cJSON_AddStringToObject(rec, "credentialId", bearer_id);
	text = json_print(rec);
	cJSON_Delete(rec);
	name = xasprintf("OAuth refresh of %s", id);
	rid = connector_oauth_keep(svc, name, "renews the OAuth token of the connector",
	    "refresh token", text, why);
	sodium_memzero(text, strlen(text));
	free(text);
	free(name);
	if (rid == NULL)
		return false;
	free(rid);
	return true;
}

/*
 * The record a renewal sends: record with the client secret read from the
 * credential it names (malloc'd, wipe it), or record itself copied; NULL with
 * *why when that credential is gone.
 */
static char *
connector_oauth_with_secret(struct service *svc, const char *record, char **why)
{
	cJSON *rec = json_parse(record, strlen(record));
	const char *sid = json_get_string(rec, "clientSecretCredential");
	char *secret = NULL, *text;
	bool got;

	if (sid == NULL) {
		cJSON_Delete(rec);
		return xstrdup(record);
	}
	store_lock(svc->store);
	got = credential_value(svc, sid, "env:OAUTH", &secret, why);
	store_unlock(svc->store);
	if (!got) {
		cJSON_Delete(rec);
		return NULL;
	}
	cJSON_AddStringToObject(rec, "clientSecret", secret);
	secrets_plain_free(secret);
	text = json_print(rec);
	secret = (char *)json_get_string(rec, "clientSecret");
	sodium_memzero(secret, strlen(secret));
	cJSON_Delete(rec);
	return text;
}

bool
connector_store_oauth_token(struct service *svc, const char *id, const char *token, const char *record,
    const char *scope, char **why)
{
	struct problem p = { 0 };
	cJSON *con = connector_get(svc, id), *body, *cred = NULL, *updated = NULL;
	const char *cid = con != NULL ? connector_oauth_bound(con) : NULL;
	bool ok;

	if (con == NULL) {
		*why = xstrdup("the connector was removed during the sign-in");
		return false;
	}
	body = cJSON_CreateObject();
	/* What it was granted, for a later step-up to keep (and for the user to see). */
	if (scope != NULL && *scope != '\0') {
		char *d = xasprintf("%s%.900s", OAUTH_SCOPE_PREFIX, scope);

		cJSON_AddStringToObject(body, "description", d);
		free(d);
	}
	if (cid != NULL) {
		cJSON_AddStringToObject(body, "secret", token);
		ok = credential_update(svc, cid, body, &cred, &p) == TD_OK;
	} else {
		char *name = xasprintf("OAuth token of %s", json_get_string(con, "name"));

		cJSON_AddStringToObject(body, "name", name);
		cJSON_AddStringToObject(body, "kind", "bearer");
		cJSON_AddStringToObject(body, "secret", token);
		free(name);
		ok = credential_create(svc, body, &cred, &p) == TD_OK;
	}
	sodium_memzero(cJSON_GetObjectItemCaseSensitive(body, "secret")->valuestring,
	    strlen(token));
	cJSON_Delete(body);
	if (ok && cid == NULL) {
		cJSON *bindings = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(con,
		    "credentialBindings"), true), *b = cJSON_CreateObject();

		if (!cJSON_IsArray(bindings)) {
			cJSON_Delete(bindings);
			bindings = cJSON_CreateArray();
		}
		cJSON_AddStringToObject(b, "credentialId", json_get_string(cred, "id"));
		cJSON_AddStringToObject(b, "target", "header:Authorization");
		cJSON_AddItemToArray(bindings, b);
		body = cJSON_CreateObject();
		cJSON_AddItemToObject(body, "transport", cJSON_Duplicate(
		    cJSON_GetObjectItemCaseSensitive(con, "transport"), true));
		cJSON_AddItemToObject(body, "credentialBindings", bindings);
		ok = connector_update(svc, id, body, &updated, &p) == TD_OK;
		cJSON_Delete(body);
		cJSON_Delete(updated);
	}
	if (!ok)
		*why = xasprintf("cannot store the token: %s", p.message);
	if (ok && record != NULL)
		ok = connector_oauth_store_record(svc, id, json_get_string(cred, "id"), record, why);
	cJSON_Delete(p.details);
	cJSON_Delete(cred);
	cJSON_Delete(con);
	return ok;
}

/* Renewals one at a time: two callers that find the same token refused renew it once. */
static pthread_mutex_t renew_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * Renews the token of the connector whose refresh record is the credential
 * rid (named "OAuth refresh of ID"): when due, or when the server refused
 * the token of version rejected (the token credential's updatedAt then) and
 * nobody has renewed it since.  *expires_at (may be NULL) gets the token's
 * expiry (Unix seconds, 0 = unknown) afterwards.
 */
static void
connector_oauth_renew_record(struct service *svc, const char *rid, const char *id,
    const char *rejected, double *expires_at)
{
	struct oauth_result res = { .access_token = NULL };
	char *record = NULL, *why = NULL, *full;
	const char *cid, *version;
	const cJSON *exp;
	cJSON *rec, *bearer = NULL;
	bool got, force;

	pthread_mutex_lock(&renew_mu);
	store_lock(svc->store);
	got = credential_value(svc, rid, "env:OAUTH", &record, &why);
	store_unlock(svc->store);
	rec = got ? json_parse(record, strlen(record)) : NULL;
	cid = json_get_string(rec, "credentialId");
	/* The token's credential deleted (signed out): nothing to renew. */
	if (cid != NULL && (bearer = credential_get(svc, cid)) == NULL)
		cid = NULL;
	version = json_get_string(bearer, "updatedAt");
	force = rejected != NULL && version != NULL && strcmp(version, rejected) == 0;
	exp = cJSON_GetObjectItemCaseSensitive(rec, "expiresAt");
	if (expires_at != NULL)
		*expires_at = cJSON_IsNumber(exp) ? exp->valuedouble : 0;
	full = cid != NULL ? connector_oauth_with_secret(svc, record, &why) : NULL;
	if (full != NULL && oauth_refresh(full, force, &res, &why)) {
		struct problem p = { 0 };
		cJSON *body = cJSON_CreateObject(), *cred = NULL, *now_rec;

		cJSON_AddStringToObject(body, "secret", res.access_token);
		if (credential_update(svc, cid, body, &cred, &p) == TD_OK &&
		    res.refresh_record != NULL)
			connector_oauth_store_record(svc, id, cid, res.refresh_record, &why);
		now_rec = res.refresh_record != NULL ?
		    json_parse(res.refresh_record, strlen(res.refresh_record)) : NULL;
		exp = cJSON_GetObjectItemCaseSensitive(now_rec, "expiresAt");
		if (expires_at != NULL && cJSON_IsNumber(exp))
			*expires_at = exp->valuedouble;
		cJSON_Delete(now_rec);
		sodium_memzero(cJSON_GetObjectItemCaseSensitive(body, "secret")->valuestring,
		    strlen(res.access_token));
		cJSON_Delete(body);
		cJSON_Delete(cred);
		cJSON_Delete(p.details);
		log_info("oauth: the token of connector %s was renewed%s", id,
		    force ? " (the server refused it)" : "");
	} else if (why != NULL) {
		log_warn("oauth: the token of connector %s cannot be renewed: %s", id, why);
	}
	pthread_mutex_unlock(&renew_mu);
	if (full != NULL) {
		sodium_memzero(full, strlen(full));
		free(full);
	}
	cJSON_Delete(bearer);
	if (got)
		secrets_plain_free(record);
	secrets_plain_free(res.access_token);
	secrets_plain_free(res.refresh_record);
	cJSON_Delete(rec);
	free(why);
}

bool
connector_oauth_renew(struct service *svc, const char *connector_id, const char *rejected,
    double *expires_at)
{
	char *name = xasprintf("OAuth refresh of %s", connector_id);
	char *rid = connector_oauth_credential(svc, name);

	free(name);
	if (expires_at != NULL)
		*expires_at = 0;
	if (rid == NULL)
		return false;
	connector_oauth_renew_record(svc, rid, connector_id, rejected, expires_at);
	free(rid);
	return true;
}

void
connectors_refresh_oauth(struct service *svc)
{
	static const char prefix[] = "OAuth refresh of ";
	char cursor[TD_ID_MAX] = "", next[TD_ID_MAX];

	do {
		cJSON *page = credentials_list(svc, *cursor ? cursor : NULL, 200, next), *c;

		cJSON_ArrayForEach(c, page) {
			const char *n = json_get_string(c, "name"), *rid = json_get_string(c, "id");
			cJSON *con;

			if (n == NULL || rid == NULL || strncmp(n, prefix, sizeof prefix - 1) != 0)
				continue;
			/* A removed connector's record: nothing to renew it for. */
			if ((con = connector_get(svc, n + sizeof prefix - 1)) == NULL)
				continue;
			cJSON_Delete(con);
			connector_oauth_renew_record(svc, rid, n + sizeof prefix - 1, NULL, NULL);
		}
		cJSON_Delete(page);
		snprintf(cursor, sizeof cursor, "%s", next);
	} while (*cursor != '\0');
}

void
connector_oauth_forget(struct service *svc, const cJSON *connector)
{
	const char *id = json_get_string(connector, "id"), *bound = connector_oauth_bound(connector);
	char *name = xasprintf("OAuth refresh of %s", id != NULL ? id : "");
	char *rid = connector_oauth_credential(svc, name), *token_name;
	struct problem p = { 0 };
	cJSON *bearer;

	if (rid != NULL && credential_delete(svc, rid, true, &p) == TD_OK)
		log_info("oauth: the refresh token of removed connector %s was deleted", id);
	cJSON_Delete(p.details);
	connector_oauth_keep_dpop(svc, id != NULL ? id : "", NULL, NULL);
	p = (struct problem){ 0 };
	/* Its token, when the sign-in made it (another bound credential is the user's). */
	token_name = xasprintf("OAuth token of %s", json_get_string(connector, "name"));
	bearer = bound != NULL ? credential_get(svc, bound) : NULL;
	if (bearer != NULL && json_get_string(bearer, "name") != NULL &&
	    strcmp(json_get_string(bearer, "name"), token_name) == 0 &&
	    credential_delete(svc, bound, true, &p) == TD_OK)
		log_info("oauth: the token of removed connector %s was deleted", id);
	cJSON_Delete(p.details);
	cJSON_Delete(bearer);
	free(token_name);
	free(rid);
	free(name);
}

char *
connector_oauth_scope(struct service *svc, const char *id)
{
	cJSON *con = connector_get(svc, id), *cred;
	const char *cid = con != NULL ? connector_oauth_bound(con) : NULL, *d;
	char *out = NULL;

	cred = cid != NULL ? credential_get(svc, cid) : NULL;
	d = json_get_string(cred, "description");
	if (d != NULL && strncmp(d, OAUTH_SCOPE_PREFIX, strlen(OAUTH_SCOPE_PREFIX)) == 0)
		out = xstrdup(d + strlen(OAUTH_SCOPE_PREFIX));
	cJSON_Delete(cred);
	cJSON_Delete(con);
	return out;
}

char *
connector_oauth_token_version(struct service *svc, const char *id)
{
	cJSON *con = connector_get(svc, id), *cred;
	const char *cid = con != NULL ? connector_oauth_bound(con) : NULL;
	char *out = NULL;

	cred = cid != NULL ? credential_get(svc, cid) : NULL;
	if (json_get_string(cred, "updatedAt") != NULL)
		out = xstrdup(json_get_string(cred, "updatedAt"));
	cJSON_Delete(cred);
	cJSON_Delete(con);
	return out;
}

/*
 * A signed-in connector's DPoP key: its tokens are bound to it (RFC 9449),
 * so every request to the server carries a proof of it.  It is a credential
 * like the token's ("OAuth DPoP key of ID", kind secret, sealed, never shown)
 * bound to the connector's header:DPoP: the MCP client takes the value of
 * that header as the key to make each request's proof with (mcp.h), never
 * sends it.
 */
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
