/* Sessions and their configuration (docs/http-api.md, Sessions). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "frameworks.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "resource.h"
#include "routes.h"
#include "runs.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

const char *const config_fields[] = { "framework", "provider", "model", "effort", NULL };


/* The configuration resource of a session, or NULL.  *revision gets its revision. */
static cJSON *
config_load(struct store *st, const char *id, long *revision)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT config, config_revision, config_updated_at"
	    " FROM sessions WHERE id = ?1");
	cJSON *j = NULL;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *stored = resource_json_column(s, 0);

		*revision = (long)sqlite3_column_int64(s, 1);
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "sessionId", id);
		cJSON_AddNumberToObject(j, "revision", (double)*revision);
		for (const char *const *f = config_fields; *f; f++) {
			const char *v = json_get_string(stored, *f);
			cJSON_AddItemToObject(j, *f, v ? cJSON_CreateString(v) : cJSON_CreateNull());
		}
		resource_add_time(j, "updatedAt", sqlite3_column_int64(s, 2));
		cJSON_Delete(stored);
	}
	sqlite3_reset(s);
	return j;
}

bool
config_types_valid(const cJSON *cfg, const char *prefix, struct http_response *r)
{
	const char *bad = NULL;
	char field[64];

	if (!cJSON_IsObject(cfg)) {
		http_bad_field(r, prefix, "%s must be an object", prefix);
		return false;
	}
	if (!json_only_keys(cfg, config_fields, &bad)) {
		snprintf(field, sizeof field, "%s.%.40s", prefix, bad);
		http_bad_field(r, field, "unknown configuration member %s", bad);
		return false;
	}
	if (!json_check_enum(cfg, "framework", true, resource_frameworks)) {
		snprintf(field, sizeof field, "%s.framework", prefix);
		http_bad_field(r, field, "framework must be taskdeck, claude-code, codex or null");
		return false;
	}
	if (!json_check_enum(cfg, "effort", true, resource_efforts)) {
		snprintf(field, sizeof field, "%s.effort", prefix);
		http_bad_field(r, field, "effort must be low, medium, high or null");
		return false;
	}
	for (const char *const *f = (const char *const[]){ "provider", "model", NULL }; *f; f++) {
		if (!json_check_string(cfg, *f, false, true, 1, NAME_MAX_CHARS)) {
			snprintf(field, sizeof field, "%s.%s", prefix, *f);
			http_bad_field(r, field, "%s must be a string of 1 to %d characters or null",
			    *f, NAME_MAX_CHARS);
			return false;
		}
	}
	return true;
}

const char *
config_effective_model(const struct service *svc, const cJSON *cfg)
{
	const char *model = json_get_string(cfg, "model");
	const cJSON *provider = settings_provider(svc->settings, json_get_string(cfg, "provider"));

	return model ? model : json_get_string(provider, "defaultModel");
}

static void invalid_configuration(struct http_response *, const char *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* Answers 422 invalid_configuration naming field. */
static void
invalid_configuration(struct http_response *r, const char *field, const char *fmt, ...)
{
	cJSON *details = cJSON_CreateObject();
	char msg[512];
	va_list ap;

	cJSON_AddStringToObject(details, "field", field);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	http_error(r, TD_INVALID_CONFIGURATION, details, "%s", msg);
}

/* A replay model names a file: letters, digits, '.', '_' and '-', not starting with '.'. */
static bool
replay_model_installed(const struct service *svc, const char *model)
{
	size_t n = strlen(model);
	char *path;
	bool ok;

	if (n == 0 || model[0] == '.' || strspn(model, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._-") != n)
		return false;
	path = xasprintf("%s/%s.json", svc->replay_dir, model);
	ok = access(path, R_OK) == 0;
	free(path);
	return ok;
}

bool
config_usable(const struct service *svc, const cJSON *cfg, struct http_response *r)
{
	const char *framework = json_get_string(cfg, "framework");
	const char *provider = json_get_string(cfg, "provider");
	const cJSON *p;
	const char *model;

	if (provider == NULL) {
		invalid_configuration(r, "provider", "A provider is required.");
		return false;
	}
	if ((p = settings_provider(svc->settings, provider)) == NULL) {
		invalid_configuration(r, "provider", "The provider %s is not configured "
		    "(settings.json, providers).", provider);
		return false;
	}
	/* claude-code and codex: the provider kind the CLI speaks, and a ready runtime. */
	if (frameworks_external(framework))
		return frameworks_config_usable(svc, cfg, json_get_string(p, "kind"), r);
	model = config_effective_model(svc, cfg);
	if (strcmp(json_get_string(p, "kind"), "replay") == 0 &&
	    !replay_model_installed(svc, model)) {
		invalid_configuration(r, "model", "No replay transcript is installed for "
		    "the model %s.", model);
		return false;
	}
	return true;
}

void
route_sessions_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *project = http_query(req, "project");
	const char *cursor = http_query(req, "cursor");
	struct resource_page pg;
	sqlite3_stmt *s;
	int limit;
	bool known;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (project == NULL || !td_id_valid(project, "prj") ||
	    (cursor != NULL && !td_id_valid(cursor, "ses"))) {
		return http_bad_parameter(r, project == NULL || !td_id_valid(project, "prj") ?
		    "project" : "cursor", "project must be a project id and cursor a session id");
	}
	arr = cJSON_CreateArray();
	store_lock(st);
	s = store_stmt(st, "SELECT 1 FROM projects WHERE id = ?1");
	sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
	known = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	s = store_stmt(st, SESSION_SELECT " WHERE s.project_id = ?1"
	    " AND (?2 IS NULL OR s.id < ?2) ORDER BY s.id DESC LIMIT ?3");
	sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
	resource_page_start(&pg, s, 2, cursor, limit);
	while (known && resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, session_from_row(s));
	sqlite3_reset(s);
	store_unlock(st);
	if (!known) {
		cJSON_Delete(arr);
		http_not_found(r, "project", project);
		return;
	}
	if (pg.next[0] != '\0')
		http_link_next(r, "/api/v1/sessions?project=%s&limit=%d&cursor=%s", project,
		    limit, pg.next);
	http_json(r, 200, arr);
}

void
route_sessions_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	cJSON *j;

	store_lock(st);
	j = session_load(st, req->params[0]);
	store_unlock(st);
	http_json_found(r, j, "session", req->params[0]);
}

void
route_session_config_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	long revision;
	cJSON *j;

	store_lock(st);
	j = config_load(st, req->params[0], &revision);
	store_unlock(st);
	http_json_found(r, j, "session", req->params[0]);
}

/* Answers 409 stale_write with the current configuration (consumed). */
static void
config_stale(struct http_response *r, cJSON *current, long expected)
{
	cJSON *details = cJSON_CreateObject();

	cJSON_AddItemToObject(details, "current", current);
	http_error(r, TD_STALE_WRITE, details, "The configuration is no longer at revision "
	    "%ld; re-read it and write again.", expected);
}

void
route_session_config_update(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "expectedRevision", "patch", NULL };
	struct service *svc = req->svc;
	struct store *st = svc->store;
	const char *id = req->params[0], *bad = NULL;
	const cJSON *patch = cJSON_GetObjectItemCaseSensitive(req->json, "patch");
	const cJSON *expected = cJSON_GetObjectItemCaseSensitive(req->json, "expectedRevision");
	cJSON *current, *cfg, *item;
	long revision;
	sqlite3_stmt *s;
	bool ok;

	if (!json_only_keys(req->json, body_fields, &bad)) {
		http_bad_field(r, bad, "unknown field %s", bad);
		return;
	}
	if (!json_check_int(req->json, "expectedRevision", 1, 1e15) || expected == NULL) {
		http_bad_field(r, "expectedRevision",
		    "expectedRevision must be the revision you read (an integer from 1)");
		return;
	}
	if (patch == NULL) {
		http_bad_field(r, "patch", "patch must be an object");
		return;
	}
	if (!config_types_valid(patch, "patch", r))
		return;

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	current = config_load(st, id, &revision);
	if (current == NULL || revision != (long)expected->valuedouble) {
		store_rollback(st);
		store_unlock(st);
		if (current == NULL)
			http_not_found(r, "session", id);
		else
			config_stale(r, current, (long)expected->valuedouble);
		return;
	}
	/* An omitted key is kept; null clears it. */
	cfg = cJSON_CreateObject();
	for (const char *const *f = config_fields; *f; f++) {
		item = cJSON_GetObjectItemCaseSensitive(patch, *f);
		if (item == NULL)
			item = cJSON_GetObjectItemCaseSensitive(current, *f);
		if (cJSON_IsString(item))
			cJSON_AddStringToObject(cfg, *f, item->valuestring);
	}
	cJSON_Delete(current);
	if (!config_usable(svc, cfg, r)) {
		store_rollback(st);
		store_unlock(st);
		cJSON_Delete(cfg);
		return;
	}
	s = store_stmt(st, "UPDATE sessions SET config = ?2, config_revision = config_revision + 1,"
	    " config_updated_at = MAX(?3, config_updated_at + 1),"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, json_print(cfg), -1, free);
	sqlite3_bind_int64(s, 3, td_now_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	cJSON_Delete(cfg);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	current = ok ? config_load(st, id, &revision) : NULL;
	if (current != NULL)
		session_emit_updated(svc, id);
	store_unlock(st);
	if (current == NULL)
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
	else
		http_json(r, 200, current);
}
