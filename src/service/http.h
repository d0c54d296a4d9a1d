/*
 * The HTTP layer of taskdeckd: libmicrohttpd on loopback, one route table,
 * Host/Origin and bearer-token checks, bounded JSON bodies, JSON errors and an
 * X-Request-Id on every response.
 */
#ifndef TD_SERVICE_HTTP_H
#define TD_SERVICE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "errors.h"

#define HTTP_MAX_BODY (1024 * 1024)
#define HTTP_MAX_PARAMS 3
#define HTTP_MAX_HEADERS 8

struct service;
struct MHD_Connection;
struct http_stream;

/*
 * Fills buf (max bytes) with the next part of a streamed body: returns the
 * bytes written, or 0 after calling http_stream_suspend (nothing to send
 * until http_stream_resume), or HTTP_STREAM_END.
 */
typedef ssize_t (*http_stream_read_fn)(void *cls, struct http_stream *hs, char *buf,
    size_t max);
typedef void (*http_stream_free_fn)(void *cls);
#define HTTP_STREAM_END ((ssize_t)-1)

struct http_request {
	struct service *svc;
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	const char *params[HTTP_MAX_PARAMS];	/* ":id" captures, in order */
	const char *body;			/* NUL-terminated; NULL when empty */
	size_t body_len;
	cJSON *json;				/* the body, for ROUTE_BODY routes */
	char request_id[32];
};

struct http_header {
	char *name;
	char *value;
};

struct http_response {
	int status;
	char *body;				/* malloc'd; sent as is */
	size_t body_len;
	bool has_fd;				/* the body is fd_length bytes of fd */
	int fd;					/* owned: closed on every path */
	uint64_t fd_offset, fd_length;
	http_stream_read_fn stream_read;	/* a streamed body of unknown length */
	http_stream_free_fn stream_free;	/* called once with stream_cls */
	void *stream_cls;
	struct http_header headers[HTTP_MAX_HEADERS];
	int nheaders;
};

typedef void (*route_fn)(struct http_request *, struct http_response *);

enum route_flags {
	ROUTE_BODY = 1 << 0,		/* needs a JSON object body */
	ROUTE_IDEMPOTENT = 1 << 1,	/* honours Idempotency-Key */
};

struct route {
	const char *method;
	const char *pattern;		/* "/api/v1/projects/:id" */
	route_fn handler;
	unsigned flags;
};

extern const struct route routes[];
extern const size_t routes_count;

/*
 * Starts listening on addr:port (port 0: ephemeral) and, unix_path not NULL,
 * on a Unix domain socket there too (a warning in the log when it cannot);
 * NULL with *err set.
 */
struct http_server *http_start(struct service *svc, const char *addr, int port,
    const char *unix_path, char **err);
/* The port actually bound. */
int http_port(const struct http_server *h);
/* The Unix domain socket's path, NULL when there is none. */
const char *http_unix_path(const struct http_server *h);
/* Stops accepting, lets requests in flight finish (up to grace_ms), stops. */
void http_stop(struct http_server *h, int grace_ms);

/* Response builders for handlers.  Each replaces any earlier body. */
void http_json(struct http_response *r, int status, cJSON *body);	/* consumes body */
/* A body already rendered as JSON text of len bytes; takes text (malloc'd). */
void http_json_text(struct http_response *r, int status, char *text, size_t len);
void http_error(struct http_response *r, enum td_code code, cJSON *details,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));	/* consumes details */
/* 400 invalid_request naming the field. */
/*
 * Answers the refusal p (problem.h) of a domain module: its code, message
 * and details, with details.field (details.resource for not_found) when p
 * names one.  Takes p->details.
 */
struct problem;
void http_problem(struct http_response *r, struct problem *p);
void http_bad_field(struct http_response *r, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 400 invalid_request naming the query parameter (details.parameter). */
void http_bad_parameter(struct http_response *r, const char *parameter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void http_not_found(struct http_response *r, const char *resource, const char *id);
/* 200 with body (consumed), or http_not_found when body is NULL. */
void http_json_found(struct http_response *r, cJSON *body, const char *resource,
    const char *id);
/*
 * A body of length bytes of the file fd from offset, sent with sendfile;
 * takes fd (closed when sent, replaced or failed).  The handler sets
 * Content-Type; libmicrohttpd sets Content-Length.
 */
void http_file(struct http_response *r, int status, int fd, uint64_t offset,
    uint64_t length);
/*
 * A body of unknown length produced by read, ended by closing the connection
 * (not chunked); free(cls) is called once when the response is done, replaced
 * or failed.  The handler sets Content-Type.
 */
void http_stream(struct http_response *r, int status, http_stream_read_fn read,
    http_stream_free_fn free, void *cls);
/* Only inside read, just before it returns 0: no more calls until resumed. */
void http_stream_suspend(struct http_stream *hs);
/* From any thread, while the stream's free callback has not run. */
void http_stream_resume(struct http_stream *hs);
/* The socket of a stream's connection (to poll for the client going), or -1. */
int http_stream_fd(struct http_stream *hs);
/*
 * Only while suspended, from any thread: writes up to len bytes of the body
 * straight to the socket without blocking; the bytes written or -1 (errno).
 */
ssize_t http_stream_send(struct http_stream *hs, const char *buf, size_t len);
void http_add_header(struct http_response *r, const char *name, const char *value);
/* Link: <URI>; rel="next", the URI formatted from fmt. */
void http_link_next(struct http_response *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A query-string argument, or NULL. */
const char *http_query(const struct http_request *req, const char *key);
/* A request header (case-insensitive name), or NULL. */
const char *http_request_header(const struct http_request *req, const char *name);
/* Parses ?limit= (1..1000, default 100); false after answering 400. */
bool http_query_limit(const struct http_request *req, struct http_response *r, int *limit);

#endif
