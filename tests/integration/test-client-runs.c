/* libtaskdeck runs, sessions and artifacts against a real taskdeckd with replay transcripts. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "taskdeck.h"

TestSuite(client_runs, .init = svc_setup_env, .fini = svc_teardown, .timeout = 120);
TestSuite(client_runs_offline, .timeout = 120);

/* Starts a run of the replay transcript model in a new session. */
static struct td_run *
start_replay(struct td_client *c, const char *project, const char *model)
{
	struct td_run_request rq = {
		.project = project, .prompt = "Write a short report on local services.",
		.permission_profile = "workspace-write",
		.provider = "replay", .model = model,
	};
	struct td_run *r;
	struct td_error err;

	cr_assert_eq(td_start_run(c, &rq, NULL, &r, &err), TD_OK, "start %s: %s (%s)",
	    model, err.message, err.code_name);
	cr_assert_eq(strncmp(r->id, "run_", 4), 0, "run id %s", r->id);
	cr_assert_eq(strncmp(r->session_id, "ses_", 4), 0, "session id %s", r->session_id);
	cr_assert_str_eq(r->project_id, project);
	cr_assert_str_eq(r->config.provider, "replay");
	cr_assert_str_eq(r->config.model, model);
	return r;
}

/* Waits up to a minute for a run to end. */
static struct td_run *
wait_final(struct td_client *c, const char *run_id)
{
	struct td_wait_options w = { .timeout_ms = 60000 };
	struct td_run *r;
	struct td_error err;

	cr_assert_eq(td_wait_for_run(c, run_id, &w, &r, &err), TD_OK, "wait %s: %s",
	    run_id, err.message);
	cr_assert(td_run_is_final(r), "status %s", r->status);
	return r;
}

static void
assert_same_bytes(const char *a, size_t alen, const char *b, size_t blen,
    const char *what)
{
	cr_assert_eq(alen, blen, "%s: %zu bytes, expected %zu", what, alen, blen);
	cr_assert(memcmp(a, b, alen) == 0, "%s: the bytes differ", what);
}

/* The session's copy of an artifact in its workspace; free() it. */
static char *
workspace_bytes(struct td_client *c, const struct td_artifact *a, size_t *len)
{
	struct td_session *s;
	struct td_error err;
	char path[1024], *data;

	cr_assert_eq(td_get_session(c, a->session_id, NULL, &s, &err), TD_OK, "%s",
	    err.message);
	cr_assert_not_null(s->cwd);
	snprintf(path, sizeof path, "%s/%s", s->cwd, a->path);
	data = harness_slurp(path, len);
	cr_assert_not_null(data, "no %s in the workspace", path);
	td_session_free(s);
	return data;
}

/* The artifact called name in a list, or NULL. */
static const struct td_artifact *
find_artifact(const struct td_artifact_list *list, const char *name)
{
	for (size_t i = 0; i < list->count; i++) {
		if (strcmp(list->items[i].name, name) == 0)
			return &list->items[i];
	}
	return NULL;
}

struct membuf {
	char *data;
	size_t len;
	size_t stop_at;		/* stop with TD_CANCELLED once this many bytes came; 0: never */
	FILE *fp;		/* also write here when not NULL */
	int calls;
};

static enum td_code
membuf_write(void *ud, const void *data, size_t len)
{
	struct membuf *m = ud;

	m->calls++;
	if (m->stop_at > 0 && m->len + len > m->stop_at)
		len = m->stop_at - m->len;
	m->data = realloc(m->data, m->len + len + 1);
	memcpy(m->data + m->len, data, len);
	m->len += len;
	if (m->fp != NULL)
		cr_assert_eq(fwrite(data, 1, len, m->fp), len);
	return m->stop_at > 0 && m->len >= m->stop_at ? TD_CANCELLED : TD_OK;
}

/* A fresh directory under the service's home. */
static void
scratch_dir(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", svc.home, name);
	cr_assert(mkdir(out, 0700) == 0 || errno == EEXIST);
}

/* The spec's typical flow: connect, list projects, start, wait, list, download. */
Test(client_runs, typical_flow_research)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Research");
	struct td_project_list *projects;
	struct td_artifact_list *arts;
	const struct td_artifact *report;
	struct td_download_info info;
	struct membuf m = { 0 };
	struct td_run *r, *done;
	struct td_error err;
	char dir[512], file[600], *want, *got;
	size_t want_len, got_len;
	bool listed = false;

	cr_assert_eq(td_list_projects(c, 0, NULL, NULL, &projects, &err), TD_OK, "%s",
	    err.message);
	for (size_t i = 0; i < projects->count; i++)
		listed |= strcmp(projects->items[i].id, project) == 0;
	cr_assert(listed, "the new project is not listed");
	td_project_list_free(projects);

	r = start_replay(c, project, "research");
	cr_assert(strcmp(r->status, "queued") == 0 || strcmp(r->status, "running") == 0,
	    "first status %s", r->status);
	done = wait_final(c, r->id);
	cr_assert_str_eq(done->status, "completed", "error %s: %s", done->error_code,
	    done->error_message);
	cr_assert_not_null(done->output);
	cr_assert_gt(strlen(done->output), 0);
	cr_assert_null(done->error_code);
	cr_assert_null(done->attention.kind);
	cr_assert_not_null(done->finished_at);

	cr_assert_eq(td_list_artifacts(c, r->session_id, false, 0, NULL, NULL, &arts,
	    &err), TD_OK, "%s", err.message);
	report = find_artifact(arts, "report.md");
	cr_assert_not_null(report, "no report.md among %zu artifacts", arts->count);
	cr_assert_eq(strncmp(report->id, "art_", 4), 0);
	cr_assert_str_eq(report->run_id, r->id);
	cr_assert_eq(strncmp(report->version, "sha256:", 7), 0);
	want = workspace_bytes(c, report, &want_len);
	cr_assert_eq((long long)want_len, report->size);

	/* To a callback: streamed, whole body, ETag is the version. */
	cr_assert_eq(td_download_artifact(c, report->id, 0, membuf_write, &m, NULL,
	    &info, &err), TD_OK, "%s", err.message);
	assert_same_bytes(m.data, m.len, want, want_len, "callback download");
	cr_assert_eq(info.http_status, 200);
	cr_assert_eq(info.offset, 0);
	cr_assert_eq(info.total_size, report->size);
	cr_assert_eq(info.received, report->size);
	cr_assert_str_eq(info.etag, report->version);

	/* To a file: no .part left, an existing file is kept unless told. */
	scratch_dir(dir, sizeof dir, "out");
	snprintf(file, sizeof file, "%s/report.md", dir);
	cr_assert_eq(td_download_artifact_to_file(c, report->id, file, NULL, NULL, &info,
	    &err), TD_OK, "%s", err.message);
	got = harness_slurp(file, &got_len);
	assert_same_bytes(got, got_len, want, want_len, "file download");
	free(got);
	snprintf(file, sizeof file, "%s/report.md.part", dir);
	cr_assert(access(file, F_OK) != 0, "the .part stayed");
	snprintf(file, sizeof file, "%s/report.md", dir);
	cr_assert_eq(td_download_artifact_to_file(c, report->id, file, NULL, NULL, NULL,
	    &err), TD_IO_ERROR);
	cr_assert(strstr(err.message, "exists") != NULL, "%s", err.message);
	cr_assert_eq(td_download_artifact_to_file(c, report->id, file,
	    &(struct td_download_options){ .flags = TD_DOWNLOAD_OVERWRITE }, NULL, NULL,
	    &err), TD_OK, "%s", err.message);

	free(m.data);
	free(want);
	td_artifact_list_free(arts);
	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

Test(client_runs, get_and_list_runs_and_sessions)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Lists");
	struct td_run_filter by_session = { 0 }, by_failed = { 0 };
	struct td_session_list *sessions;
	struct td_run *r, *done, *got;
	struct td_run_list *runs;
	struct td_session *s;
	struct td_error err;

	r = start_replay(c, project, "quick");
	done = wait_final(c, r->id);
	cr_assert_str_eq(done->status, "completed");

	cr_assert_eq(td_get_run(c, r->id, NULL, &got, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(got->id, r->id);
	cr_assert_str_eq(got->status, "completed");
	cr_assert_str_eq(got->output, done->output);
	td_run_free(got);

	by_session.session_id = r->session_id;
	cr_assert_eq(td_list_runs(c, &by_session, 0, NULL, NULL, &runs, &err), TD_OK,
	    "%s", err.message);
	cr_assert_eq(runs->count, 1);
	cr_assert_str_eq(runs->items[0].id, r->id);
	cr_assert_null(runs->next_cursor);
	td_run_list_free(runs);
	by_failed.project_id = project;
	by_failed.status = "failed";
	cr_assert_eq(td_list_runs(c, &by_failed, 0, NULL, NULL, &runs, &err), TD_OK,
	    "%s", err.message);
	cr_assert_eq(runs->count, 0);
	td_run_list_free(runs);
	cr_assert_eq(td_list_runs(c, &(struct td_run_filter){ 0 }, 0, NULL, NULL, &runs,
	    &err), TD_INVALID_ARGUMENT);
	cr_assert_null(runs);

	cr_assert_eq(td_list_sessions(c, project, 0, NULL, NULL, &sessions, &err), TD_OK,
	    "%s", err.message);
	cr_assert_eq(sessions->count, 1);
	cr_assert_str_eq(sessions->items[0].id, r->session_id);
	td_session_list_free(sessions);
	cr_assert_eq(td_get_session(c, r->session_id, NULL, &s, &err), TD_OK, "%s",
	    err.message);
	cr_assert_str_eq(s->project_id, project);
	cr_assert_str_eq(s->workspace, "managed");
	cr_assert_str_eq(s->last_run.id, r->id);
	cr_assert_str_eq(s->last_run.status, "completed");
	cr_assert_eq(s->cwd[0], '/');
	td_session_free(s);

	cr_assert_eq(td_get_run(c, "run_000000000000000000000000", NULL, &got, &err),
	    TD_NOT_FOUND);
	cr_assert_eq(err.http_status, 404);
	cr_assert_neq(err.request_id[0], '\0');

	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

/* A run's stored history, a page at a time: what `runs logs` and the dashboard read. */
Test(client_runs, run_events_paged)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "History");
	struct td_run_event_list *all, *page;
	struct td_run *r, *done;
	struct td_error err;
	char after[64] = "";
	size_t seen = 0;

	r = start_replay(c, project, "quick");
	done = wait_final(c, r->id);
	cr_assert_eq(td_list_run_events(c, r->id, NULL, 0, NULL, &all, &err), TD_OK, "%s",
	    err.message);
	cr_assert_geq(all->count, 4, "%zu events", all->count);
	cr_assert_null(all->next_after);
	cr_assert_str_eq(all->items[0]->type, "run.queued");
	cr_assert_str_eq(all->items[0]->run_id, r->id);
	cr_assert_eq(strlen(all->items[0]->stream_id), 32);
	cr_assert_str_eq(all->items[all->count - 1]->type, "run.finished");
	/* Two at a time: the same events, in the same order, then no next page. */
	do {
		cr_assert_eq(td_list_run_events(c, r->id, after, 2, NULL, &page, &err), TD_OK,
		    "%s", err.message);
		cr_assert_leq(page->count, 2);
		for (size_t i = 0; i < page->count; i++, seen++) {
			cr_assert_lt(seen, all->count);
			cr_assert_eq(page->items[i]->seq, all->items[seen]->seq);
			cr_assert_str_eq(page->items[i]->type, all->items[seen]->type);
		}
		snprintf(after, sizeof after, "%s", page->next_after ? page->next_after : "");
		td_run_event_list_free(page);
	} while (after[0] != '\0');
	cr_assert_eq(seen, all->count);
	cr_assert_eq(td_list_run_events(c, "run_00000000000000000000000000", NULL, 0, NULL,
	    &page, &err), TD_NOT_FOUND);
	cr_assert_null(page);
	td_run_event_list_free(all);
	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

Test(client_runs, idempotent_start)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Idem");
	struct td_request_options opts = { .idempotency_key = "start-once-1" };
	struct td_run_request rq = {
		.project = project, .prompt = "once", .provider = "replay", .model = "quick",
	};
	struct td_run *a, *b, *fa, *fb;
	struct td_error err;

	cr_assert_eq(td_start_run(c, &rq, &opts, &a, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_start_run(c, &rq, &opts, &b, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(a->id, b->id);
	cr_assert_str_eq(a->session_id, b->session_id);
	rq.prompt = "twice";
	cr_assert_eq(td_start_run(c, &rq, &opts, &fa, &err), TD_IDEMPOTENCY_CONFLICT);
	fa = wait_final(c, a->id);
	fb = wait_final(c, b->id);
	td_run_free(fa);
	td_run_free(fb);
	td_run_free(a);
	td_run_free(b);
	free(project);
	td_client_free(c);
}

Test(client_runs, failed_run_has_error)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Fail");
	struct td_run *r = start_replay(c, project, "fail");
	struct td_run *done = wait_final(c, r->id);

	cr_assert_str_eq(done->status, "failed");
	cr_assert_not_null(done->error_code);
	cr_assert_not_null(done->error_message);
	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

/* A wait timeout returns in time and leaves the run running. */
Test(client_runs, wait_timeout_leaves_run_running)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Slow");
	struct td_run *r = start_replay(c, project, "slow");
	struct td_wait_options w = { .timeout_ms = 1500 };
	struct td_run *out = (struct td_run *)1, *now, *done;
	struct td_error err;
	long t0 = mono_ms(), took;

	cr_assert_eq(td_wait_for_run(c, r->id, &w, &out, &err), TD_TIMEOUT, "%s",
	    err.message);
	took = mono_ms() - t0;
	cr_assert_null(out);
	cr_assert_geq(took, 1450, "returned after %ld ms", took);
	cr_assert_leq(took, 2000, "returned after %ld ms", took);
	cr_assert(strstr(err.message, r->id) != NULL, "%s", err.message);
	cr_assert(strstr(err.message, "goes on") != NULL, "%s", err.message);

	cr_assert_eq(td_get_run(c, r->id, NULL, &now, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(now->status, "running");
	cr_assert_null(now->cancel_requested_at);
	td_run_free(now);

	cr_assert_eq(td_cancel_run(c, r->id, NULL, &now, &err), TD_OK, "%s", err.message);
	cr_assert_not_null(now->cancel_requested_at);
	td_run_free(now);
	cr_assert_eq(td_cancel_run(c, r->id, NULL, NULL, &err), TD_OK, "%s", err.message);
	done = wait_final(c, r->id);
	cr_assert_str_eq(done->status, "cancelled");
	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

struct trigger {
	struct td_cancel *cancel;
	long after_ms;
};

static void *
trigger_later(void *arg)
{
	struct trigger *t = arg;

	usleep((useconds_t)t->after_ms * 1000);
	td_cancel_trigger(t->cancel);
	return NULL;
}

/*
 * td_cancel during a wait ends the wait at once, not the run.  By 2.6 s the
 * poll delays are near 1 s, so only a wait that watches the token (not one
 * that sleeps) returns within 300 ms.
 */
Test(client_runs, wait_cancelled_promptly)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Cancel");
	struct td_run *r = start_replay(c, project, "slow");
	struct trigger t = { .cancel = td_cancel_new(), .after_ms = 2600 };
	struct td_wait_options w = { .cancel = t.cancel };
	struct td_run *out, *now;
	struct td_error err;
	pthread_t th;
	long t0, took;

	cr_assert_not_null(t.cancel);
	t0 = mono_ms();
	pthread_create(&th, NULL, trigger_later, &t);
	cr_assert_eq(td_wait_for_run(c, r->id, &w, &out, &err), TD_CANCELLED, "%s",
	    err.message);
	took = mono_ms() - t0;
	pthread_join(th, NULL);
	cr_assert_geq(took, t.after_ms - 10);
	cr_assert_leq(took, t.after_ms + 300, "returned %ld ms after the trigger",
	    took - t.after_ms);
	cr_assert_eq(td_get_run(c, r->id, NULL, &now, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(now->status, "running");
	td_run_free(now);
	cr_assert_eq(td_cancel_run(c, r->id, NULL, NULL, &err), TD_OK, "%s", err.message);
	now = wait_final(c, r->id);
	cr_assert_str_eq(now->status, "cancelled");
	td_run_free(now);
	td_cancel_free(t.cancel);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

/* A completed run may have saved nothing; an unknown artifact is not found. */
Test(client_runs, missing_artifact)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Nothing");
	struct td_run *r = start_replay(c, project, "no-artifact");
	struct td_run *done = wait_final(c, r->id);
	const char *unknown = "art_000000000000000000000000";
	struct td_artifact_list *arts;
	struct td_download_info info;
	struct td_artifact *a;
	struct membuf m = { 0 };
	struct td_error err;
	char dir[512], file[600];

	cr_assert_str_eq(done->status, "completed");
	cr_assert_eq(td_list_artifacts(c, r->session_id, true, 0, NULL, NULL, &arts, &err),
	    TD_OK, "%s", err.message);
	cr_assert_eq(arts->count, 0);
	td_artifact_list_free(arts);

	cr_assert_eq(td_get_artifact(c, unknown, NULL, &a, &err), TD_NOT_FOUND);
	cr_assert_null(a);
	cr_assert_eq(td_download_artifact(c, unknown, 0, membuf_write, &m, NULL, &info,
	    &err), TD_NOT_FOUND);
	cr_assert_eq(err.http_status, 404);
	cr_assert_str_eq(err.code_name, "not_found");
	cr_assert_neq(err.request_id[0], '\0');
	cr_assert_eq(info.http_status, 404);
	cr_assert_eq(m.calls, 0, "the error body reached the callback");
	cr_assert_null(strstr(err.message, svc.token));

	scratch_dir(dir, sizeof dir, "none");
	snprintf(file, sizeof file, "%s/x.md", dir);
	cr_assert_eq(td_download_artifact_to_file(c, unknown, file, NULL, NULL, NULL,
	    &err), TD_NOT_FOUND);
	cr_assert(access(file, F_OK) != 0);
	snprintf(file, sizeof file, "%s/x.md.part", dir);
	cr_assert(access(file, F_OK) != 0, "an empty .part stayed");
	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

/* The first artifact of a finished research run (largest first); caller frees the list. */
static const struct td_artifact *
research_artifact(struct td_client *c, const char *project,
    struct td_artifact_list **arts)
{
	struct td_run *r = start_replay(c, project, "research");
	struct td_run *done = wait_final(c, r->id);
	const struct td_artifact *best = NULL;
	struct td_error err;

	cr_assert_str_eq(done->status, "completed");
	cr_assert_eq(td_list_artifacts(c, r->session_id, false, 0, NULL, NULL, arts, &err),
	    TD_OK, "%s", err.message);
	for (size_t i = 0; i < (*arts)->count; i++) {
		if (best == NULL || (*arts)->items[i].size > best->size)
			best = &(*arts)->items[i];
	}
	cr_assert_not_null(best, "the research run saved nothing");
	cr_assert_geq(best->size, 2, "%s is too small to interrupt", best->name);
	td_run_free(done);
	td_run_free(r);
	return best;
}

/* Writes the sidecar of a .part: "taskdeck-part 1 <artifact id> <version>". */
static void
write_meta(const char *part, const char *artifact_id, const char *version)
{
	char meta[700];
	FILE *fp;

	snprintf(meta, sizeof meta, "%s.meta", part);
	fp = fopen(meta, "w");
	cr_assert_not_null(fp);
	fprintf(fp, "taskdeck-part 1 %s %s\n", artifact_id, version);
	cr_assert_eq(fclose(fp), 0);
}

/* Writes len bytes of c into path. */
static void
write_garbage(const char *path, size_t len, int ch)
{
	FILE *fp = fopen(path, "wb");

	cr_assert_not_null(fp);
	for (size_t i = 0; i < len; i++)
		fputc(ch, fp);
	cr_assert_eq(fclose(fp), 0);
}

/*
 * A .part the download did not write for this artifact is never resumed:
 * without a sidecar, with another artifact's sidecar, the whole file comes
 * again (200) and the bytes are the version's.  A sidecar that names this
 * artifact over bytes that are not its version: the sha256 check catches
 * them and the whole file is fetched again.
 */
Test(client_runs, download_never_trusts_a_foreign_part)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Foreign");
	struct td_artifact_list *arts;
	const struct td_artifact *a = research_artifact(c, project, &arts);
	struct td_download_info info;
	struct td_error err;
	char dir[512], file[600], part[620], meta[640], *want, *got;
	size_t want_len, got_len;
	static const char *const cases[] = { "no sidecar", "another artifact",
	    "garbage under a right sidecar" };

	want = workspace_bytes(c, a, &want_len);
	scratch_dir(dir, sizeof dir, "foreign");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(file, sizeof file, "%s/%zu-%s", dir, i, a->name);
		snprintf(part, sizeof part, "%s.part", file);
		snprintf(meta, sizeof meta, "%s.meta", part);
		write_garbage(part, (size_t)a->size / 2, 'x');
		if (i == 1)
			write_meta(part, "art_01JAAAAAAAAAAAAAAAAAAAAAAA", a->version);
		if (i == 2)
			write_meta(part, a->id, a->version);
		cr_assert_eq(td_download_artifact_to_file(c, a->id, file, NULL, NULL, &info,
		    &err), TD_OK, "%s: %s", cases[i], err.message);
		cr_assert_eq(info.http_status, 200, "%s: HTTP %ld", cases[i], info.http_status);
		got = harness_slurp(file, &got_len);
		assert_same_bytes(got, got_len, want, want_len, cases[i]);
		cr_assert(access(part, F_OK) != 0, "%s: the .part stayed", cases[i]);
		cr_assert(access(meta, F_OK) != 0, "%s: the sidecar stayed", cases[i]);
		free(got);
	}
	free(want);
	td_artifact_list_free(arts);
	free(project);
	td_client_free(c);
}

/* An interrupted download leaves a .part that the next download resumes. */
Test(client_runs, download_resumes_part)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Resume");
	struct td_artifact_list *arts;
	const struct td_artifact *a = research_artifact(c, project, &arts);
	struct membuf m = { .stop_at = (size_t)a->size / 2 };
	struct td_download_info info;
	struct td_error err;
	char dir[512], file[600], part[620], meta[640], *want, *got;
	size_t want_len, got_len;
	struct stat st;

	want = workspace_bytes(c, a, &want_len);
	scratch_dir(dir, sizeof dir, "resume");
	snprintf(file, sizeof file, "%s/%s", dir, a->name);
	snprintf(part, sizeof part, "%s.part", file);
	m.fp = fopen(part, "wb");
	cr_assert_not_null(m.fp);
	cr_assert_eq(td_download_artifact(c, a->id, 0, membuf_write, &m, NULL, &info,
	    &err), TD_CANCELLED);
	cr_assert(strstr(err.message, a->id) != NULL, "%s", err.message);
	cr_assert_leq(info.received, (long long)m.stop_at);
	fclose(m.fp);
	cr_assert(stat(part, &st) == 0 && st.st_size == (off_t)m.stop_at);
	/* The sidecar a download to a file writes: this artifact, this version. */
	write_meta(part, a->id, a->version);

	cr_assert_eq(td_download_artifact_to_file(c, a->id, file, NULL, NULL, &info, &err),
	    TD_OK, "%s", err.message);
	cr_assert_eq(info.http_status, 206, "resumed with HTTP %ld", info.http_status);
	cr_assert_eq(info.offset, (long long)m.stop_at);
	cr_assert_eq(info.received, a->size - (long long)m.stop_at);
	cr_assert_eq(info.total_size, a->size);
	got = harness_slurp(file, &got_len);
	assert_same_bytes(got, got_len, want, want_len, "resumed download");
	cr_assert(access(part, F_OK) != 0, "the .part stayed");
	snprintf(meta, sizeof meta, "%s.meta", part);
	cr_assert(access(meta, F_OK) != 0, "the sidecar stayed");
	free(got);

	/* The range request on its own. */
	free(m.data);
	memset(&m, 0, sizeof m);
	cr_assert_eq(td_download_artifact(c, a->id, 1, membuf_write, &m, NULL, &info,
	    &err), TD_OK, "%s", err.message);
	cr_assert_eq(info.http_status, 206);
	assert_same_bytes(m.data, m.len, want + 1, want_len - 1, "range from byte 1");

	free(m.data);
	free(want);
	td_artifact_list_free(arts);
	free(project);
	td_client_free(c);
}

/* A .part that cannot be a prefix of the artifact is thrown away, not trusted. */
Test(client_runs, download_restarts_oversized_part)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Restart");
	struct td_artifact_list *arts;
	const struct td_artifact *a = research_artifact(c, project, &arts);
	struct td_download_info info;
	struct td_error err;
	char dir[512], file[600], part[620], *want, *got;
	size_t want_len, got_len;
	FILE *fp;

	want = workspace_bytes(c, a, &want_len);
	scratch_dir(dir, sizeof dir, "restart");
	snprintf(file, sizeof file, "%s/%s", dir, a->name);
	snprintf(part, sizeof part, "%s.part", file);
	fp = fopen(part, "wb");
	cr_assert_not_null(fp);
	for (long long i = 0; i < a->size + 10; i++)
		fputc('x', fp);
	fclose(fp);
	cr_assert_eq(td_download_artifact_to_file(c, a->id, file, NULL, NULL, &info, &err),
	    TD_OK, "%s", err.message);
	cr_assert_eq(info.http_status, 200);
	got = harness_slurp(file, &got_len);
	assert_same_bytes(got, got_len, want, want_len, "restarted download");
	free(got);
	free(want);
	td_artifact_list_free(arts);
	free(project);
	td_client_free(c);
}

Test(client_runs, session_config_revisions)
{
	struct td_client *c = client_connect();
	char *project = client_new_project(c, "Config");
	struct td_run *r = start_replay(c, project, "quick");
	struct td_run *done = wait_final(c, r->id);
	struct td_session_config *cfg, *upd;
	struct td_error err;

	cr_assert_eq(td_get_session_config(c, r->session_id, NULL, &cfg, &err), TD_OK,
	    "%s", err.message);
	cr_assert_eq(cfg->revision, 1);
	cr_assert_str_eq(cfg->session_id, r->session_id);
	cr_assert_str_eq(cfg->provider, "replay");
	cr_assert_str_eq(cfg->model, "quick");

	cr_assert_eq(td_update_session_config(c, r->session_id, cfg->revision,
	    "{\"effort\":\"high\"}", NULL, &upd, &err), TD_OK, "%s", err.message);
	cr_assert_eq(upd->revision, 2);
	cr_assert_str_eq(upd->effort, "high");
	cr_assert_str_eq(upd->model, "quick", "an omitted key is kept");
	td_session_config_free(upd);

	cr_assert_eq(td_update_session_config(c, r->session_id, cfg->revision,
	    "{\"effort\":\"low\"}", NULL, &upd, &err), TD_STALE_WRITE);
	cr_assert_null(upd);
	cr_assert_eq(err.http_status, 409);
	cr_assert_eq(td_update_session_config(c, r->session_id, 2,
	    "{\"provider\":\"no-such-provider\"}", NULL, &upd, &err),
	    TD_INVALID_CONFIGURATION);
	cr_assert_eq(err.http_status, 422);
	cr_assert_eq(td_update_session_config(c, r->session_id, 2, "[1]", NULL, &upd,
	    &err), TD_INVALID_ARGUMENT);

	cr_assert_eq(td_update_session_config(c, r->session_id, 2, "{\"effort\":null}",
	    NULL, &upd, &err), TD_OK, "%s", err.message);
	cr_assert_eq(upd->revision, 3);
	cr_assert_null(upd->effort);
	td_session_config_free(upd);

	td_session_config_free(cfg);
	td_run_free(done);
	td_run_free(r);
	free(project);
	td_client_free(c);
}

/* Connection failures during a wait are retried until the deadline. */
Test(client_runs_offline, wait_retries_until_deadline)
{
	char url[64];
	struct td_connect_options copts = {
		.base_url = url,
		.token = "0000000000000000000000000000000000000000000000000000000000000000",
	};
	struct td_wait_options w = { .timeout_ms = 800 };
	struct td_client *c;
	struct td_run *r;
	struct td_error err;
	long t0, took;

	snprintf(url, sizeof url, "http://127.0.0.1:%d", harness_closed_port());
	cr_assert_eq(td_connect(&c, &copts, &err), TD_OK, "%s", err.message);
	t0 = mono_ms();
	cr_assert_eq(td_wait_for_run(c, "run_000000000000000000000000", &w, &r, &err),
	    TD_TIMEOUT, "%s: %s", err.code_name, err.message);
	took = mono_ms() - t0;
	cr_assert_geq(took, 780);
	cr_assert_leq(took, 1300, "returned after %ld ms", took);
	td_client_free(c);
}
