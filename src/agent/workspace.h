/*
 * Confinement of the paths the model names to the run's workspace: no
 * absolute path outside it, no ".." above it, no symbolic link that leads
 * out of it.
 */
#ifndef TD_AGENT_WORKSPACE_H
#define TD_AGENT_WORKSPACE_H

#include <stdbool.h>

struct workspace_path {
	char *abs;	/* canonical absolute path (existing part resolved) */
	char *rel;	/* the same, relative to the workspace root; "." for the root */
};

/*
 * Resolves path (relative to root, or absolute inside it).  root must be
 * canonical.  False with *why (malloc'd, for the model) when the path is
 * empty, too long or leaves the workspace.
 */
bool workspace_resolve(const char *root, const char *path,
    struct workspace_path *out, char **why);
void workspace_path_free(struct workspace_path *p);
/* mkdir -p of the directories of rel below root; false with errno set. */
bool workspace_mkdirs(const char *root, const char *rel_dir);

#endif
