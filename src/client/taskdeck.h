/*
 * libtaskdeck: the C client core of the taskdeck local agent-task service.
 *
 * Conventions:
 * - Every function that can fail returns an enum td_code (TD_OK on success)
 *   and hands its results out through pointers; on failure no output is set
 *   and *err (when err is not NULL) says why.
 * - Every string and struct handed out is owned by the caller and freed with
 *   the *_free() function named next to it; each *_free() accepts NULL.
 * - Strings passed in are only read; the library keeps its own copies.
 * - One struct td_client may be used from many threads at once.
 * - Nothing the library returns or reports ever contains the token.
 *
 * See docs/client.md for a walk-through and an example program.
 */
#ifndef TASKDECK_H
#define TASKDECK_H

#include <stdbool.h>
#include <stddef.h>

#include "td-errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TD_API __attribute__((visibility("default")))

/* Default whole-request deadline, in milliseconds. */
#define TD_DEFAULT_TIMEOUT_MS 30000

struct td_client;	/* opaque connection to one service */
struct td_cancel;	/* opaque cancellation token */

/* Why a call failed.  Filled on every failure; never holds the token. */
struct td_error {
	enum td_code code;
	char code_name[64];	/* wire name ("stale_write"), kept even when unknown to us */
	long http_status;	/* 0 when no HTTP answer arrived */
	char message[512];	/* for a person */
	char request_id[64];	/* X-Request-Id of the answer, or "" */
};

struct td_connect_options {
	const char *base_url;	/* NULL: TASKDECK_URL, else discovery */
	const char *token;	/* NULL: TASKDECK_TOKEN, else the token file */
	long request_timeout_ms; /* 0: TD_DEFAULT_TIMEOUT_MS */
	const char *user_agent;	/* NULL: "libtaskdeck/VERSION" */
};

/* Per-call options; pass NULL for the defaults. */
struct td_request_options {
	long timeout_ms;		/* 0: the client's request_timeout_ms */
	const char *idempotency_key;	/* td_create_project and td_start_run; NULL for none */
	struct td_cancel *cancel;	/* NULL: not cancellable */
};

/* What the discovery file says about the running service. */
struct td_service_info {
	char *base_url;
	long pid;
	char *version;		/* NULL members were missing from the file */
	char *started_at;
	char *stream_id;
	char *token_file;
	char *discovery_file;	/* where the file is */
	char *json;		/* the file's text */
	/* The service's Unix domain socket (td_connect's requests go there), or NULL. */
	char *socket;
};

struct td_project {
	char *id;
	char *name;
	char *description;	/* "" when empty */
	char *context;		/* "" when empty */
	char *metadata_json;	/* the metadata object as JSON text, "{}" when empty */
	char *created_at;	/* RFC 3339, or NULL when the service sent none */
	char *updated_at;
	char *json;		/* the project as the service sent it */
	char *archived_at;	/* RFC 3339 when archived, else NULL */
};

/* Which items a list of projects or sessions returns (?archived=). */
enum td_archived {
	TD_ARCHIVED_HIDE,	/* those not archived: the service's default */
	TD_ARCHIVED_ONLY,	/* only the archived ones */
	TD_ARCHIVED_ALL,	/* both */
};

struct td_project_list {
	struct td_project *items;
	size_t count;
	char *next_cursor;	/* pass to the next td_list_projects; NULL on the last page */
	char *json;		/* the whole array as the service sent it */
};

/* Fields of a new project; NULL members are left out. */
struct td_new_project {
	const char *name;		/* required */
	const char *description;
	const char *context;
	const char *metadata_json;	/* a JSON object */
};

/* Defaults for new sessions of one project; NULL members are unset. */
struct td_session_defaults {
	char *project_id;
	char *updated_at;	/* send back as expected_updated_at */
	char *framework;
	char *provider;
	char *model;
	char *effort;
	char *permission_profile;
	char *json;
};

struct td_agent_routing {
	char *framework;
	struct {
		bool enabled;
		char *framework;	/* NULL members are unset */
		char *provider;
		char *model;
	} reviewer;
	struct {
		bool enabled;
		char *provider;
		char *model;
		int max_concurrent;
	} subagent;
	char *updated_at;
	char *json;
};

struct td_doctor_check {
	char *id;
	char *status;		/* "ok", "info", "warn" or "fail" */
	char *message;
	char *next_action;	/* NULL when none */
};

struct td_doctor_report {
	bool ready;
	char *version;
	struct td_doctor_check *checks;
	size_t check_count;
	char **next_actions;
	size_t next_action_count;
	char *json;
};

/* The library version, "0.1.0"; static. */
TD_API const char *td_version(void);
/* The wire name of a code ("not_found"); static. */
TD_API const char *td_code_string(enum td_code code);

/*
 * Resolves the service and makes a client; caller frees with
 * td_client_free.  The base URL comes from opts, else TASKDECK_URL, else the
 * discovery file of the taskdeck home (TASKDECK_HOME or XDG); the token from
 * opts, else TASKDECK_TOKEN, else the token file.  No request is sent: an
 * unreachable URL shows up on the first call as TD_CONNECTION_FAILED.  With
 * no service running: TD_SERVICE_NOT_FOUND.  opts may be NULL.
 */
TD_API enum td_code td_connect(struct td_client **out,
    const struct td_connect_options *opts, struct td_error *err);
/*
 * Reads the discovery file of the taskdeck home (TASKDECK_HOME or XDG) and
 * checks that its process is alive; ignores TASKDECK_URL.  Caller frees *out
 * with td_service_info_free.  TD_SERVICE_NOT_FOUND when no service runs.
 */
TD_API enum td_code td_discover(struct td_service_info **out, struct td_error *err);
TD_API void td_service_info_free(struct td_service_info *info);
/* Closes the client's connections; no call on it may still be running. */
TD_API void td_client_free(struct td_client *client);
/* The service's base URL ("http://127.0.0.1:PORT"); owned by client. */
TD_API const char *td_client_base_url(const struct td_client *client);

/*
 * A cancellation token for td_request_options.cancel; caller frees with
 * td_cancel_free once no call uses it.  NULL when out of file descriptors.
 * td_cancel_trigger may be called from any thread and from a signal
 * handler; every call using the token then ends with TD_CANCELLED at once.
 * A triggered token stays triggered.
 */
TD_API struct td_cancel *td_cancel_new(void);
TD_API void td_cancel_trigger(struct td_cancel *cancel);
TD_API bool td_cancel_is_triggered(const struct td_cancel *cancel);
TD_API void td_cancel_free(struct td_cancel *cancel);

/*
 * Any request: method ("GET", "POST", "PATCH", ...), path under the base URL
 * ("/api/v1/doctor"), body JSON text or NULL.  *out_json is the response
 * body; caller frees it with free().
 */
TD_API enum td_code td_request_json(struct td_client *client, const char *method,
    const char *path, const char *body, const struct td_request_options *opts,
    char **out_json, struct td_error *err);

/*
 * One page of projects, newest first.  limit 0 means the service's default
 * (100); cursor NULL means the first page.  Caller frees *out with
 * td_project_list_free.
 */
TD_API enum td_code td_list_projects(struct td_client *client, long limit,
    const char *cursor, const struct td_request_options *opts,
    struct td_project_list **out, struct td_error *err);
/* td_list_projects of the projects which selects (archived or not). */
TD_API enum td_code td_list_projects_archived(struct td_client *client,
    enum td_archived which, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_project_list **out,
    struct td_error *err);
/*
 * Archives project id (hidden from lists; its sessions and runs still work)
 * or brings it back.  Caller frees *out with td_project_free.
 */
TD_API enum td_code td_archive_project(struct td_client *client, const char *id,
    bool archived, const struct td_request_options *opts, struct td_project **out,
    struct td_error *err);
/* Caller frees *out with td_project_free. */
TD_API enum td_code td_get_project(struct td_client *client, const char *id,
    const struct td_request_options *opts, struct td_project **out,
    struct td_error *err);
/* opts->idempotency_key makes a retry safe.  Caller frees *out with td_project_free. */
TD_API enum td_code td_create_project(struct td_client *client,
    const struct td_new_project *project, const struct td_request_options *opts,
    struct td_project **out, struct td_error *err);
/*
 * patch_json is a JSON merge patch (RFC 7396) of name, description, context
 * and metadata.  Caller frees *out with td_project_free.
 */
TD_API enum td_code td_update_project(struct td_client *client, const char *id,
    const char *patch_json, const struct td_request_options *opts,
    struct td_project **out, struct td_error *err);
TD_API void td_project_free(struct td_project *project);
TD_API void td_project_list_free(struct td_project_list *list);

/* Caller frees *out with td_session_defaults_free. */
TD_API enum td_code td_get_session_defaults(struct td_client *client,
    const char *project_id, const struct td_request_options *opts,
    struct td_session_defaults **out, struct td_error *err);
/*
 * expected_updated_at is the updated_at last read; when another write came
 * in between, TD_STALE_WRITE.  patch_json is a merge patch of the defaults
 * (a member set to null clears it).  Caller frees *out with
 * td_session_defaults_free.
 */
TD_API enum td_code td_update_session_defaults(struct td_client *client,
    const char *project_id, const char *expected_updated_at,
    const char *patch_json, const struct td_request_options *opts,
    struct td_session_defaults **out, struct td_error *err);
TD_API void td_session_defaults_free(struct td_session_defaults *defaults);

/* Caller frees *out with td_agent_routing_free. */
TD_API enum td_code td_get_agent_routing(struct td_client *client,
    const struct td_request_options *opts, struct td_agent_routing **out,
    struct td_error *err);
/* patch_json is a merge patch of the routing.  Caller frees *out with td_agent_routing_free. */
TD_API enum td_code td_update_agent_routing(struct td_client *client,
    const char *patch_json, const struct td_request_options *opts,
    struct td_agent_routing **out, struct td_error *err);
TD_API void td_agent_routing_free(struct td_agent_routing *routing);

/* Caller frees *out with td_doctor_report_free. */
TD_API enum td_code td_doctor(struct td_client *client,
    const struct td_request_options *opts, struct td_doctor_report **out,
    struct td_error *err);
TD_API void td_doctor_report_free(struct td_doctor_report *report);

/* --- Readiness and setup (docs/http-api.md) ------------------------------ */

struct td_runtime {
	char *framework;	/* "taskdeck", "claude-code", "codex", "acp" */
	char *status;		/* "ready", "missing", "broken", "outdated" */
	char *version;		/* NULL when unknown */
	char *source;		/* "managed" or "external" */
	char *path;		/* NULL when missing */
	char *found_by;		/* "PATH", "settings", "build tree", "installed", ... or NULL */
	char *min_version;	/* external frameworks; NULL for the managed one */
	char *message;
	bool data_complete;	/* managed: the replay transcripts are in place */
};

struct td_runtime_list {
	struct td_runtime *items;
	size_t count;
	char *json;
};

/*
 * The answer of a setup step (bootstrap or CLI install).  A step that ran but
 * failed is TD_OK with ok false and error_code set ("runtime_missing",
 * "configuration_conflict", "permission_denied", ...).
 */
struct td_setup_result {
	bool ok;
	bool changed;		/* something was repaired or installed */
	char *error_code;	/* NULL when ok */
	char *error_message;	/* NULL when ok */
	char *path;		/* install: the launcher; NULL otherwise */
	bool on_path;		/* install: its directory is on the service's PATH */
	char **next_actions;	/* what to do next, for a person */
	size_t next_action_count;
	char *json;		/* the whole answer */
};

/* A model a provider offers (GET /api/v1/providers/{name}/models). */
struct td_model {
	char *id;		/* what --model and config.model take */
	char *display_name;	/* NULL when the provider gives none */
	long context_window;	/* tokens; 0 when unknown */
	bool is_default;	/* the provider's defaultModel */
	bool configured;	/* settings.json names it (models.<id>) */
};

struct td_model_list {
	char *provider;
	char *kind;
	char *source;		/* where the list comes from, for a person */
	struct td_model *items;
	size_t count;
	char *json;
};

/*
 * The models provider offers, asked of the provider ("default": the default
 * provider of settings.json).  Caller frees *out with td_model_list_free.
 */
TD_API enum td_code td_list_models(struct td_client *client, const char *provider,
    const struct td_request_options *opts, struct td_model_list **out,
    struct td_error *err);
TD_API void td_model_list_free(struct td_model_list *list);

/* Caller frees *out with td_runtime_list_free. */
TD_API enum td_code td_list_runtimes(struct td_client *client,
    const struct td_request_options *opts, struct td_runtime_list **out,
    struct td_error *err);
TD_API void td_runtime_list_free(struct td_runtime_list *list);
/*
 * action "status" (the first-run state) or "runtime" (repair the managed
 * runtime; idempotent).  Caller frees *out with td_setup_result_free.
 */
TD_API enum td_code td_bootstrap(struct td_client *client, const char *action,
    const struct td_request_options *opts, struct td_setup_result **out,
    struct td_error *err);
/*
 * Installs the taskdeck launcher in the user's PATH directory.  A timeout
 * does not mean the install did not happen: read td_bootstrap "status" or
 * install again (it is idempotent).  Caller frees *out with td_setup_result_free.
 */
TD_API enum td_code td_install_cli(struct td_client *client,
    const struct td_request_options *opts, struct td_setup_result **out,
    struct td_error *err);
TD_API void td_setup_result_free(struct td_setup_result *result);

/* --- Runs ---------------------------------------------------------------- */

/* One run.  NULL members were null or absent in the service's answer. */
struct td_run {
	char *id;
	char *session_id;
	char *project_id;
	char *status;		/* "queued", "running", "completed", "failed", "cancelled" */
	char *prompt;
	char *permission_profile;
	char *turn_intent;	/* "plan-first" or NULL */
	struct {
		char *framework;
		char *provider;
		char *model;
		char *effort;
	} config;
	char *cwd;
	char *created_at;
	char *started_at;
	char *finished_at;
	char *cancel_requested_at;
	struct {
		char *phase;	/* "starting", "thinking", "tool", ... */
		char *updated_at;
	} progress;
	struct {
		char *kind;	/* "plan-approval"; NULL when no decision is needed */
		long plan_version;	/* 0 when absent */
		long plan_revision;
		char *since;
	} attention;
	char *output;		/* NULL until the run is final */
	char *error_code;	/* NULL unless the run failed */
	char *error_message;
	long long input_tokens;		/* cache reads and writes included */
	long long output_tokens;
	long long cache_read_tokens;	/* of input_tokens, read from the provider's cache */
	long long cache_write_tokens;	/* of input_tokens, written to it */
	bool has_cost;			/* false: settings.json's pricing has no price */
	double cost;			/* USD at the model's price */
	struct {
		bool known;	/* false: no snapshot of the workspace yet (changes null) */
		long files;	/* the run's changes so far: its start against its latest snapshot */
		long additions;
		long deletions;
	} changes;
	struct {
		char *verdict;	/* "approved", "changes_requested", "error"; NULL: not reviewed */
		char *summary;	/* the reviewer's text */
		long round;	/* 1, or 2 after one more round */
	} review;
	char *updated_at;
	char *json;		/* the run as the service sent it */
};

struct td_run_list {
	struct td_run *items;
	size_t count;
	char *next_cursor;	/* NULL on the last page */
	char *json;
};

/* What to run; NULL members are left out. */
struct td_run_request {
	const char *project;		/* required: a project id */
	const char *prompt;		/* required */
	const char *permission_profile;	/* "ask", "workspace-write", "read-only", "full-access" */
	const char *turn_intent;	/* "plan-first" */
	const char *cwd;		/* an absolute directory; NULL: a managed workspace */
	const char *session_id;		/* continue this session */
	const char *config_json;	/* {"framework","provider","model","effort"} ... */
	const char *framework;		/* ... or these, which override config_json's members */
	const char *provider;
	const char *model;
	const char *effort;
	int network;			/* the sandbox's network: 1 on, -1 off, 0 the defaults */
};

/* Which runs td_list_runs returns; session_id or project_id is required. */
struct td_run_filter {
	const char *session_id;
	const char *project_id;
	const char *status;	/* NULL: any */
};

/* How td_wait_for_run waits; NULL means no deadline, no cancel. */
struct td_wait_options {
	long timeout_ms;	/* the whole wait, requests and delays; 0: no deadline */
	struct td_cancel *cancel;	/* ends the wait (not the run) with TD_CANCELLED */
	bool return_on_attention;	/* also return a running run that needs a decision */
};

/*
 * Starts a run; *out is its first state (queued or running), with id and
 * session_id.  opts->idempotency_key makes a retry safe.  Caller frees *out
 * with td_run_free.
 */
TD_API enum td_code td_start_run(struct td_client *client,
    const struct td_run_request *request, const struct td_request_options *opts,
    struct td_run **out, struct td_error *err);
/*
 * Starts run_id again: a new run in the same session with the same prompt,
 * permission profile, turn intent, config (framework, provider, model,
 * effort) and network.  The run must have ended (completed, failed or
 * cancelled); one still queued or running is TD_SESSION_BUSY, and a session
 * whose configuration changed since is TD_CONFIGURATION_CONFLICT (the
 * message names the member): then nothing starts.  opts->idempotency_key makes a retry safe.  Caller frees *out
 * (the new run) with td_run_free.
 */
TD_API enum td_code td_rerun_run(struct td_client *client, const char *run_id,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err);
/* Caller frees *out with td_run_free. */
TD_API enum td_code td_get_run(struct td_client *client, const char *run_id,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err);
/*
 * One page of runs, newest first (limit 0: the service's 100).  Caller frees
 * *out with td_run_list_free.
 */
TD_API enum td_code td_list_runs(struct td_client *client,
    const struct td_run_filter *filter, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_run_list **out,
    struct td_error *err);
/*
 * Asks the service to cancel a run (idempotent; a final run is returned
 * unchanged).  The run ends "cancelled" shortly after: wait for it.  out may
 * be NULL; else caller frees *out with td_run_free.
 */
TD_API enum td_code td_cancel_run(struct td_client *client, const char *run_id,
    const struct td_request_options *opts, struct td_run **out,
    struct td_error *err);
/*
 * Polls the run (100 ms growing to 1 s, with jitter) until it is final, or,
 * with w->return_on_attention, running with an attention object.  The
 * deadline w->timeout_ms covers requests and delays: each request's own
 * deadline is the client's, capped by what is left.  Connection failures,
 * request timeouts and service_unavailable are retried until the deadline.
 * When it passes: TD_TIMEOUT, and the run goes on in the service.  Caller
 * frees *out with td_run_free.
 */
TD_API enum td_code td_wait_for_run(struct td_client *client, const char *run_id,
    const struct td_wait_options *w, struct td_run **out, struct td_error *err);
/* True for "completed", "failed" and "cancelled". */
TD_API bool td_run_is_final(const struct td_run *run);
TD_API void td_run_free(struct td_run *run);
TD_API void td_run_list_free(struct td_run_list *list);

/*
 * A project by id or name: text that begins as a project id does ("prj_")
 * is taken as it is (not checked: the call that uses it answers); else the project named text exactly, else the one whose name
 * begins with text, ignoring case.  TD_INVALID_ARGUMENT (naming the
 * candidates) when several match, TD_NOT_FOUND when none does.  Caller frees
 * *id.
 */
TD_API enum td_code td_find_project(struct td_client *client, const char *text,
    const struct td_request_options *opts, char **id, struct td_error *err);
/*
 * A session by id or title, as td_find_project: among the sessions of
 * project_id, or of every project when it is NULL.  Caller frees *id.
 */
TD_API enum td_code td_find_session(struct td_client *client, const char *project_id,
    const char *text, const struct td_request_options *opts, char **id,
    struct td_error *err);
/*
 * A connector by id or name, as td_find_project ("con_" ids as they are).
 * Caller frees *id.
 */
TD_API enum td_code td_find_connector(struct td_client *client, const char *text,
    const struct td_request_options *opts, char **id, struct td_error *err);
/*
 * A run by a piece of its id, as git and docker take them: a whole id as it
 * is; else the one run, of any project, whose id begins with text (with or
 * without "run_") or ends with it (the tail the dashboard shows after "…"),
 * ignoring case.  Text that cannot be a piece of an id (under 4 characters,
 * or other than letters, digits and '_') is taken as it is, for the call
 * that uses it to answer.  TD_INVALID_ARGUMENT (naming the candidates) when
 * several runs match, TD_NOT_FOUND when none does.  Caller frees *id.
 */
TD_API enum td_code td_find_run(struct td_client *client, const char *text,
    const struct td_request_options *opts, char **id, struct td_error *err);
/* --- Workspace changes of a run (an extension beyond the spec) ----------- */

/* One file a run changed (docs/http-api.md, Run changes). */
struct td_change_file {
	char *path;		/* relative to the workspace */
	char *status;		/* "added", "modified", "deleted", "type-changed" */
	long additions;		/* lines; 0 for binary and too large files */
	long deletions;
	bool binary;
	bool too_large;		/* over the snapshot's size limit: no diff kept */
	char *old_mode;		/* "100644", "100755", "120000"; NULL when absent */
	char *new_mode;
};
/* A change's status as the letter git shows: 'A', 'M', 'D', 'T'; '?' for NULL. */
TD_API char td_change_letter(const char *status);

/* A run's changes: the files, sorted by path, and their totals. */
struct td_changes {
	char *run_id;
	char *from_run_id;	/* compared with the end of this run; NULL: a start */
	bool live;		/* the run has not ended: more changes may come */
	char *reverted_at;	/* NULL unless the run was reverted */
	/* Why files the run changed may be missing from files (a snapshot left part of the
	 * workspace out or failed); NULL when the list is whole. */
	char *incomplete_reason;
	struct td_change_file *files;
	size_t file_count;
	long total_files;
	long total_additions;
	long total_deletions;
	char *json;
};

/* A file a revert did not restore, and why. */
struct td_revert_conflict {
	char *path;
	char *reason;
};

/* The answer of td_revert_run. */
struct td_revert {
	char *run_id;
	char **reverted;	/* the paths restored */
	size_t reverted_count;
	char *reverted_at;
	/* TD_REVERT_CONFLICT: the files changed since the run (nothing reverted). */
	struct td_revert_conflict *conflicts;
	size_t conflict_count;
	char *json;		/* the answer, or the problem's body on a conflict */
};

/*
 * What run_id changed in its workspace.  from NULL: against the run's own
 * start; "start": against the session's start; a run id: against the end of
 * that run of the same session (TD_INVALID_REQUEST otherwise).  A run with
 * no snapshot yet has no files.  Every page of the list is read (nextCursor),
 * json holding them all as one answer.  Caller frees *out with
 * td_changes_free.
 */
TD_API enum td_code td_get_run_changes(struct td_client *client, const char *run_id,
    const char *from, const struct td_request_options *opts, struct td_changes **out,
    struct td_error *err);
TD_API void td_changes_free(struct td_changes *changes);
/*
 * The unified diff (git style) of what run_id changed: of path, or with path
 * NULL of every file (the service cuts it at 8 MiB: *truncated true then;
 * truncated may be NULL).  from as for td_get_run_changes.  TD_NOT_FOUND
 * when path is not among the changes.  Caller frees *out with free().
 */
TD_API enum td_code td_get_run_diff(struct td_client *client, const char *run_id,
    const char *path, const char *from, const struct td_request_options *opts,
    char **out, bool *truncated, struct td_error *err);
/*
 * Puts back the files run_id changed as they were before it; files it did
 * not touch are never touched.  TD_RUN_ACTIVE while the run goes on.  When a
 * file it changed was changed again since (by a later run or by hand):
 * TD_REVERT_CONFLICT, nothing reverted, and *out is set too, its conflicts
 * naming the files (force overwrites them).  Caller frees *out with
 * td_revert_free.
 */
TD_API enum td_code td_revert_run(struct td_client *client, const char *run_id,
    bool force, const struct td_request_options *opts, struct td_revert **out,
    struct td_error *err);
TD_API void td_revert_free(struct td_revert *revert);

/* --- Attempts: one prompt run N times in worktrees, one applied ----------- */

/* td_create_attempts' request; strings owned by the caller. */
struct td_attempts_request {
	const char *project;
	const char *prompt;
	const char *cwd;		/* absolute: where the attempts start and the apply goes */
	int count;			/* 1 to 8 */
	const char *const *models;	/* spread over the attempts, or NULL */
	size_t model_count;
	const char *check;		/* a shell command run in each worktree after, or NULL */
	const char *provider, *framework, *effort;	/* NULL: the defaults */
	const char *permission_profile;	/* NULL: the default */
	int network;			/* 1 on, -1 off, 0 the default */
};

struct td_attempt {
	int index;
	char *run_id;
	char *session_id;
	char *model;			/* NULL: the configuration's */
	char *branch;			/* taskdeck/attempt-<group>-<index> */
	char *cwd;			/* its worktree */
	char *state;			/* preparing, active or removed */
	char *run_status;		/* its run's status */
	bool measured;			/* files, additions, deletions are known */
	long files, additions, deletions;
	char *check_status;		/* none, running, passed, failed, error; NULL: not yet */
	int check_exit;			/* -1 when none */
};

struct td_attempt_group {
	char *id;
	char *status;			/* active, applied or discarded */
	char *cwd;
	char *kind;			/* git or copy */
	char *applied_run;		/* NULL when none */
	struct td_attempt *attempts;
	size_t count;
	char *json;			/* the service's answer */
};

/*
 * Starts rq->count runs of one prompt, each in its own session whose
 * workspace is a git worktree of rq->cwd (docs/http-api.md, Attempts).
 * Caller frees *out with td_attempt_group_free.
 */
TD_API enum td_code td_create_attempts(struct td_client *client,
    const struct td_attempts_request *rq, const struct td_request_options *opts,
    struct td_attempt_group **out, struct td_error *err);
TD_API enum td_code td_get_attempts(struct td_client *client, const char *group_id,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err);
/*
 * Puts the changes of the attempt run_id into the group's directory, all or
 * nothing (TD_ATTEMPT_CONFLICT: nothing changed), then removes the group's
 * worktrees and branches unless keep.
 */
TD_API enum td_code td_apply_attempt(struct td_client *client, const char *run_id, bool keep,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err);
/* Removes the worktree and branch of the attempt run_id. */
TD_API enum td_code td_discard_attempt(struct td_client *client, const char *run_id,
    const struct td_request_options *opts, struct td_attempt_group **out,
    struct td_error *err);
TD_API void td_attempt_group_free(struct td_attempt_group *group);

/* --- Sessions ------------------------------------------------------------ */

struct td_session {
	char *id;
	char *project_id;
	char *title;
	char *cwd;		/* the recorded working directory */
	char *workspace;	/* "managed" or "external" */
	char *created_at;
	char *updated_at;
	struct {
		char *id;	/* NULL when the session has no run yet */
		char *status;
	} last_run;
	char *json;
	char *archived_at;	/* RFC 3339 when archived, else NULL */
};

struct td_session_list {
	struct td_session *items;
	size_t count;
	char *next_cursor;	/* NULL on the last page */
	char *json;
};

/* A session's configuration; NULL members are unset. */
struct td_session_config {
	char *session_id;
	long revision;		/* send back as expected_revision */
	char *framework;
	char *provider;
	char *model;
	char *effort;
	char *updated_at;
	char *json;
};

/* One page of a project's sessions, newest first.  Caller frees *out with td_session_list_free. */
TD_API enum td_code td_list_sessions(struct td_client *client,
    const char *project_id, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_session_list **out,
    struct td_error *err);
/* td_list_sessions of the sessions which selects (archived or not). */
TD_API enum td_code td_list_sessions_archived(struct td_client *client,
    const char *project_id, enum td_archived which, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_session_list **out,
    struct td_error *err);
/*
 * Archives session id (hidden from its project's list; runs started in it
 * still work) or brings it back.  Caller frees *out with td_session_free.
 */
TD_API enum td_code td_archive_session(struct td_client *client, const char *session_id,
    bool archived, const struct td_request_options *opts, struct td_session **out,
    struct td_error *err);
/* A session made before its first run (td_create_session); NULL members are left out. */
struct td_new_session {
	const char *project;		/* required: a project id */
	const char *title;		/* at most 80 characters; NULL: "New session" */
	const char *cwd;		/* an absolute directory; NULL: a managed workspace */
	const char *framework;		/* the configuration, as a new session of a run gets it */
	const char *provider;
	const char *model;
	const char *effort;
	/*
	 * The session's own MCP servers, a JSON array (docs/connectors.md, "A
	 * session's own connectors"): {name, command, args, env: [{name, value}]}
	 * or {name, type: "http", url, headers: [{name, value}]}.  The values are
	 * secrets: the service seals them and never shows them.
	 */
	const char *connectors_json;
};
/*
 * Creates a session (POST /api/v1/sessions, an extension beyond the spec)
 * with its configuration and connectors fixed at once: an editor's
 * session/new.  Caller frees *out with td_session_free.
 */
TD_API enum td_code td_create_session(struct td_client *client,
    const struct td_new_session *rq, const struct td_request_options *opts,
    struct td_session **out, struct td_error *err);
/*
 * Replaces the session's own MCP servers with connectors_json (as in
 * td_new_session; NULL: none).  Its next runs get them.
 */
TD_API enum td_code td_set_session_connectors(struct td_client *client,
    const char *session_id, const char *connectors_json,
    const struct td_request_options *opts, struct td_error *err);
/* What td_delete_session removed and kept, or that the delete goes on. */
struct td_session_deleted {
	char *id;
	long runs;		/* the runs deleted with it */
	char **removed;		/* the directories removed (changes store, managed workspace); NULL-terminated */
	char **kept;		/* the external workspace, never removed; NULL-terminated */
	/*
	 * With force, when cancelled runs had not ended yet: true, and the
	 * service deletes the session when the last of them ends (runs, removed
	 * and kept are then 0 and empty).
	 */
	bool deleting;
	char **cancelled;	/* the runs force cancelled (when deleting); NULL-terminated */
};
/*
 * Deletes session id with its runs, their events, plans, prompts, artifacts
 * and workspace changes, and its managed workspace (an extension beyond the
 * spec).  TD_SESSION_BUSY while a run of it is queued or running, unless
 * force: its runs are cancelled first, and when they have not all ended at
 * once the answer has deleting set (HTTP 202): no new run is admitted into
 * the session and the delete finishes when its last run ends.  Caller frees
 * *out (may be NULL: not wanted) with td_session_deleted_free.
 */
TD_API enum td_code td_delete_session(struct td_client *client, const char *session_id,
    bool force, const struct td_request_options *opts, struct td_session_deleted **out,
    struct td_error *err);
TD_API void td_session_deleted_free(struct td_session_deleted *deleted);
/* Caller frees *out with td_session_free. */
TD_API enum td_code td_get_session(struct td_client *client,
    const char *session_id, const struct td_request_options *opts,
    struct td_session **out, struct td_error *err);
TD_API void td_session_free(struct td_session *session);
TD_API void td_session_list_free(struct td_session_list *list);

/* Caller frees *out with td_session_config_free. */
TD_API enum td_code td_get_session_config(struct td_client *client,
    const char *session_id, const struct td_request_options *opts,
    struct td_session_config **out, struct td_error *err);
/*
 * patch_json is an object of framework, provider, model, effort: an omitted
 * member is kept, null clears it.  TD_STALE_WRITE when expected_revision is
 * not the current revision (read again, then write);
 * TD_INVALID_CONFIGURATION when the result is not a valid combination.
 * Caller frees *out with td_session_config_free.
 */
TD_API enum td_code td_update_session_config(struct td_client *client,
    const char *session_id, long expected_revision, const char *patch_json,
    const struct td_request_options *opts, struct td_session_config **out,
    struct td_error *err);
TD_API void td_session_config_free(struct td_session_config *config);

/* --- Artifacts ----------------------------------------------------------- */

struct td_artifact {
	char *id;
	char *name;		/* the file name */
	char *path;		/* relative to the workspace, ending in name */
	char *version;		/* "sha256:<hex>", also the download's ETag */
	long long size;		/* bytes; -1 when the service sent none */
	char *media_type;
	char *session_id;
	char *run_id;
	char *created_at;
	char *json;
};

struct td_artifact_list {
	struct td_artifact *items;
	size_t count;
	char *next_cursor;	/* NULL on the last page */
	char *json;
};

/*
 * Receives downloaded bytes.  Return TD_OK to go on; anything else stops the
 * download, which then fails with TD_CANCELLED when that was returned, else
 * with TD_IO_ERROR.
 */
typedef enum td_code (*td_write_fn)(void *ud, const void *data, size_t len);
/* Reports a file download: bytes of the file so far, and its size (-1: unknown). */
typedef void (*td_progress_fn)(void *ud, long long done, long long total);

/* What a download answer said; filled as soon as its headers arrive. */
struct td_download_info {
	long http_status;	/* 200 (whole body) or 206 (from offset) */
	long long offset;	/* where the body starts in the file */
	long long total_size;	/* the whole file's size; -1 when unknown */
	long long received;	/* body bytes handed on */
	char etag[96];		/* the version, without quotes; "" when none */
	char media_type[128];
};

/* td_download_artifact_to_file flags. */
#define TD_DOWNLOAD_OVERWRITE 0x1	/* replace an existing file at path */
#define TD_DOWNLOAD_NO_RESUME 0x2	/* ignore a <path>.part: start from byte 0 */

struct td_download_options {
	unsigned flags;
	td_progress_fn progress;	/* NULL: none */
	void *progress_ud;
	/* The check of the whole file against its version (sha256) after the
	 * last byte: bytes read so far and the file's size, with progress_ud;
	 * NULL: none.  A 1 GiB file takes seconds. */
	td_progress_fn verify_progress;
};

/*
 * One page of a session's artifacts, newest first: the newest version of
 * each path, or with all every version.  Caller frees *out with
 * td_artifact_list_free.
 */
TD_API enum td_code td_list_artifacts(struct td_client *client,
    const char *session_id, bool all, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_artifact_list **out,
    struct td_error *err);
/* Caller frees *out with td_artifact_free. */
TD_API enum td_code td_get_artifact(struct td_client *client,
    const char *artifact_id, const struct td_request_options *opts,
    struct td_artifact **out, struct td_error *err);
TD_API void td_artifact_free(struct td_artifact *artifact);
TD_API void td_artifact_list_free(struct td_artifact_list *list);

/*
 * Streams an artifact's bytes to writer, never holding the whole file.
 * offset > 0 asks for the bytes from offset on (Range): info->http_status is
 * then 206, or 200 when the service sent the whole file from byte 0.  The
 * request deadline (opts->timeout_ms, 0: the client's) covers the whole body:
 * give a large download a large one.  info may be NULL; it is filled also on
 * failure, as far as the answer got.
 */
TD_API enum td_code td_download_artifact(struct td_client *client,
    const char *artifact_id, long long offset, td_write_fn writer, void *ud,
    const struct td_request_options *opts, struct td_download_info *info,
    struct td_error *err);
/*
 * Downloads an artifact into the file path: the bytes go to <path>.part,
 * which is checked against the announced size and against the version
 * (sha256 of the whole file), fsynced and renamed to path.  A <path>.part
 * left by an interrupted download is resumed only when its sidecar
 * <path>.part.meta ("taskdeck-part 1 <artifact id> <version>") names this
 * artifact: Range from its size, If-Range with that version.  Any other
 * .part (no sidecar, another artifact) is overwritten from byte 0.  When the
 * service sends the whole file instead (another version) or the range does
 * not fit, the download starts again from byte 0; resumed bytes that fail
 * the sha256 check are thrown away and the whole file fetched once more.
 * Bytes that still do not match: TD_INVALID_RESPONSE, nothing saved, no
 * .part kept.  An existing path is an error (TD_IO_ERROR) without
 * TD_DOWNLOAD_OVERWRITE; so is a .part another download is writing.  On
 * other failures the .part and its sidecar stay for the next try.  The
 * request deadline covers the body, as for td_download_artifact.  dl and
 * info may be NULL.
 */
TD_API enum td_code td_download_artifact_to_file(struct td_client *client,
    const char *artifact_id, const char *path,
    const struct td_download_options *dl, const struct td_request_options *opts,
    struct td_download_info *info, struct td_error *err);

/* --- Events -------------------------------------------------------------- */

/*
 * Events queued and not yet taken by td_events_next.  When one more arrives
 * and the consumer takes none within TD_EVENTS_OVERFLOW_GRACE_MS (reading
 * pauses meanwhile), the stream fails with TD_EVENT_STREAM_OVERFLOW.
 */
#define TD_EVENTS_MAX_BACKLOG 1024
#define TD_EVENTS_OVERFLOW_GRACE_MS 250
/* Largest frame accepted from the stream, in bytes. */
#define TD_EVENTS_MAX_FRAME (1024 * 1024)
/* Default td_events_options.idle_timeout_ms. */
#define TD_EVENTS_IDLE_TIMEOUT_MS 30000

struct td_events;	/* opaque subscription to GET /api/v1/events */

/* One event of the stream (docs/events.md).  NULL members were null or absent. */
struct td_event {
	long long seq;		/* the service's counter; gaps are other events */
	char *stream_id;	/* the stream (service start) it was sent on */
	char *type;		/* "run.output", ..., or "stream.resync-required" */
	char *time;		/* RFC 3339, set by the service when it emitted the event */
	char *project_id;
	char *session_id;
	char *run_id;
	char *data_json;	/* the data member as JSON text ("null" when absent) */
	char *json;		/* the whole event as the service sent it */
};

/* One page of a run's stored history, oldest first (td_list_run_events). */
struct td_run_event_list {
	struct td_event **items;	/* the list's; keep one by taking it out (its slot NULL) */
	size_t count;
	char *next_after;	/* the event id (STREAM:SEQ) after which the next page starts;
				   NULL on the last page */
};

/*
 * One page of the run's stored history (GET /api/v1/runs/{id}/events,
 * docs/events.md), oldest first: the events after the event id after
 * ("STREAM:SEQ", or a bare seq; NULL or "" from the start), at most limit
 * (0: the service's 1000).  Each event is as the stream yielded it.  Caller
 * frees *out with td_run_event_list_free (an event taken out of it with
 * td_event_free).
 */
TD_API enum td_code td_list_run_events(struct td_client *client, const char *run_id,
    const char *after, long limit, const struct td_request_options *opts,
    struct td_run_event_list **out, struct td_error *err);
TD_API void td_run_event_list_free(struct td_run_event_list *list);

/* An event passes when it matches every member given; NULL members match all. */
struct td_event_filter {
	const char *project_id;
	const char *session_id;
	const char *run_id;
};

struct td_events_options {
	long idle_timeout_ms;	/* no frame (event or heartbeat) for this long fails the stream; 0: 30000 */
	const char *last_event_id;	/* "<streamId>:<seq>" to resume after, or NULL */
};

/*
 * Subscribes to the event stream: a worker thread opens GET /api/v1/events
 * (no overall deadline; the idle timeout instead) and queues what arrives.
 * filter and opts may be NULL.  The client must outlive the subscription.
 * Free with td_events_close.
 */
TD_API enum td_code td_events_open(struct td_client *client,
    const struct td_event_filter *filter, const struct td_events_options *opts,
    struct td_events **out, struct td_error *err);
/*
 * A new subscription with the filter and idle timeout of old that resumes
 * after the last event old yielded (td_events_last_id): the service replays
 * what came since, without gap or duplicate, or yields
 * stream.resync-required when it cannot.  old is only read; close it too.
 */
TD_API enum td_code td_events_reopen(struct td_client *client,
    const struct td_events *old, struct td_events **out, struct td_error *err);
/*
 * Waits (timeout_ms < 0: without limit) until the stream is up: TD_OK once
 * the service's stream.hello arrived; else the error that ended the stream
 * (TD_CONNECTION_FAILED, a service error such as TD_UNAVAILABLE, ...), or
 * TD_TIMEOUT when neither came in time.
 */
TD_API enum td_code td_events_ready(struct td_events *ev, long timeout_ms,
    struct td_error *err);
/*
 * The next event, in the stream's order; caller frees *out with
 * td_event_free.  stream.hello and heartbeats are never yielded;
 * stream.resync-required is (re-read what you show over HTTP).
 * timeout_ms < 0 waits without limit, 0 only looks.  TD_TIMEOUT when none
 * came in time: not fatal, call again.  Once the events queued before it are
 * taken, a failure of the stream is returned by every later call:
 * TD_EVENT_STREAM_OVERFLOW (more than TD_EVENTS_MAX_BACKLOG events waited),
 * TD_EVENT_STREAM_IDLE_TIMEOUT, TD_EVENT_STREAM_INVALID_MESSAGE (a frame
 * that is not a valid event, or larger than TD_EVENTS_MAX_FRAME),
 * TD_CONNECTION_FAILED (the connection ended), or the service's error.
 * Resume with td_events_reopen.  TD_CANCELLED when td_events_close runs.
 */
TD_API enum td_code td_events_next(struct td_events *ev, long timeout_ms,
    struct td_event **out, struct td_error *err);
/* Readable while td_events_next would not block (an event or a failure waits); for poll(). */
TD_API int td_events_fd(const struct td_events *ev);
/*
 * "<streamId>:<seq>" of the last event yielded (before any: the position
 * the subscription started at), or NULL when not known yet; free() it.
 */
TD_API char *td_events_last_id(const struct td_events *ev);
/*
 * Stops the worker and frees ev; may be called from any thread, also while
 * another waits in td_events_next or td_events_ready (which then return
 * TD_CANCELLED before ev goes away).  Prompt: it does not wait for the
 * network.  NULL is fine.
 */
TD_API void td_events_close(struct td_events *ev);
TD_API void td_event_free(struct td_event *event);
/*
 * An event made of copies of its members (NULL strings stay NULL, data_json
 * NULL is "null"), as the stream would yield it; free it with td_event_free,
 * the only way to free any struct td_event.
 */
TD_API struct td_event *td_event_new(long long seq, const char *stream_id, const char *type,
    const char *time, const char *project_id, const char *session_id, const char *run_id,
    const char *data_json, const char *json);
/*
 * The run a run.queued event carries (its data's run, as td_get_run would
 * have read it then), so a client lists a new run without fetching it; NULL
 * for any other event.  Caller frees it with td_run_free.
 */
TD_API struct td_run *td_event_run(const struct td_event *event);

/* --- Plans and permission prompts ---------------------------------------- */

struct td_plan_step {
	char *id;
	char *title;
	char *status;		/* "pending", "in-progress", "completed", "failed" */
};

/* A session's plan (docs/http-api.md, Plans).  NULL members were null or absent. */
struct td_plan {
	char *session_id;
	char *run_id;
	long version;		/* counts proposals; send back with a decision ... */
	long revision;		/* ... together with this, which counts every change */
	char *status;		/* "awaiting-approval", "approved", "superseded", "rejected", "completed", "abandoned" */
	char *summary;
	char *feedback;		/* the last revise feedback, or NULL */
	struct td_plan_step *steps;
	size_t step_count;
	char *created_at;
	char *updated_at;
	char *json;
};

/*
 * A permission prompt of a run with profile "ask".  Prompts are the
 * application surface (/app/v1/permissions), used by the dashboard and the
 * CLI; they are not part of the specification's SDK.
 */
struct td_permission {
	char *id;		/* "prm_..." */
	char *run_id;
	char *session_id;
	char *project_id;
	char *tool;		/* "write_file", "run_command", "<connector>__<tool>" */
	char *summary;		/* for a person: "write report.md (2.1 KiB)" */
	char *input_json;	/* the tool's input as JSON text, "{}" when absent */
	char *status;		/* "pending", "allowed", "denied", "expired" */
	char *decision;		/* "allow", "deny", "allow-run"; NULL while pending */
	char *created_at;
	char *answered_at;	/* NULL while pending */
	char *json;
};

struct td_permission_list {
	struct td_permission *items;
	size_t count;
	char *next_cursor;	/* NULL on the last page */
	char *json;
};

/*
 * The session's plan, whatever its status; TD_NOT_FOUND when the session has
 * none.  Caller frees *out with td_plan_free.
 */
TD_API enum td_code td_get_session_plan(struct td_client *client,
    const char *session_id, const struct td_request_options *opts,
    struct td_plan **out, struct td_error *err);
/*
 * Decides on the plan awaiting approval: decision is "approve" (the run
 * goes on), "revise" (feedback required: the agent proposes a new version)
 * or "reject" (the run ends "cancelled").  version and revision are the
 * plan's exactly as read: TD_STALE_PLAN when the plan changed since (read it
 * again and show it before deciding again), TD_PLAN_NOT_PENDING when no plan
 * awaits a decision.  feedback may be NULL except for "revise".  out may be
 * NULL; else caller frees *out (the plan after the decision) with
 * td_plan_free.
 */
TD_API enum td_code td_respond_session_plan(struct td_client *client,
    const char *session_id, const char *decision, long version, long revision,
    const char *feedback, const struct td_request_options *opts,
    struct td_plan **out, struct td_error *err);
TD_API void td_plan_free(struct td_plan *plan);

/*
 * One page of permission prompts, newest first.  status NULL or "pending":
 * the pending ones; "all": every one.  run_id NULL: of every run.  limit 0:
 * the service's default.  Caller frees *out with td_permission_list_free.
 */
TD_API enum td_code td_list_permissions(struct td_client *client,
    const char *status, const char *run_id, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_permission_list **out,
    struct td_error *err);
/* Caller frees *out with td_permission_free. */
TD_API enum td_code td_get_permission(struct td_client *client,
    const char *permission_id, const struct td_request_options *opts,
    struct td_permission **out, struct td_error *err);
/*
 * Answers a pending prompt: decision "allow", "deny", or "allow-run" (this
 * call and every later one of the same run).  TD_NOT_FOUND for an unknown
 * id, TD_PERMISSION_NOT_PENDING when it was already answered (or expired).
 * out may be NULL; else caller frees *out with td_permission_free.
 */
TD_API enum td_code td_answer_permission(struct td_client *client,
    const char *permission_id, const char *decision,
    const struct td_request_options *opts, struct td_permission **out,
    struct td_error *err);
/*
 * td_answer_permission for a server's form (a prompt whose tool ends in
 * "__elicitation"): values_json, a JSON object of field names (values typed,
 * or strings the service parses for number, integer and boolean fields), is
 * given over the form's defaults; NULL: the defaults.  TD_INVALID_REQUEST
 * when a value does not fit the form's schema (err says which field).
 */
TD_API enum td_code td_answer_permission_form(struct td_client *client,
    const char *permission_id, const char *decision, const char *values_json,
    const struct td_request_options *opts, struct td_permission **out,
    struct td_error *err);
TD_API void td_permission_free(struct td_permission *permission);
TD_API void td_permission_list_free(struct td_permission_list *list);

/*
 * A server's form: the requestedSchema of a prompt's input (tool
 * "<connector>__elicitation"), the flat object of fields the MCP specification
 * allows.  td_form_parse reads it, td_form_text renders it for people.
 */
#define TD_FORM_MAX_BYTES (256 * 1024)	/* of input_json */
#define TD_FORM_MAX_FIELDS 100
#define TD_FORM_MAX_CHOICES 1000

/* What a field takes. */
enum td_form_kind {
	TD_FORM_STRING,		/* "string": format, min_length and max_length may bound it */
	TD_FORM_NUMBER,		/* "number": minimum and maximum may bound it */
	TD_FORM_INTEGER,	/* "integer": likewise */
	TD_FORM_BOOLEAN,	/* "boolean" */
	TD_FORM_CHOICE,		/* a string among choices: "enum" (with "enumNames"), or "oneOf" */
	TD_FORM_OTHER,		/* a type a form may not have: shown as the schema says it */
};

/* One of a choice field's values. */
struct td_form_choice {
	char *value;		/* what the field takes */
	char *title;		/* for people ("enumNames", oneOf's "title"), or NULL */
};

struct td_form_field {
	char *name;
	enum td_form_kind kind;
	char *type;		/* as the schema says ("string" when it says none) */
	char *title;		/* or NULL */
	char *description;	/* or NULL */
	char *format;		/* a string's "email", "uri", "date", "date-time", or NULL */
	char *default_json;	/* the default as JSON text, or NULL */
	bool required;
	bool has_minimum, has_maximum;	/* minimum/maximum, or a string's minLength/maxLength */
	double minimum, maximum;
	struct td_form_choice *choices;	/* TD_FORM_CHOICE: the values, in the schema's order */
	size_t choice_count;
};

struct td_form {
	char *message;		/* what the server asks (input's "message"), or NULL */
	struct td_form_field *fields;	/* in the schema's order */
	size_t field_count;
};

/*
 * Reads the form of a prompt's input_json (td_permission's): its
 * requestedSchema's properties (a property that is no object is no field).
 * TD_INVALID_ARGUMENT when input_json holds no form with a field, is no JSON
 * object, or is over TD_FORM_MAX_BYTES, TD_FORM_MAX_FIELDS or
 * TD_FORM_MAX_CHOICES (err says which).  Caller frees *out with td_form_free.
 */
TD_API enum td_code td_form_parse(const char *input_json, struct td_form **out,
    struct td_error *err);
TD_API void td_form_free(struct td_form *form);

enum td_form_style {
	/* "name type=DEFAULT, name type!, ...": ! marks a required field without a default */
	TD_FORM_ONE_LINE,
	/* a line a field: "name (type, required, one of [...]): description [default: X]" */
	TD_FORM_LINES,
};
/*
 * The form's fields for people, each TD_FORM_LINES line after indent (NULL:
 * none); control characters of the server's text become spaces.  Caller
 * frees the string (never NULL).
 */
TD_API char *td_form_text(const struct td_form *form, enum td_form_style style,
    const char *indent);

/* --- Connectors and credentials ------------------------------------------ */

/* Default deadline of td_test_connector, in milliseconds. */
#define TD_CONNECTOR_TEST_TIMEOUT_MS 60000

/* A credential bound to a connector: its secret becomes an env variable or a header. */
struct td_credential_binding {
	char *credential_id;	/* "cred_..." */
	char *target;		/* "env:NAME" (stdio) or "header:NAME" (http) */
};

/*
 * A connector: an MCP server the agent of a run may use (docs/connectors.md).
 * NULL members were null or absent in the service's answer.
 */
struct td_connector {
	char *id;		/* "con_...", "con_web" for the built-in web connector */
	char *name;		/* tools appear to the model as <name>__<tool> */
	char *kind;		/* "builtin" or "custom" */
	bool enabled;
	char *transport_type;	/* "stdio", "http" or "builtin" */
	char *command;		/* stdio: the program, else NULL */
	char **args;		/* stdio: its arguments (arg_count of them) */
	size_t arg_count;
	char *url;		/* http: the Streamable HTTP endpoint, else NULL */
	char *transport_json;	/* the whole transport object (env, headers) as JSON text */
	struct td_credential_binding *bindings;
	size_t binding_count;
	char *created_at;
	char *updated_at;
	char *json;		/* the connector as the service sent it */
};

struct td_connector_list {
	struct td_connector *items;
	size_t count;
	char *next_cursor;	/* NULL on the last page */
	char *json;
};

/*
 * A custom connector definition for td_add_connector and td_update_connector.
 * transport_json is required: {"type":"stdio","command":"npx","args":[...],
 * "env":{...}} or {"type":"http","url":"https://...","headers":{...}}.
 * bindings_json is a JSON array of {"credentialId","target"}: NULL leaves it
 * out (td_update_connector then keeps the bindings), "null" clears them on
 * update.  name is required for td_add_connector; NULL on update keeps it.
 */
struct td_connector_request {
	const char *name;
	const char *transport_json;
	const char *bindings_json;
	bool enabled;		/* td_add_connector only: enabled from the start */
};

/* The answer of td_test_connector. */
struct td_connector_test {
	bool success;
	long tool_count;	/* tools the server listed (0 on failure) */
	char *message;		/* for a person: what worked or why not */
	char *json;
};

/* A stored credential; the secret is never sent back. */
struct td_credential {
	char *id;		/* "cred_..." */
	char *name;
	char *kind;		/* "api-key", "bearer", "basic" or "secret" */
	char *description;	/* "" when empty */
	char *created_at;
	char *updated_at;
	char *json;
};

struct td_credential_list {
	struct td_credential *items;
	size_t count;
	char *next_cursor;	/* NULL on the last page */
	char *json;
};

/*
 * Fields of a credential: td_create_credential needs name, kind and secret;
 * td_update_credential changes the non-NULL members only (a secret rotates
 * the stored value).  The secret is sent once, over loopback, and the
 * library wipes its own copies.
 */
struct td_credential_request {
	const char *name;
	const char *kind;
	const char *description;
	const char *secret;
};

/* One page of connectors (built-in ones included).  Caller frees *out with td_connector_list_free. */
TD_API enum td_code td_list_connectors(struct td_client *client, long limit,
    const char *cursor, const struct td_request_options *opts,
    struct td_connector_list **out, struct td_error *err);
/* Caller frees *out with td_connector_free. */
TD_API enum td_code td_get_connector(struct td_client *client, const char *id,
    const struct td_request_options *opts, struct td_connector **out,
    struct td_error *err);
/* Registers a custom MCP server.  Caller frees *out with td_connector_free. */
TD_API enum td_code td_add_connector(struct td_client *client,
    const struct td_connector_request *request, const struct td_request_options *opts,
    struct td_connector **out, struct td_error *err);
/*
 * Replaces the definition of a custom connector (transport required).
 * TD_FORBIDDEN for a built-in one.  Caller frees *out with td_connector_free.
 */
TD_API enum td_code td_update_connector(struct td_client *client, const char *id,
    const struct td_connector_request *request, const struct td_request_options *opts,
    struct td_connector **out, struct td_error *err);
/* Enables or disables any connector.  out may be NULL; else free with td_connector_free. */
TD_API enum td_code td_set_connector_enabled(struct td_client *client, const char *id,
    bool enabled, const struct td_request_options *opts, struct td_connector **out,
    struct td_error *err);
/* Removes a custom connector; TD_FORBIDDEN for a built-in one. */
TD_API enum td_code td_remove_connector(struct td_client *client, const char *id,
    const struct td_request_options *opts, struct td_error *err);
/*
 * Connects to the server, lists its tools and disconnects; never calls a
 * tool or enables the connector.  A server that cannot be reached is TD_OK
 * with (*out)->success false.  The service gives a test up to 10 s per MCP
 * request; without opts->timeout_ms the deadline is
 * TD_CONNECTOR_TEST_TIMEOUT_MS, not the client's default.
 * Caller frees *out with td_connector_test_free.
 */
TD_API enum td_code td_test_connector(struct td_client *client, const char *id,
    const struct td_request_options *opts, struct td_connector_test **out,
    struct td_error *err);
/* A client the server's authorization server registered beforehand. */
struct td_connector_login {
	const char *client_id;		/* NULL: the service registers itself */
	const char *client_secret;	/* NULL for a public client */
	const char *scope;		/* NULL: what the server's challenge asks */
	const char *client_key;		/* or the client's PEM private key (ES256, private_key_jwt) */
	/*
	 * Enterprise-managed authorization: the user's ID token from the identity
	 * provider, exchanged at its token endpoint (as idp_client_id, may be NULL)
	 * for an identity assertion; signed in at once, no browser.
	 */
	const char *id_token;
	const char *idp_token_endpoint;
	const char *idp_client_id;
	/*
	 * Workload identity federation: the absolute path of the file where the
	 * platform puts the workload's identity token (a JWT), which the service
	 * reads at the sign-in and at each renewal; with client_id, no browser.
	 */
	const char *workload_token_file;
};

/*
 * Begins an OAuth sign-in to an http connector's server: the service
 * discovers its authorization server, registers itself (or uses login's
 * pre-registered client; login may be NULL), and answers the authorization
 * URL to open in a browser (*url, caller frees with free()).  The browser
 * comes back to the service, which stores the token.  TD_OK with *url NULL:
 * signed in already (a client with a secret or key whose authorization
 * server grants only client credentials, an identity assertion, or a
 * workload's identity token).
 */
TD_API enum td_code td_login_connector(struct td_client *client, const char *id,
    const struct td_connector_login *login, const struct td_request_options *opts,
    char **url, struct td_error *err);
TD_API void td_connector_free(struct td_connector *connector);
TD_API void td_connector_list_free(struct td_connector_list *list);
TD_API void td_connector_test_free(struct td_connector_test *test);

/* One page of credentials (metadata only).  Caller frees *out with td_credential_list_free. */
TD_API enum td_code td_list_credentials(struct td_client *client, long limit,
    const char *cursor, const struct td_request_options *opts,
    struct td_credential_list **out, struct td_error *err);
/* Caller frees *out with td_credential_free. */
TD_API enum td_code td_get_credential(struct td_client *client, const char *id,
    const struct td_request_options *opts, struct td_credential **out,
    struct td_error *err);
/* Caller frees *out with td_credential_free. */
TD_API enum td_code td_create_credential(struct td_client *client,
    const struct td_credential_request *request, const struct td_request_options *opts,
    struct td_credential **out, struct td_error *err);
/* Caller frees *out with td_credential_free. */
TD_API enum td_code td_update_credential(struct td_client *client, const char *id,
    const struct td_credential_request *request, const struct td_request_options *opts,
    struct td_credential **out, struct td_error *err);
/*
 * Deletes a credential.  While a connector binds it or a provider names it
 * (apiKeyCredential in settings.json): TD_CREDENTIAL_IN_USE, unless force,
 * which also removes those bindings.
 */
TD_API enum td_code td_delete_credential(struct td_client *client, const char *id,
    bool force, const struct td_request_options *opts, struct td_error *err);
TD_API void td_credential_free(struct td_credential *credential);
TD_API void td_credential_list_free(struct td_credential_list *list);

#ifdef __cplusplus
}
#endif

#endif
