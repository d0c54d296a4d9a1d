/* The model's Changes view: the files the selected run changed and the diff of one. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "model-internal.h"
#include "xalloc.h"

static void
changes_files_clear(struct m_changes *c)
{
	for (size_t i = 0; i < c->file_count; i++)
		free(c->files[i].path);
	free(c->files);
	c->files = NULL;
	c->file_count = 0;
}

static void
changes_diff_clear(struct m_changes *c)
{
	for (size_t i = 0; i < c->diff_count; i++)
		free(c->diff[i]);
	free(c->diff);
	c->diff = NULL;
	c->diff_count = 0;
	c->diff_top = 0;
}

void
model_changes_free(struct model *m)
{
	struct m_changes *c = &m->changes;

	changes_files_clear(c);
	changes_diff_clear(c);
	free(c->run_id);
	free(c->reverted_at);
	free(c->incomplete);
	free(c->diff_path);
	memset(c, 0, sizeof *c);
}

const char *
model_changes_want(const struct model *m)
{
	const struct m_run *r = model_run(m);

	return m->right == RIGHT_CHANGES && r != NULL ? r->id : NULL;
}

void
model_changes_ask(struct model *m, const char *run_id)
{
	struct m_changes *c = &m->changes;

	if (!mdl_str_eq(c->run_id, run_id)) {
		model_changes_free(m);
		c->run_id = xstrdup_or_null(run_id);
	}
	c->loading = true;
	m->dirty = true;
}

const struct m_change *
model_change(const struct model *m)
{
	const struct m_changes *c = &m->changes;

	return c->cur.sel < c->file_count ? &c->files[c->cur.sel] : NULL;
}

void
model_set_changes(struct model *m, const char *run_id, const struct td_changes *ch)
{
	struct m_changes *c = &m->changes;
	const struct m_change *sel = model_change(m);
	char *keep = sel != NULL ? xstrdup(sel->path) : NULL;

	if (!mdl_str_eq(c->run_id, run_id) || ch == NULL) {
		if (mdl_str_eq(c->run_id, run_id)) {
			c->loading = false;
			c->failed = true;
			m->dirty = true;
		}
		free(keep);
		return;
	}
	changes_files_clear(c);
	c->loading = false;
	c->failed = false;
	c->live = ch->live;
	mdl_set_str(&c->reverted_at, ch->reverted_at);
	mdl_set_str(&c->incomplete, ch->incomplete_reason);
	c->additions = ch->total_additions;
	c->deletions = ch->total_deletions;
	c->files = xcalloc(ch->file_count + 1, sizeof *c->files);
	c->cur.sel = 0;
	for (size_t i = 0; i < ch->file_count; i++) {
		const struct td_change_file *f = &ch->files[i];
		struct m_change *d = &c->files[c->file_count];

		d->path = xstrdup(f->path);
		d->status = td_change_letter(f->status);
		d->additions = f->additions;
		d->deletions = f->deletions;
		d->binary = f->binary;
		d->too_large = f->too_large;
		if (keep != NULL && strcmp(keep, f->path) == 0)
			c->cur.sel = c->file_count;
		c->file_count++;
	}
	free(keep);
	/* A new read may change the selected file's diff: it is read again. */
	c->gen++;
	m->dirty = true;
}

const char *
model_changes_diff_due(struct model *m)
{
	struct m_changes *c = &m->changes;
	const struct m_change *f = model_change(m);

	if (m->right != RIGHT_CHANGES || f == NULL)
		return NULL;
	if (mdl_str_eq(c->diff_path, f->path) && c->diff_gen == c->gen)
		return NULL;
	if (!mdl_str_eq(c->diff_path, f->path)) {
		changes_diff_clear(c);
		mdl_set_str(&c->diff_path, f->path);
	}
	c->diff_gen = c->gen;
	return f->path;
}

void
model_set_diff(struct model *m, const char *run_id, const char *path, const char *text)
{
	struct m_changes *c = &m->changes;
	size_t top = c->diff_top;

	if (!mdl_str_eq(c->run_id, run_id) || !mdl_str_eq(c->diff_path, path))
		return;
	changes_diff_clear(c);
	if (text == NULL)
		text = "(the diff could not be read)";
	c->diff = xcalloc(1, sizeof *c->diff);
	while (*text != '\0' && c->diff_count < MODEL_DIFF_LINES) {
		size_t n = strcspn(text, "\n");

		c->diff = xrealloc(c->diff, (c->diff_count + 1) * sizeof *c->diff);
		c->diff[c->diff_count++] = xstrndup(text, n < MODEL_LINE_MAX ? n : MODEL_LINE_MAX);
		text += n;
		if (*text == '\n')
			text++;
	}
	/* The same file read again (it grew): the place in it stays. */
	c->diff_top = top < c->diff_count ? top : 0;
	m->dirty = true;
}

void
model_diff_scroll(struct model *m, long delta, size_t rows)
{
	struct m_changes *c = &m->changes;
	size_t last = c->diff_count > rows ? c->diff_count - rows : 0;

	if (delta == LONG_MIN)
		c->diff_top = 0;
	else if (delta == LONG_MAX)
		c->diff_top = last;
	else if (delta < 0)
		c->diff_top = (size_t)-delta > c->diff_top ? 0 : c->diff_top - (size_t)-delta;
	else
		c->diff_top = c->diff_top + (size_t)delta > last ? last : c->diff_top + (size_t)delta;
	m->dirty = true;
}

/* Sets the changes totals of run id in a list of runs. */
static void
changes_put_row(struct m_run *runs, size_t count, const char *id, long files, long adds,
    long dels)
{
	for (size_t i = 0; i < count; i++) {
		if (mdl_str_eq(runs[i].id, id)) {
			runs[i].has_changes = true;
			runs[i].files = files;
			runs[i].additions = adds;
			runs[i].deletions = dels;
		}
	}
}

unsigned
model_changes_event(struct model *m, const char *run_id, const char *data_json)
{
	cJSON *data = mdl_data_parse(data_json);
	const char *id = json_get_string(data, "runId");
	unsigned need;

	if (id == NULL)
		id = run_id;
	if (id != NULL && cJSON_IsObject(data)) {
		long files = mdl_json_long(data, "files"), adds = mdl_json_long(data, "additions");
		long dels = mdl_json_long(data, "deletions");

		changes_put_row(m->runs, m->run_count, id, files, adds, dels);
		changes_put_row(m->project_runs, m->project_run_count, id, files, adds, dels);
		m->dirty = true;
	}
	need = id != NULL && mdl_str_eq(id, m->changes.run_id) ? NEED_CHANGES : NEED_NONE;
	cJSON_Delete(data);
	return need;
}

enum diff_kind
model_diff_kind(const char *line, bool *header)
{
	if (strncmp(line, "diff --git ", 11) == 0) {
		*header = true;
		return DIFF_HEADER;
	}
	if (strncmp(line, "@@", 2) == 0) {
		*header = false;
		return DIFF_HUNK;
	}
	if (*header || strncmp(line, "Binary files ", 13) == 0)
		return DIFF_HEADER;
	if (line[0] == '+')
		return DIFF_ADD;
	if (line[0] == '-')
		return DIFF_DEL;
	return DIFF_CONTEXT;
}
