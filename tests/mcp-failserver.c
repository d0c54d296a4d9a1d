/*
 * A small stdio MCP server for the cases real servers do not show: the mode
 * (argv[1]) says how it misbehaves.
 *
 *   die        exits during the handshake after a line on stderr
 *   silent     reads and never answers
 *   huge       answers with a line longer than 4 MiB
 *   garbage    legacy, and writes a line that is not JSON before each answer
 *   notrpc     legacy, and writes JSON that is not JSON-RPC before each answer
 *   hugecall   legacy; a tools/call with text "big" is answered with a line over 4 MiB
 *   form       legacy; a tools/call first sends a form (elicitation/create:
 *              name, age, subscribe, color) and answers with what the client said;
 *              it also lists a tool named "elicitation", an ordinary tool
 *   bigform    as form, but the form's message is 1.5 MiB
 *   giveupform as form, but gives up on its form at once (notifications/cancelled
 *              for it) and answers the call "the server gave up on its form"
 *   cutform    as form, but the form's message and a progress message before it
 *              are 601 bytes of "x" and "\u00e9"s, cut anywhere inside a character
 *   asks       legacy; a tools/call first asks the client roots/list,
 *              elicitation/create and sampling/createMessage, and answers with
 *              what the client said to each
 *   oldversion legacy, but initialize answers a revision nobody knows
 *   modern     speaks only MCP 2026-07-28: server/discover, no initialize
 *   legacy     initialize only; tools/list in three pages; a server request
 *              and notifications before each answer
 *   spawner    legacy, and leaves a grandchild sleeping in its process group
 *   stubborn   legacy, and ignores SIGTERM and the end of its input
 *   slowcall   legacy, and never answers tools/call
 * Every mode appends the notifications it gets to the file $TD_NOTICES, when set.
 *   probe-silent  legacy, and ignores server/discover (no answer at all)
 *   probe-exit    legacy, and exits on server/discover
 *   future     answers server/discover with UnsupportedProtocolVersionError
 *   halfmodern offers only 2026-07-28 in server/discover, then refuses every
 *              request of that revision with -32602; speaks initialize
 *   env        legacy; its tool "env" says the length and a hash of $TD_PROBE
 *   loud       prints $TD_PROBE on stderr and exits during the handshake
 *   leak       legacy; its tool "env" answers with $TD_PROBE itself, plainly
 *              and \u-escaped
 *   http-echo PORT  a Streamable HTTP server on 127.0.0.1:PORT that refuses
 *              every request with a JSON-RPC error quoting its Authorization
 *              header's credentials, plainly and \u-escaped
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static const char *mode;

static void
say(cJSON *msg)
{
	char *s = cJSON_PrintUnformatted(msg);

	printf("%s\n", s);
	fflush(stdout);
	free(s);
	cJSON_Delete(msg);
}

static cJSON *
answer(const cJSON *id)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "jsonrpc", "2.0");
	cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, true));
	return r;
}

static void
error(const cJSON *id, int code, const char *message)
{
	cJSON *r = answer(id);
	cJSON *e = cJSON_AddObjectToObject(r, "error");

	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	say(r);
}

static void
add_tool(cJSON *arr, const char *name, bool read_only)
{
	cJSON *t = cJSON_CreateObject();

	cJSON_AddStringToObject(t, "name", name);
	cJSON_AddStringToObject(t, "description", "a test tool");
	cJSON_AddItemToObject(t, "inputSchema",
	    cJSON_Parse("{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}"));
	if (read_only)
		cJSON_AddItemToObject(t, "annotations", cJSON_Parse("{\"readOnlyHint\":true}"));
	cJSON_AddItemToArray(arr, t);
}

static void
tools_list(const cJSON *id, const cJSON *params)
{
	const char *cursor = cJSON_GetStringValue(cJSON_GetObjectItem(params, "cursor"));
	cJSON *r = answer(id), *res = cJSON_AddObjectToObject(r, "result");
	cJSON *arr = cJSON_AddArrayToObject(res, "tools");

	if (strcmp(mode, "modern") == 0 || strcmp(mode, "env") == 0 ||
	    strcmp(mode, "leak") == 0) {
		add_tool(arr, strcmp(mode, "modern") == 0 ? "shout" : "env", true);
	} else if (cursor == NULL) {
		add_tool(arr, "one", true);
		add_tool(arr, "two", false);
		if (strcmp(mode, "form") == 0)
			add_tool(arr, "elicitation", false);
		cJSON_AddStringToObject(res, "nextCursor", "p2");
	} else if (strcmp(cursor, "p2") == 0) {
		cJSON_AddStringToObject(res, "nextCursor", "p3");
	} else {
		add_tool(arr, "three", false);
	}
	say(r);
}

static void
tools_call(const cJSON *id, const cJSON *params)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(params, "name"));
	const cJSON *args = cJSON_GetObjectItem(params, "arguments");
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(args, "text"));
	cJSON *r = answer(id), *res = cJSON_AddObjectToObject(r, "result");
	cJSON *content = cJSON_AddArrayToObject(res, "content"), *item = cJSON_CreateObject();
	char out[1024];

	if (strcmp(mode, "slowcall") == 0) {
		cJSON_Delete(r);
		cJSON_Delete(item);
		return;
	}
	if (name != NULL && strcmp(name, "env") == 0 && strcmp(mode, "leak") == 0) {
		/* Says the value, as a careless server would; the second copy \u-escapes its start. */
		const char *v = getenv("TD_PROBE") ? getenv("TD_PROBE") : "";

		cJSON_Delete(r);
		cJSON_Delete(item);
		printf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":"
		    "\"text\",\"text\":\"TD_PROBE is %s\"},{\"type\":\"text\",\"text\":"
		    "\"again: \\u%04x%s\"}]}}\n", (int)cJSON_GetNumberValue(id), v,
		    (unsigned char)v[0], v[0] ? v + 1 : "");
		fflush(stdout);
		return;
	}
	if (strcmp(mode, "hugecall") == 0 && text != NULL && strcmp(text, "big") == 0) {
		size_t n = 5 * 1024 * 1024;
		char *pad = malloc(n + 1);

		memset(pad, 'x', n);
		pad[n] = '\0';
		printf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"pad\":\"%s\"}}\n",
		    (int)cJSON_GetNumberValue(id), pad);
		fflush(stdout);
		free(pad);
		cJSON_Delete(r);
		cJSON_Delete(item);
		return;
	}
	if (strcmp(mode, "giveupform") == 0) {
		printf("{\"jsonrpc\":\"2.0\",\"id\":950,\"method\":\"elicitation/create\","
		    "\"params\":{\"message\":\"Still there?\",\"requestedSchema\":{\"type\":"
		    "\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}}\n");
		fflush(stdout);
		usleep(100000);
		printf("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		    "\"params\":{\"requestId\":950,\"reason\":\"nobody answered\"}}\n");
		fflush(stdout);
		snprintf(out, sizeof out, "the server gave up on its form");
	} else if ((strcmp(mode, "form") == 0 || strcmp(mode, "bigform") == 0 ||
	    strcmp(mode, "cutform") == 0) && (name == NULL || strcmp(name, "elicitation") != 0)) {
		static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":950,\"method\":"
		    "\"elicitation/create\",\"params\":{\"message\":\"";
		static const char q[] = "\","
		    "\"requestedSchema\":{\"type\":\"object\",\"properties\":{"
		    "\"name\":{\"type\":\"string\",\"description\":\"Your name\","
		    "\"default\":\"anon\"},"
		    "\"age\":{\"type\":\"integer\",\"description\":\"Your age\","
		    "\"minimum\":0},"
		    "\"subscribe\":{\"type\":\"boolean\",\"default\":false},"
		    "\"color\":{\"type\":\"string\",\"enum\":[\"red\",\"green\"],"
		    "\"default\":\"red\"}},\"required\":[\"age\"]}}}";
		cJSON *a = NULL;
		char *line = NULL, *got, *message = NULL;
		size_t cap = 0;

		if (strcmp(mode, "bigform") == 0) {
			size_t n = 1536 * 1024;

			message = malloc(n + 1);
			memset(message, 'x', n);
			message[n] = '\0';
		} else if (strcmp(mode, "cutform") == 0) {
			message = malloc(602);
			message[0] = 'x';
			for (size_t i = 0; i < 300; i++)
				memcpy(message + 1 + 2 * i, "\303\251", 2);
			message[601] = '\0';
			/* The call's own token: a notice naming another is skipped. */
			const char *token = cJSON_GetStringValue(cJSON_GetObjectItem(
			    cJSON_GetObjectItem(params, "_meta"), "progressToken"));

			printf("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
			    "{\"progressToken\":\"%s\",\"progress\":1,\"total\":2,"
			    "\"message\":\"%s\"}}\n", token != NULL ? token : "none", message);
		}
		printf("%s%s%s\n", head, message != NULL ? message : "Who is asking?", q);
		fflush(stdout);
		free(message);
		while (a == NULL || cJSON_GetNumberValue(cJSON_GetObjectItem(a, "id")) != 950) {
			cJSON_Delete(a);
			if (getline(&line, &cap, stdin) <= 0)
				exit(1);
			a = cJSON_Parse(line);
		}
		free(line);
		got = cJSON_PrintUnformatted(cJSON_GetObjectItem(a, "result") != NULL ?
		    cJSON_GetObjectItem(a, "result") : cJSON_GetObjectItem(a, "error"));
		snprintf(out, sizeof out, "form: %s", got != NULL ? got : "(no result)");
		free(got);
		cJSON_Delete(a);
	} else if (strcmp(mode, "asks") == 0) {
		static const char *const asks[] = { "roots/list", "elicitation/create",
			"sampling/createMessage" };
		size_t o = 0;

		out[0] = '\0';
		for (size_t i = 0; i < 3; i++) {
			char *line = NULL;
			size_t cap = 0;
			cJSON *q = cJSON_CreateObject(), *a;
			char *s;

			cJSON_AddStringToObject(q, "jsonrpc", "2.0");
			cJSON_AddNumberToObject(q, "id", 900 + (double)i);
			cJSON_AddStringToObject(q, "method", asks[i]);
			cJSON_AddObjectToObject(q, "params");
			say(q);
			/* The answer with our id (the answers to the chatter's ping come too). */
			for (a = NULL; a == NULL || cJSON_GetNumberValue(cJSON_GetObjectItem(a, "id"))
			    != 900 + (double)i;) {
				cJSON_Delete(a);
				if (getline(&line, &cap, stdin) <= 0)
					exit(1);
				a = cJSON_Parse(line);
			}
			free(line);
			cJSON_DeleteItemFromObject(a, "jsonrpc");
			cJSON_DeleteItemFromObject(a, "id");
			s = cJSON_PrintUnformatted(a);
			o += (size_t)snprintf(out + o, sizeof out - o, "%s%s: %s", i ? "\n" : "",
			    asks[i], s);
			if (o >= sizeof out)
				o = sizeof out - 1;
			free(s);
			cJSON_Delete(a);
		}
	} else if (name != NULL && strcmp(name, "progress-token") == 0) {
		/* The call's progress token, as it came. */
		char *tok = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(params,
		    "_meta"), "progressToken"));

		snprintf(out, sizeof out, "%s", tok != NULL ? tok : "(none)");
		free(tok);
	} else if (name != NULL && strcmp(name, "env") == 0) {
		/* Says what it got without saying the value (it may be a secret). */
		const char *v = getenv("TD_PROBE");
		unsigned sum = 0;

		for (const char *p = v ? v : ""; *p; p++)
			sum = sum * 31 + (unsigned char)*p;
		snprintf(out, sizeof out, "TD_PROBE: %s, %zu bytes, hash %u", v ? "set" : "unset",
		    v ? strlen(v) : 0, sum);
	}
	else
		snprintf(out, sizeof out, "%s:%s", name ? name : "?", text ? text : "");
	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", out);
	cJSON_AddItemToArray(content, item);
	say(r);
}

static void
handle(cJSON *msg)
{
	const cJSON *id = cJSON_GetObjectItem(msg, "id");
	const char *method = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "method"));
	const cJSON *params = cJSON_GetObjectItem(msg, "params");
	bool modern = strcmp(mode, "modern") == 0;

	if (method != NULL && id == NULL && getenv("TD_NOTICES") != NULL) {
		FILE *f = fopen(getenv("TD_NOTICES"), "a");
		char *text = cJSON_PrintUnformatted(msg);

		if (f != NULL) {
			fprintf(f, "%s\n", text);
			fclose(f);
		}
		free(text);
	}
	if (method == NULL || id == NULL)
		return;		/* a notification or an answer to our ping */
	if (strcmp(mode, "die") == 0) {
		fprintf(stderr, "fatal: cannot open the cheese database\n");
		exit(3);
	}
	if (strcmp(mode, "loud") == 0) {
		fprintf(stderr, "fatal: the API refused the key %s\n", getenv("TD_PROBE") ?
		    getenv("TD_PROBE") : "(none)");
		exit(3);
	}
	if (strcmp(mode, "silent") == 0)
		return;
	if (strcmp(mode, "huge") == 0) {
		size_t n = 5 * 1024 * 1024;
		char *s = malloc(n + 1);

		memset(s, 'x', n);
		s[n] = '\0';
		printf("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pad\":\"%s\"}}\n", s);
		fflush(stdout);
		free(s);
		return;
	}
	if (strcmp(mode, "garbage") == 0) {
		printf("Hello! I am not a JSON-RPC server.\n");
		fflush(stdout);
	}
	if (strcmp(mode, "notrpc") == 0) {
		printf("{\"hello\":\"world\"}\n");
		fflush(stdout);
	}
	if (!modern) {
		/* Chatter an MCP client must skip or answer. */
		printf("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n");
		printf("{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n");
		fflush(stdout);
	}
	if (strcmp(method, "server/discover") == 0 && strcmp(mode, "probe-silent") == 0)
		return;
	if (strcmp(method, "server/discover") == 0 && strcmp(mode, "probe-exit") == 0) {
		fprintf(stderr, "unknown method server/discover\n");
		exit(1);
	}
	if (strcmp(method, "server/discover") == 0 && strcmp(mode, "future") == 0) {
		error(id, -32022, "Unsupported protocol version");
		return;
	}
	if (strcmp(mode, "halfmodern") == 0 && strcmp(method, "server/discover") != 0 &&
	    cJSON_GetObjectItem(cJSON_GetObjectItem(params, "_meta"),
	    "io.modelcontextprotocol/protocolVersion") != NULL) {
		error(id, -32602, "Invalid params: per-request metadata is not taken here");
		return;
	}
	if (strcmp(method, "server/discover") == 0) {
		if (!modern && strcmp(mode, "halfmodern") != 0) {
			error(id, -32601, "Method not found");
			return;
		}
		cJSON *r = answer(id), *res = cJSON_AddObjectToObject(r, "result");

		cJSON_AddStringToObject(res, "resultType", "complete");
		cJSON_AddItemToObject(res, "supportedVersions", cJSON_Parse("[\"2026-07-28\"]"));
		cJSON_AddItemToObject(res, "capabilities", cJSON_Parse("{\"tools\":{}}"));
		cJSON_AddItemToObject(res, "serverInfo",
		    cJSON_Parse("{\"name\":\"failserver-modern\",\"version\":\"1\"}"));
		say(r);
		return;
	}
	if (strcmp(method, "initialize") == 0) {
		if (modern) {
			error(id, -32601, "Method not found");
			return;
		}
		cJSON *r = answer(id), *res = cJSON_AddObjectToObject(r, "result");

		cJSON_AddStringToObject(res, "protocolVersion",
		    strcmp(mode, "oldversion") == 0 ? "1999-01-01" : "2025-06-18");
		cJSON_AddItemToObject(res, "capabilities", cJSON_Parse("{\"tools\":{}}"));
		cJSON_AddItemToObject(res, "serverInfo",
		    cJSON_Parse("{\"name\":\"failserver-legacy\",\"version\":\"1\"}"));
		say(r);
		return;
	}
	if (modern) {
		/* 2026-07-28: every request names its version in _meta. */
		const cJSON *meta = cJSON_GetObjectItem(params, "_meta");
		const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(meta,
		    "io.modelcontextprotocol/protocolVersion"));

		if (v == NULL || strcmp(v, "2026-07-28") != 0) {
			error(id, -32022, "Unsupported protocol version");
			return;
		}
		/* and what the client offers, the revision being without sessions */
		if (!cJSON_IsObject(cJSON_GetObjectItem(meta,
		    "io.modelcontextprotocol/clientCapabilities"))) {
			error(id, -32602, "Invalid params: _meta lacks clientCapabilities");
			return;
		}
	}
	if (strcmp(method, "tools/list") == 0)
		tools_list(id, params);
	else if (strcmp(method, "tools/call") == 0)
		tools_call(id, params);
	else
		error(id, -32601, "Method not found");
}

/* The value of header name in the request head req (ends at CR), copied into out. */
static void
header_of(const char *req, const char *name, char *out, size_t len)
{
	size_t n = strlen(name);

	*out = '\0';
	for (const char *l = strstr(req, "\r\n"); l != NULL; l = strstr(l + 2, "\r\n")) {
		if (strncasecmp(l + 2, name, n) == 0 && l[2 + n] == ':') {
			const char *v = l + 3 + n;

			while (*v == ' ')
				v++;
			snprintf(out, len, "%.*s", (int)strcspn(v, "\r\n"), v);
			return;
		}
	}
}

/* http-echo: answers every POST with an error quoting the Authorization credentials. */
static int
http_echo(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	signal(SIGPIPE, SIG_IGN);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
		perror("http-echo");
		return 1;
	}
	for (;;) {
		char req[65536], auth[4096], body[9000], head[256];
		const char *cred, *end, *idp;
		size_t got = 0;
		long clen = 0;
		int c = accept(fd, NULL, NULL);
		ssize_t n;

		if (c < 0)
			continue;
		/* The head, then the body Content-Length says. */
		while (got < sizeof req - 1 && (n = read(c, req + got, sizeof req - 1 - got)) > 0) {
			got += (size_t)n;
			req[got] = '\0';
			if ((end = strstr(req, "\r\n\r\n")) == NULL)
				continue;
			header_of(req, "Content-Length", auth, sizeof auth);
			clen = atol(auth);
			if ((long)(got - (size_t)(end + 4 - req)) >= clen)
				break;
		}
		if (got == 0) {	/* a probe of the port */
			close(c);
			continue;
		}
		header_of(req, "Authorization", auth, sizeof auth);
		cred = strchr(auth, ' ') ? strchr(auth, ' ') + 1 : auth;
		idp = strstr(req, "\"id\":");
		snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"error\":{\"code\":"
		    "-32001,\"message\":\"the token %s is not valid (\\u%04x%s)\"}}",
		    idp ? atol(idp + 5) : 0L, cred, (unsigned char)cred[0], cred[0] ? cred + 1 : "");
		snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n", strlen(body));
		if (write(c, head, strlen(head)) < 0 || write(c, body, strlen(body)) < 0)
			perror("http-echo");
		close(c);
	}
}

int
main(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	mode = argc > 1 ? argv[1] : "legacy";
	if (strcmp(mode, "http-echo") == 0)
		return http_echo(argc > 2 ? atoi(argv[2]) : 0);
	if (strcmp(mode, "spawner") == 0 && fork() == 0) {
		/* The grandchild: stays in the group, holds no pipe. */
		freopen("/dev/null", "r", stdin);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execlp("sleep", "sleep", "300", (char *)NULL);
		_exit(127);
	}
	if (strcmp(mode, "stubborn") == 0)
		signal(SIGTERM, SIG_IGN);
	while ((n = getline(&line, &cap, stdin)) > 0) {
		cJSON *msg = cJSON_Parse(line);

		if (msg != NULL)
			handle(msg);
		cJSON_Delete(msg);
	}
	free(line);
	if (strcmp(mode, "stubborn") == 0)
		for (;;)
			pause();
	return 0;
}
