/*
 * A connector tool's call: an MCP server's tools/call (its token renewed
 * when due or refused) and its result made text for the model, or the
 * built-in fetch_url done with libcurl.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "agent-connectors-int.h"
#include "host.h"
#include "json.h"
#include "mcp.h"
#include "redact.h"
#include "xalloc.h"

#define CONNECTOR_RENEW_AHEAD 60	/* s before a token's expiry it is asked for again */
#define WEB_MAX_BYTES (1024 * 1024)	/* fetch_url reads at most this much */
#define WEB_TIMEOUT_MAX_MS 30000
#define WEB_MAX_REDIRECTS 5

/* Bounds of the images and audio of one result that reach the model. */
#define MEDIA_MAX_ITEMS 8
#define MEDIA_MAX_ITEM (5u * 1024 * 1024)	/* base64 bytes of one (Anthropic's limit) */
#define MEDIA_MAX_TOTAL (10u * 1024 * 1024)	/* base64 bytes of all */

/* Bytes that base64 text of len bytes decodes to. */
static size_t
b64_size(const char *data)
{
	size_t len = data != NULL ? strlen(data) : 0, pad = 0;

	while (pad < 2 && len > pad && data[len - 1 - pad] == '=')
		pad++;
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0) - (len % 4 ? 0 : pad);
}

/* true when some text item of the result is the JSON of structured. */
static bool
structured_in_text(const cJSON *items, const cJSON *structured)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, items) {
		const char *text = json_get_string(item, "text");
		cJSON *j;
		bool same;

		if (text == NULL || (j = cJSON_Parse(text)) == NULL)
			continue;
		same = cJSON_Compare(j, structured, true);
		cJSON_Delete(j);
		if (same)
			return true;
	}
	return false;
}

/*
 * The CallToolResult for the model: its text, embedded resources (text inline,
 * blobs described), resource links and structuredContent (as JSON) in res->content;
 * its images and audio in res->media too (bounded), which providers that take them
 * send as such (docs/connectors.md, "Results").
 */
static void
result_text(const cJSON *result, struct tool_result *res)
{
	struct buf *out = &res->content;
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
	const cJSON *structured = cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
	const cJSON *items = cJSON_IsArray(content) ? content : NULL;
	const cJSON *item;
	size_t media_total = 0;
	bool any = false;

	cJSON_ArrayForEach(item, items) {
		const char *type = json_get_string(item, "type");
		const char *text = json_get_string(item, "text");
		const char *mime = json_get_string(item, "mimeType");
		const char *data = json_get_string(item, "data");

		if (any)
			buf_appends(out, "\n");
		any = true;
		if (type != NULL && strcmp(type, "text") == 0 && text != NULL) {
			agent_utf8_append(out, text, strlen(text));
		} else if (type != NULL && strcmp(type, "resource") == 0) {
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(item, "resource");
			const char *uri = json_get_string(r, "uri");
			const char *rtext = json_get_string(r, "text");
			const char *rmime = json_get_string(r, "mimeType");
			const char *blob = json_get_string(r, "blob");

			buf_printf(out, "[resource %.500s%s%.100s", uri ? uri : "",
			    rmime ? ", " : "", rmime ? rmime : "");
			if (rtext != NULL) {
				buf_appends(out, "]\n");
				agent_utf8_append(out, rtext, strlen(rtext));
			} else {
				buf_printf(out, ", %zu bytes of binary data, not shown]",
				    b64_size(blob));
			}
		} else if (type != NULL && strcmp(type, "resource_link") == 0) {
			const char *uri = json_get_string(item, "uri");
			const char *name = json_get_string(item, "name");
			const char *desc = json_get_string(item, "description");

			buf_printf(out, "[resource link %.500s%s%.200s%s%s%.100s", uri ? uri : "",
			    name ? " \"" : "", name ? name : "", name ? "\"" : "", mime ? ", " : "",
			    mime ? mime : "");
			if (desc != NULL) {
				buf_appends(out, ": ");
				agent_utf8_append(out, desc, strlen(desc) > 500 ? 500 : strlen(desc));
			}
			buf_appends(out, "]");
		} else if (type != NULL && (strcmp(type, "image") == 0 ||
		    strcmp(type, "audio") == 0) && mime != NULL && data != NULL) {
			size_t len = strlen(data);
			bool attach = len <= MEDIA_MAX_ITEM && media_total + len <= MEDIA_MAX_TOTAL &&
			    cJSON_GetArraySize(res->media) < MEDIA_MAX_ITEMS;

			buf_printf(out, "[%s %.100s, %zu bytes%s]", type, mime, b64_size(data),
			    attach ? "" : ", too large to show");
			if (attach) {
				cJSON *m = cJSON_CreateObject();

				if (res->media == NULL)
					res->media = cJSON_CreateArray();
				cJSON_AddStringToObject(m, "mimeType", mime);
				cJSON_AddStringToObject(m, "data", data);
				cJSON_AddItemToArray(res->media, m);
				media_total += len;
			}
		} else {
			buf_printf(out, "[%.32s content%s%.100s, %zu bytes, not shown]",
			    type ? type : "unknown", mime ? " " : "", mime ? mime : "",
			    b64_size(data));
		}
	}
	if (structured != NULL && !structured_in_text(items, structured)) {
		char *j = cJSON_PrintUnformatted(structured);

		if (any)
			buf_appends(out, "\n");
		buf_appends(out, j != NULL ? j : "null");
		free(j);
		any = true;
	}
	if (!any)
		buf_appends(out, "(the tool returned no content)");
}

/* Cuts res->content at max bytes, at a character boundary. */
static void
cap_output(struct tool_result *res, size_t max)
{
	static const char note[] = "\n[output truncated]";

	if (res->content.len <= max)
		return;
	res->content.len = agent_utf8_cut(res->content.data, max - sizeof note);
	res->content.data[res->content.len] = '\0';
	buf_appends(&res->content, note);
}

struct web_fetch {
	struct buf body;
	bool truncated;
	int cancel_fd;
};

static size_t
web_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct web_fetch *w = ud;
	size_t len = size * n, room = WEB_MAX_BYTES - w->body.len;

	if (len > room) {
		buf_append(&w->body, data, room);
		w->truncated = true;
		return 0;	/* stops the transfer */
	}
	buf_append(&w->body, data, len);
	return len;
}

static int
web_on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct web_fetch *w = ud;
	struct pollfd p = { .fd = w->cancel_fd, .events = POLLIN };

	(void)dt, (void)dn, (void)ut, (void)un;
	return poll(&p, 1, 0) > 0 ? 1 : 0;
}

static int
web_fetch_url(const cJSON *args, const struct agent_config *cfg, struct host *host,
    struct tool_result *res)
{
	const char *url = json_get_string(args, "url");
	struct web_fetch w = { .cancel_fd = host_cancel_fd(host) };
	long timeout = cfg->connector_timeout_ms < WEB_TIMEOUT_MAX_MS ?
	    cfg->connector_timeout_ms : WEB_TIMEOUT_MAX_MS;
	char errbuf[CURL_ERROR_SIZE] = "", *ua;
	const char *type = NULL;
	long status = 0;
	CURLcode cc;
	CURL *curl;

	if (url == NULL || strlen(url) > 8192 || (strncasecmp(url, "http://", 7) != 0 &&
	    strncasecmp(url, "https://", 8) != 0)) {
		tool_result_fail(res, "fetch_url needs a url that starts with http:// or https://");
		return AGENT_OK;
	}
	curl = curl_easy_init();
	if (curl == NULL) {
		tool_result_fail(res, "fetch_url cannot set up an HTTP client");
		return AGENT_OK;
	}
	buf_init(&w.body, WEB_MAX_BYTES);
	ua = xasprintf("taskdeck-agent/%s", TD_VERSION);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(curl, CURLOPT_MAXREDIRS, (long)WEB_MAX_REDIRECTS);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, ua);
	curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, web_on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, web_on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &w);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);

	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		buf_free(&w.body);
		curl_easy_cleanup(curl);
		free(ua);
		return AGENT_CANCELLED;
	}
	if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && w.truncated)) {
		if (cc == CURLE_OPERATION_TIMEDOUT)
			tool_result_fail(res, "fetch_url: no answer within %ld s", timeout / 1000);
		else
			tool_result_fail(res, "fetch_url: %s", errbuf[0] ? errbuf :
			    curl_easy_strerror(cc));
	} else {
		bool binary = w.body.len > 0 && memchr(w.body.data, '\0', w.body.len) != NULL;

		buf_printf(&res->content, "HTTP %ld, %s, %zu bytes%s\n\n", status,
		    type ? type : "no content type", w.body.len,
		    w.truncated ? " (cut at 1 MiB)" : "");
		if (binary)
			buf_appends(&res->content, "(binary content, not shown)");
		else if (w.body.len > 0)
			agent_utf8_append(&res->content, w.body.data, w.body.len);
		res->failed = status >= 400;
		tool_result_summary(res, "HTTP %ld, %zu bytes", status, w.body.len);
		cap_output(res, cfg->max_tool_output);
	}
	buf_free(&w.body);
	curl_easy_cleanup(curl);
	free(ua);
	return AGENT_OK;
}

int
connectors_call(struct connectors *cs, const struct connector_tool *t, const cJSON *args,
    const struct agent_config *cfg, struct host *host, struct tool_result *res)
{
	struct connector *con = &cs->list[t->con];
	cJSON *result = NULL;
	char err[1024], *first;
	int rc;

	if (t->web)
		return web_fetch_url(args, cfg, host, res);
	if (con->mcp == NULL) {
		tool_result_fail(res, "the connector %s is not running", con->name);
		return AGENT_OK;
	}
	/* A token about to expire is renewed first; one the server refused, once. */
	if (con->auth_cred != NULL && con->auth_expires > 0 &&
	    (double)time(NULL) + CONNECTOR_RENEW_AHEAD >= con->auth_expires &&
	    connector_auth_renew(cs, con, host, false) == AGENT_CANCELLED)
		return AGENT_CANCELLED;
	rc = mcp_call_tool(con->mcp, t->remote, args, &result, err, sizeof err);
	if (rc != 0 && con->auth_cred != NULL && mcp_http_status(con->mcp) == 401 &&
	    !host_cancelled(host)) {
		int r = connector_auth_renew(cs, con, host, true);

		if (r == AGENT_CANCELLED)
			return AGENT_CANCELLED;
		if (r == AGENT_OK)
			rc = mcp_call_tool(con->mcp, t->remote, args, &result, err, sizeof err);
	}
	if (rc != 0) {
		if (host_cancelled(host))
			return AGENT_CANCELLED;
		tool_result_fail(res, "%s (connector %s): %s", t->remote, con->name, err);
		redact_text(cs->secrets, res->content.data, res->content.len, 0);
		redact_str(cs->secrets, res->summary);
		return AGENT_OK;
	}
	result_text(result, res);
	/* Strings are masked already; a number or a printed structure is not. */
	redact_text(cs->secrets, res->content.data, res->content.len, 0);
	res->failed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));
	/* The first line of the answer, for people following the run. */
	first = xstrndup(res->content.data, strcspn(res->content.data, "\n"));
	tool_result_summary(res, "%s on %s%s: %.120s", t->remote, con->name,
	    res->failed ? " (error)" : "", first);
	free(first);
	cap_output(res, cfg->max_tool_output);
	cJSON_Delete(result);
	return AGENT_OK;
}
