/*
 * The dashboard's model, its lowest layer: shared helpers, the items of the
 * lists (clear, fill), the selected items and events made by the model.
 * model-events.c over model-lists.c over model-log.c over this file.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "json.h"
#include "model-internal.h"
#include "timeutil.h"
#include "xalloc.h"

bool
mdl_str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* Replaces *dst by a copy of src (NULL stays NULL). */
void
mdl_set_str(char **dst, const char *src)
{
	char *old = *dst;

	if (old != NULL && src != NULL && strcmp(old, src) == 0)
		return;
	*dst = xstrdup_or_null(src);
	free(old);
}

/* The number obj[key], 0 when it is not one. */
long
mdl_json_long(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

/* An event's data; not checked for UTF-8, as a delta may end inside a character. */
cJSON *
mdl_data_parse(const char *json)
{
	return json != NULL ? cJSON_ParseWithLength(json, strlen(json)) : NULL;
}

/* The index of the item whose first member, its id, is id; SIZE_MAX when none. */
size_t
mdl_index_of(const void *items, size_t count, size_t size, const char *id)
{
	for (size_t i = 0; id != NULL && i < count; i++) {
		const char *const *p = (const char *const *)(const void *)
		    ((const char *)items + i * size);

		if (mdl_str_eq(*p, id))
			return i;
	}
	return SIZE_MAX;
}

/* Room for one more item at the front of an array of count items. */
void *
mdl_insert_front(void *items, size_t count, size_t size)
{
	char *p = xrealloc(items, (count + 1) * size);

	memmove(p + size, p, count * size);
	memset(p, 0, size);
	return p;
}


static void
m_project_clear(struct m_project *p)
{
	free(p->id);
	free(p->name);
}

static void
m_session_clear(struct m_session *s)
{
	free(s->id);
	free(s->project_id);
	free(s->title);
	free(s->last_run_status);
	free(s->updated_at);
	free(s->cwd);
}

static void
m_run_clear(struct m_run *r)
{
	free(r->id);
	free(r->session_id);
	free(r->project_id);
	free(r->status);
	free(r->prompt);
	free(r->phase);
	free(r->attention);
	free(r->error_code);
	free(r->error_message);
	free(r->created_at);
	free(r->started_at);
	free(r->finished_at);
}

static void
m_artifact_clear(struct m_artifact *a)
{
	free(a->id);
	free(a->name);
	free(a->path);
	free(a->version);
	free(a->run_id);
	free(a->created_at);
}

void
m_permission_clear(struct m_permission *p)
{
	free(p->id);
	free(p->run_id);
	free(p->session_id);
	free(p->project_id);
	free(p->tool);
	free(p->summary);
	free(p->form);
	free(p->form_values);
}

char *
model_form_fields(const char *input_json)
{
	struct td_form *form;
	char *text;

	if (td_form_parse(input_json, &form, NULL) != TD_OK)
		return NULL;
	text = td_form_text(form, TD_FORM_LINES, NULL);
	td_form_free(form);
	return text;
}

char *
model_form_values(const char *input_json)
{
	struct td_form *form;
	struct buf b;

	if (td_form_parse(input_json, &form, NULL) != TD_OK)
		return NULL;
	buf_init(&b, 0);
	for (size_t i = 0; i < form->field_count; i++) {
		const struct td_form_field *f = &form->fields[i];
		cJSON *d = f->default_json != NULL ?
		    json_parse(f->default_json, strlen(f->default_json)) : NULL;

		buf_printf(&b, "%s=", f->name);
		if (cJSON_IsString(d))
			buf_appends(&b, d->valuestring);
		else if (d != NULL)
			buf_appends(&b, f->default_json);
		buf_appends(&b, "\n");
		cJSON_Delete(d);
	}
	td_form_free(form);
	/* the last line without its newline: the editor's text ends there */
	if (b.len > 0)
		b.data[--b.len] = '\0';
	return buf_steal(&b);
}

/*
 * The lines typed as a JSON object of strings (the service types them by the
 * form); a line without '=' or with an empty value is left out.  NULL when
 * no field has a value.
 */
char *
model_form_answer(const char *text)
{
	cJSON *o = cJSON_CreateObject();
	char *out = NULL;

	for (const char *line = text; *line != '\0';) {
		size_t n = strcspn(line, "\n");
		const char *eq = memchr(line, '=', n);

		if (eq != NULL && eq > line && eq + 1 < line + n) {
			char *name = strndup(line, (size_t)(eq - line));
			char *value = strndup(eq + 1, (size_t)(line + n - eq - 1));

			cJSON_DeleteItemFromObjectCaseSensitive(o, name);
			cJSON_AddStringToObject(o, name, value);
			free(name);
			free(value);
		}
		line += n + (line[n] == '\n');
	}
	if (cJSON_GetArraySize(o) > 0)
		out = json_print(o);
	cJSON_Delete(o);
	return out;
}

void
plan_clear(struct m_plan *p)
{
	free(p->session_id);
	free(p->run_id);
	free(p->status);
	free(p->summary);
	free(p->feedback);
	for (size_t i = 0; i < p->step_count; i++) {
		free(p->steps[i].id);
		free(p->steps[i].title);
		free(p->steps[i].status);
	}
	free(p->steps);
	memset(p, 0, sizeof *p);
}

void
projects_clear(struct model *m)
{
	for (size_t i = 0; i < m->project_count; i++)
		m_project_clear(&m->projects[i]);
	free(m->projects);
	m->projects = NULL;
	m->project_count = 0;
}

void
sessions_clear(struct model *m)
{
	for (size_t i = 0; i < m->session_count; i++)
		m_session_clear(&m->sessions[i]);
	free(m->sessions);
	m->sessions = NULL;
	m->session_count = 0;
}

void
m_runs_clear(struct m_run **runs, size_t *count)
{
	for (size_t i = 0; i < *count; i++)
		m_run_clear(&(*runs)[i]);
	free(*runs);
	*runs = NULL;
	*count = 0;
}

void
artifacts_clear(struct model *m)
{
	for (size_t i = 0; i < m->artifact_count; i++)
		m_artifact_clear(&m->artifacts[i]);
	free(m->artifacts);
	m->artifacts = NULL;
	m->artifact_count = 0;
}

void
permissions_clear(struct model *m)
{
	for (size_t i = 0; i < m->permission_count; i++)
		m_permission_clear(&m->permissions[i]);
	free(m->permissions);
	m->permissions = NULL;
	m->permission_count = 0;
}

/* Copies what the model shows of a run. */
/* Runs only move forward: queued, running, then a final status. */
static int
status_rank(const char *status)
{
	if (status == NULL)
		return -1;
	if (strcmp(status, "queued") == 0)
		return 0;
	return strcmp(status, "running") == 0 ? 1 : 2;
}

void
m_run_fill(struct m_run *r, const struct td_run *t)
{
	mdl_set_str(&r->id, t->id);
	mdl_set_str(&r->session_id, t->session_id);
	mdl_set_str(&r->project_id, t->project_id);
	mdl_set_str(&r->prompt, t->prompt);
	mdl_set_str(&r->created_at, t->created_at);
	/* A read that left before the last event applied is older: keep the newer state. */
	if (status_rank(t->status) < status_rank(r->status))
		return;
	mdl_set_str(&r->status, t->status);
	mdl_set_str(&r->phase, t->progress.phase);
	mdl_set_str(&r->attention, t->attention.kind);
	mdl_set_str(&r->error_code, t->error_code);
	mdl_set_str(&r->error_message, t->error_message);
	mdl_set_str(&r->started_at, t->started_at);
	mdl_set_str(&r->finished_at, t->finished_at);
	/* The one count shown everywhere: input (cache reads included) + output. */
	r->tokens = t->input_tokens + t->output_tokens;
	r->cached = t->cache_read_tokens;
	r->has_cost = t->has_cost;
	r->cost = t->cost;
	r->has_changes = t->changes.known;
	r->files = t->changes.files;
	r->additions = t->changes.additions;
	r->deletions = t->changes.deletions;
}

void
session_fill_json(struct m_session *s, const cJSON *j)
{
	const cJSON *last = cJSON_GetObjectItemCaseSensitive(j, "lastRun");

	mdl_set_str(&s->id, json_get_string(j, "id"));
	mdl_set_str(&s->project_id, json_get_string(j, "projectId"));
	mdl_set_str(&s->title, json_get_string(j, "title"));
	mdl_set_str(&s->last_run_status, json_get_string(last, "status"));
	mdl_set_str(&s->updated_at, json_get_string(j, "updatedAt"));
	s->archived = json_get_string(j, "archivedAt") != NULL;
}

void
artifact_fill_json(struct m_artifact *a, const cJSON *j)
{
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");

	mdl_set_str(&a->id, json_get_string(j, "id"));
	mdl_set_str(&a->name, json_get_string(j, "name"));
	mdl_set_str(&a->path, json_get_string(j, "path"));
	mdl_set_str(&a->version, json_get_string(j, "version"));
	a->size = cJSON_IsNumber(size) ? (long long)size->valuedouble : -1;
	mdl_set_str(&a->run_id, json_get_string(j, "runId"));
	mdl_set_str(&a->created_at, json_get_string(j, "createdAt"));
}

/* The plan from its JSON (plan.updated). */
void
plan_fill_json(struct m_plan *p, const cJSON *j)
{
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps"), *st;
	size_t n = cJSON_IsArray(steps) ? (size_t)cJSON_GetArraySize(steps) : 0, i = 0;

	plan_clear(p);
	p->present = true;
	p->session_id = xstrdup_or_null(json_get_string(j, "sessionId"));
	p->run_id = xstrdup_or_null(json_get_string(j, "runId"));
	p->version = mdl_json_long(j, "version");
	p->revision = mdl_json_long(j, "revision");
	p->status = xstrdup_or_null(json_get_string(j, "status"));
	p->summary = xstrdup_or_null(json_get_string(j, "summary"));
	p->feedback = xstrdup_or_null(json_get_string(j, "feedback"));
	p->steps = n ? xcalloc(n, sizeof *p->steps) : NULL;
	cJSON_ArrayForEach(st, steps) {
		if (i == n)
			break;
		p->steps[i].id = xstrdup_or_null(json_get_string(st, "id"));
		p->steps[i].title = xstrdup_or_null(json_get_string(st, "title"));
		p->steps[i].status = xstrdup_or_null(json_get_string(st, "status"));
		i++;
	}
	p->step_count = i;
}

const struct m_project *
model_project(const struct model *m)
{
	return m->projects_cur.sel < m->project_count ? &m->projects[m->projects_cur.sel] : NULL;
}

const struct m_session *
model_session(const struct model *m)
{
	return m->sessions_cur.sel < m->session_count ? &m->sessions[m->sessions_cur.sel] : NULL;
}

const struct m_run *
model_run(const struct model *m)
{
	return m->runs_cur.sel < m->run_count ? &m->runs[m->runs_cur.sel] : NULL;
}

/* Copies at most max characters of s's first line into out, "…" when cut. */
static void
describe_label(const char *s, size_t max, char *out, size_t len)
{
	size_t n = 0, chars = 0, i = 0;

	while (s[i] != '\0' && s[i] != '\n' && s[i] != '\r' && n + 8 < len) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && chars++ == max) {
			n += (size_t)snprintf(out + n, len - n, "\u2026");
			out[n] = '\0';
			return;
		}
		out[n++] = s[i++];
	}
	out[n] = '\0';
}

void
model_describe(const struct model *m, const char *project_id, const char *session_id,
    const char *run_id, char *out, size_t len)
{
	const char *project = project_id, *session = session_id, *prompt = NULL;
	char label[160] = "", title[160] = "";
	const struct m_run *lists[2] = { m->runs, m->project_runs };
	size_t counts[2] = { m->run_count, m->project_run_count };

	for (size_t l = 0; run_id != NULL && l < 2; l++) {
		for (size_t i = 0; i < counts[l]; i++) {
			const struct m_run *r = &lists[l][i];

			if (r->id == NULL || strcmp(r->id, run_id) != 0)
				continue;
			prompt = prompt != NULL ? prompt : r->prompt;
			session = session != NULL ? session : r->session_id;
			project = project != NULL ? project : r->project_id;
		}
	}
	for (size_t i = 0; project != NULL && i < m->project_count; i++) {
		if (m->projects[i].id != NULL && strcmp(m->projects[i].id, project) == 0)
			project = m->projects[i].name;
	}
	for (size_t i = 0; session != NULL && i < m->session_count; i++) {
		if (m->sessions[i].id != NULL && strcmp(m->sessions[i].id, session) == 0 &&
		    m->sessions[i].title != NULL && m->sessions[i].title[0] != '\0')
			session = m->sessions[i].title;
	}
	if (prompt != NULL && prompt[0] != '\0')
		describe_label(prompt, 32, label, sizeof label);
	if (session != NULL)
		describe_label(session, 40, title, sizeof title);
	snprintf(out, len, "%s%s%s%s%s%s%s%s", run_id != NULL ? "run \"" : "",
	    run_id == NULL ? "" : label[0] != '\0' ? label : run_id, run_id != NULL ? "\"" : "",
	    run_id != NULL && (project != NULL || session != NULL) ? " in " : "",
	    project != NULL ? project : "", project != NULL && session != NULL ? " \u203a " : "",
	    session != NULL ? title : "", "");
}

const struct m_artifact *
model_artifact(const struct model *m)
{
	return m->artifacts_cur.sel < m->artifact_count ?
	    &m->artifacts[m->artifacts_cur.sel] : NULL;
}

struct td_event *
model_event_new(long long seq, const char *stream_id, const char *type, const char *time,
    const char *project_id, const char *session_id, const char *run_id,
    const char *data_json, const char *json)
{
	return td_event_new(seq, stream_id, type, time, project_id, session_id, run_id,
	    data_json, json);
}
