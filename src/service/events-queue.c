/* A subscriber's queue of frames and how they reach its connection (events-int.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "events-int.h"
#include "xalloc.h"

/* A frame holding a copy of text, with one reference. */
struct frame *
events_frame_new(const char *text, size_t len)
{
	struct frame *fr = xcalloc(1, sizeof *fr + len + 1);

	atomic_init(&fr->refs, 1);
	memcpy(fr->text, text, len);
	fr->len = len;
	return fr;
}

struct frame *
events_frame_ref(struct frame *fr)
{
	atomic_fetch_add(&fr->refs, 1);
	return fr;
}

void
events_frame_unref(struct frame *fr)
{
	if (fr != NULL && atomic_fetch_sub(&fr->refs, 1) == 1)
		free(fr);
}

/* Appends fr (a new reference) to s's queue; under ev->mu. */
void
events_sub_push(struct events_sub *s, struct frame *fr)
{
	if (s->qlast == NULL || s->qlast->tail == QBLOCK_FRAMES) {
		struct qblock *b = xmalloc(sizeof *b);

		b->next = NULL;
		b->head = b->tail = 0;

		if (s->qlast != NULL)
			s->qlast->next = b;
		else
			s->qfirst = b;
		s->qlast = b;
	}
	s->qlast->f[s->qlast->tail++] = events_frame_ref(fr);
	s->qlen++;
	s->qbytes += fr->len;
}

/*
 * Drops the head frame of s's queue, freeing a block once it is used up; the
 * last one stays for the next frame, so a subscriber that keeps up (one
 * frame at a time) makes no block per event.
 */
void
events_sub_pop(struct events_sub *s)
{
	struct qblock *b = s->qfirst;
	struct frame *fr = b->f[b->head++];

	s->qlen--;
	s->qbytes -= fr->len;
	events_frame_unref(fr);
	if (b->head < b->tail)
		return;
	if (b->next == NULL) {
		b->head = b->tail = 0;
		return;
	}
	s->qfirst = b->next;
	free(b);
}

/*
 * Resumes the connection of s if its reader is waiting; under ev->mu.  With
 * w, the wake is only noted there: the caller writes the frames itself or
 * resumes after releasing ev->mu (wakes_run), so the clients woken first need
 * not wait for the rest.  A connection marked awake stays suspended until
 * then, so no one else sends for it and the server cannot free it.
 */
void
events_sub_wake(struct events_sub *s, struct wakes *w)
{
	if (s->suspended && s->conn != NULL) {
		s->suspended = false;
		if (w == NULL) {
			s->ops->resume(s->conn);
			return;
		}
		w->sub[w->n++] = s;
	}
}

/*
 * Writes s's queue straight to its client, the connection staying suspended;
 * called without ev->mu for a subscriber woken into w, which no one else
 * sends for until it is suspended again or resumed.  True when all was
 * written and s waits again; false when the caller must resume the
 * connection (the socket is full or failed, s closes, the service stops):
 * the server goes on from s->off.
 */
static bool
sub_send(struct events *ev, struct events_sub *s)
{
	if (s->ops->send == NULL)
		return false;
	for (int frames = 0; frames < EVENTS_SEND_FRAMES; frames++) {
		struct frame *fr;
		size_t off;
		ssize_t n;

		pthread_mutex_lock(&ev->mu);
		if (s->qlen == 0 || s->closing || ev->shutdown) {
			pthread_mutex_unlock(&ev->mu);
			return false;
		}
		fr = s->qfirst->f[s->qfirst->head];
		off = s->off;
		s->sending = true;
		pthread_mutex_unlock(&ev->mu);
		n = s->ops->send(s->conn, fr->text + off, fr->len - off);
		pthread_mutex_lock(&ev->mu);
		s->sending = false;
		if (n > 0) {
			s->off += (size_t)n;
			if (s->off == fr->len) {
				s->off = 0;
				events_sub_pop(s);
			}
		}
		if (n != (ssize_t)(fr->len - off) || s->closing || ev->shutdown) {
			pthread_mutex_unlock(&ev->mu);
			return false;
		}
		if (s->qlen == 0) {
			s->suspended = true;
			pthread_mutex_unlock(&ev->mu);
			return true;
		}
		pthread_mutex_unlock(&ev->mu);
	}
	return false;
}

/*
 * Sends to or resumes the connections noted in w; called without ev->mu,
 * after wakes_begin.
 */
void
events_wakes_run(struct events *ev, struct wakes *w)
{
	if (w->n == 0)
		return;
	for (size_t i = 0; i < w->n; i++) {
		struct events_sub *s = w->sub[i];

		if (!sub_send(ev, s))
			s->ops->resume(s->conn);
	}
	pthread_mutex_lock(&ev->mu);
	if (--ev->waking == 0)
		pthread_cond_broadcast(&ev->woken);
	pthread_mutex_unlock(&ev->mu);
}

/* Before releasing ev->mu with resumes noted in w: events_shutdown waits for them. */
void
events_wakes_begin(struct events *ev, const struct wakes *w)
{
	if (w->n > 0)
		ev->waking++;
}

ssize_t
events_sub_read(struct events_sub *s, void *conn, char *buf, size_t max)
{
	struct events *ev = s->ev;
	size_t n = 0;

	pthread_mutex_lock(&ev->mu);
	s->conn = conn;
	if (ev->shutdown) {
		pthread_mutex_unlock(&ev->mu);
		return EVENTS_SUB_END;
	}
	while (s->qlen > 0 && n < max) {
		struct frame *fr = s->qfirst->f[s->qfirst->head];
		size_t take = fr->len - s->off;

		if (take > max - n)
			take = max - n;
		memcpy(buf + n, fr->text + s->off, take);
		n += take;
		s->off += take;
		if (s->off < fr->len)
			break;
		s->off = 0;
		events_sub_pop(s);
	}
	if (n == 0 && s->closing) {
		pthread_mutex_unlock(&ev->mu);
		return EVENTS_SUB_END;
	}
	if (n == 0) {
		s->suspended = true;
		s->ops->suspend(conn);
	}
	pthread_mutex_unlock(&ev->mu);
	return (ssize_t)n;
}
