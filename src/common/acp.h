/*
 * The Agent Client Protocol's wire (docs/frameworks.md, "ACP"): JSON-RPC 2.0
 * messages, one per line, on a pair of file descriptors.  Shared by
 * `taskdeck acp` (taskdeck as an ACP agent) and framework-acp.c (taskdeck-agent
 * as an ACP client).
 */
#ifndef TD_COMMON_ACP_H
#define TD_COMMON_ACP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "buf.h"

#define ACP_PROTOCOL_VERSION 1
#define ACP_LINE_MAX (8 * 1024 * 1024)	/* one message; longer ones are refused */

/* JSON-RPC error codes. */
#define ACP_PARSE_ERROR (-32700)
#define ACP_INVALID_REQUEST (-32600)
#define ACP_METHOD_NOT_FOUND (-32601)
#define ACP_INVALID_PARAMS (-32602)
#define ACP_INTERNAL_ERROR (-32603)
#define ACP_RESOURCE_NOT_FOUND (-32002)

/* Lines read from a non-blocking descriptor. */
struct acp_reader {
	int fd;
	struct buf line;
	bool skipping;		/* inside a line over ACP_LINE_MAX */
	bool eof;
	char *pending;		/* read, not yet split */
	size_t pending_len, pending_off;
};

void acp_reader_init(struct acp_reader *r, int fd);
void acp_reader_free(struct acp_reader *r);
/*
 * The next whole line as a parsed message, or NULL when none is complete
 * (r->eof says the peer closed).  A line that is not JSON, or too long,
 * gives a NULL *msg with *bad true (answer it with ACP_PARSE_ERROR).
 */
bool acp_read(struct acp_reader *r, cJSON **msg, bool *bad);

/* Writes msg and a line break to fd (blocking until all is written); false on a write error. */
bool acp_send(int fd, const cJSON *msg);
/* Builders; each consumes params/result (may be NULL: an empty object or null). */
cJSON *acp_request(long id, const char *method, cJSON *params);
cJSON *acp_notification(const char *method, cJSON *params);
cJSON *acp_result(const cJSON *id, cJSON *result);
cJSON *acp_error(const cJSON *id, int code, const char *message);

#endif
