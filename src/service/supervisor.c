/*
 * The supervisor (supervisor.h).  A scheduler thread moves queued runs to
 * running while slots are free; each running run has a thread that spawns
 * its taskdeck-agent, reads its lines, answers its requests and finalizes
 * the run when the process is gone.  That thread is the only writer of the
 * agent's stdin; others reach it through a wake-up eventfd.
 *
 * Lock order: the store lock before sv->mu, never the reverse.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "artifacts.h"
#include "buf.h"
#include "cache.h"
#include "connectors.h"
#include "events.h"
#include "frameworks.h"
#include "routing.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "plans.h"
#include "prompts.h"
#include "resource.h"
#include "runs.h"
#include "sandbox.h"
#include "secrets.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

#define LINE_MAX_BYTES (1024 * 1024)
#define OUTPUT_MAX_BYTES (1024 * 1024)
#define HISTORY_RUNS 20
#define HISTORY_OUTPUT_MAX 8192
#define CANCEL_GRACE_MS 5000
#define STOP_GRACE_MS 2000
#define EXIT_WAIT_MS 5000
#define PROGRESS_MIN_INTERVAL_MS 1000
/* run.progress with liveness:true, this often until the first output line. */
#define LIVENESS_INTERVAL_MS 10000
/* durable: the streamed output is stored at most this long after it arrived (docs/events.md). */
#define OUTPUT_STORE_MS 200
/* durable: the largest checkpoint stored (docs/host-protocol.md). */
#define CHECKPOINT_MAX_BYTES (768 * 1024)
/* durable: each agent process of a resumed run numbers its requests above resumes * this. */
#define REQUEST_ID_STRIDE 1000000000.0
/* finding 3: finalization retries, from this wait up to the next. */
#define FINALIZE_RETRY_MIN_MS 100
#define FINALIZE_RETRY_MAX_MS 5000

/* An answer to one of the agent's requests, decided on another thread. */
struct queued_response {
	long long request_id;
	cJSON *result;
	struct queued_response *next;
};

struct agent_run {
	struct supervisor *sv;
	char id[TD_ID_MAX];
	int wake_fd;			/* eventfd: cancel, stop or a response */
	bool cancel_requested;		/* under sv->mu */
	bool stop_requested;		/* under sv->mu */
	bool resume;			/* durable: resumed after a restart */
	struct queued_response *responses;	/* under sv->mu, oldest first */
	struct agent_run *next;
};

struct supervisor {
	struct service *svc;
	pthread_mutex_t mu;
	pthread_cond_t cond;		/* kicks, and run threads ending */
	bool kicked;
	bool stopping;
	pthread_t scheduler;
	struct agent_run *runs;		/* every run with a thread */
	int nactive;
	/* durable: runs left running by an earlier process, waiting for a slot to resume */
	char (*resume_ids)[TD_ID_MAX];
	size_t nresume;
};

/* What one run thread learns from its agent. */
struct run_state {
	struct agent_run *ar;
	char session_id[TD_ID_MAX];
	char project_id[TD_ID_MAX];
	char *workspace;
	char **hidden;			/* what the run may not see (sandbox_message) */
	pid_t pid;
	int in_fd, out_fd, err_fd;
	struct buf line;		/* a partial line from stdout */
	struct buf output;		/* the output deltas so far */
	char phase[32];
	int64_t phase_at;
	long long input_tokens, output_tokens;
	bool finished;			/* a finish line arrived */
	bool had_output;		/* an output line arrived */
	char status[16];
	char *final_output;
	char *error_code, *error_message;
	char *protocol_error;		/* why the agent was killed */
	cJSON *connectors;		/* the start message's connectors (secret.resolve) */
	bool runtime_unready;		/* the framework's CLI is not ready (start_message) */
	bool checkpoint_invalid;	/* the stored checkpoint is damaged (start_message) */
	bool cancel_sent;
	int64_t kill_at;		/* td_mono_ms() deadline, 0 for none */
	/* durable */
	bool external;			/* an external framework: it cannot resume */
	bool resuming;			/* the first person request may be the one in flight */
	int resumes;			/* how often the run has resumed */
	int64_t output_stored_at;	/* td_mono_ms() of the last store of the output */
	bool output_dirty;		/* output arrived since */
	bool store_warned;		/* a failed store was logged */
};

static void
wake(struct agent_run *ar)
{
	uint64_t one = 1;

	if (write(ar->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("cannot wake the thread of %s: %s", ar->id, strerror(errno));
}

/* Writes one line to the agent's stdin; false once the agent is gone. */
static bool
agent_send(struct run_state *rs, const cJSON *msg)
{
	char *text = json_print(msg);
	size_t len = strlen(text), off = 0;
	bool ok = true;

	text = realloc(text, len + 2);
	if (text == NULL)
		abort();
	text[len++] = '\n';
	while (rs->in_fd >= 0 && off < len) {
		ssize_t n = write(rs->in_fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = false;
			break;
		}
		off += (size_t)n;
	}
	sodium_memzero(text, len);	/* the start line holds the API key */
	free(text);
	return ok && rs->in_fd >= 0;
}

static void
agent_respond_error(struct run_state *rs, double id, const char *code, const char *message)
{
	cJSON *msg = cJSON_CreateObject(), *err;

	cJSON_AddStringToObject(msg, "type", "response");
	cJSON_AddNumberToObject(msg, "id", id);
	err = cJSON_AddObjectToObject(msg, "error");
	cJSON_AddStringToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	agent_send(rs, msg);
	cJSON_Delete(msg);
}

static void
agent_respond(struct run_state *rs, double id, cJSON *result)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "type", "response");
	cJSON_AddNumberToObject(msg, "id", id);
	cJSON_AddItemToObject(msg, "result", result);
	agent_send(rs, msg);
	cJSON_Delete(msg);
}

static void
protocol_error(struct run_state *rs, const char *why)
{
	if (rs->protocol_error != NULL)
		return;
	rs->protocol_error = xstrdup(why);
	log_warn("run %s: the agent broke the host protocol (%s); stopping it", rs->ar->id, why);
	kill(-rs->pid, SIGKILL);
}

/* Persists the phase and token counts of a running run. */
static void
progress_store(struct run_state *rs)
{
	struct service *svc = rs->ar->sv->svc;
	struct store *st = svc->store;
	sqlite3_stmt *s;
	sqlite3 *db = store_lock(st);

	/* durable (issue 17, finding 10): the output streamed so far is kept too. */
	s = store_stmt(st, "UPDATE runs SET progress_phase = ?2, progress_at = ?3,"
	    " input_tokens = ?4, output_tokens = ?5, output = ?6,"
	    " updated_at = " RESOURCE_NEXT_TIME(3) " WHERE id = ?1 AND status = 'running'");
	sqlite3_bind_text(s, 1, rs->ar->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, rs->phase[0] ? rs->phase : "starting", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, td_now_ms());
	sqlite3_bind_int64(s, 4, rs->input_tokens);
	sqlite3_bind_int64(s, 5, rs->output_tokens);
	sqlite3_bind_text(s, 6, rs->output.data ? rs->output.data : "", (int)rs->output.len,
	    SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE && !rs->store_warned) {
		log_error("run %s: cannot store progress: %s", rs->ar->id, sqlite3_errmsg(db));
		rs->store_warned = true;
	}
	sqlite3_reset(s);
	rs->output_stored_at = td_mono_ms();
	rs->output_dirty = false;
	cache_drop(svc->cache, rs->ar->id);
	store_unlock(st);
}

/* A run event of this run; data consumed. */
static void
run_state_emit(struct run_state *rs, const char *type, cJSON *data)
{
	events_emit(rs->ar->sv->svc->events, type, rs->project_id, rs->session_id,
	    rs->ar->id, data);
}

/* run.progress for the current phase. */
static void
emit_progress(struct run_state *rs, const char *message, bool liveness)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "phase", rs->phase[0] ? rs->phase : "starting");
	if (message != NULL)
		cJSON_AddStringToObject(d, "message", message);
	else
		cJSON_AddNullToObject(d, "message");
	cJSON_AddBoolToObject(d, "liveness", liveness);
	run_state_emit(rs, "run.progress", d);
}

static void
on_progress(struct run_state *rs, const cJSON *msg)
{
	const char *phase = json_get_string(msg, "phase");
	int64_t now = td_mono_ms();

	if (phase == NULL || strlen(phase) >= sizeof rs->phase)
		return protocol_error(rs, "a progress line without a valid phase");
	if (strcmp(phase, rs->phase) == 0 && now - rs->phase_at < PROGRESS_MIN_INTERVAL_MS)
		return;
	snprintf(rs->phase, sizeof rs->phase, "%s", phase);
	rs->phase_at = now;
	progress_store(rs);
	emit_progress(rs, json_get_string(msg, "message"), false);
}

static void
on_output(struct run_state *rs, const cJSON *msg)
{
	const char *delta = json_get_string(msg, "delta");
	cJSON *d;

	if (delta == NULL)
		return protocol_error(rs, "an output line without a delta");
	/* Past the cap the output is cut; the finish line carries the agent's own copy. */
	buf_append(&rs->output, delta, strlen(delta));
	rs->had_output = true;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "delta", delta);
	run_state_emit(rs, "run.output", d);
	rs->output_dirty = true;
	if (td_mono_ms() - rs->output_stored_at >= OUTPUT_STORE_MS)
		progress_store(rs);
}

/*
 * durable: the agent's checkpoint (docs/host-protocol.md) replaces the run's
 * last one, with the output so far, in one statement.  A store that fails
 * (a full disk) keeps the previous checkpoint: a resume then redoes more.
 */
static void
on_checkpoint(struct run_state *rs, const cJSON *msg)
{
	struct service *svc = rs->ar->sv->svc;
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(msg, "checkpoint");
	const char *output = json_get_string(cp, "output");
	sqlite3_stmt *s;
	sqlite3 *db;
	char *text;

	if (!cJSON_IsObject(cp) || !json_check_int(cp, "version", 1, 1) ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cp, "messages")) ||
	    output == NULL || strlen(output) > OUTPUT_MAX_BYTES)
		return protocol_error(rs, "a malformed checkpoint");
	text = json_print(cp);
	if (strlen(text) > CHECKPOINT_MAX_BYTES) {
		free(text);
		return protocol_error(rs, "a checkpoint over 768 KiB");
	}
	db = store_lock(svc->store);
	s = store_stmt(svc->store, "UPDATE runs SET checkpoint = ?2, checkpoint_at = ?3,"
	    " output = ?4, updated_at = " RESOURCE_NEXT_TIME(3)
	    " WHERE id = ?1 AND status = 'running'");
	sqlite3_bind_text(s, 1, rs->ar->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, td_now_ms());
	sqlite3_bind_text(s, 4, output, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE && !rs->store_warned) {
		log_error("run %s: cannot store a checkpoint: %s", rs->ar->id, sqlite3_errmsg(db));
		rs->store_warned = true;
	}
	sqlite3_reset(s);
	cache_drop(svc->cache, rs->ar->id);
	store_unlock(svc->store);
	free(text);
}

static void
on_tool(struct run_state *rs, const cJSON *msg)
{
	const char *name = json_get_string(msg, "name");
	const char *status = json_get_string(msg, "status");
	cJSON *d;

	if (name == NULL || status == NULL)
		return protocol_error(rs, "a tool line without name or status");
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
	run_state_emit(rs, "run.tool", d);
}

static bool
read_count(const cJSON *obj, const char *key, long long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
		return false;
	*out = (long long)v->valuedouble;
	return true;
}

static void
on_usage(struct run_state *rs, const cJSON *msg)
{
	if (!read_count(msg, "inputTokens", &rs->input_tokens) ||
	    !read_count(msg, "outputTokens", &rs->output_tokens))
		protocol_error(rs, "a usage line without token counts");
}

/* Answers a request with an error, or not at all when code is TD_OK. */
static void
respond_code(struct run_state *rs, long long id, enum td_code code, char *message)
{
	if (code != TD_OK)
		agent_respond_error(rs, (double)id, td_code_name(code),
		    message ? message : td_code_default_message(code));
	free(message);
}

/* plan.propose: stored; the answer waits for a person (supervisor_respond). */
static void
on_plan_propose(struct run_state *rs, long long id, const cJSON *params)
{
	char *message = NULL;
	cJSON *answer = NULL;

	/* durable: the proposal in flight at the restart is the one stored. */
	if (rs->resuming) {
		rs->resuming = false;
		if (plan_rebind(rs->ar->sv->svc, rs->ar->id, rs->session_id, id, params,
		    rs->ar->sv->svc->started_at, &answer)) {
			if (answer != NULL)
				agent_respond(rs, (double)id, answer);
			return;
		}
	}

	respond_code(rs, id, plan_propose(rs->ar->sv->svc, rs->ar->id, rs->session_id, id,
	    params, &message), message);
}

static void
on_plan_step(struct run_state *rs, long long id, const cJSON *params)
{
	char *message = NULL;
	enum td_code code = plan_step(rs->ar->sv->svc, rs->ar->id, rs->session_id, params,
	    &message);

	if (code == TD_OK)
		agent_respond(rs, (double)id, cJSON_CreateObject());
	respond_code(rs, id, code, message);
}

/* permission.ask: a prompt that waits for a person, unless the run was allowed. */
static void
on_permission_ask(struct run_state *rs, long long id, const cJSON *params)
{
	char *message = NULL;
	bool allow_now;
	enum td_code code;
	cJSON *answer = NULL;

	/* durable: the question in flight at the restart is the prompt stored. */
	if (rs->resuming) {
		rs->resuming = false;
		if (prompt_rebind(rs->ar->sv->svc, rs->ar->id, id, params,
		    rs->ar->sv->svc->started_at, &answer)) {
			if (answer != NULL)
				agent_respond(rs, (double)id, answer);
			return;
		}
	}
	code = prompt_ask(rs->ar->sv->svc, rs->ar->id, id, params, &allow_now, &message);

	if (code == TD_OK && allow_now) {
		cJSON *res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "decision", "allow");
		agent_respond(rs, (double)id, res);
	}
	respond_code(rs, id, code, message);
}

/*
 * secret.resolve: a bound credential's value for a connector of this run.
 * The answer is the only line that carries it; every copy is wiped.
 */
static void
on_secret_resolve(struct run_state *rs, long long id, const cJSON *params)
{
	char *value = NULL, *message = NULL;
	enum td_code code = connector_secret_resolve(rs->ar->sv->svc, rs->connectors, params,
	    &value, &message);
	cJSON *msg, *res, *v;

	if (code != TD_OK) {
		log_info("run %s: secret.resolve refused: %s", rs->ar->id, message);
		respond_code(rs, id, code, message);
		return;
	}
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "response");
	cJSON_AddNumberToObject(msg, "id", (double)id);
	res = cJSON_AddObjectToObject(msg, "result");
	v = cJSON_AddStringToObject(res, "value", value);
	secrets_plain_free(value);
	agent_send(rs, msg);
	sodium_memzero(v->valuestring, strlen(v->valuestring));
	cJSON_Delete(msg);
}

/* Requests whose answer may come from a person. */
static const struct {
	const char *method;
	void (*fn)(struct run_state *, long long, const cJSON *);
} person_requests[] = {
	{ "plan.propose", on_plan_propose },
	{ "plan.step", on_plan_step },
	{ "permission.ask", on_permission_ask },
};

static void
on_request(struct run_state *rs, const cJSON *msg)
{
	struct service *svc = rs->ar->sv->svc;
	const cJSON *idv = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const char *method = json_get_string(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	cJSON *result = NULL;
	char *message = NULL;

	if (!cJSON_IsNumber(idv) || idv->valuedouble < 1 || method == NULL ||
	    !cJSON_IsObject(params))
		return protocol_error(rs, "a request without id, method or params");
	if (strcmp(method, "artifact.save") == 0) {
		enum td_code code = artifacts_save(svc, rs->ar->id, rs->session_id,
		    rs->workspace, (const char *const *)rs->hidden, params, &result, &message);
		if (code == TD_OK)
			agent_respond(rs, idv->valuedouble, result);
		else
			agent_respond_error(rs, idv->valuedouble, td_code_name(code),
			    message ? message : td_code_default_message(code));
		free(message);
		return;
	}
	if (strcmp(method, "secret.resolve") == 0) {
		on_secret_resolve(rs, (long long)idv->valuedouble, params);
		return;
	}
	for (size_t i = 0; i < sizeof person_requests / sizeof person_requests[0]; i++) {
		if (strcmp(method, person_requests[i].method) == 0) {
			person_requests[i].fn(rs, (long long)idv->valuedouble, params);
			return;
		}
	}
	agent_respond_error(rs, idv->valuedouble, "unknown_method",
	    "The service does not know this request.");
}

static void
on_finish(struct run_state *rs, const cJSON *msg)
{
	static const char *const statuses[] = { "completed", "failed", "cancelled", NULL };
	const char *status = json_get_string(msg, "status");
	const char *output = json_get_string(msg, "output");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(msg, "error");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(msg, "usage");

	if (rs->finished)
		return protocol_error(rs, "a second finish line");
	if (!json_check_enum(msg, "status", false, statuses) || status == NULL)
		return protocol_error(rs, "a finish line without a valid status");
	rs->finished = true;
	snprintf(rs->status, sizeof rs->status, "%s", status);
	rs->final_output = xstrdup_or_null(output);
	if (cJSON_IsObject(err)) {
		rs->error_code = xstrdup_or_null(json_get_string(err, "code"));
		rs->error_message = xstrdup_or_null(json_get_string(err, "message"));
	}
	if (cJSON_IsObject(usage)) {
		read_count(usage, "inputTokens", &rs->input_tokens);
		read_count(usage, "outputTokens", &rs->output_tokens);
	}
}

/*
 * routing.reviewer: the verdict of a review, stored on the run (its latest)
 * and published as run.review.
 */
static void
on_review(struct run_state *rs, const cJSON *msg)
{
	static const char *const verdicts[] = { "approved", "changes_requested", "error", NULL };
	struct service *svc = rs->ar->sv->svc;
	const cJSON *findings = cJSON_GetObjectItemCaseSensitive(msg, "findings"), *f;
	cJSON *review;
	sqlite3_stmt *s;
	char *text;

	if (!json_check_enum(msg, "verdict", false, verdicts) ||
	    json_get_string(msg, "verdict") == NULL || !cJSON_IsArray(findings) ||
	    cJSON_GetArraySize(findings) > 20 || !json_check_int(msg, "round", 1, 2) ||
	    !json_check_string(msg, "summary", true, false, 0, 16384))
		return protocol_error(rs, "a malformed review line");
	cJSON_ArrayForEach(f, findings)
		if (!cJSON_IsString(f) || strlen(f->valuestring) > 4096)
			return protocol_error(rs, "a malformed review line");
	review = cJSON_CreateObject();
	cJSON_AddStringToObject(review, "verdict", json_get_string(msg, "verdict"));
	cJSON_AddItemToObject(review, "findings", cJSON_Duplicate(findings, true));
	cJSON_AddStringToObject(review, "summary", json_get_string(msg, "summary"));
	cJSON_AddNumberToObject(review, "round",
	    cJSON_GetObjectItemCaseSensitive(msg, "round")->valuedouble);
	text = json_print(review);
	store_lock(svc->store);
	s = store_stmt(svc->store, "UPDATE runs SET review = ?2, updated_at = "
	    RESOURCE_NEXT_TIME(3) " WHERE id = ?1");
	sqlite3_bind_text(s, 1, rs->ar->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, td_now_ms());
	if (sqlite3_step(s) != SQLITE_DONE)
		log_error("run %s: cannot store a review", rs->ar->id);
	sqlite3_reset(s);
	cache_drop(svc->cache, rs->ar->id);
	store_unlock(svc->store);
	free(text);
	run_state_emit(rs, "run.review", review);
}

static const struct {
	const char *type;
	void (*fn)(struct run_state *, const cJSON *);
} line_handlers[] = {
	{ "review", on_review },
	{ "progress", on_progress },
	{ "output", on_output },
	{ "tool", on_tool },
	{ "usage", on_usage },
	{ "request", on_request },
	{ "finish", on_finish },
	{ "checkpoint", on_checkpoint },
};

static void
handle_line(struct run_state *rs, const char *line, size_t len)
{
	cJSON *msg;
	const char *type;

	if (rs->protocol_error != NULL || len == 0)
		return;
	msg = json_parse(line, len);
	type = json_get_string(msg, "type");
	if (!cJSON_IsObject(msg) || type == NULL) {
		cJSON_Delete(msg);
		return protocol_error(rs, "a line that is not a JSON object with a type");
	}
	for (size_t i = 0; i < sizeof line_handlers / sizeof line_handlers[0]; i++) {
		if (strcmp(type, line_handlers[i].type) == 0) {
			line_handlers[i].fn(rs, msg);
			cJSON_Delete(msg);
			return;
		}
	}
	cJSON_Delete(msg);
	protocol_error(rs, "a line of an unknown type");
}

/* Splits what arrived on stdout into lines; false at end of file. */
static bool
read_stdout(struct run_state *rs)
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
			protocol_error(rs, "a line longer than 1 MiB");
			buf_reset(&rs->line);
		} else if (nl != NULL) {
			handle_line(rs, rs->line.data ? rs->line.data : "", rs->line.len);
			buf_reset(&rs->line);
		}
		p += piece + (nl ? 1 : 0);
	}
	return true;
}

/* Copies the agent's stderr into the log, a chunk at a time; false at end of file. */
static bool
read_stderr(struct run_state *rs)
{
	char chunk[4096];
	ssize_t n = read(rs->err_fd, chunk, sizeof chunk - 1);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	chunk[n] = '\0';
	chunk[strcspn(chunk, "\r")] = '\0';
	if (n > 0 && chunk[strlen(chunk) - 1] == '\n')
		chunk[strlen(chunk) - 1] = '\0';
	log_debug("agent %s: %s", rs->ar->id, chunk);
	return true;
}

/*
 * The start line's "sandbox": what the run's commands may reach (docs/agent.md).
 * Hidden: taskdeck's own directories, credential files, and the directories of
 * other sessions (the most recent SANDBOX_SESSIONS_MAX) unless they hold this run's
 * workspace.
 */
#define SANDBOX_SESSIONS_MAX 256
#define SANDBOX_HIDDEN_BYTES (256 * 1024)

static void
sandbox_message(struct service *svc, cJSON *msg, const char *workspace, bool network,
    char ***sent)
{
	cJSON *sb = cJSON_AddObjectToObject(msg, "sandbox"), *arr;
	char **hidden = sandbox_hidden_paths(&svc->paths, NULL);
	sqlite3_stmt *s;
	size_t bytes = 0;

	store_lock(svc->store);
	s = store_stmt(svc->store, "SELECT DISTINCT cwd FROM sessions WHERE cwd != ?1"
	    " ORDER BY updated_at DESC LIMIT ?2");
	sqlite3_bind_text(s, 1, workspace, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, SANDBOX_SESSIONS_MAX);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *cwd = resource_text(s, 0);
		size_t n = strlen(cwd);

		/* A session in a directory that holds this workspace: not hidden, it would
		 * hide the user's tools around the workspace too (docs/agent.md). */
		if (strncmp(workspace, cwd, n) == 0 && (workspace[n] == '/' || workspace[n] == '\0'))
			continue;
		hidden = sandbox_hidden_add(hidden, cwd);
	}
	sqlite3_reset(s);
	store_unlock(svc->store);
	cJSON_AddBoolToObject(sb, "network", network);
	cJSON_AddBoolToObject(sb, "allowUnconfined", settings_allow_unconfined(svc->settings));
	arr = cJSON_AddArrayToObject(sb, "hidden");
	/* A hidden directory holding the workspace stays hidden but for the workspace. */
	for (char **h = hidden; *h != NULL; h++) {
		if ((bytes += strlen(*h)) > SANDBOX_HIDDEN_BYTES) {
			log_warn("the sandbox hides only the first %d KiB of paths",
			    SANDBOX_HIDDEN_BYTES / 1024);
			for (char **rest = h; *rest != NULL; rest++)
				free(*rest);
			*h = NULL;
			break;
		}
		cJSON_AddItemToArray(arr, cJSON_CreateString(*h));
	}
	/* The same set for the artifacts the run saves (artifacts_save). */
	sandbox_hidden_free(*sent);
	*sent = hidden;
}

/* The start line's body: the run, its provider, project and session history. */
/* keycred: wipes the provider's API key in a start message before it is freed. */
static void
start_message_wipe(cJSON *msg)
{
	cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(msg, "provider"), "apiKey");

	if (cJSON_IsString(k) && k->valuestring != NULL)
		sodium_memzero(k->valuestring, strlen(k->valuestring));
	routing_start_wipe(msg);
}

static cJSON *
start_message(struct supervisor *sv, struct run_state *rs, char **why)
{
	struct service *svc = sv->svc;
	struct store *st = svc->store;
	cJSON *run, *msg, *r, *cfg, *p, *proj, *hist, *limits;
	const cJSON *provider;
	const char *key_env, *key = NULL;
	char *cred_key = NULL;
	sqlite3_stmt *s;
	bool network;

	store_lock(st);
	run = run_load(st, rs->ar->id);
	if (run == NULL) {
		store_unlock(st);
		*why = xstrdup("the run disappeared from the store");
		return NULL;
	}
	network = cJSON_IsTrue(cJSON_GetObjectItem(run, "network"));
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "start");
	r = cJSON_AddObjectToObject(msg, "run");
	cJSON_AddStringToObject(r, "id", rs->ar->id);
	for (const char *const *f = (const char *const[]){ "sessionId", "projectId", "prompt",
	    "permissionProfile", "turnIntent", NULL }; *f; f++)
		cJSON_AddItemToObject(r, *f, cJSON_Duplicate(cJSON_GetObjectItem(run, *f), true));
	cJSON_AddStringToObject(r, "workspace", json_get_string(run, "cwd"));
	snprintf(rs->session_id, sizeof rs->session_id, "%s", json_get_string(run, "sessionId"));
	snprintf(rs->project_id, sizeof rs->project_id, "%s", json_get_string(run, "projectId"));
	rs->workspace = xstrdup(json_get_string(run, "cwd"));
	cfg = cJSON_DetachItemFromObject(run, "config");
	cJSON_AddItemToObject(msg, "config", cfg);

	proj = cJSON_AddObjectToObject(msg, "project");
	s = store_stmt(st, "SELECT name, context FROM projects WHERE id = ?1");
	sqlite3_bind_text(s, 1, json_get_string(run, "projectId"), -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		cJSON_AddStringToObject(proj, "name", resource_text(s, 0));
		cJSON_AddStringToObject(proj, "context", resource_text(s, 1));
	}
	sqlite3_reset(s);

	hist = cJSON_AddArrayToObject(msg, "history");
	s = store_stmt(st, "SELECT prompt, output FROM (SELECT id, prompt, output FROM runs"
	    " WHERE session_id = ?1 AND id < ?2 AND status IN ('completed', 'failed', 'cancelled')"
	    " ORDER BY id DESC LIMIT ?3) ORDER BY id");
	sqlite3_bind_text(s, 1, rs->session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, rs->ar->id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, HISTORY_RUNS);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *h = cJSON_CreateObject();
		char *out = strndup(resource_text(s, 1), HISTORY_OUTPUT_MAX);

		cJSON_AddStringToObject(h, "prompt", resource_text(s, 0));
		cJSON_AddStringToObject(h, "output", out);
		free(out);
		cJSON_AddItemToArray(hist, h);
	}
	sqlite3_reset(s);

	/*
	 * durable: a resumed run starts from its checkpoint (which holds the
	 * history already) with request ids above those of earlier processes.
	 */
	if (rs->ar->resume) {
		cJSON *cp = NULL;

		s = store_stmt(st, "SELECT checkpoint, resumes FROM runs WHERE id = ?1");
		sqlite3_bind_text(s, 1, rs->ar->id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			/* Only objects up to CHECKPOINT_MAX_BYTES are stored: anything else is damage. */
			rs->checkpoint_invalid = sqlite3_column_type(s, 0) != SQLITE_NULL;
			if (rs->checkpoint_invalid && sqlite3_column_bytes(s, 0) <= CHECKPOINT_MAX_BYTES)
				cp = json_parse(resource_text(s, 0), strlen(resource_text(s, 0)));
			rs->resumes = sqlite3_column_int(s, 1);
		}
		sqlite3_reset(s);
		cJSON_AddNumberToObject(r, "requestIdBase", rs->resumes * REQUEST_ID_STRIDE);
		if (cJSON_IsObject(cp)) {
			const char *out = json_get_string(cp, "output");

			rs->checkpoint_invalid = false;
			if (out != NULL)
				buf_append(&rs->output, out, strlen(out));
			cJSON_ReplaceItemInObject(msg, "history", cJSON_CreateArray());
			cJSON_AddItemToObject(msg, "checkpoint", cp);
		} else {
			cJSON_Delete(cp);
		}
	}
	store_unlock(st);
	cJSON_Delete(run);
	if (rs->checkpoint_invalid) {
		cJSON_Delete(msg);
		*why = xstrdup("the stored checkpoint of the resumed run is not a JSON object of at "
		    "most 768 KiB (a damaged database)");
		return NULL;
	}

	rs->external = frameworks_external(json_get_string(cfg, "framework"));
	/* An external framework: the CLI taskdeck-agent drives, probed again now. */
	if (frameworks_external(json_get_string(cfg, "framework"))) {
		cJSON *rt = frameworks_start_runtime(svc, json_get_string(cfg, "framework"), why);

		if (rt == NULL) {
			rs->runtime_unready = true;
			cJSON_Delete(msg);
			return NULL;
		}
		cJSON_AddItemToObject(msg, "runtime", rt);
	}

	provider = settings_provider(svc->settings, json_get_string(cfg, "provider"));
	if (provider == NULL) {
		cJSON_Delete(msg);
		*why = xstrdup("the provider of the run is no longer configured");
		return NULL;
	}
	p = cJSON_AddObjectToObject(msg, "provider");
	cJSON_AddStringToObject(p, "kind", json_get_string(provider, "kind"));
	if (json_get_string(provider, "baseUrl") != NULL)
		cJSON_AddStringToObject(p, "baseUrl", json_get_string(provider, "baseUrl"));
	else
		cJSON_AddNullToObject(p, "baseUrl");
	key_env = json_get_string(provider, "apiKeyEnv");
	if (key_env != NULL)
		key = settings_api_key(svc->settings, key_env);
	/* keycred: or the sealed credential the provider names, opened just now. */
	if (json_get_string(provider, "apiKeyCredential") != NULL) {
		char *sealed_why = NULL;

		if (!credential_provider_key(svc, json_get_string(provider, "apiKeyCredential"),
		    &cred_key, &sealed_why)) {
			*why = xasprintf("The API key of provider %s cannot be read: %s.",
			    json_get_string(cfg, "provider"), sealed_why);
			free(sealed_why);
			cJSON_Delete(msg);
			return NULL;
		}
		key = cred_key;
	}
	if (key != NULL)
		cJSON_AddStringToObject(p, "apiKey", key);
	else
		cJSON_AddNullToObject(p, "apiKey");
	secrets_plain_free(cred_key);
	cJSON_AddStringToObject(p, "replayDir", svc->replay_dir);

	sandbox_message(svc, msg, rs->workspace, network, &rs->hidden);
	if (!rs->external) {
		cJSON *routing = routing_start_message(svc, why);

		if (routing == NULL) {
			start_message_wipe(msg);
			cJSON_Delete(msg);
			return NULL;
		}
		cJSON_AddItemToObject(msg, "routing", routing);
	}

	limits = cJSON_AddObjectToObject(msg, "limits");
	cJSON_AddNumberToObject(limits, "maxTurns", settings_max_turns(svc->settings));
	cJSON_AddNumberToObject(limits, "commandTimeoutMs",
	    (double)settings_command_timeout_ms(svc->settings));
	cJSON_AddNumberToObject(limits, "maxToolOutputBytes", 65536);
	/* Enabled connectors, without secrets; kept to check secret.resolve against. */
	cJSON_AddNumberToObject(limits, "connectorTimeoutMs", CONNECTOR_RUN_TIMEOUT_MS);
	rs->connectors = connectors_for_run(svc);
	cJSON_AddItemToObject(msg, "connectors", cJSON_Duplicate(rs->connectors, true));
	return msg;
}

/* Drops the history, then the project context, until the line fits. */
static void
start_message_fit(cJSON *msg)
{
	char *text = json_print(msg);
	size_t len = strlen(text);

	free(text);
	if (len < LINE_MAX_BYTES)
		return;
	cJSON_ReplaceItemInObject(msg, "history", cJSON_CreateArray());
	text = json_print(msg);
	len = strlen(text);
	free(text);
	if (len >= LINE_MAX_BYTES)
		cJSON_ReplaceItemInObject(cJSON_GetObjectItem(msg, "project"), "context",
		    cJSON_CreateString(""));
}

/* Builds the agent's environment: a few variables of ours, nothing secret. */
static char **
agent_environment(void)
{
	static const char *const keep[] = { "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR",
		"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TASKDECK_BWRAP", NULL };
	char **env = xcalloc(sizeof keep / sizeof keep[0] + 1, sizeof *env);
	int n = 0;

	for (const char *const *k = keep; *k; k++) {
		const char *v = getenv(*k);
		if (v != NULL)
			env[n++] = xasprintf("%s=%s", *k, v);
	}
	if (getenv("PATH") == NULL)
		env[n++] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
	return env;
}

static void
environment_free(char **env)
{
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/* Starts the agent in its own process group; false with errno set. */
static bool
agent_spawn(struct run_state *rs, const char *path)
{
	int in[2], out[2], err[2];
	char *argv[] = { (char *)"taskdeck-agent", NULL };
	char **env = agent_environment();
	pid_t parent = getpid();
	sigset_t none;

	sigemptyset(&none);
	if (pipe2(in, O_CLOEXEC) != 0) {
		environment_free(env);
		return false;
	}
	if (pipe2(out, O_CLOEXEC) != 0) {
		close(in[0]), close(in[1]);
		environment_free(env);
		return false;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		environment_free(env);
		return false;
	}
	rs->pid = fork();
	if (rs->pid == 0) {
		/* Only async-signal-safe calls from here on. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(125);
		sigaction(SIGPIPE, &dfl, NULL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0 ||
		    chdir(rs->workspace) != 0)
			_exit(126);
		execve(path, argv, env);
		_exit(127);
	}
	environment_free(env);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (rs->pid < 0) {
		int e = errno;
		close(in[1]), close(out[0]), close(err[0]);
		errno = e;
		return false;
	}
	setpgid(rs->pid, rs->pid);
	rs->in_fd = in[1];
	rs->out_fd = out[0];
	rs->err_fd = err[0];
	return true;
}

/* Reaps the agent, killing its group when it lingers; the wait status. */
static int
agent_reap(struct run_state *rs)
{
	int64_t deadline = td_mono_ms() + EXIT_WAIT_MS;
	int status = 0;

	for (;;) {
		pid_t p = waitpid(rs->pid, &status, WNOHANG);
		if (p == rs->pid || (p < 0 && errno != EINTR))
			return status;
		if (td_mono_ms() >= deadline) {
			kill(-rs->pid, SIGKILL);
			while (waitpid(rs->pid, &status, 0) < 0 && errno == EINTR)
				;
			return status;
		}
		usleep(20000);
	}
}

/* Frees a list of queued responses.  NULL ok. */
static void
responses_free(struct queued_response *q)
{
	while (q != NULL) {
		struct queued_response *next = q->next;
		cJSON_Delete(q->result);
		free(q);
		q = next;
	}
}

/*
 * Sends the queued responses, then cancel when asked, and kills the group
 * once the grace period is over.
 */
static void
check_cancel(struct run_state *rs)
{
	struct supervisor *sv = rs->ar->sv;
	struct queued_response *q;
	bool cancel, stop;
	uint64_t n;

	if (read(rs->ar->wake_fd, &n, sizeof n) < 0 && errno != EAGAIN)
		log_warn("run %s: wake-up read failed", rs->ar->id);
	pthread_mutex_lock(&sv->mu);
	cancel = rs->ar->cancel_requested;
	stop = rs->ar->stop_requested;
	q = rs->ar->responses;
	rs->ar->responses = NULL;
	pthread_mutex_unlock(&sv->mu);
	for (struct queued_response *r = q; r != NULL; r = r->next) {
		agent_respond(rs, (double)r->request_id, r->result);
		r->result = NULL;
	}
	responses_free(q);
	/*
	 * durable: a service stop ends the agent of a run that can resume at once;
	 * the run stays running and resumes at the next start.
	 */
	if (stop && !cancel && !rs->external && !rs->cancel_sent && rs->pid > 0) {
		log_info("run %s: the service stops; the run resumes at the next start",
		    rs->ar->id);
		kill(-rs->pid, SIGKILL);
		rs->cancel_sent = true;
		return;
	}
	if ((cancel || stop) && !rs->cancel_sent) {
		cJSON *msg = cJSON_CreateObject();

		cJSON_AddStringToObject(msg, "type", "cancel");
		agent_send(rs, msg);
		cJSON_Delete(msg);
		rs->cancel_sent = true;
		rs->kill_at = td_mono_ms() + (stop ? STOP_GRACE_MS : CANCEL_GRACE_MS);
	}
}

/* Talks to the agent until its stdout closes. */
static void
agent_converse(struct run_state *rs)
{
	struct pollfd fds[3] = {
		{ .fd = rs->out_fd, .events = POLLIN },
		{ .fd = rs->err_fd, .events = POLLIN },
		{ .fd = rs->ar->wake_fd, .events = POLLIN },
	};
	int64_t next_liveness = td_mono_ms() + LIVENESS_INTERVAL_MS;

	check_cancel(rs);
	while (fds[0].fd >= 0) {
		int timeout = -1;

		if (!rs->had_output) {
			int64_t left = next_liveness - td_mono_ms();
			if (left <= 0) {
				emit_progress(rs, "waiting for the provider", true);
				next_liveness += LIVENESS_INTERVAL_MS;
				continue;
			}
			timeout = (int)left;
		}
		/* durable: output that arrived is stored within OUTPUT_STORE_MS. */
		if (rs->output_dirty) {
			int64_t left = rs->output_stored_at + OUTPUT_STORE_MS - td_mono_ms();
			if (left <= 0) {
				progress_store(rs);
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (rs->kill_at != 0) {
			int64_t left = rs->kill_at - td_mono_ms();
			if (left <= 0) {
				log_warn("run %s: the agent did not stop in time; killing it",
				    rs->ar->id);
				kill(-rs->pid, SIGKILL);
				rs->kill_at = 0;
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (poll(fds, 3, timeout) < 0 && errno != EINTR)
			break;
		if (fds[2].revents & POLLIN)
			check_cancel(rs);
		if ((fds[1].revents & (POLLIN | POLLHUP)) && !read_stderr(rs))
			fds[1].fd = -1;
		if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !read_stdout(rs))
			fds[0].fd = -1;
	}
	if (rs->line.len > 0 && rs->protocol_error == NULL)
		protocol_error(rs, "an unterminated last line");
}

/* The outcome of a run once its agent is gone. */
static void
run_outcome(struct run_state *rs, int wait_status, const char **status, const char **code,
    char **message)
{
	struct supervisor *sv = rs->ar->sv;
	bool cancel, stop;

	pthread_mutex_lock(&sv->mu);
	cancel = rs->ar->cancel_requested;
	stop = rs->ar->stop_requested;
	pthread_mutex_unlock(&sv->mu);
	*code = NULL;
	*message = NULL;
	if (rs->finished && strcmp(rs->status, "completed") == 0 && rs->protocol_error == NULL) {
		*status = "completed";
	} else if (cancel) {
		*status = "cancelled";
	} else if (stop) {
		*status = "failed";
		*code = "service_stopped";
		*message = xstrdup("The service stopped while the run was executing.");
	} else if (rs->protocol_error != NULL) {
		*status = "failed";
		*code = "runtime_protocol_error";
		*message = xasprintf("The agent runtime sent %s.", rs->protocol_error);
	} else if (rs->finished) {
		*status = rs->status;
		if (strcmp(rs->status, "failed") == 0) {
			*code = rs->error_code ? rs->error_code : "runtime_error";
			*message = xstrdup(rs->error_message ? rs->error_message :
			    "The agent runtime reported a failure.");
		}
	} else {
		*status = "failed";
		*code = "runtime_crashed";
		if (WIFSIGNALED(wait_status))
			*message = xasprintf("The agent runtime was killed by signal %d (%s).",
			    WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
		else
			*message = xasprintf("The agent runtime exited with status %d without "
			    "finishing the run.", WEXITSTATUS(wait_status));
	}
}

/* A run event and session.updated for its session; only while the store is locked. */
static void
emit_with_session(struct service *svc, const char *type, const char *id, cJSON *data)
{
	sqlite3_stmt *s = store_stmt(svc->store,
	    "SELECT project_id, session_id FROM runs WHERE id = ?1");
	char project[TD_ID_MAX] = "", session[TD_ID_MAX] = "";

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(project, sizeof project, "%s", resource_text(s, 0));
		snprintf(session, sizeof session, "%s", resource_text(s, 1));
	}
	sqlite3_reset(s);
	if (session[0] == '\0') {
		cJSON_Delete(data);
		return;
	}
	if (strcmp(type, "run.finished") == 0)
		artifacts_emit_saved(svc, id, project);
	events_emit(svc->events, type, project, session, id, data);
	session_emit_updated(svc, session);
}

/* artifact.saved, run.finished and session.updated; only while the store is locked. */
static void
emit_finished(struct service *svc, const char *id, const char *status, const char *code,
    const char *message)
{
	cJSON *d = run_status_data(status);

	if (code != NULL) {
		cJSON *err = cJSON_AddObjectToObject(d, "error");
		cJSON_AddStringToObject(err, "code", code);
		cJSON_AddStringToObject(err, "message", message ? message : "");
	}
	emit_with_session(svc, "run.finished", id, d);
}

/* Writes the final state of the run and makes its saves visible, in one transaction. */
static bool
run_finalize_once(struct supervisor *sv, const char *id, const char *session_id,
    const char *status, const char *output, const char *code, const char *message,
    long long in_tokens, long long out_tokens)
{
	struct service *svc = sv->svc;
	struct store *st = svc->store;
	int64_t now = td_now_ms();
	sqlite3_stmt *s;
	bool ok;

	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "UPDATE runs SET status = ?2, output = ?3, error_code = ?4,"
		    " error_message = ?5, finished_at = ?6, attention = NULL,"
		    " input_tokens = ?7, output_tokens = ?8,"
		    " updated_at = " RESOURCE_NEXT_TIME(6)
		    " WHERE id = ?1 AND status IN ('queued', 'running')");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, output ? output : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, code, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, message, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, now);
		sqlite3_bind_int64(s, 7, in_tokens);
		sqlite3_bind_int64(s, 8, out_tokens);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	if (ok) {
		s = store_stmt(st, "UPDATE artifacts SET visible = 1 WHERE run_id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	if (ok && session_id != NULL)
		ok = session_touch(st, session_id, now);
	ok = ok && plans_run_ended(svc, id, status);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	cache_drop(svc->cache, id);
	if (ok)
		emit_finished(svc, id, status, code, message);
	store_unlock(st);
	if (ok)
		log_info("run %s %s%s%s", id, status, code ? ": " : "", code ? code : "");
	return ok;
}

/*
 * Issue 17, finding 3: the final state is retried until it is stored (a full
 * disk), with a growing wait, logged once.  The run holds its slot meanwhile
 * and stays cancellable: a cancel that arrives first makes it end cancelled.
 * A service stop gives up: the run is settled at the next start.
 */
static void
run_finalize(struct agent_run *ar, const char *session_id, const char *status,
    const char *output, const char *code, const char *message, long long in_tokens,
    long long out_tokens)
{
	struct supervisor *sv = ar->sv;
	int wait_ms = FINALIZE_RETRY_MIN_MS;
	bool logged = false;

	for (;;) {
		bool cancel, stop;
		struct pollfd pfd = { .fd = ar->wake_fd, .events = POLLIN };
		uint64_t n;

		pthread_mutex_lock(&sv->mu);
		cancel = ar->cancel_requested;
		stop = ar->stop_requested;
		pthread_mutex_unlock(&sv->mu);
		if (logged && cancel && strcmp(status, "cancelled") != 0) {
			log_info("run %s: cancelled while its final state waited to be stored",
			    ar->id);
			status = "cancelled";
			code = message = NULL;
		}
		if (run_finalize_once(sv, ar->id, session_id, status, output, code, message,
		    in_tokens, out_tokens)) {
			if (logged)
				log_info("run %s: its final state %s is stored after all", ar->id,
				    status);
			return;
		}
		if (!logged)
			log_error("run %s: cannot store its final state %s; retrying until it is "
			    "stored", ar->id, status);
		logged = true;
		if (stop) {
			log_warn("run %s: the service stops before its final state is stored; the "
			    "next start settles it", ar->id);
			return;
		}
		if (poll(&pfd, 1, wait_ms) > 0 && read(ar->wake_fd, &n, sizeof n) < 0 &&
		    errno != EAGAIN)
			log_warn("run %s: wake-up read failed", ar->id);
		wait_ms = wait_ms * 2 > FINALIZE_RETRY_MAX_MS ? FINALIZE_RETRY_MAX_MS : wait_ms * 2;
	}
}

static void
run_state_free(struct run_state *rs)
{
	buf_free(&rs->line);
	buf_free(&rs->output);
	free(rs->workspace);
	sandbox_hidden_free(rs->hidden);
	free(rs->final_output);
	free(rs->error_code);
	free(rs->error_message);
	free(rs->protocol_error);
	cJSON_Delete(rs->connectors);
}

/* Removes ar from the active list, frees it and lets the scheduler use the slot. */
static void
run_thread_done(struct agent_run *ar)
{
	struct supervisor *sv = ar->sv;

	pthread_mutex_lock(&sv->mu);
	for (struct agent_run **pp = &sv->runs; *pp; pp = &(*pp)->next) {
		if (*pp == ar) {
			*pp = ar->next;
			break;
		}
	}
	sv->nactive--;
	sv->kicked = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->mu);
	responses_free(ar->responses);
	close(ar->wake_fd);
	free(ar);
}

/* A cancel asked of this run: through the supervisor or stored before a restart. */
static bool
cancel_asked(struct agent_run *ar)
{
	struct store *st = ar->sv->svc->store;
	sqlite3_stmt *s;
	bool cancel;

	pthread_mutex_lock(&ar->sv->mu);
	cancel = ar->cancel_requested;
	pthread_mutex_unlock(&ar->sv->mu);
	if (cancel)
		return true;
	store_lock(st);
	s = store_stmt(st, "SELECT cancel_requested_at IS NOT NULL FROM runs WHERE id = ?1");
	sqlite3_bind_text(s, 1, ar->id, -1, SQLITE_STATIC);
	cancel = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) != 0;
	sqlite3_reset(s);
	store_unlock(st);
	return cancel;
}

static void *
run_thread(void *arg)
{
	struct agent_run *ar = arg;
	struct supervisor *sv = ar->sv;
	struct run_state rs = { .ar = ar, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	const char *status, *code;
	char *message = NULL, *why = NULL;
	cJSON *start;
	int wait_status = 0;
	bool stop;

	buf_init(&rs.line, LINE_MAX_BYTES);
	buf_init(&rs.output, OUTPUT_MAX_BYTES);
	rs.resuming = ar->resume;
	start = start_message(sv, &rs, &why);
	if (start == NULL) {
		run_finalize(ar, NULL, "failed", "", rs.runtime_unready ? "runtime_missing" :
		    rs.checkpoint_invalid ? "checkpoint_invalid" : "runtime_error", why, 0, 0);
		free(why);
		goto out;
	}
	/* durable: cancelled between a restart and its resume: no agent. */
	if (ar->resume && cancel_asked(ar)) {
		start_message_wipe(start);
		cJSON_Delete(start);
		run_finalize(ar, rs.session_id, "cancelled", rs.output.data, NULL, NULL, 0, 0);
		goto out;
	}
	start_message_fit(start);
	if (access(sv->svc->agent_path, X_OK) != 0 || !agent_spawn(&rs, sv->svc->agent_path)) {
		start_message_wipe(start);
		cJSON_Delete(start);
		log_error("run %s: cannot start the agent runtime %s: %s", ar->id,
		    sv->svc->agent_path, strerror(errno));
		run_finalize(ar, rs.session_id, "failed", "", "runtime_missing",
		    "The agent runtime taskdeck-agent could not be started; run "
		    "`taskdeck doctor`.", 0, 0);
		goto out;
	}
	log_info("run %s %s (agent pid %ld)", ar->id, ar->resume ? "resumed" : "started",
	    (long)rs.pid);
	if (ar->resume) {
		char *note = xasprintf("Resumed after a service restart (%d of %d), from %s.",
		    rs.resumes, settings_resume_limit(sv->svc->settings),
		    cJSON_GetObjectItem(start, "checkpoint") ? "its last checkpoint" :
		    "the beginning: no step had completed");

		snprintf(rs.phase, sizeof rs.phase, "resumed");
		rs.phase_at = td_mono_ms();
		progress_store(&rs);
		emit_progress(&rs, note, false);
		free(note);
	}
	agent_send(&rs, start);
	start_message_wipe(start);
	cJSON_Delete(start);
	agent_converse(&rs);
	close(rs.out_fd);
	close(rs.err_fd);
	close(rs.in_fd);
	rs.in_fd = -1;
	wait_status = agent_reap(&rs);
	pthread_mutex_lock(&sv->mu);
	stop = ar->stop_requested && !ar->cancel_requested;
	pthread_mutex_unlock(&sv->mu);
	if (stop && !rs.external && !(rs.finished && strcmp(rs.status, "completed") == 0 &&
	    rs.protocol_error == NULL)) {
		/* durable: it stays running, with its output, and resumes at the next start. */
		progress_store(&rs);
		goto out;
	}
	run_outcome(&rs, wait_status, &status, &code, &message);
	run_finalize(ar, rs.session_id, status,
	    rs.final_output ? rs.final_output : rs.output.data, code, message,
	    rs.input_tokens, rs.output_tokens);
	free(message);
out:
	run_state_free(&rs);
	run_thread_done(ar);
	return NULL;
}

/* Gives run id a thread (and an agent); with resume, a run left running by an earlier process. */
static void
run_thread_start(struct supervisor *sv, const char *id, bool resume, bool cancel)
{
	struct agent_run *ar = xcalloc(1, sizeof *ar);
	pthread_attr_t attr;
	pthread_t t;

	ar->sv = sv;
	snprintf(ar->id, sizeof ar->id, "%s", id);
	ar->resume = resume;
	ar->cancel_requested = cancel;
	ar->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_lock(&sv->mu);
	ar->next = sv->runs;
	sv->runs = ar;
	sv->nactive++;
	pthread_mutex_unlock(&sv->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (ar->wake_fd < 0 || pthread_create(&t, &attr, run_thread, ar) != 0) {
		log_error("run %s: cannot start its thread", ar->id);
		abort();
	}
	pthread_attr_destroy(&attr);
}

/* durable: gives up to slots runs waiting to resume their thread; how many. */
static int
start_resumes(struct supervisor *sv, int slots)
{
	char id[TD_ID_MAX];
	int n = 0;

	while (n < slots) {
		pthread_mutex_lock(&sv->mu);
		if (sv->nresume == 0) {
			pthread_mutex_unlock(&sv->mu);
			break;
		}
		snprintf(id, sizeof id, "%s", sv->resume_ids[0]);
		memmove(sv->resume_ids, sv->resume_ids + 1, --sv->nresume * sizeof *sv->resume_ids);
		pthread_mutex_unlock(&sv->mu);
		run_thread_start(sv, id, true, false);
		n++;
	}
	return n;
}

/* Moves up to slots queued runs to running and starts their threads. */
static void
start_queued(struct supervisor *sv, int slots)
{
	struct store *st = sv->svc->store;
	char ids[64][TD_ID_MAX];
	int n = 0;
	sqlite3_stmt *s;
	int64_t now = td_now_ms();
	sqlite3 *db;

	if (slots > 64)
		slots = 64;
	db = store_lock(st);
	s = store_stmt(st, "SELECT id FROM runs WHERE status = 'queued' ORDER BY id LIMIT ?1");
	sqlite3_bind_int(s, 1, slots);
	while (n < slots && sqlite3_step(s) == SQLITE_ROW)
		snprintf(ids[n++], TD_ID_MAX, "%s", resource_text(s, 0));
	sqlite3_reset(s);
	for (int i = 0; i < n; i++) {
		s = store_stmt(st, "UPDATE runs SET status = 'running', started_at = ?2,"
		    " progress_phase = 'starting', progress_at = ?2,"
		    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE id = ?1 AND status = 'queued'");
		sqlite3_bind_text(s, 1, ids[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, now);
		if (sqlite3_step(s) != SQLITE_DONE || sqlite3_changes(db) != 1) {
			sqlite3_reset(s);
			continue;
		}
		sqlite3_reset(s);
		cache_drop(sv->svc->cache, ids[i]);
		emit_with_session(sv->svc, "run.started", ids[i], run_status_data("running"));
		run_thread_start(sv, ids[i], false, false);
	}
	store_unlock(st);
}

static void *
scheduler_thread(void *arg)
{
	struct supervisor *sv = arg;
	int max = settings_max_concurrent(sv->svc->settings);

	pthread_mutex_lock(&sv->mu);
	while (!sv->stopping) {
		while (!sv->kicked && !sv->stopping)
			pthread_cond_wait(&sv->cond, &sv->mu);
		if (sv->stopping)
			break;
		sv->kicked = false;
		int slots = max - sv->nactive;
		pthread_mutex_unlock(&sv->mu);
		if (slots > 0)
			slots -= start_resumes(sv, slots);
		if (slots > 0)
			start_queued(sv, slots);
		pthread_mutex_lock(&sv->mu);
	}
	pthread_mutex_unlock(&sv->mu);
	return NULL;
}

/* What recover found of one run left running by an earlier process. */
struct left_run {
	char id[TD_ID_MAX], session[TD_ID_MAX], project[TD_ID_MAX];
	char framework[32];
	int resumes;
	bool cancel;
	const char *status, *code;	/* NULL status: it resumes */
	char *message;
};

/*
 * DESIGN section 8, changed by issue 15 (durable): what a previous process
 * left running resumes, unless it was being cancelled (cancelled), runs an
 * external framework (failed, service_restarted) or has resumed
 * runs.resumeLimit times (failed, resume_limit).  Ended runs' saves become
 * visible and their plans and prompts close; those of resuming runs stay.
 * After a stop that was not clean, each run left running gets
 * run.history-gap (docs/events.md).  The ids to resume go to *resume.
 */
static bool
recover(struct service *svc, char (**resume)[TD_ID_MAX], size_t *nresume, char **err)
{
	struct store *st = svc->store;
	int max = settings_resume_limit(svc->settings);
	struct left_run *left = NULL;
	size_t n = 0, ended = 0;
	sqlite3_stmt *s;
	int64_t now = td_now_ms();
	bool ok, clean = false;

	*resume = NULL;
	*nresume = 0;
	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "SELECT value = '1' FROM service_state WHERE key = 'clean_stop'");
		clean = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) != 0;
		sqlite3_reset(s);
		s = store_stmt(st, "DELETE FROM service_state WHERE key = 'clean_stop'");
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	if (ok) {
		s = store_stmt(st, "SELECT id, session_id, project_id,"
		    " json_extract(config, '$.framework'), resumes,"
		    " cancel_requested_at IS NOT NULL FROM runs WHERE status = 'running' ORDER BY id");
		while (sqlite3_step(s) == SQLITE_ROW) {
			struct left_run *l;

			left = xrealloc(left, (n + 1) * sizeof *left);
			l = memset(&left[n++], 0, sizeof *left);
			snprintf(l->id, sizeof l->id, "%s", resource_text(s, 0));
			snprintf(l->session, sizeof l->session, "%s", resource_text(s, 1));
			snprintf(l->project, sizeof l->project, "%s", resource_text(s, 2));
			snprintf(l->framework, sizeof l->framework, "%s", resource_text(s, 3));
			l->resumes = sqlite3_column_int(s, 4);
			l->cancel = sqlite3_column_int(s, 5) != 0;
		}
		sqlite3_reset(s);
	}
	for (size_t i = 0; ok && i < n; i++) {
		struct left_run *l = &left[i];

		if (l->cancel) {
			l->status = "cancelled";
		} else if (frameworks_external(l->framework)) {
			l->status = "failed";
			l->code = "service_restarted";
			l->message = xstrdup("The service restarted while the run was executing.");
		} else if (l->resumes >= max) {
			l->status = "failed";
			l->code = "resume_limit";
			l->message = xasprintf("The service restarted while the run was executing, "
			    "and the run has resumed %d time%s already (runs.resumeLimit).",
			    l->resumes, l->resumes == 1 ? "" : "s");
		}
		if (l->status == NULL) {
			s = store_stmt(st, "UPDATE runs SET resumes = resumes + 1,"
			    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE id = ?1");
			sqlite3_bind_text(s, 1, l->id, -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 2, now);
			ok = sqlite3_step(s) == SQLITE_DONE;
			sqlite3_reset(s);
			*resume = xrealloc(*resume, (*nresume + 1) * sizeof **resume);
			snprintf((*resume)[(*nresume)++], TD_ID_MAX, "%s", l->id);
			continue;
		}
		ended++;
		s = store_stmt(st, "UPDATE artifacts SET visible = 1 WHERE run_id = ?1");
		sqlite3_bind_text(s, 1, l->id, -1, SQLITE_STATIC);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
		s = store_stmt(st, "UPDATE runs SET status = ?2, error_code = ?3,"
		    " error_message = ?4, output = COALESCE(output, ''), finished_at = ?5,"
		    " attention = NULL, updated_at = " RESOURCE_NEXT_TIME(5) " WHERE id = ?1");
		sqlite3_bind_text(s, 1, l->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, l->status, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, l->code, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, l->message, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, now);
		ok = ok && sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
		ok = ok && plans_run_ended(svc, l->id, l->status);
	}
	ok = ok && plans_recover(svc);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	for (size_t i = 0; ok && i < n; i++) {
		struct left_run *l = &left[i];

		cache_drop(svc->cache, l->id);
		if (!clean) {
			cJSON *d = cJSON_CreateObject();

			cJSON_AddStringToObject(d, "reason", "The service did not stop cleanly: "
			    "events it published in its last moments may be missing from this "
			    "run's history.");
			cJSON_AddNumberToObject(d, "maxMs", EVENTS_FLUSH_MS);
			events_emit(svc->events, "run.history-gap", l->project, l->session, l->id, d);
		}
		if (l->status != NULL)
			emit_finished(svc, l->id, l->status, l->code, l->message);
	}
	store_unlock(st);
	for (size_t i = 0; i < n; i++)
		free(left[i].message);
	free(left);
	if (!ok) {
		free(*resume);
		*resume = NULL;
		*nresume = 0;
		*err = xstrdup("cannot settle the runs of the previous service process");
		return false;
	}
	if (*nresume > 0)
		log_info("%zu run(s) were executing when the service last stopped; they resume",
		    *nresume);
	if (ended > 0)
		log_warn("%zu run(s) were executing when the service last stopped and cannot "
		    "resume; they end", ended);
	return true;
}

void
supervisor_clean_stop(struct service *svc)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;

	store_lock(st);
	s = store_stmt(st, "INSERT OR REPLACE INTO service_state (key, value)"
	    " VALUES ('clean_stop', '1')");
	if (sqlite3_step(s) != SQLITE_DONE)
		log_warn("cannot record the clean stop; the next start marks a history gap");
	sqlite3_reset(s);
	store_unlock(st);
}

struct supervisor *
supervisor_start(struct service *svc, char **err)
{
	struct supervisor *sv;
	char (*resume)[TD_ID_MAX];
	size_t nresume;

	if (!recover(svc, &resume, &nresume, err))
		return NULL;
	sv = xcalloc(1, sizeof *sv);
	sv->svc = svc;
	sv->kicked = true;	/* queued runs, and runs to resume, of an earlier process */
	sv->resume_ids = resume;
	sv->nresume = nresume;
	pthread_mutex_init(&sv->mu, NULL);
	pthread_cond_init(&sv->cond, NULL);
	if (pthread_create(&sv->scheduler, NULL, scheduler_thread, sv) != 0) {
		*err = xstrdup("cannot start the run scheduler");
		free(sv->resume_ids);
		free(sv);
		return NULL;
	}
	return sv;
}

void
supervisor_kick(struct supervisor *sv)
{
	pthread_mutex_lock(&sv->mu);
	sv->kicked = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->mu);
}

/* durable: takes run_id out of the runs waiting to resume; under sv->mu. */
static bool
resume_take(struct supervisor *sv, const char *run_id)
{
	for (size_t i = 0; i < sv->nresume; i++) {
		if (strcmp(sv->resume_ids[i], run_id) == 0) {
			memmove(sv->resume_ids + i, sv->resume_ids + i + 1,
			    (--sv->nresume - i) * sizeof *sv->resume_ids);
			return true;
		}
	}
	return false;
}

bool
supervisor_cancel(struct supervisor *sv, const char *run_id)
{
	bool found = false, waiting;

	pthread_mutex_lock(&sv->mu);
	for (struct agent_run *ar = sv->runs; ar; ar = ar->next) {
		if (strcmp(ar->id, run_id) == 0) {
			ar->cancel_requested = true;
			wake(ar);
			found = true;
			break;
		}
	}
	/* durable: a run waiting to resume gets its thread now, which ends it cancelled. */
	waiting = !found && !sv->stopping && resume_take(sv, run_id);
	pthread_mutex_unlock(&sv->mu);
	if (waiting)
		run_thread_start(sv, run_id, true, true);
	return found || waiting;
}

bool
supervisor_respond(struct supervisor *sv, const char *run_id, long long request_id,
    cJSON *result)
{
	struct queued_response *q = xcalloc(1, sizeof *q), **pp;

	q->request_id = request_id;
	q->result = result;
	pthread_mutex_lock(&sv->mu);
	for (struct agent_run *ar = sv->runs; ar; ar = ar->next) {
		if (strcmp(ar->id, run_id) != 0)
			continue;
		for (pp = &ar->responses; *pp; pp = &(*pp)->next)
			;
		*pp = q;
		q = NULL;
		wake(ar);
		break;
	}
	/*
	 * durable: an answer for a run still waiting to resume is in the store; the
	 * run moves to the front of the line, and its agent finds the answer there.
	 */
	if (q != NULL && resume_take(sv, run_id)) {
		/* resume_take left room for one. */
		memmove(sv->resume_ids + 1, sv->resume_ids, sv->nresume * sizeof *sv->resume_ids);
		snprintf(sv->resume_ids[0], TD_ID_MAX, "%s", run_id);
		sv->nresume++;
		sv->kicked = true;
		pthread_cond_broadcast(&sv->cond);
	}
	pthread_mutex_unlock(&sv->mu);
	responses_free(q);
	return q == NULL;
}

int
supervisor_active(struct supervisor *sv)
{
	int n;

	pthread_mutex_lock(&sv->mu);
	n = sv->nactive;
	pthread_mutex_unlock(&sv->mu);
	return n;
}

void
supervisor_stop(struct supervisor *sv)
{
	if (sv == NULL)
		return;
	pthread_mutex_lock(&sv->mu);
	sv->stopping = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->mu);
	pthread_join(sv->scheduler, NULL);

	pthread_mutex_lock(&sv->mu);
	for (struct agent_run *ar = sv->runs; ar; ar = ar->next) {
		ar->stop_requested = true;
		wake(ar);
	}
	while (sv->nactive > 0)
		pthread_cond_wait(&sv->cond, &sv->mu);
	pthread_mutex_unlock(&sv->mu);
	pthread_mutex_destroy(&sv->mu);
	pthread_cond_destroy(&sv->cond);
	free(sv->resume_ids);
	free(sv);
}
