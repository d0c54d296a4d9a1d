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

#define ARTIFACT_COLUMNS "id, name, path, version, size, media_type, session_id," \
	" run_id, created_at"

/* What the content route needs of a row. */
struct artifact_file {
	char *name;
	char *version;
	char *media_type;
	uint64_t size;
};

static cJSON *
artifact_from_row(sqlite3_stmt *s)
{
	cJSON *a = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "id", resource_text(s, 0));
	cJSON_AddStringToObject(a, "name", resource_text(s, 1));
	cJSON_AddStringToObject(a, "path", resource_text(s, 2));
	cJSON_AddStringToObject(a, "version", resource_text(s, 3));
	cJSON_AddNumberToObject(a, "size", (double)sqlite3_column_int64(s, 4));
	cJSON_AddStringToObject(a, "mediaType", resource_text(s, 5));
	cJSON_AddStringToObject(a, "sessionId", resource_text(s, 6));
	cJSON_AddStringToObject(a, "runId", resource_text(s, 7));
	resource_add_time(a, "createdAt", sqlite3_column_int64(s, 8));
	return a;
}

void
artifacts_emit_saved(struct service *svc, const char *run_id, const char *project_id)
{
	sqlite3_stmt *s = store_stmt(svc->store, "SELECT " ARTIFACT_COLUMNS
	    " FROM artifacts WHERE run_id = ?1 AND visible = 1 ORDER BY id");

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW)
		events_emit(svc->events, "artifact.saved", project_id, resource_text(s, 6),
		    run_id, artifact_from_row(s));
	sqlite3_reset(s);
}

static bool
session_exists(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT 1 FROM sessions WHERE id = ?1");
	bool found;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_reset(s);
	return found;
}

void
route_artifacts_list(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *session = req->params[0];
	const char *cursor = http_query(req, "cursor");
	const char *all_arg = http_query(req, "all");
	struct resource_page pg = { 0 };
	bool all, found;
	sqlite3_stmt *s;
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit))
		return;
	if (cursor != NULL && !td_id_valid(cursor, "art")) {
		http_bad_parameter(r, "cursor", "cursor is not an artifact id");
		return;
	}
	if (all_arg != NULL && strcmp(all_arg, "true") != 0 && strcmp(all_arg, "false") != 0) {
		http_bad_parameter(r, "all", "all must be true or false");
		return;
	}
	all = all_arg != NULL && strcmp(all_arg, "true") == 0;
	arr = cJSON_CreateArray();
	store_lock(st);
	found = session_exists(st, session);
	if (found && all) {
		s = store_stmt(st, "SELECT " ARTIFACT_COLUMNS " FROM artifacts"
		    " WHERE session_id = ?1 AND visible = 1 AND (?2 IS NULL OR id < ?2)"
		    " ORDER BY id DESC LIMIT ?3");
	} else if (found) {
		/* The newest visible version of each path. */
		s = store_stmt(st, "SELECT " ARTIFACT_COLUMNS " FROM artifacts a"
		    " WHERE session_id = ?1 AND visible = 1 AND (?2 IS NULL OR id < ?2)"
		    " AND id = (SELECT MAX(id) FROM artifacts b WHERE b.session_id = ?1"
		    " AND b.path = a.path AND b.visible = 1)"
		    " ORDER BY id DESC LIMIT ?3");
	}
	if (found) {
		sqlite3_bind_text(s, 1, session, -1, SQLITE_STATIC);
		resource_page_start(&pg, s, 2, cursor, limit);
		while (resource_page_row(&pg, s))
			cJSON_AddItemToArray(arr, artifact_from_row(s));
		sqlite3_reset(s);
	}
	store_unlock(st);
	if (!found) {
		cJSON_Delete(arr);
		http_not_found(r, "session", session);
		return;
	}
	if (pg.next[0] != '\0')
		http_link_next(r, "/api/v1/sessions/%s/artifacts?limit=%d&cursor=%s%s", session,
		    limit, pg.next, all ? "&all=true" : "");
	http_json(r, 200, arr);
}

void
route_artifacts_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	const char *id = req->params[0];
	cJSON *a;

	store_lock(st);
	a = resource_load(store_stmt(st, "SELECT " ARTIFACT_COLUMNS " FROM artifacts"
	    " WHERE id = ?1 AND visible = 1"), id, artifact_from_row);
	store_unlock(st);
	http_json_found(r, a, "artifact", id);
}

/* The visible artifact id, or false. */
static bool
artifact_file_load(struct store *st, const char *id, struct artifact_file *f)
{
	sqlite3_stmt *s;
	bool found;

	store_lock(st);
	s = store_stmt(st, "SELECT name, version, media_type, size FROM artifacts"
	    " WHERE id = ?1 AND visible = 1");
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	if (found) {
		f->name = xstrdup(resource_text(s, 0));
		f->version = xstrdup(resource_text(s, 1));
		f->media_type = xstrdup(resource_text(s, 2));
		f->size = (uint64_t)sqlite3_column_int64(s, 3);
	}
	sqlite3_reset(s);
	store_unlock(st);
	return found;
}

static void
artifact_file_free(struct artifact_file *f)
{
	free(f->name);
	free(f->version);
	free(f->media_type);
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

	if (!artifact_file_load(req->svc->store, id, &f)) {
		http_not_found(r, "artifact", id);
		return;
	}
	fd = content_open(req->svc, id, &f);
	if (fd < 0) {
		http_error(r, TD_INTERNAL_ERROR, NULL, "The content of artifact %s is "
		    "missing from the artifact store; the service log has the details.", id);
		artifact_file_free(&f);
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
		artifact_file_free(&f);
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
	artifact_file_free(&f);
}
