#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "buf.h"
#include "context.h"
#include "httpc.h"
#include "json.h"
#include "log.h"
#include "provider.h"
#include "xalloc.h"

#define CONTEXT_DEFAULT_WINDOW 32768	/* an unknown model: conservative */
#define CONTEXT_BYTES_PER_TOKEN 3.0	/* before any usage: rather more tokens than fewer */
#define CONTEXT_RESULT_MAX 2048		/* of one tool result in a transcript */
#define CONTEXT_ARGS_MAX 512		/* of one call's arguments in a transcript */
#define CONTEXT_ASK_MS 5000		/* the provider's answer about its model */
#define CONTEXT_OLLAMA_NUM_CTX 4096	/* Ollama's num_ctx when the model sets none */
#define CONTEXT_INFO_MAX (1024 * 1024)

/* Windows of well-known model families, by name prefix (input tokens). */
static const struct {
	const char *prefix;
	long window;
} context_known[] = {
	{ "claude-", 200000 },
	{ "gpt-4.1", 1000000 },
	{ "gpt-4o", 128000 },
	{ "gpt-5", 272000 },
	{ "o3", 200000 },
	{ "o4", 200000 },
};

static int
context_no_stream(const char *data, size_t len, void *ud)
{
	return 1;
}

/* A JSON answer of the provider (status 200), or NULL. */
static cJSON *
context_ask(struct host *h, const char *method, const char *url, const char *const *headers,
    const char *body)
{
	struct httpc_request req = {
		.method = method, .timeout_ms = CONTEXT_ASK_MS, .url = url, .headers = headers,
		.body = body ? body : "", .body_len = body ? strlen(body) : 0,
		.max_body = CONTEXT_INFO_MAX, .on_data = context_no_stream,
	};
	struct httpc_response resp;
	cJSON *doc = NULL;

	httpc_response_init(&resp);
	resp.body.max = CONTEXT_INFO_MAX;
	if (httpc_post_stream(h, &req, &resp) == HTTPC_OK && resp.status == 200 &&
	    resp.body.len < CONTEXT_INFO_MAX)
		doc = json_parse(resp.body.data ? resp.body.data : "", resp.body.len);
	else
		log_debug("%s %s: HTTP %ld %s", method ? method : "POST", url, resp.status, resp.error);
	httpc_response_free(&resp);
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

static long
context_positive(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 1024 && v->valuedouble <= 1e7 ?
	    (long)v->valuedouble : 0;
}

/* Ollama's answer: num_ctx in parameters, else <arch>.context_length capped. */
static long
context_ollama(const cJSON *doc)
{
	const char *params = json_get_string(doc, "parameters");
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(doc, "model_info"), *v;
	const char *at;
	long n = 0;

	if (params != NULL && (at = strstr(params, "num_ctx")) != NULL) {
		n = strtol(at + 7, NULL, 10);
		if (n >= 1024 && n <= 10000000)
			return n;
	}
	cJSON_ArrayForEach(v, info) {
		size_t len = strlen(v->string);

		if (len > 15 && strcmp(v->string + len - 15, ".context_length") == 0)
			n = context_positive(v);
	}
	return n > CONTEXT_OLLAMA_NUM_CTX ? CONTEXT_OLLAMA_NUM_CTX : n;
}

/*
 * Whether the server at root (len bytes of it) is Ollama: its GET /api/version
 * answers {"version": "0.x.y"}; other servers behind a /v1 URL are not sent
 * Ollama's questions.
 */
static bool
context_is_ollama(struct host *h, const char *root, size_t len)
{
	char *url = xasprintf("%.*s/api/version", (int)len, root);
	cJSON *doc = context_ask(h, "GET", url, NULL, NULL);
	bool yes = json_get_string(doc, "version") != NULL;

	cJSON_Delete(doc);
	free(url);
	return yes;
}

long
context_discover(struct host *h, const struct agent_config *cfg)
{
	size_t n = cfg->base_url ? strlen(cfg->base_url) : 0;
	cJSON *doc = NULL, *body;
	long window = 0;
	char *url, *key = NULL, *text;

	while (n > 0 && cfg->base_url[n - 1] == '/')
		n--;
	if (strcmp(cfg->provider_kind, "anthropic") == 0) {
		char *esc = curl_easy_escape(NULL, cfg->model, 0);
		const char *headers[] = { "anthropic-version: 2023-06-01", NULL, NULL };

		url = xasprintf("%.*s/v1/models/%s", (int)n, cfg->base_url, esc ? esc : "");
		if (cfg->api_key != NULL)
			headers[1] = key = xasprintf("x-api-key: %s", cfg->api_key);
		doc = context_ask(h, "GET", url, headers, NULL);
		window = context_positive(cJSON_GetObjectItemCaseSensitive(doc, "max_input_tokens"));
		curl_free(esc);
	} else if (strcmp(cfg->provider_kind, "openai") == 0 && n >= 3 &&
	    strncmp(cfg->base_url + n - 3, "/v1", 3) == 0 &&
	    context_is_ollama(h, cfg->base_url, n - 3)) {
		const char *headers[] = { "Content-Type: application/json", NULL };

		url = xasprintf("%.*s/api/show", (int)n - 3, cfg->base_url);
		body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "model", cfg->model);
		text = json_print(body);
		cJSON_Delete(body);
		doc = context_ask(h, NULL, url, headers, text);
		free(text);
		window = doc ? context_ollama(doc) : 0;
	} else {
		return 0;
	}
	if (key != NULL) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	if (window > 0)
		log_info("the provider gives %s a context window of %ld tokens", cfg->model, window);
	cJSON_Delete(doc);
	free(url);
	return window;
}

void
context_init(struct context *cx, const struct agent_config *cfg, size_t tools_bytes,
    long discovered)
{
	memset(cx, 0, sizeof *cx);
	cx->tools_bytes = tools_bytes;
	cx->per_byte = 1.0 / CONTEXT_BYTES_PER_TOKEN;
	if (strcmp(cfg->provider_kind, "replay") == 0)
		return;
	if (cfg->context_window > 0) {
		cx->window = cfg->context_window;
		cx->window_from = "settings";
	} else if (discovered > 0) {
		cx->window = discovered;
		cx->window_from = "provider";
	} else {
		cx->window = CONTEXT_DEFAULT_WINDOW;
		cx->window_from = "default";
		for (size_t i = 0; i < sizeof context_known / sizeof *context_known; i++) {
			if (strncmp(cfg->model, context_known[i].prefix,
			    strlen(context_known[i].prefix)) == 0)
				cx->window = context_known[i].window;
		}
	}
	cx->reserve = strcmp(cfg->provider_kind, "anthropic") == 0 ? an_max_tokens(cfg->effort) :
	    4096;
	if (cx->reserve > cx->window / 4)
		cx->reserve = cx->window / 4;
}

long
context_estimate(const struct context *cx, const struct conversation *conv)
{
	/* Each message costs a few tokens of framing besides its text. */
	return (long)((double)(conv->bytes + cx->tools_bytes) * cx->per_byte) +
	    4 * (long)conv->n;
}

bool
context_full(const struct context *cx, const struct conversation *conv)
{
	return cx->window > 0 && context_estimate(cx, conv) + cx->reserve > cx->window;
}

void
context_learn(struct context *cx, const struct conversation *conv, long input_tokens)
{
	double per_byte;

	if (input_tokens <= 0 || conv->bytes + cx->tools_bytes == 0)
		return;
	per_byte = (double)input_tokens / (double)(conv->bytes + cx->tools_bytes);
	/* A provider that counts cached tokens apart, or a strange count, is not believed. */
	if (per_byte >= 0.05 && per_byte <= 1.5)
		cx->per_byte = per_byte;
}

static size_t
context_message_bytes(const struct conv_message *m)
{
	size_t n = strlen(m->text);

	for (size_t i = 0; i < m->ncalls; i++)
		n += strlen(m->calls[i].name) + strlen(m->calls[i].arguments);
	return n;
}

size_t
context_recent_start(const struct context *cx, const struct conversation *conv, long budget)
{
	double bytes = 0, room = (double)budget / cx->per_byte;
	size_t start = 0;

	for (size_t i = conv->n; i > 0; i--) {
		const struct conv_message *m = &conv->msgs[i - 1];

		bytes += (double)context_message_bytes(m);
		if (m->role != CONV_ASSISTANT)
			continue;
		if (start != 0 && bytes > room)
			break;
		start = i - 1;
	}
	return start;
}

static void
context_cut_append(struct buf *b, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max) {
		buf_appends(b, s);
		return;
	}
	n = agent_utf8_cut(s, max);
	buf_append(b, s, n);
	buf_printf(b, "… [%zu bytes more]", strlen(s) - n);
}

char *
context_transcript(const struct conversation *conv, size_t end, size_t skip, size_t max)
{
	struct buf b;
	char *out;

	buf_init(&b, 0);
	for (size_t i = 0; i < end && i < conv->n; i++) {
		const struct conv_message *m = &conv->msgs[i];

		if (i == skip)
			continue;
		switch (m->role) {
		case CONV_USER:
			buf_appends(&b, "User: ");
			buf_appends(&b, m->text);
			break;
		case CONV_ASSISTANT:
			buf_appends(&b, "Assistant: ");
			buf_appends(&b, m->text);
			for (size_t k = 0; k < m->ncalls; k++) {
				buf_printf(&b, "\n[called %s with ", m->calls[k].name);
				context_cut_append(&b, m->calls[k].arguments, CONTEXT_ARGS_MAX);
				buf_appends(&b, "]");
			}
			break;
		case CONV_TOOL:
			buf_printf(&b, "Result of %s%s: ", m->tool_name, m->is_error ? " (failed)" : "");
			context_cut_append(&b, m->text, CONTEXT_RESULT_MAX);
			break;
		}
		buf_appends(&b, "\n\n");
	}
	if (b.len <= max)
		return buf_steal(&b);
	/* The start (the task's first steps) and the end (the latest) matter most. */
	{
		size_t head = agent_utf8_cut(b.data, max / 3);
		size_t tail = b.len - (max - head);

		while (tail < b.len && ((unsigned char)b.data[tail] & 0xc0) == 0x80)
			tail++;
		out = xasprintf("%.*s\n[… %zu bytes of the middle left out …]\n%s", (int)head,
		    b.data, tail - head, b.data + tail);
	}
	buf_free(&b);
	return out;
}
