/*
 * A session's own connectors (docs/connectors.md, "A session's own
 * connectors") through libtaskdeck and a real taskdeckd, with a stand-in
 * agent (tests/integration/fake-agent.c) that records its start message and
 * asks secret.resolve: the session's servers reach its runs with their values
 * as bindings, never in the start message; the values resolve for that run
 * only, a run of another session asking for them is refused; they are on no
 * disk page and in no answer; replacing them and deleting the session work.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "taskdeck.h"

static struct svc ssvc;

static void
scn_setup(void)
{
	char agent[512];

	snprintf(agent, sizeof agent, "%s", harness_bin("tests/integration/fake-agent"));
	setenv("TASKDECK_AGENT", agent, 1);
	svc_start(&ssvc);
	unsetenv("TASKDECK_AGENT");
	svc_export_env(&ssvc);
}

static void
scn_teardown(void)
{
	svc_destroy(&ssvc);
}

TestSuite(session_connectors, .init = scn_setup, .fini = scn_teardown, .timeout = 120);

#define SERVERS "[{\"name\":\"tools\",\"command\":\"/bin/true\",\"args\":[\"-x\"]," \
	"\"env\":[{\"name\":\"TOKEN_A\",\"value\":\"SCN-SECRET-ENV\"}]}," \
	"{\"type\":\"http\",\"name\":\"remote\",\"url\":\"http://127.0.0.1:9/mcp\"," \
	"\"headers\":[{\"name\":\"X-Api-Key\",\"value\":\"SCN-SECRET-HDR\"}]}]"

/* Asserts that needle is in no file of the service's home. */
static void
scn_not_on_disk(const char *needle)
{
	static const char *const files[] = { "taskdeck.db", "taskdeck.db-wal", "taskdeckd.log",
		NULL };

	for (const char *const *f = files; *f; f++) {
		char path[PATH_MAX];
		size_t len;
		char *data;

		snprintf(path, sizeof path, "%s/%s", ssvc.home, *f);
		if ((data = harness_slurp(path, &len)) == NULL)
			continue;
		cr_assert_null(memmem(data, len, needle, strlen(needle)), "%s holds %s", *f, needle);
		free(data);
	}
}

/* A session of project in a new directory (*cwd, malloc'd), with servers (may be NULL). */
static char *
scn_session(struct td_client *c, const char *project, const char *servers, char **cwd)
{
	struct td_session *s = NULL;
	struct td_error err;
	char tmpl[PATH_MAX], *id;

	snprintf(tmpl, sizeof tmpl, "%s/tdscn-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	cr_assert_not_null(mkdtemp(tmpl));
	*cwd = realpath(tmpl, NULL);
	cr_assert_eq(td_create_session(c, &(struct td_new_session){ .project = project,
	    .cwd = *cwd, .provider = "replay", .model = "quick", .connectors_json = servers },
	    NULL, &s, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(s->cwd, *cwd);
	cr_assert_null(s->last_run.id);
	id = strdup(s->id);
	td_session_free(s);
	return id;
}

/* Runs one turn in session and returns what the stand-in agent wrote: start.json, resolve.json. */
static void
scn_run(struct td_client *c, const char *project, const char *session, const char *cwd,
    cJSON **start, cJSON **answers)
{
	struct td_run *run = NULL;
	struct td_error err;
	char path[PATH_MAX];
	size_t len;
	char *text;
	cJSON *done;

	cr_assert_eq(td_start_run(c, &(struct td_run_request){ .project = project,
	    .prompt = "use the servers", .session_id = session }, NULL, &run, &err), TD_OK,
	    "%s", err.message);
	cr_assert_str_eq(run->session_id, session);
	done = run_wait_final(&ssvc, run->id, 60000);
	cr_assert_not_null(done, "the run did not finish");
	cr_assert_str_eq(json_str(done, "status"), "completed");
	cJSON_Delete(done);
	td_run_free(run);
	snprintf(path, sizeof path, "%s/start.json", cwd);
	text = harness_slurp(path, &len);
	cr_assert_not_null(text);
	cr_assert_null(memmem(text, len, "SCN-SECRET-", 11), "the start message holds a value");
	*start = cJSON_Parse(text);
	free(text);
	snprintf(path, sizeof path, "%s/resolve.json", cwd);
	text = harness_slurp(path, &len);
	cr_assert_not_null(text);
	*answers = cJSON_Parse(text);
	free(text);
}

/* The start message's connector of a session named name, or NULL. */
static const cJSON *
scn_find(const cJSON *start, const char *name)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(start, "connectors")) {
		if (strncmp(json_str(c, "id"), "scn_", 4) == 0 && strcmp(json_str(c, "name"), name) == 0)
			return c;
	}
	return NULL;
}

/* The answer to the request whose target was target (the stand-in adds it), or NULL. */
static const cJSON *
scn_answer(const cJSON *answers, const char *target)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, answers) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(a, "target"));

		if (t != NULL && strcmp(t, target) == 0)
			return a;
	}
	return NULL;
}

Test(session_connectors, reach_the_sessions_runs_only)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "scn");
	char *cwd_a, *cwd_b, *a = scn_session(c, project, SERVERS, &cwd_a);
	char *b = scn_session(c, project, NULL, &cwd_b), path[PATH_MAX], ask[512];
	const cJSON *tools, *remote, *ans, *t;
	cJSON *start, *answers, *list;
	struct td_error err;
	FILE *fp;

	/* The session's run: both servers, their values as bindings that resolve. */
	scn_run(c, project, a, cwd_a, &start, &answers);
	tools = scn_find(start, "tools");
	remote = scn_find(start, "remote");
	cr_assert_not_null(tools, "%s", cJSON_PrintUnformatted(start));
	cr_assert_not_null(remote);
	t = cJSON_GetObjectItem(tools, "transport");
	cr_assert_str_eq(json_str(t, "type"), "stdio");
	cr_assert_str_eq(json_str(t, "command"), "/bin/true");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "args"), 0)),
	    "-x");
	cr_assert_null(cJSON_GetObjectItem(t, "env"));
	cr_assert_str_eq(json_str(cJSON_GetObjectItem(remote, "transport"), "url"),
	    "http://127.0.0.1:9/mcp");
	ans = scn_answer(answers, "env:TOKEN_A");
	cr_assert_not_null(ans, "%s", cJSON_PrintUnformatted(answers));
	cr_assert_str_eq(json_str(cJSON_GetObjectItem(ans, "result"), "value"), "SCN-SECRET-ENV");
	/* A header's value is the header's, whole (no scheme added). */
	ans = scn_answer(answers, "header:X-Api-Key");
	cr_assert_not_null(ans);
	cr_assert_str_eq(json_str(cJSON_GetObjectItem(ans, "result"), "value"), "SCN-SECRET-HDR");
	snprintf(ask, sizeof ask, "[{\"connectorId\":\"%s\",\"credentialId\":\"env:TOKEN_A\"}]\n",
	    json_str(tools, "id"));
	cJSON_Delete(start);
	cJSON_Delete(answers);

	/* Another session's run: no such server, and asking for its value is refused. */
	snprintf(path, sizeof path, "%s/ask.json", cwd_b);
	cr_assert_not_null(fp = fopen(path, "w"));
	fputs(ask, fp);
	fclose(fp);
	scn_run(c, project, b, cwd_b, &start, &answers);
	cr_assert_null(scn_find(start, "tools"));
	cr_assert_null(scn_find(start, "remote"));
	ans = cJSON_GetArrayItem(answers, cJSON_GetArraySize(answers) - 1);
	cr_assert_null(cJSON_GetObjectItem(ans, "result"), "%s", cJSON_PrintUnformatted(ans));
	cr_assert_str_eq(json_str(cJSON_GetObjectItem(ans, "error"), "code"), "forbidden");
	cJSON_Delete(start);
	cJSON_Delete(answers);

	/* Listed by name only; replaced as a whole; the bad JSON of a caller refused. */
	snprintf(path, sizeof path, "/api/v1/sessions/%s/connectors", a);
	list = http_get_json(&ssvc, "%s", path);
	cr_assert_eq(cJSON_GetArraySize(list), 2);
	cr_assert_str_eq(json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0),
	    "env"), 0), "name"), "TOKEN_A");
	cr_assert_null(strstr(cJSON_PrintUnformatted(list), "SCN-SECRET-"));
	cJSON_Delete(list);
	cr_assert_eq(td_set_session_connectors(c, a, "{\"name\":\"x\"}", NULL, &err),
	    TD_INVALID_ARGUMENT);
	cr_assert_eq(td_set_session_connectors(c, a, "[{\"name\":\"x\",\"type\":\"sse\","
	    "\"url\":\"http://x\"}]", NULL, &err), TD_INVALID_REQUEST);
	cr_assert_eq(td_set_session_connectors(c, a, NULL, NULL, &err), TD_OK, "%s", err.message);
	list = http_get_json(&ssvc, "%s", path);
	cr_assert_eq(cJSON_GetArraySize(list), 0);
	cJSON_Delete(list);

	/* Deleting the session deletes its servers; the values were never on disk. */
	cr_assert_eq(td_set_session_connectors(c, a, SERVERS, NULL, &err), TD_OK);
	cr_assert_eq(td_delete_session(c, a, false, NULL, NULL, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_set_session_connectors(c, a, NULL, NULL, &err), TD_NOT_FOUND);
	scn_not_on_disk("SCN-SECRET-");
	svc_stop(&ssvc);	/* and after the WAL is checkpointed */
	scn_not_on_disk("SCN-SECRET-");
	svc_restart(&ssvc);
	td_client_free(c);
	free(project);
	free(a);
	free(b);
	free(cwd_a);
	free(cwd_b);
}
