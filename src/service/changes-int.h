/*
 * What the parts of the changes module share; not for others (they use
 * changes.h).  Each file calls only the files above it in this list, never
 * one below it, so no two of them call each other:
 *
 *   changes-ignore.c    the .gitignore subset a walk honours
 *   changes-blob.c      what a walk records of one file: a pointer blob, its lstats compared
 *   changes-walk.c      a workspace as a git tree, the stat cache (ignore, blob)
 *   changes-rows.c      the run_changes table (its only writer)
 *   changes-tree.c      comparing two trees of a store
 *   changes-marks.c     the thread's lists of runs whose changes lack their latest state,
 *                       why a walk's tree lacks part of the workspace
 *   changes-store.c     the stores, the workspace's pin, a tree of the workspace now (walk)
 *   changes-snapshot.c  a snapshot job (rows, tree, marks, store)
 *   changes-revert.c    a revert job (rows, tree, marks, store)
 *   changes.c           the snapshot thread, its queue, forgetting a session's store
 *                       (snapshot, revert, marks, store, walk)
 *   changes-view.c      the API's lists and diffs, on the caller's thread (rows, tree,
 *                       marks, store)
 *
 * Locks: the store lock and c->mu are never held together.
 */
#ifndef TD_SERVICE_CHANGES_INT_H
#define TD_SERVICE_CHANGES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/stat.h>
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

/* ---- changes-blob.c: what a walk records of one file ------------------------------ */

struct changes_walk_stats;

/* The first bytes of a blob that stands for a file not stored (its size and hash). */
#define CHANGES_POINTER_MAGIC "\0taskdeck: not stored\n"
#define CHANGES_POINTER_MAGIC_LEN (sizeof CHANGES_POINTER_MAGIC - 1)
/* The bytes of a file not stored that are hashed; its mtime stands for the rest. */
#define CHANGES_POINTER_HASH_MAX (256LL * 1024 * 1024)
/* The longest text of a pointer blob. */
#define CHANGES_POINTER_TEXT_MAX 320
/*
 * The text of the pointer blob of the regular file fd (st: its fstat) and its
 * length, or -1 when it cannot be read.  *budget: the bytes the walk may
 * still read for such files (past it, the file is recorded by its size,
 * times and inode, unhashed); what it reads is taken from it and added to
 * *read_bytes.
 */
long changes_pointer_text(int fd, const struct stat *st, long long *budget,
    long long *read_bytes, char text[CHANGES_POINTER_TEXT_MAX]);
/* What an lstat said of a file, as a split walk keeps it until it reads the file. */
struct changes_lstat {
	dev_t dev;
	ino_t ino;
	off_t size;
	long long mtime_ns, ctime_ns;
	mode_t mode;
};
void changes_lstat_keep(struct changes_lstat *k, const struct stat *st);
/* A struct stat with what k kept (the rest zero). */
void changes_lstat_back(const struct changes_lstat *k, struct stat *st);
/* Whether a and b are the same state of a file (device, inode, size, times, mode). */
bool changes_same_stat(const struct stat *a, const struct stat *b);
/* Counts rel (named while the names fit) as changed between a split walk's passes. */
void changes_stats_changed(struct changes_walk_stats *st, const char *rel);

/* ---- changes-walk.c: a workspace as a tree ------------------------------------- */

/* The deepest directory a walk reads, and the most entries. */
#define CHANGES_WALK_MAX_DEPTH 128
#define CHANGES_WALK_MAX_ENTRIES 500000

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
	/* Of a split walk: entries changed between their listing and their reading. */
	long changed, changed_named;
	char changed_names[256];	/* the first of them, ", " between */
};


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
 *
 * With scanned, the walk is split: a first pass lists the workspace (an
 * lstat of each name) and reads only the files the stat cache lacks whose
 * times are within 50 ms of the walk's start; then scanned(arg) is called
 * (the run may start), and a second pass reads the files it listed, each
 * compared with its lstat before and after: an entry gone or changed
 * meanwhile is left out and named in stats (changed), what was made
 * meanwhile is not in the tree.  The tree is the workspace as the listing saw it.
 */
bool changes_walk(struct changes_walker *w, struct wsfile_root *root,
    const struct changes_limits *lim, void (*scanned)(void *), void *arg, git_oid *tree,
    struct changes_walk_stats *stats, char **why);


/* ---- what the snapshot thread holds (changes.c starts it) ------------------------ */

/* How long a run waits for its start snapshot before its agent starts anyway. */
#define CHANGES_START_WAIT_MS 2000
/* The longest reason kept of an incomplete snapshot. */
#define CHANGES_WHY_MAX 512
/* Why a run's latest snapshot is missing, kept in memory too: the disk may be full. */
#define CHANGES_FAILED_WHY "the latest snapshot could not be taken (the workspace could " \
	"not be read or the store written, the disk may be full): the changes are those of " \
	"the one before"

enum changes_job_kind { JOB_SNAPSHOT, JOB_REVERT, JOB_FORGET };

struct changes_job {
	enum changes_job_kind kind;
	enum changes_when when;
	char run_id[TD_ID_MAX];
	char session_id[TD_ID_MAX];
	char *workspace;
	char **hidden;
	bool force;
	bool wait;			/* the asker frees it after done */
	bool done;
	bool walked;			/* the workspace is read: what happens now is not in it */
	bool late;			/* the asker stopped waiting before it was read */
	bool listed;			/* a start listed: its asker goes on (then the thread frees it) */
	cJSON *answer;			/* a revert's answer, or NULL with problem */
	struct problem problem;
	struct changes_job *next;
};

struct changes_session {
	char id[TD_ID_MAX];
	git_repository *repo;
	struct changes_walker *walker;
	int64_t used;
	struct changes_session *next;
};

/* A run in one of the thread's lists (its latest snapshot failed; its end is pending). */
struct changes_mark {
	char run_id[TD_ID_MAX];
	struct changes_mark *next;
};

/* A list of runs (CHANGES_FAILED_MAX at most), under the thread's mutex. */
struct changes_marks {
	struct changes_mark *head;
	size_t n;
};

struct changes {
	struct service *svc;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct changes_job *head, *tail;
	bool stopping;
	struct changes_session *sessions;	/* the thread's own */
	char *dir;				/* <data>/changes */
	long long total;			/* the bytes of every store; -1: not counted yet */
	struct changes_marks failed;		/* latest snapshot failed; under mu */
	struct changes_marks ending;		/* end snapshot not taken yet; under mu */
	int git;				/* libgit2: 0 not yet, 1 ready, -1 failed; under mu */
};

/* ---- changes-rows.c: the run_changes table --------------------------------------- */

/* One row of run_changes. */
struct changes_row {
	char session_id[TD_ID_MAX];
	git_oid start, end;
	long steps;
	long additions, deletions;	/* of the changes between start and end */
	int64_t reverted_at;		/* 0: never */
	char start_why[CHANGES_WHY_MAX];	/* why the start lacks part of the workspace; "" */
	char end_why[CHANGES_WHY_MAX];		/* the same of the latest snapshot */
};

/* The caller holds the store lock for each. */
bool changes_row_get(struct store *st, const char *run_id, struct changes_row *row);
bool changes_row_insert(struct store *st, const char *run_id, const char *session_id,
    const git_oid *tree, const char *why);
bool changes_row_update(struct store *st, const char *run_id, const git_oid *tree, long files,
    long additions, long deletions, const char *why);
/* Why the latest snapshot, the same tree as the one before, lacks part of the workspace. */
bool changes_row_end_why(struct store *st, const char *run_id, const char *why);
bool changes_row_reverted(struct store *st, const char *run_id, int64_t at);
/* The session's first snapshot: the start of its oldest run with one (why: as in a row). */
bool changes_session_start(struct store *st, const char *session_id, git_oid *tree,
    char why[CHANGES_WHY_MAX]);

/* ---- changes-tree.c: comparing two trees ----------------------------------------- */

/* Whether blob oid stands for a file that was not stored. */
bool changes_is_pointer(git_repository *repo, const git_oid *oid);
/* The diff of two trees (a NULL oid: empty), restricted to path when not NULL. */
git_diff *changes_tree_diff(git_repository *repo, const git_oid *from, const git_oid *to,
    const char *path);

/* One changed file: its line counts, whether it is binary or not stored. */
struct changes_file {
	const git_diff_delta *delta;
	size_t additions, deletions;
	bool binary, too_large;
	git_patch *patch;		/* NULL when too_large */
};

/* The i-th file of diff (free f->patch). */
void changes_file_read(git_repository *repo, git_diff *diff, size_t i, struct changes_file *f);
/* The paths of a diff's deltas, sorted (borrowed from the diff; free the array). */
const char **changes_paths(git_diff *diff, size_t *n);
/* The added and deleted lines of the deltas of diff whose path is among paths (sorted). */
void changes_lines_of(git_repository *repo, git_diff *diff, const char **paths, size_t npaths,
    long *additions, long *deletions);

/* ---- changes-marks.c: what the changes of a run lack ----------------------------- */

/* Puts run_id in the list m, or takes it out; the caller holds c->mu. */
void changes_marks_set(struct changes_marks *m, const char *run_id, bool on);
void changes_marks_clear(struct changes_marks *m);
/* Marks or clears run_id as a run whose latest snapshot failed. */
void changes_failed_mark(struct changes *c, const char *run_id, bool failed);
/* Why the changes of run_id lack its latest state, from the thread's lists, or NULL. */
const char *changes_marked(struct changes *c, const char *run_id);
/* Says in obj whether files may be missing (incomplete, incompleteReason: why, or NULL). */
void changes_add_incomplete(cJSON *obj, const char *why);
/* Why a walk's tree lacks what it lacks (malloc'd), or NULL when it is whole. */
char *changes_walk_incomplete(const struct changes_walk_stats *stats);

/* ---- changes-store.c: the stores ------------------------------------------------- */

/*
 * libgit2, set up before the first store is opened (changes_stop ends it);
 * false when it could not be.
 */
bool changes_git(struct changes *c);
/* The path of the store of session_id (malloc'd). */
char *changes_repo_path(const struct service *svc, const char *session_id);
/* Saves the stat cache of s into its store, for the next process. */
void changes_session_save(struct changes *c, const struct changes_session *s);
/* Saves the stat cache of s, then frees s and closes its store. */
void changes_session_close(struct changes *c, struct changes_session *s);
/* The snapshot thread's state of session id: its store opened or made; NULL on error. */
struct changes_session *changes_session_get(struct changes *c, const char *id);
/*
 * Whether the directory (dev, ino) is the workspace whose snapshots the store
 * of session_id holds.  A store that pins none yet takes this one when pin is
 * true (its first snapshot), and accepts any when false.
 */
bool changes_root_pinned(const char *changes_dir, const char *session_id, dev_t dev,
    ino_t ino, bool pin);
/* The refusal of a workspace that is not the pinned one. */
enum td_code changes_replaced_problem(struct problem *p, const char *workspace);
/*
 * The tree of the workspace now, on the snapshot thread; *incomplete
 * (malloc'd, may be NULL) why it lacks part of the workspace.  False with
 * *replaced when the directory is not the one the store pinned: not read.
 * A store with no pin yet takes this directory's with pin (a snapshot of a
 * run, never a revert's look).
 */
bool changes_take(struct changes *c, struct changes_session *s, const char *workspace,
    char *const *hidden, void (*scanned)(void *), void *arg, git_oid *tree,
    char **incomplete, bool pin, bool *replaced);

/* ---- changes-snapshot.c, changes-revert.c: the thread's jobs --------------------- */

/* Takes a snapshot of job's workspace, records it and emits run.changes. */
void changes_do_snapshot(struct changes *c, struct changes_job *job);
/* Reverts job's run: job->answer, or NULL with job->problem. */
void changes_do_revert(struct changes *c, struct changes_job *job);

#endif
