/*
 * Workspace files through descriptors (wsfile.h, docs/agent.md "The file tools").
 *
 * A path is folded lexically ("." and ".." removed; ".." above the root is an
 * escape), split into its directory and its last name, and the directory is
 * opened by openat2 beneath the workspace's descriptor.  The last name is
 * opened from that directory without following a symbolic link; a link there
 * is read and its target resolved again from the workspace (at most
 * WSFILE_HOPS times), so the directory that holds the opened object is always
 * known as a descriptor.  The hidden check walks ".." from it to the root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "ids.h"
#include "wsfile.h"
#include "xalloc.h"

#define WSFILE_HOPS 40		/* symbolic links followed, as the kernel's MAXSYMLINKS */
#define WSFILE_DEPTH 4096	/* directories walked up to the root */
#define WSFILE_RETRIES 64	/* EAGAIN from openat2 (a rename raced with "..") */
#define WSFILE_SCAN_MAX 50000	/* entries of hidden directories looked at for hard links */
#define WSFILE_SCAN_DEPTH 32

#define WSFILE_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
#define WSFILE_RESOLVE_NAME (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)

struct wsfile_id {
	dev_t dev;
	ino_t ino;
};

struct wsfile_root {
	char *path;		/* canonical, as given */
	int fd;			/* O_PATH descriptor of the workspace directory */
	struct wsfile_id id;
	struct wsfile_id *hidden;	/* sorted */
	size_t nhidden;
	char **dirs;		/* the hidden directories, for ws_linked */
	size_t ndirs;
	/* the multiply linked files inside them: found once, on the first need */
	pthread_mutex_t links_mu;	/* the agent's read-only tools run in threads */
	enum { LINKS_UNKNOWN, LINKS_ALL, LINKS_SOME } links;
	struct wsfile_id *linked;	/* sorted */
	size_t nlinked;
};

static int
id_cmp(const void *a, const void *b)
{
	const struct wsfile_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static bool
id_is(const struct stat *st, struct wsfile_id id)
{
	return st->st_dev == id.dev && st->st_ino == id.ino;
}

static int
ws_openat2(int dirfd, const char *path, int oflags, mode_t mode, unsigned long long resolve)
{
	/* openat2 refuses O_PATH with any flag but O_DIRECTORY and O_CLOEXEC. */
	struct open_how how = {
		.flags = (unsigned long long)(oflags | O_CLOEXEC | ((oflags & O_PATH) ? 0 : O_NOCTTY)),
		.mode = (oflags & O_CREAT) ? mode : 0,
		.resolve = resolve,
	};
	long fd;

	for (int i = 0; i < WSFILE_RETRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	return (int)fd;
}

struct wsfile_root *
wsfile_root_open(const char *workspace, const char *const *hidden, char **why)
{
	struct wsfile_root *r;
	struct stat st;
	int fd;

	*why = NULL;
	fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		*why = xasprintf("the workspace %s cannot be opened: %s", workspace,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	/* A probe: without openat2 there is no safe resolution, so no file tools. */
	{
		int probe = ws_openat2(fd, ".", O_PATH | O_DIRECTORY, 0, WSFILE_RESOLVE);

		if (probe < 0) {
			*why = xasprintf("the file tools need openat2 (Linux 5.6 or later): %s",
			    strerror(errno));
			close(fd);
			return NULL;
		}
		close(probe);
	}
	r = xcalloc(1, sizeof *r);
	r->path = xstrdup(workspace);
	r->fd = fd;
	r->id = (struct wsfile_id){ st.st_dev, st.st_ino };
	pthread_mutex_init(&r->links_mu, NULL);
	for (size_t i = 0; hidden != NULL && hidden[i] != NULL; i++) {
		struct stat hs;

		if (stat(hidden[i], &hs) != 0)
			continue;
		r->hidden = xrealloc(r->hidden, (r->nhidden + 1) * sizeof *r->hidden);
		r->hidden[r->nhidden++] = (struct wsfile_id){ hs.st_dev, hs.st_ino };
		/* The workspace bound over a hidden directory: its own files are not hidden. */
		if (S_ISDIR(hs.st_mode) && !id_is(&hs, r->id)) {
			r->dirs = xrealloc(r->dirs, (r->ndirs + 1) * sizeof *r->dirs);
			r->dirs[r->ndirs++] = xstrdup(hidden[i]);
		}
	}
	if (r->nhidden > 1)
		qsort(r->hidden, r->nhidden, sizeof *r->hidden, id_cmp);
	return r;
}

void
wsfile_root_ident(const struct wsfile_root *r, dev_t *dev, ino_t *ino)
{
	*dev = r->id.dev;
	*ino = r->id.ino;
}

void
wsfile_root_free(struct wsfile_root *r)
{
	if (r == NULL)
		return;
	close(r->fd);
	free(r->hidden);
	for (size_t i = 0; i < r->ndirs; i++)
		free(r->dirs[i]);
	free(r->dirs);
	free(r->linked);
	free(r->path);
	pthread_mutex_destroy(&r->links_mu);
	free(r);
}

bool
wsfile_is_hidden(const struct wsfile_root *r, const struct stat *st)
{
	struct wsfile_id key = { st->st_dev, st->st_ino };

	/* The workspace itself is what the sandbox binds over a hidden directory. */
	if (id_is(st, r->id))
		return false;
	return r->nhidden > 0 && bsearch(&key, r->hidden, r->nhidden, sizeof key, id_cmp) != NULL;
}

static enum wsfile_status
ws_fail(char **why, const char *shown, enum wsfile_status status, const char *what)
{
	*why = xasprintf("%.300s: %s", shown, what);
	return status;
}

static enum wsfile_status
ws_fail_errno(char **why, const char *shown, int err)
{
	switch (err) {
	case EXDEV:
		return ws_fail(why, shown, WSFILE_ESCAPES, "path escapes the workspace");
	case ELOOP:
		return ws_fail(why, shown, WSFILE_FAILED, "too many symbolic links");
	case ENOENT:
		return ws_fail(why, shown, WSFILE_MISSING, "no such file or directory");
	case ENOTDIR:
		return ws_fail(why, shown, WSFILE_FAILED, "a component is not a directory");
	default:
		return ws_fail(why, shown, WSFILE_FAILED, strerror(err));
	}
}

/*
 * path relative to the root with ".", ".." and "//" folded: "." for the root,
 * NULL when ".." climbs above it.  An absolute path must name the root or a
 * path below it.
 */
static char *
ws_fold(const struct wsfile_root *r, const char *path)
{
	const char *rest = path;
	char *copy, *out, *save = NULL;
	size_t len = 0;

	if (path[0] == '/') {
		size_t n = strlen(r->path);

		if (strcmp(r->path, "/") == 0)
			rest = path + 1;
		else if (strncmp(path, r->path, n) == 0 && (path[n] == '/' || path[n] == '\0'))
			rest = path + n;
		else
			return NULL;
	}
	copy = xstrdup(rest);
	out = xmalloc(strlen(rest) + 2);
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			if (len == 0) {
				free(copy);
				free(out);
				return NULL;
			}
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		if (len > 0)
			out[len++] = '/';
		memcpy(out + len, c, strlen(c));
		len += strlen(c);
	}
	free(copy);
	if (len == 0)
		out[len++] = '.';
	out[len] = '\0';
	return out;
}

/* The checks every path gets before the kernel sees it; *rel folded (malloc'd). */
static enum wsfile_status
ws_prepare(const struct wsfile_root *r, const char *path, char **rel, char **why)
{
	*rel = NULL;
	*why = NULL;
	if (path == NULL || path[0] == '\0')
		return ws_fail(why, "(empty)", WSFILE_INVALID, "the path is empty");
	if (strlen(path) >= PATH_MAX)
		return ws_fail(why, path, WSFILE_INVALID, "the path is too long");
	*rel = ws_fold(r, path);
	if (*rel == NULL)
		return ws_fail(why, path, WSFILE_ESCAPES, "path escapes the workspace");
	return WSFILE_OK;
}

/*
 * Whether the directory dirfd lies below the workspace root, and no directory
 * from it up to the root (the root excluded) is hidden.  The walk follows the
 * kernel's "..", the real parent of each opened directory.
 */
static enum wsfile_status
ws_check_dir(const struct wsfile_root *r, int dirfd)
{
	int cur = dirfd;
	enum wsfile_status status = WSFILE_ESCAPES;

	for (int depth = 0; depth < WSFILE_DEPTH; depth++) {
		struct stat st, up_st;
		int up;

		if (fstat(cur, &st) != 0) {
			status = WSFILE_FAILED;
			break;
		}
		if (id_is(&st, r->id)) {
			status = WSFILE_OK;
			break;
		}
		if (wsfile_is_hidden(r, &st)) {
			status = WSFILE_HIDDEN;
			break;
		}
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 || fstat(up, &up_st) != 0) {
			if (up >= 0)
				close(up);
			status = WSFILE_FAILED;
			break;
		}
		if (cur != dirfd)
			close(cur);
		cur = up;
		if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino)
			break;	/* the system's root: not below the workspace */
	}
	if (cur != dirfd)
		close(cur);
	return status;
}

/* Splits rel ("a/b/c" or "c") into a directory ("a/b" or ".") and a name. */
static void
ws_split(const char *rel, char **dir, const char **name)
{
	const char *slash = strrchr(rel, '/');

	if (slash == NULL) {
		*dir = xstrdup(".");
		*name = rel;
	} else {
		*dir = xstrndup(rel, (size_t)(slash - rel));
		*name = slash + 1;
	}
}

/*
 * The next path to try after the name of dir is a symbolic link with target,
 * folded relative to the root; NULL when it leads outside.
 */
static char *
ws_follow(const struct wsfile_root *r, const char *dir, const char *target)
{
	char *joined, *out;

	if (target[0] == '/')
		return ws_fold(r, target);
	joined = strcmp(dir, ".") == 0 ? xstrdup(target) : xasprintf("%s/%s", dir, target);
	out = ws_fold(r, joined);
	free(joined);
	return out;
}

/* Opens the directory part of rel beneath the root; -1 with errno. */
static int
ws_open_dir(const struct wsfile_root *r, const char *dir)
{
	return ws_openat2(r->fd, dir, O_PATH | O_DIRECTORY, 0, WSFILE_RESOLVE);
}

static enum wsfile_status
ws_check_object(const struct wsfile_root *r, int dirfd, const struct stat *st,
    const char *shown, char **why)
{
	enum wsfile_status status = ws_check_dir(r, dirfd);

	if (status == WSFILE_OK && wsfile_is_hidden(r, st))
		status = WSFILE_HIDDEN;
	switch (status) {
	case WSFILE_OK:
		return WSFILE_OK;
	case WSFILE_HIDDEN:
		return ws_fail(why, shown, status, "path is hidden");
	case WSFILE_ESCAPES:
		return ws_fail(why, shown, status, "path escapes the workspace");
	default:
		return ws_fail(why, shown, WSFILE_FAILED, "cannot check where the path leads");
	}
}

/*
 * Collects the regular files with more than one link below the directory dirfd
 * (closed here), without following links or entering the workspace itself; false
 * once *budget entries have been looked at.
 */
static bool
ws_scan(struct wsfile_root *r, int dirfd, int depth, long *budget)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;
	bool whole = true;

	if (d == NULL) {
		close(dirfd);
		return true;	/* unreadable to the agent: nothing in it can be read either */
	}
	while (whole && (e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (--*budget < 0) {
			whole = false;
			break;
		}
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
			/* capacity: the powers of two */
			if ((r->nlinked & (r->nlinked - 1)) == 0)
				r->linked = xrealloc(r->linked, (r->nlinked ? r->nlinked * 2 : 1) *
				    sizeof *r->linked);
			r->linked[r->nlinked++] = (struct wsfile_id){ st.st_dev, st.st_ino };
		} else if (S_ISDIR(st.st_mode) && !id_is(&st, r->id)) {
			int sub;

			if (depth >= WSFILE_SCAN_DEPTH) {
				whole = false;
				break;
			}
			sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
			if (sub >= 0)
				whole = ws_scan(r, sub, depth + 1, budget);
		}
	}
	closedir(d);
	return whole;
}

/*
 * Whether a file with more than one link may be a hard link to a file inside a
 * hidden directory: one of the files found there, or the search was cut short.
 */
static bool
ws_linked(struct wsfile_root *r, const struct stat *st)
{
	struct wsfile_id key = { st->st_dev, st->st_ino };
	bool linked;

	if (!S_ISREG(st->st_mode) || st->st_nlink < 2 || r->ndirs == 0)
		return false;
	pthread_mutex_lock(&r->links_mu);
	if (r->links == LINKS_UNKNOWN) {
		long budget = WSFILE_SCAN_MAX;
		bool whole = true;

		for (size_t i = 0; whole && i < r->ndirs; i++) {
			int fd = open(r->dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0)
				whole = ws_scan(r, fd, 0, &budget);
		}
		if (r->nlinked > 1)
			qsort(r->linked, r->nlinked, sizeof *r->linked, id_cmp);
		r->links = whole ? LINKS_ALL : LINKS_SOME;
	}
	linked = r->links == LINKS_SOME ||
	    (r->nlinked > 0 && bsearch(&key, r->linked, r->nlinked, sizeof key, id_cmp) != NULL);
	pthread_mutex_unlock(&r->links_mu);
	return linked;
}

bool
wsfile_is_linked(struct wsfile_root *r, const struct stat *st)
{
	return ws_linked(r, st);
}

enum wsfile_status
wsfile_open(struct wsfile_root *r, const char *path, int oflags, int *fd, struct stat *st,
    char **rel, char **why)
{
	enum wsfile_status status = ws_prepare(r, path, rel, why);
	char *cur = *rel;

	*fd = -1;
	if (status != WSFILE_OK)
		return status;
	*rel = NULL;
	for (int hop = 0; hop <= WSFILE_HOPS; hop++) {
		char *dir, *next, target[PATH_MAX];
		const char *name;
		int dfd, ofd;
		ssize_t n;

		if (strcmp(cur, ".") == 0) {
			/* The root itself: nothing between it and itself to check. */
			ofd = ws_openat2(r->fd, ".", oflags, 0, WSFILE_RESOLVE);
			if (ofd < 0 || fstat(ofd, st) != 0) {
				status = ws_fail_errno(why, path, errno);
				if (ofd >= 0)
					close(ofd);
				break;
			}
			*fd = ofd;
			*rel = cur;
			return WSFILE_OK;
		}
		ws_split(cur, &dir, &name);
		dfd = ws_open_dir(r, dir);
		if (dfd < 0) {
			status = ws_fail_errno(why, path, errno);
			free(dir);
			break;
		}
		ofd = ws_openat2(dfd, name, oflags, 0, WSFILE_RESOLVE_NAME);
		if (ofd >= 0) {
			if (fstat(ofd, st) != 0)
				status = ws_fail_errno(why, path, errno);
			else
				status = ws_check_object(r, dfd, st, path, why);
			if (status == WSFILE_OK && ws_linked(r, st))
				status = ws_fail(why, path, WSFILE_HIDDEN, "path is hidden (a hard "
				    "link to a file in a hidden directory, or one the agent cannot "
				    "tell apart)");
			close(dfd);
			free(dir);
			if (status != WSFILE_OK) {
				close(ofd);
				break;
			}
			*fd = ofd;
			*rel = cur;
			return WSFILE_OK;
		}
		if (errno != ELOOP || (n = readlinkat(dfd, name, target, sizeof target - 1)) < 0) {
			status = ws_fail_errno(why, path, errno == EINVAL ? ELOOP : errno);
			close(dfd);
			free(dir);
			break;
		}
		target[n] = '\0';
		/* The link itself may be in a hidden directory: its target must not tell. */
		{
			struct stat dst;

			status = fstat(dfd, &dst) == 0 ? ws_check_object(r, dfd, &dst, path, why) :
			    ws_fail_errno(why, path, errno);
		}
		close(dfd);
		next = status == WSFILE_OK ? ws_follow(r, dir, target) : NULL;
		free(dir);
		if (status != WSFILE_OK)
			break;
		if (next == NULL) {
			status = ws_fail(why, path, WSFILE_ESCAPES, "path escapes the workspace "
			    "(through a symbolic link)");
			break;
		}
		free(cur);
		cur = next;
		if (hop == WSFILE_HOPS)
			status = ws_fail(why, path, WSFILE_FAILED, "too many symbolic links");
	}
	free(cur);
	return status;
}

int
wsfile_open_subdir(const struct wsfile_root *r, int dirfd, const char *name)
{
	int fd = ws_openat2(dirfd, name, O_RDONLY | O_DIRECTORY, 0, WSFILE_RESOLVE_NAME);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || wsfile_is_hidden(r, &st)) {
		close(fd);
		errno = EACCES;
		return -1;
	}
	return fd;
}

/*
 * The directory dir (folded, relative to the root) opened as O_PATH, made
 * where missing, one component at a time from the deepest one that exists,
 * which is checked before anything is made below it.  -1 with *status and *why set.
 */
static int
ws_make_dirs(const struct wsfile_root *r, const char *dir, const char *shown,
    enum wsfile_status *status, char **why)
{
	char *path = xstrdup(dir);
	char *split = NULL;
	int fd;
	struct stat st;

	/* Back up to the deepest directory that opens. */
	for (;;) {
		fd = ws_open_dir(r, path);
		if (fd >= 0 || errno != ENOENT)
			break;
		split = strrchr(path, '/');
		if (split == NULL) {
			fd = ws_openat2(r->fd, ".", O_PATH | O_DIRECTORY, 0, WSFILE_RESOLVE);
			free(path);
			path = xstrdup(".");
			break;
		}
		*split = '\0';
	}
	if (fd < 0) {
		*status = ws_fail_errno(why, shown, errno);
		free(path);
		return -1;
	}
	*status = fstat(fd, &st) == 0 ? ws_check_object(r, fd, &st, shown, why) :
	    ws_fail_errno(why, shown, errno);
	if (*status != WSFILE_OK) {
		close(fd);
		free(path);
		return -1;
	}
	/* Then make the rest, each opened from its parent without following links. */
	{
		size_t done = strcmp(path, ".") == 0 ? 0 : strlen(path) + 1;
		char *rest = strcmp(path, dir) == 0 ? xstrdup("") : xstrdup(dir + done);
		char *save = NULL;

		for (char *c = strtok_r(rest, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
			int next;

			if (mkdirat(fd, c, 0755) != 0 && errno != EEXIST) {
				*status = WSFILE_FAILED;
				*why = xasprintf("%.300s: cannot create the directory %s: %s", shown,
				    c, strerror(errno));
				close(fd);
				fd = -1;
				break;
			}
			next = ws_openat2(fd, c, O_PATH | O_DIRECTORY, 0, WSFILE_RESOLVE_NAME);
			if (next < 0) {
				*status = errno == ELOOP ? ws_fail(why, shown, WSFILE_FAILED,
				    "a directory on the way is a symbolic link made meanwhile") :
				    ws_fail_errno(why, shown, errno);
				close(fd);
				fd = -1;
				break;
			}
			close(fd);
			fd = next;
		}
		free(rest);
	}
	free(path);
	return fd;
}

static bool
ws_write_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		s += n;
		len -= (size_t)n;
	}
	return true;
}

enum wsfile_status
wsfile_write(struct wsfile_root *r, const char *path, const char *data, size_t len,
    char **rel, char **why)
{
	enum wsfile_status status = ws_prepare(r, path, rel, why);
	char *dir = NULL, tmp[40], hex[17];
	const char *name;
	struct stat st;
	mode_t mode = 0644;
	bool existed = false;
	int dfd, fd;

	if (status != WSFILE_OK)
		return status;
	if (strcmp(*rel, ".") == 0) {
		status = ws_fail(why, path, WSFILE_INVALID,
		    "the workspace root is a directory, not a file");
		goto fail;
	}
	ws_split(*rel, &dir, &name);
	dfd = ws_make_dirs(r, dir, path, &status, why);
	free(dir);
	if (dfd < 0)
		goto fail;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			status = ws_fail(why, path, WSFILE_FAILED,
			    "is a symbolic link; refusing to follow it");
		else if (wsfile_is_hidden(r, &st))
			status = ws_fail(why, path, WSFILE_HIDDEN, "path is hidden");
		else if (!S_ISREG(st.st_mode))
			status = ws_fail(why, path, WSFILE_FAILED, "not a regular file");
		existed = true;
		mode = st.st_mode & 07777;
	} else if (errno != ENOENT) {
		status = ws_fail_errno(why, path, errno);
	}
	if (status != WSFILE_OK) {
		close(dfd);
		goto fail;
	}
	random_hex(hex, (sizeof hex - 1) / 2);
	snprintf(tmp, sizeof tmp, ".td-write-%s", hex);
	fd = ws_openat2(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0644, WSFILE_RESOLVE_NAME);
	if (fd < 0) {
		status = ws_fail_errno(why, path, errno);
		close(dfd);
		goto fail;
	}
	{
		bool ok = ws_write_all(fd, data, len) && (!existed || fchmod(fd, mode) == 0);
		int err = errno;

		if (close(fd) != 0 && ok) {
			ok = false;
			err = errno;
		}
		if (!ok) {
			unlinkat(dfd, tmp, 0);
			status = ws_fail_errno(why, path, err);
			close(dfd);
			goto fail;
		}
	}
	if (renameat(dfd, tmp, dfd, name) != 0) {
		int err = errno;

		unlinkat(dfd, tmp, 0);
		status = err == EISDIR ? ws_fail(why, path, WSFILE_FAILED, "not a regular file") :
		    ws_fail_errno(why, path, err);
		close(dfd);
		goto fail;
	}
	close(dfd);
	return WSFILE_OK;
fail:
	free(*rel);
	*rel = NULL;
	return status;
}
