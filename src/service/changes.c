/*
 * A run's workspace changes (changes.h): one bare git repository per session
 * under <data>/changes/, used as an object store only (no refs, no index);
 * the run_changes table (this file is its only writer) holds each run's start
 * and latest tree.  Snapshots and reverts run on one thread of their own, in
 * the order they were asked, so the snapshots of a session never interleave;
 * lists and diffs read the store on the caller's thread with a repository
 * handle of their own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cache.h"
#include "changes-int.h"
#include "ids.h"
#include "log.h"
#include "paths.h"
#include "resource.h"
#include "runs.h"
#include "sandbox.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "timeutil.h"
#include "wsfile.h"
#include "xalloc.h"

/* Sessions whose store and stat cache stay open on the snapshot thread. */
#define CHANGES_OPEN_SESSIONS 16
/* The stat cache's file in a store. */
#define CHANGES_STAT_CACHE "taskdeck-stat-cache"
/* The file of a store that pins its workspace: the directory its first snapshot read. */
#define CHANGES_ROOT_PIN "taskdeck-workspace"
#define CHANGES_REPLACED_WHY "the session's directory was replaced since its first snapshot " \
	"(moved, or a link or another directory is at its path): it is no longer read"
/* The paths a run.changes event names. */
#define CHANGES_EVENT_PATHS 20
/* How long a run waits for its start snapshot before its agent starts anyway. */
#define CHANGES_START_WAIT_MS 2000
/* The longest reason kept of an incomplete snapshot. */
#define CHANGES_WHY_MAX 512
/* Why a run's latest snapshot is missing, kept in memory too: the disk may be full. */
#define CHANGES_FAILED_WHY "the latest snapshot could not be taken (the workspace could " \
	"not be read or the store written, the disk may be full): the changes are those of " \
	"the one before"
/* The runs kept in each of the thread's lists in memory. */
#define CHANGES_FAILED_MAX 1024
/* How long a run's end waits for its end snapshot before it is final anyway. */
#define CHANGES_END_WAIT_MS 5000
#define CHANGES_ENDING_WHY "the run's end snapshot is still being taken: the changes are " \
	"those of the snapshot before"

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
};

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

/* ---- the table ------------------------------------------------------------------ */

static bool
changes_row_get(struct store *st, const char *run_id, struct changes_row *row)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT session_id, start_tree, end_tree, steps,"
	    " reverted_at, additions, deletions, start_incomplete, end_incomplete"
	    " FROM run_changes WHERE run_id = ?1");
	bool found = false;

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(row->session_id, sizeof row->session_id, "%s", resource_text(s, 0));
		found = git_oid_fromstr(&row->start, resource_text(s, 1)) == 0 &&
		    git_oid_fromstr(&row->end, resource_text(s, 2)) == 0;
		row->steps = sqlite3_column_int(s, 3);
		row->reverted_at = sqlite3_column_int64(s, 4);
		row->additions = sqlite3_column_int(s, 5);
		row->deletions = sqlite3_column_int(s, 6);
		snprintf(row->start_why, sizeof row->start_why, "%s", resource_text(s, 7));
		snprintf(row->end_why, sizeof row->end_why, "%s", resource_text(s, 8));
	}
	sqlite3_reset(s);
	return found;
}

static bool
changes_row_insert(struct store *st, const char *run_id, const char *session_id,
    const git_oid *tree, const char *why)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO run_changes (run_id, session_id,"
	    " start_tree, end_tree, updated_at, start_incomplete, end_incomplete)"
	    " VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?5)");
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	git_oid_tostr(hex, sizeof hex, tree);
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, hex, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 4, td_now_ms());
	sqlite3_bind_text(s, 5, why, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

static bool
changes_row_update(struct store *st, const char *run_id, const git_oid *tree, long files,
    long additions, long deletions, const char *why)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE run_changes SET end_tree = ?2,"
	    " steps = steps + 1, files = ?3, additions = ?4, deletions = ?5, updated_at = ?6,"
	    " end_incomplete = ?7 WHERE run_id = ?1");
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	git_oid_tostr(hex, sizeof hex, tree);
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, files);
	sqlite3_bind_int64(s, 4, additions);
	sqlite3_bind_int64(s, 5, deletions);
	sqlite3_bind_int64(s, 6, td_now_ms());
	sqlite3_bind_text(s, 7, why, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

/* Why the latest snapshot, the same tree as the one before, lacks part of the workspace. */
static bool
changes_row_end_why(struct store *st, const char *run_id, const char *why)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE run_changes SET end_incomplete = ?2"
	    " WHERE run_id = ?1");
	int rc;

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, why, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

static bool
changes_row_reverted(struct store *st, const char *run_id, int64_t at)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE run_changes SET reverted_at = ?2,"
	    " updated_at = ?2 WHERE run_id = ?1");
	int rc;

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, at);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

/* The session's first snapshot: the start of its oldest run with one (why: as in a row). */
static bool
changes_session_start(struct store *st, const char *session_id, git_oid *tree,
    char why[CHANGES_WHY_MAX])
{
	sqlite3_stmt *s = store_stmt(st, "SELECT start_tree, start_incomplete FROM run_changes"
	    " WHERE session_id = ?1 ORDER BY run_id LIMIT 1");
	bool found = false;

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		found = git_oid_fromstr(tree, resource_text(s, 0)) == 0;
		snprintf(why, CHANGES_WHY_MAX, "%s", resource_text(s, 1));
	}
	sqlite3_reset(s);
	return found;
}

/* ---- the stores ----------------------------------------------------------------- */

static char *
changes_repo_path(const struct service *svc, const char *session_id)
{
	return xasprintf("%s/changes/%s.git", svc->paths.data_dir, session_id);
}

/* The bytes under dir (the objects of a store), two levels deep. */
static long long
changes_dir_bytes(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long long total = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char *p;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		p = xasprintf("%s/%s", dir, de->d_name);
		if (lstat(p, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth > 0)
				total += changes_dir_bytes(p, depth - 1);
			else if (S_ISREG(st.st_mode))
				total += st.st_size;
		}
		free(p);
	}
	closedir(d);
	return total;
}

/* Saves the stat cache of s into its store, for the next process. */
static void
changes_session_save(struct changes *c, const struct changes_session *s)
{
	char *path = xasprintf("%s/%s.git/%s", c->dir, s->id, CHANGES_STAT_CACHE);

	if (!changes_walker_save(s->walker, path))
		log_warn("changes: cannot save the stat cache %s: %s", path, strerror(errno));
	free(path);
}

static void
changes_session_close(struct changes *c, struct changes_session *s)
{
	changes_session_save(c, s);
	changes_walker_free(s->walker);
	git_repository_free(s->repo);
	free(s);
}

/* The snapshot thread's state of session id: its store opened or made. */
static struct changes_session *
changes_session_get(struct changes *c, const char *id)
{
	struct changes_session *s, **pp, **oldest = NULL;
	char *path, *objects;
	int n = 0;

	for (pp = &c->sessions; (s = *pp) != NULL; pp = &s->next) {
		if (strcmp(s->id, id) == 0) {
			s->used = td_mono_ms();
			return s;
		}
		if (oldest == NULL || s->used < (*oldest)->used)
			oldest = pp;
		n++;
	}
	if (n >= CHANGES_OPEN_SESSIONS) {
		s = *oldest;
		*oldest = s->next;
		changes_session_close(c, s);
	}
	s = xcalloc(1, sizeof *s);
	snprintf(s->id, sizeof s->id, "%s", id);
	path = changes_repo_path(c->svc, id);
	if (mkdir(c->dir, 0700) != 0 && errno != EEXIST)
		log_warn("changes: cannot make %s: %s", c->dir, strerror(errno));
	if (git_repository_open_bare(&s->repo, path) != 0 &&
	    git_repository_init(&s->repo, path, 1) != 0) {
		const git_error *e = git_error_last();
		log_error("changes: cannot open the store %s: %s", path, e ? e->message : "?");
		free(path);
		free(s);
		return NULL;
	}
	objects = xasprintf("%s/objects", path);
	s->walker = changes_walker_new(s->repo, changes_dir_bytes(objects, 1));
	free(objects);
	if (s->walker == NULL) {
		free(path);
		git_repository_free(s->repo);
		free(s);
		return NULL;
	}
	objects = xasprintf("%s/%s", path, CHANGES_STAT_CACHE);
	changes_walker_load(s->walker, objects);
	free(objects);
	free(path);
	s->used = td_mono_ms();
	s->next = c->sessions;
	c->sessions = s;
	return s;
}

/* ---- the workspace's identity ---------------------------------------------------- */

/*
 * Whether the directory (dev, ino) is the workspace whose snapshots the store
 * of session_id holds.  A store that pins none yet takes this one when pin is
 * true (its first snapshot), and accepts any when false.
 */
static bool
changes_root_pinned(const char *changes_dir, const char *session_id, dev_t dev, ino_t ino,
    bool pin)
{
	char *path = xasprintf("%s/%s.git/%s", changes_dir, session_id, CHANGES_ROOT_PIN);
	char text[64], *tmp;
	uintmax_t want_dev, want_ino;
	bool ok = true;
	FILE *f = fopen(path, "re");

	if (f != NULL) {
		ok = fgets(text, sizeof text, f) != NULL &&
		    sscanf(text, "%ju %ju", &want_dev, &want_ino) == 2 &&
		    want_dev == (uintmax_t)dev && want_ino == (uintmax_t)ino;
		fclose(f);
	} else if (errno == ENOENT && pin) {
		tmp = xasprintf("%s.tmp", path);
		f = fopen(tmp, "we");
		if (f == NULL || fprintf(f, "%ju %ju\n", (uintmax_t)dev, (uintmax_t)ino) < 0 ||
		    fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 ||
		    rename(tmp, path) != 0) {
			log_warn("changes: cannot pin the workspace of %s: %s", session_id,
			    strerror(errno));
			unlink(tmp);
		}
		free(tmp);
	} else if (errno != ENOENT) {
		ok = false;
	}
	free(path);
	return ok;
}

/* The refusal of a workspace that is not the pinned one. */
static enum td_code
changes_replaced_problem(struct problem *p, const char *workspace)
{
	problem_set(p, TD_WORKSPACE_REPLACED, "cwd", "The session's directory %s is not the "
	    "one its first snapshot read (it was moved, or a link or another directory is at "
	    "its path): no run starts there and no revert writes there.", workspace);
	p->details = cJSON_CreateObject();
	cJSON_AddStringToObject(p->details, "cwd", workspace);
	return TD_WORKSPACE_REPLACED;
}

enum td_code
changes_check_workspace(struct service *svc, const char *session_id, const char *workspace,
    struct problem *p)
{
	char *dir = xasprintf("%s/changes", svc->paths.data_dir);
	struct stat st;
	int fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool same = fd >= 0 && fstat(fd, &st) == 0 &&
	    changes_root_pinned(dir, session_id, st.st_dev, st.st_ino, false);

	if (fd >= 0)
		close(fd);
	free(dir);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return TD_OK;	/* gone: the run fails in its own way */
	if (same)
		return TD_OK;
	return changes_replaced_problem(p, workspace);
}

/* ---- comparing two trees -------------------------------------------------------- */

/* Whether blob oid stands for a file that was not stored. */
static bool
changes_is_pointer(git_repository *repo, const git_oid *oid)
{
	git_odb *odb;
	git_odb_object *obj;
	size_t len;
	git_object_t type;
	bool pointer = false;

	if (git_oid_is_zero(oid) || git_repository_odb(&odb, repo) != 0)
		return false;
	if (git_odb_read_header(&len, &type, odb, oid) == 0 && type == GIT_OBJECT_BLOB &&
	    len < 256 && len >= CHANGES_POINTER_MAGIC_LEN &&
	    git_odb_read(&obj, odb, oid) == 0) {
		pointer = memcmp(git_odb_object_data(obj), CHANGES_POINTER_MAGIC,
		    CHANGES_POINTER_MAGIC_LEN) == 0;
		git_odb_object_free(obj);
	}
	git_odb_free(odb);
	return pointer;
}

/* The diff of two trees (a NULL oid: empty), restricted to path when not NULL. */
static git_diff *
changes_tree_diff(git_repository *repo, const git_oid *from, const git_oid *to,
    const char *path)
{
	git_diff_options opts;
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	char *spec[1] = { (char *)path };

	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.flags = GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_DISABLE_PATHSPEC_MATCH;
	opts.context_lines = 3;
	if (path != NULL) {
		opts.pathspec.strings = spec;
		opts.pathspec.count = 1;
	}
	if ((from != NULL && git_tree_lookup(&a, repo, from) != 0) ||
	    (to != NULL && git_tree_lookup(&b, repo, to) != 0) ||
	    git_diff_tree_to_tree(&diff, repo, a, b, &opts) != 0) {
		const git_error *e = git_error_last();
		log_error("changes: cannot compare two snapshots: %s", e ? e->message : "?");
		diff = NULL;
	}
	git_tree_free(a);
	git_tree_free(b);
	return diff;
}

static const char *
changes_status(git_delta_t s)
{
	switch (s) {
	case GIT_DELTA_ADDED:
		return "added";
	case GIT_DELTA_DELETED:
		return "deleted";
	case GIT_DELTA_TYPECHANGE:
		return "type-changed";
	default:
		return "modified";
	}
}

static void
changes_add_mode(cJSON *obj, const char *key, uint32_t mode)
{
	char text[16];

	if (mode == 0) {
		cJSON_AddNullToObject(obj, key);
		return;
	}
	snprintf(text, sizeof text, "%o", mode);
	cJSON_AddStringToObject(obj, key, text);
}

/* One changed file: its line counts, whether it is binary or not stored. */
struct changes_file {
	const git_diff_delta *delta;
	size_t additions, deletions;
	bool binary, too_large;
	git_patch *patch;		/* NULL when too_large */
};

static void
changes_file_read(git_repository *repo, git_diff *diff, size_t i, struct changes_file *f)
{
	memset(f, 0, sizeof *f);
	f->delta = git_diff_get_delta(diff, i);
	f->too_large = changes_is_pointer(repo, &f->delta->old_file.id) ||
	    changes_is_pointer(repo, &f->delta->new_file.id);
	if (f->too_large || git_patch_from_diff(&f->patch, diff, i) != 0)
		return;
	git_patch_line_stats(NULL, &f->additions, &f->deletions, f->patch);
	f->binary = (git_patch_get_delta(f->patch)->flags & GIT_DIFF_FLAG_BINARY) != 0;
}

static int
changes_path_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The paths of a diff's deltas, sorted (borrowed from the diff; free the array). */
static const char **
changes_paths(git_diff *diff, size_t *n)
{
	const char **paths;

	*n = git_diff_num_deltas(diff);
	paths = xcalloc(*n ? *n : 1, sizeof *paths);
	for (size_t i = 0; i < *n; i++)
		paths[i] = git_diff_get_delta(diff, i)->new_file.path;
	if (*n > 1)
		qsort(paths, *n, sizeof *paths, changes_path_cmp);
	return paths;
}

/* The added and deleted lines of the deltas of diff whose path is among paths (sorted). */
static void
changes_lines_of(git_repository *repo, git_diff *diff, const char **paths, size_t npaths,
    long *additions, long *deletions)
{
	*additions = *deletions = 0;
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const char *path = git_diff_get_delta(diff, i)->new_file.path;
		struct changes_file f;

		if (npaths == 0 || bsearch(&path, paths, npaths, sizeof *paths,
		    changes_path_cmp) == NULL)
			continue;
		changes_file_read(repo, diff, i, &f);
		*additions += (long)f.additions;
		*deletions += (long)f.deletions;
		git_patch_free(f.patch);
	}
}

/* ---- snapshots ------------------------------------------------------------------- */

/* Puts run_id in the list m, or takes it out; the caller holds c->mu. */
static void
changes_marks_set(struct changes_marks *m, const char *run_id, bool on)
{
	struct changes_mark **pp, *f;

	for (pp = &m->head; (f = *pp) != NULL; pp = &f->next) {
		if (strcmp(f->run_id, run_id) == 0) {
			if (!on) {
				*pp = f->next;
				free(f);
				m->n--;
			}
			return;
		}
	}
	if (on && m->n < CHANGES_FAILED_MAX) {
		f = xcalloc(1, sizeof *f);
		snprintf(f->run_id, sizeof f->run_id, "%s", run_id);
		f->next = m->head;
		m->head = f;
		m->n++;
	}
}

static void
changes_marks_clear(struct changes_marks *m)
{
	while (m->head != NULL) {
		struct changes_mark *f = m->head;
		m->head = f->next;
		free(f);
	}
	m->n = 0;
}

/* Marks or clears run_id as a run whose latest snapshot failed. */
static void
changes_failed_mark(struct changes *c, const char *run_id, bool failed)
{
	pthread_mutex_lock(&c->mu);
	changes_marks_set(&c->failed, run_id, failed);
	pthread_mutex_unlock(&c->mu);
}

/* Why the changes of run_id lack its latest state, from the thread's lists, or NULL. */
static const char *
changes_marked(struct changes *c, const char *run_id)
{
	const char *why = NULL;

	if (c == NULL)
		return NULL;
	pthread_mutex_lock(&c->mu);
	for (const struct changes_mark *f = c->ending.head; f != NULL && !why; f = f->next)
		if (strcmp(f->run_id, run_id) == 0)
			why = CHANGES_ENDING_WHY;
	for (const struct changes_mark *f = c->failed.head; f != NULL && !why; f = f->next)
		if (strcmp(f->run_id, run_id) == 0)
			why = CHANGES_FAILED_WHY;
	pthread_mutex_unlock(&c->mu);
	return why;
}

/* The bytes of the objects of every store under dir. */
static long long
changes_all_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long long total = 0;

	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char *objects;

		if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".git") != 0)
			continue;
		objects = xasprintf("%s/%s/objects", dir, de->d_name);
		total += changes_dir_bytes(objects, 1);
		free(objects);
	}
	if (d != NULL)
		closedir(d);
	return total;
}

/*
 * The limits of a snapshot of s: changes.quotaBytes for its store, lowered to
 * what changes.totalQuotaBytes leaves of every store.
 */
static void
changes_limits_read(struct changes *c, const struct changes_session *s,
    struct changes_limits *lim)
{
	long long total_quota, room;

	settings_changes_limits(c->svc->settings, &lim->max_file_bytes, &lim->quota_bytes,
	    &total_quota);
	if (c->total < 0)
		c->total = changes_all_bytes(c->dir);
	room = total_quota - c->total;
	if (room < 0)
		room = 0;
	if (changes_walker_stored(s->walker) + room < lim->quota_bytes)
		lim->quota_bytes = changes_walker_stored(s->walker) + room;
}

/*
 * The tree of the workspace now, on the snapshot thread; *incomplete
 * (malloc'd, may be NULL) why it lacks part of the workspace.  False with
 * *replaced when the directory is not the one the store pinned: not read.
 * A store with no pin yet takes this directory's with pin (a snapshot of a
 * run, never a revert's look).
 */
static bool
changes_take(struct changes *c, struct changes_session *s, const char *workspace,
    char *const *hidden, git_oid *tree, char **incomplete, bool pin, bool *replaced)
{
	struct changes_limits lim;
	struct changes_walk_stats stats;
	struct wsfile_root *root;
	char *why = NULL;
	bool ok;
	long long stored;
	int64_t t0 = td_mono_ms();

	*incomplete = NULL;
	*replaced = false;
	changes_limits_read(c, s, &lim);
	stored = changes_walker_stored(s->walker);
	root = wsfile_root_open(workspace, (const char *const *)hidden, &why);
	if (root == NULL) {
		log_warn("changes: cannot open the workspace %s: %s", workspace, why);
		free(why);
		return false;
	}
	{
		dev_t dev;
		ino_t ino;

		wsfile_root_ident(root, &dev, &ino);
		if (!changes_root_pinned(c->dir, s->id, dev, ino, pin)) {
			log_warn("changes: %s is not the directory the first snapshot of %s read: "
			    "not read", workspace, s->id);
			wsfile_root_free(root);
			*replaced = true;
			return false;
		}
	}
	ok = changes_walk(s->walker, root, &lim, tree, &stats, &why);
	c->total += changes_walker_stored(s->walker) - stored;
	wsfile_root_free(root);
	if (!ok) {
		log_warn("changes: no snapshot of %s: %s", workspace, why);
		free(why);
		return false;
	}

	*incomplete = changes_walk_incomplete(&stats);
	log_debug("changes: snapshot of %s: %ld files, %ld read, %ld by size and hash "
	    "(%lld bytes hashed for them), %ld left out, stat cache %lld bytes, %lldms%s%s",
	    workspace, stats.files, stats.hashed, stats.pointers, stats.pointer_bytes,
	    stats.skipped, changes_walker_cache_bytes(s->walker),
	    (long long)(td_mono_ms() - t0), *incomplete ? ": " : "",
	    *incomplete ? *incomplete : "");
	return true;
}

static void
changes_do_snapshot(struct changes *c, struct changes_job *job)
{
	struct store *st = c->svc->store;
	struct changes_session *s = changes_session_get(c, job->session_id);
	struct changes_row row;
	git_oid tree;
	git_diff *total = NULL, *step = NULL, *before = NULL;
	long files, adds, dels, old_adds, old_dels, new_adds, new_dels;
	const char **paths = NULL;
	size_t npaths;
	cJSON *data, *names;
	char *why = NULL;
	bool found, late, replaced = false;

	if (s == NULL || !changes_take(c, s, job->workspace, job->hidden, &tree, &why, true,
	    &replaced)) {
		log_warn("run %s: no snapshot of its workspace; the run goes on", job->run_id);
		if (replaced) {
			store_lock(st);
			if (changes_row_get(st, job->run_id, &row))
				changes_row_end_why(st, job->run_id, CHANGES_REPLACED_WHY);
			store_unlock(st);
			return;
		}
		/* The changes stay those of the snapshot before, and say so. */
		changes_failed_mark(c, job->run_id, true);
		store_lock(st);
		if (changes_row_get(st, job->run_id, &row))
			changes_row_end_why(st, job->run_id, CHANGES_FAILED_WHY);
		store_unlock(st);
		return;
	}
	pthread_mutex_lock(&c->mu);
	job->walked = true;
	late = job->late;
	pthread_mutex_unlock(&c->mu);
	if (late) {
		char *both = xasprintf("the agent started before the start snapshot was "
		    "complete (after %d ms): what it changed meanwhile may be missing%s%s",
		    CHANGES_START_WAIT_MS, why ? "; " : "", why ? why : "");
		free(why);
		why = both;
	}
	if (why != NULL && strlen(why) >= CHANGES_WHY_MAX)
		why[CHANGES_WHY_MAX - 1] = '\0';
	if (job->when == CHANGES_END)
		changes_session_save(c, s);
	store_lock(st);
	found = changes_row_get(st, job->run_id, &row);
	if (!found && !changes_row_insert(st, job->run_id, job->session_id, &tree, why))
		log_error("run %s: cannot record its first snapshot", job->run_id);
	if (!found) {
		cache_drop(c->svc->cache, job->run_id);
	} else if (git_oid_equal(&row.end, &tree) && strcmp(row.end_why, why ? why : "") != 0) {
		bool recorded = changes_row_end_why(st, job->run_id, why);

		changes_failed_mark(c, job->run_id, !recorded);
		if (!recorded)
			log_error("run %s: cannot record a snapshot", job->run_id);
	} else if (git_oid_equal(&row.end, &tree)) {
		changes_failed_mark(c, job->run_id, false);
	}
	store_unlock(st);
	if (!found || git_oid_equal(&row.end, &tree)) {
		free(why);
		return;
	}
	/*
	 * The counts change only for the paths this step changed: their lines
	 * from the start to the last snapshot go, from the start to this one
	 * come, so a step reads what it changed, not everything the run did.
	 */
	total = changes_tree_diff(s->repo, &row.start, &tree, NULL);
	step = changes_tree_diff(s->repo, &row.end, &tree, NULL);
	before = changes_tree_diff(s->repo, &row.start, &row.end, NULL);
	if (total == NULL || step == NULL || before == NULL)
		goto out;
	paths = changes_paths(step, &npaths);
	changes_lines_of(s->repo, before, paths, npaths, &old_adds, &old_dels);
	changes_lines_of(s->repo, total, paths, npaths, &new_adds, &new_dels);
	files = (long)git_diff_num_deltas(total);
	adds = row.additions - old_adds + new_adds;
	dels = row.deletions - old_dels + new_dels;
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "runId", job->run_id);
	cJSON_AddNumberToObject(data, "seq", (double)row.steps + 1);
	cJSON_AddNumberToObject(data, "files", (double)files);
	cJSON_AddNumberToObject(data, "additions", (double)adds);
	cJSON_AddNumberToObject(data, "deletions", (double)dels);
	names = cJSON_AddArrayToObject(data, "paths");
	for (size_t i = 0; i < git_diff_num_deltas(step) && i < CHANGES_EVENT_PATHS; i++)
		cJSON_AddItemToArray(names, cJSON_CreateString(
		    git_diff_get_delta(step, i)->new_file.path));
	store_lock(st);
	if (changes_row_update(st, job->run_id, &tree, files, adds, dels, why)) {
		changes_failed_mark(c, job->run_id, false);
		cache_drop(c->svc->cache, job->run_id);
		run_emit(c->svc, "run.changes", job->run_id, data);
	} else {
		log_error("run %s: cannot record a snapshot", job->run_id);
		changes_failed_mark(c, job->run_id, true);
		cJSON_Delete(data);
	}
	store_unlock(st);
out:
	free(why);
	free(paths);
	git_diff_free(total);
	git_diff_free(step);
	git_diff_free(before);
}

/* Says in obj whether files may be missing (incomplete, incompleteReason: why, or NULL). */
static void
changes_add_incomplete(cJSON *obj, const char *why)
{
	cJSON_AddBoolToObject(obj, "incomplete", why != NULL);
	if (why != NULL)
		cJSON_AddStringToObject(obj, "incompleteReason", why);
	else
		cJSON_AddNullToObject(obj, "incompleteReason");
}

/* ---- revert ---------------------------------------------------------------------- */

/*
 * The directory holding path, opened from rootfd one component at a time
 * without following a link (made where missing with create); *name its last
 * component.  -1 with errno.
 */
static int
changes_open_parent(struct wsfile_root *r, int rootfd, const char *path, bool create,
    char **dir_copy, const char **name)
{
	char *p = xstrdup(path), *slash, *comp = p;
	int fd = dup(rootfd);

	*dir_copy = p;
	while (fd >= 0 && (slash = strchr(comp, '/')) != NULL) {
		int next;

		*slash = '\0';
		next = wsfile_open_subdir(r, fd, comp);
		if (next < 0 && errno == ENOENT && create && mkdirat(fd, comp, 0755) == 0)
			next = wsfile_open_subdir(r, fd, comp);
		close(fd);
		fd = next;
		comp = slash + 1;
	}
	*name = comp;
	return fd;
}

/* Puts the blob of entry (a file or a link) at name in dirfd: a new file, then rename. */
static bool
changes_restore(git_repository *repo, int dirfd, const char *name, const git_tree_entry *e)
{
	git_blob *blob;
	char tmp[64], rnd[17];
	const void *data;
	size_t len;
	bool ok = false;
	int fd;

	if (git_blob_lookup(&blob, repo, git_tree_entry_id(e)) != 0)
		return false;
	data = git_blob_rawcontent(blob);
	len = (size_t)git_blob_rawsize(blob);
	td_random_hex(rnd, 8);
	snprintf(tmp, sizeof tmp, ".taskdeck-revert-%s", rnd);
	if (git_tree_entry_filemode(e) == GIT_FILEMODE_LINK) {
		char *target = xstrndup(data, len);
		ok = symlinkat(target, dirfd, tmp) == 0;
		free(target);
	} else {
		mode_t mode = git_tree_entry_filemode(e) == GIT_FILEMODE_BLOB_EXECUTABLE ?
		    0755 : 0644;

		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0) {
			size_t off = 0;

			while (off < len) {
				ssize_t n = write(fd, (const char *)data + off, len - off);
				if (n <= 0)
					break;
				off += (size_t)n;
			}
			ok = off == len && fchmod(fd, mode) == 0;
			ok = close(fd) == 0 && ok;
		}
	}
	git_blob_free(blob);
	if (ok && renameat(dirfd, tmp, dirfd, name) != 0)
		ok = false;
	if (!ok)
		unlinkat(dirfd, tmp, 0);
	return ok;
}

/* Puts path back as it was in the start tree (absent: removed). */
static bool
changes_put_back(git_repository *repo, struct wsfile_root *r, int rootfd, git_tree *start,
    const char *path)
{
	git_tree_entry *e = NULL;
	char *dir;
	const char *name;
	struct stat st;
	bool ok = false;
	int fd;

	if (git_tree_entry_bypath(&e, start, path) != 0)
		e = NULL;
	fd = changes_open_parent(r, rootfd, path, e != NULL, &dir, &name);
	if (fd < 0) {
		/* Gone with its directory, and absent at the start: nothing to do. */
		ok = e == NULL && errno == ENOENT;
		goto out;
	}
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode) || wsfile_is_hidden(r, &st))
			goto out;
		if (e == NULL) {
			ok = unlinkat(fd, name, 0) == 0;
			goto out;
		}
	} else if (errno != ENOENT) {
		goto out;
	} else if (e == NULL) {
		ok = true;
		goto out;
	}
	ok = changes_restore(repo, fd, name, e);
out:
	if (fd >= 0)
		close(fd);
	free(dir);
	git_tree_entry_free(e);
	return ok;
}

/* Removes the directories above path that the start tree has not as directories, while empty. */
static void
changes_prune(struct wsfile_root *r, int rootfd, git_tree *start, const char *path)
{
	char *p = xstrdup(path), *slash;

	while ((slash = strrchr(p, '/')) != NULL) {
		git_tree_entry *e;
		char *dir;
		const char *name;
		bool removed;
		int fd;

		*slash = '\0';
		if (git_tree_entry_bypath(&e, start, p) == 0) {
			bool is_dir = git_tree_entry_type(e) == GIT_OBJECT_TREE;

			git_tree_entry_free(e);
			if (is_dir)
				break;
		}
		fd = changes_open_parent(r, rootfd, p, false, &dir, &name);
		removed = fd >= 0 && unlinkat(fd, name, AT_REMOVEDIR) == 0;
		if (fd >= 0)
			close(fd);
		free(dir);
		if (!removed)
			break;
	}
	free(p);
}

/* Whether path is the same in trees a and b (absent in both counts as the same). */
static bool
changes_same(git_tree *a, git_tree *b, const char *path)
{
	git_tree_entry *x = NULL, *y = NULL;
	bool same;

	if (git_tree_entry_bypath(&x, a, path) != 0)
		x = NULL;
	if (git_tree_entry_bypath(&y, b, path) != 0)
		y = NULL;
	same = (x == NULL && y == NULL) || (x != NULL && y != NULL &&
	    git_tree_entry_filemode(x) == git_tree_entry_filemode(y) &&
	    git_oid_equal(git_tree_entry_id(x), git_tree_entry_id(y)));
	git_tree_entry_free(x);
	git_tree_entry_free(y);
	return same;
}

static void
changes_do_revert(struct changes *c, struct changes_job *job)
{
	struct service *svc = c->svc;
	struct store *st = svc->store;
	struct changes_session *s;
	struct changes_row row;
	struct run run;
	git_oid now;
	git_tree *start = NULL, *end = NULL, *cur = NULL;
	git_diff *diff = NULL;
	cJSON *conflicts = NULL, *reverted = NULL, *failed = NULL;
	struct wsfile_root *r = NULL;
	char **hidden = NULL, *why = NULL, *rel = NULL, *incomplete = NULL, when[TD_TIME_LEN];
	bool known, found, final, replaced = false, ok;
	int64_t at;
	struct stat rst;
	int rootfd = -1;
	dev_t dev;
	ino_t ino;

	store_lock(st);
	known = runs_get(st, job->run_id, &run);
	final = known && run_status_final(run.status);
	found = known && changes_row_get(st, job->run_id, &row);
	if (known) {
		snprintf(job->session_id, sizeof job->session_id, "%s", run.session_id);
		job->workspace = xstrdup(run.cwd);
	}
	runs_clear(&run);
	store_unlock(st);
	if (!known) {
		problem_set(&job->problem, TD_NOT_FOUND, "run", "No run with that id.");
		return;
	}
	if (!final) {
		problem_set(&job->problem, TD_RUN_ACTIVE, NULL, "The run is still going: "
		    "revert it once it has ended.");
		return;
	}
	job->answer = cJSON_CreateObject();
	cJSON_AddStringToObject(job->answer, "runId", job->run_id);
	reverted = cJSON_AddArrayToObject(job->answer, "reverted");
	if (!found) {
		cJSON_AddNullToObject(job->answer, "revertedAt");
		changes_add_incomplete(job->answer, "no snapshot of the run's workspace was taken: "
		    "nothing could be put back");
		return;
	}
	s = changes_session_get(c, job->session_id);
	hidden = sandbox_hidden_paths(&svc->paths, NULL);
	/* Each opening of the workspace is checked against the store's pin: what
	 * is compared and what is written is the directory the run changed. */
	ok = s != NULL && changes_take(c, s, job->workspace, hidden, &now, &incomplete, false,
	    &replaced);
	if (ok && (r = wsfile_root_open(job->workspace, (const char *const *)hidden,
	    &why)) != NULL) {
		wsfile_root_ident(r, &dev, &ino);
		replaced = !changes_root_pinned(c->dir, job->session_id, dev, ino, false);
	}
	if (replaced) {
		log_warn("run %s: revert refused: %s is not the directory the run changed",
		    job->run_id, job->workspace);
		changes_replaced_problem(&job->problem, job->workspace);
		goto fail;
	}
	if (!ok || r == NULL ||
	    git_tree_lookup(&start, s->repo, &row.start) != 0 ||
	    git_tree_lookup(&end, s->repo, &row.end) != 0 ||
	    git_tree_lookup(&cur, s->repo, &now) != 0 ||
	    (diff = changes_tree_diff(s->repo, &row.start, &row.end, NULL)) == NULL ||
	    wsfile_open(r, ".", O_RDONLY | O_DIRECTORY, &rootfd, &rst, &rel, &why) != WSFILE_OK) {
		problem_set(&job->problem, TD_INTERNAL_ERROR, NULL, "The workspace could not be "
		    "compared with the run's snapshots.");
		if (why != NULL)
			log_warn("run %s: revert: %s", job->run_id, why);
		goto fail;
	}
	/* What the workspace must hold for a clean revert: the run's end, or its start
	 * once reverted (reverting twice changes nothing then). */
	conflicts = cJSON_CreateArray();
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *path = d->new_file.path, *reason = NULL;

		if (!changes_same(row.reverted_at ? start : end, cur, path))
			reason = row.reverted_at ? "changed since the run was reverted" :
			    "changed since the run";
		else if (d->old_file.mode != 0 && changes_is_pointer(s->repo, &d->old_file.id))
			reason = "not stored (too large or ignored): it cannot be put back";
		if (reason != NULL) {
			cJSON *one = cJSON_CreateObject();
			cJSON_AddStringToObject(one, "path", path);
			cJSON_AddStringToObject(one, "reason", reason);
			cJSON_AddItemToArray(conflicts, one);
		}
	}
	if (cJSON_GetArraySize(conflicts) > 0 && !job->force) {
		cJSON *details = cJSON_CreateObject();

		cJSON_AddItemToObject(details, "conflicts", conflicts);
		conflicts = NULL;
		problem_set(&job->problem, TD_REVERT_CONFLICT, NULL, "Files the run changed "
		    "differ now from its end: revert with force to put them back anyway.");
		job->problem.details = details;
		goto fail;
	}
	if (row.reverted_at != 0 && !job->force)
		goto done;
	/* What the run added goes first: a directory it put where a file was is then empty. */
	failed = cJSON_CreateArray();
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
			const git_diff_delta *d = git_diff_get_delta(diff, i);

			if ((d->old_file.mode == 0) != (pass == 0) ||
			    (d->old_file.mode != 0 && changes_is_pointer(s->repo, &d->old_file.id)))
				continue;
			if (changes_put_back(s->repo, r, rootfd, start, d->new_file.path)) {
				cJSON_AddItemToArray(reverted, cJSON_CreateString(d->new_file.path));
				if (pass == 0)
					changes_prune(r, rootfd, start, d->new_file.path);
			} else {
				log_warn("run %s: revert: cannot put back %s: %s", job->run_id,
				    d->new_file.path, strerror(errno));
				cJSON_AddItemToArray(failed, cJSON_CreateString(d->new_file.path));
			}
		}
	}
	at = td_now_ms();
	store_lock(st);
	if (changes_row_reverted(st, job->run_id, at)) {
		row.reverted_at = at;
		cache_drop(svc->cache, job->run_id);
	}
	store_unlock(st);
	if (cJSON_GetArraySize(failed) > 0) {
		problem_set(&job->problem, TD_INTERNAL_ERROR, NULL, "Some files could not be put "
		    "back; the others were.");
		job->problem.details = cJSON_CreateObject();
		cJSON_AddItemToObject(job->problem.details, "failed", failed);
		cJSON_AddItemToObject(job->problem.details, "reverted",
		    cJSON_DetachItemFromObject(job->answer, "reverted"));
		failed = NULL;
		goto fail;
	}
done:
	td_time_format(row.reverted_at, when);
	cJSON_AddStringToObject(job->answer, "revertedAt", when);
	/* What the snapshots lack the revert could neither compare nor put back. */
	changes_add_incomplete(job->answer, row.start_why[0] ? row.start_why :
	    changes_marked(c, job->run_id) ? changes_marked(c, job->run_id) :
	    row.end_why[0] ? row.end_why : incomplete);
	goto out;
fail:
	cJSON_Delete(job->answer);
	job->answer = NULL;
out:
	cJSON_Delete(conflicts);
	cJSON_Delete(failed);
	if (rootfd >= 0)
		close(rootfd);
	free(rel);
	free(why);
	free(incomplete);
	wsfile_root_free(r);
	sandbox_hidden_free(hidden);
	git_diff_free(diff);
	git_tree_free(start);
	git_tree_free(end);
	git_tree_free(cur);
}

/* ---- deleting a session ---------------------------------------------------------- */

static bool changes_queue(struct changes *c, struct changes_job *job, int wait_ms);
static void changes_job_free(struct changes_job *job);

bool
changes_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM run_changes WHERE session_id = ?1"
	    " OR run_id IN (SELECT id FROM runs WHERE session_id = ?1)", session_id);
}

/* Closes the store of a deleted session without saving its stat cache, and removes it. */
static void
changes_do_forget(struct changes *c, struct changes_job *job)
{
	struct changes_session *s, **pp;
	char *path;

	for (pp = &c->sessions; (s = *pp) != NULL; pp = &s->next) {
		if (strcmp(s->id, job->session_id) == 0) {
			*pp = s->next;
			changes_walker_free(s->walker);
			git_repository_free(s->repo);
			free(s);
			break;
		}
	}
	path = changes_repo_path(c->svc, job->session_id);
	if (!td_remove_tree(path)) {
		job->answer = NULL;
		log_warn("changes: cannot remove %s: %s", path, strerror(errno));
	} else {
		job->answer = cJSON_CreateTrue();
	}
	free(path);
}

bool
changes_forget(struct changes *c, const char *session_id)
{
	struct changes_job *job;
	bool ok;

	if (c == NULL)
		return true;
	job = xcalloc(1, sizeof *job);
	job->kind = JOB_FORGET;
	job->wait = true;
	snprintf(job->session_id, sizeof job->session_id, "%s", session_id);
	changes_queue(c, job, 0);
	ok = job->answer != NULL;
	changes_job_free(job);
	return ok;
}

long
changes_sweep(struct service *svc)
{
	char *dir = xasprintf("%s/changes", svc->paths.data_dir);
	DIR *d = opendir(dir);
	struct dirent *e;
	long removed = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char id[TD_ID_MAX];
		sqlite3_stmt *s;
		bool found;

		if (len <= 4 || len - 4 >= sizeof id || strcmp(e->d_name + len - 4, ".git") != 0)
			continue;
		snprintf(id, sizeof id, "%.*s", (int)(len - 4), e->d_name);
		if (!td_id_valid(id, "ses"))
			continue;
		store_lock(svc->store);
		s = store_stmt(svc->store, "SELECT 1 FROM sessions WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		found = sqlite3_step(s) == SQLITE_ROW;
		sqlite3_reset(s);
		store_unlock(svc->store);
		if (found)
			continue;
		if (changes_forget(svc->changes, id))
			removed++;
	}
	if (d != NULL)
		closedir(d);
	free(dir);
	return removed;
}

/* ---- the thread ----------------------------------------------------------------- */

static void
changes_job_free(struct changes_job *job)
{
	free(job->workspace);
	sandbox_hidden_free(job->hidden);
	cJSON_Delete(job->answer);
	cJSON_Delete(job->problem.details);
	free(job);
}

/*
 * Packs a batch of each store with CHANGES_PACK_LOOSE loose objects or more,
 * when no job waits; whether a store has more to pack.
 */
static bool
changes_pack_idle(struct changes *c)
{
	bool more = false;

	for (struct changes_session *s = c->sessions; s != NULL; s = s->next) {
		int64_t t0 = td_mono_ms();
		size_t n = changes_walker_loose(s->walker);

		if (n < CHANGES_PACK_LOOSE)
			continue;
		if (changes_walker_pack(s->walker)) {
			log_debug("changes: packed %zu objects of session %s in %lldms",
			    n - changes_walker_loose(s->walker), s->id,
			    (long long)(td_mono_ms() - t0));
		} else {
			const git_error *e = git_error_last();
			log_warn("changes: cannot pack the store of session %s: %s", s->id,
			    e ? e->message : "?");
			continue;
		}
		more = more || changes_walker_loose(s->walker) >= CHANGES_PACK_LOOSE;
	}
	return more;
}

static void *
changes_thread(void *arg)
{
	struct changes *c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct changes_job *job = c->head;

		if (job == NULL) {
			if (c->stopping)
				break;
			pthread_cond_wait(&c->cond, &c->mu);
			continue;
		}
		c->head = job->next;
		if (c->head == NULL)
			c->tail = NULL;
		pthread_mutex_unlock(&c->mu);
		if (job->kind == JOB_SNAPSHOT)
			changes_do_snapshot(c, job);
		else if (job->kind == JOB_FORGET)
			changes_do_forget(c, job);
		else
			changes_do_revert(c, job);
		pthread_mutex_lock(&c->mu);
		if (job->late && job->when == CHANGES_END)
			changes_marks_set(&c->ending, job->run_id, false);
		if (job->wait) {
			job->done = true;
			pthread_cond_broadcast(&c->cond);
		} else {
			changes_job_free(job);
		}
		/* A batch at a time, so a job that comes meanwhile waits for one batch only. */
		for (bool more = true; more && c->head == NULL && !c->stopping;) {
			pthread_mutex_unlock(&c->mu);
			more = changes_pack_idle(c);
			pthread_mutex_lock(&c->mu);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

struct changes *
changes_start(struct service *svc, char **err)
{
	struct changes *c = xcalloc(1, sizeof *c);

	if (git_libgit2_init() < 0) {
		*err = xstrdup("libgit2 could not be initialised");
		free(c);
		return NULL;
	}
	/* The stores are the service's own: no user or system git configuration. */
	for (int level = GIT_CONFIG_LEVEL_SYSTEM; level <= GIT_CONFIG_LEVEL_GLOBAL; level++)
		git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, "");
	c->svc = svc;
	c->dir = xasprintf("%s/changes", svc->paths.data_dir);
	c->total = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, changes_thread, c) != 0) {
		*err = xstrdup("the snapshot thread could not start");
		free(c->dir);
		free(c);
		git_libgit2_shutdown();
		return NULL;
	}
	return c;
}

void
changes_stop(struct changes *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	while (c->sessions != NULL) {
		struct changes_session *s = c->sessions;
		c->sessions = s->next;
		changes_session_close(c, s);
	}
	changes_marks_clear(&c->failed);
	changes_marks_clear(&c->ending);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cond);
	free(c->dir);
	free(c);
	git_libgit2_shutdown();
}

/*
 * Queues job; with job->wait, returns once it is done (the caller frees it),
 * or, with wait_ms > 0, once the workspace is not read wait_ms after: then
 * the job is late and the thread frees it.  True when it is done.
 */
static bool
changes_queue(struct changes *c, struct changes_job *job, int wait_ms)
{
	struct timespec until;
	bool done;

	pthread_mutex_lock(&c->mu);
	if (job->kind == JOB_SNAPSHOT && job->when == CHANGES_STEP && !job->wait) {
		for (struct changes_job *q = c->head; q != NULL; q = q->next) {
			if (q->kind == JOB_SNAPSHOT && q->when == CHANGES_STEP &&
			    strcmp(q->run_id, job->run_id) == 0) {
				pthread_mutex_unlock(&c->mu);
				changes_job_free(job);
				return false;
			}
		}
	}
	if (c->tail != NULL)
		c->tail->next = job;
	else
		c->head = job;
	c->tail = job;
	pthread_cond_broadcast(&c->cond);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (job->wait && !job->done) {
		if (wait_ms <= 0 || job->walked) {
			pthread_cond_wait(&c->cond, &c->mu);
		} else if (pthread_cond_timedwait(&c->cond, &c->mu, &until) == ETIMEDOUT &&
		    !job->walked && !job->done) {
			job->late = true;
			job->wait = false;
			if (job->kind == JOB_SNAPSHOT && job->when == CHANGES_END)
				changes_marks_set(&c->ending, job->run_id, true);
		}
	}
	done = job->done;
	pthread_mutex_unlock(&c->mu);
	return done;
}

void
changes_snapshot(struct changes *c, enum changes_when when, const char *run_id,
    const char *session_id, const char *workspace, char *const *hidden, bool wait)
{
	struct changes_job *job;
	char **copy = NULL;

	if (c == NULL || workspace == NULL)
		return;
	job = xcalloc(1, sizeof *job);
	job->kind = JOB_SNAPSHOT;
	job->when = when;
	job->wait = wait;
	snprintf(job->run_id, sizeof job->run_id, "%s", run_id);
	snprintf(job->session_id, sizeof job->session_id, "%s", session_id);
	job->workspace = xstrdup(workspace);
	for (size_t i = 0; hidden != NULL && hidden[i] != NULL; i++)
		copy = sandbox_hidden_add(copy, hidden[i]);
	job->hidden = copy;
	/*
	 * A run starts once its start is read, or after CHANGES_START_WAIT_MS;
	 * it is final once its end is read, or after CHANGES_END_WAIT_MS: said then.
	 */
	if (changes_queue(c, job, when == CHANGES_START ? CHANGES_START_WAIT_MS :
	    when == CHANGES_END ? CHANGES_END_WAIT_MS : 0))
		changes_job_free(job);
	else if (wait)
		log_warn("run %s: its %s snapshot takes more than %d ms: the run goes on, its "
		    "changes say they are incomplete meanwhile", run_id,
		    when == CHANGES_START ? "start" : "end",
		    when == CHANGES_START ? CHANGES_START_WAIT_MS : CHANGES_END_WAIT_MS);
}

cJSON *
changes_revert(struct service *svc, const char *run_id, bool force, struct problem *p)
{
	struct changes_job *job = xcalloc(1, sizeof *job);
	cJSON *answer;

	job->kind = JOB_REVERT;
	job->wait = true;
	job->force = force;
	snprintf(job->run_id, sizeof job->run_id, "%s", run_id);
	changes_queue(svc->changes, job, 0);
	answer = job->answer;
	job->answer = NULL;
	if (answer == NULL) {
		*p = job->problem;
		job->problem.details = NULL;
	}
	changes_job_free(job);
	return answer;
}

/* ---- lists and diffs ------------------------------------------------------------- */

/* What a list or a diff compares: the run's row and the tree to compare from. */
struct changes_view {
	bool found;			/* the run has a snapshot */
	bool live;
	struct changes_row row;
	git_oid from;
	char from_why[CHANGES_WHY_MAX];	/* why the from tree lacks part of the workspace; "" */
	char from_run[TD_ID_MAX];	/* "" unless from names a run */
	git_repository *repo;
};

static bool
changes_view_open(struct service *svc, const char *run_id, const char *from,
    struct changes_view *v, struct problem *p)
{
	struct store *st = svc->store;
	struct run run;
	bool known;
	char *path;

	memset(v, 0, sizeof *v);
	store_lock(st);
	known = runs_get(st, run_id, &run);
	if (!known) {
		store_unlock(st);
		problem_set(p, TD_NOT_FOUND, "run", "No run with that id.");
		return false;
	}
	v->live = !run_status_final(run.status);
	v->found = changes_row_get(st, run_id, &v->row);
	v->from = v->row.start;
	snprintf(v->from_why, sizeof v->from_why, "%s", v->row.start_why);
	if (from != NULL && strcmp(from, "start") == 0) {
		if (v->found)
			changes_session_start(st, run.session_id, &v->from, v->from_why);
	} else if (from != NULL) {
		struct changes_row other;
		struct run orun;
		bool same = td_id_valid(from, "run") && runs_get(st, from, &orun);

		if (same) {
			same = strcmp(orun.session_id, run.session_id) == 0;
			runs_clear(&orun);
		}
		if (!same || !changes_row_get(st, from, &other)) {
			store_unlock(st);
			runs_clear(&run);
			problem_set(p, TD_INVALID_REQUEST, "from", "from must be start or the id "
			    "of a run of the same session with a snapshot.");
			return false;
		}
		v->from = other.end;
		snprintf(v->from_why, sizeof v->from_why, "%s", other.end_why);
		snprintf(v->from_run, sizeof v->from_run, "%s", from);
	}
	store_unlock(st);
	if (v->found) {
		path = changes_repo_path(svc, run.session_id);
		if (git_repository_open_bare(&v->repo, path) != 0) {
			log_error("changes: cannot open the store %s", path);
			v->found = false;
		}
		free(path);
	}
	runs_clear(&run);
	return true;
}

cJSON *
changes_list(struct service *svc, const char *run_id, const char *from, size_t offset,
    size_t limit, struct problem *p)
{
	struct changes_view v;
	cJSON *out, *files, *totals;
	git_diff *diff = NULL;
	long nfiles = 0, adds = 0, dels = 0;
	size_t page_bytes = 0, next = 0;
	char when[TD_TIME_LEN];

	if (!changes_view_open(svc, run_id, from, &v, p))
		return NULL;
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "runId", run_id);
	if (v.from_run[0] != '\0')
		cJSON_AddStringToObject(cJSON_AddObjectToObject(out, "from"), "runId", v.from_run);
	else
		cJSON_AddNullToObject(cJSON_AddObjectToObject(out, "from"), "runId");
	cJSON_AddBoolToObject(out, "live", v.live);
	if (v.found && v.row.reverted_at != 0) {
		td_time_format(v.row.reverted_at, when);
		cJSON_AddStringToObject(out, "revertedAt", when);
	} else {
		cJSON_AddNullToObject(out, "revertedAt");
	}
	/* Said, never silent: what a snapshot could not record may have changed too. */
	if (changes_marked(svc->changes, run_id) != NULL) {
		changes_add_incomplete(out, changes_marked(svc->changes, run_id));
	} else if (!v.found) {
		changes_add_incomplete(out, v.live ? "the start snapshot of the run is not taken "
		    "yet" : "no snapshot of the run's workspace was taken");
	} else if (v.from_why[0] != '\0' || v.row.end_why[0] != '\0') {
		bool both = v.from_why[0] != '\0' && v.row.end_why[0] != '\0' &&
		    strcmp(v.from_why, v.row.end_why) != 0;
		char *why = both ? xasprintf("the first snapshot: %s; the latest: %s", v.from_why,
		    v.row.end_why) : xstrdup(v.from_why[0] ? v.from_why : v.row.end_why);

		changes_add_incomplete(out, why);
		free(why);
	} else {
		changes_add_incomplete(out, NULL);
	}
	files = cJSON_AddArrayToObject(out, "files");
	if (v.found && (diff = changes_tree_diff(v.repo, &v.from, &v.row.end, NULL)) != NULL) {
		/* The run's own counts are in its row: only another comparison reads every file. */
		bool count_all = from != NULL;

		if (!count_all) {
			adds = v.row.additions;
			dels = v.row.deletions;
		}
		nfiles = (long)git_diff_num_deltas(diff);
		for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
			const char *path = git_diff_get_delta(diff, i)->new_file.path;
			bool in_page = i >= offset && next == 0 && (i == offset ||
			    (i - offset < limit && page_bytes + strlen(path) <= CHANGES_PAGE_BYTES));
			struct changes_file f;
			cJSON *one;

			/* The page: limit files from offset, and at most CHANGES_PAGE_BYTES of paths. */
			if (!in_page && i >= offset && next == 0)
				next = i;
			if (!in_page && !count_all)
				continue;
			changes_file_read(v.repo, diff, i, &f);
			if (count_all) {
				adds += (long)f.additions;
				dels += (long)f.deletions;
			}
			if (!in_page) {
				git_patch_free(f.patch);
				continue;
			}
			page_bytes += strlen(f.delta->new_file.path);
			one = cJSON_CreateObject();
			cJSON_AddStringToObject(one, "path", f.delta->new_file.path);
			cJSON_AddStringToObject(one, "status", changes_status(f.delta->status));
			cJSON_AddNumberToObject(one, "additions", (double)f.additions);
			cJSON_AddNumberToObject(one, "deletions", (double)f.deletions);
			cJSON_AddBoolToObject(one, "binary", f.binary);
			cJSON_AddBoolToObject(one, "tooLarge", f.too_large);
			changes_add_mode(one, "oldMode", f.delta->old_file.mode);
			changes_add_mode(one, "newMode", f.delta->new_file.mode);
			cJSON_AddItemToArray(files, one);
			git_patch_free(f.patch);
		}
	}
	if (next != 0) {
		char cursor[32];

		snprintf(cursor, sizeof cursor, "%zu", next);
		cJSON_AddStringToObject(out, "nextCursor", cursor);
	} else {
		cJSON_AddNullToObject(out, "nextCursor");
	}
	totals = cJSON_AddObjectToObject(out, "totals");
	cJSON_AddNumberToObject(totals, "files", (double)nfiles);
	cJSON_AddNumberToObject(totals, "additions", (double)adds);
	cJSON_AddNumberToObject(totals, "deletions", (double)dels);
	git_diff_free(diff);
	git_repository_free(v.repo);
	return out;
}

/*
 * prefix and path as git writes a name in a diff: as they are, or in double
 * quotes when the path holds a control character, a quote, a backslash or a
 * byte past 0x7e, those written as C escapes (\n, \t, \", \\) or in octal.
 */
static void
changes_diff_name(struct buf *out, const char *prefix, const char *path)
{
	static const char named[] = "\a\b\t\n\v\f\r\"\\", letters[] = "abtnvfr\"\\";
	const unsigned char *c;

	for (c = (const unsigned char *)path; *c != '\0'; c++)
		if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\')
			break;
	if (*c == '\0') {
		buf_printf(out, "%s%s", prefix, path);
		return;
	}
	buf_printf(out, "\"%s", prefix);
	for (c = (const unsigned char *)path; *c != '\0'; c++) {
		const char *at = strchr(named, *c);

		if (at != NULL)
			buf_printf(out, "\\%c", letters[at - named]);
		else if (*c < 0x20 || *c > 0x7e)
			buf_printf(out, "\\%03o", *c);
		else
			buf_append(out, c, 1);
	}
	buf_appends(out, "\"");
}

bool
changes_diff(struct service *svc, const char *run_id, const char *from, const char *path,
    struct buf *out, bool *truncated, struct problem *p)
{
	struct changes_view v;
	git_diff *diff = NULL;
	size_t n = 0;

	*truncated = false;
	if (!changes_view_open(svc, run_id, from, &v, p))
		return false;
	if (v.found)
		diff = changes_tree_diff(v.repo, &v.from, &v.row.end, path);
	if (diff != NULL)
		n = git_diff_num_deltas(diff);
	if (path != NULL && n == 0) {
		git_diff_free(diff);
		git_repository_free(v.repo);
		problem_set(p, TD_NOT_FOUND, "path", "The run did not change that path.");
		return false;
	}
	for (size_t i = 0; i < n && !*truncated; i++) {
		struct changes_file f;
		git_buf text = { 0 };
		bool fits;

		changes_file_read(v.repo, diff, i, &f);
		if (f.too_large) {
			struct buf line;

			/* Names quoted as git quotes them: a newline in one adds no line. */
			buf_init(&line, 0);
			buf_appends(&line, "diff --git ");
			changes_diff_name(&line, "a/", f.delta->old_file.path);
			buf_appends(&line, " ");
			changes_diff_name(&line, "b/", f.delta->new_file.path);
			buf_appends(&line, "\nFiles ");
			changes_diff_name(&line, "a/", f.delta->old_file.path);
			buf_appends(&line, " and ");
			changes_diff_name(&line, "b/", f.delta->new_file.path);
			buf_appends(&line, " are not stored (too large or ignored): only their size "
			    "and hash are known\n");
			fits = buf_append(out, line.data, line.len);
			buf_free(&line);
		} else {
			fits = f.patch != NULL && git_patch_to_buf(&text, f.patch) == 0 &&
			    buf_append(out, text.ptr, text.size);
			git_buf_dispose(&text);
		}
		if (!fits)
			*truncated = true;
		git_patch_free(f.patch);
	}
	git_diff_free(diff);
	git_repository_free(v.repo);
	return true;
}
