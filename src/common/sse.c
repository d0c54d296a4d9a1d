#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sse.h"
#include "xalloc.h"

static const unsigned char sse_bom[3] = { 0xef, 0xbb, 0xbf };

struct sse_parser {
	sse_event_fn cb;
	void *ud;
	size_t max;
	struct buf line;
	struct buf data;
	struct buf type;
	struct buf id;
	/*
	 * The event's one data line so far, where the caller's buffer holds it
	 * (sse_feed_own), not yet copied to data; NULL when there is none.
	 */
	char *pend;
	size_t pend_len;
	char *own;		/* the buffer being fed when the parser may write in it */
	long retry;
	size_t bom_seen;	/* leading bytes that matched the BOM so far */
	bool bom_done;
	bool after_cr;		/* the last byte was a CR: skip one LF */
	int error;
};

struct sse_parser *
sse_new(size_t max_event, sse_event_fn cb, void *ud)
{
	struct sse_parser *p = xcalloc(1, sizeof *p);

	p->cb = cb;
	p->ud = ud;
	p->max = max_event;
	buf_init(&p->line, 0);
	buf_init(&p->data, 0);
	buf_init(&p->type, 0);
	buf_init(&p->id, 0);
	p->retry = -1;
	return p;
}

void
sse_free(struct sse_parser *p)
{
	if (p == NULL)
		return;
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->type);
	buf_free(&p->id);
	free(p);
}

const char *
sse_last_id(const struct sse_parser *p)
{
	return p->id.data ? p->id.data : "";
}

long
sse_retry(const struct sse_parser *p)
{
	return p->retry;
}

/* Bytes of data the event has so far, with their '\n'. */
static size_t
sse_data_len(const struct sse_parser *p)
{
	return p->data.len + (p->pend != NULL ? p->pend_len + 1 : 0);
}

/* Whether n more bytes fit in the event being built. */
static bool
sse_fits(const struct sse_parser *p, size_t n)
{
	size_t used = p->line.len + sse_data_len(p) + p->type.len;

	return used <= p->max && n <= p->max - used;
}

static int
sse_line_append(struct sse_parser *p, const char *s, size_t n)
{
	if (!sse_fits(p, n))
		return SSE_TOO_BIG;
	buf_append(&p->line, s, n);
	return SSE_OK;
}

/* Copies the pending data line to data: the buffer that holds it goes. */
static void
sse_unpend(struct sse_parser *p)
{
	if (p->pend == NULL)
		return;
	buf_append(&p->data, p->pend, p->pend_len);
	buf_append(&p->data, "\n", 1);
	p->pend = NULL;
}

/* Sets b to the n bytes at v. */
static void
sse_set(struct buf *b, const char *v, size_t n)
{
	if (b->data != NULL && n < b->cap) {
		memcpy(b->data, v, n);
		b->data[n] = '\0';
		b->len = n;
	} else {
		buf_reset(b);
		buf_append(b, v, n);
	}
}

static int
sse_dispatch(struct sse_parser *p)
{
	struct sse_event ev;
	int rc;

	if (p->pend != NULL) {
		/* The line's end, already read, becomes the data's NUL. */
		p->pend[p->pend_len] = '\0';
		ev.data = p->pend;
		ev.data_len = p->pend_len;
		p->pend = NULL;
	} else if (p->data.len == 0) {
		buf_reset(&p->type);
		return SSE_OK;
	} else {
		p->data.data[--p->data.len] = '\0';	/* the last '\n' */
		ev.data = p->data.data;
		ev.data_len = p->data.len;
	}
	ev.type = p->type.len ? p->type.data : "message";
	ev.id = sse_last_id(p);
	ev.id_len = p->id.len;
	ev.retry = p->retry;
	rc = p->cb(&ev, p->ud);
	buf_reset(&p->data);
	buf_reset(&p->type);
	return rc == 0 ? SSE_OK : SSE_ABORTED;
}

static void
sse_set_retry(struct sse_parser *p, const char *v, size_t n)
{
	long r = 0;

	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return;
		if (r > (LONG_MAX - 9) / 10)
			return;
		r = r * 10 + (v[i] - '0');
	}
	p->retry = r;
}

/*
 * One complete line of n bytes at l, without its end; in_place when l is in
 * the buffer being fed (not the parser's copy of a line cut across feeds).
 */
static int
sse_line(struct sse_parser *p, const char *l, size_t n, bool in_place)
{
	size_t flen, vlen;
	const char *colon, *v;
	int rc = SSE_OK;

	if (n == 0)
		return sse_dispatch(p);
	if (l[0] == ':')
		goto done;
	/* The fields a stream is made of, without a search for the colon. */
	if (n >= 5 && memcmp(l, "data:", 5) == 0)
		colon = l + 4;
	else if (n >= 3 && memcmp(l, "id:", 3) == 0)
		colon = l + 2;
	else if (n >= 6 && memcmp(l, "event:", 6) == 0)
		colon = l + 5;
	else
		colon = memchr(l, ':', n);
	if (colon != NULL) {
		flen = (size_t)(colon - l);
		v = colon + 1;
		vlen = n - flen - 1;
		if (vlen > 0 && *v == ' ') {
			v++;
			vlen--;
		}
	} else {
		flen = n;
		v = l + n;
		vlen = 0;
	}
	if (flen == 4 && memcmp(l, "data", 4) == 0) {
		/* The line itself leaves the event once it is consumed. */
		if (sse_data_len(p) + p->type.len + vlen + 1 > p->max) {
			rc = SSE_TOO_BIG;
			goto done;
		}
		if (in_place && p->own != NULL && p->pend == NULL && p->data.len == 0) {
			p->pend = p->own + (v - p->own);
			p->pend_len = vlen;
			goto done;
		}
		sse_unpend(p);
		buf_append(&p->data, v, vlen);
		buf_append(&p->data, "\n", 1);
	} else if (flen == 5 && memcmp(l, "event", 5) == 0) {
		sse_set(&p->type, v, vlen);
	} else if (flen == 2 && memcmp(l, "id", 2) == 0) {
		if (memchr(v, '\0', vlen) == NULL)
			sse_set(&p->id, v, vlen);
	} else if (flen == 5 && memcmp(l, "retry", 5) == 0)
		sse_set_retry(p, v, vlen);
done:
	if (p->line.len != 0)
		buf_reset(&p->line);
	return rc;
}

/* Consumes the leading bytes that may be a BOM; returns how many. */
static size_t
sse_skip_bom(struct sse_parser *p, const char *buf, size_t len, int *rc)
{
	size_t i = 0;

	while (!p->bom_done && i < len) {
		if ((unsigned char)buf[i] == sse_bom[p->bom_seen]) {
			i++;
			if (++p->bom_seen == sizeof sse_bom)
				p->bom_done = true;
			continue;
		}
		/* Not a BOM after all: what matched so far is line content. */
		p->bom_done = true;
		*rc = sse_line_append(p, (const char *)sse_bom, p->bom_seen);
	}
	return i;
}

/* The first c in [from, end), or end; cached when it is still ahead. */
static const char *
sse_find(const char *from, const char *end, int c, const char *cached)
{
	const char *f;

	if (cached != NULL && cached >= from)
		return cached;
	f = memchr(from, c, (size_t)(end - from));
	return f != NULL ? f : end;
}

static int
sse_parse(struct sse_parser *p, const char *buf, size_t len)
{
	const char *end = buf + len, *lf = NULL, *cr = NULL, *eol;
	size_t i;
	int rc = SSE_OK;

	if (p->error)
		return p->error;
	i = sse_skip_bom(p, buf, len, &rc);
	while (rc == SSE_OK && i < len) {
		if (p->after_cr) {
			p->after_cr = false;
			if (buf[i] == '\n') {
				i++;
				continue;
			}
		}
		/* Both searches stay valid until the line passes them: linear. */
		lf = sse_find(buf + i, end, '\n', lf);
		cr = sse_find(buf + i, end, '\r', cr);
		eol = lf < cr ? lf : cr;
		if (eol == end) {
			rc = sse_line_append(p, buf + i, len - i);
			break;
		}
		p->after_cr = *eol == '\r';
		/* A line whole in buf is read in place; else it ends what was kept. */
		if (p->line.len == 0) {
			rc = sse_fits(p, (size_t)(eol - buf) - i) ?
			    sse_line(p, buf + i, (size_t)(eol - buf) - i, true) : SSE_TOO_BIG;
		} else if ((rc = sse_line_append(p, buf + i, (size_t)(eol - buf) - i)) == SSE_OK)
			rc = sse_line(p, p->line.data, p->line.len, false);
		i = (size_t)(eol - buf) + 1;
	}
	/* What stays of the event outlives buf. */
	sse_unpend(p);
	p->error = rc;
	return rc;
}

int
sse_feed(struct sse_parser *p, const char *buf, size_t len)
{
	p->own = NULL;
	return sse_parse(p, buf, len);
}

int
sse_feed_own(struct sse_parser *p, char *buf, size_t len)
{
	int rc;

	p->own = buf;
	rc = sse_parse(p, buf, len);
	p->own = NULL;
	return rc;
}
