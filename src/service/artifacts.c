/* The artifact store and the saves runs make (artifacts.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "artifacts.h"
#include "buf.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "sandbox.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "wsfile.h"
#include "xalloc.h"

#define COPY_BUFFER (1024 * 1024)
#define HASH_HEX (crypto_hash_sha256_BYTES * 2)
#define MEDIA_TYPE_MAX 255

static const struct {
	const char *ext;
	const char *type;
} media_types[] = {
	{ "md", "text/markdown" },
	{ "markdown", "text/markdown" },
	{ "txt", "text/plain" },
	{ "log", "text/plain" },
	{ "csv", "text/csv" },
	{ "tsv", "text/tab-separated-values" },
	{ "json", "application/json" },
	{ "html", "text/html" },
	{ "htm", "text/html" },
	{ "css", "text/css" },
	{ "js", "text/javascript" },
	{ "xml", "application/xml" },
	{ "yaml", "application/yaml" },
	{ "yml", "application/yaml" },
	{ "png", "image/png" },
	{ "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" },
	{ "gif", "image/gif" },
	{ "svg", "image/svg+xml" },
	{ "webp", "image/webp" },
	{ "pdf", "application/pdf" },
	{ "zip", "application/zip" },
	{ "gz", "application/gzip" },
	{ "tar", "application/x-tar" },
};

static const char *const save_params[] = { "path", "name", "mediaType", NULL };

const char *
artifacts_media_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot != NULL && dot != name && dot[1] != '\0') {
		for (size_t i = 0; i < sizeof media_types / sizeof media_types[0]; i++) {
			if (strcasecmp(dot + 1, media_types[i].ext) == 0)
				return media_types[i].type;
		}
	}
	return "application/octet-stream";
}

static bool
version_valid(const char *version)
{
	if (strncmp(version, "sha256:", 7) != 0 || strlen(version) != 7 + HASH_HEX)
		return false;
	for (const char *p = version + 7; *p; p++) {
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	}
	return true;
}

char *
artifacts_content_path(const struct service *svc, const char *version)
{
	if (version == NULL || !version_valid(version))
		return NULL;
	return xasprintf("%s/%.2s/%s", svc->paths.artifacts, version + 7, version + 7);
}

bool
artifacts_init(const struct service *svc, char **err)
{
	char *tmpdir = xasprintf("%s/tmp", svc->paths.artifacts);
	struct dirent *e;
	DIR *d;

	if (!paths_mkdir_p(tmpdir, 0700) || (d = opendir(tmpdir)) == NULL) {
		*err = xasprintf("cannot create %s: %s", tmpdir, strerror(errno));
		free(tmpdir);
		return false;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			log_info("removed %s/%s, left by an interrupted artifact save",
			    tmpdir, e->d_name);
	}
	closedir(d);
	free(tmpdir);
	return true;
}

/*
 * Lexically normalizes the relative path in into out (as large as in):
 * drops empty and "." components and applies "..".  -1 when ".." climbs
 * above the start, 0 when nothing remains, 1 otherwise.
 */
static int
path_normalize(const char *in, char *out)
{
	size_t len = 0;

	for (const char *p = in; *p; ) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (len == 0)
				return -1;
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else if (n != 0 && !(n == 1 && p[0] == '.')) {
			if (len > 0)
				out[len++] = '/';
			memcpy(out + len, p, n);
			len += n;
		}
		p = *end ? end + 1 : end;
	}
	out[len] = '\0';
	return len > 0;
}

/* 1 to ARTIFACT_NAME_MAX characters of UTF-8, none of them '/' or a control. */
static bool
artifact_name_valid(const char *name)
{
	size_t chars = 0;

	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p == '/' || *p < 0x20 || *p == 0x7f)
			return false;
		if ((*p & 0xc0) != 0x80)
			chars++;
	}
	return chars >= 1 && chars <= ARTIFACT_NAME_MAX &&
	    json_utf8_valid(name, strlen(name)) && json_text_displayable(name);
}

/* type/subtype with optional parameters, printable ASCII (it becomes a header). */
static bool
media_type_valid(const char *type)
{
	size_t n = strlen(type);

	if (n < 3 || n > MEDIA_TYPE_MAX || type[0] == ' ' || type[n - 1] == ' ' ||
	    type[0] == '/' || strchr(type, '/') == NULL)
		return false;
	for (const char *p = type; *p; p++) {
		if (*p < 0x20 || *p > 0x7e)
			return false;
	}
	return true;
}

/* A string member, or NULL when absent or null; false when present with another type. */
static bool
optional_string(const cJSON *params, const char *key, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsString(v))
		return false;
	*out = v->valuestring;
	return true;
}

/* Checks the params of artifact.save; on success norm holds the normalized path (malloc'd). */
static enum td_code
params_check(const cJSON *params, char **norm, const char **name,
    const char **media, char **message)
{
	const char *path, *bad = NULL;
	size_t len;
	int rc;

	if (!cJSON_IsObject(params)) {
		*message = xstrdup("params must be an object {\"path\", \"name\"?, \"mediaType\"?}");
		return TD_INVALID_REQUEST;
	}
	if (!json_only_keys(params, save_params, &bad)) {
		*message = xasprintf("unknown parameter %s (known: path, name, mediaType)", bad);
		return TD_INVALID_REQUEST;
	}
	path = json_get_string(params, "path");
	len = path ? strlen(path) : 0;
	if (len == 0 || len > ARTIFACT_PATH_MAX) {
		*message = xasprintf("path must be a string of 1 to %d bytes", ARTIFACT_PATH_MAX);
		return TD_INVALID_REQUEST;
	}
	if (path[0] == '/') {
		*message = xasprintf("path must be relative to the workspace, not absolute: %s", path);
		return TD_INVALID_REQUEST;
	}
	if (!json_utf8_valid(path, len) || !json_text_displayable(path)) {
		*message = xstrdup("path must be UTF-8 without control or bidirectional "
		    "characters");
		return TD_INVALID_REQUEST;
	}
	if (!optional_string(params, "name", name) ||
	    (*name != NULL && !artifact_name_valid(*name))) {
		*message = xasprintf("name must be a string of 1 to %d characters without "
		    "'/', control or bidirectional characters", ARTIFACT_NAME_MAX);
		return TD_INVALID_REQUEST;
	}
	if (!optional_string(params, "mediaType", media) ||
	    (*media != NULL && !media_type_valid(*media))) {
		*message = xasprintf("mediaType must be a media type such as text/markdown "
		    "(printable ASCII, at most %d characters)", MEDIA_TYPE_MAX);
		return TD_INVALID_REQUEST;
	}
	*norm = xmalloc(len + 1);
	rc = path_normalize(path, *norm);
	if (rc <= 0) {
		*message = rc < 0 ? xasprintf("path leaves the workspace: %s", path) :
		    xasprintf("path names the workspace itself, not a file: %s", path);
		free(*norm);
		*norm = NULL;
		return TD_INVALID_REQUEST;
	}
	if (*name == NULL) {
		const char *base = strrchr(*norm, '/');

		base = base ? base + 1 : *norm;
		if (!artifact_name_valid(base)) {
			*message = xasprintf("the file name of %s cannot be an artifact name; "
			    "give a name", *norm);
			free(*norm);
			*norm = NULL;
			return TD_INVALID_REQUEST;
		}
	}
	return TD_OK;
}

/*
 * Opens workspace/rel for reading through wsfile (the kernel resolves it
 * beneath the workspace, the hidden set is checked on what it opened): a
 * regular file no larger than ARTIFACT_MAX_SIZE.  hidden adds to what no run
 * may save: taskdeck's own files and the credential files.
 */
static enum td_code
source_open(const struct service *svc, const char *workspace, const char *const *hidden,
    const char *rel, int *fd, char **message)
{
	char **all = sandbox_hidden_paths(&svc->paths, NULL);
	struct wsfile_root *root;
	enum td_code code = TD_INVALID_REQUEST;
	char *why = NULL, *shown = NULL;
	struct stat st;

	*fd = -1;
	for (size_t i = 0; hidden != NULL && hidden[i] != NULL; i++)
		all = sandbox_hidden_add(all, hidden[i]);
	root = wsfile_root_open(workspace, (const char *const *)all, &why);
	sandbox_hidden_free(all);
	if (root == NULL) {
		log_error("artifacts: %s", why);
		*message = xstrdup("the run's workspace is not accessible");
		free(why);
		return TD_IO_ERROR;
	}
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	if (wsfile_open(root, rel, O_RDONLY | O_NONBLOCK, fd, &st, &shown, &why) != WSFILE_OK) {
		*message = why;
		wsfile_root_free(root);
		return TD_INVALID_REQUEST;
	}
	wsfile_root_free(root);
	free(shown);
	if (!S_ISREG(st.st_mode)) {
		*message = xasprintf("%s is not a regular file", rel);
	} else if ((uint64_t)st.st_size > ARTIFACT_MAX_SIZE) {
		*message = xasprintf("%s is larger than the artifact limit of 64 GiB", rel);
	} else if (fcntl(*fd, F_SETFL, 0) != 0) {
		*message = xasprintf("cannot read %s: %s", rel, strerror(errno));
		code = TD_IO_ERROR;
	} else {
		code = TD_OK;
	}
	if (code != TD_OK) {
		close(*fd);
		*fd = -1;
	}
	return code;
}

static bool
write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		data += n;
		len -= (size_t)n;
	}
	return true;
}

static bool
fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool ok = fd >= 0 && fsync(fd) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Logs a failed store operation with its path; the message for the agent has none. */
static enum td_code
store_failed(const char *what, const char *path, char **message)
{
	int e = errno;

	log_error("artifacts: cannot %s %s: %s", what, path, strerror(e));
	if (store_errno_full(e)) {
		store_note_errno(e);
		*message = xasprintf("the disk is full (%s); "
		    "free space and save it again", e == EDQUOT ? "the disk quota is used up" :
		    "no space left on the device");
		return TD_INSUFFICIENT_STORAGE;
	}
	*message = xasprintf("the artifact store could not take the file: %s", strerror(e));
	return TD_IO_ERROR;
}

/*
 * The contents placed by saves whose rows are not written yet (hex digests):
 * artifacts_sweep, which removes the contents no row names, leaves them.
 * Only under the store lock, as the sweep runs.
 */
static struct {
	char (*hex)[HASH_HEX + 1];
	size_t count, cap;
} placing;

static bool
placing_has(const char *hex)
{
	for (size_t i = 0; i < placing.count; i++)
		if (strcmp(placing.hex[i], hex) == 0)
			return true;
	return false;
}

static void
placing_add(const char *hex)
{
	if (placing.count == placing.cap) {
		placing.cap = placing.cap ? placing.cap * 2 : 8;
		placing.hex = xrealloc(placing.hex, placing.cap * sizeof *placing.hex);
	}
	snprintf(placing.hex[placing.count++], sizeof placing.hex[0], "%s", hex);
}

static void
placing_remove(const char *hex)
{
	for (size_t i = 0; i < placing.count; i++) {
		if (strcmp(placing.hex[i], hex) == 0) {
			memcpy(placing.hex[i], placing.hex[--placing.count], sizeof placing.hex[i]);
			break;
		}
	}
	if (placing.count == 0) {
		free(placing.hex);
		placing.hex = NULL;
		placing.cap = 0;
	}
}

/* The save of hex has its row, or failed: the sweep may take its content again. */
static void
placing_done(struct store *store, const char *hex)
{
	store_lock(store);
	placing_remove(hex);
	store_unlock(store);
}

/*
 * Moves the finished temporary file tmp to <root>/<hh>/<hex>.  A file of the
 * same size already there is the same content: tmp is dropped.  The rename
 * is under the store lock and marks the content as placing (placing_done once
 * its row is in), so that artifacts_sweep cannot remove it before the row.
 */
static enum td_code
store_place(struct store *store, const char *root, const char *tmp, const char *hex,
    uint64_t size, char **message)
{
	char *dir = xasprintf("%s/%.2s", root, hex);
	char *final = xasprintf("%s/%s", dir, hex);
	enum td_code code = TD_OK;
	bool made;
	struct stat st;

	store_lock(store);
	placing_add(hex);
	made = mkdir(dir, 0700) == 0;
	if (!made && errno != EEXIST) {
		code = store_failed("create", dir, message);
		goto out;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) != 0) {
		int e = errno;

		if (e == EEXIST && lstat(final, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == size) {
			unlink(tmp);
		} else if ((e == EEXIST || e == EINVAL || e == ENOSYS) &&
		    rename(tmp, final) == 0) {
			if (e == EEXIST)
				log_warn("artifacts: replaced %s, which had the wrong size", final);
		} else {
			code = store_failed("rename into", final, message);
			goto out;
		}
	}
	store_unlock(store);
	/* The name is durable before the row that names it; no lock held meanwhile. */
	if (!fsync_dir(dir) || (made && !fsync_dir(root))) {
		code = store_failed("sync", dir, message);
		placing_done(store, hex);
	}
	free(dir);
	free(final);
	return code;
out:
	placing_remove(hex);
	store_unlock(store);
	free(dir);
	free(final);
	return code;
}

/*
 * Copies src into the store through a temporary file, hashing as it goes;
 * fills version and size.  shown names the source in messages.
 */
static enum td_code
store_copy(struct store *store, const char *root, int src, const char *shown,
    char version[ARTIFACT_VERSION_LEN], uint64_t *size, char **message)
{
	unsigned char digest[crypto_hash_sha256_BYTES];
	char hex[HASH_HEX + 1], rnd[33];
	crypto_hash_sha256_state hs;
	char *tmpdir = xasprintf("%s/tmp", root);
	char *tmp = NULL, *data = NULL;
	enum td_code code = TD_OK;
	uint64_t total = 0;
	int out = -1;

	if (!paths_mkdir_p(tmpdir, 0700)) {
		code = store_failed("create", tmpdir, message);
		goto out;
	}
	random_hex(rnd, 16);
	tmp = xasprintf("%s/%s", tmpdir, rnd);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		code = store_failed("create", tmp, message);
		goto out;
	}
	posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
	data = xmalloc(COPY_BUFFER);
	crypto_hash_sha256_init(&hs);
	for (;;) {
		ssize_t n = read(src, data, COPY_BUFFER);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*message = xasprintf("cannot read %s: %s", shown, strerror(errno));
			code = TD_IO_ERROR;
			goto out;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > ARTIFACT_MAX_SIZE) {
			*message = xasprintf("%s grew past the artifact limit of 64 GiB "
			    "while it was saved", shown);
			code = TD_INVALID_REQUEST;
			goto out;
		}
		crypto_hash_sha256_update(&hs, (const unsigned char *)data, (size_t)n);
		if (!write_all(out, data, (size_t)n)) {
			code = store_failed("write", tmp, message);
			goto out;
		}
	}
	if (fsync(out) != 0) {
		code = store_failed("sync", tmp, message);
		goto out;
	}
	if (close(out) != 0) {
		out = -1;
		code = store_failed("close", tmp, message);
		goto out;
	}
	out = -1;
	crypto_hash_sha256_final(&hs, digest);
	sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
	code = store_place(store, root, tmp, hex, total, message);
	if (code == TD_OK) {
		snprintf(version, ARTIFACT_VERSION_LEN, "sha256:%s", hex);
		*size = total;
	}
out:
	if (out >= 0)
		close(out);
	if (code != TD_OK && tmp != NULL)
		unlink(tmp);
	free(data);
	free(tmp);
	free(tmpdir);
	return code;
}

/* Inserts the staged row of a save; false after logging. */
static bool
row_insert(struct store *st, const char *id, const char *run_id,
    const char *session_id, const char *name, const char *path,
    const char *version, uint64_t size, const char *media)
{
	sqlite3 *db = store_lock(st);
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO artifacts (id, session_id,"
	    " run_id, name, path, version, size, media_type, visible, created_at)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9)");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, version, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)size);
	sqlite3_bind_text(s, 8, media, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 9, clock_wall_ms());
	ok = sqlite3_step(s) == SQLITE_DONE;
	if (!ok)
		log_error("artifacts: cannot record %s of %s: %s", id, run_id,
		    sqlite3_errmsg(db));
	sqlite3_reset(s);
	store_unlock(st);
	return ok;
}

/*
 * The artifact a resumed run already saved from path with this
 * content (version), whose id goes to id; false when there is none.
 */
static bool
resumed_duplicate(struct store *st, const char *run_id, const char *path,
    const char *version, char *id)
{
	sqlite3_stmt *s;
	bool found;

	store_lock(st);
	s = store_stmt(st, "SELECT a.id FROM artifacts a JOIN runs r ON r.id = a.run_id"
	    " WHERE a.run_id = ?1 AND a.path = ?2 AND a.version = ?3 AND r.resumes > 0"
	    " ORDER BY a.id DESC LIMIT 1");
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, version, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	if (found)
		snprintf(id, TD_ID_MAX, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_reset(s);
	store_unlock(st);
	return found;
}

enum td_code
artifacts_save(struct service *svc, const char *run_id,
    const char *session_id, const char *workspace, const char *const *hidden,
    const cJSON *params, cJSON **result, char **message)
{
	char version[ARTIFACT_VERSION_LEN], id[TD_ID_MAX];
	const char *name, *media;
	char *norm = NULL;
	uint64_t size = 0;
	enum td_code code;
	cJSON *art;
	int fd = -1;
	bool again;

	*result = NULL;
	*message = NULL;
	code = params_check(params, &norm, &name, &media, message);
	if (code == TD_OK)
		code = source_open(svc, workspace, hidden, norm, &fd, message);
	if (code == TD_OK)
		code = store_copy(svc->store, svc->paths.artifacts, fd, norm, version, &size,
		    message);
	if (fd >= 0)
		close(fd);
	if (code != TD_OK) {
		free(norm);
		return code;
	}
	if (name == NULL) {
		name = strrchr(norm, '/');
		name = name ? name + 1 : norm;
	}
	if (media == NULL)
		media = artifacts_media_type(name);
	/* A resumed run redoing a save it made before the restart. */
	again = resumed_duplicate(svc->store, run_id, norm, version, id);
	if (again)
		log_info("run %s: the resumed agent saves %s again: the same artifact %s", run_id,
		    norm, id);
	else
		id_new("art", id);
	store_disk_full_clear();
	if (!again && !row_insert(svc->store, id, run_id, session_id, name, norm, version,
	    size, media)) {
		placing_done(svc->store, version + 7);
		free(norm);
		if (store_disk_full_seen()) {
			*message = xstrdup("the disk is full "
			    "(its record could not be written); free space and save it again");
			return TD_INSUFFICIENT_STORAGE;
		}
		*message = xstrdup("the artifact could not be recorded");
		return TD_INTERNAL_ERROR;
	}
	placing_done(svc->store, version + 7);
	log_debug("run %s saved %s as %s (%s, %llu bytes)", run_id, norm, id, version,
	    (unsigned long long)size);
	*result = cJSON_CreateObject();
	art = cJSON_AddObjectToObject(*result, "artifact");
	cJSON_AddStringToObject(art, "id", id);
	cJSON_AddStringToObject(art, "name", name);
	cJSON_AddStringToObject(art, "path", norm);
	cJSON_AddStringToObject(art, "version", version);
	cJSON_AddNumberToObject(art, "size", (double)size);
	free(norm);
	return TD_OK;
}

/* Digits of a range bound, saturating at UINT64_MAX; false when there are none. */
static bool
range_number(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
	}
	*p = s;
	*out = v;
	return true;
}

enum artifacts_range
artifacts_range(const char *header, uint64_t size, uint64_t *first, uint64_t *last)
{
	const char *p = header;
	uint64_t a = 0, b = UINT64_MAX;
	bool has_a, has_b;

	if (p == NULL || strncasecmp(p, "bytes", 5) != 0)
		return ARTIFACTS_RANGE_NONE;
	p += 5;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p++ != '=')
		return ARTIFACTS_RANGE_NONE;
	while (*p == ' ' || *p == '\t')
		p++;
	has_a = range_number(&p, &a);
	if (*p++ != '-')
		return ARTIFACTS_RANGE_NONE;
	has_b = range_number(&p, &b);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0' || (!has_a && !has_b) || (has_a && has_b && b < a))
		return ARTIFACTS_RANGE_NONE;
	if (!has_a) {
		/* -N: the last N bytes. */
		if (b == 0 || size == 0)
			return ARTIFACTS_RANGE_UNSATISFIABLE;
		*first = b >= size ? 0 : size - b;
		*last = size - 1;
		return ARTIFACTS_RANGE_PARTIAL;
	}
	if (a >= size)
		return ARTIFACTS_RANGE_UNSATISFIABLE;
	*first = a;
	*last = has_b && b < size ? b : size - 1;
	return ARTIFACTS_RANGE_PARTIAL;
}

/* RFC 5987 attr-char: sent as is in filename*. */
static bool
attr_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$&+-.^_`|~", c) != NULL);
}

char *
artifacts_disposition(const char *name)
{
	struct buf b;
	bool plain = true;

	buf_init(&b, 0);
	buf_appends(&b, "attachment; filename=\"");
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p >= 0x80) {
			/* One '_' per character: skip its continuation bytes. */
			if ((*p & 0xc0) != 0x80)
				buf_appends(&b, "_");
			plain = false;
		} else if (*p < 0x20 || *p == 0x7f) {
			buf_appends(&b, "_");
			plain = false;
		} else {
			if (*p == '"' || *p == '\\') {
				buf_appends(&b, "\\");
				plain = false;
			}
			buf_append(&b, p, 1);
		}
	}
	buf_appends(&b, "\"");
	if (!plain) {
		buf_appends(&b, "; filename*=UTF-8''");
		for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
			if (attr_char(*p))
				buf_append(&b, p, 1);
			else
				buf_printf(&b, "%%%02X", *p);
		}
	}
	return buf_steal(&b);
}

static int
version_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

long
artifacts_sweep(struct service *svc)
{
	struct store *st = svc->store;
	char **versions = NULL, *key;
	size_t n = 0, cap = 0;
	long removed = 0;
	sqlite3_stmt *s;
	struct dirent *e;
	DIR *top;

	store_lock(st);
	s = store_stmt(st, "SELECT DISTINCT version FROM artifacts");
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(s, 0);

		if (v == NULL || strncmp(v, "sha256:", 7) != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			versions = xrealloc(versions, cap * sizeof *versions);
		}
		versions[n++] = xstrdup(v + 7);
	}
	sqlite3_reset(s);
	if (n > 1)
		qsort(versions, n, sizeof *versions, version_cmp);
	top = opendir(svc->paths.artifacts);
	while (top != NULL && (e = readdir(top)) != NULL) {
		char *sub;
		DIR *d;
		struct dirent *f;

		if (strlen(e->d_name) != 2 || !isxdigit((unsigned char)e->d_name[0]) ||
		    !isxdigit((unsigned char)e->d_name[1]))
			continue;
		sub = xasprintf("%s/%s", svc->paths.artifacts, e->d_name);
		d = opendir(sub);
		while (d != NULL && (f = readdir(d)) != NULL) {
			if (strlen(f->d_name) != HASH_HEX ||
			    strncmp(f->d_name, e->d_name, 2) != 0)
				continue;
			key = f->d_name;
			if (n > 0 && bsearch(&key, versions, n, sizeof *versions, version_cmp))
				continue;
			/* A save placed it and has yet to write the row that names it. */
			if (placing_has(f->d_name))
				continue;
			if (unlinkat(dirfd(d), f->d_name, 0) == 0)
				removed++;
			else
				log_warn("cannot remove the artifact content %s/%s: %s", sub,
				    f->d_name, strerror(errno));
		}
		if (d != NULL)
			closedir(d);
		free(sub);
	}
	if (top != NULL)
		closedir(top);
	store_unlock(st);
	for (size_t i = 0; i < n; i++)
		free(versions[i]);
	free(versions);
	return removed;
}
