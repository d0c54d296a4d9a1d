/*
 * Reverting a run, on the snapshot thread (changes-int.h): the files the run
 * changed are put back as they were at its start, each written beside its
 * place and renamed over it, through directories opened one name at a time
 * without following a link; a file changed since the run's end is a conflict
 * unless forced.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "changes-int.h"
#include "ids.h"
#include "log.h"
#include "runs.h"
#include "sandbox.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "wsfile.h"
#include "xalloc.h"

/* What a revert compares and writes. */
struct changes_revert_ctx {
	struct changes_session *s;
	git_tree *start, *end, *cur;	/* the run's start and end, the workspace now */
	git_diff *diff;			/* from the run's start to its end */
	struct wsfile_root *r;
	int rootfd;
	char **hidden, *why, *rel, *incomplete;
};

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
	random_hex(rnd, 8);
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


/*
 * The run of job, ended: its session and workspace into job, its row into
 * *row (*found: it has one).  False with job->problem.
 */
static bool
changes_revert_run(struct changes *c, struct changes_job *job, struct changes_row *row,
    bool *found)
{
	struct store *st = c->svc->store;
	struct run run;
	bool known, final;

	store_lock(st);
	known = runs_get(st, job->run_id, &run);
	final = known && run_status_final(run.status);
	*found = known && changes_row_get(st, job->run_id, row);
	if (known) {
		snprintf(job->session_id, sizeof job->session_id, "%s", run.session_id);
		job->workspace = xstrdup(run.cwd);
	}
	runs_clear(&run);
	store_unlock(st);
	if (!known) {
		problem_set(&job->problem, TD_NOT_FOUND, "run", "No run with that id.");
		return false;
	}
	if (!final) {
		problem_set(&job->problem, TD_RUN_ACTIVE, NULL, "The run is still going: "
		    "revert it once it has ended.");
		return false;
	}
	return true;
}

/*
 * Opens what the revert of job compares: the workspace now, the run's trees
 * and their diff.  Each opening of the workspace is checked against the
 * store's pin: what is compared and what is written is the directory the run
 * changed.  False with job->problem.
 */
static bool
changes_revert_open(struct changes *c, struct changes_job *job, const struct changes_row *row,
    struct changes_revert_ctx *rv)
{
	git_oid now;
	struct stat rst;
	dev_t dev;
	ino_t ino;
	bool ok, replaced = false;

	rv->s = changes_session_get(c, job->session_id);
	rv->hidden = sandbox_hidden_paths(&c->svc->paths, NULL);
	ok = rv->s != NULL && changes_take(c, rv->s, job->workspace, rv->hidden, NULL, NULL,
	    &now, &rv->incomplete, false, &replaced);
	if (ok && (rv->r = wsfile_root_open(job->workspace, (const char *const *)rv->hidden,
	    &rv->why)) != NULL) {
		wsfile_root_ident(rv->r, &dev, &ino);
		replaced = !changes_root_pinned(c->dir, job->session_id, dev, ino, false);
	}
	if (replaced) {
		log_warn("run %s: revert refused: %s is not the directory the run changed",
		    job->run_id, job->workspace);
		changes_replaced_problem(&job->problem, job->workspace);
		return false;
	}
	if (!ok || rv->r == NULL ||
	    git_tree_lookup(&rv->start, rv->s->repo, &row->start) != 0 ||
	    git_tree_lookup(&rv->end, rv->s->repo, &row->end) != 0 ||
	    git_tree_lookup(&rv->cur, rv->s->repo, &now) != 0 ||
	    (rv->diff = changes_tree_diff(rv->s->repo, &row->start, &row->end, NULL)) == NULL ||
	    wsfile_open(rv->r, ".", O_RDONLY | O_DIRECTORY, &rv->rootfd, &rst, &rv->rel,
	    &rv->why) != WSFILE_OK) {
		problem_set(&job->problem, TD_INTERNAL_ERROR, NULL, "The workspace could not be "
		    "compared with the run's snapshots.");
		if (rv->why != NULL)
			log_warn("run %s: revert: %s", job->run_id, rv->why);
		return false;
	}
	return true;
}

static void
changes_revert_free(struct changes_revert_ctx *rv)
{
	if (rv->rootfd >= 0)
		close(rv->rootfd);
	free(rv->rel);
	free(rv->why);
	free(rv->incomplete);
	wsfile_root_free(rv->r);
	sandbox_hidden_free(rv->hidden);
	git_diff_free(rv->diff);
	git_tree_free(rv->start);
	git_tree_free(rv->end);
	git_tree_free(rv->cur);
}

/*
 * The files that differ from what the workspace must hold for a clean
 * revert: the run's end, or its start once reverted (reverting twice changes
 * nothing then); and those not stored, which cannot be put back.
 */
static cJSON *
changes_revert_conflicts(const struct changes_revert_ctx *rv, bool reverted)
{
	cJSON *conflicts = cJSON_CreateArray();

	for (size_t i = 0; i < git_diff_num_deltas(rv->diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(rv->diff, i);
		const char *path = d->new_file.path, *reason = NULL;

		if (!changes_same(reverted ? rv->start : rv->end, rv->cur, path))
			reason = reverted ? "changed since the run was reverted" :
			    "changed since the run";
		else if (d->old_file.mode != 0 && changes_is_pointer(rv->s->repo, &d->old_file.id))
			reason = "not stored (too large or ignored): it cannot be put back";
		if (reason != NULL) {
			cJSON *one = cJSON_CreateObject();
			cJSON_AddStringToObject(one, "path", path);
			cJSON_AddStringToObject(one, "reason", reason);
			cJSON_AddItemToArray(conflicts, one);
		}
	}
	return conflicts;
}

/*
 * Puts back the files the run changed (the paths into reverted); the paths
 * that could not be (an array).  What the run added goes first: a directory
 * it put where a file was is then empty.
 */
static cJSON *
changes_revert_put_back(const struct changes_revert_ctx *rv, const char *run_id,
    cJSON *reverted)
{
	cJSON *failed = cJSON_CreateArray();

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < git_diff_num_deltas(rv->diff); i++) {
			const git_diff_delta *d = git_diff_get_delta(rv->diff, i);

			if ((d->old_file.mode == 0) != (pass == 0) ||
			    (d->old_file.mode != 0 && changes_is_pointer(rv->s->repo,
			    &d->old_file.id)))
				continue;
			if (changes_put_back(rv->s->repo, rv->r, rv->rootfd, rv->start,
			    d->new_file.path)) {
				cJSON_AddItemToArray(reverted, cJSON_CreateString(d->new_file.path));
				if (pass == 0)
					changes_prune(rv->r, rv->rootfd, rv->start, d->new_file.path);
			} else {
				log_warn("run %s: revert: cannot put back %s: %s", run_id,
				    d->new_file.path, strerror(errno));
				cJSON_AddItemToArray(failed, cJSON_CreateString(d->new_file.path));
			}
		}
	}
	return failed;
}

void
changes_do_revert(struct changes *c, struct changes_job *job)
{
	struct store *st = c->svc->store;
	struct changes_revert_ctx rv = { .rootfd = -1 };
	struct changes_row row;
	cJSON *conflicts = NULL, *reverted, *failed = NULL;
	char when[TD_TIME_LEN];
	bool found;
	int64_t at;

	if (!changes_revert_run(c, job, &row, &found))
		return;
	job->answer = cJSON_CreateObject();
	cJSON_AddStringToObject(job->answer, "runId", job->run_id);
	reverted = cJSON_AddArrayToObject(job->answer, "reverted");
	if (!found) {
		cJSON_AddNullToObject(job->answer, "revertedAt");
		changes_add_incomplete(job->answer, "no snapshot of the run's workspace was taken: "
		    "nothing could be put back");
		return;
	}
	if (!changes_revert_open(c, job, &row, &rv))
		goto fail;
	conflicts = changes_revert_conflicts(&rv, row.reverted_at != 0);
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
	failed = changes_revert_put_back(&rv, job->run_id, reverted);
	at = clock_wall_ms();
	store_lock(st);
	if (changes_row_reverted(st, job->run_id, at)) {
		row.reverted_at = at;
		cache_drop(c->svc->cache, job->run_id);
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
	time_format_utc(row.reverted_at, when);
	cJSON_AddStringToObject(job->answer, "revertedAt", when);
	/* What the snapshots lack the revert could neither compare nor put back. */
	changes_add_incomplete(job->answer, row.start_why[0] ? row.start_why :
	    changes_marked(c, job->run_id) ? changes_marked(c, job->run_id) :
	    row.end_why[0] ? row.end_why : rv.incomplete);
	goto out;
fail:
	cJSON_Delete(job->answer);
	job->answer = NULL;
out:
	cJSON_Delete(conflicts);
	cJSON_Delete(failed);
	changes_revert_free(&rv);
}
