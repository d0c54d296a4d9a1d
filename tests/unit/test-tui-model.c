#include <criterion/criterion.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "model.h"

#if defined(__SANITIZE_ADDRESS__)
/* From AddressSanitizer's allocator interface. */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#define STREAM "0123456789abcdef0123456789abcdef"
#define TIME "2026-11-21T06:40:00.123Z"

static struct model m;
static long long next_seq = 1;

static void
setup(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	model_init(&m);
	next_seq = 1;
}

static void
teardown(void)
{
	model_free(&m);
}

TestSuite(model, .init = setup, .fini = teardown, .timeout = 120);

/* Live bytes of the heap, to see that memory stays bounded. */
static size_t
heap_bytes(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return __sanitizer_get_current_allocated_bytes();
#else
	return mallinfo2().uordblks;
#endif
}

/* Applies one event of session ses_1 of project prj_1. */
static unsigned
apply_in(const char *session, const char *type, const char *run, const char *data)
{
	struct td_event *e = model_event_new(next_seq++, STREAM, type, TIME, "prj_1", session,
	    run, data, NULL);
	unsigned need = model_apply_event(&m, e);

	td_event_free(e);
	return need;
}

static unsigned
apply(const char *type, const char *run, const char *data)
{
	return apply_in("ses_1", type, run, data);
}

/* run.output with delta as raw bytes inside the JSON string (no escaping but "\n"). */
static void
output(const char *run, const char *delta)
{
	char *data;
	size_t n = strlen(delta), j = 0;
	char *esc = malloc(2 * n + 1);

	for (size_t i = 0; i < n; i++) {
		if (delta[i] == '\n') {
			esc[j++] = '\\';
			esc[j++] = 'n';
		} else
			esc[j++] = delta[i];
	}
	esc[j] = '\0';
	cr_assert(asprintf(&data, "{\"delta\":\"%s\"}", esc) > 0);
	apply("run.output", run, data);
	free(data);
	free(esc);
}

static const char *
line(size_t i)
{
	const struct log_line *l = model_log_line(&m, i);

	cr_assert_not_null(l, "no line %zu (%zu shown)", i, model_log_visible(&m));
	return l->text;
}

/* Lists as the HTTP calls give them. */
static void
give_projects(const char *const *ids)
{
	struct td_project items[8] = { { 0 } };
	struct td_project_list l = { .items = items };

	for (; ids[l.count] != NULL; l.count++) {
		items[l.count].id = (char *)ids[l.count];
		items[l.count].name = (char *)ids[l.count];
	}
	model_set_projects(&m, &l);
}

static unsigned
give_sessions(const char *project, const char *const *ids)
{
	struct td_session items[8] = { { 0 } };
	struct td_session_list l = { .items = items };

	for (; ids[l.count] != NULL; l.count++) {
		items[l.count].id = (char *)ids[l.count];
		items[l.count].project_id = (char *)project;
		items[l.count].title = (char *)"title";
	}
	return model_set_sessions(&m, project, &l);
}

/* Runs "id:status", newest first. */
static unsigned
give_runs(const char *session, const char *const *runs, bool project_too)
{
	struct td_run items[8] = { { 0 } };
	struct td_run_list l = { .items = items };
	char buf[8][64];
	unsigned need = 0;

	for (; runs[l.count] != NULL; l.count++) {
		char *colon;

		snprintf(buf[l.count], sizeof buf[l.count], "%s", runs[l.count]);
		colon = strchr(buf[l.count], ':');
		*colon = '\0';
		items[l.count].id = buf[l.count];
		items[l.count].status = colon + 1;
		items[l.count].session_id = (char *)session;
		items[l.count].project_id = (char *)"prj_1";
		items[l.count].prompt = (char *)"a prompt";
	}
	if (session != NULL)
		need = model_set_runs(&m, session, &l);
	if (project_too)
		model_set_project_runs(&m, "prj_1", &l);
	return need;
}

/* prj_1 / ses_1 / run_1 (running) selected, its history loaded (empty). */
static void
select_run(void)
{
	give_projects((const char *const[]){ "prj_1", NULL });
	give_sessions("prj_1", (const char *const[]){ "ses_1", "ses_0", NULL });
	give_runs("ses_1", (const char *const[]){ "run_1:running", NULL }, true);
	cr_assert_str_eq(m.log.scope_id, "run_1");
	model_log_history(&m, "run_1", NULL, 0, true);
	cr_assert(!m.log.loading);
}

Test(model, run_status_events_update_the_lists_and_the_log)
{
	size_t running, waiting;

	select_run();
	apply("run.started", "run_1", "{\"status\":\"running\"}");
	model_counts(&m, &running, &waiting);
	cr_expect_eq(running, 1);
	cr_expect_eq(waiting, 0);
	apply("run.progress", "run_1", "{\"phase\":\"thinking\",\"message\":null,\"liveness\":false}");
	cr_expect_str_eq(model_run(&m)->phase, "thinking");
	apply("run.finished", "run_1", "{\"status\":\"failed\",\"error\":{\"code\":"
	    "\"runtime_crashed\",\"message\":\"the agent ended\"}}");
	cr_expect_str_eq(model_run(&m)->status, "failed");
	cr_expect_str_eq(model_run(&m)->error_code, "runtime_crashed");
	cr_expect_str_eq(model_session(&m)->last_run_status, "failed");
	model_counts(&m, &running, &waiting);
	cr_expect_eq(running, 0);

	cr_assert_eq(model_log_visible(&m), 3);
	cr_expect_str_eq(line(0), "run started");
	cr_expect_eq(model_log_line(&m, 0)->kind, LOG_STATUS);
	cr_expect_str_eq(line(1), "thinking");
	cr_expect_str_eq(line(2), "run finished: failed (runtime_crashed: the agent ended)");
	cr_expect(model_log_line(&m, 2)->error);
	cr_expect(!model_log_line(&m, 0)->error);
	cr_expect_str_eq(model_log_line(&m, 2)->time, "06:40:00");
	cr_expect_str_eq(model_log_line(&m, 2)->run_id, "run_1");
}

Test(model, a_new_run_of_the_session_is_inserted_and_fetched)
{
	unsigned need;

	select_run();
	need = apply("run.queued", "run_2", "{\"status\":\"queued\"}");
	cr_expect(need & NEED_NEW_RUNS, "the prompt of a new run is read over HTTP");
	cr_assert_eq(m.run_count, 2);
	cr_expect_str_eq(m.runs[0].id, "run_2");
	cr_expect_str_eq(model_run(&m)->id, "run_1", "the selection stays on run_1");
	cr_expect_eq(m.project_run_count, 2);
	/* Events of another session touch neither its runs nor the log. */
	apply_in("ses_9", "run.queued", "run_9", "{\"status\":\"queued\"}");
	cr_expect_eq(m.run_count, 2);
	cr_expect_eq(m.project_run_count, 3);
	cr_expect_eq(model_log_visible(&m), 0);
}

Test(model, a_queued_run_is_listed_from_its_event_without_a_read)
{
	unsigned need;

	select_run();
	need = apply("run.queued", "run_2", "{\"status\":\"queued\",\"run\":{"
	    "\"id\":\"run_2\",\"sessionId\":\"ses_1\",\"projectId\":\"prj_1\","
	    "\"status\":\"queued\",\"prompt\":\"Summarise the logs\","
	    "\"createdAt\":\"2026-11-21T06:39:59.000Z\"}}");
	cr_expect(!(need & NEED_NEW_RUNS), "the run is not read again over HTTP");
	cr_assert_eq(m.run_count, 2);
	cr_expect_str_eq(m.runs[0].id, "run_2");
	cr_expect_str_eq(m.runs[0].prompt, "Summarise the logs");
	cr_expect_str_eq(m.runs[0].status, "queued");
	cr_expect_str_eq(m.runs[0].created_at, "2026-11-21T06:39:59.000Z");
	cr_assert_eq(m.project_run_count, 2);
	for (size_t i = 0; i < m.project_run_count; i++) {
		if (strcmp(m.project_runs[i].id, "run_2") == 0)
			cr_expect_str_eq(m.project_runs[i].prompt, "Summarise the logs");
		else
			cr_expect_str_eq(m.project_runs[i].id, "run_1");
	}
}

Test(model, a_read_older_than_the_events_never_moves_a_run_back)
{
	struct td_run late = {
		.id = "run_2", .session_id = "ses_1", .project_id = "prj_1",
		.status = "queued", .prompt = "Summarise the logs",
	};

	select_run();
	apply("run.queued", "run_2", "{\"status\":\"queued\"}");
	apply("run.started", "run_2", "{\"status\":\"running\"}");
	/* The read of run_2 left before run.started and comes back after it. */
	model_put_run(&m, &late);
	cr_assert_eq(m.run_count, 2);
	cr_expect_str_eq(m.runs[0].prompt, "Summarise the logs", "the prompt the read brought");
	cr_expect_str_eq(m.runs[0].status, "running", "the status stays the newer one");
	late.status = "completed";
	model_put_run(&m, &late);
	cr_expect_str_eq(m.runs[0].status, "completed");
}

Test(model, subagent_calls_are_nested_and_reviews_are_shown)
{
	select_run();
	apply("run.tool", "run_1", "{\"callId\":\"c1\",\"name\":\"run_subagent\",\"status\":"
	    "\"started\",\"summary\":\"subagent: notes\"}");
	apply("run.tool", "run_1", "{\"callId\":\"c9\",\"name\":\"write_file\",\"status\":"
	    "\"completed\",\"summary\":\"notes.md\",\"subagent\":\"c1\"}");
	apply("run.review", "run_1", "{\"verdict\":\"changes_requested\",\"findings\":"
	    "[\"a test fails\",\"docs\"],\"summary\":\"REQUEST CHANGES\",\"round\":1}");
	apply("run.review", "run_1", "{\"verdict\":\"approved\",\"findings\":[],"
	    "\"summary\":\"APPROVE\",\"round\":2}");

	cr_assert_eq(model_log_visible(&m), 4);
	cr_expect_str_eq(line(0), "run_subagent subagent: notes started");
	cr_expect_str_eq(line(1), "  \u21b3 write_file notes.md completed");
	cr_expect_str_eq(line(2), "review requested changes: a test fails; docs");
	cr_expect(model_log_line(&m, 2)->error);
	cr_expect_str_eq(line(3), "review approved");
	cr_expect(!model_log_line(&m, 3)->error);
}

Test(model, tool_plan_artifact_and_permission_lines_read_well)
{
	select_run();
	apply("run.tool", "run_1", "{\"callId\":\"c1\",\"name\":\"write_file\",\"status\":"
	    "\"completed\",\"summary\":\"report.md\"}");
	apply("run.tool", "run_1", "{\"callId\":\"c2\",\"name\":\"run_command\",\"status\":"
	    "\"failed\",\"summary\":\"make\\ntest\"}");
	apply("artifact.saved", "run_1", "{\"id\":\"art_1\",\"name\":\"report.md\",\"path\":"
	    "\"out/report.md\",\"size\":2150,\"sessionId\":\"ses_1\",\"runId\":\"run_1\"}");
	apply("plan.updated", "run_1", "{\"sessionId\":\"ses_1\",\"runId\":\"run_1\",\"version\":2,"
	    "\"revision\":5,\"status\":\"awaiting-approval\",\"summary\":\"Write it\","
	    "\"steps\":[{\"id\":\"s1\",\"title\":\"Research\",\"status\":\"pending\"}]}");
	apply("run.permission", "run_1", "{\"promptId\":\"prm_1\",\"tool\":\"write_file\","
	    "\"summary\":\"write report.md (2.1 KiB)\",\"status\":\"pending\"}");

	cr_assert_eq(model_log_visible(&m), 5);
	cr_expect_str_eq(line(0), "write_file report.md completed");
	cr_expect(!model_log_line(&m, 0)->error);
	cr_expect_str_eq(line(1), "run_command make test failed", "no newline inside a line");
	cr_expect(model_log_line(&m, 1)->error);
	cr_expect_str_eq(line(2), "artifact report.md (2.1 KiB)");
	cr_expect_eq(model_log_line(&m, 2)->kind, LOG_ARTIFACT);
	cr_expect_str_eq(line(3), "plan v2 r5 awaiting-approval: Write it");
	cr_expect_str_eq(line(4), "permission pending: write_file write report.md (2.1 KiB)");

	cr_assert_eq(m.artifact_count, 1);
	cr_expect_str_eq(model_artifact(&m)->name, "report.md");
	cr_expect_eq(model_artifact(&m)->size, 2150);
	cr_assert(m.plan.present);
	cr_expect_eq(m.plan.version, 2);
	cr_expect_eq(m.plan.revision, 5);
	cr_assert_eq(m.plan.step_count, 1);
	cr_expect_str_eq(m.plan.steps[0].title, "Research");
	/* The plan of another session is not the one shown. */
	apply_in("ses_0", "plan.updated", "run_0", "{\"sessionId\":\"ses_0\",\"version\":9,"
	    "\"revision\":9,\"status\":\"approved\",\"steps\":[]}");
	cr_expect_eq(m.plan.version, 2);
}

Test(model, output_deltas_become_lines)
{
	select_run();
	output("run_1", "Hel");
	cr_assert_eq(model_log_visible(&m), 1);
	cr_expect_str_eq(line(0), "Hel", "an open line shows at once");
	output("run_1", "lo wor");
	output("run_1", "ld\nsecond");
	output("run_1", " line\n\nthird\tcol\r\n");
	cr_assert_eq(model_log_visible(&m), 4);
	cr_expect_str_eq(line(0), "Hello world");
	cr_expect_str_eq(line(1), "second line");
	cr_expect_str_eq(line(2), "");
	cr_expect_str_eq(line(3), "third col");
	/* A character split between two deltas. */
	output("run_1", "caf\xc3");
	output("run_1", "\xa9 \xe2\x82");
	output("run_1", "\xac ok\n");
	cr_assert_eq(model_log_visible(&m), 5);
	cr_expect_str_eq(line(4), "caf\xc3\xa9 \xe2\x82\xac ok");
	/* Another event ends the open line; output after it starts a new one. */
	output("run_1", "before");
	apply("run.progress", "run_1", "{\"phase\":\"tool\",\"message\":null}");
	output("run_1", "after\n");
	cr_assert_eq(model_log_visible(&m), 8);
	cr_expect_str_eq(line(5), "before");
	cr_expect_str_eq(line(6), "tool");
	cr_expect_str_eq(line(7), "after");
	cr_expect_eq(model_log_line(&m, 7)->kind, LOG_OUTPUT);
}

Test(model, long_lines_break_on_a_character_boundary)
{
	char *big = malloc(MODEL_LINE_MAX + 16);
	size_t total = 0;

	select_run();
	memset(big, 'a', MODEL_LINE_MAX - 1);
	big[MODEL_LINE_MAX - 1] = '\0';
	output("run_1", big);
	/* 4095 bytes, then a 2-byte character that does not fit: split over two deltas. */
	output("run_1", "\xc3");
	output("run_1", "\xa9");
	output("run_1", "tail\n");
	cr_assert_eq(model_log_visible(&m), 2);
	cr_expect_eq(strlen(line(0)), MODEL_LINE_MAX - 1);
	cr_expect_str_eq(line(1), "\xc3\xa9tail");
	for (size_t i = 0; i < 2; i++)
		total += strlen(line(i));
	cr_expect_eq(total, MODEL_LINE_MAX - 1 + 6, "no byte lost");
	/* Three lines' worth without a newline: every line at most MODEL_LINE_MAX. */
	memset(big, 'b', MODEL_LINE_MAX + 10);
	big[MODEL_LINE_MAX + 10] = '\0';
	output("run_1", big);
	output("run_1", big);
	cr_assert_eq(model_log_visible(&m), 5);
	cr_expect_eq(strlen(line(2)), MODEL_LINE_MAX);
	cr_expect_eq(strlen(line(3)), MODEL_LINE_MAX);
	cr_expect_eq(strlen(line(4)), 20);
	free(big);
}

Test(model, the_log_stays_bounded_over_a_million_events)
{
	size_t before;
	char data[64];

	select_run();
	model_log_filter(&m, "7 ");
	for (int i = 0; i < 100000; i++) {
		snprintf(data, sizeof data, "{\"delta\":\"line %d \\n\"}", i);
		apply("run.output", "run_1", data);
	}
	cr_assert_eq(m.log.count, MODEL_LOG_MAX);
	before = heap_bytes();
	for (int i = 100000; i < 1000000; i++) {
		if (i % 2)
			snprintf(data, sizeof data, "{\"delta\":\"line %d \\n\"}", i);
		else
			snprintf(data, sizeof data, "{\"delta\":\"li\"}");
		if (i % 2 == 0) {
			apply("run.output", "run_1", data);
			snprintf(data, sizeof data, "{\"delta\":\"ne %d \\n\"}", i);
		}
		apply("run.output", "run_1", data);
	}
	cr_expect_eq(m.log.count, MODEL_LOG_MAX, "the ring keeps MODEL_LOG_MAX lines");
	cr_expect_lt(heap_bytes(), before + 1024 * 1024, "memory grew by %zu bytes",
	    heap_bytes() - before);
	/* The newest lines are kept, in order. */
	model_log_filter(&m, "");
	cr_expect_str_eq(line(MODEL_LOG_MAX - 1), "line 999999 ");
	cr_expect_str_eq(line(0), "line 990000 ");
	/* The matches were kept up as lines came and went: "7 " ends 1 in 10 numbers. */
	model_log_filter(&m, "7 ");
	cr_expect_eq(model_log_visible(&m), MODEL_LOG_MAX / 10);
	cr_expect_str_eq(line(0), "line 990007 ");
}

Test(model, filter_is_case_insensitive_and_kept_up)
{
	select_run();
	output("run_1", "An Error here\nfine\nanother error\nnothing\n");
	model_log_filter(&m, "ERROR");
	cr_assert_eq(model_log_visible(&m), 2);
	cr_expect_str_eq(line(0), "An Error here");
	cr_expect_str_eq(line(1), "another error");
	cr_expect_str_eq(m.log.last_filter, "ERROR");
	/* A growing line starts matching once its text does. */
	output("run_1", "still err");
	cr_expect_eq(model_log_visible(&m), 2);
	output("run_1", "or\n");
	cr_expect_eq(model_log_visible(&m), 3);
	apply("run.tool", "run_1", "{\"name\":\"run_command\",\"status\":\"failed\","
	    "\"summary\":\"exit 2 (error)\"}");
	cr_expect_eq(model_log_visible(&m), 4);
	apply("run.progress", "run_1", "{\"phase\":\"thinking\"}");
	cr_expect_eq(model_log_visible(&m), 4);
	/* Clearing shows every line; the query is remembered. */
	model_log_filter(&m, "");
	cr_expect_eq(model_log_visible(&m), 7);
	cr_expect_str_eq(m.log.last_filter, "ERROR");
	model_log_filter(&m, "no such text");
	cr_expect_eq(model_log_visible(&m), 0);
	cr_expect_null(model_log_line(&m, 0));
}

Test(model, search_moves_between_matches_and_counts_them)
{
	size_t index, total;
	char text[32];

	select_run();
	model_show_right(&m, RIGHT_LOG);
	for (int i = 0; i < 100; i++) {
		snprintf(text, sizeof text, "%s %d\n", i % 10 == 3 ? "Hit" : "line", i);
		output("run_1", text);
	}
	model_log_fit(&m, 10);
	/* From the first line shown (the last page while following): line 93. */
	cr_assert(model_log_search(&m, "hit"));
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(total, 10);
	cr_expect_eq(index, 10, "the match at or after the view's top comes first");
	cr_expect(!m.log.follow, "a search stops following");
	cr_expect(model_log_search_current(&m, 93));
	/* n past the last wraps to the first; N goes back. */
	cr_expect_eq(model_log_search_next(&m, 1), 2, "wrapped");
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(index, 1);
	cr_expect(model_log_search_current(&m, 3));
	cr_expect_leq(m.log.top, 3, "the match is scrolled into view");
	cr_expect_eq(model_log_search_next(&m, 1), 1);
	cr_expect(model_log_search_current(&m, 13));
	cr_expect_eq(model_log_search_next(&m, -1), 1);
	cr_expect_eq(model_log_search_next(&m, -1), 2, "N before the first wraps");
	cr_expect(model_log_search_current(&m, 93));
	/* With a filter, the search runs over the lines shown. */
	model_log_filter(&m, "9");
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(model_log_visible(&m), 19);
	cr_expect_eq(total, 1, "only Hit 93 is shown, not %zu", total);
	cr_expect_eq(index, 1);
	cr_expect(model_log_search_current(&m, 12), "Hit 93 is the 13th line shown");
	model_log_filter(&m, "");
	/* The count kept for the screen follows new lines and the place. */
	model_log_search_update(&m);
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(total, 10);
	output("run_1", "one more hit\n");
	model_log_search_update(&m);
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(total, 11, "a new matching line is counted");
	model_log_search_next(&m, 1);
	model_log_search_update(&m);
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(index, 11, "n moved to the new line");
	cr_expect(!model_log_search(&m, "absent"));
	model_log_search_count(&m, &index, &total);
	cr_expect_eq(total, 0);
	cr_expect_eq(model_log_search_next(&m, 1), 0);
	model_log_search(&m, "");
	cr_expect_eq(m.log.search[0], '\0');
}

Test(model, follow_tracks_the_end_until_scrolled_up)
{
	char text[32];

	select_run();
	model_show_right(&m, RIGHT_LOG);
	for (int i = 0; i < 100; i++) {
		snprintf(text, sizeof text, "line %d\n", i);
		output("run_1", text);
	}
	model_log_fit(&m, 10);
	cr_expect(m.log.follow, "follow is on at first");
	cr_expect_eq(m.log.top, 90);
	output("run_1", "line 100\n");
	cr_expect_eq(m.log.top, 91, "a new line moves the view");
	model_move(&m, -1, 10);
	cr_expect(!m.log.follow, "scrolling up turns follow off");
	cr_expect_eq(m.log.top, 90);
	output("run_1", "line 101\n");
	cr_expect_eq(m.log.top, 90, "the view stays where the person put it");
	model_move(&m, -1000, 10);
	cr_expect_eq(m.log.top, 0);
	model_move(&m, 5, 10);
	cr_expect_eq(m.log.top, 5);
	cr_expect(!m.log.follow);
	model_move(&m, LONG_MAX, 10);
	cr_expect(m.log.follow, "G turns follow on");
	cr_expect_eq(m.log.top, 92);
	model_log_follow(&m, false);
	model_move(&m, LONG_MIN, 10);
	cr_expect_eq(m.log.top, 0);
	model_log_follow(&m, true);
	cr_expect_eq(m.log.top, 92);
}

Test(model, selection_stays_on_the_same_id_across_refreshes)
{
	unsigned need;

	give_projects((const char *const[]){ "prj_a", "prj_b", NULL });
	cr_expect_str_eq(model_project(&m)->id, "prj_a");
	model_focus(&m, PANE_PROJECTS);
	need = model_move(&m, 1, 10);
	cr_expect_eq(need, NEED_SESSIONS | NEED_PROJECT_RUNS);
	cr_expect_str_eq(model_project(&m)->id, "prj_b");
	give_sessions("prj_b", (const char *const[]){ "ses_1", "ses_2", NULL });

	need = model_set_projects(&m, &(struct td_project_list){
	    .items = (struct td_project[]){ { .id = (char *)"prj_new" },
	        { .id = (char *)"prj_a" }, { .id = (char *)"prj_b" } }, .count = 3 });
	cr_expect_eq(need, NEED_NONE, "the same project: nothing to read again");
	cr_expect_str_eq(model_project(&m)->id, "prj_b");
	cr_expect_eq(m.session_count, 2, "its sessions stay");

	/* Sessions of a project not selected any more are ignored. */
	need = give_sessions("prj_a", (const char *const[]){ "ses_x", NULL });
	cr_expect_eq(need, NEED_NONE);
	cr_expect_str_eq(model_session(&m)->id, "ses_1");

	/* The selected project went away: the next one shows, the old one's data goes. */
	give_projects((const char *const[]){ "prj_new", "prj_a", NULL });
	cr_expect_str_eq(model_project(&m)->id, "prj_a");
	cr_expect_eq(m.session_count, 0);
	cr_expect_null(model_session(&m));
}

Test(model, another_session_asks_for_its_runs_artifacts_plan_and_history)
{
	unsigned need;

	select_run();
	output("run_1", "some text\n");
	model_focus(&m, PANE_SESSIONS);
	need = model_move(&m, 1, 10);
	cr_expect_eq(need, NEED_RUNS | NEED_ARTIFACTS | NEED_PLAN);
	cr_expect_str_eq(model_session(&m)->id, "ses_0");
	cr_expect_eq(m.run_count, 0);
	cr_expect_eq(model_log_visible(&m), 0, "the old run's log is gone");
	need = give_runs("ses_0", (const char *const[]){ "run_b:completed", "run_a:failed",
	    NULL }, false);
	cr_expect_eq(need, NEED_HISTORY, "the selected run's history is read");
	cr_expect_str_eq(m.log.scope_id, "run_b");
	/* Runs refreshed with a new one at the top: same run selected, no new history. */
	need = give_runs("ses_0", (const char *const[]){ "run_c:running", "run_b:completed",
	    "run_a:failed", NULL }, false);
	cr_expect_eq(need, NEED_NONE);
	cr_expect_str_eq(model_run(&m)->id, "run_b");
	/* Session scope: the log shows the session. */
	need = model_log_scope(&m, false);
	cr_expect_eq(need, NEED_HISTORY);
	cr_expect_str_eq(m.log.scope_id, "ses_0");
	model_focus(&m, PANE_RUNS);
	cr_expect_eq(model_move(&m, 1, 10), NEED_NONE, "another run of the same session");
	/* A click on a row of a list selects it; a click past the end does nothing. */
	cr_expect_eq(model_select(&m, PANE_RUNS, 2), NEED_NONE);
	cr_expect_str_eq(model_run(&m)->id, "run_a");
	cr_expect_eq(model_select(&m, PANE_SESSIONS, 7), NEED_NONE);
	cr_expect_eq(m.focus, PANE_SESSIONS);
	cr_expect_str_eq(model_session(&m)->id, "ses_0");
	cr_expect_eq(model_select(&m, PANE_SESSIONS, 0), NEED_RUNS | NEED_ARTIFACTS |
	    NEED_PLAN | NEED_HISTORY, "session scope: the session's history too");
	cr_expect_str_eq(m.log.scope_id, "ses_1");
}

Test(model, history_and_live_events_meet_without_gap_or_duplicate)
{
	struct td_event *hist[6];
	struct td_event *live;
	char data[64];

	give_projects((const char *const[]){ "prj_1", NULL });
	give_sessions("prj_1", (const char *const[]){ "ses_1", NULL });
	give_runs("ses_1", (const char *const[]){ "run_1:running", NULL }, false);
	cr_assert(m.log.loading);
	/* Live events 5..8 arrive while the history loads. */
	for (long long seq = 5; seq <= 8; seq++) {
		snprintf(data, sizeof data, "{\"delta\":\"e%lld\\n\"}", seq);
		live = model_event_new(seq, STREAM, "run.output", TIME, "prj_1", "ses_1", "run_1",
		    data, NULL);
		model_apply_event(&m, live);
		td_event_free(live);
	}
	cr_expect_eq(model_log_visible(&m), 0, "held until the history is there");
	/* The history (1..6) in two pages. */
	for (long long seq = 1; seq <= 6; seq++) {
		snprintf(data, sizeof data, "{\"delta\":\"e%lld\\n\"}", seq);
		hist[seq - 1] = model_event_new(seq, STREAM, "run.output", TIME, "prj_1", "ses_1",
		    "run_1", data, NULL);
	}
	model_log_history(&m, "run_1", hist, 3, false);
	cr_expect(m.log.loading);
	cr_expect_eq(model_log_visible(&m), 3);
	/* A page for another scope is ignored. */
	model_log_history(&m, "run_other", hist, 3, true);
	cr_expect(m.log.loading);
	model_log_history(&m, "run_1", hist + 3, 3, true);
	cr_expect(!m.log.loading);
	cr_assert_eq(model_log_visible(&m), 8);
	for (size_t i = 0; i < 8; i++) {
		snprintf(data, sizeof data, "e%zu", i + 1);
		cr_expect_str_eq(line(i), data);
	}
	/* A replayed live event is not shown twice. */
	live = model_event_new(8, STREAM, "run.output", TIME, "prj_1", "ses_1", "run_1",
	    "{\"delta\":\"e8\\n\"}", NULL);
	model_apply_event(&m, live);
	td_event_free(live);
	cr_expect_eq(model_log_visible(&m), 8);
	for (size_t i = 0; i < 6; i++)
		td_event_free(hist[i]);
}

Test(model, resync_asks_for_everything_and_says_so)
{
	struct td_event *hist[2];
	unsigned need;

	select_run();
	output("run_1", "one\n");
	output("run_1", "two\n");
	need = apply("stream.resync-required", NULL, "{\"reason\":\"slow-consumer\"}");
	cr_expect_eq(need, NEED_EVERYTHING);
	cr_assert_eq(model_log_visible(&m), 3);
	cr_expect_eq(model_log_line(&m, 2)->kind, LOG_NOTICE);
	cr_expect(strstr(line(2), "slow-consumer") != NULL, "notice: %s", line(2));
	/* The history read again adds only what was missed. */
	hist[0] = model_event_new(2, STREAM, "run.output", TIME, "prj_1", "ses_1", "run_1",
	    "{\"delta\":\"two\\n\"}", NULL);
	hist[1] = model_event_new(3, STREAM, "run.output", TIME, "prj_1", "ses_1", "run_1",
	    "{\"delta\":\"missed\\n\"}", NULL);
	model_log_history(&m, "run_1", hist, 2, true);
	cr_assert_eq(model_log_visible(&m), 4);
	cr_expect_str_eq(line(3), "missed");
	cr_expect(!m.log.loading);
	td_event_free(hist[0]);
	td_event_free(hist[1]);
}

Test(model, permission_prompts_come_and_go)
{
	size_t running, waiting;
	const struct m_permission *p;

	select_run();
	cr_expect_null(model_modal_permission(&m));
	apply("run.permission", "run_1", "{\"promptId\":\"prm_1\",\"tool\":\"write_file\","
	    "\"summary\":\"write a.md\",\"status\":\"pending\"}");
	p = model_modal_permission(&m);
	cr_assert_not_null(p);
	cr_expect_str_eq(p->id, "prm_1");
	cr_expect_str_eq(p->tool, "write_file");
	cr_expect_str_eq(p->run_id, "run_1");
	cr_expect(model_run(&m)->permission_pending);
	model_counts(&m, &running, &waiting);
	cr_expect_eq(running, 1);
	cr_expect_eq(waiting, 1);
	model_permission_hide(&m);
	cr_expect_null(model_modal_permission(&m), "Esc hides the modal");
	apply("run.permission", "run_1", "{\"promptId\":\"prm_2\",\"tool\":\"run_command\","
	    "\"summary\":\"make\",\"status\":\"pending\"}");
	p = model_modal_permission(&m);
	cr_assert_not_null(p, "a new prompt shows the modal again");
	cr_expect_str_eq(p->id, "prm_1", "the oldest first");
	apply("run.permission", "run_1", "{\"promptId\":\"prm_1\",\"tool\":\"write_file\","
	    "\"summary\":\"write a.md\",\"status\":\"allowed\"}");
	cr_expect_str_eq(model_modal_permission(&m)->id, "prm_2");
	cr_expect(model_run(&m)->permission_pending);
	apply("run.permission", "run_1", "{\"promptId\":\"prm_2\",\"tool\":\"run_command\","
	    "\"summary\":\"make\",\"status\":\"denied\"}");
	cr_expect_null(model_modal_permission(&m));
	cr_expect_eq(m.permission_count, 0);
	cr_expect(!model_run(&m)->permission_pending);
	model_counts(&m, &running, &waiting);
	cr_expect_eq(waiting, 0);
}

Test(model, counts_for_the_status_bar)
{
	size_t running, waiting;

	give_projects((const char *const[]){ "prj_1", NULL });
	give_runs(NULL, (const char *const[]){ "r1:running", "r2:running", "r3:queued",
	    "r4:completed", NULL }, true);
	model_counts(&m, &running, &waiting);
	cr_expect_eq(running, 2);
	cr_expect_eq(waiting, 0);
	apply("run.attention", "r2", "{\"attention\":{\"kind\":\"plan-approval\","
	    "\"planVersion\":1,\"planRevision\":1}}");
	model_counts(&m, &running, &waiting);
	cr_expect_eq(waiting, 1, "a plan awaiting approval is waiting");
	apply("run.attention", "r2", "{\"attention\":null}");
	model_counts(&m, &running, &waiting);
	cr_expect_eq(waiting, 0);
	apply("run.started", "r3", "{\"status\":\"running\"}");
	model_counts(&m, &running, &waiting);
	cr_expect_eq(running, 3);
}

Test(model, sessions_and_projects_from_events)
{
	give_projects((const char *const[]){ "prj_1", NULL });
	give_sessions("prj_1", (const char *const[]){ "ses_1", NULL });
	apply("session.updated", NULL, "{\"id\":\"ses_2\",\"projectId\":\"prj_1\",\"title\":"
	    "\"New one\",\"lastRun\":{\"id\":\"run_5\",\"status\":\"running\"}}");
	cr_assert_eq(m.session_count, 2);
	cr_expect_str_eq(m.sessions[0].title, "New one");
	cr_expect_str_eq(m.sessions[0].last_run_status, "running");
	cr_expect_str_eq(model_session(&m)->id, "ses_1", "the selection stays");
	apply("session.updated", NULL, "{\"id\":\"ses_1\",\"projectId\":\"prj_1\",\"title\":"
	    "\"Renamed\",\"lastRun\":null}");
	cr_expect_eq(m.session_count, 2);
	cr_expect_str_eq(model_session(&m)->title, "Renamed");
	apply("project.updated", NULL, "{\"id\":\"prj_2\",\"name\":\"other\"}");
	cr_assert_eq(m.project_count, 2);
	cr_expect_str_eq(m.projects[0].name, "other");
	cr_expect_str_eq(model_project(&m)->id, "prj_1");
}

Test(model, focus_message_and_download)
{
	model_focus_next(&m, 1);
	cr_expect_eq(m.focus, PANE_SESSIONS);
	model_focus_next(&m, -1);
	model_focus_next(&m, -1);
	cr_expect_eq(m.focus, PANE_RIGHT);
	model_show_right(&m, RIGHT_PLAN);
	cr_expect_eq(m.right, RIGHT_PLAN);
	model_message(&m, 1000, true, "download failed: %s", "boom");
	cr_expect_str_eq(m.message, "download failed: boom");
	cr_expect_eq(m.message_until_ms, 6000);
	model_download_progress(&m, "report.md", false, 10, 100);
	cr_expect(m.download_active);
	model_download_end(&m);
	cr_expect(!m.download_active);
}

Test(model, a_refresh_asked_twice_needs_one_history_load)
{
	struct td_event *e;

	select_run();
	cr_expect_eq(model_refresh(&m), NEED_EVERYTHING);
	apply("stream.resync-required", NULL, "{\"reason\":\"expired\"}");
	cr_expect(m.log.loading);
	output("run_1", "live\n");
	cr_expect_eq(model_log_visible(&m), 1, "only the notice while the history loads");
	e = model_event_new(1, STREAM, "run.output", TIME, "prj_1", "ses_1", "run_1",
	    "{\"delta\":\"old\\n\"}", NULL);
	model_log_history(&m, "run_1", &e, 1, true);
	td_event_free(e);
	cr_expect(!m.log.loading, "one load answers both");
	cr_assert_eq(model_log_visible(&m), 3);
	cr_expect_str_eq(line(1), "old");
	cr_expect_str_eq(line(2), "live");
}

Test(model, a_history_too_slow_gives_way_to_live_events)
{
	struct td_event *e;
	char data[64];

	give_projects((const char *const[]){ "prj_1", NULL });
	give_sessions("prj_1", (const char *const[]){ "ses_1", NULL });
	give_runs("ses_1", (const char *const[]){ "run_1:running", NULL }, false);
	next_seq = 100;
	/* One line per ten events, so that every line fits in the log. */
	for (int i = 0; i <= MODEL_PENDING_MAX; i++) {
		if (i % 10 == 9)
			snprintf(data, sizeof data, "{\"delta\":\"live %d\\n\"}", i);
		else
			snprintf(data, sizeof data, "{\"delta\":\"x\"}");
		apply("run.output", "run_1", data);
	}
	cr_expect(!m.log.loading);
	cr_assert_eq(model_log_visible(&m), 1 + MODEL_PENDING_MAX / 10 + 1);
	cr_expect_eq(model_log_line(&m, 0)->kind, LOG_NOTICE);
	cr_expect_str_eq(line(1), "xxxxxxxxxlive 9", "from the first event held");
	cr_expect_str_eq(line(model_log_visible(&m) - 2), "xxxxxxxxxlive 19999");
	output("run_1", "\n");
	/* The late history holds only older events: nothing changes. */
	e = model_event_new(50, STREAM, "run.output", TIME, "prj_1", "ses_1", "run_1",
	    "{\"delta\":\"old\\n\"}", NULL);
	model_log_history(&m, "run_1", &e, 1, true);
	td_event_free(e);
	cr_expect_str_eq(line(model_log_visible(&m) - 1), "x");
	output("run_1", "next\n");
	cr_expect_str_eq(line(model_log_visible(&m) - 1), "next");
}

Test(model, a_view_scrolled_back_keeps_its_lines_as_old_ones_go)
{
	char text[32];

	select_run();
	model_show_right(&m, RIGHT_LOG);
	for (int i = 0; i < MODEL_LOG_MAX; i++) {
		snprintf(text, sizeof text, "line %d\n", i);
		output("run_1", text);
	}
	model_move(&m, -100, 10);
	cr_assert(!m.log.follow);
	cr_expect_str_eq(line(m.log.top), "line 9890");
	output("run_1", "more\nand more\n");
	cr_expect_str_eq(line(m.log.top), "line 9890", "the same line stays at the top");
}

/* Applies one event of a project and session given. */
static void
apply_far(const char *project, const char *session, const char *type, const char *run,
    const char *data)
{
	struct td_event *e = model_event_new(next_seq++, STREAM, type, TIME, project, session,
	    run, data, NULL);

	model_apply_event(&m, e);
	td_event_free(e);
}

Test(model, attention_counts_every_project_and_jumps_in_turn)
{
	struct m_attention a;
	bool plan;
	unsigned long seen = m.attention_seen;

	give_projects((const char *const[]){ "prj_1", "prj_2", NULL });
	cr_expect_eq(model_attention_count(&m), 0);
	cr_expect(!model_attention_next(&m, NULL, &a, &plan));
	apply_far("prj_2", "ses_9", "run.attention", "run_9",
	    "{\"attention\":{\"kind\":\"plan-approval\",\"planVersion\":1,\"planRevision\":1}}");
	cr_expect_eq(model_attention_count(&m), 1, "a plan wait in another project counts");
	cr_expect(model_attention_in(&m, "prj_2", NULL));
	cr_expect(model_attention_in(&m, "prj_2", "ses_9"));
	cr_expect(!model_attention_in(&m, "prj_1", NULL));
	cr_expect_gt(m.attention_seen, seen, "a new wait is news");
	apply_far("prj_1", "ses_1", "run.permission", "run_1", "{\"promptId\":\"prm_1\","
	    "\"tool\":\"write_file\",\"summary\":\"w\",\"status\":\"pending\"}");
	apply_far("prj_1", "ses_1", "run.permission", "run_1", "{\"promptId\":\"prm_2\","
	    "\"tool\":\"write_file\",\"summary\":\"w\",\"status\":\"pending\"}");
	cr_expect_eq(model_attention_count(&m), 2, "two prompts of one run are one run");
	cr_assert(model_attention_next(&m, NULL, &a, &plan));
	cr_expect_str_eq(a.run_id, "run_9");
	cr_expect(plan);
	cr_assert(model_attention_next(&m, "run_9", &a, &plan));
	cr_expect_str_eq(a.run_id, "run_1");
	cr_expect_str_eq(a.project_id, "prj_1");
	cr_expect(!plan);
	cr_assert(model_attention_next(&m, "run_1", &a, &plan));
	cr_expect_str_eq(a.run_id, "run_9", "wraps around");
	apply_far("prj_2", "ses_9", "run.finished", "run_9", "{\"status\":\"cancelled\"}");
	cr_expect_eq(model_attention_count(&m), 1, "a final run waits for nothing");
	cr_expect(!model_attention_in(&m, "prj_2", NULL));
}

Test(model, a_list_filter_moves_among_matches_only)
{
	give_projects((const char *const[]){ "prj_a1", "prj_b", "prj_a2", "prj_c", "prj_a3",
	    NULL });
	model_focus(&m, PANE_PROJECTS);
	cr_expect_str_eq(model_project(&m)->id, "prj_a1");
	model_list_filter(&m, PANE_PROJECTS, "B");
	cr_expect_str_eq(model_project(&m)->id, "prj_b", "the selection moves to the match");
	model_list_filter(&m, PANE_PROJECTS, "a");
	cr_expect_str_eq(model_project(&m)->id, "prj_a1");
	model_move(&m, 1, 10);
	cr_expect_str_eq(model_project(&m)->id, "prj_a2", "j skips what does not match");
	model_move(&m, 1, 10);
	cr_expect_str_eq(model_project(&m)->id, "prj_a3");
	model_move(&m, 1, 10);
	cr_expect_str_eq(model_project(&m)->id, "prj_a3", "no match further down: stays");
	model_move(&m, LONG_MIN, 10);
	cr_expect_str_eq(model_project(&m)->id, "prj_a1");
	cr_expect(!model_list_match(&m, PANE_PROJECTS, 1));
	model_list_filter(&m, PANE_PROJECTS, "");
	cr_expect(model_list_match(&m, PANE_PROJECTS, 1), "an empty filter matches all");
	model_move(&m, 1, 10);
	cr_expect_str_eq(model_project(&m)->id, "prj_b");
}

Test(model, s_sorts_runs_by_status_and_keeps_the_selection)
{
	give_projects((const char *const[]){ "prj_1", NULL });
	give_sessions("prj_1", (const char *const[]){ "ses_1", NULL });
	give_runs("ses_1", (const char *const[]){ "run_5:completed", "run_4:failed",
	    "run_3:running", "run_2:queued", "run_1:cancelled", NULL }, false);
	model_focus(&m, PANE_RUNS);
	model_move(&m, 1, 10);
	cr_assert_str_eq(model_run(&m)->id, "run_4");
	model_list_sort_next(&m, PANE_RUNS);
	cr_expect_eq(m.sort[PANE_RUNS], SORT_STATUS);
	cr_expect_str_eq(m.runs[0].id, "run_3", "running first");
	cr_expect_str_eq(m.runs[1].id, "run_2");
	cr_expect_str_eq(m.runs[2].id, "run_4");
	cr_expect_str_eq(m.runs[3].id, "run_1");
	cr_expect_str_eq(m.runs[4].id, "run_5", "completed last");
	cr_expect_str_eq(model_run(&m)->id, "run_4", "the selection stays on its run");
	/* A run that starts needing the user goes first. */
	apply("run.attention", "run_2", "{\"attention\":{\"kind\":\"plan-approval\"}}");
	cr_expect_str_eq(m.runs[0].id, "run_2");
	cr_expect_str_eq(model_run(&m)->id, "run_4");
	model_list_sort_next(&m, PANE_RUNS);
	cr_expect_eq(m.sort[PANE_RUNS], SORT_NAME);
	model_list_sort_next(&m, PANE_RUNS);
	cr_expect_eq(m.sort[PANE_RUNS], SORT_NEWEST);
	for (size_t i = 0; i < 5; i++)
		cr_expect_eq(m.runs[i].id[4], '5' - (int)i, "newest first again");
	cr_expect_str_eq(model_run(&m)->id, "run_4");
}

/* Marks are kept by run id across a new read of the list and across sessions. */
Test(model, marks_survive_reads_and_sessions)
{
	select_run();
	give_runs("ses_1", (const char *const[]){ "run_2:running", "run_1:completed", NULL },
	    true);
	m.focus = PANE_RUNS;
	cr_assert(model_mark_toggle(&m));
	cr_assert(model_marked(&m, m.runs[m.runs_cur.sel].id));
	cr_assert_eq(m.mark_count, 1);
	/* The list read again, reordered: the same run stays marked. */
	give_runs("ses_1", (const char *const[]){ "run_3:queued", "run_2:running",
	    "run_1:completed", NULL }, true);
	cr_assert_eq(m.mark_count, 1);
	cr_assert(model_marked(&m, m.marks[0].id));
	/* Another session: its run joins the marks, with its session. */
	give_sessions("prj_1", (const char *const[]){ "ses_1", "ses_0", NULL });
	m.sessions_cur.sel = 1;
	give_runs("ses_0", (const char *const[]){ "run_0:running", NULL }, false);
	cr_assert(model_mark_toggle(&m));
	cr_assert_eq(m.mark_count, 2);
	cr_assert_str_eq(m.marks[1].id, "run_0");
	cr_assert_str_eq(m.marks[1].session_id, "ses_0");
	/* Space again unmarks it. */
	cr_assert(model_mark_toggle(&m));
	cr_assert_eq(m.mark_count, 1);
	cr_assert(!model_marked(&m, "run_0"));
	cr_assert(model_marks_clear(&m));
	cr_assert_eq(m.mark_count, 0);
	cr_assert(!model_marks_clear(&m));
}

/* '*' marks the runs the list shows: its filter applied, each once. */
Test(model, mark_visible_follows_the_filter)
{
	select_run();
	give_runs("ses_1", (const char *const[]){ "run_3:failed", "run_2:running",
	    "run_1:completed", NULL }, true);
	m.focus = PANE_RUNS;
	model_list_filter(&m, PANE_RUNS, "fail");
	cr_assert(model_mark_visible(&m));
	cr_assert_eq(m.mark_count, 1);
	cr_assert(model_marked(&m, "run_3"));
	model_list_filter(&m, PANE_RUNS, "");
	cr_assert(model_mark_visible(&m));
	cr_assert_eq(m.mark_count, 3);
	cr_assert(!model_mark_visible(&m), "marked twice");
	cr_assert_eq(m.mark_count, 3);
}

Test(model, describe_names_the_run_project_and_session)
{
	char out[256];

	select_run();
	model_describe(&m, NULL, NULL, "run_1", out, sizeof out);
	cr_expect_str_eq(out, "run \"a prompt\" in prj_1 \u203a title");
	model_describe(&m, "prj_1", "ses_0", NULL, out, sizeof out);
	cr_expect_str_eq(out, "prj_1 \u203a title");
	/* Unknown: the ids themselves. */
	model_describe(&m, NULL, NULL, "run_9", out, sizeof out);
	cr_expect_str_eq(out, "run \"run_9\"");
}

Test(model, an_archived_item_leaves_the_lists_unless_shown)
{
	unsigned need;

	give_projects((const char *const[]){ "prj_1", NULL });
	give_sessions("prj_1", (const char *const[]){ "ses_1", "ses_2", NULL });
	need = apply("session.updated", NULL, "{\"id\":\"ses_2\",\"projectId\":\"prj_1\","
	    "\"title\":\"t\",\"archivedAt\":\"2026-11-26T02:00:00.000Z\"}");
	cr_expect(need & NEED_SESSIONS, "the list is read again (the service leaves it out)");
	need = apply("session.updated", NULL, "{\"id\":\"ses_3\",\"projectId\":\"prj_1\","
	    "\"title\":\"t\",\"archivedAt\":\"2026-11-26T02:00:00.000Z\"}");
	cr_expect_eq(m.session_count, 2, "an archived session not listed is not added");
	m.show_archived = true;
	apply("project.updated", NULL, "{\"id\":\"prj_1\",\"name\":\"p\","
	    "\"archivedAt\":\"2026-11-26T02:00:00.000Z\"}");
	cr_expect(m.projects[0].archived, "shown, it is marked archived");
	(void)need;
}

Test(model, messages_are_kept_bounded_and_repeats_counted)
{
	char text[32];

	model_message(&m, 0, false, "first");
	model_message(&m, 0, false, "first");
	model_message(&m, 0, true, "an error");
	cr_assert_eq(m.messages_count, 2);
	cr_expect_str_eq(model_message_at(&m, 0)->text, "first");
	cr_expect_eq(model_message_at(&m, 0)->repeat, 1, "the same again is counted");
	cr_expect(model_message_at(&m, 1)->error);
	cr_expect_eq(strlen(model_message_at(&m, 1)->time), 8, "HH:MM:SS");
	cr_expect_null(model_message_at(&m, 2));
	for (int i = 0; i < MODEL_MESSAGES_MAX + 50; i++) {
		snprintf(text, sizeof text, "message %d", i);
		model_message(&m, 0, false, "%s", text);
	}
	cr_assert_eq(m.messages_count, MODEL_MESSAGES_MAX);
	cr_expect_str_eq(model_message_at(&m, 0)->text, "message 50", "the oldest are dropped");
	snprintf(text, sizeof text, "message %d", MODEL_MESSAGES_MAX + 49);
	cr_expect_str_eq(model_message_at(&m, MODEL_MESSAGES_MAX - 1)->text, text);
}

Test(model, timestamps_cycle_clock_relative_none)
{
	select_run();
	apply("run.started", "run_1", "{}");
	cr_assert_eq(model_log_line(&m, 0)->ms, 1795243200123LL, "a line keeps its event's time");
	cr_expect(m.log.timestamps && !m.log.relative);
	model_log_toggle_timestamps(&m);
	cr_expect(m.log.timestamps && m.log.relative);
	model_log_toggle_timestamps(&m);
	cr_expect(!m.log.timestamps);
	model_log_toggle_timestamps(&m);
	cr_expect(m.log.timestamps && !m.log.relative);
}

Test(model, new_lines_below_count_what_arrived_since_the_end_was_shown)
{
	char text[32];

	select_run();
	model_show_right(&m, RIGHT_LOG);
	for (int i = 0; i < 30; i++) {
		snprintf(text, sizeof text, "line %d\n", i);
		output("run_1", text);
	}
	model_log_fit(&m, 10);
	cr_expect_eq(model_log_unseen(&m, 30), 0, "following: nothing is new");
	model_move(&m, -5, 10);
	cr_expect_eq(model_log_unseen(&m, 25), 0, "lines shown before are not new");
	output("run_1", "line 30\nline 31\nline 32\n");
	cr_expect_eq(model_log_unseen(&m, 25), 3);
	model_move(&m, LONG_MAX, 10);
	cr_expect_eq(model_log_unseen(&m, 33), 0, "the end shown: seen");
}

Test(model, run_jumps_go_to_each_runs_first_line)
{
	const char *run;
	size_t index, total;

	select_run();
	model_show_right(&m, RIGHT_LOG);
	cr_expect_eq(model_log_scope(&m, false), NEED_HISTORY);
	model_log_history(&m, "ses_1", NULL, 0, true);
	for (int r = 1; r <= 3; r++) {
		char id[16];

		snprintf(id, sizeof id, "run_%d", r);
		apply("run.started", id, "{}");
		output(id, "one\ntwo\nthree\nfour\n");
		apply("run.finished", id, "{\"status\":\"completed\"}");
	}
	cr_assert_eq(model_log_visible(&m), 18);
	model_log_fit(&m, 4);
	model_move(&m, LONG_MIN, 4);
	run = model_log_run_jump(&m, 1, &index, &total);
	cr_assert_str_eq(run, "run_2");
	cr_expect_eq(index, 2);
	cr_expect_eq(total, 3);
	cr_expect_eq(m.log.top, 6);
	cr_expect(!m.log.follow);
	cr_expect_str_eq(model_log_run_jump(&m, 1, &index, &total), "run_3");
	cr_expect_null(model_log_run_jump(&m, 1, &index, &total), "no run after the last");
	cr_expect_str_eq(model_log_run_jump(&m, -1, &index, &total), "run_2");
	cr_expect_str_eq(model_log_run_jump(&m, -1, &index, &total), "run_1");
	cr_expect_eq(m.log.top, 0);
	cr_expect_null(model_log_run_jump(&m, -1, &index, &total));
}

/* The changes of run_1 as GET /runs/run_1/changes gives them: "path:status:+:-". */
static void
give_changes(const char *run, const char *const *files, bool live)
{
	struct td_change_file items[8] = { { 0 } };
	struct td_changes ch = { .run_id = (char *)run, .files = items, .live = live };
	char buf[8][128];

	for (; files[ch.file_count] != NULL; ch.file_count++) {
		struct td_change_file *f = &items[ch.file_count];
		char *st, *add, *del;

		snprintf(buf[ch.file_count], sizeof buf[ch.file_count], "%s", files[ch.file_count]);
		st = strchr(buf[ch.file_count], ':');
		*st++ = '\0';
		add = strchr(st, ':');
		*add++ = '\0';
		del = strchr(add, ':');
		*del++ = '\0';
		f->path = buf[ch.file_count];
		f->status = st;
		f->additions = atol(add);
		f->deletions = atol(del);
		ch.total_additions += f->additions;
		ch.total_deletions += f->deletions;
	}
	ch.total_files = (long)ch.file_count;
	model_set_changes(&m, run, &ch);
}

Test(model, the_changes_view_follows_the_selected_run_and_keeps_the_file)
{
	const char *path;

	select_run();
	cr_expect_null(model_changes_want(&m), "no Changes view, nothing to read");
	model_show_right(&m, RIGHT_CHANGES);
	cr_assert_str_eq(model_changes_want(&m), "run_1");
	model_changes_ask(&m, "run_1");
	give_changes("run_1", (const char *const[]){ "a.txt:added:3:0", "b.txt:modified:1:1",
	    "c.txt:type-changed:0:0", NULL }, true);
	cr_assert_eq(m.changes.file_count, 3);
	cr_expect_eq(m.changes.files[0].status, 'A');
	cr_expect_eq(m.changes.files[2].status, 'T');
	cr_expect_eq(m.changes.additions, 4);
	cr_expect(m.changes.live);
	/* One row down is the next file; its diff is due once, until the list is read again. */
	model_move(&m, 1, 10);
	cr_expect_str_eq(model_change(&m)->path, "b.txt");
	path = model_changes_diff_due(&m);
	cr_assert_not_null(path);
	cr_expect_str_eq(path, "b.txt");
	cr_expect_null(model_changes_diff_due(&m));
	model_set_diff(&m, "run_1", "b.txt", "diff --git a/b.txt b/b.txt\n--- a/b.txt\n"
	    "+++ b/b.txt\n@@ -1 +1 @@\n-old\n+new\n");
	cr_expect_eq(m.changes.diff_count, 6);
	cr_expect_str_eq(m.changes.diff[5], "+new");
	/* A diff of another file (an answer too late) is not shown. */
	model_set_diff(&m, "run_1", "a.txt", "diff --git a/a.txt b/a.txt\n");
	cr_expect_eq(m.changes.diff_count, 6);
	/* Read again with a new file before it: the selection stays on b.txt, the diff is due. */
	give_changes("run_1", (const char *const[]){ "0.txt:added:1:0", "a.txt:added:3:0",
	    "b.txt:modified:2:1", "c.txt:type-changed:0:0", NULL }, false);
	cr_expect_str_eq(model_change(&m)->path, "b.txt");
	cr_expect(!m.changes.live);
	cr_expect_str_eq(model_changes_diff_due(&m), "b.txt");
	/* A list of another run (late) is ignored. */
	give_changes("run_0", (const char *const[]){ "z:added:1:0", NULL }, false);
	cr_expect_eq(m.changes.file_count, 4);
	/* A failed read is said; the next good one clears it. */
	model_set_changes(&m, "run_1", NULL);
	cr_expect(m.changes.failed);
	cr_expect_eq(m.changes.file_count, 4, "what was read stays");
	give_changes("run_1", (const char *const[]){ "a.txt:added:3:0", NULL }, false);
	cr_expect(!m.changes.failed);
	/* Another run: the view empties until its list comes. */
	model_changes_ask(&m, "run_0");
	cr_expect_eq(m.changes.file_count, 0);
	cr_expect(m.changes.loading);
}

/* Changes the service says are incomplete keep its reason until a whole read. */
Test(model, incomplete_changes_keep_the_reason_until_a_whole_read)
{
	struct td_changes ch = { .run_id = "run_1", .live = false,
	    .incomplete_reason = "the run started before its first snapshot was complete" };

	select_run();
	model_show_right(&m, RIGHT_CHANGES);
	model_changes_ask(&m, "run_1");
	model_set_changes(&m, "run_1", &ch);
	cr_assert_eq(m.changes.file_count, 0);
	cr_assert_not_null(m.changes.incomplete, "no files, but not \"changed no file\"");
	cr_expect_str_eq(m.changes.incomplete, ch.incomplete_reason);
	give_changes("run_1", (const char *const[]){ "a.txt:added:1:0", NULL }, false);
	cr_expect_null(m.changes.incomplete);
}

Test(model, a_run_changes_event_updates_the_row_and_asks_for_the_shown_list)
{
	select_run();
	cr_expect(!m.runs[0].has_changes);
	cr_expect_eq(apply("run.changes", "run_1", "{\"runId\":\"run_1\",\"seq\":2,\"files\":2,"
	    "\"additions\":7,\"deletions\":3,\"paths\":[\"a\"]}") & NEED_CHANGES, 0,
	    "no Changes view shows run_1: nothing to read");
	cr_expect(m.runs[0].has_changes);
	cr_expect_eq(m.runs[0].files, 2);
	cr_expect_eq(m.runs[0].additions, 7);
	cr_expect_eq(m.runs[0].deletions, 3);
	cr_expect_eq(m.project_runs[0].additions, 7);
	model_show_right(&m, RIGHT_CHANGES);
	model_changes_ask(&m, "run_1");
	cr_expect(apply("run.changes", "run_1", "{\"runId\":\"run_1\",\"seq\":3,\"files\":3,"
	    "\"additions\":9,\"deletions\":3,\"paths\":[\"b\"]}") & NEED_CHANGES);
	cr_expect(apply("run.finished", "run_1", "{\"status\":\"completed\"}") & NEED_CHANGES,
	    "its end is read: no longer live");
}

Test(model, diff_lines_are_told_apart_for_their_colours)
{
	static const struct {
		const char *line;
		enum diff_kind kind;
	} lines[] = {
		{ "diff --git a/x b/x", DIFF_HEADER }, { "new file mode 100644", DIFF_HEADER },
		{ "--- /dev/null", DIFF_HEADER }, { "+++ b/x", DIFF_HEADER },
		{ "@@ -0,0 +1,2 @@", DIFF_HUNK }, { "+--- a line of dashes", DIFF_ADD },
		{ "--- removed dashes", DIFF_DEL }, { " kept", DIFF_CONTEXT },
		{ "-gone", DIFF_DEL }, { "diff --git a/y b/y", DIFF_HEADER },
		{ "Binary files a/y and b/y differ", DIFF_HEADER },
	};
	bool header = false;

	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		cr_expect_eq(model_diff_kind(lines[i].line, &header), lines[i].kind, "%s",
		    lines[i].line);
}
