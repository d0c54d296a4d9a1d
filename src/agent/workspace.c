#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "workspace.h"
#include "xalloc.h"

static bool
ws_fail(char **why, const char *path, const char *what)
{
	*why = xasprintf("%.200s: %s", path, what);
	return false;
}

/* Whether the canonical path p is root or below it. */
static bool
ws_inside(const char *root, const char *p)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* Joins path to root (unless absolute) and folds ".", ".." and "//". */
static char *
ws_lexical(const char *root, const char *path)
{
	char *joined = path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", root, path);
	char *out = xmalloc(strlen(joined) + 2);
	size_t len = 0;
	char *save = NULL;

	for (char *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		out[len++] = '/';
		memcpy(out + len, c, strlen(c));
		len += strlen(c);
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	free(joined);
	return out;
}

/*
 * realpath() of the longest existing prefix of lex, with the missing rest
 * appended.  A missing component that is a dangling symbolic link is refused.
 */
static char *
ws_real(const char *lex, const char **what)
{
	char *head = xstrdup(lex);
	struct buf rest;
	char real[PATH_MAX];
	char *out = NULL;

	buf_init(&rest, 0);
	for (;;) {
		char *slash;
		struct stat st;

		if (realpath(head, real) != NULL)
			break;
		if (errno != ENOENT && errno != ENOTDIR) {
			*what = errno == ELOOP ? "has a loop of symbolic links" :
			    "cannot be resolved";
			goto out;
		}
		if (lstat(head, &st) == 0 && S_ISLNK(st.st_mode)) {
			*what = "is a symbolic link that points nowhere";
			goto out;
		}
		slash = strrchr(head, '/');
		if (slash == NULL) {
			*what = "cannot be resolved";
			goto out;
		}
		{
			char *tail = xasprintf("%s%s", slash, rest.data ? rest.data : "");

			buf_reset(&rest);
			buf_appends(&rest, tail);
			free(tail);
		}
		if (slash == head)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	if (strcmp(real, "/") == 0 && rest.len > 0)
		out = xstrdup(rest.data);
	else
		out = xasprintf("%s%s", real, rest.data ? rest.data : "");
out:
	buf_free(&rest);
	free(head);
	return out;
}

bool
workspace_resolve(const char *root, const char *path,
    struct workspace_path *out, char **why)
{
	char *lex, *real;
	const char *what = NULL;
	bool lex_inside;

	out->abs = out->rel = NULL;
	*why = NULL;
	if (path == NULL || path[0] == '\0')
		return ws_fail(why, "(empty)", "the path is empty");
	if (strlen(path) >= PATH_MAX)
		return ws_fail(why, path, "the path is too long");
	lex = ws_lexical(root, path);
	lex_inside = ws_inside(root, lex);
	if (!lex_inside && path[0] != '/') {
		free(lex);
		return ws_fail(why, path, "escapes the workspace (\"..\" above its root)");
	}
	real = ws_real(lex, &what);
	free(lex);
	if (real == NULL)
		return ws_fail(why, path, what);
	if (strlen(real) >= PATH_MAX) {
		free(real);
		return ws_fail(why, path, "the path is too long");
	}
	if (!ws_inside(root, real)) {
		free(real);
		return ws_fail(why, path, lex_inside ?
		    "leads outside the workspace through a symbolic link" :
		    "is outside the workspace");
	}
	out->abs = real;
	if (strcmp(real, root) == 0)
		out->rel = xstrdup(".");
	else
		out->rel = xstrdup(real + (strcmp(root, "/") == 0 ? 1 : strlen(root) + 1));
	return true;
}

void
workspace_path_free(struct workspace_path *p)
{
	free(p->abs);
	free(p->rel);
	p->abs = p->rel = NULL;
}

bool
workspace_mkdirs(const char *root, const char *rel_dir)
{
	char *path = xasprintf("%s/%s", root, rel_dir);
	size_t start = strlen(root) + 1;
	bool ok = true;

	for (size_t i = start;; i++) {
		char c = path[i];
		struct stat st;

		if (c != '/' && c != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) != 0) {
			/* An existing component must be a real directory, not a link. */
			if (errno != EEXIST || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
				if (errno == EEXIST)
					errno = ENOTDIR;
				ok = false;
				break;
			}
		}
		path[i] = c;
		if (c == '\0')
			break;
	}
	free(path);
	return ok;
}
