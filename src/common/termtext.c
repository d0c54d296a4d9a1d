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

size_t
termtext_unsafe(const char *s, size_t len)
{
	unsigned long cp;
	size_t n;

	if (len == 0)
		return 0;
	n = termtext_decode((const unsigned char *)s, len, &cp);
	if (n == 0)
		return 1;
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
	    cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return n;
	return 0;
}

void
termtext_append(struct buf *b, const char *s, const struct termtext_style *style)
{
	size_t len = strlen(s), i = 0, n, safe;

	while (i < len) {
		for (safe = i; safe < len && termtext_unsafe(s + safe, len - safe) == 0; ) {
			unsigned long cp;
			size_t k = termtext_decode((const unsigned char *)s + safe, len - safe, &cp);

			safe += k;
		}
		buf_append(b, s + i, safe - i);
		if (safe == len)
			break;
		n = termtext_unsafe(s + safe, len - safe);
		if (s[safe] == '\n' && style != NULL && style->newline != NULL)
			buf_appends(b, style->newline);
		else if (s[safe] == '\t' && style != NULL && style->tab != NULL)
			buf_appends(b, style->tab);
		else
			buf_appends(b, "?");
		i = safe + n;
	}
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

	for (size_t i = 0; i < len; ) {
		unsigned long cp;
		size_t n;

		if (termtext_unsafe(s + i, len - i) != 0)
			return false;
		n = termtext_decode((const unsigned char *)s + i, len - i, &cp);
		i += n;
	}
	return true;
}
