/*
 * An incremental Server-Sent Events parser (WHATWG HTML, "Parsing an event
 * stream").  Feed it bytes split anywhere; it calls back once per complete
 * event.  Bytes are passed through as they come: the caller validates the
 * UTF-8 of what it uses (json_parse does).
 */
#ifndef TD_COMMON_SSE_H
#define TD_COMMON_SSE_H

#include <stddef.h>

enum sse_status {
	SSE_OK = 0,
	SSE_TOO_BIG = -1,	/* an event (or one line) passed max_event bytes */
	SSE_ABORTED = -2,	/* the callback returned non-zero */
};

/* Valid only during the callback. */
struct sse_event {
	const char *type;	/* "message" when the event had no event field */
	const char *data;	/* data lines joined with '\n', NUL-terminated */
	size_t data_len;
	const char *id;		/* the last event id so far ("" when none) */
	size_t id_len;
	long retry;		/* the last retry value so far, -1 when none */
};

/* Returns 0 to go on; anything else stops the parser (SSE_ABORTED). */
typedef int (*sse_event_fn)(const struct sse_event *ev, void *ud);

/* max_event bounds one event: its data, type and the line being read. */
struct sse_parser *sse_new(size_t max_event, sse_event_fn cb, void *ud);
/*
 * Parses len more bytes.  Returns SSE_OK, or the first error; after an error
 * every later call returns it again.
 */
int sse_feed(struct sse_parser *p, const char *buf, size_t len);
/*
 * sse_feed, but the parser may write over the bytes that end lines in buf:
 * an event whose one data line is whole in buf reaches the callback
 * without a copy (its data is then in buf).
 */
int sse_feed_own(struct sse_parser *p, char *buf, size_t len);
const char *sse_last_id(const struct sse_parser *p);
long sse_retry(const struct sse_parser *p);
void sse_free(struct sse_parser *p);

#endif
