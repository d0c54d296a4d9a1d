/*
 * The tool calls of a model answer: each checked against the profile, the
 * plan and the user's permission, run (the reading ones of an answer at once),
 * and its result given to the model.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-connectors.h"
#include "context.h"
#include "conv.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "loop-int.h"
#include "tools.h"
#include "xalloc.h"

#define LOOP_REPEAT_LIMIT 3		/* identical failing calls in a row */
#define LOOP_ASK_STRING_MAX 4096	/* per string argument shown in permission.ask */

/* The arguments as shown to the user: long strings cut. */
static cJSON *
loop_ask_input(const cJSON *args)
{
	cJSON *input = cJSON_Duplicate(args, true);
	cJSON *v;

	cJSON_ArrayForEach(v, input) {
		size_t n;
		char *cut, *shown;

		if (!cJSON_IsString(v) || (n = strlen(v->valuestring)) <= LOOP_ASK_STRING_MAX)
			continue;
		cut = agent_utf8_prefix(v->valuestring, LOOP_ASK_STRING_MAX);
		shown = xasprintf("%s… (%zu bytes in all)", cut, n);
		cJSON_SetValuestring(v, shown);
		free(cut);
		free(shown);
	}
	return input;
}

/* AGENT_OK when allowed, AGENT_FAILED when refused, or AGENT_CANCELLED. */
static int
loop_ask(struct loop *l, const char *name, const cJSON *args, const char *what)
{
	cJSON *params = cJSON_CreateObject();
	cJSON *result = NULL;
	struct agent_error err = { 0 };
	const char *decision;
	int rc;

	cJSON_AddStringToObject(params, "tool", name);
	cJSON_AddStringToObject(params, "summary", what);
	cJSON_AddItemToObject(params, "input", loop_ask_input(args));
	rc = host_request(l->host, "permission.ask", params, &result, &err);
	if (rc == AGENT_OK) {
		decision = json_get_string(result, "decision");
		if (decision == NULL || strcmp(decision, "allow") != 0)
			rc = AGENT_FAILED;
	} else if (rc == AGENT_FAILED)
		log_info("permission.ask failed: %s", err.message);
	cJSON_Delete(result);
	agent_error_clear(&err);
	return rc;
}

/* Runs one tool call into res; AGENT_CANCELLED stops the run. */
static int
loop_exec(struct loop *l, const struct tool_call *call, const struct tool *t,
    const cJSON *args, const char *what, size_t max_output, struct tool_result *res,
    bool *denied)
{
	struct tool_ctx ctx = { .cfg = l->cfg, .host = l->host, .plan = &l->plan,
		.files = l->files, .files_why = l->files_why, .call_id = call->id,
		.max_output = max_output };
	int rc;

	*denied = false;
	if (t == NULL) {
		tool_result_fail(res, "there is no tool named \"%s\"", call->name);
		return AGENT_OK;
	}
	if (!cJSON_IsObject(args)) {
		tool_result_fail(res, "the arguments must be a JSON object");
		return AGENT_OK;
	}
	if ((t->flags & TOOL_SIDE_EFFECT) && l->cfg->profile == PROFILE_READ_ONLY) {
		tool_result_fail(res, "%s is denied by the read-only profile", t->name);
		*denied = true;
		return AGENT_OK;
	}
	if ((t->flags & TOOL_AFTER_PLAN) && l->plan.plan_first && !l->plan.approved) {
		tool_result_fail(res, "%s needs an approved plan: propose a plan with "
		    "propose_plan first and wait for the user's approval", t->name);
		return AGENT_OK;
	}
	if ((t->flags & TOOL_SIDE_EFFECT) && l->cfg->profile == PROFILE_ASK) {
		rc = loop_ask(l, t->name, args, what);
		if (rc == AGENT_CANCELLED)
			return rc;
		if (rc != AGENT_OK) {
			tool_result_fail(res, "%s was denied by the user", t->name);
			*denied = true;
			return AGENT_OK;
		}
	}
	return t->exec(&ctx, args, res);
}

/*
 * A connector tool: side-effecting (asked under ask), allowed under read-only
 * and before a plan's approval only when the server marks it readOnlyHint.
 */
static int
loop_exec_connector(struct loop *l, const struct connector_tool *ct, const cJSON *args,
    const char *what, struct tool_result *res, bool *denied)
{
	int rc;

	*denied = false;
	if (!cJSON_IsObject(args)) {
		tool_result_fail(res, "the arguments must be a JSON object");
		return AGENT_OK;
	}
	if (!ct->read_only && l->cfg->profile == PROFILE_READ_ONLY) {
		tool_result_fail(res, "%s is denied by the read-only profile (its server does not "
		    "mark it read-only)", ct->name);
		*denied = true;
		return AGENT_OK;
	}
	if (!ct->read_only && l->plan.plan_first && !l->plan.approved) {
		tool_result_fail(res, "%s needs an approved plan: propose a plan with "
		    "propose_plan first and wait for the user's approval", ct->name);
		return AGENT_OK;
	}
	if (l->cfg->profile == PROFILE_ASK) {
		rc = loop_ask(l, ct->name, args, what);
		if (rc == AGENT_CANCELLED)
			return rc;
		if (rc != AGENT_OK) {
			tool_result_fail(res, "%s was denied by the user", ct->name);
			*denied = true;
			return AGENT_OK;
		}
	}
	return connectors_call(&l->cons, ct, args, l->cfg, l->host, res);
}

/* Counts identical failing calls in a row; true when the model is stuck. */
static bool
loop_stuck(struct loop *l, const struct tool_call *call, bool failed)
{
	char *sig;

	if (!failed) {
		free(l->last_failure);
		l->last_failure = NULL;
		l->failures = 0;
		return false;
	}
	sig = xasprintf("%s\n%s", call->name, call->arguments);
	if (l->last_failure != NULL && strcmp(sig, l->last_failure) == 0) {
		free(sig);
		l->failures++;
	} else {
		free(l->last_failure);
		l->last_failure = sig;
		l->failures = 1;
	}
	return l->failures >= LOOP_REPEAT_LIMIT;
}

/* A tool call of the model's answer, from its "started" line to its result. */
struct pending {
	struct loop *l;
	struct tool_call call;
	const struct tool *t;
	const struct connector_tool *ct;
	cJSON *args;
	char what[512];
	size_t max_output;		/* the result's share of the window (context_result_max) */
	struct tool_result res;
	bool denied;
	int rc;
};

/* Describes the call and sends its "started" line. */
static void
loop_call_start(struct loop *l, const struct tool_call *call, struct pending *p)
{
	p->l = l;
	p->call = *call;
	p->t = tools_find(call->name, l->offer);
	p->ct = p->t == NULL ? connectors_find(&l->cons, call->name) : NULL;
	p->args = json_parse(call->arguments, strlen(call->arguments));
	if (p->t != NULL)
		p->t->describe(p->args, p->what, sizeof p->what);
	else if (p->ct != NULL)
		connectors_describe(&l->cons, p->ct, p->args, p->what, sizeof p->what);
	else
		snprintf(p->what, sizeof p->what, "%.200s", call->name);
	p->what[agent_utf8_cut(p->what, strlen(p->what))] = '\0';	/* snprintf may cut a character */
	if (l->subagent == NULL)
		host_progress(l->host, "tool", p->what);
	host_tool(l->host, call->id, call->name, "started", p->what);
	tool_result_init(&p->res);
}

static void
loop_call_exec(struct pending *p)
{
	if (p->ct != NULL)
		p->rc = loop_exec_connector(p->l, p->ct, p->args, p->what, &p->res, &p->denied);
	else
		p->rc = loop_exec(p->l, &p->call, p->t, p->args, p->what, p->max_output, &p->res,
		    &p->denied);
}

/* Sends the call's end and gives its result to the model; AGENT_OK to go on. */
static int
loop_call_finish(struct loop *l, struct pending *p)
{
	const struct tool_call *call = &p->call;
	char *content;
	int rc = p->rc;

	cJSON_Delete(p->args);
	if (rc == AGENT_CANCELLED) {
		host_tool(l->host, call->id, call->name, "failed", "cancelled");
		tool_result_free(&p->res);
		return rc;
	}
	host_tool(l->host, call->id, call->name,
	    p->denied ? "denied" : p->res.failed ? "failed" : "completed", p->res.summary);
	if (p->res.used.input > 0 || p->res.used.output > 0) {	/* a subagent's */
		usage_add(&l->used, &p->res.used);
		host_usage(l->host, &l->used);
	}
	content = agent_utf8_clean(p->res.content.data ? p->res.content.data : "");
	/* A connector's, or a tool's past its share with its own note: cut here. */
	if (p->max_output > 0 && strlen(content) > p->max_output + LOOP_CUT_SLACK) {
		char *cut = loop_cut_text(l, content, p->max_output);

		free(content);
		content = cut;
	}
	conv_add_tool_result(&l->conv, call->id, call->name, content, p->res.failed);
	conv_set_media(&l->conv, p->res.media);
	p->res.media = NULL;
	free(content);
	if (!p->res.end_run)
		loop_checkpoint(l);
	if (p->res.end_run)
		rc = AGENT_CANCELLED;
	else if (loop_stuck(l, call, p->res.failed)) {
		agent_error_set(&l->err, "tool_loop",
		    "the model repeated the same failing %s call %d times", call->name,
		    LOOP_REPEAT_LIMIT);
		rc = AGENT_FAILED;
	}
	tool_result_free(&p->res);
	return rc;
}

/* Whether the call may run beside others of its answer: a built-in tool that only reads. */
static bool
loop_parallel(const struct loop *l, const struct tool_call *call)
{
	const struct tool *t = tools_find(call->name, l->offer);

	return t != NULL && (t->flags & TOOL_PARALLEL) && !(t->flags & TOOL_SIDE_EFFECT);
}

static void *
loop_call_thread(void *arg)
{
	loop_call_exec(arg);
	return NULL;
}

/*
 * Carries out the calls from of the assistant message at.  A run of calls that
 * only read (TOOL_PARALLEL) executes at once, one thread each; their results
 * go to the model in the order of the calls, as all results do.
 */
int
loop_calls(struct loop *l, size_t at, size_t from)
{
	int rc = AGENT_OK;

	for (size_t i = from; i < l->conv.msgs[at].ncalls && rc == AGENT_OK;) {
		size_t n = 1, ncalls = l->conv.msgs[at].ncalls;
		struct pending *p;
		pthread_t *th;
		bool *started;

		if (host_cancelled(l->host))
			return AGENT_CANCELLED;
		while (i + n < ncalls && loop_parallel(l, &l->conv.msgs[at].calls[i]) &&
		    loop_parallel(l, &l->conv.msgs[at].calls[i + n]))
			n++;
		p = xcalloc(n, sizeof *p);
		th = xcalloc(n, sizeof *th);
		started = xcalloc(n, sizeof *started);
		/* Results grow the conversation (and may move it): copy the calls. */
		for (size_t k = 0; k < n; k++) {
			loop_call_start(l, &l->conv.msgs[at].calls[i + k], &p[k]);
			p[k].max_output = context_result_max(&l->cx, ncalls, l->cfg->max_tool_output);
		}
		for (size_t k = 0; k < n; k++)
			started[k] = n > 1 && pthread_create(&th[k], NULL, loop_call_thread, &p[k]) == 0;
		for (size_t k = 0; k < n; k++) {
			if (started[k])
				pthread_join(th[k], NULL);
			else
				loop_call_exec(&p[k]);
		}
		for (size_t k = 0; k < n; k++) {
			if (rc == AGENT_OK)
				rc = loop_call_finish(l, &p[k]);
			else {
				cJSON_Delete(p[k].args);
				tool_result_free(&p[k].res);
			}
		}
		free(started);
		free(th);
		free(p);
		i += n;
	}
	return rc;
}

/*
 * A resumed run whose checkpoint ends inside a step carries out the
 * tool calls of the model's last answer that have no result yet.
 */
int
loop_pending_calls(struct loop *l)
{
	size_t at = l->conv.n, answered = 0;

	while (at > 0 && l->conv.msgs[at - 1].role == CONV_TOOL)
		at--, answered++;
	if (at == 0 || l->conv.msgs[at - 1].role != CONV_ASSISTANT)
		return AGENT_OK;
	at--;
	return loop_calls(l, at, answered);
}
