#include <stdio.h>
#include <strings.h>
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

/* Ollama's /api/show: num_ctx in parameters, else <arch>.context_length capped. */
static long
context_ollama(const cJSON *doc, bool *set)
{
	const char *params = json_get_string(doc, "parameters");
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(doc, "model_info"), *v;
	const char *at;
	long n = 0;

	*set = false;
	if (params != NULL && (at = strstr(params, "num_ctx")) != NULL) {
		n = strtol(at + 7, NULL, 10);
		if (n >= 1024 && n <= 10000000) {
			*set = true;
			return n;
		}
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

/* Whether Ollama's name is model's: "llama3.1" is "llama3.1:latest". */
static bool
context_same_model(const char *name, const char *model)
{
	size_t n = strlen(model);

	if (name == NULL)
		return false;
	if (strcmp(name, model) == 0)
		return true;
	return strchr(model, ':') == NULL && strncmp(name, model, n) == 0 &&
	    strcmp(name + n, ":latest") == 0;
}

/* base_url without trailing slashes (its length), and without a last "/v1" (root_len). */
static void
context_roots(const char *base_url, size_t *len, size_t *root_len)
{
	size_t n = base_url ? strlen(base_url) : 0;

	while (n > 0 && base_url[n - 1] == '/')
		n--;
	*len = n;
	*root_len = n >= 3 && strncmp(base_url + n - 3, "/v1", 3) == 0 ? n - 3 : n;
}

/*
 * Whether the base URL's host is this machine or a private network, where
 * the servers that run models locally (Ollama, llama.cpp, LM Studio) are;
 * their own endpoints are asked only there.
 */
static bool
context_local(const char *base_url)
{
	CURLU *u = curl_url();
	char *host = NULL;
	bool local = false;
	unsigned a, b;

	if (u != NULL && curl_url_set(u, CURLUPART_URL, base_url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		local = strcasecmp(host, "localhost") == 0 || strchr(host, '.') == NULL ||
		    (strlen(host) > 6 && strcasecmp(host + strlen(host) - 6, ".local") == 0) ||
		    strncmp(host, "127.", 4) == 0 || strncmp(host, "10.", 3) == 0 ||
		    strncmp(host, "192.168.", 8) == 0 || strncmp(host, "169.254.", 8) == 0 ||
		    strcmp(host, "[::1]") == 0 || strncasecmp(host, "[fc", 3) == 0 ||
		    strncasecmp(host, "[fd", 3) == 0 ||
		    (sscanf(host, "%u.%u.", &a, &b) == 2 && a == 172 && b >= 16 && b <= 31);
	}
	curl_free(host);
	curl_url_cleanup(u);
	return local;
}

long
context_ollama_loaded(struct host *h, const struct agent_config *cfg)
{
	size_t n, root;
	char *url;
	cJSON *doc;
	const cJSON *m;
	long window = 0;

	context_roots(cfg->base_url, &n, &root);
	url = xasprintf("%.*s/api/ps", (int)root, cfg->base_url);
	doc = context_ask(h, "GET", url, NULL, NULL);
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models")) {
		if (context_same_model(json_get_string(m, "name"), cfg->model) ||
		    context_same_model(json_get_string(m, "model"), cfg->model))
			window = context_positive(cJSON_GetObjectItemCaseSensitive(m,
			    "context_length"));
	}
	cJSON_Delete(doc);
	free(url);
	return window;
}

/* Ollama: the loaded model's context length (/api/ps), else what the model sets (/api/show). */
static void
context_discover_ollama(struct host *h, const struct agent_config *cfg, size_t root,
    struct context_found *found)
{
	const char *json[] = { "Content-Type: application/json", NULL };
	char *url, *text;
	cJSON *doc, *body;
	bool set;

	if ((found->window = context_ollama_loaded(h, cfg)) > 0)
		return;
	url = xasprintf("%.*s/api/show", (int)root, cfg->base_url);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "model", cfg->model);
	text = json_print(body);
	cJSON_Delete(body);
	doc = context_ask(h, NULL, url, json, text);
	free(text);
	free(url);
	if (doc != NULL) {
		found->window = context_ollama(doc, &set);
		/* Ollama sizes the context when it loads the model: ask again after a turn. */
		found->ask_loaded = !set;
		cJSON_Delete(doc);
	}
}

/*
 * The OpenAI kind: {base}/models, then a local server's own endpoints
 * (Ollama's only of a server that says it is Ollama).
 */
static void
context_discover_openai(struct host *h, const struct agent_config *cfg, const char *auth,
    struct context_found *found)
{
	const char *headers[] = { auth, NULL };
	size_t n, root;
	char *url, *esc;
	cJSON *doc;
	const cJSON *m;

	context_roots(cfg->base_url, &n, &root);
	/* vLLM: {"data":[{"id", "max_model_len"}]}. */
	url = xasprintf("%.*s/models", (int)n, cfg->base_url);
	doc = context_ask(h, "GET", url, headers, NULL);
	free(url);
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "data")) {
		if (context_same_model(json_get_string(m, "id"), cfg->model))
			found->window = context_positive(cJSON_GetObjectItemCaseSensitive(m,
			    "max_model_len"));
	}
	cJSON_Delete(doc);
	if (found->window > 0 || !context_local(cfg->base_url))
		return;
	if (context_is_ollama(h, cfg->base_url, root)) {
		context_discover_ollama(h, cfg, root, found);
		return;
	}
	/* llama.cpp: GET /props, default_generation_settings.n_ctx. */
	url = xasprintf("%.*s/props", (int)root, cfg->base_url);
	doc = context_ask(h, "GET", url, headers, NULL);
	free(url);
	found->window = context_positive(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(doc, "default_generation_settings"), "n_ctx"));
	cJSON_Delete(doc);
	if (found->window > 0)
		return;
	/* LM Studio: GET /api/v0/models/{model}, the loaded context, else the model's. */
	esc = curl_easy_escape(NULL, cfg->model, 0);
	url = xasprintf("%.*s/api/v0/models/%s", (int)root, cfg->base_url, esc ? esc : "");
	curl_free(esc);
	doc = context_ask(h, "GET", url, headers, NULL);
	free(url);
	found->window = context_positive(cJSON_GetObjectItemCaseSensitive(doc,
	    "loaded_context_length"));
	if (found->window == 0)
		found->window = context_positive(cJSON_GetObjectItemCaseSensitive(doc,
		    "max_context_length"));
	cJSON_Delete(doc);
}

void
context_discover(struct host *h, const struct agent_config *cfg, struct context_found *found)
{
	size_t n, root;
	char *key = NULL;

	memset(found, 0, sizeof *found);
	context_roots(cfg->base_url, &n, &root);
	if (strcmp(cfg->provider_kind, "anthropic") == 0) {
		char *esc = curl_easy_escape(NULL, cfg->model, 0);
		const char *headers[] = { "anthropic-version: 2023-06-01", NULL, NULL };
		char *url = xasprintf("%.*s/v1/models/%s", (int)n, cfg->base_url, esc ? esc : "");
		cJSON *doc;

		if (cfg->api_key != NULL)
			headers[1] = key = xasprintf("x-api-key: %s", cfg->api_key);
		doc = context_ask(h, "GET", url, headers, NULL);
		found->window = context_positive(cJSON_GetObjectItemCaseSensitive(doc,
		    "max_input_tokens"));
		cJSON_Delete(doc);
		curl_free(esc);
		free(url);
	} else if (strcmp(cfg->provider_kind, "openai") == 0 && n > 0) {
		if (cfg->api_key != NULL)
			key = xasprintf("Authorization: Bearer %s", cfg->api_key);
		context_discover_openai(h, cfg, key, found);
	}
	if (key != NULL) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	if (found->window > 0)
		log_info("the provider gives %s a context window of %ld tokens", cfg->model,
		    found->window);
}

void
context_set_window(struct context *cx, long window, const char *from)
{
	cx->window = window;
	cx->window_from = from;
	cx->reserve = cx->answer > window / 4 ? window / 4 : cx->answer;
}

void
context_init(struct context *cx, const struct agent_config *cfg, size_t tools_bytes,
    const struct context_found *found)
{
	long window = CONTEXT_DEFAULT_WINDOW;
	const char *from = "default";

	memset(cx, 0, sizeof *cx);
	cx->tools_bytes = tools_bytes;
	cx->per_byte = 1.0 / CONTEXT_BYTES_PER_TOKEN;
	if (strcmp(cfg->provider_kind, "replay") == 0)
		return;
	cx->answer = strcmp(cfg->provider_kind, "anthropic") == 0 ? an_max_tokens(cfg->effort) :
	    4096;
	if (cfg->context_window > 0) {
		window = cfg->context_window;
		from = "settings";
	} else if (found != NULL && found->window > 0) {
		window = found->window;
		from = "provider";
		cx->ask_loaded = found->ask_loaded;
	} else {
		for (size_t i = 0; i < sizeof context_known / sizeof *context_known; i++) {
			if (strncmp(cfg->model, context_known[i].prefix,
			    strlen(context_known[i].prefix)) == 0)
				window = context_known[i].window;
		}
	}
	context_set_window(cx, window, from);
}

size_t
context_result_max(const struct context *cx, size_t ncalls, size_t cap)
{
	double share;
	size_t max;

	if (cx->window <= 0)
		return cap;
	share = (double)(cx->window / 4) / cx->per_byte / (double)(ncalls > 0 ? ncalls : 1);
	max = share > (double)cap ? cap : (size_t)share;
	if (max < CONTEXT_RESULT_MIN)
		max = CONTEXT_RESULT_MIN;
	return max < cap ? max : cap;
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
