/* Control characters kept off the terminal, for everything others name. */
#include <string.h>

#include "termtext.h"

/* The length of the valid UTF-8 character at p[0..len) and its code point; 0 when invalid. */
static size_t
termtext_decode(const unsigned char *p, size_t len, unsigned long *cp)
{
	size_t n;
	unsigned long c, min;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		c = p[0] & 0x1fu;
		min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		c = p[0] & 0x0fu;
		min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		c = p[0] & 0x07u;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3fu);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* The length of the character at s[0..len) (len > 0); *unsafe whether it is one termtext_unsafe names. */
static size_t
termtext_next(const char *s, size_t len, bool *unsafe)
{
	unsigned long cp;
	size_t n = termtext_decode((const unsigned char *)s, len, &cp);

	if (n == 0) {
		*unsafe = true;
		return 1;
	}
	*unsafe = cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
	    cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
	return n;
}

size_t
termtext_unsafe(const char *s, size_t len)
{
	bool unsafe;
	size_t n;

	if (len == 0)
		return 0;
	n = termtext_next(s, len, &unsafe);
	return unsafe ? n : 0;
}

void
termtext_append(struct buf *b, const char *s, const struct termtext_style *style)
{
	size_t len = strlen(s), i = 0, from = 0, n;
	bool unsafe;

	while (i < len) {
		n = termtext_next(s + i, len - i, &unsafe);
		if (unsafe) {
			buf_append(b, s + from, i - from);
			if (s[i] == '\n' && style != NULL && style->newline != NULL)
				buf_appends(b, style->newline);
			else if (s[i] == '\t' && style != NULL && style->tab != NULL)
				buf_appends(b, style->tab);
			else
				buf_appends(b, "?");
			from = i + n;
		}
		i += n;
	}
	buf_append(b, s + from, len - from);
}

char *
termtext_line(const char *s)
{
	static const struct termtext_style line = { " ", " " };
	struct buf b;

	buf_init(&b, 0);
	termtext_append(&b, s != NULL ? s : "-", &line);
	return buf_steal(&b);
}

bool
termtext_safe(const char *s)
{
	size_t len = strlen(s);
	bool unsafe;

	for (size_t i = 0; i < len; ) {
		i += termtext_next(s + i, len - i, &unsafe);
		if (unsafe)
			return false;
	}
	return true;
}
