/*
 * What the parts of the agent's connectors share (agent-connectors.c,
 * agent-connector-cred.c, agent-connector-open.c, agent-connector-elicit.c,
 * agent-connector-call.c); not for others.
 *
 * Calls go one way: agent-connectors.c calls -open.c and -elicit.c; -open.c
 * and -call.c call -cred.c; -cred.c and -elicit.c call none of them.
 */
#ifndef TD_AGENT_CONNECTORS_INT_H
#define TD_AGENT_CONNECTORS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent-connectors.h"
#include "agent.h"

struct host;
struct mcp_client;
struct redact;

#define CONNECTOR_NOTE_MAX 400		/* a form's or a progress message in a summary line */

/* A NULL-terminated list of strings the list owns. */
struct connector_strv {
	char **v;		/* NULL-terminated */
	size_t n;
	size_t cap;
};

/* agent-connector-cred.c */
void connector_strv_add(struct connector_strv *s, char *item);
/* Sets NAME=value, replacing an earlier NAME. */
void connector_env_set(struct connector_strv *env, const char *name, const char *value);
/* Frees the strings, wiping them first: they may hold credential values. */
void connector_strv_wipe(struct connector_strv *s);
bool connector_env_name_ok(const char *s);
/* An HTTP header name: RFC 9110 token characters. */
bool connector_header_name_ok(const char *s);
bool connector_header_value_ok(const char *s);
/*
 * Resolves the bindings of kind prefix ("env:" or "header:") into out (env
 * entries or header lines), each value also into secrets.  0, -1 with *why,
 * or AGENT_CANCELLED.
 */
int connector_bindings_apply(const cJSON *def, const char *id, const char *prefix,
    struct host *host, struct connector_strv *out, struct redact *secrets,
    struct connector *con, char **why);
/*
 * Asks the service for the connector's token again and sends it from now on.
 * AGENT_OK, AGENT_CANCELLED, or -1 when there is no new one.
 */
int connector_auth_renew(struct connectors *cs, struct connector *con, struct host *host,
    bool refused);

/* agent-connector-open.c: the server, or NULL with *why (*rc AGENT_CANCELLED: cancelled). */
struct mcp_client *connector_open_stdio(const cJSON *def, const char *id,
    const cJSON *transport, const struct agent_config *cfg, struct host *host,
    struct redact *secrets, int *rc, char **why, char **keep[2]);
struct mcp_client *connector_open_http(const cJSON *def, const char *id,
    const cJSON *transport, const struct agent_config *cfg, struct host *host,
    struct redact *secrets, int *rc, struct connector *con, char **why);

/* agent-connector-elicit.c: the elicitation handler of mcp_set_elicitation and its context. */
void *connector_elicit_ctx_new(struct host *host, const char *name);
void connector_elicit_ctx_free(void *ud);
cJSON *connector_elicit(struct mcp_client *c, const cJSON *params, void *ud, char **refused);

#endif
