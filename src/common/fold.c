/* Case-insensitive prefixes of UTF-8 names, without the locale. */
#include <stddef.h>

#include "fold.h"

/* A byte that is not UTF-8 stands for itself, apart from every code point. */
#define FOLD_RAW 0x110000L

/* The code point at *s (advanced past it). */
static long
fold_next(const unsigned char **s)
{
	const unsigned char *p = *s;
	long cp;
	int more;

	if (p[0] < 0x80) {
		*s = p + 1;
		return p[0];
	}
	if ((p[0] & 0xe0) == 0xc0 && p[0] >= 0xc2) {
		cp = p[0] & 0x1f;
		more = 1;
	} else if ((p[0] & 0xf0) == 0xe0) {
		cp = p[0] & 0x0f;
		more = 2;
	} else if ((p[0] & 0xf8) == 0xf0 && p[0] <= 0xf4) {
		cp = p[0] & 0x07;
		more = 3;
	} else {
		*s = p + 1;
		return FOLD_RAW + p[0];
	}
	for (int i = 1; i <= more; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			*s = p + 1;
			return FOLD_RAW + p[0];
		}
		cp = cp << 6 | (p[i] & 0x3f);
	}
	*s = p + 1 + more;
	return cp;
}

/* The lower-case letter of cp, for the scripts fold.h names; else cp. */
static long
fold_lower(long cp)
{
	if ((cp >= 'A' && cp <= 'Z') || (cp >= 0xc0 && cp <= 0xde && cp != 0xd7))
		return cp + 0x20;
	/* Latin Extended-A: upper and lower alternate, from an even or an odd start */
	if ((cp >= 0x100 && cp <= 0x12f) || (cp >= 0x132 && cp <= 0x137) ||
	    (cp >= 0x14a && cp <= 0x177))
		return cp | 1;
	if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e))
		return cp + (cp & 1);
	if (cp == 0x178)
		return 0xff;
	/* Greek, with the accented capitals and the final sigma */
	if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2)
		return cp + 0x20;
	if (cp == 0x386)
		return 0x3ac;
	if (cp >= 0x388 && cp <= 0x38a)
		return cp + 0x25;
	if (cp == 0x38c)
		return 0x3cc;
	if (cp == 0x38e || cp == 0x38f)
		return cp + 0x3f;
	if (cp == 0x3c2)
		return 0x3c3;
	/* Cyrillic */
	if (cp >= 0x410 && cp <= 0x42f)
		return cp + 0x20;
	if (cp >= 0x400 && cp <= 0x40f)
		return cp + 0x50;
	return cp;
}

bool
fold_has_prefix(const char *s, const char *prefix)
{
	const unsigned char *a = (const unsigned char *)s, *b = (const unsigned char *)prefix;

	while (*b != '\0') {
		if (*a == '\0' || fold_lower(fold_next(&a)) != fold_lower(fold_next(&b)))
			return false;
	}
	return true;
}
