/*
 * The model's context window and what the conversation takes of it
 * (docs/agent.md, Context): the window from the settings, the provider or a
 * conservative default; the prompt's tokens from the provider's usage of the
 * last request, estimated from the bytes added since.  The loop (loop-compact.c)
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
	const char *window_from;	/* "settings", "provider", "provider error" or "default" */
	long reserve;		/* tokens kept free for the answer */
	long answer;		/* the answer's room asked for (reserve: at most a quarter) */
	double per_byte;	/* tokens per byte of the prompt, learnt from usage */
	size_t tools_bytes;	/* the tool definitions, sent with every request */
	bool ask_loaded;	/* Ollama's model is not loaded yet: ask /api/ps after a turn */
};

/* What the provider says about the window of a model. */
struct context_found {
	long window;		/* tokens, or 0 */
	bool ask_loaded;	/* an Ollama model not loaded yet: its window is known once it is */
};

/* The window for cfg: configured, else discovered (when > 0), else a default by model name. */
void context_init(struct context *cx, const struct agent_config *cfg, size_t tools_bytes,
    const struct context_found *found);
/* A window learnt while running (from is static): the reserve follows it. */
void context_set_window(struct context *cx, long window, const char *from);
struct host;
/*
 * What the provider reports about cfg->model's window (docs/agent.md,
 * Context): Anthropic's models API (max_input_tokens); for the OpenAI kind,
 * {base}/models (vLLM's max_model_len), then on a local or private host
 * Ollama's /api/ps (the loaded context_length) and /api/show when its
 * /api/version says it is Ollama, else llama.cpp's /props (n_ctx) and LM
 * Studio's /api/v0/models.  A few seconds at most.
 */
void context_discover(struct host *h, const struct agent_config *cfg,
    struct context_found *found);
/* The context length Ollama loaded cfg->model with (GET /api/ps), or 0. */
long context_ollama_loaded(struct host *h, const struct agent_config *cfg);
/*
 * The bytes one of ncalls tool results of an answer may have: a share of the
 * window (all the answer's results together about a quarter of it), at
 * least CONTEXT_RESULT_MIN, at most cap.  cap when the window is not managed.
 */
#define CONTEXT_RESULT_MIN 2048
size_t context_result_max(const struct context *cx, size_t ncalls, size_t cap);
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
