/* The event stream: seq, the replay window, subscribers and the run history (events.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "events-int.h"
#include "httpparse.h"
#include "json.h"
#include "log.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

/*
 * Puts seq's frame in the replay window: it takes the slot of seq - EVENTS_WINDOW,
 * and the oldest frames leave until the window holds at most window_max_bytes
 * (the newest frame always stays); under ev->mu.
 */
static void
window_put(struct events *ev, uint64_t seq, struct frame *fr)
{
	struct frame **slot = &ev->window[seq % EVENTS_WINDOW];

	if (*slot != NULL) {
		ev->window_bytes -= (*slot)->len;
		events_frame_unref(*slot);
	}
	*slot = fr;
	ev->window_bytes += fr->len;
	if (seq > EVENTS_WINDOW && ev->window_oldest < seq - EVENTS_WINDOW + 1)
		ev->window_oldest = seq - EVENTS_WINDOW + 1;
	while (ev->window_bytes > ev->window_max_bytes && ev->window_oldest < seq) {
		struct frame **old = &ev->window[ev->window_oldest % EVENTS_WINDOW];

		if (*old != NULL && (*old)->seq == ev->window_oldest) {
			ev->window_bytes -= (*old)->len;
			events_frame_unref(*old);
			*old = NULL;
		}
		ev->window_oldest++;
	}
}

void
events_set_window_bytes(struct events *ev, size_t bytes)
{
	pthread_mutex_lock(&ev->mu);
	ev->window_max_bytes = bytes;
	pthread_mutex_unlock(&ev->mu);
}

void
events_set_heartbeat_ms(struct events *ev, int64_t ms)
{
	pthread_mutex_lock(&ev->mu);
	ev->heartbeat_ms = ms;
	ev->next_beat = clock_mono_ms() + ms;
	pthread_mutex_unlock(&ev->mu);
}

/* A control frame (hello, heartbeat, resync) with an optional id line naming seq. */
static struct frame *
control_frame_at(const struct events *ev, bool with_id, uint64_t seq, const char *type,
    cJSON *data)
{
	char *json = json_print(data), *text;
	struct frame *fr;
	int n;

	cJSON_Delete(data);
	if (with_id)
		n = asprintf(&text, "id: %s:%" PRIu64 "\nevent: %s\ndata: %s\n\n",
		    ev->svc->stream_id, seq, type, json);
	else
		n = asprintf(&text, "event: %s\ndata: %s\n\n", type, json);
	if (n < 0)
		abort();
	fr = events_frame_new(text, (size_t)n);
	free(text);
	free(json);
	return fr;
}

/* A control frame whose id, if any, is the last seq issued. */
static struct frame *
control_frame(const struct events *ev, bool with_id, const char *type, cJSON *data)
{
	return control_frame_at(ev, with_id, ev->seq, type, data);
}

/* An id member: the filter's id, or null when the stream is not filtered on it. */
static void
add_filter_id(cJSON *o, const char *name, const char *id)
{
	if (id[0] != '\0')
		cJSON_AddStringToObject(o, name, id);
	else
		cJSON_AddNullToObject(o, name);
}

/*
 * stream.resync-required for reason, with the last seq issued; its ids are
 * those the subscriber's filter names (the events it misses all have them).
 */
static struct frame *
resync_frame(const struct events *ev, const struct events_filter *f, const char *reason)
{
	cJSON *o = cJSON_CreateObject();
	char now[TD_TIME_LEN];

	time_format_utc(clock_wall_ms(), now);
	cJSON_AddStringToObject(o, "type", "stream.resync-required");
	cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
	cJSON_AddStringToObject(o, "time", now);
	add_filter_id(o, "projectId", f->project);
	add_filter_id(o, "sessionId", f->session);
	add_filter_id(o, "runId", f->run);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "data"), "reason", reason);
	return control_frame(ev, true, "stream.resync-required", o);
}

/* Whether fr passes the filters of s. */
static bool
sub_matches(const struct events_sub *s, const struct frame *fr)
{
	return (s->f.project[0] == '\0' || strcmp(s->f.project, fr->project) == 0) &&
	    (s->f.session[0] == '\0' || strcmp(s->f.session, fr->session) == 0) &&
	    (s->f.run[0] == '\0' || strcmp(s->f.run, fr->run) == 0);
}

/*
 * Queues fr for s unless s is full: then slow-consumer and close; under ev->mu.
 * The resume of s goes to w (sub_wake).
 */
static void
sub_offer(struct events *ev, struct events_sub *s, struct frame *fr, struct wakes *w)
{
	if (s->closing)
		return;
	if (s->qlen >= EVENTS_SUB_MAX_EVENTS || s->qbytes + fr->len > EVENTS_SUB_MAX_BYTES) {
		struct frame *rs = resync_frame(ev, &s->f, "slow-consumer");
		struct frame *partial = NULL;
		size_t behind = s->qlen;

		/*
		 * The backlog is of no use any more (the client must re-read what
		 * it shows) and may never drain: drop it, keeping only a frame
		 * already partly sent so that the stream stays well formed.
		 */
		if (s->off > 0 || s->sending)
			partial = events_frame_ref(s->qfirst->f[s->qfirst->head]);
		while (s->qlen > 0)
			events_sub_pop(s);
		if (partial != NULL) {
			events_sub_push(s, partial);
			events_frame_unref(partial);
		}
		events_sub_push(s, rs);
		events_frame_unref(rs);
		s->closing = true;
		log_warn("an event subscriber fell %zu events behind; closing it", behind);
	} else {
		events_sub_push(s, fr);
	}
	events_sub_wake(s, w);
}

static void
copy_id(char dst[TD_ID_MAX], const char *src)
{
	snprintf(dst, TD_ID_MAX, "%s", src ? src : "");
}

/* A JSON string for an id, or null; ids are [a-z0-9_] only. */
static const char *
id_json(char out[TD_ID_MAX + 2], const char *id)
{
	if (id == NULL || *id == '\0')
		return "null";
	snprintf(out, TD_ID_MAX + 2, "\"%s\"", id);
	return out;
}

/* events_emit; the event's seq (0 without ev). */
static uint64_t
publish(struct events *ev, const char *type, const char *project_id,
    const char *session_id, const char *run_id, cJSON *data)
{
	char pj[TD_ID_MAX + 2], sj[TD_ID_MAX + 2], rj[TD_ID_MAX + 2];
	char now[TD_TIME_LEN], *json, *text;
	struct frame *fr;
	uint64_t seq;
	int n;

	char project[TD_ID_MAX], session[TD_ID_MAX], run[TD_ID_MAX];
	struct wakes w;

	if (ev == NULL) {
		cJSON_Delete(data);
		return 0;
	}
	/* The ids may point into data. */
	copy_id(project, project_id);
	copy_id(session, session_id);
	copy_id(run, run_id);
	json = data ? json_print(data) : xstrdup("{}");
	w.n = 0;
	pthread_mutex_lock(&ev->mu);
	for (int i = 0; i < ev->nlisteners; i++)
		ev->listeners[i].fn(ev->listeners[i].arg, type, project, run, data);
	seq = ++ev->seq;
	time_format_utc(clock_wall_ms(), now);
	n = asprintf(&text, "id: %s:%" PRIu64 "\nevent: %s\ndata: {\"seq\":%" PRIu64
	    ",\"type\":\"%s\",\"time\":\"%s\",\"projectId\":%s,\"sessionId\":%s,"
	    "\"runId\":%s,\"data\":%s}\n\n", ev->svc->stream_id, seq, type, seq, type, now,
	    id_json(pj, project), id_json(sj, session), id_json(rj, run), json);
	if (n < 0)
		abort();
	fr = events_frame_new(text, (size_t)n);
	free(text);
	fr->seq = seq;
	memcpy(fr->project, project, TD_ID_MAX);
	memcpy(fr->session, session, TD_ID_MAX);
	memcpy(fr->run, run, TD_ID_MAX);
	window_put(ev, seq, fr);
	for (struct events_sub *s = ev->subs; s; s = s->next) {
		if (sub_matches(s, fr))
			sub_offer(ev, s, fr, &w);
	}
	if (run[0] != '\0') {
		struct pending *p;

		if (ev->nbatch == ev->batch_cap) {
			ev->batch_cap = ev->batch_cap ? ev->batch_cap * 2 : 256;
			ev->batch = xrealloc(ev->batch, ev->batch_cap * sizeof *ev->batch);
		}
		p = &ev->batch[ev->nbatch++];
		p->seq = seq;
		p->type = type;
		memcpy(p->time, now, sizeof now);
		memcpy(p->project, fr->project, TD_ID_MAX);
		memcpy(p->session, fr->session, TD_ID_MAX);
		memcpy(p->run, fr->run, TD_ID_MAX);
		p->data = json;
		json = NULL;
		if (strcmp(type, "run.finished") == 0) {
			ev->urgent = true;
			pthread_cond_signal(&ev->cond);
		}
	}
	events_wakes_begin(ev, &w);
	pthread_mutex_unlock(&ev->mu);
	events_wakes_run(ev, &w);
	cJSON_Delete(data);
	free(json);
	return seq;
}

bool
events_listen(struct events *ev, events_listener_fn fn, void *arg)
{
	bool ok;

	pthread_mutex_lock(&ev->mu);
	ok = ev->nlisteners < EVENTS_MAX_LISTENERS;
	if (ok) {
		ev->listeners[ev->nlisteners].fn = fn;
		ev->listeners[ev->nlisteners].arg = arg;
		ev->nlisteners++;
	}
	pthread_mutex_unlock(&ev->mu);
	return ok;
}

void
events_unlisten(struct events *ev, events_listener_fn fn, void *arg)
{
	pthread_mutex_lock(&ev->mu);
	for (int i = 0; i < ev->nlisteners; i++) {
		if (ev->listeners[i].fn == fn && ev->listeners[i].arg == arg) {
			ev->listeners[i] = ev->listeners[--ev->nlisteners];
			break;
		}
	}
	pthread_mutex_unlock(&ev->mu);
}

void
events_emit(struct events *ev, const char *type, const char *project_id,
    const char *session_id, const char *run_id, cJSON *data)
{
	publish(ev, type, project_id, session_id, run_id, data);
}

/*
 * After a write of batch[0..n): a stored run.history-gap pays its gap; the
 * events of a failed write are owed one (again).  Under flush_mu.
 */
static void
gaps_note(struct events *ev, const struct pending *batch, size_t n, bool stored)
{
	size_t kept = 0;

	pthread_mutex_lock(&ev->mu);
	if (stored) {
		for (size_t i = 0; i < ev->ngaps; i++) {
			struct gap *g = &ev->gaps[i];

			if (g->reported == 0 || g->reported > batch[n - 1].seq)
				ev->gaps[kept++] = *g;
		}
		ev->ngaps = kept;
		pthread_mutex_unlock(&ev->mu);
		return;
	}
	ev->gap_failed_ms = clock_mono_ms();
	for (size_t i = 0; i < n; i++) {
		const struct pending *p = &batch[i];
		struct gap *g = NULL;

		for (size_t j = 0; j < ev->ngaps && g == NULL; j++)
			if (strcmp(ev->gaps[j].run, p->run) == 0)
				g = &ev->gaps[j];
		if (g == NULL) {
			ev->gaps = xrealloc(ev->gaps, (ev->ngaps + 1) * sizeof *ev->gaps);
			g = &ev->gaps[ev->ngaps++];
			memset(g, 0, sizeof *g);
			memcpy(g->project, p->project, TD_ID_MAX);
			memcpy(g->session, p->session, TD_ID_MAX);
			memcpy(g->run, p->run, TD_ID_MAX);
			g->first = p->seq;
		}
		/* Its own report, lost with the rest, is sent again; it is not an event lost. */
		if (p->seq == g->reported) {
			g->reported = 0;
			continue;
		}
		g->reported = 0;
		g->lost++;
		g->last = p->seq;
	}
	pthread_mutex_unlock(&ev->mu);
}

/*
 * Publishes a run.history-gap for each run whose events could not be stored,
 * at most once every EVENTS_GAP_RETRY_MS while writes fail (at once when
 * stopping).  Under flush_mu,
 * so that no write happens between publishing a report and noting its seq.
 */
static void
gaps_report(struct events *ev)
{
	pthread_mutex_lock(&ev->mu);
	for (size_t i = 0; i < ev->ngaps; i++) {
		struct gap g = ev->gaps[i];
		cJSON *d;
		uint64_t seq;

		if (g.reported != 0 || (!ev->stopping &&
		    clock_mono_ms() - ev->gap_failed_ms < EVENTS_GAP_RETRY_MS))
			continue;
		d = cJSON_CreateObject();
		cJSON_AddItemToObject(d, "reason", cJSON_CreateStringReference(
		    "The store could not write them (a full disk?): events of this run are "
		    "missing from its history."));
		cJSON_AddNumberToObject(d, "events", (double)g.lost);
		cJSON_AddNumberToObject(d, "firstSeq", (double)g.first);
		cJSON_AddNumberToObject(d, "lastSeq", (double)g.last);
		pthread_mutex_unlock(&ev->mu);
		seq = publish(ev, "run.history-gap", g.project, g.session, g.run, d);
		pthread_mutex_lock(&ev->mu);
		/* Only this thread changes the list while flush_mu is held. */
		ev->gaps[i].reported = seq;
	}
	pthread_mutex_unlock(&ev->mu);
}

/* Writes the batch in one transaction; then frees it. */
static void
history_write(struct events *ev, struct pending *batch, size_t n)
{
	struct store *st = ev->svc->store;
	sqlite3 *db;
	bool ok;

	if (n == 0) {
		free(batch);
		return;
	}
	db = store_lock(st);
	ok = store_begin(st);
	for (size_t i = 0; ok && i < n; i++) {
		ok = events_history_insert(st, batch[i].seq, ev->svc->stream_id, batch[i].run,
		    batch[i].session, batch[i].project, batch[i].type, batch[i].time,
		    batch[i].data);
		if (!ok)
			log_error("cannot store run events: %s", sqlite3_errmsg(db));
	}
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	store_unlock(st);
	if (!ok)
		log_error("%zu run events were not stored", n);
	gaps_note(ev, batch, n, ok);
	for (size_t i = 0; i < n; i++)
		free(batch[i].data);
	free(batch);
}

void
events_flush(struct events *ev)
{
	struct pending *batch;
	size_t n;

	if (ev == NULL)
		return;
	pthread_mutex_lock(&ev->flush_mu);
	pthread_mutex_lock(&ev->mu);
	batch = ev->batch;
	n = ev->nbatch;
	ev->batch = NULL;
	ev->nbatch = ev->batch_cap = 0;
	ev->urgent = false;
	pthread_mutex_unlock(&ev->mu);
	history_write(ev, batch, n);
	gaps_report(ev);
	pthread_mutex_unlock(&ev->flush_mu);
}

/* Sends a heartbeat to every subscriber; under ev->mu. */
static void
heartbeat(struct events *ev)
{
	cJSON *o = cJSON_CreateObject();
	char now[TD_TIME_LEN];
	struct frame *fr;

	time_format_utc(clock_wall_ms(), now);
	cJSON_AddStringToObject(o, "type", "stream.heartbeat");
	cJSON_AddStringToObject(o, "time", now);
	fr = control_frame(ev, false, "stream.heartbeat", o);
	for (struct events_sub *s = ev->subs; s; s = s->next)
		sub_offer(ev, s, fr, NULL);
	events_frame_unref(fr);
}

/* The CLOCK_MONOTONIC time ms from now. */
static void
deadline_in(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/*
 * Ends the streams whose client has gone while they waited for events, so the
 * slot is free at once, not at the next heartbeat's failed write; under ev->mu,
 * which publishes wait for: one poll() for all of them.
 */
static void
reap_closed(struct events *ev)
{
	struct pollfd pfd[EVENTS_MAX_SUBS];
	struct events_sub *of[EVENTS_MAX_SUBS];
	nfds_t n = 0;

	for (struct events_sub *s = ev->subs; s != NULL && n < EVENTS_MAX_SUBS; s = s->next) {
		if (s->suspended && s->conn != NULL && !s->closing &&
		    (pfd[n].fd = s->ops->fd(s->conn)) >= 0) {
			pfd[n].events = POLLRDHUP;
			pfd[n].revents = 0;
			of[n++] = s;
		}
	}
	if (n == 0 || poll(pfd, n, 0) <= 0)
		return;
	for (nfds_t i = 0; i < n; i++) {
		if ((pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
			of[i]->closing = true;
			of[i]->suspended = false;
			of[i]->ops->resume(of[i]->conn);
		}
	}
}

/* Flushes the history every EVENTS_FLUSH_MS (at once on run.finished), beats, and
 * frees the slots of closed streams. */
static void *
writer_thread(void *arg)
{
	struct events *ev = arg;

	pthread_mutex_lock(&ev->mu);
	while (!ev->stopping) {
		struct timespec ts;
		bool flush;

		deadline_in(&ts, EVENTS_FLUSH_MS);
		while (!ev->urgent && !ev->stopping) {
			if (pthread_cond_timedwait(&ev->cond, &ev->mu, &ts) != 0)
				break;
		}
		if (clock_mono_ms() >= ev->next_beat) {
			if (!ev->shutdown)
				heartbeat(ev);
			ev->next_beat = clock_mono_ms() + ev->heartbeat_ms;
		}
		if (!ev->shutdown)
			reap_closed(ev);
		flush = ev->nbatch > 0 || ev->ngaps > 0;
		pthread_mutex_unlock(&ev->mu);
		if (flush)
			events_flush(ev);
		pthread_mutex_lock(&ev->mu);
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

struct events *
events_new(struct service *svc)
{
	struct events *ev = xcalloc(1, sizeof *ev);
	pthread_condattr_t ca;

	ev->svc = svc;
	ev->window_oldest = 1;
	ev->window_max_bytes = EVENTS_WINDOW_BYTES;
	ev->heartbeat_ms = EVENTS_HEARTBEAT_MS;
	ev->next_beat = clock_mono_ms() + EVENTS_HEARTBEAT_MS;
	pthread_mutex_init(&ev->mu, NULL);
	pthread_mutex_init(&ev->flush_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ev->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&ev->woken, NULL);
	if (pthread_create(&ev->writer, NULL, writer_thread, ev) != 0) {
		log_error("cannot start the event writer");
		abort();
	}
	return ev;
}

void
events_shutdown(struct events *ev)
{
	if (ev == NULL)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->shutdown = true;
	for (struct events_sub *s = ev->subs; s; s = s->next)
		events_sub_wake(s, NULL);
	/* No reader suspends any more; resumes still in flight end before the server stops. */
	while (ev->waking > 0)
		pthread_cond_wait(&ev->woken, &ev->mu);
	pthread_mutex_unlock(&ev->mu);
}

void
events_free(struct events *ev)
{
	if (ev == NULL)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->shutdown = true;
	ev->stopping = true;
	pthread_cond_signal(&ev->cond);
	pthread_mutex_unlock(&ev->mu);
	pthread_join(ev->writer, NULL);
	/* What is pending, then the run.history-gap events still owed. */
	events_flush(ev);
	events_flush(ev);
	for (size_t i = 0; i < ev->nbatch; i++)
		free(ev->batch[i].data);
	free(ev->batch);
	for (size_t i = 0; i < EVENTS_WINDOW; i++)
		events_frame_unref(ev->window[i]);
	if (ev->subs != NULL)
		log_warn("%d event subscribers were still attached at exit", ev->nsubs);
	pthread_mutex_destroy(&ev->mu);
	pthread_mutex_destroy(&ev->flush_mu);
	pthread_cond_destroy(&ev->cond);
	pthread_cond_destroy(&ev->woken);
	free(ev->gaps);
	free(ev);
}

/* Where a subscriber resumes (docs/events.md, Resume). */
enum resume {
	RESUME_NONE,		/* no Last-Event-ID (or only spaces): live from now */
	RESUME_REPLAY,		/* replay the window after *after */
	RESUME_CHANGED,		/* not an id of this stream, or not an id at all */
	RESUME_EXPIRED,		/* older than the window */
};

/* Under ev->mu. */
static enum resume
resume_point(const struct events *ev, const char *last_event_id, uint64_t *after)
{
	char stream[33];
	uint64_t oldest;

	if (last_event_id == NULL || last_event_id[strspn(last_event_id, " \t")] == '\0')
		return RESUME_NONE;
	if (!http_parse_last_event_id(last_event_id, stream, after) ||
	    strcmp(stream, ev->svc->stream_id) != 0 || *after > ev->seq)
		return RESUME_CHANGED;
	oldest = ev->window_oldest;
	if (*after < ev->seq && *after + 1 < oldest)
		return RESUME_EXPIRED;
	return RESUME_REPLAY;
}

/* The replay of docs/events.md, Resume; under ev->mu. */
static void
sub_replay(struct events *ev, struct events_sub *s, enum resume how, uint64_t after)
{
	struct frame *fr;

	if (how == RESUME_CHANGED || how == RESUME_EXPIRED) {
		fr = resync_frame(ev, &s->f, how == RESUME_CHANGED ? "stream-changed" : "expired");
		events_sub_push(s, fr);
		events_frame_unref(fr);
		return;
	}
	if (how != RESUME_REPLAY)
		return;
	for (uint64_t seq = after + 1; seq <= ev->seq; seq++) {
		fr = ev->window[seq % EVENTS_WINDOW];
		if (fr != NULL && fr->seq == seq && sub_matches(s, fr))
			events_sub_push(s, fr);
	}
}

struct events_sub *
events_subscribe(struct events *ev, const struct events_filter *f,
    const char *last_event_id, const struct events_conn_ops *ops)
{
	struct events_sub *s;
	struct frame *hello;
	enum resume how;
	uint64_t after = 0;
	cJSON *o;

	pthread_mutex_lock(&ev->mu);
	if (ev->shutdown || ev->nsubs >= EVENTS_MAX_SUBS) {
		pthread_mutex_unlock(&ev->mu);
		return NULL;
	}
	s = xcalloc(1, sizeof *s);
	s->ev = ev;
	s->ops = ops;
	s->f = *f;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "stream.hello");
	cJSON_AddStringToObject(o, "streamId", ev->svc->stream_id);
	cJSON_AddNumberToObject(o, "headSeq", (double)ev->seq);
	cJSON_AddNumberToObject(o, "heartbeatMs", (double)ev->heartbeat_ms);
	how = resume_point(ev, last_event_id, &after);
	/*
	 * A standard client takes any frame's id as its last event id: the hello of
	 * a replay names the resume point, never the head, or a drop right after it
	 * would skip the replayed events.
	 */
	hello = control_frame_at(ev, true, how == RESUME_REPLAY ? after : ev->seq,
	    "stream.hello", o);
	events_sub_push(s, hello);
	events_frame_unref(hello);
	sub_replay(ev, s, how, after);
	s->next = ev->subs;
	if (ev->subs != NULL)
		ev->subs->prev = s;
	ev->subs = s;
	ev->nsubs++;
	pthread_mutex_unlock(&ev->mu);
	return s;
}

void
events_sub_free(struct events_sub *s)
{
	struct events *ev;

	if (s == NULL)
		return;
	ev = s->ev;
	pthread_mutex_lock(&ev->mu);
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		ev->subs = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	ev->nsubs--;
	pthread_mutex_unlock(&ev->mu);
	while (s->qlen > 0)
		events_sub_pop(s);
	free(s->qfirst);
	free(s);
}

void
events_end_session(struct events *ev, const char *session_id)
{
	if (ev == NULL)
		return;
	pthread_mutex_lock(&ev->mu);
	for (struct events_sub *s = ev->subs; s; s = s->next) {
		if (strcmp(s->f.session, session_id) == 0) {
			s->closing = true;
			events_sub_wake(s, NULL);
		}
	}
	pthread_mutex_unlock(&ev->mu);
}
