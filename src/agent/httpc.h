/*
 * A streaming HTTP POST with libcurl for the model providers: the body of a
 * successful event-stream answer goes to a callback as it arrives; any other
 * answer is kept (bounded) for the error message.  A cancel of the run
 * aborts the transfer at once.
 */
#ifndef TD_AGENT_HTTPC_H
#define TD_AGENT_HTTPC_H

#include <stddef.h>

#include "buf.h"

struct host;

enum httpc_status {
	HTTPC_OK,
	HTTPC_UNREACHABLE,	/* no answer: connection, DNS, TLS */
	HTTPC_BROKEN,		/* the answer started, then the transfer failed */
	HTTPC_CANCELLED,
	HTTPC_STOPPED,		/* on_data asked to stop */
	HTTPC_TOO_BIG,		/* the streamed body passed max_body */
};

struct httpc_request {
	const char *method;		/* "GET" or NULL for POST */
	long timeout_ms;		/* of the whole transfer; 0 for none */
	const char *url;
	const char *const *headers;	/* "Name: value", NULL-terminated */
	const char *body;
	size_t body_len;
	size_t max_body;
	/* Receives a 2xx text/event-stream body; non-zero stops the transfer. */
	int (*on_data)(const char *data, size_t len, void *ud);
	void *ud;
};

struct httpc_response {
	long status;			/* 0 when no answer came */
	char *content_type;		/* malloc'd or NULL */
	struct buf body;		/* any other body, at most 64 KiB */
	char error[256];		/* libcurl's reason when not HTTPC_OK */
	/* When the provider asks to wait: Retry-After, retry-after-ms; -1 when absent. */
	long retry_after_ms;
};

void httpc_response_init(struct httpc_response *r);
void httpc_response_free(struct httpc_response *r);
int httpc_post_stream(struct host *h, const struct httpc_request *req,
    struct httpc_response *resp);

#endif
