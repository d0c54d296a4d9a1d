/*
 * A scripted model provider for the agent's tests: a small HTTP server on
 * 127.0.0.1 that answers each POST with the next reply of its script, sent
 * in small chunks, and records what it was sent.  The builders produce the
 * real streaming wire formats of OpenAI Chat Completions and Anthropic
 * Messages.
 */
#ifndef TD_TEST_FAKE_PROVIDER_H
#define TD_TEST_FAKE_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "buf.h"

struct fake_reply {
	int status;
	const char *content_type;
	char *body;		/* owned by the caller */
	size_t chunk;		/* bytes per write; 0 = all at once */
	int chunk_delay_us;
	const char *headers;	/* more header lines, "Name: value\n" each; may be NULL */
	size_t reset_after;	/* > 0: the connection is reset (RST) after this many bytes */
};

struct fake_request {
	char *path;
	char *authorization;	/* header values, NULL when absent */
	char *api_key;		/* x-api-key */
	char *version;		/* anthropic-version */
	char *body;
};

struct fake_provider;

/* Serves replies[0..n) in order (the array must outlive the server). */
struct fake_provider *fake_provider_start(const struct fake_reply *replies, size_t n);
/*
 * A reply made for each POST from its body (any number of them, not
 * recorded): fn returns it with a malloc'd body the server frees; status 0
 * is 200, a NULL content_type text/event-stream.  fn runs on the server's
 * connection threads, one per request.
 */
typedef struct fake_reply (*fake_reply_fn)(void *ud, const char *body);
struct fake_provider *fake_provider_start_fn(fake_reply_fn fn, void *ud);
/* "http://127.0.0.1:PORT" plus suffix; static storage. */
const char *fake_provider_url(const struct fake_provider *fp, const char *suffix);
size_t fake_provider_count(struct fake_provider *fp);
/* The i-th request received (valid until fake_provider_stop). */
const struct fake_request *fake_provider_request(struct fake_provider *fp, size_t i);
void fake_provider_stop(struct fake_provider *fp);
/*
 * What a provider says about itself and its models (Ollama's GET /api/version,
 * POST /api/show and GET /api/ps, Anthropic's GET /v1/models/ID, GET
 * /v1/models, llama.cpp's GET /props, ...): a path set here answers json (any
 * method); /api/show and every other GET answer 404 (/api/version with Go's
 * "404 page not found", as a server that is not Ollama); never from the
 * script nor counted with the requests above.
 */
void fake_provider_info(struct fake_provider *fp, const char *path, const char *json);
/* The same, answered (404 before) once after scripted requests have come: a model loaded. */
void fake_provider_info_after(struct fake_provider *fp, const char *path, const char *json,
    size_t after);
/* How many such requests came. */
size_t fake_provider_info_count(struct fake_provider *fp);
/* How many of them asked for path (set or not). */
size_t fake_provider_info_asked(struct fake_provider *fp, const char *path);
/* Header name (Authorization, x-api-key, anthropic-version) of the last info request; free it. */
char *fake_provider_info_header(struct fake_provider *fp, const char *name);
/* How many requests the path set with fake_provider_info answered. */
size_t fake_provider_info_hits(struct fake_provider *fp, const char *path);
/* The next n GETs of paths not set with fake_provider_info are answered from the script. */
void fake_provider_script_gets(struct fake_provider *fp, size_t n);

/*
 * A check the real server makes of request i (FAKE_EVERY: of every request):
 * when its body holds when (NULL: always) but lacks must_have, the server
 * answers status with refusal (a JSON body, static) instead of the scripted
 * reply (which is then not used up, nor the request counted).
 */
#define FAKE_EVERY ((size_t)-1)
void fake_provider_check(struct fake_provider *fp, size_t i, const char *when,
    const char *must_have, int status, const char *refusal);

/* OpenAI: one chat.completion.chunk whose choices[0].delta is delta_json. */
void fake_openai_delta(struct buf *b, const char *delta_json, const char *finish_reason);
void fake_openai_text(struct buf *b, const char *text);
/* A tool call: its head (id, name), then its arguments in pieces of piece bytes. */
void fake_openai_tool_call(struct buf *b, int index, const char *id, const char *name,
    const char *args, size_t piece);
void fake_openai_usage(struct buf *b, int prompt_tokens, int completion_tokens);
/* The usage chunk with cached of prompt_tokens read from the prompt cache. */
void fake_openai_usage_cached(struct buf *b, int prompt_tokens, int completion_tokens, int cached);
void fake_openai_done(struct buf *b);

/* OpenAI's error body: {"error":{"message","type","param":null,"code"}}. */
void fake_openai_error(struct buf *b, const char *type, const char *code, const char *message);
/* Anthropic's error body, also the data of its in-stream "error" event. */
void fake_anthropic_error(struct buf *b, const char *type, const char *message);

/* Anthropic: one event, "event: type" and "data: json". */
void fake_anthropic_event(struct buf *b, const char *type, const char *json);
void fake_anthropic_start(struct buf *b, int input_tokens);
/* message_start with input_tokens not cached, cache_read read from and cache_write written to the cache. */
void fake_anthropic_start_cached(struct buf *b, int input_tokens, int cache_read, int cache_write);
void fake_anthropic_text_block(struct buf *b, int index, const char *text);
void fake_anthropic_tool_block(struct buf *b, int index, const char *id, const char *name,
    const char *args, size_t piece);
void fake_anthropic_stop(struct buf *b, const char *stop_reason, int output_tokens);

/*
 * The servers people point the agent at, each with its own bytes: what its
 * streamed answers look like (fake_dialect_answer) and the checks it makes
 * (fake_dialect_check).
 */
enum fake_dialect {
	FAKE_OPENAI,	/* api.openai.com: deltas of a call after its head, usage apart */
	FAKE_DEEPSEEK,	/* reasoning_content; usage with the finish; keep-alive comments */
	FAKE_OLLAMA,	/* whole calls, each with index 0 and its own id; "reasoning" */
	FAKE_LLAMACPP,	/* reasoning_content; long random ids; timings beside usage */
	FAKE_VLLM,	/* "reasoning"; chatcmpl-tool- ids; the name apart from arguments */
	FAKE_LMSTUDIO,	/* numeric string ids; whole arguments in one delta */
	FAKE_ANTHROPIC,	/* Messages events; thinking blocks with signatures */
};

struct fake_call {
	const char *id;		/* as the dialect makes them when NULL; "": none sent */
	const char *name;
	const char *args;	/* JSON text; cut to cut_at bytes when cut_at > 0 */
	size_t cut_at;
};

/* The dialect's name ("deepseek", ...). */
const char *fake_dialect_name(enum fake_dialect d);
/*
 * One streamed answer in dialect d: its reasoning (NULL: none), text (NULL:
 * none) and calls; cut: the answer reached max_tokens (finish_reason
 * "length", stop_reason "max_tokens") instead of ending.  malloc'd.
 */
char *fake_dialect_answer(enum fake_dialect d, const char *reasoning, const char *text,
    const struct fake_call *calls, size_t ncalls, bool cut, int prompt_tokens,
    int output_tokens);
/*
 * Sets the checks the dialect's server makes of every request (DeepSeek: an
 * answer with calls comes back with its reasoning_content, else its 400);
 * nothing for the others.
 */
void fake_dialect_check(enum fake_dialect d, struct fake_provider *fp);

/*
 * OpenAI Responses API stream (POST /responses, what codex calls with
 * wire_api "responses"): each event is "event: TYPE" and "data: JSON".
 */
void fake_responses_event(struct buf *b, cJSON *ev);	/* ev consumed */
void fake_responses_start(struct buf *b, const char *id);
/* An assistant message item: added, text deltas of piece bytes, done. */
void fake_responses_text(struct buf *b, int index, const char *item_id, const char *text,
    size_t piece);
/* A function_call item: added, argument deltas of piece bytes, done. */
void fake_responses_function_call(struct buf *b, int index, const char *call_id,
    const char *name, const char *args, size_t piece);
void fake_responses_completed(struct buf *b, const char *id, int input_tokens,
    int output_tokens);

#endif
