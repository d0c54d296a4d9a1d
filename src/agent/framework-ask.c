/*
 * The profile ask for an external CLI (docs/frameworks.md "ask"): claude asks a
 * permission prompt tool (--permission-prompt-tool mcp__taskdeck__approve) before
 * each tool call that needs permission.  That tool is this file's MCP stdio server,
 * `taskdeck-agent --permission-server SOCKET`, which claude starts inside the run's
 * sandbox.  It passes each question over a Unix socket (bound into the sandbox) to
 * the adapter, which sends permission.ask to the service and returns the answer.
 *
 * Socket lines, one each way per connection:
 *   server -> adapter  {"tool":"Write","input":{...}}
 *   adapter -> server  {"decision":"allow"|"deny"}
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "framework.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

#define ASK_LINE_MAX (4 * 1024 * 1024)	/* one MCP message or one socket line */
#define ASK_STRING_MAX 4096		/* per string of the input shown in the prompt */
#define ASK_READ_MS 10000		/* for the server's question to arrive */
#define ASK_SERVER_NAME "taskdeck"

/* ---- both ends: one line ------------------------------------------------------ */

/* Reads one line (without its newline) of at most ASK_LINE_MAX bytes; NULL at end of
 * input, on error, on a longer line or after deadline_ms (0: none). */
static char *
ask_read_line(int fd, long deadline_ms)
{
	struct buf b;
	int64_t end = clock_mono_ms() + deadline_ms;

	buf_init(&b, ASK_LINE_MAX);
	for (;;) {
		char c;
		ssize_t n;

		if (deadline_ms > 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			int64_t left = end - clock_mono_ms();

			if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
				break;
		}
		n = read(fd, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (c == '\n')
			return buf_steal(&b);
		if (!buf_append(&b, &c, 1))
			break;
	}
	buf_free(&b);
	return NULL;
}

/* Writes msg and a newline; msg is not consumed. */
static bool
ask_write_json(int fd, const cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);
	size_t len = text ? strlen(text) : 0, off = 0;
	bool ok = text != NULL;

	while (ok && off <= len) {
		const char *p = off < len ? text + off : "\n";
		size_t n = off < len ? len - off : 1;
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ok = false;
			break;
		}
		off += (size_t)w;
	}
	free(text);
	return ok;
}

/* ---- the MCP server (inside the sandbox) ---------------------------------------- */

/* Asks the adapter; true when the answer is allow. */
static bool
server_ask(const char *socket_path, const char *tool, const cJSON *input)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	cJSON *q = cJSON_CreateObject(), *a;
	char *line = NULL;
	bool allow = false;
	int fd;

	cJSON_AddStringToObject(q, "tool", tool);
	cJSON_AddItemToObject(q, "input", cJSON_Duplicate(input, true));
	if (strlen(socket_path) >= sizeof sa.sun_path ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		cJSON_Delete(q);
		return false;
	}
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	/* No deadline for the answer: a person decides, maybe hours later. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && ask_write_json(fd, q) &&
	    (line = ask_read_line(fd, 0)) != NULL) {
		a = json_parse(line, strlen(line));
		allow = json_get_string(a, "decision") != NULL &&
		    strcmp(json_get_string(a, "decision"), "allow") == 0;
		cJSON_Delete(a);
	}
	free(line);
	close(fd);
	cJSON_Delete(q);
	return allow;
}

/* The result of tools/call approve: claude's permission result as one text block. */
static cJSON *
server_call(const char *socket_path, const cJSON *params)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	const char *tool = json_get_string(args, "tool_name");
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(args, "input");
	cJSON *result = cJSON_CreateObject(), *content, *answer = cJSON_CreateObject();
	char *text;

	if (tool != NULL && cJSON_IsObject(input) && server_ask(socket_path, tool, input)) {
		cJSON_AddStringToObject(answer, "behavior", "allow");
		cJSON_AddItemToObject(answer, "updatedInput", cJSON_Duplicate(input, true));
	} else {
		cJSON_AddStringToObject(answer, "behavior", "deny");
		/* "denied by": the adapter's mapping reports the tool denied. */
		cJSON_AddStringToObject(answer, "message", "This tool call was denied by the "
		    "user (taskdeck's permission prompt).");
	}
	text = cJSON_PrintUnformatted(answer);
	content = cJSON_AddArrayToObject(result, "content");
	cJSON_AddItemToArray(content, cJSON_CreateObject());
	cJSON_AddStringToObject(cJSON_GetArrayItem(content, 0), "type", "text");
	cJSON_AddStringToObject(cJSON_GetArrayItem(content, 0), "text", text);
	free(text);
	cJSON_Delete(answer);
	return result;
}

static cJSON *
server_tools(void)
{
	static const char schema[] = "{\"type\":\"object\",\"properties\":{"
	    "\"tool_name\":{\"type\":\"string\"},\"input\":{\"type\":\"object\"},"
	    "\"tool_use_id\":{\"type\":\"string\"}},\"required\":[\"tool_name\",\"input\"]}";
	cJSON *result = cJSON_CreateObject();
	cJSON *tool = cJSON_CreateObject();

	cJSON_AddStringToObject(tool, "name", "approve");
	cJSON_AddStringToObject(tool, "description", "Asks the taskdeck user whether a tool "
	    "call may run.");
	cJSON_AddItemToObject(tool, "inputSchema", cJSON_Parse(schema));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(result, "tools"), tool);
	return result;
}

int
fw_permission_server(const char *socket_path)
{
	char *line;

	while ((line = ask_read_line(STDIN_FILENO, 0)) != NULL) {
		cJSON *msg = json_parse(line, strlen(line)), *reply, *result = NULL;
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
		const char *method = json_get_string(msg, "method");
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

		free(line);
		if (method == NULL || id == NULL || cJSON_IsNull(id)) {
			cJSON_Delete(msg);	/* a notification or a response: nothing to say */
			continue;
		}
		reply = cJSON_CreateObject();
		cJSON_AddStringToObject(reply, "jsonrpc", "2.0");
		cJSON_AddItemToObject(reply, "id", cJSON_Duplicate(id, true));
		if (strcmp(method, "initialize") == 0) {
			const char *version = json_get_string(params, "protocolVersion");

			result = cJSON_CreateObject();
			cJSON_AddStringToObject(result, "protocolVersion", version ? version :
			    "2025-06-18");
			cJSON_AddObjectToObject(cJSON_AddObjectToObject(result, "capabilities"),
			    "tools");
			cJSON_AddStringToObject(cJSON_AddObjectToObject(result, "serverInfo"), "name",
			    ASK_SERVER_NAME);
			cJSON_AddStringToObject(cJSON_GetObjectItem(result, "serverInfo"), "version",
			    TD_VERSION);
		} else if (strcmp(method, "ping") == 0) {
			result = cJSON_CreateObject();
		} else if (strcmp(method, "tools/list") == 0) {
			result = server_tools();
		} else if (strcmp(method, "tools/call") == 0 &&
		    json_get_string(params, "name") != NULL &&
		    strcmp(json_get_string(params, "name"), "approve") == 0) {
			result = server_call(socket_path, params);
		}
		if (result != NULL) {
			cJSON_AddItemToObject(reply, "result", result);
		} else {
			cJSON *e = cJSON_AddObjectToObject(reply, "error");

			cJSON_AddNumberToObject(e, "code", -32601);
			cJSON_AddStringToObject(e, "message", "unknown method or tool");
		}
		if (!ask_write_json(STDOUT_FILENO, reply)) {
			cJSON_Delete(reply);
			cJSON_Delete(msg);
			return 1;
		}
		cJSON_Delete(reply);
		cJSON_Delete(msg);
	}
	return 0;
}

/* ---- the adapter's end (outside the sandbox) ----------------------------------- */

int
fw_ask_listen(char *path, size_t len)
{
	char dir[] = "/tmp/taskdeck-ask-XXXXXX";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, e;

	if (mkdtemp(dir) == NULL)
		return -1;
	if ((size_t)snprintf(path, len, "%s/socket", dir) >= len ||
	    strlen(path) >= sizeof sa.sun_path) {
		rmdir(dir);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 8) != 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		fw_ask_unlink(path);
		errno = e;
		return -1;
	}
	return fd;
}

void
fw_ask_unlink(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	unlink(path);
	snprintf(dir, sizeof dir, "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		rmdir(dir);
	}
}

/* The input as shown to the user: long strings cut (as the built-in agent does). */
static cJSON *
ask_shown_input(const cJSON *input)
{
	cJSON *shown = cJSON_Duplicate(input, true), *v;

	cJSON_ArrayForEach(v, shown) {
		size_t n;
		char *cut, *text;

		if (!cJSON_IsString(v) || (n = strlen(v->valuestring)) <= ASK_STRING_MAX)
			continue;
		cut = agent_utf8_prefix(v->valuestring, ASK_STRING_MAX);
		text = xasprintf("%s… (%zu bytes in all)", cut, n);
		cJSON_SetValuestring(v, text);
		free(cut);
		free(text);
	}
	return shown;
}

int
fw_ask_serve(const struct framework_ops *ops, struct fw_run *r, int listen_fd)
{
	int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC), rc = AGENT_OK;
	cJSON *q = NULL, *params, *result = NULL, *answer;
	const char *tool;
	const cJSON *input;
	struct agent_error err = { 0 };
	char summary[AGENT_SUMMARY_MAX + 1], *line;
	bool allow = false;

	if (c < 0)
		return AGENT_OK;
	if ((line = ask_read_line(c, ASK_READ_MS)) != NULL)
		q = json_parse(line, strlen(line));
	free(line);
	tool = json_get_string(q, "tool");
	input = cJSON_GetObjectItemCaseSensitive(q, "input");
	if (tool != NULL && tool[0] != '\0' && strlen(tool) <= 200 && cJSON_IsObject(input)) {
		char *name = agent_utf8_clean(tool);

		ops->describe(r, name, input, summary, sizeof summary);
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "tool", name);
		cJSON_AddStringToObject(params, "summary", summary);
		cJSON_AddItemToObject(params, "input", ask_shown_input(input));
		host_progress(r->host, "tool", summary);
		rc = host_request(r->host, "permission.ask", params, &result, &err);
		allow = rc == AGENT_OK && json_get_string(result, "decision") != NULL &&
		    strcmp(json_get_string(result, "decision"), "allow") == 0;
		if (rc == AGENT_FAILED) {
			log_info("permission.ask failed: %s", err.message);
			rc = AGENT_OK;
		}
		log_info("%s asked for %s: %s", ops->program, name, allow ? "allowed" : "denied");
		free(name);
	} else
		log_warn("the permission prompt tool sent a malformed question");
	answer = cJSON_CreateObject();
	cJSON_AddStringToObject(answer, "decision", allow ? "allow" : "deny");
	ask_write_json(c, answer);
	cJSON_Delete(answer);
	close(c);
	cJSON_Delete(result);
	cJSON_Delete(q);
	agent_error_clear(&err);
	return rc;
}
