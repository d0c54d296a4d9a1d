/* The dashboard's worker against a real taskdeckd and agent: lists, history, downloads. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "model.h"
#include "taskdeck.h"
#include "xalloc.h"
#include "worker.h"

TestSuite(worker, .init = svc_setup_env, .fini = svc_teardown, .timeout = 120);

/* A replay run of model, finished; continues session when not NULL. */
static struct td_run *
run_done(struct td_client *c, const char *project, const char *session, const char *model)
{
	struct td_run_request rq = {
		.project = project, .prompt = "Write a short report.", .session_id = session,
		.provider = session ? NULL : "replay", .model = session ? NULL : model,
	};
	struct td_wait_options wait = { .timeout_ms = 60000 };
	struct td_error err;
	struct td_run *r, *done;

	cr_assert_eq(td_start_run(c, &rq, NULL, &r, &err), TD_OK, "start: %s", err.message);
	cr_assert_eq(td_wait_for_run(c, r->id, &wait, &done, &err), TD_OK, "%s", err.message);
	td_run_free(r);
	cr_assert_str_eq(done->status, "completed", "%s: %s", done->error_code,
	    done->error_message);
	return done;
}

/* The next result, waiting on the worker's descriptor; progress reports skipped unless wanted. */
static struct job_result *
next_result(struct worker *w, bool progress)
{
	long deadline = mono_ms() + 30000;
	struct job_result *r;

	for (;;) {
		struct pollfd p = { .fd = worker_fd(w), .events = POLLIN };

		cr_assert_lt(mono_ms(), deadline, "no result in 30 s");
		if (poll(&p, 1, 1000) <= 0)
			continue;
		r = worker_take(w);
		cr_assert_not_null(r, "the descriptor was readable with no result");
		if (!r->progress || progress)
			return r;
		job_result_free(r);
	}
}

static struct job_result *
call(struct worker *w, const struct job *job)
{
	struct job_result *r;

	worker_submit(w, job);
	r = next_result(w, false);
	cr_assert_eq(r->job.kind, job->kind);
	return r;
}

Test(worker, lists_and_the_history_a_log_shows)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Worker");
	struct td_run *first = run_done(c, project, NULL, "research");
	struct td_run *second = run_done(c, project, first->session_id, NULL);
	struct worker *w = worker_new(c);
	struct job_result *r;
	struct model m;
	const struct log_line *last;

	cr_assert_not_null(w);
	r = call(w, &(struct job){ .kind = JOB_PROJECTS });
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_expect_eq(r->projects->count, 1);
	cr_expect_str_eq(r->projects->items[0].id, project);
	job_result_free(r);

	r = call(w, &(struct job){ .kind = JOB_RUNS, .id = first->session_id });
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_assert_eq(r->runs->count, 2);
	cr_expect_str_eq(r->runs->items[0].id, second->id, "newest first");
	cr_expect_str_eq(r->job.id, first->session_id, "the result names what it was for");
	job_result_free(r);

	r = call(w, &(struct job){ .kind = JOB_PLAN, .id = first->session_id });
	cr_expect_eq(r->code, TD_NOT_FOUND, "a session without a plan");
	cr_expect_null(r->plan);
	job_result_free(r);

	/* One run's history, as the model shows it. */
	r = call(w, &(struct job){ .kind = JOB_HISTORY, .id = first->id, .run_scope = true });
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_assert_gt(r->event_count, 2);
	cr_expect(!r->more);
	cr_expect_str_eq(r->events[0]->type, "run.queued");
	cr_expect_str_eq(r->events[r->event_count - 1]->type, "run.finished");
	for (size_t i = 0; i < r->event_count; i++) {
		cr_expect_str_eq(r->events[i]->run_id, first->id);
		cr_expect_not_null(r->events[i]->stream_id);
		cr_expect(i == 0 || r->events[i]->seq > r->events[i - 1]->seq);
	}
	model_init(&m);
	m.log.scope_id = strdup(first->id);
	m.log.loading = true;
	model_log_history(&m, first->id, r->events, r->event_count, true);
	cr_assert_gt(model_log_visible(&m), 2);
	last = model_log_line(&m, model_log_visible(&m) - 1);
	cr_expect_str_eq(last->text, "run finished: completed");
	cr_expect_eq(strlen(last->time), 8, "HH:MM:SS");
	model_free(&m);

	/* Paging: after the last event nothing more. */
	struct job after_last = { .kind = JOB_HISTORY, .id = first->id, .run_scope = true };

	worker_event_id(r->events[r->event_count - 1], after_last.after, sizeof after_last.after);
	job_result_free(r);
	r = call(w, &after_last);
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_expect_eq(r->event_count, 0);
	job_result_free(r);

	/* The session: both runs, oldest first. */
	r = call(w, &(struct job){ .kind = JOB_HISTORY, .id = first->session_id });
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_assert_gt(r->event_count, 4);
	cr_expect_str_eq(r->events[0]->run_id, first->id);
	cr_expect_str_eq(r->events[r->event_count - 1]->run_id, second->id);
	cr_expect_str_eq(r->events[r->event_count - 1]->type, "run.finished");
	job_result_free(r);

	r = call(w, &(struct job){ .kind = JOB_HISTORY, .id = "run_doesnotexist",
	    .run_scope = true });
	cr_expect_eq(r->code, TD_NOT_FOUND);
	job_result_free(r);

	worker_free(w);
	td_run_free(first);
	td_run_free(second);
	free(project);
	td_client_free(c);
}

Test(worker, downloads_an_artifact_with_progress)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Download");
	struct td_run *run = run_done(c, project, NULL, "research");
	struct worker *w = worker_new(c);
	struct job_result *r;
	struct job job = { .kind = JOB_DOWNLOAD, .label = "report.md" };
	char path[512];
	struct stat st;
	bool saw_progress = false;

	r = call(w, &(struct job){ .kind = JOB_ARTIFACTS, .id = run->session_id });
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_assert_geq(r->artifacts->count, 1);
	job.id = strdup(r->artifacts->items[0].id);
	job.run_id = run->id;
	snprintf(path, sizeof path, "%s/report-copy.md", svc.home);
	job.path = path;
	cr_assert_gt(r->artifacts->items[0].size, 0);
	st.st_size = r->artifacts->items[0].size;
	job_result_free(r);

	worker_submit(w, &job);
	for (;;) {
		r = next_result(w, true);
		cr_assert_eq(r->job.kind, JOB_DOWNLOAD);
		if (!r->progress)
			break;
		saw_progress = true;
		cr_expect_str_eq(r->job.label, "report.md");
		job_result_free(r);
	}
	cr_expect(saw_progress, "a progress report came first");
	cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
	cr_expect_eq(r->done, st.st_size);
	job_result_free(r);
	{
		long long want = st.st_size;

		cr_assert_eq(stat(path, &st), 0);
		cr_expect_eq(st.st_size, want);
	}

	/* An existing file is kept unless overwrite is asked. */
	worker_submit(w, &job);
	r = next_result(w, false);
	cr_expect_neq(r->code, TD_OK);
	cr_expect_str_eq(r->job.run_id, run->id, "the error can name the run");
	job_result_free(r);
	job.overwrite = true;
	worker_submit(w, &job);
	r = next_result(w, false);
	cr_expect_eq(r->code, TD_OK, "%s", r->err.message);
	job_result_free(r);

	worker_free(w);
	free(job.id);
	td_run_free(run);
	free(project);
	td_client_free(c);
}

Test(worker, freeing_is_prompt_with_jobs_queued)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Busy");
	struct worker *w = worker_new(c);
	long t0;

	for (int i = 0; i < 200; i++)
		worker_submit(w, &(struct job){ .kind = JOB_SESSIONS, .id = project });
	t0 = mono_ms();
	worker_free(w);
	cr_expect_lt(mono_ms() - t0, 2000, "worker_free took %ld ms", mono_ms() - t0);
	free(project);
	td_client_free(c);
}

/* The number of events of a run's history, following the service's Link pages. */
static size_t
history_count_http(const char *run_id)
{
	char *path = xasprintf("/api/v1/runs/%s/events?limit=1000", run_id);
	size_t total = 0;

	for (int pages = 0; path != NULL; pages++) {
		struct http_resp resp = http_req(&svc, "GET", path, NULL, NULL, true);
		char *link, *lt, *gt;

		cr_assert_lt(pages, 100);
		cr_assert_eq(resp.status, 200, "%ld %s", resp.status, resp.body);
		total += (size_t)cJSON_GetArraySize(resp.json);
		free(path);
		path = NULL;
		link = http_header(&resp, "Link");
		if (link != NULL && (lt = strchr(link, '<')) != NULL &&
		    (gt = strchr(lt, '>')) != NULL) {
			*gt = '\0';
			path = strdup(lt + 1);
		}
		free(link);
		http_resp_free(&resp);
	}
	return total;
}

/*
 * A run resumed after a kill -9 has a history on two streams whose seqs
 * overlap; the log pages it by event id (STREAM:SEQ) as the dashboard does
 * (app.c), and gets every event once.
 */
Test(worker, pages_a_history_that_spans_a_restart, .timeout = 180)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Resumed");
	struct td_run_request rq = { .project = project, .prompt = "Print 1,500 lines.",
	    .provider = "replay", .model = "long-output" };
	struct job job = { .kind = JOB_HISTORY, .run_scope = true };
	struct td_error err;
	struct td_run *run;
	struct worker *w;
	struct job_result *r;
	char *path, *first_stream = NULL;
	size_t total = 0, want;
	bool two_streams = false, paged = false;
	long deadline = mono_ms() + 60000;
	cJSON *final;

	cr_assert_eq(td_start_run(c, &rq, NULL, &run, &err), TD_OK, "start: %s", err.message);
	/* Kill the service once more than a page of the run's history is stored. */
	path = xasprintf("/api/v1/runs/%s/events?limit=1000", run->id);
	while (!paged) {
		struct http_resp resp = http_req(&svc, "GET", path, NULL, NULL, true);
		char *link = http_header(&resp, "Link");

		paged = link != NULL;
		free(link);
		http_resp_free(&resp);
		cr_assert_lt(mono_ms(), deadline, "no second page of history in 60 s");
		if (!paged)
			usleep(50 * 1000);
	}
	free(path);
	path = xasprintf("/api/v1/runs/%s", run->id);
	struct http_resp resp = http_req(&svc, "GET", path, NULL, NULL, true);

	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(resp.json, "status")),
	    "running", "the run ended before the kill: the transcript is too short");
	http_resp_free(&resp);
	free(path);
	td_client_free(c);
	svc_kill(&svc);
	svc_restart(&svc);
	svc_export_env(&svc);
	final = run_wait_final(&svc, run->id, 90000);
	cr_assert_not_null(final, "the resumed run did not end");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(final, "status")),
	    "completed");
	cJSON_Delete(final);
	want = history_count_http(run->id);
	cr_assert_gt(want, 2000, "two streams of more than 1,000 events each");

	c = client_connect();
	w = worker_new(c);
	job.id = run->id;
	for (int pages = 0;; pages++) {
		cr_assert_lt(pages, 100);
		r = call(w, &job);
		cr_assert_eq(r->code, TD_OK, "%s", r->err.message);
		for (size_t i = 0; i < r->event_count; i++) {
			if (first_stream == NULL)
				first_stream = strdup(r->events[i]->stream_id);
			else if (strcmp(first_stream, r->events[i]->stream_id) != 0)
				two_streams = true;
		}
		total += r->event_count;
		if (!r->more || r->event_count == 0) {
			cr_assert_gt(r->event_count, 0);
			cr_expect_str_eq(r->events[r->event_count - 1]->type, "run.finished");
			job_result_free(r);
			break;
		}
		worker_event_id(r->events[r->event_count - 1], job.after, sizeof job.after);
		job_result_free(r);
	}
	cr_expect(two_streams, "the history holds the events of both streams");
	cr_expect_eq(total, want, "every event of the history once: %zu of %zu", total, want);
	free(first_stream);
	worker_free(w);
	td_run_free(run);
	free(project);
	td_client_free(c);
}
