/*
 * The API's views of a run's changes (changes.h): GET /runs/:id/changes and
 * /changes/diff.  They read the store on the caller's thread with a
 * repository handle of their own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes-int.h"
#include "ids.h"
#include "log.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

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
		bool same = id_valid(from, "run") && runs_get(st, from, &orun);

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
	if (v->found && !changes_git(svc->changes))
		v->found = false;
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

/* Says in out whether files may be missing from the changes v compares, and why. */
static void
changes_list_incomplete(struct service *svc, const char *run_id, const struct changes_view *v,
    cJSON *out)
{
	/* Said, never silent: what a snapshot could not record may have changed too. */
	if (changes_marked(svc->changes, run_id) != NULL) {
		changes_add_incomplete(out, changes_marked(svc->changes, run_id));
	} else if (!v->found) {
		changes_add_incomplete(out, v->live ? "the start snapshot of the run is not taken "
		    "yet" : "no snapshot of the run's workspace was taken");
	} else if (v->from_why[0] != '\0' || v->row.end_why[0] != '\0') {
		bool both = v->from_why[0] != '\0' && v->row.end_why[0] != '\0' &&
		    strcmp(v->from_why, v->row.end_why) != 0;
		char *why = both ? xasprintf("the first snapshot: %s; the latest: %s", v->from_why,
		    v->row.end_why) : xstrdup(v->from_why[0] ? v->from_why : v->row.end_why);

		changes_add_incomplete(out, why);
		free(why);
	} else {
		changes_add_incomplete(out, NULL);
	}
}

/* One file of a page of the list. */
static cJSON *
changes_list_file(const struct changes_file *f)
{
	cJSON *one = cJSON_CreateObject();

	cJSON_AddStringToObject(one, "path", f->delta->new_file.path);
	cJSON_AddStringToObject(one, "status", changes_status(f->delta->status));
	cJSON_AddNumberToObject(one, "additions", (double)f->additions);
	cJSON_AddNumberToObject(one, "deletions", (double)f->deletions);
	cJSON_AddBoolToObject(one, "binary", f->binary);
	cJSON_AddBoolToObject(one, "tooLarge", f->too_large);
	changes_add_mode(one, "oldMode", f->delta->old_file.mode);
	changes_add_mode(one, "newMode", f->delta->new_file.mode);
	return one;
}

/*
 * The page of diff's files from offset into files (limit files at most, and
 * CHANGES_PAGE_BYTES of paths), and the line counts of every file with
 * count_all (*adds, *dels); the offset of the next page, or 0.
 */
static size_t
changes_list_page(git_repository *repo, git_diff *diff, size_t offset, size_t limit,
    bool count_all, cJSON *files, long *adds, long *dels)
{
	size_t page_bytes = 0, next = 0;

	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const char *path = git_diff_get_delta(diff, i)->new_file.path;
		bool in_page = i >= offset && next == 0 && (i == offset ||
		    (i - offset < limit && page_bytes + strlen(path) <= CHANGES_PAGE_BYTES));
		struct changes_file f;

		/* The page: limit files from offset, and at most CHANGES_PAGE_BYTES of paths. */
		if (!in_page && i >= offset && next == 0)
			next = i;
		if (!in_page && !count_all)
			continue;
		changes_file_read(repo, diff, i, &f);
		if (count_all) {
			*adds += (long)f.additions;
			*dels += (long)f.deletions;
		}
		if (in_page) {
			page_bytes += strlen(f.delta->new_file.path);
			cJSON_AddItemToArray(files, changes_list_file(&f));
		}
		git_patch_free(f.patch);
	}
	return next;
}

cJSON *
changes_list(struct service *svc, const char *run_id, const char *from, size_t offset,
    size_t limit, struct problem *p)
{
	struct changes_view v;
	cJSON *out, *files, *totals;
	git_diff *diff = NULL;
	long nfiles = 0, adds = 0, dels = 0;
	size_t next = 0;
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
		time_format_utc(v.row.reverted_at, when);
		cJSON_AddStringToObject(out, "revertedAt", when);
	} else {
		cJSON_AddNullToObject(out, "revertedAt");
	}
	changes_list_incomplete(svc, run_id, &v, out);
	files = cJSON_AddArrayToObject(out, "files");
	if (v.found && (diff = changes_tree_diff(v.repo, &v.from, &v.row.end, NULL)) != NULL) {
		/* The run's own counts are in its row: only another comparison reads every file. */
		if (from == NULL) {
			adds = v.row.additions;
			dels = v.row.deletions;
		}
		nfiles = (long)git_diff_num_deltas(diff);
		next = changes_list_page(v.repo, diff, offset, limit, from != NULL, files, &adds,
		    &dels);
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
