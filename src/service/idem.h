/*
 * The idempotency registry (DESIGN.md section 10): remembers, per
 * Idempotency-Key, a fingerprint of the request and the answer it got, so
 * that a retry replays the answer instead of creating a second resource.
 * Process-local, bounded, entries live for a fixed time.
 */
#ifndef TD_SERVICE_IDEM_H
#define TD_SERVICE_IDEM_H

#include <stddef.h>
#include <stdint.h>

#define IDEM_FP_LEN 32
#define IDEM_DEFAULT_CAPACITY 10000
/* The answers kept hold at most this many bytes in all; past it, IDEM_FULL. */
#define IDEM_MAX_BYTES (64 * 1024 * 1024)
#define IDEM_TTL_MS (24LL * 60 * 60 * 1000)
#define IDEM_RETRY_AFTER_S 60

struct idem;

enum idem_result {
	IDEM_PROCEED,	/* first use: run the request, then idem_complete/abandon */
	IDEM_REPLAY,	/* same request seen: the reply is filled in */
	IDEM_CONFLICT,	/* same key, different request */
	IDEM_FULL,	/* no room: every entry is still live */
};

struct idem_reply {
	int status;
	char *body;		/* caller frees */
	char *location;		/* caller frees; may be NULL */
};

/* now_ms may be NULL for the wall clock (tests pass their own). */
struct idem *idem_new(size_t capacity, int64_t ttl_ms, int64_t (*now_ms)(void));
void idem_free(struct idem *ix);
/* Lowers the byte bound (taskdeckd --idempotency-bytes, for tests). */
void idem_set_max_bytes(struct idem *ix, size_t bytes);
/*
 * Looks key up.  A duplicate that arrives while the first request is still
 * running waits for it and then gets IDEM_REPLAY (or IDEM_PROCEED if the
 * first was abandoned).
 */
enum idem_result idem_begin(struct idem *ix, const char *key,
    const unsigned char fp[IDEM_FP_LEN], struct idem_reply *reply);
/* Records the answer of a request that got IDEM_PROCEED. */
void idem_complete(struct idem *ix, const char *key, int status,
    const char *body, const char *location);
/* Forgets a request that got IDEM_PROCEED (it failed; a retry may run). */
void idem_abandon(struct idem *ix, const char *key);
/* Forgets the answered requests whose answer or location holds needle (a deleted id). */
void idem_forget_matching(struct idem *ix, const char *needle);
/* Number of entries held (live or expired but not yet swept). */
size_t idem_count(struct idem *ix);

#endif
