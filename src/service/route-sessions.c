/* Sessions and their configuration (docs/http-api.md, Sessions). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "frameworks.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "problem.h"
#include "resource.h"
#include "routes.h"
#include "runs.h"
#include "session-delete.h"
#include "sessions.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

void
route_sessions_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *project = http_query(req, "project");
	const char *cursor = http_query(req, "cursor");
	const char *archived = http_query(req, "archived");
	enum resource_archived which;
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (project == NULL || !td_id_valid(project, "prj") ||
	    (cursor != NULL && !td_id_valid(cursor, "ses"))) {
		return http_bad_parameter(r, project == NULL || !td_id_valid(project, "prj") ?
		    "project" : "cursor", "project must be a project id and cursor a session id");
	}
	if (!resource_archived_parse(archived, &which))
		return http_bad_parameter(r, "archived", "archived must be false, true or all");
	store_lock(st);
	arr = sessions_list(st, project, cursor, limit, which, next);
	store_unlock(st);
	if (arr == NULL) {
		http_not_found(r, "project", project);
		return;
	}
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/sessions?project=%s&limit=%d&cursor=%s%s%s", project,
		    limit, next, archived != NULL ? "&archived=" : "",
		    archived != NULL ? archived : "");
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
route_sessions_update(struct http_request *req, struct http_response *r)
{
	static const char *const body_fields[] = { "archived", NULL };
	struct store *st = req->svc->store;
	const cJSON *archived = cJSON_GetObjectItemCaseSensitive(req->json, "archived");
	const char *bad = NULL;
	cJSON *j = NULL;
	bool ok;

	if (!json_only_keys(req->json, body_fields, &bad)) {
		http_bad_field(r, bad, "unknown field %s", bad);
		return;
	}
	if (!cJSON_IsBool(archived)) {
		http_bad_field(r, "archived", "archived must be true or false");
		return;
	}
	store_lock(st);
	if (!sessions_exists(st, req->params[0])) {
		store_unlock(st);
		http_not_found(r, "session", req->params[0]);
		return;
	}
	ok = store_begin(st) && sessions_archive(st, req->params[0], cJSON_IsTrue(archived),
	    td_now_ms());
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		session_emit_updated(req->svc, req->params[0]);
		j = session_load(st, req->params[0]);
	}
	store_unlock(st);
	if (j == NULL)
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
	else
		http_json(r, 200, j);
}

/* How long DELETE ?force=true waits for the cancelled runs to end. */
#define DELETE_FORCE_WAIT_MS 15000
/* The runs of a session cancelled at most by one DELETE (more: 409 until they end). */
#define DELETE_FORCE_MAX 64

void
route_sessions_delete(struct http_request *req, struct http_response *r)
{
	struct service *svc = req->svc;
	const char *id = req->params[0], *force = http_query(req, "force");
	char ids[DELETE_FORCE_MAX][TD_ID_MAX], status[16];
	struct problem p = { 0 };
	long n;
	cJSON *j;

	if (force != NULL && strcmp(force, "true") != 0 && strcmp(force, "false") != 0)
		return http_bad_parameter(r, "force", "force must be true or false");
	n = session_delete_active(svc, id, ids, DELETE_FORCE_MAX);
	if (n < 0)
		return http_not_found(r, "session", id);
	if (n > 0 && force != NULL && strcmp(force, "true") == 0) {
		struct timespec tick = { 0, 50 * 1000 * 1000 };

		for (long i = 0; i < n && i < DELETE_FORCE_MAX; i++) {
			if (runs_request_cancel(svc, ids[i], status) &&
			    strcmp(status, "running") == 0)
				supervisor_cancel(svc->supervisor, ids[i]);
		}
		for (int waited = 0; waited < DELETE_FORCE_WAIT_MS && n > 0; waited += 50) {
			nanosleep(&tick, NULL);
			n = session_delete_active(svc, id, ids, DELETE_FORCE_MAX);
		}
	}
	j = session_delete(svc, id, &p);
	if (j == NULL)
		return http_problem(r, &p);
	http_json(r, 200, j);
}

void
route_session_config_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	long revision;
	cJSON *j;

	store_lock(st);
	j = sessions_config_load(st, req->params[0], &revision);
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
	struct problem p = { 0 };
	cJSON *current, *cfg, *item;
	long revision;
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
	if (!config_types_valid(patch, "patch", &p)) {
		http_problem(r, &p);
		return;
	}

	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	current = sessions_config_load(st, id, &revision);
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
	if (!config_usable(svc, cfg, &p)) {
		store_rollback(st);
		store_unlock(st);
		cJSON_Delete(cfg);
		http_problem(r, &p);
		return;
	}
	ok = sessions_config_store(st, id, cfg, td_now_ms());
	cJSON_Delete(cfg);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	current = ok ? sessions_config_load(st, id, &revision) : NULL;
	if (current != NULL)
		session_emit_updated(svc, id);
	store_unlock(st);
	if (current == NULL)
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
	else
		http_json(r, 200, current);
}
