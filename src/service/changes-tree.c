/*
 * Comparing two trees of a store (changes-int.h): their diff, the line counts
 * of a changed file, and whether a blob stands for a file not stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes-int.h"
#include "log.h"
#include "xalloc.h"

/* Whether blob oid stands for a file that was not stored. */
bool
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
git_diff *
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

/* The i-th file of diff: its line counts, whether it is binary or not stored. */
void
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
const char **
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
void
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
