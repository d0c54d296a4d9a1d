/* The HTTP API of a real taskdeckd, spoken raw (docs/http-api.md). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(api, .init = svc_setup, .fini = svc_teardown, .timeout = 60);

/* Asserts status and, when code is not NULL, the error code; checks X-Request-Id. */
static void
expect_answer(struct http_resp *r, long status, const char *code, const char *what)
{
	char *rid = http_header(r, "X-Request-Id");

	cr_expect_eq(r->status, status, "%s: status %ld, want %ld (%s)", what,
	    r->status, status, r->body);
	if (code != NULL)
		cr_expect_str_eq(http_error_code(r) ? http_error_code(r) : "(none)", code,
		    "%s", what);
	cr_expect(rid != NULL && strncmp(rid, "req_", 4) == 0, "%s: no X-Request-Id", what);
	free(rid);
}

/*
 * Every route of the route table, read from src/service/routes.c so that a
 * route added later is covered without editing this test.
 */
static int
each_route(void (*fn)(const char *method, const char *path, void *), void *arg)
{
	char path[512], line[512];
	regex_t re;
	regmatch_t m[3];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof path, "%s/src/service/routes.c",
	    getenv("TD_SRCDIR") ? getenv("TD_SRCDIR") : ".");
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot read %s", path);
	cr_assert_eq(regcomp(&re, "\\{ \"([A-Z]+)\", \"(/(api|app)/[^\"]*)\"", REG_EXTENDED), 0);
	while (fgets(line, sizeof line, f)) {
		if (regexec(&re, line, 3, m, 0) != 0)
			continue;
		char method[16], route[256], concrete[300] = "";
		snprintf(method, sizeof method, "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
		    line + m[1].rm_so);
		snprintf(route, sizeof route, "%.*s", (int)(m[2].rm_eo - m[2].rm_so),
		    line + m[2].rm_so);
		/* Replace each :param with a well-formed id. */
		for (char *tok = strtok(route, "/"); tok; tok = strtok(NULL, "/")) {
			strcat(concrete, "/");
			strcat(concrete, tok[0] == ':' ? "prj_000000000000000000000000" : tok);
		}
		fn(method, concrete, arg);
		n++;
	}
	regfree(&re);
	fclose(f);
	return n;
}

static void
check_unauthorized(const char *method, const char *path, void *arg)
{
	const char *wrong[] = {
		"Authorization: Bearer 0000000000000000000000000000000000000000000000000000000000000000",
		NULL };
	const char *basic[] = { "Authorization: Basic dXNlcjpwYXNz", NULL };
	const char *body = strcmp(method, "GET") == 0 ? NULL : "{}";
	struct http_resp r;

	r = http_req(&svc, method, path, body, NULL, false);
	expect_answer(&r, 401, "unauthorized", path);
	http_resp_free(&r);
	r = http_req(&svc, method, path, body, wrong, false);
	expect_answer(&r, 401, "unauthorized", path);
	http_resp_free(&r);
	r = http_req(&svc, method, path, body, basic, false);
	expect_answer(&r, 401, "unauthorized", path);
	http_resp_free(&r);
	(*(int *)arg)++;
}

Test(api, every_route_needs_the_token)
{
	int checked = 0;
	int routes = each_route(check_unauthorized, &checked);

	cr_expect_geq(routes, 9, "the route table was not read");
	cr_expect_eq(checked, routes);
}

Test(api, foreign_host_or_origin_is_forbidden)
{
	char good_origin[128], localhost[128];
	const char *evil_host[] = { "Host: evil.example:80", NULL };
	const char *rebinding[] = { "Host: attacker.example", NULL };
	const char *evil_origin[] = { "Origin: http://evil.example", NULL };
	const char *null_origin[] = { "Origin: null", NULL };
	const char *ok_origin[] = { good_origin, NULL };
	const char *ok_host[] = { localhost, NULL };
	struct http_resp r;

	r = http_req(&svc, "GET", "/api/v1/projects", NULL, evil_host, true);
	expect_answer(&r, 403, "forbidden", "foreign Host");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, rebinding, false);
	expect_answer(&r, 403, "forbidden", "foreign Host, no token");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, evil_origin, true);
	expect_answer(&r, 403, "forbidden", "foreign Origin");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"x\"}", null_origin, true);
	expect_answer(&r, 403, "forbidden", "null Origin");
	http_resp_free(&r);

	snprintf(good_origin, sizeof good_origin, "Origin: http://127.0.0.1:%d", svc.port);
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, ok_origin, true);
	expect_answer(&r, 200, NULL, "own Origin");
	http_resp_free(&r);
	snprintf(localhost, sizeof localhost, "Host: localhost:%d", svc.port);
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, ok_host, true);
	expect_answer(&r, 200, NULL, "localhost Host");
	http_resp_free(&r);
}

Test(api, bad_bodies_get_their_codes)
{
	static const struct { const char *body; const char *field; } cases[] = {
		{ "{\"name\":", NULL },
		{ "[1,2]", NULL },
		{ "\"just a string\"", NULL },
		{ "{\"name\":5}", "name" },
		{ "{\"name\":\"\"}", "name" },
		{ "{}", "name" },
		{ "{\"name\":\"ok\",\"metadata\":[1]}", "metadata" },
		{ "{\"name\":\"ok\",\"color\":\"red\"}", "color" },
		{ "{\"name\":\"ok\",\"id\":\"prj_000000000000000000000000\"}", "id" },
		{ "{\"name\":\"\xff\"}", NULL },
	};
	struct http_resp r;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		r = http_req(&svc, "POST", "/api/v1/projects", cases[i].body, NULL, true);
		expect_answer(&r, 400, "invalid_request", cases[i].body);
		if (cases[i].field != NULL) {
			cJSON *details = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"),
			    "details");
			cr_expect_str_eq(json_get_string(details, "field") ? json_get_string(details, "field") : "(none)",
			    cases[i].field, "%s", cases[i].body);
		}
		http_resp_free(&r);
	}
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, NULL, true);
	cr_expect_eq(cJSON_GetArraySize(r.json), 0, "a bad request created something");
	http_resp_free(&r);
}

Test(api, oversize_body_is_413_and_a_large_one_fits)
{
	size_t big = 1024 * 1024 + 1;
	char *body = malloc(big + 64);
	struct http_resp r;

	/* {"name":"x","context":"aaaa..."} of more than 1 MiB */
	strcpy(body, "{\"name\":\"x\",\"context\":\"");
	memset(body + strlen(body), 'a', big);
	strcpy(body + 23 + big, "\"}");
	r = http_req(&svc, "POST", "/api/v1/projects", body, NULL, true);
	expect_answer(&r, 413, "payload_too_large", "1 MiB + 1");
	http_resp_free(&r);

	/* 100,000 characters of context: the largest allowed. */
	strcpy(body, "{\"name\":\"x\",\"context\":\"");
	memset(body + 23, 'a', 100000);
	strcpy(body + 23 + 100000, "\"}");
	r = http_req(&svc, "POST", "/api/v1/projects", body, NULL, true);
	expect_answer(&r, 201, NULL, "100,000 characters");
	cr_expect_eq(strlen(json_get_string(r.json, "context")), 100000);
	http_resp_free(&r);
	free(body);
}

Test(api, unknown_routes_and_methods)
{
	struct http_resp r;
	char *allow;

	r = http_req(&svc, "GET", "/api/v1/nothing-here", NULL, NULL, true);
	expect_answer(&r, 404, "not_found", "unknown route");
	http_resp_free(&r);
	r = http_req(&svc, "DELETE", "/api/v1/projects", NULL, NULL, true);
	expect_answer(&r, 405, "method_not_allowed", "DELETE projects");
	allow = http_header(&r, "Allow");
	cr_expect(allow && strstr(allow, "GET") && strstr(allow, "POST"), "Allow: %s", allow);
	free(allow);
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/projects/prj_000000000000000000000000", NULL, NULL, true);
	expect_answer(&r, 404, "not_found", "unknown project");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"),
	    "details"), "resource"), "project");
	http_resp_free(&r);
}

Test(api, projects_create_get_list_update)
{
	struct http_resp r;
	char *location, *link, path[128];
	char *ids[5];

	r = http_req(&svc, "POST", "/api/v1/projects",
	    "{\"name\":\"Research\",\"description\":\"d\",\"metadata\":{\"team\":\"a\",\"tags\":{\"x\":1}}}",
	    NULL, true);
	expect_answer(&r, 201, NULL, "create");
	location = http_header(&r, "Location");
	snprintf(path, sizeof path, "/api/v1/projects/%s", json_get_string(r.json, "id"));
	cr_expect_str_eq(location, path);
	cr_expect_str_eq(json_get_string(r.json, "createdAt"), json_get_string(r.json, "updatedAt"));
	free(location);
	http_resp_free(&r);

	r = http_req(&svc, "PATCH", path,
	    "{\"description\":null,\"context\":\"ctx\",\"metadata\":{\"team\":null,\"tags\":{\"y\":2}}}",
	    NULL, true);
	expect_answer(&r, 200, NULL, "merge patch");
	cr_expect_str_eq(json_get_string(r.json, "name"), "Research");
	cr_expect_str_eq(json_get_string(r.json, "description"), "");
	cr_expect_str_eq(json_get_string(r.json, "context"), "ctx");
	char *meta = cJSON_PrintUnformatted(cJSON_GetObjectItem(r.json, "metadata"));
	cr_expect_str_eq(meta, "{\"tags\":{\"x\":1,\"y\":2}}");
	free(meta);
	cr_expect_str_gt(json_get_string(r.json, "updatedAt"), json_get_string(r.json, "createdAt"));
	http_resp_free(&r);

	r = http_req(&svc, "PATCH", path, "{\"name\":null}", NULL, true);
	expect_answer(&r, 400, "invalid_request", "name cannot be cleared");
	http_resp_free(&r);
	r = http_req(&svc, "PATCH", path, "{\"updatedAt\":\"2020-01-01T00:00:00.000Z\"}", NULL, true);
	expect_answer(&r, 400, "invalid_request", "updatedAt is read-only");
	http_resp_free(&r);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_expect_str_eq(json_get_string(r.json, "name"), "Research", "a rejected patch changed the project");
	http_resp_free(&r);

	/* Paging: newest first, Link to the next page. */
	for (int i = 0; i < 4; i++) {
		char name[16];
		snprintf(name, sizeof name, "p%d", i);
		ids[i] = http_project_new(&svc, name);
	}
	r = http_req(&svc, "GET", "/api/v1/projects?limit=2", NULL, NULL, true);
	expect_answer(&r, 200, NULL, "page 1");
	cr_assert_eq(cJSON_GetArraySize(r.json), 2);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(r.json, 0), "name"), "p3");
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(r.json, 1), "name"), "p2");
	link = http_header(&r, "Link");
	cr_assert_not_null(link);
	http_resp_free(&r);
	char next[256];
	cr_assert_eq(sscanf(link, "<%255[^>]>; rel=\"next\"", next), 1, "Link: %s", link);
	free(link);
	r = http_req(&svc, "GET", next, NULL, NULL, true);
	cr_assert_eq(cJSON_GetArraySize(r.json), 2);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(r.json, 0), "name"), "p1");
	link = http_header(&r, "Link");
	http_resp_free(&r);
	cr_assert_not_null(link, "a third page exists");
	cr_assert_eq(sscanf(link, "<%255[^>]>; rel=\"next\"", next), 1);
	free(link);
	r = http_req(&svc, "GET", next, NULL, NULL, true);
	cr_expect_eq(cJSON_GetArraySize(r.json), 1);
	cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(r.json, 0), "name"), "Research");
	link = http_header(&r, "Link");
	cr_expect_null(link, "no next page after the last");
	free(link);
	http_resp_free(&r);
	for (int i = 0; i < 4; i++)
		free(ids[i]);

	r = http_req(&svc, "GET", "/api/v1/projects?limit=0", NULL, NULL, true);
	expect_answer(&r, 400, "invalid_request", "limit=0");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/projects?cursor=x", NULL, NULL, true);
	expect_answer(&r, 400, "invalid_request", "bad cursor");
	http_resp_free(&r);
}

Test(api, updated_at_strictly_increases)
{
	char *id = http_project_new(&svc, "clock"), path[128], last[64] = "";
	struct http_resp r;

	snprintf(path, sizeof path, "/api/v1/projects/%s", id);
	for (int i = 0; i < 20; i++) {
		r = http_req(&svc, "PATCH", path, "{\"context\":\"x\"}", NULL, true);
		cr_assert_eq(r.status, 200);
		cr_expect_str_gt(json_get_string(r.json, "updatedAt"), last, "write %d", i);
		snprintf(last, sizeof last, "%s", json_get_string(r.json, "updatedAt"));
		http_resp_free(&r);
		/* A read right after the write sees it (reads may be served from a cache). */
		r = http_req(&svc, "GET", path, NULL, NULL, true);
		cr_expect_str_eq(json_get_string(r.json, "updatedAt"), last, "stale read after write %d", i);
		http_resp_free(&r);
	}
	free(id);
}

Test(api, session_defaults_and_stale_writes)
{
	char *id = http_project_new(&svc, "defaults"), path[160], body[512], first[64];
	struct http_resp r, p;
	cJSON *d;

	snprintf(path, sizeof path, "/api/v1/projects/%s", id);
	p = http_req(&svc, "GET", path, NULL, NULL, true);
	strcat(path, "/session-defaults");
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	expect_answer(&r, 200, NULL, "read defaults");
	cr_expect_str_eq(json_get_string(r.json, "projectId"), id);
	cr_expect_str_eq(json_get_string(r.json, "updatedAt"), json_get_string(p.json, "createdAt"));
	d = cJSON_GetObjectItem(r.json, "defaults");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(d, "model")));
	snprintf(first, sizeof first, "%s", json_get_string(r.json, "updatedAt"));
	http_resp_free(&r);
	http_resp_free(&p);

	snprintf(body, sizeof body, "{\"expectedUpdatedAt\":\"%s\",\"patch\":"
	    "{\"provider\":\"replay\",\"model\":\"research\",\"effort\":\"high\"}}", first);
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	expect_answer(&r, 200, NULL, "write defaults");
	d = cJSON_GetObjectItem(r.json, "defaults");
	cr_expect_str_eq(json_get_string(d, "model"), "research");
	cr_expect_str_gt(json_get_string(r.json, "updatedAt"), first);
	http_resp_free(&r);

	/* The same expectedUpdatedAt again is stale now. */
	snprintf(body, sizeof body, "{\"expectedUpdatedAt\":\"%s\",\"patch\":{\"model\":\"other\"}}",
	    first);
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	expect_answer(&r, 409, "stale_write", "stale defaults");
	d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"),
	    "details"), "current");
	cr_expect_str_eq(json_get_string(cJSON_GetObjectItem(d, "defaults"), "model"), "research",
	    "details.current holds the current defaults");
	http_resp_free(&r);

	/* Clear with null; invalid values are 400 and change nothing. */
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	snprintf(body, sizeof body, "{\"expectedUpdatedAt\":\"%s\",\"patch\":{\"model\":null}}",
	    json_get_string(r.json, "updatedAt"));
	http_resp_free(&r);
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	expect_answer(&r, 200, NULL, "clear model");
	d = cJSON_GetObjectItem(r.json, "defaults");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(d, "model")));
	cr_expect_str_eq(json_get_string(d, "provider"), "replay", "other defaults kept");
	snprintf(body, sizeof body, "{\"expectedUpdatedAt\":\"%s\",\"patch\":{\"effort\":\"extreme\"}}",
	    json_get_string(r.json, "updatedAt"));
	http_resp_free(&r);
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	expect_answer(&r, 400, "invalid_request", "bad effort");
	http_resp_free(&r);
	r = http_req(&svc, "PATCH", path, "{\"patch\":{}}", NULL, true);
	expect_answer(&r, 400, "invalid_request", "no expectedUpdatedAt");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/projects/prj_000000000000000000000000/session-defaults",
	    NULL, NULL, true);
	expect_answer(&r, 404, "not_found", "defaults of an unknown project");
	http_resp_free(&r);
	free(id);
}

Test(api, agent_routing_read_and_patch)
{
	struct http_resp r;
	cJSON *reviewer, *subagent;
	char before[64];

	r = http_req(&svc, "GET", "/api/v1/settings/agent-routing", NULL, NULL, true);
	expect_answer(&r, 200, NULL, "read routing");
	cr_expect_str_eq(json_get_string(r.json, "framework"), "taskdeck");
	snprintf(before, sizeof before, "%s", json_get_string(r.json, "updatedAt"));
	http_resp_free(&r);

	r = http_req(&svc, "PATCH", "/api/v1/settings/agent-routing",
	    "{\"reviewer\":{\"enabled\":true,\"provider\":\"openai\"},\"subagent\":{\"maxConcurrent\":4}}",
	    NULL, true);
	expect_answer(&r, 200, NULL, "patch routing");
	reviewer = cJSON_GetObjectItem(r.json, "reviewer");
	subagent = cJSON_GetObjectItem(r.json, "subagent");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(reviewer, "enabled")));
	cr_expect_str_eq(json_get_string(reviewer, "provider"), "openai");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(reviewer, "model")), "untouched member kept");
	cr_expect_eq(cJSON_GetObjectItem(subagent, "maxConcurrent")->valueint, 4);
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(subagent, "enabled")));
	cr_expect_str_gt(json_get_string(r.json, "updatedAt"), before);
	http_resp_free(&r);

	static const char *bad[] = {
		"{\"framework\":null}", "{\"framework\":\"vim\"}",
		"{\"subagent\":{\"maxConcurrent\":0}}", "{\"subagent\":{\"maxConcurrent\":2.5}}",
		"{\"reviewer\":{\"enabled\":\"yes\"}}", "{\"reviewer\":null}",
		"{\"reviewer\":{\"colour\":1}}", "{\"updatedAt\":\"x\"}", "{\"extra\":1}",
		"{\"reviewer\":{\"framework\":\"codex\"}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = http_req(&svc, "PATCH", "/api/v1/settings/agent-routing", bad[i], NULL, true);
		expect_answer(&r, 400, "invalid_request", bad[i]);
		http_resp_free(&r);
	}
	r = http_req(&svc, "GET", "/api/v1/settings/agent-routing", NULL, NULL, true);
	cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "subagent"),
	    "maxConcurrent")->valueint, 4, "a rejected patch changed routing");
	http_resp_free(&r);
}

Test(api, doctor_reports_ready_without_the_token)
{
	struct http_resp r = http_req(&svc, "GET", "/api/v1/doctor", NULL, NULL, true);
	cJSON *c;
	int n = 0;

	expect_answer(&r, 200, NULL, "doctor");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "ready")));
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(r.json, "checks")) {
		/* readiness: an external CLI that is not installed is a warning */
		if (strcmp(json_get_string(c, "id"), "runtime-claude-code") == 0 ||
		    strcmp(json_get_string(c, "id"), "runtime-codex") == 0 ||
		    strcmp(json_get_string(c, "id"), "runtime-acp") == 0)
			cr_expect_neq(strcmp(json_get_string(c, "status"), "fail"), 0, "%s", json_get_string(c, "id"));
		else
			cr_expect_str_eq(json_get_string(c, "status"), "ok", "%s", json_get_string(c, "id"));
		n++;
	}
	/* data directory, database, token file, agent runtime, replay transcripts, sandbox,
	 * runtime-{taskdeck,claude-code,codex,acp}, provider, disk-space (readiness) */
	cr_expect_geq(n, 12);
	cr_expect_null(strstr(r.body, svc.token), "the doctor report holds the token");
	http_resp_free(&r);
}

Test(api, idempotent_create_replays_and_conflicts)
{
	const char *key[] = { "Idempotency-Key: create-research-1", NULL };
	char longkey[300] = "Idempotency-Key: ";
	const char *badkey[] = { longkey, NULL };
	struct http_resp a, b, c;
	char *replayed;

	a = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"once\"}", key, true);
	expect_answer(&a, 201, NULL, "first");
	b = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"once\"}", key, true);
	expect_answer(&b, 201, NULL, "replay");
	cr_expect_str_eq(json_get_string(b.json, "id"), json_get_string(a.json, "id"));
	replayed = http_header(&b, "Idempotent-Replayed");
	cr_expect_str_eq(replayed ? replayed : "", "true");
	free(replayed);
	c = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"twice\"}", key, true);
	expect_answer(&c, 422, "idempotency_conflict", "other body, same key");
	http_resp_free(&a);
	http_resp_free(&b);
	http_resp_free(&c);
	memset(longkey + strlen(longkey), 'k', 256);
	a = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"x\"}", badkey, true);
	expect_answer(&a, 400, "invalid_request", "a key of 256 characters");
	http_resp_free(&a);

	a = http_req(&svc, "GET", "/api/v1/projects", NULL, NULL, true);
	cr_expect_eq(cJSON_GetArraySize(a.json), 1, "exactly one project was made");
	http_resp_free(&a);
}

struct racer {
	char id[64];
	long status;
};

static void *
race_create(void *arg)
{
	struct racer *rc = arg;
	const char *key[] = { "Idempotency-Key: fifty-at-once", NULL };
	struct http_resp r = http_req(&svc, "POST", "/api/v1/projects",
	    "{\"name\":\"raced\"}", key, true);

	rc->status = r.status;
	if (json_get_string(r.json, "id"))
		snprintf(rc->id, sizeof rc->id, "%s", json_get_string(r.json, "id"));
	http_resp_free(&r);
	return NULL;
}

Test(api, fifty_concurrent_creates_with_one_key_make_one_project)
{
	enum { N = 50 };
	struct racer racers[N] = { 0 };
	pthread_t th[N];
	struct http_resp r;

	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, race_create, &racers[i]);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++) {
		cr_expect_eq(racers[i].status, 201, "racer %d: %ld", i, racers[i].status);
		cr_expect_str_eq(racers[i].id, racers[0].id, "racer %d got another project", i);
	}
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, NULL, true);
	cr_expect_eq(cJSON_GetArraySize(r.json), 1);
	http_resp_free(&r);
}

Test(api_small_registry, full_registry_is_503_with_retry_after, .timeout = 60)
{
	const char *args[] = { "--idempotency-capacity", "2", NULL };
	const char *k1[] = { "Idempotency-Key: k1", NULL };
	const char *k2[] = { "Idempotency-Key: k2", NULL };
	const char *k3[] = { "Idempotency-Key: k3", NULL };
	struct http_resp r;
	char *retry;

	svc_start_with(&svc, args);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"a\"}", k1, true);
	cr_expect_eq(r.status, 201);
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"b\"}", k2, true);
	cr_expect_eq(r.status, 201);
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"c\"}", k3, true);
	expect_answer(&r, 503, "idempotency_unavailable", "third key");
	retry = http_header(&r, "Retry-After");
	cr_expect(retry != NULL && atoi(retry) > 0, "Retry-After: %s", retry);
	free(retry);
	http_resp_free(&r);
	/* Replays still work, and a request without a key is unaffected. */
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"a\"}", k1, true);
	cr_expect_eq(r.status, 201);
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"d\"}", NULL, true);
	cr_expect_eq(r.status, 201);
	http_resp_free(&r);
	svc_destroy(&svc);
}

/* Asserts a 400 invalid_request whose details.field is field. */
static void
expect_bad_field(struct http_resp *r, const char *field, const char *what)
{
	const cJSON *details = cJSON_GetObjectItem(cJSON_GetObjectItem(r->json, "error"),
	    "details");

	expect_answer(r, 400, "invalid_request", what);
	cr_expect_str_eq(json_get_string(details, "field") ? json_get_string(details, "field") : "(none)", field,
	    "%s: details.field", what);
}

/*
 * A key sent twice is refused at parse time (issue 17, finding 1): validation
 * read the first copy while the merge applied the last, so a name over the
 * limit or an invalid profile was stored.  Nothing changes.
 */
Test(api, duplicate_keys_are_refused_and_nothing_changes)
{
	char *id = http_project_new(&svc, "dup"), path[160], body[8192], first[64];
	char long_name[5001];
	struct http_resp r;

	snprintf(path, sizeof path, "/api/v1/projects/%s", id);
	r = http_req(&svc, "PATCH", path, "{\"name\":\"ok\",\"name\":7}", NULL, true);
	expect_bad_field(&r, "name", "name twice, second a number");
	http_resp_free(&r);
	memset(long_name, 'x', 5000);
	long_name[5000] = '\0';
	snprintf(body, sizeof body, "{\"name\":\"ok\",\"name\":\"%s\"}", long_name);
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	expect_bad_field(&r, "name", "name twice, second over the limit");
	http_resp_free(&r);
	r = http_req(&svc, "PATCH", path, "{\"metadata\":{\"a\":{\"b\":1,\"b\":2}}}", NULL, true);
	expect_bad_field(&r, "metadata.a.b", "a nested key twice");
	http_resp_free(&r);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_expect_str_eq(json_get_string(r.json, "name"), "dup", "a refused patch changed the project");
	http_resp_free(&r);

	strcat(path, "/session-defaults");
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	snprintf(first, sizeof first, "%s", json_get_string(r.json, "updatedAt"));
	http_resp_free(&r);
	snprintf(body, sizeof body, "{\"expectedUpdatedAt\":\"%s\",\"patch\":"
	    "{\"permissionProfile\":\"read-only\",\"permissionProfile\":\"god-mode\"}}", first);
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	expect_bad_field(&r, "patch.permissionProfile", "a profile twice");
	http_resp_free(&r);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_expect_str_eq(json_get_string(r.json, "updatedAt"), first, "a refused patch changed the defaults");
	http_resp_free(&r);

	r = http_req(&svc, "PATCH", "/api/v1/settings/agent-routing",
	    "{\"framework\":\"taskdeck\",\"framework\":null}", NULL, true);
	expect_bad_field(&r, "framework", "the routing framework twice");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/settings/agent-routing", NULL, NULL, true);
	expect_answer(&r, 200, NULL, "routing still reads");
	cr_expect_str_eq(json_get_string(r.json, "framework"), "taskdeck");
	http_resp_free(&r);

	r = http_req(&svc, "POST", "/api/v1/projects",
	    "{\"name\":\"a\",\"steps\":[{\"t\":1},{\"t\":1,\"t\":2}]}", NULL, true);
	expect_bad_field(&r, "steps[1].t", "a key twice inside an array");
	http_resp_free(&r);
	free(id);
}

/*
 * An object of 50,000 members held the store for seconds while it was merged:
 * more than 1,000 members in one object are refused by the parser, at once,
 * with the object's path; the project is unchanged and the service answers.
 */
Test(api, crowded_object_is_refused_at_once)
{
	char *id = http_project_new(&svc, "crowded"), path[160];
	size_t cap = 50000 * 16 + 64, o = 0;
	char *body = malloc(cap);
	struct http_resp r;
	int64_t t0;

	snprintf(path, sizeof path, "/api/v1/projects/%s", id);
	o += (size_t)snprintf(body + o, cap - o, "{\"metadata\":{");
	for (int i = 0; i < 50000; i++)
		o += (size_t)snprintf(body + o, cap - o, "%s\"k%d\":1", i ? "," : "", i);
	snprintf(body + o, cap - o, "}}");
	t0 = mono_ms();
	r = http_req(&svc, "PATCH", path, body, NULL, true);
	cr_expect_lt(mono_ms() - t0, 1000, "a 50,000-member object took %lld ms",
	    (long long)(mono_ms() - t0));
	expect_bad_field(&r, "metadata", "50,000 members in metadata");
	cr_expect(strstr(r.body, "more than 1000 members") != NULL, "%s", r.body);
	http_resp_free(&r);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	expect_answer(&r, 200, NULL, "the project after the refused patch");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "metadata")), 0);
	http_resp_free(&r);
	free(body);
	free(id);
}

/* A \u0000 inside a string would cut it where cJSON stops (finding 2): a cwd of
 * "<dir>\u0000/../../etc" ran in <dir>.  Refused; an escaped backslash is not one. */
Test(api, nul_inside_a_string_is_refused)
{
	char *id = http_project_new(&svc, "nul"), body[512];
	struct http_resp r;

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"p\","
	    "\"cwd\":\"/tmp\\u0000/../../etc\"}", id);
	r = http_req(&svc, "POST", "/api/v1/runs", body, NULL, true);
	expect_answer(&r, 400, "invalid_request", "cwd with \\u0000");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"a\\u0000b\"}", NULL, true);
	expect_answer(&r, 400, "invalid_request", "name with \\u0000");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"back\\\\u0000slash\"}",
	    NULL, true);
	expect_answer(&r, 201, NULL, "an escaped backslash then u0000 is plain text");
	cr_expect_str_eq(json_get_string(r.json, "name"), "back\\u0000slash");
	http_resp_free(&r);
	free(id);
}

/* Sends a raw request (curl keeps one Host header) and returns the status code. */
static int
raw_status(const char *request)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)svc.port) };
	char answer[512] = "";
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
	size_t got = 0;
	ssize_t n;

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	cr_assert_eq(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while (got < sizeof answer - 1 &&
	    (n = read(fd, answer + got, sizeof answer - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	sscanf(answer, "HTTP/1.%*d %d", &status);
	return status;
}

/* Only the first copy of a header was checked (finding 9): a second Host is a
 * bad request (RFC 9112), a second Origin is refused like a foreign one. */
Test(api, a_second_host_or_origin_is_refused)
{
	char own_host[128], own_origin[128];
	const char *two_origins[] = { own_origin, "Origin: http://evil.example", NULL };
	const char *same_twice[] = { own_origin, own_origin, NULL };
	struct http_resp r;

	snprintf(own_host, sizeof own_host, "Host: 127.0.0.1:%d", svc.port);
	snprintf(own_origin, sizeof own_origin, "Origin: http://127.0.0.1:%d", svc.port);
	char req[512];

	snprintf(req, sizeof req, "GET /api/v1/projects HTTP/1.1\r\n%s\r\nHost: evil.example\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", own_host, svc.token);
	cr_expect_eq(raw_status(req), 400, "two Host headers");
	snprintf(req, sizeof req, "GET /api/v1/projects HTTP/1.1\r\n%s\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", own_host, svc.token);
	cr_expect_eq(raw_status(req), 200, "the same request with one Host");
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"x\"}", two_origins, true);
	expect_answer(&r, 403, "forbidden", "two Origin headers");
	http_resp_free(&r);
	r = http_req(&svc, "GET", "/api/v1/projects", NULL, same_twice, true);
	expect_answer(&r, 403, "forbidden", "the own Origin twice");
	http_resp_free(&r);
}

/* A project name reads as what it is: no control or bidi character (finding 11). */
Test(api, project_names_refuse_bidi_and_control_characters)
{
	struct http_resp r;

	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"\\u202etxt.exe\"}", NULL,
	    true);
	expect_bad_field(&r, "name", "a right-to-left override in a name");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"a\\u0085b\"}", NULL, true);
	expect_bad_field(&r, "name", "a C1 control in a name");
	http_resp_free(&r);
	r = http_req(&svc, "POST", "/api/v1/projects", "{\"name\":\"\\u05e9\\u05dc\\u05d5\\u05dd\"}",
	    NULL, true);
	expect_answer(&r, 201, NULL, "Hebrew letters are a name like any");
	http_resp_free(&r);
}

/* 500 query arguments used up the connection's memory while libmicrohttpd parsed
 * them, and no answer came at all (finding 5): now 414, at once. */
Test(api, many_query_arguments_get_414_at_once)
{
	static char path[16384];
	struct http_resp r;
	int64_t t0;
	size_t n;

	for (int count = 500; count >= 64; count = count == 500 ? 65 : 0) {
		n = (size_t)snprintf(path, sizeof path, "/api/v1/projects?limit=10");
		for (int i = 1; i < count; i++)
			n += (size_t)snprintf(path + n, sizeof path - n, "&a%d=%d", i, i);
		t0 = mono_ms();
		r = http_req(&svc, "GET", path, NULL, NULL, true);
		expect_answer(&r, 414, "uri_too_long", "too many query arguments");
		cr_expect_lt(mono_ms() - t0, 1000, "%d arguments: answered after %lld ms", count,
		    (long long)(mono_ms() - t0));
		http_resp_free(&r);
	}
	n = (size_t)snprintf(path, sizeof path, "/api/v1/projects?limit=10");
	for (int i = 1; i < 64; i++)
		n += (size_t)snprintf(path + n, sizeof path - n, "&a%d=%d", i, i);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	expect_answer(&r, 200, NULL, "64 arguments are fine");
	http_resp_free(&r);
}

/*
 * A %00 decoded would end the path early and another route would answer
 * (the project for .../usage, a patch of it for .../session-defaults): the
 * request is refused, whatever route or parameter holds it.
 */
Test(api, an_encoded_nul_in_the_url_is_refused)
{
	char *id = http_project_new(&svc, "nul");
	char path[256];
	struct http_resp r;
	cJSON *p;

	snprintf(path, sizeof path, "/api/v1/projects/%s%%00/usage", id);
	r = http_api(&svc, "GET", path, NULL);
	expect_answer(&r, 400, "invalid_request", path);
	cr_expect_null(json_get_string(r.json, "name"), "another route answered: %s", r.body);
	http_resp_free(&r);
	snprintf(path, sizeof path, "/api/v1/projects/%s%%00/session-defaults", id);
	r = http_api(&svc, "PATCH", path, "{\"name\":\"renamed\"}");
	expect_answer(&r, 400, "invalid_request", path);
	http_resp_free(&r);
	snprintf(path, sizeof path, "/api/v1/projects/%s", id);
	p = http_get_json(&svc, "%s", path);
	cr_expect_str_eq(json_get_string(p, "name"), "nul", "the project was patched");
	cJSON_Delete(p);
	r = http_api(&svc, "GET", "/api/v1/projects?limit=1%00x", NULL);
	expect_answer(&r, 400, "invalid_request", "a NUL in a query value");
	http_resp_free(&r);
	/* Without the NUL, the same routes answer as ever. */
	snprintf(path, sizeof path, "/api/v1/projects/%s/usage", id);
	r = http_api(&svc, "GET", path, NULL);
	expect_answer(&r, 200, NULL, path);
	http_resp_free(&r);
	free(id);
}
