/* Readiness and setup: td_list_runtimes, td_list_models, td_bootstrap, td_install_cli. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "xalloc.h"

static void
runtime_clear(struct td_runtime *r)
{
	free(r->framework);
	free(r->status);
	free(r->version);
	free(r->source);
	free(r->path);
	free(r->found_by);
	free(r->min_version);
	free(r->message);
}

void
td_runtime_list_free(struct td_runtime_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->count; i++)
		runtime_clear(&l->items[i]);
	free(l->items);
	free(l->json);
	free(l);
}

enum td_code
td_list_runtimes(struct td_client *c, const struct td_request_options *opts,
    struct td_runtime_list **out, struct td_error *err)
{
	struct client_response resp;
	struct td_runtime_list *l;
	const cJSON *item;
	enum td_code rc;

	*out = NULL;
	rc = client_call(c, "GET", "/api/v1/runtimes", NULL, true, opts, &resp, err);
	if (rc == TD_OK) {
		cJSON_ArrayForEach(item, resp.json) {
			if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(item, "framework")) ||
			    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(item, "status"))) {
				rc = client_malformed(&resp, "runtime list", err);
				break;
			}
		}
	}
	if (rc == TD_OK) {
		l = xcalloc(1, sizeof *l);
		l->items = xcalloc((size_t)cJSON_GetArraySize(resp.json) + 1, sizeof *l->items);
		cJSON_ArrayForEach(item, resp.json) {
			struct td_runtime *r = &l->items[l->count++];

			r->framework = client_string(item, "framework");
			r->status = client_string(item, "status");
			r->version = client_string(item, "version");
			r->source = client_string_or(item, "source", "");
			r->path = client_string(item, "path");
			r->found_by = client_string(item, "foundBy");
			r->min_version = client_string(item, "minVersion");
			r->message = client_string_or(item, "message", "");
			r->data_complete = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(item,
			    "dataComplete"));
		}
		l->json = buf_steal(&resp.body);
		*out = l;
	}
	client_response_free(&resp);
	return rc;
}

void
td_model_list_free(struct td_model_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->count; i++) {
		free(l->items[i].id);
		free(l->items[i].display_name);
	}
	free(l->items);
	free(l->provider);
	free(l->kind);
	free(l->source);
	free(l->json);
	free(l);
}

enum td_code
td_list_models(struct td_client *c, const char *provider,
    const struct td_request_options *opts, struct td_model_list **out,
    struct td_error *err)
{
	char *path = client_item_path("providers", provider, "/models");
	struct client_response resp;
	const cJSON *models, *item;
	struct td_model_list *l;
	enum td_code rc;

	*out = NULL;
	rc = client_call(c, "GET", path, NULL, false, opts, &resp, err);
	free(path);
	models = cJSON_GetObjectItemCaseSensitive(resp.json, "models");
	if (rc == TD_OK && !cJSON_IsArray(models))
		rc = client_malformed(&resp, "model list", err);
	cJSON_ArrayForEach(item, models) {
		if (rc == TD_OK && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(item, "id"))) {
			rc = client_malformed(&resp, "model list", err);
			break;
		}
	}
	if (rc == TD_OK) {
		l = xcalloc(1, sizeof *l);
		l->provider = client_string_or(resp.json, "provider", provider);
		l->kind = client_string_or(resp.json, "kind", "");
		l->source = client_string_or(resp.json, "source", "");
		l->items = xcalloc((size_t)cJSON_GetArraySize(models) + 1, sizeof *l->items);
		cJSON_ArrayForEach(item, models) {
			struct td_model *m = &l->items[l->count++];
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(item, "contextWindow");

			m->id = client_string(item, "id");
			m->display_name = client_string(item, "displayName");
			m->context_window = cJSON_IsNumber(w) ? (long)w->valuedouble : 0;
			m->is_default = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "default"));
			m->configured = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item,
			    "configured"));
		}
		l->json = buf_steal(&resp.body);
		*out = l;
	}
	client_response_free(&resp);
	return rc;
}

void
td_setup_result_free(struct td_setup_result *r)
{
	if (r == NULL)
		return;
	free(r->error_code);
	free(r->error_message);
	free(r->path);
	for (size_t i = 0; i < r->next_action_count; i++)
		free(r->next_actions[i]);
	free(r->next_actions);
	free(r->json);
	free(r);
}

/* Adds a string to the next actions of r. */
static void
add_action(struct td_setup_result *r, const char *s)
{
	r->next_actions = xrealloc(r->next_actions, (r->next_action_count + 1) *
	    sizeof *r->next_actions);
	r->next_actions[r->next_action_count++] = xstrdup(s);
}

static enum td_code
setup_call(struct td_client *c, const char *path, const char *body,
    const struct td_request_options *opts, struct td_setup_result **out,
    struct td_error *err)
{
	struct client_response resp;
	struct td_setup_result *r;
	const cJSON *ok, *e, *a;
	enum td_code rc;

	*out = NULL;
	rc = client_call(c, "POST", path, body, false, opts, &resp, err);
	ok = cJSON_GetObjectItemCaseSensitive(resp.json, "ok");
	if (rc == TD_OK && !cJSON_IsBool(ok))
		rc = client_malformed(&resp, "setup result", err);
	if (rc == TD_OK) {
		r = xcalloc(1, sizeof *r);
		r->ok = cJSON_IsTrue(ok);
		r->changed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp.json, "changed"));
		e = cJSON_GetObjectItemCaseSensitive(resp.json, "error");
		if (!r->ok) {
			r->error_code = client_string_or(e, "code", "unknown_error");
			r->error_message = client_string_or(e, "message", "");
		}
		r->path = client_string(resp.json, "path");
		r->on_path = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp.json, "onPath"));
		cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(resp.json, "nextActions"))
			if (cJSON_IsString(a))
				add_action(r, a->valuestring);
		a = cJSON_GetObjectItemCaseSensitive(resp.json, "nextAction");
		if (cJSON_IsString(a))
			add_action(r, a->valuestring);
		r->json = buf_steal(&resp.body);
		*out = r;
	}
	client_response_free(&resp);
	return rc;
}

enum td_code
td_bootstrap(struct td_client *c, const char *action, const struct td_request_options *opts,
    struct td_setup_result **out, struct td_error *err)
{
	char body[64];

	*out = NULL;
	if (action == NULL || (strcmp(action, "status") != 0 && strcmp(action, "runtime") != 0))
		return client_fail(err, TD_INVALID_ARGUMENT, "action must be status or runtime");
	snprintf(body, sizeof body, "{\"action\":\"%s\"}", action);
	return setup_call(c, "/api/v1/bootstrap", body, opts, out, err);
}

enum td_code
td_install_cli(struct td_client *c, const struct td_request_options *opts,
    struct td_setup_result **out, struct td_error *err)
{
	return setup_call(c, "/api/v1/cli/install", NULL, opts, out, err);
}
