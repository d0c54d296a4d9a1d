#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

/* Frees the members of a project. */
static void
project_clear(struct td_project *p)
{
	free(p->id);
	free(p->name);
	free(p->description);
	free(p->context);
	free(p->metadata_json);
	free(p->created_at);
	free(p->updated_at);
	free(p->json);
	free(p->archived_at);
	memset(p, 0, sizeof *p);
}

void
td_project_free(struct td_project *p)
{
	if (p == NULL)
		return;
	project_clear(p);
	free(p);
}

/* Fills p from one project object; raw is its text when known. */
static bool
project_from_json(struct td_project *p, const cJSON *obj, const char *raw)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	if (json_get_string(obj, "id") == NULL || json_get_string(obj, "name") == NULL)
		return false;
	p->id = client_string(obj, "id");
	p->name = client_string(obj, "name");
	p->description = client_string_or(obj, "description", "");
	p->context = client_string_or(obj, "context", "");
	p->metadata_json = cJSON_IsObject(meta) ? json_print(meta) : xstrdup("{}");
	p->created_at = client_string(obj, "createdAt");
	p->updated_at = client_string(obj, "updatedAt");
	p->archived_at = client_string(obj, "archivedAt");
	p->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(project, "project");

void
td_project_list_free(struct td_project_list *list)
{
	CLIENT_LIST_FREE(&project_kind, list);
}

/* Sends a request whose answer is one project. */
static enum td_code
project_call(struct td_client *c, const char *method, const char *path,
    const char *body, const struct td_request_options *opts,
    struct td_project **out, struct td_error *err)
{
	void *p;
	enum td_code rc;

	rc = client_call_item(c, method, path, body, opts, &project_kind, &p, err);
	*out = p;
	return rc;
}

enum td_code
td_list_projects(struct td_client *c, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_project_list **out,
    struct td_error *err)
{
	return td_list_projects_archived(c, TD_ARCHIVED_HIDE, limit, cursor, opts, out, err);
}

enum td_code
td_list_projects_archived(struct td_client *c, enum td_archived which, long limit,
    const char *cursor, const struct td_request_options *opts,
    struct td_project_list **out, struct td_error *err)
{
	struct client_page page;
	enum td_code rc;

	*out = NULL;
	rc = client_list(c, "/api/v1/projects", limit, cursor, client_archived_query(which),
	    opts, &project_kind, &page, err);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

enum td_code
td_archive_project(struct td_client *c, const char *id, bool archived,
    const struct td_request_options *opts, struct td_project **out, struct td_error *err)
{
	return td_update_project(c, id, archived ? "{\"archived\":true}" : "{\"archived\":false}",
	    opts, out, err);
}

enum td_code
td_get_project(struct td_client *c, const char *id,
    const struct td_request_options *opts, struct td_project **out,
    struct td_error *err)
{
	enum td_code rc;
	char *path;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	path = client_item_path("projects", id, "");
	rc = project_call(c, "GET", path, NULL, opts, out, err);
	free(path);
	return rc;
}

/* Adds a string member when value is not NULL. */
static void
project_add_string(cJSON *obj, const char *key, const char *value)
{
	if (value != NULL)
		cJSON_AddStringToObject(obj, key, value);
}

enum td_code
td_create_project(struct td_client *c, const struct td_new_project *project,
    const struct td_request_options *opts, struct td_project **out,
    struct td_error *err)
{
	cJSON *body, *meta = NULL;
	enum td_code rc;
	char *text;

	*out = NULL;
	if (project == NULL || project->name == NULL)
		return client_fail(err, TD_INVALID_ARGUMENT, "a project name is required");
	if (project->metadata_json != NULL) {
		meta = client_parse_object(project->metadata_json, "metadata", err);
		if (meta == NULL)
			return TD_INVALID_ARGUMENT;
	}
	body = cJSON_CreateObject();
	project_add_string(body, "name", project->name);
	project_add_string(body, "description", project->description);
	project_add_string(body, "context", project->context);
	if (meta != NULL)
		cJSON_AddItemToObject(body, "metadata", meta);
	text = json_print(body);
	cJSON_Delete(body);
	rc = project_call(c, "POST", "/api/v1/projects", text, opts, out, err);
	free(text);
	return rc;
}

enum td_code
td_update_project(struct td_client *c, const char *id, const char *patch_json,
    const struct td_request_options *opts, struct td_project **out,
    struct td_error *err)
{
	char *path, *text;
	enum td_code rc;
	cJSON *patch;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a project id is required");
	patch = client_parse_object(patch_json, "the project patch", err);
	if (patch == NULL)
		return TD_INVALID_ARGUMENT;
	text = json_print(patch);
	cJSON_Delete(patch);
	path = client_item_path("projects", id, "");
	rc = project_call(c, "PATCH", path, text, opts, out, err);
	free(path);
	free(text);
	return rc;
}
