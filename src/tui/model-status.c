/* The model's life and status: init, free, connection, messages, download, counts. */
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


void
model_init(struct model *m)
{
	memset(m, 0, sizeof *m);
	m->focus = PANE_PROJECTS;
	m->right = RIGHT_LOG;
	m->conn = CONN_CONNECTING;
	m->log.lines = xcalloc(MODEL_LOG_MAX, sizeof *m->log.lines);
	m->log.matches = xcalloc(MODEL_LOG_MAX, sizeof *m->log.matches);
	m->log.run_scope = true;
	m->log.follow = true;
	m->log.search_at = ULLONG_MAX;
	m->log.jump_serial = ULLONG_MAX;
	m->log.timestamps = true;
	m->log.rows = 1;
	m->download_total = -1;
	m->dirty = true;
}

void
model_free(struct model *m)
{
	if (m == NULL)
		return;
	projects_clear(m);
	sessions_clear(m);
	m_runs_clear(&m->runs, &m->run_count);
	m_runs_clear(&m->project_runs, &m->project_run_count);
	artifacts_clear(m);
	permissions_clear(m);
	model_attention_free(m);
	model_connectors_free(m);
	model_marks_clear(m);
	model_changes_free(m);
	model_attempts_free(m);
	plan_clear(&m->plan);
	if (m->log.lines != NULL)
		log_reset(&m->log);
	free(m->log.lines);
	free(m->log.matches);
	for (size_t i = 0; i < m->messages_count; i++)
		free(m->messages[(m->messages_head + i) % MODEL_MESSAGES_MAX].text);
	free(m->messages);
	free(m->service_version);
	free(m->stream_id);
	memset(m, 0, sizeof *m);
}

void
model_conn(struct model *m, enum conn_state s, long long retry_at_ms)
{
	m->conn = s;
	m->conn_retry_at_ms = retry_at_ms;
	if (s == CONN_LIVE)
		m->conn_problem = PROBLEM_NONE;
	m->dirty = true;
}

void
model_conn_problem(struct model *m, enum conn_problem p)
{
	m->conn_problem = p;
	m->dirty = true;
}

void
model_resynced(struct model *m, long long now_ms)
{
	m->resynced_at_ms = now_ms;
	m->dirty = true;
}

/* The message just set, kept in the history (the same again counts). */
static void
message_keep(struct model *m, bool error)
{
	struct m_message *last = m->messages_count > 0 ? &m->messages[(m->messages_head +
	    m->messages_count - 1) % MODEL_MESSAGES_MAX] : NULL;
	struct m_message *e;
	time_t now = time(NULL);
	struct tm tm;

	if (m->messages == NULL)
		m->messages = xcalloc(MODEL_MESSAGES_MAX, sizeof *m->messages);
	if (last != NULL && last->error == error && strcmp(last->text, m->message) == 0) {
		last->repeat++;
	} else {
		if (m->messages_count == MODEL_MESSAGES_MAX) {
			free(m->messages[m->messages_head].text);
			m->messages_head = (m->messages_head + 1) % MODEL_MESSAGES_MAX;
			m->messages_count--;
		}
		e = &m->messages[(m->messages_head + m->messages_count++) % MODEL_MESSAGES_MAX];
		e->text = xstrdup(m->message);
		e->error = error;
		e->repeat = 0;
		last = e;
	}
	if (localtime_r(&now, &tm) == NULL || strftime(last->time, sizeof last->time,
	    "%H:%M:%S", &tm) == 0)
		last->time[0] = '\0';
}

const struct m_message *
model_message_at(const struct model *m, size_t i)
{
	if (i >= m->messages_count)
		return NULL;
	return &m->messages[(m->messages_head + i) % MODEL_MESSAGES_MAX];
}

void
model_message(struct model *m, long long now_ms, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->message, sizeof m->message, fmt, ap);
	va_end(ap);
	message_keep(m, error);
	m->message_error = error;
	m->message_until_ms = now_ms + MESSAGE_MS;
	m->dirty = true;
}

void
model_download_progress(struct model *m, const char *name, bool verifying, long long done,
    long long total)
{
	m->download_active = true;
	m->download_verifying = verifying;
	snprintf(m->download_name, sizeof m->download_name, "%s", name ? name : "");
	m->download_done = done;
	m->download_total = total;
	m->dirty = true;
}

void
model_download_end(struct model *m)
{
	m->download_active = false;
	m->dirty = true;
}

void
model_counts(const struct model *m, size_t *running, size_t *waiting)
{
	size_t r = 0, w = 0;

	for (size_t i = 0; i < m->project_run_count; i++) {
		const struct m_run *run = &m->project_runs[i];

		if (!mdl_str_eq(run->status, "running"))
			continue;
		r++;
		if (run->attention != NULL || run->permission_pending)
			w++;
	}
	if (running != NULL)
		*running = r;
	if (waiting != NULL)
		*waiting = w;
}

const struct m_permission *
model_modal_permission(const struct model *m)
{
	if (m->permission_hidden || m->permission_count == 0)
		return NULL;
	return &m->permissions[0];
}

void
model_permission_hide(struct model *m)
{
	m->permission_hidden = true;
	m->dirty = true;
}

void
model_permission_show(struct model *m)
{
	m->permission_hidden = false;
	m->dirty = true;
}
