#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "json.h"
#include "tools.h"
#include "units.h"
#include "wsfile.h"
#include "xalloc.h"

#define LIST_MAX_ENTRIES 1000
#define LIST_MAX_DEPTH 16

void
tool_result_init(struct tool_result *res)
{
	memset(res, 0, sizeof *res);
	buf_init(&res->content, 0);
}

void
tool_result_free(struct tool_result *res)
{
	buf_free(&res->content);
	cJSON_Delete(res->media);
	res->media = NULL;
}

static void __attribute__((format(printf, 2, 0)))
tool_vsummary(struct tool_result *res, const char *fmt, va_list ap)
{
	char tmp[1024];
	char *cut;

	vsnprintf(tmp, sizeof tmp, fmt, ap);
	cut = agent_utf8_prefix(tmp, AGENT_SUMMARY_MAX);
	snprintf(res->summary, sizeof res->summary, "%s", cut);
	free(cut);
}

void
tool_result_summary(struct tool_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tool_vsummary(res, fmt, ap);
	va_end(ap);
}

void
tool_result_fail(struct tool_result *res, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = xstrdup("the tool failed");
	va_end(ap);
	res->failed = true;
	buf_reset(&res->content);
	buf_appends(&res->content, "error: ");
	buf_appends(&res->content, m);
	tool_result_summary(res, "%s", m);
	free(m);
}

bool
tool_open(const struct tool_ctx *ctx, const cJSON *args, const char *def, int oflags,
    int *fd, struct stat *st, char **rel, struct tool_result *res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "path");
	char *why = NULL;

	if (v != NULL && !cJSON_IsString(v)) {
		tool_result_fail(res, "the argument \"path\" must be a string");
		return false;
	}
	if (v == NULL && def == NULL) {
		tool_result_fail(res, "the argument \"path\" is missing");
		return false;
	}
	if (ctx->files == NULL) {
		tool_result_fail(res, "%s", ctx->files_why);
		return false;
	}
	if (wsfile_open(ctx->files, v ? v->valuestring : def, oflags, fd, st, rel, &why) ==
	    WSFILE_OK)
		return true;
	tool_result_fail(res, "%s", why);
	free(why);
	return false;
}

static void
describe_path(const char *verb, const cJSON *args, char *out, size_t len)
{
	const char *p = json_get_string(args, "path");

	snprintf(out, len, "%s %s", verb, p ? p : ".");
}

/* list_files */

struct lister {
	struct wsfile_root *files;
	struct buf *out;
	size_t count;
	size_t max_bytes;
	bool truncated;
};

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **
tool_dir_names(int dfd, size_t *n)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	char **names = NULL;
	size_t cap = 0;

	*n = 0;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (*n > 0)
		qsort(names, *n, sizeof *names, cmp_names);
	return names;
}

/* Lists the directory dfd; a hidden entry is named, never described nor entered. */
static void
list_dir(struct lister *l, int dfd, const char *prefix, bool recursive, int depth)
{
	size_t n;
	char **names = tool_dir_names(dfd, &n);

	for (size_t i = 0; i < n; i++) {
		char *shown = xasprintf("%s%s", prefix, names[i]);
		char size[32];
		struct stat st;

		if (l->truncated || l->count >= LIST_MAX_ENTRIES || l->out->len >= l->max_bytes) {
			l->truncated = true;
		} else if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			buf_printf(l->out, "%s (unreadable)\n", shown);
			l->count++;
		} else if (wsfile_is_hidden(l->files, &st)) {
			buf_printf(l->out, "%s%s (hidden)\n", shown, S_ISDIR(st.st_mode) ? "/" : "");
			l->count++;
		} else if (S_ISDIR(st.st_mode)) {
			int sub;

			buf_printf(l->out, "%s/\n", shown);
			l->count++;
			if (recursive && depth < LIST_MAX_DEPTH &&
			    (sub = wsfile_open_subdir(l->files, dfd, names[i])) >= 0) {
				char *subprefix = xasprintf("%s/", shown);

				list_dir(l, sub, subprefix, recursive, depth + 1);
				free(subprefix);
				close(sub);
			}
		} else if (S_ISLNK(st.st_mode)) {
			buf_printf(l->out, "%s (symbolic link)\n", shown);
			l->count++;
		} else {
			units_format_size((long long)st.st_size, size, sizeof size);
			buf_printf(l->out, "%s (%s)\n", shown, size);
			l->count++;
		}
		free(shown);
		free(names[i]);
	}
	free(names);
}

static int
tool_list_files(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(args, "recursive");
	struct lister l = { .max_bytes = tool_output_max(ctx), .files = ctx->files };
	struct stat st;
	struct buf listing;
	char *rel;
	int fd;

	if (!tool_open(ctx, args, ".", O_RDONLY | O_DIRECTORY, &fd, &st, &rel, res))
		return AGENT_OK;
	buf_init(&listing, 0);
	l.out = &listing;
	list_dir(&l, fd, "", cJSON_IsTrue(rec), 0);
	close(fd);
	agent_utf8_append(&res->content, listing.data ? listing.data : "", listing.len);
	buf_free(&listing);
	if (l.count == 0)
		buf_appends(&res->content, "(empty directory)\n");
	if (l.truncated)
		buf_printf(&res->content, "[listing truncated after %zu entries]\n", l.count);
	tool_result_summary(res, "%zu entries in %s%s", l.count, rel,
	    l.truncated ? " (truncated)" : "");
	free(rel);
	return AGENT_OK;
}

size_t
tool_output_max(const struct tool_ctx *ctx)
{
	return ctx->max_output > 0 && ctx->max_output < ctx->cfg->max_tool_output ?
	    ctx->max_output : ctx->cfg->max_tool_output;
}

/* read_file */

#define READ_LINE_MAX 2000		/* bytes of a line shown by a ranged read */
#define READ_COUNT_MAX (64 * 1024 * 1024)	/* bytes read to count the lines after a range */

/* args.name: absent, or a whole number from 1 to max; false with a failure in res. */
static bool
read_arg_line(const cJSON *args, const char *name, long max, long *out,
    struct tool_result *res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (double)max ||
	    v->valuedouble != (double)(long)v->valuedouble) {
		tool_result_fail(res, "the argument \"%s\" must be a whole number from 1 to %ld",
		    name, max);
		return false;
	}
	*out = (long)v->valuedouble;
	return true;
}

/* A file read line by line. */
struct lines {
	int fd;
	bool eof;
	size_t at, len;
	size_t total;		/* bytes read so far */
	char blk[65536];
};

/*
 * The next line: its first cap bytes copied to line, its whole length (without
 * the newline) in *n; false at the end of the file.
 */
static bool
lines_next(struct lines *r, char *line, size_t cap, size_t *n)
{
	bool any = false;

	*n = 0;
	for (;;) {
		const char *nl;
		size_t k;

		if (r->at == r->len) {
			ssize_t got;

			if (r->eof)
				return any;
			do
				got = read(r->fd, r->blk, sizeof r->blk);
			while (got < 0 && errno == EINTR);
			if (got <= 0) {
				r->eof = true;
				return any;
			}
			r->at = 0;
			r->len = (size_t)got;
			r->total += (size_t)got;
		}
		any = true;
		nl = memchr(r->blk + r->at, '\n', r->len - r->at);
		k = nl ? (size_t)(nl - r->blk) - r->at : r->len - r->at;
		if (*n < cap)
			memcpy(line + *n, r->blk + r->at, k < cap - *n ? k : cap - *n);
		*n += k;
		r->at += k;
		if (nl != NULL) {
			r->at++;
			return true;
		}
	}
}

/*
 * Lines first..last of fd, each "%6ld\t" and the line (cut at READ_LINE_MAX),
 * within max bytes; the lines after them are counted while that stays cheap.
 */
static void
read_lines(int fd, long first, long last, size_t max, struct buf *out, const char *rel,
    struct tool_result *res)
{
	struct lines *r = xcalloc(1, sizeof *r);
	/* at most half the output per line, so that the first one always fits */
	size_t cap = max / 2 < READ_LINE_MAX ? max / 2 : READ_LINE_MAX, n;
	char *line = xmalloc(cap);
	long no = 0, shown_to = 0;
	bool full = false, counted = true;

	r->fd = fd;
	while (lines_next(r, line, cap, &n)) {
		size_t k = n < cap ? n : agent_utf8_cut(line, cap);

		if (++no < first)
			continue;
		if (no > last)
			break;
		if (out->len + k + 32 > max) {
			full = true;
			break;
		}
		buf_printf(out, "%6ld\t", no);
		agent_utf8_append(out, line, k);
		buf_appends(out, n > k ? " [line cut]\n" : "\n");
		shown_to = no;
	}
	while (!r->eof) {
		if (r->total > READ_COUNT_MAX) {
			counted = false;
			break;
		}
		if (lines_next(r, line, 0, &n))
			no++;
	}
	free(line);
	free(r);
	if (shown_to == 0 && !full) {
		tool_result_fail(res, "%s: has %ld lines, none from line %ld", rel, no, first);
		return;
	}
	if (full)
		buf_printf(out, "[output limit reached: read on with offset=%ld]\n", shown_to + 1);
	if (counted)
		buf_printf(out, "[lines %ld-%ld of %ld]\n", first, shown_to, no);
	else
		buf_printf(out, "[lines %ld-%ld; more follow]\n", first, shown_to);
	tool_result_summary(res, "read %s lines %ld-%ld", rel, first, shown_to);
}

static int
tool_read_file(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	struct stat st;
	size_t max = tool_output_max(ctx), got;
	long first = 0, limit = 0;
	char *data, *rel;
	char size[32];
	int fd;

	if (!read_arg_line(args, "offset", 1000000000L, &first, res) ||
	    !read_arg_line(args, "limit", 100000L, &limit, res))
		return AGENT_OK;
	/* O_NONBLOCK: a FIFO without a writer fails instead of blocking the run. */
	if (!tool_open(ctx, args, NULL, O_RDONLY | O_NONBLOCK, &fd, &st, &rel, res))
		return AGENT_OK;
	if (!S_ISREG(st.st_mode)) {
		tool_result_fail(res, "%s: not a regular file", rel);
		close(fd);
		free(rel);
		return AGENT_OK;
	}
	if (first > 0 || limit > 0) {
		if (first == 0)
			first = 1;
		read_lines(fd, first, limit > 0 ? first + limit - 1 : 2000000000L, max,
		    &res->content, rel, res);
		close(fd);
		free(rel);
		return AGENT_OK;
	}
	data = xmalloc(max);
	got = agent_read_full(fd, data, max);
	close(fd);
	agent_utf8_append(&res->content, data, got);
	units_format_size((long long)st.st_size, size, sizeof size);
	if ((long long)got < (long long)st.st_size) {
		long lines = 1;

		for (size_t i = 0; i < got; i++)
			lines += data[i] == '\n';
		buf_printf(&res->content, "\n[truncated: showed the first %zu of %lld bytes; read "
		    "the rest by lines: read_file with offset=%ld and a limit]\n", got,
		    (long long)st.st_size, lines);
	}
	free(data);
	tool_result_summary(res, "read %s (%s)", rel, size);
	free(rel);
	return AGENT_OK;
}

/* write_file */

#define TOOL_APPEND_MAX (64L * 1024 * 1024)	/* of a file write_file appends to */

/*
 * write_file with append: the file's content (none when it does not exist)
 * and then content, written as a whole file is (wsfile_write).
 */
static int
tool_append_file(const struct tool_ctx *ctx, const char *path, const char *content, size_t len,
    struct tool_result *res)
{
	struct buf all;
	struct stat st;
	char *rel = NULL, *why = NULL, size[32], chunk[65536];
	int fd;
	ssize_t n;

	buf_init(&all, 0);
	switch (wsfile_open(ctx->files, path, O_RDONLY, &fd, &st, &rel, &why)) {
	case WSFILE_OK:
		free(rel);
		rel = NULL;
		if (!S_ISREG(st.st_mode) || st.st_size + (off_t)len > TOOL_APPEND_MAX) {
			close(fd);
			tool_result_fail(res, "%s: cannot append: %s", path, S_ISREG(st.st_mode) ?
			    "the file would pass 64 MiB" : "not a regular file");
			buf_free(&all);
			return AGENT_OK;
		}
		while ((n = read(fd, chunk, sizeof chunk)) > 0 &&
		    all.len + (size_t)n <= (size_t)TOOL_APPEND_MAX)
			buf_append(&all, chunk, (size_t)n);
		close(fd);
		if (n != 0) {
			tool_result_fail(res, "%s: cannot read it to append", path);
			buf_free(&all);
			return AGENT_OK;
		}
		break;
	case WSFILE_MISSING:
		free(why);
		why = NULL;
		break;
	default:
		tool_result_fail(res, "%s", why);
		free(why);
		buf_free(&all);
		return AGENT_OK;
	}
	buf_append(&all, content, len);
	if (wsfile_write(ctx->files, path, all.data, all.len, &rel, &why) != WSFILE_OK) {
		tool_result_fail(res, "%s", why);
		free(why);
		buf_free(&all);
		return AGENT_OK;
	}
	units_format_size((long long)all.len, size, sizeof size);
	buf_printf(&res->content, "appended %zu bytes to %s (%zu bytes now)", len, rel, all.len);
	tool_result_summary(res, "appended to %s (%s)", rel, size);
	free(rel);
	buf_free(&all);
	return AGENT_OK;
}

static int
tool_write_file(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(args, "content");
	const char *path = json_get_string(args, "path");
	char size[32], *rel, *why;
	size_t len;

	if (!cJSON_IsString(content)) {
		tool_result_fail(res, "the argument \"content\" must be a string");
		return AGENT_OK;
	}
	if (path == NULL) {
		tool_result_fail(res, "the argument \"path\" must be a string");
		return AGENT_OK;
	}
	if (ctx->files == NULL) {
		tool_result_fail(res, "%s", ctx->files_why);
		return AGENT_OK;
	}
	len = strlen(content->valuestring);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "append")))
		return tool_append_file(ctx, path, content->valuestring, len, res);
	if (wsfile_write(ctx->files, path, content->valuestring, len, &rel, &why) != WSFILE_OK) {
		tool_result_fail(res, "%s", why);
		free(why);
		return AGENT_OK;
	}
	units_format_size((long long)len, size, sizeof size);
	buf_printf(&res->content, "wrote %zu bytes to %s", len, rel);
	tool_result_summary(res, "wrote %s (%s)", rel, size);
	free(rel);
	return AGENT_OK;
}

static void
describe_write(const cJSON *args, char *out, size_t len)
{
	describe_path("write", args, out, len);
}

static void
describe_read(const cJSON *args, char *out, size_t len)
{
	describe_path("read", args, out, len);
}

static void
describe_list(const cJSON *args, char *out, size_t len)
{
	describe_path("list", args, out, len);
}

static void
describe_save(const cJSON *args, char *out, size_t len)
{
	describe_path("save", args, out, len);
}

/* save_artifact */

static const struct {
	const char *ext;
	const char *type;
} media_types[] = {
	{ ".md", "text/markdown" }, { ".txt", "text/plain" }, { ".csv", "text/csv" },
	{ ".json", "application/json" }, { ".html", "text/html" }, { ".htm", "text/html" },
	{ ".xml", "application/xml" }, { ".yaml", "application/yaml" },
	{ ".yml", "application/yaml" }, { ".pdf", "application/pdf" },
	{ ".png", "image/png" }, { ".jpg", "image/jpeg" }, { ".jpeg", "image/jpeg" },
	{ ".svg", "image/svg+xml" }, { ".zip", "application/zip" },
	{ ".tar", "application/x-tar" }, { ".gz", "application/gzip" },
	{ ".c", "text/x-c" }, { ".h", "text/x-c" }, { ".py", "text/x-python" },
	{ ".js", "text/javascript" }, { ".sh", "application/x-sh" },
};

static const char *
media_type(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (dot == NULL || strchr(dot, '/') != NULL)
		return NULL;
	for (size_t i = 0; i < sizeof media_types / sizeof *media_types; i++) {
		if (strcasecmp(dot, media_types[i].ext) == 0)
			return media_types[i].type;
	}
	return NULL;
}

static int
tool_save_artifact(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(args, "name");
	char *rel;
	int fd;
	struct agent_error err = { 0 };
	cJSON *params, *result = NULL;
	const cJSON *art;
	const char *type;
	struct stat st;
	int rc;

	if (name != NULL && !cJSON_IsNull(name) && (!cJSON_IsString(name) ||
	    name->valuestring[0] == '\0' || strlen(name->valuestring) > 255 ||
	    strchr(name->valuestring, '/') != NULL)) {
		tool_result_fail(res, "the argument \"name\" must be a file name without \"/\"");
		return AGENT_OK;
	}
	if (!tool_open(ctx, args, NULL, O_RDONLY | O_NONBLOCK, &fd, &st, &rel, res))
		return AGENT_OK;
	close(fd);
	if (!S_ISREG(st.st_mode)) {
		tool_result_fail(res, "%s: not a regular file", rel);
		free(rel);
		return AGENT_OK;
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "path", rel);
	if (cJSON_IsString(name))
		cJSON_AddStringToObject(params, "name", name->valuestring);
	if ((type = media_type(rel)) != NULL)
		cJSON_AddStringToObject(params, "mediaType", type);
	rc = host_request(ctx->host, "artifact.save", params, &result, &err);
	if (rc == AGENT_FAILED)
		tool_result_fail(res, "%s: the artifact was not saved: %s", rel, err.message);
	else if (rc == AGENT_OK) {
		art = cJSON_GetObjectItemCaseSensitive(result, "artifact");
		buf_printf(&res->content, "saved %s as artifact %s (id %s, version %s, %.0f bytes)",
		    rel, json_get_string(art, "name") ? json_get_string(art, "name") : rel,
		    json_get_string(art, "id") ? json_get_string(art, "id") : "?",
		    json_get_string(art, "version") ? json_get_string(art, "version") : "?",
		    (double)st.st_size);
		tool_result_summary(res, "saved %s", rel);
	}
	cJSON_Delete(result);
	agent_error_clear(&err);
	free(rel);
	return rc == AGENT_CANCELLED ? AGENT_CANCELLED : AGENT_OK;
}

static const struct tool tools[] = {
	{ "list_files",
	  "List the files and directories at a path of the workspace (default: its root). "
	  "Directories end with \"/\"; files show their size.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"path\":{\"type\":\"string\",\"description\":\"Directory, relative to the workspace\"},"
	  "\"recursive\":{\"type\":\"boolean\",\"description\":\"Also list subdirectories\"}},"
	  "\"additionalProperties\":false}",
	  TOOL_PARALLEL, tool_list_files, describe_list },
	{ "read_file",
	  "Read a text file of the workspace. Without offset and limit: the whole file, cut "
	  "at the output limit. With them: the lines from offset (1 for the first), at most "
	  "limit of them, each after its line number and a tab.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"path\":{\"type\":\"string\",\"description\":\"File, relative to the workspace\"},"
	  "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"First line to read\"},"
	  "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000,"
	  "\"description\":\"How many lines to read\"}},"
	  "\"required\":[\"path\"],\"additionalProperties\":false}",
	  TOOL_PARALLEL, tool_read_file, describe_read },
	{ "grep",
	  "Search the files of the workspace for a POSIX extended regular expression, line "
	  "by line (\\d, \\w, \\s, \\b work; back-references do not). Files that "
	  ".gitignore ignores, .git, binary files and hidden paths are skipped. Each match: "
	  "path:line:text.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"pattern\":{\"type\":\"string\",\"description\":\"The regular expression\"},"
	  "\"path\":{\"type\":\"string\",\"description\":\"Directory or file to search (default: the workspace)\"},"
	  "\"glob\":{\"type\":\"string\",\"description\":\"Only files matching this glob, e.g. *.c or src/**/*.h\"},"
	  "\"ignore_case\":{\"type\":\"boolean\"},"
	  "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,"
	  "\"description\":\"At most this many matching lines (default 200)\"}},"
	  "\"required\":[\"pattern\"],\"additionalProperties\":false}",
	  TOOL_PARALLEL, tool_grep, tool_describe_grep },
	{ "glob",
	  "Find the files of the workspace whose path matches a glob: * and ? within a "
	  "name, [...] classes, ** for any number of directories (e.g. **/*.py, "
	  "src/*.c). Files that .gitignore ignores, .git and hidden paths are skipped.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"pattern\":{\"type\":\"string\",\"description\":\"The glob, relative to path\"},"
	  "\"path\":{\"type\":\"string\",\"description\":\"Directory to search (default: the workspace)\"}},"
	  "\"required\":[\"pattern\"],\"additionalProperties\":false}",
	  TOOL_PARALLEL, tool_glob, tool_describe_glob },
	{ "write_file",
	  "Create or replace a file of the workspace with the given content. "
	  "Missing parent directories are created.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"path\":{\"type\":\"string\",\"description\":\"File, relative to the workspace\"},"
	  "\"content\":{\"type\":\"string\",\"description\":\"The whole new content\"},"
	  "\"append\":{\"type\":\"boolean\",\"description\":\"Add content at the end of the file "
	  "instead (default false): a large file is written in parts\"}},"
	  "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
	  TOOL_SIDE_EFFECT | TOOL_AFTER_PLAN, tool_write_file, describe_write },
	{ "edit_file",
	  "Replace text in a file of the workspace: old_string must match the file exactly "
	  "(whitespace and indentation included) and only once, unless replace_all is true. "
	  "Read the file first; include enough surrounding lines to make old_string unique.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"path\":{\"type\":\"string\",\"description\":\"File, relative to the workspace\"},"
	  "\"old_string\":{\"type\":\"string\",\"description\":\"The exact text to replace\"},"
	  "\"new_string\":{\"type\":\"string\",\"description\":\"The text to put instead\"},"
	  "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence (default false)\"}},"
	  "\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false}",
	  TOOL_SIDE_EFFECT | TOOL_AFTER_PLAN, tool_edit_file, tool_describe_edit },
	{ "run_command",
	  "Run a shell command (/bin/sh -c) in the workspace and return its exit status "
	  "and its output (stdout and stderr together, cut at the output limit).",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"command\":{\"type\":\"string\",\"description\":\"The command line\"}},"
	  "\"required\":[\"command\"],\"additionalProperties\":false}",
	  TOOL_SIDE_EFFECT | TOOL_AFTER_PLAN, tool_run_command, tool_describe_command },
	{ "save_artifact",
	  "Save a file of the workspace as an artifact of the run, so that the user can "
	  "download it. Only saved files are delivered.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"path\":{\"type\":\"string\",\"description\":\"File, relative to the workspace\"},"
	  "\"name\":{\"type\":\"string\",\"description\":\"Name shown to the user (default: the file name)\"}},"
	  "\"required\":[\"path\"],\"additionalProperties\":false}",
	  TOOL_AFTER_PLAN, tool_save_artifact, describe_save },
	{ "run_subagent",
	  "Hand a self-contained sub-task to a subagent: another agent with the same tools "
	  "(but this one) in the same workspace, under the same permissions. It starts "
	  "with only the prompt you give it, and its final answer is the result. Several "
	  "calls in one answer run at the same time.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"description\":{\"type\":\"string\",\"description\":\"A few words for the log\"},"
	  "\"prompt\":{\"type\":\"string\",\"description\":\"The whole task: what to do and what to answer\"}},"
	  "\"required\":[\"prompt\"],\"additionalProperties\":false}",
	  TOOL_SUBAGENT | TOOL_PARALLEL, tool_run_subagent, tool_describe_subagent },
	{ "propose_plan",
	  "Propose a plan to the user and wait for their decision. Until a plan is approved, "
	  "write_file, edit_file, run_command and save_artifact are refused. The result says whether "
	  "the user approved it (with the step ids to report), asked for a revision (with "
	  "their feedback: propose a revised plan) or rejected it (the run ends).",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"summary\":{\"type\":\"string\",\"description\":\"What the plan achieves\"},"
	  "\"steps\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":50,\"items\":"
	  "{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\",\"maxLength\":200}},"
	  "\"required\":[\"title\"],\"additionalProperties\":false},"
	  "\"description\":\"The steps, in the order they will be carried out\"}},"
	  "\"required\":[\"summary\",\"steps\"],\"additionalProperties\":false}",
	  TOOL_PLAN_FIRST, tool_propose_plan, tool_describe_propose },
	{ "update_plan_step",
	  "Report the progress of a step of the approved plan: in-progress when you start "
	  "it, completed or failed when it is done.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"stepId\":{\"type\":\"string\",\"description\":\"The step id given with the approval\"},"
	  "\"status\":{\"type\":\"string\",\"enum\":[\"in-progress\",\"completed\",\"failed\"]}},"
	  "\"required\":[\"stepId\",\"status\"],\"additionalProperties\":false}",
	  TOOL_PLAN_FIRST, tool_update_plan_step, tool_describe_step },
};

static bool
tool_offered(const struct tool *t, unsigned offer)
{
	unsigned gated = t->flags & (TOOL_PLAN_FIRST | TOOL_SUBAGENT);

	return gated == 0 || (gated & offer) != 0;
}

const struct tool *
tools_find(const char *name, unsigned offer)
{
	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
		if (strcmp(tools[i].name, name) == 0 && tool_offered(&tools[i], offer))
			return &tools[i];
	}
	return NULL;
}

cJSON *
tools_definitions(unsigned offer)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
		cJSON *t;

		if (!tool_offered(&tools[i], offer))
			continue;
		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", tools[i].name);
		cJSON_AddStringToObject(t, "description", tools[i].description);
		cJSON_AddItemToObject(t, "parameters", cJSON_Parse(tools[i].schema));
		cJSON_AddItemToArray(arr, t);
	}
	return arr;
}
