/*
 * The event stream (docs/events.md): one ordered sequence of events per
 * service process, a replay window of the last EVENTS_WINDOW frames, bounded
 * subscribers fed by SSE responses, and the durable history of each run in
 * SQLite, written in batches by a writer thread that also sends heartbeats.
 */
#ifndef TD_SERVICE_EVENTS_H
#define TD_SERVICE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "ids.h"

#define EVENTS_WINDOW 4096
/* The replay window also holds at most this many bytes of frames: the oldest go first. */
#define EVENTS_WINDOW_BYTES (64 * 1024 * 1024)
#define EVENTS_SUB_MAX_EVENTS 8192
#define EVENTS_SUB_MAX_BYTES (8 * 1024 * 1024)
#define EVENTS_MAX_SUBS 256
#define EVENTS_HEARTBEAT_MS 10000
#define EVENTS_FLUSH_MS 200
/* A run.history-gap for events not stored is sent again at most this often while writes fail. */
#define EVENTS_GAP_RETRY_MS 1000

struct service;
struct store;
struct events;
struct events_sub;

struct events_filter {
	char project[TD_ID_MAX];	/* "" for any */
	char session[TD_ID_MAX];
	char run[TD_ID_MAX];
};

/* Starts the writer thread; svc->store and svc->stream_id must be set. */
struct events *events_new(struct service *svc);
/* Ends every stream (their readers return end of stream) and refuses new ones. */
void events_shutdown(struct events *ev);
/* Writes what is pending, stops the writer and frees ev; after http_stop.  NULL ok. */
void events_free(struct events *ev);

/*
 * Issues the next seq for an event of type (a string literal) and sends it to
 * the window, the matching subscribers and, with a run_id, the run's history.
 * The ids may be NULL.  Consumes data (NULL for {}).  Cheap; never takes the
 * store lock, so callers may hold it.  ev NULL is ignored.
 */
void events_emit(struct events *ev, const char *type, const char *project_id,
    const char *session_id, const char *run_id, cJSON *data);
/* Writes the pending history now (takes the store lock: call without it). */
void events_flush(struct events *ev);
/*
 * The streams filtered to session_id (deleted) send what they hold, then
 * end.  ev NULL is ignored.
 */
void events_end_session(struct events *ev, const char *session_id);

/*
 * Called with every event, in seq order, under the bus's lock: it may look
 * and enqueue, never emit.  The ids are "" when the event has none.
 */
typedef void (*events_listener_fn)(void *arg, const char *type, const char *project_id,
    const char *run_id, const cJSON *data);
#define EVENTS_MAX_LISTENERS 4
/* Adds a listener (false when EVENTS_MAX_LISTENERS are there); events_unlisten before arg goes. */
bool events_listen(struct events *ev, events_listener_fn fn, void *arg);
void events_unlisten(struct events *ev, events_listener_fn fn, void *arg);

/*
 * How the connection of a subscriber waits for events: the transport's
 * (route-events.c adapts http.c's streams).  conn is what events_sub_read
 * was given; suspend and fd are called under the bus's lock.
 */
struct events_conn_ops {
	void (*suspend)(void *conn);	/* no more reads until resume */
	void (*resume)(void *conn);	/* from any thread */
	int (*fd)(void *conn);		/* its socket (to see the client go), or -1 */
	/*
	 * Optional: writes len bytes of the stream straight to the client of a
	 * suspended conn, without blocking, from any thread; the bytes written
	 * (fewer when the socket is full) or -1.  NULL: only reads send.
	 */
	ssize_t (*send)(void *conn, const char *buf, size_t len);
};

/*
 * A new subscriber, its hello frame and the replay after last_event_id
 * (NULL or malformed: none) queued.  NULL when EVENTS_MAX_SUBS are connected
 * or the service is stopping.  ops must outlive it.
 */
struct events_sub *events_subscribe(struct events *ev, const struct events_filter *f,
    const char *last_event_id, const struct events_conn_ops *ops);
#define EVENTS_SUB_END ((ssize_t)-1)
/*
 * Packs every pending frame of sub into buf: the bytes written, or 0 after
 * ops->suspend(conn) (nothing until ops->resume), or EVENTS_SUB_END.
 */
ssize_t events_sub_read(struct events_sub *sub, void *conn, char *buf, size_t max);
/* Forgets the subscriber.  NULL ok. */
void events_sub_free(struct events_sub *sub);

/* Lowers the replay window's byte bound (taskdeckd --events-window-bytes, for tests). */
void events_set_window_bytes(struct events *ev, size_t bytes);
/* Sets the heartbeat's period (taskdeckd --events-heartbeat-ms, for tests); from the next beat. */
void events_set_heartbeat_ms(struct events *ev, int64_t ms);

/*
 * Stores one event of run's history ("" session or project: null); in the
 * caller's transaction; false on a store error (sqlite3_errmsg says why).
 */
bool events_history_insert(struct store *st, uint64_t seq, const char *stream_id,
    const char *run, const char *session, const char *project, const char *type,
    const char *time, const char *data);
/* Where a page of a run's history ended (events_history). */
struct events_history_page {
	bool more;			/* events remain past the page */
	char last_stream[40];		/* the streamId and seq of its last event */
	long long last;
};
/*
 * A page of run id's stored history, oldest first, at most limit events:
 * those after seq after, or after the event after_stream:after when
 * after_stream is not "" (a history spanning several streams).  NULL when
 * there is no such run.  Only while the store is locked.
 */
cJSON *events_history(struct store *st, const char *id, const char *after_stream,
    long long after, int limit, struct events_history_page *page);
/* Deletes the stored history of session_id's runs; false on error.  In the caller's transaction. */
bool events_delete_session(struct store *st, const char *session_id);

#endif
