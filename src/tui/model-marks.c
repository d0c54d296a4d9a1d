/* Marks: runs chosen for a bulk action (cancel, approve, rerun), kept by id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model-internal.h"
#include "xalloc.h"

/* At most this many runs are marked at once (a bound on what one key adds). */
#define MODEL_MARKS_MAX 1000

static size_t
mark_index(const struct model *m, const char *run_id)
{
	for (size_t i = 0; run_id != NULL && i < m->mark_count; i++) {
		if (strcmp(m->marks[i].id, run_id) == 0)
			return i;
	}
	return SIZE_MAX;
}

bool
model_marked(const struct model *m, const char *run_id)
{
	return mark_index(m, run_id) != SIZE_MAX;
}

static bool
mark_add(struct model *m, const struct m_run *r)
{
	struct m_mark *k;

	if (r->id == NULL || model_marked(m, r->id) || m->mark_count >= MODEL_MARKS_MAX)
		return false;
	m->marks = xrealloc(m->marks, (m->mark_count + 1) * sizeof *m->marks);
	k = &m->marks[m->mark_count++];
	k->id = xstrdup(r->id);
	k->session_id = xstrdup_or_null(r->session_id);
	k->prompt = xstrdup_or_null(r->prompt);
	m->dirty = true;
	return true;
}

bool
model_mark_toggle(struct model *m)
{
	const struct m_run *r = model_run(m);
	size_t i;

	if (r == NULL)
		return false;
	if ((i = mark_index(m, r->id)) == SIZE_MAX)
		return mark_add(m, r);
	free(m->marks[i].id);
	free(m->marks[i].session_id);
	free(m->marks[i].prompt);
	memmove(&m->marks[i], &m->marks[i + 1], (m->mark_count - i - 1) * sizeof *m->marks);
	m->mark_count--;
	m->dirty = true;
	return true;
}

bool
model_mark_visible(struct model *m)
{
	bool changed = false;

	for (size_t i = 0; i < m->run_count; i++) {
		if (model_list_match(m, PANE_RUNS, i))
			changed |= mark_add(m, &m->runs[i]);
	}
	return changed;
}

bool
model_marks_clear(struct model *m)
{
	bool had = m->mark_count > 0;

	for (size_t i = 0; i < m->mark_count; i++) {
		free(m->marks[i].id);
		free(m->marks[i].session_id);
		free(m->marks[i].prompt);
	}
	free(m->marks);
	m->marks = NULL;
	m->mark_count = 0;
	if (had)
		m->dirty = true;
	return had;
}
