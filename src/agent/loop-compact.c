/*
 * Fitting the model's context window: tool results cut to their share, the
 * older turns summarized by the model, and what to do when the provider
 * refuses a conversation as too long.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "context.h"
#include "conv.h"
#include "host.h"
#include "log.h"
#include "loop-int.h"
#include "provider.h"
#include "xalloc.h"

/*
 * text cut to max bytes, with a note that says how to get the rest: a tool
 * result bounded to its share of the model's context window.
 */
char *
loop_cut_text(const struct loop *l, const char *text, size_t max)
{
	size_t n = agent_utf8_cut(text, max);

	return xasprintf("%.*s\n[cut to %zu of %zu bytes to fit the model's context window (%ld "
	    "tokens): ask for less at a time, e.g. read_file with offset and limit (lines), a "
	    "narrower grep or glob, or a command whose output is shorter]\n", (int)n, text, n,
	    strlen(text), l->cx.window);
}

/*
 * Cuts the tool results of the conversation larger than their share of the
 * window (after it shrank); true when one was.  The next checkpoint sends
 * them again.
 */
static bool
loop_cut_results(struct loop *l)
{
	size_t calls = 1;
	bool cut = false;

	for (size_t i = 0; i < l->conv.n; i++) {
		const struct conv_message *m = &l->conv.msgs[i];
		size_t max;
		char *text;

		if (m->role == CONV_ASSISTANT)
			calls = m->ncalls;
		if (m->role != CONV_TOOL)
			continue;
		max = context_result_max(&l->cx, calls, l->cfg->max_tool_output);
		if (strlen(m->text) <= max + LOOP_CUT_SLACK)
			continue;
		text = loop_cut_text(l, m->text, max);
		conv_set_text(&l->conv, i, text);
		free(text);
		if (l->cp_sent > i)
			l->cp_sent = i;
		cut = true;
	}
	return cut;
}

/* The plan of a plan-first run, for a summary that replaces the turns that made it. */
static void
loop_plan_text(const struct loop *l, struct buf *b)
{
	if (l->plan.nsteps == 0)
		return;
	buf_printf(b, "\n\nThe plan (%s):\n", l->plan.approved ? "approved" : "not approved yet");
	for (size_t i = 0; i < l->plan.nsteps; i++)
		buf_printf(b, "%zu. %s (step id %s)\n", i + 1, l->plan.steps[i].title,
		    l->plan.steps[i].id);
}

#define LOOP_SUMMARY_SYSTEM "You summarize the earlier part of the work of an AI agent that " \
	"carries out a task in a workspace, so that it can go on within its model's context " \
	"window. The summary replaces those turns: keep what the agent needs to carry on."

/*
 * Context management: the model summarizes the turns before the recent ones
 * (those within about budget tokens, at least the newest); the system
 * prompt, the task, the plan and the recent turns stay.  The checkpoint then
 * holds the new conversation.  *done is false when there was nothing older
 * to summarize.
 */
static int
loop_compact(struct loop *l, const char *why, long budget, bool *done)
{
	size_t recent = context_recent_start(&l->cx, &l->conv, budget);
	size_t skip = SIZE_MAX, older = 0;
	size_t max = (size_t)((double)l->cx.window * 0.6 / l->cx.per_byte);
	struct conversation sc, nc;
	cJSON *none;
	struct turn t;
	struct buf text;
	char *transcript, msg[300];
	int rc;

	*done = false;
	/* The task (the last user message) is written anew: the recent turns follow it. */
	for (size_t i = 0; i < l->conv.n; i++)
		if (l->conv.msgs[i].role == CONV_USER)
			skip = i;
	if (skip != SIZE_MAX && recent <= skip)
		recent = skip + 1;
	/* An earlier summary alone is not summarized again. */
	for (size_t i = 0; i < recent; i++)
		older += i != skip;
	if (skip != SIZE_MAX && strcmp(l->conv.msgs[skip].text, l->cfg->prompt) != 0)
		skip = SIZE_MAX;	/* an earlier summary: summarized again */
	if (older == 0)
		return AGENT_OK;
	snprintf(msg, sizeof msg, "%s; summarizing the %zu older messages (the model's context "
	    "window: %ld tokens, %s)", why, older, l->cx.window, l->cx.window_from);
	log_info("%s", msg);
	host_progress(l->host, "compacting", msg);
	transcript = context_transcript(&l->conv, recent, skip, max > 4096 ? max : 4096);
	buf_init(&text, 0);
	buf_printf(&text, "The task:\n%s\n\nThe earlier part of the work, oldest first:\n\n%s\n"
	    "Write a summary of this earlier work for the agent that carries on with the task: "
	    "what it did and found, the files it read or changed and what in them still "
	    "matters, the decisions taken, the errors met, and what is left to do. Plain text, "
	    "at most about 400 words.", l->cfg->prompt, transcript);
	free(transcript);
	conv_init(&sc, LOOP_SUMMARY_SYSTEM);
	conv_add_user(&sc, text.data);
	buf_free(&text);
	none = cJSON_CreateArray();
	rc = loop_answer(l, &sc, none, false, &t);
	cJSON_Delete(none);
	conv_free(&sc);
	if (rc != AGENT_OK) {
		turn_free(&t);
		return rc;
	}
	buf_init(&text, 0);
	buf_printf(&text, "%s\n\n[The earlier turns of this run were summarized to fit the "
	    "model's context window:]\n%s", l->cfg->prompt, t.text.data ? t.text.data : "");
	loop_plan_text(l, &text);
	turn_free(&t);
	conv_init(&nc, l->conv.system);
	conv_add_user(&nc, text.data);
	buf_free(&text);
	for (size_t i = recent; i < l->conv.n; i++)
		conv_add_copy(&nc, &l->conv.msgs[i]);
	conv_free(&l->conv);
	l->conv = nc;
	/* The next checkpoint replaces the stored messages from the first. */
	l->cp_sent = 0;
	loop_checkpoint(l);
	host_progress(l->host, "thinking", "Waiting for the model.");
	*done = true;
	return AGENT_OK;
}

/*
 * Makes the next request fit the window: cuts the tool results past their
 * share (the window may have shrunk), then summarizes the older turns,
 * keeping about 30 % of the window, then all but the newest turn.  forced:
 * the provider refused the request as too long, so something must change.
 * *changed says whether the conversation did.  AGENT_FAILED with
 * context_exhausted when the newest turn does not fit even so.
 */
int
loop_fit(struct loop *l, const char *why, bool forced, bool *changed)
{
	static const int keep[] = { 3, 0 };	/* tenths of the window kept as they are */
	bool done;
	int rc;

	*changed = loop_cut_results(l);
	if (*changed) {
		log_info("tool results were cut to fit the model's context window of %ld tokens",
		    l->cx.window);
		loop_checkpoint(l);
	}
	for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
		if (!context_full(&l->cx, &l->conv) && (*changed || !forced))
			return AGENT_OK;
		if ((rc = loop_compact(l, why, l->cx.window * keep[k] / 10, &done)) != AGENT_OK)
			return rc;
		*changed = *changed || done;
	}
	if (!context_full(&l->cx, &l->conv) || !*changed)
		return AGENT_OK;
	agent_error_set(&l->err, "context_exhausted", "the newest turn (about %ld tokens with the "
	    "system prompt, the tools and the summary) does not fit the model's context window "
	    "of %ld tokens (%s) with %ld kept for the answer: set a larger window on the server "
	    "(and providers.<name>.models.<model>.contextWindow), or split the task",
	    context_estimate(&l->cx, &l->conv), l->cx.window, l->cx.window_from, l->cx.reserve);
	return AGENT_FAILED;
}

/*
 * The provider refused the request as too long: the window it states (when
 * smaller) and the tokens it counted are taken, then the conversation is
 * made to fit.  AGENT_OK to ask again; AGENT_FAILED when nothing changed.
 */
int
loop_refused(struct loop *l)
{
	long stated = l->prov->retry.stated_window;
	char *said = xstrdup(l->err.message ? l->err.message : "");
	bool changed = false;
	int rc;

	log_info("the provider refused the conversation as too long: %s", said);
	agent_error_clear(&l->err);
	if (l->prov->retry.stated_prompt > 0)
		context_learn(&l->cx, &l->conv, l->prov->retry.stated_prompt);
	if (stated > 0 && stated < l->cx.window) {
		log_info("the provider states a context window of %ld tokens (%ld assumed)", stated,
		    l->cx.window);
		context_set_window(&l->cx, stated, "provider error");
	}
	rc = loop_fit(l, "the provider said the conversation is too long for the model", true,
	    &changed);
	if (rc == AGENT_OK && !changed) {
		agent_error_set(&l->err, "provider_error", "%s (the conversation does not fit "
		    "the model's context window, and there is nothing older to summarize)", said);
		rc = AGENT_FAILED;
	}
	free(said);
	return rc;
}
