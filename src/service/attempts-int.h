/*
 * The files of attempts (attempts.h) and what they share.  attempts-rows.c
 * reads and writes the two tables and shows a group as the API does;
 * attempts.c (the use cases: create, apply, revert, discard) and
 * attempts-worker.c (the start-up sweep, the thread that measures and checks
 * ended attempts) call it, and neither calls the other.  attempts-git.c runs
 * git for all three.  Lock order: attempts_mu, then the store's.
 */
#ifndef TD_SERVICE_ATTEMPTS_INT_H
#define TD_SERVICE_ATTEMPTS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ids.h"

struct service;
struct store;

#define ATTEMPTS_WHY 1024	/* bytes of a person-readable reason */

/* Held around what changes a worktree or the user's tree; before the store lock. */
extern pthread_mutex_t attempts_mu;

/* One attempt row, with its group's columns. */
struct attempt_row {
	char group[TD_ID_MAX];
	int idx;
	char session[TD_ID_MAX];
	char run[TD_ID_MAX];
	char project[TD_ID_MAX];
	char *branch, *path, *cwd, *git_dir, *top, *base, *check, *group_status;
	char state[16];
	bool copy;		/* the group's directory is outside git */
};

#define ATTEMPT_ROW_SELECT "SELECT a.group_id, a.idx, a.session_id, a.run_id, g.project_id," \
	" a.branch, a.path, a.cwd, g.git_dir, g.top, g.base, g.check_command, g.status," \
	" a.state, g.kind FROM attempts a JOIN attempt_groups g ON g.id = a.group_id "

/*
 * The attempts sql (ATTEMPT_ROW_SELECT and a WHERE, a literal: the statement
 * cache knows a statement by its text's address) reads with text ?1 (NULL:
 * none); how many into *n.  Store locked; free with attempt_rows_free.
 */
struct attempt_row *attempt_rows(struct store *st, const char *sql, const char *arg, size_t *n);
void attempt_rows_free(struct attempt_row *rows, size_t n);
/* Runs sql with the text parameters ?1..?3 (NULL binds null); false on a store error. */
bool attempts_exec(struct store *st, const char *sql, const char *a, const char *b,
    const char *c);
/* Sets the group's status (NULL: as it is) and updated_at; store locked. */
bool attempts_group_touch(struct store *st, const char *group, const char *status);
/* The group as the API shows it, or NULL; store locked. */
cJSON *attempts_group_load_locked(struct service *svc, const char *id);
/* Emits type (attempts.created, attempts.updated) with the group; store locked. */
void attempts_emit(struct service *svc, const char *type, const char *group,
    const char *session, const char *run);
/* <data>/attempts/<group><what> (the directory made when it can be); malloc'd. */
char *attempts_scratch(struct service *svc, const char *group, const char *what);
/* Removes the attempt's worktree and branch, then marks it removed; false when
 * something is left.  Under attempts_mu, store unlocked. */
bool attempt_remove(struct service *svc, const struct attempt_row *a);

#endif
