/*
 * The run and its subagents' loops: turn after turn until the model finishes,
 * with the reviewer's rounds; the parts are in loop-*.c (loop-int.h).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "agent-connectors.h"
#include "context.h"
#include "conv.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"
#include "loop.h"
#include "loop-int.h"
#include "provider.h"
#include "review.h"
#include "tools.h"
#include "wsfile.h"
#include "xalloc.h"

#define LOOP_REVIEWS 2			/* reviews of a run: the second after one more round */
#define LOOP_COMPACT_STREAK 4		/* model turns in a row that each compacted: no progress */

/*
 * What the model is told after an answer the output limit cut (NULL when
 * none was): a call it cut did not run; it goes on, writing less at once.
 */
static char *
loop_cut_note(const struct turn *t)
{
	if (!t->cut)
		return NULL;
	log_info("the model's answer reached its output limit%s%s", t->cut_call[0] ?
	    " inside a call of " : "", t->cut_call);
	if (t->cut_call[0] != '\0')
		return xasprintf("[Your last answer was cut off: it reached the model's output "
		    "limit while writing the arguments of a %s call (%zu bytes of them had come), "
		    "so that call was not carried out. Go on from there, writing less in one "
		    "answer: split a large file over several calls (write_file with the first "
		    "part, then write_file with append true for each next part), or make smaller "
		    "edits.]", t->cut_call, t->cut_bytes);
	return xstrdup("[Your last answer was cut off: it reached the model's output limit. "
	    "Go on from where it stopped; keep each answer shorter.]");
}

/* One model turn and its tool calls.  AGENT_OK with *done when the model finished. */
static int
loop_turn(struct loop *l, bool *done)
{
	struct turn t;
	size_t ncalls, at;
	bool compacted = false;
	char why[160], *cut;
	int rc;

	if (l->subagent == NULL)
		host_progress(l->host, "thinking", "Waiting for the model.");
	if (connectors_refresh(&l->cons)) {
		/* A server's tools changed: the model sees the new list this turn. */
		cJSON_Delete(l->tools);
		l->tools = tools_definitions(l->offer);
		connectors_definitions(&l->cons, l->tools);
	}
	if (context_full(&l->cx, &l->conv)) {
		snprintf(why, sizeof why, "the conversation (about %ld tokens) is near the model's "
		    "context window", context_estimate(&l->cx, &l->conv));
		if ((rc = loop_fit(l, why, false, &compacted)) != AGENT_OK)
			return rc;
	}
	/* Turns that each must compact first make no progress: the window is too small. */
	l->compact_streak = compacted ? l->compact_streak + 1 : 0;
	if (l->compact_streak >= LOOP_COMPACT_STREAK) {
		agent_error_set(&l->err, "context_exhausted", "the conversation had to be "
		    "summarized before each of the last %d model turns: the model's context window "
		    "(%ld tokens, %s) is too small for the steps of this task; set a larger window "
		    "on the server (and providers.<name>.models.<model>.contextWindow), or split "
		    "the task", LOOP_COMPACT_STREAK, l->cx.window, l->cx.window_from);
		return AGENT_FAILED;
	}
	rc = loop_answer(l, &l->conv, l->tools, true, &t);
	if (rc == AGENT_FAILED && l->prov->retry.context_exceeded && l->cx.window > 0 &&
	    (!compacted || (l->prov->retry.stated_window > 0 &&
	    l->prov->retry.stated_window < l->cx.window))) {
		turn_free(&t);
		if ((rc = loop_refused(l)) != AGENT_OK)
			return rc;
		rc = loop_answer(l, &l->conv, l->tools, true, &t);
	}
	if (rc != AGENT_OK) {
		turn_free(&t);
		return rc;
	}
	context_learn(&l->cx, &l->conv, t.input_tokens);
	if (l->cx.ask_loaded) {
		/* Ollama sized the model's context when it loaded it for this turn. */
		long loaded = context_ollama_loaded(l->host, l->cfg);

		l->cx.ask_loaded = false;
		if (loaded > 0 && loaded != l->cx.window) {
			log_info("Ollama loaded %s with a context window of %ld tokens", l->cfg->model,
			    loaded);
			context_set_window(&l->cx, loaded, "provider");
		}
	}
	ncalls = t.ncalls;
	conv_add_assistant(&l->conv, t.text.data ? t.text.data : "", t.calls, t.ncalls);
	conv_set_reasoning(&l->conv, t.reasoning);
	t.reasoning = NULL;
	at = l->conv.n - 1;
	t.calls = NULL;
	t.ncalls = 0;
	cut = loop_cut_note(&t);
	turn_free(&t);
	*done = ncalls == 0 && cut == NULL;
	if (!*done && ncalls > 0)
		loop_checkpoint(l);
	if (ncalls > 0)
		rc = loop_calls(l, at, 0);
	if (cut != NULL && rc == AGENT_OK) {
		conv_add_user(&l->conv, cut);
		loop_checkpoint(l);
	}
	free(cut);
	return rc;
}

/*
 * routing.reviewer: reviews the answer that would end the run; on requested
 * changes, gives the model their findings for one more round (*done false).
 */
static int
loop_review(struct loop *l, bool *done)
{
	struct tool_ctx ctx = { .cfg = l->cfg, .host = l->host, .plan = &l->plan,
		.files = l->files, .files_why = l->files_why };
	struct review r;
	const cJSON *f;
	struct buf msg;
	int rc;

	if (l->subagent != NULL || !l->cfg->reviewer.enabled || l->reviews >= LOOP_REVIEWS ||
	    l->files == NULL)
		return AGENT_OK;
	host_progress(l->host, "reviewing", "A reviewer reads the work.");
	rc = review_run(&ctx, l->host, &l->before, l->output.data ? l->output.data : "", &r);
	if (rc != AGENT_OK)
		return rc;
	l->reviews++;
	if (r.used.input > 0 || r.used.output > 0) {
		usage_add(&l->used, &r.used);
		loop_spend(l, &r.used);
		host_usage(l->host, &l->used);
	}
	review_send(l->host, &r, l->reviews);
	if (strcmp(r.verdict, "changes_requested") == 0 && l->reviews < LOOP_REVIEWS) {
		buf_init(&msg, 0);
		buf_appends(&msg, "A reviewer read your work and requested changes:\n");
		cJSON_ArrayForEach(f, r.findings)
			buf_printf(&msg, "- %s\n", f->valuestring);
		if (cJSON_GetArraySize(r.findings) == 0)
			buf_printf(&msg, "%s\n", r.summary ? r.summary : "");
		buf_appends(&msg, "Address them, then answer with a short summary of what you "
		    "changed.");
		conv_add_user(&l->conv, msg.data);
		buf_free(&msg);
		loop_text(l, "\n\n", 2);
		loop_checkpoint(l);
		*done = false;
	}
	review_free(&r);
	return AGENT_OK;
}

static int
loop_main(struct loop *l)
{
	int rc;

	l->prov = provider_new(l->cfg, l->host);
	l->prov->plan = &l->plan;
	if (l->prov->ops->open != NULL &&
	    (rc = l->prov->ops->open(l->prov, &l->err)) != AGENT_OK)
		return rc;
	if (l->cfg->checkpoint != NULL) {
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(l->cfg->checkpoint, "provider");

		if (ps != NULL && (l->prov->ops->restore == NULL || !l->prov->ops->restore(l->prov,
		    ps))) {
			agent_error_set(&l->err, "checkpoint_invalid",
			    "the provider state of the checkpoint is malformed");
			return AGENT_FAILED;
		}
		if ((rc = loop_pending_calls(l)) != AGENT_OK)
			return rc;
	}
	while (l->turns < l->cfg->max_turns) {
		bool done = false;

		if (host_cancelled(l->host))
			return AGENT_CANCELLED;
		l->turns++;
		if ((rc = loop_turn(l, &done)) != AGENT_OK)
			return rc;
		if (done && (rc = loop_review(l, &done)) != AGENT_OK)
			return rc;
		if (done)
			return AGENT_OK;
	}
	agent_error_set(&l->err, "max_turns", "the run reached its limit of %d model turns "
	    "(runs.maxTurns) before the model finished; the work so far is in the workspace: "
	    "continue it with a new run in the same session, or raise runs.maxTurns",
	    l->cfg->max_turns);
	return AGENT_FAILED;
}

/* Frees what a loop holds (not the loop itself). */
static void
loop_free(struct loop *l)
{
	provider_free(l->prov);
	conv_free(&l->conv);
	cJSON_Delete(l->tools);
	buf_free(&l->output);
	free(l->last_failure);
	plan_state_free(&l->plan);
	agent_error_clear(&l->err);
	wsfile_root_free(l->files);
	free(l->files_why);
	tool_snapshot_free(&l->before);
}

static int
loop_file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ws_file *)a)->rel, ((const struct ws_file *)b)->rel);
}

/* The model's context window, from the settings, the provider or a default. */
static void
loop_context(struct loop *l, bool discover)
{
	char *defs = json_print(l->tools);
	struct context_found found = { 0 };

	if (l->cfg->context_window == 0 && discover)
		context_discover(l->host, l->cfg, &found);
	context_init(&l->cx, l->cfg, strlen(defs), &found);
	free(defs);
}

int
loop_run(const struct agent_config *run_cfg, struct host *host)
{
	struct run_spend spend = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct agent_config run = *run_cfg;
	const struct agent_config *cfg = &run;
	struct loop l = { .cfg = cfg, .host = host };
	static const char *const statuses[] = {
		[-AGENT_OK] = "completed", [-AGENT_FAILED] = "failed", [-AGENT_CANCELLED] = "cancelled",
	};
	int rc;

	buf_init(&l.output, 0);
	srandom((unsigned)(clock_mono_ms() ^ getpid()));
	l.plan.plan_first = cfg->plan_first;
	l.offer = (cfg->plan_first ? TOOL_PLAN_FIRST : 0) |
	    (cfg->subagent.enabled ? TOOL_SUBAGENT : 0);
	l.tools = tools_definitions(l.offer);
	l.files = wsfile_root_open(cfg->workspace, (const char *const *)cfg->hidden,
	    &l.files_why);
	if (l.files == NULL)
		log_warn("the file tools are off: %s", l.files_why);
	host_progress(host, "starting", "Starting the run.");
	rc = connectors_open(&l.cons, cfg, host);
	connectors_definitions(&l.cons, l.tools);
	loop_context(&l, rc == AGENT_OK);
	if (!loop_conversation(&l) && rc == AGENT_OK)
		rc = AGENT_FAILED;
	spend.used = l.used;	/* a resumed run's so far */
	run.spend = &spend;
	if (cfg->reviewer.enabled && l.files != NULL) {
		struct tool_ctx ctx = { .cfg = cfg, .host = host, .files = l.files };

		tool_snapshot(&ctx, &l.before);
		if (l.before.n > 1)
			qsort(l.before.v, l.before.n, sizeof *l.before.v, loop_file_cmp);
	}
	if (rc == AGENT_OK)
		rc = loop_main(&l);
	if (host_cancelled(host))
		rc = AGENT_CANCELLED;
	/* Before finish: once it is sent the service may end the agent at any moment. */
	connectors_close(&l.cons);
	if (!host_protocol_error(host)) {
		host_progress(host, "finishing", "Finishing the run.");
		host_finish(host, statuses[-rc], l.output.data ? l.output.data : "", &l.err,
		    &l.used);
	}
	if (rc == AGENT_FAILED)
		log_info("run failed: %s: %s", l.err.code, l.err.message);
	loop_free(&l);
	return rc;
}

int
loop_subagent(const struct agent_config *cfg, struct host *host, const struct plan_state *plan,
    const char *id, const char *task, struct buf *answer, struct usage *used,
    struct agent_error *err)
{
	struct agent_config child = *cfg;
	struct loop l = { .cfg = &child, .host = host, .subagent = id };
	int rc;

	if (cfg->subagent.provider_kind != NULL) {
		child.provider_kind = cfg->subagent.provider_kind;
		child.base_url = cfg->subagent.base_url;
		child.api_key = cfg->subagent.api_key;
		child.replay_dir = cfg->subagent.replay_dir;
	}
	if (cfg->subagent.model != NULL)
		child.model = cfg->subagent.model;
	child.prompt = (char *)task;
	child.plan_first = false;	/* its prompt: it proposes no plan ... */
	child.history = NULL;
	child.checkpoint = NULL;
	child.connectors = NULL;
	memset(&child.subagent, 0, sizeof child.subagent);
	memset(&child.reviewer, 0, sizeof child.reviewer);
	buf_init(&l.output, 0);
	l.plan.plan_first = plan->plan_first;	/* ... and waits for the run's like the run */
	l.plan.approved = plan->approved;
	l.tools = tools_definitions(0);
	l.files = wsfile_root_open(child.workspace, (const char *const *)child.hidden,
	    &l.files_why);
	loop_context(&l, false);
	host_set_subagent(id);
	rc = loop_conversation(&l) ? loop_main(&l) : AGENT_FAILED;
	if (host_cancelled(host))
		rc = AGENT_CANCELLED;
	host_set_subagent(NULL);
	buf_append(answer, l.output.data ? l.output.data : "", l.output.len);
	*used = l.used;
	if (l.err.code != NULL)
		agent_error_set(err, l.err.code, "%s", l.err.message ? l.err.message : "");
	loop_free(&l);
	return rc;
}
