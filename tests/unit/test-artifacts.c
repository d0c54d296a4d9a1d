/* The artifact store on its own: artifacts_save against a real SQLite store and workspace. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "artifacts.h"
#include "log.h"
#include "service.h"
#include "store.h"

#define RUN_ID "run_000000000000000000000001"
#define SESSION_ID "ses_000000000000000000000001"

static struct service svc;
static char dir[64], ws[128];

static void
setup(void)
{
	char db[128], *err = NULL, *sql;
	FILE *devnull = fopen("/dev/null", "w");

	cr_assert(sodium_init() >= 0);
	log_init("test-artifacts", devnull, LOG_LEVEL_ERROR);
	snprintf(dir, sizeof dir, "/tmp/tdart-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(ws, sizeof ws, "%s/workspace", dir);
	cr_assert_eq(mkdir(ws, 0700), 0);
	snprintf(db, sizeof db, "%s/taskdeck.db", dir);
	memset(&svc, 0, sizeof svc);
	cr_assert(asprintf(&svc.paths.artifacts, "%s/artifacts", dir) > 0);
	svc.store = store_open(db, &err);
	cr_assert_not_null(svc.store, "store: %s", err);
	sql = "INSERT INTO projects (id, name, description, context, metadata,"
	    " created_at, updated_at) VALUES ('prj_000000000000000000000001', 'p', '',"
	    " '', '{}', 1, 1);"
	    "INSERT INTO sessions (id, project_id, title, cwd, workspace, config,"
	    " config_updated_at, created_at, updated_at) VALUES ('" SESSION_ID "',"
	    " 'prj_000000000000000000000001', 't', '/tmp', 'managed', '{}', 1, 1, 1);"
	    "INSERT INTO runs (id, session_id, project_id, status, prompt,"
	    " permission_profile, config, cwd, created_at, updated_at) VALUES"
	    " ('" RUN_ID "', '" SESSION_ID "', 'prj_000000000000000000000001',"
	    " 'running', 'x', 'workspace-write', '{}', '/tmp', 1, 1);";
	cr_assert_eq(sqlite3_exec(store_lock(svc.store), sql, NULL, NULL, NULL), SQLITE_OK);
	store_unlock(svc.store);
}

static void
teardown(void)
{
	char cmd[256];

	store_close(svc.store);
	free(svc.paths.artifacts);
	snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(artifacts, .init = setup, .fini = teardown, .timeout = 30);

/* Writes a file under the workspace, making its directories. */
static void
ws_write(const char *rel, const char *data, size_t len)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", ws, rel);
	snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
	cr_assert_eq(system(cmd), 0);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void
sha256_version(const void *data, size_t len, char out[ARTIFACT_VERSION_LEN])
{
	unsigned char d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(d, data, len);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, 65, d, sizeof d);
}

/* Runs artifacts_save with params given as JSON text. */
static enum td_code
save(const char *json, cJSON **result, char **message)
{
	cJSON *params = cJSON_Parse(json);
	enum td_code code;

	cr_assert_not_null(params, "bad test JSON %s", json);
	code = artifacts_save(&svc, RUN_ID, SESSION_ID, ws, NULL, params, result, message);
	cJSON_Delete(params);
	return code;
}

static const char *
member(const cJSON *result, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(result, "artifact"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *data;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t)n + 1);
	*len = fread(data, 1, (size_t)n, f);
	data[*len] = '\0';
	fclose(f);
	return data;
}

static int
row_count(const char *where)
{
	char sql[256];
	sqlite3_stmt *s;
	int n = -1;
	sqlite3 *db = store_lock(svc.store);

	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM artifacts WHERE %s", where);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s", sql);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	store_unlock(svc.store);
	return n;
}

static int
files_in(const char *sub)
{
	char cmd[256], *out;
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof cmd, "find '%s/%s' -type f 2>/dev/null | wc -l", svc.paths.artifacts, sub);
	p = popen(cmd, "r");
	out = malloc(32);
	if (fgets(out, 32, p))
		n = atoi(out);
	pclose(p);
	free(out);
	return n;
}

Test(artifacts, save_copies_the_bytes_into_the_store)
{
	const char text[] = "# Report\n\nFindings.\n";
	char want[ARTIFACT_VERSION_LEN], *path, *data;
	cJSON *res = NULL;
	char *msg = NULL;
	size_t len;

	ws_write("out/report.md", text, sizeof text - 1);
	cr_assert_eq(save("{\"path\":\"out/report.md\"}", &res, &msg), TD_OK, "%s", msg);
	sha256_version(text, sizeof text - 1, want);
	cr_expect_str_eq(member(res, "version"), want);
	cr_expect_str_eq(member(res, "name"), "report.md");
	cr_expect_str_eq(member(res, "path"), "out/report.md");
	cr_expect(strncmp(member(res, "id"), "art_", 4) == 0);
	cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "artifact"), "size")->valuedouble,
	    (double)(sizeof text - 1));

	path = artifacts_content_path(&svc, want);
	data = slurp(path, &len);
	cr_assert_not_null(data, "no store file %s", path);
	cr_expect_eq(len, sizeof text - 1);
	cr_expect_eq(memcmp(data, text, len), 0);
	free(data);

	/* Changing the workspace afterwards changes nothing in the store. */
	ws_write("out/report.md", "changed", 7);
	data = slurp(path, &len);
	cr_expect_eq(memcmp(data, text, sizeof text - 1), 0, "the saved copy changed");
	free(data);
	free(path);

	cr_expect_eq(row_count("visible = 0 AND media_type = 'text/markdown'"
	    " AND path = 'out/report.md' AND run_id = '" RUN_ID "'"), 1,
	    "one staged row, not yet visible");
	cr_expect_eq(files_in("tmp"), 0, "a temporary file was left behind");
	cJSON_Delete(res);
}

Test(artifacts, same_content_is_stored_once)
{
	cJSON *a = NULL, *b = NULL;
	char *msg = NULL;

	ws_write("a.txt", "same bytes", 10);
	ws_write("b/c.txt", "same bytes", 10);
	cr_assert_eq(save("{\"path\":\"a.txt\"}", &a, &msg), TD_OK, "%s", msg);
	cr_assert_eq(save("{\"path\":\"b/c.txt\"}", &b, &msg), TD_OK, "%s", msg);
	cr_expect_str_eq(member(a, "version"), member(b, "version"));
	cr_expect_str_neq(member(a, "id"), member(b, "id"), "each save is its own version");
	cr_expect_eq(row_count("1"), 2);
	cr_expect_eq(files_in(""), 1, "one store file for one content");
	cJSON_Delete(a);
	cJSON_Delete(b);
}

Test(artifacts, path_is_normalized_name_and_type_are_kept)
{
	cJSON *res = NULL;
	char *msg = NULL;

	ws_write("out/data.bin", "x", 1);
	cr_assert_eq(save("{\"path\":\"./out//sub/../data.bin\",\"name\":\"Résumé \\\"v2\\\".pdf\","
	    "\"mediaType\":\"application/pdf\"}", &res, &msg), TD_OK, "%s", msg);
	cr_expect_str_eq(member(res, "path"), "out/data.bin");
	cr_expect_str_eq(member(res, "name"), "Résumé \"v2\".pdf");
	cr_expect_eq(row_count("media_type = 'application/pdf'"), 1);
	cJSON_Delete(res);

	ws_write("notes.CSV", "a,b\n", 4);
	cr_assert_eq(save("{\"path\":\"notes.CSV\",\"name\":null,\"mediaType\":null}", &res, &msg),
	    TD_OK, "%s", msg);
	cr_expect_eq(row_count("name = 'notes.CSV' AND media_type = 'text/csv'"), 1);
	cJSON_Delete(res);
}

Test(artifacts, symlink_inside_the_workspace_is_followed)
{
	char target[256], link[256];
	cJSON *res = NULL;
	char *msg = NULL;

	ws_write("real/report.md", "inside", 6);
	snprintf(target, sizeof target, "%s/real/report.md", ws);
	snprintf(link, sizeof link, "%s/latest.md", ws);
	cr_assert_eq(symlink(target, link), 0);
	cr_assert_eq(save("{\"path\":\"latest.md\"}", &res, &msg), TD_OK, "%s", msg);
	cr_expect_str_eq(member(res, "path"), "latest.md");
	cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "artifact"), "size")->valuedouble, 6);
	cJSON_Delete(res);
}

/* Each of these params must be refused with a message, and nothing recorded. */
static void
expect_refused(const char *json, enum td_code want)
{
	cJSON *res = NULL;
	char *msg = NULL;
	enum td_code code = save(json, &res, &msg);

	cr_expect_eq(code, want, "%s: code %d, want %d (%s)", json, code, want,
	    msg ? msg : "no message");
	cr_expect_null(res, "%s: a result with an error", json);
	cr_expect(msg != NULL && msg[0] != '\0', "%s: no message", json);
	free(msg);
	cJSON_Delete(res);
}

Test(artifacts, bad_params_and_paths_are_refused)
{
	char path[512], big[300];

	ws_write("ok.txt", "ok", 2);
	ws_write("dir/inner.txt", "in", 2);
	snprintf(path, sizeof path, "%s/outside", ws);
	cr_assert_eq(symlink("/etc/hostname", path), 0);
	snprintf(path, sizeof path, "%s/outdir", ws);
	cr_assert_eq(symlink("/etc", path), 0);
	snprintf(path, sizeof path, "%s/fifo", ws);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof path, "%s/sparse", ws);
	cr_assert_eq(close(open(path, O_WRONLY | O_CREAT, 0600)), 0);
	cr_assert_eq(truncate(path, (off_t)(ARTIFACT_MAX_SIZE + 1)), 0);

	expect_refused("[]", TD_INVALID_REQUEST);
	expect_refused("{}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":7}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"size\":2}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"/etc/hostname\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"../x\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"dir/../../x\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\".\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"outside\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"outdir/hostname\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"dir\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"fifo\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"missing.txt\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"sparse\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"name\":\"a/b\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"name\":\"\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"name\":\"a\\nb\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"name\":5}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"mediaType\":\"text/plain\\r\\nX-Evil: 1\"}",
	    TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"ok.txt\",\"mediaType\":\"plain\"}", TD_INVALID_REQUEST);
	memset(big, 'n', 256);
	snprintf(path, sizeof path, "{\"path\":\"ok.txt\",\"name\":\"%.256s\"}", big);
	expect_refused(path, TD_INVALID_REQUEST);
	cr_expect_eq(row_count("1"), 0, "a refused save left a row");
	cr_expect_eq(files_in(""), 0, "a refused save left a file");
}

Test(artifacts, a_name_of_255_characters_is_accepted)
{
	char json[1200], name[800] = "";
	cJSON *res = NULL;
	char *msg = NULL;

	ws_write("ok.txt", "ok", 2);
	for (int i = 0; i < 255; i++)
		strcat(name, "é");
	snprintf(json, sizeof json, "{\"path\":\"ok.txt\",\"name\":\"%s\"}", name);
	cr_assert_eq(save(json, &res, &msg), TD_OK, "%s", msg);
	cr_expect_str_eq(member(res, "name"), name);
	cJSON_Delete(res);
}

Test(artifacts, an_unknown_run_is_an_internal_error)
{
	cJSON *params = cJSON_Parse("{\"path\":\"ok.txt\"}");
	cJSON *res = NULL;
	char *msg = NULL;

	ws_write("ok.txt", "ok", 2);
	cr_expect_eq(artifacts_save(&svc, "run_00000000000000000000ffff", SESSION_ID, ws, NULL,
	    params, &res, &msg), TD_INTERNAL_ERROR);
	cr_expect_null(res);
	cr_expect_not_null(msg);
	free(msg);
	cJSON_Delete(params);
}

Test(artifacts, an_unwritable_store_is_an_io_error)
{
	cJSON *res = NULL;
	char *msg = NULL;

	/* A file where the store's directory should be: even root cannot write there. */
	ws_write("ok.txt", "ok", 2);
	cr_assert_eq(close(open(svc.paths.artifacts, O_WRONLY | O_CREAT, 0600)), 0);
	cr_expect_eq(save("{\"path\":\"ok.txt\"}", &res, &msg), TD_IO_ERROR);
	cr_expect(msg != NULL && strstr(msg, svc.paths.artifacts) == NULL,
	    "the message names a store path: %s", msg);
	free(msg);
	cr_expect_eq(row_count("1"), 0);
}

struct saver {
	int n;
	enum td_code code;
	char version[ARTIFACT_VERSION_LEN];
};

static void *
saver_main(void *arg)
{
	struct saver *s = arg;
	cJSON *params, *res = NULL;
	char json[64], *msg = NULL;

	snprintf(json, sizeof json, "{\"path\":\"f%d.bin\"}", s->n);
	params = cJSON_Parse(json);
	s->code = artifacts_save(&svc, RUN_ID, SESSION_ID, ws, NULL, params, &res, &msg);
	if (s->code == TD_OK)
		snprintf(s->version, sizeof s->version, "%s", member(res, "version"));
	free(msg);
	cJSON_Delete(res);
	cJSON_Delete(params);
	return NULL;
}

Test(artifacts, concurrent_saves)
{
	enum { N = 8, SIZE = 3 * 1024 * 1024 + 17 };
	struct saver s[N];
	pthread_t t[N];
	char *data = malloc(SIZE), name[32], want[ARTIFACT_VERSION_LEN];

	/* Half the files share one content, half are distinct; bigger than the copy buffer. */
	for (int i = 0; i < N; i++) {
		memset(data, i % 2 ? 'a' + i : 'z', SIZE);
		snprintf(name, sizeof name, "f%d.bin", i);
		ws_write(name, data, SIZE);
	}
	for (int i = 0; i < N; i++) {
		s[i].n = i;
		cr_assert_eq(pthread_create(&t[i], NULL, saver_main, &s[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < N; i++) {
		memset(data, i % 2 ? 'a' + i : 'z', SIZE);
		sha256_version(data, SIZE, want);
		cr_expect_eq(s[i].code, TD_OK, "save %d failed", i);
		cr_expect_str_eq(s[i].version, want, "save %d", i);
	}
	cr_expect_eq(row_count("1"), N);
	cr_expect_eq(files_in(""), 1 + N / 2);
	cr_expect_eq(files_in("tmp"), 0);
	free(data);
}

Test(artifacts, init_removes_leftover_temporary_files)
{
	char path[256], *err = NULL;

	cr_assert(artifacts_init(&svc, &err), "%s", err);
	snprintf(path, sizeof path, "%s/tmp/0123abcd", svc.paths.artifacts);
	cr_assert_eq(close(open(path, O_WRONLY | O_CREAT, 0600)), 0);
	cr_assert(artifacts_init(&svc, &err), "%s", err);
	cr_expect_neq(access(path, F_OK), 0, "the leftover is still there");
}

Test(artifacts, content_path_only_for_versions)
{
	char *p = artifacts_content_path(&svc,
	    "sha256:00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff");
	char want[256];

	snprintf(want, sizeof want, "%s/00/00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff",
	    svc.paths.artifacts);
	cr_expect_str_eq(p, want);
	free(p);
	cr_expect_null(artifacts_content_path(&svc, "sha256:../../etc/passwd"));
	cr_expect_null(artifacts_content_path(&svc,
	    "sha256:00FF00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff"));
	cr_expect_null(artifacts_content_path(&svc, "md5:00ff"));
	cr_expect_null(artifacts_content_path(&svc, NULL));
}

Test(artifacts, media_types)
{
	cr_expect_str_eq(artifacts_media_type("report.md"), "text/markdown");
	cr_expect_str_eq(artifacts_media_type("a.b.JSON"), "application/json");
	cr_expect_str_eq(artifacts_media_type("photo.jpg"), "image/jpeg");
	cr_expect_str_eq(artifacts_media_type("doc.pdf"), "application/pdf");
	cr_expect_str_eq(artifacts_media_type("page.html"), "text/html");
	cr_expect_str_eq(artifacts_media_type("big.bin"), "application/octet-stream");
	cr_expect_str_eq(artifacts_media_type("Makefile"), "application/octet-stream");
	cr_expect_str_eq(artifacts_media_type(".md"), "application/octet-stream");
	cr_expect_str_eq(artifacts_media_type("trailing."), "application/octet-stream");
}

Test(artifacts, ranges)
{
	static const struct {
		const char *header;
		uint64_t size;
		enum artifacts_range want;
		uint64_t first, last;
	} cases[] = {
		{ NULL, 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "bytes=0-9", 100, ARTIFACTS_RANGE_PARTIAL, 0, 9 },
		{ "bytes=90-", 100, ARTIFACTS_RANGE_PARTIAL, 90, 99 },
		{ "bytes=-10", 100, ARTIFACTS_RANGE_PARTIAL, 90, 99 },
		{ "bytes=-1000", 100, ARTIFACTS_RANGE_PARTIAL, 0, 99 },
		{ "bytes=50-1000", 100, ARTIFACTS_RANGE_PARTIAL, 50, 99 },
		{ "Bytes = 5-5", 100, ARTIFACTS_RANGE_PARTIAL, 5, 5 },
		{ "bytes=99-99999999999999999999999", 100, ARTIFACTS_RANGE_PARTIAL, 99, 99 },
		{ "bytes=100-", 100, ARTIFACTS_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=100-200", 100, ARTIFACTS_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=99999999999999999999999-", 100, ARTIFACTS_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-0", 100, ARTIFACTS_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=0-", 0, ARTIFACTS_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-5", 0, ARTIFACTS_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=9-1", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "bytes=0-1,5-6", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "bytes=-", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "bytes=a-b", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "items=0-1", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "bytes 0-1", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
		{ "bytes=+1-2", 100, ARTIFACTS_RANGE_NONE, 0, 0 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t first = 0, last = 0;
		enum artifacts_range got = artifacts_range(cases[i].header, cases[i].size,
		    &first, &last);

		cr_expect_eq(got, cases[i].want, "%s of %llu: %d, want %d",
		    cases[i].header ? cases[i].header : "(none)",
		    (unsigned long long)cases[i].size, got, cases[i].want);
		if (got == ARTIFACTS_RANGE_PARTIAL && cases[i].want == got) {
			cr_expect_eq(first, cases[i].first, "%s: first", cases[i].header);
			cr_expect_eq(last, cases[i].last, "%s: last", cases[i].header);
		}
	}
}

Test(artifacts, content_disposition)
{
	static const struct {
		const char *name, *want;
	} cases[] = {
		{ "report.md", "attachment; filename=\"report.md\"" },
		{ "my report (1).md", "attachment; filename=\"my report (1).md\"" },
		{ "Résumé.pdf", "attachment; filename=\"R_sum_.pdf\"; "
		    "filename*=UTF-8''R%C3%A9sum%C3%A9.pdf" },
		{ "say \"hi\".txt", "attachment; filename=\"say \\\"hi\\\".txt\"; "
		    "filename*=UTF-8''say%20%22hi%22.txt" },
		{ "back\\slash", "attachment; filename=\"back\\\\slash\"; "
		    "filename*=UTF-8''back%5Cslash" },
		{ "日本.txt", "attachment; filename=\"__.txt\"; "
		    "filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = artifacts_disposition(cases[i].name);

		cr_expect_str_eq(got, cases[i].want, "%s", cases[i].name);
		free(got);
	}
}

/* Names and paths hold no control or bidirectional character (issue 17,
 * finding 11): "\u202egnp.exe" would show as "exe.png". */
Test(artifacts, bidi_and_control_characters_are_refused)
{
	const char *names[] = { "\\u202egnp.exe", "a\\u2066b", "a\\u200fb", "a\\u061cb",
		"a\\u0085b", "a\\u007fb", "a\\tb" };
	char json[256];
	cJSON *res = NULL;
	char *msg = NULL;

	ws_write("ok.txt", "ok", 2);
	ws_write("\xe2\x80\xae" "gnp.exe", "x", 1);	/* U+202E in the file's own name */
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(json, sizeof json, "{\"path\":\"ok.txt\",\"name\":\"%s\"}", names[i]);
		expect_refused(json, TD_INVALID_REQUEST);
	}
	expect_refused("{\"path\":\"\\u202egnp.exe\"}", TD_INVALID_REQUEST);
	expect_refused("{\"path\":\"\\u202egnp.exe\",\"name\":\"ok.png\"}", TD_INVALID_REQUEST);
	cr_expect_eq(row_count("1"), 0, "a refused save left a row");
	/* Other scripts, right-to-left letters and emoji are names like any. */
	cr_expect_eq(save("{\"path\":\"ok.txt\",\"name\":\"\\u05e9\\u05dc\\u05d5\\u05dd "
	    "\\u65e5\\u672c \\ud83d\\ude80.txt\"}", &res, &msg), TD_OK, "%s", msg ? msg : "");
	cJSON_Delete(res);
	free(msg);
}


/* Nothing the run's commands cannot see is saved: the hidden list, taskdeck's own files. */
Test(artifacts, hidden_paths_are_never_saved)
{
	char hidden_dir[256], link_path[256], *message = NULL;
	const char *hidden[] = { hidden_dir, NULL };
	cJSON *params, *result = NULL;

	ws_write("secrets/key.pem", "KEY", 3);
	ws_write("td/token", "TOKEN", 5);
	snprintf(hidden_dir, sizeof hidden_dir, "%s/secrets", ws);
	snprintf(link_path, sizeof link_path, "%s/l", ws);
	cr_assert_eq(symlink("secrets", link_path), 0);
	cr_assert(asprintf(&svc.paths.token, "%s/td/token", ws) > 0);
	for (int i = 0; i < 3; i++) {
		static const char *const paths[] = {
			"{\"path\":\"secrets/key.pem\"}", "{\"path\":\"l/key.pem\"}",
			"{\"path\":\"td/token\"}",
		};

		params = cJSON_Parse(paths[i]);
		cr_expect_eq(artifacts_save(&svc, RUN_ID, SESSION_ID, ws, hidden, params, &result,
		    &message), TD_INVALID_REQUEST, "%s saved", paths[i]);
		cr_expect_null(result);
		cr_expect(message != NULL && strstr(message, "path is hidden") != NULL, "%s: %s",
		    paths[i], message);
		free(message);
		message = NULL;
		cJSON_Delete(params);
	}
	free(svc.paths.token);
	svc.paths.token = NULL;
}

/* Deletes every artifact row and sweeps, again and again, until *stop. */
static void *
sweeper_main(void *arg)
{
	const atomic_bool *stop = arg;

	while (!atomic_load(stop)) {
		cr_assert_eq(sqlite3_exec(store_lock(svc.store), "DELETE FROM artifacts", NULL, NULL,
		    NULL), SQLITE_OK);
		store_unlock(svc.store);
		artifacts_sweep(&svc);
	}
	return NULL;
}

/*
 * A sweep (a session deleted) while saves go on never takes a content whose
 * row a save is about to write: a row, once there, names bytes that are there.
 */
Test(artifacts, a_sweep_never_removes_the_content_of_a_save_in_progress)
{
	atomic_bool stop = false;
	char path[512];
	pthread_t sweeper;
	int lost = 0;

	int saves = 0;
	struct timespec start, now;

	ws_write("same.txt", "the same bytes every time\n", 26);
	cr_assert_eq(pthread_create(&sweeper, NULL, sweeper_main, &stop), 0);
	/*
	 * 300 saves, or as many as 10 s allow on a loaded machine: each save
	 * syncs, so their count says nothing of the race, only of the disk.
	 */
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; i < 300; i++, saves++) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (i >= 20 && now.tv_sec - start.tv_sec >= 10)
			break;
		cJSON *params = cJSON_Parse("{\"path\":\"same.txt\"}"), *res = NULL;
		char *msg = NULL;
		sqlite3_stmt *s;
		bool row;

		cr_assert_eq(artifacts_save(&svc, RUN_ID, SESSION_ID, ws, NULL, params, &res, &msg),
		    TD_OK, "%s", msg ? msg : "");
		/* Under the lock, as the sweep: the row still there means its content is. */
		cr_assert_eq(sqlite3_prepare_v2(store_lock(svc.store),
		    "SELECT 1 FROM artifacts WHERE id = ?1", -1, &s, NULL), SQLITE_OK);
		sqlite3_bind_text(s, 1, member(res, "id"), -1, SQLITE_STATIC);
		row = sqlite3_step(s) == SQLITE_ROW;
		sqlite3_finalize(s);
		snprintf(path, sizeof path, "%s/%.2s/%s", svc.paths.artifacts,
		    member(res, "version") + 7, member(res, "version") + 7);
		if (row && access(path, F_OK) != 0)
			lost++;
		store_unlock(svc.store);
		free(msg);
		cJSON_Delete(res);
		cJSON_Delete(params);
	}
	atomic_store(&stop, true);
	pthread_join(sweeper, NULL);
	cr_expect_eq(lost, 0, "%d of %d saves have a row whose content the sweep removed", lost, saves);
}
