/* The dashboard's model: lists, selection, log and prompts, changed by events, results and keys. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "json.h"
#include "model.h"
#include "timeutil.h"
#include "xalloc.h"

#define MESSAGE_MS 5000

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* Replaces *dst by a copy of src (NULL stays NULL). */
static void
set_str(char **dst, const char *src)
{
	char *old = *dst;

	if (old != NULL && src != NULL && strcmp(old, src) == 0)
		return;
	*dst = xstrdup_or_null(src);
	free(old);
}

/* The number obj[key], 0 when it is not one. */
static long
json_long(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

/* An event's data; not checked for UTF-8, as a delta may end inside a character. */
static cJSON *
data_parse(const char *json)
{
	return json != NULL ? cJSON_ParseWithLength(json, strlen(json)) : NULL;
}

/* The index of the item whose first member, its id, is id; SIZE_MAX when none. */
static size_t
index_of(const void *items, size_t count, size_t size, const char *id)
{
	for (size_t i = 0; id != NULL && i < count; i++) {
		const char *const *p = (const char *const *)(const void *)
		    ((const char *)items + i * size);

		if (str_eq(*p, id))
			return i;
	}
	return SIZE_MAX;
}

/* Room for one more item at the front of an array of count items. */
static void *
insert_front(void *items, size_t count, size_t size)
{
	char *p = xrealloc(items, (count + 1) * size);

	memmove(p + size, p, count * size);
	memset(p, 0, size);
	return p;
}

/* --- items ---------------------------------------------------------------- */

static void
project_clear(struct m_project *p)
{
	free(p->id);
	free(p->name);
}

static void
session_clear(struct m_session *s)
{
	free(s->id);
	free(s->project_id);
	free(s->title);
	free(s->last_run_status);
	free(s->updated_at);
}

static void
run_clear(struct m_run *r)
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
}

static void
artifact_clear(struct m_artifact *a)
{
	free(a->id);
	free(a->name);
	free(a->path);
	free(a->version);
	free(a->run_id);
	free(a->created_at);
}

static void
permission_clear(struct m_permission *p)
{
	free(p->id);
	free(p->run_id);
	free(p->session_id);
	free(p->project_id);
	free(p->tool);
	free(p->summary);
}

static void
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

static void
projects_clear(struct model *m)
{
	for (size_t i = 0; i < m->project_count; i++)
		project_clear(&m->projects[i]);
	free(m->projects);
	m->projects = NULL;
	m->project_count = 0;
}

static void
sessions_clear(struct model *m)
{
	for (size_t i = 0; i < m->session_count; i++)
		session_clear(&m->sessions[i]);
	free(m->sessions);
	m->sessions = NULL;
	m->session_count = 0;
}

static void
runs_clear(struct m_run **runs, size_t *count)
{
	for (size_t i = 0; i < *count; i++)
		run_clear(&(*runs)[i]);
	free(*runs);
	*runs = NULL;
	*count = 0;
}

static void
artifacts_clear(struct model *m)
{
	for (size_t i = 0; i < m->artifact_count; i++)
		artifact_clear(&m->artifacts[i]);
	free(m->artifacts);
	m->artifacts = NULL;
	m->artifact_count = 0;
}

static void
permissions_clear(struct model *m)
{
	for (size_t i = 0; i < m->permission_count; i++)
		permission_clear(&m->permissions[i]);
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

static void
run_fill(struct m_run *r, const struct td_run *t)
{
	set_str(&r->id, t->id);
	set_str(&r->session_id, t->session_id);
	set_str(&r->project_id, t->project_id);
	set_str(&r->prompt, t->prompt);
	set_str(&r->created_at, t->created_at);
	/* A read that left before the last event applied is older: keep the newer state. */
	if (status_rank(t->status) < status_rank(r->status))
		return;
	set_str(&r->status, t->status);
	set_str(&r->phase, t->progress.phase);
	set_str(&r->attention, t->attention.kind);
	set_str(&r->error_code, t->error_code);
	set_str(&r->error_message, t->error_message);
}

static void
session_fill_json(struct m_session *s, const cJSON *j)
{
	const cJSON *last = cJSON_GetObjectItemCaseSensitive(j, "lastRun");

	set_str(&s->id, json_get_string(j, "id"));
	set_str(&s->project_id, json_get_string(j, "projectId"));
	set_str(&s->title, json_get_string(j, "title"));
	set_str(&s->last_run_status, json_get_string(last, "status"));
	set_str(&s->updated_at, json_get_string(j, "updatedAt"));
}

static void
artifact_fill_json(struct m_artifact *a, const cJSON *j)
{
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");

	set_str(&a->id, json_get_string(j, "id"));
	set_str(&a->name, json_get_string(j, "name"));
	set_str(&a->path, json_get_string(j, "path"));
	set_str(&a->version, json_get_string(j, "version"));
	a->size = cJSON_IsNumber(size) ? (long long)size->valuedouble : -1;
	set_str(&a->run_id, json_get_string(j, "runId"));
	set_str(&a->created_at, json_get_string(j, "createdAt"));
}

/* The plan from its JSON (plan.updated). */
static void
plan_fill_json(struct m_plan *p, const cJSON *j)
{
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps"), *st;
	size_t n = cJSON_IsArray(steps) ? (size_t)cJSON_GetArraySize(steps) : 0, i = 0;

	plan_clear(p);
	p->present = true;
	p->session_id = xstrdup_or_null(json_get_string(j, "sessionId"));
	p->run_id = xstrdup_or_null(json_get_string(j, "runId"));
	p->version = json_long(j, "version");
	p->revision = json_long(j, "revision");
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

/* --- log ------------------------------------------------------------------- */

static struct log_line *
log_at(const struct m_log *l, size_t i)
{
	return &l->lines[(l->head + i) % MODEL_LOG_MAX];
}

static size_t
log_match_at(const struct m_log *l, size_t k)
{
	return (size_t)(l->matches[(l->match_head + k) % MODEL_LOG_MAX] - l->line_base);
}

size_t
model_log_visible(const struct model *m)
{
	return m->log.filter[0] != '\0' ? m->log.match_count : m->log.count;
}

const struct log_line *
model_log_line(const struct model *m, size_t i)
{
	const struct m_log *l = &m->log;

	if (i >= model_log_visible(m))
		return NULL;
	return log_at(l, l->filter[0] != '\0' ? log_match_at(l, i) : i);
}

/* With follow on, top shows the last page. */
static void
log_track_end(struct model *m)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), rows = l->rows ? l->rows : 1;

	if (l->follow)
		l->top = vis > rows ? vis - rows : 0;
	else if (l->top >= vis)
		l->top = vis ? vis - 1 : 0;
}

/* Keeps matches right after the last line's text changed. */
static void
log_match_last(struct m_log *l)
{
	unsigned long long serial;
	bool has, want;

	if (l->filter[0] == '\0' || l->count == 0)
		return;
	serial = l->line_base + l->count - 1;
	has = l->match_count > 0 &&
	    l->matches[(l->match_head + l->match_count - 1) % MODEL_LOG_MAX] == serial;
	want = strcasestr(log_at(l, l->count - 1)->text, l->filter) != NULL;
	if (want && !has)
		l->matches[(l->match_head + l->match_count++) % MODEL_LOG_MAX] = serial;
	else if (!want && has)
		l->match_count--;
}

static void
log_rebuild_matches(struct m_log *l)
{
	l->match_head = 0;
	l->match_count = 0;
	if (l->filter[0] == '\0')
		return;
	for (size_t i = 0; i < l->count; i++) {
		if (strcasestr(log_at(l, i)->text, l->filter) != NULL)
			l->matches[l->match_count++] = l->line_base + i;
	}
}

/* Drops the oldest line; a view scrolled back keeps showing the same lines. */
static void
log_drop_oldest(struct m_log *l)
{
	struct log_line *old = log_at(l, 0);
	bool shown = l->filter[0] == '\0';

	if (l->match_count > 0 && l->matches[l->match_head] == l->line_base) {
		l->match_head = (l->match_head + 1) % MODEL_LOG_MAX;
		l->match_count--;
		shown = true;
	}
	if (shown && !l->follow && l->top > 0)
		l->top--;
	free(old->text);
	free(old->run_id);
	memset(old, 0, sizeof *old);
	l->head = (l->head + 1) % MODEL_LOG_MAX;
	l->count--;
	l->line_base++;
}

/* A new last line with no text yet; the ring drops its oldest when full. */
static struct log_line *
log_push(struct model *m, enum log_kind kind, const char *hms, const char *run_id)
{
	struct m_log *l = &m->log;
	struct log_line *line;

	log_match_last(l);
	if (l->count == MODEL_LOG_MAX)
		log_drop_oldest(l);
	line = log_at(l, l->count++);
	line->kind = kind;
	line->error = false;
	snprintf(line->time, sizeof line->time, "%s", hms);
	line->run_id = xstrdup_or_null(run_id);
	line->text = NULL;
	m->dirty = true;
	return line;
}

/* Ends the open output line, giving back its unused room. */
static void
log_close_output(struct m_log *l)
{
	struct log_line *line;

	if (!l->open_output)
		return;
	line = log_at(l, l->count - 1);
	line->text = xrealloc(line->text, l->open_len + 1);
	l->open_output = false;
	l->open_len = 0;
}

/* "HH:MM:SS" local time of an RFC 3339 time; "" when it is not one. */
static void
event_hms(const char *time, char out[9])
{
	int64_t ms;
	time_t t;
	struct tm tm;

	out[0] = '\0';
	if (time == NULL || !td_time_parse(time, &ms))
		return;
	t = (time_t)(ms / 1000);
	if (localtime_r(&t, &tm) == NULL || strftime(out, 9, "%H:%M:%S", &tm) == 0)
		out[0] = '\0';
}

/* A byte as a line shows it: tab or newline a space, other controls '?', '\r' nothing (0). */
static unsigned char
clean_byte(unsigned char c)
{
	if (c == '\t' || c == '\n')
		return ' ';
	if (c == '\r')
		return 0;
	if (c < 0x20 || c == 0x7f)
		return '?';
	return c;
}

/* Opens an output line for ev's run, carrying len bytes of the broken line before. */
static void
log_open_output(struct model *m, const char *hms, const char *run_id,
    const char *carry, size_t len)
{
	struct log_line *line = log_push(m, LOG_OUTPUT, hms, run_id);

	line->text = xmalloc(MODEL_LINE_MAX + 1);
	memcpy(line->text, carry, len);
	line->text[len] = '\0';
	m->log.open_output = true;
	m->log.open_len = len;
}

/* A full open line ends before the character that byte c continues; the rest opens the next. */
static void
log_break_output(struct model *m, unsigned char c)
{
	struct m_log *l = &m->log;
	struct log_line *line = log_at(l, l->count - 1);
	char carry[4], hms[9], *run_id;
	size_t cut = l->open_len, k = cut, len;

	if ((c & 0xc0) == 0x80) {
		while (k > 0 && cut - k < 3 && ((unsigned char)line->text[k - 1] & 0xc0) == 0x80)
			k--;
		if (k > 0 && ((unsigned char)line->text[k - 1] & 0xc0) == 0xc0)
			cut = k - 1;
	}
	len = l->open_len - cut;
	memcpy(carry, line->text + cut, len);
	line->text[cut] = '\0';
	l->open_len = cut;
	memcpy(hms, line->time, sizeof hms);
	run_id = xstrdup_or_null(line->run_id);
	log_close_output(l);
	log_open_output(m, hms, run_id, carry, len);
	free(run_id);
}

/* run.output: '\n' ends a line, the last line stays open and grows. */
static void
log_output(struct model *m, const struct td_event *ev, const char *delta)
{
	struct m_log *l = &m->log;
	char hms[9] = "";
	bool timed = false;

	if (l->open_output && !str_eq(log_at(l, l->count - 1)->run_id, ev->run_id))
		log_close_output(l);
	for (const unsigned char *p = (const unsigned char *)delta; *p != '\0'; p++) {
		unsigned char c;
		struct log_line *line;

		if (!l->open_output) {
			if (!timed)
				event_hms(ev->time, hms);
			timed = true;
			log_open_output(m, hms, ev->run_id, "", 0);
		}
		if (*p == '\n') {
			log_close_output(l);
			continue;
		}
		c = clean_byte(*p);
		if (c == 0)
			continue;
		if (l->open_len == MODEL_LINE_MAX)
			log_break_output(m, c);
		line = log_at(l, l->count - 1);
		line->text[l->open_len++] = (char)c;
		line->text[l->open_len] = '\0';
	}
	log_match_last(l);
	m->dirty = true;
}

/* One line of text (cleaned, cut at MODEL_LINE_MAX on a character boundary). */
static void
log_add_line(struct model *m, enum log_kind kind, bool error, const char *hms,
    const char *run_id, const char *text)
{
	struct m_log *l = &m->log;
	struct log_line *line;
	size_t n = strlen(text), j = 0;

	log_close_output(l);
	line = log_push(m, kind, hms, run_id);
	line->error = error;
	if (n > MODEL_LINE_MAX) {
		n = MODEL_LINE_MAX;
		while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
	}
	line->text = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = clean_byte((unsigned char)text[i]);

		if (c != 0)
			line->text[j++] = (char)c;
	}
	line->text[j] = '\0';
	log_match_last(l);
	log_track_end(m);
}

/* "2.1 KiB". */
static void
human_size(struct buf *b, long long size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)size;
	size_t u = 0;

	if (size < 1024) {
		buf_printf(b, "%lld B", size);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	buf_printf(b, "%.1f %s", v, units[u]);
}

/* Appends the non-null strings of keys, separated by spaces. */
static void
join_strings(struct buf *b, const cJSON *d, const char *const *keys)
{
	for (; *keys != NULL; keys++) {
		const char *s = json_get_string(d, *keys);

		if (s == NULL || *s == '\0')
			continue;
		if (b->len > 0)
			buf_appends(b, " ");
		buf_appends(b, s);
	}
}

static bool
text_status(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	(void)d;
	buf_appends(b, strcmp(ev->type, "run.queued") == 0 ? "run queued" : "run started");
	return false;
}

static bool
text_finished(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	const char *status = json_get_string(d, "status");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(d, "error");

	(void)ev;
	buf_printf(b, "run finished: %s", status ? status : "?");
	if (cJSON_IsObject(err)) {
		const char *code = json_get_string(err, "code"), *msg = json_get_string(err, "message");

		buf_printf(b, " (%s%s%s)", code ? code : "error", msg && *msg ? ": " : "",
		    msg && *msg ? msg : "");
	}
	return str_eq(status, "failed");
}

static bool
text_progress(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	const char *phase = json_get_string(d, "phase"), *msg = json_get_string(d, "message");

	(void)ev;
	buf_appends(b, phase ? phase : "progress");
	if (msg != NULL && *msg != '\0')
		buf_printf(b, ": %s", msg);
	return false;
}

static bool
text_tool(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	static const char *const keys[] = { "name", "summary", "status", NULL };
	const char *status = json_get_string(d, "status");

	(void)ev;
	join_strings(b, d, keys);
	return str_eq(status, "failed") || str_eq(status, "denied");
}

static bool
text_permission(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	static const char *const keys[] = { "tool", "summary", NULL };
	const char *status = json_get_string(d, "status");

	(void)ev;
	buf_printf(b, "permission %s:", status ? status : "?");
	join_strings(b, d, keys);
	return false;
}

static bool
text_plan(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	const char *status = json_get_string(d, "status"), *summary = json_get_string(d, "summary");

	(void)ev;
	buf_printf(b, "plan v%ld r%ld %s", json_long(d, "version"), json_long(d, "revision"),
	    status ? status : "?");
	if (summary != NULL && *summary != '\0')
		buf_printf(b, ": %s", summary);
	return false;
}

static bool
text_artifact(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(d, "size");
	const char *name = json_get_string(d, "name");

	(void)ev;
	buf_printf(b, "artifact %s", name ? name : "?");
	if (cJSON_IsNumber(size)) {
		buf_appends(b, " (");
		human_size(b, (long long)size->valuedouble);
		buf_appends(b, ")");
	}
	return false;
}

/* The log line of each event type (run.output is assembled apart). */
static const struct log_format {
	const char *type;
	enum log_kind kind;
	bool (*text)(struct buf *, const struct td_event *, const cJSON *);	/* true: an error */
} log_formats[] = {
	{ "run.queued", LOG_STATUS, text_status },
	{ "run.started", LOG_STATUS, text_status },
	{ "run.finished", LOG_STATUS, text_finished },
	{ "run.progress", LOG_PROGRESS, text_progress },
	{ "run.tool", LOG_TOOL, text_tool },
	{ "run.permission", LOG_PERMISSION, text_permission },
	{ "plan.updated", LOG_PLAN, text_plan },
	{ "artifact.saved", LOG_ARTIFACT, text_artifact },
};

/* Adds what ev shows to the log. */
static void
log_add_event(struct model *m, const struct td_event *ev, const cJSON *data)
{
	struct buf b;
	char hms[9];
	bool error;

	if (strcmp(ev->type, "run.output") == 0) {
		const char *delta = json_get_string(data, "delta");

		if (delta != NULL)
			log_output(m, ev, delta);
		log_track_end(m);
		return;
	}
	for (size_t i = 0; i < sizeof log_formats / sizeof log_formats[0]; i++) {
		if (strcmp(ev->type, log_formats[i].type) != 0)
			continue;
		buf_init(&b, 0);
		error = log_formats[i].text(&b, ev, data);
		event_hms(ev->time, hms);
		log_add_line(m, log_formats[i].kind, error, hms, ev->run_id, b.data ? b.data : "");
		buf_free(&b);
		return;
	}
}

static void
log_notice(struct model *m, const char *time, const char *text)
{
	char hms[9];

	event_hms(time, hms);
	log_add_line(m, LOG_NOTICE, false, hms, NULL, text);
}

/* True when the log already holds ev: the same stream, a seq not above the last applied. */
static bool
log_seen(const struct m_log *l, const struct td_event *ev)
{
	return ev->stream_id != NULL && str_eq(l->history_stream, ev->stream_id) &&
	    ev->seq <= l->history_max_seq;
}

/* Remembers ev as the last one applied. */
static void
log_mark(struct m_log *l, const struct td_event *ev)
{
	if (ev->stream_id == NULL)
		return;
	if (!str_eq(l->history_stream, ev->stream_id)) {
		set_str(&l->history_stream, ev->stream_id);
		l->history_max_seq = ev->seq;
	} else if (ev->seq > l->history_max_seq)
		l->history_max_seq = ev->seq;
}

/* Applies ev to the log unless it is there already. */
static void
log_apply(struct model *m, const struct td_event *ev, const cJSON *data)
{
	cJSON *parsed = NULL;

	if (ev->type == NULL || log_seen(&m->log, ev))
		return;
	if (data == NULL && ev->data_json != NULL) {
		parsed = data_parse(ev->data_json);
		data = parsed;
	}
	log_add_event(m, ev, data);
	log_mark(&m->log, ev);
	cJSON_Delete(parsed);
}

static void
log_pending_clear(struct m_log *l)
{
	for (size_t i = 0; i < l->pending_count; i++)
		td_event_free(l->pending[i]);
	free(l->pending);
	l->pending = NULL;
	l->pending_count = 0;
}

static void
log_lines_clear(struct m_log *l)
{
	for (size_t i = 0; i < l->count; i++) {
		free(log_at(l, i)->text);
		free(log_at(l, i)->run_id);
	}
	memset(l->lines, 0, MODEL_LOG_MAX * sizeof *l->lines);
	l->head = 0;
	l->count = 0;
	l->open_output = false;
	l->open_len = 0;
	l->match_head = 0;
	l->match_count = 0;
	l->top = 0;
}

/* Empties the log for another scope. */
static void
log_reset(struct m_log *l)
{
	log_lines_clear(l);
	log_pending_clear(l);
	free(l->scope_id);
	l->scope_id = NULL;
	free(l->history_stream);
	l->history_stream = NULL;
	l->history_max_seq = 0;
	l->loading = false;
	l->follow = true;
}

/* True when ev belongs in the log's run or session. */
static bool
log_in_scope(const struct m_log *l, const struct td_event *ev)
{
	if (l->scope_id == NULL)
		return false;
	return str_eq(l->run_scope ? ev->run_id : ev->session_id, l->scope_id);
}

/*
 * Asks for the scope's history (again: merged without duplicates).  Live
 * events are held until a load ends; a load already under way goes on.
 */
static unsigned
log_reload(struct m_log *l)
{
	if (l->scope_id == NULL)
		return NEED_NONE;
	l->loading = true;
	return NEED_HISTORY;
}

/* The history load ended: the held events follow it. */
static void
log_loaded(struct model *m)
{
	struct m_log *l = &m->log;

	l->loading = false;
	for (size_t i = 0; i < l->pending_count; i++)
		log_apply(m, l->pending[i], NULL);
	log_pending_clear(l);
}

/* A live event of the scope: applied, or held while the history loads. */
static unsigned
log_live(struct model *m, const struct td_event *ev, const cJSON *data)
{
	struct m_log *l = &m->log;

	if (!l->loading) {
		log_apply(m, ev, data);
		return NEED_NONE;
	}
	if (l->pending_count == MODEL_PENDING_MAX) {
		/*
		 * The history is too slow: show the live events from where the
		 * load began, and drop what of it comes later (older lines).
		 */
		log_notice(m, ev->time, "earlier lines are not shown: the history came too late");
		log_loaded(m);
		log_apply(m, ev, data);
		return NEED_NONE;
	}
	if ((l->pending_count & (l->pending_count - 1)) == 0)
		l->pending = xrealloc(l->pending, (l->pending_count ? l->pending_count * 2 : 16) *
		    sizeof *l->pending);
	l->pending[l->pending_count++] = model_event_new(ev->seq, ev->stream_id, ev->type,
	    ev->time, ev->project_id, ev->session_id, ev->run_id, ev->data_json, NULL);
	return NEED_NONE;
}

/* The log shows the selected run or session; another one empties it. */
static unsigned
log_rescope(struct model *m)
{
	struct m_log *l = &m->log;
	const char *want = NULL;

	if (l->run_scope) {
		const struct m_run *r = model_run(m);

		want = r ? r->id : NULL;
	} else {
		const struct m_session *s = model_session(m);

		want = s ? s->id : NULL;
	}
	if (want == l->scope_id || str_eq(want, l->scope_id))
		return NEED_NONE;
	log_reset(l);
	l->scope_id = xstrdup_or_null(want);
	m->dirty = true;
	return log_reload(l);
}

void
model_log_history(struct model *m, const char *scope_id, struct td_event *const *events,
    size_t n, bool done)
{
	struct m_log *l = &m->log;

	if (!str_eq(scope_id, l->scope_id))
		return;
	for (size_t i = 0; i < n; i++)
		log_apply(m, events[i], NULL);
	if (done && l->loading)
		log_loaded(m);
	log_track_end(m);
	m->dirty = true;
}

unsigned
model_log_scope(struct model *m, bool run_scope)
{
	if (m->log.run_scope == run_scope)
		return NEED_NONE;
	m->log.run_scope = run_scope;
	m->dirty = true;
	return log_rescope(m);
}

void
model_log_fit(struct model *m, size_t rows)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m);

	l->rows = rows ? rows : 1;
	if (l->follow)
		log_track_end(m);
	else if (vis <= l->rows)
		l->top = 0;
	else if (l->top > vis - l->rows)
		l->top = vis - l->rows;
}

void
model_log_follow(struct model *m, bool on)
{
	m->log.follow = on;
	log_track_end(m);
	m->dirty = true;
}

void
model_log_toggle_wrap(struct model *m)
{
	m->log.wrap = !m->log.wrap;
	m->dirty = true;
}

void
model_log_toggle_timestamps(struct model *m)
{
	m->log.timestamps = !m->log.timestamps;
	m->dirty = true;
}

void
model_log_filter(struct model *m, const char *query)
{
	struct m_log *l = &m->log;
	size_t n = strlen(query);

	if (n >= MODEL_QUERY_MAX) {
		n = MODEL_QUERY_MAX - 1;
		while (n > 0 && ((unsigned char)query[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(l->filter, query, n);
	l->filter[n] = '\0';
	if (n > 0)
		memcpy(l->last_filter, l->filter, n + 1);
	log_rebuild_matches(l);
	log_track_end(m);
	m->dirty = true;
}

/* Scrolls the log; up turns follow off, the end (LONG_MAX) turns it on. */
static void
log_scroll(struct model *m, long delta, size_t rows)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), last_top;

	if (rows > 0)
		l->rows = rows;
	last_top = vis > l->rows ? vis - l->rows : 0;
	if (delta == LONG_MAX) {
		l->follow = true;
		l->top = last_top;
	} else if (delta == LONG_MIN) {
		l->follow = false;
		l->top = 0;
	} else if (delta < 0) {
		if (l->follow)
			l->top = last_top;
		l->follow = false;
		l->top = (size_t)-delta > l->top ? 0 : l->top - (size_t)-delta;
	} else if (!l->follow)
		l->top = l->top + (size_t)delta > last_top ? last_top : l->top + (size_t)delta;
}

/* --- selection ------------------------------------------------------------- */

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

const struct m_artifact *
model_artifact(const struct model *m)
{
	return m->artifacts_cur.sel < m->artifact_count ?
	    &m->artifacts[m->artifacts_cur.sel] : NULL;
}

static const char *
sel_project_id(const struct model *m)
{
	const struct m_project *p = model_project(m);

	return p ? p->id : NULL;
}

static const char *
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

	runs_clear(&m->runs, &m->run_count);
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
	runs_clear(&m->project_runs, &m->project_run_count);
	need = session_changed(m);
	if (model_project(m) != NULL)
		need |= NEED_SESSIONS | NEED_PROJECT_RUNS;
	return need;
}

/* The selected ids before a change, to see what it changed. */
struct sel_ids {
	char *project, *session, *run;
};

static void
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
	return a == b || str_eq(a, b);
}

/* What the change since sel_save asks for; frees s. */
static unsigned
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
		if (m->focus == PANE_PROJECTS)
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
	else if (m->right == RIGHT_ARTIFACTS)
		cursor_move(&m->artifacts_cur, m->artifact_count, delta, page_rows);
	else if (delta == LONG_MIN)
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
		if (str_eq(m->permissions[i].run_id, run_id))
			return true;
	}
	return false;
}

/* permission_pending of every run from the pending prompts. */
static void
runs_mark_prompts(struct model *m)
{
	for (size_t i = 0; i < m->run_count; i++)
		m->runs[i].permission_pending = run_has_prompt(m, m->runs[i].id);
	for (size_t i = 0; i < m->project_run_count; i++)
		m->project_runs[i].permission_pending = run_has_prompt(m, m->project_runs[i].id);
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
		}
		m->project_count = l->count;
	}
	cursor_keep(&m->projects_cur, index_of(m->projects, m->project_count,
	    sizeof *m->projects, s.project), m->project_count);
	m->dirty = true;
	return sel_changes(m, &s);
}

unsigned
model_set_sessions(struct model *m, const char *for_project, const struct td_session_list *l)
{
	struct sel_ids s;

	if (!str_eq(for_project, sel_project_id(m)))
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
		}
		m->session_count = l->count;
	}
	cursor_keep(&m->sessions_cur, index_of(m->sessions, m->session_count,
	    sizeof *m->sessions, s.session), m->session_count);
	m->dirty = true;
	return sel_changes(m, &s);
}

/* Replaces a run array by the list's runs. */
static void
runs_from_list(struct m_run **runs, size_t *count, const struct td_run_list *l)
{
	runs_clear(runs, count);
	if (l == NULL || l->count == 0)
		return;
	*runs = xcalloc(l->count, sizeof **runs);
	for (size_t i = 0; i < l->count; i++)
		run_fill(&(*runs)[i], &l->items[i]);
	*count = l->count;
}

unsigned
model_set_runs(struct model *m, const char *for_session, const struct td_run_list *l)
{
	struct sel_ids s;

	if (!str_eq(for_session, sel_session_id(m)))
		return NEED_NONE;
	sel_save(m, &s);
	runs_from_list(&m->runs, &m->run_count, l);
	cursor_keep(&m->runs_cur, index_of(m->runs, m->run_count, sizeof *m->runs, s.run),
	    m->run_count);
	runs_mark_prompts(m);
	m->dirty = true;
	return sel_changes(m, &s);
}

void
model_set_project_runs(struct model *m, const char *for_project, const struct td_run_list *l)
{
	if (!str_eq(for_project, sel_project_id(m)))
		return;
	runs_from_list(&m->project_runs, &m->project_run_count, l);
	runs_mark_prompts(m);
	m->dirty = true;
}

void
model_set_artifacts(struct model *m, const char *for_session, const struct td_artifact_list *l)
{
	char *sel;

	if (!str_eq(for_session, sel_session_id(m)))
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
	cursor_keep(&m->artifacts_cur, index_of(m->artifacts, m->artifact_count,
	    sizeof *m->artifacts, sel), m->artifact_count);
	free(sel);
	m->dirty = true;
}

void
model_set_plan(struct model *m, const char *for_session, const struct td_plan *plan)
{
	struct m_plan *p = &m->plan;

	if (!str_eq(for_session, sel_session_id(m)))
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
	return index_of(m->permissions, m->permission_count, sizeof *m->permissions, id) !=
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
		n++;
	}
	permissions_clear(m);
	m->permissions = items;
	m->permission_count = n;
	if (fresh)
		m->permission_hidden = false;
	runs_mark_prompts(m);
	m->dirty = true;
}

void
model_set_doctor(struct model *m, const struct td_doctor_report *r)
{
	if (r == NULL)
		return;
	set_str(&m->service_version, r->version);
	m->service_ready = r->ready;
	m->dirty = true;
}

/* The run id in the list, inserted at the front (newest first) when missing and insert is set. */
static struct m_run *
runs_upsert(struct m_run **runs, size_t *count, struct m_cursor *cur, const char *id,
    bool insert, bool *inserted)
{
	size_t i = index_of(*runs, *count, sizeof **runs, id);

	*inserted = false;
	if (i != SIZE_MAX)
		return &(*runs)[i];
	if (!insert)
		return NULL;
	*runs = insert_front(*runs, *count, sizeof **runs);
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
	    str_eq(run->session_id, sel_session_id(m)), &inserted);
	if (r != NULL)
		run_fill(r, run);
	r = runs_upsert(&m->project_runs, &m->project_run_count, NULL, run->id,
	    str_eq(run->project_id, sel_project_id(m)), &inserted);
	if (r != NULL)
		run_fill(r, run);
	runs_mark_prompts(m);
	m->dirty = true;
	return sel_changes(m, &s);
}

/* --- events ---------------------------------------------------------------- */

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
	    insert && str_eq(ev->session_id, sel_session_id(m)), &inserted);
	if (inserted) {
		set_str(&c->runs[0]->session_id, ev->session_id);
		set_str(&c->runs[0]->project_id, ev->project_id);
		set_str(&c->runs[0]->created_at, ev->time);
		c->need |= NEED_NEW_RUNS;
	}
	c->runs[1] = runs_upsert(&m->project_runs, &m->project_run_count, NULL, ev->run_id,
	    insert && str_eq(ev->project_id, sel_project_id(m)), &inserted);
	if (inserted) {
		set_str(&c->runs[1]->session_id, ev->session_id);
		set_str(&c->runs[1]->project_id, ev->project_id);
		set_str(&c->runs[1]->created_at, ev->time);
	}
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
	for (int k = 0; k < 2; k++) {
		struct m_run *r = c->runs[k];

		if (r == NULL)
			continue;
		set_str(&r->status, status);
		if (final) {
			set_str(&r->error_code, json_get_string(err, "code"));
			set_str(&r->error_message, json_get_string(err, "message"));
			set_str(&r->attention, NULL);
		}
	}
	i = index_of(c->m->sessions, c->m->session_count, sizeof *c->m->sessions,
	    c->ev->session_id);
	if (i != SIZE_MAX)
		set_str(&c->m->sessions[i].last_run_status, status);
	if (final) {
		/* A final run waits for nothing: its prompts are gone. */
		struct model *m = c->m;
		size_t n = 0;

		for (size_t j = 0; j < m->permission_count; j++) {
			if (str_eq(m->permissions[j].run_id, c->ev->run_id))
				permission_clear(&m->permissions[j]);
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
			set_str(&c->runs[k]->phase, json_get_string(c->data, "phase"));
	}
}

static void
ev_attention(struct ev_ctx *c)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c->data, "attention");

	ev_runs(c, false);
	for (int k = 0; k < 2; k++) {
		if (c->runs[k] != NULL)
			set_str(&c->runs[k]->attention, json_get_string(a, "kind"));
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
	i = index_of(m->permissions, m->permission_count, sizeof *m->permissions, id);
	if (str_eq(status, "pending")) {
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
		m->permission_hidden = false;
		m->attention_seen++;
	} else if (i != SIZE_MAX) {
		permission_clear(&m->permissions[i]);
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
	if (!str_eq(sid, sel_session_id(c->m)) || !cJSON_IsObject(c->data))
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
	if (id == NULL || !str_eq(sid, sel_session_id(m)))
		return;
	if (index_of(m->artifacts, m->artifact_count, sizeof *m->artifacts, id) != SIZE_MAX)
		return;
	m->artifacts = insert_front(m->artifacts, m->artifact_count, sizeof *m->artifacts);
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

	if (id == NULL || !str_eq(pid ? pid : c->ev->project_id, sel_project_id(m)))
		return;
	i = index_of(m->sessions, m->session_count, sizeof *m->sessions, id);
	if (i == SIZE_MAX) {
		m->sessions = insert_front(m->sessions, m->session_count, sizeof *m->sessions);
		if (m->session_count++ > 0)
			m->sessions_cur.sel++;
		i = 0;
	}
	session_fill_json(&m->sessions[i], c->data);
}

static void
ev_project(struct ev_ctx *c)
{
	struct model *m = c->m;
	const char *id = json_get_string(c->data, "id");
	size_t i;

	if (id == NULL)
		return;
	i = index_of(m->projects, m->project_count, sizeof *m->projects, id);
	if (i == SIZE_MAX) {
		m->projects = insert_front(m->projects, m->project_count, sizeof *m->projects);
		if (m->project_count++ > 0)
			m->projects_cur.sel++;
		i = 0;
		m->projects[0].id = xstrdup(id);
	}
	set_str(&m->projects[i].name, json_get_string(c->data, "name"));
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
	{ "project.updated", ev_project },
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
		set_str(&m->stream_id, ev->stream_id);
	if (strcmp(ev->type, "stream.resync-required") == 0) {
		unsigned need = model_refresh(m);
		const char *reason = NULL;

		data = data_parse(ev->data_json);
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
	data = data_parse(ev->data_json);
	if (h != NULL) {
		sel_save(m, &s);
		c.data = data;
		h->apply(&c);
		c.need |= sel_changes(m, &s);
		m->dirty = true;
	}
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

struct td_event *
model_event_new(long long seq, const char *stream_id, const char *type, const char *time,
    const char *project_id, const char *session_id, const char *run_id,
    const char *data_json, const char *json)
{
	const char *src[] = { stream_id, type, time, project_id, session_id, run_id,
	    data_json ? data_json : "null", json };
	size_t size = sizeof(struct td_event);
	struct td_event *ev;
	char **dst[8], *p;

	for (size_t i = 0; i < 8; i++)
		size += src[i] ? strlen(src[i]) + 1 : 0;
	ev = xcalloc(1, size);
	dst[0] = &ev->stream_id;
	dst[1] = &ev->type;
	dst[2] = &ev->time;
	dst[3] = &ev->project_id;
	dst[4] = &ev->session_id;
	dst[5] = &ev->run_id;
	dst[6] = &ev->data_json;
	dst[7] = &ev->json;
	ev->seq = seq;
	p = (char *)(ev + 1);
	for (size_t i = 0; i < 8; i++) {
		if (src[i] == NULL)
			continue;
		*dst[i] = p;
		p = stpcpy(p, src[i]) + 1;
	}
	return ev;
}

/* --- the rest -------------------------------------------------------------- */

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
	runs_clear(&m->runs, &m->run_count);
	runs_clear(&m->project_runs, &m->project_run_count);
	artifacts_clear(m);
	permissions_clear(m);
	model_attention_free(m);
	plan_clear(&m->plan);
	if (m->log.lines != NULL)
		log_reset(&m->log);
	free(m->log.lines);
	free(m->log.matches);
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

void
model_message(struct model *m, long long now_ms, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->message, sizeof m->message, fmt, ap);
	va_end(ap);
	m->message_error = error;
	m->message_until_ms = now_ms + MESSAGE_MS;
	m->dirty = true;
}

void
model_download_progress(struct model *m, const char *name, long long done, long long total)
{
	m->download_active = true;
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

		if (!str_eq(run->status, "running"))
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
