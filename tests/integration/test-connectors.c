/*
 * Connectors and credentials through a real taskdeckd: the routes over raw
 * HTTP (every error code, nothing stored changes on a refused write), the
 * event stream, the client core, the CLI, and where a secret must never
 * show up: responses, events, the log, the database file, any process argv.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "taskdeck.h"

/* Every response body of the suite, to look for secrets in. */
static char *seen;
static size_t seen_len;

static void
setup(void)
{
	static const char *const args[] = { "--log-level", "debug", NULL };

	svc_start_with(&svc, args);
	svc_export_env(&svc);
	seen = NULL;
	seen_len = 0;
}

static void
teardown(void)
{
	svc_destroy(&svc);
	free(seen);
}

TestSuite(connectors, .init = setup, .fini = teardown, .timeout = 120);

static void
remember(const char *text)
{
	size_t n = strlen(text);

	seen = realloc(seen, seen_len + n + 2);
	memcpy(seen + seen_len, text, n);
	seen_len += n;
	seen[seen_len++] = '\n';
	seen[seen_len] = '\0';
}

/* A request whose body is remembered. */
static struct http_resp
req(const char *method, const char *path, const char *body)
{
	struct http_resp r = http_req(&svc, method, path, body, NULL, true);

	remember(r.body);
	return r;
}

/* A request that must answer status; returns the parsed body (cJSON_Delete it). */
static cJSON *
req_ok(const char *method, const char *path, const char *body, long status)
{
	struct http_resp r = req(method, path, body);
	cJSON *j;

	cr_assert_eq(r.status, status, "%s %s: %ld %s", method, path, r.status, r.body);
	cr_assert_not_null(r.json, "%s %s: not JSON: %s", method, path, r.body);
	j = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return j;
}

/* A request that must fail with status, code and (when field is not NULL) details.field. */
static void
req_fail(const char *method, const char *path, const char *body, long status,
    const char *code, const char *field)
{
	struct http_resp r = req(method, path, body);
	const cJSON *details;

	cr_assert_eq(r.status, status, "%s %s %s: %ld %s", method, path, body ? body : "",
	    r.status, r.body);
	cr_assert_str_eq(http_error_code(&r), code, "%s", r.body);
	if (field != NULL) {
		details = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"), "details");
		cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(details, "field")),
		    field, "%s %s: %s", method, body ? body : "", r.body);
	}
	http_resp_free(&r);
}

/* The text of GET path (for before/after comparisons). */
static char *
get_text(const char *path)
{
	struct http_resp r = req("GET", path, NULL);
	char *t;

	cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
	t = strdup(r.body);
	http_resp_free(&r);
	return t;
}

static char *
new_credential(const char *name, const char *kind, const char *secret)
{
	char body[512];
	cJSON *c;
	char *id;

	snprintf(body, sizeof body, "{\"name\":\"%s\",\"kind\":\"%s\",\"secret\":\"%s\"}", name,
	    kind, secret);
	c = req_ok("POST", "/api/v1/credentials", body, 201);
	id = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(c, "id")));
	cJSON_Delete(c);
	return id;
}

static char *
new_connector(const char *body)
{
	cJSON *c = req_ok("POST", "/api/v1/connectors", body, 201);
	char *id = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(c, "id")));

	cJSON_Delete(c);
	return id;
}

static char *
path_of(const char *collection, const char *id, const char *suffix)
{
	char *p;

	cr_assert(asprintf(&p, "/api/v1/%s/%s%s", collection, id, suffix) > 0);
	return p;
}

Test(connectors, builtin_web_is_listed_disabled_and_cannot_be_edited)
{
	cJSON *list = req_ok("GET", "/api/v1/connectors", NULL, 200), *web = NULL, *e;
	char *before, *after;

	cJSON_ArrayForEach(e, list) {
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "id")), "con_web") == 0)
			web = e;
	}
	cr_assert_not_null(web, "con_web is not listed");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(web, "name")), "web");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(web, "kind")), "builtin");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(web, "enabled")));
	cr_assert(cJSON_IsArray(cJSON_GetObjectItem(web, "credentialBindings")));
	cJSON_Delete(list);

	before = get_text("/api/v1/connectors/con_web");
	req_fail("PATCH", "/api/v1/connectors/con_web",
	    "{\"transport\":{\"type\":\"stdio\",\"command\":\"true\"}}", 403, "forbidden", NULL);
	req_fail("DELETE", "/api/v1/connectors/con_web", NULL, 403, "forbidden", NULL);
	after = get_text("/api/v1/connectors/con_web");
	cr_assert_str_eq(before, after);
	free(before);
	free(after);

	web = req_ok("PUT", "/api/v1/connectors/con_web/enabled", "{\"enabled\":true}", 200);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(web, "enabled")));
	cJSON_Delete(web);
	web = req_ok("GET", "/api/v1/connectors/con_web", NULL, 200);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(web, "enabled")), "enabling did not stick");
	cJSON_Delete(web);
	web = req_ok("PUT", "/api/v1/connectors/con_web/enabled", "{\"enabled\":false}", 200);
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(web, "enabled")));
	cJSON_Delete(web);
}

Test(connectors, create_get_list_and_remove)
{
	char *id = new_connector("{\"name\":\"everything\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"],\"env\":{\"DEBUG\":\"1\"}}}");
	char *path = path_of("connectors", id, "");
	cJSON *c = req_ok("GET", path, NULL, 200), *t, *list, *e;
	bool listed = false;

	cr_assert(strncmp(id, "con_", 4) == 0);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")), "everything");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "kind")), "custom");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "enabled")), "a new connector is disabled");
	t = cJSON_GetObjectItem(c, "transport");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "type")), "stdio");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "command")), "npx");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(t, "args")), 2);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(t, "env"), "DEBUG")), "1");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "credentialBindings")), 0);
	cr_assert_not_null(cJSON_GetStringValue(cJSON_GetObjectItem(c, "createdAt")));
	cr_assert_not_null(cJSON_GetStringValue(cJSON_GetObjectItem(c, "updatedAt")));
	cJSON_Delete(c);

	list = req_ok("GET", "/api/v1/connectors", NULL, 200);
	cJSON_ArrayForEach(e, list)
		listed |= strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "id")), id) == 0;
	cr_assert(listed);
	cJSON_Delete(list);

	c = req_ok("POST", "/api/v1/connectors", "{\"name\":\"remote\",\"enabled\":true,"
	    "\"transport\":{\"type\":\"http\",\"url\":\"https://mcp.example.com/mcp\","
	    "\"headers\":{\"X-Team\":\"a\"}}}", 201);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "enabled")));
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(c,
	    "transport"), "url")), "https://mcp.example.com/mcp");
	cJSON_Delete(c);

	c = req_ok("DELETE", path, NULL, 200);
	cJSON_Delete(c);
	req_fail("GET", path, NULL, 404, "not_found", NULL);
	req_fail("DELETE", path, NULL, 404, "not_found", NULL);
	req_fail("PATCH", path, "{\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}", 404,
	    "not_found", NULL);
	req_fail("PUT", "/api/v1/connectors/con_00000000000000000000ffff/enabled",
	    "{\"enabled\":true}", 404, "not_found", NULL);
	free(path);
	free(id);
}

Test(connectors, extra_paths_are_checked_and_stored_as_real_paths)
{
	char body[2048], dir[512], link[512], parent[512], *before, *after, *id, *gp;
	const char *bad[] = { "relative/dir", "/no/such/taskdeck/path", "/", svc.home, parent,
		dir };
	cJSON *c, *p;

	snprintf(dir, sizeof dir, "%s/connector-state", svc.home);
	cr_assert_eq(mkdir(dir, 0700) == 0 || access(dir, F_OK) == 0, true);
	snprintf(parent, sizeof parent, "%s", svc.home);
	*strrchr(parent, '/') = '\0';	/* holds taskdeck's directories */
	before = get_text("/api/v1/connectors");
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(body, sizeof body, "{\"name\":\"p\",\"transport\":{\"type\":\"stdio\","
		    "\"command\":\"x\",\"paths\":[{\"path\":\"%s\"}]}}", bad[i]);
		req_fail("POST", "/api/v1/connectors", body, 400, "invalid_request",
		    "transport.paths");
	}
	req_fail("POST", "/api/v1/connectors", "{\"name\":\"p\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"x\",\"paths\":[{\"path\":\"/usr\",\"write\":\"yes\"}]}}", 400,
	    "invalid_request", "transport.paths");
	req_fail("POST", "/api/v1/connectors", "{\"name\":\"p\",\"transport\":{\"type\":\"http\","
	    "\"url\":\"http://x/\",\"paths\":[]}}", 400, "invalid_request", "transport");
	after = get_text("/api/v1/connectors");
	cr_assert_str_eq(before, after, "a refused definition was stored");
	/* A link is stored as where it leads. */
	snprintf(link, sizeof link, "/tmp/td-paths-%d", (int)getpid());
	unlink(link);
	cr_assert_eq(symlink("/usr/share", link), 0);
	snprintf(body, sizeof body, "{\"name\":\"p\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"x\",\"paths\":[{\"path\":\"%s\",\"write\":true},{\"path\":\"/etc\"}]}}",
	    link);
	id = new_connector(body);
	unlink(link);
	gp = path_of("connectors", id, "");
	c = req_ok("GET", gp, NULL, 200);
	free(gp);
	p = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "transport"), "paths");
	cr_assert_eq(cJSON_GetArraySize(p), 2);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(p, 0),
	    "path")), "/usr/share");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(p, 0), "write")));
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(p, 1), "write")));
	cJSON_Delete(c);
	free(before);
	free(after);
	free(id);
}

Test(connectors, bad_definitions_are_refused_and_nothing_is_stored)
{
	static const struct { const char *body, *field; } cases[] = {
		{ "{\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}", "name" },
		{ "{\"name\":\"\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}", "name" },
		{ "{\"name\":\"a b\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}", "name" },
		{ "{\"name\":\"a__b\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}", "name" },
		{ "{\"name\":\"abcdefghijabcdefghijabcdefghijabc\",\"transport\":{\"type\":\"stdio\","
		  "\"command\":\"x\"}}", "name" },
		{ "{\"name\":\"a\"}", "transport" },
		{ "{\"name\":\"a\",\"transport\":\"npx\"}", "transport" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"sse\",\"url\":\"http://x\"}}",
		  "transport.type" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\"}}", "transport.command" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"\"}}",
		  "transport.command" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\",\"args\":\"-y\"}}",
		  "transport.args" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\",\"args\":[1]}}",
		  "transport.args" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\","
		  "\"env\":{\"1BAD\":\"v\"}}}", "transport.env" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\","
		  "\"env\":{\"A\":5}}}", "transport.env" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\","
		  "\"url\":\"http://x\"}}", "transport" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"http\",\"url\":\"ftp://x/\"}}",
		  "transport.url" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"http\",\"url\":\"file:///etc/passwd\"}}",
		  "transport.url" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"http\",\"url\":\"http://\"}}",
		  "transport.url" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"http\",\"url\":\"http://x\","
		  "\"headers\":{\"Bad Name\":\"v\"}}}", "transport.headers" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"http\",\"url\":\"http://x\","
		  "\"headers\":{\"X\":\"a\\r\\nInjected: 1\"}}}", "transport.headers" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
		  "\"credentialBindings\":{}}", "credentialBindings" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
		  "\"credentialBindings\":[{\"credentialId\":\"cred_000000000000000000000001\","
		  "\"target\":\"env:A\"}]}", "credentialBindings" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
		  "\"credentialBindings\":[{\"credentialId\":\"nope\",\"target\":\"env:A\"}]}",
		  "credentialBindings" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
		  "\"enabled\":\"yes\"}", "enabled" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
		  "\"kind\":\"builtin\"}", "kind" },
		{ "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
		  "\"color\":\"red\"}", "color" },
	};
	char *before = get_text("/api/v1/connectors"), *after;
	char big[5100];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		req_fail("POST", "/api/v1/connectors", cases[i].body, 400, "invalid_request",
		    cases[i].field);
	/* Bounds: 65 arguments, a 5000-byte command. */
	{
		char body[4096];
		size_t n = (size_t)snprintf(body, sizeof body, "{\"name\":\"a\",\"transport\":"
		    "{\"type\":\"stdio\",\"command\":\"x\",\"args\":[");
		for (int i = 0; i < 65; i++)
			n += (size_t)snprintf(body + n, sizeof body - n, "%s\"a\"", i ? "," : "");
		snprintf(body + n, sizeof body - n, "]}}");
		req_fail("POST", "/api/v1/connectors", body, 400, "invalid_request",
		    "transport.args");
	}
	memset(big, 'c', sizeof big);
	{
		static const char head[] = "{\"name\":\"a\",\"transport\":{\"type\":\"stdio\","
		    "\"command\":\"";
		memcpy(big, head, sizeof head - 1);
	}
	strcpy(big + sizeof big - 5, "\"}}");
	req_fail("POST", "/api/v1/connectors", big, 400, "invalid_request", "transport.command");
	req_fail("POST", "/api/v1/connectors", "[1]", 400, "invalid_request", NULL);
	req_fail("POST", "/api/v1/connectors", "{", 400, "invalid_request", NULL);

	after = get_text("/api/v1/connectors");
	cr_assert_str_eq(before, after, "a refused create changed the list");
	free(before);
	free(after);

	/* A duplicate name, case-insensitive. */
	free(new_connector("{\"name\":\"Dup\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}"));
	req_fail("POST", "/api/v1/connectors",
	    "{\"name\":\"dup\",\"transport\":{\"type\":\"stdio\",\"command\":\"y\"}}", 400,
	    "invalid_request", "name");

	/* Without the token, nothing. */
	struct http_resp r = http_req(&svc, "POST", "/api/v1/connectors",
	    "{\"name\":\"x\",\"transport\":{\"type\":\"stdio\",\"command\":\"x\"}}", NULL, false);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/credentials",
	    "{\"name\":\"x\",\"secret\":\"x\"}", NULL, false);
	cr_assert_eq(r.status, 401);
	http_resp_free(&r);
}

Test(connectors, update_needs_transport_and_keeps_or_clears_bindings)
{
	char *cred = new_credential("token", "api-key", "k-1");
	char *cred2 = new_credential("other", "bearer", "k-2");
	char body[1024], *path, *before, *after;
	char *id;
	cJSON *c, *b;

	snprintf(body, sizeof body, "{\"name\":\"srv\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"srv\"},\"credentialBindings\":[{\"credentialId\":\"%s\","
	    "\"target\":\"env:API_KEY\"}]}", cred);
	id = new_connector(body);
	path = path_of("connectors", id, "");

	before = get_text(path);
	req_fail("PATCH", path, "{\"name\":\"renamed\"}", 400, "invalid_request", "transport");
	req_fail("PATCH", path, "{\"transport\":{\"type\":\"stdio\"}}", 400, "invalid_request",
	    "transport.command");
	req_fail("PATCH", path, "{\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
	    "\"enabled\":true}", 400, "invalid_request", "enabled");
	/* The kept env: binding does not fit an http transport. */
	req_fail("PATCH", path, "{\"transport\":{\"type\":\"http\",\"url\":\"http://x/\"}}", 400,
	    "invalid_request", "credentialBindings");
	snprintf(body, sizeof body, "{\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
	    "\"credentialBindings\":[{\"credentialId\":\"%s\",\"target\":\"env:A\"},"
	    "{\"credentialId\":\"%s\",\"target\":\"env:A\"}]}", cred, cred2);
	req_fail("PATCH", path, body, 400, "invalid_request", "credentialBindings");
	snprintf(body, sizeof body, "{\"transport\":{\"type\":\"stdio\",\"command\":\"x\","
	    "\"env\":{\"A\":\"plain\"}},\"credentialBindings\":[{\"credentialId\":\"%s\","
	    "\"target\":\"env:A\"}]}", cred);
	req_fail("PATCH", path, body, 400, "invalid_request", "credentialBindings");
	snprintf(body, sizeof body, "{\"transport\":{\"type\":\"stdio\",\"command\":\"x\"},"
	    "\"credentialBindings\":[{\"credentialId\":\"%s\",\"target\":\"env:A\"},"
	    "{\"credentialId\":\"cred_0000000000000000000000ff\",\"target\":\"env:B\"}]}", cred);
	req_fail("PATCH", path, body, 400, "invalid_request", "credentialBindings");
	after = get_text(path);
	cr_assert_str_eq(before, after, "a refused update changed the connector");
	free(before);
	free(after);

	/* Omitted: kept. */
	c = req_ok("PATCH", path, "{\"name\":\"srv2\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"srv\",\"args\":[\"--v\"]}}", 200);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")), "srv2");
	b = cJSON_GetObjectItem(c, "credentialBindings");
	cr_assert_eq(cJSON_GetArraySize(b), 1, "omitted bindings were not kept");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(b, 0),
	    "credentialId")), cred);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(b, 0),
	    "target")), "env:API_KEY");
	cJSON_Delete(c);

	/* Replaced. */
	snprintf(body, sizeof body, "{\"transport\":{\"type\":\"http\",\"url\":\"http://h/mcp\"},"
	    "\"credentialBindings\":[{\"credentialId\":\"%s\",\"target\":\"header:Authorization\"}]}",
	    cred2);
	c = req_ok("PATCH", path, body, 200);
	b = cJSON_GetObjectItem(c, "credentialBindings");
	cr_assert_eq(cJSON_GetArraySize(b), 1);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(b, 0),
	    "credentialId")), cred2);
	cJSON_Delete(c);

	/* null: cleared. */
	c = req_ok("PATCH", path, "{\"transport\":{\"type\":\"http\",\"url\":\"http://h/mcp\"},"
	    "\"credentialBindings\":null}", 200);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "credentialBindings")), 0);
	cJSON_Delete(c);
	c = req_ok("GET", path, NULL, 200);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "credentialBindings")), 0);
	cJSON_Delete(c);
	free(path);
	free(id);
	free(cred);
	free(cred2);
}

Test(connectors, credentials_crud_in_use_and_force)
{
	char *cred = new_credential("gh", "bearer", "gh-token-1");
	char *path = path_of("credentials", cred, ""), *force, *cpath, *id, *before, *after;
	char body[512];
	cJSON *c;

	c = req_ok("GET", path, NULL, 200);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "kind")), "bearer");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "description")), "");
	cr_assert_null(cJSON_GetObjectItem(c, "secret"), "the secret came back");
	cJSON_Delete(c);

	before = get_text(path);
	req_fail("POST", "/api/v1/credentials", "{\"name\":\"x\"}", 400, "invalid_request",
	    "secret");
	req_fail("POST", "/api/v1/credentials", "{\"name\":\"x\",\"secret\":\"\"}", 400,
	    "invalid_request", "secret");
	req_fail("POST", "/api/v1/credentials", "{\"secret\":\"s\"}", 400, "invalid_request",
	    "name");
	req_fail("POST", "/api/v1/credentials", "{\"name\":\"x\",\"kind\":\"oauth\","
	    "\"secret\":\"s\"}", 400, "invalid_request", "kind");
	req_fail("POST", "/api/v1/credentials", "{\"name\":\"x\",\"kind\":\"basic\","
	    "\"secret\":\"no-colon\"}", 400, "invalid_request", "secret");
	req_fail("POST", "/api/v1/credentials", "{\"name\":\"x\",\"kind\":\"bearer\","
	    "\"secret\":\"two\\nlines\"}", 400, "invalid_request", "secret");
	req_fail("PATCH", path, "{\"kind\":\"nope\"}", 400, "invalid_request", "kind");
	req_fail("PATCH", path, "{\"id\":\"cred_x\"}", 400, "invalid_request", "id");
	req_fail("PATCH", path, "{\"secret\":5}", 400, "invalid_request", "secret");
	req_fail("PATCH", "/api/v1/credentials/cred_0000000000000000000000ff",
	    "{\"name\":\"n\"}", 404, "not_found", NULL);
	after = get_text(path);
	cr_assert_str_eq(before, after, "a refused update changed the credential");
	free(before);
	free(after);

	c = req_ok("PATCH", path, "{\"name\":\"github\",\"description\":\"CI token\"}", 200);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")), "github");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "description")), "CI token");
	cJSON_Delete(c);

	snprintf(body, sizeof body, "{\"name\":\"gh\",\"transport\":{\"type\":\"http\","
	    "\"url\":\"https://api.example.com/mcp\"},\"credentialBindings\":[{\"credentialId\":"
	    "\"%s\",\"target\":\"header:Authorization\"}]}", cred);
	id = new_connector(body);
	cpath = path_of("connectors", id, "");

	{
		struct http_resp r = req("DELETE", path, NULL);
		const cJSON *d;

		cr_assert_eq(r.status, 409, "%s", r.body);
		cr_assert_str_eq(http_error_code(&r), "credential_in_use");
		d = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"), "details");
		cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(d,
		    "connectors"), 0)), id);
		http_resp_free(&r);
	}
	c = req_ok("GET", path, NULL, 200);
	cJSON_Delete(c);
	req_fail("DELETE", "/api/v1/credentials/x?force=maybe", NULL, 400, "invalid_request",
	    NULL);

	cr_assert(asprintf(&force, "%s?force=true", path) > 0);
	c = req_ok("DELETE", force, NULL, 200);
	cJSON_Delete(c);
	req_fail("GET", path, NULL, 404, "not_found", NULL);
	req_fail("DELETE", path, NULL, 404, "not_found", NULL);
	c = req_ok("GET", cpath, NULL, 200);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "credentialBindings")), 0,
	    "force left the binding");
	cJSON_Delete(c);
	free(force);
	free(cpath);
	free(id);
	free(path);
	free(cred);
}

/* The next event of one of the connector or credential types, or NULL. */
static struct td_event *
next_event(struct td_events *ev)
{
	struct td_event *e;
	struct td_error err;

	while (td_events_next(ev, 10000, &e, &err) == TD_OK) {
		if (strcmp(e->type, "connector.updated") == 0 ||
		    strcmp(e->type, "credential.updated") == 0)
			return e;
		td_event_free(e);
	}
	return NULL;
}

Test(connectors, events_carry_metadata_only)
{
	struct td_client *c = client_connect();
	struct td_events *ev;
	struct td_event *e;
	struct td_error err;
	char *cred, *id, body[512];

	cr_assert_eq(td_events_open(c, NULL, NULL, &ev, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_events_ready(ev, 10000, &err), TD_OK, "%s", err.message);
	cred = new_credential("ev", "api-key", "EVENT-SECRET-42");
	snprintf(body, sizeof body, "{\"name\":\"evc\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"x\"},\"credentialBindings\":[{\"credentialId\":\"%s\","
	    "\"target\":\"env:K\"}]}", cred);
	id = new_connector(body);

	e = next_event(ev);
	cr_assert_not_null(e);
	cr_assert_str_eq(e->type, "credential.updated");
	cr_assert_not_null(strstr(e->data_json, cred));
	cr_assert_not_null(strstr(e->data_json, "\"action\":\"created\""), "%s", e->data_json);
	cr_assert_null(strstr(e->json, "EVENT-SECRET-42"));
	td_event_free(e);
	e = next_event(ev);
	cr_assert_not_null(e);
	cr_assert_str_eq(e->type, "connector.updated");
	cr_assert_not_null(strstr(e->data_json, id));
	td_event_free(e);

	{
		char *p = path_of("credentials", cred, ""), *q = path_of("connectors", id, "/enabled");
		cJSON *j = req_ok("PATCH", p, "{\"secret\":\"EVENT-SECRET-43\"}", 200);
		cJSON_Delete(j);
		e = next_event(ev);
		cr_assert_not_null(e);
		cr_assert_str_eq(e->type, "credential.updated");
		cr_assert_not_null(strstr(e->data_json, "\"action\":\"rotated\""), "%s", e->data_json);
		cr_assert_null(strstr(e->json, "EVENT-SECRET-43"));
		td_event_free(e);
		j = req_ok("PUT", q, "{\"enabled\":true}", 200);
		cJSON_Delete(j);
		e = next_event(ev);
		cr_assert_not_null(e);
		cr_assert_str_eq(e->type, "connector.updated");
		cr_assert_not_null(strstr(e->data_json, "\"enabled\":true"), "%s", e->data_json);
		td_event_free(e);
		free(p);
		free(q);
	}
	td_events_close(ev);
	td_client_free(c);
	free(cred);
	free(id);
}

Test(connectors, client_core_round_trip)
{
	struct td_client *c = client_connect();
	struct td_credential_request cr = { .name = "api", .kind = "api-key",
		.description = "d", .secret = "CLIENT-SECRET-1" };
	struct td_credential *cred, *cred2;
	struct td_credential_list *creds;
	struct td_connector *con, *con2;
	struct td_connector_list *list;
	struct td_error err;
	char bindings[256];
	bool found = false;

	cr_assert_eq(td_create_credential(c, &cr, NULL, &cred, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(cred->kind, "api-key");
	cr_assert_null(strstr(cred->json, "CLIENT-SECRET-1"));
	snprintf(bindings, sizeof bindings, "[{\"credentialId\":\"%s\",\"target\":\"env:KEY\"}]",
	    cred->id);
	struct td_connector_request req = { .name = "cc", .bindings_json = bindings,
		.transport_json = "{\"type\":\"stdio\",\"command\":\"srv\",\"args\":[\"a\",\"b\"]}" };
	cr_assert_eq(td_add_connector(c, &req, NULL, &con, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(con->transport_type, "stdio");
	cr_assert_str_eq(con->command, "srv");
	cr_assert_eq(con->arg_count, 2);
	cr_assert_str_eq(con->args[1], "b");
	cr_assert_eq(con->binding_count, 1);
	cr_assert_str_eq(con->bindings[0].target, "env:KEY");
	cr_assert(!con->enabled);

	cr_assert_eq(td_set_connector_enabled(c, con->id, true, NULL, &con2, &err), TD_OK);
	cr_assert(con2->enabled);
	td_connector_free(con2);
	cr_assert_eq(td_get_connector(c, con->id, NULL, &con2, &err), TD_OK);
	cr_assert(con2->enabled);
	td_connector_free(con2);

	struct td_connector_request upd = { .transport_json =
		"{\"type\":\"http\",\"url\":\"http://127.0.0.1:9/mcp\"}", .bindings_json = "null" };
	cr_assert_eq(td_update_connector(c, con->id, &upd, NULL, &con2, &err), TD_OK, "%s",
	    err.message);
	cr_assert_str_eq(con2->transport_type, "http");
	cr_assert_str_eq(con2->url, "http://127.0.0.1:9/mcp");
	cr_assert_eq(con2->binding_count, 0);
	td_connector_free(con2);
	struct td_connector_request no_transport = { .name = "x" };
	cr_assert_eq(td_update_connector(c, con->id, &no_transport, NULL, &con2, &err),
	    TD_INVALID_ARGUMENT);
	cr_assert_eq(td_update_connector(c, "con_web", &upd, NULL, &con2, &err), TD_FORBIDDEN);
	cr_assert_eq(err.http_status, 403);
	cr_assert_eq(td_remove_connector(c, "con_web", NULL, &err), TD_FORBIDDEN);

	cr_assert_eq(td_list_connectors(c, 0, NULL, NULL, &list, &err), TD_OK);
	for (size_t i = 0; i < list->count; i++)
		found |= strcmp(list->items[i].id, "con_web") == 0;
	cr_assert(found);
	td_connector_list_free(list);
	cr_assert_eq(td_list_connectors(c, 1, NULL, NULL, &list, &err), TD_OK);
	cr_assert_eq(list->count, 1);
	cr_assert_not_null(list->next_cursor, "a second page exists");
	td_connector_list_free(list);

	struct td_credential_request rot = { .secret = "CLIENT-SECRET-2", .name = "api2" };
	cr_assert_eq(td_update_credential(c, cred->id, &rot, NULL, &cred2, &err), TD_OK);
	cr_assert_str_eq(cred2->name, "api2");
	td_credential_free(cred2);
	cr_assert_eq(td_list_credentials(c, 0, NULL, NULL, &creds, &err), TD_OK);
	cr_assert_eq(creds->count, 1);
	cr_assert_null(strstr(creds->json, "CLIENT-SECRET"));
	td_credential_list_free(creds);

	/* In use again, then forced. */
	snprintf(bindings, sizeof bindings, "[{\"credentialId\":\"%s\",\"target\":\"header:X-Key\"}]",
	    cred->id);
	upd.bindings_json = bindings;
	cr_assert_eq(td_update_connector(c, con->id, &upd, NULL, &con2, &err), TD_OK, "%s",
	    err.message);
	td_connector_free(con2);
	cr_assert_eq(td_delete_credential(c, cred->id, false, NULL, &err), TD_CREDENTIAL_IN_USE);
	cr_assert_str_eq(err.code_name, "credential_in_use");
	cr_assert_eq(td_delete_credential(c, cred->id, true, NULL, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_get_credential(c, cred->id, NULL, &cred2, &err), TD_NOT_FOUND);

	cr_assert_eq(td_remove_connector(c, con->id, NULL, &err), TD_OK);
	cr_assert_eq(td_get_connector(c, con->id, NULL, &con2, &err), TD_NOT_FOUND);
	td_connector_free(con);
	td_credential_free(cred);
	td_client_free(c);
}

Test(connectors, cli_reads_the_secret_from_stdin_only)
{
	char *out = NULL, *id;
	cJSON *j;
	int rc;

	rc = run_capture(&svc, &out, "printf 'CLI-SECRET-777\\n' | %s --json credentials create "
	    "ci --kind bearer --secret-stdin", harness_bin("taskdeck"));
	cr_assert_eq(rc, 0, "%s", out);
	remember(out);
	j = cJSON_Parse(out);
	cr_assert_not_null(j, "%s", out);
	id = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(j, "id")));
	cJSON_Delete(j);
	free(out);

	/* No terminal and no --secret-stdin: refused, nothing made. */
	rc = run_capture(&svc, &out, "setsid %s credentials create x </dev/null 2>&1",
	    harness_bin("taskdeck"));
	cr_assert_eq(rc, 2, "%s", out);
	free(out);

	rc = run_capture(&svc, &out, "%s credentials list", harness_bin("taskdeck"));
	cr_assert_eq(rc, 0);
	remember(out);
	cr_assert_not_null(strstr(out, id));
	cr_assert_not_null(strstr(out, "bearer"));
	cr_assert_null(strstr(out, " x "), "a refused create stored something: %s", out);
	free(out);

	rc = run_capture(&svc, &out, "%s connectors add tools --command srv --arg -v "
	    "--env LEVEL=2 --bind %s=env:TOKEN --enable", harness_bin("taskdeck"), id);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "enabled: yes"), "%s", out);
	cr_assert_not_null(strstr(out, "env:TOKEN"), "%s", out);
	remember(out);
	free(out);

	rc = run_capture(&svc, &out, "%s connectors list", harness_bin("taskdeck"));
	cr_assert_eq(rc, 0);
	cr_assert_not_null(strstr(out, "srv -v"), "%s", out);
	cr_assert_not_null(strstr(out, "builtin"), "%s", out);
	free(out);

	rc = run_capture(&svc, &out, "%s credentials delete %s 2>&1", harness_bin("taskdeck"), id);
	cr_assert_eq(rc, 5, "in use must exit 5: %s", out);
	free(out);
	rc = run_capture(&svc, &out, "%s connectors remove con_web 2>&1", harness_bin("taskdeck"));
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert_not_null(strstr(out, "forbidden"), "%s", out);
	free(out);
	rc = run_capture(&svc, &out, "printf 'CLI-SECRET-778' | %s credentials update %s "
	    "--secret-stdin", harness_bin("taskdeck"), id);
	cr_assert_eq(rc, 0, "%s", out);
	remember(out);
	free(out);
	rc = run_capture(&svc, &out, "%s credentials delete %s --force", harness_bin("taskdeck"), id);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	cr_assert_null(memmem(seen, seen_len, "CLI-SECRET-77", 13), "the secret was printed");
	free(id);
}

/* Asserts that needle is in no file of the home (database, WAL, log, ...). */
static void
assert_not_on_disk(const struct svc *s, const char *needle)
{
	static const char *const files[] = { "taskdeck.db", "taskdeck.db-wal", "taskdeck.db-shm",
		"taskdeckd.log", "settings.json", "service.json", NULL };

	for (const char *const *f = files; *f; f++) {
		char path[512];
		size_t len;
		char *data;

		snprintf(path, sizeof path, "%s/%s", s->home, *f);
		data = harness_slurp(path, &len);
		if (data == NULL)
			continue;
		cr_assert_null(memmem(data, len, needle, strlen(needle)), "%s holds the secret",
		    *f);
		free(data);
	}
}

/* Asserts that needle is in no process's argv. */
static void
assert_not_in_argv(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300];
		size_t len;
		char *data;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		data = harness_slurp(path, &len);
		if (data == NULL)
			continue;
		cr_assert_null(memmem(data, len, needle, strlen(needle)),
		    "process %s has the secret in its argv", e->d_name);
		free(data);
	}
	closedir(d);
}

Test(connectors, secrets_are_sealed_and_never_shown)
{
	char key[512], *cred, *p;
	struct stat st;
	cJSON *j;

	snprintf(key, sizeof key, "%s/secret.key", svc.home);
	cr_assert_neq(stat(key, &st), 0, "secret.key exists before any credential");
	cred = new_credential("seal", "secret", "SEALED-VALUE-AAA111");
	cr_assert_eq(stat(key, &st), 0, "no secret.key after a credential");
	cr_assert_eq(st.st_mode & 0777, 0600, "secret.key has mode %o", st.st_mode & 0777);
	cr_assert_eq(st.st_size, 32);

	p = path_of("credentials", cred, "");
	j = req_ok("PATCH", p, "{\"secret\":\"SEALED-VALUE-BBB222\"}", 200);
	cJSON_Delete(j);
	j = req_ok("GET", p, NULL, 200);
	cJSON_Delete(j);
	j = req_ok("GET", "/api/v1/credentials", NULL, 200);
	cJSON_Delete(j);
	j = req_ok("GET", "/api/v1/doctor", NULL, 200);
	cJSON_Delete(j);

	assert_not_on_disk(&svc, "SEALED-VALUE-AAA111");
	assert_not_on_disk(&svc, "SEALED-VALUE-BBB222");
	svc_stop(&svc);		/* and after the WAL is checkpointed */
	assert_not_on_disk(&svc, "SEALED-VALUE-AAA111");
	assert_not_on_disk(&svc, "SEALED-VALUE-BBB222");
	svc_restart(&svc);
	assert_not_in_argv("SEALED-VALUE-");
	cr_assert_null(memmem(seen, seen_len, "SEALED-VALUE-", 13), "a response held the secret");
	free(p);
	free(cred);
}

/* --- runs: the start message and secret.resolve, with a stand-in agent ---- */

static struct svc rsvc;

static void
run_setup(void)
{
	static const char *const args[] = { "--log-level", "debug", NULL };
	char agent[512];

	snprintf(agent, sizeof agent, "%s", harness_bin("tests/integration/fake-agent"));
	setenv("TASKDECK_AGENT", agent, 1);
	svc_start_with(&rsvc, args);
	unsetenv("TASKDECK_AGENT");
	svc_export_env(&rsvc);
}

static void
run_teardown(void)
{
	svc_destroy(&rsvc);
}

TestSuite(connectors_run, .init = run_setup, .fini = run_teardown, .timeout = 120);

static cJSON *
rreq(const char *method, const char *path, const char *body, long status)
{
	struct http_resp r = http_req(&rsvc, method, path, body, NULL, true);
	cJSON *j;

	cr_assert_eq(r.status, status, "%s %s: %ld %s", method, path, r.status, r.body);
	cr_assert_null(strstr(r.body, "RUN-SECRET-"), "%s %s answered a secret", method, path);
	j = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return j;
}

static char *
rid(cJSON *j)
{
	char *id = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(j, "id")));

	cJSON_Delete(j);
	return id;
}

Test(connectors_run, start_lists_enabled_connectors_and_resolves_only_their_bindings)
{
	char body[1024], path[1024], *bearer, *env, *unused, *on, *off, *prj, *run, *text;
	cJSON *j, *start, *answers, *a, *cons;
	size_t len;
	bool saw_on = false;

	bearer = rid(rreq("POST", "/api/v1/credentials", "{\"name\":\"b\",\"kind\":\"bearer\","
	    "\"secret\":\"RUN-SECRET-BEARER\"}", 201));
	env = rid(rreq("POST", "/api/v1/credentials", "{\"name\":\"e\",\"kind\":\"api-key\","
	    "\"secret\":\"RUN-SECRET-ENV\"}", 201));
	unused = rid(rreq("POST", "/api/v1/credentials", "{\"name\":\"u\",\"kind\":\"secret\","
	    "\"secret\":\"RUN-SECRET-UNUSED\"}", 201));
	snprintf(body, sizeof body, "{\"name\":\"on\",\"enabled\":true,\"transport\":{\"type\":"
	    "\"http\",\"url\":\"http://127.0.0.1:9/mcp\"},\"credentialBindings\":["
	    "{\"credentialId\":\"%s\",\"target\":\"header:Authorization\"}]}", bearer);
	on = rid(rreq("POST", "/api/v1/connectors", body, 201));
	snprintf(body, sizeof body, "{\"name\":\"off\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"x\"},\"credentialBindings\":[{\"credentialId\":\"%s\","
	    "\"target\":\"env:KEY\"}]}", env);
	off = rid(rreq("POST", "/api/v1/connectors", body, 201));
	prj = rid(rreq("POST", "/api/v1/projects", "{\"name\":\"p\"}", 201));
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"use the tools\"}", prj);
	run = rid(rreq("POST", "/api/v1/runs", body, 201));

	j = run_wait_final(&rsvc, run, 60000);
	cr_assert_not_null(j, "the run did not finish");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "completed",
	    "%s", cJSON_PrintUnformatted(j));
	snprintf(path, sizeof path, "%s/start.json",
	    cJSON_GetStringValue(cJSON_GetObjectItem(j, "cwd")));
	text = harness_slurp(path, &len);
	cr_assert_not_null(text, "the agent wrote no start.json");
	cr_assert_null(memmem(text, len, "RUN-SECRET-", 11), "the start message holds a secret");
	start = cJSON_Parse(text);
	free(text);
	cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(start, "limits"),
	    "connectorTimeoutMs")), 60000);
	cons = cJSON_GetObjectItem(start, "connectors");
	cr_assert_eq(cJSON_GetArraySize(cons), 1, "only the enabled connector: %s",
	    cJSON_PrintUnformatted(cons));
	cJSON_ArrayForEach(a, cons) {
		saw_on |= strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(a, "id")), on) == 0;
		cr_assert_not_null(cJSON_GetObjectItem(a, "transport"));
		cr_assert_null(cJSON_GetObjectItem(a, "enabled"));
	}
	cr_assert(saw_on);
	cJSON_Delete(start);

	snprintf(path, sizeof path, "%s/resolve.json",
	    cJSON_GetStringValue(cJSON_GetObjectItem(j, "cwd")));
	text = harness_slurp(path, &len);
	cr_assert_not_null(text, "the agent wrote no resolve.json");
	answers = cJSON_Parse(text);
	free(text);
	unlink(path);
	cr_assert_eq(cJSON_GetArraySize(answers), 3, "%s", cJSON_PrintUnformatted(answers));
	/* The bound one: with the bearer scheme for a header. */
	a = cJSON_GetArrayItem(answers, 0);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a,
	    "result"), "value")), "Bearer RUN-SECRET-BEARER", "%s", cJSON_PrintUnformatted(a));
	/* Not bound to this connector, and a connector not in the run: refused. */
	for (int i = 1; i < 3; i++) {
		a = cJSON_GetArrayItem(answers, i);
		cr_assert_null(cJSON_GetObjectItem(a, "result"));
		cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a,
		    "error"), "code")), "forbidden", "%s", cJSON_PrintUnformatted(a));
	}
	cJSON_Delete(answers);
	cJSON_Delete(j);

	/* Used, rotated: still on no disk page, log line, event or argv. */
	snprintf(path, sizeof path, "/api/v1/runs/%s/events", run);
	j = rreq("GET", path, NULL, 200);
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/api/v1/credentials/%s", bearer);
	j = rreq("PATCH", path, "{\"secret\":\"RUN-SECRET-ROTATED\"}", 200);
	cJSON_Delete(j);
	assert_not_on_disk(&rsvc, "RUN-SECRET-");
	assert_not_in_argv("RUN-SECRET-");
	free(bearer);
	free(env);
	free(unused);
	free(on);
	free(off);
	free(prj);
	free(run);
}

/*
 * A sign-in body with a member the route does not know (a camel-case typo) is
 * refused with that member named, in the field and the message, every time.
 */
Test(connectors, login_names_an_unknown_member)
{
	static const char *const members[] = { "clientID", "client_id", "scopes",
		"aMemberNameLongEnoughToLeaveTheSmallAllocationsOfTheAllocator" };
	char *id = new_connector("{\"name\":\"remote\",\"transport\":{\"type\":\"http\","
	    "\"url\":\"http://127.0.0.1:9/mcp\"}}");
	char *path = path_of("connectors", id, "/login");

	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
			char body[256];
			struct http_resp r;

			snprintf(body, sizeof body, "{\"%s\":\"my-client\",\"scope\":\"read\"}",
			    members[i]);
			r = req("POST", path, body);
			cr_assert_eq(r.status, 400, "%s: %ld %s", body, r.status, r.body);
			cr_assert_str_eq(http_error_code(&r), "invalid_request", "%s", r.body);
			cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
			    cJSON_GetObjectItem(r.json, "error"), "details"), "field")), members[i],
			    "%s", r.body);
			cr_assert_not_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(
			    cJSON_GetObjectItem(r.json, "error"), "message")), members[i]), "%s", r.body);
			http_resp_free(&r);
		}
	/* The service is still there. */
	free(get_text("/api/v1/connectors"));
	free(path);
	free(id);
}

/*
 * A slow MCP server and authorization server on one loopback port, in a
 * child process: every request is answered after delay_s[i] seconds (the
 * last delay for the later ones), the first (the MCP handshake) with 401 and
 * a Bearer challenge, the others with 404.  Its port into *port.
 */
static pid_t
slow_server_start(const int *delay_s, int ndelays, int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	cr_assert_geq(ls, 0);
	cr_assert_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(ls, 16), 0);
	cr_assert_eq(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid > 0) {
		close(ls);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (int n = 0;; n++) {
		char req[16384], answer[512];
		size_t got = 0;
		ssize_t r;
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			_exit(1);
		/* The head, and the body its Content-Length announces. */
		while (got < sizeof req - 1 && (r = read(c, req + got, sizeof req - 1 - got)) > 0) {
			char *end, *cl;

			got += (size_t)r;
			req[got] = '\0';
			if ((end = strstr(req, "\r\n\r\n")) == NULL)
				continue;
			cl = strcasestr(req, "content-length:");
			if (cl == NULL || cl > end || got >= (size_t)(end + 4 - req) +
			    strtoul(cl + 15, NULL, 10))
				break;
		}
		sleep((unsigned)delay_s[n < ndelays ? n : ndelays - 1]);
		if (n == 0)
			snprintf(answer, sizeof answer, "HTTP/1.1 401 Unauthorized\r\n"
			    "WWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1:%d/"
			    ".well-known/oauth-protected-resource\"\r\nContent-Length: 0\r\n"
			    "Connection: close\r\n\r\n", *port);
		else
			snprintf(answer, sizeof answer, "HTTP/1.1 404 Not Found\r\n"
			    "Content-Type: text/plain\r\nContent-Length: 10\r\n"
			    "Connection: close\r\n\r\nnot found\n");
		if (write(c, answer, strlen(answer)) < 0)
			_exit(1);
		close(c);
	}
}

/*
 * A sign-in whose servers answer slowly (the beginning takes over 10 s in
 * all) is answered, not closed unanswered after 10 s, and the CLI says what
 * the service said (exit 2 for its 400), never a transport failure (3).
 */
Test(connectors, a_slow_sign_in_is_answered_after_ten_seconds, .timeout = 180)
{
	static const int delays[] = { 4, 7 };
	char body[256], *id, *path, *out = NULL;
	struct http_resp r;
	int port, status, rc;
	pid_t server = slow_server_start(delays, 2, &port);

	snprintf(body, sizeof body, "{\"name\":\"slow\",\"transport\":{\"type\":\"http\","
	    "\"url\":\"http://127.0.0.1:%d/mcp\"}}", port);
	id = new_connector(body);
	path = path_of("connectors", id, "/login");
	r = req("POST", path, "{}");
	cr_expect_eq(r.status, 400, "the sign-in was not answered: %ld %s", r.status, r.body);
	cr_expect_str_eq(http_error_code(&r) ? http_error_code(&r) : "(none)", "invalid_request",
	    "%s", r.body);
	http_resp_free(&r);
	rc = run_capture(&svc, &out, "%s connectors login %s 2>&1", harness_bin("taskdeck"), id);
	cr_expect_neq(rc, 3, "the CLI reported a transport failure: %s", out);
	cr_expect_neq(rc, 0, "%s", out);
	free(out);
	kill(server, SIGKILL);
	waitpid(server, &status, 0);
	free(path);
	free(id);
}
