/* testConnector: a connector's server opened, greeted, listed, closed (connector-test.h). */
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "connector-launch.h"
#include "connector-oauth.h"
#include "connector-test.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "redact.h"
#include "sandbox.h"
#include "timeutil.h"
#include "xalloc.h"

static int
connector_test_remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	if (remove(path) != 0)
		log_debug("cannot remove %s after a connector test", path);
	return 0;
}

static cJSON *connector_test_result(bool success, size_t tools, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static cJSON *
connector_test_result(bool success, size_t tools, const char *fmt, ...)
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

/*
 * A test of the prepared connector: {"success", "toolCount", "message"}.
 * Blocks for up to a few MCP request timeouts: never on an HTTP thread.
 */
static cJSON *
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
	int64_t t0 = clock_mono_ms(), t1 = 0, t2 = 0, t3 = 0;

	if (l->builtin) {
		redact_free(secrets);
		return connector_test_result(true, 1, "%s is built in: its tool fetch_url runs inside the "
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
			return connector_test_result(false, 0, "cannot make a working directory for %s",
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
	t1 = clock_mono_ms();
	if (c == NULL) {
		r = connector_test_result(false, 0, "%s could not be started: %s", l->name, err);
	} else if (mcp_handshake(c, err, sizeof err) != 0) {
		r = connector_test_result(false, 0, "%s did not complete the MCP handshake: %s", l->name, err);
	} else if ((t2 = clock_mono_ms()), mcp_list_tools(c, &tools, &n, err, sizeof err) != 0) {
		r = connector_test_result(false, 0, "%s did not list its tools: %s", l->name, err);
	} else {
		r = connector_test_result(true, n, "%s answered (%s, MCP %s) and lists %zu tools", l->name,
		    mcp_server_name(c) ? mcp_server_name(c) : "unnamed server",
		    mcp_protocol_version(c), n);
	}
	t3 = clock_mono_ms();
	mcp_tools_free(tools, n);
	mcp_close(c);
	log_debug("connector test of %s: open %lld ms, handshake %lld ms, tools %lld ms, "
	    "close %lld ms", l->name, (long long)(t1 - t0), (long long)(t2 ? t2 - t1 : 0),
	    (long long)(t2 ? t3 - t2 : 0), (long long)(clock_mono_ms() - t3));
	if (!l->http && !l->builtin)
		nftw(cwd, connector_test_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	/* What the server said is masked already; the message made of it is masked again. */
	redact_str(secrets, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "message")));
	redact_free(secrets);
	return r;
}

/* How many connector tests run now. */
static atomic_int connector_tests_running;

/* A test starts (true) unless CONNECTOR_TESTS_MAX run already; each that started ends. */
static bool
connector_tests_begin(void)
{
	if (atomic_fetch_add(&connector_tests_running, 1) >= CONNECTOR_TESTS_MAX) {
		atomic_fetch_sub(&connector_tests_running, 1);
		return false;
	}
	return true;
}

static void
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

/* One test: its thread and its caller share it. */
struct connector_test {
	pthread_mutex_t mu;
	struct service *svc;
	char id[TD_ID_MAX];
	char *token_version;	/* the version of its OAuth token the test sends, or NULL */
	struct connector_launch launch;
	char *text;		/* the answer once done */
	size_t len, off;
	bool done;
	void (*wake)(void *);	/* the caller waits for the answer */
	void *wake_arg;
	bool released;		/* the caller let go first */
	int refs;		/* the thread and the caller */
};

static void
connector_test_unref(struct connector_test *t)
{
	bool last;

	pthread_mutex_lock(&t->mu);
	last = --t->refs == 0;
	pthread_mutex_unlock(&t->mu);
	if (!last)
		return;
	connector_launch_free(&t->launch);
	free(t->text);
	free(t->token_version);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static void *
connector_test_thread(void *arg)
{
	struct connector_test *t = arg;
	cJSON *result = connector_test_run(&t->launch);
	const char *message = json_get_string(result, "message");
	char *text;

	/*
	 * Its server refused the token before it was due (revoked): renewed, once
	 * (unless someone renewed it meanwhile), and the test again with the new one.
	 */
	if (t->token_version != NULL && message != NULL &&
	    strstr(message, "sign-in needed") != NULL &&
	    connector_oauth_renew(t->svc, t->id, t->token_version, NULL)) {
		struct connector_launch again;
		struct problem p = { 0 };

		if (connector_launch_prepare(t->svc, t->id, &again, &p) == TD_OK) {
			connector_launch_free(&t->launch);
			t->launch = again;
			cJSON_Delete(result);
			result = connector_test_run(&t->launch);
		}
		cJSON_Delete(p.details);
	}
	text = json_print(result);

	cJSON_Delete(result);
	pthread_mutex_lock(&t->mu);
	t->text = text;
	t->len = strlen(text);
	t->done = true;
	if (t->wake != NULL && !t->released)
		t->wake(t->wake_arg);
	pthread_mutex_unlock(&t->mu);
	connector_tests_end();
	connector_test_unref(t);
	return NULL;
}

enum td_code
connector_test_start(struct service *svc, const char *id, struct connector_test **out,
    struct problem *p)
{
	struct connector_test *t = xcalloc(1, sizeof *t);
	enum td_code rc;
	pthread_attr_t attr;
	pthread_t thread;

	*out = NULL;
	connectors_refresh_oauth(svc);	/* the test uses a token that still works */
	if ((rc = connector_launch_prepare(svc, id, &t->launch, p)) != TD_OK) {
		free(t);
		return rc;
	}
	t->svc = svc;
	snprintf(t->id, sizeof t->id, "%s", id);
	t->token_version = connector_oauth_token_version(svc, id);
	if (!connector_tests_begin()) {
		connector_launch_free(&t->launch);
		free(t->token_version);
		free(t);
		return problem_set(p, TD_UNAVAILABLE, NULL, "%d connector tests are running; "
		    "retry in a moment", CONNECTOR_TESTS_MAX);
	}
	pthread_mutex_init(&t->mu, NULL);
	t->refs = 2;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, connector_test_thread, t) != 0) {
		pthread_attr_destroy(&attr);
		connector_tests_end();
		connector_launch_free(&t->launch);
		free(t->token_version);
		pthread_mutex_destroy(&t->mu);
		free(t);
		return problem_set(p, TD_INTERNAL_ERROR, NULL, "cannot start the test");
	}
	pthread_attr_destroy(&attr);
	*out = t;
	return TD_OK;
}

ssize_t
connector_test_read(struct connector_test *t, char *buf, size_t max, void (*park)(void *),
    void (*wake)(void *), void *arg)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	if (!t->done) {
		t->wake = wake;
		t->wake_arg = arg;
		park(arg);
		pthread_mutex_unlock(&t->mu);
		return 0;
	}
	n = t->len - t->off < max ? t->len - t->off : max;
	memcpy(buf, t->text + t->off, n);
	t->off += n;
	pthread_mutex_unlock(&t->mu);
	return n == 0 ? -1 : (ssize_t)n;
}

void
connector_test_release(struct connector_test *t)
{
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	t->released = true;
	pthread_mutex_unlock(&t->mu);
	connector_test_unref(t);
}
