/*
 * GET /api/v1/openapi.json: the OpenAPI 3.1 document of the service
 * (docs/openapi.json), built into the program so that it always describes
 * the routes this binary serves.
 */
#include <string.h>

#include "http.h"
#include "routes.h"
#include "xalloc.h"

/* The document, one line of docs/openapi.json per string (openapi-doc.c, generated). */
extern const char *const td_openapi_lines[];
extern const size_t td_openapi_nlines;

void
route_openapi(struct http_request *req, struct http_response *r)
{
	size_t len = 0, off = 0;
	char *text;

	(void)req;
	for (size_t i = 0; i < td_openapi_nlines; i++)
		len += strlen(td_openapi_lines[i]) + 1;
	text = xmalloc(len + 1);
	for (size_t i = 0; i < td_openapi_nlines; i++) {
		size_t n = strlen(td_openapi_lines[i]);

		memcpy(text + off, td_openapi_lines[i], n);
		off += n;
		text[off++] = '\n';
	}
	text[off] = '\0';
	http_json_text(r, 200, text, off);
}
