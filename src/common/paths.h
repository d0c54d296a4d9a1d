/*
 * Where taskdeck keeps its files (DESIGN.md section 3).  TASKDECK_HOME, when
 * set, holds everything; otherwise the XDG base directories are used.
 */
#ifndef TD_COMMON_PATHS_H
#define TD_COMMON_PATHS_H

#include <stdbool.h>

struct td_paths {
	char *config_dir;	/* token, settings.json */
	char *data_dir;		/* database, artifacts, workspaces, secret key */
	char *runtime_dir;	/* discovery file, lock */
	char *token;
	char *settings;
	char *database;
	char *artifacts;
	char *workspaces;
	char *secret_key;
	char *discovery;
	char *lock;
	char *socket;		/* the service's Unix domain socket */
	char *log;		/* default log file when detached */
};

/* false when no home can be determined (no TASKDECK_HOME and no HOME). */
bool paths_init(struct td_paths *p);
void paths_free(struct td_paths *p);
/* mkdir -p with mode for every missing component; false with errno set. */
bool paths_mkdir_p(const char *path, unsigned mode);
/*
 * rm -rf path, never following a symbolic link out of it; false when
 * something could not be removed (errno of the last failure).  A path that
 * does not exist is removed already.
 */
bool paths_remove_tree(const char *path);
/*
 * Why a user other than this process's (and root) can rename the directory
 * path or one above it, so that another directory or a link takes its place
 * (malloc'd), or NULL: a directory above owned by another user, or one that
 * others may write into without a sticky bit that protects the entry (a
 * sticky directory such as /tmp protects only an entry this user or root
 * owns).  path is absolute and canonical.
 */
char *paths_renamable(const char *path);

/* True when the canonical path is dir or beneath it (dir is canonicalized; NULL: false). */
bool paths_within(const char *path, const char *dir);

#endif
