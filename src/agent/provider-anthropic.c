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

/* A content block of the answer being streamed. */
struct an_block {
	bool is_tool;
	bool open;
	char *id;
	char *name;
	struct buf input;	/* partial_json pieces */
};

struct an_stream {
	const struct provider_sink *sink;
	struct turn *out;
	struct agent_error *err;
	struct an_block blocks[AN_MAX_BLOCKS];
	bool started;
	bool stopped;		/* message_stop */
	long input_tokens;
	const char *retry;	/* an error event worth a retry (overloaded_error, ...) */
};

/* Output budget by effort; the API requires one. */
static const struct {
	const char *effort;
	int max_tokens;
} an_budgets[] = {
	{ "low", 4096 }, { "medium", 8192 }, { "high", 16384 },
};

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
	cJSON_AddNumberToObject(req, "max_tokens", an_max_tokens(p->cfg->effort));
	cJSON_AddTrueToObject(req, "stream");
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

static int
an_message_start(struct an_stream *s, const cJSON *ev)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(ev, "message"), "usage");

	s->started = true;
	s->out->input_tokens = an_tokens(usage, "input_tokens") +
	    an_tokens(usage, "cache_creation_input_tokens") +
	    an_tokens(usage, "cache_read_input_tokens");
	log_debug("input tokens: %ld, of which read from the cache %ld, written to it %ld",
	    s->out->input_tokens, an_tokens(usage, "cache_read_input_tokens"),
	    an_tokens(usage, "cache_creation_input_tokens"));
	s->out->cache_read_tokens = an_tokens(usage, "cache_read_input_tokens");
	s->out->cache_write_tokens = an_tokens(usage, "cache_creation_input_tokens");
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
	if (strcmp(type, "text") == 0) {
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
		b->is_tool = true;
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
	} else if (strcmp(type, "input_json_delta") == 0) {
		text = json_get_string(d, "partial_json");
		if (!b->is_tool || text == NULL)
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
	if (!b->is_tool)
		return 0;
	if (s->out->ncalls >= TURN_MAX_CALLS)
		return an_fail(s, "the model made too many tool calls in one turn");
	args = provider_call_args(b->input.data ? b->input.data : "", b->input.len);
	if (args == NULL) {
		agent_error_set(s->err, "invalid_provider_response",
		    "the arguments of the %s call are not a JSON object", b->name);
		return 1;
	}
	turn_add_call(s->out, b->id, b->name, args);
	free(args);
	return 0;
}

static int
an_message_delta(struct an_stream *s, const cJSON *ev)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(ev, "usage");

	if (cJSON_IsObject(usage) && cJSON_GetObjectItemCaseSensitive(usage, "output_tokens"))
		s->out->output_tokens = an_tokens(usage, "output_tokens");
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
		agent_error_set(err, "invalid_provider_response",
		    "the provider's stream ended before message_stop");
		rc = AGENT_FAILED;
	}
	for (int i = 0; i < AN_MAX_BLOCKS; i++) {
		free(s->blocks[i].id);
		free(s->blocks[i].name);
		buf_free(&s->blocks[i].input);
	}
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
