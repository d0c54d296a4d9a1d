/*
 * A full disk (issue 17, finding 3).  Run in the full-disk rig, which gives
 * this program a 64 MiB tmpfs of its own (tests/integration/fulldisk.sh; make
 * check runs tests/integration/test-fulldisk.sh).  With the disk full, creates
 * and updates answer 507 insufficient_storage, reads still answer, an artifact save says
 * the disk is full and doctor is not ready; once the disk has room again the
 * same service takes writes, with no restart, and nothing acknowledged is lost
 * (PRAGMA integrity_check is ok).  Runs that finish while the disk is full are
 * finalized once it has room again, and a cancel works meanwhile.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "artifacts.h"
#include "harness.h"
#include "log.h"
#include "service.h"
#include "store.h"

/* A test that failed with the disk full leaves room for the next one. */
static void
free_leftover(void)
{
	const char *dir = getenv("TD_FULLDISK_DIR");
	char path[512];

	if (dir != NULL) {
		snprintf(path, sizeof path, "%s/.fill", dir);
		unlink(path);
	}
}

TestSuite(fulldisk, .init = free_leftover, .timeout = 120);

#define MAX_CREATES 400

static const char *
rig_dir(void)
{
	const char *dir = getenv("TD_FULLDISK_DIR");

	cr_assert(dir != NULL && *dir != '\0',
	    "TD_FULLDISK_DIR is not set: run this through tests/integration/fulldisk.sh "
	    "(make check runs tests/integration/test-fulldisk.sh)");
	return dir;
}

/* The status of doctor's check id, and whether doctor says ready. */
static char *
doctor_check(const struct svc *s, const char *id, bool *ready)
{
	struct http_resp r = http_req(s, "GET", "/api/v1/doctor", NULL, NULL, true);
	const cJSON *c;
	char *status = NULL;

	cr_assert_eq(r.status, 200, "doctor: %ld %s", r.status, r.body);
	*ready = cJSON_IsTrue(cJSON_GetObjectItem(r.json, "ready"));
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(r.json, "checks")) {
		const char *cid = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
		if (cid != NULL && strcmp(cid, id) == 0)
			status = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")));
	}
	cr_assert_not_null(status, "doctor has no %s check: %s", id, r.body);
	http_resp_free(&r);
	return status;
}

/* POST /projects; the id of a 201, or NULL with *resp kept for the caller. */
static char *
create_project(const struct svc *s, int n, const char *idem, struct http_resp *resp)
{
	char body[256], header[128];
	const char *extra[] = { header, NULL };
	char *id = NULL;

	snprintf(body, sizeof body, "{\"name\":\"p%d\",\"description\":\"%0100d\"}", n, n);
	snprintf(header, sizeof header, "Idempotency-Key: %s", idem ? idem : "");
	*resp = http_req(s, "POST", "/api/v1/projects", body, idem ? extra : NULL, true);
	if (resp->status == 201)
		id = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(resp->json, "id")));
	return id;
}

Test(fulldisk, service_refuses_writes_then_recovers)
{
	const char *dir = rig_dir();
	char *acked[MAX_CREATES + 8], *fill, *status, *db_path;
	int nacked = 0, refused = 0;
	bool ready_before, ready;
	struct http_resp r;
	struct svc s;

	svc_start(&s);
	cr_assert(strncmp(s.home, dir, strlen(dir)) == 0, "home %s is not on the rig", s.home);
	free(doctor_check(&s, "disk-space", &ready_before));
	for (int i = 0; i < 5; i++) {
		acked[nacked] = create_project(&s, i, NULL, &r);
		cr_assert_not_null(acked[nacked], "create %d: %ld %s", i, r.status, r.body);
		nacked++;
		http_resp_free(&r);
	}

	fill = harness_fill_disk(dir);
	/* Creates: every one either stored (201) or refused with 507, never a 500. */
	for (int i = 0; i < MAX_CREATES && refused < 3; i++) {
		char *id = create_project(&s, 100 + i, NULL, &r);

		if (id != NULL) {
			acked[nacked++] = id;
		} else {
			cr_assert_eq(r.status, 507, "create on a full disk: %ld %s", r.status, r.body);
			cr_assert_str_eq(http_error_code(&r), "insufficient_storage");
			cr_assert(strstr(r.body, "full") != NULL, "%s", r.body);
			refused++;
		}
		http_resp_free(&r);
	}
	cr_assert_eq(refused, 3, "%d creates on a full disk were all stored", MAX_CREATES);
	/* A keyed create is refused the same way, and not remembered as done. */
	cr_assert_null(create_project(&s, 900, "full-disk-key", &r));
	cr_assert_eq(r.status, 507, "keyed create on a full disk: %ld %s", r.status, r.body);
	http_resp_free(&r);
	/* A run: its session, workspace and row cannot be made either. */
	char run_body[160];
	snprintf(run_body, sizeof run_body, "{\"project\":\"%s\",\"prompt\":\"hello\"}", acked[0]);
	r = http_req(&s, "POST", "/api/v1/runs", run_body, NULL, true);
	cr_assert_eq(r.status, 507, "run on a full disk: %ld %s", r.status, r.body);
	cr_assert_str_eq(http_error_code(&r), "insufficient_storage");
	http_resp_free(&r);
	/* A connector and a credential (sealed with secret.key) are refused alike. */
	static const char *const others[][2] = {
		{ "/api/v1/connectors", "{\"name\":\"full\",\"transport\":{\"type\":\"stdio\","
		  "\"command\":\"true\"}}" },
		{ "/api/v1/credentials", "{\"name\":\"full\",\"kind\":\"bearer\","
		  "\"secret\":\"s3cret-value\"}" },
	};
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		r = http_req(&s, "POST", others[i][0], others[i][1], NULL, true);
		cr_assert_eq(r.status, 507, "POST %s on a full disk: %ld %s", others[i][0], r.status,
		    r.body);
		cr_assert(strstr(r.body, "s3cret") == NULL);
		http_resp_free(&r);
	}
	/* An update is refused too, and leaves the project as it was. */
	char ppath[96];
	snprintf(ppath, sizeof ppath, "/api/v1/projects/%s", acked[0]);
	r = http_req(&s, "PATCH", ppath, "{\"name\":\"renamed on a full disk\"}", NULL, true);
	cr_assert_eq(r.status, 507, "PATCH on a full disk: %ld %s", r.status, r.body);
	http_resp_free(&r);
	r = http_req(&s, "GET", ppath, NULL, NULL, true);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r.json, "name")), "p0");
	http_resp_free(&r);
	/* Reads still answer. */
	r = http_req(&s, "GET", "/api/v1/projects?limit=1000", NULL, NULL, true);
	cr_assert_eq(r.status, 200, "list on a full disk: %ld %s", r.status, r.body);
	http_resp_free(&r);
	status = doctor_check(&s, "disk-space", &ready);
	cr_assert_str_eq(status, "fail", "disk-space on a full disk: %s", status);
	cr_assert(!ready, "doctor is ready on a full disk");
	free(status);

	/* Room again: the same service takes writes, without a restart. */
	harness_free_disk(fill);
	acked[nacked] = create_project(&s, 900, "full-disk-key", &r);
	cr_assert_not_null(acked[nacked], "keyed create after the disk freed: %ld %s", r.status,
	    r.body);
	cr_assert_null(http_header(&r, "Idempotent-Replayed"));
	nacked++;
	http_resp_free(&r);
	acked[nacked] = create_project(&s, 901, NULL, &r);
	cr_assert_not_null(acked[nacked], "create after the disk freed: %ld %s", r.status, r.body);
	nacked++;
	http_resp_free(&r);
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		r = http_req(&s, "POST", others[i][0], others[i][1], NULL, true);
		cr_assert_eq(r.status, 201, "POST %s after the disk freed: %ld %s", others[i][0],
		    r.status, r.body);
		http_resp_free(&r);
	}
	status = doctor_check(&s, "disk-space", &ready);
	cr_assert_str_neq(status, "fail", "disk-space after the disk freed");
	cr_assert_eq(ready, ready_before, "doctor's ready after the disk freed");
	free(status);

	/* Every acknowledged create is there, after a restart too, and the file is sound. */
	svc_stop(&s);
	svc_restart(&s);
	for (int i = 0; i < nacked; i++) {
		char path[96];

		snprintf(path, sizeof path, "/api/v1/projects/%s", acked[i]);
		r = http_req(&s, "GET", path, NULL, NULL, true);
		cr_assert_eq(r.status, 200, "acknowledged project %s: %ld", acked[i], r.status);
		http_resp_free(&r);
		free(acked[i]);
	}
	svc_stop(&s);
	cr_assert(asprintf(&db_path, "%s/taskdeck.db", s.home) > 0);
	sqlite3 *db;
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(db_path);
	svc_destroy(&s);
}

/*
 * The agent's save_artifact reaches artifacts_save through artifact.save
 * (docs/host-protocol.md); the model reads the message of its error.
 */
Test(fulldisk, artifact_save_says_the_disk_is_full)
{
	const char *dir = rig_dir();
	char base[256], ws[300], db[300], *err = NULL, *msg = NULL, *fill, file[320];
	struct service service = { 0 };
	cJSON *params, *res = NULL;
	FILE *devnull = fopen("/dev/null", "w");
	int fd;

	cr_assert(sodium_init() >= 0);
	log_init("test-fulldisk", devnull, LOG_LEVEL_ERROR);
	snprintf(base, sizeof base, "%s/art-XXXXXX", dir);
	cr_assert_not_null(mkdtemp(base));
	snprintf(ws, sizeof ws, "%s/ws", base);
	cr_assert_eq(mkdir(ws, 0700), 0);
	snprintf(db, sizeof db, "%s/taskdeck.db", base);
	cr_assert(asprintf(&service.paths.artifacts, "%s/artifacts", base) > 0);
	service.store = store_open(db, &err);
	cr_assert_not_null(service.store, "store: %s", err);
	cr_assert_eq(sqlite3_exec(store_lock(service.store),
	    "INSERT INTO projects (id, name, description, context, metadata, created_at,"
	    " updated_at) VALUES ('prj_000000000000000000000001', 'p', '', '', '{}', 1, 1);"
	    "INSERT INTO sessions (id, project_id, title, cwd, workspace, config,"
	    " config_updated_at, created_at, updated_at) VALUES ('ses_000000000000000000000001',"
	    " 'prj_000000000000000000000001', 't', '/tmp', 'managed', '{}', 1, 1, 1);"
	    "INSERT INTO runs (id, session_id, project_id, status, prompt, permission_profile,"
	    " config, cwd, created_at, updated_at) VALUES ('run_000000000000000000000001',"
	    " 'ses_000000000000000000000001', 'prj_000000000000000000000001', 'running', 'x',"
	    " 'workspace-write', '{}', '/tmp', 1, 1);", NULL, NULL, NULL), SQLITE_OK);
	store_unlock(service.store);
	/* A file of 256 KiB in the workspace, written while there is room. */
	snprintf(file, sizeof file, "%s/report.bin", ws);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < 64; i++) {
		char block[4096];
		memset(block, 'a' + i % 26, sizeof block);
		cr_assert_eq(write(fd, block, sizeof block), (ssize_t)sizeof block);
	}
	close(fd);
	params = cJSON_Parse("{\"path\":\"report.bin\"}");

	fill = harness_fill_disk(dir);
	enum td_code code = artifacts_save(&service, "run_000000000000000000000001",
	    "ses_000000000000000000000001", ws, NULL, params, &res, &msg);
	cr_assert_eq(code, TD_INSUFFICIENT_STORAGE, "save on a full disk: %s (%s)",
	    errcode_name(code), msg ? msg : "");
	cr_assert(msg != NULL && strstr(msg, "the disk is full") != NULL, "message: %s", msg);
	cr_assert(strstr(msg, base) == NULL, "the message names a path: %s", msg);
	cr_assert_null(res);
	free(msg);
	msg = NULL;

	harness_free_disk(fill);
	code = artifacts_save(&service, "run_000000000000000000000001",
	    "ses_000000000000000000000001", ws, NULL, params, &res, &msg);
	cr_assert_eq(code, TD_OK, "save after the disk freed: %s", msg ? msg : "");
	cJSON_Delete(res);
	cJSON_Delete(params);
	free(msg);
	store_close(service.store);
	free(service.paths.artifacts);
	fclose(devnull);
}

/*
 * Issue 17, finding 3 (moved here from test-durable): runs that finish while
 * the disk is full are not left running for ever.  Their final state is
 * retried until it is stored (one completes once there is room again), a
 * cancel meanwhile answers 200 and takes effect (the other ends cancelled),
 * and the session takes a new run.
 */
#define RUN_FINAL_MS 40000
#define RUN_OUTPUT_MS 20000

/*
 * The events published while the disk was full are missing from the run's
 * history: a run.history-gap stored afterwards says how many and where, and
 * no stored event of the run falls inside that range.
 */
static void
expect_history_gap(const struct svc *s, const char *run_id)
{
	cJSON *h = http_get_json(s, "/api/v1/runs/%s/events?limit=1000", run_id), *e;
	const cJSON *gap = NULL;
	double first, last;

	cJSON_ArrayForEach(e, h)
		if (gap == NULL && strcmp(json_str_or_none(e, "type"), "run.history-gap") == 0)
			gap = cJSON_GetObjectItem(e, "data");
	cr_assert_not_null(gap, "run %s lost events on the full disk, its history says "
	    "nothing of it (%d events stored)", run_id, cJSON_GetArraySize(h));
	first = cJSON_GetNumberValue(cJSON_GetObjectItem(gap, "firstSeq"));
	last = cJSON_GetNumberValue(cJSON_GetObjectItem(gap, "lastSeq"));
	cr_expect_gt(cJSON_GetNumberValue(cJSON_GetObjectItem(gap, "events")), 0);
	cr_expect(first > 0 && first <= last, "firstSeq %g, lastSeq %g", first, last);
	cr_expect(strstr(json_str_or_none(gap, "reason"), "missing") != NULL);
	cJSON_ArrayForEach(e, h) {
		double seq = cJSON_GetNumberValue(cJSON_GetObjectItem(e, "seq"));

		/* One stream: the service is not restarted. */
		cr_expect(seq < first || seq > last, "event %g is stored, inside the gap %g-%g",
		    seq, first, last);
	}
	cJSON_Delete(h);
}

Test(fulldisk, runs_finishing_on_a_full_disk)
{
	const char *dir = rig_dir(), *ida, *idb;
	char *project, *fill, path[128];
	cJSON *a, *b, *r;
	struct http_resp h;
	struct svc s;

	svc_start(&s);
	cr_assert(strncmp(s.home, dir, strlen(dir)) == 0, "home %s is not on the rig", s.home);
	project = http_project_new(&s, "durable");
	a = http_replay_run(&s, "do it", project, "steady", "");
	b = http_replay_run(&s, "do it", project, "steady", "");
	ida = json_str_or_none(a, "id");
	idb = json_str_or_none(b, "id");
	run_output_wait(&s, ida, RUN_OUTPUT_MS, "tick 1\n");
	run_output_wait(&s, idb, RUN_OUTPUT_MS, "tick 1\n");
	fill = harness_fill_disk(dir);
	/* Both agents finish meanwhile (steady takes 6 s); their final state cannot be written. */
	sleep(8);
	r = http_get_json(&s, "/api/v1/runs/%s", ida);
	cr_expect_str_eq(json_str_or_none(r, "status"), "running", "a run final on a full disk?");
	cJSON_Delete(r);
	snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", idb);
	h = http_api(&s, "POST", path, NULL);
	cr_expect_eq(h.status, 200, "cancel on a full disk: %ld %s", h.status, h.body);
	http_resp_free(&h);
	harness_free_disk(fill);
	cJSON_Delete(run_final_within(&s, ida, "completed", RUN_FINAL_MS));
	cJSON_Delete(run_final_within(&s, idb, "cancelled", RUN_FINAL_MS));
	expect_history_gap(&s, ida);
	expect_history_gap(&s, idb);
	r = http_replay_run(&s, "do it", project, "quick", "");
	cJSON_Delete(run_final_within(&s, json_str_or_none(r, "id"), "completed", RUN_FINAL_MS));
	cJSON_Delete(r);
	svc_stop(&s);
	svc_destroy(&s);
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(project);
}

/* The changes of run id, asserting GET answers 200 within a second. */
static cJSON *
changes_within_a_second(const struct svc *s, const char *id)
{
	char path[128];
	long t0 = mono_ms();
	struct http_resp r;
	cJSON *c;

	snprintf(path, sizeof path, "/api/v1/runs/%s/changes", id);
	r = http_req(s, "GET", path, NULL, NULL, true);
	cr_assert_eq(r.status, 200, "changes on a full disk: %ld %s", r.status, r.body);
	cr_expect_lt(mono_ms() - t0, 1000, "changes took %ld ms", mono_ms() - t0);
	c = cJSON_Duplicate(r.json, 1);
	http_resp_free(&r);
	return c;
}

Test(fulldisk, a_snapshot_failing_on_a_full_disk_makes_the_changes_incomplete)
{
	const char *dir = rig_dir(), *build = getenv("TD_BUILDDIR");
	char base[PATH_MAX], replay[PATH_MAX + 16], ws[PATH_MAX + 16], path[PATH_MAX + 64];
	char *project, *fill, *text;
	const char *why;
	cJSON *run, *c;
	struct svc s;
	long until;
	FILE *f;

	/* The workspace and the transcript on the real disk; the service's home on the rig. */
	cr_assert_not_null(build);
	snprintf(base, sizeof base, "%s/fulldisk-changes-XXXXXX", build);
	cr_assert_not_null(mkdtemp(base));
	snprintf(replay, sizeof replay, "%s/replay", base);
	snprintf(ws, sizeof ws, "%s/ws", base);
	cr_assert_eq(mkdir(replay, 0700), 0);
	cr_assert_eq(mkdir(ws, 0700), 0);
	snprintf(path, sizeof path, "%s/fulldisk-changes.json", replay);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("{\"turns\":[{\"toolCalls\":[{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"a.txt\",\"content\":\"a\\n\"}}]},{\"delayMs\":3000,\"toolCalls\":"
	    "[{\"name\":\"write_file\",\"arguments\":{\"path\":\"b.txt\",\"content\":\"b\\n\"}}]},"
	    "{\"delayMs\":3000,\"text\":\"Done.\"}]}", f);
	fclose(f);
	setenv("TD_TEST_NO_REPLAY_DIR", "1", 1);
	setenv("TASKDECK_REPLAY_DIR", replay, 1);
	svc_start(&s);
	project = http_project_new(&s, "changes");
	run = http_run_start(&s, "{\"project\":\"%s\",\"prompt\":\"write\",\"cwd\":\"%s\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"fulldisk-changes\"}}", project, ws);
	until = mono_ms() + 20000;
	for (;;) {
		c = changes_within_a_second(&s, json_str(run, "id"));
		text = cJSON_PrintUnformatted(c);
		cJSON_Delete(c);
		if (strstr(text, "\"a.txt\"") != NULL)
			break;
		cr_assert_lt(mono_ms(), until, "a.txt never listed: %s", text);
		free(text);
		usleep(100 * 1000);
	}
	free(text);

	/* The disk fills; the agent writes b.txt, the snapshot after it cannot be stored. */
	fill = harness_fill_disk(dir);
	snprintf(path, sizeof path, "%s/b.txt", ws);
	until = mono_ms() + 20000;
	while (access(path, F_OK) != 0) {
		cr_assert_lt(mono_ms(), until, "the agent never wrote b.txt");
		usleep(100 * 1000);
	}
	sleep(2);
	c = changes_within_a_second(&s, json_str(run, "id"));
	text = cJSON_PrintUnformatted(c);
	cr_log_info("the changes on a full disk: %s", text);
	if (strstr(text, "\"b.txt\"") == NULL) {
		cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c, "incomplete")),
		    "b.txt is missing and the changes say they are whole: %s", text);
		why = json_str_or_none(c, "incompleteReason");
		cr_expect_not_null(strstr(why, "could not be"), "%s", text);
	}
	free(text);
	cJSON_Delete(c);
	harness_free_disk(fill);
	cJSON_Delete(run_final_within(&s, json_str(run, "id"), NULL, 60000));
	svc_stop(&s);
	svc_destroy(&s);
	cJSON_Delete(run);
	free(project);
	snprintf(path, sizeof path, "rm -rf '%s'", base);
	cr_expect_eq(system(path), 0);
}
