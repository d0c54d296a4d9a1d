/*
 * The ':' palette: verbs with their arguments, Tab completion (verbs,
 * project names, session titles, run ids, sort keys; prefix first, then
 * anywhere in the name, case-insensitive; Tab again cycles), a history
 * browsed with Up/Down and kept in the state file (state.c), the nearest
 * verb for an unknown one.  Also the message history (every message of the
 * message line, newest last).  Above keys.c: a verb that is an action runs
 * it through keys_action.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tui/tui.h"
#include "xalloc.h"

#define PALETTE_LINE_MAX 256

enum palette_arg { ARG_NONE, ARG_PROJECT, ARG_SESSION, ARG_RUN, ARG_SORT, ARG_TEXT };

struct palette_verb {
	const char *name;
	enum palette_arg arg;
	const char *usage;
	void (*fn)(struct tui *t, const char *arg);
};

static const struct palette_verb *palette_find(struct tui *t, const char *verb);

/* --- Resolving names --------------------------------------------------------- */

/* How name matches typed: 3 the same (case-insensitive), 2 a prefix, 1 inside, 0 not. */
static int
palette_match(const char *name, const char *typed)
{
	size_t n = strlen(typed);

	if (name == NULL)
		return 0;
	if (strcasecmp(name, typed) == 0)
		return 3;
	if (strncasecmp(name, typed, n) == 0)
		return 2;
	return n > 0 && strcasestr(name, typed) != NULL ? 1 : 0;
}

/*
 * The one of n names that typed means: the same name (or id), else the only
 * one it begins, else the only one holding it.  SIZE_MAX for none; *many
 * when several match at the best level.
 */
static size_t
palette_pick(const char *const *names, const char *const *ids, size_t n, const char *typed,
    bool *many)
{
	size_t best = SIZE_MAX, count = 0;
	int level = 0;

	*many = false;
	for (size_t i = 0; i < n; i++) {
		int m = palette_match(names[i], typed);

		if (ids != NULL && ids[i] != NULL && strcmp(ids[i], typed) == 0)
			m = 4;
		if (m > level) {
			level = m;
			best = i;
			count = 1;
		} else if (m == level && m > 0)
			count++;
	}
	*many = count > 1 && level < 3;
	return *many ? SIZE_MAX : best;
}

/* A run the dashboard knows (the session's, then the project's) by its id,
 * or a unique end or start of it; NULL when none. */
static const struct m_run *
palette_run(struct tui *t, const char *typed, bool *many)
{
	const struct m_run *found = NULL;
	size_t n = strlen(typed), count = 0;
	const struct m_run *lists[2] = { t->m.runs, t->m.project_runs };
	size_t counts[2] = { t->m.run_count, t->m.project_run_count };

	*many = false;
	for (size_t l = 0; l < 2; l++) {
		for (size_t i = 0; i < counts[l]; i++) {
			const struct m_run *r = &lists[l][i];
			size_t len = r->id != NULL ? strlen(r->id) : 0;

			if (len == 0)
				continue;
			if (strcmp(r->id, typed) == 0)
				return r;
			if (n < 4 || n > len || (strncasecmp(r->id, typed, n) != 0 &&
			    strcasecmp(r->id + len - n, typed) != 0))
				continue;
			if (found == NULL || strcmp(found->id, r->id) != 0)
				count++;
			found = r;
		}
	}
	*many = count > 1;
	return count == 1 ? found : NULL;
}

/* --- The verbs --------------------------------------------------------------- */

/* The project arg names (SIZE_MAX: none, or *many). */
static size_t
project_pick(struct tui *t, const char *arg, bool *many)
{
	const char **names = xcalloc(t->m.project_count + 1, sizeof *names);
	const char **ids = xcalloc(t->m.project_count + 1, sizeof *ids);
	size_t i;

	for (i = 0; i < t->m.project_count; i++) {
		names[i] = t->m.projects[i].name;
		ids[i] = t->m.projects[i].id;
	}
	i = palette_pick(names, ids, t->m.project_count, arg, many);
	free(names);
	free(ids);
	return i;
}

/* The message of a project or session found among the archived ones. */
static void
palette_archived_found(struct tui *t, const char *name)
{
	char key[32];
	const char *k = keys_action_key("show-archived", key, sizeof key);

	model_message(&t->m, t->now_ms, false, "%s is archived: shown with the archived ones%s%s%s",
	    name != NULL ? name : "", k != NULL ? " (" : "", k != NULL ? k : "",
	    k != NULL ? " hides them)" : "");
}

static void
verb_project(struct tui *t, const char *arg)
{
	size_t i;
	bool many;

	t->want_project_name[0] = '\0';
	i = project_pick(t, arg, &many);
	if (i == SIZE_MAX && !many && !t->m.show_archived) {
		/* Perhaps an archived one: the list is read with them, then searched again. */
		snprintf(t->want_project_name, sizeof t->want_project_name, "%s", arg);
		t->m.show_archived = true;
		tui_need(t, NEED_PROJECTS | NEED_SESSIONS);
		return;
	}
	if (i == SIZE_MAX) {
		model_message(&t->m, t->now_ms, true, many ? "several projects match '%s' "
		    "(Tab lists them)" : "no project named '%s'", arg);
		return;
	}
	tui_jump(t, t->m.projects[i].id, NULL, NULL);
	model_focus(&t->m, PANE_PROJECTS);
}

unsigned
palette_projects_read(struct tui *t)
{
	size_t i;
	bool many;

	if (t->want_project_name[0] == '\0')
		return NEED_NONE;
	i = project_pick(t, t->want_project_name, &many);
	if (i == SIZE_MAX) {
		model_message(&t->m, t->now_ms, true, many ? "several projects match '%s' "
		    "(Tab lists them)" : "no project named '%s', archived ones included",
		    t->want_project_name);
		t->want_project_name[0] = '\0';
		/* Hidden again, as before the search. */
		t->m.show_archived = false;
		return NEED_PROJECTS | NEED_SESSIONS;
	}
	t->want_project_name[0] = '\0';
	if (t->m.projects[i].archived)
		palette_archived_found(t, t->m.projects[i].name);
	tui_jump(t, t->m.projects[i].id, NULL, NULL);
	model_focus(&t->m, PANE_PROJECTS);
	return NEED_NONE;
}

/* The session of the selected project arg names (SIZE_MAX: none, or *many). */
static size_t
session_pick(struct tui *t, const char *arg, bool *many)
{
	const char **names = xcalloc(t->m.session_count + 1, sizeof *names);
	const char **ids = xcalloc(t->m.session_count + 1, sizeof *ids);
	size_t i;

	for (i = 0; i < t->m.session_count; i++) {
		names[i] = t->m.sessions[i].title;
		ids[i] = t->m.sessions[i].id;
	}
	i = palette_pick(names, ids, t->m.session_count, arg, many);
	free(names);
	free(ids);
	return i;
}

static void
verb_session(struct tui *t, const char *arg)
{
	const struct m_project *p = model_project(&t->m);
	size_t i;
	bool many;

	t->want_session_title[0] = '\0';
	i = session_pick(t, arg, &many);
	if (i == SIZE_MAX && !many && !t->m.show_archived && p != NULL && p->id != NULL) {
		/* Perhaps an archived one: the list is read with them, then searched again. */
		snprintf(t->want_session_title, sizeof t->want_session_title, "%s", arg);
		snprintf(t->want_session_project, sizeof t->want_session_project, "%s", p->id);
		t->m.show_archived = true;
		tui_need(t, NEED_PROJECTS | NEED_SESSIONS);
		return;
	}
	if (i == SIZE_MAX) {
		model_message(&t->m, t->now_ms, true, many ? "several sessions match '%s' "
		    "(Tab lists them)" : "no session '%s' in this project", arg);
		return;
	}
	tui_need(t, model_select(&t->m, PANE_SESSIONS, i));
	model_focus(&t->m, PANE_SESSIONS);
}

unsigned
palette_sessions_read(struct tui *t, const char *project_id)
{
	size_t i;
	bool many;

	if (t->want_session_title[0] == '\0' || project_id == NULL ||
	    strcmp(project_id, t->want_session_project) != 0)
		return NEED_NONE;
	i = session_pick(t, t->want_session_title, &many);
	if (i == SIZE_MAX) {
		model_message(&t->m, t->now_ms, true, many ? "several sessions match '%s' "
		    "(Tab lists them)" : "no session '%s' in this project, archived ones included",
		    t->want_session_title);
		t->want_session_title[0] = '\0';
		t->m.show_archived = false;
		return NEED_PROJECTS | NEED_SESSIONS;
	}
	t->want_session_title[0] = '\0';
	if (t->m.sessions[i].archived)
		palette_archived_found(t, t->m.sessions[i].title);
	model_focus(&t->m, PANE_SESSIONS);
	return model_select(&t->m, PANE_SESSIONS, i);
}

/* The run an argument names (a message when none); NULL without one. */
static const struct m_run *
verb_run_arg(struct tui *t, const char *arg)
{
	bool many;
	const struct m_run *r = palette_run(t, arg, &many);

	if (r == NULL)
		model_message(&t->m, t->now_ms, true, many ? "several runs match '%s'" :
		    "no run '%s' in this project (:run ID reads any)", arg);
	return r;
}

static void
verb_run(struct tui *t, const char *arg)
{
	struct job job = { .kind = JOB_RUN };
	bool many;
	const struct m_run *r = palette_run(t, arg, &many);

	if (r != NULL) {
		tui_jump(t, r->project_id, r->session_id, r->id);
		model_focus(&t->m, PANE_RUNS);
		return;
	}
	if (many) {
		model_message(&t->m, t->now_ms, true, "several runs match '%s'", arg);
		return;
	}
	/* Another project's: read, then jumped to. */
	snprintf(t->jump_run, sizeof t->jump_run, "%s", arg);
	job.id = (char *)arg;
	tui_submit(t, &job);
}

static bool
verb_final(const struct m_run *r)
{
	return r->status != NULL && (strcmp(r->status, "completed") == 0 ||
	    strcmp(r->status, "failed") == 0 || strcmp(r->status, "cancelled") == 0);
}

static void
verb_cancel(struct tui *t, const char *arg)
{
	struct job job = { .kind = JOB_CANCEL_RUN };
	const struct m_run *r;
	char what[512];

	if (arg[0] == '\0') {
		keys_action(t, "cancel");
		return;
	}
	if ((r = verb_run_arg(t, arg)) == NULL)
		return;
	if (verb_final(r)) {
		model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
		modal_notice(t, "Nothing to cancel: %s has already %s.", what,
		    strcmp(r->status, "cancelled") == 0 ? "been cancelled" : r->status);
		return;
	}
	job.id = r->id;
	model_describe(&t->m, NULL, NULL, r->id, what, sizeof what);
	modal_confirm(t, &job, "Cancel %s? [y/N]\n%s", what, r->id);
}

static void
verb_approve(struct tui *t, const char *arg)
{
	const struct m_run *r;

	if (arg[0] == '\0') {
		keys_action(t, "approve");
		return;
	}
	if ((r = verb_run_arg(t, arg)) == NULL)
		return;
	if (t->m.plan.present && t->m.plan.run_id != NULL && strcmp(t->m.plan.run_id, r->id) == 0) {
		keys_action(t, "approve");
		return;
	}
	/* Its session's plan is read first: the question comes once it shows. */
	snprintf(t->want_approve, sizeof t->want_approve, "%s", r->id);
	tui_jump(t, r->project_id, r->session_id, r->id);
	model_show_right(&t->m, RIGHT_PLAN);
	model_message(&t->m, t->now_ms, false, "reading the plan of %s", r->id);
}

static void
verb_sort(struct tui *t, const char *arg)
{
	enum pane p = t->m.focus <= PANE_RUNS ? t->m.focus : PANE_RUNS;
	int found = -1;

	for (int s = 0; s < SORT__COUNT && arg[0] != '\0'; s++) {
		if (strncasecmp(model_sort_name(s), arg, strlen(arg)) == 0)
			found = s;
	}
	if (found < 0) {
		model_message(&t->m, t->now_ms, true, "no order '%s' (:sort newest, status or name)",
		    arg);
		return;
	}
	while (t->m.sort[p] != found)
		model_list_sort_next(&t->m, p);
	model_message(&t->m, t->now_ms, false, "%s by %s", tui_view(t, p)->name,
	    model_sort_name(found));
}

static void
verb_filter(struct tui *t, const char *arg)
{
	unsigned where = tui_where(t);

	if (where == W_LOG)
		model_log_filter(&t->m, arg);
	else if (where & W_LISTS)
		tui_need(t, model_list_filter(&t->m, t->m.focus, arg));
	else
		model_message(&t->m, t->now_ms, true, ":filter works in the lists and the Log");
}

static void
verb_action(struct tui *t, const char *verb)
{
	static const struct {
		const char *verb, *action;
	} map[] = {
		{ "new", "new-run" }, { "continue", "continue" }, { "help", "help" },
		{ "messages", "messages" },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if (strcmp(map[i].verb, verb) == 0)
			keys_action(t, map[i].action);
	}
}

static void
verb_new(struct tui *t, const char *arg)
{
	(void)arg;
	verb_action(t, "new");
}

static void
verb_continue(struct tui *t, const char *arg)
{
	(void)arg;
	verb_action(t, "continue");
}

static void
verb_help(struct tui *t, const char *arg)
{
	(void)arg;
	verb_action(t, "help");
}

static void
verb_messages(struct tui *t, const char *arg)
{
	(void)arg;
	verb_action(t, "messages");
}

static void
verb_quit(struct tui *t, const char *arg)
{
	(void)arg;
	t->quit = true;
}

static const struct palette_verb palette_verbs[] = {
	{ "project", ARG_PROJECT, ":project NAME", verb_project },
	{ "session", ARG_SESSION, ":session TITLE", verb_session },
	{ "run", ARG_RUN, ":run ID", verb_run },
	{ "cancel", ARG_RUN, ":cancel [RUN]", verb_cancel },
	{ "approve", ARG_RUN, ":approve [RUN]", verb_approve },
	{ "sort", ARG_SORT, ":sort newest|status|name", verb_sort },
	{ "filter", ARG_TEXT, ":filter TEXT", verb_filter },
	{ "new", ARG_NONE, ":new", verb_new },
	{ "continue", ARG_NONE, ":continue", verb_continue },
	{ "messages", ARG_NONE, ":messages", verb_messages },
	{ "help", ARG_NONE, ":help", verb_help },
	{ "quit", ARG_NONE, ":quit", verb_quit },
	{ "q", ARG_NONE, ":q", verb_quit },
};

#define PALETTE_VERBS (sizeof palette_verbs / sizeof palette_verbs[0])

/* Edit distance of a and b (short words), case-insensitive. */
static size_t
palette_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[33];

	if (la > 32 || lb > 32)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		d[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = d[0];

		d[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = d[j], c = diag + ((a[i - 1] | 0x20) != (b[j - 1] | 0x20));

			if (d[j] + 1 < c)
				c = d[j] + 1;
			if (d[j - 1] + 1 < c)
				c = d[j - 1] + 1;
			d[j] = c;
			diag = up;
		}
	}
	return d[lb];
}

/* The verb typed: the same name, else the only one it begins; NULL (said) else. */
static const struct palette_verb *
palette_find(struct tui *t, const char *verb)
{
	const struct palette_verb *found = NULL, *near = NULL;
	size_t count = 0, best = SIZE_MAX, n = strlen(verb);
	char list[200] = "";

	for (size_t i = 0; i < PALETTE_VERBS; i++) {
		if (strcasecmp(palette_verbs[i].name, verb) == 0)
			return &palette_verbs[i];
	}
	for (size_t i = 0; i < PALETTE_VERBS; i++) {
		if (strncasecmp(palette_verbs[i].name, verb, n) != 0)
			continue;
		found = &palette_verbs[i];
		count++;
		snprintf(list + strlen(list), sizeof list - strlen(list), " :%s",
		    palette_verbs[i].name);
	}
	if (count == 1)
		return found;
	if (count > 1) {
		model_message(&t->m, t->now_ms, true, "':%s' is more than one command:%s", verb,
		    list);
		return NULL;
	}
	for (size_t i = 0; i < PALETTE_VERBS; i++) {
		size_t d = palette_distance(palette_verbs[i].name, verb);

		if (d < best) {
			best = d;
			near = &palette_verbs[i];
		}
	}
	model_message(&t->m, t->now_ms, true, "unknown command ':%s': did you mean %s? "
	    "(Tab completes, :help)", verb, near != NULL ? near->usage : ":help");
	return NULL;
}

/* Runs one line: "verb [argument]". */
static void
palette_run_line(struct tui *t, const char *line)
{
	char verb[32];
	const char *arg;
	const struct palette_verb *v;
	size_t n;

	while (*line == ' ')
		line++;
	n = strcspn(line, " ");
	if (n == 0)
		return;
	if (n >= sizeof verb) {
		model_message(&t->m, t->now_ms, true, "unknown command ':%.*s'", (int)n, line);
		return;
	}
	memcpy(verb, line, n);
	verb[n] = '\0';
	arg = line + n;
	while (*arg == ' ')
		arg++;
	if ((v = palette_find(t, verb)) == NULL)
		return;
	tui_history_add(t, line);
	if (arg[0] == '\0' && (v->arg == ARG_PROJECT || v->arg == ARG_SESSION ||
	    (v->arg == ARG_RUN && v->fn == verb_run) || v->arg == ARG_SORT)) {
		model_message(&t->m, t->now_ms, true, "usage: %s (Tab completes)", v->usage);
		return;
	}
	if (v->arg == ARG_NONE && arg[0] != '\0') {
		model_message(&t->m, t->now_ms, true, "usage: %s", v->usage);
		return;
	}
	v->fn(t, arg);
}

/* --- Completion -------------------------------------------------------------- */

static void
palette_comp_free(struct tui *t)
{
	for (size_t i = 0; i < t->comp_count; i++)
		free(t->comp[i]);
	free(t->comp);
	t->comp = NULL;
	t->comp_count = t->comp_at = 0;
	free(t->comp_line);
	t->comp_line = NULL;
}

/* Adds name to the candidates when it matches typed at level (2 prefix, 1 inside). */
static void
palette_comp_add(struct tui *t, const char *name, const char *typed, int level)
{
	int m = palette_match(name, typed);

	if (m == 3)
		m = 2;
	if (m != level)
		return;
	for (size_t i = 0; i < t->comp_count; i++) {
		if (strcmp(t->comp[i], name) == 0)
			return;
	}
	t->comp = xrealloc(t->comp, (t->comp_count + 1) * sizeof *t->comp);
	t->comp[t->comp_count++] = xstrdup(name);
}

/* The candidates of an argument of kind arg for typed. */
static void
palette_comp_args(struct tui *t, enum palette_arg arg, const char *typed)
{
	/* Those it begins first; those holding it only when none begins with it. */
	for (int level = 2; level >= 1 && t->comp_count == 0; level--) {
		switch (arg) {
		case ARG_PROJECT:
			for (size_t i = 0; i < t->m.project_count; i++)
				palette_comp_add(t, t->m.projects[i].name, typed, level);
			break;
		case ARG_SESSION:
			for (size_t i = 0; i < t->m.session_count; i++)
				palette_comp_add(t, t->m.sessions[i].title, typed, level);
			break;
		case ARG_RUN:
			for (size_t i = 0; i < t->m.run_count; i++)
				palette_comp_add(t, t->m.runs[i].id, typed, level);
			for (size_t i = 0; i < t->m.project_run_count; i++)
				palette_comp_add(t, t->m.project_runs[i].id, typed, level);
			break;
		case ARG_SORT:
			for (int s = 0; s < SORT__COUNT; s++)
				palette_comp_add(t, model_sort_name(s), typed, level);
			break;
		default:
			return;
		}
	}
}

/* Puts text in the line, the cursor at its end. */
static void
palette_set(struct tui *t, const char *text)
{
	editor_free(&t->ed);
	editor_init(&t->ed, PALETTE_LINE_MAX, false, text);
}

/* The line with candidate i of the completion in place. */
static void
palette_comp_show(struct tui *t, size_t i)
{
	char line[PALETTE_LINE_MAX];
	bool verb = t->comp_verb[0] == '\0';

	t->comp_at = i;
	if (verb) {
		const struct palette_verb *v = NULL;

		for (size_t k = 0; k < PALETTE_VERBS; k++) {
			if (strcmp(palette_verbs[k].name, t->comp[i]) == 0)
				v = &palette_verbs[k];
		}
		/* A verb that takes an argument gets its space, when it is the only one. */
		snprintf(line, sizeof line, "%s%s", t->comp[i],
		    t->comp_count == 1 && v != NULL && v->arg != ARG_NONE ? " " : "");
	} else
		snprintf(line, sizeof line, "%s %s", t->comp_verb, t->comp[i]);
	palette_set(t, line);
	free(t->comp_line);
	t->comp_line = xstrdup(t->ed.text);
}

/* Tab (dir 1) / Shift-Tab (-1): completes the verb or its argument; again cycles. */
static void
palette_complete(struct tui *t, int dir)
{
	const char *text = t->ed.text, *sp;
	const struct palette_verb *v = NULL;
	char verb[32];
	size_t n;

	if (t->comp_line != NULL && t->comp_count > 1 && strcmp(t->comp_line, text) == 0) {
		palette_comp_show(t, (t->comp_at + t->comp_count + (size_t)(dir < 0 ? -1 : 1)) %
		    t->comp_count);
		return;
	}
	palette_comp_free(t);
	while (*text == ' ')
		text++;
	if ((sp = strchr(text, ' ')) == NULL) {
		t->comp_verb[0] = '\0';
		for (size_t i = 0; i < PALETTE_VERBS; i++) {
			if (strncasecmp(palette_verbs[i].name, text, strlen(text)) == 0 &&
			    strcmp(palette_verbs[i].name, "q") != 0)
				palette_comp_add(t, palette_verbs[i].name, text, 2);
		}
	} else {
		n = (size_t)(sp - text);
		if (n < sizeof verb) {
			memcpy(verb, text, n);
			verb[n] = '\0';
			for (size_t i = 0; i < PALETTE_VERBS; i++) {
				if (strcasecmp(palette_verbs[i].name, verb) == 0)
					v = &palette_verbs[i];
			}
		}
		if (v == NULL) {
			model_message(&t->m, t->now_ms, true, "Tab: no command '%.*s'", (int)n, text);
			return;
		}
		snprintf(t->comp_verb, sizeof t->comp_verb, "%s", v->name);
		while (*sp == ' ')
			sp++;
		palette_comp_args(t, v->arg, sp);
	}
	if (t->comp_count == 0) {
		model_message(&t->m, t->now_ms, true, "Tab: nothing matches '%s'", t->ed.text);
		return;
	}
	palette_comp_show(t, dir < 0 ? t->comp_count - 1 : 0);
}

/* --- History ----------------------------------------------------------------- */

/* Up (dir -1) / Down (1): the older / newer line; past the newest, the one typed. */
static void
palette_history(struct tui *t, int dir)
{
	if (dir < 0 && t->hist_at == 0)
		return;
	if (dir > 0 && t->hist_at >= t->hist_count)
		return;
	if (t->hist_at == t->hist_count) {
		free(t->hist_draft);
		t->hist_draft = xstrdup(t->ed.text);
	}
	t->hist_at = dir < 0 ? t->hist_at - 1 : t->hist_at + 1;
	palette_set(t, t->hist_at < t->hist_count ? t->hist[t->hist_at] :
	    t->hist_draft != NULL ? t->hist_draft : "");
	palette_comp_free(t);
}

/* --- The modal ----------------------------------------------------------------- */

static void
palette_draw(struct tui *t)
{
	struct rect r = { t->rows - 2, 2, 1, t->cols - 3 };
	char hint[512];
	int x = 1;

	draw_fill(r.y, 0, t->cols, A_NORMAL);
	mvaddstr(r.y, 1, ":");
	editor_draw(&t->ed, &r, A_NORMAL, &t->cur_y, &t->cur_x);
	if (t->comp_count < 2 || t->rows < 4)
		return;
	/* The candidates above the line, the one shown reversed. */
	draw_fill(r.y - 1, 0, t->cols, draw_attr(t, ST_BAR));
	snprintf(hint, sizeof hint, " Tab %zu/%zu:", t->comp_at + 1, t->comp_count);
	x += draw_text(r.y - 1, x, t->cols - x, hint, draw_attr(t, ST_BAR));
	for (size_t i = 0; i < t->comp_count && x < t->cols - 2; i++) {
		x += draw_text(r.y - 1, x, t->cols - x, " ", draw_attr(t, ST_BAR));
		x += draw_text(r.y - 1, x, t->cols - x, t->comp[i],
		    i == t->comp_at ? draw_attr(t, ST_SELECTED) : draw_attr(t, ST_BAR));
	}
}

static void
palette_close(struct tui *t)
{
	palette_comp_free(t);
	free(t->hist_draft);
	t->hist_draft = NULL;
	t->hist_at = t->hist_count;
	modal_close(t);
}

static unsigned
palette_key(struct tui *t, int key)
{
	unsigned f;
	char *line;

	if (key == '\t' || key == TUI_KEY(KEY_BTAB)) {
		palette_complete(t, key == '\t' ? 1 : -1);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == TUI_KEY(KEY_UP) || key == TUI_KEY(KEY_DOWN) || key == TUI_CTRL('p') ||
	    key == TUI_CTRL('n')) {
		palette_history(t, key == TUI_KEY(KEY_UP) || key == TUI_CTRL('p') ? -1 : 1);
		return TUI_HANDLED | TUI_REDRAW;
	}
	f = editor_key(&t->ed, key);
	if (f & EDITOR_CANCEL)
		palette_close(t);
	else if (f & EDITOR_DONE) {
		line = xstrdup(t->ed.text);
		palette_close(t);
		palette_run_line(t, line);
		free(line);
		tui_state_save(t);
	}
	return TUI_HANDLED | TUI_REDRAW;
}

/* --- The message history --------------------------------------------------------- */

/* Rows of the history's lines in w columns; with draw, drawn in r from row top on. */
static size_t
messages_rows(struct tui *t, const struct rect *r, size_t top, bool draw)
{
	char line[700];
	size_t row = 0;

	for (size_t i = 0; model_message_at(&t->m, i) != NULL; i++) {
		const struct m_message *e = model_message_at(&t->m, i);
		size_t len, at = 0, next, n;
		char rep[24] = "";

		if (e->repeat > 0)
			snprintf(rep, sizeof rep, " (x%u)", e->repeat + 1);
		snprintf(line, sizeof line, "%s %s %s%s", e->time, e->error ? "!" : " ", e->text,
		    rep);
		len = strlen(line);
		do {
			n = draw_wrap(line + at, len - at, r->w - (at > 0 ? 11 : 0), &next);
			if (next == 0)
				next = n = 1;
			if (draw && row >= top && row - top < (size_t)r->h)
				draw_span(r->y + (int)(row - top), r->x + (at > 0 ? 11 : 0),
				    r->w - (at > 0 ? 11 : 0), line + at, n, NULL,
				    e->error ? draw_attr(t, ST_ERROR) : A_NORMAL, A_NORMAL);
			at += next;
			while (at < len && line[at] == ' ')
				at++;
			row++;
		} while (at < len);
	}
	return row;
}

static void
messages_draw(struct tui *t)
{
	struct rect r = modal_box(t, t->cols - 6 < 110 ? t->cols - 6 : 110, t->rows - 4,
	    "Messages (newest last; j/k PgUp/PgDn scroll, any other key closes)");
	size_t total, body;

	body = r.h > 1 ? (size_t)r.h - 1 : 1;
	r.h = (int)body;
	total = messages_rows(t, &r, 0, false);
	if (total == 0) {
		draw_text(r.y, r.x, r.w, "no messages yet", draw_attr(t, ST_DIM));
		return;
	}
	if (t->messages_top == SIZE_MAX || t->messages_top + body > total)
		t->messages_top = total > body ? total - body : 0;
	messages_rows(t, &r, t->messages_top, true);
	{
		char foot[80];

		snprintf(foot, sizeof foot, "%zu message%s", t->m.messages_count,
		    t->m.messages_count == 1 ? "" : "s");
		draw_text(r.y + r.h, r.x, r.w, foot, draw_attr(t, ST_DIM));
	}
}

static unsigned
messages_key(struct tui *t, int key)
{
	if (t->messages_top == SIZE_MAX)
		t->messages_top = 100000;
	if (!modal_scroll(key, t->rows > 8 ? t->rows - 8 : 1, &t->messages_top))
		modal_close(t);
	return TUI_HANDLED | TUI_REDRAW;
}

/* --- Life ---------------------------------------------------------------------- */

void
palette_init(struct tui *t)
{
	modal_register(MODAL_COMMAND, palette_draw, palette_key);
	modal_register(MODAL_MESSAGES, messages_draw, messages_key);
	tui_state_load(t);
	/* The current project (`taskdeck use`) wins over the last selection;
	 * the selection in it is kept when it was there. */
	if (t->opt.project[0] != '\0' && strcmp(t->opt.project, t->start_project) != 0) {
		snprintf(t->start_project, sizeof t->start_project, "%s", t->opt.project);
		t->start_session[0] = t->start_run[0] = '\0';
	}
	t->hist_at = t->hist_count;
	t->messages_top = SIZE_MAX;
}

void
palette_tick(struct tui *t)
{
	const struct m_plan *p = &t->m.plan;

	if (t->want_approve[0] != '\0' && p->present && p->run_id != NULL &&
	    strcmp(p->run_id, t->want_approve) == 0) {
		t->want_approve[0] = '\0';
		keys_action(t, "approve");
		t->dirty = true;
	}
	/* What the file keeps changes with keys: looked at a few times a second. */
	if (t->now_ms >= t->state_check_ms) {
		t->state_check_ms = t->now_ms + 250;
		tui_state_save(t);
	}
}

void
palette_free(struct tui *t)
{
	tui_state_save(t);
	palette_comp_free(t);
	free(t->hist_draft);
	t->hist_draft = NULL;
	tui_state_free(t);
}
