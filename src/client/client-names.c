/* Projects, sessions and connectors by name, runs by a piece of their id:
 * td_find_project, td_find_session, td_find_connector, td_find_run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "client-internal.h"
#include "fold.h"
#include "xalloc.h"

/* How many candidates an ambiguity message names before "...". */
#define NAMES_LISTED_MAX 8

/* What a name matched so far: the exact one, or the prefix matches. */
struct names_match {
	char *exact;		/* id of the exact match */
	char *exact_name;
	size_t exact_count;
	char *prefix;		/* id of the first prefix match */
	size_t prefix_count;
	struct buf listed;	/* "name (id), ..." of the prefix matches */
};

static void
names_match_init(struct names_match *m)
{
	memset(m, 0, sizeof *m);
	buf_init(&m->listed, 0);
}

static void
names_match_free(struct names_match *m)
{
	free(m->exact);
	free(m->exact_name);
	free(m->prefix);
	buf_free(&m->listed);
}

/* Weighs one candidate (id, name) against text. */
static void
names_match_add(struct names_match *m, const char *text, const char *id, const char *name)
{
	if (name == NULL)
		return;
	if (strcmp(name, text) == 0) {
		if (m->exact_count++ == 0) {
			m->exact = xstrdup(id);
			m->exact_name = xstrdup(name);
		}
	}
	if (!fold_has_prefix(name, text))
		return;
	if (m->prefix_count++ == 0)
		m->prefix = xstrdup(id);
	if (m->prefix_count <= NAMES_LISTED_MAX)
		buf_printf(&m->listed, "%s'%s' (%s)", m->prefix_count > 1 ? ", " : "", name, id);
	else if (m->prefix_count == NAMES_LISTED_MAX + 1)
		buf_appends(&m->listed, ", ...");
}

/*
 * The id text names: the one exact name, else the one case-insensitive
 * prefix match.  TD_INVALID_ARGUMENT naming the candidates when several
 * match, TD_NOT_FOUND when none does.
 */
static enum td_code
names_match_end(struct names_match *m, const char *noun, const char *text, char **id,
    struct td_error *err)
{
	if (m->exact_count == 1) {
		*id = m->exact;
		m->exact = NULL;
		return TD_OK;
	}
	if (m->exact_count > 1)
		return client_fail(err, TD_INVALID_ARGUMENT, "%zu %ss are named '%s'; give an id: %s",
		    m->exact_count, noun, text, m->listed.data);
	if (m->prefix_count == 1) {
		*id = m->prefix;
		m->prefix = NULL;
		return TD_OK;
	}
	if (m->prefix_count > 1)
		return client_fail(err, TD_INVALID_ARGUMENT, "'%s' matches %zu %ss: %s", text,
		    m->prefix_count, noun, m->listed.data);
	return client_fail(err, TD_NOT_FOUND, "no %s is named '%s' (nor begins so)", noun, text);
}

enum td_code
td_find_project(struct td_client *client, const char *text,
    const struct td_request_options *opts, char **id, struct td_error *err)
{
	struct td_project_list *page;
	struct names_match m;
	char *cursor = NULL;
	enum td_code rc = TD_OK;

	*id = NULL;
	if (text == NULL || *text == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "the project name is empty");
	if (strncmp(text, "prj_", 4) == 0) {
		*id = xstrdup(text);
		return TD_OK;
	}
	names_match_init(&m);
	do {
		/* Archived ones too: an archived project is still named (and unarchived). */
		rc = td_list_projects_archived(client, TD_ARCHIVED_ALL, 1000, cursor, opts, &page,
		    err);
		free(cursor);
		cursor = NULL;
		if (rc != TD_OK)
			break;
		for (size_t i = 0; i < page->count; i++)
			names_match_add(&m, text, page->items[i].id, page->items[i].name);
		cursor = page->next_cursor;
		page->next_cursor = NULL;
		td_project_list_free(page);
	} while (cursor != NULL);
	if (rc == TD_OK)
		rc = names_match_end(&m, "project", text, id, err);
	names_match_free(&m);
	return rc;
}

/* Weighs the sessions of one project against text. */
static enum td_code
names_sessions_of(struct td_client *client, const char *project_id, const char *text,
    const struct td_request_options *opts, struct names_match *m, struct td_error *err)
{
	struct td_session_list *page;
	char *cursor = NULL;
	enum td_code rc;

	do {
		rc = td_list_sessions_archived(client, project_id, TD_ARCHIVED_ALL, 1000, cursor,
		    opts, &page, err);
		free(cursor);
		cursor = NULL;
		if (rc != TD_OK)
			return rc;
		for (size_t i = 0; i < page->count; i++)
			names_match_add(m, text, page->items[i].id, page->items[i].title);
		cursor = page->next_cursor;
		page->next_cursor = NULL;
		td_session_list_free(page);
	} while (cursor != NULL);
	return TD_OK;
}

enum td_code
td_find_session(struct td_client *client, const char *project_id, const char *text,
    const struct td_request_options *opts, char **id, struct td_error *err)
{
	struct td_project_list *projects;
	struct names_match m;
	char *cursor = NULL;
	enum td_code rc = TD_OK;

	*id = NULL;
	if (text == NULL || *text == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "the session title is empty");
	if (strncmp(text, "ses_", 4) == 0) {
		*id = xstrdup(text);
		return TD_OK;
	}
	names_match_init(&m);
	if (project_id != NULL)
		rc = names_sessions_of(client, project_id, text, opts, &m, err);
	else {
		do {
			rc = td_list_projects_archived(client, TD_ARCHIVED_ALL, 1000, cursor, opts,
			    &projects, err);
			free(cursor);
			cursor = NULL;
			if (rc != TD_OK)
				break;
			for (size_t i = 0; i < projects->count && rc == TD_OK; i++)
				rc = names_sessions_of(client, projects->items[i].id, text, opts,
				    &m, err);
			cursor = projects->next_cursor;
			projects->next_cursor = NULL;
			td_project_list_free(projects);
		} while (rc == TD_OK && cursor != NULL);
		free(cursor);
	}
	if (rc == TD_OK)
		rc = names_match_end(&m, "session", text, id, err);
	names_match_free(&m);
	return rc;
}

enum td_code
td_find_connector(struct td_client *client, const char *text,
    const struct td_request_options *opts, char **id, struct td_error *err)
{
	struct td_connector_list *page;
	struct names_match m;
	char *cursor = NULL;
	enum td_code rc = TD_OK;

	*id = NULL;
	if (text == NULL || *text == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "the connector name is empty");
	if (strncmp(text, "con_", 4) == 0) {
		*id = xstrdup(text);
		return TD_OK;
	}
	names_match_init(&m);
	do {
		rc = td_list_connectors(client, 1000, cursor, opts, &page, err);
		free(cursor);
		cursor = NULL;
		if (rc != TD_OK)
			break;
		for (size_t i = 0; i < page->count; i++)
			names_match_add(&m, text, page->items[i].id, page->items[i].name);
		cursor = page->next_cursor;
		page->next_cursor = NULL;
		td_connector_list_free(page);
	} while (cursor != NULL);
	free(cursor);
	if (rc == TD_OK)
		rc = names_match_end(&m, "connector", text, id, err);
	names_match_free(&m);
	return rc;
}

/* True for text that may be a piece of a run id: letters, digits, '_'. */
static bool
names_id_piece(const char *text)
{
	size_t n = strlen(text);

	if (n < 4 || n > 64)
		return false;
	for (const char *p = text; *p != '\0'; p++) {
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= 'A' && *p <= 'Z') || *p == '_'))
			return false;
	}
	return true;
}

/* Weighs a run id against text: its beginning (with or without "run_") or its end. */
static void
names_run_add(struct names_match *m, const char *text, const char *id)
{
	size_t n = strlen(text), len = strlen(id);
	const char *bare = strncmp(id, "run_", 4) == 0 ? id + 4 : id;

	if (strcmp(id, text) == 0) {
		if (m->exact_count++ == 0)
			m->exact = xstrdup(id);
		return;
	}
	if (!(strncasecmp(id, text, n) == 0 || strncasecmp(bare, text, n) == 0 ||
	    (n <= len && strcasecmp(id + len - n, text) == 0)))
		return;
	if (m->prefix_count++ == 0)
		m->prefix = xstrdup(id);
	if (m->prefix_count <= NAMES_LISTED_MAX)
		buf_printf(&m->listed, "%s%s", m->prefix_count > 1 ? ", " : "", id);
	else if (m->prefix_count == NAMES_LISTED_MAX + 1)
		buf_appends(&m->listed, ", ...");
}

enum td_code
td_find_run(struct td_client *client, const char *text, const struct td_request_options *opts,
    char **id, struct td_error *err)
{
	struct td_project_list *projects;
	struct td_run_list *runs;
	struct names_match m;
	char *cursor = NULL, *rcursor;
	enum td_code rc = TD_OK;

	*id = NULL;
	/* The tail as the dashboard shows it: "…e5c12c" (or "...e5c12c"). */
	if (text != NULL && strncmp(text, "\xe2\x80\xa6", 3) == 0)
		text += 3;
	else if (text != NULL && strncmp(text, "...", 3) == 0)
		text += 3;
	if (text == NULL || *text == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "the run id is empty");
	/* A whole id is taken as it is; so is anything that cannot be a piece of one. */
	if ((strncmp(text, "run_", 4) == 0 && strlen(text) >= 28) || !names_id_piece(text)) {
		*id = xstrdup(text);
		return TD_OK;
	}
	names_match_init(&m);
	do {
		rc = td_list_projects_archived(client, TD_ARCHIVED_ALL, 1000, cursor, opts,
		    &projects, err);
		free(cursor);
		cursor = NULL;
		if (rc != TD_OK)
			break;
		for (size_t i = 0; i < projects->count && rc == TD_OK; i++) {
			struct td_run_filter f = { .project_id = projects->items[i].id };

			rcursor = NULL;
			do {
				rc = td_list_runs(client, &f, 1000, rcursor, opts, &runs, err);
				free(rcursor);
				rcursor = NULL;
				if (rc != TD_OK)
					break;
				for (size_t k = 0; k < runs->count; k++)
					names_run_add(&m, text, runs->items[k].id);
				rcursor = runs->next_cursor;
				runs->next_cursor = NULL;
				td_run_list_free(runs);
			} while (rcursor != NULL);
			free(rcursor);
		}
		cursor = projects->next_cursor;
		projects->next_cursor = NULL;
		td_project_list_free(projects);
	} while (rc == TD_OK && cursor != NULL);
	free(cursor);
	if (rc == TD_OK && m.exact_count == 0 && m.prefix_count > 1)
		rc = client_fail(err, TD_INVALID_ARGUMENT, "'%s' matches %zu runs: %s", text,
		    m.prefix_count, m.listed.data);
	else if (rc == TD_OK && m.exact_count == 0 && m.prefix_count == 0)
		rc = client_fail(err, TD_NOT_FOUND, "no run id begins or ends with '%s'", text);
	else if (rc == TD_OK)
		rc = names_match_end(&m, "run", text, id, err);
	names_match_free(&m);
	return rc;
}
