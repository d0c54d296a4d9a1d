#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sse.h"

/* Every event as "type|id|retry|data" lines, to compare whole runs. */
struct seen {
	struct buf log;
	int count;
	int stop_after;		/* abort after this many events; 0 = never */
};

static int
record(const struct sse_event *ev, void *ud)
{
	struct seen *s = ud;

	cr_assert_eq(strlen(ev->data), ev->data_len, "data_len disagrees");
	cr_assert_eq(strlen(ev->id), ev->id_len, "id_len disagrees");
	buf_printf(&s->log, "%s|%s|%ld|%s\n", ev->type, ev->id, ev->retry, ev->data);
	s->count++;
	return s->stop_after && s->count >= s->stop_after;
}

static void
seen_init(struct seen *s)
{
	buf_init(&s->log, 0);
	s->count = 0;
	s->stop_after = 0;
}

/* Feeds text in one piece; returns what was seen (free it). */
static char *
parse_all(const char *text, size_t len, size_t max, int *rc)
{
	struct seen s;
	struct sse_parser *p;

	seen_init(&s);
	p = sse_new(max, record, &s);
	*rc = sse_feed(p, text, len);
	sse_free(p);
	return buf_steal(&s.log);
}

static void
expect_events(const char *text, const char *want)
{
	int rc;
	char *got = parse_all(text, strlen(text), 4096, &rc);

	cr_expect_eq(rc, SSE_OK);
	cr_expect_str_eq(got, want, "stream %s", text);
	free(got);
}

Test(sse, fields_of_one_event)
{
	expect_events("event: run.output\nid: 7\ndata: {\"a\":1}\n\n",
	    "run.output|7|-1|{\"a\":1}\n");
	expect_events("data: no type\n\n", "message||-1|no type\n");
	expect_events("retry: 2500\ndata: x\n\n", "message||2500|x\n");
}

Test(sse, data_lines_are_joined_with_newlines)
{
	expect_events("data: one\ndata: two\ndata:\ndata: four\n\n",
	    "message||-1|one\ntwo\n\nfour\n");
}

Test(sse, every_line_ending)
{
	expect_events("data: a\r\ndata: b\rdata: c\n\r\nevent: e\r\rdata: d\n\n",
	    "message||-1|a\nb\nc\nmessage||-1|d\n");
}

Test(sse, comments_and_unknown_fields_are_ignored)
{
	expect_events(": heartbeat\n:\nfoo: bar\ndata: x\n: inside\n\n",
	    "message||-1|x\n");
}

Test(sse, only_one_space_after_the_colon_is_stripped)
{
	expect_events("data:  two spaces\ndata:none\ndata:\tTab\n\n",
	    "message||-1| two spaces\nnone\n\tTab\n");
}

Test(sse, field_without_colon_has_an_empty_value)
{
	/* "data" alone appends an empty line: the event is dispatched with "". */
	expect_events("data\n\n", "message||-1|\n");
	expect_events("data\ndata\n\n", "message||-1|\n\n");
	/* "event" alone resets the type to the default. */
	expect_events("event\ndata: x\n\n", "message||-1|x\n");
}

Test(sse, events_without_data_are_not_dispatched)
{
	expect_events("event: ping\n\nid: 5\n\ndata: after\n\n", "message|5|-1|after\n");
	/* The type of an undispatched block does not leak into the next. */
	expect_events("event: lost\n\ndata: y\n\n", "message||-1|y\n");
}

Test(sse, incomplete_event_at_the_end_is_not_dispatched)
{
	expect_events("data: done\n\ndata: half", "message||-1|done\n");
	expect_events("data: done\n\ndata: half\n", "message||-1|done\n");
}

Test(sse, id_persists_and_id_with_nul_is_ignored)
{
	static const char text[] = "id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n";
	int rc;
	char *got = parse_all(text, sizeof text - 1, 4096, &rc);

	cr_expect_eq(rc, SSE_OK);
	cr_expect_str_eq(got, "message|1|-1|a\nmessage|1|-1|b\nmessage|1|-1|c\nmessage||-1|d\n");
	free(got);
}

Test(sse, retry_needs_only_digits)
{
	expect_events("retry: 10\nretry: 1x\nretry: -5\nretry:\ndata: a\n\n", "message||10|a\n");
	expect_events("retry: 99999999999999999999999\ndata: a\n\n", "message||-1|a\n");
}

Test(sse, leading_bom_is_skipped_once)
{
	expect_events("\xef\xbb\xbf" "data: a\n\n", "message||-1|a\n");
	/* A second BOM is part of the first field name, which is then unknown. */
	expect_events("\xef\xbb\xbf\xef\xbb\xbf" "data: a\n\ndata: b\n\n", "message||-1|b\n");
	/* A partial BOM is content, not dropped. */
	expect_events("\xef\xbb" "data: a\n\ndata: b\n\n", "message||-1|b\n");
}

Test(sse, bom_split_across_chunks)
{
	static const char text[] = "\xef\xbb\xbf" "data: a\n\n";
	struct seen s;
	struct sse_parser *p;
	char *got;

	seen_init(&s);
	p = sse_new(64, record, &s);
	for (size_t i = 0; i < sizeof text - 1; i++)
		cr_assert_eq(sse_feed(p, text + i, 1), SSE_OK);
	sse_free(p);
	got = buf_steal(&s.log);
	cr_expect_str_eq(got, "message||-1|a\n");
	free(got);
}

Test(sse, utf8_passes_through_split_characters)
{
	static const char text[] = "data: h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\n\n";
	struct seen s;
	struct sse_parser *p;
	char *got;

	seen_init(&s);
	p = sse_new(64, record, &s);
	for (size_t i = 0; i < sizeof text - 1; i++)
		cr_assert_eq(sse_feed(p, text + i, 1), SSE_OK);
	sse_free(p);
	got = buf_steal(&s.log);
	cr_expect_str_eq(got, "message||-1|h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\n");
	free(got);
}

/* A stream with every feature; parsed whole, then split at every pair of positions. */
static const char sample[] =
    "\xef\xbb\xbf: comment\r\n"
    "retry: 3000\r\n"
    "event: run.output\r\n"
    "id: s1:1\r\n"
    "data: {\"delta\":\"h\xc3\xa9\"}\r\n"
    "\r\n"
    "data: line one\r"
    "data: line two\r"
    "\r"
    "event: ping\n"
    "\n"
    "id: s1:2\n"
    "data\n"
    "data:  spaced\n"
    "\n"
    "event: done\r\n"
    "data: [DONE]\r\n"
    "\r\n";

/* Feeds the sample in three pieces through feed, cut at every pair of places; each gives want. */
static void
every_split(int (*feed)(struct sse_parser *, const char *, size_t), const char *want)
{
	size_t len = sizeof sample - 1;

	for (size_t a = 0; a <= len; a++) {
		for (size_t b = a; b <= len; b++) {
			struct seen s;
			struct sse_parser *p;

			seen_init(&s);
			p = sse_new(4096, record, &s);
			cr_assert_eq(feed(p, sample, a), SSE_OK);
			cr_assert_eq(feed(p, sample + a, b - a), SSE_OK);
			cr_assert_eq(feed(p, sample + b, len - b), SSE_OK);
			sse_free(p);
			cr_assert_str_eq(s.log.data ? s.log.data : "", want,
			    "split at %zu and %zu", a, b);
			buf_free(&s.log);
		}
	}
}

Test(sse, every_split_position_gives_the_same_events)
{
	int rc;
	char *want = parse_all(sample, sizeof sample - 1, 4096, &rc);

	cr_assert_eq(rc, SSE_OK);
	cr_assert_str_eq(want,
	    "run.output|s1:1|3000|{\"delta\":\"h\xc3\xa9\"}\n"
	    "message|s1:1|3000|line one\nline two\n"
	    "message|s1:2|3000|\n spaced\n"
	    "done|s1:2|3000|[DONE]\n");
	every_split(sse_feed, want);
	free(want);
}

/* sse_feed_own on a copy of n bytes at text, in a block of its own; the copy is then scribbled on. */
static int
feed_own(struct sse_parser *p, const char *text, size_t n)
{
	char *copy = malloc(n ? n : 1);
	int rc;

	memcpy(copy, text, n);
	rc = sse_feed_own(p, copy, n);
	/* What the parser kept must not be in the caller's buffer. */
	memset(copy, '#', n);
	free(copy);
	return rc;
}

Test(sse, a_buffer_the_parser_may_write_in_gives_the_same_events_at_every_split)
{
	int rc;
	char *want = parse_all(sample, sizeof sample - 1, 4096, &rc);

	every_split(feed_own, want);
	free(want);
}

Test(sse, a_data_line_kept_across_buffers_is_the_line_that_came)
{
	struct seen s;
	struct sse_parser *p;

	seen_init(&s);
	p = sse_new(4096, record, &s);
	/* The data line is whole in the first buffer, the blank line in the second. */
	cr_assert_eq(feed_own(p, "id: a:1\ndata: first\r\n", 21), SSE_OK);
	cr_assert_eq(feed_own(p, "\r\ndata: second\n\ndata: x\ndata: y\n", 32), SSE_OK);
	cr_assert_eq(feed_own(p, "\n", 1), SSE_OK);
	sse_free(p);
	cr_expect_str_eq(s.log.data, "message|a:1|-1|first\nmessage|a:1|-1|second\n"
	    "message|a:1|-1|x\ny\n");
	buf_free(&s.log);
}

Test(sse, byte_by_byte_gives_the_same_events)
{
	size_t len = sizeof sample - 1;
	int rc;
	char *want = parse_all(sample, len, 4096, &rc);
	struct seen s;
	struct sse_parser *p;

	seen_init(&s);
	p = sse_new(4096, record, &s);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(sse_feed(p, sample + i, 1), SSE_OK);
	sse_free(p);
	cr_expect_str_eq(s.log.data, want);
	buf_free(&s.log);
	free(want);
}

Test(sse, oversized_event_is_an_error_and_stays_one)
{
	struct seen s;
	struct sse_parser *p;
	char big[200];

	seen_init(&s);
	p = sse_new(64, record, &s);
	cr_assert_eq(sse_feed(p, "data: small\n\n", 13), SSE_OK);
	/* Many lines, each small, that add up past the limit. */
	for (int i = 0; i < 10; i++) {
		int rc = sse_feed(p, "data: 0123456789\n", 17);
		if (rc != SSE_OK) {
			cr_expect_eq(rc, SSE_TOO_BIG);
			cr_expect_geq(i, 3, "failed too early, at line %d", i);
			break;
		}
		cr_assert_lt(i, 9, "never failed");
	}
	cr_expect_eq(sse_feed(p, "\n\ndata: x\n\n", 11), SSE_TOO_BIG, "error not sticky");
	cr_expect_eq(s.count, 1);
	sse_free(p);
	buf_free(&s.log);

	/* One long line without an end is refused before it is complete. */
	memset(big, 'a', sizeof big);
	seen_init(&s);
	p = sse_new(64, record, &s);
	cr_expect_eq(sse_feed(p, big, sizeof big), SSE_TOO_BIG);
	sse_free(p);
	cr_expect_eq(s.count, 0);
}

Test(sse, events_up_to_the_limit_are_accepted)
{
	struct seen s;
	struct sse_parser *p;
	char line[80];

	/* "data: " + 58 bytes = a 64-byte line, the limit. */
	memcpy(line, "data: ", 6);
	memset(line + 6, 'z', 58);
	memcpy(line + 64, "\n\n", 2);
	seen_init(&s);
	p = sse_new(64, record, &s);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(sse_feed(p, line, 66), SSE_OK);
	cr_expect_eq(s.count, 100);
	sse_free(p);
	buf_free(&s.log);
}

Test(sse, callback_can_stop_the_parser)
{
	struct seen s;
	struct sse_parser *p;
	const char *text = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

	seen_init(&s);
	s.stop_after = 2;
	p = sse_new(64, record, &s);
	cr_expect_eq(sse_feed(p, text, strlen(text)), SSE_ABORTED);
	cr_expect_eq(s.count, 2);
	cr_expect_eq(sse_feed(p, "data: 4\n\n", 9), SSE_ABORTED);
	cr_expect_eq(s.count, 2);
	sse_free(p);
	buf_free(&s.log);
}

Test(sse, last_id_and_retry_are_readable)
{
	struct seen s;
	struct sse_parser *p;

	seen_init(&s);
	p = sse_new(64, record, &s);
	cr_expect_str_eq(sse_last_id(p), "");
	cr_expect_eq(sse_retry(p), -1);
	sse_feed(p, "id: abc\nretry: 15\n\n", 19);
	cr_expect_str_eq(sse_last_id(p), "abc");
	cr_expect_eq(sse_retry(p), 15);
	cr_expect_eq(s.count, 0);
	sse_free(p);
	sse_free(NULL);
	buf_free(&s.log);
}

Test(sse, lines_whole_in_one_piece_are_bounded_too)
{
	struct seen s;
	struct sse_parser *p;
	char text[300];

	/* A complete 200-byte line (a comment), read in place, passes a 64-byte limit. */
	memcpy(text, ": pad ", 6);
	memset(text + 6, 'a', 194);
	memcpy(text + 200, "\n\n", 2);
	seen_init(&s);
	p = sse_new(64, record, &s);
	cr_expect_eq(sse_feed(p, text, 202), SSE_TOO_BIG);
	sse_free(p);
	cr_expect_eq(s.count, 0);
	buf_free(&s.log);
}

Test(sse, many_events_in_one_piece_with_cr_endings)
{
	struct buf text, want;
	struct seen s;
	struct sse_parser *p;

	buf_init(&text, 0);
	buf_init(&want, 0);
	for (int i = 0; i < 500; i++) {
		buf_printf(&text, "id: %d\rdata: e%d\r\r", i, i);
		buf_printf(&want, "message|%d|-1|e%d\n", i, i);
	}
	seen_init(&s);
	p = sse_new(64, record, &s);
	cr_expect_eq(sse_feed(p, text.data, text.len), SSE_OK);
	sse_free(p);
	cr_expect_eq(s.count, 500);
	cr_expect_str_eq(s.log.data, want.data);
	buf_free(&s.log);
	buf_free(&text);
	buf_free(&want);
}
