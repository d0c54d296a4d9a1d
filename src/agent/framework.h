/*
 * External agent frameworks (docs/frameworks.md): for a run whose framework
 * is claude-code or codex, taskdeck-agent is an adapter.  It starts the CLI
 * in its JSON-lines mode, in its own process group, and turns each line the
 * CLI prints into host protocol lines.  One file per CLI holds its command
 * line, its environment and its line mapping (struct framework_ops).
 */
#ifndef TD_AGENT_FRAMEWORK_H
#define TD_AGENT_FRAMEWORK_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "buf.h"

struct host;

/* A NULL-terminated array of malloc'd strings. */
struct strv {
	char **v;
	size_t n, cap;
};

void strv_add(struct strv *s, const char *str);
void strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees the strings (wiping them: an environment may hold a key). */
void strv_free(struct strv *s);

/* What one run of a CLI has said so far. */
struct fw_run {
	const struct agent_config *cfg;
	struct host *host;
	struct buf output;		/* visible output, at most AGENT_MAX_OUTPUT */
	bool output_full;
	bool writing;			/* progress "writing" sent since the last tool */
	long in_tokens, out_tokens;	/* cumulative, as last sent */
	bool result_seen;		/* the CLI's own final line arrived */
	bool failed;			/* ... and it said the run failed (err holds why) */
	struct agent_error err;
	char last_stderr[512];		/* the CLI's last stderr line, masked */
	void *state;			/* the CLI's own (framework_ops.state_size bytes) */
	int to_cli;			/* duplex: the CLI's stdin, -1 otherwise */
	bool done;			/* duplex: the turn is over, the CLI is stopped */
};

/* How the CLI is started. */
struct fw_launch {
	bool confined;			/* in taskdeck's sandbox (not full-access, a sandbox is here) */
	const char *ask_socket;		/* profile ask: the permission socket as the CLI sees it */
	const char *self;		/* this agent's executable (the permission prompt tool) */
};

struct framework_ops {
	const char *name;		/* config.framework */
	const char *program;		/* for messages: "claude", "codex" */
	size_t state_size;
	/* Refuses a run the CLI cannot honour (profile, provider); false with err set. */
	bool (*check)(const struct agent_config *cfg, struct agent_error *err);
	/* The command line after argv[0]; the prompt goes to the CLI's stdin. */
	void (*args)(const struct agent_config *cfg, const struct fw_launch *l,
	    struct strv *argv);
	/* Variables added to the reduced environment (provider, key, telemetry off). */
	void (*env)(const struct agent_config *cfg, struct strv *env);
	/* Pairs {file of the user, its path in the CLI's private home} bound read-only into
	 * the sandbox (the CLI's own login); NULL: nothing. */
	void (*home_files)(const struct agent_config *cfg, const char *user_home,
	    const char *private_home, struct strv *pairs);
	/* One JSON object the CLI printed. */
	void (*line)(struct fw_run *r, const cJSON *msg);
	/* The profile ask through a permission prompt tool (framework-ask.c); NULL: ask is
	 * refused.  A line for people about a tool call the CLI asks for. */
	void (*describe)(const struct fw_run *r, const char *name, const cJSON *input,
	    char *out, size_t len);
	void (*state_free)(void *state);
	/*
	 * duplex: the CLI's stdin is a pipe kept open (r->to_cli), not the prompt; start
	 * sends the first messages, cancel is called when the run is cancelled (before
	 * the CLI is stopped), and the CLI is stopped once r->done is set.
	 */
	bool duplex;
	void (*start)(struct fw_run *r);
	void (*cancel)(struct fw_run *r);
};

extern const struct framework_ops framework_claude;
extern const struct framework_ops framework_codex;
extern const struct framework_ops framework_acp;

/* The text of the run's prompt as a CLI gets it: the project, the earlier runs, the task. */
char *fw_prompt(const struct agent_config *cfg);

/* The ops of an external framework, NULL for taskdeck (the built-in loop). */
const struct framework_ops *framework_find(const char *name);

/* Runs the whole run through the CLI and sends finish; the status of the run. */
int framework_run(const struct framework_ops *ops, const struct agent_config *cfg,
    struct host *host);

/*
 * The permission prompt tool (framework-ask.c, docs/frameworks.md "ask"): an MCP
 * stdio server the CLI starts (taskdeck-agent --permission-server SOCKET) that
 * passes each question over a Unix socket to the adapter.
 */
#define FW_ASK_TOOL "mcp__taskdeck__approve"
/* The MCP server's main loop on stdin/stdout; the process's exit status. */
int fw_permission_server(const char *socket_path);
/* The adapter's end: a listening socket in a private directory; -1 with errno. */
int fw_ask_listen(char *path, size_t len);
void fw_ask_unlink(const char *path);
/* Answers one connection of the permission server: permission.ask to the service.
 * AGENT_CANCELLED when the run was cancelled while waiting. */
int fw_ask_serve(const struct framework_ops *ops, struct fw_run *r, int listen_fd);

/* Helpers for the line mappers. */
void fw_output(struct fw_run *r, const char *text, size_t len);
/* Starts a new paragraph when the output so far does not end one. */
void fw_output_break(struct fw_run *r);
void fw_usage(struct fw_run *r, long in_tokens, long out_tokens);
void fw_tool(struct fw_run *r, const char *id, const char *name, const char *status,
    const char *summary);
void fw_fail(struct fw_run *r, const char *code, const char *message);

#endif
