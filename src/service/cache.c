#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "ids.h"
#include "xalloc.h"

/* Direct-mapped: a new resource replaces whatever shared its slot. */
struct cache_slot {
	char id[TD_ID_MAX];
	char *json;
	size_t len;
};

struct cache {
	pthread_rwlock_t lock;
	struct cache_slot *slots;
	size_t mask;
};

static size_t
cache_index(const struct cache *c, const char *id)
{
	size_t h = 1469598103934665603ULL;

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 1099511628211ULL;
	return h & c->mask;
}

struct cache *
cache_new(size_t slots)
{
	struct cache *c = xcalloc(1, sizeof *c);
	size_t n = 1;

	while (n < slots)
		n *= 2;
	c->slots = xcalloc(n, sizeof *c->slots);
	c->mask = n - 1;
	pthread_rwlock_init(&c->lock, NULL);
	return c;
}

void
cache_free(struct cache *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i <= c->mask; i++)
		free(c->slots[i].json);
	free(c->slots);
	pthread_rwlock_destroy(&c->lock);
	free(c);
}

char *
cache_get(struct cache *c, const char *id, size_t *len)
{
	struct cache_slot *s = &c->slots[cache_index(c, id)];
	char *copy = NULL;

	pthread_rwlock_rdlock(&c->lock);
	if (s->json != NULL && strcmp(s->id, id) == 0) {
		copy = xmalloc(s->len + 1);
		memcpy(copy, s->json, s->len + 1);
		*len = s->len;
	}
	pthread_rwlock_unlock(&c->lock);
	return copy;
}

void
cache_put(struct cache *c, const char *id, const char *json)
{
	struct cache_slot *s = &c->slots[cache_index(c, id)];
	char *copy;

	if (strlen(id) >= TD_ID_MAX)
		return;
	copy = xstrdup(json);
	pthread_rwlock_wrlock(&c->lock);
	free(s->json);
	strcpy(s->id, id);
	s->json = copy;
	s->len = strlen(copy);
	pthread_rwlock_unlock(&c->lock);
}

void
cache_drop(struct cache *c, const char *id)
{
	struct cache_slot *s = &c->slots[cache_index(c, id)];

	pthread_rwlock_wrlock(&c->lock);
	if (s->json != NULL && strcmp(s->id, id) == 0) {
		free(s->json);
		s->json = NULL;
	}
	pthread_rwlock_unlock(&c->lock);
}
