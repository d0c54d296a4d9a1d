/*
 * libFuzzer target for the request parsing taskdeckd does itself, past
 * libmicrohttpd (src/service/httpparse.c): the query argument count of the
 * request line, the Host/Origin authority, Idempotency-Key, the route table's
 * path matching and Last-Event-ID.  The input is one string; each parser gets
 * it, and what it accepts must be what its contract says.
 * Run: `make fuzz-http && ./fuzz-http tests/fuzz/corpus/http` (needs clang).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A few patterns of the route table's shapes. */
static const char *const patterns[] = {
	"/api/v1/projects", "/api/v1/projects/:id", "/api/v1/runs/:id/events",
	"/api/v1/sessions/:id/artifacts/:name", "/api/v1/a/:x/b/:y/c/:z",
};

static void
check_route(const char *path)
{
	size_t n = strlen(path);
	char *scratch = malloc(n + 1);

	for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
		const char *params[3] = { 0 };
		int want = 0;

		for (const char *p = patterns[i]; *p; p++)
			want += *p == ':';
		if (!http_route_match(patterns[i], path, scratch, params, 3))
			continue;
		/* Every capture is a non-empty segment of the path, inside scratch. */
		for (int k = 0; k < 3; k++) {
			if ((params[k] != NULL) != (k < want))
				__builtin_trap();
			if (params[k] == NULL)
				continue;
			if (params[k] < scratch || params[k] >= scratch + n || *params[k] == '\0' ||
			    strchr(params[k], '/') != NULL)
				__builtin_trap();
		}
	}
	free(scratch);
}

static void
check_last_event_id(const char *v)
{
	char stream[33], again_stream[33], text[64];
	uint64_t seq = 0, again_seq = 0;

	if (!http_parse_last_event_id(v, stream, &seq))
		return;
	if (strlen(stream) != 32 || strspn(stream, "0123456789abcdef") != 32)
		__builtin_trap();
	/* What it read, written back, reads the same. */
	snprintf(text, sizeof text, "%s:%" PRIu64, stream, seq);
	if (!http_parse_last_event_id(text, again_stream, &again_seq) ||
	    strcmp(stream, again_stream) != 0 || seq != again_seq)
		__builtin_trap();
}

static void
check_idem_key(const char *key)
{
	size_t n = strlen(key);

	if (!http_idem_key_valid(key))
		return;
	if (n == 0 || n > 255 || key[0] == ' ' || key[n - 1] == ' ')
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x20 || (unsigned char)key[i] > 0x7e)
			__builtin_trap();
}

static void
check_authority(const char *v)
{
	if (!http_loopback_authority(v, 8421))
		return;
	if (strlen(v) > 20 || strchr(v, ':') == NULL || strcmp(strrchr(v, ':'), ":8421") != 0)
		__builtin_trap();
}

static void
check_query(const char *uri)
{
	size_t args = http_query_arg_count(uri), seps = 0;
	const char *q = strchr(uri, '?');

	for (const char *p = q ? q + 1 : ""; *p; p++)
		seps += *p == '&' || *p == ';';
	if (q == NULL || q[1] == '\0' ? args != 0 : args != seps + 1)
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';		/* headers and paths reach us NUL-terminated */
	check_route(s);
	check_last_event_id(s);
	check_idem_key(s);
	check_authority(s);
	check_query(s);
	free(s);
	return 0;
}
