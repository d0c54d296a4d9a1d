/* Credentials: metadata in the open, the secret sealed (credentials.h, secrets.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "connector-rows.h"
#include "credentials.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "resource.h"
#include "secrets.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define CREDENTIAL_COLUMNS "id, name, kind, description, created_at, updated_at"

static const char *const credential_fields[] = { "name", "kind", "description", "secret",
	NULL };
static const char *const readonly_fields[] = { "id", "createdAt", "updatedAt", NULL };
static const char *const credential_kinds[] = { "api-key", "bearer", "basic", "secret",
	NULL };

static cJSON *
credential_from_row(sqlite3_stmt *s)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "id", resource_text(s, 0));
	cJSON_AddStringToObject(c, "name", resource_text(s, 1));
	cJSON_AddStringToObject(c, "kind", resource_text(s, 2));
	cJSON_AddStringToObject(c, "description", resource_text(s, 3));
	resource_add_time(c, "createdAt", sqlite3_column_int64(s, 4));
	resource_add_time(c, "updatedAt", sqlite3_column_int64(s, 5));
	return c;
}

/* Store locked. */
static cJSON *
credential_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, "SELECT " CREDENTIAL_COLUMNS " FROM credentials"
	    " WHERE id = ?1"), id, credential_from_row);
}

cJSON *
credentials_list(struct service *svc, const char *cursor, int limit, char next[TD_ID_MAX])
{
	struct store *st = svc->store;
	cJSON *arr = cJSON_CreateArray();
	struct resource_page pg;
	sqlite3_stmt *s;

	store_lock(st);
	s = store_stmt(st, "SELECT " CREDENTIAL_COLUMNS " FROM credentials"
	    " WHERE ?1 IS NULL OR id < ?1 ORDER BY id DESC LIMIT ?2");
	resource_page_start(&pg, s, 1, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, credential_from_row(s));
	sqlite3_reset(s);
	store_unlock(st);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

cJSON *
credential_get(struct service *svc, const char *id)
{
	cJSON *c;

	store_lock(svc->store);
	c = credential_load(svc->store, id);
	store_unlock(svc->store);
	return c;
}

/* Metadata only: what credential.updated carries. */
static void
credential_emit(struct service *svc, const cJSON *c, const char *action)
{
	cJSON *d = cJSON_CreateObject();

	for (const char *const *f = (const char *const[]){ "id", "name", "kind", NULL }; *f; f++)
		cJSON_AddStringToObject(d, *f, json_get_string(c, *f));
	cJSON_AddStringToObject(d, "action", action);
	events_emit(svc->events, "credential.updated", NULL, NULL, NULL, d);
}

/*
 * Checks the fields present in body; the secret's own rules depend on the
 * kind (kind NULL: unknown, an update that keeps it).
 */
static enum td_code
credential_fields_valid(const cJSON *body, bool creating, const char *kind,
    struct problem *p)
{
	const cJSON *secret = cJSON_GetObjectItemCaseSensitive(body, "secret");
	const char *bad = NULL;

	for (const char *const *f = readonly_fields; *f; f++) {
		if (cJSON_GetObjectItemCaseSensitive(body, *f) != NULL)
			return problem_set(p, TD_INVALID_REQUEST, *f, "%s is read-only", *f);
	}
	if (!json_only_keys(body, credential_fields, &bad))
		return problem_set(p, TD_INVALID_REQUEST, bad, "unknown field %.64s", bad);
	if (!json_check_string(body, "name", creating, false, 1, NAME_MAX_CHARS))
		return problem_set(p, TD_INVALID_REQUEST, "name",
		    "name must be a string of 1 to %d characters", NAME_MAX_CHARS);
	if (!json_check_enum(body, "kind", false, credential_kinds))
		return problem_set(p, TD_INVALID_REQUEST, "kind",
		    "kind must be api-key, bearer, basic or secret");
	if (!json_check_string(body, "description", false, true, 0, CREDENTIAL_DESCRIPTION_MAX))
		return problem_set(p, TD_INVALID_REQUEST, "description",
		    "description must be a string of at most %d characters",
		    CREDENTIAL_DESCRIPTION_MAX);
	if (secret == NULL && !creating)
		return TD_OK;
	if (!cJSON_IsString(secret) || secret->valuestring[0] == '\0' ||
	    strlen(secret->valuestring) > CREDENTIAL_SECRET_MAX)
		return problem_set(p, TD_INVALID_REQUEST, "secret",
		    "secret must be a string of 1 to %d bytes", CREDENTIAL_SECRET_MAX);
	/* Tokens go into headers: one line.  Only kind "secret" may span lines. */
	if (kind != NULL && strcmp(kind, "secret") != 0 &&
	    strpbrk(secret->valuestring, "\r\n") != NULL)
		return problem_set(p, TD_INVALID_REQUEST, "secret",
		    "a %s secret is one line (kind secret may have several)", kind);
	if (kind != NULL && strcmp(kind, "basic") == 0 && strchr(secret->valuestring, ':') == NULL)
		return problem_set(p, TD_INVALID_REQUEST, "secret",
		    "a basic secret is user:password");
	return TD_OK;
}

/* Binds the sealed secret of body as parameter i; false when it cannot be sealed. */
static bool
credential_bind_sealed(struct service *svc, sqlite3_stmt *s, int i, const char *secret)
{
	unsigned char *sealed;
	size_t len;

	if (!secrets_seal(svc->secrets, secret, strlen(secret), &sealed, &len)) {
		store_note_errno(secrets_make_errno(svc->secrets));	/* a full disk: 507 */
		return false;
	}
	sqlite3_bind_blob(s, i, sealed, (int)len, free);
	return true;
}

static enum td_code
credential_write_end(struct service *svc, const char *id, enum td_code rc,
    const char *action, cJSON **out, struct problem *p)
{
	return conn_write_end(svc, "credential", id, rc, action, out, p, credential_load,
	    credential_emit);
}

enum td_code
credential_create(struct service *svc, const cJSON *body, cJSON **out,
    struct problem *p)
{
	struct store *st = svc->store;
	const char *kind = json_get_string(body, "kind");
	const char *desc = json_get_string(body, "description");
	enum td_code rc;
	char id[TD_ID_MAX];
	sqlite3_stmt *s;
	int n = 0;

	*out = NULL;
	if (kind == NULL)
		kind = "secret";
	if ((rc = credential_fields_valid(body, true, kind, p)) != TD_OK)
		return rc;
	id_new("cred", id);
	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the credential");
	}
	s = store_stmt(st, "SELECT count(*) FROM credentials");
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	if (n >= CREDENTIALS_MAX)
		rc = problem_set(p, TD_INVALID_REQUEST, NULL, "there are %d credentials already; "
		    "delete one first", CREDENTIALS_MAX);
	if (rc == TD_OK) {
		int64_t now = clock_wall_ms();

		s = store_stmt(st, "INSERT INTO credentials (" CREDENTIAL_COLUMNS ", secret)"
		    " VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, json_get_string(body, "name"), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, desc ? desc : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, now);
		if (!credential_bind_sealed(svc, s, 6, json_get_string(body, "secret")))
			rc = problem_set(p, TD_INTERNAL_ERROR, NULL,
			    "the secrets key cannot be read or made (see the service log)");
		else if (sqlite3_step(s) != SQLITE_DONE)
			rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the credential");
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
	}
	return credential_write_end(svc, id, rc, "created", out, p);
}

enum td_code
credential_update(struct service *svc, const char *id, const cJSON *body, cJSON **out,
    struct problem *p)
{
	struct store *st = svc->store;
	const cJSON *desc = cJSON_GetObjectItemCaseSensitive(body, "description");
	const char *secret = json_get_string(body, "secret");
	const char *kind = json_get_string(body, "kind");
	cJSON *old;
	enum td_code rc;
	sqlite3_stmt *s;

	*out = NULL;
	if ((rc = credential_fields_valid(body, false, NULL, p)) != TD_OK)
		return rc;
	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the credential");
	}
	old = credential_load(st, id);
	if (old == NULL) {
		rc = problem_set(p, TD_NOT_FOUND, "credential", "No credential with that id.");
	} else {
		/* The secret's rules for the kind it will have. */
		rc = credential_fields_valid(body, false, kind ? kind : json_get_string(old, "kind"),
		    p);
	}
	cJSON_Delete(old);
	if (rc == TD_OK) {
		s = store_stmt(st, "UPDATE credentials SET name = coalesce(?2, name),"
		    " kind = coalesce(?3, kind), description = coalesce(?4, description),"
		    " secret = coalesce(?5, secret), updated_at = " RESOURCE_NEXT_TIME(6)
		    " WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		if (json_get_string(body, "name") != NULL)
			sqlite3_bind_text(s, 2, json_get_string(body, "name"), -1, SQLITE_STATIC);
		if (kind != NULL)
			sqlite3_bind_text(s, 3, kind, -1, SQLITE_STATIC);
		if (cJSON_IsString(desc) || cJSON_IsNull(desc))
			sqlite3_bind_text(s, 4, cJSON_IsString(desc) ? desc->valuestring : "", -1,
			    SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, clock_wall_ms());
		if (secret != NULL && !credential_bind_sealed(svc, s, 5, secret))
			rc = problem_set(p, TD_INTERNAL_ERROR, NULL,
			    "the secrets key cannot be read or made (see the service log)");
		else if (sqlite3_step(s) != SQLITE_DONE)
			rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the credential");
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
	}
	return credential_write_end(svc, id, rc, secret ? "rotated" : "updated", out, p);
}

/* Adds the providers of one settings object that name id or name. */
static void
credential_providers_naming_in(const cJSON *providers, const char *id, const char *name, cJSON *arr)
{
	const cJSON *pr, *have;
	const char *ref;

	cJSON_ArrayForEach(pr, providers) {
		ref = json_get_string(pr, "apiKeyCredential");
		if (ref == NULL || (strcmp(ref, id) != 0 && (name == NULL || strcmp(ref, name) != 0)))
			continue;
		cJSON_ArrayForEach(have, arr) {
			if (strcmp(have->valuestring, pr->string) == 0)
				break;
		}
		if (have == NULL)
			cJSON_AddItemToArray(arr, cJSON_CreateString(pr->string));
	}
}

/*
 * The providers whose apiKeyCredential names the credential, in the
 * settings the service runs with and in settings.json as it is now (taskdeck
 * setup writes it before the service is restarted).
 */
static cJSON *
credential_providers_naming(struct service *svc, const char *id, const char *name)
{
	cJSON *arr = cJSON_CreateArray();
	struct settings *fresh = NULL;
	char *err = NULL;

	if (svc->settings != NULL)
		credential_providers_naming_in(settings_providers(svc->settings), id, name, arr);
	/* Read-only: settings_load would write the defaults for a missing file. */
	if (svc->paths.settings != NULL && access(svc->paths.settings, F_OK) == 0)
		fresh = settings_load(svc->paths.settings, &err);
	if (fresh != NULL)
		credential_providers_naming_in(settings_providers(fresh), id, name, arr);
	settings_free(fresh);
	free(err);
	return arr;
}

/* The connectors that bind id, as a JSON array of ids.  Store locked. */
static cJSON *
credential_binders_load(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT DISTINCT connector_id FROM connector_bindings"
	    " WHERE credential_id = ?1 ORDER BY connector_id");
	cJSON *arr = cJSON_CreateArray();

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW)
		cJSON_AddItemToArray(arr, cJSON_CreateString(resource_text(s, 0)));
	sqlite3_reset(s);
	return arr;
}

enum td_code
credential_delete(struct service *svc, const char *id, bool force, struct problem *p)
{
	struct store *st = svc->store;
	enum td_code rc = TD_OK;
	cJSON *cred, *binders, *b, *providers = NULL;
	sqlite3_stmt *s;
	int64_t now = clock_wall_ms();

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot delete the credential");
	}
	cred = credential_load(st, id);
	if (cred == NULL) {
		store_rollback(st);
		store_unlock(st);
		return problem_set(p, TD_NOT_FOUND, "credential", "No credential with that id.");
	}
	binders = credential_binders_load(st, id);
	providers = credential_providers_naming(svc, id, json_get_string(cred, "name"));
	if ((cJSON_GetArraySize(binders) > 0 || cJSON_GetArraySize(providers) > 0) && !force) {
		if (cJSON_GetArraySize(providers) > 0)
			rc = problem_set(p, TD_CREDENTIAL_IN_USE, NULL, "provider %s takes its API "
			    "key from this credential (apiKeyCredential in settings.json); run "
			    "`taskdeck setup` to change it, or delete with ?force=true",
			    cJSON_GetArrayItem(providers, 0)->valuestring);
		else
			rc = problem_set(p, TD_CREDENTIAL_IN_USE, NULL, "%d connector(s) bind this "
			    "credential; unbind it or delete with ?force=true",
			    cJSON_GetArraySize(binders));
		p->details = cJSON_CreateObject();
		cJSON_AddItemToObject(p->details, "connectors", binders);
		cJSON_AddItemToObject(p->details, "providers", providers);
		binders = NULL;
		providers = NULL;
	}
	if (rc == TD_OK && !connector_rows_unbind(st, id, binders, now))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot unbind the credential");
	if (rc == TD_OK) {
		s = store_stmt(st, "DELETE FROM credentials WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot delete the credential");
		sqlite3_reset(s);
	}
	if (rc == TD_OK && !store_commit(st))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot delete the credential");
	else if (rc != TD_OK)
		store_rollback(st);
	if (rc == TD_OK) {
		credential_emit(svc, cred, "deleted");
		cJSON_ArrayForEach(b, binders) {
			cJSON *c = connector_load_locked(st, b->valuestring);
			if (c != NULL)
				connector_emit(svc, c, "updated");
			cJSON_Delete(c);
		}
	}
	store_unlock(st);
	cJSON_Delete(cred);
	cJSON_Delete(binders);
	cJSON_Delete(providers);
	return rc;
}

bool
credential_value(struct service *svc, const char *credential_id, const char *target,
    char **value, char **why)
{
	struct store *st = svc->store;
	sqlite3_stmt *s = store_stmt(st, "SELECT kind, secret FROM credentials WHERE id = ?1");
	char *plain = NULL, *out;
	size_t len = 0;
	bool found, opened = false, header = strncmp(target, "header:", 7) == 0;
	char kind[16] = "";

	*value = NULL;
	sqlite3_bind_text(s, 1, credential_id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	if (found) {
		snprintf(kind, sizeof kind, "%s", resource_text(s, 0));
		opened = secrets_open(svc->secrets, sqlite3_column_blob(s, 1),
		    (size_t)sqlite3_column_bytes(s, 1), &plain, &len);
	}
	sqlite3_reset(s);
	if (!found) {
		*why = xasprintf("the credential %s no longer exists", credential_id);
		return false;
	}
	if (!opened) {
		*why = xasprintf("the credential %s cannot be decrypted (see the service log)",
		    credential_id);
		return false;
	}
	if (header && strpbrk(plain, "\r\n") != NULL) {
		secrets_plain_free(plain);
		*why = xasprintf("the credential %s spans lines and cannot be a header",
		    credential_id);
		return false;
	}
	if (header && strcmp(kind, "bearer") == 0) {
		out = sodium_malloc(len + 8);
		memcpy(out, "Bearer ", 7);
		memcpy(out + 7, plain, len + 1);
	} else if (header && strcmp(kind, "basic") == 0) {
		size_t b64 = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);

		out = sodium_malloc(6 + b64);
		memcpy(out, "Basic ", 6);
		sodium_bin2base64(out + 6, b64, (const unsigned char *)plain, len,
		    sodium_base64_VARIANT_ORIGINAL);
	} else {
		*value = plain;
		return true;
	}
	secrets_plain_free(plain);
	if (out == NULL)
		abort();
	*value = out;
	return true;
}

bool
credential_provider_key(const struct service *svc, const char *ref, char **value, char **why)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;
	char *plain = NULL;
	size_t len = 0;
	int rows = 0;
	bool opened = false;

	*value = NULL;
	store_lock(st);
	/* An id wins; a name only when one credential has it. */
	s = store_stmt(st, "SELECT secret FROM credentials WHERE id = ?1 UNION ALL "
	    "SELECT secret FROM credentials WHERE name = ?1 AND NOT EXISTS "
	    "(SELECT 1 FROM credentials WHERE id = ?1) LIMIT 2");
	sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (++rows == 1)
			opened = secrets_open(svc->secrets, sqlite3_column_blob(s, 0),
			    (size_t)sqlite3_column_bytes(s, 0), &plain, &len);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	store_unlock(st);
	if (rows == 0)
		*why = xasprintf("the credential %s named by apiKeyCredential does not exist; "
		    "run `taskdeck setup` to store the key again", ref);
	else if (rows > 1)
		*why = xasprintf("%d or more credentials are named %s; give apiKeyCredential "
		    "the credential's id instead (taskdeck credentials list)", rows, ref);
	else if (!opened)
		*why = xasprintf("the credential %s cannot be decrypted (see the service log); "
		    "run `taskdeck setup` to store the key again", ref);
	else if (len == 0)
		*why = xasprintf("the credential %s is empty; run `taskdeck setup`", ref);
	if (rows != 1 || !opened || len == 0) {
		secrets_plain_free(opened ? plain : NULL);
		return false;
	}
	*value = plain;
	return true;
}

cJSON *
credential_provider_block(const struct service *svc, const char *name, char **why)
{
	const cJSON *provider = settings_provider(svc->settings, name);
	const char *key_env, *key = NULL;
	char *cred_key = NULL;
	cJSON *p;

	*why = NULL;
	if (provider == NULL)
		return NULL;
	key_env = json_get_string(provider, "apiKeyEnv");
	if (key_env != NULL)
		key = settings_api_key(svc->settings, key_env);
	/* Or the sealed credential the provider names, opened just now. */
	if (json_get_string(provider, "apiKeyCredential") != NULL) {
		char *sealed_why = NULL;

		if (!credential_provider_key(svc, json_get_string(provider, "apiKeyCredential"),
		    &cred_key, &sealed_why)) {
			*why = xasprintf("The API key of provider %s cannot be read: %s.", name,
			    sealed_why);
			free(sealed_why);
			return NULL;
		}
		key = cred_key;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "kind", json_get_string(provider, "kind"));
	if (json_get_string(provider, "baseUrl") != NULL)
		cJSON_AddStringToObject(p, "baseUrl", json_get_string(provider, "baseUrl"));
	else
		cJSON_AddNullToObject(p, "baseUrl");
	if (key != NULL)
		cJSON_AddStringToObject(p, "apiKey", key);
	else
		cJSON_AddNullToObject(p, "apiKey");
	secrets_plain_free(cred_key);
	cJSON_AddStringToObject(p, "replayDir", svc->replay_dir);
	return p;
}
