/*
 * The .gitignore files a walk honours (changes-int.h): the common subset
 * (globs, !, dir/, anchored, leading **), the patterns of each directory's
 * file in force below it.
 */
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changes-int.h"
#include "wsfile.h"
#include "xalloc.h"

#define WALK_IGNORE_MAX_BYTES (64 * 1024)

struct changes_ignore_pattern {
	char *pat;
	char *base;		/* the directory of its .gitignore, "" for the root */
	bool negate, dir_only, anchored, deep;
};

void
changes_ignore_load(struct changes_ignore *ig, const struct wsfile_root *root, int dirfd,
    const char *base)
{
	int fd = openat(dirfd, ".gitignore", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *text, *line, *save = NULL;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > WALK_IGNORE_MAX_BYTES ||
	    wsfile_is_hidden(root, &st)) {
		close(fd);
		return;
	}
	text = xmalloc((size_t)st.st_size + 1);
	n = read(fd, text, (size_t)st.st_size);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct changes_ignore_pattern p = { 0 };
		size_t len = strlen(line);

		while (len > 0 && (line[len - 1] == '\r' || (line[len - 1] == ' ' &&
		    (len < 2 || line[len - 2] != '\\'))))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		if (line[0] == '!') {
			p.negate = true;
			line++;
			len--;
		}
		if (len > 0 && line[len - 1] == '/') {
			p.dir_only = true;
			line[--len] = '\0';
		}
		if (strncmp(line, "**/", 3) == 0) {
			line += 3;
			len -= 3;
		}
		if (len == 0)
			continue;
		p.anchored = strchr(line, '/') != NULL;
		if (line[0] == '/')
			line++;
		p.deep = strstr(line, "**") != NULL;
		p.pat = xstrdup(line);
		p.base = xstrdup(base);
		if (ig->n == ig->cap) {
			ig->cap = ig->cap ? ig->cap * 2 : 16;
			ig->pats = xrealloc(ig->pats, ig->cap * sizeof *ig->pats);
		}
		ig->pats[ig->n++] = p;
	}
	free(text);
}

void
changes_ignore_pop(struct changes_ignore *ig, size_t keep)
{
	while (ig->n > keep) {
		ig->n--;
		free(ig->pats[ig->n].pat);
		free(ig->pats[ig->n].base);
	}
}

void
changes_ignore_free(struct changes_ignore *ig)
{
	changes_ignore_pop(ig, 0);
	free(ig->pats);
	ig->pats = NULL;
	ig->cap = 0;
}

/* Whether rel (name its last component) is ignored by the patterns in force. */
bool
changes_ignored(const struct changes_ignore *ig, const char *rel, const char *name, bool dir)
{
	bool ignored = false;

	for (size_t i = 0; i < ig->n; i++) {
		const struct changes_ignore_pattern *p = &ig->pats[i];
		const char *sub = rel;
		size_t bl = strlen(p->base);

		if (p->dir_only && !dir)
			continue;
		if (bl > 0)
			sub = rel + bl + 1;
		if (p->anchored ? fnmatch(p->pat, sub, p->deep ? 0 : FNM_PATHNAME) == 0 :
		    fnmatch(p->pat, name, 0) == 0)
			ignored = !p->negate;
	}
	return ignored;
}

