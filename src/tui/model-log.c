/* The model's log: lines of the selected run or session, follow, filter, scroll. */
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
#include "units.h"
#include "xalloc.h"


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

static unsigned long long log_vis_serial(const struct m_log *l, size_t i);
static bool log_serial_vis(const struct m_log *l, unsigned long long serial, size_t *out);

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

	l->gen++;
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

	l->gen++;
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
	line->ms = l->event_ms;
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
	if (time == NULL || !time_parse_utc(time, &ms))
		return;
	t = (time_t)(ms / 1000);
	if (localtime_r(&t, &tm) == NULL || strftime(out, 9, "%H:%M:%S", &tm) == 0)
		out[0] = '\0';
}

/* The time of the event being added, for the lines it makes. */
static void
log_event_ms(struct m_log *l, const char *time)
{
	int64_t ms;

	l->event_ms = time != NULL && time_parse_utc(time, &ms) ? (long long)ms : 0;
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

	if (l->open_output && !mdl_str_eq(log_at(l, l->count - 1)->run_id, ev->run_id))
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
	return mdl_str_eq(status, "failed");
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
	if (json_get_string(d, "subagent") != NULL)	/* a subagent's call, under its own */
		buf_appends(b, "  \u21b3");
	join_strings(b, d, keys);
	return mdl_str_eq(status, "failed") || mdl_str_eq(status, "denied");
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
	buf_printf(b, "plan v%ld r%ld %s", mdl_json_long(d, "version"), mdl_json_long(d, "revision"),
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
		{
			char text[32];

			units_format_size((long long)size->valuedouble, text, sizeof text);
			buf_appends(b, text);
		}
		buf_appends(b, ")");
	}
	return false;
}

/* run.review: the verdict and its findings; requested changes show as an error. */
static bool
text_review(struct buf *b, const struct td_event *ev, const cJSON *d)
{
	const char *verdict = json_get_string(d, "verdict");
	const cJSON *f;
	bool first = true;

	(void)ev;
	buf_printf(b, "review %s", mdl_str_eq(verdict, "approved") ? "approved" :
	    mdl_str_eq(verdict, "changes_requested") ? "requested changes" : "failed");
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(d, "findings")) {
		if (cJSON_IsString(f)) {
			buf_printf(b, "%s%s", first ? ": " : "; ", f->valuestring);
			first = false;
		}
	}
	return !mdl_str_eq(verdict, "approved");
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
	{ "run.review", LOG_PLAN, text_review },
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

void
log_notice(struct model *m, const char *time, const char *text)
{
	char hms[9];

	event_hms(time, hms);
	log_event_ms(&m->log, time);
	log_add_line(m, LOG_NOTICE, false, hms, NULL, text);
}

/* True when the log already holds ev: the same stream, a seq not above the last applied. */
static struct m_seen *
log_stream(const struct m_log *l, const char *stream_id)
{
	for (size_t i = 0; i < l->seen_count; i++) {
		if (strcmp(l->seen[i].stream, stream_id) == 0)
			return &l->seen[i];
	}
	return NULL;
}

static bool
log_seen(const struct m_log *l, const struct td_event *ev)
{
	const struct m_seen *s = ev->stream_id != NULL ? log_stream(l, ev->stream_id) : NULL;

	return s != NULL && ev->seq <= s->max_seq;
}

/* Remembers ev as applied: the highest seq of its stream. */
static void
log_mark(struct m_log *l, const struct td_event *ev)
{
	struct m_seen *s;

	if (ev->stream_id == NULL)
		return;
	s = log_stream(l, ev->stream_id);
	if (s == NULL) {
		l->seen = xrealloc(l->seen, (l->seen_count + 1) * sizeof *l->seen);
		s = &l->seen[l->seen_count++];
		s->stream = xstrdup(ev->stream_id);
		s->max_seq = ev->seq;
	} else if (ev->seq > s->max_seq)
		s->max_seq = ev->seq;
}

/* Applies ev to the log unless it is there already. */
static void
log_apply(struct model *m, const struct td_event *ev, const cJSON *data)
{
	cJSON *parsed = NULL;

	if (ev->type == NULL || log_seen(&m->log, ev))
		return;
	if (data == NULL && ev->data_json != NULL) {
		parsed = mdl_data_parse(ev->data_json);
		data = parsed;
	}
	log_event_ms(&m->log, ev->time);
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
	l->search_at = ULLONG_MAX;
	l->gen++;
}

/* Empties the log for another scope. */
void
log_reset(struct m_log *l)
{
	log_lines_clear(l);
	log_pending_clear(l);
	free(l->scope_id);
	l->scope_id = NULL;
	for (size_t i = 0; i < l->seen_count; i++)
		free(l->seen[i].stream);
	free(l->seen);
	l->seen = NULL;
	l->seen_count = 0;
	l->loading = false;
	l->follow = true;
	l->jump_serial = ULLONG_MAX;
}

/* True when ev belongs in the log's run or session. */
bool
log_in_scope(const struct m_log *l, const struct td_event *ev)
{
	if (l->scope_id == NULL)
		return false;
	return mdl_str_eq(l->run_scope ? ev->run_id : ev->session_id, l->scope_id);
}

/*
 * Asks for the scope's history (again: merged without duplicates).  Live
 * events are held until a load ends; a load already under way goes on.
 */
unsigned
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
unsigned
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
unsigned
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
	if (want == l->scope_id || mdl_str_eq(want, l->scope_id))
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

	if (!mdl_str_eq(scope_id, l->scope_id))
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
	m->log.jump_serial = ULLONG_MAX;
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
	struct m_log *l = &m->log;

	if (l->timestamps && !l->relative)
		l->relative = true;
	else if (l->timestamps)
		l->timestamps = l->relative = false;
	else
		l->timestamps = true;
	m->dirty = true;
}

size_t
model_log_unseen(struct model *m, size_t end)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), n = 0;
	unsigned long long next = l->line_base + l->count;

	if (l->follow || end >= vis) {
		l->seen_serial = next;
		return 0;
	}
	if (end > 0 && log_vis_serial(l, end - 1) + 1 > l->seen_serial)
		l->seen_serial = log_vis_serial(l, end - 1) + 1;
	while (n < vis - end && log_vis_serial(l, vis - 1 - n) >= l->seen_serial)
		n++;
	return n;
}

/* True when line i shown is a run's first: its run differs from the last
 * line before it that names one. */
static bool
log_run_start(const struct model *m, size_t i)
{
	const struct log_line *ln = model_log_line(m, i), *prev;

	if (ln == NULL || ln->run_id == NULL)
		return false;
	while (i-- > 0) {
		prev = model_log_line(m, i);
		if (prev->run_id != NULL)
			return strcmp(prev->run_id, ln->run_id) != 0;
	}
	return true;
}

const char *
model_log_run_jump(struct model *m, int dir, size_t *index, size_t *total)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), target = SIZE_MAX, i, at;

	*index = *total = 0;
	for (i = 0; i < vis; i++)
		*total += log_run_start(m, i);
	if (l->follow)
		l->top = vis > l->rows ? vis - l->rows : 0;
	/* From the run jumped to last (the last page may show it lower down). */
	at = l->top;
	if (l->jump_serial != ULLONG_MAX && !log_serial_vis(l, l->jump_serial, &at))
		at = l->top;
	if (dir > 0) {
		for (i = at + 1; i < vis && target == SIZE_MAX; i++) {
			if (log_run_start(m, i))
				target = i;
		}
	} else {
		for (i = at; i-- > 0 && target == SIZE_MAX;) {
			if (log_run_start(m, i))
				target = i;
		}
	}
	if (target == SIZE_MAX)
		return NULL;
	for (i = 0; i <= target; i++)
		*index += log_run_start(m, i);
	l->follow = false;
	l->top = target;
	l->jump_serial = log_vis_serial(l, target);
	l->gen++;
	m->dirty = true;
	return model_log_line(m, target)->run_id;
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
	l->gen++;
	log_track_end(m);
	m->dirty = true;
}

/* Scrolls the log; up turns follow off, the end (LONG_MAX) turns it on. */
void
log_scroll(struct model *m, long delta, size_t rows)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), last_top;

	if (rows > 0)
		l->rows = rows;
	l->jump_serial = ULLONG_MAX;
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

/* --- '/' search: jump between the lines shown that hold a query ----------- */

/* The serial of line i shown (filter applied). */
static unsigned long long
log_vis_serial(const struct m_log *l, size_t i)
{
	return l->filter[0] != '\0' ? l->matches[(l->match_head + i) % MODEL_LOG_MAX] :
	    l->line_base + i;
}

/* The place among the lines shown of the line with serial; false when not shown. */
static bool
log_serial_vis(const struct m_log *l, unsigned long long serial, size_t *out)
{
	size_t lo = 0, hi;

	if (serial < l->line_base || serial >= l->line_base + l->count)
		return false;
	if (l->filter[0] == '\0') {
		*out = (size_t)(serial - l->line_base);
		return true;
	}
	hi = l->match_count;
	while (lo < hi) {	/* the matches are in ascending serials */
		size_t mid = lo + (hi - lo) / 2;
		unsigned long long s = log_vis_serial(l, mid);

		if (s == serial) {
			*out = mid;
			return true;
		}
		if (s < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool
log_holds(const struct model *m, size_t i, const char *query)
{
	const struct log_line *ln = model_log_line(m, i);

	return ln != NULL && ln->text != NULL && strcasestr(ln->text, query) != NULL;
}

/* Makes line i shown the current match, shown about a third down the view. */
static void
log_search_goto(struct model *m, size_t i)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), rows = l->rows ? l->rows : 1;
	size_t last_top = vis > rows ? vis - rows : 0;

	l->search_at = log_vis_serial(l, i);
	l->gen++;
	l->follow = false;
	/* Wrapped lines take several rows: then the match goes to the top. */
	if (l->wrap && (i < l->top || i >= l->top + rows / 2))
		l->top = i;
	else if (i < l->top || i >= l->top + rows)
		l->top = i > rows / 3 ? i - rows / 3 : 0;
	if (l->top > last_top)
		l->top = last_top;
	m->dirty = true;
}

bool
model_log_search(struct model *m, const char *query)
{
	struct m_log *l = &m->log;
	size_t n = strlen(query), vis = model_log_visible(m);

	if (n >= MODEL_QUERY_MAX) {
		n = MODEL_QUERY_MAX - 1;
		while (n > 0 && ((unsigned char)query[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(l->search, query, n);
	l->search[n] = '\0';
	l->search_at = ULLONG_MAX;
	l->gen++;
	m->dirty = true;
	if (n == 0)
		return false;
	for (size_t k = 0; k < vis; k++) {
		size_t i = (l->top + k) % vis;

		if (log_holds(m, i, l->search)) {
			log_search_goto(m, i);
			return true;
		}
	}
	return false;
}

int
model_log_search_next(struct model *m, int dir)
{
	struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), from;

	if (l->search[0] == '\0' || vis == 0)
		return 0;
	/* From the current match, else from the first line shown. */
	if (!log_serial_vis(l, l->search_at, &from))
		from = dir > 0 ? (l->top + vis - 1) % vis : l->top % vis;
	for (size_t k = 1; k <= vis; k++) {
		size_t i = dir > 0 ? (from + k) % vis : (from + vis - k % vis) % vis;

		if (log_holds(m, i, l->search)) {
			log_search_goto(m, i);
			return (dir > 0 ? i <= from : i >= from) ? 2 : 1;
		}
	}
	return 0;
}

void
model_log_search_count(const struct model *m, size_t *index, size_t *total)
{
	const struct m_log *l = &m->log;
	size_t vis = model_log_visible(m), cur = SIZE_MAX;

	*index = *total = 0;
	if (l->search[0] == '\0')
		return;
	if (l->count_gen == l->gen + 1) {
		*index = l->count_index;
		*total = l->count_total;
		return;
	}
	if (!log_serial_vis(l, l->search_at, &cur))
		cur = SIZE_MAX;
	for (size_t i = 0; i < vis; i++) {
		if (!log_holds(m, i, l->search))
			continue;
		(*total)++;
		if (i == cur)
			*index = *total;
	}
}

bool
model_log_search_current(const struct model *m, size_t i)
{
	const struct m_log *l = &m->log;

	return l->search[0] != '\0' && i < model_log_visible(m) &&
	    log_vis_serial(l, i) == l->search_at;
}

void
model_log_search_update(struct model *m)
{
	struct m_log *l = &m->log;

	if (l->search[0] == '\0' || l->count_gen == l->gen + 1)
		return;
	model_log_search_count(m, &l->count_index, &l->count_total);
	l->count_gen = l->gen + 1;
}
