#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "json.h"
#include "jsonscan.h"

/* What a byte inside a string is. */
enum scan_class {
	SC_PLAIN,	/* printable ASCII */
	SC_QUOTE,
	SC_ESCAPE,
	SC_BAD,		/* a control character, or never valid in UTF-8 here */
	SC_U2,		/* leads a 2-byte UTF-8 sequence */
	SC_U3,
	SC_U4,
};

static const unsigned char scan_class[256] = {
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
};

#define SCAN_ONES 0x0101010101010101ULL
#define SCAN_HIGHS 0x8080808080808080ULL

struct scan {
	const unsigned char *p, *end;
};

static bool scan_value(struct scan *s, int depth, struct jsonscan_value *v);

static void
scan_space(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' ||
	    *s->p == '\t'))
		s->p++;
}

/*
 * The bytes of 8 at p that may need a look (non-ASCII, control, '"' or '\\'),
 * as the high bit of each; 0 when none.  The borrows that make a byte look
 * special falsely only run from a special byte to the ones after it, so on a
 * little-endian machine the lowest bit set is the first special byte.
 */
static uint64_t
scan_special8(const unsigned char *p)
{
	uint64_t v, q, b;

	memcpy(&v, p, sizeof v);
	q = v ^ (SCAN_ONES * '"');
	b = v ^ (SCAN_ONES * '\\');
	return (v | ((v - SCAN_ONES * 0x20) & ~v) | ((q - SCAN_ONES) & ~q) |
	    ((b - SCAN_ONES) & ~b)) & SCAN_HIGHS;
}

/* How many plain bytes lead the 8 at p, given their scan_special8 mask (not 0). */
static size_t
scan_plain_lead(const unsigned char *p, uint64_t mask)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	(void)p;
	return (size_t)__builtin_ctzll(mask) / 8;
#else
	size_t i = 0;

	(void)mask;
	while (scan_class[p[i]] == SC_PLAIN)
		i++;
	return i;
#endif
}

#ifdef __SSE2__
/* The bytes of 16 at p that may need a look, a bit each (bit i: p[i]); exact. */
static unsigned
scan_special16(const unsigned char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	/* Signed: the non-ASCII bytes are below 0x20 too. */
	__m128i m = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
	    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
	    _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));

	return (unsigned)_mm_movemask_epi8(m);
}
#endif

static int
scan_hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The 4 hex digits after "\u" at p (6 bytes available), or -1. */
static long
scan_u4(const unsigned char *p)
{
	long cp = 0;
	int d;

	for (int i = 2; i < 6; i++) {
		if ((d = scan_hex(p[i])) < 0)
			return -1;
		cp = cp << 4 | d;
	}
	return cp;
}

/* One escape at s->p (the backslash); false when invalid. */
static bool
scan_escape(struct scan *s)
{
	const unsigned char *p = s->p;
	long hi, lo;

	if (s->end - p < 2)
		return false;
	if (memchr("\"\\/bfnrt", p[1], 8) != NULL) {
		s->p += 2;
		return true;
	}
	if (p[1] != 'u' || s->end - p < 6 || (hi = scan_u4(p)) < 0)
		return false;
	s->p += 6;
	if (hi < 0xd800 || hi > 0xdfff)
		return true;
	/* A surrogate: a high one followed by a low one, nothing else. */
	if (hi > 0xdbff || s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
	    (lo = scan_u4(s->p)) < 0xdc00 || lo > 0xdfff)
		return false;
	s->p += 6;
	return true;
}

/* The first byte from p on that is not SC_PLAIN, or end. */
static const unsigned char *
scan_plain(const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		unsigned m = scan_special16(p);

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	for (; end - p >= 8; p += 8) {
		uint64_t m = scan_special8(p);

		if (m != 0)
			return p + scan_plain_lead(p, m);
	}
	while (p < end && scan_class[*p] == SC_PLAIN)
		p++;
	return p;
}

/* The rest of a string from p, in v since s->p (its quote): escapes, UTF-8, its end. */
static bool __attribute__((noinline))
scan_string_rest(struct scan *s, struct jsonscan_value *v, const unsigned char *p)
{
	const unsigned char *end = s->end;

	for (;;) {
		p = scan_plain(p, end);
		if (p >= end)
			return false;
		switch (scan_class[*p]) {
		case SC_QUOTE:
			v->str_len = (size_t)(p - (const unsigned char *)v->str);
			s->p = p + 1;
			v->len = (size_t)(s->p - (const unsigned char *)v->text);
			return true;
		case SC_ESCAPE:
			s->p = p;
			if (!scan_escape(s))
				return false;
			p = s->p;
			v->escaped = true;
			break;
		case SC_U2:
			if (end - p < 2 || (p[1] & 0xc0) != 0x80)
				return false;
			p += 2;
			break;
		case SC_U3:
			/* No overlong form (E0 80..9F) and no surrogate (ED A0..BF). */
			if (end - p < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 ||
			    (p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))
				return false;
			p += 3;
			break;
		case SC_U4:
			/* No overlong form (F0 80..8F) and nothing past U+10FFFF. */
			if (end - p < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 ||
			    (p[3] & 0xc0) != 0x80 || (p[0] == 0xf0 && p[1] < 0x90) ||
			    (p[0] == 0xf4 && p[1] >= 0x90))
				return false;
			p += 4;
			break;
		default:
			return false;
		}
	}
}

/* A string at s->p (the quote) into v. */
static bool
scan_string(struct scan *s, struct jsonscan_value *v)
{
	const unsigned char *p = s->p + 1;

	v->type = JSONSCAN_STRING;
	v->text = (const char *)s->p;
	v->str = (const char *)p;
	v->escaped = false;
#ifdef __SSE2__
	/* Most strings are plain ASCII: the first byte to look at is the closing quote. */
	for (; s->end - p >= 16; p += 16) {
		unsigned m = scan_special16(p);

		if (m == 0)
			continue;
		p += __builtin_ctz(m);
		if (*p != '"')
			break;
		v->str_len = (size_t)(p - (const unsigned char *)v->str);
		s->p = p + 1;
		v->len = v->str_len + 2;
		return true;
	}
#endif
	return scan_string_rest(s, v, p);
}

/* Digits at s->p; false when there is none. */
static bool
scan_digits(struct scan *s)
{
	const unsigned char *start = s->p;

	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool
scan_number(struct scan *s)
{
	if (s->p < s->end && *s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (!scan_digits(s))
		return false;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!scan_digits(s))
			return false;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!scan_digits(s))
			return false;
	}
	return true;
}

static bool
scan_word(struct scan *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return false;
	s->p += n;
	return true;
}

/* The members of an object at s->p (the brace), to fn when not NULL. */
static bool
scan_object(struct scan *s, int depth, jsonscan_member_fn fn, void *ud)
{
	struct jsonscan_value key, value;

	s->p++;
	scan_space(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return true;
	}
	for (;;) {
		if (s->p >= s->end || *s->p != '"' || !scan_string(s, &key))
			return false;
		scan_space(s);
		if (s->p >= s->end || *s->p != ':')
			return false;
		s->p++;
		scan_space(s);
		if (!scan_value(s, depth, &value))
			return false;
		if (fn != NULL && !fn(&key, &value, ud))
			return false;
		scan_space(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == '}') {
			s->p++;
			return true;
		}
		if (*s->p++ != ',')
			return false;
		scan_space(s);
	}
}

static bool
scan_array(struct scan *s, int depth)
{
	struct jsonscan_value value;

	s->p++;
	scan_space(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return true;
	}
	for (;;) {
		if (!scan_value(s, depth, &value))
			return false;
		scan_space(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == ']') {
			s->p++;
			return true;
		}
		if (*s->p++ != ',')
			return false;
		scan_space(s);
	}
}

/* One value at s->p inside a container at depth. */
static bool
scan_value(struct scan *s, int depth, struct jsonscan_value *v)
{
	bool ok;

	if (s->p >= s->end)
		return false;
	v->text = (const char *)s->p;
	v->str = NULL;
	v->str_len = 0;
	v->escaped = false;
	switch (*s->p) {
	case '"':
		return scan_string(s, v);
	case '{':
	case '[':
		if (depth >= JSON_MAX_DEPTH)
			return false;
		v->type = *s->p == '{' ? JSONSCAN_OBJECT : JSONSCAN_ARRAY;
		ok = v->type == JSONSCAN_OBJECT ? scan_object(s, depth + 1, NULL, NULL) :
		    scan_array(s, depth + 1);
		break;
	case 't':
		v->type = JSONSCAN_TRUE;
		ok = scan_word(s, "true", 4);
		break;
	case 'f':
		v->type = JSONSCAN_FALSE;
		ok = scan_word(s, "false", 5);
		break;
	case 'n':
		v->type = JSONSCAN_NULL;
		ok = scan_word(s, "null", 4);
		break;
	default:
		v->type = JSONSCAN_NUMBER;
		ok = scan_number(s);
		break;
	}
	v->len = (size_t)((const char *)s->p - v->text);
	return ok;
}

bool
jsonscan_object(const char *text, size_t len, jsonscan_member_fn fn, void *ud)
{
	struct scan s = {
		.p = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
	};

	if (text == NULL)
		return false;
	scan_space(&s);
	if (s.p >= s.end || *s.p != '{' || !scan_object(&s, 1, fn, ud))
		return false;
	scan_space(&s);
	return s.p == s.end;
}

bool
jsonscan_document(const char *text, size_t len)
{
	struct scan s = {
		.p = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
	};
	struct jsonscan_value v;

	if (text == NULL)
		return false;
	scan_space(&s);
	/* At depth 0, so that a top-level object counts as jsonscan_object's does. */
	if (!scan_value(&s, 0, &v))
		return false;
	scan_space(&s);
	return s.p == s.end;
}

size_t
jsonscan_value_at(const char *text, size_t len, struct jsonscan_value *v)
{
	struct scan s = {
		.p = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
	};

	if (text == NULL || len == 0)
		return 0;
	/* Strings are the most common values: straight to their scan. */
	if (!(*text == '"' ? scan_string(&s, v) : scan_value(&s, 1, v)))
		return 0;
	return (size_t)((const char *)s.p - text);
}

/* cp as UTF-8 at out; returns the bytes written. */
static size_t
scan_put_utf8(char *out, long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

size_t
jsonscan_unescape(const struct jsonscan_value *s, char *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const unsigned char *p = (const unsigned char *)s->str;
	const unsigned char *end = p + s->str_len;
	size_t n = 0;
	long cp;

	while (p < end) {
		const unsigned char *bs = memchr(p, '\\', (size_t)(end - p));
		size_t plain = bs != NULL ? (size_t)(bs - p) : (size_t)(end - p);

		memcpy(out + n, p, plain);
		n += plain;
		p += plain;
		if (p >= end)
			break;
		if (p[1] != 'u') {
			out[n++] = to[strchr(from, p[1]) - from];
			p += 2;
			continue;
		}
		cp = scan_u4(p);
		p += 6;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			cp = 0x10000 + ((cp - 0xd800) << 10) + (scan_u4(p) - 0xdc00);
			p += 6;
		}
		n += scan_put_utf8(out + n, cp);
	}
	return n;
}
