/*
 * The MCP client (docs/connectors.md): one implementation used by the agent
 * (the tools of enabled connectors) and by the service (testConnector).
 * Transports: stdio (a child in its own process group) and Streamable HTTP
 * (libcurl).  Handshake: server/discover (MCP 2026-07-28), falling back to
 * initialize + notifications/initialized (2025-11-25 and earlier).
 *
 * Every call is synchronous and bounded by the limits.  Error messages are
 * meant for people and never hold a header or environment value; what the
 * server itself says is masked with lim.secrets.  A client is used by one
 * thread at a time.
 */
#ifndef TD_COMMON_MCP_H
#define TD_COMMON_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define MCP_DEFAULT_TIMEOUT_MS 10000
#define MCP_DEFAULT_MAX_MESSAGE (4u * 1024 * 1024)
#define MCP_DEFAULT_MAX_TOOLS 1000
#define MCP_DEFAULT_STDERR_TAIL 4096

struct mcp_client;
struct redact;
struct sandbox_policy;

/* 0 = the default. */
struct mcp_limits {
	int request_timeout_ms;
	size_t max_message_bytes;
	size_t max_tools;
	size_t stderr_tail_bytes;
	/*
	 * The secrets masked in everything the server says (src/common/redact.h):
	 * every message it sends and its stderr, before any of it reaches an
	 * error message, a tool list or a result.  NULL = none; it must outlive
	 * the client and may grow meanwhile.
	 */
	const struct redact *secrets;
};

struct mcp_tool {
	char *name;
	char *description;	/* "" when the server gave none */
	cJSON *input_schema;	/* an object; {"type":"object"} when the server gave none */
	bool read_only_hint;
};

/*
 * Starts a stdio server: command (a path, or a name looked up in envp's PATH)
 * with args (argv[1..], NULL-terminated; NULL = none), envp exactly
 * (NULL-terminated), in cwd (NULL = ours), in its own process group.  NULL
 * with err set when it cannot be started.
 */
struct mcp_client *mcp_open_stdio(const char *command, char *const args[], char *const envp[],
    const char *cwd, const struct mcp_limits *lim, char *err, size_t errlen);
/*
 * mcp_open_stdio inside the sandbox of policy (src/common/sandbox.h): the
 * server and all it starts see what the run's commands see.  Fails closed
 * ("sandbox_unavailable: …") like sandbox_spawn.  NULL policy = mcp_open_stdio.
 * Call it from a thread that outlives the client (the sandbox ends with it).
 * policy is copied, but the strings it points to (workspace, hidden) must stay
 * valid until mcp_close: a server of an earlier revision that exits on the
 * server/discover probe is started again for initialize.
 */
struct mcp_client *mcp_open_stdio_sandboxed(const struct sandbox_policy *policy,
    const char *command, char *const args[], char *const envp[], const char *cwd,
    const struct mcp_limits *lim, char *err, size_t errlen);
/*
 * Streamable HTTP; headers are "Name: value", NULL-terminated (NULL = none).
 * A "DPoP: KEY" line is not sent: it is the key (jwt.h) of the DPoP proof
 * every request carries, and the Authorization token goes with the DPoP
 * scheme (mcp-dpop.c).  Connects lazily.
 */
struct mcp_client *mcp_open_http(const char *url, const char *const *headers,
    const struct mcp_limits *lim, char *err, size_t errlen);

/* 0, or -1 with err set.  Must come before the calls below. */
int mcp_handshake(struct mcp_client *c, char *err, size_t errlen);
/* "2026-07-28" or the version initialize agreed on; NULL before the handshake. */
const char *mcp_protocol_version(const struct mcp_client *c);
/* The server's name from its handshake answer, or NULL. */
const char *mcp_server_name(const struct mcp_client *c);
/*
 * The server's instructions from its handshake answer (how to use its tools,
 * meant for the model): one printable line of at most MCP_INSTRUCTIONS_MAX
 * bytes (secrets masked), or NULL.
 */
#define MCP_INSTRUCTIONS_MAX 2000
const char *mcp_server_instructions(const struct mcp_client *c);

/* Every tool, following nextCursor; *tools is freed with mcp_tools_free. */
int mcp_list_tools(struct mcp_client *c, struct mcp_tool **tools, size_t *n,
    char *err, size_t errlen);
/*
 * Calls a tool; *result is the server's CallToolResult (the caller frees it;
 * its isError may be true).  arguments NULL = {}.
 */
int mcp_call_tool(struct mcp_client *c, const char *name, const cJSON *arguments,
    cJSON **result, char *err, size_t errlen);
void mcp_tools_free(struct mcp_tool *tools, size_t n);

/*
 * The directory the server may work in (the run's workspace): offered as the
 * roots capability and answered to roots/list as a file:// URI.  Call before
 * the handshake.  NULL = no roots.
 */
void mcp_set_root(struct mcp_client *c, const char *dir);
/*
 * One more root after mcp_set_root's (a directory the connector's settings
 * give the server, offered beside the workspace), named name.  At most 64.
 */
void mcp_add_root(struct mcp_client *c, const char *dir, const char *name);

/*
 * Someone to ask when the server sends elicitation/create (a form for the
 * user): fn gets the request's params and answers the ElicitResult
 * ({"action": "accept", "content": {…}}, "decline" or "cancel"; the caller
 * frees it), or NULL to decline; NULL with *refused (malloc'd) set refuses the
 * request itself, with that message as a JSON-RPC error (Invalid params) the
 * server sees.  It may block as long as a person takes:
 * that time does not count against the request being waited for.  The
 * client offers the elicitation capability only with a handler; ud_free
 * (may be NULL) frees ud at mcp_close.  Call before the handshake.
 */
typedef cJSON *(*mcp_elicit_fn)(struct mcp_client *c, const cJSON *params, void *ud,
    char **refused);
void mcp_set_elicitation(struct mcp_client *c, mcp_elicit_fn fn, void *ud,
    void (*ud_free)(void *));
/*
 * From inside fn, while the person has not answered: reads the server's
 * messages for up to ms and says whether it has given up on its form (sent
 * notifications/cancelled for it, or closed).  Then fn's answer is dropped:
 * the server gets none.  Messages that are not that notice stay for the call
 * under way.  Over HTTP the transfers are read meanwhile: the notice comes on
 * an event stream, and the end of the stream the form came on counts too.
 */
bool mcp_elicit_withdrawn(struct mcp_client *c, int ms);

/*
 * Lets a call be interrupted: while waiting, the client also polls fd and
 * gives up ("cancelled") as soon as it is readable.  -1 = none.
 */
void mcp_set_cancel_fd(struct mcp_client *c, int fd);

/*
 * The WWW-Authenticate Bearer challenge of the last request that failed
 * with "sign-in needed" (a 401, or a 403 insufficient_scope), or NULL.
 */
const char *mcp_auth_challenge(const struct mcp_client *c);

/*
 * Whether notifications/tools/list_changed came since the last time this was
 * asked (the flag is cleared): the caller lists the tools again.
 */
bool mcp_tools_changed(struct mcp_client *c);

/*
 * Someone to tell of notifications/progress during a tool call: calls then
 * carry a progressToken.  total is -1 when the server gave none; message may
 * be NULL (what the server says: mask it).  Called while the call waits,
 * possibly from inside a transfer: fn must not use the client.
 */
typedef void (*mcp_progress_fn)(void *ud, double progress, double total,
    const char *message);
void mcp_set_progress(struct mcp_client *c, mcp_progress_fn fn, void *ud);

/* The HTTP status of the last exchange with an HTTP server; 0 for stdio. */
int mcp_http_status(const struct mcp_client *c);
/*
 * Sends the header line "Name: value" from now on instead of the one of that
 * name (a renewed token).  Nothing for stdio.
 */
void mcp_set_header(struct mcp_client *c, const char *line);

/* The stdio server's pid (= its process group id); -1 for HTTP. */
int mcp_server_pid(const struct mcp_client *c);

/* Closes (NULL is fine); a stdio server's whole process group is killed and reaped. */
void mcp_close(struct mcp_client *c);

/*
 * The value of auth-param name in a WWW-Authenticate challenge (quoted or a
 * token), printable ASCII only; "" when absent.  len > 0.
 */
void mcp_challenge_param(const char *challenge, const char *name, char *out, size_t len);
/*
 * in[0, n) as one printable line into out (len > 0): blanks and control
 * characters folded into single spaces, bytes outside ASCII '?', trimmed.
 */
void mcp_printable_line(const char *in, size_t n, char *out, size_t len);

#endif
