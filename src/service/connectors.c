/* Connector definitions: validation and storage, the state directories (connectors.h). */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "connector-rows.h"
#include "connectors.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "resource.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

static const char *const add_fields[] = { "name", "transport", "credentialBindings",
	"enabled", NULL };
static const char *const update_fields[] = { "name", "transport", "credentialBindings",
	NULL };
static const char *const readonly_fields[] = { "id", "kind", "createdAt", "updatedAt",
	NULL };

/* Letters, digits, '-' and '_', starting with a letter or digit, no "__" (the tool separator). */
static bool
connector_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CONNECTOR_NAME_MAX || s[0] == '_' || s[0] == '-' ||
	    strstr(s, "__") != NULL)
		return false;
	for (const char *c = s; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			return false;
	}
	return true;
}

bool
conn_env_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CONNECTOR_VAR_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (const char *c = s; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	}
	return true;
}

/* An HTTP field name: a token of RFC 9110. */
bool
conn_header_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CONNECTOR_VAR_NAME_MAX)
		return false;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("!#$%&'*+-.^_`|~", *c) != NULL))
			return false;
	}
	return true;
}

/* No control character but tab; at most max bytes. */
static bool
connector_text_valid(const char *s, size_t min, size_t max)
{
	size_t n = strlen(s);

	if (n < min || n > max)
		return false;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
			return false;
	}
	return true;
}

bool
connector_url_valid(const char *u)
{
	const char *host;

	if (!connector_text_valid(u, 1, CONNECTOR_URL_MAX) || strpbrk(u, " \t") != NULL)
		return false;
	if (strncasecmp(u, "http://", 7) == 0)
		host = u + 7;
	else if (strncasecmp(u, "https://", 8) == 0)
		host = u + 8;
	else
		return false;
	return *host != '\0' && *host != '/' && *host != '?' && *host != '#';
}

/* Checks a string map (env or headers) and copies it into out. */
static enum td_code
connector_map_valid(const cJSON *map, const char *field, bool headers, cJSON *out,
    struct problem *p)
{
	const cJSON *e;
	int n = 0;

	if (map == NULL || cJSON_IsNull(map))
		return TD_OK;
	if (!cJSON_IsObject(map))
		return problem_set(p, TD_INVALID_REQUEST, field, "%s must be an object of strings",
		    field);
	cJSON_ArrayForEach(e, map) {
		if (++n > (headers ? CONNECTOR_HEADERS_MAX : CONNECTOR_ENV_MAX))
			return problem_set(p, TD_INVALID_REQUEST, field, "%s has more than %d entries",
			    field, headers ? CONNECTOR_HEADERS_MAX : CONNECTOR_ENV_MAX);
		if (headers ? !conn_header_name_valid(e->string) : !conn_env_name_valid(e->string))
			return problem_set(p, TD_INVALID_REQUEST, field, headers ?
			    "%s: a header name is a token of at most %d characters" :
			    "%s: a variable name is letters, digits and _ (at most %d), "
			    "not starting with a digit", field, CONNECTOR_VAR_NAME_MAX);
		if (!cJSON_IsString(e) || !connector_text_valid(e->valuestring, 0, CONNECTOR_VALUE_MAX))
			return problem_set(p, TD_INVALID_REQUEST, field,
			    "%s: each value is a string of at most %d bytes without control "
			    "characters", field, CONNECTOR_VALUE_MAX);
		for (const cJSON *o = out->child; o != NULL; o = o->next) {
			if (headers ? strcasecmp(o->string, e->string) == 0 :
			    strcmp(o->string, e->string) == 0)
				return problem_set(p, TD_INVALID_REQUEST, field, "%s names %s twice",
				    field, e->string);
		}
		cJSON_AddStringToObject(out, e->string, e->valuestring);
	}
	return TD_OK;
}

#define CONNECTOR_PATHS_MAX 32

/* true when a and b are the same path or one holds the other. */
static bool
connector_paths_overlap(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;

	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/' || b[n] == '\0' ||
	    b[n] == '/');
}

/*
 * transport.paths of a stdio transport: [{"path": absolute, existing, "write": bool}],
 * stored as real paths.  None may hold or lie inside taskdeck's own directories.
 */
static enum td_code
connector_paths_valid(const cJSON *in, const struct td_paths *tp, cJSON *out, struct problem *p)
{
	static const char *const keys[] = { "path", "write", NULL };
	const char *const mine[] = { tp->config_dir, tp->data_dir, tp->runtime_dir };
	const cJSON *e;
	const char *bad;

	if (in == NULL || cJSON_IsNull(in))
		return TD_OK;
	if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) > CONNECTOR_PATHS_MAX)
		return problem_set(p, TD_INVALID_REQUEST, "transport.paths", "transport.paths must "
		    "be an array of at most %d {\"path\", \"write\"} objects", CONNECTOR_PATHS_MAX);
	cJSON_ArrayForEach(e, in) {
		const char *path = json_get_string(e, "path");
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "write");
		char real[PATH_MAX], mreal[PATH_MAX];
		cJSON *o;

		if (!cJSON_IsObject(e) || !json_only_keys(e, keys, &bad) || path == NULL ||
		    (w != NULL && !cJSON_IsBool(w)))
			return problem_set(p, TD_INVALID_REQUEST, "transport.paths", "each of "
			    "transport.paths is {\"path\": an absolute path, \"write\": true or false}");
		if (path[0] != '/' || !connector_text_valid(path, 1, PATH_MAX - 1))
			return problem_set(p, TD_INVALID_REQUEST, "transport.paths",
			    "%s is not an absolute path", path);
		if (realpath(path, real) == NULL)
			return problem_set(p, TD_INVALID_REQUEST, "transport.paths", "%s: %s", path,
			    strerror(errno));
		if (strcmp(real, "/") == 0)
			return problem_set(p, TD_INVALID_REQUEST, "transport.paths",
			    "/ cannot be given to a connector");
		for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
			if (mine[i] != NULL && (connector_paths_overlap(real, mine[i]) ||
			    (realpath(mine[i], mreal) != NULL && connector_paths_overlap(real, mreal))))
				return problem_set(p, TD_INVALID_REQUEST, "transport.paths",
				    "%s overlaps taskdeck's own directory %s", path, mine[i]);
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", real);
		cJSON_AddBoolToObject(o, "write", cJSON_IsTrue(w));
		cJSON_AddItemToArray(out, o);
	}
	return TD_OK;
}

/* Validates a transport and returns its stored form (every member present). */
static enum td_code
connector_transport_valid(const cJSON *t, const struct td_paths *tp, cJSON **out, struct problem *p)
{
	static const char *const stdio_keys[] = { "type", "command", "args", "env", "paths",
		NULL };
	static const char *const http_keys[] = { "type", "url", "headers", NULL };
	const char *type = json_get_string(t, "type"), *bad = NULL;
	cJSON *norm;
	enum td_code rc;

	*out = NULL;
	if (t == NULL)
		return problem_set(p, TD_INVALID_REQUEST, "transport", "transport is required");
	if (!cJSON_IsObject(t))
		return problem_set(p, TD_INVALID_REQUEST, "transport", "transport must be an object");
	if (type == NULL || (strcmp(type, "stdio") != 0 && strcmp(type, "http") != 0))
		return problem_set(p, TD_INVALID_REQUEST, "transport.type",
		    "transport.type must be stdio or http");
	norm = cJSON_CreateObject();
	cJSON_AddStringToObject(norm, "type", type);
	if (strcmp(type, "stdio") == 0) {
		const char *command = json_get_string(t, "command");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(t, "args"), *a;
		cJSON *nargs, *env;

		if (!json_only_keys(t, stdio_keys, &bad)) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, "transport",
			    "%s is not a member of a stdio transport", bad);
		}
		if (command == NULL || !connector_text_valid(command, 1, CONNECTOR_COMMAND_MAX)) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, "transport.command",
			    "transport.command must be a string of 1 to %d bytes without control "
			    "characters", CONNECTOR_COMMAND_MAX);
		}
		cJSON_AddStringToObject(norm, "command", command);
		nargs = cJSON_AddArrayToObject(norm, "args");
		if (args != NULL && !cJSON_IsNull(args) && (!cJSON_IsArray(args) ||
		    cJSON_GetArraySize(args) > CONNECTOR_ARGS_MAX)) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, "transport.args",
			    "transport.args must be an array of at most %d strings",
			    CONNECTOR_ARGS_MAX);
		}
		cJSON_ArrayForEach(a, (cJSON_IsArray(args) ? args : NULL)) {
			if (!cJSON_IsString(a) || !connector_text_valid(a->valuestring, 0, CONNECTOR_ARG_MAX)) {
				cJSON_Delete(norm);
				return problem_set(p, TD_INVALID_REQUEST, "transport.args",
				    "each argument is a string of at most %d bytes without control "
				    "characters", CONNECTOR_ARG_MAX);
			}
			cJSON_AddItemToArray(nargs, cJSON_CreateString(a->valuestring));
		}
		env = cJSON_AddObjectToObject(norm, "env");
		rc = connector_map_valid(cJSON_GetObjectItemCaseSensitive(t, "env"), "transport.env", false,
		    env, p);
		/* Kept out of the stored form when not given. */
		if (rc == TD_OK && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(t, "paths")))
			rc = connector_paths_valid(cJSON_GetObjectItemCaseSensitive(t, "paths"), tp,
			    cJSON_AddArrayToObject(norm, "paths"), p);
		else if (rc == TD_OK)
			rc = connector_paths_valid(cJSON_GetObjectItemCaseSensitive(t, "paths"), tp, NULL, p);
	} else {
		const char *url = json_get_string(t, "url");
		cJSON *headers;

		if (!json_only_keys(t, http_keys, &bad)) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, "transport",
			    "%s is not a member of an http transport", bad);
		}
		if (url == NULL || !connector_url_valid(url)) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, "transport.url",
			    "transport.url must be an http:// or https:// URL of at most %d bytes",
			    CONNECTOR_URL_MAX);
		}
		cJSON_AddStringToObject(norm, "url", url);
		headers = cJSON_AddObjectToObject(norm, "headers");
		rc = connector_map_valid(cJSON_GetObjectItemCaseSensitive(t, "headers"), "transport.headers",
		    true, headers, p);
	}
	if (rc != TD_OK) {
		cJSON_Delete(norm);
		return rc;
	}
	*out = norm;
	return TD_OK;
}

/*
 * Validates bindings against the stored transport; returns the stored form
 * (an array, possibly empty).  The credentials' existence is checked later,
 * inside the write's transaction.
 */
static enum td_code
connector_bindings_valid(const cJSON *b, const cJSON *transport, cJSON **out, struct problem *p)
{
	static const char *const keys[] = { "credentialId", "target", NULL };
	bool http = strcmp(json_get_string(transport, "type"), "http") == 0;
	const cJSON *plain = cJSON_GetObjectItemCaseSensitive(transport, http ? "headers" : "env");
	const char *f = "credentialBindings", *bad;
	const cJSON *e;
	cJSON *norm;

	*out = NULL;
	if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) > CONNECTOR_BINDINGS_MAX)
		return problem_set(p, TD_INVALID_REQUEST, f,
		    "credentialBindings must be an array of at most %d bindings or null",
		    CONNECTOR_BINDINGS_MAX);
	norm = cJSON_CreateArray();
	cJSON_ArrayForEach(e, b) {
		const char *cred = json_get_string(e, "credentialId");
		const char *target = json_get_string(e, "target");
		const char *name;
		bool env;

		if (!cJSON_IsObject(e) || !json_only_keys(e, keys, &bad) || cred == NULL ||
		    target == NULL || !id_valid(cred, "cred")) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, f, "each binding is "
			    "{\"credentialId\": \"cred_...\", \"target\": \"env:NAME\" or "
			    "\"header:NAME\"}");
		}
		env = strncmp(target, "env:", 4) == 0;
		if (!env && strncmp(target, "header:", 7) != 0) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, f,
			    "a target is env:NAME or header:NAME, not %.64s", target);
		}
		name = target + (env ? 4 : 7);
		if (env == http) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, f, http ?
			    "an http connector takes header: targets" :
			    "a stdio connector takes env: targets");
		}
		if (env ? !conn_env_name_valid(name) : !conn_header_name_valid(name)) {
			cJSON_Delete(norm);
			return problem_set(p, TD_INVALID_REQUEST, f, "%.64s is not a valid %s name",
			    name, env ? "variable" : "header");
		}
		for (const cJSON *o = norm->child; o != NULL; o = o->next) {
			const char *other = json_get_string(o, "target") + (env ? 4 : 7);
			if (env ? strcmp(other, name) == 0 : strcasecmp(other, name) == 0) {
				cJSON_Delete(norm);
				return problem_set(p, TD_INVALID_REQUEST, f, "two bindings target %.64s",
				    target);
			}
		}
		for (const cJSON *o = plain ? plain->child : NULL; o != NULL; o = o->next) {
			if (env ? strcmp(o->string, name) == 0 : strcasecmp(o->string, name) == 0) {
				cJSON_Delete(norm);
				return problem_set(p, TD_INVALID_REQUEST, f, "%.64s is set in the "
				    "transport too; set it in one place", target);
			}
		}
		cJSON *nb = cJSON_CreateObject();
		cJSON_AddStringToObject(nb, "credentialId", cred);
		cJSON_AddStringToObject(nb, "target", target);
		cJSON_AddItemToArray(norm, nb);
	}
	*out = norm;
	return TD_OK;
}

cJSON *
connectors_list(struct service *svc, const char *cursor, int limit, char next[TD_ID_MAX])
{
	struct store *st = svc->store;
	cJSON *arr = cJSON_CreateArray();
	struct resource_page pg;
	sqlite3_stmt *s;

	store_lock(st);
	s = store_stmt(st, "SELECT " CONNECTOR_COLUMNS " FROM connectors"
	    " WHERE ?1 IS NULL OR id < ?1 ORDER BY id DESC LIMIT ?2");
	resource_page_start(&pg, s, 1, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, connector_from_row(st, s));
	sqlite3_reset(s);
	store_unlock(st);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

cJSON *
connector_get(struct service *svc, const char *id)
{
	cJSON *c;

	store_lock(svc->store);
	c = connector_load_locked(svc->store, id);
	store_unlock(svc->store);
	return c;
}

/* True when another connector than id is called name.  Store locked. */
static bool
connector_name_taken(struct store *st, const char *name, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM connectors"
	    " WHERE name = ?1 COLLATE NOCASE AND id != ?2");
	bool taken;

	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
	taken = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	return taken;
}

static enum td_code
connector_fields_valid(const cJSON *body, const char *const *allowed, struct problem *p)
{
	const char *bad = NULL;

	for (const char *const *f = readonly_fields; *f; f++) {
		if (cJSON_GetObjectItemCaseSensitive(body, *f) != NULL)
			return problem_set(p, TD_INVALID_REQUEST, *f, "%s is read-only", *f);
	}
	if (!json_only_keys(body, allowed, &bad)) {
		if (strcmp(bad, "enabled") == 0)
			return problem_set(p, TD_INVALID_REQUEST, bad, "enable or disable a "
			    "connector with PUT /api/v1/connectors/:id/enabled");
		return problem_set(p, TD_INVALID_REQUEST, bad, "unknown field %.64s", bad);
	}
	return TD_OK;
}

static enum td_code
connector_body_name_valid(const cJSON *body, bool required, struct problem *p)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(body, "name");

	if (n == NULL && !required)
		return TD_OK;
	if (!cJSON_IsString(n) || !connector_name_valid(n->valuestring))
		return problem_set(p, TD_INVALID_REQUEST, "name", "name must be 1 to %d letters, "
		    "digits, - or _, starting with a letter or digit, without __",
		    CONNECTOR_NAME_MAX);
	return TD_OK;
}

/* Finishes a write: commit or roll back, load the result, emit. */
static enum td_code
connector_write_end(struct service *svc, const char *id, enum td_code rc, const char *action,
    cJSON **out, struct problem *p)
{
	return conn_write_end(svc, "connector", id, rc, action, out, p, connector_load_locked,
	    connector_emit);
}

static int
connectors_count(struct store *st)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT count(*) FROM connectors");
	int n = 0;

	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	return n;
}

enum td_code
connector_add(struct service *svc, const cJSON *body, cJSON **out, struct problem *p)
{
	struct store *st = svc->store;
	const cJSON *enabled = cJSON_GetObjectItemCaseSensitive(body, "enabled");
	const cJSON *bind = cJSON_GetObjectItemCaseSensitive(body, "credentialBindings");
	const char *name = json_get_string(body, "name");
	cJSON *transport = NULL, *bindings = NULL;
	char id[TD_ID_MAX];
	enum td_code rc;
	int64_t now = clock_wall_ms();

	*out = NULL;
	if ((rc = connector_fields_valid(body, add_fields, p)) != TD_OK ||
	    (rc = connector_body_name_valid(body, true, p)) != TD_OK)
		return rc;
	if (enabled != NULL && !cJSON_IsBool(enabled))
		return problem_set(p, TD_INVALID_REQUEST, "enabled", "enabled must be a boolean");
	if ((rc = connector_transport_valid(cJSON_GetObjectItemCaseSensitive(body, "transport"),
	    &svc->paths, &transport, p)) != TD_OK)
		return rc;
	if (bind == NULL || cJSON_IsNull(bind))
		bindings = cJSON_CreateArray();
	else if ((rc = connector_bindings_valid(bind, transport, &bindings, p)) != TD_OK) {
		cJSON_Delete(transport);
		return rc;
	}
	id_new("con", id);
	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		cJSON_Delete(transport);
		cJSON_Delete(bindings);
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the connector");
	}
	if (connector_name_taken(st, name, id))
		rc = problem_set(p, TD_INVALID_REQUEST, "name", "a connector named %s exists", name);
	else if (connectors_count(st) >= CONNECTORS_MAX)
		rc = problem_set(p, TD_INVALID_REQUEST, NULL, "there are %d connectors already; "
		    "remove one first", CONNECTORS_MAX);
	if (rc == TD_OK && !connector_rows_insert(st, id, name, cJSON_IsTrue(enabled), transport,
	    now))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the connector");
	if (rc == TD_OK)
		rc = connector_rows_bindings_store(st, id, bindings, p);
	cJSON_Delete(transport);
	cJSON_Delete(bindings);
	return connector_write_end(svc, id, rc, "created", out, p);
}

/* Loads id for a write, refusing built-ins; starts the transaction.  Store locked. */
static enum td_code
connector_custom_begin(struct store *st, const char *id, struct problem *p)
{
	sqlite3_stmt *s;
	enum td_code rc = TD_OK;

	if (!store_begin(st))
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot begin a write");
	s = store_stmt(st, "SELECT kind FROM connectors WHERE id = ?1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_ROW)
		rc = problem_set(p, TD_NOT_FOUND, "connector", "No connector with that id.");
	else if (strcmp(resource_text(s, 0), "builtin") == 0)
		rc = problem_set(p, TD_FORBIDDEN, NULL, "A built-in connector can be enabled or "
		    "disabled, not edited or removed.");
	sqlite3_reset(s);
	if (rc != TD_OK)
		store_rollback(st);
	return rc;
}

enum td_code
connector_update(struct service *svc, const char *id, const cJSON *body, cJSON **out,
    struct problem *p)
{
	struct store *st = svc->store;
	const cJSON *bind = cJSON_GetObjectItemCaseSensitive(body, "credentialBindings");
	const char *name = json_get_string(body, "name");
	cJSON *transport = NULL, *bindings = NULL, *kept = NULL;
	enum td_code rc;

	*out = NULL;
	if ((rc = connector_fields_valid(body, update_fields, p)) != TD_OK ||
	    (rc = connector_body_name_valid(body, false, p)) != TD_OK)
		return rc;
	if (cJSON_GetObjectItemCaseSensitive(body, "transport") == NULL)
		return problem_set(p, TD_INVALID_REQUEST, "transport",
		    "an update must include the transport");
	if ((rc = connector_transport_valid(cJSON_GetObjectItemCaseSensitive(body, "transport"),
	    &svc->paths, &transport, p)) != TD_OK)
		return rc;
	if (cJSON_IsNull(bind))
		bindings = cJSON_CreateArray();
	else if (bind != NULL && (rc = connector_bindings_valid(bind, transport, &bindings, p)) != TD_OK) {
		cJSON_Delete(transport);
		return rc;
	}
	store_lock(st);
	if ((rc = connector_custom_begin(st, id, p)) != TD_OK) {
		store_unlock(st);
		cJSON_Delete(transport);
		cJSON_Delete(bindings);
		return rc;
	}
	if (bindings == NULL) {
		/* Omitted: kept, but they must still fit the new transport. */
		kept = connector_bindings_load(st, id);
		rc = connector_bindings_valid(kept, transport, &bindings, p);
		if (rc != TD_OK)
			snprintf(p->message, sizeof p->message, "the kept credentialBindings do "
			    "not fit the new transport; send new ones or null");
		cJSON_Delete(kept);
	}
	if (rc == TD_OK && name != NULL && connector_name_taken(st, name, id))
		rc = problem_set(p, TD_INVALID_REQUEST, "name", "a connector named %s exists", name);
	if (rc == TD_OK && !connector_rows_update(st, id, name, transport))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the connector");
	if (rc == TD_OK)
		rc = connector_rows_bindings_store(st, id, bindings, p);
	cJSON_Delete(transport);
	cJSON_Delete(bindings);
	return connector_write_end(svc, id, rc, "updated", out, p);
}

enum td_code
connector_set_enabled(struct service *svc, const char *id, bool enabled, cJSON **out,
    struct problem *p)
{
	struct store *st = svc->store;
	enum td_code rc = TD_OK;
	int set;

	*out = NULL;
	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot begin a write");
	}
	set = connector_rows_set_enabled(st, id, enabled);
	if (set < 0)
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot store the connector");
	else if (set == 0)
		rc = problem_set(p, TD_NOT_FOUND, "connector", "No connector with that id.");
	return connector_write_end(svc, id, rc, enabled ? "enabled" : "disabled", out, p);
}

/* nftw: removes one entry of a state directory. */
static int
connector_state_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		log_warn("cannot remove %s: %s", path, strerror(errno));
	return 0;
}

char *
connector_state_dir(const struct service *svc, const char *id, bool make)
{
	char *dir;

	if (svc->paths.data_dir == NULL || id == NULL || strchr(id, '/') != NULL ||
	    id[0] == '.')
		return NULL;
	dir = xasprintf("%s/connector-state/%s", svc->paths.data_dir, id);
	if (make && !paths_mkdir_p(dir, 0700)) {
		log_warn("cannot make the state directory %s: %s", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

enum td_code
connector_delete(struct service *svc, const char *id, cJSON **removed, struct problem *p)
{
	struct store *st = svc->store;
	cJSON *c;
	enum td_code rc;

	if (removed != NULL)
		*removed = NULL;
	store_lock(st);
	if ((rc = connector_custom_begin(st, id, p)) != TD_OK) {
		store_unlock(st);
		return rc;
	}
	c = connector_load_locked(st, id);
	if (!connector_rows_delete(st, id))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot remove the connector");
	if (rc == TD_OK && !store_commit(st))
		rc = problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot remove the connector");
	else if (rc != TD_OK)
		store_rollback(st);
	if (rc == TD_OK && c != NULL)
		connector_emit(svc, c, "removed");
	store_unlock(st);
	if (rc == TD_OK && removed != NULL)
		*removed = c;
	else
		cJSON_Delete(c);
	return rc;
}

void
connector_state_remove(const struct service *svc, const char *id)
{
	char *dir = connector_state_dir(svc, id, false);

	if (dir != NULL)
		nftw(dir, connector_state_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}
