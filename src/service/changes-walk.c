/*
 * A workspace as a git tree (changes-int.h).  The walk goes from a descriptor of
 * the workspace one name at a time: a directory is opened with
 * wsfile_open_subdir (no symbolic link followed), a file with O_NOFOLLOW and
 * O_NONBLOCK after an lstat said it is a regular file (a fifo swapped in
 * meanwhile neither blocks nor is read), a symbolic link is recorded as a
 * link (its target text).  What the run cannot see, .git directories, fifos,
 * sockets and devices are left out.
 *
 * A stat cache (path -> device, inode, size, times, mode -> blob id) spares
 * reading the files that did not change; an entry holds its name and its
 * directory's entry, never its whole path, and the cache's bytes are capped; a file changed within the clock's
 * granularity of its caching is read again the next time.  A directory's
 * tree is hashed here and written only when it differs from the last one.
 */
#include <ctype.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "changes-int.h"
#include "json.h"
#include "log.h"
#include "wsfile.h"
#include "xalloc.h"

#define WALK_MAX_DEPTH CHANGES_WALK_MAX_DEPTH
#define WALK_MAX_ENTRIES CHANGES_WALK_MAX_ENTRIES
#define WALK_LINK_MAX 4096
/* 1/8 of a store's quota is kept for trees, links and pointers; files' contents take the rest. */
#define WALK_QUOTA_META_SHARE 8
/*
 * The bytes one walk reads to hash the files it records by size and hash:
 * past them, such a file is recorded by its size, times and inode, so that
 * no run's big files hold the one snapshot thread that every session shares.
 */
#define WALK_POINTER_BUDGET (1024LL * 1024 * 1024)
/* The stat cache's bytes (entries and names): past them, files are read every time. */
#define WALK_CACHE_MAX_BYTES (64LL * 1024 * 1024)
/* The longest path a saved stat cache holds (WALK_MAX_DEPTH names of 255 bytes fit). */
#define WALK_SAVED_PATH_MAX 65536
/* A file whose times are this close to its caching is read again next time. */
#define WALK_RACY_NS (50LL * 1000 * 1000)

struct walk_cached {
	struct walk_cached *dir;	/* the directory's entry; NULL for the root */
	char *name;		/* "" for the root */
	bool is_dir;
	dev_t dev;
	ino_t ino;
	off_t size;
	long long mtime_ns, ctime_ns;
	mode_t mode;
	bool pointer;		/* recorded by size and hash */
	bool racy;		/* changed too close to its caching: read it again */
	git_oid oid;
	unsigned gen;		/* the walk that last saw it */
	struct walk_cached *next;
};

struct changes_walker {
	git_repository *repo;
	git_odb *odb;
	struct walk_cached **slots;
	size_t nslots, count;
	long long cache_bytes;	/* of the entries and their names */
	unsigned gen;
	long long stored;
	git_oid *loose;		/* objects written loose, not packed yet */
	size_t nloose, caploose;
	/* one walk */
	struct wsfile_root *root;
	const struct changes_limits *lim;
	struct changes_walk_stats *stats;
	long entries_left;
	long long pointer_left;	/* of WALK_POINTER_BUDGET */
	long long now_ns;
	struct changes_ignore ignore;
	bool warned_depth, warned_entries, warned_quota;
	bool split;		/* files not read yet are left pending (changes_walk's scanned) */
	bool strict;		/* reading a pending file: any change since its lstat is a loss */
};

struct walk_pending;

struct walk_entry {
	char *name;
	unsigned mode;		/* 040000, 0100644, 0100755, 0120000 */
	git_oid oid;
	struct walk_pending *pending;	/* not read yet (oid unset), or NULL */
};

/*
 * What a split walk left to read: a file (what its lstat said) or a
 * directory holding one (its identity, its entries sorted).
 */
struct walk_pending {
	struct changes_lstat st;
	bool ignored;
	struct walk_cached *cache;	/* a file's directory entry; a directory's own */
	struct walk_entry *ents;	/* a directory's */
	size_t n;
};

static uint64_t
walk_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint64_t
walk_key(const struct walk_cached *dir, const char *name, bool is_dir)
{
	return (walk_hash(name) ^ ((uint64_t)(uintptr_t)dir * 0x9e3779b97f4a7c15ULL)) +
	    (is_dir ? 1 : 0);
}

/* The entry of name (a directory or not) in the directory entry dir (NULL: the root). */
static struct walk_cached *
walk_cache_find(struct changes_walker *w, const struct walk_cached *dir, const char *name,
    bool is_dir)
{
	for (struct walk_cached *e = w->slots[walk_key(dir, name, is_dir) % w->nslots]; e;
	    e = e->next)
		if (e->dir == dir && e->is_dir == is_dir && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

static void
walk_cache_grow(struct changes_walker *w)
{
	size_t n = w->nslots * 2;
	struct walk_cached **slots = xcalloc(n, sizeof *slots);

	for (size_t i = 0; i < w->nslots; i++) {
		struct walk_cached *e = w->slots[i], *next;

		for (; e; e = next) {
			size_t k = walk_key(e->dir, e->name, e->is_dir) % n;
			next = e->next;
			e->next = slots[k];
			slots[k] = e;
		}
	}
	free(w->slots);
	w->slots = slots;
	w->nslots = n;
}

/* The entry of name in dir, made when missing; NULL when the cache is full. */
static struct walk_cached *
walk_cache_put(struct changes_walker *w, struct walk_cached *dir, const char *name,
    bool is_dir)
{
	struct walk_cached *e = walk_cache_find(w, dir, name, is_dir);
	size_t k, len = strlen(name);

	if (e != NULL)
		return e;
	if (w->cache_bytes + (long long)(sizeof *e + len + 1) > WALK_CACHE_MAX_BYTES)
		return NULL;
	if (w->count >= w->nslots)
		walk_cache_grow(w);
	e = xcalloc(1, sizeof *e);
	e->dir = dir;
	e->name = xstrndup(name, len);
	e->is_dir = is_dir;
	k = walk_key(dir, name, is_dir) % w->nslots;
	e->next = w->slots[k];
	w->slots[k] = e;
	w->count++;
	w->cache_bytes += (long long)(sizeof *e + len + 1);
	return e;
}

long long
changes_walker_cache_bytes(const struct changes_walker *w)
{
	return w->cache_bytes;
}

/* Drops the entries the last walk did not see. */
static void
walk_cache_sweep(struct changes_walker *w)
{
	for (size_t i = 0; i < w->nslots; i++) {
		struct walk_cached **pp = &w->slots[i];

		while (*pp != NULL) {
			struct walk_cached *e = *pp;
			if (e->gen == w->gen) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			w->cache_bytes -= (long long)(sizeof *e + strlen(e->name) + 1);
			free(e->name);
			free(e);
			w->count--;
		}
	}
}

static void walk_loose_scan(struct changes_walker *w);

struct changes_walker *
changes_walker_new(git_repository *repo, long long stored_bytes)
{
	struct changes_walker *w = xcalloc(1, sizeof *w);

	w->repo = repo;
	if (git_repository_odb(&w->odb, repo) != 0) {
		free(w);
		return NULL;
	}
	w->nslots = 1024;
	w->slots = xcalloc(w->nslots, sizeof *w->slots);
	w->stored = stored_bytes;
	walk_loose_scan(w);
	return w;
}

void
changes_walker_free(struct changes_walker *w)
{
	if (w == NULL)
		return;
	w->gen++;
	walk_cache_sweep(w);
	free(w->slots);
	free(w->loose);
	git_odb_free(w->odb);
	free(w);
}

long long
changes_walker_stored(const struct changes_walker *w)
{
	return w->stored;
}

static void
walk_loose_add(struct changes_walker *w, const git_oid *oid)
{
	if (w->nloose == w->caploose) {
		w->caploose = w->caploose ? w->caploose * 2 : 1024;
		w->loose = xrealloc(w->loose, w->caploose * sizeof *w->loose);
	}
	w->loose[w->nloose++] = *oid;
}

/* The loose objects an earlier process left in the store (objects/xx/...). */
static void
walk_loose_scan(struct changes_walker *w)
{
	char *objects = xasprintf("%sobjects", git_repository_path(w->repo));
	DIR *d = opendir(objects), *sub;
	struct dirent *de, *e;

	while (d != NULL && (de = readdir(d)) != NULL) {
		char *dir;

		if (strlen(de->d_name) != 2 || !isxdigit((unsigned char)de->d_name[0]) ||
		    !isxdigit((unsigned char)de->d_name[1]))
			continue;
		dir = xasprintf("%s/%s", objects, de->d_name);
		if ((sub = opendir(dir)) != NULL) {
			while ((e = readdir(sub)) != NULL) {
				char hex[GIT_OID_HEXSZ + 1];
				git_oid oid;

				if (strlen(e->d_name) != GIT_OID_HEXSZ - 2)
					continue;
				snprintf(hex, sizeof hex, "%s%s", de->d_name, e->d_name);
				if (git_oid_fromstr(&oid, hex) == 0)
					walk_loose_add(w, &oid);
			}
			closedir(sub);
		}
		free(dir);
	}
	if (d != NULL)
		closedir(d);
	free(objects);
}

size_t
changes_walker_loose(const struct changes_walker *w)
{
	return w->nloose;
}

bool
changes_walker_pack(struct changes_walker *w)
{
	const char *gitdir = git_repository_path(w->repo);
	size_t n = w->nloose < CHANGES_PACK_BATCH ? w->nloose : CHANGES_PACK_BATCH;
	git_packbuilder *pb;
	bool ok;

	if (n == 0)
		return true;
	if (git_packbuilder_new(&pb, w->repo) != 0)
		return false;
	git_packbuilder_set_threads(pb, 1);
	ok = true;
	for (size_t i = 0; ok && i < n; i++)
		ok = git_packbuilder_insert(pb, &w->loose[i], NULL) == 0;
	ok = ok && git_packbuilder_write(pb, NULL, 0, NULL, NULL) == 0;
	git_packbuilder_free(pb);
	if (!ok || git_odb_refresh(w->odb) != 0)
		return false;
	/* Every object is in the new pack (written and renamed into place): the loose copies go. */
	for (size_t i = 0; i < n; i++) {
		char hex[GIT_OID_HEXSZ + 1], *path;

		git_oid_tostr(hex, sizeof hex, &w->loose[i]);
		path = xasprintf("%sobjects/%.2s/%s", gitdir, hex, hex + 2);
		unlink(path);
		free(path);
	}
	w->nloose -= n;
	memmove(w->loose, w->loose + n, w->nloose * sizeof *w->loose);
	return true;
}

/* One entry of a saved stat cache, then its path. */
struct walk_saved {
	uint64_t dev, ino;
	int64_t size, mtime_ns, ctime_ns;
	uint32_t mode, path_len;
	uint8_t pointer, racy;
	unsigned char oid[GIT_OID_RAWSZ];
};

#define WALK_SAVED_MAGIC "taskdeck stat cache 1\n"

/* The path of e as a saved cache names it (a directory ends with '/', the root is "/"). */
static bool
walk_cache_path(const struct walk_cached *e, struct buf *b)
{
	if (e->dir == NULL)
		return buf_append(b, "", 0);
	if (!walk_cache_path(e->dir, b))
		return false;
	if (e->dir->dir != NULL && !buf_append(b, "/", 1))
		return false;
	return buf_append(b, e->name, strlen(e->name));
}

bool
changes_walker_save(const struct changes_walker *w, const char *path)
{
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	bool ok = f != NULL && fputs(WALK_SAVED_MAGIC, f) >= 0;

	for (size_t i = 0; ok && i < w->nslots; i++) {
		for (const struct walk_cached *e = w->slots[i]; ok && e; e = e->next) {
			struct walk_saved r = { .dev = e->dev, .ino = e->ino, .size = e->size,
				.mtime_ns = e->mtime_ns, .ctime_ns = e->ctime_ns, .mode = e->mode,
				.pointer = e->pointer, .racy = e->racy };
			struct buf saved;

			buf_init(&saved, WALK_SAVED_PATH_MAX);
			if (!walk_cache_path(e, &saved) || (e->is_dir && !buf_append(&saved, "/", 1))) {
				buf_free(&saved);
				continue;	/* too long to save: read again next time */
			}
			r.path_len = (uint32_t)saved.len;
			memcpy(r.oid, e->oid.id, GIT_OID_RAWSZ);
			ok = fwrite(&r, sizeof r, 1, f) == 1 &&
			    fwrite(saved.data, 1, r.path_len, f) == r.path_len;
			buf_free(&saved);
		}
	}
	if (f != NULL && fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok)
		unlink(tmp);
	free(tmp);
	return ok;
}

/*
 * The entry of a saved path ("/" the root, "a/b/" a directory, "a/b" a
 * file), with the entries of the directories above it made where missing;
 * NULL when the cache is full.
 */
static struct walk_cached *
walk_cache_put_path(struct changes_walker *w, char *path)
{
	size_t len = strlen(path);
	bool is_dir = path[len - 1] == '/';
	struct walk_cached *dir = walk_cache_put(w, NULL, "", true);
	char *comp = path, *slash;

	if (strcmp(path, "/") == 0 || dir == NULL)
		return dir;
	if (is_dir)
		path[--len] = '\0';
	while (dir != NULL && (slash = strchr(comp, '/')) != NULL) {
		*slash = '\0';
		dir = walk_cache_put(w, dir, comp, true);
		if (dir != NULL)
			dir->gen = w->gen;
		comp = slash + 1;
	}
	return dir != NULL ? walk_cache_put(w, dir, comp, is_dir) : NULL;
}

bool
changes_walker_load(struct changes_walker *w, const char *path)
{
	FILE *f = fopen(path, "re");
	char magic[sizeof WALK_SAVED_MAGIC];
	struct walk_saved r;
	bool ok;

	if (f == NULL)
		return false;
	ok = fgets(magic, sizeof magic, f) != NULL && strcmp(magic, WALK_SAVED_MAGIC) == 0;
	while (ok) {
		size_t got = fread(&r, 1, sizeof r, f);
		char *p;
		git_oid oid;
		struct walk_cached *e;

		if (got == 0 && feof(f))
			break;
		if (got != sizeof r || r.path_len == 0 || r.path_len > WALK_SAVED_PATH_MAX) {
			ok = false;
			break;
		}
		p = xmalloc(r.path_len + 1);
		if (fread(p, 1, r.path_len, f) != r.path_len) {
			free(p);
			ok = false;
			break;
		}
		p[r.path_len] = '\0';
		memcpy(oid.id, r.oid, GIT_OID_RAWSZ);
		/* Only what the store holds: a power cut may have lost objects, not this file. */
		if (git_odb_exists_ext(w->odb, &oid, GIT_ODB_LOOKUP_NO_REFRESH) &&
		    (e = walk_cache_put_path(w, p)) != NULL) {
			e->dev = (dev_t)r.dev;
			e->ino = (ino_t)r.ino;
			e->size = (off_t)r.size;
			e->mtime_ns = r.mtime_ns;
			e->ctime_ns = r.ctime_ns;
			e->mode = (mode_t)r.mode;
			e->pointer = r.pointer != 0;
			e->racy = r.racy != 0;
			e->oid = oid;
			e->gen = w->gen;
		}
		free(p);
	}
	fclose(f);
	return ok;
}

/*
 * The bytes of the quota that files' contents may take: the rest is kept for
 * what no quota can turn into a pointer (trees, links, pointers).
 */
static long long
walk_content_quota(const struct changes_walker *w)
{
	return w->lim->quota_bytes - w->lim->quota_bytes / WALK_QUOTA_META_SHARE;
}

/*
 * Writes an object unless the store has it; counts its bytes.  An object
 * that would take the store past its quota is not written (ENOSPC, counted
 * in stats->over_quota): the quota holds whatever the workspace holds.
 */
static bool
walk_write(struct changes_walker *w, git_oid *oid, const void *data, size_t len,
    git_object_t type)
{
	if (git_odb_hash(oid, data, len, type) != 0)
		return false;
	if (git_odb_exists_ext(w->odb, oid, GIT_ODB_LOOKUP_NO_REFRESH))
		return true;
	if (w->stored + (long long)len > w->lim->quota_bytes) {
		w->stats->over_quota++;
		errno = ENOSPC;
		return false;
	}
	if (git_odb_write(oid, w->odb, data, len, type) != 0)
		return false;
	w->stored += (long long)len;
	walk_loose_add(w, oid);
	return true;
}

static long long
walk_ns(struct timespec ts)
{
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- files ---------------------------------------------------------------------- */

/* A pointer blob of the file fd (changes_pointer_text). */
static bool
walk_pointer(struct changes_walker *w, int fd, const struct stat *st, git_oid *oid)
{
	char text[CHANGES_POINTER_TEXT_MAX];
	long len = changes_pointer_text(fd, st, &w->pointer_left, &w->stats->pointer_bytes,
	    text);

	if (len < 0)
		return false;
	w->stats->pointers++;
	return walk_write(w, oid, text, (size_t)len, GIT_OBJECT_BLOB);
}

/* Whether the stat cache holds the blob of the file name in dir as lst says it is: *oid. */
static bool
walk_cache_hit(struct changes_walker *w, struct walk_cached *dir, const char *name,
    const struct stat *lst, bool ignored, git_oid *oid)
{
	struct walk_cached *c = dir != NULL ? walk_cache_find(w, dir, name, false) : NULL;
	bool pointer = ignored || lst->st_size > w->lim->max_file_bytes;

	if (c == NULL || c->racy || c->dev != lst->st_dev || c->ino != lst->st_ino ||
	    c->size != lst->st_size || c->mtime_ns != walk_ns(lst->st_mtim) ||
	    c->ctime_ns != walk_ns(lst->st_ctim) || c->mode != lst->st_mode ||
	    (c->pointer != pointer && !c->pointer))
		return false;
	c->gen = w->gen;
	if (c->pointer)
		w->stats->pointers++;
	*oid = c->oid;
	return true;
}

/*
 * The blob of the regular file name in dirfd (lst from its lstat).  With
 * w->strict, a file gone or not in the state of lst, before or after it is
 * read, is ESTALE.
 */
static bool
walk_file(struct changes_walker *w, struct walk_cached *dir, int dirfd, const char *name,
    const struct stat *lst, bool ignored, git_oid *oid)
{
	struct walk_cached *c;
	bool pointer;
	struct stat st;
	char *data;
	ssize_t got = 0;
	bool ok;
	int fd;

	if (walk_cache_hit(w, dir, name, lst, ignored, oid))
		return true;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (w->strict && (errno == ENOENT || errno == ELOOP))
			errno = ESTALE;
		return false;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != lst->st_dev ||
	    st.st_ino != lst->st_ino || (w->strict && !changes_same_stat(&st, lst))) {
		close(fd);
		errno = w->strict ? ESTALE : EAGAIN;	/* swapped or changed since its lstat */
		return false;
	}
	if (wsfile_is_hidden(w->root, &st) || wsfile_is_linked(w->root, &st)) {
		close(fd);
		errno = ENOENT;		/* what the run cannot see is no loss */
		return false;
	}
	w->stats->hashed++;
	pointer = ignored || st.st_size > w->lim->max_file_bytes;
	ok = false;
	if (!pointer) {
		data = xmalloc((size_t)st.st_size + 1);
		while ((size_t)got < (size_t)st.st_size) {
			ssize_t n = read(fd, data + got, (size_t)st.st_size - (size_t)got);
			if (n <= 0)
				break;
			got += n;
		}
		/* Over the quota only what the store lacks: a file read again costs nothing. */
		if (w->stored + got > walk_content_quota(w) &&
		    (git_odb_hash(oid, data, (size_t)got, GIT_OBJECT_BLOB) != 0 ||
		    !git_odb_exists_ext(w->odb, oid, GIT_ODB_LOOKUP_NO_REFRESH))) {
			pointer = true;
			if (!w->warned_quota)
				log_warn("changes: the store of a workspace reached "
				    "changes.quotaBytes, or all the stores changes.totalQuotaBytes "
				    "(%lld bytes for this one); files are recorded by size and hash "
				    "from now on", w->lim->quota_bytes);
			w->warned_quota = true;
		} else {
			ok = walk_write(w, oid, data, (size_t)got, GIT_OBJECT_BLOB);
		}
		free(data);
		if (pointer && lseek(fd, 0, SEEK_SET) != 0)
			pointer = false;	/* ok stays false */
	}
	if (pointer)
		ok = walk_pointer(w, fd, &st, oid);
	if (ok && w->strict) {
		struct stat after;

		/* A write while it was read changed its ctime, or its size. */
		if (fstat(fd, &after) != 0 || !changes_same_stat(&after, lst)) {
			close(fd);
			errno = ESTALE;
			return false;
		}
	}
	close(fd);
	if (!ok)
		return false;
	c = dir != NULL ? walk_cache_put(w, dir, name, false) : NULL;
	if (c == NULL)
		return true;	/* the cache is full: read again next time */
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->size = st.st_size;
	c->mtime_ns = walk_ns(st.st_mtim);
	c->ctime_ns = walk_ns(st.st_ctim);
	c->mode = st.st_mode;
	c->pointer = pointer;
	c->racy = c->mtime_ns >= w->now_ns - WALK_RACY_NS || c->ctime_ns >= w->now_ns - WALK_RACY_NS;
	c->oid = *oid;
	c->gen = w->gen;
	return true;
}

/* The blob of the symbolic link name in dirfd: its target text. */
static bool
walk_link(struct changes_walker *w, int dirfd, const char *name, git_oid *oid)
{
	char target[WALK_LINK_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof target);

	if (n < 0 || n == (ssize_t)sizeof target)
		return false;
	return walk_write(w, oid, target, (size_t)n, GIT_OBJECT_BLOB);
}

/* ---- directories -------------------------------------------------------------- */

/* git's order: names compared bytewise, a directory as if it ended with '/'. */
static int
walk_entry_cmp(const void *a, const void *b)
{
	const struct walk_entry *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name), n = lx < ly ? lx : ly;
	int c = memcmp(x->name, y->name, n);
	unsigned char cx, cy;

	if (c != 0)
		return c;
	cx = lx > n ? (unsigned char)x->name[n] : x->mode == 040000 ? '/' : 0;
	cy = ly > n ? (unsigned char)y->name[n] : y->mode == 040000 ? '/' : 0;
	return (int)cx - (int)cy;
}

static bool walk_dir(struct changes_walker *w, struct walk_cached *self, int dirfd,
    const char *rel, int depth, bool ignored, git_oid *tree, bool *empty,
    struct walk_pending **pending);

/* Whether a file's times are too close to the walk's start to say it did not change since. */
static bool
walk_racy(const struct changes_walker *w, const struct stat *st)
{
	return walk_ns(st->st_mtim) >= w->now_ns - WALK_RACY_NS ||
	    walk_ns(st->st_ctim) >= w->now_ns - WALK_RACY_NS;
}

/*
 * A split walk leaves a regular file that the stat cache lacks for later
 * (pending), unless its times are racy: a change after this lstat might
 * then leave them as they are, so it is read now.
 */
static bool
walk_defer(struct changes_walker *w, struct walk_cached *dir, const char *name,
    const struct stat *st, bool ignored, struct walk_entry *e)
{
	struct walk_pending *p;

	if (!w->split || walk_cache_hit(w, dir, name, st, ignored, &e->oid) || walk_racy(w, st))
		return false;
	p = xcalloc(1, sizeof *p);
	changes_lstat_keep(&p->st, st);
	p->ignored = ignored;
	p->cache = dir;
	e->pending = p;
	return true;
}

/* One entry of a directory (dir its cache entry, NULL when not cached) into *e; false when it is left out. */
static bool
walk_one(struct changes_walker *w, struct walk_cached *dir, int dirfd, const char *dirrel,
    const char *name, int depth, bool ignored, struct walk_entry *e)
{
	char *rel = dirrel[0] ? xasprintf("%s/%s", dirrel, name) : xstrdup(name);
	struct stat st;
	bool ok = false, empty, ign;
	int fd;

	e->pending = NULL;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		/* Gone since the directory was read is no loss; anything else is. */
		if (errno != ENOENT)
			w->stats->unreadable++;
		goto out;
	}
	if (wsfile_is_hidden(w->root, &st))
		goto out;
	if (!json_utf8_valid(name, strlen(name))) {
		/* Not UTF-8: no JSON answer could name it. */
		w->stats->bad_names++;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		if (strcmp(name, ".git") == 0)
			goto out;
		if (depth + 1 >= WALK_MAX_DEPTH) {
			if (!w->warned_depth)
				log_warn("changes: directories deeper than %d levels are left out",
				    WALK_MAX_DEPTH);
			w->warned_depth = true;
			w->stats->too_deep++;
			goto out;
		}
		if ((fd = wsfile_open_subdir(w->root, dirfd, name)) < 0) {
			if (errno != ENOENT)
				w->stats->unreadable++;
			goto out;
		}
		ok = walk_dir(w, dir != NULL ? walk_cache_put(w, dir, name, true) : NULL, fd, rel,
		    depth + 1, ignored || changes_ignored(&w->ignore, rel, name, true), &e->oid,
		    &empty, &e->pending);
		if (!ok)
			w->stats->unreadable++;
		ok = ok && !empty;
		close(fd);
		e->mode = 040000;
	} else if (S_ISLNK(st.st_mode)) {
		ok = walk_link(w, dirfd, name, &e->oid);
		e->mode = 0120000;
	} else if (S_ISREG(st.st_mode)) {
		ign = ignored || changes_ignored(&w->ignore, rel, name, false);
		ok = walk_defer(w, dir, name, &st, ign, e) ||
		    walk_file(w, dir, dirfd, name, &st, ign, &e->oid);
		e->mode = (st.st_mode & 0111) ? 0100755 : 0100644;
		if (!ok && errno != ENOENT)
			w->stats->unreadable++;
	}
	if (ok && e->mode != 040000)
		w->stats->files++;
out:
	if (!ok)
		w->stats->skipped++;
	free(rel);
	return ok;
}

/*
 * The tree of the sorted entries of a directory (self its cache entry, or
 * NULL), written unless it is the one of last time; frees the entries.
 */
static bool
walk_tree(struct changes_walker *w, struct walk_cached *self, struct walk_entry *ents,
    size_t n, git_oid *tree, bool *empty)
{
	struct buf b;
	bool ok;

	buf_init(&b, 0);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&b, "%o %s", ents[i].mode, ents[i].name);
		buf_append(&b, "", 1);
		buf_append(&b, ents[i].oid.id, GIT_OID_RAWSZ);
		free(ents[i].name);
	}
	free(ents);
	*empty = n == 0;
	/* The tree of this directory last time: hashed, not written again. */
	ok = git_odb_hash(tree, b.data ? b.data : "", b.len, GIT_OBJECT_TREE) == 0;
	if (ok && (self == NULL || !git_oid_equal(&self->oid, tree)))
		ok = walk_write(w, tree, b.data ? b.data : "", b.len, GIT_OBJECT_TREE);
	if (ok && self != NULL)
		self->oid = *tree;
	buf_free(&b);
	return ok;
}

/*
 * The tree of a directory; self its cache entry (seen by this walk), NULL
 * when not cached.  A split walk that left some of its files for later
 * gives *pending instead (the tree unset).
 */
static bool
walk_dir(struct changes_walker *w, struct walk_cached *self, int dirfd, const char *rel,
    int depth, bool ignored, git_oid *tree, bool *empty, struct walk_pending **pending)
{
	struct walk_entry *ents = NULL;
	size_t n = 0, cap = 0, keep = w->ignore.n;
	DIR *d;
	struct dirent *de;
	int fd = dup(dirfd);
	bool later = false;

	*empty = true;
	*pending = NULL;
	/* Seen before its entries, which the sweep keeps only below a kept directory. */
	if (self != NULL)
		self->gen = w->gen;
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (!ignored)
		changes_ignore_load(&w->ignore, w->root, dirfd, rel);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (w->entries_left <= 0) {
			if (!w->warned_entries)
				log_warn("changes: a workspace of more than %d entries: the rest is "
				    "left out", WALK_MAX_ENTRIES);
			w->warned_entries = true;
			w->stats->skipped++;
			w->stats->over_cap++;
			continue;
		}
		w->entries_left--;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			ents = xrealloc(ents, cap * sizeof *ents);
		}
		if (walk_one(w, self, dirfd, rel, de->d_name, depth, ignored, &ents[n])) {
			ents[n].name = xstrdup(de->d_name);
			later = later || ents[n].pending != NULL;
			n++;
		}
	}
	closedir(d);
	changes_ignore_pop(&w->ignore, keep);
	if (n > 1)
		qsort(ents, n, sizeof *ents, walk_entry_cmp);
	if (later) {
		struct walk_pending *p = xcalloc(1, sizeof *p);
		struct stat st;

		if (fstat(dirfd, &st) == 0)
			changes_lstat_keep(&p->st, &st);
		p->cache = self;
		p->ents = ents;
		p->n = n;
		*pending = p;
		*empty = false;
		return true;
	}
	return walk_tree(w, self, ents, n, tree, empty);
}

static void
walk_pending_free(struct walk_pending *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		walk_pending_free(p->ents[i].pending);
		free(p->ents[i].name);
	}
	free(p->ents);
	free(p);
}

/*
 * Reads what a split walk left pending in the directory dirfd (p: taken),
 * strictly: a file or directory that is gone or not in the state its lstat
 * saw is left out and named (walk_changed); its tree.
 */
static bool
walk_finish(struct changes_walker *w, struct walk_pending *p, int dirfd, const char *rel,
    git_oid *tree, bool *empty)
{
	struct walk_entry *ents = p->ents;
	size_t n = 0;
	bool ok;

	for (size_t i = 0; i < p->n; i++) {
		struct walk_entry *e = &ents[i];
		struct walk_pending *q = e->pending;
		char *sub = q == NULL ? NULL :
		    rel[0] ? xasprintf("%s/%s", rel, e->name) : xstrdup(e->name);
		bool kept = true, sub_empty;
		struct stat st;
		int fd;

		e->pending = NULL;
		if (q != NULL && e->mode == 040000) {
			fd = wsfile_open_subdir(w->root, dirfd, e->name);
			if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != q->st.dev ||
			    st.st_ino != q->st.ino) {
				changes_stats_changed(w->stats, sub);
				kept = false;
			} else {
				kept = walk_finish(w, q, fd, sub, &e->oid, &sub_empty);
				q = NULL;	/* taken */
				if (!kept)
					w->stats->unreadable++;
				kept = kept && !sub_empty;
			}
			if (fd >= 0)
				close(fd);
		} else if (q != NULL) {
			w->strict = true;
			changes_lstat_back(&q->st, &st);
			kept = walk_file(w, q->cache, dirfd, e->name, &st, q->ignored, &e->oid);
			w->strict = false;
			if (!kept && errno == ESTALE)
				changes_stats_changed(w->stats, sub);
			else if (!kept && errno != ENOENT)
				w->stats->unreadable++;
			if (!kept)
				w->stats->files--;
		}
		walk_pending_free(q);
		free(sub);
		if (kept)
			ents[n++] = *e;
		else
			free(e->name);
	}
	p->ents = NULL;
	p->n = 0;
	ok = walk_tree(w, p->cache, ents, n, tree, empty);
	walk_pending_free(p);
	return ok;
}

bool
changes_walk(struct changes_walker *w, struct wsfile_root *root,
    const struct changes_limits *lim, void (*scanned)(void *), void *arg, git_oid *tree,
    struct changes_walk_stats *stats, char **why)
{
	struct walk_pending *pending = NULL;
	struct stat st;
	struct timespec now;
	char *rel = NULL;
	bool empty, ok;
	int fd;

	memset(stats, 0, sizeof *stats);
	if (wsfile_open(root, ".", O_RDONLY | O_DIRECTORY, &fd, &st, &rel, why) != WSFILE_OK)
		return false;
	free(rel);
	clock_gettime(CLOCK_REALTIME, &now);
	w->root = root;
	w->lim = lim;
	w->stats = stats;
	w->entries_left = WALK_MAX_ENTRIES;
	w->pointer_left = WALK_POINTER_BUDGET;
	w->now_ns = walk_ns(now);
	w->gen++;
	w->split = scanned != NULL;
	ok = walk_dir(w, walk_cache_put(w, NULL, "", true), fd, "", 0, false, tree, &empty,
	    &pending);
	changes_ignore_free(&w->ignore);
	w->split = false;
	if (scanned != NULL)
		scanned(arg);
	if (pending != NULL)
		ok = walk_finish(w, pending, fd, "", tree, &empty);
	close(fd);
	walk_cache_sweep(w);
	w->root = NULL;
	if (!ok)
		*why = xstrdup("the workspace could not be read");
	return ok;
}
