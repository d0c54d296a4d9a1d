/*
 * A bounded cache of rendered resources: id -> the JSON text the API answers.
 * Polling clients (dashboards, waitForRun) read the same few resources over
 * and over; this saves a SQLite read and a JSON rendering per poll.
 *
 * Consistency rule: cache_put and cache_drop are called with the store lock
 * held, put with text just read from the database and drop in the same
 * locked section as the write.  cache_get needs no store lock.
 */
#ifndef TD_SERVICE_CACHE_H
#define TD_SERVICE_CACHE_H

#include <stddef.h>

struct cache;

/* slots is rounded up to a power of two; each slot holds one resource. */
struct cache *cache_new(size_t slots);
void cache_free(struct cache *c);
/* A malloc'd copy of the text for id (its length in *len), or NULL. */
char *cache_get(struct cache *c, const char *id, size_t *len);
void cache_put(struct cache *c, const char *id, const char *json);
void cache_drop(struct cache *c, const char *id);

#endif
