/* A session's own MCP servers (session-connectors.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "connectors.h"
#include "events.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "problem.h"
#include "resource.h"
#include "secrets.h"
#include "service.h"
#include "session-connectors.h"
#include "sessions.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define SCN_NAME_MAX 64

static const char *const scn_fields[] = { "name", "type", "command", "args", "env", "url",
	"headers", NULL };
static const char *const scn_pair_fields[] = { "name", "value", NULL };

/* No control character but tab (and, where lines allows, line breaks); min..max bytes. */
static bool
scn_text_valid(const char *s, size_t min, size_t max, bool lines)
{
	size_t n = strlen(s);

	if (n < min || n > max)
		return false;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (((*c < 0x20 && *c != '\t' && !(lines && (*c == '\n' || *c == '\r'))) ||
		    *c == 0x7f))
			return false;
	}
	return true;
}

/* env or headers of server i: [{name, value}], names valid and unique. */
static bool
scn_pairs_valid(const cJSON *pairs, const char *field, int i, bool headers,
    struct problem *p)
{
	const char *what = headers ? "headers" : "env";
	const cJSON *e, *f;
	const char *bad;
	int n = 0, max = headers ? CONNECTOR_HEADERS_MAX : CONNECTOR_ENV_MAX;

	if (pairs == NULL || cJSON_IsNull(pairs))
		return true;
	if (!cJSON_IsArray(pairs) || cJSON_GetArraySize(pairs) > max) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].%s must be an array of at most "
		    "%d {name, value}", field, i, what, max);
		return false;
	}
	cJSON_ArrayForEach(e, pairs) {
		const char *name = json_get_string(e, "name");
		const char *value = json_get_string(e, "value");

		if (!cJSON_IsObject(e) || !json_only_keys(e, scn_pair_fields, &bad) ||
		    name == NULL || value == NULL) {
			problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].%s[%d] must be {name, value} "
			    "with two strings", field, i, what, n);
			return false;
		}
		if (headers ? !conn_header_name_valid(name) : !conn_env_name_valid(name)) {
			problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].%s[%d]: %.64s is not a valid "
			    "%s name", field, i, what, n, name, headers ? "header" : "variable");
			return false;
		}
		if (strlen(value) > CONNECTOR_VALUE_MAX ||
		    (headers && !scn_text_valid(value, 0, CONNECTOR_VALUE_MAX, false))) {
			problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].%s[%d]: the value of %.64s "
			    "must be at most %d bytes%s", field, i, what, n, name, CONNECTOR_VALUE_MAX,
			    headers ? " on one line" : "");
			return false;
		}
		cJSON_ArrayForEach(f, pairs) {
			if (f == e)
				break;
			if ((headers ? strcasecmp : strcmp)(json_get_string(f, "name"), name) == 0) {
				problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].%s names %.64s twice",
				    field, i, what, name);
				return false;
			}
		}
		n++;
	}
	return true;
}

/* One server, the i-th of field. */
static bool
scn_server_valid(const cJSON *s, const char *field, int i, struct problem *p)
{
	const char *type = json_get_string(s, "type");
	const char *name = json_get_string(s, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(s, "args"), *a;
	const char *bad = NULL;
	bool http;

	if (!cJSON_IsObject(s)) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d] must be an object", field, i);
		return false;
	}
	if (!json_only_keys(s, scn_fields, &bad)) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d]: unknown member %.40s", field, i,
		    bad);
		return false;
	}
	if (name == NULL || !scn_text_valid(name, 1, SCN_NAME_MAX, false)) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].name must be a string of 1 to %d "
		    "bytes", field, i, SCN_NAME_MAX);
		return false;
	}
	if (type != NULL && strcmp(type, "stdio") != 0 && strcmp(type, "http") != 0) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].type must be stdio or http (the "
		    "older HTTP+SSE transport is not supported)", field, i);
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(s, "type") != NULL && type == NULL) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].type must be stdio or http",
		    field, i);
		return false;
	}
	http = type != NULL && strcmp(type, "http") == 0;
	if (http) {
		if (json_get_string(s, "url") == NULL || !connector_url_valid(json_get_string(s, "url")) ||
		    cJSON_GetObjectItemCaseSensitive(s, "command") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(s, "args") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(s, "env") != NULL) {
			problem_set(p, TD_INVALID_REQUEST, field, "%s[%d]: an http server has a url "
			    "(http:// or https://, at most %d bytes) and headers, no command", field, i,
			    CONNECTOR_URL_MAX);
			return false;
		}
		return scn_pairs_valid(cJSON_GetObjectItemCaseSensitive(s, "headers"), field, i,
		    true, p);
	}
	if (json_get_string(s, "command") == NULL ||
	    !scn_text_valid(json_get_string(s, "command"), 1, CONNECTOR_COMMAND_MAX, false) ||
	    cJSON_GetObjectItemCaseSensitive(s, "url") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(s, "headers") != NULL) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d]: a stdio server has a command (1 "
		    "to %d bytes), args and env, no url", field, i, CONNECTOR_COMMAND_MAX);
		return false;
	}
	if (args != NULL && !cJSON_IsNull(args) &&
	    (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > CONNECTOR_ARGS_MAX)) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].args must be an array of at most "
		    "%d strings", field, i, CONNECTOR_ARGS_MAX);
		return false;
	}
	cJSON_ArrayForEach(a, (cJSON_IsArray(args) ? args : NULL)) {
		if (!cJSON_IsString(a) || !scn_text_valid(a->valuestring, 0, CONNECTOR_ARG_MAX,
		    true)) {
			problem_set(p, TD_INVALID_REQUEST, field, "%s[%d].args must hold strings of at "
			    "most %d bytes", field, i, CONNECTOR_ARG_MAX);
			return false;
		}
	}
	return scn_pairs_valid(cJSON_GetObjectItemCaseSensitive(s, "env"), field, i, false, p);
}

bool
session_connectors_valid(const cJSON *list, const char *field, struct problem *p)
{
	const cJSON *s, *t;
	int i = 0;

	if (list == NULL || cJSON_IsNull(list))
		return true;
	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > SESSION_CONNECTORS_MAX) {
		problem_set(p, TD_INVALID_REQUEST, field, "%s must be an array of at most %d MCP "
		    "servers", field, SESSION_CONNECTORS_MAX);
		return false;
	}
	cJSON_ArrayForEach(s, list) {
		if (!scn_server_valid(s, field, i, p))
			return false;
		cJSON_ArrayForEach(t, list) {
			if (t == s)
				break;
			if (strcmp(json_get_string(t, "name"), json_get_string(s, "name")) == 0) {
				problem_set(p, TD_INVALID_REQUEST, field, "%s names the server %.64s twice",
				    field, json_get_string(s, "name"));
				return false;
			}
		}
		i++;
	}
	return true;
}

/* Zeroes every string of j (a parsed copy of sealed values) before it is freed. */
static void
scn_wipe(cJSON *j)
{
	cJSON *c;

	if (j == NULL)
		return;
	if (j->valuestring != NULL)
		sodium_memzero(j->valuestring, strlen(j->valuestring));
	for (c = j->child; c != NULL; c = c->next)
		scn_wipe(c);
}

/*
 * The names of pairs into *names (JSON text, malloc'd) and their values into
 * values (an object of name: value); how many.
 */
static int
scn_split(const cJSON *pairs, char **names, cJSON *values)
{
	cJSON *arr = cJSON_CreateArray();
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, (cJSON_IsArray(pairs) ? pairs : NULL)) {
		cJSON_AddItemToArray(arr, cJSON_CreateString(json_get_string(e, "name")));
		cJSON_AddStringToObject(values, json_get_string(e, "name"),
		    json_get_string(e, "value"));
		n++;
	}
	*names = json_print(arr);
	cJSON_Delete(arr);
	return n;
}

/* Binds the sealed values to column i (NULL when there are none); false when they cannot be sealed. */
static bool
scn_bind_sealed(struct service *svc, sqlite3_stmt *s, int i, cJSON *values, bool any)
{
	unsigned char *sealed;
	size_t len;
	char *plain;
	bool ok;

	if (!any) {
		sqlite3_bind_null(s, i);
		return true;
	}
	plain = json_print(values);
	ok = secrets_seal(svc->secrets, plain, strlen(plain), &sealed, &len);
	sodium_memzero(plain, strlen(plain));
	free(plain);
	if (!ok) {
		store_note_errno(secrets_make_errno(svc->secrets));	/* a full disk: 507 */
		return false;
	}
	sqlite3_bind_blob(s, i, sealed, (int)len, free);
	return true;
}

static bool
scn_insert(struct service *svc, const char *session_id, int position, const cJSON *c,
    int64_t now)
{
	sqlite3_stmt *s = store_stmt(svc->store, "INSERT INTO session_connectors (id, session_id,"
	    " position, name, type, command, args, url, env_names, header_names, sealed,"
	    " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
	const char *type = json_get_string(c, "type");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(c, "args");
	cJSON *values = cJSON_CreateObject(), *env = cJSON_AddObjectToObject(values, "env");
	cJSON *headers = cJSON_AddObjectToObject(values, "headers");
	char id[TD_ID_MAX], *env_names, *header_names;
	int n;
	bool ok;

	id_new("scn", id);
	n = scn_split(cJSON_GetObjectItemCaseSensitive(c, "env"), &env_names, env);
	n += scn_split(cJSON_GetObjectItemCaseSensitive(c, "headers"), &header_names, headers);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, position);
	sqlite3_bind_text(s, 4, json_get_string(c, "name"), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, type != NULL ? type : "stdio", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, json_get_string(c, "command"), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, cJSON_IsArray(args) ? json_print(args) : xstrdup("[]"), -1, free);
	sqlite3_bind_text(s, 8, json_get_string(c, "url"), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 9, env_names, -1, free);
	sqlite3_bind_text(s, 10, header_names, -1, free);
	sqlite3_bind_int64(s, 12, now);
	ok = scn_bind_sealed(svc, s, 11, values, n > 0) && sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	scn_wipe(values);
	cJSON_Delete(values);
	return ok;
}

bool
session_connectors_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM session_connectors WHERE session_id = ?1",
	    session_id);
}

bool
session_connectors_store(struct service *svc, const char *session_id, const cJSON *list,
    int64_t now)
{
	const cJSON *c;
	int position = 0;

	if (!session_connectors_delete_session(svc->store, session_id))
		return false;
	cJSON_ArrayForEach(c, (cJSON_IsArray(list) ? list : NULL)) {
		if (!scn_insert(svc, session_id, position++, c, now))
			return false;
	}
	return true;
}

#define SCN_COLUMNS "id, name, type, command, args, url, env_names, header_names, created_at"

/* [{"name": n}, ...] of a stored array of names. */
static cJSON *
scn_names(sqlite3_stmt *s, int i)
{
	cJSON *names = resource_json_column(s, i), *out = cJSON_CreateArray(), *n;

	cJSON_ArrayForEach(n, names) {
		cJSON *one = cJSON_CreateObject();

		cJSON_AddStringToObject(one, "name", cJSON_IsString(n) ? n->valuestring : "");
		cJSON_AddItemToArray(out, one);
	}
	cJSON_Delete(names);
	return out;
}

/* A row (SCN_COLUMNS) as the API shows it: the names of the values, never a value. */
static cJSON *
scn_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject();
	bool http = strcmp(resource_text(s, 2), "http") == 0;

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "name", resource_text(s, 1));
	cJSON_AddStringToObject(j, "type", resource_text(s, 2));
	if (http) {
		cJSON_AddStringToObject(j, "url", resource_text(s, 5));
		cJSON_AddItemToObject(j, "headers", scn_names(s, 7));
	} else {
		cJSON_AddStringToObject(j, "command", resource_text(s, 3));
		cJSON_AddItemToObject(j, "args", resource_json_column(s, 4));
		cJSON_AddItemToObject(j, "env", scn_names(s, 6));
	}
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 8));
	return j;
}

cJSON *
session_connectors_list(struct store *st, const char *session_id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT " SCN_COLUMNS " FROM session_connectors"
	    " WHERE session_id = ?1 ORDER BY position");
	cJSON *arr = cJSON_CreateArray();

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW)
		cJSON_AddItemToArray(arr, scn_from_row(s));
	sqlite3_reset(s);
	return arr;
}

cJSON *
session_connectors_get(struct service *svc, const char *session_id)
{
	cJSON *j = NULL;

	store_lock(svc->store);
	if (sessions_exists(svc->store, session_id))
		j = session_connectors_list(svc->store, session_id);
	store_unlock(svc->store);
	return j;
}

cJSON *
session_connectors_set(struct service *svc, const char *session_id, const cJSON *list,
    struct problem *p)
{
	struct store *st = svc->store;
	cJSON *j = NULL;
	bool ok;

	store_lock(st);
	if (!sessions_exists(st, session_id)) {
		store_unlock(st);
		problem_set(p, TD_NOT_FOUND, "session", "No session with that id.");
		return NULL;
	}
	ok = store_begin(st) && session_connectors_store(svc, session_id, list, clock_wall_ms());
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		session_emit_updated_locked(svc, session_id);
		j = session_connectors_list(st, session_id);
	}
	store_unlock(st);
	if (j == NULL)
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The session's connectors could not be "
		    "stored.");
	else
		log_info("session %s: %d connectors of its own", session_id, cJSON_GetArraySize(j));
	return j;
}

/* credentialBindings of names (a stored array) with targets prefix+name. */
static void
scn_bindings(cJSON *bindings, sqlite3_stmt *s, int i, const char *prefix)
{
	cJSON *names = resource_json_column(s, i), *n;

	cJSON_ArrayForEach(n, names) {
		cJSON *b;
		char *target;

		if (!cJSON_IsString(n))
			continue;
		target = xasprintf("%s%s", prefix, n->valuestring);
		b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "credentialId", target);
		cJSON_AddStringToObject(b, "target", target);
		cJSON_AddItemToArray(bindings, b);
		free(target);
	}
	cJSON_Delete(names);
}

void
session_connectors_for_run(struct service *svc, const char *session_id, cJSON *run_connectors)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;

	store_lock(st);
	s = store_stmt(st, "SELECT " SCN_COLUMNS " FROM session_connectors"
	    " WHERE session_id = ?1 ORDER BY position");
	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *c = cJSON_CreateObject(), *t, *bindings;
		bool http = strcmp(resource_text(s, 2), "http") == 0;

		cJSON_AddStringToObject(c, "id", resource_text(s, 0));
		cJSON_AddStringToObject(c, "name", resource_text(s, 1));
		cJSON_AddStringToObject(c, "kind", "custom");
		t = cJSON_AddObjectToObject(c, "transport");
		cJSON_AddStringToObject(t, "type", http ? "http" : "stdio");
		if (http) {
			cJSON_AddStringToObject(t, "url", resource_text(s, 5));
		} else {
			cJSON_AddStringToObject(t, "command", resource_text(s, 3));
			cJSON_AddItemToObject(t, "args", resource_json_column(s, 4));
		}
		bindings = cJSON_AddArrayToObject(c, "credentialBindings");
		scn_bindings(bindings, s, http ? 7 : 6, http ? "header:" : "env:");
		cJSON_AddItemToArray(run_connectors, c);
	}
	sqlite3_reset(s);
	store_unlock(st);
}

bool
session_connector_id(const char *connector_id)
{
	return connector_id != NULL && id_valid(connector_id, "scn");
}

/* True when run_connectors has connector_id with a binding credential_id. */
static bool
scn_run_binds(const cJSON *run_connectors, const char *connector_id, const char *credential_id)
{
	const cJSON *c, *b;

	cJSON_ArrayForEach(c, run_connectors) {
		const char *id = json_get_string(c, "id");

		if (id == NULL || strcmp(id, connector_id) != 0)
			continue;
		cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(c, "credentialBindings")) {
			const char *cred = json_get_string(b, "credentialId");

			if (cred != NULL && strcmp(cred, credential_id) == 0)
				return true;
		}
	}
	return false;
}

enum td_code
session_connector_secret_resolve(struct service *svc, const cJSON *run_connectors,
    const cJSON *params, char **value, char **message)
{
	const char *con = json_get_string(params, "connectorId");
	const char *cred = json_get_string(params, "credentialId");
	struct store *st = svc->store;
	char *plain = NULL;
	size_t plain_len = 0;
	cJSON *values = NULL;
	const char *v = NULL;
	sqlite3_stmt *s;
	bool found = false, opened = false;

	*value = NULL;
	if (con == NULL || cred == NULL) {
		*message = xstrdup("secret.resolve needs connectorId and credentialId");
		return TD_INVALID_REQUEST;
	}
	if (!scn_run_binds(run_connectors, con, cred)) {
		*message = xstrdup("that value is not bound to a connector of this run");
		return TD_FORBIDDEN;
	}
	store_lock(st);
	s = store_stmt(st, "SELECT sealed FROM session_connectors WHERE id = ?1");
	sqlite3_bind_text(s, 1, con, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		found = true;
		opened = sqlite3_column_type(s, 0) == SQLITE_BLOB &&
		    secrets_open(svc->secrets, sqlite3_column_blob(s, 0),
		    (size_t)sqlite3_column_bytes(s, 0), &plain, &plain_len);
	}
	sqlite3_reset(s);
	store_unlock(st);
	if (!found) {
		*message = xstrdup("the session's connectors were replaced since the run started");
		return TD_FORBIDDEN;
	}
	if (opened && (values = cJSON_Parse(plain)) != NULL) {
		bool header = strncmp(cred, "header:", 7) == 0;

		v = json_get_string(cJSON_GetObjectItemCaseSensitive(values,
		    header ? "headers" : "env"), cred + (header ? 7 : 4));
	}
	if (v != NULL) {
		size_t n = strlen(v);

		*value = sodium_malloc(n + 1);
		if (*value != NULL)
			memcpy(*value, v, n + 1);
	}
	scn_wipe(values);
	cJSON_Delete(values);
	secrets_plain_free(plain);
	if (*value == NULL) {
		log_warn("session connector %s: its sealed values cannot be read", con);
		*message = xstrdup("the value cannot be read (the sealed value does not open)");
		return TD_INTERNAL_ERROR;
	}
	return TD_OK;
}
