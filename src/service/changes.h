/*
 * A run's workspace changes (docs/service.md "Workspace changes"): snapshots
 * of the workspace in a shadow git object store per session, the run's
 * changes and their diff, and reverting a run.
 *
 * The module's public interface; what its files share is changes-int.h.
 * route-changes.c serves it.
 */
#ifndef TD_SERVICE_CHANGES_H
#define TD_SERVICE_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "problem.h"

struct service;
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
