/*
 * What the parts of the changes module share; not for others (they use
 * changes.h).  Each file calls only the files above it in this list, never
 * one below it, so no two of them call each other:
 *
 *   changes-ignore.c    the .gitignore subset a walk honours
 *   changes-walk.c      a workspace as a git tree, the stat cache (ignore)
 *   changes.c           the stores, the rows, the snapshot thread, lists, diffs, reverts
 */
#ifndef TD_SERVICE_CHANGES_INT_H
#define TD_SERVICE_CHANGES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <git2.h>

#include "changes.h"
#include "ids.h"
#include "problem.h"

struct service;
struct store;
struct wsfile_root;

/* ---- changes-ignore.c: the .gitignore files in force during a walk --------------- */

struct changes_ignore_pattern;

/* The patterns of the .gitignore files from the root down to the directory walked. */
struct changes_ignore {
	struct changes_ignore_pattern *pats;
	size_t n, cap;
};

/* Adds the patterns of dirfd's .gitignore (base: its path, "" for the root), if any. */
void changes_ignore_load(struct changes_ignore *ig, const struct wsfile_root *root, int dirfd,
    const char *base);
/* Drops the patterns past the first keep. */
void changes_ignore_pop(struct changes_ignore *ig, size_t keep);
/* Drops every pattern, and the array. */
void changes_ignore_free(struct changes_ignore *ig);
/* Whether rel (name its last component) is ignored by the patterns in force. */
bool changes_ignored(const struct changes_ignore *ig, const char *rel, const char *name,
    bool dir);

/* ---- changes-walk.c: a workspace as a tree ------------------------------------- */

/* What a snapshot stores of a file (settings.md, changes). */
struct changes_limits {
	long long max_file_bytes;	/* changes.maxFileBytes: larger files by size and hash */
	long long quota_bytes;		/* changes.quotaBytes of the store, lowered to what
				   changes.totalQuotaBytes leaves of all the stores */
};

/* What one walk did. */
struct changes_walk_stats {
	long files;		/* files and links in the tree */
	long hashed;		/* files read and hashed (not found in the stat cache) */
	long pointers;		/* files recorded by size and hash only */
	long skipped;		/* fifos, sockets, devices, hidden, too deep, over the entry cap */
	/* What the run may see that the tree lacks (the snapshot is incomplete): */
	long too_deep;		/* directories below WALK_MAX_DEPTH levels */
	long over_cap;		/* entries beyond WALK_MAX_ENTRIES */
	long bad_names;		/* names that are not UTF-8 */
	long unreadable;	/* files or directories that could not be read or stored */
	long over_quota;	/* of them, objects not stored: the store reached its quota */
	long long pointer_bytes;	/* bytes read to hash the files recorded by size and hash */
};

/* Why a walk's tree lacks what it lacks (malloc'd), or NULL when it is whole. */
char *changes_walk_incomplete(const struct changes_walk_stats *stats);

/* The stat cache of one workspace and the bytes its store holds. */
struct changes_walker;

/* A walker writing into repo (borrowed); stored_bytes: what the store holds already. */
struct changes_walker *changes_walker_new(git_repository *repo, long long stored_bytes);
void changes_walker_free(struct changes_walker *w);
/* The objects written loose since the last pack (or found loose at the start). */
size_t changes_walker_loose(const struct changes_walker *w);
/* Loose objects that make the snapshot thread pack them (each takes a disk block of its own). */
#define CHANGES_PACK_LOOSE 256
/* The most objects one pack takes: a run's start waits for no longer pack than that. */
#define CHANGES_PACK_BATCH 1024
/*
 * Packs the oldest loose objects (CHANGES_PACK_BATCH at most) into one pack
 * and removes them; false when it cannot.
 */
bool changes_walker_pack(struct changes_walker *w);
/*
 * The stat cache saved to path (a temporary file renamed over it), and read
 * back by the walker of a later process (entries whose object the store
 * lacks are left out); false when it cannot be written or read whole.
 */
bool changes_walker_save(const struct changes_walker *w, const char *path);
bool changes_walker_load(struct changes_walker *w, const char *path);
/* The bytes the stat cache takes in memory (capped). */
long long changes_walker_cache_bytes(const struct changes_walker *w);
/* The bytes the store holds, as counted by the walker. */
long long changes_walker_stored(const struct changes_walker *w);
/*
 * Writes the tree of the workspace below root into the store: *tree.  False
 * with *why (malloc'd) when the workspace cannot be read at all.
 */
bool changes_walk(struct changes_walker *w, struct wsfile_root *root,
    const struct changes_limits *lim, git_oid *tree, struct changes_walk_stats *stats,
    char **why);

/* The first bytes of a blob that stands for a file not stored (its size and hash). */
#define CHANGES_POINTER_MAGIC "\0taskdeck: not stored\n"
#define CHANGES_POINTER_MAGIC_LEN (sizeof CHANGES_POINTER_MAGIC - 1)
/* The bytes of a file not stored that are hashed; its mtime stands for the rest. */
#define CHANGES_POINTER_HASH_MAX (256LL * 1024 * 1024)

#endif
