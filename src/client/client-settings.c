#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

void
td_session_defaults_free(struct td_session_defaults *d)
{
	if (d == NULL)
		return;
	free(d->project_id);
	free(d->updated_at);
	free(d->framework);
	free(d->provider);
	free(d->model);
	free(d->effort);
	free(d->permission_profile);
	free(d->json);
	free(d);
}

/* Sends a request whose answer is a project's session defaults. */
static enum td_code
defaults_call(struct td_client *c, const char *method, const char *project_id,
    const char *body, const struct td_request_options *opts,
    struct td_session_defaults **out, struct td_error *err)
{
	struct client_response resp;
	struct td_session_defaults *d;
	const cJSON *values;
	enum td_code rc;
	char *path;

	path = client_item_path("projects", project_id, "/session-defaults");
	rc = client_call(c, method, path, body, false, opts, &resp, err);
	free(path);
	values = cJSON_GetObjectItemCaseSensitive(resp.json, "defaults");
	if (rc == TD_OK && (json_get_string(resp.json, "updatedAt") == NULL ||
	    !cJSON_IsObject(values)))
		rc = client_malformed(&resp, "session defaults", err);
	if (rc == TD_OK) {
		d = xcalloc(1, sizeof *d);
		d->project_id = client_string(resp.json, "projectId");
		d->updated_at = client_string(resp.json, "updatedAt");
		d->framework = client_string(values, "framework");
		d->provider = client_string(values, "provider");
		d->model = client_string(values, "model");
		d->effort = client_string(values, "effort");
		d->permission_profile = client_string(values, "permissionProfile");
		d->json = buf_steal(&resp.body);
		*out = d;
	}
	client_response_free(&resp);
	return rc;
}

enum td_code
td_get_session_defaults(struct td_client *c, const char *project_id,
    const struct td_request_options *opts, struct td_session_defaults **out,
    struct td_error *err)
{
	*out = NULL;
	if (project_id == NULL || *project_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	return defaults_call(c, "GET", project_id, NULL, opts, out, err);
}

enum td_code
td_update_session_defaults(struct td_client *c, const char *project_id,
    const char *expected_updated_at, const char *patch_json,
    const struct td_request_options *opts, struct td_session_defaults **out,
    struct td_error *err)
{
	cJSON *body, *patch;
	enum td_code rc;
	char *text;

	*out = NULL;
	if (project_id == NULL || *project_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	if (expected_updated_at == NULL) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "expected_updated_at is required");
	}
	patch = client_parse_object(patch_json, "the defaults patch", err);
	if (patch == NULL)
		return TD_INVALID_ARGUMENT;
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "expectedUpdatedAt", expected_updated_at);
	cJSON_AddItemToObject(body, "patch", patch);
	text = json_print(body);
	cJSON_Delete(body);
	rc = defaults_call(c, "PATCH", project_id, text, opts, out, err);
	free(text);
	return rc;
}

void
td_agent_routing_free(struct td_agent_routing *r)
{
	if (r == NULL)
		return;
	free(r->framework);
	free(r->reviewer.framework);
	free(r->reviewer.provider);
	free(r->reviewer.model);
	free(r->subagent.provider);
	free(r->subagent.model);
	free(r->updated_at);
	free(r->json);
	free(r);
}

/* Sends a request whose answer is the agent routing. */
static enum td_code
routing_call(struct td_client *c, const char *method, const char *body,
    const struct td_request_options *opts, struct td_agent_routing **out,
    struct td_error *err)
{
	struct client_response resp;
	struct td_agent_routing *r;
	const cJSON *reviewer, *subagent, *max;
	enum td_code rc;

	*out = NULL;
	rc = client_call(c, method, "/api/v1/settings/agent-routing", body, false,
	    opts, &resp, err);
	reviewer = cJSON_GetObjectItemCaseSensitive(resp.json, "reviewer");
	subagent = cJSON_GetObjectItemCaseSensitive(resp.json, "subagent");
	max = cJSON_GetObjectItemCaseSensitive(subagent, "maxConcurrent");
	if (rc == TD_OK && (json_get_string(resp.json, "framework") == NULL ||
	    !cJSON_IsObject(reviewer) || !cJSON_IsObject(subagent)))
		rc = client_malformed(&resp, "agent routing", err);
	if (rc == TD_OK) {
		r = xcalloc(1, sizeof *r);
		r->framework = client_string(resp.json, "framework");
		r->reviewer.enabled = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(reviewer, "enabled"));
		r->reviewer.framework = client_string(reviewer, "framework");
		r->reviewer.provider = client_string(reviewer, "provider");
		r->reviewer.model = client_string(reviewer, "model");
		r->subagent.enabled = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(subagent, "enabled"));
		r->subagent.provider = client_string(subagent, "provider");
		r->subagent.model = client_string(subagent, "model");
		r->subagent.max_concurrent = cJSON_IsNumber(max) ? max->valueint : 0;
		r->updated_at = client_string(resp.json, "updatedAt");
		r->json = buf_steal(&resp.body);
		*out = r;
	}
	client_response_free(&resp);
	return rc;
}

enum td_code
td_get_agent_routing(struct td_client *c, const struct td_request_options *opts,
    struct td_agent_routing **out, struct td_error *err)
{
	return routing_call(c, "GET", NULL, opts, out, err);
}

enum td_code
td_update_agent_routing(struct td_client *c, const char *patch_json,
    const struct td_request_options *opts, struct td_agent_routing **out,
    struct td_error *err)
{
	enum td_code rc;
	cJSON *patch;
	char *text;

	*out = NULL;
	patch = client_parse_object(patch_json, "the routing patch", err);
	if (patch == NULL)
		return TD_INVALID_ARGUMENT;
	text = json_print(patch);
	cJSON_Delete(patch);
	rc = routing_call(c, "PATCH", text, opts, out, err);
	free(text);
	return rc;
}

void
td_doctor_report_free(struct td_doctor_report *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->check_count; i++) {
		free(d->checks[i].id);
		free(d->checks[i].status);
		free(d->checks[i].message);
		free(d->checks[i].next_action);
	}
	free(d->checks);
	for (size_t i = 0; i < d->next_action_count; i++)
		free(d->next_actions[i]);
	free(d->next_actions);
	free(d->version);
	free(d->json);
	free(d);
}

/* Copies the checks and next actions of a doctor report. */
static void
doctor_fill(struct td_doctor_report *d, const cJSON *checks,
    const cJSON *actions)
{
	const cJSON *item;

	d->checks = xcalloc((size_t)cJSON_GetArraySize(checks), sizeof *d->checks);
	cJSON_ArrayForEach(item, checks) {
		struct td_doctor_check *check = &d->checks[d->check_count++];

		check->id = client_string_or(item, "id", "");
		check->status = client_string_or(item, "status", "");
		check->message = client_string_or(item, "message", "");
		check->next_action = client_string(item, "nextAction");
	}
	d->next_actions = xcalloc((size_t)cJSON_GetArraySize(actions),
	    sizeof *d->next_actions);
	cJSON_ArrayForEach(item, actions) {
		if (cJSON_IsString(item))
			d->next_actions[d->next_action_count++] = xstrdup(item->valuestring);
	}
}

enum td_code
td_doctor(struct td_client *c, const struct td_request_options *opts,
    struct td_doctor_report **out, struct td_error *err)
{
	struct client_response resp;
	struct td_doctor_report *d;
	const cJSON *ready, *checks, *actions;
	enum td_code rc;

	*out = NULL;
	rc = client_call(c, "GET", "/api/v1/doctor", NULL, false, opts, &resp, err);
	ready = cJSON_GetObjectItemCaseSensitive(resp.json, "ready");
	checks = cJSON_GetObjectItemCaseSensitive(resp.json, "checks");
	actions = cJSON_GetObjectItemCaseSensitive(resp.json, "nextActions");
	if (rc == TD_OK && (!cJSON_IsBool(ready) || !cJSON_IsArray(checks)))
		rc = client_malformed(&resp, "doctor report", err);
	if (rc == TD_OK) {
		d = xcalloc(1, sizeof *d);
		d->ready = cJSON_IsTrue(ready);
		d->version = client_string(resp.json, "version");
		doctor_fill(d, checks, actions);
		d->json = buf_steal(&resp.body);
		*out = d;
	}
	client_response_free(&resp);
	return rc;
}
