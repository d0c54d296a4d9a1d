/*
 * libFuzzer target for the SSE parser (src/common/sse.c).  The first input
 * byte chooses how the rest is cut into chunks; the stream must give the same
 * events and the same status whether it is fed whole or in chunks, and
 * whether through sse_feed or, each chunk copied to a block of its own,
 * sse_feed_own.  Build
 * and run: `make fuzz-sse && ./fuzz-sse -max_len=8192` (needs clang).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "sse.h"

#define FUZZ_MAX_EVENT 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_record(const struct sse_event *ev, void *ud)
{
	struct buf *log = ud;

	if (strlen(ev->data) > ev->data_len || ev->data[ev->data_len] != '\0' ||
	    strlen(ev->id) != ev->id_len)
		__builtin_trap();
	buf_printf(log, "%s\x1f%s\x1f%ld\x1f", ev->type, ev->id, ev->retry);
	buf_append(log, ev->data, ev->data_len);
	buf_append(log, "\x1e", 1);
	return 0;
}

static int
fuzz_parse(const char *s, size_t len, unsigned seed, bool own, struct buf *log)
{
	struct sse_parser *p = sse_new(FUZZ_MAX_EVENT, fuzz_record, log);
	size_t off = 0, i = 0;
	int rc = SSE_OK;

	while (off < len && rc == SSE_OK) {
		size_t n = seed == 0 ? len : 1 + (seed * 31 + i++ * 7) % 17;

		if (n > len - off)
			n = len - off;
		if (own) {
			char *copy = malloc(n);

			memcpy(copy, s + off, n);
			rc = sse_feed_own(p, copy, n);
			memset(copy, 0x1f, n);
			free(copy);
		} else
			rc = sse_feed(p, s + off, n);
		off += n;
	}
	if (rc == SSE_OK)
		rc = sse_feed(p, "", 0);
	sse_free(p);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf whole, split, own;
	int rc_whole, rc_split, rc_own;

	if (size < 1)
		return 0;
	buf_init(&whole, 0);
	buf_init(&split, 0);
	buf_init(&own, 0);
	rc_whole = fuzz_parse((const char *)data + 1, size - 1, 0, false, &whole);
	rc_split = fuzz_parse((const char *)data + 1, size - 1, data[0] | 1u, false, &split);
	rc_own = fuzz_parse((const char *)data + 1, size - 1, data[0] >> 1, true, &own);
	if (rc_whole != rc_split || whole.len != split.len ||
	    (whole.len > 0 && memcmp(whole.data, split.data, whole.len) != 0))
		__builtin_trap();
	if (rc_whole != rc_own || whole.len != own.len ||
	    (whole.len > 0 && memcmp(whole.data, own.data, whole.len) != 0))
		__builtin_trap();
	buf_free(&whole);
	buf_free(&split);
	buf_free(&own);
	return 0;
}
