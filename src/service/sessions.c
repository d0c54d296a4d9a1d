/*
 * The session domain (sessions.h): the only writer of the sessions table,
 * a session as the API shows it, and the rules of a session configuration.
 * Below the supervisor and the HTTP routes; above the store.
 */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "frameworks.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "paths.h"
#include "problem.h"
#include "resource.h"
#include "routing.h"
#include "service.h"
#include "sessions.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define TITLE_MAX_CHARS 80

const char *const config_fields[] = { "framework", "provider", "model", "effort", NULL };

cJSON *
session_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "projectId", resource_text(s, 1));
	cJSON_AddStringToObject(j, "title", resource_text(s, 2));
	cJSON_AddStringToObject(j, "cwd", resource_text(s, 3));
	cJSON_AddStringToObject(j, "workspace", resource_text(s, 4));
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 5));
	resource_add_time(j, "updatedAt", sqlite3_column_int64(s, 6));
	if (sqlite3_column_type(s, 7) == SQLITE_NULL) {
		cJSON_AddNullToObject(j, "lastRun");
	} else {
		cJSON *last = cJSON_AddObjectToObject(j, "lastRun");
		cJSON_AddStringToObject(last, "id", resource_text(s, 7));
		cJSON_AddStringToObject(last, "status", resource_text(s, 8));
	}
	resource_add_time_or_null(j, "archivedAt", s, 9);
	if (sqlite3_column_type(s, 10) != SQLITE_NULL)
		cJSON_AddBoolToObject(j, "deleting", true);
	return j;
}

cJSON *
session_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, SESSION_SELECT " WHERE s.id = ?1"), id,
	    session_from_row);
}

bool
session_touch(struct store *st, const char *session_id, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE sessions SET updated_at = "
	    RESOURCE_NEXT_TIME(2) " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
sessions_exists(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM sessions WHERE id = ?1");
	bool found;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	return found;
}

cJSON *
sessions_external_cwds(struct store *st, int max)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT id, cwd FROM sessions WHERE"
	    " workspace = 'external' AND archived_at IS NULL ORDER BY id DESC LIMIT ?1");
	cJSON *out = cJSON_CreateArray();

	sqlite3_bind_int(s, 1, max);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *one = cJSON_CreateObject();

		cJSON_AddStringToObject(one, "id", resource_text(s, 0));
		cJSON_AddStringToObject(one, "cwd", resource_text(s, 1));
		cJSON_AddItemToArray(out, one);
	}
	sqlite3_reset(s);
	return out;
}

cJSON *
sessions_list(struct store *st, const char *project, const char *cursor, int limit,
    enum resource_archived which, char *next)
{
	struct resource_page pg;
	sqlite3_stmt *s;
	bool known;
	cJSON *arr;

	s = store_stmt(st, "SELECT 1 FROM projects WHERE id = ?1");
	sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
	known = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	if (!known)
		return NULL;
	arr = cJSON_CreateArray();
	s = store_stmt(st, SESSION_SELECT " WHERE s.project_id = ?1"
	    " AND (?2 IS NULL OR s.id < ?2) AND " RESOURCE_ARCHIVED_WHERE("s.archived_at", 4)
	    " ORDER BY s.id DESC LIMIT ?3");
	sqlite3_bind_text(s, 1, project, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 4, (int)which);
	resource_page_start(&pg, s, 2, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, session_from_row(s));
	sqlite3_reset(s);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

bool
sessions_archive(struct store *st, const char *id, bool archived, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE sessions SET archived_at = CASE WHEN ?3"
	    " THEN COALESCE(archived_at, ?2) END, updated_at = " RESOURCE_NEXT_TIME(2)
	    " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	sqlite3_bind_int(s, 3, archived);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
sessions_mark_deleting(struct store *st, const char *id, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE sessions SET deleting_at ="
	    " COALESCE(deleting_at, ?2) WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

size_t
sessions_deleting(struct store *st, char (*ids)[TD_ID_MAX], size_t max)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT id FROM sessions WHERE deleting_at IS NOT NULL"
	    " ORDER BY deleting_at, id LIMIT ?1");
	size_t n = 0;

	sqlite3_bind_int64(s, 1, (sqlite3_int64)max);
	while (n < max && sqlite3_step(s) == SQLITE_ROW)
		snprintf(ids[n++], TD_ID_MAX, "%s", resource_text(s, 0));
	sqlite3_reset(s);
	return n;
}

bool
sessions_is_deleting(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM sessions WHERE id = ?1"
	    " AND deleting_at IS NOT NULL");
	bool found;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	return found;
}

void
session_emit_updated_locked(struct service *svc, const char *id)
{
	cJSON *j = session_load(svc->store, id);

	if (j != NULL)
		events_emit(svc->events, "session.updated", json_get_string(j, "projectId"),
		    id, NULL, j);
}

/* The first line of the prompt, cut to TITLE_MAX_CHARS characters. */
static char *
sessions_title(const char *prompt)
{
	size_t i = 0, chars = 0;

	while (prompt[i] != '\0' && prompt[i] != '\n' && prompt[i] != '\r' &&
	    chars < TITLE_MAX_CHARS) {
		i++;
		while (((unsigned char)prompt[i] & 0xC0) == 0x80)
			i++;
		chars++;
	}
	return strndup(prompt, i);
}

bool
sessions_create(struct store *st, const char *id, const char *project, const char *prompt,
    const char *cwd, bool managed, const cJSON *cfg, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO sessions (id, project_id, title, cwd,"
	    " workspace, config, config_revision, config_updated_at, created_at, updated_at)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7, ?7)");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, project, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, sessions_title(prompt), -1, free);
	sqlite3_bind_text(s, 4, cwd, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, managed ? "managed" : "external", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, json_print(cfg), -1, free);
	sqlite3_bind_int64(s, 7, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

/* The configuration resource of a session, or NULL.  *revision gets its revision. */
cJSON *
sessions_config_load(struct store *st, const char *id, long *revision)
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
sessions_config_store(struct store *st, const char *id, const cJSON *cfg, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE sessions SET config = ?2,"
	    " config_revision = config_revision + 1,"
	    " config_updated_at = MAX(?3, config_updated_at + 1),"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, json_print(cfg), -1, free);
	sqlite3_bind_int64(s, 3, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
config_types_valid(const cJSON *cfg, const char *prefix, struct problem *p)
{
	const char *bad = NULL;
	char field[64];

	if (!cJSON_IsObject(cfg)) {
		problem_set(p, TD_INVALID_REQUEST, prefix, "%s must be an object", prefix);
		return false;
	}
	if (!json_only_keys(cfg, config_fields, &bad)) {
		snprintf(field, sizeof field, "%s.%.40s", prefix, bad);
		problem_set(p, TD_INVALID_REQUEST, field, "unknown configuration member %s", bad);
		return false;
	}
	if (!json_check_enum(cfg, "framework", true, resource_frameworks)) {
		snprintf(field, sizeof field, "%s.framework", prefix);
		problem_set(p, TD_INVALID_REQUEST, field, "framework must be taskdeck, claude-code, codex, acp or null");
		return false;
	}
	if (!json_check_enum(cfg, "effort", true, resource_efforts)) {
		snprintf(field, sizeof field, "%s.effort", prefix);
		problem_set(p, TD_INVALID_REQUEST, field, "effort must be low, medium, high or null");
		return false;
	}
	for (const char *const *f = (const char *const[]){ "provider", "model", NULL }; *f; f++) {
		if (!json_check_string(cfg, *f, false, true, 1, NAME_MAX_CHARS)) {
			snprintf(field, sizeof field, "%s.%s", prefix, *f);
			problem_set(p, TD_INVALID_REQUEST, field, "%s must be a string of 1 to %d characters or null",
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
config_usable(const struct service *svc, const cJSON *cfg, struct problem *pr)
{
	const char *framework = json_get_string(cfg, "framework");
	const char *provider = json_get_string(cfg, "provider");
	const cJSON *p;
	const char *model;

	if (provider == NULL) {
		problem_set(pr, TD_INVALID_CONFIGURATION, "provider", "A provider is required.");
		return false;
	}
	if ((p = settings_provider(svc->settings, provider)) == NULL) {
		problem_set(pr, TD_INVALID_CONFIGURATION, "provider", "The provider %s is not configured "
		    "(settings.json, providers).", provider);
		return false;
	}
	/* claude-code and codex: the provider kind the CLI speaks, and a ready runtime. */
	if (frameworks_external(framework))
		return frameworks_config_usable(svc, cfg, json_get_string(p, "kind"), pr);
	model = config_effective_model(svc, cfg);
	if (strcmp(json_get_string(p, "kind"), "replay") == 0 &&
	    !replay_model_installed(svc, model)) {
		problem_set(pr, TD_INVALID_CONFIGURATION, "model", "No replay transcript is installed for "
		    "the model %s.", model);
		return false;
	}
	return true;
}

/*
 * A configuration without a framework gets the global default, the agent
 * routing's framework (taskdeck when it has none).  Only while the store is
 * locked.
 */
static void
sessions_default_framework(struct service *svc, cJSON *cfg)
{
	int64_t at;
	cJSON *routing = routing_load(svc->store, &at);
	const char *f = json_get_string(routing, "framework");

	cJSON_AddStringToObject(cfg, "framework", f != NULL ? f : "taskdeck");
	cJSON_Delete(routing);
}

/*
 * The configuration of a new session, member by member: the request, the
 * project defaults, the application defaults, the provider default.
 */
cJSON *
config_for_new_session(struct service *svc, const cJSON *request, const cJSON *project_defaults)
{
	const cJSON *layers[3] = { request, project_defaults, settings_defaults(svc->settings) };
	cJSON *cfg = cJSON_CreateObject();
	const char *model;

	for (const char *const *f = config_fields; *f; f++) {
		for (int i = 0; i < 3; i++) {
			const char *v = json_get_string(layers[i], *f);
			if (v != NULL) {
				cJSON_AddStringToObject(cfg, *f, v);
				break;
			}
		}
	}
	if (json_get_string(cfg, "model") == NULL &&
	    (model = config_effective_model(svc, cfg)) != NULL)
		cJSON_AddStringToObject(cfg, "model", model);
	if (json_get_string(cfg, "framework") == NULL)
		sessions_default_framework(svc, cfg);
	if (json_get_string(cfg, "effort") == NULL)
		cJSON_AddStringToObject(cfg, "effort", "medium");
	return cfg;
}

/* The run's configuration: the session's, with cleared members at their defaults. */
cJSON *
config_for_run(struct service *svc, const cJSON *session_cfg)
{
	cJSON *cfg = cJSON_Duplicate(session_cfg, true);
	const char *model = config_effective_model(svc, cfg);

	for (const char *const *f = config_fields; *f; f++) {
		if (json_get_string(cfg, *f) == NULL)
			cJSON_DeleteItemFromObjectCaseSensitive(cfg, *f);
	}
	if (json_get_string(cfg, "framework") == NULL)
		sessions_default_framework(svc, cfg);
	if (json_get_string(cfg, "model") == NULL && model != NULL)
		cJSON_AddStringToObject(cfg, "model", model);
	if (json_get_string(cfg, "effort") == NULL)
		cJSON_AddStringToObject(cfg, "effort", "medium");
	return cfg;
}

bool
sessions_delete(struct store *st, const char *id)
{
	return store_exec_text(st, "DELETE FROM sessions WHERE id = ?1", id);
}

cJSON *
sessions_archive_request(struct service *svc, const char *id, bool archived, struct problem *p)
{
	struct store *st = svc->store;
	cJSON *j = NULL;
	bool ok;

	store_lock(st);
	if (!sessions_exists(st, id)) {
		store_unlock(st);
		problem_not_found(p, "session", id);
		return NULL;
	}
	ok = store_begin(st) && sessions_archive(st, id, archived, clock_wall_ms());
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		session_emit_updated_locked(svc, id);
		j = session_load(st, id);
	}
	store_unlock(st);
	if (j == NULL)
		problem_set(p, TD_INTERNAL_ERROR, NULL, "%s",
		    errcode_default_message(TD_INTERNAL_ERROR));
	return j;
}

/* The configuration patch makes of current: an omitted key is kept, null clears it. */
static cJSON *
sessions_config_merge(const cJSON *current, const cJSON *patch)
{
	cJSON *cfg = cJSON_CreateObject(), *item;

	for (const char *const *f = config_fields; *f; f++) {
		item = cJSON_GetObjectItemCaseSensitive(patch, *f);
		if (item == NULL)
			item = cJSON_GetObjectItemCaseSensitive(current, *f);
		if (cJSON_IsString(item))
			cJSON_AddStringToObject(cfg, *f, item->valuestring);
	}
	return cfg;
}

/* Whether current (consumed) is at revision expected; else not_found or stale_write. */
static bool
sessions_config_current(const char *id, cJSON *current, long revision, long expected,
    struct problem *p)
{
	if (current == NULL) {
		problem_not_found(p, "session", id);
		return false;
	}
	if (revision != expected) {
		p->details = cJSON_CreateObject();
		cJSON_AddItemToObject(p->details, "current", current);
		problem_set(p, TD_STALE_WRITE, NULL, "The configuration is no longer at revision "
		    "%ld; re-read it and write again.", expected);
		return false;
	}
	cJSON_Delete(current);
	return true;
}

cJSON *
sessions_config_update(struct service *svc, const char *id, long expected, const cJSON *patch,
    struct problem *p)
{
	struct store *st = svc->store;
	cJSON *current, *cfg = NULL;
	long revision;
	bool ok;

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		problem_set(p, TD_INTERNAL_ERROR, NULL, "%s",
		    errcode_default_message(TD_INTERNAL_ERROR));
		return NULL;
	}
	current = sessions_config_load(st, id, &revision);
	if (current != NULL)
		cfg = sessions_config_merge(current, patch);
	ok = sessions_config_current(id, current, revision, expected, p) &&
	    config_usable(svc, cfg, p);
	if (!ok) {
		store_rollback(st);
		store_unlock(st);
		cJSON_Delete(cfg);
		return NULL;
	}
	ok = sessions_config_store(st, id, cfg, clock_wall_ms());
	cJSON_Delete(cfg);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	current = ok ? sessions_config_load(st, id, &revision) : NULL;
	if (current != NULL)
		session_emit_updated_locked(svc, id);
	store_unlock(st);
	if (current == NULL)
		problem_set(p, TD_INTERNAL_ERROR, NULL, "%s",
		    errcode_default_message(TD_INTERNAL_ERROR));
	return current;
}

/*
 * Why a canonical cwd is taskdeck's own (the sandbox hides those, docs/agent.md):
 * "filesystem-root", "session-workspace" (a managed workspace of a session),
 * "taskdeck-directory"; NULL when it is not.
 */
static const char *
sessions_cwd_forbidden(const struct td_paths *p, const char *cwd)
{
	if (strcmp(cwd, "/") == 0)
		return "filesystem-root";
	if (paths_within(cwd, p->workspaces))
		return "session-workspace";
	if (paths_within(cwd, p->config_dir) || paths_within(cwd, p->data_dir) ||
	    paths_within(cwd, p->runtime_dir))
		return "taskdeck-directory";
	return NULL;
}

/* Refuses cwd with invalid_cwd: not usable for reason (details.reason); rule says why. */
static bool
sessions_cwd_refused(struct problem *p, const char *cwd, const char *reason, const char *rule)
{
	p->details = cJSON_CreateObject();
	cJSON_AddStringToObject(p->details, "reason", reason);
	problem_set(p, TD_INVALID_CWD, "cwd", "The working directory %s is not usable (%s): %s",
	    cwd, reason, rule);
	return false;
}

/*
 * Canonicalizes a requested cwd into out (PATH_MAX bytes).  paths NULL: no
 * check of taskdeck's own directories (a continued session's cwd must equal
 * its recorded one anyway).
 */
bool
sessions_cwd_resolve(const struct td_paths *paths, const char *cwd, char *out, struct problem *p)
{
	const char *reason = NULL;
	struct stat sb;

	if (cwd[0] != '/')
		reason = "not-absolute";
	else if (strlen(cwd) >= PATH_MAX)
		reason = "too-long";
	else if (realpath(cwd, out) == NULL)
		reason = errno == ENOTDIR ? "not-a-directory" : errno == EACCES ?
		    "not-readable" : "not-found";
	else if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode))
		reason = "not-a-directory";
	else if (access(out, R_OK | X_OK) != 0)
		reason = "not-readable";
	else if (access(out, W_OK) != 0)
		reason = "not-writable";
	else if (paths != NULL && (reason = sessions_cwd_forbidden(paths, out)) != NULL)
		return sessions_cwd_refused(p, cwd, reason, "commands cannot work in /, in taskdeck's "
		    "own directories or in another session's workspace.");
	if (reason == NULL)
		return true;
	return sessions_cwd_refused(p, cwd, reason, "it must be an absolute path to an existing "
	    "directory that the service can read and write.");
}
