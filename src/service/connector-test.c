/*
 * testConnector (connector-test.h): an isolated connection to a connector's
 * server with the MCP client of src/common/mcp.h: open, handshake, list the
 * tools, close.  No tool is called; the server's process group ends with it.
 */
#include <ftw.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "connector-test.h"
#include "log.h"
#include "mcp.h"
#include "redact.h"
#include "sandbox.h"
#include "timeutil.h"
#include "xalloc.h"

static int
remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	if (remove(path) != 0)
		log_debug("cannot remove %s after a connector test", path);
	return 0;
}

static cJSON *test_result(bool success, size_t tools, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static cJSON *
test_result(bool success, size_t tools, const char *fmt, ...)
{
	cJSON *r = cJSON_CreateObject();
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	cJSON_AddBoolToObject(r, "success", success);
	cJSON_AddNumberToObject(r, "toolCount", (double)tools);
	cJSON_AddStringToObject(r, "message", message);
	return r;
}

cJSON *
connector_test_run(const struct connector_launch *l)
{
	struct redact *secrets = redact_new();
	struct mcp_limits lim = { .request_timeout_ms = CONNECTOR_TEST_TIMEOUT_MS,
		.secrets = secrets };
	char err[512] = "", cwd[] = "/tmp/taskdeck-test-XXXXXX";
	struct mcp_client *c;
	struct mcp_tool *tools = NULL;
	size_t n = 0;
	cJSON *r;
	int64_t t0 = td_mono_ms(), t1 = 0, t2 = 0, t3 = 0;

	if (l->builtin) {
		redact_free(secrets);
		return test_result(true, 1, "%s is built in: its tool fetch_url runs inside the "
		    "agent", l->name);
	}
	for (char **v = l->secrets; v != NULL && *v != NULL; v++)
		redact_add(secrets, *v);
	if (l->http) {
		c = mcp_open_http(l->url, (const char *const *)l->headers, &lim, err, sizeof err);
	} else {
		/* A scratch working directory of its own, removed afterwards. */
		if (mkdtemp(cwd) == NULL) {
			redact_free(secrets);
			return test_result(false, 0, "cannot make a working directory for %s",
			    l->name);
		}
		/*
		 * In the sandbox a run's commands get, the scratch directory as its
		 * workspace: what the test sees is what a run will see.  This thread
		 * lives until mcp_close (sandbox_spawn's rule).
		 */
		struct sandbox_policy policy = {
			.profile = SANDBOX_WORKSPACE_WRITE,
			.workspace = cwd,
			.network = l->network,
			.hidden = (const char *const *)l->hidden,
			.allow_unconfined = l->allow_unconfined,
			.limits = &l->limits,
			.rw_paths = (const char *const *)l->rw_paths,
			.ro_paths = (const char *const *)l->ro_paths,
		};
		c = mcp_open_stdio_sandboxed(&policy, l->command, l->args, l->envp, cwd, &lim,
		    err, sizeof err);
	}
	t1 = td_mono_ms();
	if (c == NULL) {
		r = test_result(false, 0, "%s could not be started: %s", l->name, err);
	} else if (mcp_handshake(c, err, sizeof err) != 0) {
		r = test_result(false, 0, "%s did not complete the MCP handshake: %s", l->name, err);
	} else if ((t2 = td_mono_ms()), mcp_list_tools(c, &tools, &n, err, sizeof err) != 0) {
		r = test_result(false, 0, "%s did not list its tools: %s", l->name, err);
	} else {
		r = test_result(true, n, "%s answered (%s, MCP %s) and lists %zu tools", l->name,
		    mcp_server_name(c) ? mcp_server_name(c) : "unnamed server",
		    mcp_protocol_version(c), n);
	}
	t3 = td_mono_ms();
	mcp_tools_free(tools, n);
	mcp_close(c);
	log_debug("connector test of %s: open %lld ms, handshake %lld ms, tools %lld ms, "
	    "close %lld ms", l->name, (long long)(t1 - t0), (long long)(t2 ? t2 - t1 : 0),
	    (long long)(t2 ? t3 - t2 : 0), (long long)(td_mono_ms() - t3));
	if (!l->http && !l->builtin)
		nftw(cwd, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	/* What the server said is masked already; the message made of it is masked again. */
	redact_str(secrets, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "message")));
	redact_free(secrets);
	return r;
}

/* How many connector tests run at once at most. */
static atomic_int connector_tests_running;

bool
connector_tests_begin(void)
{
	if (atomic_fetch_add(&connector_tests_running, 1) >= CONNECTOR_TESTS_MAX) {
		atomic_fetch_sub(&connector_tests_running, 1);
		return false;
	}
	return true;
}

void
connector_tests_end(void)
{
	atomic_fetch_sub(&connector_tests_running, 1);
}

bool
connector_tests_drain(int timeout_ms)
{
	for (int waited = 0; atomic_load(&connector_tests_running) > 0; waited += 10) {
		struct timespec ts = { 0, 10 * 1000000L };

		if (waited >= timeout_ms)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}
