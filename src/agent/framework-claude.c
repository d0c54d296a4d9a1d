/*
 * claude-code: `claude -p --output-format stream-json --verbose
 * --include-partial-messages`, the prompt on stdin (docs/frameworks.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "framework.h"
#include "json.h"
#include "log.h"
#include "xalloc.h"

#define CLAUDE_MESSAGES 256		/* usage kept per message; older ones summed */
#define CLAUDE_TOOLS 256		/* tool_use ids remembered for their results */

struct claude_usage {
	char id[96];
	long in, out;
};

struct claude_state {
	bool streaming;			/* stream_event lines arrive: text comes from them */
	char text_msg[96];		/* the message whose text was last written */
	char stream_msg[96];		/* the message being streamed: "#N", its number */
	unsigned long nstreamed;
	struct claude_usage msgs[CLAUDE_MESSAGES];
	size_t nmsgs;
	long retired_in, retired_out;
	struct {
		char id[96];
		char name[64];
		char what[256];
	} tools[CLAUDE_TOOLS];
	size_t next_tool;
};

/* The profile as claude's own flags; false when claude cannot honour it. */
static bool
claude_check(const struct agent_config *cfg, struct agent_error *err)
{
	if (cfg->plan_first) {
		agent_error_set(err, "unsupported_profile", "plan-first runs need the taskdeck "
		    "framework");
		return false;
	}
	if (strcmp(cfg->provider_kind, "anthropic") != 0) {
		agent_error_set(err, "invalid_configuration", "claude-code needs a provider of "
		    "kind anthropic, not %s", cfg->provider_kind);
		return false;
	}
	return true;
}

static void
claude_args(const struct agent_config *cfg, const struct fw_launch *l, struct strv *a)
{
	strv_add(a, "-p");
	strv_add(a, "--output-format");
	strv_add(a, "stream-json");
	strv_add(a, "--verbose");
	strv_add(a, "--include-partial-messages");
	strv_add(a, "--model");
	strv_add(a, cfg->model);
	strv_add(a, "--max-turns");
	strv_addf(a, "%d", cfg->max_turns);
	switch (cfg->profile) {
	case PROFILE_READ_ONLY:
		/* In -p mode nothing can be approved: what needs approval is refused. */
		strv_add(a, "--permission-mode");
		strv_add(a, "default");
		strv_add(a, "--disallowedTools");
		strv_add(a, "Bash,Edit,MultiEdit,Write,NotebookEdit");
		break;
	case PROFILE_WORKSPACE_WRITE:
		strv_add(a, "--permission-mode");
		strv_add(a, "acceptEdits");
		strv_add(a, "--allowedTools");
		strv_add(a, "Bash");
		break;
	case PROFILE_FULL_ACCESS:
		strv_add(a, "--permission-mode");
		strv_add(a, "bypassPermissions");
		break;
	case PROFILE_ASK: {
		/* Each call that needs permission goes to taskdeck (framework-ask.c). */
		cJSON *mcp = cJSON_CreateObject(), *srv, *args;
		char *text;

		srv = cJSON_AddObjectToObject(cJSON_AddObjectToObject(mcp, "mcpServers"),
		    "taskdeck");
		cJSON_AddStringToObject(srv, "type", "stdio");
		cJSON_AddStringToObject(srv, "command", l->self);
		args = cJSON_AddArrayToObject(srv, "args");
		cJSON_AddItemToArray(args, cJSON_CreateString("--permission-server"));
		cJSON_AddItemToArray(args, cJSON_CreateString(l->ask_socket));
		text = cJSON_PrintUnformatted(mcp);
		strv_add(a, "--permission-mode");
		strv_add(a, "default");
		strv_add(a, "--mcp-config");
		strv_add(a, text);
		strv_add(a, "--strict-mcp-config");
		strv_add(a, "--permission-prompt-tool");
		strv_add(a, FW_ASK_TOOL);
		free(text);
		cJSON_Delete(mcp);
		break;
	}
	}
}

static void
claude_env(const struct agent_config *cfg, struct strv *e)
{
	strv_addf(e, "ANTHROPIC_BASE_URL=%s", cfg->base_url);
	if (cfg->api_key != NULL)
		strv_addf(e, "ANTHROPIC_API_KEY=%s", cfg->api_key);
	strv_add(e, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1");
	strv_add(e, "DISABLE_AUTOUPDATER=1");
	strv_add(e, "DISABLE_TELEMETRY=1");
	strv_add(e, "DISABLE_ERROR_REPORTING=1");
	strv_add(e, "DISABLE_BUG_COMMAND=1");
}

/*
 * No key (apiKeyEnv null): claude's own login, the one file it keeps it in
 * (~/.claude/.credentials.json), read-only in its private home.  Nothing else of
 * ~/.claude: a command that could write there (settings, hooks) would reach the
 * user's next claude outside the sandbox.
 */
static void
claude_home_files(const struct agent_config *cfg, const char *user_home,
    const char *private_home, struct strv *pairs)
{
	if (cfg->api_key != NULL)
		return;
	strv_addf(pairs, "%s/.claude/.credentials.json", user_home);
	strv_addf(pairs, "%s/.claude/.credentials.json", private_home);
}

static long
claude_count(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15 ?
	    (long)v->valuedouble : 0;
}

/* Input tokens as Anthropic counts them, cache reads and writes included. */
static long
claude_input(const cJSON *usage)
{
	return claude_count(usage, "input_tokens") +
	    claude_count(usage, "cache_creation_input_tokens") +
	    claude_count(usage, "cache_read_input_tokens");
}

/* Records the usage of one model call (the largest counts seen) and sends the sum. */
static void
claude_message_usage(struct fw_run *r, const char *id, long in, long out, bool have_in)
{
	struct claude_state *st = r->state;
	struct claude_usage *u = NULL;
	long sum_in, sum_out;

	if (id == NULL || id[0] == '\0')
		return;
	for (size_t i = 0; i < st->nmsgs; i++) {
		if (strcmp(st->msgs[i].id, id) == 0)
			u = &st->msgs[i];
	}
	if (u == NULL) {
		if (st->nmsgs == CLAUDE_MESSAGES) {
			st->retired_in += st->msgs[0].in;
			st->retired_out += st->msgs[0].out;
			memmove(st->msgs, st->msgs + 1, (CLAUDE_MESSAGES - 1) * sizeof *st->msgs);
			st->nmsgs--;
		}
		u = &st->msgs[st->nmsgs++];
		memset(u, 0, sizeof *u);
		snprintf(u->id, sizeof u->id, "%s", id);
	}
	if (have_in && in > u->in)
		u->in = in;
	if (out > u->out)
		u->out = out;
	sum_in = st->retired_in;
	sum_out = st->retired_out;
	for (size_t i = 0; i < st->nmsgs; i++) {
		sum_in += st->msgs[i].in;
		sum_out += st->msgs[i].out;
	}
	fw_usage(r, sum_in, sum_out);
}

/* Text of message id: a paragraph break when a new message starts writing. */
static void
claude_text(struct fw_run *r, const char *msg_id, const char *text)
{
	struct claude_state *st = r->state;

	if (text == NULL || text[0] == '\0')
		return;
	if (msg_id != NULL && strcmp(st->text_msg, msg_id) != 0) {
		fw_output_break(r);
		snprintf(st->text_msg, sizeof st->text_msg, "%s", msg_id);
	}
	fw_output(r, text, strlen(text));
}

/* A path shown relative to the workspace when it is inside. */
static const char *
claude_rel(const struct fw_run *r, const char *path)
{
	size_t n = strlen(r->cfg->workspace);

	if (path != NULL && strncmp(path, r->cfg->workspace, n) == 0 && path[n] == '/')
		return path + n + 1;
	return path ? path : "";
}

/* A line for people about a tool call: what it does, from its input. */
static void
claude_describe(const struct fw_run *r, const char *name, const cJSON *input, char *out,
    size_t len)
{
	static const struct {
		const char *tool, *verb, *key;
	} kinds[] = {
		{ "Bash", "run: ", "command" },
		{ "Write", "write ", "file_path" },
		{ "Edit", "edit ", "file_path" },
		{ "MultiEdit", "edit ", "file_path" },
		{ "NotebookEdit", "edit ", "notebook_path" },
		{ "Read", "read ", "file_path" },
		{ "Glob", "find ", "pattern" },
		{ "Grep", "search ", "pattern" },
		{ "LS", "list ", "path" },
		{ "WebFetch", "fetch ", "url" },
		{ "WebSearch", "web search: ", "query" },
		{ "Task", "subagent: ", "description" },
	};

	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		const char *v;

		if (strcmp(name, kinds[i].tool) != 0)
			continue;
		v = json_get_string(input, kinds[i].key);
		if (strcmp(kinds[i].key, "command") != 0 && strcmp(kinds[i].key, "pattern") != 0 &&
		    strcmp(kinds[i].key, "url") != 0 && strcmp(kinds[i].key, "query") != 0 &&
		    strcmp(kinds[i].key, "description") != 0)
			v = claude_rel(r, v);
		snprintf(out, len, "%s%s", kinds[i].verb, v ? v : "");
		return;
	}
	snprintf(out, len, "%s", name);
}

static void
claude_tool_use(struct fw_run *r, const cJSON *block)
{
	struct claude_state *st = r->state;
	const char *id = json_get_string(block, "id");
	const char *name = json_get_string(block, "name");
	char what[256];

	if (id == NULL || name == NULL)
		return;
	claude_describe(r, name, cJSON_GetObjectItemCaseSensitive(block, "input"), what,
	    sizeof what);
	snprintf(st->tools[st->next_tool].id, sizeof st->tools[0].id, "%s", id);
	snprintf(st->tools[st->next_tool].name, sizeof st->tools[0].name, "%s", name);
	snprintf(st->tools[st->next_tool].what, sizeof st->tools[0].what, "%s", what);
	st->next_tool = (st->next_tool + 1) % CLAUDE_TOOLS;
	fw_tool(r, id, name, "started", what);
}

/* The first line of a tool result's content (a string or text blocks). */
static void
claude_result_text(const cJSON *content, char *out, size_t len)
{
	const char *s = cJSON_IsString(content) ? content->valuestring : NULL;
	const cJSON *b;

	if (s == NULL) {
		cJSON_ArrayForEach(b, content) {
			if ((s = json_get_string(b, "text")) != NULL)
				break;
		}
	}
	snprintf(out, len, "%s", s ? s : "");
	out[strcspn(out, "\n")] = '\0';
}

static void
claude_tool_result(struct fw_run *r, const cJSON *block)
{
	struct claude_state *st = r->state;
	const char *id = json_get_string(block, "tool_use_id");
	bool error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(block, "is_error"));
	const char *name = "tool", *what = "";
	char text[256];

	if (id == NULL)
		return;
	for (size_t i = 0; i < CLAUDE_TOOLS; i++) {
		if (strcmp(st->tools[i].id, id) == 0) {
			name = st->tools[i].name;
			what = st->tools[i].what;
		}
	}
	claude_result_text(cJSON_GetObjectItemCaseSensitive(block, "content"), text, sizeof text);
	if (!error)
		fw_tool(r, id, name, "completed", what);
	else if (strstr(text, "requested permissions") != NULL ||
	    strstr(text, "haven't granted") != NULL || strcasestr(text, "denied by") != NULL ||
	    strstr(text, "is disabled for this session") != NULL)
		fw_tool(r, id, name, "denied", text);
	else
		fw_tool(r, id, name, "failed", text[0] ? text : what);
}

/* A raw Messages API event (--include-partial-messages). */
static void
claude_stream_event(struct fw_run *r, const cJSON *ev, bool top)
{
	struct claude_state *st = r->state;
	const char *type = json_get_string(ev, "type");
	const cJSON *usage;

	st->streaming = true;
	if (type == NULL)
		return;
	if (strcmp(type, "message_start") == 0) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(ev, "message");

		/* Numbered, not by id: ids are the server's and need not be unique. */
		snprintf(st->stream_msg, sizeof st->stream_msg, "#%lu", ++st->nstreamed);
		usage = cJSON_GetObjectItemCaseSensitive(m, "usage");
		claude_message_usage(r, st->stream_msg, claude_input(usage),
		    claude_count(usage, "output_tokens"), true);
	} else if (strcmp(type, "message_delta") == 0) {
		usage = cJSON_GetObjectItemCaseSensitive(ev, "usage");
		claude_message_usage(r, st->stream_msg, claude_input(usage),
		    claude_count(usage, "output_tokens"), claude_input(usage) > 0);
	} else if (strcmp(type, "content_block_delta") == 0 && top) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "delta");

		if (strcmp(json_get_string(d, "type") ? json_get_string(d, "type") : "",
		    "text_delta") == 0)
			claude_text(r, st->stream_msg, json_get_string(d, "text"));
	}
}

static void
claude_assistant(struct fw_run *r, const cJSON *msg, bool top)
{
	struct claude_state *st = r->state;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(msg, "message");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(m, "usage");
	const char *id = json_get_string(m, "id");
	const cJSON *b;

	/* When streaming, the stream events count the usage of each call. */
	if (usage != NULL && !st->streaming)
		claude_message_usage(r, id, claude_input(usage),
		    claude_count(usage, "output_tokens"), true);
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content")) {
		const char *type = json_get_string(b, "type");

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0 && top && !st->streaming)
			claude_text(r, id, json_get_string(b, "text"));
		else if (strcmp(type, "tool_use") == 0)
			claude_tool_use(r, b);
	}
}

static void
claude_user(struct fw_run *r, const cJSON *msg)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(msg, "message");
	const cJSON *b;

	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content")) {
		const char *type = json_get_string(b, "type");

		if (type != NULL && strcmp(type, "tool_result") == 0)
			claude_tool_result(r, b);
	}
}

static void
claude_result(struct fw_run *r, const cJSON *msg)
{
	const char *subtype = json_get_string(msg, "subtype");
	const char *text = json_get_string(msg, "result");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(msg, "usage");
	bool error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "is_error"));
	char why[1024];

	r->result_seen = true;
	if (cJSON_IsObject(usage))
		fw_usage(r, claude_input(usage) > r->in_tokens ? claude_input(usage) : r->in_tokens,
		    claude_count(usage, "output_tokens") > r->out_tokens ?
		    claude_count(usage, "output_tokens") : r->out_tokens);
	if (!error && subtype != NULL && strcmp(subtype, "success") == 0) {
		if (r->output.len == 0 && text != NULL)
			fw_output(r, text, strlen(text));
		return;
	}
	if (text == NULL) {
		const cJSON *errors = cJSON_GetObjectItemCaseSensitive(msg, "errors");
		const cJSON *e0 = cJSON_GetArrayItem(errors, 0);

		text = cJSON_IsString(e0) ? e0->valuestring : NULL;
	}
	snprintf(why, sizeof why, "claude ended the run with %s%s%s",
	    subtype ? subtype : "an error", text ? ": " : "", text ? text : "");
	fw_fail(r, subtype && strcmp(subtype, "error_max_turns") == 0 ? "max_turns" :
	    "framework_error", why);
}

static void
claude_line(struct fw_run *r, const cJSON *msg)
{
	const char *type = json_get_string(msg, "type");
	/* Lines of a subagent (the Task tool) carry its parent's tool_use id. */
	bool top = json_get_string(msg, "parent_tool_use_id") == NULL;

	if (type == NULL)
		return;
	if (strcmp(type, "stream_event") == 0)
		claude_stream_event(r, cJSON_GetObjectItemCaseSensitive(msg, "event"), top);
	else if (strcmp(type, "assistant") == 0)
		claude_assistant(r, msg, top);
	else if (strcmp(type, "user") == 0)
		claude_user(r, msg);
	else if (strcmp(type, "result") == 0)
		claude_result(r, msg);
	else if (strcmp(type, "system") == 0 &&
	    strcmp(json_get_string(msg, "subtype") ? json_get_string(msg, "subtype") : "",
	    "init") == 0)
		log_info("claude session %.64s, model %.64s",
		    json_get_string(msg, "session_id") ? json_get_string(msg, "session_id") : "?",
		    json_get_string(msg, "model") ? json_get_string(msg, "model") : "?");
}

const struct framework_ops framework_claude = {
	.name = "claude-code",
	.program = "claude",
	.state_size = sizeof(struct claude_state),
	.check = claude_check,
	.args = claude_args,
	.env = claude_env,
	.home_files = claude_home_files,
	.line = claude_line,
	.describe = claude_describe,
};
