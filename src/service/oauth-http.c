/*
 * The requests of OAuth sign-ins (oauth-int.h): plain libcurl exchanges,
 * bounded in time and size, without redirects; and the URL helpers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "json.h"
#include "log.h"
#include "oauth-int.h"

_Thread_local long oauth_deadline;

long
oauth_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t
oauth_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct oauth_fetch *f = ud;

	if (!buf_append(&f->body, data, size * n)) {
		f->too_big = true;
		return 0;
	}
	return size * n;
}

static size_t
oauth_on_header(char *data, size_t size, size_t n, void *ud)
{
	/* Bounded like the body; a header block past it is cut. */
	buf_append(ud, data, size * n);
	return size * n;
}

long
oauth_fetch(const char *url, const char *body, const char *content_type,
    const char *const *headers, struct oauth_fetch *f, struct buf *resp_headers)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	char line[256];
	long status = 0, ms = OAUTH_TIMEOUT_MS;

	memset(f, 0, sizeof *f);
	buf_init(&f->body, OAUTH_MAX_BODY);
	if (h == NULL)
		return 0;
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
		hl = curl_slist_append(hl, headers[i]);
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	if (body != NULL) {
		snprintf(line, sizeof line, "Content-Type: %s", content_type);
		hl = curl_slist_append(hl, line);
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (oauth_deadline != 0 && oauth_deadline - oauth_mono_ms() < ms)
		ms = oauth_deadline - oauth_mono_ms() > 1 ? oauth_deadline - oauth_mono_ms() : 1;
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, oauth_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
	if (resp_headers != NULL) {
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, oauth_on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, resp_headers);
	}
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return status;
}

cJSON *
oauth_get_json(const char *url)
{
	struct oauth_fetch f;
	long status = oauth_fetch(url, NULL, NULL, NULL, &f, NULL);
	cJSON *j = status == 200 && f.body.len > 0 ? json_parse(f.body.data, f.body.len) : NULL;

	buf_free(&f.body);
	if (j != NULL && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	log_debug("oauth: GET %s: %ld%s", url, status, j != NULL ? "" : " (no metadata)");
	return j;
}

bool
oauth_split_url(const char *url, char *origin, size_t olen, char *path, size_t plen)
{
	const char *s = strstr(url, "://"), *p;
	size_t n;

	if (s == NULL)
		return false;
	p = s + 3 + strcspn(s + 3, "/?#");
	snprintf(origin, olen, "%.*s", (int)(p - url), url);
	n = *p == '/' ? strcspn(p, "?#") : 0;
	while (n > 0 && p[n - 1] == '/')
		n--;
	snprintf(path, plen, "%.*s", (int)n, p);
	return true;
}

bool
oauth_list_has(const cJSON *arr, const char *s)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, arr)
		if (cJSON_IsString(v) && strcmp(v->valuestring, s) == 0)
			return true;
	return false;
}

bool
oauth_url_secure(const char *url)
{
	static const char *const loopback[] = { "127.", "localhost", "[::1]", NULL };
	const char *host;

	if (url == NULL)
		return false;
	if (strncasecmp(url, "https://", 8) == 0)
		return true;
	if (strncasecmp(url, "http://", 7) != 0)
		return false;
	host = url + 7;
	for (size_t i = 0; loopback[i] != NULL; i++) {
		size_t n = strlen(loopback[i]);

		if (strncasecmp(host, loopback[i], n) == 0 &&
		    (loopback[i][n - 1] == '.' || host[n] == ':' || host[n] == '/' || host[n] == '\0'))
			return true;
	}
	return false;
}

void
oauth_b64url(const unsigned char *bin, size_t n, char *out, size_t len)
{
	sodium_bin2base64(out, len, bin, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

void
oauth_param(struct buf *b, const char *name, const char *value)
{
	char *v = curl_easy_escape(NULL, value, 0);

	buf_printf(b, "%s%s=%s", b->len == 0 ? "" : "&", name, v != NULL ? v : "");
	curl_free(v);
}
