/*
 * The run domain (runs.c): the only writer of the runs table.  A run moves
 * queued -> running -> completed, failed or cancelled here, and each
 * transition drops the run from the cache and publishes its run.* event
 * beside the write; and rendering a run as the API shows it.
 */
#ifndef TD_SERVICE_RUNS_H
#define TD_SERVICE_RUNS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "ids.h"

struct service;
struct store;

/* A run as the service keeps it: one row of the runs table.  Members owned. */
struct run {
	char id[TD_ID_MAX];
	char session_id[TD_ID_MAX];
	char project_id[TD_ID_MAX];
	char status[16];
	char *prompt;
	char *permission_profile;
	char *turn_intent;		/* NULL: none */
	cJSON *config;
	char *cwd;			/* the session's directory, where commands work */
	bool network;
	bool cancel_requested;
	int resumes;			/* how often it resumed after a restart */
	cJSON *checkpoint;		/* the agent's last checkpoint, NULL for none */
	bool checkpoint_invalid;	/* a stored checkpoint that is no object of at most
					   RUNS_CHECKPOINT_MAX_BYTES (a damaged store) */
	char *output;			/* the output stored so far */
};

/* The largest checkpoint stored (docs/host-protocol.md). */
#define RUNS_CHECKPOINT_MAX_BYTES (768 * 1024)

/* Reads run id into *run; false when there is none.  Only while the store is locked. */
bool runs_get(struct store *st, const char *id, struct run *run);
/* Frees the members of run (not run itself).  NULL ok. */
void runs_clear(struct run *run);
/*
 * The prompts and outputs (each cut to max_output bytes) of the last
 * max_runs ended runs of the session before run before_id, oldest first:
 * [{prompt, output}].  Only while the store is locked.
 */
cJSON *runs_history(struct store *st, const char *session_id, const char *before_id,
    int max_runs, size_t max_output);

/*
 * Admission: stores run (status queued) and touches its session, inside the
 * caller's transaction.  runs_admitted, after the commit, publishes
 * run.queued (with the run as the API shows it) and session.updated.  Only
 * while the store is locked.
 */
bool runs_admit(struct store *st, const struct run *run, int64_t now);
void runs_admitted(struct service *svc, const struct run *run);
/* Everything an admission needs from the store about a project and a session. */
struct run_admission {
	cJSON *project_defaults;
	cJSON *session_cfg;		/* existing session */
	char session_cwd[PATH_MAX];
	bool project_known;
	bool session_known;
	bool session_other_project;
	bool session_busy;
	bool session_deleting;		/* a forced delete waits for its runs */
};
/*
 * Reads what admitting a run to project (and session, NULL for a new one)
 * depends on into *a; the caller frees a->project_defaults and
 * a->session_cfg.  Only while the store is locked.
 */
void runs_admission_read(struct store *st, const char *project, const char *session,
    struct run_admission *a);
/*
 * A page of runs as the API shows them, newest first: those of session
 * and/or project (NULL: any), with status (NULL: any), below cursor (a run
 * id, NULL for the first page), at most limit.  next (TD_ID_MAX bytes) gets
 * the cursor of the next page, "" at the end.  Only while locked.
 */
cJSON *runs_list(struct store *st, const char *session, const char *project,
    const char *status, const char *cursor, int limit, char *next);
/* The ids of up to max queued runs, oldest first; how many.  Only while locked. */
size_t runs_queued(struct store *st, char (*ids)[TD_ID_MAX], size_t max);
/*
 * The ids of up to max runs of session_id that are queued or running (a run
 * waiting on a plan or a prompt is running); how many there are in all.
 * Only while locked.
 */
size_t runs_session_active(struct store *st, const char *session_id, char (*ids)[TD_ID_MAX],
    size_t max);
/*
 * Deletes the runs of session_id (their run_messages go with them) and drops
 * them from the cache; how many, or -1.  In the caller's transaction.
 */
long runs_delete_session_locked(struct service *svc, const char *session_id);
/*
 * Start: a queued run becomes running (run.started, session.updated); false
 * when it is no longer queued.  Only while the store is locked.
 */
bool runs_start(struct service *svc, const char *id, int64_t now);

/* A run's token counts; input includes the tokens read from and written to a cache. */
struct run_usage {
	long long input, output, cache_read, cache_write;
};
/* The count named key of a usage object ({inputTokens, ...}); 0 when absent or negative. */
long long run_usage_count(const cJSON *usage, const char *key);

/* What a running run reports as it goes (runs_progress). */
struct run_progress {
	const char *phase;
	struct run_usage usage;
	const char *output;		/* the output streamed so far */
	size_t output_len;
};
/*
 * Stores the progress of a running run.  Takes the store lock.  A failure
 * is logged once per *warned.
 */
void runs_progress(struct service *svc, const char *id, const struct run_progress *p,
    bool *warned);
/*
 * Checkpoint of version 2: the head (JSON text, no messages) and, unless
 * output is NULL, the output, inside the caller's transaction that appends
 * the messages (checkpoints.c).  Only while the store is locked.
 */
bool runs_checkpoint_head(struct store *st, const char *id, const char *head,
    const char *output, size_t output_len);
/* Review: stores a review's verdict (JSON text) as the run's latest.  Takes the store lock. */
void runs_review(struct service *svc, const char *id, const char *review);

/* How a run ended (runs_finish). */
struct run_end {
	const char *id;
	const char *session_id;		/* NULL: the session is not touched */
	const char *status;		/* completed, failed or cancelled */
	const char *output;
	const char *code, *message;	/* a failure's, else NULL */
	struct run_usage usage;
};
/*
 * Finish: writes the final state, makes the run's saves visible and closes
 * its plan and prompts in one transaction, then publishes artifact.saved,
 * run.finished and session.updated.  Takes the store lock; false (nothing
 * changed) on a store error.
 */
bool runs_finish(struct service *svc, const struct run_end *end);
/*
 * Request cancel: notes the cancel of a run that has not ended; a queued run
 * ends cancelled at once (run.finished, session.updated).  *status (16
 * bytes) gets the status before, "" when there is no such run.  Takes the
 * store lock; false on a store error.
 */
bool runs_request_cancel(struct service *svc, const char *id, char *status);
/* Notes a cancel for the run's thread to carry out (a rejected plan).  Only while locked. */
bool runs_note_cancel(struct store *st, const char *id, int64_t now);
/* Sets (NULL clears) what a running run waits for.  Only while locked. */
bool runs_set_attention(struct service *svc, const char *id, const cJSON *attention);
/* Lets the run's remaining permission questions through (allow-run).  Only while locked. */
bool runs_allow_all(struct store *st, const char *id);
/*
 * Recover, at start-up, inside the caller's transaction: a run left running
 * counts one more resume (runs_resume_count) or ends (runs_end_left: its
 * saves visible, plan and prompts closed; runs_emit_finished after the
 * commit).  Only while locked.
 */
bool runs_resume_count(struct store *st, const char *id, int64_t now);
bool runs_end_left_locked(struct service *svc, const char *id, const char *status, const char *code,
    const char *message, int64_t now);
/* artifact.saved, run.finished and session.updated of an ended run.  Only while locked. */
void runs_emit_finished_locked(struct service *svc, const char *id, const char *status,
    const char *code, const char *message);

/* The columns run_from_row reads, in its order. */
#define RUN_COLUMNS "id, session_id, project_id, status, prompt, permission_profile," \
	" turn_intent, config, cwd, created_at, started_at, finished_at, cancel_requested_at," \
	" progress_phase, progress_at, attention, output, error_code, error_message," \
	" input_tokens, output_tokens, updated_at, network, review, cache_read_tokens," \
	" cache_write_tokens, (SELECT json_object('files', files, 'additions', additions," \
	" 'deletions', deletions) FROM run_changes WHERE run_changes.run_id = runs.id)"
struct settings;
struct price;
/* What u costs in USD at price p (input counted without its cache reads and writes). */
double run_usage_cost(const struct run_usage *u, const struct price *p);
/* Adds "cost" to run (as the API shows it): USD at its model's price, null without one. */
void run_add_cost(const struct settings *set, cJSON *run);
/*
 * The usage of the runs of a session or a project (NULL: any), added up, and by
 * provider and model, with their cost where pricing has them (docs/http-api.md).
 * Only while the store is locked.
 */
cJSON *runs_usage(struct store *st, const struct settings *set, const char *session,
    const char *project);
/* A run row (RUN_COLUMNS) as the API shows it. */
cJSON *run_from_row(sqlite3_stmt *s);
/* The run with id as the API shows it, or NULL.  Only while the store is locked. */
cJSON *run_load(struct store *st, const char *id);
/*
 * Emit an event (events.h) about a run, with its project and session.  Only
 * while the store is locked.  Consumes data.
 */
void run_emit(struct service *svc, const char *type, const char *run_id, cJSON *data);
/* {"status": status}, the data of run.queued, run.started and run.finished. */
cJSON *run_status_data(const char *status);
/* True for completed, failed and cancelled. */
bool run_status_final(const char *status);

#endif
