/* The model's connectors: the Connectors view's list and the last test of each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model-internal.h"
#include "xalloc.h"

static void
m_connector_clear(struct m_connector *c)
{
	free(c->id);
	free(c->name);
	free(c->kind);
	free(c->transport);
	free(c->test);
	memset(c, 0, sizeof *c);
}

void
model_connectors_free(struct model *m)
{
	for (size_t i = 0; i < m->connector_count; i++)
		m_connector_clear(&m->connectors[i]);
	free(m->connectors);
	m->connectors = NULL;
	m->connector_count = 0;
}

static void
connector_fill(struct m_connector *d, const struct td_connector *c)
{
	mdl_set_str(&d->id, c->id);
	mdl_set_str(&d->name, c->name);
	mdl_set_str(&d->kind, c->kind);
	mdl_set_str(&d->transport, c->transport_type);
	d->enabled = c->enabled;
	d->paths = 0;
	if (c->transport_json != NULL) {
		cJSON *t = cJSON_Parse(c->transport_json);

		d->paths = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "paths"));
		cJSON_Delete(t);
	}
}

void
model_set_connectors(struct model *m, const struct td_connector_list *l)
{
	const struct m_connector *sel = model_connector(m);
	char *keep = sel != NULL && sel->id != NULL ? xstrdup(sel->id) : NULL;
	struct m_connector *old = m->connectors;
	size_t old_count = m->connector_count, i;

	if (l == NULL) {
		free(keep);
		return;
	}
	m->connectors = xcalloc(l->count + 1, sizeof *m->connectors);
	m->connector_count = l->count;
	for (i = 0; i < l->count; i++) {
		connector_fill(&m->connectors[i], &l->items[i]);
		/* A test result stays with its connector across re-reads. */
		for (size_t k = 0; k < old_count; k++) {
			if (mdl_str_eq(old[k].id, l->items[i].id) && old[k].test != NULL) {
				m->connectors[i].test = old[k].test;
				old[k].test = NULL;
			}
		}
	}
	for (size_t k = 0; k < old_count; k++)
		m_connector_clear(&old[k]);
	free(old);
	i = keep != NULL ? mdl_index_of(m->connectors, m->connector_count,
	    sizeof *m->connectors, keep) : SIZE_MAX;
	m->connectors_cur.sel = i != SIZE_MAX ? i :
	    m->connectors_cur.sel < m->connector_count ? m->connectors_cur.sel : 0;
	free(keep);
	m->dirty = true;
}

void
model_put_connector(struct model *m, const struct td_connector *c)
{
	size_t i;

	if (c == NULL || c->id == NULL)
		return;
	i = mdl_index_of(m->connectors, m->connector_count, sizeof *m->connectors, c->id);
	if (i == SIZE_MAX)
		return;
	connector_fill(&m->connectors[i], c);
	m->dirty = true;
}

void
model_connector_tested(struct model *m, const char *id, const char *text)
{
	size_t i = mdl_index_of(m->connectors, m->connector_count, sizeof *m->connectors, id);

	if (i == SIZE_MAX)
		return;
	mdl_set_str(&m->connectors[i].test, text);
	m->dirty = true;
}

const struct m_connector *
model_connector(const struct model *m)
{
	return m->connectors_cur.sel < m->connector_count ?
	    &m->connectors[m->connectors_cur.sel] : NULL;
}
