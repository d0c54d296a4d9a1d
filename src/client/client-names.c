/* Projects and sessions by name: td_find_project, td_find_session. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
