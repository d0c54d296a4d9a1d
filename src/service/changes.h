/*
 * A run's workspace changes (docs/service.md "Workspace changes"): snapshots
 * of the workspace in a shadow git object store per session, the run's
 * changes and their diff, and reverting a run.
 *
 * changes-walk.c turns a workspace into a git tree (its own walk, never
 * libgit2's index); changes.c keeps the stores, the run_changes table (its
 * only writer) and the snapshot thread; route-changes.c serves them.
 */
#ifndef TD_SERVICE_CHANGES_H
#define TD_SERVICE_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <git2.h>

#include "buf.h"
#include "problem.h"

struct service;
struct wsfile_root;

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

/* ---- changes.c: the stores, snapshots, lists, diffs, reverts -------------------- */

struct changes;

/* When a snapshot is taken. */
enum changes_when {
	CHANGES_START,		/* before the run's agent starts (a resumed run keeps its start) */
	CHANGES_STEP,		/* after a tool that may write */
	CHANGES_END,		/* the run ends, whatever its status */
};

/* The snapshot thread; NULL with *err when it cannot start. */
struct changes *changes_start(struct service *svc, char **err);
/* Takes the queued snapshots, then stops the thread.  NULL ok. */
void changes_stop(struct changes *c);

/*
 * Queues a snapshot of the run's workspace (hidden: what the run may not see,
 * NULL-terminated, copied).  With wait, returns once it is taken; without, a
 * step already queued for the run stands for this one too.
 */
void changes_snapshot(struct changes *c, enum changes_when when, const char *run_id,
    const char *session_id, const char *workspace, char *const *hidden, bool wait);

/* The largest diff answered whole (X-Taskdeck-Truncated beyond). */
#define CHANGES_DIFF_MAX (8 * 1024 * 1024)

/* The most files of a page of GET /runs/:id/changes, and its default. */
#define CHANGES_PAGE_MAX 1000
/* The most bytes of paths of a page (one file at least, whatever its path). */
#define CHANGES_PAGE_BYTES (1024 * 1024)

/*
 * GET /runs/:id/changes: the run's changes from its start, the session's
 * start (from "start") or another run's end (from a run id); the files from
 * the offset-th (in path order), limit at most and CHANGES_PAGE_BYTES of
 * paths (nextCursor: the offset of the next page, or null); the totals are
 * of every file.  The answer, or NULL with *p.  Takes the store lock itself.
 */
cJSON *changes_list(struct service *svc, const char *run_id, const char *from, size_t offset,
    size_t limit, struct problem *p);
/*
 * GET /runs/:id/changes/diff: the unified diff of the changes (of path only,
 * when not NULL) into out (capped at CHANGES_DIFF_MAX: *truncated).  False
 * with *p.
 */
bool changes_diff(struct service *svc, const char *run_id, const char *from, const char *path,
    struct buf *out, bool *truncated, struct problem *p);
/*
 * POST /runs/:id/revert: on the snapshot thread, waited for.  The answer, or
 * NULL with *p (run_active, revert_conflict with details.conflicts).
 */
cJSON *changes_revert(struct service *svc, const char *run_id, bool force, struct problem *p);

/*
 * Whether workspace is still the directory whose snapshots the store of
 * session_id holds (its device and inode, pinned by the first snapshot):
 * TD_OK, or TD_WORKSPACE_REPLACED with *p.  A store with no pin yet, or a
 * directory gone, is TD_OK.
 */
enum td_code changes_check_workspace(struct service *svc, const char *session_id,
    const char *workspace, struct problem *p);

struct store;
/* Deletes the run_changes rows of session_id; false on error.  In the caller's transaction. */
bool changes_delete_session(struct store *st, const char *session_id);
/*
 * On the snapshot thread, after the snapshots queued before it: closes the
 * store of session_id (deleted) and removes its directory; false when it
 * could not be removed whole.  c NULL is ignored.
 */
bool changes_forget(struct changes *c, const char *session_id);
/* Removes the stores of sessions that no longer exist (a crash after a delete); how many. */
long changes_sweep(struct service *svc);

#endif
