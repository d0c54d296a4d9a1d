/* The service's files (DESIGN.md section 3): token, lock, discovery. */
#ifndef TD_SERVICE_FILES_H
#define TD_SERVICE_FILES_H

#include <stdbool.h>

#include "service.h"

/* Creates the config, data and runtime directories (0700) when missing. */
bool files_make_dirs(const struct td_paths *p, char **err);
/*
 * Reads the token, or makes one atomically (0600) on first start.  Refuses a
 * token file or directory that others can read or write, a symlink, a file
 * of another user, or a file that does not hold 64 hex digits.
 */
bool files_load_token(const struct td_paths *p, char out[TD_TOKEN_HEX + 1], char **err);
/* Why the token file's permissions are unsafe, or NULL when they are fine. */
char *files_token_problem(const struct td_paths *p);
/* One service per home: takes the lock file; *fd stays open while running. */
bool files_lock(const struct td_paths *p, int *fd, char **err);
bool files_write_discovery(const struct service *svc, char **err);
void files_remove_discovery(const struct td_paths *p);

#endif
