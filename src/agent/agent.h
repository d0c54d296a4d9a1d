/*
 * taskdeck-agent: the run configuration read from the start line, and the
 * error and status conventions shared by every part of the agent.
 */
#ifndef TD_AGENT_AGENT_H
#define TD_AGENT_AGENT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "sandbox.h"

/* Every function that can fail, be cancelled or succeed returns one of these. */
enum agent_status {
	AGENT_OK = 0,
	AGENT_FAILED = -1,	/* the error says why */
	AGENT_CANCELLED = -2,	/* the service sent cancel (or went away) */
};

/* Bounds of what the agent accepts and sends. */
#define AGENT_LINE_MAX (1024 * 1024)		/* a host protocol line, with its newline */
#define AGENT_MAX_OUTPUT (128 * 1024)		/* visible output of one run */
#define AGENT_FRAME_MAX (1024 * 1024)		/* one provider stream event */
#define AGENT_ARGS_MAX (1024 * 1024)		/* accumulated arguments of one tool call */
#define AGENT_RESPONSE_MAX (16 * 1024 * 1024)	/* one provider response */
#define AGENT_SUMMARY_MAX 200			/* a tool line summary, in bytes */

/* A run's token counts; input includes the tokens read from and written to a cache. */
struct usage {
	long input;
	long output;
	long cache_read;
	long cache_write;
};

/* provider.price: USD per million tokens of each kind (set false: no price known). */
struct price {
	bool set;
	double input, output, cache_read, cache_write;
};

void usage_add(struct usage *to, const struct usage *u);
/* What u costs in USD at price p (input counted without its cache reads and writes). */
double usage_cost(const struct usage *u, const struct price *p);

/* A run failure as sent in finish.error; code is one of host-protocol.md. */
struct agent_error {
	const char *code;	/* static string; NULL when no error */
	char *message;
};

void agent_error_set(struct agent_error *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void agent_error_clear(struct agent_error *err);

enum agent_profile {
	PROFILE_READ_ONLY,
	PROFILE_WORKSPACE_WRITE,
	PROFILE_FULL_ACCESS,
	PROFILE_ASK,
};

/*
 * A part of start.routing (docs/agent.md "Subagents", "Review"): subagent is
 * what run_subagent's child loops run on, reviewer what reviews the run.
 * provider_kind NULL: the run's provider; model NULL: the run's.
 */
struct agent_route {
	bool enabled;
	char *provider_kind;
	char *base_url;
	char *api_key;			/* never logged */
	char *replay_dir;
	char *model;
	int max_concurrent;		/* subagent */
};

/* Everything the start line says; owned by the struct (agent_config_free). */
struct redact;
struct run_spend;

struct agent_config {
	char *run_id;
	char *prompt;
	enum agent_profile profile;
	bool plan_first;		/* run.turnIntent is "plan-first" */
	char *workspace;		/* canonical absolute path */
	char *framework;		/* "taskdeck", "claude-code", "codex" */
	char *runtime_path;		/* the external CLI (start.runtime.path); NULL for taskdeck */
	char *runtime_version;		/* its version as the service found it; may be NULL */
	char **runtime_args;		/* acp: the configured arguments (NULL-terminated), or NULL */
	char *provider_kind;		/* "replay", "openai", "anthropic" */
	char *base_url;			/* NULL for replay */
	char *api_key;			/* NULL when none; never logged */
	struct redact *keys;		/* the run's API keys, masked in what a provider or CLI says */
	char *replay_dir;
	char *model;
	char *effort;			/* "low", "medium", "high" */
	char *project_name;
	char *project_context;
	cJSON *history;			/* array of {prompt, output}; may be NULL */
	cJSON *checkpoint;		/* start.checkpoint of a resumed run, or NULL */
	long long request_id_base;	/* run.requestIdBase, the ids of requests start above */
	int max_turns;
	long long max_tokens;		/* limits.maxTokensPerRun; 0 when unbounded */
	double max_cost;		/* limits.maxCostPerRun (USD); 0 when unbounded */
	struct run_spend *spend;	/* what the run and its subagents used (loop-int.h) */
	struct price price;		/* provider.price, of the run's model */
	int max_retries;		/* provider.maxRetries: retries of one model turn */
	long max_retry_wait_ms;		/* provider.maxRetryWaitMs: all waits of one turn */
	long context_window;		/* provider.contextWindow (tokens), 0 when not set */
	/* start.sandbox (docs/host-protocol.md): what commands may reach */
	bool network;
	bool allow_unconfined;
	char **hidden;			/* NULL-terminated; never NULL after parse */
	struct sandbox_limits limits;	/* of commands and connector servers; 0 = none */
	long command_timeout_ms;
	size_t max_tool_output;
	cJSON *connectors;		/* the enabled connectors (docs/connectors.md); may be NULL */
	long connector_timeout_ms;	/* per MCP request */
	struct agent_route subagent;
	struct agent_route reviewer;
};

/* Retries of a model turn the provider failed in a way waiting may fix. */
#define AGENT_MAX_RETRIES 20
#define AGENT_DEFAULT_RETRIES 6
#define AGENT_DEFAULT_RETRY_WAIT_MS (5 * 60 * 1000)

/* The largest checkpoint the agent sends and accepts (printed JSON). */
#define AGENT_CHECKPOINT_MAX (768 * 1024)

/* Fills cfg from a start message; false with *why (malloc'd) when it is malformed. */
bool agent_config_parse(struct agent_config *cfg, const cJSON *start, char **why);
void agent_config_free(struct agent_config *cfg);
const char *agent_profile_name(enum agent_profile p);
/* The sandbox of a run's commands for profile p (ask: once a call is allowed). */
enum sandbox_profile agent_sandbox_profile(enum agent_profile p);
/* Reads fd into buf until len bytes, end of file or an error (EINTR retried); the count read. */
size_t agent_read_full(int fd, char *buf, size_t len);

/* Copies at most max bytes of s, cut at a UTF-8 character boundary. */
char *agent_utf8_prefix(const char *s, size_t max);
/* Appends len bytes as valid UTF-8 without NULs (bad bytes become U+FFFD). */
void agent_utf8_append(struct buf *b, const char *s, size_t len);
/* A copy of s that is valid UTF-8. */
char *agent_utf8_clean(const char *s);
/* Length of the longest prefix of s[0..len) that does not split a UTF-8 character. */
size_t agent_utf8_cut(const char *s, size_t len);

#endif
