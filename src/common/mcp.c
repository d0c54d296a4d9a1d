/*
 * The MCP client's protocol: JSON-RPC 2.0 ids and messages, the
 * server/discover probe and the initialize fallback, tools, over the
 * transport operations of mcp-stdio.c (newline-delimited messages) and
 * mcp-http.c (Streamable HTTP: one POST per message; the answer is JSON or
 * an SSE stream).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "mcp-int.h"
#include "sandbox.h"
#include "redact.h"
#include "sse.h"
#include "xalloc.h"

/* The time a notifications/cancelled gets. */
#define MCP_CANCEL_NOTICE_MS 1000

/* Earlier revisions this client speaks (an initialize answer must name one). */
static const char *const known_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26",
	"2024-11-05", NULL };

void
mcp_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

long
mcp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "10 s" or "1500 ms". */
static void
fmt_duration(int ms, char *out, size_t len)
{
	if (ms % 1000 == 0)
		snprintf(out, len, "%d s", ms / 1000);
	else
		snprintf(out, len, "%d ms", ms);
}

void
mcp_fmt_size(size_t bytes, char *out, size_t len)
{
	if (bytes % (1024 * 1024) == 0)
		snprintf(out, len, "%zu MiB", bytes / (1024 * 1024));
	else if (bytes % 1024 == 0)
		snprintf(out, len, "%zu KiB", bytes / 1024);
	else
		snprintf(out, len, "%zu bytes", bytes);
}

static void
limits_fill(struct mcp_limits *dst, const struct mcp_limits *src)
{
	memset(dst, 0, sizeof *dst);
	if (src != NULL)
		*dst = *src;
	if (dst->request_timeout_ms <= 0)
		dst->request_timeout_ms = MCP_DEFAULT_TIMEOUT_MS;
	if (dst->max_message_bytes == 0)
		dst->max_message_bytes = MCP_DEFAULT_MAX_MESSAGE;
	if (dst->max_tools == 0)
		dst->max_tools = MCP_DEFAULT_MAX_TOOLS;
	if (dst->stderr_tail_bytes == 0)
		dst->stderr_tail_bytes = MCP_DEFAULT_STDERR_TAIL;
}

struct mcp_client *
mcp_client_new(const struct mcp_transport_ops *ops, const struct mcp_limits *lim)
{
	struct mcp_client *c = xcalloc(1, sizeof *c);

	c->ops = ops;
	limits_fill(&c->lim, lim);
	c->cancel_fd = -1;
	c->next_id = 1;
	c->pid = -1;
	c->to_fd = c->from_fd = c->err_fd = -1;
	buf_init(&c->in, 0);
	return c;
}

void
mcp_set_elicitation(struct mcp_client *c, mcp_elicit_fn fn, void *ud, void (*ud_free)(void *))
{
	if (c == NULL)
		return;
	if (c->elicit_ud_free != NULL)
		c->elicit_ud_free(c->elicit_ud);
	c->elicit = fn;
	c->elicit_ud = ud;
	c->elicit_ud_free = ud_free;
}

const char *
mcp_auth_challenge(const struct mcp_client *c)
{
	return c != NULL ? c->challenge : NULL;
}

void
mcp_add_root(struct mcp_client *c, const char *dir, const char *name)
{
	struct buf b;
	cJSON *root;

	if (c == NULL || dir == NULL || dir[0] != '/' || cJSON_GetArraySize(c->roots) >= 64)
		return;
	/* file:// and the path, its bytes outside [A-Za-z0-9/._~-] percent-encoded. */
	buf_init(&b, 0);
	buf_appends(&b, "file://");
	for (const unsigned char *p = (const unsigned char *)dir; *p; p++) {
		if (isalnum(*p) || strchr("/._~-", *p) != NULL)
			buf_append(&b, p, 1);
		else
			buf_printf(&b, "%%%02X", *p);
	}
	if (c->roots == NULL)
		c->roots = cJSON_CreateArray();
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "uri", b.data);
	cJSON_AddStringToObject(root, "name", name);
	cJSON_AddItemToArray(c->roots, root);
	buf_free(&b);
}

void
mcp_set_root(struct mcp_client *c, const char *dir)
{
	if (c == NULL)
		return;
	cJSON_Delete(c->roots);
	c->roots = NULL;
	mcp_add_root(c, dir, "workspace");
}

void
mcp_set_cancel_fd(struct mcp_client *c, int fd)
{
	if (c != NULL)
		c->cancel_fd = fd;
}

const char *
mcp_protocol_version(const struct mcp_client *c)
{
	return c != NULL && c->ready ? c->version : NULL;
}

int
mcp_server_pid(const struct mcp_client *c)
{
	return c != NULL ? c->ops->pid(c) : -1;
}

const char *
mcp_server_name(const struct mcp_client *c)
{
	return c != NULL ? c->server_name : NULL;
}

const char *
mcp_server_instructions(const struct mcp_client *c)
{
	return c != NULL ? c->instructions : NULL;
}

bool
mcp_cancel_requested(const struct mcp_client *c)
{
	struct pollfd p = { .fd = c->cancel_fd, .events = POLLIN };

	return c->cancel_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* A message from the server, with every secret masked in its strings; NULL when not JSON. */
cJSON *
mcp_message_parse(const struct mcp_client *c, const char *text, size_t len)
{
	cJSON *msg = json_parse(text, len);

	redact_json(c->lim.secrets, msg);
	return msg;
}

void
mcp_timeout_err(struct mcp_client *c, const char *during, char *err, size_t errlen)
{
	char d[32], detail[600];

	fmt_duration(c->lim.request_timeout_ms, d, sizeof d);
	c->failure = FAIL_TIMEOUT;
	c->ops->timeout_detail(c, detail, sizeof detail);
	mcp_set_err(err, errlen, "no answer within %s (%s)%s", d, during, detail);
}

void
mcp_cancelled_err(struct mcp_client *c, char *err, size_t errlen)
{
	c->failure = FAIL_CANCELLED;
	mcp_set_err(err, errlen, "cancelled");
}

void
mcp_too_big_err(const struct mcp_client *c, char *err, size_t errlen)
{
	char s[32];

	mcp_fmt_size(c->lim.max_message_bytes, s, sizeof s);
	mcp_set_err(err, errlen, "message over %s from the server", s);
}

/* --- messages ------------------------------------------------------------- */

static cJSON *client_info(void);
static cJSON *client_capabilities(const struct mcp_client *c);

cJSON *
mcp_request_new(struct mcp_client *c, long id, const char *method, cJSON *params)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	if (id > 0)
		cJSON_AddNumberToObject(msg, "id", (double)id);
	cJSON_AddStringToObject(msg, "method", method);
	if (params == NULL)
		params = cJSON_CreateObject();
	if (c->modern && id > 0) {
		cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

		if (!cJSON_IsObject(meta)) {
			cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
			meta = cJSON_AddObjectToObject(params, "_meta");
		}
		/* The draft revision is stateless: each request says who asks and what it offers. */
		if (cJSON_GetObjectItemCaseSensitive(meta, MCP_META_VERSION) == NULL)
			cJSON_AddStringToObject(meta, MCP_META_VERSION, MCP_MODERN_VERSION);
		if (cJSON_GetObjectItemCaseSensitive(meta, MCP_META_CAPABILITIES) == NULL)
			cJSON_AddItemToObject(meta, MCP_META_CAPABILITIES, client_capabilities(c));
		if (cJSON_GetObjectItemCaseSensitive(meta, MCP_META_CLIENT_INFO) == NULL)
			cJSON_AddItemToObject(meta, MCP_META_CLIENT_INFO, client_info());
	}
	cJSON_AddItemToObject(msg, "params", params);
	return msg;
}

/*
 * The answer to a request from the server (id mid): ping, roots/list (the
 * workspace, when the client has one); elicitation and sampling are declined
 * with an error that says why; anything else is "Method not found".
 */
cJSON *
mcp_server_request_reply(struct mcp_client *c, const cJSON *mid, const char *method,
    const cJSON *params)
{
	cJSON *r = cJSON_CreateObject(), *e = NULL, *answer;
	char *refused = NULL;

	cJSON_AddStringToObject(r, "jsonrpc", "2.0");
	cJSON_AddItemToObject(r, "id", cJSON_Duplicate(mid, true));
	if (strcmp(method, "elicitation/create") == 0 && c->elicit != NULL) {
		long t0 = mcp_now_ms();

		c->elicit_mid = mid;
		c->elicit_withdrawn = false;
		answer = c->elicit(c, params, c->elicit_ud, &refused);
		c->elicit_mid = NULL;
		c->asked_ms += mcp_now_ms() - t0;
		if (c->elicit_withdrawn) {
			/* The server gave up on its form: a cancelled request gets no answer. */
			cJSON_Delete(answer);
			free(refused);
			cJSON_Delete(r);
			return NULL;
		}
		if (answer == NULL && refused != NULL) {
			e = cJSON_AddObjectToObject(r, "error");
			cJSON_AddNumberToObject(e, "code", -32602);
			cJSON_AddStringToObject(e, "message", refused);
			free(refused);
			return r;
		}
		free(refused);
		if (!cJSON_IsObject(answer)) {
			cJSON_Delete(answer);
			answer = cJSON_CreateObject();
			cJSON_AddStringToObject(answer, "action", "decline");
		}
		cJSON_AddItemToObject(r, "result", answer);
	} else if (strcmp(method, "ping") == 0) {
		cJSON_AddObjectToObject(r, "result");
	} else if (strcmp(method, "roots/list") == 0 && c->roots != NULL) {
		cJSON_AddItemToObject(cJSON_AddObjectToObject(r, "result"), "roots",
		    cJSON_Duplicate(c->roots, true));
	} else {
		e = cJSON_AddObjectToObject(r, "error");
		cJSON_AddNumberToObject(e, "code", -32601);
	}
	if (e == NULL)
		return r;
	if (strcmp(method, "elicitation/create") == 0)
		cJSON_AddStringToObject(e, "message", "Declined: taskdeck has no one to answer "
		    "this form here (elicitation is not supported)");
	else if (strcmp(method, "sampling/createMessage") == 0)
		cJSON_AddStringToObject(e, "message", "Declined: taskdeck does not let MCP servers "
		    "use the run's model (sampling is not supported)");
	else
		cJSON_AddStringToObject(e, "message", "Method not found");
	return r;
}

bool
mcp_elicit_withdrawn(struct mcp_client *c, int ms)
{
	if (c->elicit_mid == NULL)
		return false;
	if (!c->elicit_withdrawn && c->ops->watch != NULL &&
	    c->ops->watch(c, c->elicit_mid, ms) == 1)
		c->elicit_withdrawn = true;
	return c->elicit_withdrawn;
}

/* notifications/cancelled for request mid, as one line of the server's. */
bool
mcp_line_cancels(const struct mcp_client *c, const char *line, size_t len, const cJSON *mid)
{
	cJSON *msg = mcp_message_parse(c, line, len);
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
	const char *method = json_get_string(msg, "method");
	bool yes = method != NULL && strcmp(method, "notifications/cancelled") == 0 &&
	    cJSON_GetObjectItemCaseSensitive(msg, "id") == NULL && rid != NULL &&
	    cJSON_Compare(rid, mid, true);

	cJSON_Delete(msg);
	return yes;
}

/* A notification from the server: tools/list_changed noted, progress told. */
static void
notification_note(struct mcp_client *c, const char *method, const cJSON *params)
{
	const cJSON *progress = cJSON_GetObjectItemCaseSensitive(params, "progress");
	const cJSON *total = cJSON_GetObjectItemCaseSensitive(params, "total");

	if (strcmp(method, "notifications/tools/list_changed") == 0)
		c->tools_changed = true;
	else if (strcmp(method, "notifications/progress") == 0 && c->progress != NULL &&
	    cJSON_IsNumber(progress) && json_get_string(params, "progressToken") != NULL &&
	    strcmp(json_get_string(params, "progressToken"), c->progress_token) == 0)
		c->progress(c->progress_ud, progress->valuedouble,
		    cJSON_IsNumber(total) ? total->valuedouble : -1,
		    json_get_string(params, "message"));
}

/*
 * What one message from the server means to a request with this id:
 * 1 = it is the answer (*out set), 0 = something else (skip it), -1 = not
 * JSON-RPC.  *reply is set when the server asked something of us.
 */
int
mcp_classify(struct mcp_client *c, cJSON *msg, long id, cJSON **out, cJSON **reply)
{
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	const cJSON *mid = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");

	*reply = NULL;
	if (!cJSON_IsObject(msg) || !cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
		return -1;
	if (cJSON_IsString(method)) {
		if (mid != NULL && !cJSON_IsNull(mid))
			*reply = mcp_server_request_reply(c, mid, method->valuestring,
			    cJSON_GetObjectItemCaseSensitive(msg, "params"));
		else
			notification_note(c, method->valuestring,
			    cJSON_GetObjectItemCaseSensitive(msg, "params"));
		return 0;
	}
	if (!cJSON_IsNumber(mid) || (long)mid->valuedouble != id)
		return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg, "result")) ||
		    cJSON_GetObjectItemCaseSensitive(msg, "error") != NULL ? 0 : -1;
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg, "result")) &&
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg, "error")))
		return -1;
	*out = msg;
	return 1;
}

/*
 * Splits an answer into its result (detached into *result) or its error
 * (RPC_ERROR with a message naming the method).
 */
int
mcp_answer_take(cJSON *msg, const char *method, cJSON **result, int *code, char *err,
    size_t errlen)
{
	cJSON *e = cJSON_GetObjectItemCaseSensitive(msg, "error");

	if (cJSON_IsObject(e)) {
		const cJSON *ec = cJSON_GetObjectItemCaseSensitive(e, "code");
		const char *em = json_get_string(e, "message");

		if (code != NULL)
			*code = cJSON_IsNumber(ec) ? (int)ec->valuedouble : 0;
		mcp_set_err(err, errlen, "the server refused %s: %.300s (code %d)", method,
		    em != NULL ? em : "(no message)", cJSON_IsNumber(ec) ? (int)ec->valuedouble : 0);
		return RPC_ERROR;
	}
	*result = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
	return RPC_OK;
}

/* --- requests, whatever the transport -------------------------------------- */

/* Sends a notification (params consumed, NULL = {}) within ms. */
static int
notify_within(struct mcp_client *c, const char *method, cJSON *params, long ms, char *err,
    size_t errlen)
{
	cJSON *msg = mcp_request_new(c, 0, method, params);

	return c->ops->notify(c, msg, method, mcp_now_ms() + ms, err, errlen);
}

static int
notify(struct mcp_client *c, const char *method, char *err, size_t errlen)
{
	return notify_within(c, method, NULL, c->lim.request_timeout_ms, err, errlen);
}

/*
 * Tells the server that request id is abandoned (its time ran out, or the
 * run was cancelled), so that it can stop working on it.  Best effort.
 */
static void
notify_cancelled(struct mcp_client *c, long id, const char *reason)
{
	cJSON *params = cJSON_CreateObject();
	int fd = c->cancel_fd;
	char ignored[256];

	cJSON_AddNumberToObject(params, "requestId", (double)id);
	cJSON_AddStringToObject(params, "reason", reason);
	c->cancel_fd = -1;	/* the notice itself is not cancelled */
	notify_within(c, "notifications/cancelled", params, MCP_CANCEL_NOTICE_MS, ignored,
	    sizeof ignored);
	c->cancel_fd = fd;
}

/* params is consumed; *result is the answer's result on RPC_OK. */
static int
rpc(struct mcp_client *c, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	long id = c->next_id++;
	int rc;

	*result = NULL;
	c->failure = FAIL_OTHER;
	rc = c->ops->rpc(c, id, method, params, during, result, code, err, errlen);
	/* initialize is never cancelled (the specification says so); the probe neither. */
	if (rc == RPC_FAILED && c->ready &&
	    (c->failure == FAIL_TIMEOUT || c->failure == FAIL_CANCELLED)) {
		bool timed_out = c->failure == FAIL_TIMEOUT;

		notify_cancelled(c, id, timed_out ? "timed out" : "cancelled");
		c->failure = timed_out ? FAIL_TIMEOUT : FAIL_CANCELLED;
	}
	return rc;
}

int
mcp_rpc(struct mcp_client *c, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen)
{
	return rpc(c, method, params, during, result, code, err, errlen);
}

static cJSON *
client_info(void)
{
	cJSON *info = cJSON_CreateObject();

	cJSON_AddStringToObject(info, "name", MCP_CLIENT_NAME);
	cJSON_AddStringToObject(info, "version", TD_VERSION);
	return info;
}

/* What the client offers: roots (the workspace) when it has one. */
static cJSON *
client_capabilities(const struct mcp_client *c)
{
	cJSON *caps = cJSON_CreateObject();

	if (c->roots != NULL)
		cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "roots"), "listChanged", false);
	if (c->elicit != NULL)
		cJSON_AddObjectToObject(cJSON_AddObjectToObject(caps, "elicitation"), "form");
	return caps;
}

static void
keep_server_name(struct mcp_client *c, const cJSON *result)
{
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(result, "serverInfo");
	const char *name;

	if (info == NULL)	/* the draft revision's place for it */
		info = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result,
		    "_meta"), "io.modelcontextprotocol/serverInfo");
	name = json_get_string(info, "name");

	free(c->server_name);
	c->server_name = name != NULL ? xstrndup(name, strnlen(name, 200)) : NULL;
	/* What it says about using it, for the model: one printable line, bounded. */
	free(c->instructions);
	c->instructions = NULL;
	if (json_get_string(result, "instructions") != NULL) {
		const char *text = json_get_string(result, "instructions");
		char line[MCP_INSTRUCTIONS_MAX + 1];

		mcp_printable_line(text, strlen(text), line, sizeof line);
		if (*line != '\0')
			c->instructions = xstrdup(line);
	}
}

/* The params of server/discover: the version, the client and what it offers. */
static cJSON *
discover_params(const struct mcp_client *c)
{
	cJSON *params = cJSON_CreateObject();
	cJSON *meta = cJSON_AddObjectToObject(params, "_meta");

	cJSON_AddStringToObject(meta, MCP_META_VERSION, MCP_MODERN_VERSION);
	cJSON_AddItemToObject(meta, MCP_META_CLIENT_INFO, client_info());
	cJSON_AddItemToObject(meta, MCP_META_CAPABILITIES, client_capabilities(c));
	return params;
}

/* server/discover: 1 = a modern server, 0 = fall back, -1 = failed. */
static int
try_discover(struct mcp_client *c, char *err, size_t errlen)
{
	cJSON *result = NULL;
	const cJSON *versions;
	int rc, code = 0;
	bool ours = false;

	c->modern = true;	/* headers of the probe */
	rc = rpc(c, "server/discover", discover_params(c), "the handshake", &result, &code, err,
	    errlen);
	if (rc == RPC_ERROR && code == -32022) {
		/*
		 * UnsupportedProtocolVersionError lists what the server speaks: a
		 * server that refused the first request whatever it named may take
		 * the same version asked again, once.
		 */
		cJSON_Delete(result);
		code = 0;
		rc = rpc(c, "server/discover", discover_params(c), "the handshake", &result, &code,
		    err, errlen);
	}
	c->modern = false;
	/* A server behind OAuth: a sign-in is needed whatever the revision. */
	if (rc == RPC_ERROR && c->failure == FAIL_SIGN_IN)
		return -1;
	if (rc == RPC_ERROR && code == -32022) {
		/* UnsupportedProtocolVersionError: a server of a later revision only. */
		mcp_set_err(err, errlen, "the server speaks only MCP revisions this client does not "
		    "know (it refused %s)", MCP_MODERN_VERSION);
		return -1;
	}
	if (rc == RPC_ERROR)
		return 0;
	if (rc == RPC_FAILED)
		return c->ops->probe_failed(c, err, errlen);
	versions = cJSON_GetObjectItemCaseSensitive(result, "supportedVersions");
	for (const cJSON *v = cJSON_IsArray(versions) ? versions->child : NULL; v; v = v->next)
		if (cJSON_IsString(v) && strcmp(v->valuestring, MCP_MODERN_VERSION) == 0)
			ours = true;
	if (ours) {
		keep_server_name(c, result);
		c->modern = true;
		c->version = xstrdup(MCP_MODERN_VERSION);
	}
	cJSON_Delete(result);
	/* An answer without our version: a server of another era; initialize decides. */
	return ours ? 1 : 0;
}

int
mcp_initialize(struct mcp_client *c, char *err, size_t errlen)
{
	cJSON *params = cJSON_CreateObject(), *result = NULL;
	const char *version;

	cJSON_AddStringToObject(params, "protocolVersion", MCP_LEGACY_VERSION);
	cJSON_AddItemToObject(params, "capabilities", client_capabilities(c));
	cJSON_AddItemToObject(params, "clientInfo", client_info());
	free(c->session);
	c->session = NULL;
	if (rpc(c, "initialize", params, "the handshake", &result, NULL, err, errlen) != RPC_OK)
		return -1;
	version = json_get_string(result, "protocolVersion");
	if (version == NULL || strlen(version) > 32) {
		cJSON_Delete(result);
		mcp_set_err(err, errlen, "not JSON-RPC: the server's initialize answer has no "
		    "protocolVersion");
		return -1;
	}
	{
		bool known = false;

		for (size_t i = 0; known_versions[i] != NULL; i++)
			known = known || strcmp(version, known_versions[i]) == 0;
		if (!known) {
			mcp_set_err(err, errlen, "the server answered MCP revision %s, which this client "
			    "does not know (it speaks %s to %s)", version,
			    known_versions[sizeof known_versions / sizeof *known_versions - 2],
			    known_versions[0]);
			cJSON_Delete(result);
			return -1;
		}
	}
	free(c->version);
	c->version = xstrdup(version);
	keep_server_name(c, result);
	cJSON_Delete(result);
	return notify(c, "notifications/initialized", err, errlen);
}

int
mcp_handshake(struct mcp_client *c, char *err, size_t errlen)
{
	int k;

	if (c->ready)
		return 0;
	k = try_discover(c, err, errlen);
	if (k < 0)
		return -1;
	if (k == 0 && mcp_initialize(c, err, errlen) != 0)
		return -1;
	c->ready = true;
	return 0;
}

/* --- tools ------------------------------------------------------------------ */

/* An error that says the server does not take a request of the draft revision as sent. */
static bool
draft_refused(int code)
{
	return code == -32600 || code == -32601 || code == -32602 || code == -32022;
}

void
mcp_tools_free(struct mcp_tool *tools, size_t n)
{
	for (size_t i = 0; tools != NULL && i < n; i++) {
		free(tools[i].name);
		free(tools[i].description);
		cJSON_Delete(tools[i].input_schema);
	}
	free(tools);
}

/* An HTTP field name (RFC 9110 token) of 1 to 64 characters. */
static bool
header_token_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) || (unsigned char)*s > 0x7e)
			if (strchr("!#$%&'*+-.^_`|~", *s) == NULL)
				return false;
	return true;
}

/*
 * The arguments of a tool's inputSchema that its server wants in headers too
 * (x-mcp-header, SEP-2243): {argument: header name}, NULL when none; *bad is
 * set when one is malformed (not a token, not unique, on an argument that is
 * not a string, number, integer or boolean): such a tool is left out.
 */
static cJSON *
param_headers_of(const cJSON *schema, bool *bad)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties"), *p;
	cJSON *out = NULL;

	*bad = false;
	if (!cJSON_IsObject(props))
		return NULL;
	cJSON_ArrayForEach(p, props) {
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(p, "x-mcp-header"), *o;
		const char *type = json_get_string(p, "type");

		if (h == NULL)
			continue;
		if (!cJSON_IsString(h) || !header_token_ok(h->valuestring) || type == NULL ||
		    (strcmp(type, "string") != 0 && strcmp(type, "number") != 0 &&
		    strcmp(type, "integer") != 0 && strcmp(type, "boolean") != 0))
			*bad = true;
		cJSON_ArrayForEach(o, out)
			if (!*bad && strcasecmp(o->valuestring, h->valuestring) == 0)
				*bad = true;
		if (*bad)
			break;
		if (out == NULL)
			out = cJSON_CreateObject();
		cJSON_AddStringToObject(out, p->string, h->valuestring);
	}
	if (*bad) {
		cJSON_Delete(out);
		out = NULL;
	}
	return out;
}

static bool
tool_from_json(const cJSON *t, struct mcp_tool *out)
{
	const char *name = json_get_string(t, "name");
	const char *desc = json_get_string(t, "description");
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(t, "annotations");

	if (name == NULL || *name == '\0' || strlen(name) > 256)
		return false;
	out->name = xstrdup(name);
	out->description = xstrdup(desc != NULL ? desc : "");
	if (cJSON_IsObject(schema)) {
		out->input_schema = cJSON_Duplicate(schema, true);
	} else {
		out->input_schema = cJSON_CreateObject();
		cJSON_AddStringToObject(out->input_schema, "type", "object");
	}
	out->read_only_hint = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, "readOnlyHint"));
	return true;
}

/*
 * Notes the tool's header arguments; false when they are malformed (the tool
 * is then left out: its server could not be called as it says).
 */
static bool
tool_headers_keep(struct mcp_client *c, const struct mcp_tool *t)
{
	bool bad;
	cJSON *h = param_headers_of(t->input_schema, &bad);

	if (bad) {
		log_info("mcp: the tool %.100s is left out: its x-mcp-header is malformed", t->name);
		return false;
	}
	if (h != NULL) {
		if (c->param_headers == NULL)
			c->param_headers = cJSON_CreateObject();
		cJSON_DeleteItemFromObjectCaseSensitive(c->param_headers, t->name);
		cJSON_AddItemToObject(c->param_headers, t->name, h);
	}
	return true;
}

int
mcp_list_tools(struct mcp_client *c, struct mcp_tool **tools, size_t *n, char *err,
    size_t errlen)
{
	struct mcp_tool *list = NULL;
	size_t count = 0, cap = 0;
	char *cursor = NULL;
	int pages = 0, rc, code = 0;

	*tools = NULL;
	*n = 0;
	if (!c->ready) {
		mcp_set_err(err, errlen, "no handshake yet");
		return -1;
	}
	do {
		cJSON *params = cJSON_CreateObject(), *result = NULL;
		const cJSON *arr, *next;

		if (cursor != NULL)
			cJSON_AddStringToObject(params, "cursor", cursor);
		free(cursor);
		cursor = NULL;
		rc = rpc(c, "tools/list", params, "tools/list", &result, &code, err, errlen);
		if (rc == RPC_ERROR && pages == 0 && c->modern && !c->modern_proven &&
		    draft_refused(code)) {
			/*
			 * The server's discover offered the draft revision, yet it refuses
			 * the draft's first request: it speaks initialize as well, the
			 * revision of a session.
			 */
			log_info("mcp: the server refused the draft revision's tools/list (code %d): "
			    "initialize instead", code);
			c->modern = false;
			free(c->version);
			c->version = NULL;
			if (mcp_initialize(c, err, errlen) != 0)
				goto fail;
			rc = rpc(c, "tools/list", cJSON_CreateObject(), "tools/list", &result, &code,
			    err, errlen);
		}
		if (rc != RPC_OK)
			goto fail;
		c->modern_proven = true;
		arr = cJSON_GetObjectItemCaseSensitive(result, "tools");
		if (!cJSON_IsArray(arr)) {
			cJSON_Delete(result);
			mcp_set_err(err, errlen, "not JSON-RPC: the tools/list answer has no tools array");
			goto fail;
		}
		for (const cJSON *t = arr->child; t != NULL; t = t->next) {
			if (count >= c->lim.max_tools) {
				cJSON_Delete(result);
				mcp_set_err(err, errlen, "the server lists more than %zu tools",
				    c->lim.max_tools);
				goto fail;
			}
			if (count == cap) {
				cap = cap ? cap * 2 : 16;
				list = xrealloc(list, cap * sizeof *list);
			}
			memset(&list[count], 0, sizeof list[count]);
			if (!tool_from_json(t, &list[count]))
				continue;
			if (!tool_headers_keep(c, &list[count])) {
				free(list[count].name);
				free(list[count].description);
				cJSON_Delete(list[count].input_schema);
				memset(&list[count], 0, sizeof list[count]);
				continue;
			}
			count++;
		}
		next = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
		if (cJSON_IsString(next) && *next->valuestring != '\0')
			cursor = xstrndup(next->valuestring, strnlen(next->valuestring, 4096));
		cJSON_Delete(result);
		/* A server that keeps handing out cursors with no tools ends here. */
		if (++pages > (int)c->lim.max_tools + 1 && cursor != NULL) {
			mcp_set_err(err, errlen, "the server's tools/list pages never end");
			goto fail;
		}
	} while (cursor != NULL);
	*tools = list;
	*n = count;
	return 0;

fail:
	free(cursor);
	mcp_tools_free(list, count);
	return -1;
}

/* Standard base64 (RFC 4648 4) of s[0, n), into b. */
static void
base64_append(struct buf *b, const unsigned char *s, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
		    (i + 2 < n ? s[i + 2] : 0);
		char q[4] = { a[v >> 18 & 63], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=',
			i + 2 < n ? a[v & 63] : '=' };

		buf_append(b, q, 4);
	}
}

/*
 * The header lines of a tools/call on a modern server over HTTP: Mcp-Name
 * (the tool) and Mcp-Param-<name> for each argument the tool's schema names
 * with x-mcp-header (SEP-2243): its value as text, base64 in =?base64?…?= when
 * it holds anything but printable ASCII or starts or ends with a blank; an
 * absent or null argument has none.
 */
static void
call_headers_set(struct mcp_client *c, const char *name, const cJSON *arguments)
{
	const cJSON *map = cJSON_GetObjectItemCaseSensitive(c->param_headers, name), *m;
	struct buf b;

	curl_slist_free_all(c->call_headers);
	c->call_headers = NULL;
	if (!c->modern || c->ops->pid(c) != -1)
		return;
	buf_init(&b, 8192);
	buf_printf(&b, "Mcp-Name: %s", name);
	c->call_headers = curl_slist_append(c->call_headers, b.data);
	cJSON_ArrayForEach(m, map) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(arguments, m->string);
		char *text = NULL;
		bool plain = true;
		size_t n;

		if (cJSON_IsString(v))
			text = xstrdup(v->valuestring);
		else if (cJSON_IsNumber(v) || cJSON_IsBool(v))
			text = cJSON_PrintUnformatted(v);
		if (text == NULL)
			continue;
		n = strlen(text);
		for (size_t i = 0; i < n; i++)
			plain = plain && (unsigned char)text[i] >= 0x20 && (unsigned char)text[i] < 0x7f;
		if (n > 0 && (isspace((unsigned char)text[0]) || isspace((unsigned char)text[n - 1])))
			plain = false;
		buf_reset(&b);
		/* libcurl sends "Name;" as a header with no value ("Name:" it leaves out). */
		buf_printf(&b, "Mcp-Param-%s%s", m->valuestring, n == 0 ? ";" : ": ");
		if (plain) {
			buf_appends(&b, text);
		} else {
			buf_appends(&b, "=?base64?");
			base64_append(&b, (const unsigned char *)text, n);
			buf_appends(&b, "?=");
		}
		if (b.data != NULL)
			c->call_headers = curl_slist_append(c->call_headers, b.data);
		free(text);
	}
	buf_free(&b);
}

int
mcp_call_tool(struct mcp_client *c, const char *name, const cJSON *arguments, cJSON **result,
    char *err, size_t errlen)
{
	cJSON *params = cJSON_CreateObject(), *sent;
	char during[300];
	int rc;

	*result = NULL;
	if (!c->ready) {
		cJSON_Delete(params);
		mcp_set_err(err, errlen, "no handshake yet");
		return -1;
	}
	cJSON_AddStringToObject(params, "name", name);
	cJSON_AddItemToObject(params, "arguments", arguments != NULL ?
	    cJSON_Duplicate(arguments, true) : cJSON_CreateObject());
	if (c->progress != NULL) {
		/* Its own token (the id it is about to get): a late notice of another is not its. */
		snprintf(c->progress_token, sizeof c->progress_token, "taskdeck-%ld", c->next_id);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(params, "_meta"), "progressToken",
		    c->progress_token);
	}
	snprintf(during, sizeof during, "the call of %.200s", name);
	call_headers_set(c, name, arguments);
	sent = cJSON_Duplicate(params, true);
	rc = rpc(c, "tools/call", params, during, result, NULL, err, errlen);
	if (rc == RPC_OK)
		rc = mcp_input_rounds(c, "tools/call", sent, during, result, err, errlen);
	cJSON_Delete(sent);
	curl_slist_free_all(c->call_headers);
	c->call_headers = NULL;
	return rc == RPC_OK ? 0 : -1;
}

bool
mcp_tools_changed(struct mcp_client *c)
{
	bool changed = c->tools_changed;

	c->tools_changed = false;
	return changed;
}

void
mcp_set_progress(struct mcp_client *c, mcp_progress_fn fn, void *ud)
{
	c->progress = fn;
	c->progress_ud = ud;
}

/* --- closing ---------------------------------------------------------------- */

void
mcp_close(struct mcp_client *c)
{
	if (c == NULL)
		return;
	c->ops->close(c);
	if (c->elicit_ud_free != NULL)
		c->elicit_ud_free(c->elicit_ud);
	cJSON_Delete(c->roots);
	free(c->version);
	free(c->server_name);
	free(c->instructions);
	cJSON_Delete(c->param_headers);
	curl_slist_free_all(c->call_headers);
	free(c);
}

/*
 * The value of auth-param name in a WWW-Authenticate challenge (quoted or a
 * token), printable ASCII only; "" when absent.
 */
void
mcp_challenge_param(const char *challenge, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name), o = 0;

	out[0] = '\0';
	for (const char *p = challenge; (p = strcasestr(p, name)) != NULL; p += nl) {
		const char *v = p + nl;
		bool quoted;

		if (p != challenge && p[-1] != ' ' && p[-1] != ',' && p[-1] != '\t')
			continue;
		while (*v == ' ')
			v++;
		if (*v++ != '=')
			continue;
		while (*v == ' ')
			v++;
		quoted = *v == '"';
		v += quoted;
		for (; *v && o + 1 < len; v++) {
			if (quoted ? *v == '"' : (*v == ',' || *v == ' '))
				break;
			if (quoted && *v == '\\' && v[1] != '\0')
				v++;
			out[o++] = (unsigned char)*v >= 0x20 && (unsigned char)*v < 0x7f ? *v : '?';
		}
		out[o] = '\0';
		return;
	}
}

void
mcp_printable_line(const char *in, size_t n, char *out, size_t len)
{
	size_t o = 0;
	bool space = true;

	for (size_t i = 0; i < n && in[i] != '\0' && o + 1 < len; i++) {
		unsigned char ch = (unsigned char)in[i];

		if (isspace(ch) || ch < 0x20 || ch == 0x7f) {
			if (!space)
				out[o++] = ' ';
			space = true;
			continue;
		}
		out[o++] = ch < 0x80 ? (char)ch : '?';
		space = false;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}
