#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

/*
 * A <path>.part is resumed only when its sidecar <path>.part.meta names the
 * artifact and the version its bytes came from, in one line:
 * "taskdeck-part 1 <artifact id> <version>".  Anything else (no sidecar,
 * another artifact, garbage) starts again from byte 0.
 */
#define ARTIFACT_META_SUFFIX ".meta"
#define ARTIFACT_META_MAGIC "taskdeck-part 1"

/* One download in progress: what the answer says, and where its bytes go. */
struct artifact_dl {
	const char *artifact_id;
	long long want_offset;
	long long content_length;	/* -1 until known */
	long long range_start;		/* of Content-Range, -1 until known */
	long long range_total;
	struct td_download_info *info;
	enum td_code (*start)(struct artifact_dl *d);	/* NULL: nothing to prepare */
	td_write_fn writer;
	void *ud;
	struct td_error *err;
	bool err_set;			/* a hook filled err */
};

/* Frees the members of an artifact. */
static void
artifact_clear(struct td_artifact *a)
{
	free(a->id);
	free(a->name);
	free(a->path);
	free(a->version);
	free(a->media_type);
	free(a->session_id);
	free(a->run_id);
	free(a->created_at);
	free(a->json);
	memset(a, 0, sizeof *a);
}

void
td_artifact_free(struct td_artifact *a)
{
	if (a == NULL)
		return;
	artifact_clear(a);
	free(a);
}

/* Fills a from one artifact object; raw is its text when known. */
static bool
artifact_from_json(struct td_artifact *a, const cJSON *obj, const char *raw)
{
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(obj, "size");

	if (json_get_string(obj, "id") == NULL || json_get_string(obj, "name") == NULL)
		return false;
	a->id = client_string(obj, "id");
	a->name = client_string(obj, "name");
	a->path = client_string_or(obj, "path", a->name);
	a->version = client_string(obj, "version");
	a->size = cJSON_IsNumber(size) ? (long long)size->valuedouble : -1;
	a->media_type = client_string(obj, "mediaType");
	a->session_id = client_string(obj, "sessionId");
	a->run_id = client_string(obj, "runId");
	a->created_at = client_string(obj, "createdAt");
	a->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(artifact, "artifact");

void
td_artifact_list_free(struct td_artifact_list *list)
{
	CLIENT_LIST_FREE(&artifact_kind, list);
}

enum td_code
td_list_artifacts(struct td_client *c, const char *session_id, bool all,
    long limit, const char *cursor, const struct td_request_options *opts,
    struct td_artifact_list **out, struct td_error *err)
{
	struct client_page page;
	enum td_code rc;
	char *base;

	*out = NULL;
	if (session_id == NULL || *session_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a session id is required");
	base = client_item_path("sessions", session_id, "/artifacts");
	rc = client_list(c, base, limit, cursor,
	    (const char *const[]){ "all", all ? "true" : NULL, NULL }, opts,
	    &artifact_kind, &page, err);
	free(base);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

enum td_code
td_get_artifact(struct td_client *c, const char *artifact_id,
    const struct td_request_options *opts, struct td_artifact **out,
    struct td_error *err)
{
	enum td_code rc;
	void *a;
	char *path;

	*out = NULL;
	if (artifact_id == NULL || *artifact_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "an artifact id is required");
	path = client_item_path("artifacts", artifact_id, "");
	rc = client_call_item(c, "GET", path, NULL, opts, &artifact_kind, &a, err);
	free(path);
	*out = a;
	return rc;
}

/* Parses a whole non-negative decimal of len bytes; -1 when it is not one. */
static long long
artifact_number(const char *s, size_t len)
{
	long long n = 0;

	if (len == 0 || len > 18)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		n = n * 10 + (s[i] - '0');
	}
	return n;
}

/* Copies a header value into a fixed buffer; "" when it does not fit. */
static void
artifact_copy_value(char *dst, size_t size, const char *v, size_t len)
{
	if (len >= size)
		len = 0;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

/* "bytes A-B/T" into range_start and range_total. */
static void
artifact_content_range(struct artifact_dl *d, const char *v, size_t len)
{
	const char *dash, *slash, *end = v + len;

	if (len < 6 || strncmp(v, "bytes ", 6) != 0)
		return;
	v += 6;
	dash = memchr(v, '-', (size_t)(end - v));
	slash = memchr(v, '/', (size_t)(end - v));
	if (dash == NULL || slash == NULL || slash < dash)
		return;
	d->range_start = artifact_number(v, (size_t)(dash - v));
	d->range_total = artifact_number(slash + 1, (size_t)(end - slash - 1));
}

/* Keeps what the download needs of the answer's headers. */
static void
artifact_on_header(void *arg, const char *line, size_t len)
{
	struct artifact_dl *d = arg;
	struct td_download_info *info = d->info;
	const char *v;
	size_t vlen;

	if ((v = client_header_value(line, len, "Content-Length", &vlen)))
		d->content_length = artifact_number(v, vlen);
	else if ((v = client_header_value(line, len, "Content-Range", &vlen)))
		artifact_content_range(d, v, vlen);
	else if ((v = client_header_value(line, len, "Content-Type", &vlen)))
		artifact_copy_value(info->media_type, sizeof info->media_type, v, vlen);
	else if ((v = client_header_value(line, len, "ETag", &vlen))) {
		if (vlen >= 2 && strncmp(v, "W/", 2) == 0) {
			v += 2;
			vlen -= 2;
		}
		if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
			v++;
			vlen -= 2;
		}
		artifact_copy_value(info->etag, sizeof info->etag, v, vlen);
	}
}

/* Fills err for a hook that stops the download. */
static enum td_code
artifact_stop(struct artifact_dl *d, enum td_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum td_code
artifact_stop(struct artifact_dl *d, enum td_code code, const char *fmt, ...)
{
	char message[sizeof d->err->message];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	d->err_set = true;
	return client_fail(d->err, code, "%s", message);
}

/* The headers are complete: checks the range and prepares the consumer. */
static enum td_code
artifact_on_start(void *arg, long status)
{
	struct artifact_dl *d = arg;
	struct td_download_info *info = d->info;

	info->http_status = status;
	if (status == 206) {
		if (d->range_start != d->want_offset) {
			return artifact_stop(d, TD_INVALID_RESPONSE,
			    "the service sent artifact %s from byte %lld, not %lld",
			    d->artifact_id, d->range_start, d->want_offset);
		}
		info->offset = d->range_start;
		info->total_size = d->range_total;
	} else if (status == 200) {
		info->offset = 0;
		info->total_size = d->content_length;
	} else {
		return artifact_stop(d, TD_INVALID_RESPONSE,
		    "the service answered the download of artifact %s with HTTP %ld",
		    d->artifact_id, status);
	}
	return d->start != NULL ? d->start(d) : TD_OK;
}

/* Hands body bytes to the consumer. */
static enum td_code
artifact_on_data(void *arg, const char *data, size_t len)
{
	struct artifact_dl *d = arg;
	enum td_code rc = d->writer(d->ud, data, len);

	if (rc == TD_OK) {
		d->info->received += (long long)len;
		return TD_OK;
	}
	if (d->err_set)
		return rc;
	if (rc == TD_CANCELLED) {
		return artifact_stop(d, TD_CANCELLED,
		    "the download of artifact %s was cancelled after %lld bytes",
		    d->artifact_id, d->info->received);
	}
	return artifact_stop(d, TD_IO_ERROR,
	    "the writer stopped the download of artifact %s after %lld bytes",
	    d->artifact_id, d->info->received);
}

/* Runs one download request from d->want_offset, If-Range if_range. */
static enum td_code
artifact_fetch(struct td_client *c, struct artifact_dl *d, const char *if_range,
    const struct td_request_options *opts)
{
	struct client_stream stream = {
		.on_header = artifact_on_header, .on_start = artifact_on_start,
		.on_data = artifact_on_data, .arg = d,
	};
	const char *headers[3] = { NULL };
	char *range = NULL, *cond = NULL, *path;
	struct client_response resp;
	size_t n = 0;
	enum td_code rc;

	memset(d->info, 0, sizeof *d->info);
	d->info->total_size = -1;
	d->content_length = d->range_start = d->range_total = -1;
	d->err_set = false;
	if (d->want_offset > 0) {
		range = xasprintf("Range: bytes=%lld-", d->want_offset);
		headers[n++] = range;
		if (if_range != NULL && *if_range != '\0') {
			cond = xasprintf("If-Range: \"%s\"", if_range);
			headers[n++] = cond;
		}
	}
	stream.headers = headers;
	path = client_item_path("artifacts", d->artifact_id, "/content");
	rc = client_stream_get(c, path, &stream, opts, &resp, d->err);
	if (d->info->http_status == 0)
		d->info->http_status = resp.status;
	if (rc == TD_OK && d->info->total_size >= 0 &&
	    d->info->offset + d->info->received != d->info->total_size) {
		client_fail(d->err, TD_INVALID_RESPONSE,
		    "the download of artifact %s ended after %lld of %lld bytes",
		    d->artifact_id, d->info->offset + d->info->received,
		    d->info->total_size);
		rc = TD_INVALID_RESPONSE;
	}
	client_response_free(&resp);
	free(path);
	free(range);
	free(cond);
	return rc;
}

enum td_code
td_download_artifact(struct td_client *c, const char *artifact_id,
    long long offset, td_write_fn writer, void *ud,
    const struct td_request_options *opts, struct td_download_info *info,
    struct td_error *err)
{
	struct td_download_info local;
	struct artifact_dl d = {
		.artifact_id = artifact_id, .want_offset = offset,
		.info = info != NULL ? info : &local, .writer = writer, .ud = ud,
		.err = err,
	};

	if (info != NULL) {
		memset(info, 0, sizeof *info);
		info->total_size = -1;
	}
	if (artifact_id == NULL || *artifact_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "an artifact id is required");
	if (writer == NULL)
		return client_fail(err, TD_INVALID_ARGUMENT, "a write callback is required");
	if (offset < 0)
		return client_fail(err, TD_INVALID_ARGUMENT, "offset must not be negative");
	return artifact_fetch(c, &d, NULL, opts);
}

/* A download into a .part file. */
struct artifact_file {
	const char *part;
	char *meta;		/* the sidecar: part + ARTIFACT_META_SUFFIX */
	int fd;
	bool mismatch;		/* the last check found bytes that are not the version */
	const struct td_download_options *dl;
	struct artifact_dl *d;
};

/* Reports progress, when asked to: fresh bytes are not yet in received. */
static void
artifact_progress(const struct artifact_file *f, size_t fresh)
{
	const struct td_download_info *info = f->d->info;

	if (f->dl != NULL && f->dl->progress != NULL) {
		f->dl->progress(f->dl->progress_ud,
		    info->offset + info->received + (long long)fresh, info->total_size);
	}
}

/* Writes the sidecar: which artifact and version the .part holds. */
static bool
artifact_meta_write(const char *meta, const char *artifact_id, const char *etag)
{
	FILE *fp;
	bool ok;

	if (strpbrk(artifact_id, " \n") != NULL || strpbrk(etag, " \n") != NULL)
		return false;
	if ((fp = fopen(meta, "we")) == NULL)
		return false;
	ok = fprintf(fp, "%s %s %s\n", ARTIFACT_META_MAGIC, artifact_id, etag) > 0;
	return fclose(fp) == 0 && ok;
}

/* Reads the sidecar; true when it names artifact_id (its version into etag). */
static bool
artifact_meta_read(const char *meta, const char *artifact_id, char *etag, size_t size)
{
	char line[512], id[256], ver[256];
	FILE *fp = fopen(meta, "re");
	bool ok = false;

	if (fp == NULL)
		return false;
	if (fgets(line, sizeof line, fp) != NULL &&
	    strncmp(line, ARTIFACT_META_MAGIC " ", sizeof ARTIFACT_META_MAGIC) == 0 &&
	    sscanf(line + sizeof ARTIFACT_META_MAGIC, "%255s %255s", id, ver) == 2 &&
	    strcmp(id, artifact_id) == 0 && strlen(ver) < size) {
		snprintf(etag, size, "%s", ver);
		ok = true;
	}
	fclose(fp);
	return ok;
}

/* Positions the .part for the answer and records what it holds. */
static enum td_code
artifact_file_start(struct artifact_dl *d)
{
	struct artifact_file *f = d->ud;
	const char *etag = d->info->etag;

	if (ftruncate(f->fd, d->info->offset) != 0 ||
	    lseek(f->fd, d->info->offset, SEEK_SET) < 0) {
		return artifact_stop(d, TD_IO_ERROR, "cannot write %s: %s", f->part,
		    strerror(errno));
	}
	/* Without a sidecar (no version known, or it cannot be written) a
	 * later try starts from byte 0. */
	if (*etag == '\0' || !artifact_meta_write(f->meta, d->artifact_id, etag))
		unlink(f->meta);
	artifact_progress(f, 0);
	return TD_OK;
}

/* Appends body bytes to the .part. */
static enum td_code
artifact_file_write(void *ud, const void *data, size_t len)
{
	struct artifact_file *f = ud;
	const char *p = data;
	size_t left = len;

	while (left > 0) {
		ssize_t n = write(f->fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			return artifact_stop(f->d, TD_IO_ERROR, "cannot write %s: %s",
			    f->part, strerror(errno));
		}
		p += n;
		left -= (size_t)n;
	}
	artifact_progress(f, len);
	return TD_OK;
}

/*
 * The byte at which to resume a .part, and the version its bytes came from:
 * only what its sidecar records for this artifact.  A .part without one (or
 * recorded for another artifact) is not trusted: the download starts at 0.
 */
static void
artifact_resume_point(const struct artifact_file *f, const char *artifact_id,
    char *etag, size_t size, long long *offset)
{
	struct stat st;

	*offset = 0;
	etag[0] = '\0';
	if (fstat(f->fd, &st) != 0 || st.st_size == 0)
		return;
	if (artifact_meta_read(f->meta, artifact_id, etag, size))
		*offset = (long long)st.st_size;
	else
		etag[0] = '\0';
}

/*
 * Checks the whole .part against the version "sha256:<hex>" (the ETag of the
 * answer); a version of another form is not checked.  TD_INVALID_RESPONSE
 * when the bytes do not match.
 */
static enum td_code
artifact_file_verify(struct artifact_file *f, const char *artifact_id,
    const char *version, struct td_error *err)
{
	unsigned char digest[crypto_hash_sha256_BYTES], buf[65536];
	char hex[crypto_hash_sha256_BYTES * 2 + 1];
	crypto_hash_sha256_state hs;
	struct stat st;
	off_t at = 0, size = fstat(f->fd, &st) == 0 ? st.st_size : -1;
	ssize_t n;

	if (strncmp(version, "sha256:", 7) != 0)
		return TD_OK;
	if (f->dl != NULL && f->dl->verify_progress != NULL)
		f->dl->verify_progress(f->dl->progress_ud, 0, (long long)size);
	crypto_hash_sha256_init(&hs);
	while ((n = pread(f->fd, buf, sizeof buf, at)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			return client_fail(err, TD_IO_ERROR, "cannot read %s: %s", f->part,
			    strerror(errno));
		}
		crypto_hash_sha256_update(&hs, buf, (unsigned long long)n);
		at += n;
		if (f->dl != NULL && f->dl->verify_progress != NULL)
			f->dl->verify_progress(f->dl->progress_ud, (long long)at, (long long)size);
	}
	crypto_hash_sha256_final(&hs, digest);
	sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
	f->mismatch = strcmp(hex, version + 7) != 0;
	if (f->mismatch) {
		return client_fail(err, TD_INVALID_RESPONSE,
		    "the bytes downloaded for artifact %s do not match its version %s; "
		    "nothing was saved", artifact_id, version);
	}
	return TD_OK;
}

/* Moves the finished .part to path; refuses to replace a file unless told. */
static enum td_code
artifact_file_finish(struct artifact_file *f, const char *path, bool overwrite,
    struct td_error *err)
{
	char *dir_copy;
	int dfd, rc;

	if (fsync(f->fd) != 0) {
		return client_fail(err, TD_IO_ERROR, "cannot write %s: %s", f->part,
		    strerror(errno));
	}
	if (overwrite)
		rc = rename(f->part, path);
	else {
		rc = renameat2(AT_FDCWD, f->part, AT_FDCWD, path, RENAME_NOREPLACE);
		if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
			struct stat st;

			if (lstat(path, &st) == 0)
				errno = EEXIST;
			else
				rc = rename(f->part, path);
		}
	}
	if (rc != 0 && errno == EEXIST) {
		return client_fail(err, TD_IO_ERROR,
		    "%s already exists; the download is kept in %s", path, f->part);
	}
	if (rc != 0) {
		return client_fail(err, TD_IO_ERROR, "cannot rename %s to %s: %s",
		    f->part, path, strerror(errno));
	}
	dir_copy = xstrdup(path);
	dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(dir_copy);
	return TD_OK;
}

/* True when the file of fd holds no byte. */
static bool
artifact_file_empty(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_size == 0;
}

/* Checks the arguments of td_download_artifact_to_file. */
static enum td_code
artifact_file_check(const char *artifact_id, const char *path, unsigned flags,
    struct td_error *err)
{
	struct stat st;

	if (artifact_id == NULL || *artifact_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "an artifact id is required");
	if (path == NULL || *path == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a file path is required");
	if (!(flags & TD_DOWNLOAD_OVERWRITE) && lstat(path, &st) == 0) {
		return client_fail(err, TD_IO_ERROR,
		    "%s already exists; not replacing it", path);
	}
	return TD_OK;
}

enum td_code
td_download_artifact_to_file(struct td_client *c, const char *artifact_id,
    const char *path, const struct td_download_options *dl,
    const struct td_request_options *opts, struct td_download_info *info,
    struct td_error *err)
{
	struct td_download_info local;
	struct artifact_dl d = {
		.artifact_id = artifact_id, .info = info != NULL ? info : &local,
		.start = artifact_file_start, .writer = artifact_file_write,
		.err = err,
	};
	struct artifact_file f = { .dl = dl, .d = &d, .fd = -1 };
	unsigned flags = dl != NULL ? dl->flags : 0;
	char etag[sizeof d.info->etag];
	char *part = NULL;
	enum td_code rc = TD_OK;

	memset(d.info, 0, sizeof *d.info);
	d.info->total_size = -1;
	if ((rc = artifact_file_check(artifact_id, path, flags, err)) != TD_OK)
		return rc;
	part = xasprintf("%s.part", path);
	f.part = part;
	f.meta = xasprintf("%s%s", part, ARTIFACT_META_SUFFIX);
	f.fd = open(part, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (f.fd < 0) {
		rc = client_fail(err, TD_IO_ERROR, "cannot create %s: %s", part,
		    strerror(errno));
		goto out;
	}
	if (flock(f.fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
		rc = client_fail(err, TD_IO_ERROR,
		    "another download is writing %s", part);
		close(f.fd);
		goto out;
	}
	d.ud = &f;
	if (!(flags & TD_DOWNLOAD_NO_RESUME))
		artifact_resume_point(&f, artifact_id, etag, sizeof etag, &d.want_offset);
	rc = artifact_fetch(c, &d, d.want_offset > 0 ? etag : NULL, opts);
	if (rc != TD_OK && d.want_offset > 0 && d.info->http_status == 416) {
		/* The .part is longer than the artifact: start again. */
		d.want_offset = 0;
		rc = artifact_fetch(c, &d, NULL, opts);
	}
	if (rc == TD_OK && (rc = artifact_file_verify(&f, artifact_id, d.info->etag,
	    err)) != TD_OK && rc == TD_INVALID_RESPONSE && d.info->offset > 0) {
		/* The resumed bytes were not the version's: once more, whole. */
		d.want_offset = 0;
		rc = artifact_fetch(c, &d, NULL, opts);
		if (rc == TD_OK)
			rc = artifact_file_verify(&f, artifact_id, d.info->etag, err);
	}
	if (rc == TD_OK) {
		unlink(f.meta);
		rc = artifact_file_finish(&f, path, flags & TD_DOWNLOAD_OVERWRITE, err);
	} else if (f.mismatch || artifact_file_empty(f.fd)) {
		/* Bytes that are not the version, or none: nothing to resume. */
		unlink(part);
		unlink(f.meta);
	}
	close(f.fd);
out:
	free(f.meta);
	free(part);
	return rc;
}
