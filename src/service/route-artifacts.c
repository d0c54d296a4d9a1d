/* Artifacts: lists, descriptors and streamed downloads (docs/http-api.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifacts.h"
#include "events.h"
#include "http.h"
#include "ids.h"
#include "log.h"
#include "resource.h"
#include "routes.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

void
route_artifacts_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *session = req->params[0];
	const char *cursor = http_query(req, "cursor");
	const char *all_arg = http_query(req, "all");
	char next[TD_ID_MAX];
	bool all;
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (cursor != NULL && !id_valid(cursor, "art")) {
		http_bad_parameter(r, "cursor", "cursor is not an artifact id");
		return;
	}
	if (all_arg != NULL && strcmp(all_arg, "true") != 0 && strcmp(all_arg, "false") != 0) {
		http_bad_parameter(r, "all", "all must be true or false");
		return;
	}
	all = all_arg != NULL && strcmp(all_arg, "true") == 0;
	store_lock(st);
	arr = artifacts_list(st, session, all, cursor, limit, next);
	store_unlock(st);
	if (arr == NULL) {
		http_not_found(r, "session", session);
		return;
	}
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/sessions/%s/artifacts?limit=%d&cursor=%s%s", session,
		    limit, next, all ? "&all=true" : "");
	http_json(r, 200, arr);
}

void
route_artifacts_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *id = req->params[0];
	cJSON *a;

	store_lock(st);
	a = artifacts_load(st, id);
	store_unlock(st);
	http_json_found(r, a, "artifact", id);
}

/* Opens the store file of f, checking its size; -1 after logging why. */
static int
content_open(const struct service *svc, const char *id, const struct artifact_file *f)
{
	char *path = artifacts_content_path(svc, f->version);
	struct stat st;
	int fd;

	if (path == NULL) {
		log_error("artifact %s has a malformed version %s", id, f->version);
		return -1;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		log_error("artifact %s: cannot open %s: %s", id, path, strerror(errno));
	} else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != f->size) {
		log_error("artifact %s: %s is not a file of %llu bytes", id, path,
		    (unsigned long long)f->size);
		close(fd);
		fd = -1;
	}
	free(path);
	return fd;
}

void
route_artifacts_content(struct http_request *req, struct http_response *r)
{
	const char *id = req->params[0];
	const char *range = http_request_header(req, "Range");
	const char *if_range = http_request_header(req, "If-Range");
	struct artifact_file f = { 0 };
	char etag[ARTIFACT_VERSION_LEN + 2], crange[80];
	uint64_t first = 0, last = 0;
	char *disposition;
	int fd;

	if (!artifacts_file_load(req->svc->store, id, &f)) {
		http_not_found(r, "artifact", id);
		return;
	}
	fd = content_open(req->svc, id, &f);
	if (fd < 0) {
		http_error(r, TD_INTERNAL_ERROR, NULL, "The content of artifact %s is "
		    "missing from the artifact store; the service log has the details.", id);
		artifacts_file_free(&f);
		return;
	}
	snprintf(etag, sizeof etag, "\"%s\"", f.version);
	if (if_range != NULL && strcmp(if_range, etag) != 0)
		range = NULL;
	switch (artifacts_range(range, f.size, &first, &last)) {
	case ARTIFACTS_RANGE_NONE:
		http_file(r, 200, fd, 0, f.size);
		break;
	case ARTIFACTS_RANGE_PARTIAL:
		http_file(r, 206, fd, first, last - first + 1);
		snprintf(crange, sizeof crange, "bytes %llu-%llu/%llu",
		    (unsigned long long)first, (unsigned long long)last,
		    (unsigned long long)f.size);
		http_add_header(r, "Content-Range", crange);
		break;
	case ARTIFACTS_RANGE_UNSATISFIABLE: {
		cJSON *details = cJSON_CreateObject();

		close(fd);
		cJSON_AddStringToObject(details, "header", "Range");
		http_error(r, TD_INVALID_REQUEST, details, "The range is outside the "
		    "artifact's %llu bytes.", (unsigned long long)f.size);
		r->status = 416;
		snprintf(crange, sizeof crange, "bytes */%llu", (unsigned long long)f.size);
		http_add_header(r, "Content-Range", crange);
		http_add_header(r, "Accept-Ranges", "bytes");
		artifacts_file_free(&f);
		return;
	}
	}
	disposition = artifacts_disposition(f.name);
	http_add_header(r, "Content-Type", f.media_type);
	http_add_header(r, "Content-Disposition", disposition);
	http_add_header(r, "ETag", etag);
	http_add_header(r, "Accept-Ranges", "bytes");
	http_add_header(r, "X-Content-Type-Options", "nosniff");
	free(disposition);
	artifacts_file_free(&f);
}
