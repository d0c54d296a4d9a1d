/*
 * Artifacts through a real taskdeckd and real replay runs: lists, descriptors,
 * downloads with ranges, and a 1 GiB download with bounded memory.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "harness.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)
#define RSS_GROWTH_MAX_KIB (16 * 1024)

static void
setup(void)
{
	cr_assert(sodium_init() >= 0);
	svc_start(&svc);
}

/* One timeout for all: Criterion 2.4 leaks a watchdog entry when timeouts differ. */
TestSuite(artifacts, .init = setup, .fini = svc_teardown, .timeout = 600);

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

struct run {
	char id[64];
	char session[64];
	char status[16];
};

/* Starts a replay run of transcript model (a new session), or continues session. */
static struct run
run_start(const char *project, const char *model, const char *session)
{
	struct run run = { 0 };
	struct http_resp r;
	char body[512];

	if (session == NULL)
		snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"Write the "
		    "artifacts of %s.\",\"config\":{\"provider\":\"replay\",\"model\":\"%s\"}}",
		    project, model, model);
	else
		snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"Again.\","
		    "\"sessionId\":\"%s\"}", project, session);
	r = http_req(&svc, "POST", "/api/v1/runs", body, NULL, true);
	cr_assert_eq(r.status, 201, "start run: %s", r.body);
	snprintf(run.id, sizeof run.id, "%s", json_get_string(r.json, "id"));
	snprintf(run.session, sizeof run.session, "%s", json_get_string(r.json, "sessionId"));
	http_resp_free(&r);
	return run;
}

/* Polls the run until it is final (or the deadline passes); fills run->status. */
static void
run_wait(struct run *run, int timeout_s)
{
	char path[128];

	snprintf(path, sizeof path, "/api/v1/runs/%s", run->id);
	for (int i = 0; i < timeout_s * 20; i++) {
		struct http_resp r = http_req(&svc, "GET", path, NULL, NULL, true);
		const char *status = json_get_string(r.json, "status");

		cr_assert_eq(r.status, 200, "get run: %s", r.body);
		snprintf(run->status, sizeof run->status, "%s", status ? status : "");
		http_resp_free(&r);
		if (strcmp(run->status, "completed") == 0 || strcmp(run->status, "failed") == 0 ||
		    strcmp(run->status, "cancelled") == 0)
			return;
		sleep_ms(50);
	}
	cr_assert_fail("run %s is still %s after %d s", run->id, run->status, timeout_s);
}

static struct run
run_to_end(const char *project, const char *model, const char *session)
{
	struct run run = run_start(project, model, session);

	run_wait(&run, 60);
	cr_assert_str_eq(run.status, "completed", "the %s run ended %s", model, run.status);
	return run;
}

/* GET path, asserting 200 and a JSON array; the caller frees. */
static struct http_resp
get_list(const char *path)
{
	struct http_resp r = http_req(&svc, "GET", path, NULL, NULL, true);

	cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
	cr_assert(cJSON_IsArray(r.json), "%s: not an array: %s", path, r.body);
	return r;
}

static struct http_resp
list_artifacts(const char *session, const char *query)
{
	char path[256];

	snprintf(path, sizeof path, "/api/v1/sessions/%s/artifacts%s", session, query);
	return get_list(path);
}

/* The list item named name, or NULL. */
static cJSON *
find_named(const cJSON *list, const char *name)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, list) {
		if (json_get_string(a, "name") && strcmp(json_get_string(a, "name"), name) == 0)
			return (cJSON *)a;
	}
	return NULL;
}

/* The session's working directory, from GET /sessions/:id. */
static char *
session_cwd(const char *session)
{
	char path[128], *cwd;
	struct http_resp r;

	snprintf(path, sizeof path, "/api/v1/sessions/%s", session);
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_not_null(json_get_string(r.json, "cwd"));
	cwd = strdup(json_get_string(r.json, "cwd"));
	http_resp_free(&r);
	return cwd;
}

static unsigned char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *data;
	long n;

	cr_assert_not_null(f, "cannot read %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t)n + 1);
	*len = fread(data, 1, (size_t)n, f);
	fclose(f);
	return data;
}

static void
version_of(const unsigned char *data, size_t len, char out[80])
{
	unsigned char d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(d, data, len);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, 65, d, sizeof d);
}

/* A download: the body is hashed as it arrives and kept only when keep is set. */
struct fetch {
	long status;
	char *headers;
	unsigned char *body;
	size_t len;
	bool keep;
	uint64_t received;
	uint64_t stop_after;	/* abort the transfer past this many bytes (0: never) */
	crypto_hash_sha256_state hash;
	pid_t watch_pid;	/* sample this process's VmRSS while receiving */
	long rss_max_kib;
	uint64_t next_sample;
};

static long
rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot read %s", path);
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

static size_t
fetch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct fetch *f = arg;
	size_t n = size * nmemb;

	if (f->stop_after != 0 && f->received + n > f->stop_after)
		return 0;
	crypto_hash_sha256_update(&f->hash, (unsigned char *)data, n);
	if (f->keep) {
		f->body = realloc(f->body, f->len + n + 1);
		memcpy(f->body + f->len, data, n);
		f->len += n;
	}
	f->received += n;
	if (f->watch_pid > 0 && f->received >= f->next_sample) {
		long kib = rss_kib(f->watch_pid);
		if (kib > f->rss_max_kib)
			f->rss_max_kib = kib;
		f->next_sample = f->received + 16 * MIB;
	}
	return n;
}

static size_t
fetch_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct fetch *f = arg;
	size_t n = size * nmemb, old = f->headers ? strlen(f->headers) : 0;

	f->headers = realloc(f->headers, old + n + 1);
	memcpy(f->headers + old, data, n);
	f->headers[old + n] = '\0';
	return n;
}

/*
 * GET path with extra headers (NULL-terminated, may be NULL) into f, which
 * the caller prepared (keep, stop_after, watch_pid, hash initialised or
 * carried over from an earlier part).  Returns curl's code.
 */
static CURLcode
fetch(const char *path, const char *const *extra, struct fetch *f)
{
	struct curl_slist *h = NULL;
	char url[512], auth[160];
	CURL *c = curl_easy_init();
	CURLcode rc;

	snprintf(url, sizeof url, "%s%s", svc.url, path);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", svc.token);
	h = curl_slist_append(h, auth);
	for (; extra && *extra; extra++)
		h = curl_slist_append(h, *extra);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, fetch_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc;
}

static void
fetch_free(struct fetch *f)
{
	free(f->headers);
	free(f->body);
	memset(f, 0, sizeof *f);
}

static char *
header(const struct fetch *f, const char *name)
{
	struct http_resp r = { .headers = f->headers };

	return http_header(&r, name);
}

static void
expect_header(const struct fetch *f, const char *name, const char *want)
{
	char *v = header(f, name);

	cr_expect(v != NULL && strcmp(v, want) == 0, "%s: \"%s\", want \"%s\"", name,
	    v ? v : "(none)", want);
	free(v);
}

/* Downloads path (whole, kept) with extra headers; asserts curl succeeded. */
static struct fetch
download(const char *path, const char *const *extra)
{
	struct fetch f = { .keep = true };
	CURLcode rc;

	crypto_hash_sha256_init(&f.hash);
	rc = fetch(path, extra, &f);

	cr_assert_eq(rc, CURLE_OK, "%s: %s", path, curl_easy_strerror(rc));
	return f;
}

/* One completed research run; its report.md descriptor and the workspace bytes. */
struct report {
	char *project;
	struct run run;
	cJSON *artifact;		/* the list item */
	char content[128];		/* /api/v1/artifacts/ID/content */
	unsigned char *bytes;		/* the workspace file at the end of the run */
	size_t len;
	char *file;			/* its path */
};

static struct report
report_make(void)
{
	struct report rep = { 0 };
	struct http_resp r;
	char *cwd;

	rep.project = http_project_new(&svc, "artifacts");
	rep.run = run_to_end(rep.project, "research", NULL);
	r = list_artifacts(rep.run.session, "");
	rep.artifact = cJSON_Duplicate(find_named(r.json, "report.md"), true);
	cr_assert_not_null(rep.artifact, "no report.md in %s", r.body);
	http_resp_free(&r);
	snprintf(rep.content, sizeof rep.content, "/api/v1/artifacts/%s/content",
	    json_get_string(rep.artifact, "id"));
	cwd = session_cwd(rep.run.session);
	cr_assert(asprintf(&rep.file, "%s/%s", cwd, json_get_string(rep.artifact, "path")) > 0);
	free(cwd);
	rep.bytes = slurp(rep.file, &rep.len);
	return rep;
}

static void
report_free(struct report *rep)
{
	free(rep->project);
	cJSON_Delete(rep->artifact);
	free(rep->bytes);
	free(rep->file);
}

Test(artifacts, research_run_lists_its_report)
{
	struct report rep = report_make();
	char want[80], path[128], created[64];
	const cJSON *a = rep.artifact;
	struct http_resp r;

	version_of(rep.bytes, rep.len, want);
	cr_expect_str_eq(json_get_string(a, "version"), want, "version is the sha256 of the bytes");
	cr_expect_eq(json_num(a, "size"), (double)rep.len);
	cr_expect_str_eq(json_get_string(a, "mediaType"), "text/markdown");
	cr_expect_str_eq(json_get_string(a, "sessionId"), rep.run.session);
	cr_expect_str_eq(json_get_string(a, "runId"), rep.run.id);
	cr_expect(strncmp(json_get_string(a, "id"), "art_", 4) == 0);
	cr_expect(strlen(json_get_string(a, "path")) >= 9 &&
	    strcmp(json_get_string(a, "path") + strlen(json_get_string(a, "path")) - 9, "report.md") == 0,
	    "path %s does not end in the file name", json_get_string(a, "path"));
	snprintf(created, sizeof created, "%s", json_get_string(a, "createdAt"));
	cr_expect(strlen(created) == 24 && created[23] == 'Z', "createdAt %s", created);

	snprintf(path, sizeof path, "/api/v1/artifacts/%s", json_get_string(a, "id"));
	r = http_req(&svc, "GET", path, NULL, NULL, true);
	cr_expect_eq(r.status, 200);
	cr_expect(cJSON_Compare(r.json, a, true), "descriptor %s differs from the list item",
	    r.body);
	http_resp_free(&r);
	report_free(&rep);
}

Test(artifacts, content_is_the_saved_bytes_with_headers)
{
	struct report rep = report_make();
	char etag[96], len[32], *v;
	struct fetch f = download(rep.content, NULL);

	cr_assert_eq(f.status, 200, "%s", f.body);
	cr_expect_eq(f.len, rep.len);
	cr_expect(f.len == rep.len && memcmp(f.body, rep.bytes, f.len) == 0,
	    "downloaded bytes differ from the workspace file");
	snprintf(etag, sizeof etag, "\"%s\"", json_get_string(rep.artifact, "version"));
	snprintf(len, sizeof len, "%zu", rep.len);
	expect_header(&f, "ETag", etag);
	expect_header(&f, "Content-Length", len);
	expect_header(&f, "Content-Type", "text/markdown");
	expect_header(&f, "Content-Disposition", "attachment; filename=\"report.md\"");
	expect_header(&f, "Accept-Ranges", "bytes");
	expect_header(&f, "Cache-Control", "no-store");
	v = header(&f, "X-Request-Id");
	cr_expect(v != NULL && strncmp(v, "req_", 4) == 0, "no X-Request-Id");
	free(v);
	fetch_free(&f);
	report_free(&rep);
}

/* Asserts a 206 answer holding bytes first..last of rep. */
static void
expect_partial(const struct report *rep, const char *range, size_t first, size_t last)
{
	const char *extra[] = { range, NULL };
	struct fetch f = download(rep->content, extra);
	char want[96];

	cr_expect_eq(f.status, 206, "%s: status %ld", range, f.status);
	snprintf(want, sizeof want, "bytes %zu-%zu/%zu", first, last, rep->len);
	expect_header(&f, "Content-Range", want);
	snprintf(want, sizeof want, "%zu", last - first + 1);
	expect_header(&f, "Content-Length", want);
	cr_expect(f.len == last - first + 1 && memcmp(f.body, rep->bytes + first, f.len) == 0,
	    "%s: the body is not bytes %zu-%zu", range, first, last);
	fetch_free(&f);
}

/* Asserts a 200 answer with the whole body, whatever Range said. */
static void
expect_whole(const struct report *rep, const char *const *extra, const char *what)
{
	struct fetch f = download(rep->content, extra);
	char *cr = header(&f, "Content-Range");

	cr_expect_eq(f.status, 200, "%s: status %ld", what, f.status);
	cr_expect_null(cr, "%s: Content-Range %s on a whole body", what, cr);
	cr_expect(f.len == rep->len && memcmp(f.body, rep->bytes, f.len) == 0,
	    "%s: not the whole body", what);
	free(cr);
	fetch_free(&f);
}

Test(artifacts, ranges_resume_and_if_range)
{
	struct report rep = report_make();
	char match[160], other[] = "If-Range: \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"";
	char unsat[64], want[64];
	struct fetch f;

	cr_assert_gt(rep.len, 20, "report.md is too short to test ranges");
	expect_partial(&rep, "Range: bytes=0-9", 0, 9);
	expect_partial(&rep, "Range: bytes=5-", 5, rep.len - 1);
	expect_partial(&rep, "Range: bytes=-7", rep.len - 7, rep.len - 1);
	expect_partial(&rep, "Range: bytes=3-100000000", 3, rep.len - 1);

	/* A range past the end: 416 with the size. */
	snprintf(unsat, sizeof unsat, "Range: bytes=%zu-", rep.len);
	f = download(rep.content, (const char *[]){ unsat, NULL });
	cr_expect_eq(f.status, 416);
	snprintf(want, sizeof want, "bytes */%zu", rep.len);
	expect_header(&f, "Content-Range", want);
	fetch_free(&f);

	/* If-Range with the current ETag honours the range, with another it does not. */
	snprintf(match, sizeof match, "If-Range: \"%s\"", json_get_string(rep.artifact, "version"));
	f = download(rep.content, (const char *[]){ "Range: bytes=0-9", match, NULL });
	cr_expect_eq(f.status, 206, "If-Range with the ETag");
	fetch_free(&f);
	expect_whole(&rep, (const char *[]){ "Range: bytes=0-9", other, NULL },
	    "If-Range with another ETag");
	expect_whole(&rep, (const char *[]){ "Range: bytes=0-1,4-5", NULL }, "two ranges");
	expect_whole(&rep, (const char *[]){ "Range: bytes=9-2", NULL }, "a reversed range");
	expect_whole(&rep, (const char *[]){ "Range: lines=1-2", NULL }, "another unit");
	report_free(&rep);
}

Test(artifacts, saved_content_ignores_later_workspace_changes)
{
	struct report rep = report_make();
	const char changed[] = "rewritten after the run\n";
	char want[80];
	struct fetch f;
	FILE *w;

	w = fopen(rep.file, "wb");
	cr_assert_not_null(w);
	fwrite(changed, 1, sizeof changed - 1, w);
	fclose(w);
	f = download(rep.content, NULL);
	cr_expect_eq(f.status, 200);
	cr_expect(f.len == rep.len && memcmp(f.body, rep.bytes, f.len) == 0,
	    "the download follows the workspace, not the saved version");
	version_of(f.body, f.len, want);
	cr_expect_str_eq(want, json_get_string(rep.artifact, "version"));
	fetch_free(&f);
	report_free(&rep);
}

Test(artifacts, unknown_ids_are_404)
{
	static const struct {
		const char *path, *resource;
	} cases[] = {
		{ "/api/v1/artifacts/art_000000000000000000000000", "artifact" },
		{ "/api/v1/artifacts/art_000000000000000000000000/content", "artifact" },
		{ "/api/v1/artifacts/not-an-id", "artifact" },
		{ "/api/v1/artifacts/not-an-id/content", "artifact" },
		{ "/api/v1/artifacts/sha256:0000/content", "artifact" },
		/* Decoded to several segments: no route, and no file either. */
		{ "/api/v1/artifacts/..%2F..%2F..%2Fetc%2Fpasswd/content", "route" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct http_resp r = http_req(&svc, "GET", cases[i].path, NULL, NULL, true);
		cJSON *details = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"), "details");

		cr_expect_eq(r.status, 404, "%s: %ld %s", cases[i].path, r.status, r.body);
		cr_expect_str_eq(http_error_code(&r) ? http_error_code(&r) : "", "not_found");
		cr_expect_str_eq(json_get_string(details, "resource") ? json_get_string(details, "resource") : "",
		    cases[i].resource, "%s: %s", cases[i].path, r.body);
		http_resp_free(&r);
	}
	struct http_resp r = http_req(&svc, "GET",
	    "/api/v1/sessions/ses_000000000000000000000000/artifacts", NULL, NULL, true);
	cJSON *details = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "error"), "details");
	cr_expect_eq(r.status, 404, "%s", r.body);
	cr_expect_str_eq(json_get_string(details, "resource") ? json_get_string(details, "resource") : "", "session");
	http_resp_free(&r);
}

Test(artifacts, a_run_that_saves_nothing_lists_nothing)
{
	char *project = http_project_new(&svc, "artifacts");
	struct run run = run_to_end(project, "no-artifact", NULL);
	struct http_resp r = list_artifacts(run.session, "");

	cr_expect_eq(cJSON_GetArraySize(r.json), 0, "artifacts: %s", r.body);
	http_resp_free(&r);
	r = list_artifacts(run.session, "?all=true");
	cr_expect_eq(cJSON_GetArraySize(r.json), 0, "all artifacts: %s", r.body);
	http_resp_free(&r);
	free(project);
}

Test(artifacts, a_second_save_of_a_path_replaces_it_in_the_list)
{
	struct report rep = report_make();
	struct run second = run_to_end(rep.project, NULL, rep.run.session);
	struct http_resp newest = list_artifacts(rep.run.session, "");
	struct http_resp all = list_artifacts(rep.run.session, "?all=true");
	const char *path = json_get_string(rep.artifact, "path");
	cJSON *a;
	int in_newest = 0, in_all = 0;
	char prev[64] = "~";

	cJSON_ArrayForEach(a, newest.json) {
		cr_expect_lt(strcmp(json_get_string(a, "id"), prev), 0, "not newest first: %s", newest.body);
		snprintf(prev, sizeof prev, "%s", json_get_string(a, "id"));
		if (strcmp(json_get_string(a, "path"), path) == 0) {
			in_newest++;
			cr_expect_str_eq(json_get_string(a, "runId"), second.id, "the listed %s is not the newest",
			    path);
		}
	}
	cr_expect_eq(in_newest, 1, "%s listed %d times: %s", path, in_newest, newest.body);
	prev[0] = '~';
	prev[1] = '\0';
	cJSON_ArrayForEach(a, all.json) {
		cr_expect_lt(strcmp(json_get_string(a, "id"), prev), 0, "not newest first: %s", all.body);
		snprintf(prev, sizeof prev, "%s", json_get_string(a, "id"));
		if (strcmp(json_get_string(a, "path"), path) == 0)
			in_all++;
	}
	cr_expect_eq(in_all, 2, "?all=true lists %s %d times: %s", path, in_all, all.body);
	/* The older version is still there to download. */
	struct fetch f = download(rep.content, NULL);
	cr_expect_eq(f.status, 200);
	cr_expect(f.len == rep.len && memcmp(f.body, rep.bytes, f.len) == 0);
	fetch_free(&f);
	http_resp_free(&newest);
	http_resp_free(&all);
	report_free(&rep);
}

Test(artifacts, paging_and_bad_query_parameters)
{
	char *project = http_project_new(&svc, "artifacts");
	struct run run = run_to_end(project, "multi-file", NULL);
	struct http_resp whole = list_artifacts(run.session, "?all=true");
	int total = cJSON_GetArraySize(whole.json), seen = 0;
	char query[160] = "?all=true&limit=1";
	static const char *const bad[] = { "?limit=0", "?limit=x", "?cursor=prj_000000000000000000000000",
		"?all=yes" };

	cr_assert_geq(total, 2, "multi-file saved %d files: %s", total, whole.body);
	/* Follow Link: rel="next" one item at a time. */
	for (;;) {
		struct http_resp page = list_artifacts(run.session, query);
		char *link = http_header(&page, "Link");
		const cJSON *want = cJSON_GetArrayItem(whole.json, seen);

		cr_assert_eq(cJSON_GetArraySize(page.json), 1, "page %d: %s", seen, page.body);
		cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(page.json, 0), "id"), json_get_string(want, "id"));
		seen++;
		http_resp_free(&page);
		if (link == NULL)
			break;
		cr_assert_lt(seen, total, "a Link past the last item: %s", link);
		char *start = strchr(link, '?'), *end = strchr(link, '>');
		cr_assert(start && end && end > start, "Link %s", link);
		snprintf(query, sizeof query, "%.*s", (int)(end - start), start);
		cr_expect(strstr(query, "all=true") != NULL, "the next page forgets all: %s", link);
		free(link);
	}
	cr_expect_eq(seen, total);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char path[160];
		struct http_resp r;

		snprintf(path, sizeof path, "/api/v1/sessions/%s/artifacts%s", run.session, bad[i]);
		r = http_req(&svc, "GET", path, NULL, NULL, true);
		cr_expect_eq(r.status, 400, "%s: %ld", bad[i], r.status);
		cr_expect_str_eq(http_error_code(&r) ? http_error_code(&r) : "", "invalid_request");
		http_resp_free(&r);
	}
	http_resp_free(&whole);
	free(project);
}

Test(artifacts, a_missing_store_file_is_a_500_not_a_crash)
{
	struct report rep = report_make();
	const char *version = json_get_string(rep.artifact, "version");
	char store_file[512], *log, *path_seen;
	struct http_resp r;
	size_t len;

	snprintf(store_file, sizeof store_file, "%s/artifacts/%.2s/%s", svc.home, version + 7,
	    version + 7);
	cr_assert_eq(unlink(store_file), 0, "no store file %s", store_file);
	r = http_req(&svc, "GET", rep.content, NULL, NULL, true);
	cr_expect_eq(r.status, 500);
	cr_expect_str_eq(http_error_code(&r) ? http_error_code(&r) : "", "internal_error");
	path_seen = strstr(r.body, svc.home);
	cr_expect_null(path_seen, "the error shows a path: %s", r.body);
	http_resp_free(&r);
	/* The service is still there, and says why in its log. */
	r = http_req(&svc, "GET", "/api/v1/doctor", NULL, NULL, true);
	cr_expect_eq(r.status, 200);
	http_resp_free(&r);
	snprintf(store_file, sizeof store_file, "%s/taskdeckd.log", svc.home);
	log = (char *)slurp(store_file, &len);
	log = realloc(log, len + 1);
	log[len] = '\0';
	cr_expect(strstr(log, json_get_string(rep.artifact, "id")) != NULL,
	    "no log line names the artifact");
	free(log);
	report_free(&rep);
}

/* Free bytes on the file system of path. */
static uint64_t
free_bytes(const char *path)
{
	struct statvfs v;

	cr_assert_eq(statvfs(path, &v), 0);
	return (uint64_t)v.f_bavail * v.f_frsize;
}

Test(artifacts, a_1_gib_artifact_downloads_in_bounded_memory_and_resumes)
{
	char *project, content[128];
	struct run run;
	struct http_resp r;
	const cJSON *big;
	char version[80], range[64], match[128];
	unsigned char digest[crypto_hash_sha256_BYTES];
	struct fetch f = { 0 };
	uint64_t size;
	long before;
	CURLcode rc;

	if (free_bytes(svc.home) < 4 * GIB) {
		uint64_t have = free_bytes(svc.home);

		/* Criterion does not run .fini after cr_skip; svc_destroy may run twice. */
		svc_destroy(&svc);
		cr_skip("needs 4 GiB free in /tmp for a 1 GiB artifact (workspace and "
		    "store), has %llu MiB", (unsigned long long)(have / MIB));
	}
	project = http_project_new(&svc, "artifacts");
	run = run_start(project, "big-artifact", NULL);
	run_wait(&run, 600);
	cr_assert_str_eq(run.status, "completed");
	r = list_artifacts(run.session, "");
	big = find_named(r.json, "big.bin");
	cr_assert_not_null(big, "no big.bin in %s", r.body);
	size = (uint64_t)json_num(big, "size");
	snprintf(version, sizeof version, "%s", json_get_string(big, "version"));
	snprintf(content, sizeof content, "/api/v1/artifacts/%s/content", json_get_string(big, "id"));
	http_resp_free(&r);
	cr_assert_geq(size, GIB, "big.bin has %llu bytes", (unsigned long long)size);

	/* Whole download: the service's resident set must not follow the body. */
	before = rss_kib(svc.pid);
	f.watch_pid = svc.pid;
	f.rss_max_kib = before;
	crypto_hash_sha256_init(&f.hash);
	rc = fetch(content, NULL, &f);
	cr_assert_eq(rc, CURLE_OK, "%s", curl_easy_strerror(rc));
	cr_expect_eq(f.status, 200);
	cr_expect_eq(f.received, size);
	crypto_hash_sha256_final(&f.hash, digest);
	char got[80] = "sha256:";
	sodium_bin2hex(got + 7, 65, digest, sizeof digest);
	cr_expect_str_eq(got, version, "the downloaded bytes do not hash to the version");
	long after = rss_kib(svc.pid);
	if (after > f.rss_max_kib)
		f.rss_max_kib = after;
	cr_expect_lt(f.rss_max_kib - before, RSS_GROWTH_MAX_KIB,
	    "VmRSS grew by %ld KiB while serving 1 GiB (before %ld KiB)",
	    f.rss_max_kib - before, before);
	fetch_free(&f);

	/* Interrupted after about 300 MiB, then resumed with Range and If-Range. */
	f.stop_after = 300 * MIB + 12345;
	crypto_hash_sha256_init(&f.hash);
	rc = fetch(content, NULL, &f);
	cr_assert_eq(rc, CURLE_WRITE_ERROR, "the first part was not interrupted: %s",
	    curl_easy_strerror(rc));
	cr_assert_gt(f.received, 0);
	struct fetch rest = { 0 };
	snprintf(range, sizeof range, "Range: bytes=%llu-", (unsigned long long)f.received);
	snprintf(match, sizeof match, "If-Range: \"%s\"", version);
	rest.hash = f.hash;
	rc = fetch(content, (const char *[]){ range, match, NULL }, &rest);
	cr_assert_eq(rc, CURLE_OK, "%s", curl_easy_strerror(rc));
	cr_expect_eq(rest.status, 206);
	cr_expect_eq(f.received + rest.received, size, "%llu + %llu bytes",
	    (unsigned long long)f.received, (unsigned long long)rest.received);
	crypto_hash_sha256_final(&rest.hash, digest);
	sodium_bin2hex(got + 7, 65, digest, sizeof digest);
	cr_expect_str_eq(got, version, "the resumed bytes do not hash to the version");
	fetch_free(&rest);
	fetch_free(&f);
	free(project);
}
