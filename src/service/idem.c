#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "timeutil.h"
#include "xalloc.h"

struct idem_entry {
	struct idem_entry *next;
	char *key;
	unsigned char fp[IDEM_FP_LEN];
	bool done;
	int status;
	char *body;
	char *location;
	int64_t created_ms;
	size_t bytes;		/* what it holds, counted in idem->bytes */
};

struct idem {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct idem_entry **buckets;
	size_t nbuckets;
	size_t count;
	size_t capacity;
	size_t bytes, max_bytes;	/* what the entries hold, and its bound */
	int64_t ttl_ms;
	int64_t (*now_ms)(void);
};

static size_t
idem_hash(const char *key)
{
	size_t h = 1469598103934665603ULL;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 1099511628211ULL;
	return h;
}

struct idem *
idem_new(size_t capacity, int64_t ttl_ms, int64_t (*now_ms)(void))
{
	struct idem *ix = xcalloc(1, sizeof *ix);

	pthread_mutex_init(&ix->lock, NULL);
	pthread_cond_init(&ix->changed, NULL);
	ix->capacity = capacity;
	ix->max_bytes = IDEM_MAX_BYTES;
	ix->nbuckets = 64;
	while (ix->nbuckets < capacity)
		ix->nbuckets *= 2;
	ix->buckets = xcalloc(ix->nbuckets, sizeof *ix->buckets);
	ix->ttl_ms = ttl_ms;
	ix->now_ms = now_ms ? now_ms : clock_wall_ms;
	return ix;
}

void
idem_set_max_bytes(struct idem *ix, size_t bytes)
{
	pthread_mutex_lock(&ix->lock);
	ix->max_bytes = bytes;
	pthread_mutex_unlock(&ix->lock);
}

/* Frees an entry taken out of the table, and forgets its bytes. */
static void
entry_drop(struct idem *ix, struct idem_entry *e)
{
	ix->bytes -= e->bytes;
	ix->count--;
	free(e->key);
	free(e->body);
	free(e->location);
	free(e);
}

static void
entry_free(struct idem_entry *e)
{
	free(e->key);
	free(e->body);
	free(e->location);
	free(e);
}

void
idem_free(struct idem *ix)
{
	if (ix == NULL)
		return;
	for (size_t i = 0; i < ix->nbuckets; i++) {
		struct idem_entry *e = ix->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			entry_free(e);
		}
	}
	free(ix->buckets);
	pthread_cond_destroy(&ix->changed);
	pthread_mutex_destroy(&ix->lock);
	free(ix);
}

static struct idem_entry **
idem_slot(struct idem *ix, const char *key)
{
	struct idem_entry **pp = &ix->buckets[idem_hash(key) & (ix->nbuckets - 1)];

	while (*pp && strcmp((*pp)->key, key) != 0)
		pp = &(*pp)->next;
	return pp;
}

static bool
expired(const struct idem *ix, const struct idem_entry *e, int64_t now)
{
	return e->done && now - e->created_ms >= ix->ttl_ms;
}

/* Drops every finished entry older than the retention time. */
static void
idem_sweep(struct idem *ix, int64_t now)
{
	for (size_t i = 0; i < ix->nbuckets; i++) {
		struct idem_entry **pp = &ix->buckets[i];

		while (*pp) {
			struct idem_entry *e = *pp;
			if (expired(ix, e, now)) {
				*pp = e->next;
				entry_drop(ix, e);
			} else {
				pp = &e->next;
			}
		}
	}
}

enum idem_result
idem_begin(struct idem *ix, const char *key, const unsigned char fp[IDEM_FP_LEN],
    struct idem_reply *reply)
{
	enum idem_result result;
	struct idem_entry **pp, *e;
	int64_t now;

	pthread_mutex_lock(&ix->lock);
	for (;;) {
		now = ix->now_ms();
		pp = idem_slot(ix, key);
		e = *pp;
		if (e != NULL && expired(ix, e, now)) {
			*pp = e->next;
			entry_drop(ix, e);
			e = NULL;
		}
		if (e == NULL || e->done || memcmp(e->fp, fp, IDEM_FP_LEN) != 0)
			break;
		/* The same request is running: wait for its answer. */
		pthread_cond_wait(&ix->changed, &ix->lock);
	}
	if (e != NULL && memcmp(e->fp, fp, IDEM_FP_LEN) != 0) {
		result = IDEM_CONFLICT;
	} else if (e != NULL) {
		reply->status = e->status;
		reply->body = xstrdup(e->body);
		reply->location = xstrdup_or_null(e->location);
		result = IDEM_REPLAY;
	} else {
		if (ix->count >= ix->capacity || ix->bytes >= ix->max_bytes)
			idem_sweep(ix, now);
		if (ix->count >= ix->capacity || ix->bytes >= ix->max_bytes) {
			result = IDEM_FULL;
		} else {
			e = xcalloc(1, sizeof *e);
			e->key = xstrdup(key);
			e->bytes = sizeof *e + strlen(key) + 1;
			ix->bytes += e->bytes;
			memcpy(e->fp, fp, IDEM_FP_LEN);
			e->created_ms = now;
			pp = idem_slot(ix, key);
			*pp = e;
			ix->count++;
			result = IDEM_PROCEED;
		}
	}
	pthread_mutex_unlock(&ix->lock);
	return result;
}

void
idem_complete(struct idem *ix, const char *key, int status, const char *body,
    const char *location)
{
	struct idem_entry *e;

	pthread_mutex_lock(&ix->lock);
	e = *idem_slot(ix, key);
	if (e != NULL && !e->done) {
		e->done = true;
		e->status = status;
		e->body = xstrdup(body ? body : "");
		e->location = xstrdup_or_null(location);
		e->bytes += strlen(e->body) + 1 + (location ? strlen(location) + 1 : 0);
		ix->bytes += strlen(e->body) + 1 + (location ? strlen(location) + 1 : 0);
		/* Retention counts from the answer, not the arrival. */
		e->created_ms = ix->now_ms();
	}
	pthread_cond_broadcast(&ix->changed);
	pthread_mutex_unlock(&ix->lock);
}

void
idem_abandon(struct idem *ix, const char *key)
{
	struct idem_entry **pp, *e;

	pthread_mutex_lock(&ix->lock);
	pp = idem_slot(ix, key);
	e = *pp;
	if (e != NULL && !e->done) {
		*pp = e->next;
		entry_drop(ix, e);
	}
	pthread_cond_broadcast(&ix->changed);
	pthread_mutex_unlock(&ix->lock);
}

size_t
idem_count(struct idem *ix)
{
	size_t n;

	pthread_mutex_lock(&ix->lock);
	n = ix->count;
	pthread_mutex_unlock(&ix->lock);
	return n;
}

void
idem_forget_matching(struct idem *ix, const char *needle)
{
	pthread_mutex_lock(&ix->lock);
	for (size_t b = 0; b < ix->nbuckets; b++) {
		struct idem_entry **pp = &ix->buckets[b], *e;

		while ((e = *pp) != NULL) {
			if (e->done && ((e->body != NULL && strstr(e->body, needle) != NULL) ||
			    (e->location != NULL && strstr(e->location, needle) != NULL))) {
				*pp = e->next;
				entry_drop(ix, e);
			} else {
				pp = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&ix->lock);
}
