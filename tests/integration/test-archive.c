/*
 * Archiving projects and sessions (docs/http-api.md, Archiving): over HTTP
 * and through the taskdeck command line, against a real taskdeckd.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(archive, .init = svc_setup, .fini = svc_teardown, .timeout = 120);

/* True when the array holds an object whose id is id. */
static bool
has_id(const cJSON *arr, const char *id)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, arr) {
		if (strcmp(json_str(item, "id"), id) == 0)
			return true;
	}
	return false;
}

/* PATCH path with body; asserts the status; the parsed answer (cJSON_Delete it). */
static cJSON *
patch(const char *path, const char *body, long status)
{
	struct http_resp r = http_api(&svc, "PATCH", path, body);
	cJSON *doc;

	cr_assert_eq(r.status, status, "PATCH %s %s: %ld %s", path, body, r.status, r.body);
	doc = json_doc(r.body);
	http_resp_free(&r);
	return doc;
}

Test(archive, projects_hidden_until_unarchived)
{
	char *kept = http_project_new(&svc, "kept"), *old = http_project_new(&svc, "old");
	char path[128];
	cJSON *doc, *list;
	struct http_resp r;

	snprintf(path, sizeof path, "/api/v1/projects/%s", old);
	doc = patch(path, "{\"archived\":true}", 200);
	cr_assert(cJSON_IsString(cJSON_GetObjectItem(doc, "archivedAt")), "%s",
	    cJSON_PrintUnformatted(doc));
	cr_assert_str_eq(json_str(doc, "name"), "old");
	cJSON_Delete(doc);
	doc = http_get_json(&svc, "/api/v1/projects/%s", kept);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "archivedAt")));
	cJSON_Delete(doc);

	list = http_get_json(&svc, "/api/v1/projects");
	cr_assert(has_id(list, kept) && !has_id(list, old), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/projects?archived=true");
	cr_assert(!has_id(list, kept) && has_id(list, old), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/projects?archived=all");
	cr_assert(has_id(list, kept) && has_id(list, old), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);

	r = http_api(&svc, "GET", "/api/v1/projects?archived=yes", NULL);
	cr_assert_eq(r.status, 400, "%s", r.body);
	http_resp_free(&r);
	doc = patch(path, "{\"archived\":\"yes\"}", 400);
	cJSON_Delete(doc);
	doc = patch(path, "{\"archivedAt\":null}", 400);
	cJSON_Delete(doc);

	/* Brought back: listed again, archivedAt null. */
	doc = patch(path, "{\"archived\":false}", 200);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "archivedAt")));
	cJSON_Delete(doc);
	list = http_get_json(&svc, "/api/v1/projects");
	cr_assert(has_id(list, old), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);
	free(kept);
	free(old);
}

Test(archive, sessions_hidden_and_still_run)
{
	char *project = http_project_new(&svc, "sessions");
	char path[128], session[64];
	cJSON *run, *doc, *list;

	run = http_replay_run(&svc, "first", project, "quick", "");
	snprintf(session, sizeof session, "%s", json_str(run, "sessionId"));
	cJSON_Delete(run_final_within(&svc, json_str(run, "id"), "completed", 30000));
	cJSON_Delete(run);

	snprintf(path, sizeof path, "/api/v1/sessions/%s", session);
	doc = patch(path, "{\"archived\":true}", 200);
	cr_assert(cJSON_IsString(cJSON_GetObjectItem(doc, "archivedAt")), "%s",
	    cJSON_PrintUnformatted(doc));
	cJSON_Delete(doc);
	doc = patch(path, "{\"title\":\"x\"}", 400);
	cJSON_Delete(doc);
	doc = patch("/api/v1/sessions/ses_01a215b3a0e50001553e5548", "{\"archived\":true}", 404);
	cJSON_Delete(doc);

	list = http_get_json(&svc, "/api/v1/sessions?project=%s", project);
	cr_assert(!has_id(list, session), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);
	list = http_get_json(&svc, "/api/v1/sessions?project=%s&archived=true", project);
	cr_assert(has_id(list, session), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);

	/* A run started in it explicitly still runs; the session stays archived. */
	run = http_run_start(&svc, "{\"project\":\"%s\",\"sessionId\":\"%s\",\"prompt\":\"again\"}",
	    project, session);
	cJSON_Delete(run_final_within(&svc, json_str(run, "id"), "completed", 30000));
	cJSON_Delete(run);
	doc = http_get_json(&svc, "/api/v1/sessions/%s", session);
	cr_assert(cJSON_IsString(cJSON_GetObjectItem(doc, "archivedAt")), "%s",
	    cJSON_PrintUnformatted(doc));
	cJSON_Delete(doc);

	doc = patch(path, "{\"archived\":false}", 200);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "archivedAt")));
	cJSON_Delete(doc);
	list = http_get_json(&svc, "/api/v1/sessions?project=%s", project);
	cr_assert(has_id(list, session), "%s", cJSON_PrintUnformatted(list));
	cJSON_Delete(list);
	free(project);
}

/* taskdeck ARGS with the service's home; its stdout (free it); asserts exit 0. */
static char *cli_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
cli_ok(const char *fmt, ...)
{
	char args[512];
	va_list ap;
	char *out;
	int status;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	status = run_capture(&svc, &out, "%s %s 2>&1", harness_bin("taskdeck"), args);
	cr_assert_eq(status, 0, "taskdeck %s: %s", args, out);
	return out;
}

Test(archive, cli_archive_unarchive_and_lists)
{
	char *project = http_project_new(&svc, "cli-archive");
	char *other = http_project_new(&svc, "cli-kept");
	char session[64];
	cJSON *run;
	char *out;

	out = cli_ok("projects archive %s", project);
	cr_assert(strstr(out, "archivedAt: 20") != NULL, "%s", out);
	free(out);
	out = cli_ok("projects list");
	cr_assert(strstr(out, project) == NULL && strstr(out, other) != NULL, "%s", out);
	free(out);
	out = cli_ok("projects list --archived");
	cr_assert(strstr(out, project) != NULL && strstr(out, other) == NULL, "%s", out);
	free(out);
	/* By its name: an archived project is still found by name. */
	out = cli_ok("projects unarchive cli-archive");
	cr_assert(strstr(out, "archivedAt: -") != NULL, "%s", out);
	free(out);
	out = cli_ok("projects list");
	cr_assert(strstr(out, project) != NULL, "%s", out);
	free(out);

	run = http_replay_run(&svc, "cli", project, "quick", "");
	snprintf(session, sizeof session, "%s", json_str(run, "sessionId"));
	cJSON_Delete(run_final_within(&svc, json_str(run, "id"), "completed", 30000));
	cJSON_Delete(run);
	out = cli_ok("sessions archive %s", session);
	cr_assert(strstr(out, "archivedAt: 20") != NULL, "%s", out);
	free(out);
	out = cli_ok("sessions list --project %s", project);
	cr_assert(strstr(out, session) == NULL, "%s", out);
	free(out);
	out = cli_ok("sessions list --project %s --archived", project);
	cr_assert(strstr(out, session) != NULL, "%s", out);
	free(out);
	out = cli_ok("sessions unarchive %s", session);
	free(out);
	out = cli_ok("sessions list --project %s", project);
	cr_assert(strstr(out, session) != NULL, "%s", out);
	free(out);
	free(project);
	free(other);
}
