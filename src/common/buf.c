#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

static void
buf_reserve(struct buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;

	if (need + 1 <= b->cap)
		return;
	while (cap < need + 1)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

bool
buf_append(struct buf *b, const void *data, size_t len)
{
	if (b->max != 0 && (len > b->max || b->len > b->max - len))
		return false;
	buf_reserve(b, b->len + len);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return true;
}

bool
buf_appends(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

bool
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *tmp;
	bool ok;

	va_start(ap, fmt);
	n = vasprintf(&tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	ok = buf_append(b, tmp, (size_t)n);
	free(tmp);
	return ok;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *
buf_steal(struct buf *b)
{
	char *p = b->data ? b->data : xstrdup("");

	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b, b->max);
}

void
cutf(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, size, fmt, ap);
	va_end(ap);
}
