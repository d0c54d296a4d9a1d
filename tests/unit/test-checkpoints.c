/* durable: version 2 checkpoints (src/service/checkpoints.c) against a real SQLite store. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "checkpoints.h"
#include "json.h"
#include "log.h"
#include "store.h"

#define RUN_ID "run_000000000000000000000001"

static struct store *st;
static struct checkpoint_log *cl;
static char dir[64];

static void
setup(void)
{
	char db[128], *err = NULL;
	FILE *devnull = fopen("/dev/null", "w");
	const char *sql =
	    "INSERT INTO projects (id, name, description, context, metadata,"
	    " created_at, updated_at) VALUES ('prj_000000000000000000000001', 'p', '', '', '{}', 1, 1);"
	    "INSERT INTO sessions (id, project_id, title, cwd, workspace, config,"
	    " config_updated_at, created_at, updated_at) VALUES ('ses_000000000000000000000001',"
	    " 'prj_000000000000000000000001', 't', '/tmp', 'managed', '{}', 1, 1, 1);"
	    "INSERT INTO runs (id, session_id, project_id, status, prompt,"
	    " permission_profile, config, cwd, created_at, updated_at, output) VALUES"
	    " ('" RUN_ID "', 'ses_000000000000000000000001', 'prj_000000000000000000000001',"
	    " 'running', 'x', 'workspace-write', '{}', '/tmp', 1, 1, '');"
	    /* A switch that makes the next inserts of messages fail, as a full disk would. */
	    "CREATE TABLE fail (on_ INTEGER);"
	    "INSERT INTO fail VALUES (0);"
	    "CREATE TRIGGER fail_messages BEFORE INSERT ON run_messages"
	    "  WHEN (SELECT on_ FROM fail) = 1 BEGIN SELECT RAISE(ABORT, 'disk full'); END;";

	log_init("test-checkpoints", devnull, LOG_LEVEL_ERROR + 1);
	snprintf(dir, sizeof dir, "/tmp/tdcp-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/taskdeck.db", dir);
	st = store_open(db, &err);
	cr_assert_not_null(st, "store: %s", err);
	cr_assert_eq(sqlite3_exec(store_lock(st), sql, NULL, NULL, NULL), SQLITE_OK);
	store_unlock(st);
	cl = NULL;
}

static void
teardown(void)
{
	char cmd[128];

	checkpoint_log_free(cl);
	store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(checkpoints, .init = setup, .fini = teardown, .timeout = 30);

static long long
scalar(const char *sql)
{
	sqlite3 *db = store_lock(st);
	sqlite3_stmt *s;
	long long v = -1;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s", sql);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	store_unlock(st);
	return v;
}

static void
exec(const char *sql)
{
	cr_assert_eq(sqlite3_exec(store_lock(st), sql, NULL, NULL, NULL), SQLITE_OK, "%s", sql);
	store_unlock(st);
}

/* A checkpoint line of messages from..from+n-1, each text "m<index>" (pad bytes more). */
static cJSON *
line(int from, int n, size_t pad)
{
	cJSON *cp = cJSON_CreateObject(), *append;

	cJSON_AddNumberToObject(cp, "version", 2);
	cJSON_AddNumberToObject(cp, "turns", 1);
	cJSON_AddNumberToObject(cp, "from", from);
	append = cJSON_AddArrayToObject(cp, "append");
	for (int i = 0; i < n; i++) {
		cJSON *m = cJSON_CreateObject();
		char *text = malloc(pad + 32);
		size_t len = (size_t)snprintf(text, 32, "m%d", from + i);

		memset(text + len, 'x', pad);
		text[len + pad] = '\0';
		cJSON_AddStringToObject(m, "role", i % 2 ? "assistant" : "user");
		cJSON_AddStringToObject(m, "text", text);
		cJSON_AddItemToArray(append, m);
		free(text);
	}
	cJSON_AddNumberToObject(cp, "messageCount", from + n);
	cJSON_AddNumberToObject(cp, "outputLen", 0);
	return cp;
}

/* Stores line(from, n); whether it was stored. */
static bool
store(int from, int n, size_t pad)
{
	cJSON *cp = line(from, n, pad);
	const char *why = NULL;
	bool stored = false;

	cr_assert(checkpoint_store(&cl, st, RUN_ID, cp, NULL, &stored, &why), "%s", why);
	cJSON_Delete(cp);
	return stored;
}

static long long
rows(void)
{
	return scalar("SELECT count(*) FROM run_messages WHERE run_id = '" RUN_ID "'");
}

Test(checkpoints, each_checkpoint_adds_only_its_messages)
{
	const char *why = NULL;
	bool stored;
	cJSON *gap;

	cr_expect(store(0, 2, 0));
	cr_expect(store(2, 1, 0));
	cr_expect_eq(rows(), 3);
	cr_expect_eq(scalar("SELECT count(*) FROM runs WHERE checkpoint LIKE '%\"messageCount\":3%'"
	    " AND checkpoint NOT LIKE '%append%'"), 1);
	/* A smaller from replaces the messages from there (a compacted conversation). */
	cr_expect(store(0, 1, 0));
	cr_expect_eq(rows(), 1);
	/* A line past the messages there are is refused. */
	gap = line(5, 1, 0);
	cr_expect_not(checkpoint_store(&cl, st, RUN_ID, gap, NULL, &stored, &why));
	cr_expect_str_eq(why ? why : "", "a checkpoint that skips messages");
	cJSON_Delete(gap);
	/* The run is final: its messages go. */
	exec("UPDATE runs SET status = 'completed' WHERE id = '" RUN_ID "'");
	cr_expect_eq(rows(), 0);
}

Test(checkpoints, a_failed_store_keeps_the_previous_and_the_next_stores_all)
{
	cr_expect(store(0, 2, 0));
	exec("UPDATE fail SET on_ = 1");
	cr_expect_not(store(2, 1, 0), "stored on a full disk");
	cr_expect_eq(rows(), 2);
	cr_expect_eq(scalar("SELECT count(*) FROM runs WHERE checkpoint LIKE '%\"messageCount\":2%'"),
	    1, "the previous checkpoint is not whole");
	exec("UPDATE fail SET on_ = 0");
	cr_expect(store(3, 1, 0));
	cr_expect_eq(rows(), 4, "the message of the failed store was lost");
	cr_expect_eq(scalar("SELECT count(*) FROM run_messages WHERE body LIKE '%\"m2\"%'"), 1);
}

Test(checkpoints, read_pages_the_messages)
{
	cJSON *params = cJSON_CreateObject(), *r;
	const char *why = NULL;

	for (int i = 0; i < 5; i++)
		cr_assert(store(i, 1, 300 * 1024));
	cJSON_AddNumberToObject(params, "from", 0);
	r = checkpoint_read(st, RUN_ID, params, &why);
	cr_assert_not_null(r, "%s", why);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "messages")), 2);
	cr_expect_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "next")), 2);
	cr_expect(strncmp(json_get_string(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "messages"), 1),
	    "text"), "m1x", 3) == 0);
	cJSON_Delete(r);
	cJSON_ReplaceItemInObject(params, "from", cJSON_CreateNumber(4));
	r = checkpoint_read(st, RUN_ID, params, &why);
	cr_assert_not_null(r);
	cr_expect_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "next")), 5);
	cJSON_Delete(r);
	cJSON_ReplaceItemInObject(params, "from", cJSON_CreateNumber(5));
	cr_expect_null(checkpoint_read(st, RUN_ID, params, &why));
	cJSON_Delete(params);
}

Test(checkpoints, a_resumed_head_gets_the_output_up_to_its_length)
{
	cJSON *cp = cJSON_CreateObject();

	cJSON_AddNumberToObject(cp, "version", 2);
	cJSON_AddNumberToObject(cp, "outputLen", 5);
	checkpoint_resume_head(cp, "Hello, and more after the checkpoint");
	cr_expect_str_eq(json_get_string(cp, "output"), "Hello");
	cJSON_Delete(cp);
}
