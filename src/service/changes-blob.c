/*
 * What a walk records of one file (changes-int.h): the pointer blob that
 * stands for a file a snapshot does not store (its size and SHA-256, of its
 * data extents only when it is sparse, of its first CHANGES_POINTER_HASH_MAX
 * bytes at most); whether two lstats saw one state of a file; the files that
 * changed between a split walk's listing and its reading.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "changes-int.h"
#include "xalloc.h"

static long long
pointer_ns(struct timespec ts)
{
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Hashes the bytes of fd from off, at most n of them, into h; what it read, -1 on error. */
static long long
pointer_hash_range(int fd, off_t off, long long n, long long *left, long long *read_bytes,
    crypto_hash_sha256_state *h, unsigned char *chunk)
{
	long long done = 0;
	ssize_t got = 0;

	if (lseek(fd, off, SEEK_SET) != off)
		return -1;
	while (done < n && (got = read(fd, chunk, n - done < (1 << 20) ? (size_t)(n - done) :
	    1 << 20)) > 0) {
		crypto_hash_sha256_update(h, chunk, (unsigned long long)got);
		done += got;
	}
	*read_bytes += done;
	*left -= done;
	return got < 0 ? -1 : done;
}

/*
 * The text of a pointer blob: the size and SHA-256 of the file, read through fd.  Of a
 * file over CHANGES_POINTER_HASH_MAX only that much is hashed, and its
 * modification time stands for the rest: a snapshot never reads without end.
 * Of a sparse file only its data is read (SEEK_DATA, SEEK_HOLE), each extent
 * hashed with its place: a hole of any size costs nothing.
 */
long
changes_pointer_text(int fd, const struct stat *st, long long *budget, long long *read_bytes,
    char text[CHANGES_POINTER_TEXT_MAX])
{
	crypto_hash_sha256_state h;
	unsigned char digest[crypto_hash_sha256_BYTES], *chunk = xmalloc(1 << 20);
	char hex[crypto_hash_sha256_BYTES * 2 + 1];
	long long left = CHANGES_POINTER_HASH_MAX, got = 0;
	off_t hole = lseek(fd, 0, SEEK_HOLE);
	bool sparse = hole >= 0 && hole < st->st_size;
	int len;

	if (*budget < (st->st_size < left ? st->st_size : left)) {
		free(chunk);
		memcpy(text, CHANGES_POINTER_MAGIC, CHANGES_POINTER_MAGIC_LEN);
		len = snprintf(text + CHANGES_POINTER_MAGIC_LEN, CHANGES_POINTER_TEXT_MAX -
		    CHANGES_POINTER_MAGIC_LEN, "size %lld\nnot hashed (the snapshot had read "
		    "its 1 GiB for such files)\nmtime %lld\nctime %lld\ninode %llu\n",
		    (long long)st->st_size, pointer_ns(st->st_mtim), pointer_ns(st->st_ctim),
		    (unsigned long long)st->st_ino);
		return (long)CHANGES_POINTER_MAGIC_LEN + len;
	}
	crypto_hash_sha256_init(&h);
	if (!sparse) {
		got = pointer_hash_range(fd, 0, left, budget, read_bytes, &h, chunk);
	} else {
		off_t pos = 0, data;

		while (left > 0 && pos < st->st_size && (data = lseek(fd, pos, SEEK_DATA)) >= 0) {
			char place[64];

			if ((hole = lseek(fd, data, SEEK_HOLE)) < 0)
				hole = st->st_size;
			len = snprintf(place, sizeof place, "%lld+%lld\n", (long long)data,
			    (long long)(hole - data));
			crypto_hash_sha256_update(&h, (unsigned char *)place, (unsigned long long)len);
			got = pointer_hash_range(fd, data, hole - data < left ? hole - data : left,
			    budget, read_bytes, &h, chunk);
			if (got < 0)
				break;
			left -= got;
			pos = hole;
		}
		if (got >= 0 && left > 0 && pos < st->st_size && errno != ENXIO)
			got = -1;
	}
	free(chunk);
	if (got < 0)
		return -1;
	crypto_hash_sha256_final(&h, digest);
	sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
	memcpy(text, CHANGES_POINTER_MAGIC, CHANGES_POINTER_MAGIC_LEN);
	if (sparse)
		len = snprintf(text + CHANGES_POINTER_MAGIC_LEN, CHANGES_POINTER_TEXT_MAX -
		    CHANGES_POINTER_MAGIC_LEN, "size %lld\nsha256 of the data extents and their "
		    "places (holes skipped)%s %s\nmtime %lld\n", (long long)st->st_size,
		    left > 0 ? "" : ", the first 256 MiB of data", hex, pointer_ns(st->st_mtim));
	else if (st->st_size <= CHANGES_POINTER_HASH_MAX)
		len = snprintf(text + CHANGES_POINTER_MAGIC_LEN, CHANGES_POINTER_TEXT_MAX -
		    CHANGES_POINTER_MAGIC_LEN, "size %lld\nsha256 %s\n", (long long)st->st_size, hex);
	else
		len = snprintf(text + CHANGES_POINTER_MAGIC_LEN, CHANGES_POINTER_TEXT_MAX -
		    CHANGES_POINTER_MAGIC_LEN, "size %lld\nsha256 of the first %lld bytes %s\n"
		    "mtime %lld\n", (long long)st->st_size, CHANGES_POINTER_HASH_MAX, hex,
		    pointer_ns(st->st_mtim));
	return (long)CHANGES_POINTER_MAGIC_LEN + len;
}

void
changes_lstat_keep(struct changes_lstat *k, const struct stat *st)
{
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = st->st_size;
	k->mtime_ns = pointer_ns(st->st_mtim);
	k->ctime_ns = pointer_ns(st->st_ctim);
	k->mode = st->st_mode;
}

void
changes_lstat_back(const struct changes_lstat *k, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_dev = k->dev;
	st->st_ino = k->ino;
	st->st_size = k->size;
	st->st_mtim.tv_sec = (time_t)(k->mtime_ns / 1000000000LL);
	st->st_mtim.tv_nsec = (long)(k->mtime_ns % 1000000000LL);
	st->st_ctim.tv_sec = (time_t)(k->ctime_ns / 1000000000LL);
	st->st_ctim.tv_nsec = (long)(k->ctime_ns % 1000000000LL);
	st->st_mode = k->mode;
}

/* Whether a and b are the same state of a file (what the stat cache compares). */
bool
changes_same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	    pointer_ns(a->st_mtim) == pointer_ns(b->st_mtim) &&
	    pointer_ns(a->st_ctim) == pointer_ns(b->st_ctim) && a->st_mode == b->st_mode;
}

/* A file that changed between the walk's lstat and its reading: its state before is lost. */
void
changes_stats_changed(struct changes_walk_stats *st, const char *rel)
{
	size_t have = strlen(st->changed_names), len = strlen(rel);

	st->changed++;
	if (have + len + 3 < sizeof st->changed_names) {
		snprintf(st->changed_names + have, sizeof st->changed_names - have, "%s%s",
		    have ? ", " : "", rel);
		st->changed_named++;
	}
}
