/*
 * Artifacts: the content-addressed store under <data>/artifacts/ and the
 * saves that runs make (docs/http-api.md, Artifacts).
 *
 * Store layout: <root>/<first two hex digits>/<64 hex digits of sha256>,
 * written to a temporary file, fsynced and renamed, so a file in the store is
 * always whole.  A version string is "sha256:" followed by the 64 digits.
 */
#ifndef TD_SERVICE_ARTIFACTS_H
#define TD_SERVICE_ARTIFACTS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errors.h"

#define ARTIFACT_VERSION_LEN (7 + 64 + 1)
/* The largest file a run may save, in bytes (64 GiB). */
#define ARTIFACT_MAX_SIZE (UINT64_C(64) << 30)
#define ARTIFACT_PATH_MAX 4096		/* bytes of a saved path */
#define ARTIFACT_NAME_MAX 255		/* characters of a name */

struct service;
struct store;

/*
 * The supervisor's handler of the host request artifact.save: params is
 * {"path", "name"?, "mediaType"?} with path relative to workspace (a
 * canonical absolute directory).  Nothing hidden from the run's commands may
 * be saved: taskdeck's own files, the credential files and hidden (the run's
 * other hidden paths, NULL-terminated, or NULL), checked as wsfile.h says.  Copies the file into the store and inserts
 * a staged (not yet visible) row for run_id.  On success *result is
 * {"artifact": {id, name, path, version, size}}; on failure the code and a
 * message for the agent (malloc'd) are returned.  Never called with the
 * store locked.
 */
enum td_code artifacts_save(struct service *svc, const char *run_id,
    const char *session_id, const char *workspace, const char *const *hidden,
    const cJSON *params, cJSON **result, char **message);

/*
 * Makes the saves of run_id visible, once the run ended.  Only while the
 * store is locked, inside the caller's transaction; false on a store error.
 */
bool artifacts_run_ended(struct store *st, const char *run_id);
/*
 * Deletes the artifact rows of session_id; false on error.  In the caller's
 * transaction.  Their contents stay until artifacts_sweep.
 */
bool artifacts_delete_session(struct store *st, const char *session_id);
/*
 * Removes the contents of the store that no artifact row names (those of
 * deleted sessions); how many.  Under the store lock; a content a save has
 * placed but not yet named by its row stays.
 */
long artifacts_sweep(struct service *svc);
/*
 * Emits artifact.saved (events.h) for each visible save of run_id, in the
 * project project_id.  Only while the store is locked.
 */
void artifacts_emit_saved(struct service *svc, const char *run_id, const char *project_id);
/*
 * A page of the visible saves of session as the API shows them, newest
 * first (all: every save, else the newest of each path), below cursor (an
 * artifact id, NULL for the first page), at most limit; next (TD_ID_MAX
 * bytes) gets the cursor of the next page, "" at the end.  NULL when there
 * is no such session.  Only while the store is locked.
 */
cJSON *artifacts_list(struct store *st, const char *session, bool all, const char *cursor,
    int limit, char *next);
/* The visible artifact id as the API shows it, or NULL.  Only while the store is locked. */
cJSON *artifacts_load(struct store *st, const char *id);
/* What a download needs of a visible artifact (artifacts_file_load). */
struct artifact_file {
	char *name;
	char *version;
	char *media_type;
	uint64_t size;
};
/* Fills *f for the visible artifact id, or false.  Takes the store lock. */
bool artifacts_file_load(struct store *st, const char *id, struct artifact_file *f);
/* Frees the members of f. */
void artifacts_file_free(struct artifact_file *f);
/* The path of a version's content in the store; malloc'd, NULL for a bad version. */
char *artifacts_content_path(const struct service *svc, const char *version);

/*
 * Creates the store's directories and removes temporary files that an
 * interrupted save left behind.  For start-up; false with *err set.
 */
bool artifacts_init(const struct service *svc, char **err);

/* The media type for a file name, from its extension; never NULL. */
const char *artifacts_media_type(const char *name);

enum artifacts_range {
	ARTIFACTS_RANGE_NONE,		/* no usable Range: send the whole body */
	ARTIFACTS_RANGE_PARTIAL,	/* bytes *first to *last (inclusive) */
	ARTIFACTS_RANGE_UNSATISFIABLE,	/* 416 */
};

/*
 * Reads a Range header (NULL when absent) for a body of size bytes: a single
 * bytes=A-B, A- or -N.  Anything else, several ranges included, is NONE.
 */
enum artifacts_range artifacts_range(const char *header, uint64_t size,
    uint64_t *first, uint64_t *last);

/*
 * The Content-Disposition value for name (RFC 6266): attachment with a
 * quoted ASCII filename and, when name needs it, filename* in UTF-8.  malloc'd.
 */
char *artifacts_disposition(const char *name);

#endif
