#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "xalloc.h"

struct redact {
	char **forms;		/* longest first */
	size_t n;
};

struct redact *
redact_new(void)
{
	return xcalloc(1, sizeof(struct redact));
}

void
redact_free(struct redact *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++) {
		explicit_bzero(r->forms[i], strlen(r->forms[i]));
		free(r->forms[i]);
	}
	free(r->forms);
	free(r);
}

bool
redact_empty(const struct redact *r)
{
	return r == NULL || r->n == 0;
}

/* Adds s[0..len) once, keeping the list longest first. */
static void
add_form(struct redact *r, const char *s, size_t len)
{
	size_t at = 0;

	if (len == 0)
		return;
	for (size_t i = 0; i < r->n; i++)
		if (strlen(r->forms[i]) == len && memcmp(r->forms[i], s, len) == 0)
			return;
	while (at < r->n && strlen(r->forms[at]) >= len)
		at++;
	r->forms = xrealloc(r->forms, (r->n + 1) * sizeof *r->forms);
	memmove(r->forms + at + 1, r->forms + at, (r->n - at) * sizeof *r->forms);
	r->forms[at] = xstrndup(s, len);
	r->n++;
}

static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (padding optional) into a new string; NULL when it is not base64. */
static char *
b64_decode(const char *s, size_t len)
{
	char *out;
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;

	while (len > 0 && s[len - 1] == '=')
		len--;
	if (len == 0 || len % 4 == 1)
		return NULL;
	out = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++) {
		int v = b64_value((unsigned char)s[i]);

		if (v < 0) {
			explicit_bzero(out, o);
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	return out;
}

void
redact_add(struct redact *r, const char *value)
{
	const char *sp, *cred;
	size_t scheme;

	if (r == NULL || value == NULL || *value == '\0')
		return;
	add_form(r, value, strlen(value));
	/* "<scheme> <credentials>": what an Authorization-like header holds. */
	sp = strchr(value, ' ');
	if (sp == NULL)
		return;
	scheme = (size_t)(sp - value);
	for (size_t i = 0; i < scheme; i++)
		if (!isalnum((unsigned char)value[i]) && value[i] != '-' && value[i] != '_')
			return;
	for (cred = sp; *cred == ' '; cred++)
		;
	if (strlen(cred) >= REDACT_MIN_PART)
		add_form(r, cred, strlen(cred));
	if (scheme == 5 && strncasecmp(value, "basic", 5) == 0) {
		char *plain = b64_decode(cred, strlen(cred));
		const char *colon = plain ? strchr(plain, ':') : NULL;

		if (plain != NULL && strlen(plain) >= REDACT_MIN_PART)
			add_form(r, plain, strlen(plain));
		if (colon != NULL && strlen(colon + 1) >= REDACT_MIN_PART)
			add_form(r, colon + 1, strlen(colon + 1));
		if (plain != NULL) {
			explicit_bzero(plain, strlen(plain));
			free(plain);
		}
	}
}

void
redact_text(const struct redact *r, char *s, size_t len, unsigned cuts)
{
	if (r == NULL || s == NULL)
		return;
	for (size_t i = 0; i < r->n; i++) {
		const char *f = r->forms[i];
		size_t flen = strlen(f);
		char *at = s, *end = s + len;

		while ((size_t)(end - at) >= flen && (at = memmem(at, (size_t)(end - at), f, flen))
		    != NULL) {
			memset(at, '*', flen);
			at += flen;
		}
		/* What a cut left of a form: its end at the start, its beginning at the end. */
		for (size_t k = flen - 1 < len ? flen - 1 : len; (cuts & REDACT_CUT_START) && k > 0;
		    k--)
			if (memcmp(s, f + flen - k, k) == 0) {
				memset(s, '*', k);
				break;
			}
		for (size_t k = flen - 1 < len ? flen - 1 : len; (cuts & REDACT_CUT_END) && k > 0;
		    k--)
			if (memcmp(s + len - k, f, k) == 0) {
				memset(s + len - k, '*', k);
				break;
			}
	}
}

void
redact_str(const struct redact *r, char *s)
{
	if (s != NULL)
		redact_text(r, s, strlen(s), 0);
}

void
redact_json(const struct redact *r, cJSON *item)
{
	if (redact_empty(r) || item == NULL)
		return;
	redact_str(r, item->string);
	if (cJSON_IsString(item))
		redact_str(r, item->valuestring);
	for (cJSON *c = item->child; c != NULL; c = c->next)
		redact_json(r, c);
}
