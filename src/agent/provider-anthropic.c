/* The Anthropic Messages API with streaming: POST {baseUrl}/v1/messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "provider.h"
#include "xalloc.h"

#define AN_MAX_BLOCKS 256
#define AN_VERSION "2023-06-01"

enum an_kind { AN_TEXT, AN_TOOL, AN_THINKING, AN_REDACTED, AN_OTHER };

/* A content block of the answer being streamed. */
struct an_block {
	enum an_kind kind;
	bool open;
	char *id;
	char *name;
	struct buf input;	/* partial_json pieces; a thinking block's thinking */
	struct buf signature;	/* a thinking block's; a redacted block's data */
};

struct an_stream {
	const struct provider_sink *sink;
	struct turn *out;
	struct agent_error *err;
	struct an_block blocks[AN_MAX_BLOCKS];
	bool started;
	bool stopped;		/* message_stop */
	bool cut;		/* stop_reason "max_tokens" */
	char *bad_call;		/* a tool_use whose input is not an object: cut, or an error */
	size_t bad_bytes;
	cJSON *thinking;	/* the thinking blocks, in order, as they go back */
	long input_tokens;
	const char *retry;	/* an error event worth a retry (overloaded_error, ...) */
};

#define AN_THINKING_MAX (4 * 1024 * 1024)

/* Output budget by effort; the API requires one. */
static const struct {
	const char *effort;
	int max_tokens;
} an_budgets[] = {
	{ "low", 4096 }, { "medium", 8192 }, { "high", 16384 },
};

/*
 * The output tokens of known models (Anthropic's models overview), by the
 * longest matching name prefix, and whether they think (extended thinking).
 */
static const struct {
	const char *prefix;
	int max_output;
	bool thinks;
} an_models[] = {
	{ "claude-3-", 4096, false },
	{ "claude-3-5-", 8192, false },
	{ "claude-3-7-sonnet", 64000, true },
	{ "claude-haiku-4", 64000, true },
	{ "claude-sonnet-4", 64000, true },
	{ "claude-opus-4", 32000, true },
	{ "claude-opus-4-5", 64000, true },
	{ "claude-opus-4-6", 128000, true },
};

#define AN_OUTPUT_UNKNOWN 16384	/* what any current model allows */
#define AN_THINKING_BUDGET 16384	/* at effort high */

static int
an_model(const char *model)
{
	int best = -1;
	size_t len = 0;

	for (size_t i = 0; model != NULL && i < sizeof an_models / sizeof *an_models; i++) {
		size_t n = strlen(an_models[i].prefix);

		if (n > len && strncmp(model, an_models[i].prefix, n) == 0) {
			best = (int)i;
			len = n;
		}
	}
	return best;
}

int
an_output_limit(const char *model)
{
	int i = an_model(model);

	return i < 0 ? AN_OUTPUT_UNKNOWN : an_models[i].max_output;
}

int
an_max_tokens(const char *effort)
{
	for (size_t i = 0; i < sizeof an_budgets / sizeof *an_budgets; i++) {
		if (effort != NULL && strcmp(an_budgets[i].effort, effort) == 0)
			return an_budgets[i].max_tokens;
	}
	return 8192;
}

static cJSON *
an_text_block(const char *text)
{
	cJSON *b = cJSON_CreateObject();

	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	return b;
}

static cJSON *
an_assistant(const struct conv_message *m)
{
	cJSON *msg = cJSON_CreateObject();
	cJSON *content;

	cJSON_AddStringToObject(msg, "role", "assistant");
	content = cJSON_AddArrayToObject(msg, "content");
	/* Thinking blocks go back first, as they came, signatures included. */
	if (m->reasoning != NULL && strcmp(json_get_string(m->reasoning, "kind"), "anthropic") == 0) {
		const cJSON *b;

		cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m->reasoning, "blocks"))
			cJSON_AddItemToArray(content, cJSON_Duplicate(b, true));
	}
	/* The API refuses empty text blocks. */
	if (m->text[0] != '\0' || m->ncalls == 0)
		cJSON_AddItemToArray(content, an_text_block(m->text[0] ? m->text : "(no answer)"));
	for (size_t i = 0; i < m->ncalls; i++) {
		cJSON *b = cJSON_CreateObject();
		cJSON *input = json_parse(m->calls[i].arguments, strlen(m->calls[i].arguments));

		cJSON_AddStringToObject(b, "type", "tool_use");
		cJSON_AddStringToObject(b, "id", m->calls[i].id);
		cJSON_AddStringToObject(b, "name", m->calls[i].name);
		cJSON_AddItemToObject(b, "input", input ? input : cJSON_CreateObject());
		cJSON_AddItemToArray(content, b);
	}
	return msg;
}

static cJSON *
an_user(const char *text)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "role", "user");
	cJSON_AddStringToObject(msg, "content", text[0] ? text : "(empty)");
	return msg;
}

/* A prompt-caching breakpoint: the prefix up to this block is cached (5 minutes). */
static void
an_cache(cJSON *block)
{
	cJSON *cc = cJSON_CreateObject();

	cJSON_AddStringToObject(cc, "type", "ephemeral");
	cJSON_AddItemToObject(block, "cache_control", cc);
}

/*
 * The conversation's prefix is cached up to the last message's last block,
 * so that the next request (the same prefix and more) reads it from the cache.
 */
static void
an_cache_last(cJSON *msgs)
{
	cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");

	if (cJSON_IsString(content)) {
		cJSON *blocks = cJSON_CreateArray();

		cJSON_AddItemToArray(blocks, an_text_block(content->valuestring));
		cJSON_ReplaceItemInObjectCaseSensitive(last, "content", blocks);
		content = blocks;
	}
	if (cJSON_GetArraySize(content) > 0)
		an_cache(cJSON_GetArrayItem(content, cJSON_GetArraySize(content) - 1));
}

/* The image types Messages takes in a tool result; audio it does not take. */
static bool
an_image_type(const char *mime)
{
	static const char *const ok[] = { "image/jpeg", "image/png", "image/gif", "image/webp",
		NULL };

	for (const char *const *k = ok; mime != NULL && *k != NULL; k++)
		if (strcmp(mime, *k) == 0)
			return true;
	return false;
}

static bool
an_has_image(const cJSON *media)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, media)
		if (an_image_type(json_get_string(e, "mimeType")))
			return true;
	return false;
}

/* A tool result's content as blocks: its text, then its images. */
static cJSON *
an_result_blocks(const struct conv_message *m)
{
	cJSON *blocks = cJSON_CreateArray();
	const cJSON *e;

	cJSON_AddItemToArray(blocks, an_text_block(m->text[0] ? m->text : "(image)"));
	cJSON_ArrayForEach(e, m->media) {
		const char *mime = json_get_string(e, "mimeType");
		cJSON *img, *src;

		if (!an_image_type(mime))
			continue;
		img = cJSON_CreateObject();
		cJSON_AddStringToObject(img, "type", "image");
		src = cJSON_AddObjectToObject(img, "source");
		cJSON_AddStringToObject(src, "type", "base64");
		cJSON_AddStringToObject(src, "media_type", mime);
		cJSON_AddStringToObject(src, "data", json_get_string(e, "data"));
		cJSON_AddItemToArray(blocks, img);
	}
	return blocks;
}

static char *
an_request(const struct provider *p, const struct conversation *conv, const cJSON *tools)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *msgs, *defs, *t, *results = NULL;
	char *body;

	cJSON_AddStringToObject(req, "model", p->cfg->model);
	cJSON_AddNumberToObject(req, "max_tokens", an_output_limit(p->cfg->model));
	cJSON_AddTrueToObject(req, "stream");
	/* Extended thinking at effort high, on the models that think. */
	if (p->cfg->effort != NULL && strcmp(p->cfg->effort, "high") == 0 &&
	    an_model(p->cfg->model) >= 0 && an_models[an_model(p->cfg->model)].thinks) {
		cJSON *th = cJSON_AddObjectToObject(req, "thinking");

		cJSON_AddStringToObject(th, "type", "enabled");
		cJSON_AddNumberToObject(th, "budget_tokens", AN_THINKING_BUDGET);
	}
	/* Prompt caching: the system prompt, the tools and the conversation so far. */
	{
		cJSON *sys = cJSON_AddArrayToObject(req, "system"), *b = an_text_block(conv->system);

		an_cache(b);
		cJSON_AddItemToArray(sys, b);
	}
	msgs = cJSON_AddArrayToObject(req, "messages");
	for (size_t i = 0; i < conv->n; i++) {
		const struct conv_message *m = &conv->msgs[i];
		cJSON *b;

		/* A note after tool results travels with them: roles must alternate. */
		if (m->role == CONV_USER && results != NULL) {
			cJSON_AddItemToArray(results, an_text_block(m->text[0] ? m->text : "(empty)"));
			results = NULL;
			continue;
		}
		if (m->role != CONV_TOOL) {
			results = NULL;
			cJSON_AddItemToArray(msgs, m->role == CONV_USER ? an_user(m->text) :
			    an_assistant(m));
			continue;
		}
		/* Consecutive tool results travel in one user message. */
		if (results == NULL) {
			cJSON *msg = cJSON_CreateObject();

			cJSON_AddStringToObject(msg, "role", "user");
			results = cJSON_AddArrayToObject(msg, "content");
			cJSON_AddItemToArray(msgs, msg);
		}
		b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "tool_result");
		cJSON_AddStringToObject(b, "tool_use_id", m->call_id);
		if (an_has_image(m->media))
			cJSON_AddItemToObject(b, "content", an_result_blocks(m));
		else
			cJSON_AddStringToObject(b, "content", m->text);
		if (m->is_error)
			cJSON_AddTrueToObject(b, "is_error");
		cJSON_AddItemToArray(results, b);
	}
	defs = cJSON_GetArraySize(tools) > 0 ? cJSON_AddArrayToObject(req, "tools") : NULL;
	cJSON_ArrayForEach(t, tools) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "name", json_get_string(t, "name"));
		cJSON_AddStringToObject(d, "description", json_get_string(t, "description"));
		cJSON_AddItemToObject(d, "input_schema",
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "parameters"), true));
		cJSON_AddItemToArray(defs, d);
	}
	if (defs != NULL)
		an_cache(cJSON_GetArrayItem(defs, cJSON_GetArraySize(defs) - 1));
	an_cache_last(msgs);
	body = json_print(req);
	cJSON_Delete(req);
	return body;
}

static int
an_fail(struct an_stream *s, const char *what)
{
	agent_error_set(s->err, "invalid_provider_response", "%s", what);
	return 1;
}

/* The block named by ev.index, or NULL. */
static struct an_block *
an_block_at(struct an_stream *s, const cJSON *ev)
{
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(ev, "index");

	if (!cJSON_IsNumber(idx) || idx->valuedouble < 0 || idx->valuedouble >= AN_MAX_BLOCKS)
		return NULL;
	return &s->blocks[(int)idx->valuedouble];
}

static long
an_tokens(const cJSON *usage, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

/* The input counts of usage (message_start's, or message_delta's from proxies). */
static void
an_input_usage(struct an_stream *s, const cJSON *usage)
{
	s->out->input_tokens = an_tokens(usage, "input_tokens") +
	    an_tokens(usage, "cache_creation_input_tokens") +
	    an_tokens(usage, "cache_read_input_tokens");
	log_debug("input tokens: %ld, of which read from the cache %ld, written to it %ld",
	    s->out->input_tokens, an_tokens(usage, "cache_read_input_tokens"),
	    an_tokens(usage, "cache_creation_input_tokens"));
	s->out->cache_read_tokens = an_tokens(usage, "cache_read_input_tokens");
	s->out->cache_write_tokens = an_tokens(usage, "cache_creation_input_tokens");
}

static int
an_message_start(struct an_stream *s, const cJSON *ev)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(ev, "message"), "usage");

	s->started = true;
	an_input_usage(s, usage);
	s->out->output_tokens = an_tokens(usage, "output_tokens");
	return 0;
}

static int
an_block_start(struct an_stream *s, const cJSON *ev)
{
	struct an_block *b = an_block_at(s, ev);
	const cJSON *cb = cJSON_GetObjectItemCaseSensitive(ev, "content_block");
	const char *type = json_get_string(cb, "type");

	if (b == NULL || type == NULL || b->open || b->id != NULL)
		return an_fail(s, "the provider sent a malformed content_block_start");
	b->open = true;
	buf_init(&b->input, AGENT_ARGS_MAX);
	buf_init(&b->signature, AN_THINKING_MAX);
	b->kind = AN_OTHER;
	if (strcmp(type, "thinking") == 0) {
		b->kind = AN_THINKING;
		buf_appends(&b->input, json_get_string(cb, "thinking") ?
		    json_get_string(cb, "thinking") : "");
		buf_appends(&b->signature, json_get_string(cb, "signature") ?
		    json_get_string(cb, "signature") : "");
	} else if (strcmp(type, "redacted_thinking") == 0) {
		b->kind = AN_REDACTED;
		buf_appends(&b->signature, json_get_string(cb, "data") ?
		    json_get_string(cb, "data") : "");
	} else if (strcmp(type, "text") == 0) {
		b->kind = AN_TEXT;
		const char *text = json_get_string(cb, "text");

		if (text != NULL && text[0] != '\0') {
			buf_appends(&s->out->text, text);
			s->sink->text(s->sink->ud, text, strlen(text));
		}
	} else if (strcmp(type, "tool_use") == 0) {
		const char *id = json_get_string(cb, "id");
		const char *name = json_get_string(cb, "name");

		if (id == NULL || name == NULL || name[0] == '\0')
			return an_fail(s, "a tool_use block has no id or name");
		b->kind = AN_TOOL;
		b->id = agent_utf8_prefix(id, 256);
		b->name = agent_utf8_prefix(name, 256);
	}
	return 0;
}

static int
an_block_delta(struct an_stream *s, const cJSON *ev)
{
	struct an_block *b = an_block_at(s, ev);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "delta");
	const char *type = json_get_string(d, "type");
	const char *text;

	if (b == NULL || !b->open || type == NULL)
		return an_fail(s, "the provider sent a content_block_delta for no open block");
	if (strcmp(type, "text_delta") == 0 && (text = json_get_string(d, "text")) != NULL) {
		buf_appends(&s->out->text, text);
		s->sink->text(s->sink->ud, text, strlen(text));
	} else if (strcmp(type, "thinking_delta") == 0 &&
	    (text = json_get_string(d, "thinking")) != NULL && b->kind == AN_THINKING) {
		if (!buf_appends(&b->input, text))
			return an_fail(s, "a thinking block is larger than 1 MiB");
	} else if (strcmp(type, "signature_delta") == 0 &&
	    (text = json_get_string(d, "signature")) != NULL && b->kind == AN_THINKING) {
		if (!buf_appends(&b->signature, text))
			return an_fail(s, "a thinking block's signature is too large");
	} else if (strcmp(type, "input_json_delta") == 0) {
		text = json_get_string(d, "partial_json");
		if (b->kind != AN_TOOL || text == NULL)
			return an_fail(s, "an input_json_delta outside a tool_use block");
		if (!buf_appends(&b->input, text))
			return an_fail(s, "the arguments of a tool call are larger than 1 MiB");
	}
	return 0;
}

static int
an_block_stop(struct an_stream *s, const cJSON *ev)
{
	struct an_block *b = an_block_at(s, ev);
	char *args;

	if (b == NULL || !b->open)
		return an_fail(s, "the provider sent a content_block_stop for no open block");
	b->open = false;
	if (b->kind == AN_THINKING || b->kind == AN_REDACTED) {
		cJSON *o = cJSON_CreateObject();

		if (s->thinking == NULL)
			s->thinking = cJSON_CreateArray();
		if (b->kind == AN_THINKING) {
			cJSON_AddStringToObject(o, "type", "thinking");
			cJSON_AddStringToObject(o, "thinking", b->input.data ? b->input.data : "");
			cJSON_AddStringToObject(o, "signature", b->signature.data ?
			    b->signature.data : "");
		} else {
			cJSON_AddStringToObject(o, "type", "redacted_thinking");
			cJSON_AddStringToObject(o, "data", b->signature.data ? b->signature.data : "");
		}
		cJSON_AddItemToArray(s->thinking, o);
		return 0;
	}
	if (b->kind != AN_TOOL)
		return 0;
	if (s->out->ncalls >= TURN_MAX_CALLS)
		return an_fail(s, "the model made too many tool calls in one turn");
	args = provider_call_args(b->input.data ? b->input.data : "", b->input.len);
	if (args == NULL) {
		/* Cut by the output limit (message_delta says so next), or a bad answer. */
		if (s->bad_call == NULL) {
			s->bad_call = xstrdup(b->name);
			s->bad_bytes = b->input.len;
		}
		return 0;
	}
	turn_add_call(s->out, b->id, b->name, args);
	free(args);
	return 0;
}

static int
an_message_delta(struct an_stream *s, const cJSON *ev)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(ev, "usage");
	const char *stop = json_get_string(cJSON_GetObjectItemCaseSensitive(ev, "delta"),
	    "stop_reason");

	if (stop != NULL && strcmp(stop, "max_tokens") == 0)
		s->cut = true;
	if (cJSON_IsObject(usage) && cJSON_GetObjectItemCaseSensitive(usage, "output_tokens"))
		s->out->output_tokens = an_tokens(usage, "output_tokens");
	/* Proxies (LiteLLM, Bedrock's, Open WebUI) send the input counts here only. */
	if (cJSON_IsObject(usage) && an_tokens(usage, "input_tokens") +
	    an_tokens(usage, "cache_read_input_tokens") +
	    an_tokens(usage, "cache_creation_input_tokens") > 0)
		an_input_usage(s, usage);
	return 0;
}

static int
an_message_stop(struct an_stream *s, const cJSON *ev)
{
	s->stopped = true;
	return 0;
}

static int
an_ping(struct an_stream *s, const cJSON *ev)
{
	return 0;
}

static int
an_error(struct an_stream *s, const cJSON *ev)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
	const char *m = json_get_string(e, "message");
	const char *type = json_get_string(e, "type");

	const char *reason = provider_retry_reason(type, NULL);

	agent_error_set(s->err, "provider_error", "the provider reported %s: %.1000s",
	    type ? type : "an error", m ? m : "no details");
	if (reason != NULL)
		s->retry = reason;
	return 1;
}

static const struct {
	const char *type;
	int (*handle)(struct an_stream *s, const cJSON *ev);
} an_events[] = {
	{ "message_start", an_message_start },
	{ "content_block_start", an_block_start },
	{ "content_block_delta", an_block_delta },
	{ "content_block_stop", an_block_stop },
	{ "message_delta", an_message_delta },
	{ "message_stop", an_message_stop },
	{ "ping", an_ping },
	{ "error", an_error },
};

static int
an_event(const struct sse_event *ev, void *ud)
{
	struct an_stream *s = ud;
	cJSON *doc = json_parse(ev->data, ev->data_len);
	const char *type = json_get_string(doc, "type");
	int rc = 0;

	if (!cJSON_IsObject(doc) || type == NULL) {
		cJSON_Delete(doc);
		return an_fail(s, "the provider sent a stream event that is not a JSON object "
		    "with a type");
	}
	for (size_t i = 0; i < sizeof an_events / sizeof *an_events; i++) {
		if (strcmp(an_events[i].type, type) == 0) {
			if (!s->started && strcmp(type, "message_start") != 0 &&
			    strcmp(type, "ping") != 0 && strcmp(type, "error") != 0)
				rc = an_fail(s, "the stream did not begin with message_start");
			else
				rc = an_events[i].handle(s, doc);
			break;
		}
	}
	/* Unknown event types are skipped, as the API asks of clients. */
	cJSON_Delete(doc);
	return rc;
}

static int
an_turn(struct provider *p, const struct conversation *conv, const cJSON *tools,
    const struct provider_sink *sink, struct turn *out, struct agent_error *err)
{
	struct an_stream *s = xcalloc(1, sizeof *s);
	char *url = provider_url(p->cfg->base_url, "/v1/messages");
	char *body = an_request(p, conv, tools);
	char *key = p->cfg->api_key ? xasprintf("x-api-key: %s", p->cfg->api_key) : NULL;
	const char *headers[] = { "Content-Type: application/json", "Accept: text/event-stream",
	    "anthropic-version: " AN_VERSION, key, NULL };
	int rc;

	s->sink = sink;
	s->out = out;
	s->err = err;
	rc = provider_post(p, url, headers, body, an_event, s, err);
	if (rc == AGENT_FAILED && s->retry != NULL)
		provider_retry_set(p, s->retry, -1);
	if (rc == AGENT_OK && !s->stopped) {
		/* A server that closes cleanly mid-answer (no chunked end to miss) broke off. */
		agent_error_set(err, "invalid_provider_response",
		    "the provider's stream ended before message_stop");
		provider_retry_set(p, "connection", -1);
		rc = AGENT_FAILED;
	}
	if (rc == AGENT_OK && s->cut) {
		out->cut = true;
		for (int i = 0; i < AN_MAX_BLOCKS && s->bad_call == NULL; i++)
			if (s->blocks[i].open && s->blocks[i].kind == AN_TOOL) {
				s->bad_call = xstrdup(s->blocks[i].name);
				s->bad_bytes = s->blocks[i].input.len;
			}
		if (s->bad_call != NULL)
			provider_cut_call(out, s->bad_call, s->bad_bytes);
	} else if (rc == AGENT_OK && s->bad_call != NULL) {
		agent_error_set(err, "invalid_provider_response",
		    "the arguments of the %s call are not a JSON object", s->bad_call);
		rc = AGENT_FAILED;
	}
	if (rc == AGENT_OK && s->thinking != NULL) {
		out->reasoning = cJSON_CreateObject();
		cJSON_AddStringToObject(out->reasoning, "kind", "anthropic");
		cJSON_AddItemToObject(out->reasoning, "blocks", s->thinking);
		s->thinking = NULL;
	}
	for (int i = 0; i < AN_MAX_BLOCKS; i++) {
		free(s->blocks[i].id);
		free(s->blocks[i].name);
		buf_free(&s->blocks[i].input);
		buf_free(&s->blocks[i].signature);
	}
	cJSON_Delete(s->thinking);
	free(s->bad_call);
	free(s);
	if (key != NULL) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(body);
	free(url);
	return rc;
}

const struct provider_ops provider_anthropic_ops = {
	.kind = "anthropic",
	.turn = an_turn,
};
