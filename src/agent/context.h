/*
 * The model's context window and what the conversation takes of it
 * (docs/agent.md, Context): the window from the settings, the provider or a
 * conservative default; the prompt's tokens from the provider's usage of the
 * last request, estimated from the bytes added since.  The loop (loop.c)
 * summarizes older turns when the next request would not fit.
 */
#ifndef TD_AGENT_CONTEXT_H
#define TD_AGENT_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "agent.h"
#include "conv.h"

struct context {
	long window;		/* tokens; 0: not managed (the replay provider) */
	const char *window_from;	/* "settings", "provider" or "default" */
	long reserve;		/* tokens kept free for the answer */
	double per_byte;	/* tokens per byte of the prompt, learnt from usage */
	size_t tools_bytes;	/* the tool definitions, sent with every request */
};

/* The window for cfg: configured, else discovered (when > 0), else a default by model name. */
void context_init(struct context *cx, const struct agent_config *cfg, size_t tools_bytes,
    long discovered);
struct host;
/*
 * The window the provider reports for cfg->model, or 0: Anthropic's models
 * API (max_input_tokens); for an OpenAI-compatible base URL ending in /v1,
 * Ollama's /api/show (num_ctx when the model sets it, else its context_length
 * but at most Ollama's default num_ctx).  A few seconds at most.
 */
long context_discover(struct host *h, const struct agent_config *cfg);
/* The estimated tokens of a request with conv. */
long context_estimate(const struct context *cx, const struct conversation *conv);
/* True when a request with conv would leave less than the reserve for the answer. */
bool context_full(const struct context *cx, const struct conversation *conv);
/* After a request with conv that the provider counted input_tokens for. */
void context_learn(struct context *cx, const struct conversation *conv, long input_tokens);

/*
 * Where the recent turns to keep begin: an assistant message (its tool
 * results follow it) after which about budget tokens remain; at least the
 * last assistant message and what follows.  0 when there is none.
 */
size_t context_recent_start(const struct context *cx, const struct conversation *conv,
    long budget);
/*
 * The messages [0, end) but skip (the task) as text for the summarizing
 * model, at most max bytes (its middle cut when longer); tool results are
 * cut to a few KiB each.
 */
char *context_transcript(const struct conversation *conv, size_t end, size_t skip,
    size_t max);

#endif
