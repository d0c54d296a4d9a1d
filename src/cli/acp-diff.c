/*
 * The text a file had before a run changed it, for the diffs of `taskdeck acp`
 * (cmd-acp.c): the run's unified diff of the file (GET /runs/{id}/changes/diff)
 * applied backwards to the file as it is now.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "xalloc.h"

/* One line of text: its bytes without the line break, and whether it had one. */
struct acp_line {
	const char *at;
	size_t len;
	bool nl;
};

/* text split at '\n' into *lines (malloc'd); the count. */
static size_t
acp_diff_lines(const char *text, struct acp_line **lines)
{
	size_t n = 0, cap = 64;
	const char *p = text;

	*lines = xmalloc(cap * sizeof **lines);
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');

		if (n == cap) {
			cap *= 2;
			*lines = xrealloc(*lines, cap * sizeof **lines);
		}
		(*lines)[n].at = p;
		(*lines)[n].len = nl ? (size_t)(nl - p) : strlen(p);
		(*lines)[n].nl = nl != NULL;
		n++;
		p = nl ? nl + 1 : p + strlen(p);
	}
	return n;
}

static void
acp_diff_put(struct buf *b, const struct acp_line *l)
{
	buf_append(b, l->at, l->len);
	if (l->nl)
		buf_appends(b, "\n");
}

/* "@@ -a[,b] +c[,d] @@": the new side's start and count. */
static bool
acp_diff_hunk(const struct acp_line *l, long *start, long *count)
{
	const char *plus;
	char *end;

	if (l->len < 4 || strncmp(l->at, "@@ -", 4) != 0 ||
	    (plus = memchr(l->at, '+', l->len)) == NULL)
		return false;
	*start = strtol(plus + 1, &end, 10);
	*count = *end == ',' ? strtol(end + 1, &end, 10) : 1;
	return *start >= 0 && *count >= 0;
}

char *
acp_diff_old_text(const char *new_text, const char *diff, bool *added)
{
	struct acp_line *nl, *dl;
	size_t nn = acp_diff_lines(new_text, &nl), dn = acp_diff_lines(diff, &dl), pos = 0, i = 0;
	struct buf old;
	bool ok = true, hunks = false;

	*added = false;
	buf_init(&old, 0);
	for (; i < dn && !(dl[i].len >= 2 && strncmp(dl[i].at, "@@", 2) == 0); i++) {
		if ((dl[i].len >= 13 && strncmp(dl[i].at, "new file mode", 13) == 0) ||
		    (dl[i].len == 13 && strncmp(dl[i].at, "--- /dev/null", 13) == 0))
			*added = true;
		if ((dl[i].len >= 12 && strncmp(dl[i].at, "Binary files", 12) == 0) ||
		    (dl[i].len >= 17 && strncmp(dl[i].at, "deleted file mode", 17) == 0))
			ok = false;
	}
	while (ok && i < dn) {
		long start, count;
		size_t first;
		char last = 0;

		if (!acp_diff_hunk(&dl[i], &start, &count)) {
			ok = false;
			break;
		}
		hunks = true;
		first = count == 0 ? (size_t)start : (size_t)(start > 0 ? start - 1 : 0);
		if (first < pos || first > nn) {
			ok = false;
			break;
		}
		for (; pos < first; pos++)
			acp_diff_put(&old, &nl[pos]);
		for (i++; ok && i < dn && !(dl[i].len >= 2 && strncmp(dl[i].at, "@@", 2) == 0); i++) {
			const struct acp_line *l = &dl[i];
			struct acp_line body = { l->at + 1, l->len ? l->len - 1 : 0, true };

			if (l->len == 0)
				continue;
			switch (l->at[0]) {
			case ' ':
			case '+':
				/* The file now must be what the diff says it is. */
				if (pos >= nn || nl[pos].len != body.len ||
				    memcmp(nl[pos].at, body.at, body.len) != 0) {
					ok = false;
					break;
				}
				if (l->at[0] == ' ')
					acp_diff_put(&old, &body);
				pos++;
				break;
			case '-':
				acp_diff_put(&old, &body);
				break;
			case '\\':	/* "\ No newline at end of file" of the line before */
				if ((last == '-' || last == ' ') && old.len > 0 &&
				    old.data[old.len - 1] == '\n')
					old.data[--old.len] = '\0';
				break;
			default:
				ok = false;
			}
			last = l->at[0];
		}
	}
	for (; ok && pos < nn; pos++)
		acp_diff_put(&old, &nl[pos]);
	free(nl);
	free(dl);
	if (!ok || (!hunks && !*added)) {
		buf_free(&old);
		return NULL;
	}
	if (old.data == NULL) {
		buf_free(&old);
		return xstrdup("");
	}
	return buf_steal(&old);
}
