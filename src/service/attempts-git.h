/*
 * The git side of attempts (attempts.c): the snapshot of a directory's
 * working tree as a commit, the worktree of each attempt on its own branch,
 * the patch of what an attempt changed and its apply to the user's tree.
 * Every command is the git program with an argv (no shell), its hooks and
 * fsmonitor off, GIT_* of the service's environment left out; what a model
 * wrote in a worktree is read with GIT_DIR and GIT_WORK_TREE given, never
 * through the worktree's own .git file.
 */
#ifndef TD_SERVICE_ATTEMPTS_GIT_H
#define TD_SERVICE_ATTEMPTS_GIT_H

#include <stdbool.h>
#include <stddef.h>

#define ATTEMPTS_GIT_OID 41	/* a hex object id and its NUL */

/* Where attempts of a directory come from. */
struct attempts_repo {
	char *top;		/* the directory whose tree is snapshot and applied to */
	char *git_dir;		/* its repository (the common dir), or the private store */
	bool head;		/* the repository has a HEAD commit (the snapshot's parent) */
	bool copy;		/* git_dir is the private store of a directory outside git */
};

/*
 * Fills *r for the user's directory cwd (canonical): its repository when it
 * is in a git work tree, else store (a bare repository made here).  false
 * with why (person-readable) when git cannot be run or store not be made.
 */
bool attempts_git_repo(const char *cwd, const char *store, struct attempts_repo *r,
    char *why, size_t whylen);
void attempts_git_repo_clear(struct attempts_repo *r);
/*
 * A commit of r->top's working tree as it is (tracked, modified, untracked;
 * what .gitignore ignores left out), HEAD its parent; the user's index and
 * files untouched.  index is a scratch file path.  base gets the commit.
 */
bool attempts_git_snapshot(const struct attempts_repo *r, const char *index, char *base,
    char *why, size_t whylen);
/* A worktree of git_dir at path on the new branch at base. */
bool attempts_git_worktree_add(const char *git_dir, const char *branch, const char *path,
    const char *base, char *why, size_t whylen);
/*
 * Removes the worktree at path (its directory too) and the branch; what is
 * already gone is no error.  false when either is still there.
 */
bool attempts_git_worktree_remove(const char *git_dir, const char *branch, const char *path);
/*
 * The patch (binary, full index) from base to what the worktree at path
 * holds now, written to patch; its numbers of files, added and deleted lines.
 */
bool attempts_git_patch(const char *git_dir, const char *path, const char *base,
    const char *index, const char *patch, long *files, long *added, long *deleted,
    char *why, size_t whylen);
/*
 * Applies patch (reverse: takes it back) to top's files (git_dir its
 * repository, NULL for a directory outside git), all of it or
 * nothing: checked first, and when a hunk does not apply nothing changes
 * and why holds git's words.  An empty patch applies.
 */
bool attempts_git_apply(const char *git_dir, const char *top, const char *patch, bool reverse,
    char *why, size_t whylen);
/* git worktree prune in git_dir. */
void attempts_git_prune(const char *git_dir);

#endif
