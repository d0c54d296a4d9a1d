/*
 * The host protocol, service side (supervisor-int.h; docs/host-protocol.md):
 * the table of the agent's line types and requests and their handlers, the
 * mirror of src/agent/host.c.  Runs on the run's thread.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "artifacts.h"
#include "buf.h"
#include "cache.h"
#include "changes.h"
#include "checkpoints.h"
#include "connector-run.h"
#include "errors.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "plans.h"
#include "prompts.h"
#include "runs.h"
#include "secrets.h"
#include "service.h"
#include "session-connectors.h"
#include "supervisor-int.h"
#include "timeutil.h"
#include "xalloc.h"

static void
agent_host_respond_error(struct run_state *rs, double id, const char *code, const char *message)
{
	cJSON *msg = cJSON_CreateObject(), *err;

	cJSON_AddStringToObject(msg, "type", "response");
	cJSON_AddNumberToObject(msg, "id", id);
	err = cJSON_AddObjectToObject(msg, "error");
	cJSON_AddStringToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	agent_proc_send(rs, msg);
	cJSON_Delete(msg);
}

void
agent_host_respond(struct run_state *rs, double id, cJSON *result)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "type", "response");
	cJSON_AddNumberToObject(msg, "id", id);
	cJSON_AddItemToObject(msg, "result", result);
	agent_proc_send(rs, msg);
	cJSON_Delete(msg);
}

void
agent_host_protocol_error(struct run_state *rs, const char *why)
{
	if (rs->protocol_error != NULL)
		return;
	rs->protocol_error = xstrdup(why);
	log_warn("run %s: the agent broke the host protocol (%s); stopping it", rs->ar->id, why);
	kill(-rs->pid, SIGKILL);
}

/* Persists the phase, token counts and output so far of a running run. */
void
agent_host_store_progress(struct run_state *rs)
{
	struct run_progress p = {
		.phase = rs->phase[0] ? rs->phase : "starting",
		.usage = rs->usage,
		.output = rs->output.data,
		.output_len = rs->output.len,
	};

	runs_progress(rs->ar->sv->svc, rs->ar->id, &p, &rs->store_warned);
	rs->output_stored_at = clock_mono_ms();
	rs->output_dirty = false;
}

/* A run event of this run; data consumed. */
static void
agent_host_state_emit(struct run_state *rs, const char *type, cJSON *data)
{
	events_emit(rs->ar->sv->svc->events, type, rs->project_id, rs->session_id,
	    rs->ar->id, data);
}

/* run.progress for the current phase. */
void
agent_host_emit_progress(struct run_state *rs, const char *message, bool liveness)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "phase", rs->phase[0] ? rs->phase : "starting");
	if (message != NULL)
		cJSON_AddStringToObject(d, "message", message);
	else
		cJSON_AddNullToObject(d, "message");
	cJSON_AddBoolToObject(d, "liveness", liveness);
	agent_host_state_emit(rs, "run.progress", d);
}

/* run.progress "retrying" (docs/events.md): what the agent says of the wait. */
static void
agent_host_emit_retrying(struct run_state *rs, const cJSON *msg)
{
	cJSON *d = cJSON_CreateObject();
	const char *reason = json_get_string(msg, "reason");
	const char *message = json_get_string(msg, "message");

	cJSON_AddStringToObject(d, "phase", "retrying");
	cJSON_AddItemToObject(d, "message", message ? cJSON_CreateString(message)
	    : cJSON_CreateNull());
	cJSON_AddBoolToObject(d, "liveness", false);
	if (json_check_int(msg, "attempt", 1, 1000) && json_check_int(msg, "maxRetries", 0, 1000)
	    && json_check_int(msg, "delayMs", 0, 86400000) && reason != NULL &&
	    strlen(reason) <= 64 && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(msg,
	    "attempt")) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(msg, "maxRetries")) &&
	    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(msg, "delayMs"))) {
		for (const char *const *k = (const char *const[]){ "attempt", "maxRetries",
		    "delayMs", NULL }; *k; k++)
			cJSON_AddNumberToObject(d, *k,
			    cJSON_GetObjectItemCaseSensitive(msg, *k)->valuedouble);
		cJSON_AddStringToObject(d, "reason", reason);
	}
	agent_host_state_emit(rs, "run.progress", d);
}

static void
agent_host_on_progress(struct run_state *rs, const cJSON *msg)
{
	const char *phase = json_get_string(msg, "phase");
	int64_t now = clock_mono_ms();

	if (phase == NULL || strlen(phase) >= sizeof rs->phase)
		return agent_host_protocol_error(rs, "a progress line without a valid phase");
	if (strcmp(phase, rs->phase) == 0 && now - rs->phase_at < PROGRESS_MIN_INTERVAL_MS &&
	    strcmp(phase, "retrying") != 0)
		return;
	snprintf(rs->phase, sizeof rs->phase, "%s", phase);
	rs->phase_at = now;
	agent_host_store_progress(rs);
	if (strcmp(phase, "retrying") == 0)
		return agent_host_emit_retrying(rs, msg);
	agent_host_emit_progress(rs, json_get_string(msg, "message"), false);
}

static void
agent_host_on_output(struct run_state *rs, const cJSON *msg)
{
	const char *delta = json_get_string(msg, "delta");
	cJSON *d;

	if (delta == NULL)
		return agent_host_protocol_error(rs, "an output line without a delta");
	/* Past the cap the output is cut; the finish line carries the agent's own copy. */
	buf_append(&rs->output, delta, strlen(delta));
	rs->had_output = true;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "delta", delta);
	agent_host_state_emit(rs, "run.output", d);
	rs->output_dirty = true;
	if (clock_mono_ms() - rs->output_stored_at >= OUTPUT_STORE_MS)
		agent_host_store_progress(rs);
}

/*
 * The agent's checkpoint (version 2, docs/host-protocol.md): its new messages
 * appended and the loop's state replaced, with the output so far, in one
 * transaction (checkpoints.c).  A store that fails (a full disk) keeps the
 * previous checkpoint, and the next one stores what it missed.
 */
static void
agent_host_on_checkpoint(struct run_state *rs, const cJSON *msg)
{
	struct service *svc = rs->ar->sv->svc;
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(msg, "checkpoint");
	const char *why = NULL;
	char *text;
	bool stored;

	if (!cJSON_IsObject(cp) || !json_check_int(cp, "version", 2, 2) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cp, "version")))
		return agent_host_protocol_error(rs, "a malformed checkpoint");
	text = json_print(cp);
	if (strlen(text) > RUNS_CHECKPOINT_MAX_BYTES) {
		free(text);
		return agent_host_protocol_error(rs, "a checkpoint over 768 KiB");
	}
	free(text);
	if (!checkpoint_store(&rs->cplog, svc->store, rs->ar->id, cp,
	    rs->output_dirty ? &rs->output : NULL, &stored, &why))
		return agent_host_protocol_error(rs, why);
	if (stored && rs->output_dirty) {
		rs->output_dirty = false;
		rs->output_stored_at = clock_mono_ms();
	}
	cache_drop(svc->cache, rs->ar->id);
}

/*
 * Whether a tool may have written in the workspace: the file tools,
 * run_command, a connector's tool (<connector>__<tool>), any tool of an
 * external framework's CLI.
 */
static bool
agent_host_tool_writes(const struct run_state *rs, const char *name)
{
	return rs->external || strcmp(name, "write_file") == 0 ||
	    strcmp(name, "edit_file") == 0 || strcmp(name, "run_command") == 0 ||
	    strstr(name, "__") != NULL;
}

static void
agent_host_on_tool(struct run_state *rs, const cJSON *msg)
{
	const char *name = json_get_string(msg, "name");
	const char *status = json_get_string(msg, "status");
	cJSON *d;

	if (name == NULL || status == NULL)
		return agent_host_protocol_error(rs, "a tool line without name or status");
	log_debug("run %s: tool %.64s %.16s", rs->ar->id, name, status);
	d = cJSON_CreateObject();
	for (const char *const *k = (const char *const[]){ "callId", "name", "status",
	    "summary", NULL }; *k; k++) {
		const char *v = json_get_string(msg, *k);
		if (v != NULL)
			cJSON_AddStringToObject(d, *k, v);
		else
			cJSON_AddNullToObject(d, *k);
	}
	if (json_get_string(msg, "subagent") != NULL)	/* a call of a subagent's loop */
		cJSON_AddStringToObject(d, "subagent", json_get_string(msg, "subagent"));
	agent_host_state_emit(rs, "run.tool", d);
	if (strcmp(status, "started") != 0 && agent_host_tool_writes(rs, name))
		changes_snapshot(rs->ar->sv->svc->changes, CHANGES_STEP, rs->ar->id,
		    rs->session_id, rs->workspace, rs->hidden, false);
}

static bool
agent_host_read_count(const cJSON *obj, const char *key, long long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
		return false;
	*out = (long long)v->valuedouble;
	return true;
}

/* The optional cache counts of a usage line or a finish line's usage (agents before them send none). */
static void
agent_host_read_usage_cache(struct run_state *rs, const cJSON *usage)
{
	if (cJSON_GetObjectItemCaseSensitive(usage, "cacheReadTokens") != NULL &&
	    !agent_host_read_count(usage, "cacheReadTokens", &rs->usage.cache_read))
		agent_host_protocol_error(rs, "a usage with a cacheReadTokens that is no count");
	if (cJSON_GetObjectItemCaseSensitive(usage, "cacheWriteTokens") != NULL &&
	    !agent_host_read_count(usage, "cacheWriteTokens", &rs->usage.cache_write))
		agent_host_protocol_error(rs, "a usage with a cacheWriteTokens that is no count");
}

static void
agent_host_on_usage(struct run_state *rs, const cJSON *msg)
{
	if (!agent_host_read_count(msg, "inputTokens", &rs->usage.input) ||
	    !agent_host_read_count(msg, "outputTokens", &rs->usage.output))
		agent_host_protocol_error(rs, "a usage line without token counts");
	agent_host_read_usage_cache(rs, msg);
}

/* Answers a request with an error, or not at all when code is TD_OK. */
static void
agent_host_respond_code(struct run_state *rs, long long id, enum td_code code, char *message)
{
	if (code != TD_OK)
		agent_host_respond_error(rs, (double)id, errcode_name(code),
		    message ? message : errcode_default_message(code));
	free(message);
}

/* plan.propose: stored; the answer waits for a person (supervisor_respond). */
static void
agent_host_on_plan_propose(struct run_state *rs, long long id, const cJSON *params)
{
	char *message = NULL;
	cJSON *answer = NULL;

	/* The proposal in flight at the restart is the one stored. */
	if (rs->resuming) {
		rs->resuming = false;
		if (plan_rebind(rs->ar->sv->svc, rs->ar->id, rs->session_id, id, params,
		    rs->ar->sv->svc->started_at, &answer)) {
			if (answer != NULL)
				agent_host_respond(rs, (double)id, answer);
			return;
		}
	}

	agent_host_respond_code(rs, id, plan_propose(rs->ar->sv->svc, rs->ar->id, rs->session_id, id,
	    params, &message), message);
}

static void
agent_host_on_plan_step(struct run_state *rs, long long id, const cJSON *params)
{
	char *message = NULL;
	enum td_code code = plan_step(rs->ar->sv->svc, rs->ar->id, rs->session_id, params,
	    &message);

	if (code == TD_OK)
		agent_host_respond(rs, (double)id, cJSON_CreateObject());
	agent_host_respond_code(rs, id, code, message);
}

/* permission.ask: a prompt that waits for a person, unless the run was allowed. */
static void
agent_host_on_permission_ask(struct run_state *rs, long long id, const cJSON *params)
{
	char *message = NULL;
	bool allow_now;
	enum td_code code;
	cJSON *answer = NULL;

	/* The question in flight at the restart is the prompt stored. */
	if (rs->resuming) {
		rs->resuming = false;
		if (prompt_rebind(rs->ar->sv->svc, rs->ar->id, id, params,
		    rs->ar->sv->svc->started_at, &answer)) {
			if (answer != NULL)
				agent_host_respond(rs, (double)id, answer);
			return;
		}
	}
	code = prompt_ask(rs->ar->sv->svc, rs->ar->id, id, params, &allow_now, &message);

	if (code == TD_OK && allow_now) {
		cJSON *res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "decision", "allow");
		agent_host_respond(rs, (double)id, res);
	}
	agent_host_respond_code(rs, id, code, message);
}

/*
 * secret.resolve: a bound credential's value for a connector of this run.
 * The answer is the only line that carries it; every copy is wiped.
 */
static void
agent_host_on_secret_resolve(struct run_state *rs, long long id, const cJSON *params)
{
	char *value = NULL, *message = NULL;
	cJSON *meta = cJSON_CreateObject(), *msg, *res, *v;
	enum td_code code = session_connector_id(json_get_string(params, "connectorId")) ?
	    session_connector_secret_resolve(rs->ar->sv->svc, rs->connectors, params, &value,
	    &message) : connector_secret_resolve(rs->ar->sv->svc, rs->connectors, params,
	    &value, meta, &message);

	if (code != TD_OK) {
		log_info("run %s: secret.resolve refused: %s", rs->ar->id, message);
		agent_host_respond_code(rs, id, code, message);
		cJSON_Delete(meta);
		return;
	}
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "response");
	cJSON_AddNumberToObject(msg, "id", (double)id);
	cJSON_AddItemToObject(msg, "result", meta);
	res = meta;
	v = cJSON_AddStringToObject(res, "value", value);
	secrets_plain_free(value);
	agent_proc_send(rs, msg);
	sodium_memzero(v->valuestring, strlen(v->valuestring));
	cJSON_Delete(msg);
}

/* Requests whose answer may come from a person. */
static const struct {
	const char *method;
	void (*fn)(struct run_state *, long long, const cJSON *);
} person_requests[] = {
	{ "plan.propose", agent_host_on_plan_propose },
	{ "plan.step", agent_host_on_plan_step },
	{ "permission.ask", agent_host_on_permission_ask },
};

static void
agent_host_on_request(struct run_state *rs, const cJSON *msg)
{
	struct service *svc = rs->ar->sv->svc;
	const cJSON *idv = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const char *method = json_get_string(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	cJSON *result = NULL;
	char *message = NULL;

	if (!cJSON_IsNumber(idv) || idv->valuedouble < 1 || method == NULL ||
	    !cJSON_IsObject(params))
		return agent_host_protocol_error(rs, "a request without id, method or params");
	if (strcmp(method, "artifact.save") == 0) {
		enum td_code code = artifacts_save(svc, rs->ar->id, rs->session_id,
		    rs->workspace, (const char *const *)rs->hidden, params, &result, &message);
		if (code == TD_OK)
			agent_host_respond(rs, idv->valuedouble, result);
		else
			agent_host_respond_error(rs, idv->valuedouble, errcode_name(code),
			    message ? message : errcode_default_message(code));
		free(message);
		return;
	}
	if (strcmp(method, "secret.resolve") == 0) {
		agent_host_on_secret_resolve(rs, (long long)idv->valuedouble, params);
		return;
	}
	if (strcmp(method, "permission.withdraw") == 0) {
		bool withdrawn;
		enum td_code code = prompt_withdraw(svc, rs->ar->id, params, &withdrawn, &message);

		if (code == TD_OK) {
			result = cJSON_CreateObject();
			cJSON_AddBoolToObject(result, "withdrawn", withdrawn);
			agent_host_respond(rs, idv->valuedouble, result);
		}
		agent_host_respond_code(rs, (long long)idv->valuedouble, code, message);
		return;
	}
	if (strcmp(method, "checkpoint.read") == 0) {
		const char *why = NULL;

		if ((result = checkpoint_read(svc->store, rs->ar->id, params, &why)) != NULL)
			agent_host_respond(rs, idv->valuedouble, result);
		else
			agent_host_respond_error(rs, idv->valuedouble, "not_found", why);
		return;
	}
	for (size_t i = 0; i < sizeof person_requests / sizeof person_requests[0]; i++) {
		if (strcmp(method, person_requests[i].method) == 0) {
			/* The model has answered (a resumed run may not stream
			 * again first): what waits now is a person, not the provider. */
			rs->had_output = true;
			person_requests[i].fn(rs, (long long)idv->valuedouble, params);
			return;
		}
	}
	agent_host_respond_error(rs, idv->valuedouble, "unknown_method",
	    "The service does not know this request.");
}

static void
agent_host_on_finish(struct run_state *rs, const cJSON *msg)
{
	static const char *const statuses[] = { "completed", "failed", "cancelled", NULL };
	const char *status = json_get_string(msg, "status");
	const char *output = json_get_string(msg, "output");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(msg, "error");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(msg, "usage");

	if (rs->finished)
		return agent_host_protocol_error(rs, "a second finish line");
	if (!json_check_enum(msg, "status", false, statuses) || status == NULL)
		return agent_host_protocol_error(rs, "a finish line without a valid status");
	rs->finished = true;
	snprintf(rs->status, sizeof rs->status, "%s", status);
	rs->final_output = xstrdup_or_null(output);
	if (cJSON_IsObject(err)) {
		rs->error_code = xstrdup_or_null(json_get_string(err, "code"));
		rs->error_message = xstrdup_or_null(json_get_string(err, "message"));
	}
	if (cJSON_IsObject(usage)) {
		agent_host_read_count(usage, "inputTokens", &rs->usage.input);
		agent_host_read_count(usage, "outputTokens", &rs->usage.output);
		agent_host_read_usage_cache(rs, usage);
	}
}

/*
 * routing.reviewer: the verdict of a review, stored on the run (its latest)
 * and published as run.review.
 */
static void
agent_host_on_review(struct run_state *rs, const cJSON *msg)
{
	static const char *const verdicts[] = { "approved", "changes_requested", "error", NULL };
	const cJSON *findings = cJSON_GetObjectItemCaseSensitive(msg, "findings"), *f;
	cJSON *review;
	char *text;

	if (!json_check_enum(msg, "verdict", false, verdicts) ||
	    json_get_string(msg, "verdict") == NULL || !cJSON_IsArray(findings) ||
	    cJSON_GetArraySize(findings) > 20 || !json_check_int(msg, "round", 1, 2) ||
	    !json_check_string(msg, "summary", true, false, 0, 16384))
		return agent_host_protocol_error(rs, "a malformed review line");
	cJSON_ArrayForEach(f, findings)
		if (!cJSON_IsString(f) || strlen(f->valuestring) > 4096)
			return agent_host_protocol_error(rs, "a malformed review line");
	review = cJSON_CreateObject();
	cJSON_AddStringToObject(review, "verdict", json_get_string(msg, "verdict"));
	cJSON_AddItemToObject(review, "findings", cJSON_Duplicate(findings, true));
	cJSON_AddStringToObject(review, "summary", json_get_string(msg, "summary"));
	cJSON_AddNumberToObject(review, "round",
	    cJSON_GetObjectItemCaseSensitive(msg, "round")->valuedouble);
	text = json_print(review);
	runs_review(rs->ar->sv->svc, rs->ar->id, text);
	free(text);
	agent_host_state_emit(rs, "run.review", review);
}

static const struct {
	const char *type;
	void (*fn)(struct run_state *, const cJSON *);
} line_handlers[] = {
	{ "review", agent_host_on_review },
	{ "progress", agent_host_on_progress },
	{ "output", agent_host_on_output },
	{ "tool", agent_host_on_tool },
	{ "usage", agent_host_on_usage },
	{ "request", agent_host_on_request },
	{ "finish", agent_host_on_finish },
	{ "checkpoint", agent_host_on_checkpoint },
};

static void
agent_host_handle_line(struct run_state *rs, const char *line, size_t len)
{
	cJSON *msg;
	const char *type;

	if (rs->protocol_error != NULL || len == 0)
		return;
	msg = json_parse(line, len);
	type = json_get_string(msg, "type");
	if (!cJSON_IsObject(msg) || type == NULL) {
		cJSON_Delete(msg);
		return agent_host_protocol_error(rs, "a line that is not a JSON object with a type");
	}
	for (size_t i = 0; i < sizeof line_handlers / sizeof line_handlers[0]; i++) {
		if (strcmp(type, line_handlers[i].type) == 0) {
			line_handlers[i].fn(rs, msg);
			cJSON_Delete(msg);
			return;
		}
	}
	cJSON_Delete(msg);
	agent_host_protocol_error(rs, "a line of an unknown type");
}

/* Splits what arrived on stdout into lines; false at end of file. */
bool
agent_host_read_stdout(struct run_state *rs)
{
	char chunk[65536];
	ssize_t n = read(rs->out_fd, chunk, sizeof chunk);
	const char *p = chunk, *nl;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	while (p < chunk + n) {
		size_t rest = (size_t)(chunk + n - p);
		nl = memchr(p, '\n', rest);
		size_t piece = nl ? (size_t)(nl - p) : rest;

		if (!buf_append(&rs->line, p, piece)) {
			agent_host_protocol_error(rs, "a line longer than 1 MiB");
			buf_reset(&rs->line);
		} else if (nl != NULL) {
			agent_host_handle_line(rs, rs->line.data ? rs->line.data : "", rs->line.len);
			buf_reset(&rs->line);
		}
		p += piece + (nl ? 1 : 0);
	}
	return true;
}
