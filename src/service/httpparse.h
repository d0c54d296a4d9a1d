/*
 * The parts of a request that taskdeckd itself reads from the raw text, apart
 * from libmicrohttpd: the query argument count, the Host/Origin authority, the
 * Idempotency-Key, the route's path segments and Last-Event-ID.  Pure
 * functions on strings, so that tests/fuzz/fuzz-http.c can feed them anything.
 */
#ifndef TD_SERVICE_HTTPPARSE_H
#define TD_SERVICE_HTTPPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The number of query arguments of a request line's URI (0 without a query). */
size_t http_query_arg_count(const char *uri);

/* True when a request line's URI encodes a NUL byte (%00) in its path or query. */
bool http_uri_has_nul(const char *uri);

/* True when value is "127.0.0.1:PORT", "localhost:PORT" or "[::1]:PORT" (any case). */
bool http_loopback_authority(const char *value, int port);

/* True for 1 to 255 printable ASCII characters, no space at either end. */
bool http_idem_key_valid(const char *key);

/*
 * Matches path against pattern ("/api/v1/runs/:id").  Segments of the pattern
 * that start with ':' capture one non-empty segment of the path; at most
 * max_params of them.  scratch has strlen(path) + 1 bytes; params point into it.
 */
bool http_route_match(const char *pattern, const char *path, char *scratch,
    const char **params, int max_params);

/*
 * Parses a Last-Event-ID "S:N" (S the 32 lower-case hex digits of a stream id,
 * N a decimal seq below 2^64), with spaces and tabs around it trimmed.
 */
bool http_parse_last_event_id(const char *v, char stream[33], uint64_t *seq);

#endif
