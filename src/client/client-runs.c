#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "ids.h"
#include "json.h"
#include "timeutil.h"
#include "xalloc.h"

/* Delays between polls of td_wait_for_run, in milliseconds. */
#define RUN_POLL_FIRST_MS 100
#define RUN_POLL_MAX_MS 1000
#define RUN_POLL_JITTER_MS 50

static const char *const run_final_statuses[] = { "completed", "failed", "cancelled", NULL };

/* Frees the members of a run. */
static void
run_clear(struct td_run *r)
{
	char **strings[] = {
		&r->id, &r->session_id, &r->project_id, &r->status, &r->prompt,
		&r->permission_profile, &r->turn_intent, &r->config.framework,
		&r->config.provider, &r->config.model, &r->config.effort, &r->cwd,
		&r->created_at, &r->started_at, &r->finished_at,
		&r->cancel_requested_at, &r->progress.phase, &r->progress.updated_at,
		&r->attention.kind, &r->attention.since, &r->output, &r->error_code,
		&r->error_message, &r->updated_at, &r->json, &r->review.verdict,
		&r->review.summary,
	};

	for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
		free(*strings[i]);
	memset(r, 0, sizeof *r);
}

void
td_run_free(struct td_run *r)
{
	if (r == NULL)
		return;
	run_clear(r);
	free(r);
}

/* True when status is one of the final ones. */
static bool
client_status_final(const char *status)
{
	for (size_t i = 0; status != NULL && run_final_statuses[i] != NULL; i++) {
		if (strcmp(status, run_final_statuses[i]) == 0)
			return true;
	}
	return false;
}

bool
td_run_is_final(const struct td_run *r)
{
	return r != NULL && client_status_final(r->status);
}

/* obj[key] as a whole number, or 0. */
static long long
run_number(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

/* Fills r from one run object; raw is its text when known. */
static bool
run_from_json(struct td_run *r, const cJSON *obj, const char *raw)
{
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(obj, "config");
	const cJSON *progress = cJSON_GetObjectItemCaseSensitive(obj, "progress");
	const cJSON *attention = cJSON_GetObjectItemCaseSensitive(obj, "attention");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(obj, "error");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(obj, "usage");
	const cJSON *review = cJSON_GetObjectItemCaseSensitive(obj, "review");
	const cJSON *changes = cJSON_GetObjectItemCaseSensitive(obj, "changes");

	if (json_get_string(obj, "id") == NULL ||
	    json_get_string(obj, "sessionId") == NULL ||
	    json_get_string(obj, "status") == NULL)
		return false;
	r->id = client_string(obj, "id");
	r->session_id = client_string(obj, "sessionId");
	r->project_id = client_string(obj, "projectId");
	r->status = client_string(obj, "status");
	r->prompt = client_string(obj, "prompt");
	r->permission_profile = client_string(obj, "permissionProfile");
	r->turn_intent = client_string(obj, "turnIntent");
	r->config.framework = client_string(config, "framework");
	r->config.provider = client_string(config, "provider");
	r->config.model = client_string(config, "model");
	r->config.effort = client_string(config, "effort");
	r->cwd = client_string(obj, "cwd");
	r->created_at = client_string(obj, "createdAt");
	r->started_at = client_string(obj, "startedAt");
	r->finished_at = client_string(obj, "finishedAt");
	r->cancel_requested_at = client_string(obj, "cancelRequestedAt");
	r->progress.phase = client_string(progress, "phase");
	r->progress.updated_at = client_string(progress, "updatedAt");
	r->attention.kind = client_string(attention, "kind");
	r->attention.plan_version = (long)run_number(attention, "planVersion");
	r->attention.plan_revision = (long)run_number(attention, "planRevision");
	r->attention.since = client_string(attention, "since");
	r->output = client_string(obj, "output");
	r->error_code = client_string(error, "code");
	r->error_message = client_string(error, "message");
	r->input_tokens = run_number(usage, "inputTokens");
	r->output_tokens = run_number(usage, "outputTokens");
	r->cache_read_tokens = run_number(usage, "cacheReadTokens");
	r->cache_write_tokens = run_number(usage, "cacheWriteTokens");
	r->has_cost = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(obj, "cost"));
	r->cost = r->has_cost ? cJSON_GetObjectItemCaseSensitive(obj, "cost")->valuedouble : 0;
	r->changes.known = cJSON_IsObject(changes);
	r->changes.files = (long)run_number(changes, "files");
	r->changes.additions = (long)run_number(changes, "additions");
	r->changes.deletions = (long)run_number(changes, "deletions");
	r->review.verdict = client_string(review, "verdict");
	r->review.summary = client_string(review, "summary");
	r->review.round = (long)run_number(review, "round");
	r->updated_at = client_string(obj, "updatedAt");
	r->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(run, "run");

struct td_run *
td_event_run(const struct td_event *ev)
{
	cJSON *data;
	const cJSON *obj;
	struct td_run *r = NULL;

	if (ev == NULL || ev->type == NULL || strcmp(ev->type, "run.queued") != 0 ||
	    ev->data_json == NULL)
		return NULL;
	data = cJSON_Parse(ev->data_json);
	obj = cJSON_GetObjectItemCaseSensitive(data, "run");
	if (cJSON_IsObject(obj)) {
		r = xcalloc(1, sizeof *r);
		if (!run_from_json(r, obj, NULL)) {
			td_run_free(r);
			r = NULL;
		}
	}
	cJSON_Delete(data);
	return r;
}

void
td_run_list_free(struct td_run_list *list)
{
	CLIENT_LIST_FREE(&run_kind, list);
}

/* Sends a request whose answer is one run. */
static enum td_code
run_call(struct td_client *c, const char *method, const char *path,
    const char *body, const struct td_request_options *opts,
    struct td_run **out, struct td_error *err)
{
	void *r;
	enum td_code rc;

	rc = client_call_item(c, method, path, body, opts, &run_kind, &r, err);
	*out = r;
	return rc;
}

/* Sets obj[key] to a string when value is not NULL, replacing what was there. */
static void
run_set_string(cJSON *obj, const char *key, const char *value)
{
	if (value == NULL)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cJSON_AddStringToObject(obj, key, value);
}

/* The "config" member of a run request, or NULL when it has none. */
static enum td_code
run_request_config(const struct td_run_request *rq, cJSON **out,
    struct td_error *err)
{
	cJSON *config = NULL;

	*out = NULL;
	if (rq->config_json != NULL) {
		config = client_parse_object(rq->config_json, "config_json", err);
		if (config == NULL)
			return TD_INVALID_ARGUMENT;
	}
	if (config == NULL && (rq->framework != NULL || rq->provider != NULL ||
	    rq->model != NULL || rq->effort != NULL))
		config = cJSON_CreateObject();
	if (config != NULL) {
		run_set_string(config, "framework", rq->framework);
		run_set_string(config, "provider", rq->provider);
		run_set_string(config, "model", rq->model);
		run_set_string(config, "effort", rq->effort);
	}
	*out = config;
	return TD_OK;
}

enum td_code
td_start_run(struct td_client *c, const struct td_run_request *rq,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err)
{
	cJSON *body, *config;
	enum td_code rc;
	char *text;

	*out = NULL;
	if (rq == NULL || rq->project == NULL || *rq->project == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	if (rq->prompt == NULL || *rq->prompt == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a prompt is required");
	if ((rc = run_request_config(rq, &config, err)) != TD_OK)
		return rc;
	body = cJSON_CreateObject();
	run_set_string(body, "project", rq->project);
	run_set_string(body, "prompt", rq->prompt);
	run_set_string(body, "permissionProfile", rq->permission_profile);
	run_set_string(body, "turnIntent", rq->turn_intent);
	run_set_string(body, "cwd", rq->cwd);
	run_set_string(body, "sessionId", rq->session_id);
	if (rq->network != 0)
		cJSON_AddBoolToObject(body, "network", rq->network > 0);
	if (config != NULL)
		cJSON_AddItemToObject(body, "config", config);
	text = json_print(body);
	cJSON_Delete(body);
	rc = run_call(c, "POST", "/api/v1/runs", text, opts, out, err);
	free(text);
	return rc;
}

/*
 * The creation body of a run that starts again what run did: its project,
 * session, prompt, profile, turn intent and network.  No config: a run in an
 * existing session takes the session's (run_rerun_config checks it is the
 * run's), and the session keeps its directory.
 */
static char *
run_rerun_body(const struct td_run *run)
{
	cJSON *old = cJSON_Parse(run->json), *body = cJSON_CreateObject();
	const cJSON *network = cJSON_GetObjectItemCaseSensitive(old, "network");
	char *text;

	run_set_string(body, "project", run->project_id);
	run_set_string(body, "sessionId", run->session_id);
	run_set_string(body, "prompt", run->prompt);
	run_set_string(body, "permissionProfile", run->permission_profile);
	run_set_string(body, "turnIntent", run->turn_intent);
	if (cJSON_IsBool(network))
		cJSON_AddBoolToObject(body, "network", cJSON_IsTrue(network));
	text = json_print(body);
	cJSON_Delete(body);
	cJSON_Delete(old);
	return text;
}

/*
 * TD_OK when the session's configuration still gives run's framework,
 * provider, model and effort; else TD_CONFIGURATION_CONFLICT naming the first
 * member that changed (a member the session cleared takes its default).
 */
static enum td_code
run_rerun_config(struct td_client *c, const struct td_run *run,
    const struct td_request_options *opts, struct td_error *err)
{
	struct td_session_config *cfg;
	enum td_code rc;

	if ((rc = td_get_session_config(c, run->session_id, opts, &cfg, err)) != TD_OK)
		return rc;
	const struct {
		const char *name, *now, *then;
	} members[] = {
		{ "framework", cfg->framework, run->config.framework },
		{ "provider", cfg->provider, run->config.provider },
		{ "model", cfg->model, run->config.model },
		{ "effort", cfg->effort, run->config.effort },
	};
	for (size_t i = 0; rc == TD_OK && i < sizeof members / sizeof members[0]; i++) {
		if (members[i].now == NULL || members[i].then == NULL ||
		    strcmp(members[i].now, members[i].then) == 0)
			continue;
		rc = client_fail(err, TD_CONFIGURATION_CONFLICT, "session %s now has %s %s, "
		    "run %s had %s: set it back (taskdeck sessions config set %s %s=%s) to "
		    "run it again", run->session_id, members[i].name, members[i].now, run->id,
		    members[i].then, run->session_id, members[i].name, members[i].then);
	}
	td_session_config_free(cfg);
	return rc;
}

enum td_code
td_rerun_run(struct td_client *c, const char *run_id,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err)
{
	struct td_request_options read = { 0 };
	struct td_run *old;
	enum td_code rc;
	char *body;

	*out = NULL;
	/* The reads carry no idempotency key: it belongs to the start alone. */
	if (opts != NULL) {
		read.timeout_ms = opts->timeout_ms;
		read.cancel = opts->cancel;
	}
	if ((rc = td_get_run(c, run_id, &read, &old, err)) != TD_OK)
		return rc;
	if (!td_run_is_final(old)) {
		rc = client_fail(err, TD_SESSION_BUSY, "run %s is still %s: it can run again "
		    "once it has ended (cancel it first)", old->id, old->status);
	} else if (old->prompt == NULL || old->project_id == NULL) {
		rc = client_fail(err, TD_INVALID_RESPONSE, "run %s came without its prompt "
		    "or project", old->id);
	} else if ((rc = run_rerun_config(c, old, &read, err)) == TD_OK) {
		body = run_rerun_body(old);
		rc = run_call(c, "POST", "/api/v1/runs", body, opts, out, err);
		free(body);
	}
	td_run_free(old);
	return rc;
}

enum td_code
td_get_run(struct td_client *c, const char *run_id,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err)
{
	enum td_code rc;
	char *path;

	*out = NULL;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	path = client_item_path("runs", run_id, "");
	rc = run_call(c, "GET", path, NULL, opts, out, err);
	free(path);
	return rc;
}

enum td_code
td_cancel_run(struct td_client *c, const char *run_id,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err)
{
	struct td_run *r;
	enum td_code rc;
	char *path;

	if (out != NULL)
		*out = NULL;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	path = client_item_path("runs", run_id, "/cancel");
	rc = run_call(c, "POST", path, "{}", opts, &r, err);
	free(path);
	if (out != NULL)
		*out = r;
	else
		td_run_free(r);
	return rc;
}

enum td_code
td_list_runs(struct td_client *c, const struct td_run_filter *filter,
    long limit, const char *cursor, const struct td_request_options *opts,
    struct td_run_list **out, struct td_error *err)
{
	struct client_page page;
	enum td_code rc;

	*out = NULL;
	if (filter == NULL || (filter->session_id == NULL && filter->project_id == NULL)) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "a session or project id is required to list runs");
	}
	rc = client_list(c, "/api/v1/runs", limit, cursor, (const char *const[]){
	    "session", filter->session_id, "project", filter->project_id,
	    "status", filter->status, NULL }, opts, &run_kind, &page, err);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

/* Errors worth another poll while the wait's deadline allows. */
static bool
run_wait_transient(enum td_code code)
{
	return code == TD_CONNECTION_FAILED || code == TD_TIMEOUT ||
	    code == TD_UNAVAILABLE;
}

/* The next delay between polls: grows by half up to the maximum, plus jitter. */
static long
run_wait_delay(long *step)
{
	uint16_t noise;
	long delay = *step;

	random_bytes(&noise, sizeof noise);
	*step = *step + *step / 2 < RUN_POLL_MAX_MS ? *step + *step / 2 : RUN_POLL_MAX_MS;
	return delay + noise % (RUN_POLL_JITTER_MS + 1);
}

/* The wait's own timeout error. */
static enum td_code
run_wait_timeout(const char *run_id, const char *status, long timeout_ms,
    struct td_error *err)
{
	if (*status == '\0') {
		return client_fail(err, TD_TIMEOUT,
		    "no answer about run %s within %ld ms; the wait stopped, the "
		    "run goes on", run_id, timeout_ms);
	}
	return client_fail(err, TD_TIMEOUT,
	    "run %s is still %s after %ld ms; the wait stopped, the run goes on",
	    run_id, status, timeout_ms);
}

enum td_code
td_wait_for_run(struct td_client *c, const char *run_id,
    const struct td_wait_options *w, struct td_run **out, struct td_error *err)
{
	static const struct td_wait_options no_options;
	struct td_request_options ropts = { 0 };
	int64_t deadline = 0, left = 0;
	char last_status[32] = "";
	long step = RUN_POLL_FIRST_MS, delay;
	struct td_run *r;
	enum td_code rc;

	*out = NULL;
	if (w == NULL)
		w = &no_options;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	if (w->timeout_ms < 0)
		return client_fail(err, TD_INVALID_ARGUMENT, "timeout_ms must not be negative");
	if (w->timeout_ms > 0)
		deadline = clock_mono_ms() + w->timeout_ms;
	ropts.cancel = w->cancel;
	for (;;) {
		if (deadline != 0 && (left = deadline - clock_mono_ms()) <= 0)
			return run_wait_timeout(run_id, last_status, w->timeout_ms, err);
		ropts.timeout_ms = deadline != 0 && left < c->timeout_ms ? (long)left : 0;
		rc = td_get_run(c, run_id, &ropts, &r, err);
		if (rc == TD_OK) {
			if (td_run_is_final(r) || (w->return_on_attention &&
			    strcmp(r->status, "running") == 0 && r->attention.kind != NULL)) {
				*out = r;
				return TD_OK;
			}
			snprintf(last_status, sizeof last_status, "%s", r->status);
			td_run_free(r);
		} else if (!run_wait_transient(rc))
			return rc;
		delay = run_wait_delay(&step);
		if (deadline != 0 && (left = deadline - clock_mono_ms()) <= 0)
			return run_wait_timeout(run_id, last_status, w->timeout_ms, err);
		if (deadline != 0 && left < delay)
			delay = (long)left;
		if (!client_cancel_sleep(w->cancel, delay))
			return client_fail(err, TD_CANCELLED, "the wait was cancelled");
	}
}

/* A stored event (docs/events.md) as the stream yields it (td_event_free frees it). */
static struct td_event *
run_event_from_json(const cJSON *o)
{
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(o, "seq");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
	char *data_json, *json;
	struct td_event *e;

	if (!cJSON_IsObject(o) || !cJSON_IsNumber(seq) || json_get_string(o, "type") == NULL)
		return NULL;
	data_json = data != NULL ? cJSON_PrintUnformatted(data) : NULL;
	json = cJSON_PrintUnformatted(o);
	e = td_event_new((long long)seq->valuedouble, json_get_string(o, "streamId"),
	    json_get_string(o, "type"), json_get_string(o, "time"),
	    json_get_string(o, "projectId"), json_get_string(o, "sessionId"),
	    json_get_string(o, "runId"), data_json, json != NULL ? json : "{}");
	cJSON_free(data_json);
	cJSON_free(json);
	return e;
}

enum td_code
td_list_run_events(struct td_client *c, const char *run_id, const char *after, long limit,
    const struct td_request_options *opts, struct td_run_event_list **out,
    struct td_error *err)
{
	struct client_response resp = { 0 };
	struct td_run_event_list *list;
	char *path, number[32], last[64] = "";
	const cJSON *o;
	enum td_code rc;

	*out = NULL;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	if (after != NULL && strspn(after, "0123456789abcdef:") != strlen(after))
		return client_fail(err, TD_INVALID_ARGUMENT, "not an event id");
	if (limit < 0)
		return client_fail(err, TD_INVALID_ARGUMENT, "a negative limit");
	path = client_item_path("runs", run_id, "/events");
	path = client_query_add(path, "after", after != NULL && after[0] != '\0' ? after : "0");
	snprintf(number, sizeof number, "%ld", limit);
	path = client_query_add(path, "limit", limit > 0 ? number : NULL);
	rc = client_call(c, "GET", path, NULL, true, opts, &resp, err);
	free(path);
	if (rc != TD_OK) {
		client_response_free(&resp);
		return rc;
	}
	list = xcalloc(1, sizeof *list);
	list->items = xcalloc((size_t)cJSON_GetArraySize(resp.json) + 1, sizeof *list->items);
	cJSON_ArrayForEach(o, resp.json) {
		struct td_event *e = run_event_from_json(o);
		const char *stream = json_get_string(o, "streamId");

		if (stream != NULL && strlen(stream) == 32 &&
		    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "seq")))
			snprintf(last, sizeof last, "%s:%.0f", stream,
			    cJSON_GetObjectItemCaseSensitive(o, "seq")->valuedouble);
		if (e != NULL)
			list->items[list->count++] = e;
	}
	/* The service links the next page when events remain. */
	if (resp.link != NULL && last[0] != '\0')
		list->next_after = xstrdup(last);
	client_response_free(&resp);
	*out = list;
	return TD_OK;
}

void
td_run_event_list_free(struct td_run_event_list *list)
{
	if (list == NULL)
		return;
	for (size_t i = 0; i < list->count; i++)
		td_event_free(list->items[i]);
	free(list->items);
	free(list->next_after);
	free(list);
}
