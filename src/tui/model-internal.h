/*
 * Private to the model's files (model*.c): helpers and state they share.
 * Nothing outside src/tui/model*.c includes it.
 */
#ifndef TD_TUI_MODEL_INTERNAL_H
#define TD_TUI_MODEL_INTERNAL_H

#include <cjson/cJSON.h>

#include "buf.h"
#include "model.h"

#define MESSAGE_MS 5000

/* The selected ids before a change, to see what it changed. */
struct sel_ids {
	char *project, *session, *run;
};

bool mdl_str_eq(const char *a, const char *b);
void mdl_set_str(char **dst, const char *src);
long mdl_json_long(const cJSON *obj, const char *key);
cJSON *mdl_data_parse(const char *json);
size_t mdl_index_of(const void *items, size_t count, size_t size, const char *id);
void *mdl_insert_front(void *items, size_t count, size_t size);
void m_permission_clear(struct m_permission *p);
void plan_clear(struct m_plan *p);
void projects_clear(struct model *m);
void sessions_clear(struct model *m);
void m_runs_clear(struct m_run **runs, size_t *count);
void artifacts_clear(struct model *m);
void permissions_clear(struct model *m);
void m_run_fill(struct m_run *r, const struct td_run *t);
void session_fill_json(struct m_session *s, const cJSON *j);
void artifact_fill_json(struct m_artifact *a, const cJSON *j);
void plan_fill_json(struct m_plan *p, const cJSON *j);
void log_notice(struct model *m, const char *time, const char *text);
void log_reset(struct m_log *l);
bool log_in_scope(const struct m_log *l, const struct td_event *ev);
unsigned log_reload(struct m_log *l);
unsigned log_live(struct model *m, const struct td_event *ev, const cJSON *data);
unsigned log_rescope(struct model *m);
void log_scroll(struct model *m, long delta, size_t rows);
const char *sel_project_id(const struct model *m);
const char *sel_session_id(const struct model *m);
void sel_save(const struct model *m, struct sel_ids *s);
unsigned sel_changes(struct model *m, struct sel_ids *s);
void runs_mark_prompts(struct model *m);
/* Puts projects, sessions and runs in the order of m->sort (selection kept). */
void lists_sort(struct model *m);
struct m_run *runs_upsert(struct m_run **runs, size_t *count, struct m_cursor *cur, const char *id,
    bool insert, bool *inserted);

#endif
