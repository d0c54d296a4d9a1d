/*
 * Permission prompts (docs/http-api.md, Permission prompts): the prompt
 * domain.  The agent's permission.ask becomes a durable prompt (stored by the
 * supervisor's run threads); answers come from route-permissions.c.  allow-run
 * is a flag of the run, read at each ask.  Below the supervisor and the routes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "prompts.h"
#include "resource.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define TOOL_MAX_CHARS 200
#define SUMMARY_MAX_CHARS 4096



cJSON *
prompt_from_row(sqlite3_stmt *s)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "id", resource_text(s, 0));
	cJSON_AddStringToObject(j, "runId", resource_text(s, 1));
	cJSON_AddStringToObject(j, "sessionId", resource_text(s, 2));
	cJSON_AddStringToObject(j, "projectId", resource_text(s, 3));
	cJSON_AddStringToObject(j, "tool", resource_text(s, 4));
	cJSON_AddStringToObject(j, "summary", resource_text(s, 5));
	cJSON_AddItemToObject(j, "input", resource_json_column(s, 6));
	cJSON_AddStringToObject(j, "status", resource_text(s, 7));
	resource_add_text_or_null(j, "decision", s, 8);
	resource_add_time(j, "createdAt", sqlite3_column_int64(s, 9));
	resource_add_time_or_null(j, "answeredAt", s, 10);
	return j;
}

cJSON *
prompt_load(struct store *st, const char *id)
{
	return resource_load(store_stmt(st, "SELECT " PROMPT_COLUMNS " FROM permission_prompts"
	    " WHERE id = ?1"), id, prompt_from_row);
}

/* run.permission {promptId, tool, summary, status} for the prompt; while locked. */
void
prompt_emit_locked(struct service *svc, const char *id)
{
	cJSON *p = prompt_load(svc->store, id), *d;

	if (p == NULL)
		return;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "promptId", id);
	for (const char *const *k = (const char *const[]){ "tool", "summary", "status", NULL };
	    *k; k++)
		cJSON_AddStringToObject(d, *k, json_get_string(p, *k));
	events_emit(svc->events, "run.permission", json_get_string(p, "projectId"),
	    json_get_string(p, "sessionId"), json_get_string(p, "runId"), d);
	cJSON_Delete(p);
}

/* Pending prompts of run_id (NULL: of every run) become expired; while locked. */
static bool
prompts_expire(struct service *svc, const char *run_id)
{
	struct store *st = svc->store;
	char (*ids)[TD_ID_MAX] = NULL;
	size_t n = 0;
	sqlite3_stmt *s;
	bool ok;

	/* At start-up (run_id NULL): not the prompts of runs that resume. */
	s = store_stmt(st, "SELECT id FROM permission_prompts WHERE status = 'pending'"
	    " AND (?1 IS NULL OR run_id = ?1) AND (?1 IS NOT NULL OR run_id NOT IN"
	    " (SELECT id FROM runs WHERE status = 'running'))");
	if (run_id != NULL)
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		ids = xrealloc(ids, (n + 1) * sizeof *ids);
		snprintf(ids[n++], TD_ID_MAX, "%s", resource_text(s, 0));
	}
	sqlite3_reset(s);
	s = store_stmt(st, "UPDATE permission_prompts SET status = 'expired'"
	    " WHERE status = 'pending' AND (?1 IS NULL OR run_id = ?1) AND (?1 IS NOT NULL OR"
	    " run_id NOT IN (SELECT id FROM runs WHERE status = 'running'))");
	if (run_id != NULL)
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	for (size_t i = 0; ok && i < n; i++)
		prompt_emit_locked(svc, ids[i]);
	free(ids);
	return ok;
}

bool
prompts_run_ended(struct service *svc, const char *run_id)
{
	return prompts_expire(svc, run_id);
}

bool
prompts_recover_locked(struct service *svc)
{
	return prompts_expire(svc, NULL);
}

enum td_code
prompt_ask(struct service *svc, const char *run_id, long long request_id,
    const cJSON *params, bool *allow_now, char **message)
{
	struct store *st = svc->store;
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(params, "input");
	char id[TD_ID_MAX], session[TD_ID_MAX] = "", project[TD_ID_MAX] = "";
	char *input_text;
	sqlite3_stmt *s;
	bool ok;

	*allow_now = false;
	if (!json_check_string(params, "tool", true, false, 1, TOOL_MAX_CHARS) ||
	    !json_check_string(params, "summary", true, false, 0, SUMMARY_MAX_CHARS) ||
	    (input != NULL && !cJSON_IsObject(input))) {
		*message = xstrdup("permission.ask needs a tool, a summary and an input object.");
		return TD_INVALID_REQUEST;
	}
	input_text = input ? json_print(input) : xstrdup("{}");
	id_new("prm", id);
	store_lock(st);
	ok = store_begin(st);
	if (ok) {
		s = store_stmt(st, "SELECT session_id, project_id, allow_run FROM runs"
		    " WHERE id = ?1");
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			snprintf(session, sizeof session, "%s", resource_text(s, 0));
			snprintf(project, sizeof project, "%s", resource_text(s, 1));
			*allow_now = sqlite3_column_int(s, 2) != 0;
		}
		sqlite3_reset(s);
		ok = session[0] != '\0';
	}
	if (ok) {
		s = store_stmt(st, "INSERT INTO permission_prompts (id, run_id, session_id,"
		    " project_id, request_id, tool, summary, input, status, decision, created_at,"
		    " answered_at, form) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
		    " ?13)");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, run_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, session, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, project, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, request_id);
		sqlite3_bind_text(s, 6, json_get_string(params, "tool"), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 7, json_get_string(params, "summary"), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 8, input_text, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 9, *allow_now ? "allowed" : "pending", -1, SQLITE_STATIC);
		if (*allow_now)
			sqlite3_bind_text(s, 10, "allow-run", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 11, clock_wall_ms());
		if (*allow_now)
			sqlite3_bind_int64(s, 12, clock_wall_ms());
		sqlite3_bind_int(s, 13, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params,
		    "form")));
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok)
		prompt_emit_locked(svc, id);
	store_unlock(st);
	free(input_text);
	if (!ok) {
		*allow_now = false;
		log_error("run %s: cannot store a permission prompt", run_id);
		*message = xstrdup("The service could not record the permission prompt; the "
		    "action is denied.");
		return TD_INTERNAL_ERROR;
	}
	return TD_OK;
}

enum td_code
prompt_withdraw(struct service *svc, const char *run_id, const cJSON *params, bool *withdrawn,
    char **message)
{
	struct store *st = svc->store;
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
	char id[TD_ID_MAX] = "";
	sqlite3_stmt *s;
	bool ok = true;

	*withdrawn = false;
	if (!cJSON_IsNumber(rid) || rid->valuedouble < 1 || rid->valuedouble > 9007199254740991.0) {
		*message = xstrdup("permission.withdraw needs the requestId of a permission.ask.");
		return TD_INVALID_REQUEST;
	}
	store_lock(st);
	s = store_stmt(st, "SELECT id FROM permission_prompts WHERE run_id = ?1 AND"
	    " request_id = ?2 AND status = 'pending'");
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)rid->valuedouble);
	if (sqlite3_step(s) == SQLITE_ROW)
		snprintf(id, sizeof id, "%s", resource_text(s, 0));
	sqlite3_reset(s);
	if (id[0] != '\0') {
		s = store_stmt(st, "UPDATE permission_prompts SET status = 'expired',"
		    " decision = 'withdrawn', answered_at = ?2 WHERE id = ?1 AND status = 'pending'");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, clock_wall_ms());
		ok = sqlite3_step(s) == SQLITE_DONE;
		*withdrawn = ok && sqlite3_changes(sqlite3_db_handle(s)) == 1;
		sqlite3_reset(s);
	}
	if (*withdrawn)
		prompt_emit_locked(svc, id);
	store_unlock(st);
	if (!ok) {
		log_error("run %s: cannot withdraw a permission prompt", run_id);
		return TD_INTERNAL_ERROR;
	}
	return TD_OK;
}

bool
prompt_is_form(struct store *st, const char *id)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT form FROM permission_prompts WHERE id = ?1");
	bool form;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	form = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) != 0;
	sqlite3_reset(s);
	return form;
}

bool
prompt_rebind(struct service *svc, const char *run_id, long long request_id,
    const cJSON *params, int64_t since, cJSON **answer)
{
	struct store *st = svc->store;
	const char *tool = json_get_string(params, "tool");
	const char *summary = json_get_string(params, "summary");
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(params, "input");
	char *input_text, id[TD_ID_MAX] = "", status[16] = "";
	sqlite3_stmt *s;
	bool ok = true;

	*answer = NULL;
	if (tool == NULL || summary == NULL)
		return false;
	input_text = input ? json_print(input) : xstrdup("{}");
	store_lock(st);
	/* The newest of this run's prompts for the same call, pending or answered since. */
	s = store_stmt(st, "SELECT id, status FROM permission_prompts WHERE run_id = ?1"
	    " AND tool = ?2 AND summary = ?3 AND input = ?4 AND (status = 'pending' OR"
	    " (status IN ('allowed', 'denied') AND answered_at >= ?5)) ORDER BY id DESC LIMIT 1");
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, tool, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, summary, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, input_text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, since);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(id, sizeof id, "%s", resource_text(s, 0));
		snprintf(status, sizeof status, "%s", resource_text(s, 1));
	}
	sqlite3_reset(s);
	if (strcmp(status, "pending") == 0) {
		s = store_stmt(st, "UPDATE permission_prompts SET request_id = ?2 WHERE id = ?1");
		sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, request_id);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	} else if (status[0] != '\0') {
		*answer = cJSON_CreateObject();
		cJSON_AddStringToObject(*answer, "decision", strcmp(status, "allowed") == 0 ?
		    "allow" : "deny");
	}
	store_unlock(st);
	free(input_text);
	if (id[0] != '\0')
		log_info("run %s: the resumed agent asks again for prompt %s (%s)", run_id, id,
		    status);
	return id[0] != '\0' && ok;
}

cJSON *
prompts_list(struct store *st, bool all, const char *run, const char *cursor, int limit,
    char *next)
{
	cJSON *arr = cJSON_CreateArray();
	struct resource_page pg;
	sqlite3_stmt *s = store_stmt(st, "SELECT " PROMPT_COLUMNS " FROM permission_prompts"
	    " WHERE (?1 OR status = 'pending') AND (?2 IS NULL OR run_id = ?2)"
	    " AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4");

	sqlite3_bind_int(s, 1, all);
	if (run != NULL)
		sqlite3_bind_text(s, 2, run, -1, SQLITE_STATIC);
	resource_page_start(&pg, s, 3, cursor, limit);
	while (resource_page_row(&pg, s))
		cJSON_AddItemToArray(arr, prompt_from_row(s));
	sqlite3_reset(s);
	snprintf(next, TD_ID_MAX, "%s", pg.next);
	return arr;
}

void
prompts_request_read(struct store *st, const char *id, char *run_id, long long *request_id,
    char *status)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT run_id, request_id, status FROM permission_prompts"
	    " WHERE id = ?1");

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(run_id, TD_ID_MAX, "%s", resource_text(s, 0));
		*request_id = sqlite3_column_int64(s, 1);
		snprintf(status, 16, "%s", resource_text(s, 2));
	}
	sqlite3_reset(s);
}

bool
prompts_answer(struct store *st, const char *id, bool allow, const char *decision, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE permission_prompts SET status = ?2, decision = ?3,"
	    " answered_at = ?4 WHERE id = ?1 AND status = 'pending'");
	bool ok;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, allow ? "allowed" : "denied", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, decision, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

/* Whether s is one of the choices of a form field: enum, or the const of a oneOf/anyOf titled choice. */
static bool
form_choice_ok(const cJSON *prop, const char *s)
{
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(prop, "enum"), *e;
	const cJSON *titled = cJSON_GetObjectItemCaseSensitive(prop, "oneOf");
	bool any = false;

	if (titled == NULL)
		titled = cJSON_GetObjectItemCaseSensitive(prop, "anyOf");
	if (!cJSON_IsArray(en))
		en = NULL;
	if (!cJSON_IsArray(titled))
		titled = NULL;
	cJSON_ArrayForEach(e, en) {
		any = true;
		if (cJSON_IsString(e) && strcmp(e->valuestring, s) == 0)
			return true;
	}
	cJSON_ArrayForEach(e, titled) {
		const char *c = json_get_string(e, "const");

		any = true;
		if (c != NULL && strcmp(c, s) == 0)
			return true;
	}
	return !any;
}

/* Whether the form field prop offers choices (enum, oneOf or anyOf). */
static bool
form_has_choices(const cJSON *prop)
{
	return cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(prop, "enum")) ||
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(prop, "oneOf")) ||
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(prop, "anyOf"));
}

/* A date YYYY-MM-DD that exists (RFC 3339 full-date). */
static bool
form_date_ok(const char *s)
{
	static const int days[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, m, d, n = 0;

	if (strlen(s) != 10 || sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 ||
	    s[4] != '-' || s[7] != '-' || m < 1 || m > 12 || d < 1 || d > days[m - 1])
		return false;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
			return false;
	return m != 2 || d < 29 || (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
}

/*
 * Whether s fits the format of a form's string field (the formats MCP forms
 * name: email, uri, date, date-time); any other format is not checked.
 */
static bool
form_format_ok(const char *format, const char *s)
{
	if (format == NULL)
		return true;
	if (strcmp(format, "email") == 0) {
		const char *at = strchr(s, '@');

		return at != NULL && at != s && strchr(at + 1, '@') == NULL &&
		    strchr(at + 1, '.') != NULL && at[1] != '.' && s[strlen(s) - 1] != '.' &&
		    strpbrk(s, " \t\r\n<>()[],;:\\\"") == NULL;
	}
	if (strcmp(format, "uri") == 0) {
		size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789+.-");

		return n > 0 && isalpha((unsigned char)s[0]) && s[n] == ':' && s[n + 1] != '\0' &&
		    strpbrk(s, " \t\r\n<>\"") == NULL;
	}
	if (strcmp(format, "date") == 0)
		return form_date_ok(s);
	if (strcmp(format, "date-time") == 0) {
		char date[11];
		int h, mi, sec, n = 0;

		if (strlen(s) < 20)
			return false;
		memcpy(date, s, 10);
		date[10] = '\0';
		return form_date_ok(date) && (s[10] == 'T' || s[10] == 't') &&
		    sscanf(s + 11, "%2d:%2d:%2d%n", &h, &mi, &sec, &n) == 3 && n == 8 &&
		    h < 24 && mi < 60 && sec < 61 && strpbrk(s + 19, "Zz+-") == s + 19 + strspn(s +
		    19, ".0123456789");
	}
	return true;
}

/*
 * The values of a multi-select field (type array, its items' enum or anyOf):
 * a JSON array of strings, or a string of them separated by commas; NULL when
 * one is not a choice or their count is outside minItems..maxItems.
 */
static cJSON *
form_array(const cJSON *prop, const cJSON *v)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(prop, "items"), *e;
	const cJSON *min = cJSON_GetObjectItemCaseSensitive(prop, "minItems");
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(prop, "maxItems");
	cJSON *out = cJSON_CreateArray();

	if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(e, v) {
			if (!cJSON_IsString(e) || !form_choice_ok(items, e->valuestring))
				goto bad;
			cJSON_AddItemToArray(out, cJSON_CreateString(e->valuestring));
		}
	} else if (cJSON_IsString(v)) {
		for (const char *p = v->valuestring; *p != '\0';) {
			size_t n = strcspn(p, ",");
			char *one = xstrndup(p, n);
			bool ok = *one != '\0' && form_choice_ok(items, one);

			if (ok)
				cJSON_AddItemToArray(out, cJSON_CreateString(one));
			free(one);
			if (!ok)
				goto bad;
			p += n + (p[n] == ',');
		}
	} else {
		goto bad;
	}
	if ((cJSON_IsNumber(min) && cJSON_GetArraySize(out) < min->valueint) ||
	    (cJSON_IsNumber(max) && cJSON_GetArraySize(out) > max->valueint))
		goto bad;
	return out;
bad:
	cJSON_Delete(out);
	return NULL;
}

/* A value the user gave for a form field of schema prop: typed (strings parsed), or NULL with *why. */
static cJSON *
form_value(const char *name, const cJSON *prop, const cJSON *v, char **why)
{
	const char *type = json_get_string(prop, "type");
	cJSON *out = NULL;

	if (type == NULL)
		type = "string";
	if (strcmp(type, "array") == 0) {
		out = form_array(prop, v);
		if (out == NULL)
			*why = xasprintf("%.64s must be a list of the form's choices (a JSON array, or "
			    "separated by commas)%s", name,
			    cJSON_GetObjectItemCaseSensitive(prop, "minItems") != NULL ||
			    cJSON_GetObjectItemCaseSensitive(prop, "maxItems") != NULL ?
			    ", as many as the form allows" : "");
		return out;
	}
	if (strcmp(type, "boolean") == 0) {
		if (cJSON_IsBool(v))
			out = cJSON_CreateBool(cJSON_IsTrue(v));
		else if (cJSON_IsString(v) && (strcmp(v->valuestring, "true") == 0 ||
		    strcmp(v->valuestring, "false") == 0))
			out = cJSON_CreateBool(strcmp(v->valuestring, "true") == 0);
	} else if (strcmp(type, "number") == 0 || strcmp(type, "integer") == 0) {
		double d = 0;
		bool ok = cJSON_IsNumber(v);
		char *end = NULL;

		if (ok)
			d = v->valuedouble;
		else if (cJSON_IsString(v) && v->valuestring[0] != '\0') {
			d = strtod(v->valuestring, &end);
			ok = *end == '\0';
		}
		if (ok && strcmp(type, "integer") == 0 && d != (double)(long long)d)
			ok = false;
		if (ok && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(prop, "minimum")) &&
		    d < cJSON_GetObjectItemCaseSensitive(prop, "minimum")->valuedouble)
			ok = false;
		if (ok && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(prop, "maximum")) &&
		    d > cJSON_GetObjectItemCaseSensitive(prop, "maximum")->valuedouble)
			ok = false;
		if (ok)
			out = cJSON_CreateNumber(d);
	} else if (cJSON_IsString(v)) {
		const cJSON *min = cJSON_GetObjectItemCaseSensitive(prop, "minLength");
		const cJSON *max = cJSON_GetObjectItemCaseSensitive(prop, "maxLength");
		size_t n = strlen(v->valuestring);
		bool ok = !(cJSON_IsNumber(min) && (double)n < min->valuedouble) &&
		    !(cJSON_IsNumber(max) && (double)n > max->valuedouble);

		if (ok && !form_choice_ok(prop, v->valuestring))
			ok = false;
		if (ok && !form_format_ok(json_get_string(prop, "format"), v->valuestring)) {
			*why = xasprintf("%.64s must be %s %.16s", name,
			    strcmp(json_get_string(prop, "format"), "email") == 0 ? "an" : "a",
			    json_get_string(prop, "format"));
			return NULL;
		}
		if (ok)
			out = cJSON_CreateString(v->valuestring);
	}
	if (out == NULL)
		*why = xasprintf("%.64s must be %s%s", name,
		    form_has_choices(prop) ? "one of the form's choices" : strcmp(type, "boolean") == 0 ?
		    "true or false" : strcmp(type, "integer") == 0 ? "an integer" :
		    strcmp(type, "number") == 0 ? "a number" : "a string",
		    cJSON_GetObjectItemCaseSensitive(prop, "minimum") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(prop, "maximum") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(prop, "minLength") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(prop, "maxLength") != NULL ?
		    " within the form's bounds" : "");
	return out;
}

cJSON *
prompt_form_content(const cJSON *input, const cJSON *values, char **why)
{
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(input, "requestedSchema");
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties"), *p, *v;
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
	cJSON *content = cJSON_CreateObject();

	*why = NULL;
	cJSON_ArrayForEach(v, values) {
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(props, v->string))) {
			*why = xasprintf("the form has no field %.64s", v->string);
			cJSON_Delete(content);
			return NULL;
		}
	}
	cJSON_ArrayForEach(p, props) {
		const cJSON *def = cJSON_GetObjectItemCaseSensitive(p, "default");
		cJSON *item;

		if (p->string == NULL)
			continue;
		v = cJSON_GetObjectItemCaseSensitive(values, p->string);
		if (v != NULL) {
			if ((item = form_value(p->string, p, v, why)) == NULL) {
				cJSON_Delete(content);
				return NULL;
			}
			cJSON_AddItemToObject(content, p->string, item);
		} else if (def != NULL) {
			cJSON_AddItemToObject(content, p->string, cJSON_Duplicate(def, true));
		}
	}
	cJSON_ArrayForEach(v, req) {
		if (cJSON_IsString(v) && !cJSON_HasObjectItem(content, v->valuestring)) {
			*why = xasprintf("the form needs a value for %.64s (it has no default)",
			    v->valuestring);
			cJSON_Delete(content);
			return NULL;
		}
	}
	return content;
}

bool
prompts_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM permission_prompts WHERE session_id = ?1"
	    " OR run_id IN (SELECT id FROM runs WHERE session_id = ?1)", session_id);
}
