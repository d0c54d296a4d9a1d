/*
 * Inside the MCP client (mcp.c, mcp-stdio.c, mcp-http.c): the client's
 * state, the operations each transport provides, and the protocol helpers
 * the transports call.  Nothing outside these three files includes it.
 */
#ifndef TD_COMMON_MCP_INT_H
#define TD_COMMON_MCP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "buf.h"
#include "mcp.h"
#include "sandbox.h"

#define MCP_MODERN_VERSION "2026-07-28"
#define MCP_LEGACY_VERSION "2025-11-25"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define MCP_CLIENT_NAME "taskdeck"

enum rpc_status {
	RPC_OK = 0,
	RPC_FAILED = -1,	/* transport failure, timeout, garbage: err says */
	RPC_ERROR = -2,		/* the server answered with a JSON-RPC error (or HTTP 4xx) */
};

struct mcp_client;

/*
 * What differs between the transports; mcp.c keeps the protocol (ids,
 * classification of messages, the handshake, tools) above them.
 */
struct mcp_transport_ops {
	/* Request id with method (params consumed): RPC_OK with *result, RPC_ERROR, RPC_FAILED. */
	int (*rpc)(struct mcp_client *c, long id, const char *method, cJSON *params,
	    const char *during, cJSON **result, int *code, char *err, size_t errlen);
	/* Sends the notification msg (consumed) before deadline; 0 or -1. */
	int (*notify)(struct mcp_client *c, cJSON *msg, const char *method, long deadline,
	    char *err, size_t errlen);
	/* After a server/discover that failed: 0 falls back to initialize, -1 gives up. */
	int (*probe_failed)(struct mcp_client *c, char *err, size_t errlen);
	/* What a timeout message adds after "no answer within ... (during)". */
	void (*timeout_detail)(const struct mcp_client *c, char *out, size_t len);
	/* The server's process id, or -1. */
	int (*pid)(const struct mcp_client *c);
	/*
	 * Reads what the server sends for up to ms without taking it: 1 when it
	 * cancelled request mid (that notice is taken) or closed, else 0.
	 * NULL: the transport cannot look while a form waits.
	 */
	int (*watch)(struct mcp_client *c, const cJSON *mid, int ms);
	/* Ends the connection and frees what the transport holds (not c). */
	void (*close)(struct mcp_client *c);
};

struct mcp_client {
	const struct mcp_transport_ops *ops;
	struct mcp_limits lim;
	int cancel_fd;
	const cJSON *elicit_mid;	/* the id of the form being answered, or NULL */
	bool elicit_withdrawn;	/* the server cancelled it: no answer is sent */
	long next_id;
	bool ready;		/* handshake done */
	bool modern;		/* server/discover worked: every request carries _meta */
	bool modern_proven;	/* a request of the draft revision was answered */
	char progress_token[32];	/* of the call under way */
	char *instructions;	/* what the server's handshake said about using it, or NULL */
	/*
	 * Tools whose arguments go in headers too (SEP-2243): tool name ->
	 * {argument: header name}, from their inputSchema's x-mcp-header.
	 */
	cJSON *param_headers;
	/* The header lines of the tools/call under way: Mcp-Name, Mcp-Param-* (NULL = none). */
	struct curl_slist *call_headers;
	char *version;
	char *server_name;

	/* stdio */
	pid_t pid;
	int to_fd;		/* the server's stdin (a socket: MSG_NOSIGNAL) */
	int from_fd;		/* its stdout */
	int err_fd;		/* its stderr */
	struct buf in;		/* stdout bytes not yet split into lines */
	size_t scanned;		/* bytes of in already known to hold no newline */
	char *tail;		/* the last stderr bytes, a ring of lim.stderr_tail_bytes */
	size_t tail_len;
	size_t tail_pos;
	bool exited;
	int wstatus;
	bool sandboxed;		/* started by sandbox_spawn */
	/* of the last failed request */
	enum { FAIL_OTHER, FAIL_TIMEOUT, FAIL_EXITED, FAIL_CANCELLED, FAIL_SIGN_IN } failure;
	bool discarding;	/* skipping the rest of an oversized line */
	cJSON *roots;		/* the roots answered to roots/list ({uri, name}), or NULL */
	/* What started the server, to start it again after a probe that killed it. */
	char *program;
	char **argv;		/* argv[0] is the command as given */
	char **envp;		/* copies: wiped when freed (credentials) */
	char *cwd;
	struct sandbox_policy policy;	/* a copy; its strings are the caller's */
	bool has_policy;

	/* Streamable HTTP */
	CURL *curl;
	char *url;
	struct curl_slist *user_headers;
	char *session;		/* Mcp-Session-Id */
	CURL *aux;		/* answers to the server's requests, sent while a stream is open */
	long last_status;	/* HTTP status of the last exchange */
	CURLM *multi;		/* a request's transfer and the standalone stream, together */
	CURL *get;		/* the standalone event stream (GET), NULL when not open */
	struct http_exchange *getx;
	struct curl_slist *get_headers;
	bool get_refused;	/* the server does not offer it (405, or not a stream) */
	cJSON *replies;		/* answers to the server's requests, not yet sent */
	char *challenge;	/* the Bearer challenge of the last 401 or 403 insufficient_scope */
	mcp_elicit_fn elicit;	/* who answers elicitation/create, or NULL */
	void *elicit_ud;
	void (*elicit_ud_free)(void *);
	long asked_ms;		/* time spent asking someone during the current request */
	cJSON *deferred;	/* requests of the server to answer outside curl's callbacks */
	struct http_exchange *http_x;	/* the exchange http_run drives, or NULL */
	bool http_done;		/* its transfer has ended, with http_cc */
	CURLcode http_cc;
	bool form_on_get;	/* the form being answered came on the standalone stream */
	bool form_cancelled;	/* notifications/cancelled for it came */
	bool tools_changed;	/* notifications/tools/list_changed came */
	mcp_progress_fn progress;	/* who hears notifications/progress, or NULL */
	void *progress_ud;
	char *dpop_key;		/* the key of its DPoP proofs (jwt.h), or NULL; wiped */
	char dpop_nonce[256];	/* the server's latest DPoP-Nonce, or "" */
};

void mcp_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
long mcp_now_ms(void);
void mcp_fmt_size(size_t bytes, char *out, size_t len);
/* A client over ops, before its transport starts. */
struct mcp_client *mcp_client_new(const struct mcp_transport_ops *ops,
    const struct mcp_limits *lim);
bool mcp_cancel_requested(const struct mcp_client *c);
/* A message from the server, with every secret masked in its strings; NULL when not JSON. */
cJSON *mcp_message_parse(const struct mcp_client *c, const char *text, size_t len);
void mcp_timeout_err(struct mcp_client *c, const char *during, char *err, size_t errlen);
void mcp_cancelled_err(struct mcp_client *c, char *err, size_t errlen);
void mcp_too_big_err(const struct mcp_client *c, char *err, size_t errlen);
cJSON *mcp_request_new(struct mcp_client *c, long id, const char *method, cJSON *params);
/*
 * The answer to a request from the server (id mid): ping, roots/list (the
 * workspace, when the client has one); elicitation and sampling are declined
 * with an error that says why; anything else is "Method not found".
 */
cJSON *mcp_server_request_reply(struct mcp_client *c, const cJSON *mid, const char *method,
    const cJSON *params);
/*
 * What one message from the server means to a request with this id:
 * 1 = it is the answer (*out set), 0 = something else (skip it), -1 = not
 * JSON-RPC.  *reply is set when the server asked something of us.
 */
bool mcp_line_cancels(const struct mcp_client *c, const char *line, size_t len,
    const cJSON *mid);
int mcp_classify(struct mcp_client *c, cJSON *msg, long id, cJSON **out, cJSON **reply);
/*
 * Splits an answer into its result (detached into *result) or its error
 * (RPC_ERROR with a message naming the method).
 */
int mcp_answer_take(cJSON *msg, const char *method, cJSON **result, int *code, char *err,
    size_t errlen);
int mcp_initialize(struct mcp_client *c, char *err, size_t errlen);

/* DPoP over HTTP (mcp-dpop.c). */
/* Whether line is "DPoP: KEY" (then the key is kept: the line is never sent). */
bool mcp_dpop_take_header(struct mcp_client *c, const char *line);
/*
 * The user's header line as sent (malloc'd): with a DPoP key, Authorization
 * uses the DPoP scheme, and *token points at its token in line.
 */
char *mcp_dpop_line(const struct mcp_client *c, const char *line, const char **token);
/* "DPoP: PROOF" for a request of method htm with token (may be NULL), malloc'd; NULL without a key. */
char *mcp_dpop_proof_line(const struct mcp_client *c, const char *htm, const char *token);
/* Keeps the nonce of a DPoP-Nonce response header line. */
void mcp_dpop_nonce_note(struct mcp_client *c, const char *line, size_t len);
/* Whether a 401 asks for a proof with the nonce the server gave (use_dpop_nonce). */
bool mcp_dpop_nonce_asked(const struct mcp_client *c, long status, const char *www_auth);
/* Request method with params (consumed) under the next id, cancelled on a timeout. */
int mcp_rpc(struct mcp_client *c, const char *method, cJSON *params, const char *during,
    cJSON **result, int *code, char *err, size_t errlen);
/*
 * While *result (the answer to method with params, kept as sent) is an
 * InputRequiredResult (SEP-2322): fulfils its inputRequests and sends method
 * again with them (mcp-input.c).  RPC_OK with the final *result, else as rpc.
 */
int mcp_input_rounds(struct mcp_client *c, const char *method, const cJSON *params,
    const char *during, cJSON **result, char *err, size_t errlen);

#endif
