#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

static const char *const plan_decisions[] = { "approve", "revise", "reject", NULL };
static const char *const permission_decisions[] = { "allow", "deny", "allow-run", NULL };

/* True when value is one of the NULL-terminated list. */
static bool
plans_one_of(const char *value, const char *const *list)
{
	for (size_t i = 0; value != NULL && list[i] != NULL; i++) {
		if (strcmp(value, list[i]) == 0)
			return true;
	}
	return false;
}

/* obj[key] when it is a whole number of at least 1, else 0. */
static long
plans_positive(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e15 ||
	    v->valuedouble != (double)(long)v->valuedouble)
		return 0;
	return (long)v->valuedouble;
}

void
td_plan_free(struct td_plan *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->step_count; i++) {
		free(p->steps[i].id);
		free(p->steps[i].title);
		free(p->steps[i].status);
	}
	free(p->steps);
	free(p->session_id);
	free(p->run_id);
	free(p->status);
	free(p->summary);
	free(p->feedback);
	free(p->created_at);
	free(p->updated_at);
	free(p->json);
	free(p);
}

/* A plan from its object, or NULL when it is not one. */
static struct td_plan *
plan_from_json(const cJSON *obj, const char *session_id, const char *raw)
{
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(obj, "steps");
	const cJSON *step;
	struct td_plan *p;

	if (plans_positive(obj, "version") == 0 || plans_positive(obj, "revision") == 0 ||
	    json_get_string(obj, "status") == NULL ||
	    (steps != NULL && !cJSON_IsArray(steps) && !cJSON_IsNull(steps)))
		return NULL;
	if (!cJSON_IsArray(steps))
		steps = NULL;
	p = xcalloc(1, sizeof *p);
	p->steps = xcalloc((size_t)cJSON_GetArraySize(steps) + 1, sizeof *p->steps);
	cJSON_ArrayForEach(step, steps) {
		struct td_plan_step *s = &p->steps[p->step_count];

		if (json_get_string(step, "id") == NULL) {
			td_plan_free(p);
			return NULL;
		}
		s->id = client_string(step, "id");
		s->title = client_string_or(step, "title", "");
		s->status = client_string_or(step, "status", "pending");
		p->step_count++;
	}
	p->session_id = client_string_or(obj, "sessionId", session_id);
	p->run_id = client_string(obj, "runId");
	p->version = plans_positive(obj, "version");
	p->revision = plans_positive(obj, "revision");
	p->status = client_string(obj, "status");
	p->summary = client_string_or(obj, "summary", "");
	p->feedback = client_string(obj, "feedback");
	p->created_at = client_string(obj, "createdAt");
	p->updated_at = client_string(obj, "updatedAt");
	p->json = xstrdup(raw);
	return p;
}

/* Sends a request whose answer is the session's plan. */
static enum td_code
plan_call(struct td_client *c, const char *method, const char *session_id,
    const char *suffix, const char *body, const struct td_request_options *opts,
    struct td_plan **out, struct td_error *err)
{
	struct client_response resp;
	enum td_code rc;
	char *path;

	path = client_item_path("sessions", session_id, suffix);
	rc = client_call(c, method, path, body, false, opts, &resp, err);
	free(path);
	if (rc == TD_OK &&
	    (*out = plan_from_json(resp.json, session_id, resp.body.data)) == NULL)
		rc = client_malformed(&resp, "plan", err);
	client_response_free(&resp);
	return rc;
}

enum td_code
td_get_session_plan(struct td_client *c, const char *session_id,
    const struct td_request_options *opts, struct td_plan **out,
    struct td_error *err)
{
	*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	return plan_call(c, "GET", session_id, "/plan", NULL, opts, out, err);
}

enum td_code
td_respond_session_plan(struct td_client *c, const char *session_id,
    const char *decision, long version, long revision, const char *feedback,
    const struct td_request_options *opts, struct td_plan **out,
    struct td_error *err)
{
	struct td_plan *p = NULL;
	enum td_code rc;
	cJSON *body;
	char *text;

	if (out != NULL)
		*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	if (!plans_one_of(decision, plan_decisions)) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "the decision must be approve, revise or reject");
	}
	if (version < 1 || revision < 1) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "version and revision are the plan's as last read (1 or more)");
	}
	if (strcmp(decision, "revise") == 0 && (feedback == NULL || *feedback == '\0'))
		return client_fail(err, TD_INVALID_ARGUMENT, "revise needs feedback");
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "decision", decision);
	cJSON_AddNumberToObject(body, "version", (double)version);
	cJSON_AddNumberToObject(body, "revision", (double)revision);
	if (feedback != NULL)
		cJSON_AddStringToObject(body, "feedback", feedback);
	text = json_print(body);
	cJSON_Delete(body);
	rc = plan_call(c, "POST", session_id, "/plan/respond", text, opts, &p, err);
	free(text);
	if (out != NULL)
		*out = p;
	else
		td_plan_free(p);
	return rc;
}

/* Frees the members of a prompt. */
static void
permission_clear(struct td_permission *p)
{
	free(p->id);
	free(p->run_id);
	free(p->session_id);
	free(p->project_id);
	free(p->tool);
	free(p->summary);
	free(p->input_json);
	free(p->status);
	free(p->decision);
	free(p->created_at);
	free(p->answered_at);
	free(p->json);
	memset(p, 0, sizeof *p);
}

void
td_permission_free(struct td_permission *p)
{
	if (p == NULL)
		return;
	permission_clear(p);
	free(p);
}

/* Fills p from one prompt object; raw is its text when known. */
static bool
permission_from_json(struct td_permission *p, const cJSON *obj, const char *raw)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(obj, "input");

	if (json_get_string(obj, "id") == NULL || json_get_string(obj, "status") == NULL)
		return false;
	p->id = client_string(obj, "id");
	p->run_id = client_string(obj, "runId");
	p->session_id = client_string(obj, "sessionId");
	p->project_id = client_string(obj, "projectId");
	p->tool = client_string_or(obj, "tool", "");
	p->summary = client_string_or(obj, "summary", "");
	p->input_json = cJSON_IsObject(input) ? json_print(input) : xstrdup("{}");
	p->status = client_string(obj, "status");
	p->decision = client_string(obj, "decision");
	p->created_at = client_string(obj, "createdAt");
	p->answered_at = client_string(obj, "answeredAt");
	p->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(permission, "permission prompt");

void
td_permission_list_free(struct td_permission_list *list)
{
	CLIENT_LIST_FREE(&permission_kind, list);
}

/* "/app/v1/permissions/<escaped id>": the application surface, not /api/v1. */
static char *
permission_path(const char *id)
{
	char *api = client_item_path("permissions", id, "");
	char *path = xasprintf("/app/v1%s", api + strlen("/api/v1"));

	free(api);
	return path;
}

/* Sends a request whose answer is one prompt. */
static enum td_code
permission_call(struct td_client *c, const char *method, const char *id,
    const char *body, const struct td_request_options *opts,
    struct td_permission **out, struct td_error *err)
{
	enum td_code rc;
	char *path;
	void *p;

	path = permission_path(id);
	rc = client_call_item(c, method, path, body, opts, &permission_kind, &p, err);
	free(path);
	*out = p;
	return rc;
}

enum td_code
td_list_permissions(struct td_client *c, const char *status, const char *run_id,
    long limit, const char *cursor, const struct td_request_options *opts,
    struct td_permission_list **out, struct td_error *err)
{
	struct client_page page;
	enum td_code rc;

	*out = NULL;
	if (limit < 0)
		return client_fail(err, TD_INVALID_ARGUMENT, "limit must not be negative");
	if (run_id != NULL && *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "the run id is empty");
	rc = client_list(c, "/app/v1/permissions", limit, cursor, (const char *const[]){
	    "status", status, "run", run_id, NULL }, opts, &permission_kind, &page, err);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

enum td_code
td_get_permission(struct td_client *c, const char *permission_id,
    const struct td_request_options *opts, struct td_permission **out,
    struct td_error *err)
{
	*out = NULL;
	if (permission_id == NULL || *permission_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a permission prompt id is required");
	return permission_call(c, "GET", permission_id, NULL, opts, out, err);
}

enum td_code
td_answer_permission(struct td_client *c, const char *permission_id,
    const char *decision, const struct td_request_options *opts,
    struct td_permission **out, struct td_error *err)
{
	return td_answer_permission_form(c, permission_id, decision, NULL, opts, out, err);
}

enum td_code
td_answer_permission_form(struct td_client *c, const char *permission_id,
    const char *decision, const char *values_json, const struct td_request_options *opts,
    struct td_permission **out, struct td_error *err)
{
	struct td_permission *p = NULL;
	enum td_code rc;
	cJSON *body, *values = NULL;
	char *text;

	if (out != NULL)
		*out = NULL;
	if (permission_id == NULL || *permission_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a permission prompt id is required");
	if (!plans_one_of(decision, permission_decisions)) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "the decision must be allow, deny or allow-run");
	}
	if (values_json != NULL &&
	    !cJSON_IsObject(values = json_parse(values_json, strlen(values_json)))) {
		cJSON_Delete(values);
		return client_fail(err, TD_INVALID_ARGUMENT, "the values must be a JSON object");
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "decision", decision);
	if (values != NULL)
		cJSON_AddItemToObject(body, "values", values);
	text = json_print(body);
	cJSON_Delete(body);
	rc = permission_call(c, "POST", permission_id, text, opts, &p, err);
	free(text);
	if (out != NULL)
		*out = p;
	else
		td_permission_free(p);
	return rc;
}
