/*
 * codex: `codex exec --json`, the prompt on stdin, the provider as a custom
 * model provider given with -c (docs/frameworks.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "xalloc.h"

/* The variable codex reads the key from (model_providers.taskdeck.env_key). */
#define CODEX_KEY_ENV "TASKDECK_CODEX_API_KEY"

struct codex_state {
	long in, out;			/* summed over completed turns */
	bool turn_completed;
};

/* A value that can sit between TOML double quotes as it is. */
static bool
codex_toml_plain(const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	}
	return true;
}

static bool
codex_check(const struct agent_config *cfg, struct agent_error *err)
{
	if (cfg->profile == PROFILE_ASK) {
		agent_error_set(err, "unsupported_profile", "codex cannot ask taskdeck for "
		    "permission: the ask profile is not available with it");
		return false;
	}
	if (cfg->plan_first) {
		agent_error_set(err, "unsupported_profile", "plan-first runs need the taskdeck "
		    "framework");
		return false;
	}
	if (strcmp(cfg->provider_kind, "openai") != 0) {
		agent_error_set(err, "invalid_configuration", "codex needs a provider of kind "
		    "openai, not %s", cfg->provider_kind);
		return false;
	}
	if (!codex_toml_plain(cfg->base_url) || !codex_toml_plain(cfg->model)) {
		agent_error_set(err, "invalid_configuration", "the provider's base URL or the "
		    "model holds a quote, a backslash or a control character");
		return false;
	}
	return true;
}

/*
 * codex's own sandbox (bubblewrap, Landlock) cannot start inside taskdeck's (no
 * nested user namespaces): confined, taskdeck's sandbox is the boundary and codex's
 * is off.  Unconfined (no sandbox here and runs.allowUnconfinedCommands on, or
 * full-access) codex's own maps the profile.
 */
static void
codex_args(const struct agent_config *cfg, const struct fw_launch *l, struct strv *a)
{
	static const char *const sandboxes[] = {
		[PROFILE_READ_ONLY] = "read-only",
		[PROFILE_WORKSPACE_WRITE] = "workspace-write",
		[PROFILE_FULL_ACCESS] = "danger-full-access",
		[PROFILE_ASK] = "read-only",	/* refused by codex_check */
	};

	strv_add(a, "exec");
	strv_add(a, "--json");
	strv_add(a, "--skip-git-repo-check");
	strv_add(a, "--color");
	strv_add(a, "never");
	strv_add(a, "--cd");
	strv_add(a, cfg->workspace);
	strv_add(a, "--model");
	strv_add(a, cfg->model);
	strv_add(a, "--sandbox");
	strv_add(a, l->confined ? "danger-full-access" : sandboxes[cfg->profile]);
	strv_add(a, "-c");
	strv_add(a, "approval_policy=\"never\"");
	strv_add(a, "-c");
	strv_add(a, "model_provider=\"taskdeck\"");
	strv_add(a, "-c");
	strv_addf(a, "model_providers.taskdeck={name=\"taskdeck\",base_url=\"%s\","
	    "wire_api=\"responses\"%s}", cfg->base_url,
	    cfg->api_key ? ",env_key=\"" CODEX_KEY_ENV "\"" : "");
	if (cfg->effort != NULL && codex_toml_plain(cfg->effort)) {
		strv_add(a, "-c");
		strv_addf(a, "model_reasoning_effort=\"%s\"", cfg->effort);
	}
	strv_add(a, "-c");
	strv_add(a, "check_for_update_on_startup=false");
	strv_add(a, "-");
}

static void
codex_env(const struct agent_config *cfg, struct strv *e)
{
	if (cfg->api_key != NULL)
		strv_addf(e, CODEX_KEY_ENV "=%s", cfg->api_key);
	strv_add(e, "NO_COLOR=1");
}

static long
codex_count(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15 ?
	    (long)v->valuedouble : 0;
}

/* The tool name and a line for people about an item that is a tool call; false otherwise. */
static bool
codex_describe(const struct fw_run *r, const cJSON *item, const char **name, char *what,
    size_t len)
{
	const char *type = json_get_string(item, "type");
	const cJSON *c;

	if (type == NULL)
		return false;
	if (strcmp(type, "command_execution") == 0) {
		*name = "command";
		snprintf(what, len, "run: %s", json_get_string(item, "command") ?
		    json_get_string(item, "command") : "");
	} else if (strcmp(type, "file_change") == 0) {
		size_t n = strlen(r->cfg->workspace), off;

		*name = "file_change";
		off = (size_t)snprintf(what, len, "change");
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(item, "changes")) {
			const char *p = json_get_string(c, "path");
			const char *kind = json_get_string(c, "kind");

			if (p == NULL || off >= len)
				continue;
			if (strncmp(p, r->cfg->workspace, n) == 0 && p[n] == '/')
				p += n + 1;
			off += (size_t)snprintf(what + off, len - off, " %s%s%s", kind ? kind : "",
			    kind ? " " : "", p);
		}
	} else if (strcmp(type, "mcp_tool_call") == 0) {
		*name = "mcp_tool_call";
		snprintf(what, len, "%s__%s", json_get_string(item, "server") ?
		    json_get_string(item, "server") : "?", json_get_string(item, "tool") ?
		    json_get_string(item, "tool") : "?");
	} else if (strcmp(type, "web_search") == 0) {
		*name = "web_search";
		snprintf(what, len, "web search: %s", json_get_string(item, "query") ?
		    json_get_string(item, "query") : "");
	} else
		return false;
	return true;
}

/* The end of a tool item: completed, failed or declined (denied). */
static void
codex_tool_end(struct fw_run *r, const cJSON *item, const char *id, const char *name,
    const char *what)
{
	const char *status = json_get_string(item, "status");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(item, "exit_code");
	char summary[320];

	if (status != NULL && strcmp(status, "declined") == 0) {
		fw_tool(r, id, name, "denied", what);
		return;
	}
	if ((status != NULL && strcmp(status, "failed") == 0) ||
	    (cJSON_IsNumber(code) && code->valuedouble != 0)) {
		if (cJSON_IsNumber(code))
			snprintf(summary, sizeof summary, "exit status %d: %s",
			    (int)code->valuedouble, what);
		else
			snprintf(summary, sizeof summary, "failed: %s", what);
		fw_tool(r, id, name, "failed", summary);
		return;
	}
	fw_tool(r, id, name, "completed", what);
}

static void
codex_item(struct fw_run *r, const cJSON *msg, bool completed)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(msg, "item");
	const char *type = json_get_string(item, "type");
	const char *id = json_get_string(item, "id");
	const char *name;
	char what[256];

	if (type == NULL)
		return;
	if (codex_describe(r, item, &name, what, sizeof what)) {
		if (!completed)
			fw_tool(r, id, name, "started", what);
		else {
			/* A file change often comes only as completed: say it started too. */
			if (strcmp(type, "file_change") == 0 || strcmp(type, "web_search") == 0)
				fw_tool(r, id, name, "started", what);
			codex_tool_end(r, item, id, name, what);
		}
		return;
	}
	if (!completed)
		return;
	if (strcmp(type, "agent_message") == 0) {
		const char *text = json_get_string(item, "text");

		if (text != NULL && text[0] != '\0') {
			fw_output_break(r);
			fw_output(r, text, strlen(text));
		}
	} else if (strcmp(type, "reasoning") == 0) {
		host_progress(r->host, "thinking", "The model is reasoning.");
	} else if (strcmp(type, "error") == 0) {
		log_info("codex: %.300s", json_get_string(item, "message") ?
		    json_get_string(item, "message") : "an error item");
	}
}

static void
codex_line(struct fw_run *r, const cJSON *msg)
{
	struct codex_state *st = r->state;
	const char *type = json_get_string(msg, "type");
	const char *m;
	char why[1024];

	if (type == NULL)
		return;
	if (strcmp(type, "item.started") == 0)
		codex_item(r, msg, false);
	else if (strcmp(type, "item.completed") == 0)
		codex_item(r, msg, true);
	else if (strcmp(type, "turn.started") == 0)
		host_progress(r->host, "thinking", "Waiting for the model.");
	else if (strcmp(type, "turn.completed") == 0) {
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");

		st->in += codex_count(u, "input_tokens");
		st->out += codex_count(u, "output_tokens");
		st->turn_completed = true;
		r->result_seen = true;
		fw_usage(r, st->in, st->out);
	} else if (strcmp(type, "error") == 0) {
		/* Not the end by itself (codex reports retries this way): kept for the message. */
		m = json_get_string(msg, "message");
		snprintf(r->last_stderr, sizeof r->last_stderr, "%s", m ? m : "an error");
		log_info("codex: %.300s", r->last_stderr);
	} else if (strcmp(type, "turn.failed") == 0) {
		m = json_get_string(cJSON_GetObjectItemCaseSensitive(msg, "error"), "message");
		snprintf(why, sizeof why, "codex: %s", m ? m : r->last_stderr[0] ?
		    r->last_stderr : "the turn failed");
		r->result_seen = true;
		if (!r->failed)
			fw_fail(r, "framework_error", why);
	} else if (strcmp(type, "thread.started") == 0)
		log_info("codex thread %.64s", json_get_string(msg, "thread_id") ?
		    json_get_string(msg, "thread_id") : "?");
}

const struct framework_ops framework_codex = {
	.name = "codex",
	.program = "codex",
	.state_size = sizeof(struct codex_state),
	.check = codex_check,
	.args = codex_args,
	.env = codex_env,
	.line = codex_line,
};
