/* The model's lists: selection and the results of the HTTP reads. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "json.h"
#include "model-internal.h"
#include "timeutil.h"
#include "xalloc.h"


const char *
sel_project_id(const struct model *m)
{
	const struct m_project *p = model_project(m);

	return p ? p->id : NULL;
}

const char *
sel_session_id(const struct model *m)
{
	const struct m_session *s = model_session(m);

	return s ? s->id : NULL;
}

/* Another session: its runs, artifacts, plan and log are read again. */
static unsigned
session_changed(struct model *m)
{
	unsigned need;

	m_runs_clear(&m->runs, &m->run_count);
	memset(&m->runs_cur, 0, sizeof m->runs_cur);
	artifacts_clear(m);
	memset(&m->artifacts_cur, 0, sizeof m->artifacts_cur);
	plan_clear(&m->plan);
	m->plan_top = 0;
	need = log_rescope(m);
	if (model_session(m) != NULL)
		need |= NEED_RUNS | NEED_ARTIFACTS | NEED_PLAN;
	m->dirty = true;
	return need;
}

/* Another project: what showed the old one goes. */
static unsigned
project_changed(struct model *m)
{
	unsigned need;

	sessions_clear(m);
	memset(&m->sessions_cur, 0, sizeof m->sessions_cur);
	m_runs_clear(&m->project_runs, &m->project_run_count);
	need = session_changed(m);
	if (model_project(m) != NULL)
		need |= NEED_SESSIONS | NEED_PROJECT_RUNS;
	return need;
}


void
sel_save(const struct model *m, struct sel_ids *s)
{
	const struct m_run *r = model_run(m);

	s->project = xstrdup_or_null(sel_project_id(m));
	s->session = xstrdup_or_null(sel_session_id(m));
	s->run = xstrdup_or_null(r ? r->id : NULL);
}

static bool
same_id(const char *a, const char *b)
{
	return a == b || mdl_str_eq(a, b);
}

/* What the change since sel_save asks for; frees s. */
unsigned
sel_changes(struct model *m, struct sel_ids *s)
{
	const struct m_run *r = model_run(m);
	unsigned need = NEED_NONE;

	if (!same_id(s->project, sel_project_id(m)))
		need = project_changed(m);
	else if (!same_id(s->session, sel_session_id(m)))
		need = session_changed(m);
	else if (!same_id(s->run, r ? r->id : NULL))
		need = log_rescope(m);
	free(s->project);
	free(s->session);
	free(s->run);
	return need;
}

/* After a list was replaced: the selection on the old id, else clamped. */
static void
cursor_keep(struct m_cursor *cur, size_t idx, size_t count)
{
	if (idx != SIZE_MAX)
		cur->sel = idx;
	else if (cur->sel >= count)
		cur->sel = count ? count - 1 : 0;
	if (cur->top > cur->sel)
		cur->top = cur->sel;
}

void
model_cursor_fit(struct m_cursor *cur, size_t count, size_t rows)
{
	if (rows == 0)
		rows = 1;
	if (count == 0) {
		cur->sel = cur->top = 0;
		return;
	}
	if (cur->sel >= count)
		cur->sel = count - 1;
	if (cur->sel < cur->top)
		cur->top = cur->sel;
	else if (cur->sel >= cur->top + rows)
		cur->top = cur->sel - rows + 1;
	if (cur->top + rows > count)
		cur->top = count > rows ? count - rows : 0;
}

/* Moves a list's selection by delta rows (LONG_MIN, LONG_MAX: first, last). */
static void
cursor_move(struct m_cursor *cur, size_t count, long delta, size_t rows)
{
	if (count == 0)
		return;
	if (delta == LONG_MIN)
		cur->sel = 0;
	else if (delta == LONG_MAX)
		cur->sel = count - 1;
	else if (delta < 0)
		cur->sel = (size_t)-delta > cur->sel ? 0 : cur->sel - (size_t)-delta;
	else
		cur->sel = cur->sel + (size_t)delta >= count ? count - 1 : cur->sel + (size_t)delta;
	model_cursor_fit(cur, count, rows);
}

/* True when hay holds needle, ASCII letters folded. */
static bool
list_contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (const char *h = hay != NULL ? hay : ""; *h != '\0'; h++) {
		size_t k = 0;

		while (k < n && h[k] != '\0' &&
		    tolower((unsigned char)h[k]) == tolower((unsigned char)needle[k]))
			k++;
		if (k == n)
			return true;
	}
	return n == 0;
}

enum list_slot
model_list_slot(const struct model *m, enum pane p)
{
	if ((unsigned)p <= PANE_RUNS)
		return (enum list_slot)p;
	if (p != PANE_RIGHT)
		return LIST_NONE;
	return m->right == RIGHT_ARTIFACTS ? LIST_ARTIFACTS :
	    m->right == RIGHT_CONNECTORS ? LIST_CONNECTORS : LIST_NONE;
}

const char *
model_list_query(const struct model *m, enum pane p)
{
	enum list_slot k = model_list_slot(m, p);

	return k != LIST_NONE ? m->list_filter[k] : "";
}

size_t
model_list_count(const struct model *m, enum pane p)
{
	switch (model_list_slot(m, p)) {
	case LIST_PROJECTS:
		return m->project_count;
	case LIST_SESSIONS:
		return m->session_count;
	case LIST_RUNS:
		return m->run_count;
	case LIST_ARTIFACTS:
		return m->artifact_count;
	case LIST_CONNECTORS:
		return m->connector_count;
	default:
		return 0;
	}
}

/* The cursor of pane p's list, NULL for none. */
static struct m_cursor *
list_cursor(struct model *m, enum pane p)
{
	struct m_cursor *curs[] = { &m->projects_cur, &m->sessions_cur, &m->runs_cur,
	    &m->artifacts_cur, &m->connectors_cur, NULL };

	return curs[model_list_slot(m, p)];
}

bool
model_list_match(const struct model *m, enum pane p, size_t i)
{
	enum list_slot k = model_list_slot(m, p);
	const char *q;

	if (k == LIST_NONE || (q = m->list_filter[k])[0] == '\0')
		return true;
	if (i >= model_list_count(m, p))
		return false;
	switch (k) {
	case LIST_PROJECTS:
		return list_contains(m->projects[i].name, q);
	case LIST_SESSIONS:
		return list_contains(m->sessions[i].title, q) ||
		    list_contains(m->sessions[i].id, q);
	case LIST_RUNS:
		return list_contains(m->runs[i].prompt, q) ||
		    list_contains(m->runs[i].status, q) || list_contains(m->runs[i].id, q);
	case LIST_ARTIFACTS:
		return list_contains(m->artifacts[i].name, q) ||
		    list_contains(m->artifacts[i].path, q) ||
		    list_contains(m->artifacts[i].id, q) ||
		    list_contains(m->artifacts[i].run_id, q);
	default:
		return list_contains(m->connectors[i].name, q) ||
		    list_contains(m->connectors[i].id, q) ||
		    list_contains(m->connectors[i].kind, q) ||
		    list_contains(m->connectors[i].transport, q) ||
		    list_contains(m->connectors[i].enabled ? "enabled" : "disabled", q);
	}
}

/* Moves a filtered list's selection over matching rows only. */
static void
cursor_move_filtered(const struct model *m, enum pane p, struct m_cursor *cur, size_t count,
    long delta)
{
	size_t i = cur->sel, j;
	long steps = delta < 0 ? (delta == LONG_MIN ? LONG_MAX : -delta) : delta;

	if (delta == LONG_MIN || delta == LONG_MAX) {
		for (j = 0; j < count; j++) {
			size_t k = delta == LONG_MIN ? j : count - 1 - j;

			if (model_list_match(m, p, k)) {
				cur->sel = k;
				return;
			}
		}
		return;
	}
	while (steps-- > 0) {
		for (j = i; delta < 0 ? j-- > 0 : ++j < count;) {
			if (model_list_match(m, p, j))
				break;
		}
		if (j >= count)
			break;
		i = j;
	}
	cur->sel = i;
}

unsigned
model_list_filter(struct model *m, enum pane p, const char *query)
{
	enum list_slot k = model_list_slot(m, p);
	struct m_cursor *cur = list_cursor(m, p);
	size_t count = model_list_count(m, p);
	struct sel_ids s;

	if (k == LIST_NONE)
		return NEED_NONE;
	snprintf(m->list_filter[k], sizeof m->list_filter[k], "%s", query != NULL ? query : "");
	m->dirty = true;
	if (count == 0 || model_list_match(m, p, cur->sel))
		return NEED_NONE;
	sel_save(m, &s);
	cursor_move_filtered(m, p, cur, count, LONG_MIN);
	return sel_changes(m, &s);
}

unsigned
model_move(struct model *m, long delta, size_t page_rows)
{
	struct sel_ids s;

	m->dirty = true;
	switch (m->focus) {
	case PANE_PROJECTS:
	case PANE_SESSIONS:
	case PANE_RUNS:
		sel_save(m, &s);
		if (m->list_filter[m->focus][0] != '\0') {
			cursor_move_filtered(m, m->focus, list_cursor(m, m->focus),
			    model_list_count(m, m->focus), delta);
		} else if (m->focus == PANE_PROJECTS)
			cursor_move(&m->projects_cur, m->project_count, delta, page_rows);
		else if (m->focus == PANE_SESSIONS)
			cursor_move(&m->sessions_cur, m->session_count, delta, page_rows);
		else
			cursor_move(&m->runs_cur, m->run_count, delta, page_rows);
		return sel_changes(m, &s);
	default:
		break;
	}
	if (m->right == RIGHT_LOG)
		log_scroll(m, delta, page_rows);
	else if (model_list_slot(m, PANE_RIGHT) != LIST_NONE &&
	    model_list_query(m, PANE_RIGHT)[0] != '\0')
		cursor_move_filtered(m, PANE_RIGHT, list_cursor(m, PANE_RIGHT),
		    model_list_count(m, PANE_RIGHT), delta);
	else if (m->right == RIGHT_ARTIFACTS)
		cursor_move(&m->artifacts_cur, m->artifact_count, delta, page_rows);
	else if (m->right == RIGHT_CONNECTORS)
		cursor_move(&m->connectors_cur, m->connector_count, delta, page_rows);
	else if (m->right == RIGHT_CHANGES) {
		/* One row: the next file; a page: the diff scrolls. */
		if (delta == 1 || delta == -1)
			cursor_move(&m->changes.cur, m->changes.file_count, delta, page_rows);
		else
			model_diff_scroll(m, delta, page_rows);
	} else if (delta == LONG_MIN)
		m->plan_top = 0;
	else if (delta == LONG_MAX || (delta > 0 && m->plan_top + (size_t)delta > m->plan.step_count))
		m->plan_top = m->plan.step_count;
	else if (delta < 0)
		m->plan_top = (size_t)-delta > m->plan_top ? 0 : m->plan_top - (size_t)-delta;
	else
		m->plan_top += (size_t)delta;
	return NEED_NONE;
}

unsigned
model_select(struct model *m, enum pane pane, size_t row)
{
	const size_t counts[] = { m->project_count, m->session_count, m->run_count };
	struct m_cursor *curs[] = { &m->projects_cur, &m->sessions_cur, &m->runs_cur };
	struct sel_ids s;

	if (pane == PANE_RIGHT) {
		model_focus(m, pane);
		if (m->right == RIGHT_ARTIFACTS && row < m->artifact_count)
			m->artifacts_cur.sel = row;
		if (m->right == RIGHT_CONNECTORS && row < m->connector_count)
			m->connectors_cur.sel = row;
		if (m->right == RIGHT_CHANGES && row < m->changes.file_count)
			m->changes.cur.sel = row;
		return NEED_NONE;
	}
	if ((unsigned)pane >= sizeof counts / sizeof counts[0])
		return NEED_NONE;
	model_focus(m, pane);
	if (row >= counts[pane])
		return NEED_NONE;
	sel_save(m, &s);
	curs[pane]->sel = row;
	return sel_changes(m, &s);
}

void
model_focus(struct model *m, enum pane pane)
{
	if ((unsigned)pane < PANE__COUNT)
		m->focus = pane;
	m->dirty = true;
}

void
model_focus_next(struct model *m, int dir)
{
	m->focus = (enum pane)(((int)m->focus + (dir < 0 ? PANE__COUNT - 1 : 1)) % PANE__COUNT);
	m->dirty = true;
}

void
model_show_right(struct model *m, enum right_view v)
{
	m->right = v;
	m->focus = PANE_RIGHT;
	m->dirty = true;
}

/* --- HTTP results ---------------------------------------------------------- */

static bool
run_has_prompt(const struct model *m, const char *run_id)
{
	for (size_t i = 0; i < m->permission_count; i++) {
		if (mdl_str_eq(m->permissions[i].run_id, run_id))
			return true;
	}
	return false;
}

/* permission_pending of every run from the pending prompts. */
void
runs_mark_prompts(struct model *m)
{
	for (size_t i = 0; i < m->run_count; i++)
		m->runs[i].permission_pending = run_has_prompt(m, m->runs[i].id);
	for (size_t i = 0; i < m->project_run_count; i++)
		m->project_runs[i].permission_pending = run_has_prompt(m, m->project_runs[i].id);
}

/* A selection its list's filter hides moves to the first match (a filter
 * kept from the last time, set before the list came). */
static void
list_filter_fit(struct model *m, enum pane p)
{
	size_t count = model_list_count(m, p);

	if (count > 0 && model_list_query(m, p)[0] != '\0' &&
	    !model_list_match(m, p, list_cursor(m, p)->sel))
		cursor_move_filtered(m, p, list_cursor(m, p), count, LONG_MIN);
}

unsigned
model_set_projects(struct model *m, const struct td_project_list *l)
{
	struct sel_ids s;

	sel_save(m, &s);
	projects_clear(m);
	if (l != NULL && l->count > 0) {
		m->projects = xcalloc(l->count, sizeof *m->projects);
		for (size_t i = 0; i < l->count; i++) {
			m->projects[i].id = xstrdup_or_null(l->items[i].id);
			m->projects[i].name = xstrdup_or_null(l->items[i].name);
			m->projects[i].archived = l->items[i].archived_at != NULL;
		}
		m->project_count = l->count;
	}
	cursor_keep(&m->projects_cur, mdl_index_of(m->projects, m->project_count,
	    sizeof *m->projects, s.project), m->project_count);
	lists_sort(m);
	list_filter_fit(m, PANE_PROJECTS);
	m->dirty = true;
	return sel_changes(m, &s);
}

unsigned
model_set_sessions(struct model *m, const char *for_project, const struct td_session_list *l)
{
	struct sel_ids s;

	if (!mdl_str_eq(for_project, sel_project_id(m)))
		return NEED_NONE;
	sel_save(m, &s);
	sessions_clear(m);
	if (l != NULL && l->count > 0) {
		m->sessions = xcalloc(l->count, sizeof *m->sessions);
		for (size_t i = 0; i < l->count; i++) {
			const struct td_session *t = &l->items[i];
			struct m_session *d = &m->sessions[i];

			d->id = xstrdup_or_null(t->id);
			d->project_id = xstrdup_or_null(t->project_id);
			d->title = xstrdup_or_null(t->title);
			d->last_run_status = xstrdup_or_null(t->last_run.status);
			d->updated_at = xstrdup_or_null(t->updated_at);
			d->cwd = xstrdup_or_null(t->cwd);
			d->archived = t->archived_at != NULL;
		}
		m->session_count = l->count;
	}
	cursor_keep(&m->sessions_cur, mdl_index_of(m->sessions, m->session_count,
	    sizeof *m->sessions, s.session), m->session_count);
	lists_sort(m);
	list_filter_fit(m, PANE_SESSIONS);
	m->dirty = true;
	return sel_changes(m, &s);
}

/* Replaces a run array by the list's runs. */
static void
runs_from_list(struct m_run **runs, size_t *count, const struct td_run_list *l)
{
	m_runs_clear(runs, count);
	if (l == NULL || l->count == 0)
		return;
	*runs = xcalloc(l->count, sizeof **runs);
	for (size_t i = 0; i < l->count; i++)
		m_run_fill(&(*runs)[i], &l->items[i]);
	*count = l->count;
}

unsigned
model_set_runs(struct model *m, const char *for_session, const struct td_run_list *l)
{
	struct sel_ids s;

	if (!mdl_str_eq(for_session, sel_session_id(m)))
		return NEED_NONE;
	sel_save(m, &s);
	runs_from_list(&m->runs, &m->run_count, l);
	cursor_keep(&m->runs_cur, mdl_index_of(m->runs, m->run_count, sizeof *m->runs, s.run),
	    m->run_count);
	runs_mark_prompts(m);
	lists_sort(m);
	list_filter_fit(m, PANE_RUNS);
	m->dirty = true;
	return sel_changes(m, &s);
}

void
model_set_project_runs(struct model *m, const char *for_project, const struct td_run_list *l)
{
	if (!mdl_str_eq(for_project, sel_project_id(m)))
		return;
	runs_from_list(&m->project_runs, &m->project_run_count, l);
	runs_mark_prompts(m);
	m->dirty = true;
}

void
model_set_artifacts(struct model *m, const char *for_session, const struct td_artifact_list *l)
{
	char *sel;

	if (!mdl_str_eq(for_session, sel_session_id(m)))
		return;
	sel = xstrdup_or_null(model_artifact(m) ? model_artifact(m)->id : NULL);
	artifacts_clear(m);
	if (l != NULL && l->count > 0) {
		m->artifacts = xcalloc(l->count, sizeof *m->artifacts);
		for (size_t i = 0; i < l->count; i++) {
			const struct td_artifact *t = &l->items[i];
			struct m_artifact *a = &m->artifacts[i];

			a->id = xstrdup_or_null(t->id);
			a->name = xstrdup_or_null(t->name);
			a->path = xstrdup_or_null(t->path);
			a->version = xstrdup_or_null(t->version);
			a->size = t->size;
			a->run_id = xstrdup_or_null(t->run_id);
			a->created_at = xstrdup_or_null(t->created_at);
		}
		m->artifact_count = l->count;
	}
	cursor_keep(&m->artifacts_cur, mdl_index_of(m->artifacts, m->artifact_count,
	    sizeof *m->artifacts, sel), m->artifact_count);
	free(sel);
	m->dirty = true;
}

void
model_set_plan(struct model *m, const char *for_session, const struct td_plan *plan)
{
	struct m_plan *p = &m->plan;

	if (!mdl_str_eq(for_session, sel_session_id(m)))
		return;
	plan_clear(p);
	m->dirty = true;
	if (plan == NULL)
		return;
	p->present = true;
	p->session_id = xstrdup_or_null(plan->session_id);
	p->run_id = xstrdup_or_null(plan->run_id);
	p->version = plan->version;
	p->revision = plan->revision;
	p->status = xstrdup_or_null(plan->status);
	p->summary = xstrdup_or_null(plan->summary);
	p->feedback = xstrdup_or_null(plan->feedback);
	if (plan->step_count > 0)
		p->steps = xcalloc(plan->step_count, sizeof *p->steps);
	for (size_t i = 0; i < plan->step_count; i++) {
		p->steps[i].id = xstrdup_or_null(plan->steps[i].id);
		p->steps[i].title = xstrdup_or_null(plan->steps[i].title);
		p->steps[i].status = xstrdup_or_null(plan->steps[i].status);
	}
	p->step_count = plan->step_count;
	if (m->plan_top > p->step_count)
		m->plan_top = p->step_count;
}

static bool
permission_known(const struct model *m, const char *id)
{
	return mdl_index_of(m->permissions, m->permission_count, sizeof *m->permissions, id) !=
	    SIZE_MAX;
}

void
model_set_permissions(struct model *m, const struct td_permission_list *l)
{
	struct m_permission *items = NULL;
	size_t n = 0;
	bool fresh = false;

	if (l != NULL && l->count > 0)
		items = xcalloc(l->count, sizeof *items);
	/* The list is newest first; the model keeps them oldest first. */
	for (size_t i = l ? l->count : 0; i-- > 0;) {
		const struct td_permission *t = &l->items[i];

		if (t->status != NULL && strcmp(t->status, "pending") != 0)
			continue;
		fresh = fresh || !permission_known(m, t->id);
		items[n].id = xstrdup_or_null(t->id);
		items[n].run_id = xstrdup_or_null(t->run_id);
		items[n].session_id = xstrdup_or_null(t->session_id);
		items[n].project_id = xstrdup_or_null(t->project_id);
		items[n].tool = xstrdup_or_null(t->tool);
		items[n].summary = xstrdup_or_null(t->summary);
		items[n].form = model_form_fields(t->input_json);
		items[n].form_values = model_form_values(t->input_json);
		n++;
	}
	permissions_clear(m);
	m->permissions = items;
	m->permission_count = n;
	if (fresh)
		m->permission_hidden = false;
	runs_mark_prompts(m);
	lists_sort(m);
	m->dirty = true;
}

void
model_set_doctor(struct model *m, const struct td_doctor_report *r)
{
	if (r == NULL)
		return;
	mdl_set_str(&m->service_version, r->version);
	m->service_ready = r->ready;
	m->dirty = true;
}

/* The run id in the list, inserted at the front (newest first) when missing and insert is set. */
struct m_run *
runs_upsert(struct m_run **runs, size_t *count, struct m_cursor *cur, const char *id,
    bool insert, bool *inserted)
{
	size_t i = mdl_index_of(*runs, *count, sizeof **runs, id);

	*inserted = false;
	if (i != SIZE_MAX)
		return &(*runs)[i];
	if (!insert)
		return NULL;
	*runs = mdl_insert_front(*runs, *count, sizeof **runs);
	if (cur != NULL && *count > 0)
		cur->sel++;
	(*count)++;
	(*runs)[0].id = xstrdup(id);
	*inserted = true;
	return &(*runs)[0];
}

unsigned
model_put_run(struct model *m, const struct td_run *run)
{
	struct sel_ids s;
	struct m_run *r;
	bool inserted;

	if (run == NULL || run->id == NULL)
		return NEED_NONE;
	sel_save(m, &s);
	r = runs_upsert(&m->runs, &m->run_count, &m->runs_cur, run->id,
	    mdl_str_eq(run->session_id, sel_session_id(m)), &inserted);
	if (r != NULL)
		m_run_fill(r, run);
	r = runs_upsert(&m->project_runs, &m->project_run_count, NULL, run->id,
	    mdl_str_eq(run->project_id, sel_project_id(m)), &inserted);
	if (r != NULL)
		m_run_fill(r, run);
	runs_mark_prompts(m);
	lists_sort(m);
	m->dirty = true;
	return sel_changes(m, &s);
}

/* --- Sort ('s' in Projects, Sessions, Runs) -------------------------------- */

struct sort_key {
	int mode;
	int rank;		/* SORT_STATUS: lower first */
	const char *name;	/* SORT_NAME */
	const char *id;		/* ties (and SORT_NEWEST): higher ids, newer, first */
	size_t idx;
};

static int
sort_cmp(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;
	int c = 0;

	if (x->mode == SORT_STATUS)
		c = (x->rank > y->rank) - (x->rank < y->rank);
	else if (x->mode == SORT_NAME)
		c = strcasecmp(x->name != NULL ? x->name : "", y->name != NULL ? y->name : "");
	if (c == 0)
		c = -strcmp(x->id != NULL ? x->id : "", y->id != NULL ? y->id : "");
	if (c == 0)
		c = (x->idx > y->idx) - (x->idx < y->idx);
	return c;
}

/* Needs you, running, queued, failed, cancelled, completed, none. */
static int
status_order(const char *status, bool needs_you)
{
	static const char *const order[] = { "running", "queued", "failed", "cancelled",
	    "completed" };

	if (needs_you)
		return 0;
	for (size_t i = 0; status != NULL && i < sizeof order / sizeof order[0]; i++) {
		if (strcmp(status, order[i]) == 0)
			return 1 + (int)i;
	}
	return 6;
}

/* Reorders count items of size bytes as keys (filled) say; cur->sel follows its item. */
static void
sort_items(void **items, size_t count, size_t size, struct sort_key *keys,
    struct m_cursor *cur)
{
	char *old = *items, *moved;
	bool same = true, found = false;

	if (count < 2)
		return;
	qsort(keys, count, sizeof *keys, sort_cmp);
	for (size_t i = 0; i < count && same; i++)
		same = keys[i].idx == i;
	if (same)
		return;
	moved = xmalloc(count * size);
	for (size_t i = 0; i < count; i++) {
		memcpy(moved + i * size, old + keys[i].idx * size, size);
		if (!found && keys[i].idx == cur->sel) {
			cur->sel = i;
			found = true;	/* later items must not match the new index */
		}
	}
	free(old);
	*items = moved;
}

/*
 * Sorts one list.  Newest first is the service's order (ids grow with time)
 * and the order events insert in, so a list in that order is left as it
 * is, unless force (coming back to it from another order).
 */
static void
list_sort(struct model *m, enum pane p, bool force)
{
	size_t n = model_list_count(m, p);
	struct sort_key *keys;
	int mode = m->sort[p];

	if (n < 2 || (mode == SORT_NEWEST && !force))
		return;
	keys = xcalloc(n, sizeof *keys);
	for (size_t i = 0; i < n; i++) {
		if (p == PANE_PROJECTS) {
			const struct m_project *x = &m->projects[i];

			keys[i] = (struct sort_key){ mode,
			    status_order(NULL, model_attention_in(m, x->id, NULL)), x->name, x->id,
			    i };
		} else if (p == PANE_SESSIONS) {
			const struct m_session *x = &m->sessions[i];

			keys[i] = (struct sort_key){ mode, status_order(x->last_run_status,
			    model_attention_in(m, x->project_id, x->id)), x->title, x->id, i };
		} else {
			const struct m_run *x = &m->runs[i];

			keys[i] = (struct sort_key){ mode, status_order(x->status,
			    x->attention != NULL || x->permission_pending), x->prompt, x->id, i };
		}
	}
	if (p == PANE_PROJECTS)
		sort_items((void **)&m->projects, n, sizeof *m->projects, keys, &m->projects_cur);
	else if (p == PANE_SESSIONS)
		sort_items((void **)&m->sessions, n, sizeof *m->sessions, keys, &m->sessions_cur);
	else
		sort_items((void **)&m->runs, n, sizeof *m->runs, keys, &m->runs_cur);
	free(keys);
}

void
lists_sort(struct model *m)
{
	for (int p = PANE_PROJECTS; p <= PANE_RUNS; p++)
		list_sort(m, (enum pane)p, false);
}

void
model_list_sort_next(struct model *m, enum pane p)
{
	if ((unsigned)p > PANE_RUNS)
		return;
	m->sort[p] = (m->sort[p] + 1) % SORT__COUNT;
	list_sort(m, p, true);
	m->dirty = true;
}

const char *
model_sort_name(int sort)
{
	static const char *const names[] = { "newest", "status", "name" };

	return sort >= 0 && sort < SORT__COUNT ? names[sort] : "?";
}
