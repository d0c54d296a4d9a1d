/*
 * edit_file: an exact replacement in a file of the workspace.  The file is read
 * through wsfile_open and written back through wsfile_write, like write_file.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "tools.h"
#include "wsfile.h"
#include "xalloc.h"

#define EDIT_FILE_MAX (8 * 1024 * 1024)	/* larger files are not edited */
#define EDIT_LINES_SHOWN 5		/* line numbers listed for several matches */
#define EDIT_CONTEXT 3			/* lines shown around the first replacement */

/* The line number (from 1) of offset at in data. */
static long
line_of(const char *data, size_t at)
{
	long n = 1;

	for (const char *p = data; (p = memchr(p, '\n', at - (size_t)(p - data))) != NULL; p++)
		n++;
	return n;
}

/* The offsets of the non-overlapping occurrences of s in data (malloc'd), their count in *n. */
static size_t *
occurrences(const char *data, size_t len, const char *s, size_t slen, size_t *n)
{
	size_t *at = NULL, cap = 0;
	const char *p = data, *end = data + len;

	*n = 0;
	while ((size_t)(end - p) >= slen && (p = memmem(p, (size_t)(end - p), s, slen)) != NULL) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			at = xrealloc(at, cap * sizeof *at);
		}
		at[(*n)++] = (size_t)(p - data);
		p += slen;
	}
	return at;
}

/* Lines first..last of data, numbered as read_file numbers them. */
static void
show_lines(struct buf *out, const char *data, size_t len, long first, long last)
{
	long no = 1;
	size_t at = 0;

	while (at < len && no <= last) {
		const char *nl = memchr(data + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - data - at) : len - at;

		if (no >= first) {
			buf_printf(out, "%6ld\t", no);
			agent_utf8_append(out, data + at, n > 300 ? agent_utf8_cut(data + at, 300) : n);
			buf_appends(out, "\n");
		}
		at += n + 1;
		no++;
	}
}

/* The string argument name, or false with a failure in res. */
static bool
arg_string(const cJSON *args, const char *name, const char **out, struct tool_result *res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	if (!cJSON_IsString(v)) {
		tool_result_fail(res, "the argument \"%s\" must be a string", name);
		return false;
	}
	*out = v->valuestring;
	return true;
}

int
tool_edit_file(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(args, "replace_all");
	const char *from, *to;
	char *rel = NULL, *data, *why = NULL, *written = NULL;
	size_t got, flen, tlen, n, *at;
	struct stat st;
	struct buf out;
	long line;
	int fd;

	if (!arg_string(args, "old_string", &from, res) ||
	    !arg_string(args, "new_string", &to, res))
		return AGENT_OK;
	if (all != NULL && !cJSON_IsBool(all)) {
		tool_result_fail(res, "the argument \"replace_all\" must be true or false");
		return AGENT_OK;
	}
	if (from[0] == '\0') {
		tool_result_fail(res, "old_string is empty: to create a file, use write_file");
		return AGENT_OK;
	}
	if (strcmp(from, to) == 0) {
		tool_result_fail(res, "old_string and new_string are the same: nothing to change");
		return AGENT_OK;
	}
	if (!tool_open(ctx, args, NULL, O_RDONLY | O_NONBLOCK, &fd, &st, &rel, res))
		return AGENT_OK;
	if (!S_ISREG(st.st_mode) || st.st_size > EDIT_FILE_MAX) {
		tool_result_fail(res, S_ISREG(st.st_mode) ? "%s: larger than 8 MiB: use "
		    "run_command to change it" : "%s: not a regular file", rel);
		close(fd);
		free(rel);
		return AGENT_OK;
	}
	data = xmalloc((size_t)st.st_size + 1);
	got = agent_read_full(fd, data, (size_t)st.st_size);
	close(fd);
	data[got] = '\0';
	flen = strlen(from);
	tlen = strlen(to);
	at = occurrences(data, got, from, flen, &n);
	if (n == 0) {
		tool_result_fail(res, "%s: old_string was not found: it must match the file "
		    "exactly, whitespace and indentation included (read the file again)", rel);
	} else if (n > 1 && !cJSON_IsTrue(all)) {
		struct buf lines;

		buf_init(&lines, 0);
		for (size_t i = 0; i < n && i < EDIT_LINES_SHOWN; i++)
			buf_printf(&lines, "%s%ld", i ? ", " : "", line_of(data, at[i]));
		if (n > EDIT_LINES_SHOWN)
			buf_appends(&lines, ", ...");
		tool_result_fail(res, "%s: old_string matches %zu times (lines %s): include more "
		    "of the surrounding text to make it unique, or set replace_all to replace "
		    "every one", rel, n, lines.data);
		buf_free(&lines);
	} else {
		size_t len = got + n * tlen - n * flen, w = 0, prev = 0;
		enum wsfile_status ws;

		written = xmalloc(len + 1);
		for (size_t i = 0; i < n; i++) {
			memcpy(written + w, data + prev, at[i] - prev);
			w += at[i] - prev;
			memcpy(written + w, to, tlen);
			w += tlen;
			prev = at[i] + flen;
		}
		memcpy(written + w, data + prev, got - prev);
		written[len] = '\0';
		free(rel);
		rel = NULL;
		ws = wsfile_write(ctx->files, json_get_string(args, "path"), written, len, &rel,
		    &why);
		if (ws != WSFILE_OK) {
			tool_result_fail(res, "%s", why);
			free(why);
		} else {
			line = line_of(written, at[0]);
			buf_init(&out, 0);
			buf_printf(&out, "edited %s: replaced %zu occurrence%s (first at line %ld)\n",
			    rel, n, n == 1 ? "" : "s", line);
			show_lines(&out, written, len, line > EDIT_CONTEXT ? line - EDIT_CONTEXT : 1,
			    line_of(written, at[0] + tlen) + EDIT_CONTEXT);
			buf_append(&res->content, out.data, out.len);
			buf_free(&out);
			tool_result_summary(res, "edited %s (%zu replacement%s)", rel, n,
			    n == 1 ? "" : "s");
		}
	}
	free(at);
	free(data);
	free(written);
	free(rel);
	return AGENT_OK;
}

void
tool_describe_edit(const cJSON *args, char *out, size_t len)
{
	const char *p = json_get_string(args, "path");

	snprintf(out, len, "edit %s", p ? p : "?");
}
