/* What the OpenAI and Anthropic providers share: the streamed POST and its errors. */
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "httpc.h"
#include "json.h"
#include "provider.h"
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

	httpc_response_init(&resp);
	hrc = httpc_post_stream(p->host, &req, &resp);
	switch (hrc) {
	case HTTPC_CANCELLED:
		rc = AGENT_CANCELLED;
		break;
	case HTTPC_UNREACHABLE:
		agent_error_set(err, "provider_unreachable", "cannot reach the provider at %s: %s",
		    p->cfg->base_url, resp.error);
		break;
	case HTTPC_BROKEN:
		agent_error_set(err, "provider_unreachable",
		    "the connection to the provider broke: %s", resp.error);
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
		provider_redact(err->message, p->cfg->api_key);
	sse_free(feed.sse);
	httpc_response_free(&resp);
	return rc;
}
