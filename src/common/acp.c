/* The ACP wire: JSON-RPC 2.0, newline-delimited (acp.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "json.h"
#include "xalloc.h"

#define ACP_CHUNK 65536

void
acp_reader_init(struct acp_reader *r, int fd)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	buf_init(&r->line, ACP_LINE_MAX);
}

void
acp_reader_free(struct acp_reader *r)
{
	buf_free(&r->line);
	free(r->pending);
	r->pending = NULL;
}

/* Reads one chunk into r->pending; false when nothing came (EAGAIN or end of file). */
static bool
acp_fill(struct acp_reader *r)
{
	ssize_t n;

	if (r->pending == NULL)
		r->pending = xmalloc(ACP_CHUNK);
	do
		n = read(r->fd, r->pending, ACP_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
		r->eof = true;
	if (n <= 0)
		return false;
	r->pending_len = (size_t)n;
	r->pending_off = 0;
	return true;
}

bool
acp_read(struct acp_reader *r, cJSON **msg, bool *bad)
{
	*msg = NULL;
	*bad = false;
	for (;;) {
		const char *c, *nl;
		size_t piece;

		if (r->pending_off >= r->pending_len && !acp_fill(r))
			return false;
		c = r->pending + r->pending_off;
		nl = memchr(c, '\n', r->pending_len - r->pending_off);
		piece = nl ? (size_t)(nl - c) : r->pending_len - r->pending_off;
		if (!r->skipping && !buf_append(&r->line, c, piece)) {
			r->skipping = true;
			buf_reset(&r->line);
		}
		r->pending_off += piece + (nl ? 1 : 0);
		if (nl == NULL)
			continue;
		if (r->skipping) {
			r->skipping = false;
			*bad = true;
			return true;
		}
		size_t len = r->line.len;
		const char *text = r->line.data ? r->line.data : "";

		while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == ' '))
			len--;
		if (len == 0) {
			buf_reset(&r->line);
			continue;
		}
		*msg = json_parse(text, len);
		buf_reset(&r->line);
		if (!cJSON_IsObject(*msg)) {
			cJSON_Delete(*msg);
			*msg = NULL;
			*bad = true;
		}
		return true;
	}
}

bool
acp_send(int fd, const cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);
	size_t len, off = 0;
	bool ok = true;

	if (text == NULL)
		return false;
	len = strlen(text);
	text[len] = '\n';	/* over the NUL: cJSON's buffer holds it */
	len++;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			usleep(1000);
			continue;
		}
		if (n <= 0) {
			ok = false;
			break;
		}
		off += (size_t)n;
	}
	free(text);
	return ok;
}

static cJSON *
acp_message(void)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "jsonrpc", "2.0");
	return m;
}

cJSON *
acp_request(long id, const char *method, cJSON *params)
{
	cJSON *m = acp_message();

	cJSON_AddNumberToObject(m, "id", (double)id);
	cJSON_AddStringToObject(m, "method", method);
	cJSON_AddItemToObject(m, "params", params ? params : cJSON_CreateObject());
	return m;
}

cJSON *
acp_notification(const char *method, cJSON *params)
{
	cJSON *m = acp_message();

	cJSON_AddStringToObject(m, "method", method);
	cJSON_AddItemToObject(m, "params", params ? params : cJSON_CreateObject());
	return m;
}

cJSON *
acp_result(const cJSON *id, cJSON *result)
{
	cJSON *m = acp_message();

	cJSON_AddItemToObject(m, "id", id ? cJSON_Duplicate(id, true) : cJSON_CreateNull());
	cJSON_AddItemToObject(m, "result", result ? result : cJSON_CreateNull());
	return m;
}

cJSON *
acp_error(const cJSON *id, int code, const char *message)
{
	cJSON *m = acp_message(), *e = cJSON_CreateObject();

	cJSON_AddItemToObject(m, "id", id ? cJSON_Duplicate(id, true) : cJSON_CreateNull());
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddItemToObject(m, "error", e);
	return m;
}
