/*
 * What http.c and http-conns.c share: the server and its connections.
 */
#ifndef TD_SERVICE_HTTP_INT_H
#define TD_SERVICE_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Per-connection memory of libmicrohttpd (request line, headers, read
 * buffer).  It is cleared for every request, so smaller is faster; 16 KiB
 * still holds any sane set of headers.
 */
#define HTTP_CONNECTION_MEMORY (16 * 1024)
/*
 * Connections (docs/service.md, Connections).  A connection waits while it has
 * not sent a whole request: after accept, while its body comes, and between
 * two requests of a kept-alive connection.  A new one must send its headers
 * within HTTP_HEADER_DEADLINE_MS, then its body within HTTP_BODY_DEADLINE_MS;
 * a kept-alive one may wait HTTP_KEEPALIVE_IDLE_MS for its next request.  When
 * more than HTTP_MAX_WAITING wait, the oldest waiting ones are closed, so that
 * slow or silent connections can never use up the HTTP_MAX_CONNECTIONS that
 * libmicrohttpd accepts: a client that sends its request at once is never the
 * oldest.  Two kinds are spared, so that a burst of clients is answered: one
 * waiting for less than HTTP_WAIT_GRACE_MS, and one whose whole request head
 * has arrived but sits unread in its socket (it no longer waits).
 */
#define HTTP_HEADER_DEADLINE_MS 5000
#define HTTP_BODY_DEADLINE_MS 10000
#define HTTP_KEEPALIVE_IDLE_MS 30000
#define HTTP_MAX_WAITING 256
#define HTTP_WAIT_GRACE_MS 500
#define HTTP_MAX_CONNECTIONS 2048
/* Descriptors kept for the store, run pipes, files and logs besides the connections. */
#define HTTP_FD_RESERVE 512
#define HTTP_SWEEP_MS 250
/* What a waiting connection has not sent yet, and its deadline. */
enum conn_phase {
	CONN_HEADERS,		/* a new connection: HTTP_HEADER_DEADLINE_MS */
	CONN_BODY,		/* headers in, body coming: HTTP_BODY_DEADLINE_MS */
	CONN_IDLE,		/* kept alive after a request: HTTP_KEEPALIVE_IDLE_MS */
};

/* One connection, from accept to close (MHD_OPTION_NOTIFY_CONNECTION). */
struct http_conn {
	struct http_conn *prev, *next;	/* in the waiting list, oldest first */
	int fd;
	int64_t since_ms;		/* accepted, or its last request completed */
	bool waiting;			/* in the waiting list */
	enum conn_phase phase;		/* what it is waiting for */
	bool evicted;			/* shut down by us; libmicrohttpd closes it */
	bool unread;			/* its request head was in its socket, unread */
};

struct http_server {
	struct MHD_Daemon *daemon;
	/* The same server on a Unix domain socket (NULL without): its path, to remove at the stop. */
	struct MHD_Daemon *udaemon;
	char *unix_path;
	struct service *svc;
	int port;
	atomic_int in_flight;
	/* The connections waiting for a request's headers, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct http_conn *wait_head, *wait_tail;
	int nwaiting;
	bool stopping;
	pthread_t sweeper;
	bool sweeper_started;
	atomic_long evicted;
};

/* MHD_OPTION_NOTIFY_CONNECTION: a connection is accepted or closed. */
void http_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode code);
/* A request's headers are in: it waits for its body now. */
void http_conns_headers_in(struct http_server *h, struct MHD_Connection *conn);
/* A response is queued: the connection no longer waits. */
void http_conns_answered(struct http_server *h, struct MHD_Connection *conn);
/* A request completed: the connection waits, kept alive, for the next. */
void http_conns_request_ended(struct http_server *h, struct MHD_Connection *conn);
/* The thread that closes connections past their deadline. */
void *http_conns_sweeper(void *arg);
/* Raises the open-file limit for the connections; how many to accept. */
unsigned http_conns_limit(void);

#endif
