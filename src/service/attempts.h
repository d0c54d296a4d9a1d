/*
 * Attempts (docs/http-api.md, "Attempts"): one prompt run N times at once,
 * each run in a session of its own whose workspace is a git worktree of the
 * user's directory (HEAD plus the uncommitted and untracked work, or a
 * private store's snapshot for a directory outside git) on its own branch
 * taskdeck/attempt-<group>-<i>, under the service's workspaces.  One
 * attempt's changes are applied to the user's tree; the rest are removed.
 * This module is the only writer of attempt_groups and attempts; its worker
 * thread measures each finished attempt and runs the group's check command.
 * Lock order: the module's lock, then the store's.
 */
#ifndef TD_SERVICE_ATTEMPTS_H
#define TD_SERVICE_ATTEMPTS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct service;
struct problem;
struct attempts;

#define ATTEMPTS_MAX 8			/* attempts in one group */
#define ATTEMPTS_CHECK_MAX 4096		/* bytes of a check command */
#define ATTEMPTS_CHECK_OUTPUT_MAX 16384	/* bytes of its output kept */

/* A group to create; strings owned by the caller. */
struct attempts_request {
	const char *project;
	const char *prompt;
	const char *cwd;		/* canonical, checked by the caller */
	const char *check;		/* NULL: none */
	int count;
	const cJSON *models;		/* array of strings, or NULL */
	const cJSON *config;		/* the sessions' configuration, or NULL */
	const char *profile;		/* NULL: the project's, the application's */
	const cJSON *network;		/* a bool, or NULL */
};

/*
 * Creates the group: the snapshot, the worktrees, then in one transaction
 * the sessions, runs and rows; emits attempts.created and run.queued.  The
 * group as attempts_load shows it, or NULL with *p.
 */
cJSON *attempts_create(struct service *svc, const struct attempts_request *rq,
    struct problem *p);
/* The group id as the API shows it ({..., attempts: [...]}) or NULL. */
cJSON *attempts_load(struct service *svc, const char *id);
/* The groups of project, newest first, at most limit; NULL when no such project. */
cJSON *attempts_list(struct service *svc, const char *project, int limit);
/*
 * Applies the changes of the attempt whose run is run_id to the group's
 * directory, then (keep false) removes every worktree and branch of the
 * group.  The group, or NULL with *p (not_found, run_active,
 * attempt_group_closed, attempt_conflict).
 */
cJSON *attempts_apply(struct service *svc, const char *run_id, bool keep, struct problem *p);
/* Takes back the group's apply (attempt_conflict when the files moved on). */
cJSON *attempts_revert(struct service *svc, const char *group_id, struct problem *p);
/*
 * Removes the worktree and branch of the attempt of run_id, or (run_id
 * NULL) of every attempt of group_id.  The group, or NULL with *p.
 */
cJSON *attempts_discard(struct service *svc, const char *group_id, const char *run_id,
    struct problem *p);
/*
 * At start-up, before runs resume: removes what a crash left (a group
 * still being made, the attempts of deleted sessions) and restarts checks.
 */
void attempts_sweep(struct service *svc);
/* Starts the worker thread; NULL ok to stop. */
struct attempts *attempts_start(struct service *svc);
void attempts_stop(struct attempts *a);
/*
 * svc->session_deleted: a session's delete has committed; the worker removes
 * the worktrees and branches of its attempts (those of every session gone).
 */
void attempts_session_deleted(struct service *svc, const char *session_id);

#endif
