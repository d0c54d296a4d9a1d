/*
 * HTTP calls of the dashboard, off the loop's thread: the loop submits jobs,
 * worker threads run them with the client core, and finished jobs come back
 * through a queue whose eventfd the loop poll()s.  No key ever waits on the
 * network.  One thread serves requests in order; downloads have their own
 * thread so that a large one never holds up a refresh.
 */
#ifndef TD_TUI_WORKER_H
#define TD_TUI_WORKER_H

#include <stdbool.h>

#include "taskdeck.h"

enum job_kind {
	JOB_DOCTOR,		/* -> doctor */
	JOB_PROJECTS,		/* -> projects (first page, up to 200) */
	JOB_SESSIONS,		/* id: project -> sessions */
	JOB_RUNS,		/* id: session -> runs */
	JOB_PROJECT_RUNS,	/* id: project -> runs */
	JOB_ARTIFACTS,		/* id: session -> artifacts */
	JOB_PLAN,		/* id: session -> plan (NULL with code TD_NOT_FOUND: none) */
	JOB_PERMISSIONS,	/* pending prompts -> permissions */
	JOB_HISTORY,		/* id: a run (run_scope; one page after `after`, more
				   when another follows) or a session (its runs'
				   histories, oldest run first, at most MODEL_LOG_MAX
				   events) -> events */
	JOB_START_RUN,		/* id: project, session (NULL: new), text: prompt,
				   profile, plan_first, provider, model -> run; with
				   attempts > 1 (a new session) that many attempts in
				   path (a directory) -> attempts */
	JOB_CANCEL_RUN,		/* id: run -> run */
	JOB_RUN,		/* id: run -> run */
	JOB_PLAN_RESPOND,	/* id: session, decision, version, revision, text: feedback -> plan */
	JOB_PERMISSION_ANSWER,	/* id: prompt, decision -> permission */
	JOB_DOWNLOAD,		/* id: artifact, path, overwrite; progress results */
	JOB_ATTENTION,		/* the running runs of every project (first page of
				   each) -> runs */
	JOB_CONNECTORS,		/* -> connectors */
	JOB_CONNECTOR_ENABLE,	/* id: connector, decision "enable"/"disable" -> connector */
	JOB_CONNECTOR_TEST,	/* id: connector -> connector_test */
	JOB_CONNECTOR_LOGIN,	/* id: connector -> login_url (NULL: signed in at once) */
	JOB_BULK,		/* decision "cancel", "approve" or "rerun", text: run ids
				   separated by spaces, each in turn -> summary, failed */
	JOB_OPEN_ARTIFACT,	/* id: artifact, path: a private file to fill (removed
				   with the result, or the job never run), decision
				   "pager" or "editor" (what opens it after) */
	JOB_CHANGES,		/* id: run -> changes */
	JOB_DIFF,		/* id: run, path: a file it changed -> diff */
	JOB_REVERT,		/* id: run, force -> revert (also on TD_REVERT_CONFLICT) */
	JOB_ARCHIVE,		/* id: project or session (run_scope: a session), decision
				 * "archive"/"unarchive", text: its name for the message */
	JOB_DELETE_SESSION,	/* id: session, force (cancel its runs first), text: its
				 * name for the message */
	JOB_MODELS,		/* id: provider ("default") -> models */
	JOB_ATTEMPTS,		/* id: attempt group -> attempts */
	JOB_APPLY_ATTEMPT,	/* id: an attempt's run -> attempts (its group, applied) */
};

struct job {
	enum job_kind kind;
	char *id;
	char *session;		/* JOB_START_RUN: the session to continue, or NULL */
	char *text;		/* prompt or feedback */
	char *decision;		/* "approve", "revise", "reject"; "allow", "deny", "allow-run" */
	char *profile;		/* JOB_START_RUN permission profile, or NULL */
	char *path;		/* JOB_DOWNLOAD: destination file; JOB_DIFF: the file */
	char *label;		/* JOB_DOWNLOAD: what the progress bar names */
	char *run_id;		/* JOB_DOWNLOAD: the artifact's run, for the error text */
	char *provider;		/* JOB_START_RUN: provider and model, NULL: the defaults */
	char *model;
	bool plan_first;
	int attempts;		/* JOB_START_RUN: 2 to 8 starts a group of attempts */
	bool overwrite;
	bool force;		/* JOB_REVERT: over later changes of its files; JOB_DELETE_SESSION:
				 * cancel its runs first */
	bool run_scope;		/* JOB_HISTORY: id is a run (else a session); JOB_ARCHIVE: a session */
	bool archived;		/* JOB_PROJECTS, JOB_SESSIONS: the archived ones too */
	long version;
	long revision;
	char after[64];		/* JOB_HISTORY: event id STREAM:SEQ to read after, "" from the start */
};

/* A finished job, or a progress report of a download (progress true). */
struct job_result {
	struct job job;			/* as submitted: the ids it was for */
	enum td_code code;
	struct td_error err;		/* when code != TD_OK */
	bool progress;			/* JOB_DOWNLOAD still running */
	bool deleting;			/* JOB_DELETE_SESSION: goes on when its runs end */
	bool verifying;			/* ... checking the whole file's sha256 (done of total) */
	long long done, total;		/* JOB_DOWNLOAD bytes */
	struct td_doctor_report *doctor;
	struct td_project_list *projects;
	struct td_session_list *sessions;
	struct td_run_list *runs;
	struct td_artifact_list *artifacts;
	struct td_plan *plan;
	struct td_permission_list *permissions;
	struct td_run *run;
	struct td_permission *permission;
	struct td_connector_list *connectors;
	struct td_connector *connector;
	struct td_connector_test *connector_test;
	char *login_url;		/* JOB_CONNECTOR_LOGIN: the authorization URL */
	char *summary;			/* JOB_BULK: what was done, and each failure */
	size_t done_count, failed_count;	/* JOB_BULK */
	struct td_changes *changes;
	char *diff;			/* JOB_DIFF: the unified diff */
	struct td_revert *revert;
	struct td_model_list *models;	/* JOB_MODELS */
	struct td_attempt_group *attempts;	/* JOB_ATTEMPTS, JOB_APPLY_ATTEMPT */
	struct td_event **events;	/* JOB_HISTORY: oldest first */
	size_t event_count;
	bool more;			/* JOB_HISTORY: another page follows */
};

/* Copies job src into dst with its own strings; job_clear frees them and zeroes dst. */
void job_copy(struct job *dst, const struct job *src);
void job_clear(struct job *job);

struct worker;

/* Starts the threads; client must outlive the worker.  NULL on failure. */
struct worker *worker_new(struct td_client *client);
/* Cancels what runs (td_cancel), joins the threads, frees queued jobs and results. */
void worker_free(struct worker *w);
/* Readable while a result waits; for poll(). */
int worker_fd(const struct worker *w);
/* Queues a copy of job (strings are copied). */
void worker_submit(struct worker *w, const struct job *job);
/* The next finished result, or NULL; caller frees it with job_result_free. */
struct job_result *worker_take(struct worker *w);
void job_result_free(struct job_result *r);

/* An event's id, STREAM:SEQ (a bare SEQ without a stream), into out. */
void worker_event_id(const struct td_event *ev, char *out, size_t size);

#endif
