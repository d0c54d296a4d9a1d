#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "host.h"
#include "httpc.h"
#include "xalloc.h"

#define HTTPC_ERROR_BODY_MAX (64 * 1024)

struct httpc_transfer {
	CURL *easy;
	const struct httpc_request *req;
	struct httpc_response *resp;
	bool decided;		/* status and type known */
	bool streaming;		/* body goes to on_data */
	size_t received;
	int stop;		/* HTTPC_STOPPED or HTTPC_TOO_BIG once aborted */
	bool exact_ms;		/* retry-after-ms was seen */
};

void
httpc_response_init(struct httpc_response *r)
{
	memset(r, 0, sizeof *r);
	buf_init(&r->body, HTTPC_ERROR_BODY_MAX);
	r->retry_after_ms = -1;
}

void
httpc_response_free(struct httpc_response *r)
{
	free(r->content_type);
	buf_free(&r->body);
	r->content_type = NULL;
}

static void
httpc_decide(struct httpc_transfer *t)
{
	char *type = NULL;

	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->resp->status);
	curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &type);
	t->resp->content_type = xstrdup_or_null(type);
	t->streaming = t->resp->status >= 200 && t->resp->status < 300 && type != NULL &&
	    strncasecmp(type, "text/event-stream", 17) == 0;
	t->decided = true;
}

static size_t
httpc_write(char *data, size_t size, size_t n, void *ud)
{
	struct httpc_transfer *t = ud;
	size_t len = size * n;

	if (!t->decided)
		httpc_decide(t);
	if (!t->streaming) {
		size_t room = t->resp->body.max - t->resp->body.len;

		buf_append(&t->resp->body, data, len < room ? len : room);
		return len;
	}
	t->received += len;
	if (t->received > t->req->max_body) {
		t->stop = HTTPC_TOO_BIG;
		return 0;
	}
	if (t->req->on_data(data, len, t->req->ud) != 0) {
		t->stop = HTTPC_STOPPED;
		return 0;
	}
	return len;
}

/* The wait a header asks for in ms, or -1: digits, or an HTTP date (Retry-After). */
static long
httpc_wait_ms(const char *v, size_t len, bool ms, bool date_ok)
{
	char text[128];
	char *end;
	double n;
	time_t when;

	while (len > 0 && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len > 0 && strchr(" \t\r\n", v[len - 1]) != NULL)
		len--;
	if (len == 0 || len >= sizeof text)
		return -1;
	memcpy(text, v, len);
	text[len] = '\0';
	n = strtod(text, &end);
	if (end != text && *end == '\0')
		return n < 0 ? -1 : n > 86400e3 ? 86400000L : (long)(ms ? n : n * 1000);
	if (!date_ok || (when = curl_getdate(text, NULL)) < 0)
		return -1;
	n = difftime(when, time(NULL));
	return n <= 0 ? 0 : n > 86400 ? 86400000L : (long)(n * 1000);
}

/* Keeps what the answer asks of a retry: retry-after-ms wins over Retry-After. */
static size_t
httpc_header(char *data, size_t size, size_t n, void *ud)
{
	struct httpc_transfer *t = ud;
	size_t len = size * n;
	long ms;

	if (len > 15 && strncasecmp(data, "retry-after-ms:", 15) == 0) {
		if ((ms = httpc_wait_ms(data + 15, len - 15, true, false)) >= 0) {
			t->resp->retry_after_ms = ms;
			t->exact_ms = true;
		}
	} else if (len > 12 && strncasecmp(data, "retry-after:", 12) == 0 && !t->exact_ms) {
		if ((ms = httpc_wait_ms(data + 12, len - 12, false, true)) >= 0)
			t->resp->retry_after_ms = ms;
	}
	return len;
}

static CURL *
httpc_easy(struct httpc_transfer *t, struct curl_slist *headers)
{
	CURL *e = curl_easy_init();

	if (e == NULL)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, t->req->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (t->req->method != NULL && strcmp(t->req->method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->req->body_len);
	}
	if (t->req->timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t->req->timeout_ms);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, httpc_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, httpc_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->resp->error);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
	/* A model may think for minutes, but not in total silence for ten. */
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 600L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "taskdeck-agent/" TD_VERSION);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	return e;
}

int
httpc_post_stream(struct host *h, const struct httpc_request *req,
    struct httpc_response *resp)
{
	struct httpc_transfer t = { .req = req, .resp = resp };
	struct curl_slist *headers = NULL;
	CURLM *multi;
	CURLcode result = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left, rc;
	bool cancelled = false;

	for (const char *const *hd = req->headers; hd && *hd; hd++)
		headers = curl_slist_append(headers, *hd);
	headers = curl_slist_append(headers, "Expect:");
	t.easy = httpc_easy(&t, headers);
	multi = curl_multi_init();
	if (t.easy == NULL || multi == NULL) {
		snprintf(resp->error, sizeof resp->error, "cannot set up libcurl");
		curl_easy_cleanup(t.easy);
		curl_multi_cleanup(multi);
		curl_slist_free_all(headers);
		return HTTPC_UNREACHABLE;
	}
	curl_multi_add_handle(multi, t.easy);
	while (running) {
		struct curl_waitfd wfd = { .fd = host_cancel_fd(h), .events = CURL_WAIT_POLLIN };

		if (curl_multi_perform(multi, &running) != CURLM_OK)
			break;
		if (!running)
			break;
		curl_multi_poll(multi, &wfd, 1, 1000, NULL);
		if (host_cancelled(h)) {
			cancelled = true;
			break;
		}
	}
	while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
		if (msg->msg == CURLMSG_DONE)
			result = msg->data.result;
	}
	if (!t.decided && !cancelled && result == CURLE_OK)
		httpc_decide(&t);
	curl_multi_remove_handle(multi, t.easy);
	curl_easy_cleanup(t.easy);
	curl_multi_cleanup(multi);
	curl_slist_free_all(headers);

	if (cancelled)
		rc = HTTPC_CANCELLED;
	else if (t.stop)
		rc = t.stop;
	else if (result == CURLE_OK)
		rc = HTTPC_OK;
	else {
		if (resp->error[0] == '\0')
			snprintf(resp->error, sizeof resp->error, "%s", curl_easy_strerror(result));
		rc = t.decided ? HTTPC_BROKEN : HTTPC_UNREACHABLE;
	}
	return rc;
}
