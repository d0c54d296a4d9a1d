/*
 * runs.c on its own, over libtdservice.la: a run's transitions against a real
 * SQLite store, each with the run.* event beside it, no HTTP and no agent.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "events.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "projects.h"
#include "runs.h"
#include "service.h"
#include "sessions.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

static struct service svc;
static char dir[64];
static char project[TD_ID_MAX], session[TD_ID_MAX];

static void
setup(void)
{
	char db[128], *err = NULL;
	cJSON *fields = json_parse("{\"name\":\"p\"}", 12);
	FILE *devnull = fopen("/dev/null", "w");

	log_init("test-runs", devnull, LOG_LEVEL_ERROR);
	snprintf(dir, sizeof dir, "/tmp/tdruns-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/taskdeck.db", dir);
	memset(&svc, 0, sizeof svc);
	svc.store = store_open(db, &err);
	cr_assert_not_null(svc.store, "%s", err);
	svc.cache = cache_new(64);
	snprintf(svc.stream_id, sizeof svc.stream_id, "%s", "0123456789abcdef0123456789abcdef");
	svc.events = events_new(&svc);
	id_new("prj", project);
	id_new("ses", session);
	store_lock(svc.store);
	cr_assert(projects_create(svc.store, project, fields, clock_wall_ms()));
	cr_assert(sessions_create(svc.store, session, project, "a prompt", dir, false, fields,
	    clock_wall_ms()));
	store_unlock(svc.store);
	cJSON_Delete(fields);
}

static void
teardown(void)
{
	char cmd[128];

	events_shutdown(svc.events);
	events_free(svc.events);
	cache_free(svc.cache);
	store_close(svc.store);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(runs, .init = setup, .fini = teardown, .timeout = 30);

/* Admits a queued run in the test's session; its id goes to id. */
static void
admit(char *id)
{
	struct run run = { 0 };

	id_new("run", run.id);
	snprintf(run.session_id, sizeof run.session_id, "%s", session);
	snprintf(run.project_id, sizeof run.project_id, "%s", project);
	run.prompt = xstrdup("say hello");
	run.permission_profile = xstrdup("read-only");
	run.config = json_parse("{\"provider\":\"replay\"}", 21);
	run.cwd = xstrdup(dir);
	store_lock(svc.store);
	cr_assert(store_begin(svc.store));
	cr_assert(runs_admit(svc.store, &run, clock_wall_ms()));
	cr_assert(store_commit(svc.store));
	runs_admitted(&svc, &run);
	store_unlock(svc.store);
	snprintf(id, TD_ID_MAX, "%s", run.id);
	runs_clear(&run);
}

/* The run's status now. */
static void
expect_status(const char *id, const char *want)
{
	struct run run;

	store_lock(svc.store);
	cr_assert(runs_get(svc.store, id, &run), "no run %s", id);
	store_unlock(svc.store);
	cr_expect_str_eq(run.status, want);
	runs_clear(&run);
}

/* The types of the run's stored events, space-separated, into out. */
static void
event_types(const char *id, char *out, size_t size)
{
	struct events_history_page page;
	const cJSON *e;
	cJSON *arr;

	events_flush(svc.events);
	store_lock(svc.store);
	arr = events_history(svc.store, id, "", 0, 100, &page);
	store_unlock(svc.store);
	cr_assert_not_null(arr);
	out[0] = '\0';
	cJSON_ArrayForEach(e, arr)
		snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? " " : "",
		    json_get_string(e, "type"));
	cJSON_Delete(arr);
}

Test(runs, admit_start_finish)
{
	struct run_end end = { .status = "completed", .output = "hello", .usage = { .input = 3,
		.output = 5 } };
	struct run run;
	char id[TD_ID_MAX], types[256];

	admit(id);
	expect_status(id, "queued");
	store_lock(svc.store);
	cr_assert(runs_start(&svc, id, clock_wall_ms()));
	cr_expect(!runs_start(&svc, id, clock_wall_ms()), "a running run started again");
	store_unlock(svc.store);
	expect_status(id, "running");
	end.id = id;
	end.session_id = session;
	cr_assert(runs_finish(&svc, &end));
	expect_status(id, "completed");
	store_lock(svc.store);
	cr_assert(runs_get(svc.store, id, &run));
	store_unlock(svc.store);
	cr_expect_str_eq(run.prompt, "say hello");
	cr_expect_str_eq(run.permission_profile, "read-only");
	cr_expect_null(run.turn_intent);
	cr_expect_str_eq(json_get_string(run.config, "provider"), "replay");
	runs_clear(&run);
	event_types(id, types, sizeof types);
	cr_expect_str_eq(types, "run.queued run.started run.finished");
}

Test(runs, queued_oldest_first)
{
	char a[TD_ID_MAX], b[TD_ID_MAX], ids[4][TD_ID_MAX];
	size_t n;

	admit(a);
	usleep(2000);
	admit(b);
	store_lock(svc.store);
	n = runs_queued(svc.store, ids, 4);
	store_unlock(svc.store);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(ids[0], a);
	cr_expect_str_eq(ids[1], b);
}

Test(runs, cancel_of_a_queued_run_ends_it)
{
	char id[TD_ID_MAX], status[16], types[256];

	admit(id);
	cr_assert(runs_request_cancel(&svc, id, status));
	cr_expect_str_eq(status, "queued");
	expect_status(id, "cancelled");
	store_lock(svc.store);
	cr_expect(!runs_start(&svc, id, clock_wall_ms()), "a cancelled run started");
	store_unlock(svc.store);
	event_types(id, types, sizeof types);
	cr_expect_str_eq(types, "run.queued run.finished");
	cr_assert(runs_request_cancel(&svc, "run_000000000000000000000000", status));
	cr_expect_str_eq(status, "");
}

Test(runs, cancel_of_a_running_run_is_noted)
{
	struct run run;
	char id[TD_ID_MAX], status[16];

	admit(id);
	store_lock(svc.store);
	cr_assert(runs_start(&svc, id, clock_wall_ms()));
	store_unlock(svc.store);
	cr_assert(runs_request_cancel(&svc, id, status));
	cr_expect_str_eq(status, "running");
	store_lock(svc.store);
	cr_assert(runs_get(svc.store, id, &run));
	store_unlock(svc.store);
	/* Its thread ends it: it stays running, with the cancel noted. */
	cr_expect_str_eq(run.status, "running");
	cr_expect(run.cancel_requested);
	runs_clear(&run);
}
