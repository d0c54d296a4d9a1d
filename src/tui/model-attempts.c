/*
 * The model's attempt group: which runs are attempts of which group (from the
 * attempts.* events) and the group of the selected run, as td_get_attempts read it.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "model-internal.h"
#include "xalloc.h"

/* At most this many runs are remembered as attempts (the oldest go first). */
#define ATTEMPTS_LINKS_MAX 512

static void
attempts_items_clear(struct m_attempts *a)
{
	for (size_t i = 0; i < a->count; i++) {
		free(a->items[i].run_id);
		free(a->items[i].model);
		free(a->items[i].run_status);
		free(a->items[i].state);
		free(a->items[i].check);
	}
	free(a->items);
	a->items = NULL;
	a->count = 0;
	free(a->status);
	free(a->cwd);
	free(a->applied_run);
	a->status = a->cwd = a->applied_run = NULL;
}

static void
attempts_cmp_clear(struct m_attempts *a)
{
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < a->cmp[k].count; i++)
			free(a->cmp[k].lines[i]);
		free(a->cmp[k].lines);
		free(a->cmp[k].run);
		a->cmp[k].lines = NULL;
		a->cmp[k].run = NULL;
		a->cmp[k].count = 0;
	}
}

void
model_attempts_free(struct model *m)
{
	struct m_attempts *a = &m->attempts;

	attempts_items_clear(a);
	attempts_cmp_clear(a);
	for (size_t i = 0; i < a->link_count; i++) {
		free(a->links[i].run_id);
		free(a->links[i].group_id);
	}
	free(a->links);
	free(a->group_id);
	memset(a, 0, sizeof *a);
}

static const char *
attempts_group_of(const struct m_attempts *a, const char *run_id)
{
	for (size_t i = 0; run_id != NULL && i < a->link_count; i++) {
		if (strcmp(a->links[i].run_id, run_id) == 0)
			return a->links[i].group_id;
	}
	return NULL;
}

static void
attempts_link(struct m_attempts *a, const char *run_id, const char *group_id)
{
	if (attempts_group_of(a, run_id) != NULL)
		return;
	if (a->link_count == ATTEMPTS_LINKS_MAX) {
		free(a->links[0].run_id);
		free(a->links[0].group_id);
		memmove(a->links, a->links + 1, (a->link_count - 1) * sizeof *a->links);
		a->link_count--;
	}
	a->links = xrealloc(a->links, (a->link_count + 1) * sizeof *a->links);
	a->links[a->link_count].run_id = xstrdup(run_id);
	a->links[a->link_count].group_id = xstrdup(group_id);
	a->link_count++;
}

const char *
model_attempts_want(const struct model *m)
{
	const struct m_run *r = model_run(m);

	return m->right == RIGHT_CHANGES && r != NULL ?
	    attempts_group_of(&m->attempts, r->id) : NULL;
}

void
model_attempts_ask(struct model *m, const char *group_id)
{
	struct m_attempts *a = &m->attempts;

	if (!mdl_str_eq(a->group_id, group_id)) {
		attempts_items_clear(a);
		attempts_cmp_clear(a);
		mdl_set_str(&a->group_id, group_id);
	}
	a->loading = group_id != NULL;
	m->dirty = true;
}

void
model_set_attempts(struct model *m, const char *group_id, const struct td_attempt_group *g)
{
	struct m_attempts *a = &m->attempts;

	if (!mdl_str_eq(a->group_id, group_id))
		return;		/* another group is shown by now */
	a->loading = false;
	m->dirty = true;
	if (g == NULL)
		return;
	attempts_items_clear(a);
	a->status = xstrdup_or_null(g->status);
	a->cwd = xstrdup_or_null(g->cwd);
	a->applied_run = xstrdup_or_null(g->applied_run);
	a->items = xcalloc(g->count + 1, sizeof *a->items);
	for (size_t i = 0; i < g->count; i++) {
		const struct td_attempt *t = &g->attempts[i];
		struct m_attempt *it = &a->items[i];

		it->index = t->index;
		it->run_id = xstrdup_or_null(t->run_id);
		it->model = xstrdup_or_null(t->model);
		it->run_status = xstrdup_or_null(t->run_status);
		it->state = xstrdup_or_null(t->state);
		it->measured = t->measured;
		it->files = t->files;
		it->additions = t->additions;
		it->deletions = t->deletions;
		it->check = xstrdup_or_null(t->check_status);
		if (t->run_id != NULL && g->id != NULL)
			attempts_link(a, t->run_id, g->id);
	}
	a->count = g->count;
}

unsigned
model_attempts_event(struct model *m, const char *data_json)
{
	cJSON *data = mdl_data_parse(data_json);
	const char *id = json_get_string(data, "id");
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(data, "attempts"), *it;
	unsigned need = NEED_NONE;

	if (id != NULL && cJSON_IsArray(list)) {
		cJSON_ArrayForEach(it, list) {
			const char *run = json_get_string(it, "runId");

			if (run != NULL)
				attempts_link(&m->attempts, run, id);
		}
		/* The selected run may just have become an attempt, or its group changed. */
		need = NEED_ATTEMPTS;
		m->dirty = true;
	}
	cJSON_Delete(data);
	return need;
}

bool
model_is_attempt(const struct model *m, const char *run_id)
{
	return attempts_group_of(&m->attempts, run_id) != NULL;
}

const struct m_attempt *
model_attempt(const struct model *m, const char *run_id)
{
	for (size_t i = 0; run_id != NULL && i < m->attempts.count; i++) {
		if (mdl_str_eq(m->attempts.items[i].run_id, run_id))
			return &m->attempts.items[i];
	}
	return NULL;
}

const char *
model_attempts_compare(struct model *m)
{
	struct m_attempts *a = &m->attempts;
	const struct m_run *r = model_run(m);
	size_t at = a->count;

	m->dirty = true;
	if (a->cmp[0].run != NULL || r == NULL) {
		attempts_cmp_clear(a);
		return NULL;
	}
	for (size_t i = 0; i < a->count; i++) {
		if (mdl_str_eq(a->items[i].run_id, r->id))
			at = i;
	}
	if (at == a->count || a->count < 2 || a->items[(at + 1) % a->count].run_id == NULL)
		return NULL;
	a->cmp[0].run = xstrdup(r->id);
	a->cmp[1].run = xstrdup(a->items[(at + 1) % a->count].run_id);
	return a->cmp[1].run;
}

void
model_set_attempt_diff(struct model *m, const char *run_id, const char *text)
{
	struct m_attempts *a = &m->attempts;

	for (int k = 0; k < 2; k++) {
		if (!mdl_str_eq(a->cmp[k].run, run_id) || a->cmp[k].lines != NULL)
			continue;
		if (text == NULL)
			text = "(the diff could not be read)";
		a->cmp[k].lines = xcalloc(1, sizeof *a->cmp[k].lines);
		while (*text != '\0' && a->cmp[k].count < MODEL_DIFF_LINES) {
			size_t n = strcspn(text, "\n");

			a->cmp[k].lines = xrealloc(a->cmp[k].lines,
			    (a->cmp[k].count + 1) * sizeof *a->cmp[k].lines);
			a->cmp[k].lines[a->cmp[k].count++] = xstrndup(text,
			    n < MODEL_LINE_MAX ? n : MODEL_LINE_MAX);
			text += n;
			if (*text == '\n')
				text++;
		}
		m->dirty = true;
		return;
	}
}
