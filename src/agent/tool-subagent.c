/*
 * run_subagent: a sub-task carried out by a child loop (loop_subagent), at most
 * routing.subagent.maxConcurrent at once in a run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "json.h"
#include "loop.h"
#include "tools.h"

#define SUBAGENT_PROMPT_MAX (64 * 1024)

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cond = PTHREAD_COND_INITIALIZER;
static int slots_busy;

int
tool_run_subagent(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const char *prompt = json_get_string(args, "prompt");
	const char *desc = json_get_string(args, "description");
	struct agent_error err = { 0 };
	struct buf answer;
	struct usage used = { 0 };
	int rc;

	if (prompt == NULL || prompt[0] == '\0' || strlen(prompt) > SUBAGENT_PROMPT_MAX) {
		tool_result_fail(res, "the argument \"prompt\" must be a string of 1 to %d bytes",
		    SUBAGENT_PROMPT_MAX);
		return AGENT_OK;
	}
	pthread_mutex_lock(&slots_mu);
	while (slots_busy >= ctx->cfg->subagent.max_concurrent)
		pthread_cond_wait(&slots_cond, &slots_mu);
	slots_busy++;
	pthread_mutex_unlock(&slots_mu);

	buf_init(&answer, 0);
	rc = loop_subagent(ctx->cfg, ctx->host, ctx->plan, ctx->call_id, prompt, &answer, &used,
	    &err);

	pthread_mutex_lock(&slots_mu);
	slots_busy--;
	pthread_cond_signal(&slots_cond);
	pthread_mutex_unlock(&slots_mu);

	res->used = used;
	if (rc == AGENT_OK) {
		agent_utf8_append(&res->content, answer.data ? answer.data : "", answer.len);
		if (answer.len == 0)
			buf_appends(&res->content, "(the subagent answered nothing)");
		tool_result_summary(res, "subagent %s done", desc ? desc : "");
	} else if (rc == AGENT_FAILED) {
		tool_result_fail(res, "the subagent failed: %s: %s", err.code ? err.code : "error",
		    err.message ? err.message : "");
		if (answer.len > 0) {
			buf_appends(&res->content, "\nIts text so far:\n");
			agent_utf8_append(&res->content, answer.data, answer.len);
		}
	}
	buf_free(&answer);
	agent_error_clear(&err);
	return rc == AGENT_CANCELLED ? AGENT_CANCELLED : AGENT_OK;
}

void
tool_describe_subagent(const cJSON *args, char *out, size_t len)
{
	const char *d = json_get_string(args, "description");
	const char *p = json_get_string(args, "prompt");

	snprintf(out, len, "subagent: %.120s", d ? d : p ? p : "?");
}
