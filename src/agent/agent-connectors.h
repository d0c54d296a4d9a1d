/*
 * The connectors of a run (docs/connectors.md): the enabled connectors of the
 * start message become tools named <connector>__<tool>.  Custom connectors
 * are MCP servers reached through src/common/mcp.c; the built-in `web`
 * connector is fetch_url, done here with libcurl.
 */
#ifndef TD_AGENT_CONNECTORS_H
#define TD_AGENT_CONNECTORS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "tools.h"

struct host;
struct connector_progress;

/* Longest tool name every provider accepts (OpenAI and Anthropic: ^[a-zA-Z0-9_-]{1,64}$). */
#define CONNECTOR_TOOL_NAME_MAX 64

struct connector {
	char *id;
	char *name;			/* as the start message gave it */
	struct mcp_client *mcp;		/* NULL for a built-in */
	char **paths[2];		/* stdio: its sandbox's read-write, read-only paths */
	struct connector_progress *progress;	/* who tells of its calls' progress */
	/* http: the credential bound to header:Authorization (NULL = none), for renewals */
	char *auth_cred;
	char *auth_version;		/* its version the service gave with its value */
	double auth_expires;		/* its expiry (Unix seconds), 0 = unknown */
};

struct connector_tool {
	char *name;			/* offered to the model: <connector>__<tool>, sanitized */
	char *remote;			/* the tool's name on its server */
	char *description;
	cJSON *schema;
	bool read_only;			/* the server's readOnlyHint (fetch_url: true) */
	bool web;			/* the built-in fetch_url */
	size_t con;			/* index in connectors.list */
};

struct connectors {
	struct connector *list;
	size_t n;
	struct connector_tool *tools;
	size_t ntools;
	char *unavailable;		/* "name: why" lines of the connectors that did not start */
	char *instructions;		/* "name: what it says" lines of the servers that said */
	/* Every credential value resolved for the run, masked in all a server says. */
	struct redact *secrets;
};

/*
 * Starts every connector of cfg->connectors: credentials are resolved through
 * secret.resolve right before a server starts.  One that fails gives a tool
 * line (status failed) and is left out.  AGENT_CANCELLED when the run was
 * cancelled meanwhile, else AGENT_OK.
 */
int connectors_open(struct connectors *cs, const struct agent_config *cfg, struct host *host);
/*
 * Lists again the tools of every server that said they changed
 * (notifications/tools/list_changed); true when some did (the model's tool
 * definitions are then to be made again).  Before each turn.
 */
bool connectors_refresh(struct connectors *cs);
/* Stops every server (their process groups are killed and reaped). */
void connectors_close(struct connectors *cs);

/* Appends {name, description, parameters} of every connector tool to arr. */
void connectors_definitions(const struct connectors *cs, cJSON *arr);
const struct connector_tool *connectors_find(const struct connectors *cs, const char *name);
/* One line saying what the call is about to do. */
void connectors_describe(const struct connectors *cs, const struct connector_tool *t,
    const cJSON *args, char *out, size_t len);
/* Runs the call: AGENT_OK (res says how it went) or AGENT_CANCELLED. */
int connectors_call(struct connectors *cs, const struct connector_tool *t, const cJSON *args,
    const struct agent_config *cfg, struct host *host, struct tool_result *res);

/* <connector>__<tool> made of [A-Za-z0-9_-], at most CONNECTOR_TOOL_NAME_MAX bytes. */
char *connectors_tool_name(const char *connector, const char *tool);

#endif
