/* The model and the event stream: what each event type changes. */
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


/* What one event type changes in the lists. */
struct ev_ctx {
	struct model *m;
	const struct td_event *ev;
	const cJSON *data;
	struct m_run *runs[2];	/* the run in runs and in project_runs, when there */
	unsigned need;
};

/* Finds the event's run in both lists; inserts it where it belongs when insert. */
static void
ev_runs(struct ev_ctx *c, bool insert)
{
	struct model *m = c->m;
	const struct td_event *ev = c->ev;
	bool inserted;

	if (ev->run_id == NULL)
		return;
	c->runs[0] = runs_upsert(&m->runs, &m->run_count, &m->runs_cur, ev->run_id,
	    insert && mdl_str_eq(ev->session_id, sel_session_id(m)), &inserted);
	if (inserted) {
		mdl_set_str(&c->runs[0]->session_id, ev->session_id);
		mdl_set_str(&c->runs[0]->project_id, ev->project_id);
		mdl_set_str(&c->runs[0]->created_at, ev->time);
		c->need |= NEED_NEW_RUNS;
	}
	c->runs[1] = runs_upsert(&m->project_runs, &m->project_run_count, NULL, ev->run_id,
	    insert && mdl_str_eq(ev->project_id, sel_project_id(m)), &inserted);
	if (inserted) {
		mdl_set_str(&c->runs[1]->session_id, ev->session_id);
		mdl_set_str(&c->runs[1]->project_id, ev->project_id);
		mdl_set_str(&c->runs[1]->created_at, ev->time);
	}
}

/* run.queued carries the run as GET /runs/:id shows it: the lists take it without a read. */
static void
ev_run_queued(struct ev_ctx *c)
{
	struct td_run *t = td_event_run(c->ev);

	if (t == NULL)
		return;
	for (int k = 0; k < 2; k++) {
		if (c->runs[k] != NULL)
			m_run_fill(c->runs[k], t);
	}
	if (c->runs[0] != NULL && c->runs[0]->prompt != NULL)
		c->need &= ~(unsigned)NEED_NEW_RUNS;
	td_run_free(t);
}

/* run.queued, run.started, run.finished: the status, the session's last one. */
static void
ev_run_status(struct ev_ctx *c)
{
	const char *status = json_get_string(c->data, "status");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(c->data, "error");
	bool final = strcmp(c->ev->type, "run.finished") == 0;
	size_t i;

	if (c->ev->run_id == NULL || status == NULL)
		return;
	ev_runs(c, true);
	if (strcmp(c->ev->type, "run.queued") == 0)
		ev_run_queued(c);
	for (int k = 0; k < 2; k++) {
		struct m_run *r = c->runs[k];

		if (r == NULL)
			continue;
		mdl_set_str(&r->status, status);
		if (strcmp(c->ev->type, "run.started") == 0 && r->started_at == NULL)
			mdl_set_str(&r->started_at, c->ev->time);
		if (final) {
			mdl_set_str(&r->finished_at, c->ev->time);
			/* Its tokens are in the run, not the event: read it again. */
			r->tokens = -1;
			c->need |= NEED_NEW_RUNS;
			mdl_set_str(&r->error_code, json_get_string(err, "code"));
			mdl_set_str(&r->error_message, json_get_string(err, "message"));
			mdl_set_str(&r->attention, NULL);
		}
	}
	i = mdl_index_of(c->m->sessions, c->m->session_count, sizeof *c->m->sessions,
	    c->ev->session_id);
	if (i != SIZE_MAX)
		mdl_set_str(&c->m->sessions[i].last_run_status, status);
	if (final) {
		/* A final run waits for nothing: its prompts are gone. */
		struct model *m = c->m;
		size_t n = 0;

		for (size_t j = 0; j < m->permission_count; j++) {
			if (mdl_str_eq(m->permissions[j].run_id, c->ev->run_id))
				m_permission_clear(&m->permissions[j]);
			else
				m->permissions[n++] = m->permissions[j];
		}
		m->permission_count = n;
		runs_mark_prompts(m);
		model_attention_event(m, c->ev->run_id, NULL, NULL, false);
	}
}

static void
ev_progress(struct ev_ctx *c)
{
	ev_runs(c, false);
	for (int k = 0; k < 2; k++) {
		if (c->runs[k] != NULL)
			mdl_set_str(&c->runs[k]->phase, json_get_string(c->data, "phase"));
	}
}

static void
ev_attention(struct ev_ctx *c)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c->data, "attention");

	ev_runs(c, false);
	for (int k = 0; k < 2; k++) {
		if (c->runs[k] != NULL)
			mdl_set_str(&c->runs[k]->attention, json_get_string(a, "kind"));
	}
	model_attention_event(c->m, c->ev->run_id, c->ev->session_id, c->ev->project_id,
	    json_get_string(a, "kind") != NULL);
}

/* run.permission: a pending prompt is added, an answered one goes. */
static void
ev_permission(struct ev_ctx *c)
{
	struct model *m = c->m;
	const char *id = json_get_string(c->data, "promptId");
	const char *status = json_get_string(c->data, "status");
	size_t i;

	if (id == NULL)
		return;
	i = mdl_index_of(m->permissions, m->permission_count, sizeof *m->permissions, id);
	if (mdl_str_eq(status, "pending")) {
		struct m_permission *p;

		if (i != SIZE_MAX)
			return;
		m->permissions = xrealloc(m->permissions,
		    (m->permission_count + 1) * sizeof *m->permissions);
		p = &m->permissions[m->permission_count++];
		p->id = xstrdup(id);
		p->run_id = xstrdup_or_null(c->ev->run_id);
		p->session_id = xstrdup_or_null(c->ev->session_id);
		p->project_id = xstrdup_or_null(c->ev->project_id);
		p->tool = xstrdup_or_null(json_get_string(c->data, "tool"));
		p->summary = xstrdup_or_null(json_get_string(c->data, "summary"));
		p->form = p->form_values = NULL;
		/* The event does not carry a form's fields: the prompt's input does. */
		if (p->tool != NULL && strstr(p->tool, "__elicitation") != NULL)
			c->need |= NEED_PERMISSIONS;
		m->permission_hidden = false;
		m->attention_seen++;
	} else if (i != SIZE_MAX) {
		m_permission_clear(&m->permissions[i]);
		memmove(&m->permissions[i], &m->permissions[i + 1],
		    (m->permission_count - i - 1) * sizeof *m->permissions);
		m->permission_count--;
	}
	runs_mark_prompts(m);
}

static void
ev_plan(struct ev_ctx *c)
{
	const char *sid = json_get_string(c->data, "sessionId");

	if (sid == NULL)
		sid = c->ev->session_id;
	if (!mdl_str_eq(sid, sel_session_id(c->m)) || !cJSON_IsObject(c->data))
		return;
	plan_fill_json(&c->m->plan, c->data);
}

static void
ev_artifact(struct ev_ctx *c)
{
	struct model *m = c->m;
	const char *sid = json_get_string(c->data, "sessionId");
	const char *id = json_get_string(c->data, "id");

	if (sid == NULL)
		sid = c->ev->session_id;
	if (id == NULL || !mdl_str_eq(sid, sel_session_id(m)))
		return;
	if (mdl_index_of(m->artifacts, m->artifact_count, sizeof *m->artifacts, id) != SIZE_MAX)
		return;
	m->artifacts = mdl_insert_front(m->artifacts, m->artifact_count, sizeof *m->artifacts);
	if (m->artifact_count++ > 0)
		m->artifacts_cur.sel++;
	artifact_fill_json(&m->artifacts[0], c->data);
}

static void
ev_session(struct ev_ctx *c)
{
	struct model *m = c->m;
	const char *id = json_get_string(c->data, "id");
	const char *pid = json_get_string(c->data, "projectId");
	size_t i;

	if (id == NULL || !mdl_str_eq(pid ? pid : c->ev->project_id, sel_project_id(m)))
		return;
	i = mdl_index_of(m->sessions, m->session_count, sizeof *m->sessions, id);
	/* Archived and not shown: the list read again leaves it out. */
	if (json_get_string(c->data, "archivedAt") != NULL && !m->show_archived) {
		if (i != SIZE_MAX)
			c->need |= NEED_SESSIONS;
		return;
	}
	if (i == SIZE_MAX) {
		m->sessions = mdl_insert_front(m->sessions, m->session_count, sizeof *m->sessions);
		if (m->session_count++ > 0)
			m->sessions_cur.sel++;
		i = 0;
	}
	session_fill_json(&m->sessions[i], c->data);
}

/* A session deleted (elsewhere too): the list read again leaves it out. */
static void
ev_session_deleted(struct ev_ctx *c)
{
	struct model *m = c->m;
	const char *id = json_get_string(c->data, "id");

	if (id != NULL &&
	    mdl_index_of(m->sessions, m->session_count, sizeof *m->sessions, id) != SIZE_MAX)
		c->need |= NEED_SESSIONS;
}

static void
ev_project(struct ev_ctx *c)
{
	struct model *m = c->m;
	const char *id = json_get_string(c->data, "id");
	size_t i;

	if (id == NULL)
		return;
	i = mdl_index_of(m->projects, m->project_count, sizeof *m->projects, id);
	if (json_get_string(c->data, "archivedAt") != NULL && !m->show_archived) {
		if (i != SIZE_MAX)
			c->need |= NEED_PROJECTS;
		return;
	}
	if (i == SIZE_MAX) {
		m->projects = mdl_insert_front(m->projects, m->project_count, sizeof *m->projects);
		if (m->project_count++ > 0)
			m->projects_cur.sel++;
		i = 0;
		m->projects[0].id = xstrdup(id);
	}
	mdl_set_str(&m->projects[i].name, json_get_string(c->data, "name"));
	m->projects[i].archived = json_get_string(c->data, "archivedAt") != NULL;
}

static void
ev_changes(struct ev_ctx *c)
{
	c->need |= model_changes_event(c->m, c->ev->run_id, c->ev->data_json);
}

static void
ev_attempts(struct ev_ctx *c)
{
	c->need |= model_attempts_event(c->m, c->ev->data_json);
}

static const struct ev_handler {
	const char *type;
	void (*apply)(struct ev_ctx *);
} ev_handlers[] = {
	{ "run.queued", ev_run_status },
	{ "run.started", ev_run_status },
	{ "run.finished", ev_run_status },
	{ "run.progress", ev_progress },
	{ "run.attention", ev_attention },
	{ "run.permission", ev_permission },
	{ "plan.updated", ev_plan },
	{ "artifact.saved", ev_artifact },
	{ "session.updated", ev_session },
	{ "session.deleted", ev_session_deleted },
	{ "project.updated", ev_project },
	{ "run.changes", ev_changes },
	{ "attempts.created", ev_attempts },
	{ "attempts.updated", ev_attempts },
};

unsigned
model_apply_event(struct model *m, const struct td_event *ev)
{
	struct ev_ctx c = { .m = m, .ev = ev };
	struct sel_ids s;
	cJSON *data = NULL;
	bool in_scope, output;
	const struct ev_handler *h = NULL;

	if (ev == NULL || ev->type == NULL)
		return NEED_NONE;
	if (ev->stream_id != NULL)
		mdl_set_str(&m->stream_id, ev->stream_id);
	if (strcmp(ev->type, "stream.resync-required") == 0) {
		unsigned need = model_refresh(m);
		const char *reason = NULL;

		data = mdl_data_parse(ev->data_json);
		reason = json_get_string(data, "reason");
		if (m->log.scope_id != NULL) {
			char *text = xasprintf("events were missed (%s): reading everything again",
			    reason ? reason : "resync");

			log_notice(m, ev->time, text);
			free(text);
		}
		cJSON_Delete(data);
		return need;
	}
	output = strcmp(ev->type, "run.output") == 0;
	in_scope = log_in_scope(&m->log, ev);
	if (output && !in_scope)
		return NEED_NONE;
	for (size_t i = 0; !output && i < sizeof ev_handlers / sizeof ev_handlers[0]; i++) {
		if (strcmp(ev->type, ev_handlers[i].type) == 0)
			h = &ev_handlers[i];
	}
	if (h == NULL && !in_scope)
		return NEED_NONE;
	data = mdl_data_parse(ev->data_json);
	if (h != NULL) {
		sel_save(m, &s);
		c.data = data;
		h->apply(&c);
		lists_sort(m);
		c.need |= sel_changes(m, &s);
		m->dirty = true;
	}
	/* The run shown in Changes ended: no longer live, its last changes read. */
	if (strcmp(ev->type, "run.finished") == 0 && ev->run_id != NULL &&
	    mdl_str_eq(ev->run_id, m->changes.run_id))
		c.need |= NEED_CHANGES;
	if (in_scope)
		c.need |= log_live(m, ev, data);
	cJSON_Delete(data);
	return c.need;
}

unsigned
model_refresh(struct model *m)
{
	log_reload(&m->log);
	m->dirty = true;
	return NEED_EVERYTHING;
}
