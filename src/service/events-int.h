/*
 * The event bus's own types, shared by events.c (seq, window, publish,
 * subscribe, the writer thread) and events-queue.c (a subscriber's queue and
 * how its frames reach the connection).  Not for other modules.
 */
#ifndef TD_SERVICE_EVENTS_INT_H
#define TD_SERVICE_EVENTS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "ids.h"
#include "timeutil.h"

/* Frames per block of a subscriber queue (a block is 2 KiB). */
#define QBLOCK_FRAMES 254
/* Frames a publisher writes for one subscriber before leaving the rest to the server. */
#define EVENTS_SEND_FRAMES 16

/* One rendered SSE frame, shared by the window and the subscriber queues. */
struct frame {
	atomic_int refs;
	uint64_t seq;			/* 0 for control frames */
	char project[TD_ID_MAX], session[TD_ID_MAX], run[TD_ID_MAX];
	size_t len;
	char text[];
};

/* An event waiting for the run history table. */
struct pending {
	uint64_t seq;
	const char *type;
	char time[TD_TIME_LEN];
	char project[TD_ID_MAX], session[TD_ID_MAX], run[TD_ID_MAX];
	char *data;
};

/*
 * Events of a run that could not be stored (a full disk): a run.history-gap
 * is owed until one reporting them is stored in its turn.
 */
struct gap {
	char project[TD_ID_MAX], session[TD_ID_MAX], run[TD_ID_MAX];
	uint64_t first, last;		/* the seqs of the first and last lost event */
	size_t lost;
	uint64_t reported;		/* the seq of its run.history-gap, 0 = to send */
};

/* A block of a subscriber queue: frames [head, tail) are queued. */
struct qblock {
	struct qblock *next;
	unsigned head, tail;
	struct frame *f[QBLOCK_FRAMES];
};

struct events_sub {
	struct events *ev;
	struct events_sub *prev, *next;
	struct events_filter f;
	struct qblock *qfirst, *qlast;	/* memory follows the backlog */
	size_t qlen, qbytes;
	size_t off;			/* bytes of the head frame already sent */
	const struct events_conn_ops *ops;
	void *conn;			/* known from the first read */
	bool suspended;
	bool closing;			/* send what is queued, then end */
	bool sending;			/* a publisher writes the head frame (sub_send) */
};

/* Subscribers to send to or resume once ev->mu is released (publish). */
struct wakes {
	size_t n;
	struct events_sub *sub[EVENTS_MAX_SUBS];	/* their conn stays put until woken */
};

struct events {
	struct service *svc;
	pthread_mutex_t mu;
	pthread_cond_t cond;		/* the writer: urgent flush or stop */
	/*
	 * Publishers resuming connections outside mu; events_shutdown waits for
	 * them (on woken), since the HTTP server frees a connection once it stops.
	 */
	int waking;
	pthread_cond_t woken;
	uint64_t seq;
	struct frame *window[EVENTS_WINDOW];	/* by seq % EVENTS_WINDOW */
	uint64_t window_oldest;		/* the oldest seq the window still holds */
	size_t window_bytes, window_max_bytes;
	int64_t heartbeat_ms;		/* EVENTS_HEARTBEAT_MS unless a test set it */
	int64_t next_beat;		/* when the writer sends the next heartbeat */
	struct events_sub *subs;
	int nsubs;
	struct {
		events_listener_fn fn;
		void *arg;
	} listeners[EVENTS_MAX_LISTENERS];
	int nlisteners;
	bool shutdown, stopping, urgent;
	struct pending *batch;
	size_t nbatch, batch_cap;
	pthread_mutex_t flush_mu;	/* one history writer at a time */
	pthread_t writer;
	struct gap *gaps;		/* under mu; changed under flush_mu too */
	size_t ngaps;
	int64_t gap_failed_ms;		/* the last failed write */
};

/* A frame holding a copy of text, with one reference. */
struct frame *events_frame_new(const char *text, size_t len);
struct frame *events_frame_ref(struct frame *fr);
void events_frame_unref(struct frame *fr);
/* Appends fr (a new reference) to s's queue; under ev->mu. */
void events_sub_push(struct events_sub *s, struct frame *fr);
/* Drops the head frame of s's queue; under ev->mu. */
void events_sub_pop(struct events_sub *s);
/* Notes in w (or, w NULL, makes) the wake of s if its reader waits; under ev->mu. */
void events_sub_wake(struct events_sub *s, struct wakes *w);
/* Before releasing ev->mu with wakes noted in w: events_shutdown waits for them. */
void events_wakes_begin(struct events *ev, const struct wakes *w);
/* Sends to or resumes the connections noted in w; without ev->mu, after events_wakes_begin. */
void events_wakes_run(struct events *ev, struct wakes *w);

#endif
