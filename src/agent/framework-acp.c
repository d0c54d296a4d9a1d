/*
 * acp: any Agent Client Protocol agent (docs/frameworks.md, "acp"), the
 * command and arguments configured as runtimes.acp.  taskdeck-agent is the
 * client: initialize, session/new in the workspace, one session/prompt with the
 * run's prompt; the agent's file reads and writes go through taskdeck's own
 * file tools, its terminals through run_command (in the sandbox, under the
 * run's profile), its permission questions to the service's prompts (or the
 * profile answers them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp.h"
#include "framework.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "tools.h"
#include "wsfile.h"
#include "xalloc.h"

#define ACPF_TERMINALS 16		/* terminals held at once */
#define ACPF_TOOLS_KEPT 1024		/* tool calls whose titles are kept */
#define ACPF_WRITE_MAX (8 * 1024 * 1024)	/* one fs/write_text_file (a line is at most 8 MiB) */
#define ACPF_ASK_INPUT_MAX (64 * 1024)	/* the rawInput shown in a permission prompt */

/* A terminal: its command ran to its end when it was created. */
struct acpf_term {
	char id[24];
	char *output;
	bool truncated;
	bool signalled;
	int code;			/* exit code, or the signal when signalled */
};

struct acpf_state {
	long next_id;
	long init_id, new_id, prompt_id;
	char *session;			/* the agent's session id */
	struct wsfile_root *files;
	char *files_why;
	struct plan_state plan;		/* none: the tools take it, unused */
	unsigned passes;		/* ask: side effects the user allowed, not yet used */
	long calls;			/* our own tool call ids */
	struct acpf_term terms[ACPF_TERMINALS];
	long term_seq;
	cJSON *titles;			/* toolCallId -> title */
};

static void
acpf_send(struct fw_run *r, cJSON *msg)
{
	if (r->to_cli >= 0 && !acp_send(r->to_cli, msg))
		log_info("acp: cannot write to the agent");
	cJSON_Delete(msg);
}

static long
acpf_request(struct fw_run *r, const char *method, cJSON *params)
{
	struct acpf_state *st = r->state;
	long id = ++st->next_id;

	acpf_send(r, acp_request(id, method, params));
	return id;
}

static void
acpf_error(struct fw_run *r, const cJSON *id, int code, const char *message)
{
	acpf_send(r, acp_error(id, code, message));
}

static bool
acpf_check(const struct agent_config *cfg, struct agent_error *err)
{
	if (cfg->plan_first) {
		agent_error_set(err, "unsupported_profile", "plan-first runs need the taskdeck "
		    "framework");
		return false;
	}
	return true;
}

static void
acpf_args(const struct agent_config *cfg, const struct fw_launch *l, struct strv *a)
{
	(void)l;
	for (size_t i = 0; cfg->runtime_args != NULL && cfg->runtime_args[i] != NULL; i++)
		strv_add(a, cfg->runtime_args[i]);
}

static void
acpf_env(const struct agent_config *cfg, struct strv *e)
{
	(void)cfg;
	strv_add(e, "NO_COLOR=1");
}

/* initialize: files and terminals are ours to serve. */
static void
acpf_start(struct fw_run *r)
{
	struct acpf_state *st = r->state;
	cJSON *p = cJSON_CreateObject(), *caps, *fs, *info;

	st->files = wsfile_root_open(r->cfg->workspace, (const char *const *)r->cfg->hidden,
	    &st->files_why);
	st->titles = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "protocolVersion", ACP_PROTOCOL_VERSION);
	caps = cJSON_AddObjectToObject(p, "clientCapabilities");
	fs = cJSON_AddObjectToObject(caps, "fs");
	cJSON_AddBoolToObject(fs, "readTextFile", st->files != NULL);
	cJSON_AddBoolToObject(fs, "writeTextFile", st->files != NULL);
	cJSON_AddTrueToObject(caps, "terminal");
	info = cJSON_AddObjectToObject(p, "clientInfo");
	cJSON_AddStringToObject(info, "name", "taskdeck");
	cJSON_AddStringToObject(info, "version", TD_VERSION);
	st->init_id = acpf_request(r, "initialize", p);
}

static void
acpf_cancel(struct fw_run *r)
{
	struct acpf_state *st = r->state;
	cJSON *p;

	if (st->session == NULL)
		return;
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sessionId", st->session);
	acpf_send(r, acp_notification("session/cancel", p));
}

/* A tool of the built-in set on the agent's behalf; the result in res. */
static int
acpf_tool(struct fw_run *r, const char *name, const cJSON *args, const char *call,
    struct tool_result *res)
{
	struct acpf_state *st = r->state;
	const struct tool *t = tools_find(name, 0);
	struct tool_ctx ctx = { .cfg = r->cfg, .host = r->host, .plan = &st->plan,
		.files = st->files, .files_why = st->files_why, .call_id = call };

	return t->exec(&ctx, args, res);
}

/*
 * Whether a side effect may happen: never under read-only; under ask, once
 * per yes the user gave (to the agent's own question or to ours now).
 */
static bool
acpf_may(struct fw_run *r, const char *tool, const char *summary, cJSON *input)
{
	struct acpf_state *st = r->state;
	struct agent_error err = { 0 };
	cJSON *params, *result = NULL;
	bool yes;

	if (r->cfg->profile == PROFILE_READ_ONLY) {
		cJSON_Delete(input);
		return false;
	}
	if (r->cfg->profile != PROFILE_ASK) {
		cJSON_Delete(input);
		return true;
	}
	if (st->passes > 0) {
		st->passes--;
		cJSON_Delete(input);
		return true;
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "tool", tool);
	cJSON_AddStringToObject(params, "summary", summary);
	cJSON_AddItemToObject(params, "input", input);
	yes = host_request(r->host, "permission.ask", params, &result, &err) == AGENT_OK &&
	    json_get_string(result, "decision") != NULL &&
	    strcmp(json_get_string(result, "decision"), "allow") == 0;
	cJSON_Delete(result);
	agent_error_clear(&err);
	return yes;
}

/* fs/read_text_file {path, line?, limit?}: read_file beneath the workspace. */
static void
acpf_read(struct fw_run *r, const cJSON *id, const cJSON *p)
{
	const char *path = json_get_string(p, "path");
	const cJSON *line = cJSON_GetObjectItemCaseSensitive(p, "line");
	const cJSON *limit = cJSON_GetObjectItemCaseSensitive(p, "limit");
	struct tool_result res;
	cJSON *args, *out;

	if (path == NULL) {
		acpf_error(r, id, ACP_INVALID_PARAMS, "fs/read_text_file needs path");
		return;
	}
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "path", path);
	if (cJSON_IsNumber(line))
		cJSON_AddNumberToObject(args, "offset", line->valuedouble);
	if (cJSON_IsNumber(limit))
		cJSON_AddNumberToObject(args, "limit", limit->valuedouble);
	tool_result_init(&res);
	acpf_tool(r, "read_file", args, NULL, &res);
	if (res.failed) {
		acpf_error(r, id, ACP_RESOURCE_NOT_FOUND, res.content.data ? res.content.data :
		    "the file cannot be read");
	} else {
		out = cJSON_CreateObject();
		cJSON_AddStringToObject(out, "content", res.content.data ? res.content.data : "");
		acpf_send(r, acp_result(id, out));
	}
	tool_result_free(&res);
	cJSON_Delete(args);
}

/* fs/write_text_file {path, content}: write_file, asked under ask, a tool of the run. */
static void
acpf_write(struct fw_run *r, const cJSON *id, const cJSON *p)
{
	struct acpf_state *st = r->state;
	const char *path = json_get_string(p, "path");
	const char *content = json_get_string(p, "content");
	struct tool_result res;
	char call[32], what[AGENT_SUMMARY_MAX + 1];
	cJSON *args, *input;

	if (path == NULL || content == NULL || strlen(content) > ACPF_WRITE_MAX) {
		acpf_error(r, id, ACP_INVALID_PARAMS, "fs/write_text_file needs path and content "
		    "(at most 8 MiB)");
		return;
	}
	snprintf(call, sizeof call, "acp_fs_%ld", ++st->calls);
	snprintf(what, sizeof what, "write %.150s (%zu bytes)", path, strlen(content));
	input = cJSON_CreateObject();
	cJSON_AddStringToObject(input, "path", path);
	if (!acpf_may(r, "write_file", what, input)) {
		fw_tool(r, call, "write_file", "denied", what);
		acpf_error(r, id, ACP_INVALID_REQUEST, r->cfg->profile == PROFILE_READ_ONLY ?
		    "the read-only profile denies writes" : "the user denied the write");
		return;
	}
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "path", path);
	cJSON_AddStringToObject(args, "content", content);
	tool_result_init(&res);
	fw_tool(r, call, "write_file", "started", what);
	acpf_tool(r, "write_file", args, call, &res);
	fw_tool(r, call, "write_file", res.failed ? "failed" : "completed",
	    res.summary[0] ? res.summary : what);
	if (res.failed)
		acpf_error(r, id, ACP_INVALID_REQUEST, res.content.data ? res.content.data :
		    "the file cannot be written");
	else
		acpf_send(r, acp_result(id, cJSON_CreateObject()));
	tool_result_free(&res);
	cJSON_Delete(args);
}

/* s in single quotes for /bin/sh. */
static void
acpf_quote(struct buf *b, const char *s)
{
	buf_appends(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			buf_appends(b, "'\\''");
		else
			buf_append(b, s, 1);
	}
	buf_appends(b, "'");
}

/* The command line of terminal/create: cd, env, the command and its arguments. */
static char *
acpf_command_line(const cJSON *p)
{
	const char *cwd = json_get_string(p, "cwd");
	const cJSON *e, *a;
	struct buf b;

	buf_init(&b, 0);
	if (cwd != NULL) {
		buf_appends(&b, "cd ");
		acpf_quote(&b, cwd);
		buf_appends(&b, " && ");
	}
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "env")) > 0) {
		buf_appends(&b, "env");
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "env")) {
			const char *n = json_get_string(e, "name"), *v = json_get_string(e, "value");
			char *pair;

			if (n == NULL || v == NULL || n[0] == '\0' || strchr(n, '=') != NULL)
				continue;
			pair = xasprintf("%s=%s", n, v);
			buf_appends(&b, " ");
			acpf_quote(&b, pair);
			free(pair);
		}
		buf_appends(&b, " ");
	}
	acpf_quote(&b, json_get_string(p, "command"));
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(p, "args")) {
		if (!cJSON_IsString(a))
			continue;
		buf_appends(&b, " ");
		acpf_quote(&b, a->valuestring);
	}
	return buf_steal(&b);
}

static struct acpf_term *
acpf_term_find(struct acpf_state *st, const char *id)
{
	for (size_t i = 0; id != NULL && i < ACPF_TERMINALS; i++) {
		if (st->terms[i].id[0] != '\0' && strcmp(st->terms[i].id, id) == 0)
			return &st->terms[i];
	}
	return NULL;
}

/*
 * A finished run_command's result ("$ COMMAND\nSTATUS\nOUTPUT") into t: the
 * output (its last limit bytes when limit > 0) and the exit.
 */
static void
acpf_term_fill(struct acpf_term *t, const char *command, const struct tool_result *res,
    long limit)
{
	const char *c = res->content.data ? res->content.data : "";
	const char *status, *out;
	size_t skip = 2 + strlen(command) + 1, len;

	if (strlen(c) < skip) {
		t->output = xstrdup(res->content.data ? c : "");
		t->code = 1;
		return;
	}
	status = c + skip;
	out = strchr(status, '\n');
	out = out ? out + 1 : status + strlen(status);
	if (sscanf(status, "exit status %d", &t->code) != 1) {
		t->signalled = true;
		if (sscanf(status, "killed by signal %d", &t->code) != 1)
			t->code = 9;	/* timed out or over a limit: killed */
	}
	len = strlen(out);
	if (limit > 0 && len > (size_t)limit) {
		out += len - (size_t)limit;
		while ((*out & 0xc0) == 0x80)	/* not inside a character */
			out++;
		t->truncated = true;
	}
	t->output = xstrdup(out);
}

static cJSON *
acpf_exit_status(const struct acpf_term *t)
{
	static const char *const names[] = { [1] = "SIGHUP", [2] = "SIGINT", [6] = "SIGABRT",
		[9] = "SIGKILL", [13] = "SIGPIPE", [15] = "SIGTERM" };
	cJSON *e = cJSON_CreateObject();

	if (t->signalled) {
		cJSON_AddNullToObject(e, "exitCode");
		cJSON_AddStringToObject(e, "signal", t->code > 0 && t->code < 16 &&
		    names[t->code] ? names[t->code] : "SIGKILL");
	} else {
		cJSON_AddNumberToObject(e, "exitCode", t->code);
		cJSON_AddNullToObject(e, "signal");
	}
	return e;
}

/* terminal/create: run_command in the sandbox, to its end. */
static int
acpf_term_create(struct fw_run *r, const cJSON *id, const cJSON *p)
{
	struct acpf_state *st = r->state;
	const cJSON *limit = cJSON_GetObjectItemCaseSensitive(p, "outputByteLimit");
	struct acpf_term *t = NULL;
	struct tool_result res;
	char call[32], what[AGENT_SUMMARY_MAX + 1];
	char *line;
	cJSON *args, *input, *out;
	int rc;

	if (json_get_string(p, "command") == NULL || json_get_string(p, "command")[0] == '\0') {
		acpf_error(r, id, ACP_INVALID_PARAMS, "terminal/create needs command");
		return AGENT_OK;
	}
	for (size_t i = 0; t == NULL && i < ACPF_TERMINALS; i++) {
		if (st->terms[i].id[0] == '\0')
			t = &st->terms[i];
	}
	if (t == NULL) {
		acpf_error(r, id, ACP_INTERNAL_ERROR, "at most 16 terminals at once: release one");
		return AGENT_OK;
	}
	line = acpf_command_line(p);
	snprintf(call, sizeof call, "acp_term_%ld", ++st->calls);
	snprintf(what, sizeof what, "run: %.190s", line);
	input = cJSON_CreateObject();
	cJSON_AddStringToObject(input, "command", line);
	if (!acpf_may(r, "run_command", what, input)) {
		fw_tool(r, call, "run_command", "denied", what);
		acpf_error(r, id, ACP_INVALID_REQUEST, r->cfg->profile == PROFILE_READ_ONLY ?
		    "the read-only profile denies commands" : "the user denied the command");
		free(line);
		return AGENT_OK;
	}
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "command", line);
	tool_result_init(&res);
	fw_tool(r, call, "run_command", "started", what);
	rc = acpf_tool(r, "run_command", args, call, &res);
	fw_tool(r, call, "run_command", rc == AGENT_CANCELLED ? "failed" : res.failed ?
	    "failed" : "completed", res.summary[0] ? res.summary : what);
	if (rc == AGENT_OK) {
		memset(t, 0, sizeof *t);
		snprintf(t->id, sizeof t->id, "term_%ld", ++st->term_seq);
		acpf_term_fill(t, line, &res, cJSON_IsNumber(limit) && limit->valuedouble > 0 &&
		    limit->valuedouble < 1e12 ? (long)limit->valuedouble : 0);
		out = cJSON_CreateObject();
		cJSON_AddStringToObject(out, "terminalId", t->id);
		acpf_send(r, acp_result(id, out));
	}
	tool_result_free(&res);
	cJSON_Delete(args);
	free(line);
	return rc;
}

/* terminal/output, wait_for_exit, kill, release. */
static void
acpf_term(struct fw_run *r, const char *method, const cJSON *id, const cJSON *p)
{
	struct acpf_term *t = acpf_term_find(r->state, json_get_string(p, "terminalId"));
	cJSON *out;

	if (t == NULL) {
		acpf_error(r, id, ACP_RESOURCE_NOT_FOUND, "no such terminal");
		return;
	}
	if (strcmp(method, "terminal/output") == 0) {
		out = cJSON_CreateObject();
		cJSON_AddStringToObject(out, "output", t->output ? t->output : "");
		cJSON_AddBoolToObject(out, "truncated", t->truncated);
		cJSON_AddItemToObject(out, "exitStatus", acpf_exit_status(t));
	} else if (strcmp(method, "terminal/wait_for_exit") == 0) {
		out = acpf_exit_status(t);
	} else {
		out = cJSON_CreateObject();	/* kill: it has ended already */
		if (strcmp(method, "terminal/release") == 0) {
			free(t->output);
			memset(t, 0, sizeof *t);
		}
	}
	acpf_send(r, acp_result(id, out));
}

/* The tool call's rawInput for a prompt: an object of at most ACPF_ASK_INPUT_MAX printed. */
static cJSON *
acpf_ask_input(const cJSON *raw)
{
	char *text = cJSON_IsObject(raw) ? cJSON_PrintUnformatted(raw) : NULL;
	cJSON *input;

	if (text != NULL && strlen(text) <= ACPF_ASK_INPUT_MAX)
		input = cJSON_Duplicate(raw, true);
	else {
		input = cJSON_CreateObject();
		if (text != NULL)
			cJSON_AddStringToObject(input, "note", "the agent's input is over 64 KiB: "
			    "not shown");
	}
	free(text);
	return input;
}

/* The option of a kind among the question's options, or NULL. */
static const char *
acpf_option(const cJSON *options, const char *kind)
{
	const cJSON *o;

	cJSON_ArrayForEach(o, options) {
		const char *k = json_get_string(o, "kind");

		if (k != NULL && strcmp(k, kind) == 0)
			return json_get_string(o, "optionId");
	}
	return NULL;
}

/*
 * session/request_permission: a permission prompt of the run under ask, else
 * the profile's answer (read-only: no; the others: yes).
 */
static int
acpf_permission(struct fw_run *r, const cJSON *id, const cJSON *p)
{
	struct acpf_state *st = r->state;
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(p, "toolCall");
	const cJSON *options = cJSON_GetObjectItemCaseSensitive(p, "options");
	const cJSON *raw = cJSON_GetObjectItemCaseSensitive(tc, "rawInput");
	const char *kind = json_get_string(tc, "kind");
	const char *title = json_get_string(tc, "title");
	struct agent_error err = { 0 };
	cJSON *params, *result = NULL, *out, *outcome;
	const char *choice;
	char tool[64], summary[AGENT_SUMMARY_MAX + 1];
	bool yes = r->cfg->profile != PROFILE_READ_ONLY;
	int rc = AGENT_OK;

	snprintf(tool, sizeof tool, "acp_%.40s", kind ? kind : "other");
	for (char *c = tool; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			*c = '_';
	}
	if (title == NULL)
		title = json_get_string(cJSON_GetObjectItemCaseSensitive(st->titles,
		    json_get_string(tc, "toolCallId") ? json_get_string(tc, "toolCallId") : ""),
		    "title");
	snprintf(summary, sizeof summary, "%.190s", title ? title : "a tool call of the agent");
	if (r->cfg->profile == PROFILE_ASK) {
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "tool", tool);
		cJSON_AddStringToObject(params, "summary", summary);
		cJSON_AddItemToObject(params, "input", acpf_ask_input(raw));
		host_progress(r->host, "tool", summary);
		rc = host_request(r->host, "permission.ask", params, &result, &err);
		yes = rc == AGENT_OK && json_get_string(result, "decision") != NULL &&
		    strcmp(json_get_string(result, "decision"), "allow") == 0;
		if (rc == AGENT_FAILED)
			rc = AGENT_OK;
		if (yes)
			st->passes++;
		cJSON_Delete(result);
		agent_error_clear(&err);
	}
	choice = yes ? acpf_option(options, "allow_once") : acpf_option(options, "reject_once");
	if (choice == NULL)
		choice = yes ? acpf_option(options, "allow_always") :
		    acpf_option(options, "reject_always");
	out = cJSON_CreateObject();
	outcome = cJSON_AddObjectToObject(out, "outcome");
	if (rc == AGENT_CANCELLED || choice == NULL) {
		cJSON_AddStringToObject(outcome, "outcome", "cancelled");
	} else {
		cJSON_AddStringToObject(outcome, "outcome", "selected");
		cJSON_AddStringToObject(outcome, "optionId", choice);
	}
	log_info("acp: the agent asked for %s: %s", tool, yes ? "allowed" : "denied");
	acpf_send(r, acp_result(id, out));
	return rc;
}

/* The taskdeck tool name of an ACP tool kind. */
static const char *
acpf_tool_name(const char *kind)
{
	static const struct { const char *kind, *name; } names[] = {
		{ "read", "read_file" }, { "edit", "edit_file" }, { "delete", "delete" },
		{ "move", "move" }, { "search", "grep" }, { "execute", "run_command" },
		{ "think", "think" }, { "fetch", "fetch" },
	};

	for (size_t i = 0; kind != NULL && i < sizeof names / sizeof *names; i++) {
		if (strcmp(names[i].kind, kind) == 0)
			return names[i].name;
	}
	return "tool";
}

/* tool_call and tool_call_update: the run's tool events. */
static void
acpf_tool_update(struct fw_run *r, const cJSON *u, bool first)
{
	struct acpf_state *st = r->state;
	const char *id = json_get_string(u, "toolCallId");
	const char *status = json_get_string(u, "status");
	const char *title = json_get_string(u, "title");
	const char *kind = json_get_string(u, "kind");
	cJSON *known;

	if (id == NULL)
		return;
	known = cJSON_GetObjectItemCaseSensitive(st->titles, id);
	if (known == NULL && cJSON_GetArraySize(st->titles) < ACPF_TOOLS_KEPT) {
		known = cJSON_AddObjectToObject(st->titles, id);
		cJSON_AddStringToObject(known, "title", title ? title : "");
		cJSON_AddStringToObject(known, "name", acpf_tool_name(kind));
		first = true;
	} else if (known != NULL && title != NULL)
		cJSON_ReplaceItemInObject(known, "title", cJSON_CreateString(title));
	if (known == NULL)
		return;
	title = json_get_string(known, "title");
	if (first)
		fw_tool(r, id, json_get_string(known, "name"), "started", title);
	if (status != NULL && (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0))
		fw_tool(r, id, json_get_string(known, "name"), status, title);
}

/* plan: the entries as a progress message. */
static void
acpf_plan(struct fw_run *r, const cJSON *u)
{
	const cJSON *e;
	struct buf b;

	buf_init(&b, 900);
	buf_appends(&b, "Plan:");
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(u, "entries")) {
		const char *s = json_get_string(e, "status");

		buf_printf(&b, " [%s] %.100s;", s == NULL ? " " : strcmp(s, "completed") == 0 ?
		    "x" : strcmp(s, "in_progress") == 0 ? ">" : " ",
		    json_get_string(e, "content") ? json_get_string(e, "content") : "");
	}
	host_progress(r->host, "thinking", b.data ? b.data : "Plan");
	buf_free(&b);
}

static void
acpf_update(struct fw_run *r, const cJSON *params)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(params, "update");
	const char *kind = json_get_string(u, "sessionUpdate");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(u, "content");

	if (kind == NULL)
		return;
	if (strcmp(kind, "agent_message_chunk") == 0) {
		const char *text = json_get_string(content, "text");

		if (text != NULL)
			fw_output(r, text, strlen(text));
	} else if (strcmp(kind, "agent_thought_chunk") == 0) {
		host_progress(r->host, "thinking", "The agent is thinking.");
	} else if (strcmp(kind, "tool_call") == 0) {
		acpf_tool_update(r, u, true);
	} else if (strcmp(kind, "tool_call_update") == 0) {
		acpf_tool_update(r, u, false);
	} else if (strcmp(kind, "plan") == 0) {
		acpf_plan(r, u);
	}
}

/* The answer to one of our requests. */
static void
acpf_response(struct fw_run *r, const cJSON *msg)
{
	struct acpf_state *st = r->state;
	const cJSON *idv = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");
	long id = cJSON_IsNumber(idv) ? (long)idv->valuedouble : -1;
	char why[600];
	cJSON *p, *prompt;

	if (error != NULL || !cJSON_IsObject(result)) {
		snprintf(why, sizeof why, "the ACP agent answered %s with an error: %.400s",
		    id == st->init_id ? "initialize" : id == st->new_id ? "session/new" :
		    "session/prompt", json_get_string(error, "message") ?
		    json_get_string(error, "message") : "no result");
		fw_fail(r, "framework_error", why);
		r->result_seen = r->done = true;
		return;
	}
	if (id == st->init_id) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(result, "protocolVersion");

		if (!cJSON_IsNumber(v) || v->valuedouble != ACP_PROTOCOL_VERSION) {
			fw_fail(r, "framework_error", "the ACP agent does not speak protocol version 1");
			r->result_seen = r->done = true;
			return;
		}
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "cwd", r->cfg->workspace);
		cJSON_AddArrayToObject(p, "mcpServers");
		st->new_id = acpf_request(r, "session/new", p);
	} else if (id == st->new_id) {
		const char *sid = json_get_string(result, "sessionId");
		char *text;

		if (sid == NULL) {
			fw_fail(r, "framework_error", "the ACP agent's session/new gave no sessionId");
			r->result_seen = r->done = true;
			return;
		}
		st->session = xstrdup(sid);
		text = fw_prompt(r->cfg);
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "sessionId", sid);
		prompt = cJSON_AddArrayToObject(p, "prompt");
		cJSON_AddItemToArray(prompt, cJSON_CreateObject());
		cJSON_AddStringToObject(cJSON_GetArrayItem(prompt, 0), "type", "text");
		cJSON_AddStringToObject(cJSON_GetArrayItem(prompt, 0), "text", text);
		free(text);
		host_progress(r->host, "thinking", "Waiting for the agent.");
		st->prompt_id = acpf_request(r, "session/prompt", p);
	} else if (id == st->prompt_id) {
		const char *stop = json_get_string(result, "stopReason");
		const cJSON *usage = cJSON_GetObjectItemCaseSensitive(result, "usage");
		const cJSON *in = cJSON_GetObjectItemCaseSensitive(usage, "inputTokens");
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(usage, "outputTokens");

		if (cJSON_IsNumber(in) && cJSON_IsNumber(out) && in->valuedouble >= 0 &&
		    out->valuedouble >= 0 && in->valuedouble < 1e15 && out->valuedouble < 1e15)
			fw_usage(r, (long)in->valuedouble, (long)out->valuedouble);
		r->result_seen = r->done = true;
		if (stop == NULL || strcmp(stop, "end_turn") == 0 || host_cancelled(r->host))
			return;
		if (strcmp(stop, "refusal") == 0)
			fw_fail(r, "framework_refused", "the ACP agent refused the prompt");
		else if (strcmp(stop, "max_tokens") == 0)
			fw_fail(r, "max_tokens", "the ACP agent reached its token limit");
		else if (strcmp(stop, "max_turn_requests") == 0)
			fw_fail(r, "max_turns", "the ACP agent reached its limit of model requests");
		else
			fw_fail(r, "framework_error", "the ACP agent ended the turn: cancelled");
	}
}

static void
acpf_line(struct fw_run *r, const cJSON *msg)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const char *method = json_get_string(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

	if (method == NULL) {
		if (id != NULL)
			acpf_response(r, msg);
		return;
	}
	if (id == NULL) {
		if (strcmp(method, "session/update") == 0)
			acpf_update(r, params);
		return;
	}
	if (strcmp(method, "fs/read_text_file") == 0)
		acpf_read(r, id, params);
	else if (strcmp(method, "fs/write_text_file") == 0)
		acpf_write(r, id, params);
	else if (strcmp(method, "session/request_permission") == 0)
		acpf_permission(r, id, params);
	else if (strcmp(method, "terminal/create") == 0)
		acpf_term_create(r, id, params);
	else if (strncmp(method, "terminal/", 9) == 0)
		acpf_term(r, method, id, params);
	else
		acpf_error(r, id, ACP_METHOD_NOT_FOUND, "taskdeck does not serve this method");
}

static void
acpf_state_free(void *state)
{
	struct acpf_state *st = state;

	free(st->session);
	wsfile_root_free(st->files);
	free(st->files_why);
	plan_state_free(&st->plan);
	for (size_t i = 0; i < ACPF_TERMINALS; i++)
		free(st->terms[i].output);
	cJSON_Delete(st->titles);
}

const struct framework_ops framework_acp = {
	.name = "acp",
	.program = "the ACP agent",
	.state_size = sizeof(struct acpf_state),
	.check = acpf_check,
	.args = acpf_args,
	.env = acpf_env,
	.line = acpf_line,
	.state_free = acpf_state_free,
	.duplex = true,
	.start = acpf_start,
	.cancel = acpf_cancel,
};
