#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "taskdeck.h"

struct svc svc;

void
svc_setup(void)
{
	svc_start(&svc);
}

void
svc_setup_env(void)
{
	svc_start(&svc);
	svc_export_env(&svc);
}

void
svc_teardown(void)
{
	svc_destroy(&svc);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

const char *
harness_bin(const char *name)
{
	static __thread char path[512];
	const char *dir = getenv("TD_BUILDDIR");

	snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
	return path;
}

char *
harness_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data, chunk[8192];
	size_t n, have = 0;

	if (len != NULL)
		*len = 0;
	if (f == NULL)
		return NULL;
	data = calloc(1, 1);
	cr_assert_not_null(data);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		data = realloc(data, have + n + 1);
		cr_assert_not_null(data);
		memcpy(data + have, chunk, n);
		have += n;
		data[have] = '\0';
	}
	fclose(f);
	if (len != NULL)
		*len = have;
	return data;
}

static void
read_token(struct svc *s)
{
	char path[512];
	char *t;

	snprintf(path, sizeof path, "%s/token", s->home);
	t = harness_slurp(path, NULL);
	cr_assert_not_null(t, "token file missing in %s", s->home);
	t[strcspn(t, "\r\n")] = '\0';
	snprintf(s->token, sizeof s->token, "%s", t);
	free(t);
}

void
svc_restart(struct svc *s)
{
	char discovery[512], log[512];
	const char *bin = harness_bin("taskdeckd");

	snprintf(discovery, sizeof discovery, "%s/service.json", s->home);
	snprintf(log, sizeof log, "%s/taskdeckd.log", s->home);
	s->pid = fork();
	cr_assert(s->pid >= 0);
	if (s->pid == 0) {
		char replay[512];

		snprintf(replay, sizeof replay, "%s/data/replay",
		    getenv("TD_SRCDIR") ? getenv("TD_SRCDIR") : ".");
		/* A test that dies leaves no service behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("TASKDECK_HOME", s->home, 1);
		/* test-readiness starts an uninstalled build with no replay override */
		if (getenv("TD_TEST_NO_REPLAY_DIR") == NULL)
			setenv("TASKDECK_REPLAY_DIR", replay, 1);
		const char *argv[16] = { bin, "--foreground", "--log", log };
		int n = 4;

		for (int i = 0; i < 7 && s->args[i]; i++)
			argv[n++] = s->args[i];
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		char *d = harness_slurp(discovery, NULL);
		int status;

		if (d != NULL) {
			cJSON *j = cJSON_Parse(d);
			cJSON *url = cJSON_GetObjectItem(j, "baseUrl");
			cJSON *pid = cJSON_GetObjectItem(j, "pid");

			if (cJSON_IsString(url) && cJSON_IsNumber(pid) &&
			    (pid_t)pid->valuedouble == s->pid) {
				snprintf(s->url, sizeof s->url, "%s", url->valuestring);
				sscanf(strrchr(s->url, ':') + 1, "%d", &s->port);
				cJSON_Delete(j);
				free(d);
				read_token(s);
				return;
			}
			cJSON_Delete(j);
			free(d);
		}
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			s->pid = 0;
			cr_assert_fail("taskdeckd exited during start-up (see %s)", log);
		}
		sleep_ms(10);
	}
	cr_assert_fail("taskdeckd did not become ready in 10 s");
}

/*
 * The template of a fresh home: under $TD_TEST_TMPDIR when set (the full-disk
 * rig, tests/integration/fulldisk.sh, points it at its small tmpfs), else /tmp.
 */
static void
home_template(struct svc *s)
{
	const char *dir = getenv("TD_TEST_TMPDIR");

	snprintf(s->home, sizeof s->home, "%s/tdtest-XXXXXX", dir && *dir ? dir : "/tmp");
}

void
svc_start(struct svc *s)
{
	memset(s, 0, sizeof *s);
	home_template(s);
	cr_assert_not_null(mkdtemp(s->home));
	svc_restart(s);
}

void
svc_start_with(struct svc *s, const char *const *args)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < 7 && args[i]; i++)
		s->args[i] = args[i];
	home_template(s);
	cr_assert_not_null(mkdtemp(s->home));
	svc_restart(s);
}

void
svc_stop(struct svc *s)
{
	char discovery[512];
	int status;

	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	cr_assert_eq(waitpid(s->pid, &status, 0), s->pid);
	s->pid = 0;
	cr_assert(WIFEXITED(status), "taskdeckd did not exit cleanly on SIGTERM");
	cr_assert_eq(WEXITSTATUS(status), 0, "taskdeckd exited with %d", WEXITSTATUS(status));
	snprintf(discovery, sizeof discovery, "%s/service.json", s->home);
	cr_assert_neq(access(discovery, F_OK), 0, "discovery file left behind");
}

void
svc_kill(struct svc *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

void
svc_destroy(struct svc *s)
{
	char cmd[600];

	if (s->pid > 0)
		svc_stop(s);
	if (s->home[0] == '\0')
		return;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->home);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", s->home);
	s->home[0] = '\0';
}

void
svc_export_env(const struct svc *s)
{
	setenv("TASKDECK_HOME", s->home, 1);
	unsetenv("TASKDECK_URL");
	unsetenv("TASKDECK_TOKEN");
}

static size_t
collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	char **dst = userdata;
	size_t old = *dst ? strlen(*dst) : 0;
	size_t n = size * nmemb;

	*dst = realloc(*dst, old + n + 1);
	memcpy(*dst + old, ptr, n);
	(*dst)[old + n] = '\0';
	return n;
}

static size_t
collect_headers(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	char **dst = userdata;
	size_t n = size * nmemb;

	/* Keep only the last response's headers (after a 100 Continue). */
	if (n > 5 && strncmp(ptr, "HTTP/", 5) == 0) {
		free(*dst);
		*dst = NULL;
	}
	return collect(ptr, size, nmemb, userdata);
}

struct http_resp
http_req(const struct svc *s, const char *method, const char *path,
    const char *body, const char *const *extra, bool with_token)
{
	struct http_resp r = { 0 };
	struct curl_slist *h = NULL;
	char url[1024], auth[160];
	CURL *c = curl_easy_init();
	CURLcode rc;

	snprintf(url, sizeof url, "%s%s", s->url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
		h = curl_slist_append(h, "Content-Type: application/json");
	}
	h = curl_slist_append(h, "Expect:");
	if (with_token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
		h = curl_slist_append(h, auth);
	}
	for (; extra && *extra; extra++)
		h = curl_slist_append(h, *extra);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_headers);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
	rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (r.body == NULL)
		r.body = strdup("");
	if (r.headers == NULL)
		r.headers = strdup("");
	r.json = cJSON_Parse(r.body);
	return r;
}

char *
http_header(const struct http_resp *r, const char *name)
{
	size_t n = strlen(name);

	for (const char *line = r->headers; line && *line; ) {
		const char *eol = strstr(line, "\r\n");
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		if (len > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			while (*v == ' ')
				v++;
			return strndup(v, len - (size_t)(v - line));
		}
		line = eol ? eol + 2 : NULL;
	}
	return NULL;
}

const char *
http_error_code(const struct http_resp *r)
{
	cJSON *e = cJSON_GetObjectItem(r->json, "error");
	cJSON *code = cJSON_GetObjectItem(e, "code");

	return cJSON_IsString(code) ? code->valuestring : NULL;
}

void
http_resp_free(struct http_resp *r)
{
	free(r->body);
	free(r->headers);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof *r);
}

int
run_capture(const struct svc *s, char **out, const char *fmt, ...)
{
	char cmd[4096];
	char buf[4096];
	va_list ap;
	FILE *p;
	size_t n, len = 0;
	int status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (s != NULL)
		svc_export_env(s);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen %s", cmd);
	*out = strdup("");
	while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
		*out = realloc(*out, len + n + 1);
		memcpy(*out + len, buf, n);
		len += n;
		(*out)[len] = '\0';
	}
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void
svc_prepare_home(struct svc *s)
{
	memset(s, 0, sizeof *s);
	home_template(s);
	cr_assert_not_null(mkdtemp(s->home));
}

void
svc_write_file(const struct svc *s, const char *name, const char *text)
{
	char path[512];
	int fd;
	size_t len = strlen(text);

	snprintf(path, sizeof path, "%s/%s", s->home, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "cannot write %s", path);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static bool
run_is_final(const cJSON *run)
{
	const cJSON *st = cJSON_GetObjectItem(run, "status");

	return cJSON_IsString(st) && (strcmp(st->valuestring, "completed") == 0 ||
	    strcmp(st->valuestring, "failed") == 0 || strcmp(st->valuestring, "cancelled") == 0);
}

cJSON *
run_wait_final(const struct svc *s, const char *id, int timeout_ms)
{
	char path[128];
	struct timespec t0, t;

	snprintf(path, sizeof path, "/api/v1/runs/%s", id);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct http_resp r = http_req(s, "GET", path, NULL, NULL, true);
		cJSON *run;

		cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
		if (run_is_final(r.json)) {
			run = r.json;
			r.json = NULL;
			http_resp_free(&r);
			return run;
		}
		http_resp_free(&r);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			return NULL;
		sleep_ms(50);
	}
}

long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

struct td_client *
client_connect(void)
{
	struct td_client *c;
	struct td_error err;

	cr_assert_eq(td_connect(&c, NULL, &err), TD_OK, "td_connect: %s", err.message);
	return c;
}

char *
client_new_project(struct td_client *c, const char *name)
{
	struct td_new_project np = { .name = name };
	struct td_project *p;
	struct td_error err;
	char *id;

	cr_assert_eq(td_create_project(c, &np, NULL, &p, &err), TD_OK, "%s", err.message);
	id = strdup(p->id);
	td_project_free(p);
	return id;
}

char *
harness_fill_disk(const char *dir)
{
	static const size_t sizes[] = { 1024 * 1024, 64 * 1024, 4096, 512, 1 };
	char *path = NULL, *block = calloc(1, sizes[0]);
	int fd;

	cr_assert(asprintf(&path, "%s/.fill", dir) > 0 && block != NULL);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "cannot create %s: %s", path, strerror(errno));
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		ssize_t n;

		while ((n = write(fd, block, sizes[i])) > 0)
			;
		cr_assert(n == 0 || errno == ENOSPC || errno == EDQUOT,
		    "filling %s: %s", path, strerror(errno));
	}
	cr_assert_eq(close(fd), 0);
	free(block);
	return path;
}

void
harness_free_disk(char *path)
{
	cr_assert_eq(unlink(path), 0, "cannot remove %s: %s", path, strerror(errno));
	free(path);
}

struct http_resp
http_api(const struct svc *s, const char *method, const char *path, const char *body)
{
	return http_req(s, method, path, body, NULL, true);
}

cJSON *
http_get_json(const struct svc *s, const char *fmt, ...)
{
	char path[512];
	struct http_resp r;
	cJSON *j;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	r = http_api(s, "GET", path, NULL);
	cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
	j = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return j;
}

char *
http_project_new(const struct svc *s, const char *name)
{
	cJSON *body = cJSON_CreateObject();
	char *text, *id;
	struct http_resp r;

	cJSON_AddStringToObject(body, "name", name);
	text = cJSON_PrintUnformatted(body);
	r = http_api(s, "POST", "/api/v1/projects", text);
	cr_assert_eq(r.status, 201, "create project %s: %ld %s", text, r.status, r.body);
	cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r.json, "id")),
	    "create project %s: no id in %s", text, r.body);
	id = strdup(json_str_or_none(r.json, "id"));
	http_resp_free(&r);
	cJSON_free(text);
	cJSON_Delete(body);
	return id;
}

cJSON *
http_run_start(const struct svc *s, const char *fmt, ...)
{
	char body[8192];
	struct http_resp r;
	cJSON *run;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	r = http_api(s, "POST", "/api/v1/runs", body);
	cr_assert_eq(r.status, 201, "startRun %s: %ld %s", body, r.status, r.body);
	cr_assert(json_get_string(r.json, "id") != NULL && json_get_string(r.json, "sessionId") != NULL,
	    "startRun %s: no id or sessionId in %s", body, r.body);
	run = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return run;
}

cJSON *
http_replay_run(const struct svc *s, const char *prompt, const char *project,
    const char *model, const char *extra)
{
	return http_run_start(s, "{\"project\":\"%s\",\"prompt\":\"%s\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"%s\"}%s}", project, prompt, model, extra);
}

cJSON *
run_final_within(const struct svc *s, const char *id, const char *status, int timeout_ms)
{
	cJSON *run = run_wait_final(s, id, timeout_ms);

	cr_assert_not_null(run, "run %s is not final after %d ms", id, timeout_ms);
	if (status != NULL)
		cr_assert_str_eq(json_str_or_none(run, "status"), status, "run %s ended %s, want %s: %s",
		    id, json_str_or_none(run, "status"), status, cJSON_PrintUnformatted(run));
	return run;
}

const char *
json_str_or_none(const cJSON *obj, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));

	return v ? v : "(none)";
}

double
json_num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

void
run_output_wait(const struct svc *s, const char *run_id, int timeout_ms, const char *needle)
{
	long deadline = mono_ms() + timeout_ms;

	for (;;) {
		cJSON *h = http_get_json(s, "/api/v1/runs/%s/events?limit=1000", run_id);
		const cJSON *e;
		bool has = false;

		cJSON_ArrayForEach(e, h) {
			if (strcmp(json_str_or_none(e, "type"), "run.output") == 0 &&
			    strstr(json_str_or_none(cJSON_GetObjectItem(e, "data"), "delta"), needle))
				has = true;
		}
		cJSON_Delete(h);
		if (has)
			return;
		cr_assert(mono_ms() < deadline, "run %s never streamed \"%s\"", run_id, needle);
		sleep_ms(50);
	}
}

char *
text_kv(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *line = text; line != NULL && *line != '\0'; ) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		if (len >= n + 2 && strncmp(line, key, n) == 0 && line[n] == ':' &&
		    line[n + 1] == ' ')
			return strndup(line + n + 2, len - n - 2);
		line = eol ? eol + 1 : NULL;
	}
	return NULL;
}

void
assert_text_kv(const char *text, const char *key, const char *want)
{
	char *v = text_kv(text, key);

	cr_assert_not_null(v, "no '%s:' line in:\n%s", key, text);
	cr_assert_str_eq(v, want, "%s in:\n%s", key, text);
	free(v);
}

cJSON *
json_doc(const char *text)
{
	cJSON *doc = cJSON_Parse(text);

	cr_assert_not_null(doc, "not JSON: %s", text);
	return doc;
}

const char *
json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(obj, key);

	cr_assert(cJSON_IsString(v), "%s is not a string", key);
	return v->valuestring;
}

cJSON *
plan_wait_pending(const struct svc *s, const char *session, long version, int timeout_ms)
{
	long deadline = mono_ms() + timeout_ms;

	for (;;) {
		struct http_resp r;
		char path[128];

		snprintf(path, sizeof path, "/api/v1/sessions/%s/plan", session);
		r = http_api(s, "GET", path, NULL);
		if (r.status == 200 && json_num(r.json, "version") == version &&
		    strcmp(json_str_or_none(r.json, "status"), "awaiting-approval") == 0) {
			cJSON *plan = r.json;
			r.json = NULL;
			http_resp_free(&r);
			return plan;
		}
		cr_assert(mono_ms() < deadline, "plan version %ld never awaited approval: "
		    "%ld %s", version, r.status, r.body);
		http_resp_free(&r);
		sleep_ms(50);
	}
}

cJSON *
prompt_wait_pending(const struct svc *s, const char *run_id, const char *not_id, int timeout_ms)
{
	long deadline = mono_ms() + timeout_ms;

	for (;;) {
		cJSON *list = http_get_json(s, "/app/v1/permissions?run=%s", run_id), *p;

		if (cJSON_GetArraySize(list) == 1 && (not_id == NULL ||
		    strcmp(json_str_or_none(cJSON_GetArrayItem(list, 0), "id"), not_id) != 0)) {
			p = cJSON_DetachItemFromArray(list, 0);
			cJSON_Delete(list);
			return p;
		}
		cr_assert_leq(cJSON_GetArraySize(list), 1, "more than one pending prompt");
		cJSON_Delete(list);
		cr_assert(mono_ms() < deadline, "no pending prompt for %s", run_id);
		sleep_ms(50);
	}
}

void
svc_set_run_setting(const struct svc *s, const char *key, int value)
{
	char path[512], *text;
	cJSON *settings, *runs;

	snprintf(path, sizeof path, "%s/settings.json", s->home);
	text = harness_slurp(path, NULL);
	cr_assert(text != NULL, "no %s", path);
	settings = cJSON_Parse(text);
	free(text);
	cr_assert(settings != NULL, "%s is not JSON", path);
	runs = cJSON_GetObjectItem(settings, "runs");
	if (runs == NULL)
		runs = cJSON_AddObjectToObject(settings, "runs");
	cJSON_DeleteItemFromObject(runs, key);
	cJSON_AddNumberToObject(runs, key, value);
	text = cJSON_Print(settings);
	svc_write_file(s, "settings.json", text);
	free(text);
	cJSON_Delete(settings);
}

int
harness_closed_port(void)
{
	static int fd = -1, port;
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof addr;

	if (fd >= 0)
		return port;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0, "bind: %s", strerror(errno));
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	port = ntohs(addr.sin_port);
	return port;
}
