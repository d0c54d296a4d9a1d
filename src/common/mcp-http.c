/*
 * The Streamable HTTP transport of the MCP client (mcp-int.h): one POST per
 * message, the answer JSON or an SSE stream; the session, the standalone
 * event stream, and the reasons of HTTP errors.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "mcp-int.h"
#include "sandbox.h"
#include "redact.h"
#include "sse.h"
#include "xalloc.h"

/* A closed event stream is resumed (GET with Last-Event-ID) at most this often per request. */
#define MCP_MAX_RESUMES 5
/* The wait before resuming when the server named no retry. */
#define MCP_DEFAULT_RETRY_MS 1000

static const struct mcp_transport_ops http_ops;

/* --- Streamable HTTP ------------------------------------------------------ */

/*
 * One HTTP exchange.  The body of a 2xx event stream that a request awaits
 * is parsed as it arrives: the answer ends the exchange at once, requests
 * from the server are answered while the stream stays open.  Any other body
 * is kept (bounded), for JSON answers and for the reason of an HTTP error.
 */
struct http_exchange {
	struct mcp_client *c;
	CURL *curl;
	bool standalone;	/* the GET stream: outlives requests, never stopped by an answer */
	long id;		/* the request's id; 0 for a notification or a reply */
	struct buf body;
	bool too_big;
	bool started;		/* the first body bytes were seen */
	struct sse_parser *parser;	/* when the body is an event stream */
	cJSON *answer;
	bool garbage;
	char last_id[256];	/* the stream's last event id */
	long retry;		/* its last retry field, -1 when none */
	char content_type[128];
	char session[256];
	char www_auth[1024];	/* WWW-Authenticate of a 401 or 403 */
	bool headers_done;	/* the response's header block has ended */
};

static int http_on_event(const struct sse_event *ev, void *ud);

/* Which stream a deferred form came on (a member of our copy of it, never sent). */
#define HTTP_FORM_ON_GET "taskdeck.onStandaloneStream"

static size_t
http_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct http_exchange *x = ud;

	if (!x->started) {
		long status = 0;

		x->started = true;
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
		if ((x->id > 0 || x->standalone) && status / 100 == 2 &&
		    strncasecmp(x->content_type, "text/event-stream", 17) == 0)
			x->parser = sse_new(x->c->lim.max_message_bytes, http_on_event, x);
		if (x->standalone && x->parser == NULL) {
			x->c->get_refused = true;
			return 0;
		}
	}
	if (x->parser != NULL) {
		int rc = sse_feed(x->parser, data, size * n);

		if (rc == SSE_TOO_BIG)
			x->too_big = true;
		/* The answer (or garbage) stops the transfer here. */
		return rc == SSE_OK ? size * n : 0;
	}
	if (!buf_append(&x->body, data, size * n)) {
		x->too_big = true;
		return 0;
	}
	return size * n;
}

static void
header_value(const char *line, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), v;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	v = nl + 1;
	while (v < len && (line[v] == ' ' || line[v] == '\t'))
		v++;
	while (len > v && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	snprintf(out, outlen, "%.*s", (int)(len - v), line + v);
}

static size_t
http_on_header(char *data, size_t size, size_t n, void *ud)
{
	struct http_exchange *x = ud;

	header_value(data, size * n, "Content-Type", x->content_type, sizeof x->content_type);
	header_value(data, size * n, "Mcp-Session-Id", x->session, sizeof x->session);
	header_value(data, size * n, "WWW-Authenticate", x->www_auth, sizeof x->www_auth);
	mcp_dpop_nonce_note(x->c, data, size * n);
	if (size * n <= 2 && (data[0] == '\r' || data[0] == '\n'))
		x->headers_done = true;
	return size * n;
}

static int
http_on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return mcp_cancel_requested(((struct http_exchange *)ud)->c) ? 1 : 0;
}

struct mcp_client *
mcp_open_http(const char *url, const char *const *headers, const struct mcp_limits *lim,
    char *err, size_t errlen)
{
	struct mcp_client *c;

	if (url == NULL || (strncasecmp(url, "http://", 7) != 0 &&
	    strncasecmp(url, "https://", 8) != 0)) {
		mcp_set_err(err, errlen, "the URL must start with http:// or https://");
		return NULL;
	}
	c = mcp_client_new(&http_ops, lim);
	c->url = xstrdup(url);
	c->curl = curl_easy_init();
	c->multi = curl_multi_init();
	if (c->curl == NULL || c->multi == NULL) {
		mcp_set_err(err, errlen, "cannot set up an HTTP client");
		mcp_close(c);
		return NULL;
	}
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i++) {
		struct curl_slist *l;

		if (mcp_dpop_take_header(c, headers[i]))
			continue;
		l = curl_slist_append(c->user_headers, headers[i]);

		if (l == NULL) {
			mcp_set_err(err, errlen, "cannot set up an HTTP client");
			mcp_close(c);
			return NULL;
		}
		c->user_headers = l;
	}
	return c;
}

/*
 * The headers of every request: the user's, the session, the protocol
 * version once one is known (the probe names 2026-07-28), and Mcp-Method on
 * a modern server; a DPoP proof for a request of htm when the client has a
 * key.  method NULL = not a JSON-RPC message (GET, DELETE).
 */
static struct curl_slist *
http_headers(const struct mcp_client *c, const char *method, const char *accept,
    const char *htm)
{
	struct curl_slist *h = NULL;
	const char *token = NULL;
	char line[320], *sent;

	for (struct curl_slist *l = c->user_headers; l != NULL; l = l->next) {
		sent = mcp_dpop_line(c, l->data, &token);
		h = curl_slist_append(h, sent);
		explicit_bzero(sent, strlen(sent));
		free(sent);
	}
	if ((sent = mcp_dpop_proof_line(c, htm, token)) != NULL) {
		h = curl_slist_append(h, sent);
		free(sent);
	}
	if (method != NULL)
		h = curl_slist_append(h, "Content-Type: application/json");
	snprintf(line, sizeof line, "Accept: %s", accept);
	h = curl_slist_append(h, line);
	if (c->modern || c->version != NULL) {
		snprintf(line, sizeof line, "MCP-Protocol-Version: %s",
		    c->modern ? MCP_MODERN_VERSION : c->version);
		h = curl_slist_append(h, line);
	}
	if (c->modern && method != NULL) {
		snprintf(line, sizeof line, "Mcp-Method: %s", method);
		h = curl_slist_append(h, line);
	}
	if (c->session != NULL) {
		snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
		h = curl_slist_append(h, line);
	}
	if (c->modern && method != NULL)
		for (struct curl_slist *l = c->call_headers; l != NULL; l = l->next)
			h = curl_slist_append(h, l->data);
	return h;
}

static void
http_setup(CURL *h, const char *url, struct curl_slist *headers, long timeout_ms)
{
	/* 0 = no timeout of curl's own. */
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 0L);
}

/*
 * Answers a request the server made on an open stream: POSTed on a handle
 * of its own (the stream's is busy).  reply is consumed.
 */
static void
http_send_reply(struct mcp_client *c, cJSON *reply)
{
	char *text;

	if (reply == NULL)
		return;
	text = json_print(reply);
	struct curl_slist *h;

	cJSON_Delete(reply);
	if (c->aux == NULL && (c->aux = curl_easy_init()) == NULL) {
		free(text);
		return;
	}
	h = http_headers(c, "response", "application/json, text/event-stream", "POST");
	http_setup(c->aux, c->url, h, c->lim.request_timeout_ms);
	curl_easy_setopt(c->aux, CURLOPT_POST, 1L);
	curl_easy_setopt(c->aux, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c->aux, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	if (curl_easy_perform(c->aux) != CURLE_OK)
		log_warn("mcp: cannot answer a request of the server at its URL");
	curl_slist_free_all(h);
	free(text);
}

static int
http_on_event(const struct sse_event *ev, void *ud)
{
	struct http_exchange *x = ud;
	cJSON *msg, *answer = NULL, *reply = NULL;
	int k;

	if (ev->id != NULL && *ev->id != '\0')
		snprintf(x->last_id, sizeof x->last_id, "%s", ev->id);
	if (ev->retry >= 0)
		x->retry = ev->retry;
	if (ev->data_len == 0 || x->answer != NULL)
		return 0;	/* a priming event, or one after the answer */
	msg = mcp_message_parse(x->c, ev->data, ev->data_len);
	if (msg != NULL && x->c->elicit_mid != NULL) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(msg, "params");
		const char *m = json_get_string(msg, "method");

		/* The server gives up on the form someone is being asked (http_watch). */
		if (m != NULL && strcmp(m, "notifications/cancelled") == 0 &&
		    cJSON_Compare(cJSON_GetObjectItemCaseSensitive(p, "requestId"),
		    x->c->elicit_mid, true))
			x->c->form_cancelled = true;
	}
	if (msg != NULL && x->c->elicit != NULL &&
	    cJSON_GetObjectItemCaseSensitive(msg, "id") != NULL &&
	    strcmp(json_get_string(msg, "method") ? json_get_string(msg, "method") : "",
	    "elicitation/create") == 0) {
		/* Someone is asked: not from inside curl's callback. */
		if (x->c->deferred == NULL)
			x->c->deferred = cJSON_CreateArray();
		cJSON_AddBoolToObject(msg, HTTP_FORM_ON_GET, x->standalone);
		cJSON_AddItemToArray(x->c->deferred, msg);
		return 0;
	}
	k = msg != NULL ? mcp_classify(x->c, msg, x->id, &answer, &reply) : -1;
	if (reply != NULL) {
		/* Sent once the transfers are back in our hands (not from a callback). */
		if (x->c->replies == NULL)
			x->c->replies = cJSON_CreateArray();
		cJSON_AddItemToArray(x->c->replies, reply);
	}
	if (k < 0 && x->standalone) {
		log_warn("mcp: the server sent an event that is not a JSON-RPC 2.0 message on its "
		    "stream; skipped");
		cJSON_Delete(msg);
		return 0;
	}
	if (k < 0) {
		x->garbage = true;
		cJSON_Delete(msg);
		return 1;
	}
	if (k == 1) {
		x->answer = msg;
		return x->standalone ? 0 : 1;
	}
	cJSON_Delete(msg);
	return 0;
}

/* The server's reason in an error body: a JSON-RPC error's message, an
 * "error" string or description, else the text itself; printable, cut. */
static void
http_reason(const struct buf *body, char *out, size_t len)
{
	cJSON *j = body->len > 0 ? json_parse(body->data, body->len) : NULL;
	const char *text = body->data != NULL ? body->data : "";

	if (j != NULL) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		const char *m = cJSON_IsObject(e) ? json_get_string(e, "message") :
		    cJSON_IsString(e) ? e->valuestring : NULL;
		const char *d = json_get_string(j, "error_description");

		if (d == NULL)
			d = json_get_string(j, "message");
		if (m != NULL || d != NULL) {
			snprintf(out, len, "%.200s%s%.200s", m ? m : "", m && d ? ": " : "",
			    d ? d : "");
			cJSON_Delete(j);
			for (char *p = out; *p; p++)
				if ((unsigned char)*p < 0x20)
					*p = ' ';
			return;
		}
		cJSON_Delete(j);
	}
	if (len > 0)
		mcp_printable_line(text, strlen(text), out, len < 301 ? len : 301);
}


/*
 * A 401 (or a 403 insufficient_scope) with a Bearer challenge: the server
 * wants an OAuth sign-in.  The message says so, with what the challenge
 * names (the resource metadata, the scope), and how to give a token.
 */
static bool
sign_in_err(const struct http_exchange *x, long status, const char *method, char *err,
    size_t errlen)
{
	char meta[512], scope[256], error[64];

	if ((status != 401 && status != 403) || (strncasecmp(x->www_auth, "Bearer", 6) != 0 &&
	    strncasecmp(x->www_auth, "DPoP", 4) != 0))
		return false;
	mcp_challenge_param(x->www_auth, "resource_metadata", meta, sizeof meta);
	mcp_challenge_param(x->www_auth, "scope", scope, sizeof scope);
	mcp_challenge_param(x->www_auth, "error", error, sizeof error);
	if ((status == 403 && strcmp(error, "insufficient_scope") != 0) ||
	    strcmp(error, "use_dpop_nonce") == 0)
		return false;
	/* The scope first: a tool line's summary keeps only the start. */
	mcp_set_err(err, errlen, "sign-in needed%s%s%s: the server answered HTTP %ld to %s and asks "
	    "for an OAuth %s%s%s; sign in with 'taskdeck connectors login'", *scope ? " (scope " :
	    "", scope, *scope ? ")" : "", status, method,
	    status == 403 ? "token with more scope" : "sign-in", *meta ? ", described at " : "",
	    meta);
	return true;
}

/* Waits ms (bounded by the deadline); false when cancelled. */
static bool
pause_ms(struct mcp_client *c, long ms, long deadline)
{
	long until = mcp_now_ms() + ms;

	if (until > deadline)
		until = deadline;
	while (mcp_now_ms() < until) {
		struct pollfd p = { .fd = c->cancel_fd, .events = POLLIN };
		long left = until - mcp_now_ms();

		if (poll(&p, c->cancel_fd >= 0 ? 1 : 0, (int)(left > 0 ? left : 0)) > 0)
			return false;
	}
	return true;
}

static void
exchange_init(struct http_exchange *x, struct mcp_client *c, long id)
{
	memset(x, 0, sizeof *x);
	x->c = c;
	x->id = id;
	x->retry = -1;
	buf_init(&x->body, c->lim.max_message_bytes);
}

static void
exchange_done(struct http_exchange *x)
{
	sse_free(x->parser);
	x->parser = NULL;
	cJSON_Delete(x->answer);
	x->answer = NULL;
	buf_free(&x->body);
}

static void
flush_replies(struct mcp_client *c)
{
	while (c->deferred != NULL && cJSON_GetArraySize(c->deferred) > 0) {
		cJSON *q = cJSON_DetachItemFromArray(c->deferred, 0);

		c->form_on_get = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, HTTP_FORM_ON_GET));
		c->form_cancelled = false;
		http_send_reply(c, mcp_server_request_reply(c, cJSON_GetObjectItemCaseSensitive(q, "id"),
		    json_get_string(q, "method"), cJSON_GetObjectItemCaseSensitive(q, "params")));
		cJSON_Delete(q);
	}
	while (c->replies != NULL && cJSON_GetArraySize(c->replies) > 0)
		http_send_reply(c, cJSON_DetachItemFromArray(c->replies, 0));
}

/* Closes the standalone stream (it is opened again by the next request). */
static void
get_stream_close(struct mcp_client *c)
{
	if (c->get == NULL)
		return;
	curl_multi_remove_handle(c->multi, c->get);
	curl_easy_cleanup(c->get);
	c->get = NULL;
	curl_slist_free_all(c->get_headers);
	c->get_headers = NULL;
	exchange_done(c->getx);
	free(c->getx);
	c->getx = NULL;
}

/*
 * Opens the standalone event stream (GET) once a session is set up, so that
 * requests the server makes outside of a request of ours (elicitation,
 * roots, sampling, ping) reach us while we wait.  A server that does not
 * offer it (405, or no event stream) is not asked again.
 */
static void
get_stream_open(struct mcp_client *c)
{
	if (c->get != NULL || c->get_refused || !c->ready || c->modern)
		return;
	if ((c->get = curl_easy_init()) == NULL)
		return;
	c->getx = xmalloc(sizeof *c->getx);
	exchange_init(c->getx, c, 0);
	c->getx->standalone = true;
	c->getx->curl = c->get;
	c->get_headers = http_headers(c, NULL, "text/event-stream", "GET");
	http_setup(c->get, c->url, c->get_headers, 0);
	curl_easy_setopt(c->get, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(c->get, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->get, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(c->get, CURLOPT_WRITEDATA, c->getx);
	curl_easy_setopt(c->get, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(c->get, CURLOPT_HEADERDATA, c->getx);
	curl_multi_add_handle(c->multi, c->get);
	/*
	 * Until the server has taken the stream (its headers came), or 2 s: a
	 * server may answer on a GET that reaches it after the request it
	 * belongs to as if it were a resumption.
	 */
	for (long until = mcp_now_ms() + 2000; mcp_now_ms() < until && !c->getx->headers_done;) {
		int running, queued;
		CURLMsg *m;

		curl_multi_perform(c->multi, &running);
		if ((m = curl_multi_info_read(c->multi, &queued)) != NULL && m->msg == CURLMSG_DONE &&
		    m->easy_handle == c->get) {
			long status = 0;

			curl_easy_getinfo(c->get, CURLINFO_RESPONSE_CODE, &status);
			if (status / 100 != 2)
				c->get_refused = true;
			get_stream_close(c);
			return;
		}
		curl_multi_poll(c->multi, NULL, 0, 50, NULL);
	}
}

/*
 * Takes what the transfers of c->multi have finished: the request's (into
 * http_done, http_cc), the standalone stream's (closed; an answer it carried
 * goes to the request's exchange).
 */
static void
http_collect(struct mcp_client *c)
{
	struct http_exchange *x = c->http_x;
	CURLMsg *m;
	int left_msgs;

	while ((m = curl_multi_info_read(c->multi, &left_msgs)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		if (m->easy_handle == c->curl) {
			c->http_cc = m->data.result;
			c->http_done = true;
		} else if (m->easy_handle == c->get) {
			long status = 0;

			curl_easy_getinfo(c->get, CURLINFO_RESPONSE_CODE, &status);
			if (status / 100 != 2)
				c->get_refused = true;
			if (c->getx->answer != NULL && x != NULL && x->answer == NULL) {
				x->answer = c->getx->answer;
				c->getx->answer = NULL;
			}
			get_stream_close(c);
		}
	}
	if (c->getx != NULL && c->getx->answer != NULL && x != NULL && x->answer == NULL) {
		x->answer = c->getx->answer;
		c->getx->answer = NULL;
	}
}

/*
 * Runs the transfer set up on c->curl (for x) next to the standalone stream,
 * until it ends, the answer to x's request arrives on either, the deadline
 * passes or the call is cancelled.  The curl code of x's transfer.
 */
static CURLcode
http_run(struct mcp_client *c, struct http_exchange *x, long deadline)
{
	CURLcode cc = CURLE_OK;

	if (c->multi == NULL && (c->multi = curl_multi_init()) == NULL)
		return curl_easy_perform(c->curl);
	if (x->id > 0)
		get_stream_open(c);
	curl_multi_add_handle(c->multi, c->curl);
	if (c->getx != NULL)
		c->getx->id = x->id;
	c->http_x = x;
	c->http_done = false;
	for (;;) {
		int running;
		long left;

		curl_multi_perform(c->multi, &running);
		http_collect(c);
		{
			long asked = c->asked_ms;

			flush_replies(c);
			deadline += c->asked_ms - asked;
		}
		http_collect(c);
		if (c->http_done || x->answer != NULL) {
			cc = c->http_done ? c->http_cc : CURLE_OK;
			break;
		}
		left = deadline - mcp_now_ms();
		if (left <= 0) {
			cc = CURLE_OPERATION_TIMEDOUT;
			break;
		}
		if (mcp_cancel_requested(c)) {
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		curl_multi_poll(c->multi, NULL, 0, (int)(left < 100 ? left : 100), NULL);
	}
	c->http_x = NULL;
	curl_multi_remove_handle(c->multi, c->curl);
	if (c->getx != NULL)
		c->getx->id = 0;
	return cc;
}

/*
 * While someone is asked a form (from inside flush_replies): drives the
 * transfers for up to ms, so that what the server sends meanwhile is read.
 * 1 when it gave up on the form: notifications/cancelled for it, or the
 * stream it came on ended.
 */
static int
http_watch(struct mcp_client *c, const cJSON *mid, int ms)
{
	long until = mcp_now_ms() + ms;

	(void)mid;	/* http_on_event compares c->elicit_mid */
	if (c->http_x == NULL)
		return 0;
	for (;;) {
		int running;
		long left;

		curl_multi_perform(c->multi, &running);
		http_collect(c);
		if (c->form_cancelled || (c->form_on_get ? c->get == NULL : c->http_done))
			return 1;
		left = until - mcp_now_ms();
		if (left <= 0)
			return 0;
		curl_multi_poll(c->multi, NULL, 0, (int)(left < 100 ? left : 100), NULL);
	}
}

/*
 * Performs one exchange on the main handle: a POST of text (a message), or a
 * GET of the event stream after last_event_id (text NULL).  Returns the
 * curl code; *status the HTTP status.
 */
static CURLcode
http_perform(struct mcp_client *c, struct http_exchange *x, const char *text,
    const char *method, const char *last_event_id, long deadline, long *status)
{
	struct curl_slist *h;
	CURLcode cc;

	h = http_headers(c, text != NULL ? method : NULL, text != NULL ?
	    "application/json, text/event-stream" : "text/event-stream",
	    text != NULL ? "POST" : "GET");
	if (last_event_id != NULL) {
		char line[300];

		snprintf(line, sizeof line, "Last-Event-ID: %s", last_event_id);
		h = curl_slist_append(h, line);
	}
	x->curl = c->curl;
	/* http_run keeps the deadline (it moves while someone is asked). */
	http_setup(c->curl, c->url, h, c->multi != NULL ? 0 : deadline - mcp_now_ms());
	if (text != NULL) {
		curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	} else {
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, http_on_progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	cc = http_run(c, x, deadline);
	*status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	return cc;
}

/*
 * The outcome of a finished exchange that found no answer: RPC_FAILED or
 * RPC_ERROR with err set, or 1 when an event stream ended cleanly without
 * the answer (it may be resumed).
 */
static bool version_refused(struct mcp_client *c, struct http_exchange *x, long id,
    cJSON **answer);

static int
http_outcome(struct mcp_client *c, struct http_exchange *x, CURLcode cc, long status,
    long id, const char *method, const char *during, cJSON **answer, char *err,
    size_t errlen)
{
	c->last_status = status;
	if (x->answer != NULL) {
		*answer = x->answer;
		x->answer = NULL;
		return RPC_OK;
	}
	if (x->too_big) {
		mcp_too_big_err(c, err, errlen);
	} else if (x->garbage) {
		mcp_set_err(err, errlen, "not JSON-RPC: the server sent an event that is not a "
		    "JSON-RPC 2.0 message (during %s)", during);
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		mcp_timeout_err(c, during, err, errlen);
	} else if (cc == CURLE_ABORTED_BY_CALLBACK) {
		mcp_cancelled_err(c, err, errlen);
	} else if (status >= 400) {
		char reason[400] = "";

		http_reason(&x->body, reason, sizeof reason);
		redact_text(c->lim.secrets, reason, strlen(reason), REDACT_CUT_END);
		if (sign_in_err(x, status, method, err, errlen)) {
			free(c->challenge);
			c->challenge = xstrdup(x->www_auth);
			c->failure = FAIL_SIGN_IN;
			return RPC_ERROR;
		}
		if (status == 400 && version_refused(c, x, id, answer))
			return RPC_OK;	/* its error, UnsupportedProtocolVersionError, is the answer */
		if (status == 404 && c->session != NULL)
			mcp_set_err(err, errlen, "the server ended the session (HTTP 404 to %s)%s%s",
			    method, *reason ? ": " : "", reason);
		else
			mcp_set_err(err, errlen, "the server answered HTTP %ld to %s%s%s", status,
			    method, *reason ? ": " : "", reason);
		return RPC_ERROR;
	} else if (cc != CURLE_OK) {
		mcp_set_err(err, errlen, "cannot reach the server (%s): %s", during,
		    curl_easy_strerror(cc));
	} else if (id <= 0) {
		if (status / 100 == 2)
			return RPC_OK;
		mcp_set_err(err, errlen, "the server answered HTTP %ld to %s", status, method);
	} else if (x->parser != NULL) {
		mcp_set_err(err, errlen, "the server's event stream ended without an answer "
		    "(during %s)", during);
		return 1;
	} else {
		cJSON *in = x->body.len > 0 ? mcp_message_parse(c, x->body.data, x->body.len) : NULL;
		cJSON *reply = NULL;

		if (in != NULL && mcp_classify(c, in, id, answer, &reply) == 1) {
			cJSON_Delete(reply);
			return RPC_OK;
		}
		cJSON_Delete(reply);
		cJSON_Delete(in);
		mcp_set_err(err, errlen, "not JSON-RPC: the server's answer to %s is not a "
		    "JSON-RPC 2.0 response (HTTP %ld)", method, status);
	}
	return RPC_FAILED;
}

/*
 * Whether a 400's body is the JSON-RPC answer UnsupportedProtocolVersionError
 * (-32022) to request id (then in *answer): the draft revision's refusal of a
 * version, which the handshake reads.
 */
static bool
version_refused(struct mcp_client *c, struct http_exchange *x, long id, cJSON **answer)
{
	cJSON *in = x->body.len > 0 ? mcp_message_parse(c, x->body.data, x->body.len) : NULL;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(in, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
	const cJSON *mid = cJSON_GetObjectItemCaseSensitive(in, "id");

	if (cJSON_IsNumber(code) && code->valueint == -32022 && cJSON_IsNumber(mid) &&
	    (long)mid->valuedouble == id) {
		*answer = in;
		return true;
	}
	cJSON_Delete(in);
	return false;
}

/*
 * POSTs one message (consumed) and, for a request, finds the answer with its
 * id in the JSON body or the event stream.  An event stream that ends
 * without the answer is resumed with GET and Last-Event-ID after the
 * server's retry time, as long as it named event ids.
 */
static int
http_post(struct mcp_client *c, cJSON *msg, long id, const char *method, const char *during,
    long deadline, cJSON **answer, char *err, size_t errlen)
{
	struct http_exchange x;
	char *text = json_print(msg);
	char last_id[256];
	long status = 0, retry;
	CURLcode cc;
	int rc;

	cJSON_Delete(msg);
	*answer = NULL;
	exchange_init(&x, c, id);
	cc = http_perform(c, &x, text, method, NULL, deadline, &status);
	rc = http_outcome(c, &x, cc, status, id, method, during, answer, err, errlen);
	/* A proof without the nonce the server has just named: once more with it. */
	if (rc == RPC_ERROR && mcp_dpop_nonce_asked(c, status, x.www_auth)) {
		exchange_done(&x);
		exchange_init(&x, c, id);
		cc = http_perform(c, &x, text, method, NULL, deadline, &status);
		rc = http_outcome(c, &x, cc, status, id, method, during, answer, err, errlen);
	}
	free(text);
	if (x.session[0] != '\0' && c->session == NULL && status / 100 == 2)
		c->session = xstrdup(x.session);
	for (int resumes = 0; rc == 1 && x.last_id[0] != '\0' && resumes < MCP_MAX_RESUMES;
	    resumes++) {
		snprintf(last_id, sizeof last_id, "%s", x.last_id);
		retry = x.retry >= 0 ? x.retry : MCP_DEFAULT_RETRY_MS;
		exchange_done(&x);
		if (mcp_now_ms() + retry >= deadline) {
			mcp_timeout_err(c, during, err, errlen);
			return RPC_FAILED;
		}
		if (!pause_ms(c, retry, deadline)) {
			mcp_cancelled_err(c, err, errlen);
			return RPC_FAILED;
		}
		exchange_init(&x, c, id);
		cc = http_perform(c, &x, NULL, method, last_id, deadline, &status);
		rc = http_outcome(c, &x, cc, status, id, method, during, answer, err, errlen);
		if (rc == RPC_ERROR) {
			mcp_set_err(err, errlen, "the server's event stream ended without an answer and "
			    "could not be resumed (HTTP %ld, during %s)", status, during);
			rc = RPC_FAILED;
		}
		if (x.last_id[0] == '\0')
			snprintf(x.last_id, sizeof x.last_id, "%s", last_id);
	}
	exchange_done(&x);
	return rc == 1 ? RPC_FAILED : rc;
}


static int
http_rpc(struct mcp_client *c, long id, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	long deadline = mcp_now_ms() + c->lim.request_timeout_ms;
	bool had_session = c->session != NULL;
	cJSON *again = c->ready && had_session ? cJSON_Duplicate(params, true) : NULL;
	cJSON *answer = NULL;
	int rc = http_post(c, mcp_request_new(c, id, method, params), id, method, during, deadline,
	    &answer, err, errlen);

	/* The server forgot the session: one new initialization, then the request again. */
	if (rc == RPC_ERROR && c->last_status == 404 && again != NULL && !c->modern) {
		char why[512];

		free(c->session);
		c->session = NULL;
		get_stream_close(c);
		if (mcp_initialize(c, why, sizeof why) != 0) {
			mcp_set_err(err, errlen, "the server ended the session and a new one could not "
			    "be started: %s", why);
			cJSON_Delete(again);
			return RPC_FAILED;
		}
		id = c->next_id++;
		deadline = mcp_now_ms() + c->lim.request_timeout_ms;
		rc = http_post(c, mcp_request_new(c, id, method, again), id, method, during, deadline,
		    &answer, err, errlen);
		again = NULL;
	}
	cJSON_Delete(again);
	if (rc != RPC_OK)
		return rc;
	rc = mcp_answer_take(answer, method, result, code, err, errlen);
	cJSON_Delete(answer);
	return rc;
}

/* DELETE of the session, as the transport asks; its outcome does not matter. */
static void
http_end_session(struct mcp_client *c)
{
	struct curl_slist *h = http_headers(c, NULL, "application/json, text/event-stream",
	    "DELETE");

	http_setup(c->curl, c->url, h, 2000L);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
	curl_easy_perform(c->curl);
	curl_slist_free_all(h);
}

static int
http_probe_failed(struct mcp_client *c, char *err, size_t errlen)
{
	(void)c;
	(void)err;
	(void)errlen;
	return -1;
}

static int
http_notify(struct mcp_client *c, cJSON *msg, const char *method, long deadline, char *err,
    size_t errlen)
{
	cJSON *answer = NULL;
	int rc = http_post(c, msg, 0, method, "the handshake", deadline, &answer, err, errlen);

	cJSON_Delete(answer);
	return rc == RPC_OK ? 0 : -1;
}

static void
http_timeout_detail(const struct mcp_client *c, char *out, size_t len)
{
	(void)c;
	snprintf(out, len, "%s", "");
}

static int
http_pid(const struct mcp_client *c)
{
	(void)c;
	return -1;
}

static void
http_close(struct mcp_client *c)
{
	get_stream_close(c);
	if (c->curl != NULL && c->session != NULL)
		http_end_session(c);
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	if (c->aux != NULL)
		curl_easy_cleanup(c->aux);
	if (c->multi != NULL)
		curl_multi_cleanup(c->multi);
	cJSON_Delete(c->replies);
	cJSON_Delete(c->deferred);
	free(c->challenge);
	/* The headers may hold credentials. */
	for (struct curl_slist *l = c->user_headers; l != NULL; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(c->user_headers);
	if (c->dpop_key != NULL)
		explicit_bzero(c->dpop_key, strlen(c->dpop_key));
	free(c->dpop_key);
	free(c->url);
	free(c->session);
}

static const struct mcp_transport_ops http_ops = {
	.rpc = http_rpc,
	.notify = http_notify,
	.probe_failed = http_probe_failed,
	.timeout_detail = http_timeout_detail,
	.pid = http_pid,
	.watch = http_watch,
	.close = http_close,
};


int
mcp_http_status(const struct mcp_client *c)
{
	return c != NULL && c->ops == &http_ops ? (int)c->last_status : 0;
}

void
mcp_set_header(struct mcp_client *c, const char *line)
{
	const char *colon = line != NULL ? strchr(line, ':') : NULL;
	struct curl_slist *kept = NULL;
	size_t n;

	if (c == NULL || c->ops != &http_ops || colon == NULL)
		return;
	n = (size_t)(colon - line) + 1;
	for (struct curl_slist *l = c->user_headers; l != NULL; l = l->next)
		if (strncasecmp(l->data, line, n) != 0)
			kept = curl_slist_append(kept, l->data);
	kept = curl_slist_append(kept, line);
	for (struct curl_slist *l = c->user_headers; l != NULL; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(c->user_headers);
	c->user_headers = kept;
}
