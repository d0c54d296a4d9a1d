/*
 * A growable byte buffer with a hard cap, always NUL-terminated.  Used for
 * anything whose size comes from outside: request bodies, response bodies,
 * event frames, provider streams.
 */
#ifndef TD_COMMON_BUF_H
#define TD_COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *data;	/* NUL-terminated; NULL until the first append */
	size_t len;
	size_t cap;	/* allocated bytes */
	size_t max;	/* hard cap on len; 0 = unbounded */
};

void buf_init(struct buf *b, size_t max);
/* false (and b unchanged) when the append would pass b->max. */
bool buf_append(struct buf *b, const void *data, size_t len);
bool buf_appends(struct buf *b, const char *s);
bool buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);
/* Hand the contents to the caller (free() it); b is emptied. */
char *buf_steal(struct buf *b);
void buf_free(struct buf *b);

/* snprintf into a fixed array, for messages meant to be cut short when too long. */
void cutf(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
