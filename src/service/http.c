#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "http.h"
#include "http-int.h"
#include "problem.h"
#include "httpparse.h"
#include "idem.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define HTTP_THREADS 2
/* A refused body is read and dropped up to this size, so that the client sees the answer. */
#define HTTP_MAX_DISCARD (8 * 1024 * 1024)
#define HTTP_CONNECTION_TIMEOUT_S 60
/* More query arguments than this get 414 uri_too_long (docs/http-api.md). */
#define HTTP_MAX_QUERY_ARGS 64

/* The mark uri_seen leaves on a request whose query it emptied. */
static char uri_refused;
/* The marker of a request whose URL encodes a NUL byte (%00): it gets 400. */
static char uri_nul;
/* The largest part of a streamed body handed to libmicrohttpd at once. */
#define HTTP_STREAM_BLOCK (64 * 1024)
/*
 * The kernel send buffer of a streamed response (Linux doubles it).  Left to
 * autotuning it grows to 4 MiB per connection, which hides a client that
 * stopped reading from the bounded queues of the event stream.
 */
#define HTTP_STREAM_SNDBUF (512 * 1024)
/*
 * The same on the Unix domain socket, which counts every small send as a
 * buffer of its own (about 1 KiB for a 300-byte frame) where TCP merges
 * them: about as many frames fit as in TCP's.
 */
#define HTTP_STREAM_SNDBUF_UNIX (2 * 1024 * 1024)

/* A streamed body: the handler's reader and the connection to suspend. */
struct http_stream {
	struct MHD_Connection *conn;
	int fd;				/* its socket, or -1 */
	bool unchunked;			/* the body is the bytes after the head */
	http_stream_read_fn read;
	http_stream_free_fn free;
	void *cls;
};

/* Per-request state, from the first call of the access handler to completion. */
struct http_ctx {
	struct buf body;
	int64_t start_ms;
	enum td_code early;	/* an error found before the handler runs */
	bool url_nul;		/* early is for a %00 in the URL */
	size_t discarded;	/* body bytes dropped after an early error */
	bool answered;		/* a response is queued */
	char request_id[32];
	struct http_server *server;
};

const char *
http_query(const struct http_request *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *
http_request_header(const struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

void
http_stream_suspend(struct http_stream *hs)
{
	MHD_suspend_connection(hs->conn);
}

void
http_stream_resume(struct http_stream *hs)
{
	MHD_resume_connection(hs->conn);
}

int
http_stream_fd(struct http_stream *hs)
{
	return hs->fd;
}

/*
 * The body of a stream is delimited by the connection's close, not chunked
 * (response_create), so what is written here is simply the next bytes of it;
 * libmicrohttpd has sent all it was given before the reader suspended, and
 * does not touch the socket until resumed.
 */
ssize_t
http_stream_send(struct http_stream *hs, const char *buf, size_t len)
{
	ssize_t n;

	if (hs->fd < 0 || !hs->unchunked) {
		errno = ENOTSUP;
		return -1;
	}
	do
		n = send(hs->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

static ssize_t
stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_stream *hs = cls;
	ssize_t n;

	(void)pos;
	n = hs->read(hs->cls, hs, buf, max);
	return n == HTTP_STREAM_END ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void
stream_free(void *cls)
{
	struct http_stream *hs = cls;

	if (hs->free != NULL)
		hs->free(hs->cls);
	free(hs);
}

bool
http_query_limit(const struct http_request *req, struct http_response *r, int *limit)
{
	const char *v = http_query(req, "limit");
	char *end;
	long n;

	*limit = 100;
	if (v == NULL)
		return true;
	n = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n < 1 || n > 1000) {
		http_bad_parameter(r, "limit", "limit must be an integer from 1 to 1000");
		return false;
	}
	*limit = (int)n;
	return true;
}

struct header_count {
	int host, origin;
};

static enum MHD_Result
count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct header_count *n = cls;

	(void)kind;
	(void)value;
	if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
		n->host++;
	else if (strcasecmp(key, "Origin") == 0)
		n->origin++;
	return MHD_YES;
}

/* Host and Origin checks against DNS rebinding and browser pages. */
static bool
origin_allowed(struct MHD_Connection *conn, int port)
{
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    "Origin");

	if (host == NULL || !http_loopback_authority(host, port))
		return false;
	if (origin == NULL)
		return true;
	return strncasecmp(origin, "http://", 7) == 0 &&
	    http_loopback_authority(origin + 7, port);
}

/* Bearer token, compared in constant time. */
static bool
token_valid(struct MHD_Connection *conn, const char *token)
{
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);

	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return false;
	auth += 7;
	if (strlen(auth) != TD_TOKEN_HEX)
		return false;
	return sodium_memcmp(auth, token, TD_TOKEN_HEX) == 0;
}

static bool
needs_auth(const char *path)
{
	return strncmp(path, "/api/", 5) == 0 || strncmp(path, "/app/", 5) == 0;
}

/* The idempotency fingerprint: method, path and body, hashed. */
static void
idem_fingerprint(const struct http_request *req, unsigned char fp[IDEM_FP_LEN])
{
	crypto_hash_sha256_state st;

	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const unsigned char *)req->method,
	    strlen(req->method) + 1);
	crypto_hash_sha256_update(&st, (const unsigned char *)req->path,
	    strlen(req->path) + 1);
	if (req->body != NULL)
		crypto_hash_sha256_update(&st, (const unsigned char *)req->body,
		    req->body_len);
	crypto_hash_sha256_final(&st, fp);
}

static const char *
response_header(const struct http_response *r, const char *name)
{
	for (int i = 0; i < r->nheaders; i++) {
		if (strcasecmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	}
	return NULL;
}

/* Runs a handler under the Idempotency-Key rules of DESIGN section 10. */
static void
run_idempotent(const struct route *rt, struct http_request *req,
    struct http_response *r, const char *key)
{
	unsigned char fp[IDEM_FP_LEN];
	struct idem_reply replay = { 0 };
	char retry[16];

	if (!http_idem_key_valid(key)) {
		cJSON *details = cJSON_CreateObject();
		cJSON_AddStringToObject(details, "header", "Idempotency-Key");
		http_error(r, TD_INVALID_REQUEST, details,
		    "Idempotency-Key must be 1 to 255 printable ASCII characters");
		return;
	}
	idem_fingerprint(req, fp);
	switch (idem_begin(req->svc->idem, key, fp, &replay)) {
	case IDEM_PROCEED:
		rt->handler(req, r);
		if (r->status >= 500)
			idem_abandon(req->svc->idem, key);
		else
			idem_complete(req->svc->idem, key, r->status, r->body,
			    response_header(r, "Location"));
		return;
	case IDEM_REPLAY:
		free(r->body);
		r->status = replay.status;
		r->body = replay.body;
		r->body_len = strlen(r->body);
		if (replay.location != NULL)
			http_add_header(r, "Location", replay.location);
		free(replay.location);
		http_add_header(r, "Idempotent-Replayed", "true");
		return;
	case IDEM_CONFLICT:
		http_error(r, TD_IDEMPOTENCY_CONFLICT, NULL,
		    "This Idempotency-Key was already used with a different request; "
		    "use a new key for a new body.");
		return;
	case IDEM_FULL:
		snprintf(retry, sizeof retry, "%d", IDEM_RETRY_AFTER_S);
		http_error(r, TD_IDEMPOTENCY_UNAVAILABLE, NULL, NULL);
		http_add_header(r, "Retry-After", retry);
		return;
	}
}

/* Finds the route and runs it; fills r. */
static void
dispatch(struct http_request *req, struct http_response *r)
{
	size_t plen = strlen(req->path);
	char *scratch = xmalloc(plen + 1);
	const struct route *found = NULL;
	char allow[128] = "";

	store_disk_full_clear();
	for (size_t i = 0; i < routes_count; i++) {
		const char *params[HTTP_MAX_PARAMS] = { 0 };

		if (!http_route_match(routes[i].pattern, req->path, scratch, params,
		    HTTP_MAX_PARAMS))
			continue;
		if (strcmp(routes[i].method, req->method) == 0) {
			found = &routes[i];
			memcpy(req->params, params, sizeof params);
			break;
		}
		if (strlen(allow) + strlen(routes[i].method) + 3 < sizeof allow) {
			if (allow[0])
				strcat(allow, ", ");
			strcat(allow, routes[i].method);
		}
	}
	if (found == NULL) {
		if (allow[0]) {
			http_error(r, TD_METHOD_NOT_ALLOWED, NULL,
			    "%s is not allowed here; allowed: %s", req->method, allow);
			http_add_header(r, "Allow", allow);
		} else {
			cJSON *details = cJSON_CreateObject();
			cJSON_AddStringToObject(details, "resource", "route");
			http_error(r, TD_NOT_FOUND, details, "There is no route %s.", req->path);
		}
		goto out;
	}
	if (found->flags & ROUTE_BODY) {
		enum json_problem problem = JSON_MALFORMED;
		char field[256];

		req->json = req->body ? json_parse_why(req->body, req->body_len, &problem,
		    field, sizeof field) : NULL;
		if (req->body == NULL) {
			http_error(r, TD_INVALID_REQUEST, NULL, "A JSON body is required.");
			goto out;
		}
		if (problem == JSON_DUPLICATE_KEY) {
			cJSON *details = cJSON_CreateObject();
			cJSON_AddStringToObject(details, "field", field);
			http_error(r, TD_INVALID_REQUEST, details,
			    "The body has the key %s twice; send each key once.", field);
			goto out;
		}
		if (problem == JSON_TOO_MANY_MEMBERS) {
			cJSON *details = NULL;

			if (field[0] != '\0') {
				details = cJSON_CreateObject();
				cJSON_AddStringToObject(details, "field", field);
			}
			http_error(r, TD_INVALID_REQUEST, details, "%s%s has more than %d members.",
			    field[0] ? "The object " : "The body", field, JSON_MAX_MEMBERS);
			goto out;
		}
		if (problem == JSON_NUL_IN_STRING) {
			http_error(r, TD_INVALID_REQUEST, NULL,
			    "The body has a string with \\u0000, which no field accepts.");
			goto out;
		}
		if (req->json == NULL) {
			http_error(r, TD_INVALID_REQUEST, NULL,
			    "The body is not valid JSON (UTF-8, at most %d levels deep).",
			    JSON_MAX_DEPTH);
			goto out;
		}
		if (!cJSON_IsObject(req->json)) {
			http_error(r, TD_INVALID_REQUEST, NULL, "The body must be a JSON object.");
			goto out;
		}
	}
	const char *key = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    "Idempotency-Key");
	if ((found->flags & ROUTE_IDEMPOTENT) && key != NULL)
		run_idempotent(found, req, r, key);
	else
		found->handler(req, r);
	if (r->body == NULL && !r->has_fd && r->stream_read == NULL)
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
out:
	cJSON_Delete(req->json);
	req->json = NULL;
	free(scratch);
}

static void
response_drop_headers(struct http_response *r)
{
	for (int i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	r->nheaders = 0;
}

/* The libmicrohttpd response for r's body; r no longer owns the body. */
static struct MHD_Response *
response_create(struct MHD_Connection *conn, struct http_response *r)
{
	struct MHD_Response *resp;

	if (r->stream_read != NULL) {
		struct http_stream *hs = xcalloc(1, sizeof *hs);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		int sndbuf = HTTP_STREAM_SNDBUF, one = 1, domain = AF_INET;
		socklen_t dlen = sizeof domain;

		hs->fd = ci != NULL ? ci->connect_fd : -1;
		if (hs->fd >= 0 && getsockopt(hs->fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 &&
		    domain == AF_UNIX)
			sndbuf = HTTP_STREAM_SNDBUF_UNIX;
		if (hs->fd >= 0 && setsockopt(hs->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
		    sizeof sndbuf) != 0)
			log_debug("cannot bound the send buffer of a stream");
		/* A frame written by http_stream_send leaves at once. */
		if (hs->fd >= 0 && domain != AF_UNIX && setsockopt(hs->fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof one) != 0)
			log_debug("cannot set TCP_NODELAY on a stream");

		hs->conn = conn;
		hs->read = r->stream_read;
		hs->free = r->stream_free;
		hs->cls = r->stream_cls;
		r->stream_read = NULL;
		r->stream_free = NULL;
		r->stream_cls = NULL;
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
		    HTTP_STREAM_BLOCK, stream_reader, hs, stream_free);
		/* Not chunked: the body ends with the connection (http_stream_send). */
		if (resp != NULL)
			hs->unchunked = MHD_set_response_options(resp,
			    MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END) == MHD_YES;
		if (resp != NULL)
			return resp;
		stream_free(hs);
		log_error("cannot make a streamed response");
		response_drop_headers(r);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
	}

	if (r->has_fd) {
		r->has_fd = false;
		resp = MHD_create_response_from_fd_at_offset64(r->fd_length, r->fd,
		    r->fd_offset);
		if (resp != NULL)
			return resp;
		close(r->fd);
		log_error("cannot make a response of %llu bytes from a file",
		    (unsigned long long)r->fd_length);
		response_drop_headers(r);
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
	}
	resp = MHD_create_response_from_buffer(r->body_len, r->body,
	    MHD_RESPMEM_MUST_FREE);
	r->body = NULL;
	return resp;
}

static enum MHD_Result
queue(struct MHD_Connection *conn, struct http_ctx *ctx, const char *method,
    const char *url, struct http_response *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	http_conns_answered(ctx->server, conn);
	resp = response_create(conn, r);
	if (response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE) == NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
		    "application/json; charset=utf-8");
	MHD_add_response_header(resp, "X-Request-Id", ctx->request_id);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	for (int i = 0; i < r->nheaders; i++)
		MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
	response_drop_headers(r);
	ret = MHD_queue_response(conn, (unsigned)r->status, resp);
	ctx->answered = true;
	MHD_destroy_response(resp);
	log_debug("%s %s %d %lldms %s", method, url, r->status,
	    (long long)(clock_mono_ms() - ctx->start_ms), ctx->request_id);
	if (r->status >= 500)
		log_warn("%s %s answered %d (%s)", method, url, r->status, ctx->request_id);
	return ret;
}

/* Checks that need only the request line and headers. */
static enum td_code
early_checks(struct http_server *h, struct MHD_Connection *conn, const char *url)
{
	const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (atomic_load(&h->svc->shutting_down))
		return TD_UNAVAILABLE;
	/* Only the first of two copies would be checked: two Hosts are a bad request
	 * (RFC 9112, section 3.2), two Origins are refused like a foreign one. */
	struct header_count n = { 0, 0 };
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &n);
	if (n.host > 1)
		return TD_INVALID_REQUEST;
	if (n.origin > 1 || !origin_allowed(conn, h->port))
		return TD_FORBIDDEN;
	if (needs_auth(url) && !token_valid(conn, h->svc->token))
		return TD_UNAUTHORIZED;
	if (clen != NULL && strtoull(clen, NULL, 10) > HTTP_MAX_BODY)
		return TD_PAYLOAD_TOO_LARGE;
	return TD_OK;
}

static const char *
early_message(enum td_code code)
{
	switch (code) {
	case TD_FORBIDDEN:
		return "The Host or Origin header does not name this service's "
		    "loopback address.";
	case TD_INVALID_REQUEST:
		return "The request has more than one Host header.";
	case TD_URI_TOO_LONG:
		return "The URL has more than 64 query arguments.";
	case TD_UNAUTHORIZED:
		return "A valid bearer token is required (Authorization: Bearer <token>).";
	case TD_PAYLOAD_TOO_LARGE:
		return "The request body is larger than 1 MiB.";
	default:
		return errcode_default_message(code);
	}
}

static bool
expects_continue(struct MHD_Connection *conn)
{
	const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_EXPECT);

	return expect != NULL && strcasecmp(expect, "100-continue") == 0;
}

/* Answers the error found before the handler could run. */
static enum MHD_Result
queue_error(struct MHD_Connection *conn, struct http_ctx *ctx, const char *method,
    const char *url)
{
	struct http_response r = { 0 };

	http_error(&r, ctx->early, NULL, "%s", ctx->url_nul ? "The URL encodes a NUL byte "
	    "(%00), which no path or parameter may hold." : early_message(ctx->early));
	if (ctx->early == TD_UNAUTHORIZED)
		http_add_header(&r, "WWW-Authenticate", "Bearer realm=\"taskdeck\"");
	return queue(conn, ctx, method, url, &r);
}

/*
 * The request line's URI, before libmicrohttpd parses its query: a query of more
 * than HTTP_MAX_QUERY_ARGS arguments would use up the connection's memory while
 * being parsed, and the connection would end with no answer at all.  Its query is
 * emptied where it lies in the connection's buffer (the '?' stays, so the parser
 * gets ""), and the request is marked to get 414 uri_too_long.
 */
static void *
uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	/* Decoded, a NUL would end the path or a value early: another route would answer. */
	if (http_uri_has_nul(uri))
		return &uri_nul;
	if (http_query_arg_count(uri) <= HTTP_MAX_QUERY_ARGS)
		return NULL;
	strchr(uri, '?')[1] = '\0';
	return &uri_refused;
}


static enum MHD_Result
access_handler(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_server *h = cls;
	struct http_ctx *ctx = *con_cls;
	struct http_response r = { 0 };
	struct http_request req = { 0 };

	if (ctx == NULL || (void *)ctx == (void *)&uri_refused || (void *)ctx == (void *)&uri_nul) {
		bool refused = (void *)ctx == (void *)&uri_refused;
		bool nul = (void *)ctx == (void *)&uri_nul;

		/*
		 * Answer on a later call, never the first: queueing a response on
		 * the first call makes libmicrohttpd close the connection.
		 */
		http_conns_headers_in(h, conn);
		ctx = xcalloc(1, sizeof *ctx);
		ctx->server = h;
		buf_init(&ctx->body, HTTP_MAX_BODY);
		ctx->start_ms = clock_mono_ms();
		id_new("req", ctx->request_id);
		ctx->early = early_checks(h, conn, url);
		if (ctx->early == TD_OK && refused)
			ctx->early = TD_URI_TOO_LONG;
		if (ctx->early == TD_OK && nul) {
			ctx->early = TD_INVALID_REQUEST;
			ctx->url_nul = true;
		}
		atomic_fetch_add(&h->in_flight, 1);
		*con_cls = ctx;
		/* Except for a body we will refuse that the client has not sent yet. */
		if (ctx->early == TD_PAYLOAD_TOO_LARGE && expects_continue(conn))
			return queue_error(conn, ctx, method, url);
		return MHD_YES;
	}
	if (ctx->answered) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		if (ctx->early == TD_OK &&
		    !buf_append(&ctx->body, upload_data, *upload_data_size)) {
			ctx->early = TD_PAYLOAD_TOO_LARGE;
			buf_free(&ctx->body);
		}
		if (ctx->early != TD_OK)
			ctx->discarded += *upload_data_size;
		*upload_data_size = 0;
		if (ctx->discarded > HTTP_MAX_DISCARD)
			return queue_error(conn, ctx, method, url);
		return MHD_YES;
	}
	if (ctx->early != TD_OK)
		return queue_error(conn, ctx, method, url);
	/* The request is whole: however long its handler takes, it no longer waits. */
	http_conns_answered(h, conn);
	req.svc = h->svc;
	req.conn = conn;
	req.method = method;
	req.path = url;
	req.body = ctx->body.len ? ctx->body.data : NULL;
	req.body_len = ctx->body.len;
	memcpy(req.request_id, ctx->request_id, sizeof req.request_id);
	dispatch(&req, &r);
	return queue(conn, ctx, method, url, &r);
}

static void
request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;
	struct http_ctx *ctx = *con_cls;

	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		http_conns_request_ended(h, conn);
	if (ctx == NULL || (void *)ctx == (void *)&uri_refused || (void *)ctx == (void *)&uri_nul) {
		*con_cls = NULL;
		return;
	}
	/* A body may hold a credential's secret (POST/PATCH /credentials). */
	if (ctx->body.data != NULL)
		sodium_memzero(ctx->body.data, ctx->body.len);
	buf_free(&ctx->body);
	free(ctx);
	*con_cls = NULL;
	atomic_fetch_sub(&h->in_flight, 1);
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("libmicrohttpd: %s", line);
}

/*
 * libmicrohttpd corks the socket (TCP_CORK) while it sends a file body in
 * 128 KiB sendfile() chunks.  On loopback that costs a third to a half of
 * the download rate (bench/download), and no answer of ours gains from it:
 * JSON answers leave in one sendmsg().  This definition comes before the C
 * library's for libmicrohttpd too, so the service refuses the option and
 * passes every other one to the kernel.
 */
int
setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	if (level == IPPROTO_TCP && name == TCP_CORK)
		return 0;
	return (int)syscall(SYS_setsockopt, fd, level, name, value, len);
}

static void
http_free(struct http_server *h)
{
	free(h->unix_path);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cond);
	free(h);
}

/*
 * A listening Unix domain socket at path, for its owner alone (0600, in a
 * directory that is 0700 anyway); -1 with *why set.  A socket a service left
 * behind (kill -9) is replaced: the caller holds the home's lock.
 */
static int
http_listen_unix(const char *path, char **why)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof su.sun_path) {
		*why = xasprintf("its path is longer than %zu bytes", sizeof su.sun_path - 1);
		return -1;
	}
	memcpy(su.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			*why = xasprintf("something that is not a socket has its name");
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&su, sizeof su) != 0) {
		*why = xasprintf("%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (chmod(path, 0600) != 0 || listen(fd, SOMAXCONN) != 0) {
		*why = xasprintf("%s", strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

/* What both of the server's daemons are started with, after where they listen. */
#define HTTP_DAEMON_OPTIONS(h) \
	MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS, \
	MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONNECTION_TIMEOUT_S, \
	MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY, \
	MHD_OPTION_NOTIFY_COMPLETED, request_completed, (h), \
	MHD_OPTION_URI_LOG_CALLBACK, uri_seen, NULL, \
	MHD_OPTION_NOTIFY_CONNECTION, http_conns_notify, (h), \
	MHD_OPTION_CONNECTION_LIMIT, http_conns_limit(), \
	MHD_OPTION_END
#define HTTP_DAEMON_FLAGS (MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | \
	MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME)

/* The server's daemon on sa (TCP) or, sa NULL, on the listening socket lfd. */
static struct MHD_Daemon *
http_daemon(struct http_server *h, const struct sockaddr_in *sa, int lfd)
{
	/* The logger first, so that libmicrohttpd's messages about later options come here too. */
	if (sa != NULL)
		return MHD_start_daemon(HTTP_DAEMON_FLAGS, ntohs(sa->sin_port), NULL, NULL,
		    access_handler, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		    MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)sa, HTTP_DAEMON_OPTIONS(h));
	return MHD_start_daemon(HTTP_DAEMON_FLAGS, 0, NULL, NULL, access_handler, h,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd, HTTP_DAEMON_OPTIONS(h));
}

/*
 * The same server on a Unix domain socket at path: the client core finds it
 * in the discovery file, and a request there skips TCP (its acknowledgments
 * cost a loopback reader half its time per event).  Without it, TCP alone.
 */
static void
http_start_unix(struct http_server *h, const char *path)
{
	char *why = NULL;
	int fd = http_listen_unix(path, &why);

	if (fd >= 0 && (h->udaemon = http_daemon(h, NULL, fd)) == NULL) {
		why = xasprintf("libmicrohttpd did not take it");
		close(fd);
		unlink(path);
	}
	if (h->udaemon == NULL) {
		log_warn("no Unix domain socket at %s (%s): clients use TCP", path, why);
		free(why);
		return;
	}
	h->unix_path = xstrdup(path);
}

struct http_server *
http_start(struct service *svc, const char *addr, int port, const char *unix_path,
    char **err)
{
	struct http_server *h = xcalloc(1, sizeof *h);
	struct sockaddr_in sa = { 0 };
	const union MHD_DaemonInfo *info;

	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
	    (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
		*err = xasprintf("%s is not a loopback IPv4 address", addr);
		free(h);
		return NULL;
	}
	h->svc = svc;
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cond, &ca);
	pthread_condattr_destroy(&ca);
	h->daemon = http_daemon(h, &sa, -1);
	if (h->daemon == NULL) {
		*err = xasprintf("cannot listen on %s:%d (in use, or not permitted)",
		    addr, port);
		http_free(h);
		return NULL;
	}
	if (pthread_create(&h->sweeper, NULL, http_conns_sweeper, h) != 0) {
		*err = xasprintf("cannot start the connection sweeper thread");
		MHD_stop_daemon(h->daemon);
		http_free(h);
		return NULL;
	}
	h->sweeper_started = true;
	info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	if (unix_path != NULL)
		http_start_unix(h, unix_path);
	return h;
}

const char *
http_unix_path(const struct http_server *h)
{
	return h->unix_path;
}

int
http_port(const struct http_server *h)
{
	return h->port;
}

void
http_stop(struct http_server *h, int grace_ms)
{
	int64_t deadline = clock_mono_ms() + grace_ms;
	MHD_socket lsock;

	if (h == NULL)
		return;
	lsock = MHD_quiesce_daemon(h->daemon);
	if (lsock != MHD_INVALID_SOCKET)
		close(lsock);
	if (h->udaemon != NULL) {
		unlink(h->unix_path);
		lsock = MHD_quiesce_daemon(h->udaemon);
		if (lsock != MHD_INVALID_SOCKET)
			close(lsock);
	}
	while (atomic_load(&h->in_flight) > 0 && clock_mono_ms() < deadline) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&h->mu);
	h->stopping = true;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->mu);
	if (h->sweeper_started)
		pthread_join(h->sweeper, NULL);
	MHD_stop_daemon(h->daemon);
	if (h->udaemon != NULL)
		MHD_stop_daemon(h->udaemon);
	http_free(h);
}
