/*
 * The files of a workspace as the model names them (docs/agent.md "The file
 * tools"): what read_file, list_files, write_file and save_artifact open.
 *
 * Every path is resolved by the kernel (openat2 with RESOLVE_BENEATH and
 * RESOLVE_NO_MAGICLINKS) from a descriptor of the workspace directory, so no
 * component, intermediate or last, swapped for a symbolic link by a concurrent
 * process can lead outside it.  The hidden set (sandbox_hidden_paths and the
 * other sessions' directories, exactly what commands cannot see) is checked on
 * the opened objects: the device and inode of the file and of every directory
 * between it and the workspace root, found by walking ".." from the directory
 * that holds it.  A hard link to a hidden file is refused by its identity.
 */
#ifndef TD_COMMON_WSFILE_H
#define TD_COMMON_WSFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

enum wsfile_status {
	WSFILE_OK,
	WSFILE_HIDDEN,		/* the path or a directory on the way is hidden */
	WSFILE_ESCAPES,		/* the path leads outside the workspace */
	WSFILE_INVALID,		/* empty, too long, the root where a file is needed */
	WSFILE_FAILED,		/* the system said no (not a regular file, ...) */
	WSFILE_MISSING,		/* no such file or directory */
};

struct wsfile_root;

/*
 * The workspace (a canonical absolute directory) and its hidden paths
 * (NULL-terminated absolute paths, or NULL; missing ones are left out).  NULL
 * with *why (malloc'd) when the workspace cannot be opened or the kernel has no
 * openat2 (Linux 5.6): the tools then fail closed.
 */
struct wsfile_root *wsfile_root_open(const char *workspace, const char *const *hidden,
    char **why);
void wsfile_root_free(struct wsfile_root *r);
/* The device and inode of the workspace directory as it was opened. */
void wsfile_root_ident(const struct wsfile_root *r, dev_t *dev, ino_t *ino);

/*
 * Opens path (relative to the workspace, or absolute inside it) with oflags
 * (O_RDONLY, O_DIRECTORY; O_CLOEXEC and O_NOCTTY are added).  A symbolic link
 * is followed while it stays inside the workspace.  On WSFILE_OK *fd is open,
 * *st describes it and *rel (malloc'd) is the path as the workspace sees it;
 * otherwise *why (malloc'd, "<path>: <what>") says why, for the model.
 */
enum wsfile_status wsfile_open(struct wsfile_root *r, const char *path, int oflags,
    int *fd, struct stat *st, char **rel, char **why);

/*
 * Creates or replaces the regular file path with data: missing parent
 * directories are made (0755), the content goes to a new file made with
 * O_CREAT|O_EXCL in the same directory, then renamed over the name (a
 * replaced file keeps its mode).  A symbolic link as the last component is
 * refused.  *rel and *why as wsfile_open.
 */
enum wsfile_status wsfile_write(struct wsfile_root *r, const char *path, const char *data,
    size_t len, char **rel, char **why);

/* Whether an object (st from fstat/fstatat) is in the hidden set itself. */
bool wsfile_is_hidden(const struct wsfile_root *r, const struct stat *st);
/*
 * Whether a regular file with more than one link may be a hard link to a file
 * inside a hidden directory (what wsfile_open refuses as hidden): one found
 * there, or any such file when the search of those directories was cut short.
 */
bool wsfile_is_linked(struct wsfile_root *r, const struct stat *st);

/*
 * Opens the entry name of the directory dirfd (itself opened through this
 * root) as a directory, without following a symbolic link; -1 with errno,
 * EACCES when the directory is hidden.
 */
int wsfile_open_subdir(const struct wsfile_root *r, int dirfd, const char *name);

#endif
