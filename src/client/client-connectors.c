/* Connectors and credentials (taskdeck.h; docs/http-api.md, Connectors and Credentials). */
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

/* --- connectors ------------------------------------------------------------ */

static void
connector_clear(struct td_connector *c)
{
	free(c->id);
	free(c->name);
	free(c->kind);
	free(c->transport_type);
	free(c->command);
	for (size_t i = 0; i < c->arg_count; i++)
		free(c->args[i]);
	free(c->args);
	free(c->url);
	free(c->transport_json);
	for (size_t i = 0; i < c->binding_count; i++) {
		free(c->bindings[i].credential_id);
		free(c->bindings[i].target);
	}
	free(c->bindings);
	free(c->created_at);
	free(c->updated_at);
	free(c->json);
	memset(c, 0, sizeof *c);
}

void
td_connector_free(struct td_connector *c)
{
	if (c == NULL)
		return;
	connector_clear(c);
	free(c);
}

/* Fills c from one connector object; raw is its text when known. */
static bool
connector_from_json(struct td_connector *c, const cJSON *obj, const char *raw)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "transport");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(t, "args");
	const cJSON *binds = cJSON_GetObjectItemCaseSensitive(obj, "credentialBindings");
	const cJSON *e;

	if (json_get_string(obj, "id") == NULL || json_get_string(obj, "name") == NULL ||
	    !cJSON_IsObject(t) || json_get_string(t, "type") == NULL)
		return false;
	c->id = client_string(obj, "id");
	c->name = client_string(obj, "name");
	c->kind = client_string_or(obj, "kind", "custom");
	c->enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "enabled"));
	c->transport_type = client_string(t, "type");
	c->command = client_string(t, "command");
	c->url = client_string(t, "url");
	c->transport_json = json_print(t);
	if (cJSON_IsArray(args)) {
		c->args = xcalloc((size_t)cJSON_GetArraySize(args) + 1, sizeof *c->args);
		cJSON_ArrayForEach(e, args) {
			if (cJSON_IsString(e))
				c->args[c->arg_count++] = xstrdup(e->valuestring);
		}
	}
	if (cJSON_IsArray(binds)) {
		c->bindings = xcalloc((size_t)cJSON_GetArraySize(binds) + 1, sizeof *c->bindings);
		cJSON_ArrayForEach(e, binds) {
			if (json_get_string(e, "credentialId") == NULL ||
			    json_get_string(e, "target") == NULL)
				return false;
			c->bindings[c->binding_count].credential_id = client_string(e, "credentialId");
			c->bindings[c->binding_count].target = client_string(e, "target");
			c->binding_count++;
		}
	}
	c->created_at = client_string(obj, "createdAt");
	c->updated_at = client_string(obj, "updatedAt");
	c->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(connector, "connector");

void
td_connector_list_free(struct td_connector_list *list)
{
	CLIENT_LIST_FREE(&connector_kind, list);
}

/* Sends a request whose answer is one connector. */
static enum td_code
connector_call(struct td_client *cl, const char *method, const char *path, const char *body,
    const struct td_request_options *opts, struct td_connector **out, struct td_error *err)
{
	void *c;
	enum td_code rc;

	rc = client_call_item(cl, method, path, body, opts, &connector_kind, &c, err);
	if (out != NULL)
		*out = c;
	else
		td_connector_free(c);
	return rc;
}

enum td_code
td_list_connectors(struct td_client *c, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_connector_list **out,
    struct td_error *err)
{
	struct client_page page;
	enum td_code rc;

	*out = NULL;
	rc = client_list(c, "/api/v1/connectors", limit, cursor, NULL, opts, &connector_kind, &page, err);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

enum td_code
td_get_connector(struct td_client *c, const char *id, const struct td_request_options *opts,
    struct td_connector **out, struct td_error *err)
{
	enum td_code rc;
	char *path;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a connector id is required");
	path = client_item_path("connectors", id, "");
	rc = connector_call(c, "GET", path, NULL, opts, out, err);
	free(path);
	return rc;
}

/* The body of an add or update; NULL (err set) when a JSON member does not parse. */
static char *
connector_body(const struct td_connector_request *req, bool adding, struct td_error *err)
{
	cJSON *body, *transport, *bindings = NULL;
	char *text;

	if (req == NULL || req->transport_json == NULL || (adding && req->name == NULL)) {
		client_fail(err, TD_INVALID_ARGUMENT, adding ?
		    "a connector needs a name and a transport" :
		    "an update needs the transport");
		return NULL;
	}
	transport = client_parse_object(req->transport_json, "the transport", err);
	if (transport == NULL)
		return NULL;
	if (req->bindings_json != NULL) {
		bindings = json_parse(req->bindings_json, strlen(req->bindings_json));
		if (!cJSON_IsArray(bindings) && !cJSON_IsNull(bindings)) {
			cJSON_Delete(bindings);
			cJSON_Delete(transport);
			client_fail(err, TD_INVALID_ARGUMENT,
			    "the bindings must be a JSON array or null");
			return NULL;
		}
	}
	body = cJSON_CreateObject();
	if (req->name != NULL)
		cJSON_AddStringToObject(body, "name", req->name);
	cJSON_AddItemToObject(body, "transport", transport);
	if (bindings != NULL)
		cJSON_AddItemToObject(body, "credentialBindings", bindings);
	if (adding && req->enabled)
		cJSON_AddTrueToObject(body, "enabled");
	text = json_print(body);
	cJSON_Delete(body);
	return text;
}

enum td_code
td_add_connector(struct td_client *c, const struct td_connector_request *request,
    const struct td_request_options *opts, struct td_connector **out, struct td_error *err)
{
	enum td_code rc;
	char *text;

	*out = NULL;
	if ((text = connector_body(request, true, err)) == NULL)
		return TD_INVALID_ARGUMENT;
	rc = connector_call(c, "POST", "/api/v1/connectors", text, opts, out, err);
	free(text);
	return rc;
}

enum td_code
td_update_connector(struct td_client *c, const char *id,
    const struct td_connector_request *request, const struct td_request_options *opts,
    struct td_connector **out, struct td_error *err)
{
	enum td_code rc;
	char *text, *path;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a connector id is required");
	if ((text = connector_body(request, false, err)) == NULL)
		return TD_INVALID_ARGUMENT;
	path = client_item_path("connectors", id, "");
	rc = connector_call(c, "PATCH", path, text, opts, out, err);
	free(path);
	free(text);
	return rc;
}

enum td_code
td_set_connector_enabled(struct td_client *c, const char *id, bool enabled,
    const struct td_request_options *opts, struct td_connector **out, struct td_error *err)
{
	enum td_code rc;
	char *path;

	if (out != NULL)
		*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a connector id is required");
	path = client_item_path("connectors", id, "/enabled");
	rc = connector_call(c, "PUT", path, enabled ? "{\"enabled\":true}" :
	    "{\"enabled\":false}", opts, out, err);
	free(path);
	return rc;
}

/* A request whose answer is an empty object. */
static enum td_code
empty_call(struct td_client *c, const char *method, const char *path,
    const struct td_request_options *opts, struct td_error *err)
{
	struct client_response resp;
	enum td_code rc = client_call(c, method, path, NULL, false, opts, &resp, err);

	client_response_free(&resp);
	return rc;
}

enum td_code
td_remove_connector(struct td_client *c, const char *id,
    const struct td_request_options *opts, struct td_error *err)
{
	enum td_code rc;
	char *path;

	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a connector id is required");
	path = client_item_path("connectors", id, "");
	rc = empty_call(c, "DELETE", path, opts, err);
	free(path);
	return rc;
}

void
td_connector_test_free(struct td_connector_test *t)
{
	if (t == NULL)
		return;
	free(t->message);
	free(t->json);
	free(t);
}

/* opts, or a copy in *own with TD_CONNECTOR_TEST_TIMEOUT_MS when it sets no deadline. */
static const struct td_request_options *
connectors_slow_options(const struct td_request_options *opts, struct td_request_options *own)
{
	if (opts != NULL && opts->timeout_ms != 0)
		return opts;
	if (opts != NULL)
		*own = *opts;
	own->timeout_ms = TD_CONNECTOR_TEST_TIMEOUT_MS;
	return own;
}

enum td_code
td_test_connector(struct td_client *c, const char *id, const struct td_request_options *opts,
    struct td_connector_test **out, struct td_error *err)
{
	struct td_request_options own = { 0 };
	struct client_response resp;
	const cJSON *ok, *count;
	enum td_code rc;
	char *path;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a connector id is required");
	/* A test may take several MCP requests of up to 10 s each. */
	opts = connectors_slow_options(opts, &own);
	path = client_item_path("connectors", id, "/test");
	rc = client_call(c, "POST", path, NULL, false, opts, &resp, err);
	free(path);
	if (rc == TD_OK) {
		ok = cJSON_GetObjectItemCaseSensitive(resp.json, "success");
		count = cJSON_GetObjectItemCaseSensitive(resp.json, "toolCount");
		if (!cJSON_IsBool(ok) || !cJSON_IsNumber(count) ||
		    json_get_string(resp.json, "message") == NULL) {
			rc = client_malformed(&resp, "connector test result", err);
		} else {
			*out = xcalloc(1, sizeof **out);
			(*out)->success = cJSON_IsTrue(ok);
			(*out)->tool_count = (long)count->valuedouble;
			(*out)->message = client_string(resp.json, "message");
			(*out)->json = xstrdup(resp.body.data);
		}
	}
	client_response_free(&resp);
	return rc;
}

enum td_code
td_login_connector(struct td_client *c, const char *id, const struct td_connector_login *login,
    const struct td_request_options *opts, char **url, struct td_error *err)
{
	struct td_request_options own = { 0 };
	struct client_response resp;
	enum td_code rc;
	char *path, *body = NULL;

	*url = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a connector id is required");
	/* The discovery may take several requests of up to 10 s each. */
	opts = connectors_slow_options(opts, &own);
	if (login != NULL && (login->client_id != NULL || login->scope != NULL ||
	    login->id_token != NULL || login->workload_token_file != NULL)) {
		cJSON *b = cJSON_CreateObject();

		if (login->scope != NULL)
			cJSON_AddStringToObject(b, "scope", login->scope);
		if (login->client_id != NULL)
			cJSON_AddStringToObject(b, "clientId", login->client_id);
		if (login->client_secret != NULL)
			cJSON_AddStringToObject(b, "clientSecret", login->client_secret);
		if (login->client_key != NULL)
			cJSON_AddStringToObject(b, "clientKey", login->client_key);
		if (login->id_token != NULL)
			cJSON_AddStringToObject(b, "idToken", login->id_token);
		if (login->idp_token_endpoint != NULL)
			cJSON_AddStringToObject(b, "idpTokenEndpoint", login->idp_token_endpoint);
		if (login->idp_client_id != NULL)
			cJSON_AddStringToObject(b, "idpClientId", login->idp_client_id);
		if (login->workload_token_file != NULL)
			cJSON_AddStringToObject(b, "workloadTokenFile", login->workload_token_file);
		body = json_print(b);
		{
			static const char *const secret[] = { "clientSecret", "clientKey", "idToken" };

			for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++) {
				cJSON *s = cJSON_GetObjectItemCaseSensitive(b, secret[i]);

				if (s != NULL)
					explicit_bzero(s->valuestring, strlen(s->valuestring));
			}
		}
		cJSON_Delete(b);
	}
	path = client_item_path("connectors", id, "/login");
	rc = client_call(c, "POST", path, body, false, opts, &resp, err);
	free(path);
	if (body != NULL)
		explicit_bzero(body, strlen(body));
	free(body);
	if (rc == TD_OK) {
		/* A machine client is signed in at once: no URL. */
		if (json_get_string(resp.json, "authorizationUrl") != NULL)
			*url = client_string(resp.json, "authorizationUrl");
		else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp.json, "signedIn")))
			rc = client_malformed(&resp, "sign-in answer", err);
	}
	client_response_free(&resp);
	return rc;
}

/* --- credentials ----------------------------------------------------------- */

static void
credential_clear(struct td_credential *c)
{
	free(c->id);
	free(c->name);
	free(c->kind);
	free(c->description);
	free(c->created_at);
	free(c->updated_at);
	free(c->json);
	memset(c, 0, sizeof *c);
}

void
td_credential_free(struct td_credential *c)
{
	if (c == NULL)
		return;
	credential_clear(c);
	free(c);
}

static bool
credential_from_json(struct td_credential *c, const cJSON *obj, const char *raw)
{
	if (json_get_string(obj, "id") == NULL || json_get_string(obj, "name") == NULL ||
	    json_get_string(obj, "kind") == NULL)
		return false;
	c->id = client_string(obj, "id");
	c->name = client_string(obj, "name");
	c->kind = client_string(obj, "kind");
	c->description = client_string_or(obj, "description", "");
	c->created_at = client_string(obj, "createdAt");
	c->updated_at = client_string(obj, "updatedAt");
	c->json = raw != NULL ? xstrdup(raw) : json_print(obj);
	return true;
}

CLIENT_KIND(credential, "credential");

void
td_credential_list_free(struct td_credential_list *list)
{
	CLIENT_LIST_FREE(&credential_kind, list);
}

static enum td_code
credential_call(struct td_client *cl, const char *method, const char *path, const char *body,
    const struct td_request_options *opts, struct td_credential **out, struct td_error *err)
{
	void *c;
	enum td_code rc;

	rc = client_call_item(cl, method, path, body, opts, &credential_kind, &c, err);
	*out = c;
	return rc;
}

enum td_code
td_list_credentials(struct td_client *c, long limit, const char *cursor,
    const struct td_request_options *opts, struct td_credential_list **out,
    struct td_error *err)
{
	struct client_page page;
	enum td_code rc;

	*out = NULL;
	rc = client_list(c, "/api/v1/credentials", limit, cursor, NULL, opts, &credential_kind, &page, err);
	if (rc == TD_OK)
		CLIENT_LIST_NEW(out, page);
	return rc;
}

enum td_code
td_get_credential(struct td_client *c, const char *id, const struct td_request_options *opts,
    struct td_credential **out, struct td_error *err)
{
	enum td_code rc;
	char *path;

	*out = NULL;
	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a credential id is required");
	path = client_item_path("credentials", id, "");
	rc = credential_call(c, "GET", path, NULL, opts, out, err);
	free(path);
	return rc;
}

/* The body of a create or update.  It may hold the secret: free with body_free. */
static char *
credential_body(const struct td_credential_request *req)
{
	cJSON *body = cJSON_CreateObject();
	char *text;

	if (req->name != NULL)
		cJSON_AddStringToObject(body, "name", req->name);
	if (req->kind != NULL)
		cJSON_AddStringToObject(body, "kind", req->kind);
	if (req->description != NULL)
		cJSON_AddStringToObject(body, "description", req->description);
	if (req->secret != NULL)
		cJSON_AddStringToObject(body, "secret", req->secret);
	text = json_print(body);
	/* cJSON's own copy of the secret goes too. */
	for (cJSON *e = body->child; e != NULL; e = e->next) {
		if (strcmp(e->string, "secret") == 0)
			explicit_bzero(e->valuestring, strlen(e->valuestring));
	}
	cJSON_Delete(body);
	return text;
}

static void
body_free(char *text)
{
	if (text != NULL)
		explicit_bzero(text, strlen(text));
	free(text);
}

enum td_code
td_create_credential(struct td_client *c, const struct td_credential_request *request,
    const struct td_request_options *opts, struct td_credential **out, struct td_error *err)
{
	enum td_code rc;
	char *text;

	*out = NULL;
	if (request == NULL || request->name == NULL || request->secret == NULL ||
	    request->secret[0] == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "a credential needs a name and a secret");
	text = credential_body(request);
	rc = credential_call(c, "POST", "/api/v1/credentials", text, opts, out, err);
	body_free(text);
	return rc;
}

enum td_code
td_update_credential(struct td_client *c, const char *id,
    const struct td_credential_request *request, const struct td_request_options *opts,
    struct td_credential **out, struct td_error *err)
{
	enum td_code rc;
	char *text, *path;

	*out = NULL;
	if (id == NULL || *id == '\0' || request == NULL)
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "a credential id and the fields to change are required");
	text = credential_body(request);
	path = client_item_path("credentials", id, "");
	rc = credential_call(c, "PATCH", path, text, opts, out, err);
	free(path);
	body_free(text);
	return rc;
}

enum td_code
td_delete_credential(struct td_client *c, const char *id, bool force,
    const struct td_request_options *opts, struct td_error *err)
{
	enum td_code rc;
	char *path;

	if (id == NULL || *id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a credential id is required");
	path = client_item_path("credentials", id, force ? "?force=true" : "");
	rc = empty_call(c, "DELETE", path, opts, err);
	free(path);
	return rc;
}
