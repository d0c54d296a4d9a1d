/*
 * One model answer: the provider's text streamed out within the output
 * limit (a redone answer not shown twice), what it cost against the run's
 * budgets, and retries after a wait for failures that waiting may fix.
 */

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "host.h"
#include "log.h"
#include "loop-int.h"
#include "provider.h"
#include "xalloc.h"

#define LOOP_TRUNCATED "\n[output truncated]"
#define LOOP_RESTARTED "\n\n[the answer was interrupted; the model answers again]\n\n"
#define LOOP_BACKOFF_BASE_MS 1000
#define LOOP_BACKOFF_CAP_MS 60000

/* Text out to the service, within the output limit. */
static void
loop_emit(struct loop *l, const char *delta, size_t len)
{
	size_t room = AGENT_MAX_OUTPUT - sizeof LOOP_TRUNCATED - l->output.len;

	if (l->output_full || len == 0)
		return;
	if (len > room) {
		len = agent_utf8_cut(delta, room);
		l->output_full = true;
	}
	buf_append(&l->output, delta, len);
	host_output(l->host, delta, len);
	if (l->output_full) {
		buf_appends(&l->output, LOOP_TRUNCATED);
		host_output(l->host, LOOP_TRUNCATED, strlen(LOOP_TRUNCATED));
	}
}

/*
 * A redone answer that no longer repeats the broken one: a line says so, then
 * the new answer from its start (what matched so far included).
 */
static void
loop_echo_diverge(struct loop *l)
{
	size_t from = l->answer_at, n = l->echo_at - l->answer_at;
	char *same = xstrndup(l->output.data + from, n);

	l->echo_at = l->echo_to = 0;
	loop_emit(l, LOOP_RESTARTED, strlen(LOOP_RESTARTED));
	l->answer_at = l->output.len;
	loop_emit(l, same, n);
	free(same);
}

/* The provider's text: out to the service, unless it repeats a broken attempt's. */
void
loop_text(void *ud, const char *delta, size_t len)
{
	struct loop *l = ud;
	size_t room = AGENT_MAX_OUTPUT - sizeof LOOP_TRUNCATED - l->output.len;

	if (l->subagent != NULL) {	/* a child's text is its call's result */
		if (l->output_full || len == 0)
			return;
		buf_append(&l->output, delta, agent_utf8_cut(delta, len < room ? len : room));
		l->output_full = len > room;
		return;
	}
	if (!l->writing) {
		host_progress(l->host, "writing", "The model is answering.");
		l->writing = true;
	}
	while (len > 0 && l->echo_at < l->echo_to) {
		if (l->output.data[l->echo_at] != *delta) {
			loop_echo_diverge(l);
			break;
		}
		l->echo_at++, delta++, len--;
	}
	loop_emit(l, delta, len);
}

/* What a person reads for a retry's reason. */
static const char *
loop_retry_words(const char *reason)
{
	static const struct {
		const char *reason, *words;
	} words[] = {
		{ "rate_limited", "rate limited" },
		{ "overloaded", "the provider is overloaded" },
		{ "server_error", "the provider had a server error" },
		{ "timeout", "the provider timed out" },
		{ "conflict", "the provider reported a conflict" },
		{ "connection", "the connection to the provider failed" },
	};

	for (size_t i = 0; reason != NULL && i < sizeof words / sizeof *words; i++)
		if (strcmp(words[i].reason, reason) == 0)
			return words[i].words;
	return "the provider failed";
}

/*
 * The wait before retry attempt (1-based): what the provider asked for, else
 * an exponential backoff (1 s, 2 s, 4 s, ... at most 60 s) with jitter (half
 * to all of it), so that many agents do not come back at once.
 */
static long
loop_backoff_ms(int attempt, long asked)
{
	long base = LOOP_BACKOFF_BASE_MS;

	if (asked >= 0)
		return asked;
	for (int i = 1; i < attempt && base < LOOP_BACKOFF_CAP_MS; i++)
		base *= 2;
	if (base > LOOP_BACKOFF_CAP_MS)
		base = LOOP_BACKOFF_CAP_MS;
	return base / 2 + random() % (base / 2 + 1);
}

/* Adds a note to the run's error message. */
static void loop_error_note(struct loop *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
loop_error_note(struct loop *l, const char *fmt, ...)
{
	char note[160];
	char *msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof note, fmt, ap);
	va_end(ap);
	msg = xasprintf("%s%s", l->err.message ? l->err.message : "", note);
	free(l->err.message);
	l->err.message = msg;
}

/*
 * One model answer.  A failure that waiting may fix (provider-http.c) is
 * retried after a wait, at most cfg->max_retries times and cfg->max_retry_wait_ms
 * in all; no tool has run in a turn whose answer did not arrive, so the turn
 * is simply asked again.  A cancel ends the wait.
 */
static void
loop_silent(void *ud, const char *delta, size_t len)
{
}

/* Adds u to what the run spent. */
void
loop_spend(struct loop *l, const struct usage *u)
{
	struct run_spend *s = l->cfg->spend;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	usage_add(&s->used, u);
	pthread_mutex_unlock(&s->mu);
}

/* Whether the run, its subagents included, reached a budget: l->err says which. */
static bool
loop_over_budget(struct loop *l)
{
	struct usage used = l->used;

	if (l->cfg->spend != NULL) {
		pthread_mutex_lock(&l->cfg->spend->mu);
		used = l->cfg->spend->used;
		pthread_mutex_unlock(&l->cfg->spend->mu);
	}
	if (l->cfg->max_tokens > 0 && used.input + used.output >= l->cfg->max_tokens) {
		agent_error_clear(&l->err);
		agent_error_set(&l->err, "budget_exceeded", "the run used %ld tokens, its "
		    "limit is %lld (runs.maxTokensPerRun, its subagents' included); the work so "
		    "far is in the workspace", used.input + used.output, l->cfg->max_tokens);
		return true;
	}
	if (l->cfg->max_cost > 0 && l->cfg->price.set &&
	    usage_cost(&used, &l->cfg->price) >= l->cfg->max_cost) {
		agent_error_clear(&l->err);
		agent_error_set(&l->err, "budget_exceeded", "the run cost %.4f USD, its "
		    "limit is %.4f USD (runs.maxCostPerRun, its subagents' included); the work so "
		    "far is in the workspace", usage_cost(&used, &l->cfg->price), l->cfg->max_cost);
		return true;
	}
	return false;
}

int
loop_answer(struct loop *l, const struct conversation *conv, const cJSON *tools, bool visible,
    struct turn *t)
{
	struct provider_sink sink = { .text = visible ? loop_text : loop_silent, .ud = l };
	long waited = 0;
	int rc;

	l->answer_at = l->output.len;
	l->echo_at = l->echo_to = 0;
	for (int attempt = 1;; attempt++) {
		const char *reason;
		char msg[256];
		struct usage u;
		long delay;

		l->writing = false;
		turn_init(t);
		/* No paid request once the run's budget is spent (a subagent's spending too). */
		if (loop_over_budget(l))
			return AGENT_FAILED;
		rc = l->prov->ops->turn(l->prov, conv, tools, &sink, t, &l->err);
		u = (struct usage){ .input = t->input_tokens, .output = t->output_tokens,
		    .cache_read = t->cache_read_tokens, .cache_write = t->cache_write_tokens };
		usage_add(&l->used, &u);
		loop_spend(l, &u);
		if ((t->input_tokens || t->output_tokens) && l->subagent == NULL)
			host_usage(l->host, &l->used);
		if (loop_over_budget(l))
			return AGENT_FAILED;
		if (rc == AGENT_OK && l->echo_at < l->echo_to)
			loop_echo_diverge(l);	/* shorter than the broken attempt */
		l->echo_at = l->echo_to = 0;
		if (rc != AGENT_FAILED || !l->prov->retry.retryable || host_cancelled(l->host))
			return rc;
		turn_free(t);
		reason = l->prov->retry.reason;
		if (attempt > l->cfg->max_retries) {
			if (l->cfg->max_retries > 0)
				loop_error_note(l, " (gave up after %d retries in %ld s)",
				    l->cfg->max_retries, (waited + 999) / 1000);
			return rc;
		}
		delay = loop_backoff_ms(attempt, l->prov->retry.after_ms);
		if (waited + delay > l->cfg->max_retry_wait_ms) {
			loop_error_note(l, " (gave up: a wait of %ld s more would pass the retry "
			    "limit of %ld s)", (delay + 999) / 1000, l->cfg->max_retry_wait_ms / 1000);
			return rc;
		}
		waited += delay;
		snprintf(msg, sizeof msg, "%s, retrying in %ld s (retry %d of %d)",
		    loop_retry_words(reason), (delay + 999) / 1000, attempt, l->cfg->max_retries);
		log_info("%s: %s", msg, l->err.message);
		host_progress_retry(l->host, msg, attempt, l->cfg->max_retries, reason, delay);
		agent_error_clear(&l->err);
		/* What the broken attempt showed is not shown twice. */
		if (visible && l->subagent != NULL) {
			l->output.len = l->answer_at;	/* a child's text went nowhere yet */
			if (l->output.data != NULL)
				l->output.data[l->output.len] = '\0';
			l->output_full = false;
		} else if (visible) {
			l->echo_at = l->answer_at;
			l->echo_to = l->output.len;
		}
		if ((rc = host_sleep(l->host, delay)) != AGENT_OK)
			return rc;
		if (l->subagent == NULL)
			host_progress(l->host, "thinking", "Waiting for the model.");
	}
}
