/*
 * The MCP client against real servers: @modelcontextprotocol/server-everything
 * from the npm registry (stdio and Streamable HTTP, from the test cache
 * TD_CACHE) and tests/mcp-failserver for the failures.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "mcp.h"
#include "xalloc.h"

TestSuite(mcp, .timeout = 60);

static char err[2048];

static const char *
failserver(void)
{
	static char path[512];
	const char *b = getenv("TD_BUILDDIR");

	snprintf(path, sizeof path, "%s/tests/mcp-failserver", b ? b : ".");
	return path;
}

/* dist/index.js of server-everything, or skips when there is no cache at all. */
static const char *
everything(void)
{
	static char path[512];
	const char *cache = getenv("TD_CACHE");
	struct stat st;

	if (cache == NULL || *cache == '\0')
		cr_skip_test("TD_CACHE is not set: run ./quickstart check (or "
		    "TD_CACHE=$(scripts/test-deps)) for the MCP servers from npm");
	snprintf(path, sizeof path, "%s/npm/server-everything/node_modules/"
	    "@modelcontextprotocol/server-everything/dist/index.js", cache);
	cr_assert_eq(stat(path, &st), 0, "%s is missing: run scripts/test-deps", path);
	return path;
}

/* A whole (small) file, NUL-terminated; "" when it cannot be read. */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = xcalloc(1, 65536);

	if (f != NULL) {
		size_t n = fread(text, 1, 65535, f);

		text[n] = '\0';
		fclose(f);
	}
	return text;
}

static char *const *
base_env(void)
{
	static char path[1100], *env[3];

	snprintf(path, sizeof path, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	env[0] = path;
	env[1] = "HOME=/tmp";
	env[2] = NULL;
	return env;
}

/* Number of live processes (zombies excluded) in process group pgid. */
static int
group_size(int pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], stat_text[1024], *p, state;
		int pid, ppid, pgrp;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(stat_text, sizeof stat_text, f) != NULL &&
		    (p = strrchr(stat_text, ')')) != NULL &&
		    sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
		    pgrp == pgid && state != 'Z')
			n++;
		(void)pid;
		fclose(f);
	}
	closedir(d);
	return n;
}

static struct mcp_client *
open_fail(const char *mode, int timeout_ms)
{
	char *args[] = { (char *)mode, NULL };
	struct mcp_limits lim = { .request_timeout_ms = timeout_ms };
	struct mcp_client *c = mcp_open_stdio(failserver(), args, base_env(), "/", &lim, err,
	    sizeof err);

	cr_assert_not_null(c, "%s", err);
	return c;
}

static struct mcp_tool *
find_tool(struct mcp_tool *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

/* The text of the first content item of a CallToolResult. */
static const char *
first_text(const cJSON *result)
{
	const cJSON *content = cJSON_GetObjectItem(result, "content");

	return json_get_string(cJSON_GetArrayItem(content, 0), "text");
}

static void
close_and_check_gone(struct mcp_client *c)
{
	int pgid = mcp_server_pid(c);

	cr_assert_gt(pgid, 0);
	mcp_close(c);
	/* SIGKILL is sent to the group by then; a loaded machine may take a moment to
	 * finish the exit of a grandchild that mcp_close does not reap itself. */
	for (int i = 0; i < 100 && group_size(pgid) != 0; i++)
		usleep(20000);
	cr_assert_eq(group_size(pgid), 0, "processes left in group %d", pgid);
}

Test(mcp, everything_over_stdio)
{
	char *args[] = { (char *)everything(), "stdio", NULL };
	struct mcp_client *c = mcp_open_stdio("node", args, base_env(), "/tmp", NULL, err,
	    sizeof err);
	struct mcp_tool *tools, *echo;
	size_t n;
	cJSON *result, *arg = cJSON_Parse("{\"message\":\"hello from taskdeck\"}");

	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	/* The npm server speaks initialize only: the fallback was taken. */
	cr_assert_str_eq(mcp_protocol_version(c), "2025-11-25");
	cr_assert_str_eq(mcp_server_name(c), "mcp-servers/everything");
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_assert_gt(n, 5);
	echo = find_tool(tools, n, "echo");
	cr_assert_not_null(echo);
	cr_assert(echo->read_only_hint);
	cr_assert_str_eq(json_get_string(echo->input_schema, "type"), "object");
	cr_assert_not_null(find_tool(tools, n, "get-sum"));
	cr_assert(!find_tool(tools, n, "toggle-simulated-logging")->read_only_hint);
	cr_assert_eq(mcp_call_tool(c, "echo", arg, &result, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(first_text(result), "Echo: hello from taskdeck");
	cJSON_Delete(result);
	cJSON_Delete(arg);
	mcp_tools_free(tools, n);
	close_and_check_gone(c);
}

static int
free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;

	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	getsockname(fd, (struct sockaddr *)&a, &len);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

Test(mcp, everything_over_streamable_http)
{
	const char *js = everything();
	int port = free_port();
	char url[128], env_port[32];
	pid_t pid = fork();
	struct mcp_client *c = NULL;
	struct mcp_tool *tools;
	size_t n;
	cJSON *result, *arg = cJSON_Parse("{\"message\":\"over http\"}");
	const char *const headers[] = { "X-Test: secret-header-value", NULL };

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		snprintf(env_port, sizeof env_port, "%d", port);
		setenv("PORT", env_port, 1);
		setpgid(0, 0);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execlp("node", "node", js, "streamableHttp", (char *)NULL);
		_exit(127);
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	/* Node takes a moment to listen. */
	for (int i = 0; i < 300; i++) {
		c = mcp_open_http(url, headers, NULL, err, sizeof err);
		cr_assert_not_null(c, "%s", err);
		if (mcp_handshake(c, err, sizeof err) == 0)
			break;
		cr_assert(strstr(err, "secret-header-value") == NULL);
		mcp_close(c);
		c = NULL;
		usleep(50000);
	}
	cr_assert_not_null(c, "no handshake over HTTP: %s", err);
	cr_assert_str_eq(mcp_protocol_version(c), "2025-11-25");
	cr_assert_eq(mcp_server_pid(c), -1);
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_assert_not_null(find_tool(tools, n, "echo"));
	cr_assert_eq(mcp_call_tool(c, "echo", arg, &result, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(first_text(result), "Echo: over http");
	cJSON_Delete(result);
	cJSON_Delete(arg);
	mcp_tools_free(tools, n);
	mcp_close(c);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Starts node on script with PORT (and TOKEN); waits until it listens. */
static pid_t
node_server(const char *script, const char *arg, int port, const char *token)
{
	char env_port[32];
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		snprintf(env_port, sizeof env_port, "%d", port);
		setenv("PORT", env_port, 1);
		if (token != NULL)
			setenv("TOKEN", token, 1);
		setpgid(0, 0);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execlp("node", "node", script, arg, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		bool up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;

		close(fd);
		if (up)
			break;
		usleep(50000);
	}
	return pid;
}

Test(mcp, modern_server_over_http_with_a_bearer_header)
{
	char script[512], url[128];
	const char *src = getenv("TD_SRCDIR");
	int port = free_port();
	pid_t pid;
	const char *const good[] = { "Authorization: Bearer tok-0451", NULL };
	const char *const bad[] = { "Authorization: Bearer tok-wrong", NULL };
	struct mcp_client *c;
	struct mcp_tool *tools;
	size_t n;
	cJSON *result;

	everything();	/* node comes with the test dependencies */
	snprintf(script, sizeof script, "%s/tests/mcp/modern-http-server.js", src ? src : ".");
	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	pid = node_server(script, NULL, port, "tok-0451");

	/* A wrong token: HTTP 401 to the probe and to initialize, and no token in the message. */
	c = mcp_open_http(url, bad, NULL, err, sizeof err);
	cr_assert_not_null(c);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	cr_expect_str_eq(err, "the server answered HTTP 401 to initialize: unauthorized");
	mcp_close(c);

	c = mcp_open_http(url, good, NULL, err, sizeof err);
	cr_assert_not_null(c);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_expect_str_eq(mcp_protocol_version(c), "2026-07-28");
	cr_expect_str_eq(mcp_server_name(c), "modern-http");
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(tools[0].name, "whoami");
	mcp_tools_free(tools, n);
	cr_assert_eq(mcp_call_tool(c, "whoami", NULL, &result, err, sizeof err), 0, "%s", err);
	cr_expect_str_eq(first_text(result), "authorized");
	cJSON_Delete(result);
	mcp_close(c);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(mcp, http_server_that_is_not_there)
{
	char url[64];
	struct mcp_client *c;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", free_port());
	c = mcp_open_http(url, NULL, NULL, err, sizeof err);
	cr_assert_not_null(c);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	cr_assert(strstr(err, "cannot reach the server") != NULL, "%s", err);
	mcp_close(c);
	cr_assert_null(mcp_open_http("ftp://example.com/", NULL, NULL, err, sizeof err));
	cr_assert(strstr(err, "http://") != NULL, "%s", err);
}

static void
progress_ignored(void *ud, double progress, double total, const char *message)
{
	(void)ud, (void)progress, (void)total, (void)message;
}

Test(mcp, each_call_has_its_own_progress_token)
{
	struct mcp_client *c = open_fail("modern", 5000);
	cJSON *r1, *r2;

	mcp_set_progress(c, progress_ignored, NULL);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_call_tool(c, "progress-token", NULL, &r1, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_call_tool(c, "progress-token", NULL, &r2, err, sizeof err), 0, "%s", err);
	cr_assert_str_neq(first_text(r1), "(none)");
	cr_assert_str_neq(first_text(r1), first_text(r2), "one token for two calls: %s",
	    first_text(r1));
	cJSON_Delete(r1);
	cJSON_Delete(r2);
	close_and_check_gone(c);
}

Test(mcp, draft_refused_after_discover_falls_back_to_initialize)
{
	struct mcp_client *c = open_fail("halfmodern", 5000);
	struct mcp_tool *tools;
	size_t n;

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(mcp_protocol_version(c), "2026-07-28");
	/* tools/list of the draft refused: initialize, and the list again. */
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(mcp_protocol_version(c), "2025-06-18");
	cr_assert_str_eq(mcp_server_name(c), "failserver-legacy");
	cr_assert_gt(n, 0);
	mcp_tools_free(tools, n);
	close_and_check_gone(c);
}

Test(mcp, modern_server_without_initialize)
{
	struct mcp_client *c = open_fail("modern", 5000);
	struct mcp_tool *tools;
	size_t n;
	cJSON *result, *arg = cJSON_Parse("{\"text\":\"hey\"}");

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(mcp_protocol_version(c), "2026-07-28");
	cr_assert_str_eq(mcp_server_name(c), "failserver-modern");
	/* The server refuses requests without the version in _meta. */
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(tools[0].name, "shout");
	cr_assert_eq(mcp_call_tool(c, "shout", arg, &result, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(first_text(result), "shout:hey");
	cJSON_Delete(result);
	cJSON_Delete(arg);
	mcp_tools_free(tools, n);
	close_and_check_gone(c);
}

Test(mcp, legacy_server_pages_and_chatter)
{
	struct mcp_client *c = open_fail("legacy", 5000);
	struct mcp_tool *tools;
	size_t n;

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(mcp_protocol_version(c), "2025-06-18");
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(tools[0].name, "one");
	cr_assert(tools[0].read_only_hint);
	cr_assert_str_eq(tools[2].name, "three");
	cr_assert(!tools[2].read_only_hint);
	mcp_tools_free(tools, n);
	close_and_check_gone(c);
}

/* Earlier-revision servers that do not answer the probe with an error. */
Test(mcp, legacy_servers_that_ignore_or_die_on_the_probe)
{
	struct mcp_client *c = open_fail("probe-silent", 800);
	struct mcp_tool *tools;
	size_t n;

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_expect_str_eq(mcp_protocol_version(c), "2025-06-18");
	close_and_check_gone(c);

	c = open_fail("probe-exit", 5000);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_expect_str_eq(mcp_protocol_version(c), "2025-06-18");
	/* The process started again for initialize serves the session. */
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	cr_expect_eq(n, 3);
	mcp_tools_free(tools, n);
	close_and_check_gone(c);

	c = open_fail("future", 5000);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	cr_expect_str_eq(err, "the server speaks only MCP revisions this client does not know "
	    "(it refused 2026-07-28)");
	close_and_check_gone(c);
}

Test(mcp, tool_count_is_bounded)
{
	char *args[] = { "legacy", NULL };
	struct mcp_limits lim = { .max_tools = 2 };
	struct mcp_client *c = mcp_open_stdio(failserver(), args, base_env(), NULL, &lim, err,
	    sizeof err);
	struct mcp_tool *tools;
	size_t n;

	cr_assert_not_null(c);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), -1);
	cr_assert_str_eq(err, "the server lists more than 2 tools");
	cr_assert_null(tools);
	close_and_check_gone(c);
}

Test(mcp, server_dies_during_the_handshake)
{
	struct mcp_client *c = open_fail("die", 5000);

	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	cr_assert_str_eq(err, "the server exited during the handshake with status 3: "
	    "fatal: cannot open the cheese database");
	close_and_check_gone(c);
}

Test(mcp, server_never_answers)
{
	struct mcp_client *c = open_fail("silent", 700);
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert(strncmp(err, "no answer within 700 ms", 23) == 0, "%s", err);
	cr_assert_lt(b.tv_sec - a.tv_sec, 5);
	close_and_check_gone(c);
}

Test(mcp, oversized_message)
{
	struct mcp_client *c = open_fail("huge", 10000);

	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	cr_assert_str_eq(err, "message over 4 MiB from the server");
	close_and_check_gone(c);
}

/* A line that is not JSON, or JSON that is not JSON-RPC, is skipped (and logged). */
Test(mcp, stray_lines_on_stdout_are_skipped)
{
	static const char *const modes[] = { "garbage", "notrpc" };

	for (size_t i = 0; i < 2; i++) {
		struct mcp_client *c = open_fail(modes[i], 5000);
		struct mcp_tool *tools;
		size_t n;

		cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s: %s", modes[i], err);
		cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
		cr_assert_eq(n, 3);
		mcp_tools_free(tools, n);
		close_and_check_gone(c);
	}
}

Test(mcp, an_oversized_answer_fails_that_call_only)
{
	struct mcp_client *c = open_fail("hugecall", 10000);
	cJSON *big = cJSON_Parse("{\"text\":\"big\"}"), *small = cJSON_Parse("{\"text\":\"hey\"}");
	cJSON *result;
	struct mcp_tool *tools;
	size_t n;

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	mcp_tools_free(tools, n);
	cr_assert_eq(mcp_call_tool(c, "one", big, &result, err, sizeof err), -1);
	cr_assert_str_eq(err, "message over 4 MiB from the server");
	cr_assert_eq(mcp_call_tool(c, "one", small, &result, err, sizeof err), 0, "%s", err);
	cr_assert_str_eq(first_text(result), "one:hey");
	cJSON_Delete(result);
	cJSON_Delete(big);
	cJSON_Delete(small);
	close_and_check_gone(c);
}

Test(mcp, requests_from_the_server_over_stdio)
{
	struct mcp_client *c = open_fail("asks", 5000);
	cJSON *result;
	const char *text;

	mcp_set_root(c, "/tmp/a work dir");
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_call_tool(c, "one", NULL, &result, err, sizeof err), 0, "%s", err);
	text = first_text(result);
	cr_expect_not_null(strstr(text, "roots/list: {\"result\":{\"roots\":[{\"uri\":"
	    "\"file:///tmp/a%20work%20dir\",\"name\":\"workspace\"}]}}"), "%s", text);
	cr_expect_not_null(strstr(text, "elicitation/create: {\"error\":{\"code\":-32601,"
	    "\"message\":\"Declined: taskdeck has no one to answer this form here (elicitation "
	    "is not supported)\"}}"), "%s", text);
	cr_expect_not_null(strstr(text, "sampling/createMessage: {\"error\":{\"code\":-32601,"
	    "\"message\":\"Declined: taskdeck does not let MCP servers use the run's model "
	    "(sampling is not supported)\"}}"), "%s", text);
	cJSON_Delete(result);
	close_and_check_gone(c);
}

/* Answers every form with its message, after a pause longer than the request's time. */
static cJSON *
slow_accept(struct mcp_client *c, const cJSON *params, void *ud, char **refused)
{
	cJSON *r = cJSON_CreateObject();

	(void)c;
	(void)refused;
	++*(int *)ud;
	usleep(900 * 1000);
	cJSON_AddStringToObject(r, "action", "accept");
	cJSON_AddItemToObject(cJSON_AddObjectToObject(r, "content"), "params",
	    cJSON_Duplicate(params, true));
	return r;
}

/* With someone to ask, a form is theirs to answer; their time is not the request's. */
Test(mcp, elicitation_goes_to_the_handler_and_its_time_does_not_count)
{
	struct mcp_client *c = open_fail("asks", 500);
	cJSON *result;
	const char *text;
	int asked = 0;

	mcp_set_elicitation(c, slow_accept, &asked, NULL);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_call_tool(c, "one", NULL, &result, err, sizeof err), 0, "%s", err);
	text = first_text(result);
	cr_expect_eq(asked, 1);
	cr_expect_not_null(strstr(text, "elicitation/create: {\"result\":{\"action\":\"accept\","
	    "\"content\":{\"params\":{}}}}"), "%s", text);
	cJSON_Delete(result);
	close_and_check_gone(c);
}

Test(mcp, an_unknown_revision_is_refused)
{
	struct mcp_client *c = open_fail("oldversion", 5000);

	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	cr_assert_str_eq(err, "the server answered MCP revision 1999-01-01, which this client "
	    "does not know (it speaks 2024-11-05 to 2025-11-25)");
	close_and_check_gone(c);
}

/* A call whose time runs out, or that is cancelled, is withdrawn with notifications/cancelled. */
Test(mcp, timeout_and_cancel_send_notifications_cancelled)
{
	char notices[] = "/tmp/td-notices-XXXXXX", env_notices[64], *text;
	char *args[] = { "slowcall", NULL };
	char *env[4] = { base_env()[0], "HOME=/tmp", env_notices, NULL };
	struct mcp_limits lim = { .request_timeout_ms = 600 };
	struct mcp_client *c;
	cJSON *result;
	int fd = mkstemp(notices), p[2];

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(env_notices, sizeof env_notices, "TD_NOTICES=%s", notices);
	c = mcp_open_stdio(failserver(), args, env, "/", &lim, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_call_tool(c, "one", NULL, &result, err, sizeof err), -1);
	cr_assert(strncmp(err, "no answer within 600 ms", 23) == 0, "%s", err);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	mcp_set_cancel_fd(c, p[0]);
	cr_assert_eq(mcp_call_tool(c, "two", NULL, &result, err, sizeof err), -1);
	cr_assert_str_eq(err, "cancelled");
	close_and_check_gone(c);
	text = slurp(notices);
	/* The handshake's ids come first: the calls are the next two. */
	cr_expect_not_null(strstr(text, "\"method\":\"notifications/cancelled\",\"params\":"
	    "{\"requestId\":"), "%s", text);
	cr_expect_not_null(strstr(text, "\"reason\":\"timed out\""), "%s", text);
	cr_expect_not_null(strstr(text, "\"reason\":\"cancelled\""), "%s", text);
	free(text);
	unlink(notices);
	close(p[0]);
	close(p[1]);
}

Test(mcp, close_kills_the_whole_group)
{
	struct mcp_client *c = open_fail("spawner", 5000);
	int pgid = mcp_server_pid(c);

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(group_size(pgid), 2, "the server and its sleeping grandchild");
	close_and_check_gone(c);
}

Test(mcp, close_kills_a_server_that_ignores_sigterm)
{
	struct mcp_client *c = open_fail("stubborn", 5000);
	struct timespec a, b;

	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	clock_gettime(CLOCK_MONOTONIC, &a);
	close_and_check_gone(c);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert_lt(b.tv_sec - a.tv_sec, 4);
}

Test(mcp, environment_is_exactly_envp)
{
	char *args[] = { "env", NULL };
	char *env[] = { "TD_PROBE=bound-value", NULL };
	struct mcp_client *c;
	struct mcp_tool *tools;
	size_t n;
	cJSON *result;

	setenv("TD_PROBE", "from-the-parent", 1);
	c = mcp_open_stdio(failserver(), args, env, NULL, NULL, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(mcp_list_tools(c, &tools, &n, err, sizeof err), 0, "%s", err);
	mcp_tools_free(tools, n);
	cr_assert_eq(mcp_call_tool(c, "env", NULL, &result, err, sizeof err), 0, "%s", err);
	/* "bound-value": 11 bytes, hash computed as the server does. */
	{
		unsigned sum = 0;
		char want[128];

		for (const char *p = "bound-value"; *p; p++)
			sum = sum * 31 + (unsigned char)*p;
		snprintf(want, sizeof want, "TD_PROBE: set, 11 bytes, hash %u", sum);
		cr_assert_str_eq(first_text(result), want);
	}
	cJSON_Delete(result);
	close_and_check_gone(c);
}

Test(mcp, command_not_found)
{
	char *env[] = { "PATH=/nonexistent", NULL };

	cr_assert_null(mcp_open_stdio("no-such-mcp-server", NULL, env, NULL, NULL, err,
	    sizeof err));
	cr_assert_str_eq(err, "cannot start the server: no-such-mcp-server: command not found");
}

Test(mcp, cancel_fd_interrupts_a_wait)
{
	struct mcp_client *c = open_fail("silent", 30000);
	int p[2];
	struct timespec a, b;

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	mcp_set_cancel_fd(c, p[0]);
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert_str_eq(err, "cancelled");
	cr_assert_lt(b.tv_sec - a.tv_sec, 3);
	close_and_check_gone(c);
	close(p[0]);
	close(p[1]);
}

/* Opens and handshakes with tests/mcp/legacy-http-server.js on port. */
static struct mcp_client *
legacy_http(int port, int timeout_ms)
{
	struct mcp_limits lim = { .request_timeout_ms = timeout_ms };
	char url[128];
	struct mcp_client *c;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	c = mcp_open_http(url, NULL, &lim, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	return c;
}

static pid_t
legacy_http_server(int port)
{
	char script[512];
	const char *src = getenv("TD_SRCDIR");

	everything();	/* node comes with the test dependencies */
	snprintf(script, sizeof script, "%s/tests/mcp/legacy-http-server.js", src ? src : ".");
	return node_server(script, NULL, port, NULL);
}

/* The text of calling tool, which must succeed (a static buffer). */
static const char *
call_text(struct mcp_client *c, const char *tool)
{
	static char text[2048];
	cJSON *result;

	cr_assert_eq(mcp_call_tool(c, tool, NULL, &result, err, sizeof err), 0, "%s: %s", tool,
	    err);
	snprintf(text, sizeof text, "%s", first_text(result) ? first_text(result) : "");
	cJSON_Delete(result);
	return text;
}

Test(mcp, streamable_http_done_right)
{
	int port = free_port();
	pid_t pid = legacy_http_server(port);
	struct mcp_client *c = legacy_http(port, 20000);
	struct timespec a, b;
	cJSON *result;

	/* An answer on an event stream that stays open is read as it arrives. */
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_expect_str_eq(call_text(c, "instant"), "at once");
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_expect_lt(b.tv_sec - a.tv_sec, 5, "the answer waited for the end of the stream");

	/* Requests the server makes on the standalone stream are answered meanwhile. */
	mcp_close(c);
	c = legacy_http(port, 20000);
	cr_expect_str_eq(call_text(c, "ask"), "[{},{\"code\":-32601,\"message\":"
	    "\"Method not found\"}]");

	/* The reason in an error body is kept. */
	cr_assert_eq(mcp_call_tool(c, "broken", NULL, &result, err, sizeof err), -1);
	cr_expect_str_eq(err, "the server answered HTTP 500 to tools/call: the database is on fire");

	/* A session the server forgot: one new initialize, and the request again. */
	cr_expect_str_eq(call_text(c, "initializes"), "initializes: 2");
	cr_expect_str_eq(call_text(c, "expire"), "forgotten");
	cr_expect_str_eq(call_text(c, "initializes"), "initializes: 3");

	/* The session's DELETE names the protocol version too. */
	mcp_close(c);
	c = legacy_http(port, 20000);
	cr_expect_str_eq(call_text(c, "lastdelete"), "2025-11-25");
	mcp_close(c);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(mcp, roots_over_http_name_the_workspace)
{
	int port = free_port();
	pid_t pid = legacy_http_server(port);
	struct mcp_limits lim = { .request_timeout_ms = 20000 };
	char url[128];
	struct mcp_client *c;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	c = mcp_open_http(url, NULL, &lim, err, sizeof err);
	cr_assert_not_null(c);
	mcp_set_root(c, "/srv/ws");
	cr_assert_eq(mcp_handshake(c, err, sizeof err), 0, "%s", err);
	cr_expect_str_eq(call_text(c, "ask"), "[{},{\"roots\":[{\"uri\":\"file:///srv/ws\","
	    "\"name\":\"workspace\"}]}]");
	mcp_close(c);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(mcp, a_server_that_needs_an_oauth_sign_in_says_so)
{
	int port = free_port();
	pid_t pid = legacy_http_server(port);
	char url[128], want[512];
	struct mcp_client *c;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/needs-sign-in", port);
	c = mcp_open_http(url, NULL, NULL, err, sizeof err);
	cr_assert_not_null(c);
	cr_assert_eq(mcp_handshake(c, err, sizeof err), -1);
	/* At the probe already: a server of any revision behind OAuth needs the sign-in. */
	snprintf(want, sizeof want, "sign-in needed (scope files:read): the server answered HTTP "
	    "401 to server/discover and asks for an OAuth sign-in, described at http://127.0.0.1:%d/"
	    ".well-known/oauth-protected-resource/needs-sign-in; sign in with 'taskdeck connectors "
	    "login'", port);
	cr_expect_str_eq(err, want);
	mcp_close(c);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
