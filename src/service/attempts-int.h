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
#include <stdint.h>

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
/*
 * The writes of the two tables (attempts-rows.c is their only writer); store
 * locked; false on a store error.  A new group and its attempts, preparing:
 */
bool attempts_rows_insert_group(struct store *st, const char *group, const char *project,
    const char *prompt, const char *cwd, const char *top, const char *git_dir, bool copy,
    const char *check, int64_t now);
bool attempts_rows_insert_attempt(struct store *st, const char *group, int idx,
    const char *session, const char *run, const char *model, const char *branch,
    const char *path, const char *cwd);
/* A group and its attempts gone (a group half made). */
bool attempts_rows_group_delete(struct store *st, const char *group);
/* The group and its attempts made: active, from base. */
bool attempts_rows_activate(struct store *st, const char *group, const char *base);
/* The group applied from run; its revert: active again, or discarded without attempts. */
bool attempts_rows_applied(struct store *st, const char *group, const char *run, int64_t now);
bool attempts_rows_reverted(struct store *st, const char *group, int64_t now);
/* An active group none of whose attempts is left: discarded. */
bool attempts_rows_discard_if_done(struct store *st, const char *group);
/* At start-up: groups a crash left preparing go, checks left running start again. */
bool attempts_rows_sweep(struct store *st);
/* An ended attempt's measure (files, lines; unmeasured: null) and its check's state. */
bool attempts_rows_measured(struct store *st, const char *group, int idx, bool measured,
    long files, long added, long deleted, const char *check_status);
/* Its check's outcome: status, the exit code (< 0: none) and the output. */
bool attempts_rows_checked(struct store *st, const char *group, int idx, const char *status,
    int code, const char *output);
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
