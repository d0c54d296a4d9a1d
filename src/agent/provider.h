/*
 * Model providers.  A provider takes the conversation and the tool
 * definitions, streams the model's text through the sink as it comes, and
 * returns the whole turn: text, tool calls and token usage.  Each kind is a
 * table entry (provider.c).
 */
#ifndef TD_AGENT_PROVIDER_H
#define TD_AGENT_PROVIDER_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "buf.h"
#include "conv.h"
#include "sse.h"

struct host;
struct plan_state;

/* Receives text deltas as they arrive. */
struct provider_sink {
	void (*text)(void *ud, const char *delta, size_t len);
	void *ud;
};

/* One model answer; the loop takes calls from it (turn_free frees the rest). */
struct turn {
	struct buf text;
	struct tool_call *calls;
	size_t ncalls;
	long input_tokens;	/* cache reads and writes included */
	long output_tokens;
	long cache_read_tokens;
	long cache_write_tokens;
	/* What the server sent beside the answer and wants back (conv_message.reasoning), or NULL. */
	cJSON *reasoning;
	/*
	 * The answer was cut at the output limit (finish_reason "length",
	 * stop_reason "max_tokens"); a call whose arguments it cut is left out
	 * of calls: its name in cut_call, the bytes of its arguments that came.
	 */
	bool cut;
	char cut_call[64];
	size_t cut_bytes;
};

struct provider;

struct provider_ops {
	const char *kind;
	/* Prepares state (the replay provider loads its transcript). */
	int (*open)(struct provider *p, struct agent_error *err);
	/* One model turn: AGENT_OK, AGENT_FAILED (err set) or AGENT_CANCELLED. */
	int (*turn)(struct provider *p, const struct conversation *conv,
	    const cJSON *tools, const struct provider_sink *sink, struct turn *out,
	    struct agent_error *err);
	void (*close)(struct provider *p);
	/*
	 * durable, optional: the provider's own state in a checkpoint (a JSON
	 * object), and taking it back after open; restore false when malformed.
	 */
	cJSON *(*save)(struct provider *p);
	bool (*restore)(struct provider *p, const cJSON *state);
};

/*
 * What the last failed turn says about trying again (provider-http.c sets it;
 * the loop waits and redoes the turn).
 */
struct provider_retry {
	bool retryable;		/* waiting may fix it: 429, 5xx, overloaded, a broken connection */
	long after_ms;		/* the wait the provider asked for, or -1 */
	const char *reason;	/* "rate_limited", "overloaded", "server_error", "timeout",
				   "conflict", "connection" (static) */
	bool context_exceeded;	/* the request did not fit the model's context window */
	long stated_window;	/* the window the refusal states, in tokens, or 0 */
	long stated_prompt;	/* the request's tokens the refusal states, or 0 */
};

struct provider {
	const struct provider_ops *ops;
	struct provider_retry retry;	/* of the last turn */
	const struct agent_config *cfg;
	struct host *host;
	const struct plan_state *plan;	/* the run's plan: the replay reacts to decisions */
	void *state;
};

/* NULL when kind is unknown. */
struct provider *provider_new(const struct agent_config *cfg, struct host *host);
void provider_free(struct provider *p);

void turn_init(struct turn *t);
void turn_free(struct turn *t);
/* Appends a tool call (strings copied); at most TURN_MAX_CALLS per turn. */
#define TURN_MAX_CALLS 64
void turn_add_call(struct turn *t, const char *id, const char *name, const char *args);

/* The room an Anthropic answer usually takes at effort (what the context keeps free). */
int an_max_tokens(const char *effort);
/* The output tokens model allows (max_tokens asked of Anthropic). */
int an_output_limit(const char *model);

/*
 * For the HTTP providers (provider-http.c): POSTs body to url and feeds the
 * event stream of the answer to on_event (which sets err and returns
 * non-zero to stop).  Maps every other outcome to an agent error:
 * provider_unreachable, provider_error (HTTP 4xx/5xx, with the provider's
 * message, the API key masked) or invalid_provider_response.
 */
int provider_post(struct provider *p, const char *url, const char *const *headers,
    const char *body, sse_event_fn on_event, void *ud, struct agent_error *err);
/* Marks the last turn retryable for reason (a static string). */
void provider_retry_set(struct provider *p, const char *reason, long after_ms);
/* Whether an error of type (an API's error type or code) or message is worth a retry. */
const char *provider_retry_reason(const char *type, const char *message);
/* base_url without its trailing slashes, then path. */
char *provider_url(const char *base_url, const char *path);
/* Parses a finished tool call's arguments: "" is {}; else must be a JSON object. */
char *provider_call_args(const char *text, size_t len);
/* Records in out the call the output limit cut (its arguments not a whole object). */
void provider_cut_call(struct turn *out, const char *name, size_t bytes);
/* A tool-call id for a server that sent none: unique in the run ("call_" and hex). */
void provider_made_up_id(char *id, size_t len, int index);

extern const struct provider_ops provider_replay_ops;
extern const struct provider_ops provider_openai_ops;
extern const struct provider_ops provider_anthropic_ops;

#endif
