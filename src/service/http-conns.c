/* The connections of the HTTP layer: the waiting list, its deadlines and the sweeper (http-int.h). */
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "http-int.h"
#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

/* Under h->mu. */
static void
waiting_remove(struct http_server *h, struct http_conn *hc)
{
	if (!hc->waiting)
		return;
	if (hc->prev != NULL)
		hc->prev->next = hc->next;
	else
		h->wait_head = hc->next;
	if (hc->next != NULL)
		hc->next->prev = hc->prev;
	else
		h->wait_tail = hc->prev;
	hc->prev = hc->next = NULL;
	hc->waiting = false;
	h->nwaiting--;
}

/* Under h->mu. */
static void
waiting_add(struct http_server *h, struct http_conn *hc, enum conn_phase phase)
{
	waiting_remove(h, hc);
	if (hc->evicted)
		return;
	hc->since_ms = clock_mono_ms();
	hc->phase = phase;
	hc->prev = h->wait_tail;
	hc->next = NULL;
	if (h->wait_tail != NULL)
		h->wait_tail->next = hc;
	else
		h->wait_head = hc;
	h->wait_tail = hc;
	hc->waiting = true;
	h->nwaiting++;
}

/*
 * Closes a waiting connection: shutdown() wakes libmicrohttpd, which reads the
 * end of the stream and closes it.  The descriptor is still open: it is closed
 * only after NOTIFY_CLOSED, which takes h->mu first.  Under h->mu.
 */
static void
waiting_evict(struct http_server *h, struct http_conn *hc)
{
	/* A kept-alive connection idle for long is housekeeping, not worth a log line. */
	if (hc->phase != CONN_IDLE || h->nwaiting > HTTP_MAX_WAITING)
		atomic_fetch_add(&h->evicted, 1);
	waiting_remove(h, hc);
	hc->evicted = true;
	if (hc->fd >= 0)
		shutdown(hc->fd, SHUT_RDWR);
}

/* True when a whole request head (up to its blank line) sits unread in fd. */
static bool
request_unread(int fd)
{
	char b[HTTP_CONNECTION_MEMORY];
	ssize_t n = recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);

	return n > 0 && (memmem(b, (size_t)n, "\r\n\r\n", 4) != NULL ||
	    memmem(b, (size_t)n, "\n\n", 2) != NULL);
}

/*
 * Ends the wait of a connection: closes it, unless its request head sits
 * unread in its socket, then it only leaves the list (the body's deadline
 * starts when libmicrohttpd reads that head).  Under h->mu.
 */
static void
waiting_end(struct http_server *h, struct http_conn *hc)
{
	if (hc->phase != CONN_BODY && hc->fd >= 0 && request_unread(hc->fd)) {
		waiting_remove(h, hc);
		hc->unread = true;
		return;
	}
	waiting_evict(h, hc);
}

/*
 * Brings the waiting connections back to HTTP_MAX_WAITING, oldest first, but
 * for those waiting for less than HTTP_WAIT_GRACE_MS (the sweeper comes back
 * to them).  Under h->mu.
 */
static void
waiting_trim(struct http_server *h)
{
	int64_t now = clock_mono_ms();

	while (h->nwaiting > HTTP_MAX_WAITING && now - h->wait_head->since_ms >=
	    HTTP_WAIT_GRACE_MS)
		waiting_end(h, h->wait_head);
}

static struct http_conn *
conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

void
http_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *h = cls;
	struct http_conn *hc = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		    MHD_CONNECTION_INFO_CONNECTION_FD);

		hc = xcalloc(1, sizeof *hc);
		hc->fd = ci != NULL ? ci->connect_fd : -1;
		*socket_context = hc;
		pthread_mutex_lock(&h->mu);
		waiting_add(h, hc, CONN_HEADERS);
		waiting_trim(h);
		pthread_mutex_unlock(&h->mu);
		return;
	}
	if (hc == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	waiting_remove(h, hc);
	hc->fd = -1;
	pthread_mutex_unlock(&h->mu);
	free(hc);
	*socket_context = NULL;
}

/* The headers of a request are in: its body has HTTP_BODY_DEADLINE_MS. */
void
http_conns_headers_in(struct http_server *h, struct MHD_Connection *conn)
{
	struct http_conn *hc = conn_of(conn);

	if (hc == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	if (hc->waiting || hc->unread)
		waiting_add(h, hc, CONN_BODY);
	hc->unread = false;
	pthread_mutex_unlock(&h->mu);
}

/* The request is whole, answered or streaming: the connection no longer waits. */
void
http_conns_answered(struct http_server *h, struct MHD_Connection *conn)
{
	struct http_conn *hc = conn_of(conn);

	if (hc == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	waiting_remove(h, hc);
	pthread_mutex_unlock(&h->mu);
}

/* A request ended: a kept-alive connection waits for the next one. */
void
http_conns_request_ended(struct http_server *h, struct MHD_Connection *conn)
{
	struct http_conn *hc = conn_of(conn);

	if (hc == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	waiting_add(h, hc, CONN_IDLE);
	waiting_trim(h);
	pthread_mutex_unlock(&h->mu);
}

/* Closes the connections past their deadline, every HTTP_SWEEP_MS. */
void *
http_conns_sweeper(void *arg)
{
	struct http_server *h = arg;
	long logged = 0;
	int64_t logged_ms = 0;

	pthread_mutex_lock(&h->mu);
	while (!h->stopping) {
		struct timespec ts;
		int64_t now = clock_mono_ms();
		struct http_conn *hc = h->wait_head, *next;
		long evicted;

		for (; hc != NULL; hc = next) {
			next = hc->next;
			if (now - hc->since_ms > (hc->phase == CONN_HEADERS ?
			    HTTP_HEADER_DEADLINE_MS : hc->phase == CONN_BODY ?
			    HTTP_BODY_DEADLINE_MS : HTTP_KEEPALIVE_IDLE_MS))
				waiting_end(h, hc);
		}
		waiting_trim(h);
		/* At most one line every 10 s, however many are closed. */
		evicted = atomic_load(&h->evicted);
		if (evicted != logged && now - logged_ms >= 10000) {
			log_info("closed %ld connections that sent no request in time "
			    "(or the oldest of more than %d waiting)", evicted - logged,
			    HTTP_MAX_WAITING);
			logged = evicted;
			logged_ms = now;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += HTTP_SWEEP_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->cond, &h->mu, &ts);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/*
 * Raises the soft limit on open descriptors to what HTTP_MAX_CONNECTIONS needs
 * (never past the hard limit); the number of connections to accept.
 */
unsigned
http_conns_limit(void)
{
	struct rlimit rl;
	rlim_t want = HTTP_MAX_CONNECTIONS + HTTP_FD_RESERVE;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 256;
	if (rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want :
		    rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur >= want)
		return HTTP_MAX_CONNECTIONS;
	if (rl.rlim_cur < HTTP_FD_RESERVE + 256)
		return 128;
	log_warn("only %llu open files allowed (ulimit -n): %llu connections at most",
	    (unsigned long long)rl.rlim_cur,
	    (unsigned long long)(rl.rlim_cur - HTTP_FD_RESERVE));
	return (unsigned)(rl.rlim_cur - HTTP_FD_RESERVE);
}
