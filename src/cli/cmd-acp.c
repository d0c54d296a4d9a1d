/*
 * taskdeck acp: taskdeck as an Agent Client Protocol agent on stdin/stdout
 * (docs/cli.md, "taskdeck acp").  An editor's session is a taskdeck session,
 * its prompt turns are ordinary runs; their events become session/update
 * notifications, permission prompts and plans become
 * session/request_permission requests.  One thread: a poll over standard
 * input and the service's event stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp.h"
#include "cli.h"
#include "json.h"
#include "paths.h"
#include "sandbox.h"
#include "wsfile.h"
#include "xalloc.h"

#define ACP_MAX_SESSIONS 64
#define ACP_MAX_ASKS 64
#define ACP_PROMPT_MAX (1024 * 1024)	/* the text of one prompt turn */
#define ACP_TOOLS_SEEN 512		/* tool call ids remembered per turn */
#define ACP_DIFFS_MAX 5			/* diffs in one update of a step's changes */

static int cmd_acp_exec(struct cli *, int, char **);

static const struct cli_option acp_options[] = {
	{ "project", true },
	{ "framework", true },
	{ "provider", true },
	{ "model", true },
	{ "effort", true },
	{ "permission", true },
	{ "plan-first", false },
	{ NULL, false }
};

const struct cli_cmd cmd_acp_entry = {
	"acp", NULL, "[--project P] [--model M] [--provider X] [--framework F]\n"
	"    [--effort E] [--permission PROFILE] [--plan-first]",
	"Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, "
	"Neovim): each prompt turn is a run of the project.",
	acp_options, 0, 0, cmd_acp_exec
};

/* One editor session. */
struct acp_session {
	char id[48];			/* the id the editor knows: the taskdeck session's */
	char *td_session;		/* the taskdeck session */
	char *cwd;
	char *run_id;			/* the run of the turn under way, or NULL */
	cJSON *prompt_id;		/* the session/prompt request it answers, or NULL */
	cJSON *tools;			/* tool call ids announced in this turn */
	char last_edit[64];		/* the last file-writing tool call of the turn */
};

/* A session/request_permission the editor has not answered yet. */
struct acp_ask {
	long id;
	struct acp_session *s;
	char *prompt;			/* the permission prompt (prm_...), or NULL for a plan */
	long plan_version, plan_revision;
};

struct acp_agent {
	struct cli *cli;
	struct td_client *c;
	struct td_request_options ro;
	struct td_events *ev;
	struct acp_reader in;
	char *project;
	struct acp_session *sessions[ACP_MAX_SESSIONS];
	size_t nsessions;
	struct acp_ask asks[ACP_MAX_ASKS];
	size_t nasks;
	long next_id;
	bool initialized;
	char *last_event;		/* where a broken stream stopped, to resume after */
};

static void acp_events_drain(struct acp_agent *a);

static void
acp_out(const cJSON *msg)
{
	if (!acp_send(STDOUT_FILENO, msg))
		fprintf(stderr, "taskdeck acp: cannot write to the editor: %s\n", strerror(errno));
}

static void
acp_reply(const cJSON *id, cJSON *result)
{
	cJSON *m = acp_result(id, result);

	acp_out(m);
	cJSON_Delete(m);
}

static void
acp_fail(const cJSON *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
acp_fail(const cJSON *id, int code, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	cJSON *m;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	m = acp_error(id, code, text);
	acp_out(m);
	cJSON_Delete(m);
}

/* An error of the service as a JSON-RPC error: its code in data. */
static void
acp_fail_td(const cJSON *id, const struct td_error *err)
{
	cJSON *m = acp_error(id, err->code == TD_NOT_FOUND ? ACP_RESOURCE_NOT_FOUND :
	    err->code == TD_INVALID_ARGUMENT || err->http_status == 400 ||
	    err->http_status == 422 ? ACP_INVALID_PARAMS : ACP_INTERNAL_ERROR, err->message);
	cJSON *data = cJSON_CreateObject();

	cJSON_AddStringToObject(data, "code", err->code_name);
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(m, "error"), "data", data);
	acp_out(m);
	cJSON_Delete(m);
}

/* session/update {sessionId, update}; consumes update. */
static void
acp_update(const struct acp_session *s, cJSON *update)
{
	cJSON *p = cJSON_CreateObject(), *m;

	cJSON_AddStringToObject(p, "sessionId", s->id);
	cJSON_AddItemToObject(p, "update", update);
	m = acp_notification("session/update", p);
	acp_out(m);
	cJSON_Delete(m);
}

static cJSON *
acp_text_block(const char *text)
{
	cJSON *b = cJSON_CreateObject();

	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	return b;
}

static void
acp_chunk(const struct acp_session *s, const char *kind, const char *text)
{
	cJSON *u = cJSON_CreateObject();

	cJSON_AddStringToObject(u, "sessionUpdate", kind);
	cJSON_AddItemToObject(u, "content", acp_text_block(text));
	acp_update(s, u);
}

/* The ACP kind of a taskdeck tool. */
static const char *
acp_tool_kind(const char *name)
{
	static const struct { const char *tool, *kind; } kinds[] = {
		{ "read_file", "read" }, { "list_files", "read" }, { "write_file", "edit" },
		{ "edit_file", "edit" }, { "run_command", "execute" }, { "command", "execute" },
		{ "search_files", "search" }, { "grep", "search" }, { "web_search", "fetch" },
		{ "propose_plan", "think" }, { "update_plan_step", "think" },
		{ "file_change", "edit" },
	};

	for (size_t i = 0; name != NULL && i < sizeof kinds / sizeof *kinds; i++) {
		if (strcmp(kinds[i].tool, name) == 0)
			return kinds[i].kind;
	}
	return "other";
}

static const char *
acp_tool_status(const char *status)
{
	if (status == NULL || strcmp(status, "started") == 0)
		return "in_progress";
	if (strcmp(status, "completed") == 0)
		return "completed";
	return "failed";	/* failed, denied */
}

/* run.tool: tool_call the first time a call is seen, tool_call_update after. */
static void
acp_tool_event(struct acp_session *s, const cJSON *d)
{
	const char *call = json_get_string(d, "callId");
	const char *name = json_get_string(d, "name");
	const char *status = json_get_string(d, "status");
	const char *summary = json_get_string(d, "summary");
	bool seen;
	cJSON *u;

	if (call == NULL || call[0] == '\0')
		return;
	if (s->tools == NULL)
		s->tools = cJSON_CreateObject();
	seen = cJSON_GetObjectItemCaseSensitive(s->tools, call) != NULL;
	u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", seen ? "tool_call_update" : "tool_call");
	cJSON_AddStringToObject(u, "toolCallId", call);
	if (!seen) {
		cJSON_AddStringToObject(u, "title", summary && summary[0] ? summary :
		    name ? name : "tool");
		cJSON_AddStringToObject(u, "kind", acp_tool_kind(name));
		if (cJSON_GetArraySize(s->tools) < ACP_TOOLS_SEEN)
			cJSON_AddTrueToObject(s->tools, call);
	} else if (summary != NULL && summary[0] != '\0' && status != NULL &&
	    strcmp(status, "started") != 0) {
		/* The end's summary says what happened (an exit status, a refusal). */
		cJSON *content = cJSON_AddArrayToObject(u, "content"), *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "type", "content");
		cJSON_AddItemToObject(c, "content", acp_text_block(summary));
		cJSON_AddItemToArray(content, c);
	}
	cJSON_AddStringToObject(u, "status", acp_tool_status(status));
	if (name != NULL && strcmp(acp_tool_kind(name), "edit") == 0)
		snprintf(s->last_edit, sizeof s->last_edit, "%s", call);
	acp_update(s, u);
}

static char *acp_read_ws(const char *cwd, const char *path);

/*
 * A diff content {type: diff, path, oldText, newText} of a file the run changed
 * (its start against now), or NULL when it cannot be shown.
 */
static cJSON *
acp_file_diff(struct acp_agent *a, const struct acp_session *s, const char *path,
    const char *full)
{
	char *now = acp_read_ws(s->cwd, path), *diff = NULL, *old = NULL;
	struct td_error err;
	bool truncated = false, added;
	cJSON *c = NULL;

	if (now != NULL && td_get_run_diff(a->c, s->run_id, path, NULL, &a->ro, &diff,
	    &truncated, &err) == TD_OK && !truncated &&
	    ((old = acp_diff_old_text(now, diff, &added)) != NULL)) {
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", "diff");
		cJSON_AddStringToObject(c, "path", full);
		cJSON_AddItemToObject(c, "oldText", added ? cJSON_CreateNull() :
		    cJSON_CreateString(old));
		cJSON_AddStringToObject(c, "newText", now);
	}
	free(now);
	free(diff);
	free(old);
	return c;
}

/*
 * run.changes: the files a step changed, as locations of the last edit of the
 * turn, with their diffs (the first ACP_DIFFS_MAX).
 */
static void
acp_changes_event(struct acp_agent *a, struct acp_session *s, const cJSON *d)
{
	const cJSON *p;
	cJSON *u, *locs, *content;
	int diffs = 0;

	if (s->last_edit[0] == '\0' || s->cwd == NULL)
		return;
	u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", "tool_call_update");
	cJSON_AddStringToObject(u, "toolCallId", s->last_edit);
	locs = cJSON_AddArrayToObject(u, "locations");
	content = cJSON_AddArrayToObject(u, "content");
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(d, "paths")) {
		cJSON *l, *c;
		char *full;

		if (!cJSON_IsString(p))
			continue;
		full = xasprintf("%s/%s", s->cwd, p->valuestring);
		l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "path", full);
		cJSON_AddItemToArray(locs, l);
		if (diffs < ACP_DIFFS_MAX && (c = acp_file_diff(a, s, p->valuestring, full)) != NULL) {
			cJSON_AddItemToArray(content, c);
			diffs++;
		}
		free(full);
	}
	if (diffs == 0)
		cJSON_DeleteItemFromObject(u, "content");
	acp_update(s, u);
}

/* plan.updated (the plan resource) as a plan update. */
static void
acp_plan_event(const struct acp_session *s, const cJSON *plan)
{
	const cJSON *step;
	cJSON *u = cJSON_CreateObject(), *entries;

	cJSON_AddStringToObject(u, "sessionUpdate", "plan");
	entries = cJSON_AddArrayToObject(u, "entries");
	cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(plan, "steps")) {
		const char *st = json_get_string(step, "status");
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "content", json_get_string(step, "title") ?
		    json_get_string(step, "title") : "");
		cJSON_AddStringToObject(e, "priority", "medium");
		cJSON_AddStringToObject(e, "status", st == NULL ? "pending" :
		    strcmp(st, "in-progress") == 0 ? "in_progress" :
		    strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0 ? "completed" :
		    "pending");
		cJSON_AddItemToArray(entries, e);
	}
	acp_update(s, u);
}

/* A permission option {optionId, name, kind}. */
static void
acp_option(cJSON *options, const char *id, const char *name, const char *kind)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "optionId", id);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "kind", kind);
	cJSON_AddItemToArray(options, o);
}

/*
 * The file a write would replace, for a diff: opened as the agent's file tools
 * open it (beneath the workspace, never a hidden path: the path is the model's);
 * NULL when there is none, it cannot be shown, or it is too big.
 */
static char *
acp_read_ws(const char *cwd, const char *path)
{
	struct td_paths paths;
	struct wsfile_root *root;
	struct stat st;
	struct buf b;
	char chunk[8192], *rel = NULL, *why = NULL, **hidden;
	ssize_t n;
	int fd = -1;

	if (!paths_init(&paths))
		return NULL;
	hidden = sandbox_hidden_paths(&paths, NULL);
	root = wsfile_root_open(cwd, (const char *const *)hidden, &why);
	if (root != NULL && wsfile_open(root, path, O_RDONLY | O_NONBLOCK, &fd, &st, &rel,
	    &why) == WSFILE_OK && !S_ISREG(st.st_mode)) {
		close(fd);
		fd = -1;
	}
	wsfile_root_free(root);
	sandbox_hidden_free(hidden);
	paths_free(&paths);
	free(rel);
	free(why);
	if (fd < 0)
		return NULL;
	buf_init(&b, ACP_PROMPT_MAX);
	while ((n = read(fd, chunk, sizeof chunk)) > 0) {
		if (!buf_append(&b, chunk, (size_t)n)) {
			close(fd);
			buf_free(&b);
			return NULL;
		}
	}
	close(fd);
	if (b.len > 0 && !json_utf8_valid(b.data, b.len)) {
		buf_free(&b);
		return NULL;
	}
	if (b.data == NULL) {
		buf_free(&b);
		return xstrdup("");
	}
	return buf_steal(&b);
}

static struct acp_ask *
acp_ask_add(struct acp_agent *a, struct acp_session *s)
{
	struct acp_ask *k;

	if (a->nasks >= ACP_MAX_ASKS)
		return NULL;
	k = &a->asks[a->nasks++];
	memset(k, 0, sizeof *k);
	k->id = ++a->next_id;
	k->s = s;
	return k;
}

static void
acp_ask_send(struct acp_ask *k, cJSON *tool_call, bool plan)
{
	cJSON *p = cJSON_CreateObject(), *options, *m;

	cJSON_AddStringToObject(p, "sessionId", k->s->id);
	cJSON_AddItemToObject(p, "toolCall", tool_call);
	options = cJSON_AddArrayToObject(p, "options");
	if (plan) {
		acp_option(options, "approve", "Approve the plan", "allow_once");
		acp_option(options, "reject", "Reject the plan", "reject_once");
	} else {
		acp_option(options, "allow-once", "Allow", "allow_once");
		acp_option(options, "allow-always", "Allow for the rest of this run",
		    "allow_always");
		acp_option(options, "reject", "Reject", "reject_once");
	}
	m = acp_request(k->id, "session/request_permission", p);
	acp_out(m);
	cJSON_Delete(m);
}

/* run.permission pending: the prompt's tool call, with a diff for a file write. */
static void
acp_permission_event(struct acp_agent *a, struct acp_session *s, const cJSON *d)
{
	const char *id = json_get_string(d, "promptId");
	const char *status = json_get_string(d, "status");
	struct td_permission *perm = NULL;
	struct td_error err;
	struct acp_ask *k;
	cJSON *tc, *input;
	const char *path, *content;

	if (id == NULL || status == NULL || strcmp(status, "pending") != 0)
		return;
	if (td_get_permission(a->c, id, &a->ro, &perm, &err) != TD_OK) {
		fprintf(stderr, "taskdeck acp: permission %s: %s\n", id, err.message);
		return;
	}
	if ((k = acp_ask_add(a, s)) == NULL) {
		td_permission_free(perm);
		return;
	}
	k->prompt = xstrdup(id);
	tc = cJSON_CreateObject();
	cJSON_AddStringToObject(tc, "toolCallId", id);
	cJSON_AddStringToObject(tc, "title", perm->summary ? perm->summary : perm->tool);
	cJSON_AddStringToObject(tc, "kind", acp_tool_kind(perm->tool));
	cJSON_AddStringToObject(tc, "status", "pending");
	input = json_parse(perm->input_json, strlen(perm->input_json));
	path = json_get_string(input, "path");
	content = json_get_string(input, "content");
	if (path != NULL && s->cwd != NULL) {
		cJSON *locs = cJSON_AddArrayToObject(tc, "locations"), *l = cJSON_CreateObject();
		char *full = path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", s->cwd, path);

		cJSON_AddStringToObject(l, "path", full);
		cJSON_AddItemToArray(locs, l);
		if (content != NULL && strcmp(perm->tool, "write_file") == 0) {
			cJSON *cs = cJSON_AddArrayToObject(tc, "content"), *dd = cJSON_CreateObject();
			char *old = acp_read_ws(s->cwd, path);

			cJSON_AddStringToObject(dd, "type", "diff");
			cJSON_AddStringToObject(dd, "path", full);
			cJSON_AddItemToObject(dd, "oldText", old ? cJSON_CreateString(old) :
			    cJSON_CreateNull());
			cJSON_AddStringToObject(dd, "newText", content);
			cJSON_AddItemToArray(cs, dd);
			free(old);
		}
		free(full);
	}
	if (input != NULL)
		cJSON_AddItemToObject(tc, "rawInput", input);
	acp_ask_send(k, tc, false);
	td_permission_free(perm);
}

/* plan.updated awaiting approval: the plan, then the question. */
static void
acp_plan_ask(struct acp_agent *a, struct acp_session *s, const cJSON *plan)
{
	struct acp_ask *k;
	cJSON *tc, *content, *c;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(plan, "version");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(plan, "revision");
	const char *summary = json_get_string(plan, "summary");
	char id[64];

	if (!cJSON_IsNumber(v) || !cJSON_IsNumber(r) || (k = acp_ask_add(a, s)) == NULL)
		return;
	k->plan_version = (long)v->valuedouble;
	k->plan_revision = (long)r->valuedouble;
	snprintf(id, sizeof id, "plan-%ld-%ld", k->plan_version, k->plan_revision);
	tc = cJSON_CreateObject();
	cJSON_AddStringToObject(tc, "toolCallId", id);
	cJSON_AddStringToObject(tc, "title", "Carry out this plan?");
	cJSON_AddStringToObject(tc, "kind", "think");
	cJSON_AddStringToObject(tc, "status", "pending");
	content = cJSON_AddArrayToObject(tc, "content");
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "content");
	cJSON_AddItemToObject(c, "content", acp_text_block(summary ? summary : "(no summary)"));
	cJSON_AddItemToArray(content, c);
	acp_ask_send(k, tc, true);
}

/* The session of a run, or NULL. */
static struct acp_session *
acp_session_of_run(struct acp_agent *a, const char *run_id)
{
	for (size_t i = 0; run_id != NULL && i < a->nsessions; i++) {
		if (a->sessions[i]->run_id != NULL && strcmp(a->sessions[i]->run_id, run_id) == 0)
			return a->sessions[i];
	}
	return NULL;
}

static struct acp_session *
acp_session_find(struct acp_agent *a, const char *id)
{
	for (size_t i = 0; id != NULL && i < a->nsessions; i++) {
		if (strcmp(a->sessions[i]->id, id) == 0)
			return a->sessions[i];
	}
	return NULL;
}

/* The stop reason of a run that ended; NULL: answer with an error (err holds it). */
static const char *
acp_stop_reason(const char *status, const cJSON *error)
{
	const char *code = json_get_string(error, "code");

	if (status == NULL)
		return NULL;
	if (strcmp(status, "completed") == 0)
		return "end_turn";
	if (strcmp(status, "cancelled") == 0)
		return "cancelled";
	if (code != NULL && strcmp(code, "max_turns") == 0)
		return "max_turn_requests";
	if (code != NULL && strcmp(code, "max_tokens") == 0)
		return "max_tokens";
	if (code != NULL && strstr(code, "refus") != NULL)
		return "refusal";
	return NULL;
}

/* Drops the asks of a session (its turn ended). */
static void
acp_asks_drop(struct acp_agent *a, const struct acp_session *s)
{
	size_t j = 0;

	for (size_t i = 0; i < a->nasks; i++) {
		if (a->asks[i].s == s) {
			free(a->asks[i].prompt);
			continue;
		}
		a->asks[j++] = a->asks[i];
	}
	a->nasks = j;
}

/* run.finished: the turn's answer. */
static void
acp_finished_event(struct acp_agent *a, struct acp_session *s, const cJSON *d)
{
	const char *status = json_get_string(d, "status");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(d, "error");
	const char *stop = acp_stop_reason(status, error);
	struct td_run *run = NULL;
	struct td_error err;

	if (s->prompt_id != NULL) {
		if (stop != NULL) {
			cJSON *res = cJSON_CreateObject(), *meta, *td;

			cJSON_AddStringToObject(res, "stopReason", stop);
			meta = cJSON_AddObjectToObject(res, "_meta");
			td = cJSON_AddObjectToObject(meta, "taskdeck");
			cJSON_AddStringToObject(td, "runId", s->run_id);
			cJSON_AddStringToObject(td, "sessionId", s->td_session ? s->td_session : "");
			if (td_get_run(a->c, s->run_id, &a->ro, &run, &err) == TD_OK) {
				cJSON *usage = cJSON_AddObjectToObject(res, "usage");

				cJSON_AddNumberToObject(usage, "inputTokens", (double)run->input_tokens);
				cJSON_AddNumberToObject(usage, "outputTokens", (double)run->output_tokens);
				cJSON_AddNumberToObject(usage, "totalTokens",
				    (double)(run->input_tokens + run->output_tokens));
				if (run->has_cost)
					cJSON_AddNumberToObject(td, "costUsd", run->cost);
				td_run_free(run);
			}
			acp_reply(s->prompt_id, res);
		} else {
			acp_fail(s->prompt_id, ACP_INTERNAL_ERROR, "the run %s %s: %s: %s", s->run_id,
			    status ? status : "ended", json_get_string(error, "code") ?
			    json_get_string(error, "code") : "error",
			    json_get_string(error, "message") ? json_get_string(error, "message") :
			    "no message");
		}
		cJSON_Delete(s->prompt_id);
		s->prompt_id = NULL;
	}
	acp_asks_drop(a, s);
	free(s->run_id);
	s->run_id = NULL;
	cJSON_Delete(s->tools);
	s->tools = NULL;
	s->last_edit[0] = '\0';
}

/*
 * One event of a run of session s: live (from the stream) or replayed from
 * the durable history (live false: no questions, no answers).
 */
static void
acp_event(struct acp_agent *a, struct acp_session *s, const struct td_event *e, bool live)
{
	cJSON *d = json_parse(e->data_json, strlen(e->data_json));

	if (strcmp(e->type, "run.output") == 0) {
		const char *delta = json_get_string(d, "delta");

		if (delta != NULL && delta[0] != '\0')
			acp_chunk(s, "agent_message_chunk", delta);
	} else if (strcmp(e->type, "run.tool") == 0) {
		acp_tool_event(s, d);
	} else if (live && strcmp(e->type, "run.changes") == 0) {
		acp_changes_event(a, s, d);
	} else if (strcmp(e->type, "plan.updated") == 0) {
		const char *st = json_get_string(d, "status");

		acp_plan_event(s, d);
		if (live && st != NULL && strcmp(st, "awaiting-approval") == 0)
			acp_plan_ask(a, s, d);
	} else if (live && strcmp(e->type, "run.permission") == 0) {
		acp_permission_event(a, s, d);
	} else if (live && strcmp(e->type, "run.finished") == 0) {
		acp_finished_event(a, s, d);
	}
	cJSON_Delete(d);
}

/*
 * After a resync (events were lost): a turn whose run ended meanwhile is
 * answered from the run as the service has it.
 */
static void
acp_resync(struct acp_agent *a)
{
	for (size_t i = 0; i < a->nsessions; i++) {
		struct acp_session *s = a->sessions[i];
		struct td_run *run = NULL;
		struct td_error err;
		cJSON *d, *e;

		if (s->run_id == NULL || td_get_run(a->c, s->run_id, &a->ro, &run, &err) != TD_OK)
			continue;
		if (td_run_is_final(run)) {
			d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "status", run->status);
			if (run->error_code != NULL) {
				e = cJSON_AddObjectToObject(d, "error");
				cJSON_AddStringToObject(e, "code", run->error_code);
				cJSON_AddStringToObject(e, "message", run->error_message ?
				    run->error_message : "");
			}
			acp_finished_event(a, s, d);
			cJSON_Delete(d);
		}
		td_run_free(run);
	}
}

/*
 * A new connection and stream after the stream broke: the service is found
 * again (a restart comes back on another port), the stream resumes after the
 * last event (a new service: a resync, answered by acp_resync).  a->ev stays
 * NULL when the service is not back yet; the loop tries again.
 */
static void
acp_reconnect(struct acp_agent *a)
{
	struct td_events_options o = { .last_event_id = a->last_event };
	struct td_connect_options co = { .request_timeout_ms = a->cli->timeout_ms };
	struct td_error err;

	td_client_free(a->cli->client);
	a->cli->client = NULL;
	a->c = NULL;
	if (td_connect(&a->cli->client, &co, &err) != TD_OK)
		return;	/* quietly: tried again in a moment */
	a->c = a->cli->client;
	if (td_events_open(a->c, NULL, &o, &a->ev, &err) != TD_OK ||
	    td_events_ready(a->ev, 5000, &err) != TD_OK) {
		td_events_close(a->ev);
		a->ev = NULL;
		return;
	}
	fprintf(stderr, "taskdeck acp: connected again to %s\n", td_client_base_url(a->c));
	acp_events_drain(a);
}

/* Takes what the stream holds; reopens it after a failure. */
static void
acp_events_drain(struct acp_agent *a)
{
	while (a->ev != NULL) {
		struct td_event *e = NULL;
		struct td_error err;
		struct acp_session *s;
		enum td_code rc = td_events_next(a->ev, 0, &e, &err);

		if (rc == TD_TIMEOUT)
			return;
		if (rc != TD_OK) {
			fprintf(stderr, "taskdeck acp: the event stream broke (%s); resuming\n",
			    err.message);
			free(a->last_event);
			a->last_event = td_events_last_id(a->ev);
			td_events_close(a->ev);
			a->ev = NULL;
			acp_reconnect(a);
			return;
		}
		if (strcmp(e->type, "stream.resync-required") == 0)
			acp_resync(a);
		else if ((s = acp_session_of_run(a, e->run_id)) != NULL)
			acp_event(a, s, e, true);
		else if (strcmp(e->type, "plan.updated") == 0 && e->session_id != NULL) {
			/* A plan names its session; its run is the session's turn. */
			for (size_t i = 0; i < a->nsessions; i++) {
				s = a->sessions[i];
				if (s->td_session != NULL && s->run_id != NULL &&
				    strcmp(s->td_session, e->session_id) == 0)
					acp_event(a, s, e, true);
			}
		}
		td_event_free(e);
	}
}

static void
acp_initialize(struct acp_agent *a, const cJSON *id, const cJSON *params)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	cJSON *res = cJSON_CreateObject(), *caps, *pc, *mcp, *info;

	if (!cJSON_IsNumber(v)) {
		cJSON_Delete(res);
		acp_fail(id, ACP_INVALID_PARAMS, "initialize needs protocolVersion");
		return;
	}
	a->initialized = true;
	cJSON_AddNumberToObject(res, "protocolVersion", ACP_PROTOCOL_VERSION);
	caps = cJSON_AddObjectToObject(res, "agentCapabilities");
	cJSON_AddTrueToObject(caps, "loadSession");
	pc = cJSON_AddObjectToObject(caps, "promptCapabilities");
	cJSON_AddFalseToObject(pc, "image");
	cJSON_AddFalseToObject(pc, "audio");
	cJSON_AddTrueToObject(pc, "embeddedContext");
	mcp = cJSON_AddObjectToObject(caps, "mcpCapabilities");
	cJSON_AddTrueToObject(mcp, "http");
	cJSON_AddFalseToObject(mcp, "sse");
	cJSON_AddArrayToObject(res, "authMethods");
	info = cJSON_AddObjectToObject(res, "agentInfo");
	cJSON_AddStringToObject(info, "name", "taskdeck");
	cJSON_AddStringToObject(info, "title", "taskdeck");
	cJSON_AddStringToObject(info, "version", td_version());
	acp_reply(id, res);
}

/* The project of the editor's sessions: --project, the current one, else one named after cwd. */
static bool
acp_project(struct acp_agent *a, const char *cwd, struct td_error *err)
{
	const char *given = cli_get(a->cli, "project");
	enum cli_context_source src;
	struct td_project *p = NULL;
	const char *base;

	if (a->project != NULL)
		return true;
	if (given != NULL)
		return td_find_project(a->c, given, &a->ro, &a->project, err) == TD_OK;
	if (cli_current_project(a->cli, &a->project, &src) == CLI_EXIT_OK && a->project != NULL)
		return true;
	base = strrchr(cwd, '/');
	base = base && base[1] ? base + 1 : "editor";
	if (td_find_project(a->c, base, &a->ro, &a->project, err) == TD_OK)
		return true;
	if (err->code != TD_NOT_FOUND)
		return false;
	if (td_create_project(a->c, &(struct td_new_project){ .name = base,
	    .description = "Sessions of an editor (taskdeck acp)" }, &a->ro, &p, err) != TD_OK)
		return false;
	a->project = xstrdup(p->id);
	td_project_free(p);
	return true;
}

/* The editor's session for taskdeck session id in cwd; NULL when there are too many. */
static struct acp_session *
acp_session_add(struct acp_agent *a, const char *id, const char *cwd)
{
	struct acp_session *s;

	if (a->nsessions >= ACP_MAX_SESSIONS)
		return NULL;
	s = xcalloc(1, sizeof *s);
	snprintf(s->id, sizeof s->id, "%s", id);
	s->td_session = xstrdup(id);
	s->cwd = xstrdup(cwd);
	a->sessions[a->nsessions++] = s;
	return s;
}

/* cwd must be an absolute directory. */
static const char *
acp_cwd(const cJSON *id, const cJSON *params)
{
	const char *cwd = json_get_string(params, "cwd");

	if (cwd == NULL || cwd[0] != '/' || strlen(cwd) >= PATH_MAX) {
		acp_fail(id, ACP_INVALID_PARAMS, "cwd must be an absolute path");
		return NULL;
	}
	return cwd;
}

/* Zeroes every string of j (an editor's MCP servers hold secrets). */
static void
acp_json_wipe(cJSON *j)
{
	for (; j != NULL; j = j->next) {
		if (j->valuestring != NULL)
			explicit_bzero(j->valuestring, strlen(j->valuestring));
		acp_json_wipe(j->child);
	}
}

/* Copies the members of from named in keys into to. */
static void
acp_copy_keys(cJSON *to, const cJSON *from, const char *const *keys)
{
	for (; *keys != NULL; keys++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, *keys);

		if (v != NULL)
			cJSON_AddItemToObject(to, *keys, cJSON_Duplicate(v, true));
	}
}

/*
 * The editor's mcpServers as the session's connectors (JSON text to wipe and
 * free with acp_mcp_free), each server's members the service takes (its
 * _meta left out); NULL when params has none.
 */
static char *
acp_mcp_json(const cJSON *params)
{
	static const char *const server_keys[] = { "name", "type", "command", "args", "url",
		NULL };
	static const char *const pair_keys[] = { "name", "value", NULL };
	const cJSON *servers = cJSON_GetObjectItemCaseSensitive(params, "mcpServers"), *sv;
	cJSON *out;
	char *text;

	if (!cJSON_IsArray(servers))
		return NULL;
	out = cJSON_CreateArray();
	cJSON_ArrayForEach(sv, servers) {
		cJSON *one = cJSON_CreateObject();

		if (cJSON_IsObject(sv))
			acp_copy_keys(one, sv, server_keys);
		for (const char *const *k = (const char *const[]){ "env", "headers", NULL }; *k;
		    k++) {
			const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(sv, *k), *e;
			cJSON *copy;

			if (!cJSON_IsArray(pairs)) {
				if (pairs != NULL)
					cJSON_AddItemToObject(one, *k, cJSON_Duplicate(pairs, true));
				continue;
			}
			copy = cJSON_AddArrayToObject(one, *k);
			cJSON_ArrayForEach(e, pairs) {
				cJSON *pair = cJSON_CreateObject();

				acp_copy_keys(pair, e, pair_keys);
				cJSON_AddItemToArray(copy, pair);
			}
		}
		cJSON_AddItemToArray(out, one);
	}
	text = json_print(out);
	acp_json_wipe(out);
	cJSON_Delete(out);
	return text;
}

static void
acp_mcp_free(char *text)
{
	if (text != NULL)
		explicit_bzero(text, strlen(text));
	free(text);
}

/*
 * session/new {cwd, mcpServers}: a taskdeck session in cwd with the command
 * line's configuration, the editor's MCP servers its own connectors.
 */
static void
acp_session_new_req(struct acp_agent *a, const cJSON *id, const cJSON *params)
{
	const char *cwd = acp_cwd(id, params), *base;
	const struct cli *cli = a->cli;
	struct td_session *ts = NULL;
	struct acp_session *s;
	struct td_error err;
	char *mcp, *title;
	enum td_code rc;
	cJSON *res;

	if (cwd == NULL)
		return;
	if (!acp_project(a, cwd, &err)) {
		acp_fail_td(id, &err);
		return;
	}
	if (a->nsessions >= ACP_MAX_SESSIONS) {
		acp_fail(id, ACP_INTERNAL_ERROR, "at most %d sessions at once", ACP_MAX_SESSIONS);
		return;
	}
	base = strrchr(cwd, '/');
	title = xasprintf("Editor session in %.60s", base != NULL && base[1] ? base + 1 : cwd);
	mcp = acp_mcp_json(params);
	rc = td_create_session(a->c, &(struct td_new_session){
		.project = a->project,
		.title = title,
		.cwd = cwd,
		.framework = cli_get(cli, "framework"),
		.provider = cli_get(cli, "provider"),
		.model = cli_get(cli, "model"),
		.effort = cli_get(cli, "effort"),
		.connectors_json = mcp,
	}, &a->ro, &ts, &err);
	acp_mcp_free(mcp);
	free(title);
	if (rc != TD_OK) {
		acp_fail_td(id, &err);
		return;
	}
	s = acp_session_add(a, ts->id, ts->cwd != NULL ? ts->cwd : cwd);
	td_session_free(ts);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "sessionId", s->id);
	acp_reply(id, res);
}

/* Replays one run: the user's prompt, then its durable events. */
static bool
acp_replay_run(struct acp_agent *a, struct acp_session *s, const struct td_run *run,
    struct td_error *err)
{
	char *after = NULL;

	if (run->prompt != NULL)
		acp_chunk(s, "user_message_chunk", run->prompt);
	do {
		struct td_run_event_list *page = NULL;

		if (td_list_run_events(a->c, run->id, after, 0, &a->ro, &page, err) != TD_OK) {
			free(after);
			return false;
		}
		for (size_t i = 0; i < page->count; i++)
			acp_event(a, s, page->items[i], false);
		free(after);
		after = page->next_after ? xstrdup(page->next_after) : NULL;
		td_run_event_list_free(page);
	} while (after != NULL);
	cJSON_Delete(s->tools);
	s->tools = NULL;
	return true;
}

/* session/load {sessionId, cwd, mcpServers}: a taskdeck session (ses_...), its history replayed. */
static void
acp_session_load_req(struct acp_agent *a, const cJSON *id, const cJSON *params)
{
	const char *sid = json_get_string(params, "sessionId");
	const char *cwd = acp_cwd(id, params);
	struct acp_session *s;
	struct td_session *ts = NULL;
	struct td_run_list *runs = NULL;
	struct td_error err;
	enum td_code rc;
	char *mcp;

	if (cwd == NULL)
		return;
	if (sid == NULL) {
		acp_fail(id, ACP_INVALID_PARAMS, "session/load needs sessionId");
		return;
	}
	s = acp_session_find(a, sid);
	if (td_get_session(a->c, sid, &a->ro, &ts, &err) != TD_OK) {
		acp_fail_td(id, &err);
		return;
	}
	if (s == NULL) {
		if ((s = acp_session_add(a, ts->id, ts->cwd ? ts->cwd : cwd)) == NULL) {
			td_session_free(ts);
			acp_fail(id, ACP_INTERNAL_ERROR, "at most %d sessions at once",
			    ACP_MAX_SESSIONS);
			return;
		}
		free(a->project);
		a->project = xstrdup(ts->project_id);
	}
	td_session_free(ts);
	/* The editor's MCP servers as it gives them now replace the session's. */
	if ((mcp = acp_mcp_json(params)) != NULL) {
		rc = td_set_session_connectors(a->c, s->td_session, mcp, &a->ro, &err);
		acp_mcp_free(mcp);
		if (rc != TD_OK) {
			acp_fail_td(id, &err);
			return;
		}
	}
	/* Oldest first: the service lists newest first, a page at a time. */
	if (td_list_runs(a->c, &(struct td_run_filter){ .session_id = s->td_session }, 1000,
	    NULL, &a->ro, &runs, &err) != TD_OK) {
		acp_fail_td(id, &err);
		return;
	}
	for (size_t i = runs->count; i-- > 0;) {
		if (!acp_replay_run(a, s, &runs->items[i], &err)) {
			td_run_list_free(runs);
			acp_fail_td(id, &err);
			return;
		}
	}
	td_run_list_free(runs);
	acp_reply(id, cJSON_CreateObject());
}

/* The prompt's content blocks as one text; NULL with *why for what cannot be taken. */
static char *
acp_prompt_text(const cJSON *blocks, const char **why)
{
	const cJSON *b;
	struct buf t;

	buf_init(&t, ACP_PROMPT_MAX);
	*why = NULL;
	cJSON_ArrayForEach(b, blocks) {
		const char *type = json_get_string(b, "type");
		bool ok = true;

		if (type == NULL) {
			*why = "a content block without a type";
		} else if (strcmp(type, "text") == 0) {
			ok = buf_appends(&t, json_get_string(b, "text") ?
			    json_get_string(b, "text") : "");
		} else if (strcmp(type, "resource_link") == 0) {
			ok = buf_printf(&t, "[%s](%s)", json_get_string(b, "name") ?
			    json_get_string(b, "name") : "file", json_get_string(b, "uri") ?
			    json_get_string(b, "uri") : "");
		} else if (strcmp(type, "resource") == 0) {
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(b, "resource");
			const char *text = json_get_string(r, "text");

			if (text == NULL)
				*why = "an embedded resource that is not text";
			else
				ok = buf_printf(&t, "\n<context uri=\"%s\">\n%s\n</context>\n",
				    json_get_string(r, "uri") ? json_get_string(r, "uri") : "",
				    text);
		} else {
			*why = "image and audio content are not supported (promptCapabilities)";
		}
		if (!ok)
			*why = "the prompt is over 1 MiB";
		if (*why != NULL) {
			buf_free(&t);
			return NULL;
		}
	}
	if (t.len == 0) {
		buf_free(&t);
		*why = "the prompt is empty";
		return NULL;
	}
	return buf_steal(&t);
}

static void
acp_prompt_req(struct acp_agent *a, const cJSON *id, const cJSON *params)
{
	struct acp_session *s = acp_session_find(a, json_get_string(params, "sessionId"));
	const struct cli *cli = a->cli;
	struct td_run *run = NULL;
	struct td_error err;
	const char *why;
	char *text;
	enum td_code rc;

	if (s == NULL) {
		acp_fail(id, ACP_RESOURCE_NOT_FOUND, "no session %s",
		    json_get_string(params, "sessionId") ? json_get_string(params, "sessionId") :
		    "(sessionId missing)");
		return;
	}
	if (s->run_id != NULL) {
		acp_fail(id, ACP_INVALID_REQUEST, "the session's turn %s is still under way",
		    s->run_id);
		return;
	}
	if ((text = acp_prompt_text(cJSON_GetObjectItemCaseSensitive(params, "prompt"),
	    &why)) == NULL) {
		acp_fail(id, ACP_INVALID_PARAMS, "%s", why);
		return;
	}
	struct td_run_request rq = {
		.project = a->project,
		.prompt = text,
		.permission_profile = cli_get(cli, "permission"),
		.turn_intent = cli_has(cli, "plan-first") ? "plan-first" : NULL,
		.session_id = s->td_session,
	};
	rc = td_start_run(a->c, &rq, &a->ro, &run, &err);
	free(text);
	if (rc != TD_OK) {
		acp_fail_td(id, &err);
		return;
	}
	s->run_id = xstrdup(run->id);
	s->prompt_id = cJSON_Duplicate(id, true);
	td_run_free(run);
	/* Events of the run that came before its id was known wait in the stream. */
	acp_events_drain(a);
}

static void
acp_cancel_note(struct acp_agent *a, const cJSON *params)
{
	struct acp_session *s = acp_session_find(a, json_get_string(params, "sessionId"));
	struct td_error err;

	if (s == NULL || s->run_id == NULL)
		return;
	if (td_cancel_run(a->c, s->run_id, &a->ro, NULL, &err) != TD_OK)
		fprintf(stderr, "taskdeck acp: cancel %s: %s\n", s->run_id, err.message);
}

/* The editor's answer to a session/request_permission. */
static void
acp_answer(struct acp_agent *a, const cJSON *msg)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *outcome = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(msg, "result"), "outcome");
	const char *kind = json_get_string(outcome, "outcome");
	const char *option = json_get_string(outcome, "optionId");
	struct acp_ask k;
	struct td_error err;
	enum td_code rc;
	size_t i;

	for (i = 0; i < a->nasks; i++) {
		if (cJSON_IsNumber(id) && (long)id->valuedouble == a->asks[i].id)
			break;
	}
	if (i == a->nasks)
		return;
	k = a->asks[i];
	a->asks[i] = a->asks[--a->nasks];
	/* No choice (cancelled, an error, an unknown option): the safe answer. */
	bool yes = kind != NULL && strcmp(kind, "selected") == 0 && option != NULL &&
	    (strcmp(option, "allow-once") == 0 || strcmp(option, "allow-always") == 0 ||
	    strcmp(option, "approve") == 0);

	if (k.prompt != NULL) {
		rc = td_answer_permission(a->c, k.prompt, !yes ? "deny" :
		    strcmp(option, "allow-always") == 0 ? "allow-run" : "allow", &a->ro, NULL,
		    &err);
		free(k.prompt);
	} else if (k.s->td_session != NULL) {
		rc = td_respond_session_plan(a->c, k.s->td_session, yes ? "approve" : "reject",
		    k.plan_version, k.plan_revision, NULL, &a->ro, NULL, &err);
	} else
		return;
	/* Answered elsewhere meanwhile (the dashboard, the CLI): theirs stands. */
	if (rc != TD_OK && rc != TD_PERMISSION_NOT_PENDING && rc != TD_PLAN_NOT_PENDING &&
	    rc != TD_STALE_PLAN)
		fprintf(stderr, "taskdeck acp: answering: %s\n", err.message);
}

/* One message from the editor. */
static void
acp_dispatch(struct acp_agent *a, const cJSON *msg)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const char *method = json_get_string(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

	if (a->c == NULL && (method == NULL || strcmp(method, "initialize") != 0)) {
		/* The service went away; acp_reconnect is at it. */
		if (method != NULL && id != NULL)
			acp_fail(id, ACP_INTERNAL_ERROR, "taskdeckd cannot be reached at the "
			    "moment; try again");
		return;
	}
	if (method == NULL) {
		if (id != NULL)
			acp_answer(a, msg);
		return;
	}
	if (id == NULL) {	/* notifications */
		if (strcmp(method, "session/cancel") == 0)
			acp_cancel_note(a, params);
		return;
	}
	if (!cJSON_IsNumber(id) && !cJSON_IsString(id)) {
		acp_fail(NULL, ACP_INVALID_REQUEST, "a request id is a number or a string");
		return;
	}
	if (strcmp(method, "initialize") == 0)
		acp_initialize(a, id, params);
	else if (!a->initialized)
		acp_fail(id, ACP_INVALID_REQUEST, "initialize first");
	else if (strcmp(method, "authenticate") == 0)
		acp_reply(id, cJSON_CreateObject());
	else if (strcmp(method, "session/new") == 0)
		acp_session_new_req(a, id, params);
	else if (strcmp(method, "session/load") == 0)
		acp_session_load_req(a, id, params);
	else if (strcmp(method, "session/prompt") == 0)
		acp_prompt_req(a, id, params);
	else
		acp_fail(id, ACP_METHOD_NOT_FOUND, "%s is not a method of taskdeck's agent",
		    method);
}

/* Starts taskdeckd when none runs, connects, subscribes. */
static int
acp_connect(struct acp_agent *a)
{
	struct td_error err;
	int rc;

	if ((rc = cli_daemon_ensure(a->cli)) != CLI_EXIT_OK)
		return rc;
	if ((rc = cli_connect(a->cli)) != CLI_EXIT_OK)
		return rc;
	a->c = a->cli->client;
	a->ro = cli_request_options(a->cli);
	if (td_events_open(a->c, NULL, NULL, &a->ev, &err) != TD_OK ||
	    td_events_ready(a->ev, 10000, &err) != TD_OK)
		return cli_fail(&err);
	return CLI_EXIT_OK;
}

static void
acp_free(struct acp_agent *a)
{
	for (size_t i = 0; i < a->nsessions; i++) {
		struct acp_session *s = a->sessions[i];

		free(s->td_session);
		free(s->cwd);
		free(s->run_id);
		cJSON_Delete(s->prompt_id);
		cJSON_Delete(s->tools);
		free(s);
	}
	for (size_t i = 0; i < a->nasks; i++)
		free(a->asks[i].prompt);
	td_events_close(a->ev);
	acp_reader_free(&a->in);
	free(a->project);
	free(a->last_event);
}

static int
cmd_acp_exec(struct cli *cli, int argc, char **argv)
{
	struct acp_agent a = { .cli = cli };
	const char *profile = cli_get(cli, "permission");
	int rc;

	(void)argc;
	(void)argv;
	if (profile != NULL && !cli_value_in(cli_permission_profiles, profile))
		return cli_usage_error(cli, "unknown permission profile %s", profile);
	if ((rc = acp_connect(&a)) != CLI_EXIT_OK) {
		acp_free(&a);
		return rc;
	}
	acp_reader_init(&a.in, STDIN_FILENO);
	fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	while (!a.in.eof) {
		struct pollfd fds[2] = {
			{ .fd = STDIN_FILENO, .events = POLLIN },
			{ .fd = a.ev ? td_events_fd(a.ev) : -1, .events = POLLIN },
		};
		cJSON *msg;
		bool bad;

		if (poll(fds, 2, a.ev ? 1000 : 250) < 0 && errno != EINTR)
			break;
		if (a.ev == NULL)
			acp_reconnect(&a);
		else if (fds[1].revents & (POLLIN | POLLHUP | POLLERR))
			acp_events_drain(&a);
		if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		while (acp_read(&a.in, &msg, &bad)) {
			if (bad)
				acp_fail(NULL, ACP_PARSE_ERROR, "not a JSON-RPC message (or over 8 MiB)");
			else
				acp_dispatch(&a, msg);
			cJSON_Delete(msg);
		}
	}
	/* The editor went away: its turns under way end with it. */
	for (size_t i = 0; i < a.nsessions; i++) {
		struct td_error err;

		if (a.c != NULL && a.sessions[i]->run_id != NULL)
			td_cancel_run(a.c, a.sessions[i]->run_id, &a.ro, NULL, &err);
	}
	acp_free(&a);
	return CLI_EXIT_OK;
}
