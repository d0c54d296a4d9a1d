#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "problem.h"
#include "resource.h"
#include "timeutil.h"

const char *const resource_frameworks[] = { "taskdeck", "claude-code", "codex", "acp", NULL };
const char *const resource_efforts[] = { "low", "medium", "high", NULL };
const char *const resource_profiles[] = { "ask", "workspace-write", "read-only",
	"full-access", NULL };

void
resource_add_time(cJSON *obj, const char *key, int64_t ms)
{
	char t[TD_TIME_LEN];

	time_format_utc(ms, t);
	cJSON_AddStringToObject(obj, key, t);
}

const char *
resource_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

void
resource_add_text_or_null(cJSON *obj, const char *key, sqlite3_stmt *s, int i)
{
	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		cJSON_AddNullToObject(obj, key);
	else
		cJSON_AddStringToObject(obj, key, resource_text(s, i));
}

void
resource_add_time_or_null(cJSON *obj, const char *key, sqlite3_stmt *s, int i)
{
	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		cJSON_AddNullToObject(obj, key);
	else
		resource_add_time(obj, key, sqlite3_column_int64(s, i));
}

bool
resource_archived_parse(const char *text, enum resource_archived *which)
{
	static const char *const words[] = { "false", "true", "all" };

	*which = RESOURCE_ARCHIVED_HIDE;
	if (text == NULL)
		return true;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		if (strcmp(text, words[i]) == 0) {
			*which = (enum resource_archived)i;
			return true;
		}
	}
	return false;
}

cJSON *
resource_load(sqlite3_stmt *s, const char *key, cJSON *(*row)(sqlite3_stmt *s))
{
	cJSON *j = NULL;

	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		j = row(s);
	sqlite3_reset(s);
	return j;
}

cJSON *
resource_json_column(sqlite3_stmt *s, int i)
{
	cJSON *j = cJSON_Parse(resource_text(s, i));

	return j ? j : cJSON_CreateObject();
}

void
resource_page_start(struct resource_page *pg, sqlite3_stmt *s, int param,
    const char *cursor, int limit)
{
	pg->limit = limit;
	pg->n = 0;
	pg->next[0] = '\0';
	if (cursor != NULL)
		sqlite3_bind_text(s, param, cursor, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, param + 1, limit + 1);
}

bool
resource_page_row(struct resource_page *pg, sqlite3_stmt *s)
{
	if (sqlite3_step(s) != SQLITE_ROW) {
		pg->next[0] = '\0';
		return false;
	}
	if (++pg->n > pg->limit)
		return false;
	snprintf(pg->next, sizeof pg->next, "%s", resource_text(s, 0));
	return true;
}

enum td_code
problem_set(struct problem *p, enum td_code code, const char *field, const char *fmt, ...)
{
	va_list ap;

	p->code = code;
	snprintf(p->field, sizeof p->field, "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(p->message, sizeof p->message, fmt, ap);
	va_end(ap);
	return code;
}

enum td_code
problem_not_found(struct problem *p, const char *resource, const char *id)
{
	if (id != NULL) {
		cJSON_Delete(p->details);
		p->details = cJSON_CreateObject();
		cJSON_AddStringToObject(p->details, "id", id);
	}
	return problem_set(p, TD_NOT_FOUND, resource, "No %s with that id.", resource);
}
