#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

/* Frees the members of a session. */
static void
session_clear(struct td_session *s)
{
	free(s->id);
	free(s->project_id);
	free(s->title);
	free(s->cwd);
	free(s->workspace);
	free(s->created_at);
	free(s->updated_at);
	free(s->last_run.id);
	free(s->last_run.status);
	free(s->json);
	free(s->archived_at);
	memset(s, 0, sizeof *s);
}

void
td_session_free(struct td_session *s)
{
	if (s == NULL)
		return;
	session_clear(s);
	free(s);
}

/* Fills s from one session object; raw is its text when known. */
static bool
session_from_json(struct td_session *s, const cJSON *obj, const char *raw)
{
	const cJSON *last = cJSON_GetObjectItemCaseSensitive(obj, "lastRun");

	if (json_get_string(obj, "id") == NULL)
		return false;
	s->id = client_string(obj, "id");
	s->project_id = client_string(obj, "projectId");
	s->title = client_string_or(obj, "title", "");
	s->cwd = client_string(obj, "cwd");
	s->workspace = client_string(obj, "workspace");
	s->created_at = client_string(obj, "createdAt");
	s->updated_at = client_string(obj, "updatedAt");
	s->last_run.id = client_string(last, "id");
	s->last_run.status = client_string(last, "status");
	s->archived_at = client_string(obj, "archivedAt");
	s->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(session, "session");

void
td_session_list_free(struct td_session_list *list)
{
	CLIENT_LIST_FREE(&session_kind, list);
}

enum td_code
td_list_sessions(struct td_client *c, const char *project_id, long limit,
    const char *cursor, const struct td_request_options *opts,
    struct td_session_list **out, struct td_error *err)
{
	return td_list_sessions_archived(c, project_id, TD_ARCHIVED_HIDE, limit, cursor, opts,
	    out, err);
}

enum td_code
td_archive_session(struct td_client *c, const char *session_id, bool archived,
    const struct td_request_options *opts, struct td_session **out, struct td_error *err)
{
	enum td_code rc;
	char *path;
	void *s;

	*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	path = client_item_path("sessions", session_id, "");
	rc = client_call_item(c, "PATCH", path, archived ? "{\"archived\":true}" :
	    "{\"archived\":false}", opts, &session_kind, &s, err);
	free(path);
	*out = s;
	return rc;
}

enum td_code
td_list_sessions_archived(struct td_client *c, const char *project_id,
    enum td_archived which, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_session_list **out,
    struct td_error *err)
{
	const char *const *archived = client_archived_query(which);
	struct client_page page;
	enum td_code rc;

	*out = NULL;
	if (project_id == NULL || *project_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	rc = client_list(c, "/api/v1/sessions", limit, cursor,
	    (const char *const[]){ "project", project_id,
	    archived != NULL ? archived[0] : NULL, archived != NULL ? archived[1] : NULL,
	    NULL }, opts, &session_kind, &page, err);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

enum td_code
td_get_session(struct td_client *c, const char *session_id,
    const struct td_request_options *opts, struct td_session **out,
    struct td_error *err)
{
	enum td_code rc;
	void *s;
	char *path;

	*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	path = client_item_path("sessions", session_id, "");
	rc = client_call_item(c, "GET", path, NULL, opts, &session_kind, &s, err);
	free(path);
	*out = s;
	return rc;
}

void
td_session_config_free(struct td_session_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->session_id);
	free(cfg->framework);
	free(cfg->provider);
	free(cfg->model);
	free(cfg->effort);
	free(cfg->updated_at);
	free(cfg->json);
	free(cfg);
}

/* Sends a request whose answer is a session's configuration. */
static enum td_code
config_call(struct td_client *c, const char *method, const char *session_id,
    const char *body, const struct td_request_options *opts,
    struct td_session_config **out, struct td_error *err)
{
	struct client_response resp;
	struct td_session_config *cfg;
	const cJSON *revision;
	enum td_code rc;
	char *path;

	path = client_item_path("sessions", session_id, "/config");
	rc = client_call(c, method, path, body, false, opts, &resp, err);
	free(path);
	revision = cJSON_GetObjectItemCaseSensitive(resp.json, "revision");
	if (rc == TD_OK && !cJSON_IsNumber(revision))
		rc = client_malformed(&resp, "session configuration", err);
	if (rc == TD_OK) {
		cfg = xcalloc(1, sizeof *cfg);
		cfg->session_id = client_string_or(resp.json, "sessionId", session_id);
		cfg->revision = (long)revision->valuedouble;
		cfg->framework = client_string(resp.json, "framework");
		cfg->provider = client_string(resp.json, "provider");
		cfg->model = client_string(resp.json, "model");
		cfg->effort = client_string(resp.json, "effort");
		cfg->updated_at = client_string(resp.json, "updatedAt");
		cfg->json = buf_steal(&resp.body);
		*out = cfg;
	}
	client_response_free(&resp);
	return rc;
}

enum td_code
td_get_session_config(struct td_client *c, const char *session_id,
    const struct td_request_options *opts, struct td_session_config **out,
    struct td_error *err)
{
	*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	return config_call(c, "GET", session_id, NULL, opts, out, err);
}

enum td_code
td_update_session_config(struct td_client *c, const char *session_id,
    long expected_revision, const char *patch_json,
    const struct td_request_options *opts, struct td_session_config **out,
    struct td_error *err)
{
	cJSON *body, *patch;
	enum td_code rc;
	char *text;

	*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	if (expected_revision < 1) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "expected_revision is the revision last read (1 or more)");
	}
	patch = client_parse_object(patch_json, "the configuration patch", err);
	if (patch == NULL)
		return TD_INVALID_ARGUMENT;
	body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "expectedRevision", (double)expected_revision);
	cJSON_AddItemToObject(body, "patch", patch);
	text = json_print(body);
	cJSON_Delete(body);
	rc = config_call(c, "PATCH", session_id, text, opts, out, err);
	free(text);
	return rc;
}

/* The strings of the array member key of obj, NULL-terminated. */
static char **
string_array(const cJSON *obj, const char *key)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key), *item;
	char **v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *v);
	size_t n = 0;

	cJSON_ArrayForEach(item, arr) {
		if (cJSON_IsString(item))
			v[n++] = xstrdup(item->valuestring);
	}
	return v;
}

static void
sessions_strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

void
td_session_deleted_free(struct td_session_deleted *d)
{
	if (d == NULL)
		return;
	free(d->id);
	sessions_strv_free(d->removed);
	sessions_strv_free(d->kept);
	sessions_strv_free(d->cancelled);
	free(d);
}

enum td_code
td_delete_session(struct td_client *c, const char *session_id, bool force,
    const struct td_request_options *opts, struct td_session_deleted **out,
    struct td_error *err)
{
	struct client_response resp;
	struct td_session_deleted *d;
	enum td_code rc;
	char *path;

	if (out != NULL)
		*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	path = client_item_path("sessions", session_id, force ? "?force=true" : "");
	rc = client_call(c, "DELETE", path, NULL, false, opts, &resp, err);
	free(path);
	if (rc == TD_OK && out != NULL) {
		const cJSON *runs = cJSON_GetObjectItemCaseSensitive(resp.json, "runs");

		d = xcalloc(1, sizeof *d);
		d->id = xstrdup(session_id);
		d->runs = cJSON_IsNumber(runs) ? (long)runs->valuedouble : 0;
		d->removed = string_array(resp.json, "removed");
		d->kept = string_array(resp.json, "kept");
		d->deleting = resp.status == 202 &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp.json, "deleting"));
		d->cancelled = string_array(resp.json, "cancelled");
		*out = d;
	}
	client_response_free(&resp);
	return rc;
}

/* Zeroes every string of j (it may hold a connector's values) before it is freed. */
static void
session_json_wipe(cJSON *j)
{
	for (; j != NULL; j = j->next) {
		if (j->valuestring != NULL)
			explicit_bzero(j->valuestring, strlen(j->valuestring));
		session_json_wipe(j->child);
	}
}

/* Adds connectors_json (an array) to body as "connectors"; false with err when it is none. */
static bool
session_add_connectors(cJSON *body, const char *connectors_json, struct td_error *err)
{
	cJSON *list;

	if (connectors_json == NULL)
		return true;
	list = cJSON_Parse(connectors_json);
	if (!cJSON_IsArray(list)) {
		session_json_wipe(list);
		cJSON_Delete(list);
		client_fail(err, TD_INVALID_ARGUMENT, "connectors_json must be a JSON array");
		return false;
	}
	cJSON_AddItemToObject(body, "connectors", list);
	return true;
}

/* The body's text, and body wiped and freed. */
static char *
session_body_text(cJSON *body)
{
	char *text = json_print(body);

	session_json_wipe(body->child);
	cJSON_Delete(body);
	return text;
}

static void
session_body_free(char *text)
{
	if (text != NULL)
		explicit_bzero(text, strlen(text));
	free(text);
}

enum td_code
td_create_session(struct td_client *c, const struct td_new_session *rq,
    const struct td_request_options *opts, struct td_session **out, struct td_error *err)
{
	cJSON *body, *config = NULL;
	enum td_code rc;
	char *text;
	void *s;

	*out = NULL;
	if (rq == NULL || rq->project == NULL || *rq->project == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "project", rq->project);
	if (rq->title != NULL)
		cJSON_AddStringToObject(body, "title", rq->title);
	if (rq->cwd != NULL)
		cJSON_AddStringToObject(body, "cwd", rq->cwd);
	const char *const names[] = { "framework", "provider", "model", "effort" };
	const char *const values[] = { rq->framework, rq->provider, rq->model, rq->effort };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (values[i] == NULL)
			continue;
		if (config == NULL)
			config = cJSON_AddObjectToObject(body, "config");
		cJSON_AddStringToObject(config, names[i], values[i]);
	}
	if (!session_add_connectors(body, rq->connectors_json, err)) {
		cJSON_Delete(body);
		return TD_INVALID_ARGUMENT;
	}
	text = session_body_text(body);
	rc = client_call_item(c, "POST", "/api/v1/sessions", text, opts, &session_kind, &s, err);
	session_body_free(text);
	*out = s;
	return rc;
}

enum td_code
td_set_session_connectors(struct td_client *c, const char *session_id,
    const char *connectors_json, const struct td_request_options *opts,
    struct td_error *err)
{
	struct client_response resp = { 0 };
	cJSON *body;
	enum td_code rc;
	char *path, *text;

	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	body = cJSON_CreateObject();
	if (!session_add_connectors(body, connectors_json != NULL ? connectors_json : "[]",
	    err)) {
		cJSON_Delete(body);
		return TD_INVALID_ARGUMENT;
	}
	text = session_body_text(body);
	path = client_item_path("sessions", session_id, "/connectors");
	rc = client_call(c, "PUT", path, text, true, opts, &resp, err);
	session_body_free(text);
	free(path);
	client_response_free(&resp);
	return rc;
}
