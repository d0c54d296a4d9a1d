#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpparse.h"

size_t
http_query_arg_count(const char *uri)
{
	const char *query = strchr(uri, '?');
	size_t args = 1;

	if (query == NULL || query[1] == '\0')
		return 0;
	for (const char *p = query + 1; *p != '\0'; p++)
		if (*p == '&' || *p == ';')
			args++;
	return args;
}

bool
http_uri_has_nul(const char *uri)
{
	for (const char *p = strchr(uri, '%'); p != NULL; p = strchr(p + 1, '%'))
		if (p[1] == '0' && p[2] == '0')
			return true;
	return false;
}

bool
http_loopback_authority(const char *value, int port)
{
	static const char *hosts[] = { "127.0.0.1", "localhost", "[::1]" };
	char want[64];

	for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
		snprintf(want, sizeof want, "%s:%d", hosts[i], port);
		if (strcasecmp(value, want) == 0)
			return true;
	}
	return false;
}

bool
http_idem_key_valid(const char *key)
{
	size_t n = strlen(key);

	if (n == 0 || n > 255 || key[0] == ' ' || key[n - 1] == ' ')
		return false;
	for (const char *p = key; *p; p++) {
		if (*p < 0x20 || *p > 0x7e)
			return false;
	}
	return true;
}

bool
http_route_match(const char *pattern, const char *path, char *scratch,
    const char **params, int max_params)
{
	char *p = scratch;
	int np = 0;

	strcpy(scratch, path);
	for (;;) {
		if (*pattern == '\0' && *p == '\0')
			break;
		if (*pattern != '/' || *p != '/')
			return false;
		pattern++;
		p++;

		const char *pend = strchrnul(pattern, '/');
		char *send = strchrnul(p, '/');
		size_t plen = (size_t)(pend - pattern), slen = (size_t)(send - p);

		if (*pattern == ':') {
			if (slen == 0 || np == max_params)
				return false;
			params[np++] = p;
		} else if (plen != slen || strncmp(pattern, p, plen) != 0) {
			return false;
		}
		pattern = pend;
		p = send;
	}
	/* Terminate the captured segments. */
	for (p = scratch; *p; p++) {
		if (*p == '/')
			*p = '\0';
	}
	return true;
}

bool
http_parse_last_event_id(const char *v, char stream[33], uint64_t *seq)
{
	const char *colon, *start, *stop;
	char digits[24];
	char *end;
	unsigned long long n;
	size_t len;

	if (v == NULL)
		return false;
	for (start = v; *start == ' ' || *start == '\t'; start++)
		;
	for (stop = start + strlen(start); stop > start && (stop[-1] == ' ' || stop[-1] == '\t');
	    stop--)
		;
	if ((colon = memchr(start, ':', (size_t)(stop - start))) == NULL || colon - start != 32)
		return false;
	for (const char *p = start; p < colon; p++) {
		if (!strchr("0123456789abcdef", *p))
			return false;
	}
	len = (size_t)(stop - colon - 1);
	if (len == 0 || len >= sizeof digits)
		return false;
	memcpy(digits, colon + 1, len);
	digits[len] = '\0';
	for (size_t i = 0; i < len; i++) {
		if (digits[i] < '0' || digits[i] > '9')
			return false;
	}
	errno = 0;
	n = strtoull(digits, &end, 10);
	if (errno == ERANGE || *end != '\0')
		return false;
	memcpy(stream, start, 32);
	stream[32] = '\0';
	*seq = n;
	return true;
}
