/*
 * Attention across every project: the runs waiting for a plan decision
 * (run.attention events, and the running runs read on each refresh) and
 * those with a pending permission prompt (m->permissions, already global).
 * Pure state: no curses, no network.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tui/model.h"
#include "xalloc.h"

static bool
att_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static char *
att_dup(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

static void
att_clear(struct m_attention *a)
{
	free(a->run_id);
	free(a->session_id);
	free(a->project_id);
	memset(a, 0, sizeof *a);
}

void
model_attention_free(struct model *m)
{
	for (size_t i = 0; i < m->attention_count; i++)
		att_clear(&m->attention[i]);
	free(m->attention);
	m->attention = NULL;
	m->attention_count = 0;
}

/* Index of run_id among the plan waits, or SIZE_MAX. */
static size_t
att_find(const struct model *m, const char *run_id)
{
	for (size_t i = 0; i < m->attention_count; i++) {
		if (att_eq(m->attention[i].run_id, run_id))
			return i;
	}
	return SIZE_MAX;
}

void
model_attention_event(struct model *m, const char *run_id, const char *session_id,
    const char *project_id, bool waits)
{
	size_t i;
	struct m_attention *a;

	if (run_id == NULL)
		return;
	i = att_find(m, run_id);
	if (!waits) {
		if (i == SIZE_MAX)
			return;
		att_clear(&m->attention[i]);
		memmove(&m->attention[i], &m->attention[i + 1],
		    (m->attention_count - i - 1) * sizeof *m->attention);
		m->attention_count--;
		m->dirty = true;
		return;
	}
	if (i != SIZE_MAX)
		return;
	if (m->attention_count >= MODEL_ATTENTION_MAX)
		return;
	m->attention = xrealloc(m->attention, (m->attention_count + 1) * sizeof *m->attention);
	a = &m->attention[m->attention_count++];
	a->run_id = xstrdup(run_id);
	a->session_id = att_dup(session_id);
	a->project_id = att_dup(project_id);
	m->attention_seen++;
	m->dirty = true;
}

void
model_set_attention(struct model *m, const struct td_run_list *runs)
{
	unsigned long seen = m->attention_seen, fresh = 0;

	if (runs == NULL)
		return;
	for (size_t i = 0; i < runs->count; i++) {
		const struct td_run *r = &runs->items[i];

		if (r->attention.kind != NULL && att_eq(r->status, "running") &&
		    att_find(m, r->id) == SIZE_MAX)
			fresh++;
	}
	model_attention_free(m);
	for (size_t i = 0; i < runs->count; i++) {
		const struct td_run *r = &runs->items[i];

		if (r->attention.kind != NULL && att_eq(r->status, "running"))
			model_attention_event(m, r->id, r->session_id, r->project_id, true);
	}
	/* Only a run not known before is news (for the bell and the title). */
	m->attention_seen = seen + fresh;
	m->dirty = true;
}

/* The i-th run needing attention: plan waits first, then prompts of other runs. */
static bool
att_at(const struct model *m, size_t i, struct m_attention *out, bool *plan)
{
	if (i < m->attention_count) {
		*out = m->attention[i];
		*plan = true;
		return true;
	}
	i -= m->attention_count;
	for (size_t k = 0; k < m->permission_count; k++) {
		const struct m_permission *p = &m->permissions[k];
		bool dup = att_find(m, p->run_id) != SIZE_MAX;

		for (size_t j = 0; !dup && j < k; j++)
			dup = att_eq(m->permissions[j].run_id, p->run_id);
		if (dup)
			continue;
		if (i-- == 0) {
			*out = (struct m_attention){ .run_id = p->run_id,
			    .session_id = p->session_id, .project_id = p->project_id };
			*plan = false;
			return true;
		}
	}
	return false;
}

size_t
model_attention_count(const struct model *m)
{
	struct m_attention a;
	size_t n = 0;
	bool plan;

	while (att_at(m, n, &a, &plan))
		n++;
	return n;
}

bool
model_attention_in(const struct model *m, const char *project_id, const char *session_id)
{
	struct m_attention a;
	bool plan;

	for (size_t i = 0; att_at(m, i, &a, &plan); i++) {
		if ((project_id == NULL || att_eq(a.project_id, project_id)) &&
		    (session_id == NULL || att_eq(a.session_id, session_id)))
			return true;
	}
	return false;
}

bool
model_attention_next(const struct model *m, const char *after_run, struct m_attention *out,
    bool *plan)
{
	size_t n = model_attention_count(m), start = 0;
	struct m_attention a;
	bool p;

	if (n == 0)
		return false;
	for (size_t i = 0; after_run != NULL && att_at(m, i, &a, &p); i++) {
		if (att_eq(a.run_id, after_run)) {
			start = (i + 1) % n;
			break;
		}
	}
	return att_at(m, start, out, plan);
}
