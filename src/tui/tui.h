/*
 * The dashboard's curses side: the loop (app.c), one struct view_ops per pane
 * (view-*.c), modals and editors (modal.c, editor.c) and drawing helpers
 * (draw.c).  Handlers change the model and return TUI_* flags; only the loop
 * draws, once per pass.
 */
#ifndef TD_TUI_TUI_H
#define TD_TUI_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "taskdeck.h"
#include "tui/model.h"
#include "tui/worker.h"

struct tui_options {
	bool no_mouse;		/* do not ask the terminal for mouse events */
	bool monochrome;	/* no colour, ASCII glyphs (as NO_COLOR) */
	long timeout_ms;	/* request deadline of a client made on reconnect; 0: default */
	bool bell;		/* ring the terminal's bell when a run starts needing the user */
	bool title;		/* "taskdeck: N need you" as the terminal's window title */
	char project[128];	/* the current project (`taskdeck use`): opened on; "" none */
	/* What was wrong in the configuration file: how many lines, the first. */
	int config_problems;
	char config_problem[320];
};

/* Reads the configuration file (config.c) into o; see taskdeck(1). */
void tui_config_load(struct tui_options *o);

/* Runs the dashboard on client until q or a signal; returns an exit code. */
int tui_main(struct td_client *client, const struct tui_options *o);

/* What a handler did. */
#define TUI_HANDLED 0x1
#define TUI_REDRAW 0x2
#define TUI_QUIT 0x4

/* Keys: wide characters as they are, curses key codes with TUI_KEY_FN. */
#define TUI_KEY_FN 0x1000000
#define TUI_KEY(code) (TUI_KEY_FN | (code))
#define TUI_CTRL(c) ((c) & 0x1f)
#define TUI_ESC 27

/* Where a key applies: the focused pane (the right one by what it shows). */
#define W_PROJECTS 0x01
#define W_SESSIONS 0x02
#define W_RUNS 0x04
#define W_LOG 0x08
#define W_PLAN 0x10
#define W_ARTIFACTS 0x20
#define W_CONNECTORS 0x40
#define W_CHANGES 0x80
#define W_LISTS (W_PROJECTS | W_SESSIONS | W_RUNS | W_ARTIFACTS | W_CONNECTORS)
#define W_ANY 0xff

struct rect {
	int y, x, h, w;
};

struct tui;

/* One pane: its box title and its drawing inside the box. */
struct view_ops {
	const char *name;
	unsigned where;
	/* The box title ("Log: run_01J… (run) follow"), at most len bytes. */
	void (*title)(const struct tui *t, char *buf, size_t len);
	void (*draw)(struct tui *t, const struct rect *r);
	/* Keys the table in app.c does not bind here; NULL for none. */
	unsigned (*key)(struct tui *t, int key);
	/* A click on row (0: the first inside the box); NULL: focus only. */
	unsigned (*click)(struct tui *t, int row);
};

extern const struct view_ops view_projects;
extern const struct view_ops view_sessions;
extern const struct view_ops view_runs;
extern const struct view_ops view_log;
extern const struct view_ops view_plan;
extern const struct view_ops view_artifacts;
extern const struct view_ops view_connectors;
extern const struct view_ops view_changes;

/* A UTF-8 text being edited; cur is a byte offset at a character boundary. */
struct editor {
	char *text;
	size_t len;
	size_t cap;		/* at most cap - 1 bytes of text */
	size_t cur;
	bool multiline;		/* Ctrl-J inserts a newline */
};

#define EDITOR_DONE 0x100	/* Enter */
#define EDITOR_CANCEL 0x200	/* Esc */

void editor_init(struct editor *e, size_t cap, bool multiline, const char *text);
void editor_free(struct editor *e);
/* Handles one key; returns TUI_* flags, with EDITOR_DONE or EDITOR_CANCEL. */
unsigned editor_key(struct editor *e, int key);
/* Draws the text wrapped inside r; *cy, *cx get the cursor's screen position. */
void editor_draw(const struct editor *e, const struct rect *r, unsigned attr,
    int *cy, int *cx);

enum modal_kind {
	MODAL_NONE,
	MODAL_CONFIRM,		/* [y/N], then submits confirm_job */
	MODAL_HELP,
	MODAL_PERMISSION,	/* shown from the model, never set here */
	MODAL_PROMPT,		/* new run */
	MODAL_FEEDBACK,		/* plan revise */
	MODAL_DOWNLOAD,		/* download directory */
	MODAL_FILTER,		/* the log's '&' (only matching lines) */
	MODAL_COMMAND,		/* ':' (keys.c registers it) */
	MODAL_LIST_FILTER,	/* '/' in Projects, Sessions, Runs: applied as typed */
	MODAL_SEARCH,		/* the log's '/': n / N go from match to match */
	MODAL_SIGNIN,		/* a connector's authorization URL, to open in a browser */
	MODAL_DETAIL,		/* a run's detail (view-detail.c registers it) */
	MODAL_MESSAGES,		/* the message history (palette.c registers it) */
	MODAL_TEXT,		/* a text whole, wrapped (modal_show_text) */
	MODAL_FORM,		/* a server's form: its fields filled in, then allowed */
	MODAL__COUNT
};

/* Styles of text; draw.c maps them to colour pairs or plain attributes. */
enum tui_style {
	ST_NORMAL,
	ST_SELECTED,		/* the selection in the focused pane */
	ST_SELECTED_DIM,	/* the selection elsewhere */
	ST_TITLE,		/* the focused box's title */
	ST_DIM,
	ST_QUEUED,
	ST_RUNNING,
	ST_OK,
	ST_FAIL,
	ST_ATTENTION,
	ST_MATCH,		/* a filter match */
	ST_ERROR,
	ST_BAR,			/* title line and status bar */
	ST__COUNT
};

/* The glyphs of one scheme: UTF-8 or ASCII. */
struct tui_glyphs {
	const char *ellipsis;
	const char *crumb;
	const char *status[5];	/* queued, running, completed, failed, cancelled */
	const char *log[8];	/* by enum log_kind */
	const char *log_error;
	const char *conn_live;
	const char *conn_down;
	const char *bar_full;
	const char *bar_empty;
};

/* Lines of the ':' history kept. */
#define TUI_HISTORY_MAX 100

struct tui {
	struct model m;
	struct worker *w;
	struct td_client *client;
	bool own_client;	/* client was made here (a reconnect found the service anew) */
	struct tui_options opt;
	bool color;
	bool ascii;		/* ASCII glyphs */
	bool utf8;		/* the locale is UTF-8: line drawing for boxes */
	const struct tui_glyphs *g;
	long long now_ms;
	bool dirty;		/* besides m.dirty: modal, layout */
	bool quit;
	int cur_y, cur_x;	/* where the terminal's cursor shows; -1: hidden */
	unsigned need;		/* NEED_* collected in this pass */
	/* A run started here: selected (with its session) once the lists show it. */
	char want_session[128];
	char want_run[128];
	char attention_last[128];	/* the run '@' jumped to last */
	/* Where the dashboard opens: the current project (`taskdeck use`), else
	 * the last selection (the state file); applied once projects are read. */
	char start_project[128];
	char start_session[128];
	char start_run[128];
	char jump_run[128];		/* ':run ID' read over HTTP, then jumped to */
	/* The ':' palette (palette.c): its history, oldest first (kept in the
	 * state file, state.c), Up/Down browse it (hist_at == hist_count: the
	 * line being typed, kept in hist_draft); Tab completes, and Tab again
	 * cycles through comp while the line is still comp_line. */
	char *hist[TUI_HISTORY_MAX];
	size_t hist_count, hist_at;
	char *hist_draft;
	char **comp;
	size_t comp_count, comp_at;
	char *comp_line;
	char comp_verb[16];		/* the verb the candidates are for, "" verbs */
	char want_approve[128];		/* ':approve RUN': confirmed once its plan shows */
	/* ':session TITLE' not among those shown: looked for again once the
	 * project's list is read with the archived ones. */
	char want_session_title[128];
	char want_session_project[128];
	char want_project_name[128];	/* the same for ':project NAME' */
	char *state_text;		/* the state file as last read or written */
	long long state_check_ms;	/* when the state is next compared with the file's */
	size_t messages_top;		/* the message history's first row shown */
	unsigned long bell_seen;	/* m.attention_seen when last rung */
	bool ages_shown;		/* the last draw showed ages (redrawn each second) */
	long title_count;		/* the count in the window title; -1 none set */
	/* The help: its first row shown, all keys or those of help_where. */
	size_t help_top;
	bool help_all;
	unsigned help_where;
	/* A start that failed (draft.id its project): n / N there offers its
	 * prompt again with every choice it was made with, never the text alone. */
	struct job draft;
	bool has_draft;

	/* Layout of the last draw, for mouse clicks. */
	int rows, cols;
	bool too_small;
	struct rect box[PANE__COUNT];	/* inside the borders */
	int tab_x[6];			/* the title line's tabs: tab i is [tab_x[i], tab_x[i + 1]) */

	/* The modal shown, and what it is about. */
	enum modal_kind modal;
	char modal_text[768];	/* confirm question, download label */
	char *modal_url;	/* the sign-in's authorization URL (MODAL_SIGNIN), the text of MODAL_TEXT */
	struct job confirm_job;	/* owned strings */
	bool confirm_has_job;
	bool notice;		/* MODAL_CONFIRM only says why nothing was asked */
	struct editor ed;
	/* The prompt editor's choices besides the text ("" : the defaults). */
	bool plan_first;
	size_t profile;		/* index into tui_profiles */
	char provider[64];
	char model[128];
	char attempts[4];	/* how many attempts ("" or 1: a plain run) */
	/* Tab in the prompt editor: the field edited in fed (1 provider,
	 * 2 model, 3 attempts), 0 the text. */
	int field;
	struct editor fed;
	/* The model field's choices: the models of models_for as it lists them
	 * (JOB_MODELS), and Up/Down's place among those starting with stem. */
	struct td_model_list *models;
	char models_for[64];
	char models_stem[128];
	int models_at;		/* -1: not choosing */
	/* Esc on a typed prompt: "Drop it? [y/N]" waits for the next key;
	 * Enter: "Start this run? [y/N]" does (only y starts a run). */
	bool ask_drop;
	bool ask_start;
	char download_dir[4096];
	bool download_dir_chosen;	/* typed in a download, or kept: the state file keeps it */
	/* Destinations of the downloads queued or running (a second Enter on
	 * one says so instead of queueing a copy that would fail). */
	char *downloading[8];
	/* What the open editor is for: a project, session or artifact id,
	 * the session to continue, the artifact's name and run, the plan's
	 * version and revision. */
	char modal_id[128];
	char modal_session[128];
	char modal_name[256];
	char modal_run[128];
	long modal_version, modal_revision;
	/* The run detail ('i'): the run shown, as last read (NULL until it
	 * arrives), and the first row shown. */
	char detail_id[128];
	struct td_run *detail;
	size_t detail_top;
	size_t modal_top;	/* MODAL_TEXT: the first row shown */
};

/* Permission profiles Ctrl-P cycles through. */
extern const char *const tui_profiles[];
extern const size_t tui_profile_count;

/*
 * The layers, bottom up (each calls only those below it):
 *   model*.c (pure state)  worker.c (HTTP)
 *   commands.c   what the user can ask: jobs, selection
 *   draw.c, editor.c   drawing helpers; view-*.c the panes; screen.c the
 *   registry, layout and bars; modal.c the modals (drawn after the screen)
 *   keys.c   keys and mouse to commands (registers the help modal)
 *   app.c    the loop
 */

/* screen.c */
/* The view of a pane (the right one by m.right). */
const struct view_ops *tui_view(const struct tui *t, enum pane p);
/* The W_* bit of the focused pane. */
unsigned tui_where(const struct tui *t);
/* Page size of the focused pane. */
size_t tui_page_rows(const struct tui *t);
/* Draws the screen into stdscr; then modal_draw, then screen_flush sends it. */
void draw_screen(struct tui *t);
void screen_flush(struct tui *t);
/* The status bar's hints ask key(action) for an action's key now (NULL:
 * none); keys.c registers it (the layer above). */
void screen_register_keys(const char *(*key)(const char *action, char *buf, size_t len));

/* commands.c */
/* Queues the jobs that fetch what need (NEED_*) says. */
void tui_need(struct tui *t, unsigned need);
void tui_submit(struct tui *t, const struct job *job);
/* Selects the project now, the session and run once the lists hold them. */
void tui_jump(struct tui *t, const char *project_id, const char *session_id,
    const char *run_id);
/* True when a download to path is queued or running. */
bool tui_downloading(const struct tui *t, const char *path);
/* Records a download's destination while it runs (done: it ended). */
void tui_download_track(struct tui *t, const char *path, bool done);
/* Selects the session and run wanted (started here, or jumped to) once
 * the lists hold them. */
void tui_select_wanted(struct tui *t);
/* Asks for everything shown and the service's report again ('r', reconnects). */
void tui_reread(struct tui *t);

/* state.c */
/* Reads the state file (history, sorts, list filters, the Log's last '&',
 * the download directory); one that is not one is ignored, with a message. */
void tui_state_load(struct tui *t);
/* Writes the state when it changed since read or written (atomically). */
void tui_state_save(struct tui *t);
void tui_state_free(struct tui *t);
/* A ':' line into the history (bounded; a line like a secret is not kept). */
void tui_history_add(struct tui *t, const char *line);

/* keys.c */
/* Runs what action (a name of the table: "cancel", "help", ...) does, as
 * its key would; 0 for an unknown action. */
unsigned keys_action(struct tui *t, const char *action);
/* Registers what keys.c adds to the modals (the help); once, at start. */
void keys_init(void);
/* One key (TUI_KEY() for curses codes): returns TUI_* flags. */
unsigned keys_dispatch(struct tui *t, int key);
/* A key as the configuration file writes it ("x", "é", "Space", "Ctrl-X",
 * "F5", "PgUp", ...): the key code, -1 when it is none of them. */
int keys_parse(const char *text);
/* Gives action (a name of taskdeck(1): "quit", "new-run", ...) the key:
 * it replaces the action's character key (arrows, Tab, Enter stay), and
 * leaves what it did in the same panes.  False, with why, for an unknown
 * action; why also says what the key no longer does. */
bool keys_bind(const char *action, int key, char *why, size_t len);
/* The name of an action's key now (a key.ACTION line may have changed it), in
 * buf; NULL when the action has no key. */
const char *keys_action_key(const char *action, char *buf, size_t len);
/* The mouse event curses has waiting. */
unsigned keys_mouse(struct tui *t);

/* palette.c (above keys.c) */
/* The ':' palette and the message history: registers their modals and reads
 * the state file; once, at start. */
void palette_init(struct tui *t);
/* Once a pass: what waits for a list to load (':approve RUN'), the state file. */
void palette_tick(struct tui *t);
/* At the end: writes the state, frees the palette's. */
void palette_free(struct tui *t);
/* The sessions of project_id were read with the archived ones: a ':session'
 * waiting for them is looked for again (NEED_* of its selection). */
unsigned palette_sessions_read(struct tui *t, const char *project_id);
/* The projects were read with the archived ones: the same for ':project'. */
unsigned palette_projects_read(struct tui *t);

/* draw.c */
void draw_init(struct tui *t);
/* Gives a style (element: "bar", "selected", "match", ...) the colours of
 * value, "FG" or "FG,BG" (names, "default" or 0-255), for draw_init; false,
 * with why, for an unknown element or colour. */
bool draw_color_set(const char *element, const char *value, char *why, size_t len);
unsigned draw_attr(const struct tui *t, enum tui_style s);
/* draw_attr of a style drawn on a bar: with color.bar, on the bar's background. */
unsigned draw_attr_bar(const struct tui *t, enum tui_style s);
/* The views' in-pane hints ask key(action) for an action's key now; keys.c
 * registers it.  draw_key: that key's name, else dflt. */
void draw_register_keys(const char *(*key)(const char *action, char *buf, size_t len));
const char *draw_key(const char *action, const char *dflt, char *buf, size_t len);
/* Columns of a UTF-8 string (invalid bytes and controls count as one '?'). */
int draw_width(const char *s);
/* Bytes of s[0..len) that fit in cols columns; *used gets the columns. */
size_t draw_fit(const char *s, size_t len, int cols, int *used);
/* One row of s[0..len) wrapped at a space: bytes to draw; *next where the next row starts. */
size_t draw_wrap(const char *s, size_t len, int cols, size_t *next);
/* Draws s clipped to maxw columns (… when cut); returns columns drawn. */
int draw_text(int y, int x, int maxw, const char *s, unsigned attr);
/* Draws s[0..len) with attr, bytes whose mask is set with hl; columns drawn. */
int draw_span(int y, int x, int maxw, const char *s, size_t len,
    const unsigned char *mask, unsigned attr, unsigned hl);
/* The rows pane p's list shows (its filter applied), in order, *shown of
 * them; cur->top becomes the first shown among them for height rows (the
 * selection in view).  The caller frees the array. */
size_t *draw_list_rows(struct tui *t, enum pane p, struct m_cursor *cur, size_t height,
    size_t *shown);
/* The list row shown n-th (a click), SIZE_MAX when none. */
size_t draw_list_nth(const struct tui *t, enum pane p, size_t n);
/* "Name", or "Name /query (2 of 5)" while a filter is set. */
void draw_list_title(const struct tui *t, enum pane p, const char *name, char *buf, size_t len);
/* Spaces from x to x + w. */
void draw_fill(int y, int x, int w, unsigned attr);
/* A box with title (focused: ST_TITLE); r is the outer rectangle. */
void draw_box(const struct tui *t, const struct rect *r, const char *title, bool focused);
/* "run_…c1edd3": the kind of an id and its last chars (ids share a time prefix). */
void draw_short_id(const struct tui *t, const char *id, char *out, size_t len);
/* "…c1edd3": the last chars of an id, which tell runs of one session apart. */
void draw_tail_id(const struct tui *t, const char *id, char *out, size_t len);
/* "2.1 KiB". */
/* Index of a run status in g->status, or -1. */
int draw_status_index(const char *status);
enum tui_style draw_status_style(const char *status);
void draw_title(const struct tui *t, int y, int x, int w, const char *title, bool focused);
void draw_separator(const struct tui *t, int y, int x, int w);

/* external.c */
/* Runs "$var path" (fallback when var is unset) on the terminal; 0 when it exited 0. */
int tui_external(struct tui *t, const char *var, const char *fallback, const char *path);
/* Runs $SHELL (/bin/sh when unset) in cwd with TASKDECK_SESSION and
 * TASKDECK_PROJECT set; the dashboard waits and comes back.  0 when it exited 0. */
int tui_shell(struct tui *t, const char *cwd, const char *session_id, const char *project_id);
/* Puts text on the terminal's clipboard: OSC 52 (xterm, tmux, kitty, ...). */
void tui_osc52(const char *text);
/* A private temporary file, path filled (suffix kept); NULL on failure. */
FILE *tui_temp_file(char *path, size_t len, const char *suffix);

/* view-detail.c: the run detail, a modal read again as the run's events come */
void detail_init(void);
/* Opens the detail of run_id and reads it. */
void tui_detail_open(struct tui *t, const char *run_id);
/* Takes the run of a JOB_RUN result when it is the one shown (r->run becomes NULL). */
void tui_detail_result(struct tui *t, struct job_result *r);
/* Reads the run shown again when one of its events (not output) arrives. */
void tui_detail_event(struct tui *t, const struct td_event *e);
/* Frees what the detail holds (at quit). */
void tui_detail_free(struct tui *t);

/* actions.c: marks and bulk actions, the run detail's key, open in place */
unsigned action_detail(struct tui *t, int key);
unsigned action_mark(struct tui *t, int key);
unsigned action_mark_all(struct tui *t, int key);
/* u, and Esc in Runs: clears the marks. */
unsigned action_unmark(struct tui *t, int key);
/* verb "cancel", "approve" or "rerun" on the marked runs (else the selected one), after [y/N]. */
unsigned action_bulk(struct tui *t, const char *verb);
unsigned action_rerun(struct tui *t, int key);
unsigned action_approve(struct tui *t, int key);
/* 'v' $PAGER, 'E' $EDITOR on the selected artifact. */
unsigned action_open_artifact(struct tui *t, int key);
unsigned action_shell(struct tui *t, int key);
/* Results of JOB_BULK and JOB_OPEN_ARTIFACT (app.c's table); NEED_* */
unsigned tui_bulk_result(struct tui *t, const struct job_result *r);
unsigned tui_open_artifact_result(struct tui *t, const struct job_result *r);

/* modal.c */
/* The modal drawn and given the keys: t->modal, else the permission prompt. */
enum modal_kind modal_current(const struct tui *t);
unsigned modal_key(struct tui *t, int key);
void modal_draw(struct tui *t);
/* Asks a [y/N] question; y submits job (copied). */
void modal_confirm(struct tui *t, const struct job *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Says why a key that asks a question has nothing to ask; the next key,
 * whatever it is, only closes it (an answer typed ahead does nothing). */
void modal_notice(struct tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void modal_open(struct tui *t, enum modal_kind kind);
/* Sets the drawing and keys of one modal (for the layers above modal.c). */
void modal_register(enum modal_kind kind, void (*draw)(struct tui *t),
    unsigned (*key)(struct tui *t, int key));
/* A box of w x h centred on the screen, cleared; returns the inside. */
struct rect modal_box(struct tui *t, int w, int h, const char *title);
void modal_close(struct tui *t);
/*
 * Moves *top, a scrolled modal's first line, by key: j/k and the arrows a
 * line, Space/PgDn and PgUp a page of page lines, g/Home and G/End to either
 * end (the drawing clamps the end).  False, *top unchanged, for another key.
 */
bool modal_scroll(int key, long page, size_t *top);
/* Frees the copies a confirm holds. */
void modal_free(struct tui *t);
/* n / N in the log: the next / previous search match, said in the message line. */
void modal_search_next(struct tui *t, int dir);
/* Opens the download prompt for the selected artifact. */
void modal_download(struct tui *t);
/* Shows text (taken; freed by the modal) whole in a box titled title, wrapped;
 * j/k scroll, any other key closes. */
void modal_show_text(struct tui *t, const char *title, char *text);


#endif
