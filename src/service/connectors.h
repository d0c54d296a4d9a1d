/*
 * Connectors and credentials (docs/connectors.md): the stored definitions,
 * their validation, the credentials whose secrets are sealed at rest
 * (secrets.h), and what runs and tests get from them.  route-connectors.c,
 * route-credentials.c and the supervisor call in; every function here takes
 * the store lock itself.
 */
#ifndef TD_SERVICE_CONNECTORS_H
#define TD_SERVICE_CONNECTORS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "errors.h"
#include "problem.h"
#include "ids.h"
#include "sandbox.h"
#include "connector-rows.h"

#define CONNECTOR_WEB_ID "con_web"
#define CONNECTOR_NAME_MAX 32
#define CONNECTOR_COMMAND_MAX 4096
#define CONNECTOR_ARGS_MAX 64
#define CONNECTOR_ARG_MAX 4096
#define CONNECTOR_ENV_MAX 64
#define CONNECTOR_VAR_NAME_MAX 128
#define CONNECTOR_VALUE_MAX 8192
#define CONNECTOR_URL_MAX 2048
#define CONNECTOR_HEADERS_MAX 32
#define CONNECTOR_BINDINGS_MAX 16
#define CONNECTORS_MAX 200
#define CREDENTIAL_DESCRIPTION_MAX 2000
#define CREDENTIAL_SECRET_MAX 16384
#define CREDENTIALS_MAX 1000
/* Per MCP request: the test's, and the agent's for connector tools (limits.connectorTimeoutMs). */
#define CONNECTOR_TEST_TIMEOUT_MS 10000
#define CONNECTOR_RUN_TIMEOUT_MS 60000

struct service;
struct store;

/* One page of connectors, newest first (con_web sorts first); *next is "" on the last page. */
cJSON *connectors_list(struct service *svc, const char *cursor, int limit,
    char next[TD_ID_MAX]);
/* The connector as the API shows it, or NULL. */
cJSON *connector_get(struct service *svc, const char *id);
enum td_code connector_add(struct service *svc, const cJSON *body, cJSON **out,
    struct problem *p);
enum td_code connector_update(struct service *svc, const char *id, const cJSON *body,
    cJSON **out, struct problem *p);
enum td_code connector_set_enabled(struct service *svc, const char *id, bool enabled,
    cJSON **out, struct problem *p);
enum td_code connector_remove(struct service *svc, const char *id, struct problem *p);
/*
 * Stores a sign-in's token (oauth.h) for connector id: a sealed bearer
 * credential bound to its header:Authorization, and record (the refresh
 * record, may be NULL) beside it (connector-oauth.c).  False with *why
 * (malloc'd).
 */
bool connector_store_oauth_token(struct service *svc, const char *id, const char *token,
    const char *record, const char *scope, char **why);
/* The id of the credential named name (malloc'd), or NULL. */
char *connector_oauth_credential(struct service *svc, const char *name);
/*
 * Keeps value in the credential of kind secret named name, made or rotated:
 * its id (malloc'd), or NULL with *why naming what could not be kept.
 */
char *connector_oauth_keep(struct service *svc, const char *name, const char *description,
    const char *what, const char *value, char **why);
/*
 * The DPoP key connector id's token is bound to (oauth.h), kept sealed and
 * bound to its header:DPoP (oauth-dpop.c); key NULL deletes the one it had (a
 * bearer token).  False with *why (malloc'd; why may be NULL).
 */
bool connector_oauth_keep_dpop(struct service *svc, const char *id, const char *key,
    char **why);
/*
 * The version (updatedAt) of the credential bound to connector id's
 * header:Authorization (malloc'd), or NULL: what connector_oauth_renew's
 * rejected names.
 */
char *connector_oauth_token_version(struct service *svc, const char *id);
/* The scope the token of connector id was granted (malloc'd), or NULL when unknown. */
char *connector_oauth_scope(struct service *svc, const char *id);
/*
 * Renews every stored OAuth token due within a minute (connector-oauth.c):
 * before a connector test and a run's start.  Each renewal is a token request
 * of up to 10 s; a token that cannot be renewed is logged and left as it is.
 */
void connectors_refresh_oauth(struct service *svc);
/*
 * Renews the OAuth token of connector_id when due, or when its server refused
 * the token of version rejected (the token credential's updatedAt the caller
 * got it with; NULL = only when due) and nobody has renewed it since: the
 * second of two callers refused the same token finds it renewed already.
 * false when the connector holds no renewable token.  *expires_at (may be
 * NULL): the token's expiry afterwards, Unix seconds, 0 = unknown.
 */
bool connector_oauth_renew(struct service *svc, const char *connector_id, const char *rejected,
    double *expires_at);
/*
 * Deletes what a sign-in stored for connector (as it was before its removal):
 * its refresh record and the "OAuth token of NAME" credential bound to its
 * header:Authorization.
 */
void connector_oauth_forget(struct service *svc, const cJSON *connector);

cJSON *credentials_list(struct service *svc, const char *cursor, int limit,
    char next[TD_ID_MAX]);
cJSON *credential_get(struct service *svc, const char *id);
enum td_code credential_create(struct service *svc, const cJSON *body, cJSON **out,
    struct problem *p);
enum td_code credential_update(struct service *svc, const char *id, const cJSON *body,
    cJSON **out, struct problem *p);
/* credential_in_use while bound, unless force, which removes the bindings too. */
enum td_code credential_delete(struct service *svc, const char *id, bool force,
    struct problem *p);

/*
 * How to reach one connector's server with its credentials resolved, for
 * a test.  Holds secrets: connector_launch_free wipes them.
 */
struct connector_launch {
	char name[CONNECTOR_NAME_MAX + 1];
	bool builtin;
	bool http;
	char *command;		/* stdio */
	char **args;		/* stdio: the arguments after the command, NULL-terminated */
	char **envp;		/* stdio: NULL-terminated */
	char *url;		/* http */
	char **headers;		/* http: "Name: value", NULL-terminated */
	char **secrets;		/* the resolved values, to redact from messages */
	/* stdio: the sandbox of a run's commands (docs/agent.md), with a scratch workspace */
	char **hidden;		/* taskdeck's own directories and the credential files */
	bool network;		/* defaults.network: what a run of the application default gets */
	bool allow_unconfined;	/* runs.allowUnconfinedCommands */
	struct sandbox_limits limits;	/* runs.commandLimits */
	char *state_dir;	/* stdio: its state directory (HOME), or NULL */
	char **rw_paths;	/* stdio: bound read-write (the state directory first) */
	char **ro_paths;	/* stdio: bound read-only */
};
enum td_code connector_launch_prepare(struct service *svc, const char *id,
    struct connector_launch *l, struct problem *p);
void connector_launch_free(struct connector_launch *l);

/*
 * A test of the prepared connector (connector-test.c): open, handshake, list
 * the tools, close; {"success", "toolCount", "message"}.  Blocks for up to a
 * few MCP request timeouts: never on an HTTP thread.
 */
cJSON *connector_test_run(const struct connector_launch *l);
/* How many connector tests run at once at most. */
#define CONNECTOR_TESTS_MAX 8
/*
 * A test starts (true) unless CONNECTOR_TESTS_MAX run already; each that
 * started ends with connector_tests_end.
 */
bool connector_tests_begin(void);
void connector_tests_end(void);
/* Waits up to timeout_ms for the tests still running (at shutdown); false if some remain. */
bool connector_tests_drain(int timeout_ms);

/* Name checks of an env variable and a header. */
bool conn_env_name_valid(const char *s);
bool conn_header_name_valid(const char *s);

/*
 * A stdio connector's private state directory, <data dir>/connector-state/<id>
 * (docs/connectors.md), made (mode 0700) when make and missing; NULL when it
 * cannot be.  Hidden from runs and other connectors with the data directory.
 */
char *connector_state_dir(const struct service *svc, const char *id, bool make);
/* The enabled connectors for a run's start message, without any secret; a custom
 * stdio one carries its "stateDirectory". */
cJSON *connectors_for_run(struct service *svc);
/*
 * The agent's secret.resolve {connectorId, credentialId}: the value for the
 * binding's target (raw for env:, with the Bearer/Basic scheme for header:),
 * only when run_connectors (what the start message held) has that binding
 * and the store still has it.  *value is sodium_malloc'd (secrets_plain_free);
 * on a refusal *message says why, without the value.  An OAuth token bound to
 * header:Authorization is renewed first when due, or when params' "rejected"
 * names the version the server refused; meta (may be NULL) gets the value's
 * "version" (the credential's updatedAt) and, for such a token, "expiresAt".
 */
enum td_code connector_secret_resolve(struct service *svc, const cJSON *run_connectors,
    const cJSON *params, char **value, cJSON *meta, char **message);

/*
 * Store locked: the value of credential_id for target ("env:NAME" gets the
 * secret, "header:NAME" the secret with its kind's scheme: "Bearer <secret>"
 * for bearer, "Basic <base64>" for basic).  *value is sodium_malloc'd
 * (secrets_plain_free); false with *why (malloc'd, no secret in it).
 */
bool credential_value(struct service *svc, const char *credential_id, const char *target,
    char **value, char **why);
/*
 * keycred: the API key of a provider whose settings name a credential (ref:
 * its id, or its name when exactly one credential has it).  Takes the store
 * lock.  *value is sodium_malloc'd (secrets_plain_free); false with *why
 * (malloc'd, no secret in it, ending with what to do).
 */
bool credential_provider_key(const struct service *svc, const char *ref, char **value,
    char **why);
/*
 * The provider name of settings.json as an agent's start line carries it
 * ({kind, baseUrl, apiKey, replayDir}, docs/host-protocol.md), its key read
 * from the environment or its sealed credential.  NULL with *why NULL when no
 * such provider is configured; NULL with *why (malloc'd) when its key cannot
 * be read.  Wipe the key (sodium_memzero) before freeing the block.
 */
cJSON *credential_provider_block(const struct service *svc, const char *name, char **why);

#endif
