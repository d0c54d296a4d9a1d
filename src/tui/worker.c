/* The dashboard's HTTP calls on two threads: requests in order, downloads apart. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "model.h"
#include "timeutil.h"
#include "worker.h"
#include "xalloc.h"

#define WORKER_REQUEST_MS 10000
#define WORKER_DOWNLOAD_MS (24LL * 3600 * 1000)
#define WORKER_PROGRESS_MS 100
#define WORKER_PAGE 1000
#define WORKER_LIST_LIMIT 200

/* A queued job or result. */
struct wnode {
	struct wnode *next;
	struct job job;
	struct job_result *result;
};

struct wqueue {
	struct wnode *head, *tail;
};

/* One thread and what it serves. */
struct wlane {
	struct worker *w;
	struct wqueue jobs;
	struct td_cancel *cancel;	/* of the running job, NULL between jobs */
	pthread_t thread;
	bool started;
	void (*run)(struct wlane *, struct wnode *);
};

struct worker {
	struct td_client *client;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct wlane requests, downloads;
	struct wqueue results;
	int efd;
};

static void
wqueue_push(struct wqueue *q, struct wnode *n)
{
	n->next = NULL;
	if (q->tail != NULL)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
}

static struct wnode *
wqueue_pop(struct wqueue *q)
{
	struct wnode *n = q->head;

	if (n != NULL) {
		q->head = n->next;
		if (q->head == NULL)
			q->tail = NULL;
	}
	return n;
}

void
job_copy(struct job *dst, const struct job *src)
{
	*dst = *src;
	dst->id = xstrdup_or_null(src->id);
	dst->session = xstrdup_or_null(src->session);
	dst->text = xstrdup_or_null(src->text);
	dst->decision = xstrdup_or_null(src->decision);
	dst->profile = xstrdup_or_null(src->profile);
	dst->path = xstrdup_or_null(src->path);
	dst->label = xstrdup_or_null(src->label);
	dst->run_id = xstrdup_or_null(src->run_id);
	dst->provider = xstrdup_or_null(src->provider);
	dst->model = xstrdup_or_null(src->model);
}

void
job_clear(struct job *j)
{
	free(j->id);
	free(j->session);
	free(j->text);
	free(j->decision);
	free(j->profile);
	free(j->path);
	free(j->label);
	free(j->run_id);
	free(j->provider);
	free(j->model);
	memset(j, 0, sizeof *j);
}

/* The private file of JOB_OPEN_ARTIFACT: removed with the job's result, or with
 * the job when it never ran. */
static void
job_remove_private(const struct job *j)
{
	if (j->kind == JOB_OPEN_ARTIFACT && j->path != NULL)
		unlink(j->path);
}

void
job_result_free(struct job_result *r)
{
	if (r == NULL)
		return;
	job_remove_private(&r->job);
	job_clear(&r->job);
	td_doctor_report_free(r->doctor);
	td_project_list_free(r->projects);
	td_session_list_free(r->sessions);
	td_run_list_free(r->runs);
	td_artifact_list_free(r->artifacts);
	td_plan_free(r->plan);
	td_permission_list_free(r->permissions);
	td_run_free(r->run);
	td_permission_free(r->permission);
	td_connector_list_free(r->connectors);
	td_connector_free(r->connector);
	td_connector_test_free(r->connector_test);
	free(r->login_url);
	free(r->summary);
	td_changes_free(r->changes);
	free(r->diff);
	td_revert_free(r->revert);
	td_model_list_free(r->models);
	td_attempt_group_free(r->attempts);
	for (size_t i = 0; i < r->event_count; i++)
		td_event_free(r->events[i]);
	free(r->events);
	free(r);
}

static void
wnode_free(struct wnode *n)
{
	job_clear(&n->job);
	job_result_free(n->result);
	free(n);
}

static struct job_result *
result_new(const struct job *job)
{
	struct job_result *r = xcalloc(1, sizeof *r);

	job_copy(&r->job, job);
	r->total = -1;
	return r;
}

/* Hands a result to the loop (or drops it when the worker stops). */
static void
worker_post(struct worker *w, struct job_result *r)
{
	struct wnode *n = xcalloc(1, sizeof *n);
	uint64_t one = 1;

	n->result = r;
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		wnode_free(n);
		return;
	}
	wqueue_push(&w->results, n);
	if (write(w->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		perror("taskdeck: worker eventfd");
	pthread_mutex_unlock(&w->lock);
}

/* Fills err for a failure found here rather than by the client core. */
static enum td_code
fail(struct td_error *err, enum td_code code, const char *message)
{
	memset(err, 0, sizeof *err);
	err->code = code;
	snprintf(err->code_name, sizeof err->code_name, "%s", td_code_string(code));
	snprintf(err->message, sizeof err->message, "%s", message);
	return code;
}

/* Ids go into paths: only the characters of our ids. */
static bool
id_ok(const char *id)
{
	if (id == NULL || *id == '\0' || strlen(id) > 128)
		return false;
	return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
	    strlen(id);
}

/* --- history ---------------------------------------------------------------- */

/* A growing list of events that keeps only the newest max. */
struct evlist {
	struct td_event **items;
	size_t count, cap, max;
};

/* Drops the oldest events past max. */
static void
evlist_trim(struct evlist *l)
{
	size_t drop;

	if (l->max == 0 || l->count <= l->max)
		return;
	drop = l->count - l->max;
	for (size_t i = 0; i < drop; i++)
		td_event_free(l->items[i]);
	memmove(l->items, l->items + drop, l->max * sizeof *l->items);
	l->count = l->max;
}

static void
evlist_add(struct evlist *l, struct td_event *ev)
{
	if (l->max > 0 && l->count == 2 * l->max)
		evlist_trim(l);
	if (l->count == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->items = xrealloc(l->items, l->cap * sizeof *l->items);
	}
	l->items[l->count++] = ev;
}

static void
evlist_free(struct evlist *l)
{
	for (size_t i = 0; i < l->count; i++)
		td_event_free(l->items[i]);
	free(l->items);
	memset(l, 0, sizeof *l);
}

void
worker_event_id(const struct td_event *ev, char *out, size_t size)
{
	if (ev->stream_id != NULL && ev->stream_id[0] != '\0')
		snprintf(out, size, "%s:%lld", ev->stream_id, ev->seq);
	else
		snprintf(out, size, "%lld", ev->seq);
}

/*
 * One page of a run's history into l; *n is how many came.  after is an
 * event id (STREAM:SEQ, or "" from the start): a run resumed after a
 * restart has events of several streams, whose bare seqs repeat.
 */
static enum td_code
history_page(struct td_client *c, const char *run_id, const char *after,
    const struct td_request_options *opts, struct evlist *l, size_t *n,
    struct td_error *err)
{
	struct td_run_event_list *page = NULL;
	enum td_code rc;

	*n = 0;
	if (!id_ok(run_id))
		return fail(err, TD_INVALID_ARGUMENT, "not a run id");
	rc = td_list_run_events(c, run_id, after, WORKER_PAGE, opts, &page, err);
	if (rc != TD_OK)
		return rc;
	for (size_t i = 0; i < page->count; i++) {
		evlist_add(l, page->items[i]);
		page->items[i] = NULL;
	}
	*n = page->count;
	td_run_event_list_free(page);
	return TD_OK;
}

/* Every event of a run, the newest l->max kept. */
static enum td_code
history_run_all(struct td_client *c, const char *run_id,
    const struct td_request_options *opts, struct evlist *l, struct td_error *err)
{
	char after[64] = "", last[64];
	size_t n;
	enum td_code rc;

	do {
		if (opts->cancel != NULL && td_cancel_is_triggered(opts->cancel))
			return fail(err, TD_CANCELLED, "cancelled");
		rc = history_page(c, run_id, after, opts, l, &n, err);
		if (rc != TD_OK)
			return rc;
		if (l->count == 0)
			break;
		worker_event_id(l->items[l->count - 1], last, sizeof last);
		if (strcmp(last, after) == 0)
			break;	/* no progress */
		memcpy(after, last, sizeof after);
	} while (n == WORKER_PAGE);
	evlist_trim(l);
	return TD_OK;
}

/* A session's runs' histories, oldest run first, the newest MODEL_LOG_MAX events. */
static enum td_code
history_session(struct td_client *c, const char *session_id,
    const struct td_request_options *opts, struct job_result *r, struct td_error *err)
{
	struct td_run_filter filter = { .session_id = session_id };
	struct td_run_list *runs = NULL;
	struct evlist *per, all = { .max = MODEL_LOG_MAX };
	size_t total = 0, used = 0;
	enum td_code rc;

	rc = td_list_runs(c, &filter, WORKER_PAGE, NULL, opts, &runs, err);
	if (rc != TD_OK)
		return rc;
	per = xcalloc(runs->count + 1, sizeof *per);
	/* Newest run first, until enough events are there. */
	for (; used < runs->count && total < MODEL_LOG_MAX; used++) {
		per[used].max = MODEL_LOG_MAX;
		rc = history_run_all(c, runs->items[used].id, opts, &per[used], err);
		if (rc != TD_OK)
			break;
		total += per[used].count;
	}
	for (size_t i = used; rc == TD_OK && i-- > 0;) {
		for (size_t k = 0; k < per[i].count; k++)
			evlist_add(&all, per[i].items[k]);
		per[i].count = 0;
	}
	evlist_trim(&all);
	for (size_t i = 0; i < used; i++)
		evlist_free(&per[i]);
	free(per);
	td_run_list_free(runs);
	if (rc != TD_OK) {
		evlist_free(&all);
		return rc;
	}
	r->events = all.items;
	r->event_count = all.count;
	r->more = false;
	return TD_OK;
}

/* A run's page of history, or a whole session's. */
static enum td_code
do_history(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	struct evlist l = { 0 };
	size_t n;
	enum td_code rc;

	if (!r->job.run_scope)
		return history_session(w->client, r->job.id, opts, r, &r->err);
	rc = history_page(w->client, r->job.id, r->job.after, opts, &l, &n, &r->err);
	if (rc != TD_OK) {
		evlist_free(&l);
		return rc;
	}
	r->events = l.items;
	r->event_count = l.count;
	r->more = n == WORKER_PAGE;
	return TD_OK;
}

/* --- requests --------------------------------------------------------------- */

static enum td_code
do_doctor(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_doctor(w->client, opts, &r->doctor, &r->err);
}

static enum td_code
do_models(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_list_models(w->client, r->job.id, opts, &r->models, &r->err);
}

static enum td_code
do_projects(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_list_projects_archived(w->client, r->job.archived ? TD_ARCHIVED_ALL :
	    TD_ARCHIVED_HIDE, WORKER_LIST_LIMIT, NULL, opts, &r->projects, &r->err);
}

static enum td_code
do_sessions(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_list_sessions_archived(w->client, r->job.id, r->job.archived ?
	    TD_ARCHIVED_ALL : TD_ARCHIVED_HIDE, WORKER_LIST_LIMIT, NULL, opts, &r->sessions,
	    &r->err);
}

static enum td_code
do_archive(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	bool archive = r->job.decision != NULL && strcmp(r->job.decision, "archive") == 0;
	struct td_project *p = NULL;
	struct td_session *s = NULL;
	enum td_code rc;

	if (r->job.run_scope)
		rc = td_archive_session(w->client, r->job.id, archive, opts, &s, &r->err);
	else
		rc = td_archive_project(w->client, r->job.id, archive, opts, &p, &r->err);
	td_project_free(p);
	td_session_free(s);
	return rc;
}

static enum td_code
do_delete_session(struct worker *w, struct job_result *r,
    const struct td_request_options *opts)
{
	struct td_session_deleted *d = NULL;
	enum td_code code = td_delete_session(w->client, r->job.id, r->job.force, opts, &d,
	    &r->err);

	r->deleting = d != NULL && d->deleting;
	td_session_deleted_free(d);
	return code;
}

static enum td_code
do_runs(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	struct td_run_filter f = { .session_id = r->job.id };

	return td_list_runs(w->client, &f, WORKER_LIST_LIMIT, NULL, opts, &r->runs, &r->err);
}

static enum td_code
do_run(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_get_run(w->client, r->job.id, opts, &r->run, &r->err);
}

static enum td_code
do_project_runs(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	struct td_run_filter f = { .project_id = r->job.id };

	return td_list_runs(w->client, &f, WORKER_LIST_LIMIT, NULL, opts, &r->runs, &r->err);
}

/* The running runs of every project (archived ones too), in one list (for attention everywhere). */
static enum td_code
do_attention(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	struct td_project_list *projects = NULL;
	struct td_run_list *all, *some;
	enum td_code rc;

	rc = td_list_projects_archived(w->client, TD_ARCHIVED_ALL, WORKER_LIST_LIMIT, NULL, opts,
	    &projects, &r->err);
	if (rc != TD_OK)
		return rc;
	all = xcalloc(1, sizeof *all);
	for (size_t i = 0; i < projects->count; i++) {
		struct td_run_filter f = { .project_id = projects->items[i].id,
		    .status = "running" };

		rc = td_list_runs(w->client, &f, WORKER_LIST_LIMIT, NULL, opts, &some, &r->err);
		if (rc != TD_OK)
			break;
		/* The runs move into all; their emptied places are freed with some. */
		all->items = xrealloc(all->items, (all->count + some->count + 1) *
		    sizeof *all->items);
		for (size_t k = 0; k < some->count; k++) {
			all->items[all->count++] = some->items[k];
			memset(&some->items[k], 0, sizeof some->items[k]);
		}
		td_run_list_free(some);
	}
	td_project_list_free(projects);
	r->runs = all;
	return rc;
}

static enum td_code
do_artifacts(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_list_artifacts(w->client, r->job.id, false, WORKER_LIST_LIMIT, NULL, opts,
	    &r->artifacts, &r->err);
}

static enum td_code
do_plan(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_get_session_plan(w->client, r->job.id, opts, &r->plan, &r->err);
}

static enum td_code
do_permissions(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_list_permissions(w->client, "pending", NULL, WORKER_LIST_LIMIT, NULL, opts,
	    &r->permissions, &r->err);
}

static enum td_code
do_start_run(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	struct td_run_request req = {
		.project = r->job.id,
		.prompt = r->job.text,
		.permission_profile = r->job.profile,
		.turn_intent = r->job.plan_first ? "plan-first" : NULL,
		.session_id = r->job.session,
		.provider = r->job.provider,
		.model = r->job.model,
	};
	const char *models[1] = { r->job.model };
	struct td_attempts_request rq = {
		.project = r->job.id,
		.prompt = r->job.text,
		.cwd = r->job.path,
		.count = r->job.attempts,
		.models = r->job.model != NULL ? models : NULL,
		.model_count = r->job.model != NULL ? 1 : 0,
		.provider = r->job.provider,
		.permission_profile = r->job.profile,
	};

	if (r->job.attempts > 1 && r->job.session == NULL)
		return td_create_attempts(w->client, &rq, opts, &r->attempts, &r->err);
	return td_start_run(w->client, &req, opts, &r->run, &r->err);
}

static enum td_code
do_cancel_run(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_cancel_run(w->client, r->job.id, opts, &r->run, &r->err);
}

static enum td_code
do_plan_respond(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_respond_session_plan(w->client, r->job.id, r->job.decision, r->job.version,
	    r->job.revision, r->job.text, opts, &r->plan, &r->err);
}

static enum td_code
do_permission_answer(struct worker *w, struct job_result *r,
    const struct td_request_options *opts)
{
	/* A form's values (JSON) when its fields were filled in. */
	if (r->job.text != NULL)
		return td_answer_permission_form(w->client, r->job.id, r->job.decision,
		    r->job.text, opts, &r->permission, &r->err);
	return td_answer_permission(w->client, r->job.id, r->job.decision, opts,
	    &r->permission, &r->err);
}

static enum td_code
do_connectors(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_list_connectors(w->client, WORKER_LIST_LIMIT, NULL, opts, &r->connectors,
	    &r->err);
}

static enum td_code
do_connector_enable(struct worker *w, struct job_result *r,
    const struct td_request_options *opts)
{
	bool on = r->job.decision != NULL && strcmp(r->job.decision, "enable") == 0;

	return td_set_connector_enabled(w->client, r->job.id, on, opts, &r->connector, &r->err);
}

/* A test connects to the server: the client core's own deadline, not 10 s. */
static enum td_code
do_connector_test(struct worker *w, struct job_result *r,
    const struct td_request_options *opts)
{
	struct td_request_options o = *opts;

	o.timeout_ms = 0;
	return td_test_connector(w->client, r->job.id, &o, &r->connector_test, &r->err);
}

/* A sign-in discovers the server's authorization server: the client core's deadline too. */
static enum td_code
do_connector_login(struct worker *w, struct job_result *r,
    const struct td_request_options *opts)
{
	struct td_request_options o = *opts;

	o.timeout_ms = 0;
	return td_login_connector(w->client, r->job.id, NULL, &o, &r->login_url, &r->err);
}

/* One run of a bulk action; TD_OK or why not, with *new_run for a rerun. */
static enum td_code
bulk_one(struct worker *w, const char *verb, const char *run_id,
    const struct td_request_options *opts, char **new_run, struct td_error *err)
{
	struct td_run *run = NULL;
	struct td_plan *plan = NULL;
	enum td_code rc;

	if (strcmp(verb, "rerun") == 0) {
		if ((rc = td_rerun_run(w->client, run_id, opts, &run, err)) == TD_OK)
			*new_run = xstrdup(run->id);
		td_run_free(run);
		return rc;
	}
	if ((rc = td_get_run(w->client, run_id, opts, &run, err)) != TD_OK)
		return rc;
	if (td_run_is_final(run))
		rc = fail(err, TD_INVALID_ARGUMENT, strcmp(run->status, "cancelled") == 0 ?
		    "already cancelled" : strcmp(run->status, "failed") == 0 ?
		    "already failed" : "already completed");
	else if (strcmp(verb, "cancel") == 0)
		rc = td_cancel_run(w->client, run_id, opts, NULL, err);
	else if (run->attention.kind == NULL || strcmp(run->attention.kind, "plan-approval") != 0)
		rc = fail(err, TD_PLAN_NOT_PENDING, "no plan awaits approval");
	else if ((rc = td_get_session_plan(w->client, run->session_id, opts, &plan, err)) == TD_OK)
		rc = td_respond_session_plan(w->client, run->session_id, "approve", plan->version,
		    plan->revision, NULL, opts, NULL, err);
	td_plan_free(plan);
	td_run_free(run);
	return rc;
}

/* cancel, approve or rerun each run of job.text; every failure is said. */
static enum td_code
do_bulk(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	const char *verb = r->job.decision != NULL ? r->job.decision : "";
	char *ids = xstrdup(r->job.text != NULL ? r->job.text : ""), *save = NULL, *id;
	struct buf done, failed;

	buf_init(&done, 4096);
	buf_init(&failed, 4096);
	for (id = strtok_r(ids, " ", &save); id != NULL; id = strtok_r(NULL, " ", &save)) {
		struct td_error err = { 0 };
		char *new_run = NULL;

		if (bulk_one(w, verb, id, opts, &new_run, &err) == TD_OK) {
			r->done_count++;
			if (new_run != NULL)
				buf_printf(&done, "%s%s", done.len > 0 ? ", " : "", new_run);
		} else {
			r->failed_count++;
			buf_printf(&failed, "%s%s: %s", failed.len > 0 ? "; " : "", id, err.message);
		}
		free(new_run);
	}
	r->summary = xasprintf("%s%s%s%s", done.len > 0 ? "started " : "",
	    done.len > 0 ? done.data : "", done.len > 0 && failed.len > 0 ? "; " : "",
	    failed.len > 0 ? failed.data : "");
	buf_free(&done);
	buf_free(&failed);
	free(ids);
	return TD_OK;
}

/* Writes downloaded bytes to the open file of do_open_artifact. */
static enum td_code
open_write(void *ud, const void *data, size_t len)
{
	return fwrite(data, 1, len, ud) == len ? TD_OK : TD_IO_ERROR;
}

/* The artifact's bytes into the private file job.path (made by the loop, 0600). */
static enum td_code
do_open_artifact(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	FILE *fp = r->job.path != NULL ? fopen(r->job.path, "we") : NULL;
	enum td_code rc;

	if (fp == NULL)
		return fail(&r->err, TD_IO_ERROR, "cannot write the temporary file");
	rc = td_download_artifact(w->client, r->job.id, 0, open_write, fp, opts, NULL, &r->err);
	if (fclose(fp) != 0 && rc == TD_OK)
		rc = fail(&r->err, TD_IO_ERROR, "cannot write the temporary file");
	return rc;
}

static enum td_code
do_changes(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_get_run_changes(w->client, r->job.id, NULL, opts, &r->changes, &r->err);
}

static enum td_code
do_diff(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_get_run_diff(w->client, r->job.id, r->job.path, NULL, opts, &r->diff, NULL,
	    &r->err);
}

static enum td_code
do_revert(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_revert_run(w->client, r->job.id, r->job.force, opts, &r->revert, &r->err);
}

static enum td_code
do_attempts(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_get_attempts(w->client, r->job.id, opts, &r->attempts, &r->err);
}

static enum td_code
do_apply_attempt(struct worker *w, struct job_result *r, const struct td_request_options *opts)
{
	return td_apply_attempt(w->client, r->job.id, false, opts, &r->attempts, &r->err);
}

/* What each request job calls; JOB_DOWNLOAD has its own thread. */
static enum td_code (*const request_fns[])(struct worker *, struct job_result *,
    const struct td_request_options *) = {
	[JOB_DOCTOR] = do_doctor,
	[JOB_MODELS] = do_models,
	[JOB_PROJECTS] = do_projects,
	[JOB_SESSIONS] = do_sessions,
	[JOB_RUNS] = do_runs,
	[JOB_PROJECT_RUNS] = do_project_runs,
	[JOB_ATTENTION] = do_attention,
	[JOB_CONNECTORS] = do_connectors,
	[JOB_CONNECTOR_ENABLE] = do_connector_enable,
	[JOB_CONNECTOR_TEST] = do_connector_test,
	[JOB_CONNECTOR_LOGIN] = do_connector_login,
	[JOB_CHANGES] = do_changes,
	[JOB_DIFF] = do_diff,
	[JOB_REVERT] = do_revert,
	[JOB_ATTEMPTS] = do_attempts,
	[JOB_APPLY_ATTEMPT] = do_apply_attempt,
	[JOB_ARCHIVE] = do_archive,
	[JOB_DELETE_SESSION] = do_delete_session,
	[JOB_ARTIFACTS] = do_artifacts,
	[JOB_PLAN] = do_plan,
	[JOB_PERMISSIONS] = do_permissions,
	[JOB_HISTORY] = do_history,
	[JOB_START_RUN] = do_start_run,
	[JOB_CANCEL_RUN] = do_cancel_run,
	[JOB_RUN] = do_run,
	[JOB_PLAN_RESPOND] = do_plan_respond,
	[JOB_PERMISSION_ANSWER] = do_permission_answer,
	[JOB_BULK] = do_bulk,
	[JOB_OPEN_ARTIFACT] = do_open_artifact,
};

/* Runs one request job and posts its result. */
static void
run_request(struct wlane *lane, struct wnode *n)
{
	struct job_result *r = result_new(&n->job);
	struct td_request_options opts = { .timeout_ms = WORKER_REQUEST_MS,
	    .cancel = lane->cancel };
	size_t k = (size_t)n->job.kind;

	if (k < sizeof request_fns / sizeof request_fns[0] && request_fns[k] != NULL)
		r->code = request_fns[k](lane->w, r, &opts);
	else
		r->code = fail(&r->err, TD_INVALID_ARGUMENT, "not a request job");
	worker_post(lane->w, r);
}

/* --- downloads -------------------------------------------------------------- */

struct dl_progress {
	struct worker *w;
	const struct job *job;
	int64_t last_ms;
};

/* Reports progress at most every WORKER_PROGRESS_MS (and the start of the check). */
static void
dl_report(struct dl_progress *p, bool verifying, long long done, long long total)
{
	int64_t now = clock_mono_ms();
	struct job_result *r;

	if (p->last_ms != 0 && now - p->last_ms < WORKER_PROGRESS_MS &&
	    !(verifying && done == 0))
		return;
	p->last_ms = now;
	r = result_new(p->job);
	r->progress = true;
	r->verifying = verifying;
	r->done = done;
	r->total = total;
	worker_post(p->w, r);
}

static void
dl_progress(void *ud, long long done, long long total)
{
	dl_report(ud, false, done, total);
}

static void
dl_verify(void *ud, long long done, long long total)
{
	dl_report(ud, true, done, total);
}

/* Downloads an artifact into job.path, reporting progress. */
static void
run_download(struct wlane *lane, struct wnode *n)
{
	struct dl_progress p = { .w = lane->w, .job = &n->job };
	struct td_download_options dl = {
		.flags = n->job.overwrite ? TD_DOWNLOAD_OVERWRITE : 0,
		.progress = dl_progress,
		.progress_ud = &p,
		.verify_progress = dl_verify,
	};
	struct td_request_options opts = { .timeout_ms = WORKER_DOWNLOAD_MS,
	    .cancel = lane->cancel };
	struct td_download_info info;
	struct job_result *r = result_new(&n->job);

	memset(&info, 0, sizeof info);
	info.total_size = -1;
	if (n->job.kind != JOB_DOWNLOAD || n->job.path == NULL)
		r->code = fail(&r->err, TD_INVALID_ARGUMENT, "not a download job");
	else
		r->code = td_download_artifact_to_file(lane->w->client, n->job.id, n->job.path,
		    &dl, &opts, &info, &r->err);
	r->total = info.total_size;
	r->done = info.offset + info.received;
	worker_post(lane->w, r);
}

/* --- threads ---------------------------------------------------------------- */

/* A thread: takes its jobs in order until the worker stops. */
static void *
lane_main(void *arg)
{
	struct wlane *lane = arg;
	struct worker *w = lane->w;
	struct wnode *n;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->stopping && lane->jobs.head == NULL)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stopping)
			break;
		n = wqueue_pop(&lane->jobs);
		lane->cancel = td_cancel_new();
		pthread_mutex_unlock(&w->lock);
		lane->run(lane, n);
		wnode_free(n);
		pthread_mutex_lock(&w->lock);
		td_cancel_free(lane->cancel);
		lane->cancel = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Joins the thread and drops the jobs it did not take. */
static void
lane_stop(struct wlane *lane)
{
	struct wnode *n;

	if (lane->started)
		pthread_join(lane->thread, NULL);
	while ((n = wqueue_pop(&lane->jobs)) != NULL) {
		job_remove_private(&n->job);
		wnode_free(n);
	}
}

struct worker *
worker_new(struct td_client *client)
{
	struct worker *w = xcalloc(1, sizeof *w);

	w->client = client;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->requests = (struct wlane){ .w = w, .run = run_request };
	w->downloads = (struct wlane){ .w = w, .run = run_download };
	w->requests.started = pthread_create(&w->requests.thread, NULL, lane_main,
	    &w->requests) == 0;
	w->downloads.started = w->requests.started &&
	    pthread_create(&w->downloads.thread, NULL, lane_main, &w->downloads) == 0;
	if (!w->downloads.started) {
		worker_free(w);
		return NULL;
	}
	return w;
}

void
worker_free(struct worker *w)
{
	struct wnode *n;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	if (w->requests.cancel != NULL)
		td_cancel_trigger(w->requests.cancel);
	if (w->downloads.cancel != NULL)
		td_cancel_trigger(w->downloads.cancel);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	lane_stop(&w->requests);
	lane_stop(&w->downloads);
	while ((n = wqueue_pop(&w->results)) != NULL)
		wnode_free(n);
	close(w->efd);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int
worker_fd(const struct worker *w)
{
	return w->efd;
}

void
worker_submit(struct worker *w, const struct job *job)
{
	struct wnode *n = xcalloc(1, sizeof *n);

	job_copy(&n->job, job);
	pthread_mutex_lock(&w->lock);
	wqueue_push(job->kind == JOB_DOWNLOAD ? &w->downloads.jobs : &w->requests.jobs, n);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct job_result *
worker_take(struct worker *w)
{
	struct wnode *n;
	struct job_result *r = NULL;
	uint64_t count;

	pthread_mutex_lock(&w->lock);
	n = wqueue_pop(&w->results);
	if (w->results.head == NULL && read(w->efd, &count, sizeof count) < 0 && errno != EAGAIN)
		perror("taskdeck: worker eventfd");
	pthread_mutex_unlock(&w->lock);
	if (n != NULL) {
		r = n->result;
		n->result = NULL;
		wnode_free(n);
	}
	return r;
}

