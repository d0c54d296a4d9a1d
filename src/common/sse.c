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

/* Whether n more bytes fit in the event being built. */
static bool
sse_fits(const struct sse_parser *p, size_t n)
{
	size_t used = p->line.len + p->data.len + p->type.len;

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

static int
sse_dispatch(struct sse_parser *p)
{
	struct sse_event ev;
	int rc;

	if (p->data.len == 0) {
		buf_reset(&p->type);
		return SSE_OK;
	}
	p->data.data[--p->data.len] = '\0';	/* the last '\n' */
	ev.type = p->type.len ? p->type.data : "message";
	ev.data = p->data.data;
	ev.data_len = p->data.len;
	ev.id = sse_last_id(p);
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

/* One complete line of n bytes at l, without its end. */
static int
sse_line(struct sse_parser *p, const char *l, size_t n)
{
	size_t flen, vlen;
	const char *colon, *v;
	int rc = SSE_OK;

	if (n == 0)
		return sse_dispatch(p);
	if (l[0] == ':')
		goto done;
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
		if (p->data.len + p->type.len + vlen + 1 > p->max) {
			rc = SSE_TOO_BIG;
			goto done;
		}
		buf_append(&p->data, v, vlen);
		buf_append(&p->data, "\n", 1);
	} else if (flen == 5 && memcmp(l, "event", 5) == 0) {
		buf_reset(&p->type);
		buf_append(&p->type, v, vlen);
	} else if (flen == 2 && memcmp(l, "id", 2) == 0) {
		if (memchr(v, '\0', vlen) == NULL) {
			buf_reset(&p->id);
			buf_append(&p->id, v, vlen);
		}
	} else if (flen == 5 && memcmp(l, "retry", 5) == 0)
		sse_set_retry(p, v, vlen);
done:
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

int
sse_feed(struct sse_parser *p, const char *buf, size_t len)
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
		/* A line whole in buf is read in place; else it ends what was kept. */
		if (p->line.len == 0) {
			rc = sse_fits(p, (size_t)(eol - buf) - i) ?
			    sse_line(p, buf + i, (size_t)(eol - buf) - i) : SSE_TOO_BIG;
		} else if ((rc = sse_line_append(p, buf + i, (size_t)(eol - buf) - i)) == SSE_OK)
			rc = sse_line(p, p->line.data, p->line.len);
		p->after_cr = *eol == '\r';
		i = (size_t)(eol - buf) + 1;
	}
	p->error = rc;
	return rc;
}
