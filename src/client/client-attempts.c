/* Attempts: one prompt run N times in worktrees, one applied (taskdeck.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client-internal.h"
#include "json.h"
#include "taskdeck.h"
#include "xalloc.h"

static long
attempts_num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

/* The group of a 2xx answer, or NULL when it is not one. */
static struct td_attempt_group *
attempts_from_json(const cJSON *g, const char *raw)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(g, "attempts"), *a;
	struct td_attempt_group *out;
	size_t i = 0;

	if (!cJSON_IsObject(g) || !cJSON_IsArray(arr) || json_get_string(g, "id") == NULL)
		return NULL;
	out = xcalloc(1, sizeof *out);
	out->id = client_string(g, "id");
	out->status = client_string_or(g, "status", "");
	out->cwd = client_string_or(g, "cwd", "");
	out->kind = client_string_or(g, "kind", "");
	out->applied_run = client_string(g, "appliedRun");
	out->count = (size_t)cJSON_GetArraySize(arr);
	out->attempts = xcalloc(out->count + 1, sizeof *out->attempts);
	cJSON_ArrayForEach(a, arr) {
		struct td_attempt *t = &out->attempts[i++];
		const cJSON *ch = cJSON_GetObjectItemCaseSensitive(a, "changes");
		const cJSON *ck = cJSON_GetObjectItemCaseSensitive(a, "check");
		const cJSON *run = cJSON_GetObjectItemCaseSensitive(a, "run");

		t->index = (int)attempts_num(a, "index");
		t->run_id = client_string_or(a, "runId", "");
		t->session_id = client_string_or(a, "sessionId", "");
		t->model = client_string(a, "model");
		t->branch = client_string_or(a, "branch", "");
		t->cwd = client_string_or(a, "cwd", "");
		t->state = client_string_or(a, "state", "");
		t->measured = cJSON_IsObject(ch);
		t->files = attempts_num(ch, "files");
		t->additions = attempts_num(ch, "additions");
		t->deletions = attempts_num(ch, "deletions");
		t->check_status = client_string(ck, "status");
		t->check_exit = (int)attempts_num(ck, "exitCode");
		t->run_status = client_string_or(run, "status", "");
	}
	out->json = xstrdup(raw != NULL ? raw : "");
	return out;
}

void
td_attempt_group_free(struct td_attempt_group *g)
{
	if (g == NULL)
		return;
	for (size_t i = 0; i < g->count; i++) {
		struct td_attempt *t = &g->attempts[i];

		free(t->run_id);
		free(t->session_id);
		free(t->model);
		free(t->branch);
		free(t->cwd);
		free(t->state);
		free(t->check_status);
		free(t->run_status);
	}
	free(g->attempts);
	free(g->id);
	free(g->status);
	free(g->cwd);
	free(g->kind);
	free(g->applied_run);
	free(g->json);
	free(g);
}

/* One request answered with a group. */
static enum td_code
attempts_call(struct td_client *c, const char *method, const char *path, const char *body,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err)
{
	struct client_response resp;
	enum td_code rc;

	*out = NULL;
	rc = client_call(c, method, path, body, false, opts, &resp, err);
	if (rc == TD_OK && (*out = attempts_from_json(resp.json, resp.body.data)) == NULL)
		rc = client_malformed(&resp, "attempts group", err);
	client_response_free(&resp);
	return rc;
}

enum td_code
td_create_attempts(struct td_client *c, const struct td_attempts_request *rq,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err)
{
	cJSON *body, *cfg;
	char *text;
	enum td_code rc;

	*out = NULL;
	if (rq == NULL || rq->project == NULL || rq->prompt == NULL || rq->cwd == NULL ||
	    rq->count < 1)
		return client_fail(err, TD_INVALID_ARGUMENT, "project, prompt, cwd and a count "
		    "of attempts are required");
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "project", rq->project);
	cJSON_AddStringToObject(body, "prompt", rq->prompt);
	cJSON_AddNumberToObject(body, "attempts", rq->count);
	cJSON_AddStringToObject(body, "cwd", rq->cwd);
	if (rq->check != NULL)
		cJSON_AddStringToObject(body, "check", rq->check);
	if (rq->model_count > 0) {
		cJSON *m = cJSON_AddArrayToObject(body, "models");
		for (size_t i = 0; i < rq->model_count; i++)
			cJSON_AddItemToArray(m, cJSON_CreateString(rq->models[i]));
	}
	if (rq->permission_profile != NULL)
		cJSON_AddStringToObject(body, "permissionProfile", rq->permission_profile);
	if (rq->network != 0)
		cJSON_AddBoolToObject(body, "network", rq->network > 0);
	if (rq->provider != NULL || rq->framework != NULL || rq->effort != NULL) {
		cfg = cJSON_AddObjectToObject(body, "config");
		if (rq->provider != NULL)
			cJSON_AddStringToObject(cfg, "provider", rq->provider);
		if (rq->framework != NULL)
			cJSON_AddStringToObject(cfg, "framework", rq->framework);
		if (rq->effort != NULL)
			cJSON_AddStringToObject(cfg, "effort", rq->effort);
	}
	text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	rc = attempts_call(c, "POST", "/api/v1/attempts", text, opts, out, err);
	free(text);
	return rc;
}

/* method on /api/v1/COLLECTION/ID SUFFIX, answered with a group; what names the id. */
static enum td_code
attempts_item_call(struct td_client *c, const char *method, const char *collection,
    const char *id, const char *suffix, const char *body, const char *what,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err)
{
	char *path;
	enum td_code rc;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a %s id is required", what);
	path = client_item_path(collection, id, suffix);
	rc = attempts_call(c, method, path, body, opts, out, err);
	free(path);
	return rc;
}

enum td_code
td_get_attempts(struct td_client *c, const char *group_id,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err)
{
	return attempts_item_call(c, "GET", "attempts", group_id, "", NULL, "group", opts, out,
	    err);
}

enum td_code
td_apply_attempt(struct td_client *c, const char *run_id, bool keep,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err)
{
	return attempts_item_call(c, "POST", "runs", run_id, "/apply",
	    keep ? "{\"keep\":true}" : "{}", "run", opts, out, err);
}

enum td_code
td_discard_attempt(struct td_client *c, const char *run_id,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err)
{
	return attempts_item_call(c, "POST", "runs", run_id, "/discard", NULL, "run", opts, out,
	    err);
}
