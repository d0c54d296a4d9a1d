/*
 * The dashboard's model: plain state changed by events of the stream, results
 * of HTTP calls and keys.  No curses and no network here: views draw from it
 * (view-*.c), the loop (app.c) feeds it.  Every string in it is owned by the
 * model.  Functions that change what is shown set m->dirty.
 */
#ifndef TD_TUI_MODEL_H
#define TD_TUI_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "taskdeck.h"

/* Bounds: the log keeps the newest MODEL_LOG_MAX lines; a line longer than
 * MODEL_LINE_MAX bytes is broken there (at a UTF-8 boundary). */
#define MODEL_LOG_MAX 10000
#define MODEL_LINE_MAX 4096
/* Live events held back while the log's history loads; past it they are shown at
 * once, with a notice, and the history that comes later is dropped. */
#define MODEL_PENDING_MAX 20000
#define MODEL_QUERY_MAX 256

enum pane {
	PANE_PROJECTS,
	PANE_SESSIONS,
	PANE_RUNS,
	PANE_RIGHT,	/* whichever of log, plan, artifacts m->right shows */
	PANE__COUNT
};

enum right_view { RIGHT_LOG, RIGHT_PLAN, RIGHT_ARTIFACTS, RIGHT_CONNECTORS, RIGHT_CHANGES };

enum conn_state {
	CONN_CONNECTING,	/* stream opened, no hello yet */
	CONN_LIVE,
	CONN_RECONNECTING,	/* m->conn_retry_at_ms says when */
};

/* Why the dashboard is not live (shown instead of the last known state). */
enum conn_problem {
	PROBLEM_NONE,
	PROBLEM_UNREACHABLE,	/* no answer, or no service in the discovery file */
	PROBLEM_UNAUTHORIZED,	/* the service refused the token */
};

struct m_project {
	char *id;
	char *name;
	bool archived;		/* listed only while show_archived */
};

struct m_session {
	char *id;
	char *project_id;
	char *title;
	char *last_run_status;	/* NULL when none */
	char *updated_at;
	char *cwd;		/* its working directory (the workspace) */
	bool archived;
};

struct m_run {
	char *id;
	char *session_id;
	char *project_id;
	char *status;		/* queued, running, completed, failed, cancelled */
	char *prompt;
	char *phase;		/* last progress phase, or NULL */
	char *attention;	/* "plan-approval" or NULL */
	bool permission_pending;	/* a prompt of this run waits */
	char *error_code;	/* NULL unless failed */
	char *error_message;
	char *created_at;
	char *started_at;	/* NULL until it started */
	char *finished_at;	/* NULL until final */
	long long tokens;	/* input + output, as last read; -1: read it again */
	long long cached;	/* of the input, read from the provider's cache */
	bool has_cost;		/* false: no price in settings.json's pricing */
	double cost;		/* USD, as last read */
	bool has_changes;	/* false: no snapshot of its workspace yet */
	long files;		/* files its changes touch so far */
	long additions;		/* lines its changes add and remove so far */
	long deletions;
};

struct m_artifact {
	char *id;
	char *name;
	char *path;
	char *version;
	long long size;
	char *run_id;
	char *created_at;
};

struct m_permission {
	char *id;
	char *run_id;
	char *session_id;
	char *project_id;
	char *tool;
	char *summary;
	/* A server's form: its fields, one line each (td_form_text's
	 * TD_FORM_LINES), or NULL. */
	char *form;
	/* Its fields to fill in, "NAME=DEFAULT" a line (the default's JSON
	 * string unquoted, else as JSON; empty without one), or NULL. */
	char *form_values;
};

/*
 * The fields of a server's form (input_json's requestedSchema), one line each
 * (td_form_text), or NULL when it is none (malloc'd).
 */
char *model_form_fields(const char *input_json);
/* The fields as "NAME=DEFAULT" lines to edit, or NULL when it is no form (malloc'd). */
char *model_form_values(const char *input_json);
/* Those lines, edited, as the JSON object of the answer (a string a field,
 * empty ones left out); NULL when none has a value (malloc'd). */
char *model_form_answer(const char *text);

/* A connector (MCP server) the agents may use (model-connectors.c). */
struct m_connector {
	char *id;
	char *name;
	char *kind;		/* "builtin" or "custom" */
	char *transport;	/* "stdio", "http", "builtin" */
	size_t paths;		/* stdio: the extra paths it may read or write */
	bool enabled;
	char *test;		/* the last test's result here, or NULL */
};

/* One file of the Changes view. */
struct m_change {
	char *path;
	char status;		/* 'A', 'M', 'D', 'T' */
	long additions;
	long deletions;
	bool binary;
	bool too_large;
};

/* What a diff line is, for its colour. */
enum diff_kind { DIFF_CONTEXT, DIFF_HEADER, DIFF_HUNK, DIFF_ADD, DIFF_DEL };

/* Bounds of the diff shown: its lines and each line's bytes. */
#define MODEL_DIFF_LINES 20000

/* A run waiting for a plan decision, in any project. */
struct m_attention {
	char *run_id;
	char *session_id;
	char *project_id;
};

/* At most this many plan waits are tracked (a bound on outside input). */
#define MODEL_ATTENTION_MAX 1000

struct m_plan_step {
	char *id;
	char *title;
	char *status;
};

struct m_plan {
	bool present;		/* false: the session has no plan */
	char *session_id;
	char *run_id;
	long version;
	long revision;
	char *status;
	char *summary;
	char *feedback;
	struct m_plan_step *steps;
	size_t step_count;
};

/* What a log line shows; views pick the glyph and colour from it. */
enum log_kind {
	LOG_OUTPUT,	/* assistant text */
	LOG_TOOL,
	LOG_PROGRESS,
	LOG_STATUS,	/* queued, started, finished */
	LOG_PERMISSION,
	LOG_PLAN,
	LOG_ARTIFACT,
	LOG_NOTICE,	/* the dashboard's own remarks: resync, history truncated */
};

/* A message of the message line, kept for the message history. */
#define MODEL_MESSAGES_MAX 200
struct m_message {
	char time[9];		/* "HH:MM:SS", local */
	bool error;
	unsigned repeat;	/* said again this many times in a row */
	char *text;
};

struct log_line {
	enum log_kind kind;
	bool error;	/* failed tool, failed run: shown as an error */
	char time[9];	/* "HH:MM:SS" local time of the event, "" when unknown */
	long long ms;	/* the event's time, ms since the epoch; 0 when unknown */
	char *run_id;	/* which run (session scope shows several) */
	char *text;	/* one line, no '\n', at most MODEL_LINE_MAX bytes */
};

/* A list pane's selection and scroll; top is the first visible row. */
struct m_cursor {
	size_t sel;
	size_t top;
};

struct m_log {
	/* Ring of the newest lines: line i (0 = oldest kept) is
	 * lines[(head + i) % MODEL_LOG_MAX], for i < count. */
	struct log_line *lines;
	size_t head;
	size_t count;
	bool open_output;	/* the last line is run.output text still growing */
	bool run_scope;		/* true: the selected run; false: the whole session */
	char *scope_id;		/* the run or session shown, NULL: nothing */
	bool loading;		/* history requested, not arrived */
	/* The highest seq applied of each stream the scope's events came
	 * from (one per service start): a reload skips what is shown. */
	struct m_seen {
		char *stream;
		long long max_seq;
	} *seen;
	size_t seen_count;
	struct td_event **pending;	/* live events held while loading */
	size_t pending_count;
	/* What the view shows. */
	bool follow;		/* stick to the newest line */
	bool wrap;
	bool timestamps;
	bool relative;		/* timestamps since the run started, not the clock */
	long long event_ms;	/* the time of the event being added */
	/* Lines from this serial on arrived after the view last showed the
	 * end (follow off): "N new lines below". */
	unsigned long long seen_serial;
	unsigned long long jump_serial;	/* the line ']' / '[' went to; ULLONG_MAX none */
	size_t top;		/* first shown line (index into the filtered lines) */
	char filter[MODEL_QUERY_MAX];	/* applied query, "" for none */
	char last_filter[MODEL_QUERY_MAX];	/* recalled by '&' */
	/* '/' search: every line holding search is highlighted; search_at is
	 * the serial (see below) of the current match, n / N move it. */
	char search[MODEL_QUERY_MAX];
	unsigned long long search_at;
	/* Grows whenever the lines shown, the search or its place change; the
	 * count of matches is kept for the gen it was made at. */
	unsigned long long gen;
	unsigned long long count_gen;	/* gen + 1 of the count kept; 0: none */
	size_t count_index, count_total;
	/* The lines matching filter, rebuilt when the filter changes and kept
	 * up as lines come and go: a ring (match_head) of line serials (the
	 * line i has serial line_base + i); read it with model_log_line. */
	size_t *matches;
	size_t match_count;
	size_t match_head;
	unsigned long long line_base;	/* serial of line 0 */
	size_t open_len;	/* bytes of the open output line */
	size_t rows;		/* rows of the view, last told (model_log_fit, model_move) */
};

/* The Changes view: the files a run changed and the diff of the selected one. */
struct m_changes {
	char *run_id;		/* whose changes are shown (or asked for); NULL none */
	bool loading;		/* asked, not arrived */
	bool failed;		/* the last read failed (said in the message line) */
	bool live;		/* the run goes on */
	char *reverted_at;	/* NULL unless reverted */
	char *incomplete;	/* why files may be missing (the service's incompleteReason);
				   NULL when the changes are whole */
	struct m_change *files;
	size_t file_count;
	struct m_cursor cur;
	long additions, deletions;
	char *diff_path;	/* the file whose diff is shown (or asked for) */
	char **diff;		/* its lines, without '\n' */
	size_t diff_count;
	size_t diff_top;	/* first line shown */
	unsigned long long gen;	/* grows with each list read: the diff is read again */
	unsigned long long diff_gen;	/* gen the diff was asked at */
};

/* The attempt group of the selected run (Changes view), read with td_get_attempts. */
struct m_attempt {
	int index;
	char *run_id;
	char *model;		/* NULL: the configuration's */
	char *run_status;
	char *state;		/* preparing, active, removed */
	bool measured;
	long files, additions, deletions;
	char *check;		/* none, running, passed, failed, error; NULL: not yet */
};

struct m_attempts {
	/* run id -> group id, from attempts.created and attempts.updated events */
	struct m_attempt_link {
		char *run_id;
		char *group_id;
	} *links;
	size_t link_count;
	char *group_id;		/* the group shown (or asked for); NULL none */
	bool loading;
	char *status;		/* active, applied, discarded */
	char *cwd;		/* where an apply goes */
	char *applied_run;	/* NULL when none */
	struct m_attempt *items;
	size_t count;
	/* '=': the whole diffs of two attempts side by side: run[0] the selected
	 * run's, run[1] another of the group; run[0] NULL when not comparing. */
	struct {
		char *run;
		char **lines;	/* NULL until read */
		size_t count;
	} cmp[2];
};

struct model {
	bool dirty;
	enum pane focus;
	enum right_view right;

	/* Connection and service. */
	enum conn_state conn;
	long long conn_retry_at_ms;	/* CONN_RECONNECTING: when the next try is due */
	enum conn_problem conn_problem;	/* PROBLEM_NONE while live */
	long long resynced_at_ms;	/* last full re-read after a reconnect or resync; 0 never */
	char *service_version;		/* from the doctor report; NULL until known */
	bool service_ready;
	char *stream_id;		/* of the last event seen */

	struct m_project *projects;
	size_t project_count;
	struct m_cursor projects_cur;

	struct m_session *sessions;	/* of the selected project */
	size_t session_count;
	struct m_cursor sessions_cur;

	/* '/' in every list: only matching rows (model-lists.c); by enum
	 * list_slot: projects, sessions, runs, artifacts, connectors. */
	char list_filter[5][64];

	/* 's' in Projects, Sessions, Runs: the order of each (enum list_sort). */
	int sort[3];

	/* Archived projects and sessions listed too (dimmed); else left out. */
	bool show_archived;

	struct m_run *runs;		/* of the selected session, newest first */
	size_t run_count;
	struct m_cursor runs_cur;

	/* Runs of the selected project, for the status bar's counts. */
	struct m_run *project_runs;
	size_t project_run_count;

	struct m_artifact *artifacts;	/* of the selected session */
	size_t artifact_count;
	struct m_cursor artifacts_cur;

	struct m_plan plan;		/* of the selected session */
	size_t plan_top;

	/* Connectors of the service (the Connectors view). */
	struct m_connector *connectors;
	size_t connector_count;
	struct m_cursor connectors_cur;

	/* Runs waiting for a plan decision, of every project (model-attention.c). */
	struct m_attention *attention;
	size_t attention_count;
	unsigned long attention_seen;	/* grows with each new wait (bell, title) */

	struct m_permission *permissions;	/* pending, of every run, oldest first */
	size_t permission_count;
	bool permission_hidden;		/* Esc hid the modal; a new prompt shows it again */

	struct m_log log;

	/* Runs marked for a bulk action (model-marks.c), in the order marked. */
	struct m_mark {
		char *id;
		char *session_id;
		char *prompt;
	} *marks;
	size_t mark_count;
	struct m_changes changes;	/* of the selected run (the Changes view) */
	struct m_attempts attempts;	/* the group of the selected run, when an attempt */

	/* The message line: text and when it stops showing. */
	char message[512];
	bool message_error;
	long long message_until_ms;
	/* Every message shown, oldest first: a ring of MODEL_MESSAGES_MAX
	 * (model_message_at reads it). */
	struct m_message *messages;
	size_t messages_head, messages_count;
	/* A download in progress: shown as a progress bar. */
	bool download_active;
	char download_name[256];
	long long download_done;
	long long download_total;	/* -1: unknown */
	bool download_verifying;	/* the bytes are in: checking their sha256 */
};

/* What a change means for the loop: fetch again over HTTP. */
enum model_need {
	NEED_NONE = 0,
	NEED_SESSIONS = 1 << 0,		/* of the selected project */
	NEED_RUNS = 1 << 1,		/* of the selected session */
	NEED_PROJECT_RUNS = 1 << 2,
	NEED_ARTIFACTS = 1 << 3,
	NEED_PLAN = 1 << 4,
	NEED_HISTORY = 1 << 5,		/* the log's scope changed: load its history */
	NEED_PROJECTS = 1 << 6,
	NEED_PERMISSIONS = 1 << 7,
	NEED_EVERYTHING = 0xff,
	/* Runs an event announced in the selected session: their prompts are
	 * unknown; read each run whose prompt is NULL (model_put_run).  Cheaper
	 * than the whole list, whose finished runs carry their whole output. */
	NEED_NEW_RUNS = 1 << 8,
	/* The Changes view's list (and then the selected file's diff). */
	NEED_CHANGES = 1 << 9,
	/* The attempt group of the selected run. */
	NEED_ATTEMPTS = 1 << 10,
};

void model_init(struct model *m);
void model_free(struct model *m);

/* Selection: each returns the NEED_* of what the new selection shows. */
const struct m_project *model_project(const struct model *m);	/* NULL: none */
const struct m_session *model_session(const struct model *m);
const struct m_run *model_run(const struct model *m);
const struct m_artifact *model_artifact(const struct model *m);
/*
 * Names what a question is about, for a person: 'run "Write a short report…"
 * in demo › Research SQLite', from the ids given (NULL: not part of it; a
 * run's session and project come from the run when NULL), with names from
 * the lists read, else the ids.
 */
void model_describe(const struct model *m, const char *project_id, const char *session_id,
    const char *run_id, char *out, size_t len);
/* Moves the focused pane's selection (lists) or scroll (log, plan) by delta
 * rows; delta may be +-1, +-page, or LONG_MIN/LONG_MAX for first/last. */
unsigned model_move(struct model *m, long delta, size_t page_rows);
/* Selects row of pane (a mouse click); out of range rows are ignored. */
unsigned model_select(struct model *m, enum pane pane, size_t row);
void model_focus(struct model *m, enum pane pane);
void model_focus_next(struct model *m, int dir);	/* +1 Tab, -1 Shift-Tab */
void model_show_right(struct model *m, enum right_view v);
/* Keeps cur->top so that cur->sel is within rows visible rows. */
void model_cursor_fit(struct m_cursor *cur, size_t count, size_t rows);

/* HTTP results: replace a list, keeping the selection on the same id when it
 * is still there.  The list is only read.  Each returns NEED_* for what the
 * new selection shows.  for_id is the project or session the request was
 * for: a result for another one than the selected is ignored. */
unsigned model_set_projects(struct model *m, const struct td_project_list *l);
unsigned model_set_sessions(struct model *m, const char *for_project,
    const struct td_session_list *l);
unsigned model_set_runs(struct model *m, const char *for_session,
    const struct td_run_list *l);
void model_set_project_runs(struct model *m, const char *for_project,
    const struct td_run_list *l);
void model_set_artifacts(struct model *m, const char *for_session,
    const struct td_artifact_list *l);
/* plan NULL: the session has none (404). */
void model_set_plan(struct model *m, const char *for_session, const struct td_plan *plan);
void model_set_permissions(struct model *m, const struct td_permission_list *l);
void model_set_doctor(struct model *m, const struct td_doctor_report *r);
/* One run read again (after a start or a cancel): updated or inserted. */
unsigned model_put_run(struct model *m, const struct td_run *run);

/* The log's history: events (oldest first) of scope_id; done false when
 * more pages follow (the loop asks for them with after = the last seq).
 * Events for another scope than the current one are ignored.  When done,
 * the held live events newer than the history are applied. */
void model_log_history(struct model *m, const char *scope_id,
    struct td_event *const *events, size_t n, bool done);
/* Log scope: run (true) or session.  Returns NEED_HISTORY when it changed. */
unsigned model_log_scope(struct model *m, bool run_scope);

/* One event of the stream (also stream.resync-required).  Returns NEED_*:
 * a resync asks for everything, session.updated for the sessions, and so
 * on.  Applies to the lists, the counts, the plan, the prompts and (when in
 * scope) the log. */
unsigned model_apply_event(struct model *m, const struct td_event *ev);

/* The log view is rows high: with follow on, top shows the last page;
 * else top is kept within the lines.  Views call it before drawing. */
void model_log_fit(struct model *m, size_t rows);
/* 'r', and after a reconnect: everything is read again (the log's history
 * too, merged without duplicates).  Returns NEED_EVERYTHING. */
unsigned model_refresh(struct model *m);
/* An event as one block that td_event_free frees; NULL strings stay NULL
 * (data_json NULL becomes "null"). */
struct td_event *model_event_new(long long seq, const char *stream_id,
    const char *type, const char *time, const char *project_id,
    const char *session_id, const char *run_id, const char *data_json,
    const char *json);

/* Log view settings. */
void model_log_follow(struct model *m, bool on);
void model_log_toggle_wrap(struct model *m);
/* 't': the clock, then the time since the run started, then none. */
void model_log_toggle_timestamps(struct model *m);
/* The view showed lines up to end (exclusive; all with follow on): those
 * are seen.  Returns how many lines below end arrived since last seen. */
size_t model_log_unseen(struct model *m, size_t end);
/* ']' (dir 1) / '[' (-1) in a session's log: scrolls to the first line of
 * the next / previous run (follow off); returns that run's id (NULL: none),
 * *index its place (1-based) among the *total runs the log shows. */
const char *model_log_run_jump(struct model *m, int dir, size_t *index, size_t *total);
/* Applies query ("" clears); remembers a non-empty one as last_filter. */
void model_log_filter(struct model *m, const char *query);
/* '/' in the Log: searches query ("" clears) forward from the first line
 * shown, wrapping; the match becomes current and is scrolled into view
 * (follow off).  False when no line shown holds it (the query is kept). */
bool model_log_search(struct model *m, const char *query);
/* n (dir 1) / N (dir -1): the next / previous line shown holding the
 * search, wrapping.  0: none, 1: moved, 2: moved and wrapped around. */
int model_log_search_next(struct model *m, int dir);
/* Lines shown that hold the search (*total) and the current one's place
 * among them (*index, 1-based; 0 when it is no longer shown). */
void model_log_search_count(const struct model *m, size_t *index, size_t *total);
/* Counts the matches again when the log changed since the last count
 * (the screen calls it once before drawing; model_log_search_count then
 * gives the count kept instead of reading every line again). */
void model_log_search_update(struct model *m);
/* True when line i shown (model_log_line) is the current match. */
bool model_log_search_current(const struct model *m, size_t i);
/* Number of lines the log view shows (matching ones when filtered), and the
 * i-th of them. */
size_t model_log_visible(const struct model *m);
const struct log_line *model_log_line(const struct model *m, size_t i);

/* Connection state changes, with now_ms from a monotonic clock. */
/* --- List filters ('/' in every list; model-lists.c) --- */
/* The lists: the left panes, then the right pane's artifacts and connectors. */
enum list_slot { LIST_PROJECTS, LIST_SESSIONS, LIST_RUNS, LIST_ARTIFACTS, LIST_CONNECTORS,
	LIST_NONE };
/* The list pane p shows (the right one by m->right); LIST_NONE for log and plan. */
enum list_slot model_list_slot(const struct model *m, enum pane p);
/* The filter of pane p's list ("" for none or not a list). */
const char *model_list_query(const struct model *m, enum pane p);
/* The rows of pane p's list. */
size_t model_list_count(const struct model *m, enum pane p);
/* The orders 's' cycles through in Projects, Sessions and Runs: newest first
 * (the service's order, by id), by status (those that need you, running,
 * queued, failed, cancelled, completed; then newest), by name (project
 * name, session title, run prompt; case-insensitive; then newest). */
enum list_sort { SORT_NEWEST, SORT_STATUS, SORT_NAME, SORT__COUNT };
/* The next order of pane p's list (left panes only); the selection stays. */
void model_list_sort_next(struct model *m, enum pane p);
/* "newest", "status", "name". */
const char *model_sort_name(int sort);
/* True when row i of a list pane passes its filter (always, without one). */
bool model_list_match(const struct model *m, enum pane p, size_t i);
/* Sets a list pane's filter (case-insensitive; "" clears); a selection that no
 * longer matches moves to the first match.  Returns NEED_*. */
unsigned model_list_filter(struct model *m, enum pane p, const char *query);

/* --- The attempt group of the selected run (model-attempts.c) --- */
/* The group of the selected run, or NULL when it is no attempt (as far as events told). */
const char *model_attempts_want(const struct model *m);
/* Starts showing group_id (asked for now): the rows empty when it is another group. */
void model_attempts_ask(struct model *m, const char *group_id);
/* A read of group_id arrived (NULL: it failed). */
void model_set_attempts(struct model *m, const char *group_id, const struct td_attempt_group *g);
/* attempts.created / attempts.updated: links its runs; NEED_ATTEMPTS when it is shown. */
unsigned model_attempts_event(struct model *m, const char *data_json);
/* '=': compares the selected run's attempt with the next one of its group (its run
 * id, to read both diffs), or stops comparing (NULL). */
const char *model_attempts_compare(struct model *m);
/* A whole diff read for the comparison (NULL text: it failed). */
void model_set_attempt_diff(struct model *m, const char *run_id, const char *text);
/* run_id is an attempt of a group (as far as events and reads told). */
bool model_is_attempt(const struct model *m, const char *run_id);
/* The row of run_id in the group shown, or NULL. */
const struct m_attempt *model_attempt(const struct model *m, const char *run_id);
void model_attempts_free(struct model *m);

/* --- Changes of a run (model-changes.c) --- */
/* The run whose changes the view should show: the selected one, or NULL. */
const char *model_changes_want(const struct model *m);
/* Starts showing run_id's changes (asked for now): the list empties when it is another run. */
void model_changes_ask(struct model *m, const char *run_id);
/* The list as read for run_id (ignored for another run); the selection stays on its path.
 * ch NULL: the read failed (the view says so until a read succeeds). */
void model_set_changes(struct model *m, const char *run_id, const struct td_changes *ch);
/* The file whose diff should be shown now and was not asked for, or NULL; marks it asked. */
const char *model_changes_diff_due(struct model *m);
/* The diff of path as read (text NULL: could not be read, said in the view). */
void model_set_diff(struct model *m, const char *run_id, const char *path, const char *text);
/* The selected file of the Changes view, or NULL. */
const struct m_change *model_change(const struct model *m);
/* Scrolls the diff by delta lines (LONG_MIN / LONG_MAX: first / last page of rows). */
void model_diff_scroll(struct model *m, long delta, size_t rows);
/* A run.changes event: the run's totals on its row; NEED_CHANGES when it is the one shown. */
unsigned model_changes_event(struct model *m, const char *run_id, const char *data_json);
/* What a diff line is; *header says whether the lines before were a file's header
 * (it is kept up from line to line, false before the first). */
enum diff_kind model_diff_kind(const char *line, bool *header);
void model_changes_free(struct model *m);

/* --- Connectors (model-connectors.c) --- */
/* The list as read; the selection stays on the same id. */
void model_set_connectors(struct model *m, const struct td_connector_list *l);
/* One connector as changed (enabled); NULL does nothing. */
void model_put_connector(struct model *m, const struct td_connector *c);
/* The result of a test of id, shown on its row. */
void model_connector_tested(struct model *m, const char *id, const char *text);
const struct m_connector *model_connector(const struct model *m);
void model_connectors_free(struct model *m);

/* --- Attention, every project (model-attention.c) --- */
/* A run starts (waits) or stops waiting for a plan decision. */
void model_attention_event(struct model *m, const char *run_id, const char *session_id,
    const char *project_id, bool waits);
/* The running runs of every project, as read: replaces the plan waits. */
void model_set_attention(struct model *m, const struct td_run_list *runs);
void model_attention_free(struct model *m);
/* Runs that need the user: a plan decision or a pending prompt (distinct runs). */
size_t model_attention_count(const struct model *m);
/* True when a run of the project (and session, unless NULL) needs the user. */
bool model_attention_in(const struct model *m, const char *project_id,
    const char *session_id);
/* The run after after_run (NULL: the first) that needs the user, wrapping;
 * *plan: a plan decision (else a prompt).  Pointers borrowed from m. */
bool model_attention_next(const struct model *m, const char *after_run,
    struct m_attention *out, bool *plan);

void model_conn(struct model *m, enum conn_state s, long long retry_at_ms);
/* Why the connection is down (CONN_LIVE clears it). */
void model_conn_problem(struct model *m, enum conn_problem p);
void model_resynced(struct model *m, long long now_ms);

/* The message line; printf-style, shown until now_ms + 5 s. */
void model_message(struct model *m, long long now_ms, bool error, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The i-th message kept (0: the oldest), NULL past the last. */
const struct m_message *model_message_at(const struct model *m, size_t i);
/* A download's progress (verifying: of the check of its sha256). */
void model_download_progress(struct model *m, const char *name, bool verifying, long long done,
    long long total);
void model_download_end(struct model *m);

/* Status bar counts over project_runs: running, and running with a decision pending. */
void model_counts(const struct model *m, size_t *running, size_t *waiting);
/* The pending prompt the modal shows, or NULL (none, or hidden). */
const struct m_permission *model_modal_permission(const struct model *m);
void model_permission_hide(struct model *m);
void model_permission_show(struct model *m);

/* Marks (model-marks.c): runs chosen for a bulk action, kept by id across
 * reads and sessions.  Each returns true when the marks changed. */
bool model_marked(const struct model *m, const char *run_id);
/* Marks the selected run, or unmarks it when marked. */
bool model_mark_toggle(struct model *m);
/* Marks every run the Runs list shows (its '/' filter applied). */
bool model_mark_visible(struct model *m);
bool model_marks_clear(struct model *m);

#endif
