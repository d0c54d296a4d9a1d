#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fake-provider.h"
#include "xalloc.h"

#define FAKE_MAX_REQUESTS 32
#define FAKE_MAX_INFO 32

/*
 * A model-info path: what it answers when set (fake_provider_info; json NULL:
 * only asked, answered 404) and how often it was asked and answered.
 */
struct fake_info {
	char *path;
	char *json;
	size_t asked;
	size_t hits;
	size_t after;		/* answers 404 before this many scripted requests */
};

struct fake_provider {
	struct MHD_Daemon *daemon;
	int port;
	const struct fake_reply *replies;
	size_t nreplies;
	pthread_mutex_t mu;
	struct fake_request requests[FAKE_MAX_REQUESTS];
	size_t nrequests;
	struct fake_info info[FAKE_MAX_INFO];	/* fake_provider_info, and the paths asked */
	size_t ninfos;
	size_t ninfo;			/* info requests answered */
	char *info_headers[3];		/* Authorization, x-api-key, anthropic-version of the last */
	size_t gets_scripted;		/* GETs still answered from the script */
	fake_reply_fn fn;		/* fake_provider_start_fn: replies made per request */
	void *fn_ud;
	size_t nrefused;	/* requests a check refused */
	struct fake_check {
		const char *when, *must_have, *refusal;
		int status;
	} checks[FAKE_MAX_REQUESTS], every;	/* fake_provider_check */
};

void
fake_provider_check(struct fake_provider *fp, size_t i, const char *when,
    const char *must_have, int status, const char *refusal)
{
	struct fake_check c = { when, must_have, refusal, status };

	if (i >= FAKE_MAX_REQUESTS && i != FAKE_EVERY)
		return;
	pthread_mutex_lock(&fp->mu);
	if (i == FAKE_EVERY)
		fp->every = c;
	else
		fp->checks[i] = c;
	pthread_mutex_unlock(&fp->mu);
}

/* The check of fp's next request that body fails, or NULL (fp->mu held). */
static const struct fake_check *
fake_failed_check(const struct fake_provider *fp, const char *body)
{
	const struct fake_check *c[2] = { &fp->every,
		fp->nrequests < FAKE_MAX_REQUESTS ? &fp->checks[fp->nrequests] : NULL };

	for (int i = 0; i < 2; i++)
		if (c[i] != NULL && c[i]->must_have != NULL &&
		    (c[i]->when == NULL || strstr(body, c[i]->when) != NULL) &&
		    strstr(body, c[i]->must_have) == NULL)
			return c[i];
	return NULL;
}

/* The entry for url, or NULL (under fp->mu). */
static struct fake_info *
fake_info_find(struct fake_provider *fp, const char *url)
{
	for (size_t i = 0; i < fp->ninfos; i++)
		if (strcmp(fp->info[i].path, url) == 0)
			return &fp->info[i];
	return NULL;
}

/* The entry for url, made (not set: 404) if there is room, or NULL (under fp->mu). */
static struct fake_info *
fake_info_entry(struct fake_provider *fp, const char *url)
{
	struct fake_info *fi = fake_info_find(fp, url);

	if (fi == NULL && fp->ninfos < FAKE_MAX_INFO) {
		fi = &fp->info[fp->ninfos++];
		fi->path = xstrdup(url);
	}
	return fi;
}

/*
 * Requests about models, answered outside the script: a path set with
 * fake_provider_info, Ollama's /api/show, and what the agent asks about a
 * server or a model's window (GETs, Ollama's /api/version among them: unless
 * fake_provider_script_gets).
 */
static bool
fake_is_info(struct fake_provider *fp, const char *url, const char *method)
{
	struct fake_info *fi;
	bool info;

	pthread_mutex_lock(&fp->mu);
	fi = fake_info_find(fp, url);
	info = (fi != NULL && fi->json != NULL) || strcmp(url, "/api/show") == 0;
	if (!info && strcmp(method, "GET") == 0) {
		info = fp->gets_scripted == 0;
		if (!info)
			fp->gets_scripted--;
	}
	pthread_mutex_unlock(&fp->mu);
	return info;
}

static const char *const fake_info_names[] = { "Authorization", "x-api-key",
	"anthropic-version" };

/* Keeps the headers of an info request (under fp->mu). */
static void
fake_info_headers(struct fake_provider *fp, struct MHD_Connection *conn)
{
	for (size_t i = 0; i < 3; i++) {
		const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		    fake_info_names[i]);

		free(fp->info_headers[i]);
		fp->info_headers[i] = v ? xstrdup(v) : NULL;
	}
}

char *
fake_provider_info_header(struct fake_provider *fp, const char *name)
{
	char *v = NULL;

	pthread_mutex_lock(&fp->mu);
	for (size_t i = 0; i < 3; i++)
		if (strcasecmp(fake_info_names[i], name) == 0 && fp->info_headers[i] != NULL)
			v = xstrdup(fp->info_headers[i]);
	pthread_mutex_unlock(&fp->mu);
	return v;
}

/* A model-info request: its answer, outside the script. */
static enum MHD_Result
fake_info(struct fake_provider *fp, struct MHD_Connection *conn, const char *url)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	struct fake_info *fi;
	char *body;
	unsigned status = 404;

	pthread_mutex_lock(&fp->mu);
	fp->ninfo++;
	fake_info_headers(fp, conn);
	if ((fi = fake_info_entry(fp, url)) != NULL)
		fi->asked++;
	if (fi != NULL && fi->json != NULL && fp->nrequests >= fi->after) {
		fi->hits++;
		body = xstrdup(fi->json);
		status = 200;
	} else {
		/* Go's net/http (Ollama's router) says this; the others a JSON error. */
		body = xstrdup(strcmp(url, "/api/version") == 0 ? "404 page not found" :
		    "{\"error\":\"model not found\"}");
	}
	pthread_mutex_unlock(&fp->mu);
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

void
fake_provider_info(struct fake_provider *fp, const char *path, const char *json)
{
	fake_provider_info_after(fp, path, json, 0);
}

void
fake_provider_info_after(struct fake_provider *fp, const char *path, const char *json,
    size_t after)
{
	struct fake_info *fi;

	pthread_mutex_lock(&fp->mu);
	if ((fi = fake_info_entry(fp, path)) != NULL) {
		free(fi->json);
		fi->json = xstrdup(json);
		fi->after = after;
	}
	pthread_mutex_unlock(&fp->mu);
}

size_t
fake_provider_info_hits(struct fake_provider *fp, const char *path)
{
	struct fake_info *fi;
	size_t n;

	pthread_mutex_lock(&fp->mu);
	fi = fake_info_find(fp, path);
	n = fi ? fi->hits : 0;
	pthread_mutex_unlock(&fp->mu);
	return n;
}

void
fake_provider_script_gets(struct fake_provider *fp, size_t n)
{
	pthread_mutex_lock(&fp->mu);
	fp->gets_scripted = n;
	pthread_mutex_unlock(&fp->mu);
}

size_t
fake_provider_info_asked(struct fake_provider *fp, const char *path)
{
	struct fake_info *fi;
	size_t n;

	pthread_mutex_lock(&fp->mu);
	fi = fake_info_find(fp, path);
	n = fi ? fi->asked : 0;
	pthread_mutex_unlock(&fp->mu);
	return n;
}

size_t
fake_provider_info_count(struct fake_provider *fp)
{
	size_t n;

	pthread_mutex_lock(&fp->mu);
	n = fp->ninfo;
	pthread_mutex_unlock(&fp->mu);
	return n;
}

/* One connection's upload, then its reply. */
struct fake_conn {
	struct buf body;
};

struct fake_stream {
	const struct fake_reply *reply;
	size_t len;
	int fd;			/* the connection's socket */
	struct fake_reply made;	/* a reply of fake_provider_start_fn (its body owned) */
};

static void
fake_stream_free(void *cls)
{
	struct fake_stream *s = cls;

	free(s->made.body);
	free(s);
}

static ssize_t
fake_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct fake_stream *s = cls;
	size_t n;

	if (pos >= s->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (pos > 0 && s->reply->chunk_delay_us > 0)
		usleep((useconds_t)s->reply->chunk_delay_us);
	if (s->reply->reset_after > 0 && pos >= s->reply->reset_after) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		/* Closed with a zero linger: the peer gets a reset, as from a dying proxy. */
		setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = s->len - (size_t)pos;
	if (s->reply->chunk > 0 && n > s->reply->chunk)
		n = s->reply->chunk;
	if (n > max)
		n = max;
	if (s->reply->reset_after > 0 && pos + n > s->reply->reset_after)
		n = s->reply->reset_after - (size_t)pos;
	memcpy(out, s->reply->body + pos, n);
	return (ssize_t)n;
}

static char *
fake_header(struct MHD_Connection *conn, const char *name)
{
	return xstrdup_or_null(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name));
}

/* A reply of fake_provider_start_fn's function. */
static enum MHD_Result
fake_made(struct fake_provider *fp, struct MHD_Connection *conn, const char *body)
{
	struct fake_stream *s = xcalloc(1, sizeof *s);
	struct MHD_Response *resp;
	enum MHD_Result ret;

	s->made = fp->fn(fp->fn_ud, body);
	if (s->made.content_type == NULL)
		s->made.content_type = "text/event-stream";
	if (s->made.body == NULL)
		s->made.body = xstrdup("");
	s->reply = &s->made;
	s->len = strlen(s->made.body);
	s->fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD)->connect_fd;
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, fake_read, s,
	    fake_stream_free);
	MHD_add_response_header(resp, "Content-Type", s->made.content_type);
	ret = MHD_queue_response(conn, (unsigned)(s->made.status ? s->made.status : 200), resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
fake_handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct fake_provider *fp = cls;
	struct fake_conn *c = *con_cls;
	const struct fake_reply *reply = NULL;
	struct fake_stream *s;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (c == NULL) {
		c = xcalloc(1, sizeof *c);
		buf_init(&c->body, 0);
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		buf_append(&c->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (fake_is_info(fp, url, method))
		return fake_info(fp, conn, url);
	if (fp->fn != NULL)
		return fake_made(fp, conn, c->body.data ? c->body.data : "");
	pthread_mutex_lock(&fp->mu);
	if (fake_failed_check(fp, c->body.data ? c->body.data : "") != NULL) {
		const struct fake_check *failed = fake_failed_check(fp, c->body.data ?
		    c->body.data : "");
		const char *refusal = failed->refusal;
		int status = failed->status;

		fp->nrefused++;
		pthread_mutex_unlock(&fp->mu);
		resp = MHD_create_response_from_buffer(strlen(refusal), (void *)refusal,
		    MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(resp, "Content-Type", "application/json");
		ret = MHD_queue_response(conn, (unsigned)status, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	if (fp->nrequests < FAKE_MAX_REQUESTS) {
		struct fake_request *r = &fp->requests[fp->nrequests];

		r->path = xstrdup(url);
		r->authorization = fake_header(conn, "Authorization");
		r->api_key = fake_header(conn, "x-api-key");
		r->version = fake_header(conn, "anthropic-version");
		r->body = c->body.data ? xstrdup(c->body.data) : xstrdup("");
		if (fp->nrequests < fp->nreplies)
			reply = &fp->replies[fp->nrequests];
		fp->nrequests++;
	}
	pthread_mutex_unlock(&fp->mu);
	if (reply == NULL) {
		static char none[] = "{\"error\":{\"message\":\"no reply scripted\"}}";

		resp = MHD_create_response_from_buffer(strlen(none), none, MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(resp, "Content-Type", "application/json");
		ret = MHD_queue_response(conn, 500, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	s = xcalloc(1, sizeof *s);
	s->reply = reply;
	s->len = strlen(reply->body);
	s->fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD)->connect_fd;
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
	    reply->chunk ? reply->chunk : 65536, fake_read, s, free);
	MHD_add_response_header(resp, "Content-Type", reply->content_type);
	for (const char *h = reply->headers; h != NULL && *h != '\0';) {
		const char *nl = strchr(h, '\n'), *colon = strchr(h, ':');
		size_t len = nl ? (size_t)(nl - h) : strlen(h);
		char *name, *value;

		if (colon != NULL && colon < h + len) {
			name = xstrndup(h, (size_t)(colon - h));
			value = xstrndup(colon + 1, len - (size_t)(colon - h) - 1);
			MHD_add_response_header(resp, name, value + strspn(value, " "));
			free(name);
			free(value);
		}
		h += len + (nl != NULL);
	}
	ret = MHD_queue_response(conn, (unsigned)reply->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void
fake_done(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode why)
{
	struct fake_conn *c = *con_cls;

	if (c == NULL)
		return;
	buf_free(&c->body);
	free(c);
	*con_cls = NULL;
}

struct fake_provider *
fake_provider_start(const struct fake_reply *replies, size_t n)
{
	struct fake_provider *fp = xcalloc(1, sizeof *fp);
	struct sockaddr_in addr = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *info;

	fp->replies = replies;
	fp->nreplies = n;
	pthread_mutex_init(&fp->mu, NULL);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fp->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, fake_handle, fp,
	    MHD_OPTION_NOTIFY_COMPLETED, fake_done, fp,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
	if (fp->daemon == NULL) {
		free(fp);
		return NULL;
	}
	info = MHD_get_daemon_info(fp->daemon, MHD_DAEMON_INFO_BIND_PORT);
	fp->port = info ? info->port : 0;
	return fp;
}

struct fake_provider *
fake_provider_start_fn(fake_reply_fn fn, void *ud)
{
	struct fake_provider *fp = fake_provider_start(NULL, 0);

	if (fp != NULL) {
		pthread_mutex_lock(&fp->mu);
		fp->fn = fn;
		fp->fn_ud = ud;
		pthread_mutex_unlock(&fp->mu);
	}
	return fp;
}

const char *
fake_provider_url(const struct fake_provider *fp, const char *suffix)
{
	static char url[256];

	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", fp->port, suffix);
	return url;
}

size_t
fake_provider_count(struct fake_provider *fp)
{
	size_t n;

	pthread_mutex_lock(&fp->mu);
	n = fp->nrequests;
	pthread_mutex_unlock(&fp->mu);
	return n;
}

const struct fake_request *
fake_provider_request(struct fake_provider *fp, size_t i)
{
	return i < fake_provider_count(fp) ? &fp->requests[i] : NULL;
}

void
fake_provider_stop(struct fake_provider *fp)
{
	if (fp == NULL)
		return;
	MHD_stop_daemon(fp->daemon);
	for (size_t i = 0; i < fp->nrequests; i++) {
		free(fp->requests[i].path);
		free(fp->requests[i].authorization);
		free(fp->requests[i].api_key);
		free(fp->requests[i].version);
		free(fp->requests[i].body);
	}
	pthread_mutex_destroy(&fp->mu);
	for (size_t i = 0; i < fp->ninfos; i++) {
		free(fp->info[i].path);
		free(fp->info[i].json);
	}
	for (size_t i = 0; i < 3; i++)
		free(fp->info_headers[i]);
	free(fp);
}

/* OpenAI Chat Completions stream. */

void
fake_openai_delta(struct buf *b, const char *delta_json, const char *finish_reason)
{
	buf_printf(b, "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\","
	    "\"created\":1700000000,\"model\":\"fake-model\",\"choices\":[{\"index\":0,"
	    "\"delta\":%s,\"logprobs\":null,\"finish_reason\":%s%s%s}]}\n\n", delta_json,
	    finish_reason ? "\"" : "", finish_reason ? finish_reason : "null",
	    finish_reason ? "\"" : "");
}

void
fake_openai_text(struct buf *b, const char *text)
{
	cJSON *d = cJSON_CreateObject();
	char *json;

	cJSON_AddStringToObject(d, "content", text);
	json = cJSON_PrintUnformatted(d);
	fake_openai_delta(b, json, NULL);
	free(json);
	cJSON_Delete(d);
}

static void
fake_openai_call_piece(struct buf *b, int index, const char *id, const char *name,
    const char *args)
{
	cJSON *d = cJSON_CreateObject();
	cJSON *calls = cJSON_AddArrayToObject(d, "tool_calls");
	cJSON *c = cJSON_CreateObject();
	cJSON *fn = cJSON_AddObjectToObject(c, "function");
	char *json;

	cJSON_AddNumberToObject(c, "index", index);
	if (id != NULL) {
		cJSON_AddStringToObject(c, "id", id);
		cJSON_AddStringToObject(c, "type", "function");
	}
	if (name != NULL)
		cJSON_AddStringToObject(fn, "name", name);
	cJSON_AddStringToObject(fn, "arguments", args);
	cJSON_AddItemToArray(calls, c);
	json = cJSON_PrintUnformatted(d);
	fake_openai_delta(b, json, NULL);
	free(json);
	cJSON_Delete(d);
}

void
fake_openai_tool_call(struct buf *b, int index, const char *id, const char *name,
    const char *args, size_t piece)
{
	size_t len = strlen(args);

	fake_openai_call_piece(b, index, id, name, "");
	for (size_t off = 0; off < len; off += piece) {
		char *part = xstrndup(args + off, len - off < piece ? len - off : piece);

		fake_openai_call_piece(b, index, NULL, NULL, part);
		free(part);
	}
}

void
fake_openai_usage(struct buf *b, int prompt_tokens, int completion_tokens)
{
	fake_openai_usage_cached(b, prompt_tokens, completion_tokens, 0);
}

void
fake_openai_usage_cached(struct buf *b, int prompt_tokens, int completion_tokens, int cached)
{
	buf_printf(b, "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\","
	    "\"created\":1700000000,\"model\":\"fake-model\",\"choices\":[],\"usage\":{"
	    "\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,"
	    "\"prompt_tokens_details\":{\"cached_tokens\":%d,\"audio_tokens\":0},"
	    "\"completion_tokens_details\":{\"reasoning_tokens\":0,\"audio_tokens\":0,"
	    "\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}}\n\n",
	    prompt_tokens, completion_tokens, prompt_tokens + completion_tokens, cached);
}

void
fake_openai_done(struct buf *b)
{
	buf_appends(b, "data: [DONE]\n\n");
}

void
fake_openai_error(struct buf *b, const char *type, const char *code, const char *message)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	char *json;

	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddNullToObject(e, "param");
	if (code != NULL)
		cJSON_AddStringToObject(e, "code", code);
	else
		cJSON_AddNullToObject(e, "code");
	json = cJSON_PrintUnformatted(doc);
	buf_appends(b, json);
	free(json);
	cJSON_Delete(doc);
}

void
fake_anthropic_error(struct buf *b, const char *type, const char *message)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *e;
	char *json;

	cJSON_AddStringToObject(doc, "type", "error");
	e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddStringToObject(e, "message", message);
	json = cJSON_PrintUnformatted(doc);
	buf_appends(b, json);
	free(json);
	cJSON_Delete(doc);
}

/* Anthropic Messages stream. */

void
fake_anthropic_event(struct buf *b, const char *type, const char *json)
{
	buf_printf(b, "event: %s\ndata: %s\n\n", type, json);
}

void
fake_anthropic_start(struct buf *b, int input_tokens)
{
	fake_anthropic_start_cached(b, input_tokens, 0, 0);
}

void
fake_anthropic_start_cached(struct buf *b, int input_tokens, int cache_read, int cache_write)
{
	char json[768];

	snprintf(json, sizeof json, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_fake\","
	    "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"fake\","
	    "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":%d,"
	    "\"cache_creation_input_tokens\":%d,\"cache_read_input_tokens\":%d,"
	    "\"cache_creation\":{\"ephemeral_5m_input_tokens\":%d,\"ephemeral_1h_input_tokens\":0},"
	    "\"output_tokens\":1,\"service_tier\":\"standard\"}}}", input_tokens, cache_write,
	    cache_read, cache_write);
	fake_anthropic_event(b, "message_start", json);
}

static void
fake_anthropic_delta(struct buf *b, int index, const char *type, const char *key,
    const char *value)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON *d;
	char *json;

	cJSON_AddStringToObject(ev, "type", "content_block_delta");
	cJSON_AddNumberToObject(ev, "index", index);
	d = cJSON_AddObjectToObject(ev, "delta");
	cJSON_AddStringToObject(d, "type", type);
	cJSON_AddStringToObject(d, key, value);
	json = cJSON_PrintUnformatted(ev);
	fake_anthropic_event(b, "content_block_delta", json);
	free(json);
	cJSON_Delete(ev);
}

static void
fake_anthropic_block_stop(struct buf *b, int index)
{
	char json[128];

	snprintf(json, sizeof json, "{\"type\":\"content_block_stop\",\"index\":%d}", index);
	fake_anthropic_event(b, "content_block_stop", json);
}

void
fake_anthropic_text_block(struct buf *b, int index, const char *text)
{
	char json[256];
	size_t half = strlen(text) / 2;
	char *first;

	while (half > 0 && ((unsigned char)text[half] & 0xc0) == 0x80)
		half--;
	first = xstrndup(text, half);

	snprintf(json, sizeof json, "{\"type\":\"content_block_start\",\"index\":%d,"
	    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}", index);
	fake_anthropic_event(b, "content_block_start", json);
	fake_anthropic_delta(b, index, "text_delta", "text", first);
	fake_anthropic_event(b, "ping", "{\"type\": \"ping\"}");
	fake_anthropic_delta(b, index, "text_delta", "text", text + half);
	fake_anthropic_block_stop(b, index);
	free(first);
}

void
fake_anthropic_tool_block(struct buf *b, int index, const char *id, const char *name,
    const char *args, size_t piece)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON *cb;
	char *json;
	size_t len = strlen(args);

	cJSON_AddStringToObject(ev, "type", "content_block_start");
	cJSON_AddNumberToObject(ev, "index", index);
	cb = cJSON_AddObjectToObject(ev, "content_block");
	cJSON_AddStringToObject(cb, "type", "tool_use");
	cJSON_AddStringToObject(cb, "id", id);
	cJSON_AddStringToObject(cb, "name", name);
	cJSON_AddObjectToObject(cb, "input");
	json = cJSON_PrintUnformatted(ev);
	fake_anthropic_event(b, "content_block_start", json);
	free(json);
	cJSON_Delete(ev);
	fake_anthropic_delta(b, index, "input_json_delta", "partial_json", "");
	for (size_t off = 0; off < len; off += piece) {
		char *part = xstrndup(args + off, len - off < piece ? len - off : piece);

		fake_anthropic_delta(b, index, "input_json_delta", "partial_json", part);
		free(part);
	}
	fake_anthropic_block_stop(b, index);
}

void
fake_anthropic_stop(struct buf *b, const char *stop_reason, int output_tokens)
{
	char json[256];

	snprintf(json, sizeof json, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
	    "\"%s\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}", stop_reason,
	    output_tokens);
	fake_anthropic_event(b, "message_delta", json);
	fake_anthropic_event(b, "message_stop", "{\"type\":\"message_stop\"}");
}

/* OpenAI Responses stream (what codex calls with wire_api "responses"). */
void
fake_responses_event(struct buf *b, cJSON *ev)
{
	char *json = cJSON_PrintUnformatted(ev);

	buf_printf(b, "event: %s\ndata: %s\n\n",
	    cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring, json);
	free(json);
	cJSON_Delete(ev);
}

static cJSON *
fake_responses_new(const char *type, int index)
{
	cJSON *ev = cJSON_CreateObject();

	cJSON_AddStringToObject(ev, "type", type);
	if (index >= 0)
		cJSON_AddNumberToObject(ev, "output_index", index);
	return ev;
}

void
fake_responses_start(struct buf *b, const char *id)
{
	cJSON *ev = fake_responses_new("response.created", -1);
	cJSON *r = cJSON_AddObjectToObject(ev, "response");

	cJSON_AddStringToObject(r, "id", id);
	cJSON_AddStringToObject(r, "object", "response");
	cJSON_AddStringToObject(r, "status", "in_progress");
	fake_responses_event(b, ev);
}

static cJSON *
fake_responses_message(const char *item_id, const char *text, bool done)
{
	cJSON *item = cJSON_CreateObject(), *content = NULL;

	cJSON_AddStringToObject(item, "type", "message");
	cJSON_AddStringToObject(item, "id", item_id);
	cJSON_AddStringToObject(item, "role", "assistant");
	cJSON_AddStringToObject(item, "status", done ? "completed" : "in_progress");
	content = cJSON_AddArrayToObject(item, "content");
	if (done) {
		cJSON *part = cJSON_CreateObject();

		cJSON_AddStringToObject(part, "type", "output_text");
		cJSON_AddStringToObject(part, "text", text);
		cJSON_AddArrayToObject(part, "annotations");
		cJSON_AddItemToArray(content, part);
	}
	return item;
}

void
fake_responses_text(struct buf *b, int index, const char *item_id, const char *text,
    size_t piece)
{
	cJSON *ev = fake_responses_new("response.output_item.added", index);
	size_t len = strlen(text);

	cJSON_AddItemToObject(ev, "item", fake_responses_message(item_id, text, false));
	fake_responses_event(b, ev);
	for (size_t off = 0; off < len; off += piece) {
		char *part = xstrndup(text + off, len - off < piece ? len - off : piece);

		ev = fake_responses_new("response.output_text.delta", index);
		cJSON_AddStringToObject(ev, "item_id", item_id);
		cJSON_AddNumberToObject(ev, "content_index", 0);
		cJSON_AddStringToObject(ev, "delta", part);
		fake_responses_event(b, ev);
		free(part);
	}
	ev = fake_responses_new("response.output_item.done", index);
	cJSON_AddItemToObject(ev, "item", fake_responses_message(item_id, text, true));
	fake_responses_event(b, ev);
}

static cJSON *
fake_responses_call(const char *call_id, const char *name, const char *args, bool done)
{
	cJSON *item = cJSON_CreateObject();
	char *id = xasprintf("fc_%s", call_id);

	cJSON_AddStringToObject(item, "type", "function_call");
	cJSON_AddStringToObject(item, "id", id);
	cJSON_AddStringToObject(item, "call_id", call_id);
	cJSON_AddStringToObject(item, "name", name);
	cJSON_AddStringToObject(item, "arguments", done ? args : "");
	cJSON_AddStringToObject(item, "status", done ? "completed" : "in_progress");
	free(id);
	return item;
}

void
fake_responses_function_call(struct buf *b, int index, const char *call_id,
    const char *name, const char *args, size_t piece)
{
	cJSON *ev = fake_responses_new("response.output_item.added", index);
	size_t len = strlen(args);
	char *item_id = xasprintf("fc_%s", call_id);

	cJSON_AddItemToObject(ev, "item", fake_responses_call(call_id, name, args, false));
	fake_responses_event(b, ev);
	for (size_t off = 0; off < len; off += piece) {
		char *part = xstrndup(args + off, len - off < piece ? len - off : piece);

		ev = fake_responses_new("response.function_call_arguments.delta", index);
		cJSON_AddStringToObject(ev, "item_id", item_id);
		cJSON_AddStringToObject(ev, "delta", part);
		fake_responses_event(b, ev);
		free(part);
	}
	ev = fake_responses_new("response.function_call_arguments.done", index);
	cJSON_AddStringToObject(ev, "item_id", item_id);
	cJSON_AddStringToObject(ev, "arguments", args);
	fake_responses_event(b, ev);
	ev = fake_responses_new("response.output_item.done", index);
	cJSON_AddItemToObject(ev, "item", fake_responses_call(call_id, name, args, true));
	fake_responses_event(b, ev);
	free(item_id);
}

void
fake_responses_completed(struct buf *b, const char *id, int input_tokens, int output_tokens)
{
	cJSON *ev = fake_responses_new("response.completed", -1);
	cJSON *r = cJSON_AddObjectToObject(ev, "response");
	cJSON *u, *d;

	cJSON_AddStringToObject(r, "id", id);
	cJSON_AddStringToObject(r, "object", "response");
	cJSON_AddStringToObject(r, "status", "completed");
	u = cJSON_AddObjectToObject(r, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", input_tokens);
	d = cJSON_AddObjectToObject(u, "input_tokens_details");
	cJSON_AddNumberToObject(d, "cached_tokens", 0);
	cJSON_AddNumberToObject(u, "output_tokens", output_tokens);
	d = cJSON_AddObjectToObject(u, "output_tokens_details");
	cJSON_AddNumberToObject(d, "reasoning_tokens", 0);
	cJSON_AddNumberToObject(u, "total_tokens", input_tokens + output_tokens);
	fake_responses_event(b, ev);
}

/* The servers' dialects (fake_dialect_answer). */

static const struct fake_style {
	const char *name;
	const char *model;
	const char *fingerprint;	/* system_fingerprint, or NULL: none sent */
	const char *reasoning;		/* the delta field of reasoning */
	const char *id_head, *id_tail;	/* a call's id: head, its number, tail */
	bool whole_calls;		/* each call whole in one chunk, all with index 0 */
	bool name_without_args;		/* the head of a call has no "arguments" */
	bool usage_with_finish;		/* usage in the chunk of finish_reason */
	bool keep_alive;		/* ": keep-alive" comments while the answer is queued */
	bool timings;			/* llama.cpp's timings beside usage */
} fake_styles[] = {
	[FAKE_OPENAI] = { "openai", "gpt-test", "fp_f33640a400", "reasoning_content",
		"call_Ab", "XyZ", false, false, false, false, false },
	[FAKE_DEEPSEEK] = { "deepseek", "deepseek-v4-flash", "fp_8802369eaa_prod0623_fp8_kvcache",
		"reasoning_content", "call_00_", "Mx9dZp2qRv4Sx0Tz", false, false, true, true, false },
	[FAKE_OLLAMA] = { "ollama", "qwen3:8b", "fp_ollama", "reasoning", "call_k", "8m2xq1",
		true, false, false, false, false },
	[FAKE_LLAMACPP] = { "llama.cpp", "gpt-3.5-turbo", "b6123-2b6c3f2e",
		"reasoning_content", "Qx7Lm2Vt9Rb4Yk", "Wp8Nc3Hs6Jd1Fg5Z", false, false, false, false,
		true },
	[FAKE_VLLM] = { "vllm", "Qwen/Qwen3-8B", NULL, "reasoning",
		"chatcmpl-tool-5b1e0c9a7f", "4d3e8b2a6c", false, true, false, false, false },
	[FAKE_LMSTUDIO] = { "lmstudio", "qwen/qwen3-8b", "qwen/qwen3-8b", "reasoning_content",
		"36517448", "", false, false, false, false, false },
	[FAKE_ANTHROPIC] = { "anthropic", "claude-sonnet-4-5", NULL, NULL, "toolu_01Fk", "Hq2",
		false, false, false, false, false },
};

const char *
fake_dialect_name(enum fake_dialect d)
{
	return fake_styles[d].name;
}

/* One chat.completion.chunk of style st: choices[0] with delta (consumed) and finish. */
static void
fake_style_chunk(struct buf *b, const struct fake_style *st, cJSON *delta, const char *finish,
    cJSON *usage)
{
	cJSON *c = cJSON_CreateObject(), *choices, *ch;
	char *json;

	cJSON_AddStringToObject(c, "id", "chatcmpl-7f3a9c");
	cJSON_AddStringToObject(c, "object", "chat.completion.chunk");
	cJSON_AddNumberToObject(c, "created", 1700000000);
	cJSON_AddStringToObject(c, "model", st->model);
	if (st->fingerprint != NULL)
		cJSON_AddStringToObject(c, "system_fingerprint", st->fingerprint);
	choices = cJSON_AddArrayToObject(c, "choices");
	if (delta != NULL) {
		ch = cJSON_CreateObject();
		cJSON_AddNumberToObject(ch, "index", 0);
		cJSON_AddItemToObject(ch, "delta", delta);
		cJSON_AddNullToObject(ch, "logprobs");
		if (finish != NULL)
			cJSON_AddStringToObject(ch, "finish_reason", finish);
		else
			cJSON_AddNullToObject(ch, "finish_reason");
		cJSON_AddItemToArray(choices, ch);
	}
	if (usage != NULL)
		cJSON_AddItemToObject(c, "usage", usage);
	if (usage != NULL && st->timings) {
		cJSON *t = cJSON_AddObjectToObject(c, "timings");

		cJSON_AddNumberToObject(t, "prompt_n", 120);
		cJSON_AddNumberToObject(t, "prompt_ms", 85.2);
		cJSON_AddNumberToObject(t, "predicted_n", 40);
		cJSON_AddNumberToObject(t, "predicted_ms", 610.4);
	}
	json = cJSON_PrintUnformatted(c);
	buf_printf(b, "data: %s\n\n", json);
	free(json);
	cJSON_Delete(c);
}

static cJSON *
fake_style_usage(enum fake_dialect d, int in, int out)
{
	cJSON *u = cJSON_CreateObject();

	cJSON_AddNumberToObject(u, "prompt_tokens", in);
	cJSON_AddNumberToObject(u, "completion_tokens", out);
	cJSON_AddNumberToObject(u, "total_tokens", in + out);
	if (d == FAKE_DEEPSEEK) {
		cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "prompt_tokens_details"),
		    "cached_tokens", 0);
		cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "completion_tokens_details"),
		    "reasoning_tokens", out / 2);
		cJSON_AddNumberToObject(u, "prompt_cache_hit_tokens", 0);
		cJSON_AddNumberToObject(u, "prompt_cache_miss_tokens", in);
	}
	return u;
}

static cJSON *
fake_style_call(int index, const char *id, const char *name, const char *args)
{
	cJSON *d = cJSON_CreateObject();
	cJSON *c = cJSON_CreateObject(), *fn;

	cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "tool_calls"), c);
	if (id != NULL)
		cJSON_AddStringToObject(c, "id", id);
	if (id != NULL)
		cJSON_AddStringToObject(c, "type", "function");
	cJSON_AddNumberToObject(c, "index", index);
	fn = cJSON_AddObjectToObject(c, "function");
	if (name != NULL)
		cJSON_AddStringToObject(fn, "name", name);
	if (args != NULL)
		cJSON_AddStringToObject(fn, "arguments", args);
	return d;
}

static char *
fake_openai_style_answer(enum fake_dialect d, const char *reasoning, const char *text,
    const struct fake_call *calls, size_t ncalls, bool cut, int in, int out)
{
	const struct fake_style *st = &fake_styles[d];
	struct buf b;
	cJSON *delta;
	const char *finish = cut ? "length" : ncalls > 0 ? "tool_calls" : "stop";

	buf_init(&b, 0);
	if (st->keep_alive)
		buf_appends(&b, ": keep-alive\n\n: keep-alive\n\n");
	delta = cJSON_CreateObject();
	cJSON_AddStringToObject(delta, "role", "assistant");
	if (d == FAKE_DEEPSEEK)
		cJSON_AddNullToObject(delta, "content");
	else
		cJSON_AddStringToObject(delta, "content", "");
	fake_style_chunk(&b, st, delta, NULL, NULL);
	for (size_t off = 0; reasoning != NULL && off < strlen(reasoning); off += 16) {
		char *part = xstrndup(reasoning + off, strnlen(reasoning + off, 16));

		delta = cJSON_CreateObject();
		if (d == FAKE_DEEPSEEK)
			cJSON_AddNullToObject(delta, "content");
		cJSON_AddStringToObject(delta, st->reasoning, part);
		fake_style_chunk(&b, st, delta, NULL, NULL);
		free(part);
	}
	for (size_t off = 0; text != NULL && off < strlen(text); off += 16) {
		char *part = xstrndup(text + off, strnlen(text + off, 16));

		delta = cJSON_CreateObject();
		cJSON_AddStringToObject(delta, "content", part);
		if (d == FAKE_DEEPSEEK)
			cJSON_AddNullToObject(delta, "reasoning_content");
		fake_style_chunk(&b, st, delta, NULL, NULL);
		free(part);
	}
	for (size_t i = 0; i < ncalls; i++) {
		char made[96];
		const char *id = calls[i].id;
		size_t len = strlen(calls[i].args);
		size_t piece = len / 3 + 1;
		int index = st->whole_calls ? 0 : (int)i;

		if (calls[i].cut_at > 0 && calls[i].cut_at < len)
			len = calls[i].cut_at;
		if (id == NULL) {
			snprintf(made, sizeof made, "%s%d%s", st->id_head, (int)i + 1, st->id_tail);
			id = made;
		} else if (id[0] == '\0') {
			id = NULL;	/* a server that sends none */
		}
		if (st->whole_calls || d == FAKE_LMSTUDIO) {
			/* Ollama: each call whole; LM Studio: the head, then the arguments whole. */
			char *args = xstrndup(calls[i].args, len);

			if (d == FAKE_LMSTUDIO) {
				fake_style_chunk(&b, st, fake_style_call(index, id, calls[i].name, ""),
				    NULL, NULL);
				fake_style_chunk(&b, st, fake_style_call(index, NULL, NULL, args), NULL,
				    NULL);
			} else {
				delta = fake_style_call(index, id, calls[i].name, args);
				cJSON_AddStringToObject(delta, "role", "assistant");
				cJSON_AddStringToObject(delta, "content", "");
				fake_style_chunk(&b, st, delta, NULL, NULL);
			}
			free(args);
			continue;
		}
		fake_style_chunk(&b, st, fake_style_call(index, id, calls[i].name,
		    st->name_without_args ? NULL : ""), NULL, NULL);
		for (size_t off = 0; off < len; off += piece) {
			char *part = xstrndup(calls[i].args + off, len - off < piece ? len - off :
			    piece);

			fake_style_chunk(&b, st, fake_style_call(index, NULL, NULL, part), NULL, NULL);
			free(part);
		}
	}
	delta = cJSON_CreateObject();
	if (d == FAKE_DEEPSEEK) {
		cJSON_AddStringToObject(delta, "content", "");
		cJSON_AddNullToObject(delta, "reasoning_content");
	} else if (d == FAKE_OLLAMA) {
		cJSON_AddStringToObject(delta, "role", "assistant");
		cJSON_AddStringToObject(delta, "content", "");
	}
	fake_style_chunk(&b, st, delta, finish, st->usage_with_finish ?
	    fake_style_usage(d, in, out) : NULL);
	if (!st->usage_with_finish)
		fake_style_chunk(&b, st, NULL, NULL, fake_style_usage(d, in, out));
	buf_appends(&b, "data: [DONE]\n\n");
	return buf_steal(&b);
}

static char *
fake_anthropic_style_answer(const char *reasoning, const char *text,
    const struct fake_call *calls, size_t ncalls, bool cut, int in, int out)
{
	struct buf b;
	int index = 0;

	buf_init(&b, 0);
	fake_anthropic_start(&b, in);
	if (reasoning != NULL) {
		char json[512];

		snprintf(json, sizeof json, "{\"type\":\"content_block_start\",\"index\":%d,"
		    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}",
		    index);
		fake_anthropic_event(&b, "content_block_start", json);
		fake_anthropic_delta(&b, index, "thinking_delta", "thinking", reasoning);
		fake_anthropic_delta(&b, index, "signature_delta", "signature",
		    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds2lOvbEZCnYz1HOa");
		fake_anthropic_block_stop(&b, index++);
	}
	if (text != NULL)
		fake_anthropic_text_block(&b, index++, text);
	for (size_t i = 0; i < ncalls; i++) {
		char made[64], *args;
		size_t len = strlen(calls[i].args);

		if (calls[i].cut_at > 0 && calls[i].cut_at < len)
			len = calls[i].cut_at;
		snprintf(made, sizeof made, "%s%d%s", fake_styles[FAKE_ANTHROPIC].id_head, (int)i + 1,
		    fake_styles[FAKE_ANTHROPIC].id_tail);
		args = xstrndup(calls[i].args, len);
		fake_anthropic_tool_block(&b, index++, calls[i].id ? calls[i].id : made,
		    calls[i].name, args, len / 3 + 1);
		free(args);
	}
	fake_anthropic_stop(&b, cut ? "max_tokens" : ncalls > 0 ? "tool_use" : "end_turn", out);
	return buf_steal(&b);
}

char *
fake_dialect_answer(enum fake_dialect d, const char *reasoning, const char *text,
    const struct fake_call *calls, size_t ncalls, bool cut, int prompt_tokens,
    int output_tokens)
{
	if (d == FAKE_ANTHROPIC)
		return fake_anthropic_style_answer(reasoning, text, calls, ncalls, cut,
		    prompt_tokens, output_tokens);
	return fake_openai_style_answer(d, reasoning, text, calls, ncalls, cut, prompt_tokens,
	    output_tokens);
}

void
fake_dialect_check(enum fake_dialect d, struct fake_provider *fp)
{
	if (d != FAKE_DEEPSEEK)
		return;
	/* DeepSeek's answer to a conversation whose answers with calls lost their reasoning. */
	fake_provider_check(fp, FAKE_EVERY, "\"tool_calls\":", "\"reasoning_content\":", 400,
	    "{\"error\":{\"message\":\"The `reasoning_content` in the thinking mode must "
	    "be passed back to the API.\",\"type\":\"invalid_request_error\",\"param\":null,"
	    "\"code\":\"invalid_request_error\"}}");
}
