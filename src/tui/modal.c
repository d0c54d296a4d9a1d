/* Modals: [y/N] confirmations, help, permission prompts, the editors and the download prompt. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tui/tui.h"
#include "xalloc.h"

#define MODAL_PROMPT_MAX 16384
#define MODAL_FEEDBACK_MAX 8192

/* NULL: the session's default (project defaults, then settings). */
const char *const tui_profiles[] = { NULL, "workspace-write", "ask", "read-only", "full-access" };
const size_t tui_profile_count = sizeof tui_profiles / sizeof tui_profiles[0];

enum modal_kind
modal_current(const struct tui *t)
{
	if (t->modal != MODAL_NONE)
		return t->modal;
	if (model_modal_permission(&t->m) != NULL)
		return MODAL_PERMISSION;
	return MODAL_NONE;
}

void
modal_free(struct tui *t)
{
	if (t->confirm_has_job)
		job_clear(&t->confirm_job);
	t->confirm_has_job = false;
	editor_free(&t->ed);
	editor_free(&t->fed);
	t->field = 0;
	t->ask_drop = false;
	t->ask_start = false;
	t->notice = false;
	free(t->modal_url);
	t->modal_url = NULL;
}

void
modal_close(struct tui *t)
{
	modal_free(t);
	t->modal = MODAL_NONE;
	t->dirty = true;
}

bool
modal_scroll(int key, long page, size_t *top)
{
	long step;

	if (key == 'j' || key == TUI_KEY(KEY_DOWN))
		step = 1;
	else if (key == 'k' || key == TUI_KEY(KEY_UP))
		step = -1;
	else if (key == TUI_KEY(KEY_NPAGE) || key == ' ')
		step = page;
	else if (key == TUI_KEY(KEY_PPAGE))
		step = -page;
	else if (key == 'g' || key == TUI_KEY(KEY_HOME))
		step = -1000000;
	else if (key == 'G' || key == TUI_KEY(KEY_END))
		step = 1000000;
	else
		return false;
	if (step < 0 && (size_t)-step > *top)
		*top = 0;
	else
		*top = (size_t)((long)*top + step);
	return true;
}

/* The prompt editor with the defaults, or, after a start in this project
 * failed, with all of that start: its text, profile, plan-first, provider
 * and model (the text never comes back without what it was chosen with). */
/* True when the failed start kept is of the editor's project and session
 * (none for a new one). */
static bool
prompt_is_draft(const struct tui *t)
{
	const struct job *d = &t->draft;

	return t->has_draft && d->id != NULL && strcmp(d->id, t->modal_id) == 0 &&
	    strcmp(d->session != NULL ? d->session : "", t->modal_session) == 0;
}

static void
prompt_open(struct tui *t)
{
	const struct job *d = &t->draft;
	bool again = prompt_is_draft(t);

	t->plan_first = again && d->plan_first;
	t->profile = 0;
	t->provider[0] = t->model[0] = t->attempts[0] = '\0';
	if (again) {
		if (d->attempts > 1 && d->attempts <= 8)
			snprintf(t->attempts, sizeof t->attempts, "%d", d->attempts % 10);
		for (size_t i = 1; i < tui_profile_count; i++) {
			if (d->profile != NULL && strcmp(d->profile, tui_profiles[i]) == 0)
				t->profile = i;
		}
		snprintf(t->provider, sizeof t->provider, "%s", d->provider != NULL ? d->provider : "");
		snprintf(t->model, sizeof t->model, "%s", d->model != NULL ? d->model : "");
	}
	editor_init(&t->ed, MODAL_PROMPT_MAX, true, again ? d->text : NULL);
}

void
modal_open(struct tui *t, enum modal_kind kind)
{
	modal_free(t);
	switch (kind) {
	case MODAL_PROMPT:
		prompt_open(t);
		break;
	case MODAL_HELP:
		t->help_top = 0;
		t->help_all = false;
		t->help_where = tui_where(t);
		break;
	case MODAL_FEEDBACK:
		editor_init(&t->ed, MODAL_FEEDBACK_MAX, true, NULL);
		break;
	case MODAL_DOWNLOAD:
		editor_init(&t->ed, sizeof t->download_dir, false, t->download_dir);
		break;
	case MODAL_LIST_FILTER:
		editor_init(&t->ed, sizeof t->m.list_filter[0], false,
		    model_list_query(&t->m, t->m.focus));
		break;
	case MODAL_COMMAND:
		editor_init(&t->ed, 256, false, NULL);
		break;
	case MODAL_FILTER:
		editor_init(&t->ed, MODEL_QUERY_MAX, false, t->m.log.last_filter);
		break;
	case MODAL_SEARCH:
		editor_init(&t->ed, MODEL_QUERY_MAX, false, NULL);
		break;
	default:
		break;
	}
	t->modal = kind;
	t->dirty = true;
}

void
modal_confirm(struct tui *t, const struct job *job, const char *fmt, ...)
{
	va_list ap;

	modal_free(t);
	va_start(ap, fmt);
	vsnprintf(t->modal_text, sizeof t->modal_text, fmt, ap);
	va_end(ap);
	if (job != NULL) {
		job_copy(&t->confirm_job, job);
		t->confirm_has_job = true;
	}
	t->modal = MODAL_CONFIRM;
	t->dirty = true;
}

void
modal_notice(struct tui *t, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	modal_free(t);
	va_start(ap, fmt);
	vsnprintf(t->modal_text, sizeof t->modal_text, fmt, ap);
	va_end(ap);
	n = strlen(t->modal_text);
	snprintf(t->modal_text + n, sizeof t->modal_text - n, "\nAny key closes this.");
	t->notice = true;
	t->modal = MODAL_CONFIRM;
	t->dirty = true;
}

void
modal_download(struct tui *t)
{
	const struct m_artifact *a = model_artifact(&t->m);

	if (a == NULL || a->id == NULL) {
		model_message(&t->m, t->now_ms, true, "no artifact selected");
		return;
	}
	snprintf(t->modal_id, sizeof t->modal_id, "%s", a->id);
	snprintf(t->modal_name, sizeof t->modal_name, "%s", a->name != NULL ? a->name : a->id);
	snprintf(t->modal_run, sizeof t->modal_run, "%s", a->run_id != NULL ? a->run_id : "");
	modal_open(t, MODAL_DOWNLOAD);
}

/* A box of w x h centred on the screen, cleared; returns the inside. */
struct rect
modal_box(struct tui *t, int w, int h, const char *title)
{
	struct rect r;

	if (w > t->cols - 2)
		w = t->cols - 2;
	if (h > t->rows - 2)
		h = t->rows - 2;
	r = (struct rect){ (t->rows - h) / 2, (t->cols - w) / 2, h, w };
	for (int i = 0; i < h; i++)
		draw_fill(r.y + i, r.x, w, A_NORMAL);
	draw_box(t, &r, title, true);
	return (struct rect){ r.y + 1, r.x + 2, h - 2, w - 4 };
}

/* Draws text wrapped inside r from row *row on. */
static void
modal_text(const struct rect *r, int *row, const char *text, unsigned attr)
{
	size_t len = strlen(text), at = 0, n, nl, next;

	while (at < len && *row < r->h) {
		nl = strcspn(text + at, "\n");
		n = draw_wrap(text + at, nl, r->w, &next);
		draw_span(r->y + *row, r->x, r->w, text + at, n, NULL, attr, attr);
		(*row)++;
		at += next;
		if (next == nl && at < len && text[at] == '\n')
			at++;
	}
	if (len == 0)
		(*row)++;
}

/* The rows text takes wrapped at cols (as modal_text draws it). */
static int
modal_text_rows(const char *text, int cols)
{
	size_t len = strlen(text), at = 0, nl, next;
	int rows = 0;

	while (at < len) {
		nl = strcspn(text + at, "\n");
		(void)draw_wrap(text + at, nl, cols, &next);
		rows++;
		at += next;
		if (next == nl && at < len && text[at] == '\n')
			at++;
	}
	return rows > 0 ? rows : 1;
}

/* The question in bold; what follows its last newline (the ids) dim. */
static void
confirm_draw(struct tui *t)
{
	char *ids = strrchr(t->modal_text, '\n');
	int tw = 0, w, row = 0, lw;
	struct rect r;

	/* As wide as the widest line, within 30 to 72 columns. */
	for (const char *s = t->modal_text, *e; *s != '\0'; s = *e != '\0' ? e + 1 : e) {
		char line[sizeof t->modal_text];

		e = s + strcspn(s, "\n");
		snprintf(line, sizeof line, "%.*s", (int)(e - s), s);
		lw = draw_width(line);
		tw = lw > tw ? lw : tw;
	}
	w = tw + 4;
	if (w < 30)
		w = 30;
	if (w > 72)
		w = 72;
	if (w > t->cols - 2)
		w = t->cols - 2;
	r = modal_box(t, w, 2 + modal_text_rows(t->modal_text, w - 4),
	    t->notice ? "Nothing to do" : "Confirm");
	if (ids != NULL)
		*ids = '\0';
	modal_text(&r, &row, t->modal_text, A_BOLD);
	if (ids != NULL) {
		*ids = '\n';
		modal_text(&r, &row, ids + 1, draw_attr(t, ST_DIM));
	}
}

static unsigned
confirm_key(struct tui *t, int key)
{
	if (t->notice)
		;	/* the key only closes it */
	else if (key == 'y' && t->confirm_has_job)
		tui_submit(t, &t->confirm_job);
	else if (key != 'y')
		model_message(&t->m, t->now_ms, false, "not confirmed: nothing done");
	modal_close(t);
	return TUI_HANDLED | TUI_REDRAW;
}

/*
 * The sign-in of t->modal_name: its authorization URL, whole, across the
 * screen's width without side borders (a mouse copy of its lines takes no
 * box character); o opens it in a browser, c copies it.
 */
static void
signin_draw(struct tui *t)
{
	char line[400];
	const char *url = t->modal_url != NULL ? t->modal_url : "";
	int w = t->cols, uw = draw_width(url), urows = (uw + w - 1) / (w > 0 ? w : 1);
	int h = 7 + (urows > 0 ? urows : 1), y = (t->rows - h) / 2, row = 0;
	struct rect text, ur, hints;

	if (y < 0)
		y = 0;
	for (int i = 0; i < h && y + i < t->rows; i++)
		draw_fill(y + i, 0, w, A_NORMAL);
	mvhline(y, 0, t->ascii ? '-' : ACS_HLINE, w);
	mvhline(y + h - 1, 0, t->ascii ? '-' : ACS_HLINE, w);
	draw_text(y, 2, w - 4, " Sign in ", A_BOLD);
	text = (struct rect){ y + 1, 1, 1, w - 2 };
	snprintf(line, sizeof line, "Open this URL in a browser to sign in to %s; taskdeckd "
	    "receives the answer:", t->modal_name);
	modal_text(&text, &row, line, A_BOLD);
	row = 0;
	ur = (struct rect){ y + 3, 0, urows, w };
	modal_text(&ur, &row, url, A_NORMAL);
	row = 0;
	hints = (struct rect){ y + 4 + urows, 1, 1, w - 2 };
	modal_text(&hints, &row, "o opens it ($BROWSER, else xdg-open)  c copies it (OSC 52)  "
	    "then t tests the connector  any other key closes this", draw_attr(t, ST_DIM));
}

/* True for a URL a browser may be given: http or https, no control characters. */
static bool
signin_url_ok(const char *url)
{
	if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
		return false;
	for (const unsigned char *p = (const unsigned char *)url; *p != '\0'; p++) {
		if (*p <= ' ' || *p == 0x7f)
			return false;
	}
	return true;
}

static unsigned
signin_key(struct tui *t, int key)
{
	const char *url = t->modal_url != NULL ? t->modal_url : "";

	if ((key == 'o' || key == 'c') && !signin_url_ok(url)) {
		model_message(&t->m, t->now_ms, true, "not an http(s) URL: neither opened nor "
		    "copied");
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == 'o') {
		if (tui_external(t, "BROWSER", "xdg-open", url) == 0)
			model_message(&t->m, t->now_ms, false, "opened the sign-in URL of %s in a "
			    "browser", t->modal_name);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == 'c') {
		tui_osc52(url);
		model_message(&t->m, t->now_ms, false, "copied the sign-in URL of %s",
		    t->modal_name);
		return TUI_HANDLED | TUI_REDRAW;
	}
	modal_close(t);
	return TUI_HANDLED | TUI_REDRAW;
}

void
modal_show_text(struct tui *t, const char *title, char *text)
{
	modal_free(t);
	snprintf(t->modal_name, sizeof t->modal_name, "%s", title);
	t->modal_url = text;
	t->modal_top = 0;
	t->modal = MODAL_TEXT;
	t->dirty = true;
}

/* The text from its line modal_top on, wrapped; how to go on below. */
static void
text_draw(struct tui *t)
{
	const char *text = t->modal_url != NULL ? t->modal_url : "";
	int w = t->cols - 4 > 100 ? 100 : t->cols - 4, rows, h, row = 0;
	size_t at = 0, len = strlen(text), nl, next;
	struct rect r;

	if (w < 20)
		w = 20;
	rows = modal_text_rows(text, w - 4);
	h = rows + 4 > t->rows - 2 ? t->rows - 2 : rows + 4;
	/* Scrolled no further than the last row at the bottom. */
	if (t->modal_top > (size_t)(rows > h - 4 ? rows - (h - 4) : 0))
		t->modal_top = (size_t)(rows > h - 4 ? rows - (h - 4) : 0);
	/* Skip the rows above modal_top, as modal_text wraps them. */
	for (size_t skip = t->modal_top; skip > 0 && at < len; skip--) {
		nl = strcspn(text + at, "\n");
		(void)draw_wrap(text + at, nl, w - 4, &next);
		at += next;
		if (next == nl && at < len && text[at] == '\n')
			at++;
	}
	r = modal_box(t, w, h, t->modal_name);
	r.h -= 2;
	modal_text(&r, &row, text + at, A_NORMAL);
	draw_text(r.y + r.h + 1, r.x, r.w, rows > h - 4 ?
	    "j k PgUp PgDn g G scroll  any other key closes" : "any key closes",
	    draw_attr(t, ST_DIM));
}

static unsigned
text_key(struct tui *t, int key)
{
	if (!modal_scroll(key, t->rows > 8 ? t->rows - 8 : 1, &t->modal_top))
		modal_close(t);
	return TUI_HANDLED | TUI_REDRAW;
}

static void
permission_draw(struct tui *t)
{
	const struct m_permission *p = model_modal_permission(&t->m);
	char line[512];
	int row = 0;
	struct rect r, sr;

	if (p == NULL)
		return;
	int form_rows = 0;

	for (const char *f = p->form; f != NULL; f = strchr(f + 1, '\n'))
		form_rows++;
	r = modal_box(t, 70, 7 + (t->m.permission_count > 1) + (form_rows ? form_rows + 2 : 0) +
	    (p->summary != NULL ? draw_width(p->summary) / 64 : 0),
	    p->form != NULL ? "A server's form" : "Permission requested");
	/* The run by its names (its id is in the question that answers it). */
	if (p->run_id != NULL)
		model_describe(&t->m, p->project_id, p->session_id, p->run_id, line, sizeof line);
	else
		snprintf(line, sizeof line, "a run");
	modal_text(&r, &row, line, A_NORMAL);
	snprintf(line, sizeof line, "tool: %s", p->tool != NULL ? p->tool : "-");
	modal_text(&r, &row, line, A_BOLD);
	sr = (struct rect){ r.y, r.x, r.h - 2, r.w };
	modal_text(&sr, &row, p->summary != NULL ? p->summary : "", A_NORMAL);
	if (p->form != NULL) {
		/* a fills the fields in; the CLI's command names this prompt. */
		snprintf(line, sizeof line, "fields (a: fill them in; or taskdeck permissions allow "
		    "%s --field NAME=VALUE):", p->id);
		modal_text(&sr, &row, line, A_BOLD);
		modal_text(&sr, &row, p->form, A_NORMAL);
	}
	if (t->m.permission_count > 1) {
		snprintf(line, sizeof line, "(%zu prompts pending)", t->m.permission_count);
		draw_text(r.y + r.h - 2, r.x, r.w, line, draw_attr(t, ST_DIM));
	}
	draw_text(r.y + r.h - 1, r.x, r.w,
	    "a allow  d deny  A allow every tool for the run  Esc hide",
	    draw_attr(t, ST_ATTENTION));
}

/* The [y/N] question for one answer to a prompt. */
static const struct {
	int key;
	const char *decision;
	const char *verb, *scope;
} permission_answers[] = {
	{ 'a', "allow", "Allow", "for" },
	{ 'd', "deny", "Deny", "for" },
	{ 'A', "allow-run", "Allow", "for the rest of" },
};

static unsigned
permission_key(struct tui *t, int key)
{
	const struct m_permission *p = model_modal_permission(&t->m);
	struct job job = { .kind = JOB_PERMISSION_ANSWER };
	char what[512];

	if (p == NULL)
		return 0;
	if (key == TUI_ESC) {
		model_permission_hide(&t->m);
		return TUI_HANDLED | TUI_REDRAW;
	}
	/* A form: its fields to fill in first (the defaults filled in). */
	if (key == 'a' && p->form_values != NULL) {
		snprintf(t->modal_id, sizeof t->modal_id, "%s", p->id);
		snprintf(t->modal_name, sizeof t->modal_name, "%s", p->tool != NULL ? p->tool :
		    "the form");
		modal_open(t, MODAL_FORM);
		editor_free(&t->ed);
		editor_init(&t->ed, MODAL_FEEDBACK_MAX, true, p->form_values);
		/* The cursor on the first field without a value. */
		for (size_t i = 0; i < t->ed.len; i++) {
			if (t->ed.text[i] == '=' && (t->ed.text[i + 1] == '\n' ||
			    t->ed.text[i + 1] == '\0')) {
				t->ed.cur = i + 1;
				break;
			}
		}
		return TUI_HANDLED | TUI_REDRAW;
	}
	for (size_t i = 0; i < sizeof permission_answers / sizeof permission_answers[0]; i++) {
		if (permission_answers[i].key != key)
			continue;
		job.id = p->id;
		job.decision = (char *)permission_answers[i].decision;
		if (p->run_id != NULL)
			model_describe(&t->m, p->project_id, p->session_id, p->run_id, what,
			    sizeof what);
		else
			snprintf(what, sizeof what, "the run");
		if (key == 'A') {
			modal_confirm(t, &job, "Allow EVERY tool, not only %s, for the rest of %s? "
			    "No further prompt will be asked for this run. [y/N]\n%s",
			    p->tool != NULL ? p->tool : "this one", what,
			    p->run_id != NULL ? p->run_id : "");
			return TUI_HANDLED | TUI_REDRAW;
		}
		modal_confirm(t, &job, "%s %s %s %s? [y/N]\n%s", permission_answers[i].verb,
		    p->tool != NULL ? p->tool : "the tool", permission_answers[i].scope, what,
		    p->run_id != NULL ? p->run_id : "");
		return TUI_HANDLED | TUI_REDRAW;
	}
	return 0;
}

/* The editor box with a title and a footer of lines below the text; the inside. */
static struct rect
editor_box_draw(struct tui *t, const char *title, const char *const *footer, size_t nf)
{
	int h = t->rows - 6 < 14 ? t->rows - 6 : 14;
	struct rect r = modal_box(t, t->cols - 8 < 90 ? t->cols - 8 : 90, h, title);
	struct rect tr;

	/* A short screen keeps a row of text; the footer gives way. */
	while (nf > 0 && r.h - (int)nf - 1 < 1)
		nf--;
	tr = (struct rect){ r.y, r.x, r.h - (int)nf - 1 > 0 ? r.h - (int)nf - 1 : 1, r.w };

	editor_draw(&t->ed, &tr, A_NORMAL, &t->cur_y, &t->cur_x);
	mvhline(r.y + tr.h, r.x, ' ', r.w);
	for (size_t i = 0; i < nf; i++)
		draw_text(r.y + tr.h + 1 + (int)i, r.x, r.w, footer[i], draw_attr(t, ST_DIM));
	return r;
}

/* The models of the provider field's choice, asked for once per provider (JOB_MODELS). */
static void
prompt_models_ask(struct tui *t)
{
	const char *provider = t->provider[0] != '\0' ? t->provider : "default";
	struct job job = { .kind = JOB_MODELS, .id = (char *)provider };

	t->models_at = -1;
	if (strcmp(t->models_for, provider) == 0 && t->models != NULL)
		return;
	snprintf(t->models_for, sizeof t->models_for, "%s", provider);
	td_model_list_free(t->models);
	t->models = NULL;
	tui_submit(t, &job);
}

/* Whether model i is a choice for what was typed (the stem while choosing). */
static bool
prompt_model_matches(const struct tui *t, size_t i)
{
	const char *stem = t->models_at >= 0 ? t->models_stem : t->fed.text;

	return strncmp(t->models->items[i].id, stem, strlen(stem)) == 0;
}

/* Up/Down in the model field: the previous or next model starting with what was typed. */
static void
prompt_model_step(struct tui *t, int dir)
{
	size_t n = t->models != NULL ? t->models->count : 0;

	if (n == 0)
		return;
	if (t->models_at < 0) {
		snprintf(t->models_stem, sizeof t->models_stem, "%s", t->fed.text);
		t->models_at = dir > 0 ? -1 : 0;
	}
	for (size_t k = 0; k < n; k++) {
		t->models_at = (int)(((size_t)(t->models_at + (int)n) + (size_t)(dir > 0 ? 1 : -1)) % n);
		if (prompt_model_matches(t, (size_t)t->models_at)) {
			editor_free(&t->fed);
			editor_init(&t->fed, sizeof t->model, false, t->models->items[t->models_at].id);
			return;
		}
	}
	t->models_at = -1;
}

/* The models that match, for the hint line of the model field. */
static void
prompt_models_text(const struct tui *t, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	if (t->models == NULL) {
		snprintf(out, size, "  (asking %s for its models)", t->models_for);
		return;
	}
	for (size_t i = 0; i < t->models->count && len + 1 < size; i++) {
		if (!prompt_model_matches(t, i))
			continue;
		len += (size_t)snprintf(out + len, size - len, "%s%s", len == 0 ? "  Up/Down: " : " ",
		    t->models->items[i].id);
	}
}

/* The attempts field as a count: 1 when empty; 0 when it is no count from 1 to 8. */
static int
prompt_attempts(const struct tui *t)
{
	char *end;
	long n;

	if (t->attempts[0] == '\0')
		return 1;
	n = strtol(t->attempts, &end, 10);
	return *end == '\0' && n >= 1 && n <= 8 ? (int)n : 0;
}

static void
prompt_draw(struct tui *t)
{
	char title[400], opts[256], where[300], ask[4400], attempts_what[4200], hint[600];
	const char *footer[3] = { opts, where,
		"Enter start  Ctrl-J newline  Ctrl-O $EDITOR  Esc cancel" };
	struct rect r, fr;

	if (t->modal_session[0] != '\0') {
		model_describe(&t->m, t->modal_id, t->modal_session, NULL, where, sizeof where);
		snprintf(title, sizeof title, "Continue session: %s", where);
	}
	else
		snprintf(title, sizeof title, "New run in %s", t->modal_name);
	snprintf(opts, sizeof opts, "plan-first: %s (Ctrl-T)   profile: %s (Ctrl-P)",
	    t->plan_first ? "on" : "off",
	    tui_profiles[t->profile] != NULL ? tui_profiles[t->profile] : "default");
	if (t->modal_session[0] != '\0')
		snprintf(where, sizeof where, "provider, model: the session's");
	else
		snprintf(where, sizeof where, "provider: %s   model: %s   attempts: %s   (Tab edits)",
		    t->provider[0] != '\0' ? t->provider : "default",
		    t->model[0] != '\0' ? t->model : "default",
		    t->attempts[0] != '\0' ? t->attempts : "1");
	if (t->ask_drop)
		footer[2] = "Drop the typed prompt? [y/N]";
	if (t->ask_start) {
		char cwd[4096];

		if (getcwd(cwd, sizeof cwd) == NULL)
			snprintf(cwd, sizeof cwd, "?");
		snprintf(attempts_what, sizeof attempts_what, "%d attempts in %s",
		    prompt_attempts(t), cwd);
		snprintf(ask, sizeof ask, "Start %s%s%s%s? [y/N]  (any other key: back to the text)",
		    prompt_attempts(t) > 1 && t->modal_session[0] == '\0' ? attempts_what :
		    "this run", tui_profiles[t->profile] != NULL ? " with " : "",
		    tui_profiles[t->profile] != NULL ? tui_profiles[t->profile] : "",
		    t->plan_first && !(prompt_attempts(t) > 1 && t->modal_session[0] == '\0') ?
		    ", plan first" : "");
		footer[2] = ask;
	}
	r = editor_box_draw(t, title, footer, 3);
	if (t->field == 0 || r.w <= 12 || r.h < 5)
		return;
	/* The field edited, on its line, with the cursor; its keys below. */
	fr = (struct rect){ r.y + r.h - 2, r.x + 10, 1, r.w - 10 };
	mvhline(fr.y, r.x, ' ', r.w);
	mvhline(fr.y + 1, r.x, ' ', r.w);
	draw_text(fr.y, r.x, 10, t->field == 1 ? "provider:" : t->field == 2 ? "model:" :
	    "attempts:", draw_attr(t, ST_DIM));
	editor_draw(&t->fed, &fr, A_UNDERLINE, &t->cur_y, &t->cur_x);
	if (t->field == 2) {
		char models[400];

		prompt_models_text(t, models, sizeof models);
		snprintf(hint, sizeof hint, "Tab attempts  Enter start  Esc back%s",
		    models[0] != '\0' ? models : "  (empty: the default)");
	} else if (t->field == 1) {
		snprintf(hint, sizeof hint, "Tab model  Enter start  Esc back to the text  "
		    "(empty: the default)");
	} else {
		snprintf(hint, sizeof hint, "Tab back to the text  Enter start  Esc back  (1 to 8, "
		    "each in its own git worktree of this directory; 1: a plain run)");
	}
	draw_text(fr.y + 1, r.x, r.w, hint, draw_attr(t, ST_DIM));
}

/* Ends editing the provider or model field: its text kept (keep) or not. */
static void
prompt_field_end(struct tui *t, bool keep)
{
	if (keep && t->field == 1)
		snprintf(t->provider, sizeof t->provider, "%s", t->fed.text);
	else if (keep && t->field == 2)
		snprintf(t->model, sizeof t->model, "%s", t->fed.text);
	else if (keep && t->field == 3)
		snprintf(t->attempts, sizeof t->attempts, "%s", t->fed.text);
	editor_free(&t->fed);
	t->field = 0;
}

/*
 * Tab moves from the text to the provider, the model and back; Enter keeps
 * the field and starts (EDITOR_DONE); Esc leaves the field as it was.
 */
static unsigned
prompt_field_key(struct tui *t, int key)
{
	unsigned f;

	if (key == '\t') {
		int next = t->field == 3 ? 0 : t->field + 1;

		prompt_field_end(t, true);
		t->field = next;
		if (next != 0)
			editor_init(&t->fed, next == 1 ? sizeof t->provider : next == 2 ?
			    sizeof t->model : sizeof t->attempts, false, next == 1 ? t->provider :
			    next == 2 ? t->model : t->attempts);
		if (next == 2)
			prompt_models_ask(t);
		return 0;
	}
	if (t->field == 2 && (key == TUI_KEY(KEY_DOWN) || key == TUI_KEY(KEY_UP))) {
		prompt_model_step(t, key == TUI_KEY(KEY_DOWN) ? 1 : -1);
		return 0;
	}
	if (t->field == 2)
		t->models_at = -1;
	f = editor_key(&t->fed, key);
	if (f & EDITOR_CANCEL)
		prompt_field_end(t, false);
	else if (f & EDITOR_DONE) {
		prompt_field_end(t, true);
		return EDITOR_DONE;
	}
	return 0;
}

/* Ctrl-O: the text in $EDITOR (vi when unset), then back in the editor. */
static void
modal_external_edit(struct tui *t)
{
	char path[4096], *text;
	FILE *fp = tui_temp_file(path, sizeof path, ".md");
	size_t n;

	if (fp == NULL) {
		model_message(&t->m, t->now_ms, true, "cannot make a temporary file");
		return;
	}
	fputs(t->ed.text, fp);
	fclose(fp);
	if (tui_external(t, "EDITOR", "vi", path) == 0 && (fp = fopen(path, "re")) != NULL) {
		text = calloc(1, t->ed.cap);
		if (text != NULL) {
			n = fread(text, 1, t->ed.cap - 1, fp);
			while (n > 0 && text[n - 1] == '\n')
				n--;
			text[n] = '\0';
			editor_free(&t->ed);
			editor_init(&t->ed, MODAL_PROMPT_MAX, true, text);
			free(text);
		}
		fclose(fp);
	}
	unlink(path);
}

/* Starts the run (or the attempts) the editor holds and closes it. */
static void
prompt_start(struct tui *t)
{
	struct job job = { .kind = JOB_START_RUN };
	char cwd[4096];

	job.id = t->modal_id;
	job.session = t->modal_session[0] != '\0' ? t->modal_session : NULL;
	job.text = t->ed.text;
	job.profile = (char *)tui_profiles[t->profile];
	job.plan_first = t->plan_first;
	/* A continued session runs with its own configuration. */
	if (job.session == NULL) {
		job.provider = t->provider[0] != '\0' ? t->provider : NULL;
		job.model = t->model[0] != '\0' ? t->model : NULL;
		job.attempts = prompt_attempts(t);
		if (job.attempts > 1 && getcwd(cwd, sizeof cwd) != NULL)
			job.path = cwd;
	}
	tui_submit(t, &job);
	model_message(&t->m, t->now_ms, false, job.attempts > 1 ? "starting %d attempts..." :
	    "starting a run...", job.attempts);
	modal_close(t);
}

/* Forgets the failed start the editor offered again: dropped is dropped. */
static void
prompt_drop_draft(struct tui *t)
{
	if (prompt_is_draft(t)) {
		job_clear(&t->draft);
		t->has_draft = false;
	}
}

static unsigned
prompt_key(struct tui *t, int key)
{
	unsigned f;

	if (t->ask_drop) {
		/* Only y drops the text (and a failed start's draft); any
		 * other key goes back to it. */
		t->ask_drop = false;
		if (key == 'y') {
			prompt_drop_draft(t);
			modal_close(t);
		}
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (t->ask_start) {
		/* As every question: only y acts, any other key goes back. */
		t->ask_start = false;
		if (key == 'y')
			prompt_start(t);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (t->field != 0 || (key == '\t' && t->modal_session[0] == '\0')) {
		f = prompt_field_key(t, key);
		if (!(f & EDITOR_DONE))
			return TUI_HANDLED | TUI_REDRAW;
	} else if (key == TUI_CTRL('t')) {
		t->plan_first = !t->plan_first;
		return TUI_HANDLED | TUI_REDRAW;
	} else if (key == TUI_CTRL('p')) {
		t->profile = (t->profile + 1) % tui_profile_count;
		return TUI_HANDLED | TUI_REDRAW;
	} else if (key == TUI_CTRL('o')) {
		modal_external_edit(t);
		return TUI_HANDLED | TUI_REDRAW;
	} else
		f = editor_key(&t->ed, key);
	if ((f & EDITOR_CANCEL) && t->ed.len > 0)
		t->ask_drop = true;
	else if (f & EDITOR_CANCEL)
		modal_close(t);
	else if ((f & EDITOR_DONE) && t->ed.len > 0 && t->modal_session[0] == '\0' &&
	    prompt_attempts(t) == 0)
		model_message(&t->m, t->now_ms, true, "attempts: \"%s\" is no count from 1 to 8",
		    t->attempts);
	else if ((f & EDITOR_DONE) && t->ed.len > 0)
		t->ask_start = true;
	return TUI_HANDLED | TUI_REDRAW;
}

static void
feedback_draw(struct tui *t)
{
	char title[256];
	const char *footer[1] = { "Enter send  Ctrl-J newline  Esc cancel" };

	snprintf(title, sizeof title, "Revise plan v%ld r%ld: feedback", t->modal_version,
	    t->modal_revision);
	editor_box_draw(t, title, footer, 1);
}

static unsigned
feedback_key(struct tui *t, int key)
{
	struct job job = { .kind = JOB_PLAN_RESPOND };
	unsigned f = editor_key(&t->ed, key);
	char *text;

	if (f & EDITOR_CANCEL)
		modal_close(t);
	else if ((f & EDITOR_DONE) && t->ed.len > 0) {
		text = xstrdup(t->ed.text);
		job.id = t->modal_id;
		job.decision = "revise";
		job.version = t->modal_version;
		job.revision = t->modal_revision;
		job.text = text;
		modal_confirm(t, &job, "Send feedback? [y/N]");
		free(text);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

static void
form_draw(struct tui *t)
{
	char title[320];
	const char *footer[2] = { "one field a line: NAME=VALUE (empty: the default)",
		"Enter allow with these values  Ctrl-J newline  Esc back to the prompt" };

	snprintf(title, sizeof title, "Fill in the form of %s", t->modal_name);
	editor_box_draw(t, title, footer, 2);
}

static unsigned
form_key(struct tui *t, int key)
{
	struct job job = { .kind = JOB_PERMISSION_ANSWER, .decision = "allow" };
	unsigned f = editor_key(&t->ed, key);
	char *values, id[sizeof t->modal_id], tool[sizeof t->modal_name];

	if (f & EDITOR_CANCEL)
		modal_close(t);
	else if (f & EDITOR_DONE) {
		values = model_form_answer(t->ed.text);
		memcpy(id, t->modal_id, sizeof id);
		memcpy(tool, t->modal_name, sizeof tool);
		job.id = id;
		job.text = values;
		modal_confirm(t, &job, "Allow %s with %s? [y/N]\n%s", tool,
		    values != NULL ? values : "its defaults", id);
		free(values);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

static void
download_draw(struct tui *t)
{
	char title[512];
	struct rect r;

	snprintf(title, sizeof title, "Download %s to:", t->modal_name);
	r = modal_box(t, t->cols - 8 < 80 ? t->cols - 8 : 80, 5, title);
	r.h = 1;
	editor_draw(&t->ed, &r, A_NORMAL, &t->cur_y, &t->cur_x);
	draw_text(r.y + 2, r.x, r.w, "Enter download  Esc cancel", draw_attr(t, ST_DIM));
}

/* The directory typed, "~/" expanded and trailing slashes dropped, into out. */
static void
download_dir(const char *text, char *out, size_t len)
{
	const char *home = getenv("HOME");
	size_t n;

	if (*text == '\0')
		text = ".";
	if (text[0] == '~' && (text[1] == '/' || text[1] == '\0') && home != NULL)
		snprintf(out, len, "%s%s", home, text + 1);
	else
		snprintf(out, len, "%s", text);
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
}

static unsigned
download_key(struct tui *t, int key)
{
	struct job job = { .kind = JOB_DOWNLOAD };
	unsigned f = editor_key(&t->ed, key);
	char dir[sizeof t->download_dir], *path;
	struct stat st;

	if (f & EDITOR_CANCEL) {
		modal_close(t);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (!(f & EDITOR_DONE))
		return f;
	download_dir(t->ed.text, dir, sizeof dir);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		model_message(&t->m, t->now_ms, true, "download failed: %s: %s", dir,
		    stat(dir, &st) != 0 ? strerror(errno) : "not a directory");
		return TUI_HANDLED | TUI_REDRAW;
	}
	snprintf(t->download_dir, sizeof t->download_dir, "%s", dir);
	t->download_dir_chosen = true;
	path = xasprintf("%s/%s", dir, t->modal_name);
	job.id = t->modal_id;
	job.path = path;
	job.label = t->modal_name;
	job.run_id = t->modal_run;
	if (tui_downloading(t, path)) {
		model_message(&t->m, t->now_ms, false, "already downloading %s", path);
		modal_close(t);
	} else if (lstat(path, &st) == 0) {
		job.overwrite = true;
		modal_confirm(t, &job, "Overwrite %s? [y/N]", path);
	} else {
		tui_submit(t, &job);
		modal_close(t);
	}
	free(path);
	return TUI_HANDLED | TUI_REDRAW;
}

static void
filter_draw(struct tui *t)
{
	struct rect r = { t->rows - 2, 2, 1, t->cols - 3 };

	draw_fill(r.y, 0, t->cols, A_NORMAL);
	mvaddstr(r.y, 1, t->modal == MODAL_FILTER ? "&" : "/");
	editor_draw(&t->ed, &r, A_NORMAL, &t->cur_y, &t->cur_x);
}

static unsigned
filter_key(struct tui *t, int key)
{
	unsigned f = editor_key(&t->ed, key);

	if (f & EDITOR_CANCEL) {
		model_log_filter(&t->m, "");
		modal_close(t);
	} else if (f & EDITOR_DONE) {
		model_log_filter(&t->m, t->ed.text);
		modal_close(t);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* Says where the search stands: "match 3/17: report". */
static void
search_say(struct tui *t, int moved)
{
	size_t index, total;

	model_log_search_count(&t->m, &index, &total);
	if (moved == 0)
		model_message(&t->m, t->now_ms, true, "pattern not found: %s", t->m.log.search);
	else
		model_message(&t->m, t->now_ms, false, "match %zu/%zu: %s%s", index, total,
		    t->m.log.search, moved == 2 ? " (search wrapped)" : "");
}

/* '/' in the log: Enter searches (n / N then move); an empty query or Esc clears. */
static unsigned
search_key(struct tui *t, int key)
{
	unsigned f = editor_key(&t->ed, key);

	if (f & EDITOR_CANCEL) {
		model_log_search(&t->m, "");
		modal_close(t);
	} else if (f & EDITOR_DONE) {
		char *q = xstrdup(t->ed.text);

		modal_close(t);
		if (model_log_search(&t->m, q))
			search_say(t, 1);
		else if (q[0] != '\0')
			search_say(t, 0);
		free(q);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

void
modal_search_next(struct tui *t, int dir)
{
	if (t->m.log.search[0] == '\0') {
		model_message(&t->m, t->now_ms, true, "no search: / searches the log "
		    "(a new run: n in the other panes, or :new)");
		return;
	}
	search_say(t, model_log_search_next(&t->m, dir));
}

/* '/' in a list: every key applies the filter; Enter keeps it, Esc clears it;
 * Up and Down move the selection among the matches meanwhile. */
static unsigned
list_filter_key(struct tui *t, int key)
{
	unsigned f;

	if (key == TUI_KEY(KEY_UP) || key == TUI_KEY(KEY_DOWN)) {
		tui_need(t, model_move(&t->m, key == TUI_KEY(KEY_UP) ? -1 : 1, tui_page_rows(t)));
		return TUI_HANDLED | TUI_REDRAW;
	}
	f = editor_key(&t->ed, key);

	if (f & EDITOR_CANCEL) {
		tui_need(t, model_list_filter(&t->m, t->m.focus, ""));
		modal_close(t);
	} else if (f & EDITOR_DONE)
		modal_close(t);
	else
		tui_need(t, model_list_filter(&t->m, t->m.focus, t->ed.text));
	return TUI_HANDLED | TUI_REDRAW;
}

/* The help's entry comes from keys.c (modal_register): it lists their table. */
static struct {
	void (*draw)(struct tui *t);
	unsigned (*key)(struct tui *t, int key);
} modal_ops[MODAL__COUNT] = {
	[MODAL_CONFIRM] = { confirm_draw, confirm_key },
	[MODAL_PERMISSION] = { permission_draw, permission_key },
	[MODAL_PROMPT] = { prompt_draw, prompt_key },
	[MODAL_FEEDBACK] = { feedback_draw, feedback_key },
	[MODAL_FORM] = { form_draw, form_key },
	[MODAL_DOWNLOAD] = { download_draw, download_key },
	[MODAL_FILTER] = { filter_draw, filter_key },
	[MODAL_LIST_FILTER] = { filter_draw, list_filter_key },
	[MODAL_SEARCH] = { filter_draw, search_key },
	[MODAL_SIGNIN] = { signin_draw, signin_key },
	[MODAL_TEXT] = { text_draw, text_key },
};

void
modal_register(enum modal_kind kind, void (*draw)(struct tui *t),
    unsigned (*key)(struct tui *t, int key))
{
	modal_ops[kind].draw = draw;
	modal_ops[kind].key = key;
}

void
modal_draw(struct tui *t)
{
	enum modal_kind k = modal_current(t);

	if (k != MODAL_NONE && modal_ops[k].draw != NULL)
		modal_ops[k].draw(t);
}

unsigned
modal_key(struct tui *t, int key)
{
	enum modal_kind k = modal_current(t);

	if (k == MODAL_NONE || modal_ops[k].key == NULL) {
		if (k != MODAL_NONE)
			modal_close(t);
		return k != MODAL_NONE ? TUI_HANDLED | TUI_REDRAW : 0;
	}
	return modal_ops[k].key(t, key);
}
