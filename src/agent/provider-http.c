/* What the OpenAI and Anthropic providers share: the streamed POST and its errors. */
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "httpc.h"
#include "json.h"
#include "provider.h"
#include "redact.h"
#include "xalloc.h"

struct provider_feed {
	struct sse_parser *sse;
	struct agent_error *err;
};

static int
provider_on_data(const char *data, size_t len, void *ud)
{
	struct provider_feed *f = ud;
	int rc = sse_feed(f->sse, data, len);

	if (rc == SSE_TOO_BIG)
		agent_error_set(f->err, "invalid_provider_response",
		    "the provider sent a stream event larger than 1 MiB");
	return rc != SSE_OK;
}

char *
provider_url(const char *base_url, const char *path)
{
	size_t n = strlen(base_url);

	while (n > 0 && base_url[n - 1] == '/')
		n--;
	return xasprintf("%.*s%s", (int)n, base_url, path);
}

char *
provider_call_args(const char *text, size_t len)
{
	cJSON *v;
	char *out;
	size_t i = 0;

	while (i < len && strchr(" \t\r\n", text[i]) != NULL)
		i++;
	if (i == len)
		return xstrdup("{}");
	v = json_parse(text, len);
	if (!cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return NULL;
	}
	out = json_print(v);
	cJSON_Delete(v);
	return out;
}

/* The provider's own words from an error body, else a cleaned excerpt. */
static char *
provider_error_text(const struct httpc_response *resp)
{
	const char *body = resp->body.data ? resp->body.data : "";
	cJSON *doc = json_parse(body, resp->body.len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const char *m = cJSON_IsString(e) ? e->valuestring : json_get_string(e, "message");
	char *out;

	if (m == NULL)
		m = json_get_string(doc, "message");
	if (m != NULL)
		out = agent_utf8_prefix(m, 1000);
	else if (resp->body.len > 0 && json_utf8_valid(body, resp->body.len)) {
		out = agent_utf8_prefix(body, 300);
		for (char *c = out; *c; c++) {
			if ((unsigned char)*c < 0x20)
				*c = ' ';
		}
	} else
		out = xstrdup("no details");
	cJSON_Delete(doc);
	return out;
}

void
provider_retry_set(struct provider *p, const char *reason, long after_ms)
{
	p->retry.retryable = true;
	p->retry.reason = reason;
	p->retry.after_ms = after_ms;
}

const char *
provider_retry_reason(const char *type, const char *message)
{
	static const struct {
		const char *word;
		const char *reason;
	} words[] = {
		{ "overloaded", "overloaded" },
		{ "rate_limit", "rate_limited" },
		{ "rate limit", "rate_limited" },
		{ "api_error", "server_error" },
		{ "server_error", "server_error" },
		{ "internal server error", "server_error" },
	};

	for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
		if ((type != NULL && strcasestr(type, words[i].word) != NULL) ||
		    (message != NULL && strcasestr(message, words[i].word) != NULL))
			return words[i].reason;
	}
	return NULL;
}

/* The statuses waiting can fix; NULL for the others (400, 401, 403, 404, ...). */
static const char *
provider_status_reason(long status)
{
	switch (status) {
	case 408:
		return "timeout";
	case 409:
		return "conflict";
	case 429:
		return "rate_limited";
	case 529:
		return "overloaded";
	case 500: case 502: case 503: case 504:
		return "server_error";
	default:
		return NULL;
	}
}

/*
 * What OpenAI, Anthropic, Ollama, llama.cpp, vLLM and LM Studio say when the
 * prompt is too long.
 */
static bool
provider_context_exceeded(long status, const struct httpc_response *resp)
{
	static const char *const says[] = { "context_length_exceeded", "maximum context length",
		"prompt is too long", "context window", "exceeds the context", "too many tokens",
		"context length", "exceed_context_size_error", "exceeds the available context size",
		"larger than the max context size", NULL };
	const char *body = resp->body.data ? resp->body.data : "";

	if (status != 400 && status != 413 && status != 422)
		return false;
	for (const char *const *s = says; *s; s++)
		if (strcasestr(body, *s) != NULL)
			return true;
	return false;
}

/* OpenAI's 429 insufficient_quota: the account, not the rate. */
static bool
provider_no_quota(const struct httpc_response *resp)
{
	cJSON *doc = json_parse(resp->body.data ? resp->body.data : "", resp->body.len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const char *type = json_get_string(e, "type"), *code = json_get_string(e, "code");
	bool none = (type != NULL && strcmp(type, "insufficient_quota") == 0) ||
	    (code != NULL && strcmp(code, "insufficient_quota") == 0);

	cJSON_Delete(doc);
	return none;
}

/* A token count in a refusal: from 1,024 to 10,000,000, else 0. */
static long
provider_tokens(double v)
{
	return v >= 1024 && v <= 1e7 ? (long)v : 0;
}

/*
 * The number after the first of the phrases in text (up to a few characters
 * of punctuation and spaces), or 0.
 */
static long
provider_number_after(const char *text, const char *const *phrases)
{
	for (const char *const *ph = phrases; *ph; ph++) {
		const char *at = strcasestr(text, *ph);

		if (at != NULL) {
			at += strlen(*ph);
			at += strspn(at, " (:");
			if (*at >= '0' && *at <= '9')
				return provider_tokens(strtod(at, NULL));
		}
	}
	return 0;
}

/*
 * The window a refusal states, and the prompt's tokens: llama.cpp's error
 * object carries n_ctx and n_prompt_tokens; vLLM, OpenAI, LM Studio, llama.cpp
 * and Anthropic say the window in their message.
 */
static void
provider_context_limit(struct provider *p, const struct httpc_response *resp)
{
	static const char *const window_says[] = { "available context size",
		"maximum context length is", "context length of only", "max context size",
		"tokens >", NULL };
	const char *body = resp->body.data ? resp->body.data : "";
	cJSON *doc = json_parse(body, resp->body.len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const cJSON *n_ctx = cJSON_GetObjectItemCaseSensitive(e, "n_ctx");
	const cJSON *n_prompt = cJSON_GetObjectItemCaseSensitive(e, "n_prompt_tokens");

	if (cJSON_IsNumber(n_ctx))
		p->retry.stated_window = provider_tokens(n_ctx->valuedouble);
	if (cJSON_IsNumber(n_prompt))
		p->retry.stated_prompt = provider_tokens(n_prompt->valuedouble);
	if (p->retry.stated_window == 0)
		p->retry.stated_window = provider_number_after(body, window_says);
	cJSON_Delete(doc);
}

int
provider_post(struct provider *p, const char *url, const char *const *headers,
    const char *body, sse_event_fn on_event, void *ud, struct agent_error *err)
{
	struct provider_feed feed = { .sse = sse_new(AGENT_FRAME_MAX, on_event, ud), .err = err };
	struct httpc_request req = {
		.url = url, .headers = headers, .body = body, .body_len = strlen(body),
		.max_body = AGENT_RESPONSE_MAX, .on_data = provider_on_data, .ud = &feed,
	};
	struct httpc_response resp;
	int hrc, rc = AGENT_FAILED;
	char *text;

	p->retry = (struct provider_retry){ .after_ms = -1 };
	httpc_response_init(&resp);
	hrc = httpc_post_stream(p->host, &req, &resp);
	switch (hrc) {
	case HTTPC_CANCELLED:
		rc = AGENT_CANCELLED;
		break;
	case HTTPC_UNREACHABLE:
		agent_error_set(err, "provider_unreachable", "cannot reach the provider at %s: %s",
		    p->cfg->base_url, resp.error);
		provider_retry_set(p, "connection", -1);
		break;
	case HTTPC_BROKEN:
		agent_error_set(err, "provider_unreachable",
		    "the connection to the provider broke: %s", resp.error);
		provider_retry_set(p, "connection", -1);
		break;
	case HTTPC_TOO_BIG:
		agent_error_set(err, "invalid_provider_response",
		    "the provider's answer is larger than %d MiB", AGENT_RESPONSE_MAX >> 20);
		break;
	case HTTPC_STOPPED:
		if (err->code == NULL)
			agent_error_set(err, "invalid_provider_response", "the stream was stopped");
		break;
	case HTTPC_OK:
		if (resp.status >= 400) {
			text = provider_error_text(&resp);
			agent_error_set(err, "provider_error", "the provider answered HTTP %ld: %s",
			    resp.status, text);
			/* No wait brings quota back (OpenAI, DeepSeek's 402 alike): say so at once. */
			if (provider_no_quota(&resp))
				agent_error_set(err, "provider_error", "the provider's account has no "
				    "quota or credit left (HTTP %ld, insufficient_quota), so the run "
				    "stops without retrying; add credit or choose another provider: %s",
				    resp.status, text);
			else if (provider_status_reason(resp.status) != NULL)
				provider_retry_set(p, provider_status_reason(resp.status),
				    resp.retry_after_ms);
			else if (strstr(resp.body.data ? resp.body.data : "", "overloaded_error"))
				provider_retry_set(p, "overloaded", resp.retry_after_ms);
			p->retry.context_exceeded = provider_context_exceeded(resp.status, &resp);
			if (p->retry.context_exceeded)
				provider_context_limit(p, &resp);
			free(text);
		} else if (resp.status < 200 || resp.status >= 300 || resp.content_type == NULL ||
		    strncasecmp(resp.content_type, "text/event-stream", 17) != 0)
			agent_error_set(err, "invalid_provider_response",
			    "expected an event stream, got HTTP %ld with %.100s", resp.status,
			    resp.content_type ? resp.content_type : "no content type");
		else
			rc = AGENT_OK;
		break;
	}
	if (rc == AGENT_FAILED)
		redact_str(p->cfg->keys, err->message);
	sse_free(feed.sse);
	httpc_response_free(&resp);
	return rc;
}
