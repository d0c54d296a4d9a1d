/*
 * testConnector through a real taskdeckd against real MCP servers: the
 * npm-published @modelcontextprotocol/server-everything over stdio and over
 * Streamable HTTP (from the test cache, scripts/test-deps), and commands
 * that are no MCP server at all.  Afterwards no process of a test is left.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "taskdeck.h"

static char everything[1024];	/* server-everything's dist/index.js */
static char sdk[1024];		/* the reference SDK, for the expected tool count */

/* The servers' paths in the cache; false when TD_CACHE is unset. */
static bool
cache_paths(void)
{
	const char *cache = getenv("TD_CACHE");

	if (cache == NULL || *cache == '\0')
		return false;
	snprintf(everything, sizeof everything, "%s/npm/server-everything/node_modules/"
	    "@modelcontextprotocol/server-everything/dist/index.js", cache);
	snprintf(sdk, sizeof sdk, "%s/npm/server-everything/node_modules/@modelcontextprotocol/sdk",
	    cache);
	return true;
}

/* Criterion runs each test in a new process: the paths are set up there. */
static void
setup(void)
{
	cr_assert(cache_paths());
	svc_start(&svc);
	svc_export_env(&svc);
}

TestSuite(connector_test, .init = setup, .fini = svc_teardown, .timeout = 180);

/* Adds a connector with transport_json (and an optional binding); its id. */
static char *
add(const char *name, const char *transport_json, const char *bindings_json)
{
	struct td_client *c = client_connect();
	struct td_connector_request req = { .name = name, .transport_json = transport_json,
		.bindings_json = bindings_json };
	struct td_connector *con;
	struct td_error err;
	char *id;

	cr_assert_eq(td_add_connector(c, &req, NULL, &con, &err), TD_OK, "%s", err.message);
	id = strdup(con->id);
	td_connector_free(con);
	td_client_free(c);
	return id;
}

/* Runs td_test_connector on id; the result (td_connector_test_free it). */
static struct td_connector_test *
test(const char *id)
{
	struct td_client *c = client_connect();
	struct td_connector_test *t;
	struct td_error err;

	cr_assert_eq(td_test_connector(c, id, NULL, &t, &err), TD_OK, "%s", err.message);
	td_client_free(c);
	return t;
}

/* True while some process's argv holds needle. */
static bool
process_with(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;

	while (!found && d != NULL && (e = readdir(d)) != NULL) {
		char path[300], data[8192];
		size_t n;
		FILE *fp;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		if ((fp = fopen(path, "rb")) == NULL)
			continue;
		n = fread(data, 1, sizeof data - 1, fp);
		fclose(fp);
		for (size_t i = 0; i < n; i++) {
			if (data[i] == '\0')
				data[i] = ' ';
		}
		data[n] = '\0';
		found = strstr(data, needle) != NULL && strstr(data, "test-connectors-mcp") == NULL;
	}
	if (d != NULL)
		closedir(d);
	return found;
}

/* The children of the service, by their PPid. */
static int
service_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], line[256];
		FILE *fp;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
		if ((fp = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof line, fp) != NULL) {
			if (strncmp(line, "PPid:", 5) == 0 && atol(line + 5) == (long)svc.pid)
				n++;
		}
		fclose(fp);
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* Asserts that no process holds needle and the service has no child (after a short grace). */
static void
assert_nothing_left(const char *needle)
{
	long until = mono_ms() + 3000;

	while ((process_with(needle) || service_children() > 0) && mono_ms() < until) {
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	cr_assert(!process_with(needle), "a process of the test is left: %s", needle);
	cr_assert_eq(service_children(), 0, "the service has children left");
}

/* How many tools the reference SDK lists for server-everything over stdio. */
static long
reference_tool_count(void)
{
	char *out = NULL;
	char script[1100];
	long n;

	snprintf(script, sizeof script, "%s/tests/integration/mcp-count-tools.mjs",
	    getenv("TD_SRCDIR"));
	cr_assert_eq(run_capture(NULL, &out, "node %s %s node %s stdio 2>/dev/null", script, sdk,
	    everything), 0, "the reference client failed: %s", out);
	n = atol(out);
	free(out);
	cr_assert_gt(n, 0);
	return n;
}

Test(connector_test, server_everything_over_stdio)
{
	char transport[2048];
	struct td_connector_test *t;
	char *id;

	snprintf(transport, sizeof transport, "{\"type\":\"stdio\",\"command\":\"node\","
	    "\"args\":[\"%s\",\"stdio\"]}", everything);
	id = add("everything", transport, NULL);
	t = test(id);
	cr_assert(t->success, "%s", t->message);
	cr_assert_eq(t->tool_count, reference_tool_count(), "toolCount %ld: %s", t->tool_count,
	    t->message);
	td_connector_test_free(t);
	assert_nothing_left(everything);

	/* The test did not enable it. */
	struct td_client *c = client_connect();
	struct td_connector *con;
	struct td_error err;
	cr_assert_eq(td_get_connector(c, id, NULL, &con, &err), TD_OK);
	cr_assert(!con->enabled, "testing enabled the connector");
	td_connector_free(con);
	td_client_free(c);
	free(id);
}

/* A free loopback port. */
static int
free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

Test(connector_test, server_everything_over_streamable_http_with_a_bound_header)
{
	struct td_client *c = client_connect();
	struct td_credential_request cr = { .name = "tok", .kind = "bearer",
		.secret = "HTTP-TEST-SECRET" };
	struct td_credential *cred;
	struct td_connector_test *t = NULL;
	struct td_error err;
	char transport[512], bindings[256], port_env[32];
	char *id;
	pid_t server;
	int port = free_port();

	cr_assert_eq(td_create_credential(c, &cr, NULL, &cred, &err), TD_OK);
	snprintf(port_env, sizeof port_env, "%d", port);
	server = fork();
	if (server == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		setenv("PORT", port_env, 1);
		execlp("node", "node", everything, "streamableHttp", (char *)NULL);
		_exit(127);
	}
	snprintf(transport, sizeof transport, "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/mcp\"}",
	    port);
	snprintf(bindings, sizeof bindings, "[{\"credentialId\":\"%s\","
	    "\"target\":\"header:Authorization\"}]", cred->id);
	id = add("remote", transport, bindings);
	/* Give the server up to 15 s to listen. */
	for (long until = mono_ms() + 15000; mono_ms() < until;) {
		t = test(id);
		if (t->success)
			break;
		td_connector_test_free(t);
		t = NULL;
		sleep(1);
	}
	kill(server, SIGTERM);
	waitpid(server, NULL, 0);
	cr_assert_not_null(t, "server-everything over HTTP never answered the test");
	cr_assert_eq(t->tool_count, reference_tool_count(), "%s", t->message);
	cr_assert_null(strstr(t->json, "HTTP-TEST-SECRET"));
	td_connector_test_free(t);
	td_credential_free(cred);
	td_client_free(c);
	free(id);
}

Test(connector_test, failures_answer_success_false_and_leave_nothing)
{
	static const struct { const char *name, *transport, *needle; } cases[] = {
		{ "missing", "{\"type\":\"stdio\",\"command\":\"/nonexistent/mcp-server\"}",
		  "/nonexistent/mcp-server" },
		{ "exits", "{\"type\":\"stdio\",\"command\":\"/bin/sh\",\"args\":[\"-c\","
		  "\"exit 3 # td-exits-at-once\"]}", "td-exits-at-once" },
		{ "garbage", "{\"type\":\"stdio\",\"command\":\"/bin/sh\",\"args\":[\"-c\","
		  "\"echo this is not json; exec sleep 3011\"]}", "sleep 3011" },
		{ "silent", "{\"type\":\"stdio\",\"command\":\"/bin/sh\",\"args\":[\"-c\","
		  "\"exec sleep 3012\"]}", "sleep 3012" },
		{ "unreachable", NULL, "td-none" },
	};
	char unreachable[128];

	/* A port where a connection is refused, whatever this machine runs. */
	snprintf(unreachable, sizeof unreachable, "{\"type\":\"http\",\"url\":"
	    "\"http://127.0.0.1:%d/mcp\"}", harness_closed_port());
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *id = add(cases[i].name, cases[i].transport != NULL ? cases[i].transport :
		    unreachable, NULL);
		long t0 = mono_ms();
		struct td_connector_test *t = test(id);

		cr_assert(!t->success, "%s: success", cases[i].name);
		cr_assert_eq(t->tool_count, 0);
		cr_assert_gt(strlen(t->message), 10, "%s: no message", cases[i].name);
		cr_assert_lt(mono_ms() - t0, 40000, "%s took %ld ms", cases[i].name, mono_ms() - t0);
		cr_log_info("%s: %s (%ld ms)", cases[i].name, t->message, mono_ms() - t0);
		td_connector_test_free(t);
		assert_nothing_left(cases[i].needle);
		free(id);
	}
}

Test(connector_test, a_secret_echoed_by_the_server_is_masked)
{
	struct td_client *c = client_connect();
	struct td_credential_request cr = { .name = "k", .secret = "ECHOED-SECRET-9" };
	struct td_credential *cred;
	struct td_connector_test *t;
	struct td_error err;
	char bindings[256];
	char *id;

	cr_assert_eq(td_create_credential(c, &cr, NULL, &cred, &err), TD_OK);
	snprintf(bindings, sizeof bindings, "[{\"credentialId\":\"%s\",\"target\":\"env:KEY\"}]",
	    cred->id);
	id = add("echo", "{\"type\":\"stdio\",\"command\":\"/bin/sh\",\"args\":[\"-c\","
	    "\"echo key is $KEY >&2; echo key is $KEY; exit 1\"]}", bindings);
	t = test(id);
	cr_assert(!t->success);
	cr_assert_null(strstr(t->json, "ECHOED-SECRET-9"), "the secret came back: %s", t->json);
	td_connector_test_free(t);
	td_credential_free(cred);
	td_client_free(c);
	free(id);
}

Test(connector_test, unknown_and_builtin)
{
	struct td_client *c = client_connect();
	struct td_connector_test *t;
	struct td_error err;

	cr_assert_eq(td_test_connector(c, "con_00000000000000000000beef", NULL, &t, &err),
	    TD_NOT_FOUND);
	td_client_free(c);
	t = test("con_web");
	cr_assert(t->success, "%s", t->message);
	cr_assert_eq(t->tool_count, 1);
	td_connector_test_free(t);
}

/* A loopback server that takes connections and never answers on them. */
struct mute_server {
	int fd;
	atomic_int accepted;
	int conns[16];
};

static void *
mute_accept(void *arg)
{
	struct mute_server *m = arg;
	int c;

	while ((c = accept(m->fd, NULL, NULL)) >= 0) {
		if (atomic_load(&m->accepted) < 16)
			m->conns[atomic_load(&m->accepted)] = c;
		else
			close(c);
		atomic_fetch_add(&m->accepted, 1);
	}
	return NULL;
}

static void *
post_test(void *path)
{
	struct http_resp r = http_req(&svc, "POST", path, NULL, NULL, true);

	http_resp_free(&r);
	return NULL;
}

Test(connector_test, a_ninth_test_at_once_is_refused_with_retry_after)
{
	struct mute_server m = { .fd = socket(AF_INET, SOCK_STREAM, 0) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	pthread_t acceptor, tests[8];
	char transport[256], *id, *path, *retry;
	struct http_resp r;

	cr_assert(bind(m.fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(m.fd, 16) == 0 &&
	    getsockname(m.fd, (struct sockaddr *)&a, &len) == 0);
	snprintf(transport, sizeof transport, "{\"type\":\"http\",\"url\":"
	    "\"http://127.0.0.1:%d/mcp\"}", ntohs(a.sin_port));
	id = add("mute", transport, NULL);
	cr_assert(asprintf(&path, "/api/v1/connectors/%s/test", id) > 0);
	cr_assert_eq(pthread_create(&acceptor, NULL, mute_accept, &m), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(pthread_create(&tests[i], NULL, post_test, path), 0);
	/* Each of the eight waits for the answer to its handshake (up to 10 s). */
	while (atomic_load(&m.accepted) < 8)
		nanosleep(&(struct timespec){ 0, 10 * 1000000L }, NULL);
	r = http_req(&svc, "POST", path, NULL, NULL, true);
	cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
	cr_assert_str_eq(http_error_code(&r), "service_unavailable", "%s", r.body);
	cr_assert(strstr(r.body, "8 connector tests are running") != NULL, "%s", r.body);
	retry = http_header(&r, "Retry-After");
	cr_assert_str_eq(retry != NULL ? retry : "(none)", "1");
	free(retry);
	http_resp_free(&r);
	/* Their connections closed, the eight end at once. */
	for (int i = 0; i < 8; i++)
		close(m.conns[i]);
	for (int i = 0; i < 8; i++)
		pthread_join(tests[i], NULL);
	shutdown(m.fd, SHUT_RDWR);
	pthread_join(acceptor, NULL);
	close(m.fd);
	free(path);
	free(id);
}

Test(connector_test, cli_test_exits_0_or_1_with_the_message)
{
	char transport[2048], *id, *bad, *out = NULL;
	int rc;

	snprintf(transport, sizeof transport, "{\"type\":\"stdio\",\"command\":\"node\","
	    "\"args\":[\"%s\",\"stdio\"]}", everything);
	id = add("everything", transport, NULL);
	bad = add("gone", "{\"type\":\"stdio\",\"command\":\"/nonexistent/server\"}", NULL);
	rc = run_capture(&svc, &out, "%s connectors test %s", harness_bin("taskdeck"), id);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "success: yes"), "%s", out);
	free(out);
	rc = run_capture(&svc, &out, "%s --json connectors test %s", harness_bin("taskdeck"), bad);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert_not_null(strstr(out, "\"success\":false"), "%s", out);
	free(out);
	assert_nothing_left(everything);
	free(id);
	free(bad);
}

/* The parsed body of a request that must answer status. */
static cJSON *
api(const char *method, const char *path, const char *body, long status)
{
	struct http_resp r = http_req(&svc, method, path, body, NULL, true);
	cJSON *j;

	cr_assert_eq(r.status, status, "%s %s: %ld %s", method, path, r.status, r.body);
	cr_assert_null(strstr(r.body, "E2E-SECRET-"), "%s %s answered the secret", method, path);
	j = r.json;
	r.json = NULL;
	http_resp_free(&r);
	return j;
}

static char *
id_of(cJSON *j)
{
	char *id = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(j, "id")));

	cJSON_Delete(j);
	return id;
}

/* The run.tool event that ended the call of tool in events, or NULL. */
static const cJSON *
tool_end(const cJSON *events, const char *tool)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events) {
		const cJSON *d = cJSON_GetObjectItem(e, "data");
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(e, "type"));
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(d, "name"));
		const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(d, "status"));

		if (type != NULL && strcmp(type, "run.tool") == 0 && name != NULL &&
		    strcmp(name, tool) == 0 && status != NULL && strcmp(status, "started") != 0)
			return d;
	}
	return NULL;
}

Test(connector_test, a_run_calls_a_connector_tool_and_gets_the_real_answer)
{
	char body[2048], path[256], *cred, *con, *prj, *run, *text;
	const cJSON *echo, *sum;
	cJSON *j, *events;

	cred = id_of(api("POST", "/api/v1/credentials", "{\"name\":\"e2e\",\"kind\":\"api-key\","
	    "\"secret\":\"E2E-SECRET-5150\"}", 201));
	snprintf(body, sizeof body, "{\"name\":\"everything\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"node\",\"args\":[\"%s\",\"stdio\"]},\"credentialBindings\":["
	    "{\"credentialId\":\"%s\",\"target\":\"env:E2E_TOKEN\"}]}", everything, cred);
	con = id_of(api("POST", "/api/v1/connectors", body, 201));
	snprintf(path, sizeof path, "/api/v1/connectors/%s/enabled", con);
	cJSON_Delete(api("PUT", path, "{\"enabled\":true}", 200));
	prj = id_of(api("POST", "/api/v1/projects", "{\"name\":\"e2e\"}", 201));
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"ask the connector\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"connector\"}}", prj);
	run = id_of(api("POST", "/api/v1/runs", body, 201));

	j = run_wait_final(&svc, run, 90000);
	cr_assert_not_null(j, "the run did not finish");
	text = cJSON_PrintUnformatted(j);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "completed",
	    "%s", text);
	cr_assert_null(strstr(text, "E2E-SECRET-"), "the run shows the secret");
	free(text);
	cJSON_Delete(j);

	snprintf(path, sizeof path, "/api/v1/runs/%s/events", run);
	events = api("GET", path, NULL, 200);
	text = cJSON_PrintUnformatted(events);
	cr_assert_null(strstr(text, "E2E-SECRET-"), "an event holds the secret");
	echo = tool_end(events, "everything__echo");
	cr_assert_not_null(echo, "no run.tool for everything__echo: %s", text);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(echo, "status")), "completed");
	/* The real server's answer, not the transcript's. */
	cr_assert_not_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(echo, "summary")),
	    "Echo: hello from the replay"), "%s", text);
	sum = tool_end(events, "everything__get-sum");
	cr_assert_not_null(sum, "%s", text);
	cr_assert_not_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(sum, "summary")), "5"),
	    "%s", text);
	free(text);
	cJSON_Delete(events);
	assert_nothing_left(everything);

	/* The secret went to the server's environment only: not to disk, argv or the log. */
	{
		static const char *const files[] = { "taskdeck.db", "taskdeck.db-wal",
			"taskdeckd.log", NULL };
		for (const char *const *f = files; *f; f++) {
			char file[512], *data = NULL;
			size_t len = 0, n;
			char chunk[65536];
			FILE *fp;

			snprintf(file, sizeof file, "%s/%s", svc.home, *f);
			if ((fp = fopen(file, "rb")) == NULL)
				continue;
			while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
				data = realloc(data, len + n);
				memcpy(data + len, chunk, n);
				len += n;
			}
			fclose(fp);
			cr_assert_null(data ? memmem(data, len, "E2E-SECRET-", 11) : NULL,
			    "%s holds the secret", *f);
			free(data);
		}
		cr_assert(!process_with("E2E-SECRET-"), "a process has the secret in its argv");
	}
	free(cred);
	free(con);
	free(prj);
	free(run);
}

/* tests/mcp-failserver of the build. */
static const char *
failserver(void)
{
	static char path[1024];

	snprintf(path, sizeof path, "%s/tests/mcp-failserver", getenv("TD_BUILDDIR"));
	return path;
}

/* Asserts that no file of the service's home holds needle (the store, its journal, the log). */
static void
assert_no_file_holds(const char *needle)
{
	static const char *const files[] = { "taskdeck.db", "taskdeck.db-wal", "taskdeckd.log",
		NULL };

	for (const char *const *f = files; *f; f++) {
		char file[512], *data;
		size_t len = 0;

		snprintf(file, sizeof file, "%s/%s", svc.home, *f);
		data = harness_slurp(file, &len);
		cr_assert_null(data ? memmem(data, len, needle, strlen(needle)) : NULL,
		    "%s holds the secret", *f);
		free(data);
	}
}

/*
 * An HTTP server that refuses the handshake quoting the raw token of the
 * Authorization header (bound as "Bearer <token>"): the test's answer masks
 * it, plainly and \u-escaped.
 */
Test(connector_test, a_raw_header_value_echoed_by_an_http_server_is_masked)
{
	char transport[256], bindings[256], portarg[16], *cred, *id;
	int port = free_port();
	struct td_connector_test *t;
	pid_t server;

	snprintf(portarg, sizeof portarg, "%d", port);
	server = fork();
	cr_assert_geq(server, 0);
	if (server == 0) {
		execl(failserver(), "mcp-failserver", "http-echo", portarg, (char *)NULL);
		_exit(127);
	}
	cred = id_of(api("POST", "/api/v1/credentials", "{\"name\":\"tok\",\"kind\":\"bearer\","
	    "\"secret\":\"HTTP-ECHO-SECRET-3\"}", 201));
	snprintf(transport, sizeof transport, "{\"type\":\"http\",\"url\":"
	    "\"http://127.0.0.1:%d/mcp\"}", port);
	snprintf(bindings, sizeof bindings, "[{\"credentialId\":\"%s\","
	    "\"target\":\"header:Authorization\"}]", cred);
	id = add("echoer", transport, bindings);
	/* The server takes a moment to listen. */
	for (long until = mono_ms() + 5000;; usleep(50000)) {
		t = test(id);
		if (strstr(t->message, "cannot reach") == NULL || mono_ms() > until)
			break;
		td_connector_test_free(t);
	}
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	cr_assert(!t->success);
	cr_assert_not_null(strstr(t->message, "the token ****************** is not valid"),
	    "%s", t->message);
	cr_assert_null(strstr(t->json, "ECHO-SECRET-3"), "the secret came back: %s", t->json);
	td_connector_test_free(t);
	assert_no_file_holds("ECHO-SECRET-3");
	free(cred);
	free(id);
}

/*
 * A stdio server of a run that prints its secret on stderr while failing its
 * handshake: the run, its events and history, the store and the service log
 * hold the secret masked, never plainly.
 */
Test(connector_test, a_secret_a_run_connector_prints_is_masked)
{
	char body[2048], path[256], *cred, *con, *prj, *run, *text;
	cJSON *j, *events;

	cred = id_of(api("POST", "/api/v1/credentials", "{\"name\":\"loud\",\"kind\":"
	    "\"api-key\",\"secret\":\"LOUD-SECRET-2718\"}", 201));
	snprintf(body, sizeof body, "{\"name\":\"loud\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"%s\",\"args\":[\"loud\"]},\"credentialBindings\":["
	    "{\"credentialId\":\"%s\",\"target\":\"env:TD_PROBE\"}]}", failserver(), cred);
	con = id_of(api("POST", "/api/v1/connectors", body, 201));
	snprintf(path, sizeof path, "/api/v1/connectors/%s/enabled", con);
	cJSON_Delete(api("PUT", path, "{\"enabled\":true}", 200));
	prj = id_of(api("POST", "/api/v1/projects", "{\"name\":\"loud\"}", 201));
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"hello\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", prj);
	run = id_of(api("POST", "/api/v1/runs", body, 201));
	j = run_wait_final(&svc, run, 60000);
	cr_assert_not_null(j, "the run did not finish");
	text = cJSON_PrintUnformatted(j);
	cr_assert_null(strstr(text, "LOUD-SECRET-"), "the run shows the secret: %s", text);
	free(text);
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/api/v1/runs/%s/events", run);
	events = api("GET", path, NULL, 200);
	text = cJSON_PrintUnformatted(events);
	cr_assert_not_null(strstr(text, "refused the key ****************"),
	    "no run.tool line says why loud did not start: %s", text);
	cr_assert_null(strstr(text, "LOUD-SECRET-"), "an event holds the secret: %s", text);
	free(text);
	cJSON_Delete(events);
	assert_no_file_holds("LOUD-SECRET-");
	free(cred);
	free(con);
	free(prj);
	free(run);
}

/* The summary of the run.tool event that ended run_command in events, or "". */
static const char *
command_summary(const cJSON *events)
{
	const cJSON *d = tool_end(events, "run_command");
	const char *s = d != NULL ? cJSON_GetStringValue(cJSON_GetObjectItem(d, "summary")) : NULL;

	return s != NULL ? s : "";
}

/* Starts a run of the replay transcript model in project prj; its events once final. */
static cJSON *
run_replay(const char *prj, const char *model)
{
	char body[512], path[256], *run, *text;
	cJSON *j, *events;

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"use the memory\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"%s\"}}", prj, model);
	run = id_of(api("POST", "/api/v1/runs", body, 201));
	j = run_wait_final(&svc, run, 90000);
	cr_assert_not_null(j, "the run did not finish");
	text = cJSON_PrintUnformatted(j);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "completed",
	    "%s", text);
	free(text);
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/api/v1/runs/%s/events", run);
	events = api("GET", path, NULL, 200);
	free(run);
	return events;
}

Test(connector_test, server_memory_keeps_its_graph_in_its_state_directory_across_runs)
{
	const char *cache = getenv("TD_CACHE");
	char memory[1024], body[2048], path[256], file[1024], data[4096] = "", *con, *prj, *text;
	const cJSON *d;
	cJSON *events;
	struct stat st;
	FILE *fp;
	size_t n;

	snprintf(memory, sizeof memory, "%s/npm/server-memory/node_modules/@modelcontextprotocol/"
	    "server-memory/dist/index.js", cache);
	cr_assert_eq(stat(memory, &st), 0, "%s is missing: run scripts/test-deps", memory);
	/* Its graph file in its state directory, named through ${HOME}. */
	snprintf(body, sizeof body, "{\"name\":\"memory\",\"transport\":{\"type\":\"stdio\","
	    "\"command\":\"node\",\"args\":[\"%s\"],\"env\":{\"MEMORY_FILE_PATH\":"
	    "\"${HOME}/memory.jsonl\"}}}", memory);
	con = id_of(api("POST", "/api/v1/connectors", body, 201));
	snprintf(path, sizeof path, "/api/v1/connectors/%s/enabled", con);
	cJSON_Delete(api("PUT", path, "{\"enabled\":true}", 200));
	prj = id_of(api("POST", "/api/v1/projects", "{\"name\":\"memory\"}", 201));

	events = run_replay(prj, "memory-save");
	text = cJSON_PrintUnformatted(events);
	d = tool_end(events, "memory__create_entities");
	cr_assert_not_null(d, "%s", text);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "status")), "completed",
	    "%s", text);
	free(text);
	cJSON_Delete(events);
	snprintf(file, sizeof file, "%s/connector-state/%s/memory.jsonl", svc.home, con);
	fp = fopen(file, "r");
	cr_assert_not_null(fp, "the graph was not saved in %s", file);
	n = fread(data, 1, sizeof data - 1, fp);
	data[n] = '\0';
	fclose(fp);
	cr_assert_not_null(strstr(data, "Ada Lovelace"), "%s", data);

	/* A second run (a new server process) reads it back; its commands cannot. */
	events = run_replay(prj, "memory-read");
	text = cJSON_PrintUnformatted(events);
	/* The server fails add_observations for an entity its graph does not hold. */
	d = tool_end(events, "memory__add_observations");
	cr_assert_not_null(d, "%s", text);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "status")), "completed",
	    "%s", text);
	cr_assert_not_null(tool_end(events, "run_command"), "%s", text);
	cr_assert_null(strstr(command_summary(events), "exit status 0"),
	    "run_command read the connector's state: %s", text);
	free(text);
	cJSON_Delete(events);
	snprintf(file, sizeof file, "%s/connector-state/%s/memory.jsonl", svc.home, con);
	fp = fopen(file, "r");
	cr_assert_not_null(fp);
	n = fread(data, 1, sizeof data - 1, fp);
	data[n] = '\0';
	fclose(fp);
	cr_assert_not_null(strstr(data, "read back in a second run"), "%s", data);

	/* Removed with the connector. */
	snprintf(path, sizeof path, "/api/v1/connectors/%s", con);
	{
		struct http_resp r = http_req(&svc, "DELETE", path, NULL, NULL, true);

		cr_assert(r.status == 204 || r.status == 200, "%ld %s", r.status, r.body);
		http_resp_free(&r);
	}
	snprintf(file, sizeof file, "%s/connector-state/%s", svc.home, con);
	cr_assert_neq(stat(file, &st), 0, "%s is left after the connector was removed", file);
	free(con);
	free(prj);
}

Test(connector_test, desktop_commander_starts_with_its_config_in_its_state_directory)
{
	const char *cache = getenv("TD_CACHE");
	char dc[1024], body[2048], dir[1024], *con;
	struct td_connector_test *t;
	struct stat st;
	DIR *d;
	struct dirent *e;
	int entries = 0;

	snprintf(dc, sizeof dc, "%s/npm/desktop-commander/node_modules/@wonderwhy-er/"
	    "desktop-commander/dist/index.js", cache);
	cr_assert_eq(stat(dc, &st), 0, "%s is missing: run scripts/test-deps", dc);
	snprintf(body, sizeof body, "{\"type\":\"stdio\",\"command\":\"node\",\"args\":[\"%s\"]}",
	    dc);
	con = add("commander", body, NULL);
	t = test(con);
	cr_assert(t->success, "desktop-commander did not start: %s", t->message);
	cr_assert_gt(t->tool_count, 10, "%s", t->message);
	td_connector_test_free(t);
	/* What it wrote under $HOME is in its state directory. */
	snprintf(dir, sizeof dir, "%s/connector-state/%s", svc.home, con);
	d = opendir(dir);
	cr_assert_not_null(d, "no state directory %s", dir);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			entries++;
	closedir(d);
	cr_assert_gt(entries, 0, "desktop-commander wrote nothing in %s", dir);
	assert_nothing_left(dc);
	free(con);
}

int
main(int argc, char **argv)
{
	struct criterion_test_set *tests;
	struct stat st;
	int rc = 1;

	if (!cache_paths()) {
		fprintf(stderr, "test-connectors-mcp: skipped: the MCP servers come from the test "
		    "cache; run ./quickstart check (or export TD_CACHE=$(scripts/test-deps))\n");
		return 77;
	}
	if (stat(everything, &st) != 0 || stat(sdk, &st) != 0) {
		fprintf(stderr, "test-connectors-mcp: %s is missing from TD_CACHE; run "
		    "scripts/test-deps\n", everything);
		return 1;
	}
	tests = criterion_initialize();
	if (criterion_handle_args(argc, argv, true))
		rc = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return rc;
}
