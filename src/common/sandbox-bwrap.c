/* The arguments of bubblewrap for a sandbox policy (sandbox-int.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox-int.h"
#include "sandbox.h"
#include "xalloc.h"

void
sandbox_arg(struct sandbox_argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

void
sandbox_argv_free(struct sandbox_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

/* true when path is dir or below it. */
static bool
bwrap_path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* An empty directory (made read-only at the end, --remount-ro) or /dev/null over path. */
static void
bwrap_hide(struct sandbox_argv *a, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		sandbox_arg(a, "--tmpfs");
		sandbox_arg(a, path);
	} else {
		sandbox_arg(a, "--ro-bind");
		sandbox_arg(a, "/dev/null");
		sandbox_arg(a, path);
	}
}

/* true when path is hidden again after the workspace is bound: strictly inside it. */
static bool
bwrap_hidden_inside(const struct sandbox_policy *pol, const char *path)
{
	return pol->workspace != NULL && bwrap_path_within(path, pol->workspace) &&
	    strcmp(path, pol->workspace) != 0;
}

/*
 * true when hidden path i lies strictly inside another hidden path hidden in the
 * same step (both before the workspace is bound, or both after): the empty
 * directory over that one hides it already, and a mount at its place would be
 * covered, its read-only remount fail.  Any nesting, in any order, works.
 */
static bool
bwrap_hidden_covered(const struct sandbox_policy *pol, size_t i)
{
	const char *path = pol->hidden[i];

	for (size_t j = 0; pol->hidden[j] != NULL; j++)
		if (j != i && strcmp(pol->hidden[j], path) != 0 &&
		    bwrap_path_within(path, pol->hidden[j]) &&
		    bwrap_hidden_inside(pol, path) == bwrap_hidden_inside(pol, pol->hidden[j]))
			return true;
	return false;
}

#define TMP_TOPS_MAX 16

/* Adds the directory (or file) right under /tmp that holds path to tops, once. */
static void
bwrap_tmp_top_add(const char *path, char tops[][PATH_MAX], size_t *n)
{
	char top[PATH_MAX];
	size_t len;

	if (strncmp(path, "/tmp/", 5) != 0 || path[5] == '\0' || path[5] == '/')
		return;
	len = 5 + strcspn(path + 5, "/");
	if (len >= sizeof top || strstr(path, "/../") != NULL)
		return;
	memcpy(top, path, len);
	top[len] = '\0';
	if (strcmp(top + 5, "..") == 0 || strcmp(top + 5, ".") == 0)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(tops[i], top) == 0)
			return;
	if (*n < TMP_TOPS_MAX)
		memcpy(tops[(*n)++], top, len + 1);
}

/* path and, when it is a link, where it leads. */
static void
bwrap_tmp_top_both(const char *path, char tops[][PATH_MAX], size_t *n)
{
	char real[PATH_MAX];

	bwrap_tmp_top_add(path, tops, n);
	if (realpath(path, real) != NULL)
		bwrap_tmp_top_add(real, tops, n);
}

/*
 * The sandbox has a /tmp of its own, which would bwrap_hide a program that lives
 * under the host's /tmp (a checkout, a build or an npm cache there).  The
 * entry right under /tmp that holds one of the configured programs
 * (pol->programs) or a directory of PATH is bound read-only at its place; what
 * is hidden is hidden after it, and the private directories (pol->dirs) are
 * left alone.  The command's arguments are not looked at: run_command's are a
 * model's text, and a mount must not depend on what a model writes.
 */
static void
bwrap_tmp_tops(struct sandbox_argv *a, const struct sandbox_policy *pol, char *const envp[])
{
	char (*tops)[PATH_MAX] = xcalloc(TMP_TOPS_MAX, sizeof *tops);
	size_t n = 0;
	struct stat st;

	for (size_t i = 0; pol->programs != NULL && pol->programs[i] != NULL; i++)
		if (pol->programs[i][0] == '/')
			bwrap_tmp_top_both(pol->programs[i], tops, &n);
	for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
		const char *p = envp[i];

		if (strncmp(p, "PATH=", 5) != 0)
			continue;
		for (p += 5; *p != '\0';) {
			char dir[PATH_MAX];
			size_t len = strcspn(p, ":");

			if (len < sizeof dir) {
				memcpy(dir, p, len);
				dir[len] = '\0';
				bwrap_tmp_top_both(dir, tops, &n);
			}
			p += len;
			if (*p == ':')
				p++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool private = false;

		for (size_t k = 0; pol->dirs != NULL && pol->dirs[k] != NULL; k++)
			if (bwrap_path_within(pol->dirs[k], tops[i]) || bwrap_path_within(tops[i], pol->dirs[k]))
				private = true;
		if (private || stat(tops[i], &st) != 0)
			continue;
		sandbox_arg(a, "--ro-bind");
		sandbox_arg(a, tops[i]);
		sandbox_arg(a, tops[i]);
	}
	free(tops);
}

/* The namespaces and the filter of a non-full-access profile. */
static void
bwrap_unshare(struct sandbox_argv *a, const struct sandbox_policy *pol, bool seccomp)
{
	sandbox_arg(a, "--unshare-user");
	sandbox_arg(a, "--disable-userns");
	sandbox_arg(a, "--unshare-ipc");
	sandbox_arg(a, "--unshare-uts");
	sandbox_arg(a, "--unshare-cgroup-try");
	if (!pol->network)
		sandbox_arg(a, "--unshare-net");
	sandbox_arg(a, "--cap-drop");
	sandbox_arg(a, "ALL");
	if (seccomp) {
		char fd[16];

		snprintf(fd, sizeof fd, "%d", SECCOMP_CHILD_FD);
		sandbox_arg(a, "--seccomp");
		sandbox_arg(a, fd);
	}
}

/* The system read-only, a private /dev, /proc, /tmp and /dev/shm. */
static void
bwrap_system(struct sandbox_argv *a, const struct sandbox_policy *pol)
{
	sandbox_arg(a, "--ro-bind");
	sandbox_arg(a, "/");
	sandbox_arg(a, "/");
	sandbox_arg(a, "--dev");
	sandbox_arg(a, "/dev");
	sandbox_arg(a, "--proc");
	sandbox_arg(a, "/proc");
	for (int i = 0; i < 2; i++) {
		if (pol->limits != NULL && pol->limits->tmp_size > 0) {
			char size[32];

			snprintf(size, sizeof size, "%lld", pol->limits->tmp_size);
			sandbox_arg(a, "--size");
			sandbox_arg(a, size);
		}
		sandbox_arg(a, "--tmpfs");
		sandbox_arg(a, i == 0 ? "/tmp" : "/dev/shm");
	}
}

/*
 * Everything hidden, then the workspace, then what is hidden inside it; the
 * policy's own paths, then what is hidden inside them; last the hidden
 * directories made read-only.
 */
static void
bwrap_hidden(struct sandbox_argv *a, const struct sandbox_policy *pol)
{
	size_t nhidden = 0;
	bool *covered;

	for (size_t i = 0; pol->hidden != NULL && pol->hidden[i] != NULL; i++)
		nhidden = i + 1;
	covered = xcalloc(nhidden + 1, sizeof *covered);
	for (size_t i = 0; i < nhidden; i++)
		covered[i] = bwrap_hidden_covered(pol, i);
	for (size_t i = 0; i < nhidden; i++)
		if (!bwrap_hidden_inside(pol, pol->hidden[i]) && !covered[i])
			bwrap_hide(a, pol->hidden[i]);
	if (pol->workspace != NULL) {
		sandbox_arg(a, pol->profile == SANDBOX_WORKSPACE_WRITE ? "--bind" : "--ro-bind");
		sandbox_arg(a, pol->workspace);
		sandbox_arg(a, pol->workspace);
		for (size_t i = 0; i < nhidden; i++)
			if (bwrap_hidden_inside(pol, pol->hidden[i]) && !covered[i])
				bwrap_hide(a, pol->hidden[i]);
	}
	for (int w = 0; w < 2; w++) {
		const char *const *list = w == 0 ? pol->rw_paths : pol->ro_paths;

		for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
			sandbox_arg(a, w == 0 ? "--bind" : "--ro-bind");
			sandbox_arg(a, list[i]);
			sandbox_arg(a, list[i]);
			for (size_t k = 0; k < nhidden; k++)
				if (bwrap_path_within(pol->hidden[k], list[i]) &&
				    strcmp(pol->hidden[k], list[i]) != 0)
					bwrap_hide(a, pol->hidden[k]);
		}
	}
	/* Not recursive: a workspace bound below a hidden directory stays as bound. */
	for (size_t i = 0; i < nhidden; i++) {
		struct stat st;

		if (!covered[i] && stat(pol->hidden[i], &st) == 0 &&
		    S_ISDIR(st.st_mode) && (pol->workspace == NULL ||
		    strcmp(pol->hidden[i], pol->workspace) != 0)) {
			sandbox_arg(a, "--remount-ro");
			sandbox_arg(a, pol->hidden[i]);
		}
	}
	free(covered);
}

/* A program's private state (docs/frameworks.md), in the private /tmp. */
static void
bwrap_private_state(struct sandbox_argv *a, const struct sandbox_policy *pol)
{
	for (size_t i = 0; pol->dirs != NULL && pol->dirs[i] != NULL; i++) {
		sandbox_arg(a, "--perms");
		sandbox_arg(a, "0700");
		sandbox_arg(a, "--dir");
		sandbox_arg(a, pol->dirs[i]);
	}
	for (size_t i = 0; pol->ro_binds != NULL && pol->ro_binds[i] != NULL &&
	    pol->ro_binds[i + 1] != NULL; i += 2) {
		sandbox_arg(a, "--ro-bind-try");
		sandbox_arg(a, pol->ro_binds[i]);
		sandbox_arg(a, pol->ro_binds[i + 1]);
	}
}

void
sandbox_bwrap_args(struct sandbox_argv *a, const char *bwrap, const struct sandbox_policy *pol,
    const char *cwd, bool seccomp, char *const envp[])
{
	sandbox_arg(a, bwrap);
	sandbox_arg(a, "--die-with-parent");
	sandbox_arg(a, "--new-session");
	sandbox_arg(a, "--unshare-pid");
	if (pol->profile == SANDBOX_FULL_ACCESS) {
		sandbox_arg(a, "--dev-bind");
		sandbox_arg(a, "/");
		sandbox_arg(a, "/");
		sandbox_arg(a, "--proc");
		sandbox_arg(a, "/proc");
	} else {
		bwrap_unshare(a, pol, seccomp);
		bwrap_system(a, pol);
		bwrap_tmp_tops(a, pol, envp);
		bwrap_hidden(a, pol);
		bwrap_private_state(a, pol);
	}
	sandbox_arg(a, "--chdir");
	sandbox_arg(a, cwd != NULL ? cwd : "/");
	sandbox_arg(a, "--");
}
