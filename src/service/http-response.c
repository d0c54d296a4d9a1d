/* The answers handlers build: bodies, files, streams, errors and headers (http.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http.h"
#include "json.h"
#include "log.h"
#include "problem.h"
#include "store.h"
#include "xalloc.h"

void
http_add_header(struct http_response *r, const char *name, const char *value)
{
	if (r->nheaders == HTTP_MAX_HEADERS) {
		log_error("too many response headers (dropped %s)", name);
		return;
	}
	r->headers[r->nheaders].name = xstrdup(name);
	r->headers[r->nheaders].value = xstrdup(value);
	r->nheaders++;
}

void
http_link_next(struct http_response *r, const char *fmt, ...)
{
	va_list ap;
	char *uri, *link;

	va_start(ap, fmt);
	uri = xvasprintf(fmt, ap);
	va_end(ap);
	link = xasprintf("<%s>; rel=\"next\"", uri);
	http_add_header(r, "Link", link);
	free(link);
	free(uri);
}

/* Drops the body, text or file, that r holds. */
static void
response_drop_body(struct http_response *r)
{
	free(r->body);
	r->body = NULL;
	if (r->has_fd)
		close(r->fd);
	r->has_fd = false;
	if (r->stream_read != NULL && r->stream_free != NULL)
		r->stream_free(r->stream_cls);
	r->stream_read = NULL;
	r->stream_free = NULL;
	r->stream_cls = NULL;
}

void
http_stream(struct http_response *r, int status, http_stream_read_fn read,
    http_stream_free_fn free, void *cls)
{
	response_drop_body(r);
	r->status = status;
	r->stream_read = read;
	r->stream_free = free;
	r->stream_cls = cls;
}

void
http_file(struct http_response *r, int status, int fd, uint64_t offset,
    uint64_t length)
{
	response_drop_body(r);
	r->status = status;
	r->has_fd = true;
	r->fd = fd;
	r->fd_offset = offset;
	r->fd_length = length;
}

void
http_json_text(struct http_response *r, int status, char *text, size_t len)
{
	response_drop_body(r);
	r->status = status;
	r->body = text;
	r->body_len = len;
}

void
http_json(struct http_response *r, int status, cJSON *body)
{
	char *text = json_print(body);

	cJSON_Delete(body);
	http_json_text(r, status, text, strlen(text));
}

static void
http_verror(struct http_response *r, enum td_code code, cJSON *details,
    const char *fmt, va_list ap)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");
	char *msg = NULL;

	/* A handler's 500 after a write failed for want of space: say so. */
	if (code == TD_INTERNAL_ERROR && store_disk_full_seen()) {
		code = TD_INSUFFICIENT_STORAGE;
		fmt = NULL;
	}
	if (fmt != NULL && vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	cJSON_AddStringToObject(err, "code", errcode_name(code));
	cJSON_AddStringToObject(err, "message", msg ? msg : errcode_default_message(code));
	cJSON_AddItemToObject(err, "details", details ? details : cJSON_CreateObject());
	free(msg);
	http_json(r, errcode_http_status(code), root);
}

void
http_error(struct http_response *r, enum td_code code, cJSON *details,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	http_verror(r, code, details, fmt, ap);
	va_end(ap);
}

void
http_bad_field(struct http_response *r, const char *field, const char *fmt, ...)
{
	cJSON *details = cJSON_CreateObject();
	va_list ap;

	cJSON_AddStringToObject(details, "field", field);
	va_start(ap, fmt);
	http_verror(r, TD_INVALID_REQUEST, details, fmt, ap);
	va_end(ap);
}

void
http_bad_parameter(struct http_response *r, const char *parameter, const char *fmt, ...)
{
	cJSON *details = cJSON_CreateObject();
	va_list ap;

	cJSON_AddStringToObject(details, "parameter", parameter);
	va_start(ap, fmt);
	http_verror(r, TD_INVALID_REQUEST, details, fmt, ap);
	va_end(ap);
}

void
http_not_found(struct http_response *r, const char *resource, const char *id)
{
	cJSON *details = cJSON_CreateObject();

	cJSON_AddStringToObject(details, "resource", resource);
	if (id != NULL)
		cJSON_AddStringToObject(details, "id", id);
	http_error(r, TD_NOT_FOUND, details, "No %s with that id.", resource);
}

void
http_json_found(struct http_response *r, cJSON *body, const char *resource, const char *id)
{
	if (body == NULL)
		http_not_found(r, resource, id);
	else
		http_json(r, 200, body);
}


void
http_problem(struct http_response *r, struct problem *p)
{
	cJSON *details = p->details ? p->details : cJSON_CreateObject();

	p->details = NULL;
	if (p->code == TD_NOT_FOUND) {
		cJSON_AddStringToObject(details, "resource", p->field);
	} else if (p->field[0] != '\0') {
		cJSON_AddStringToObject(details, "field", p->field);
	}
	http_error(r, p->code, details, "%s", p->message);
}
