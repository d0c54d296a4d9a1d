/*
 * The MCP servers an editor gives one session (docs/connectors.md, "A
 * session's own connectors"): the only writer of the session_connectors
 * table.  They reach that session's runs beside the global connectors, in
 * the start message; their environment and header values are sealed at rest
 * (secrets.h), never shown, and reach the agent only through secret.resolve.
 */
#ifndef TD_SERVICE_SESSION_CONNECTORS_H
#define TD_SERVICE_SESSION_CONNECTORS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errors.h"

/* At most this many servers per session. */
#define SESSION_CONNECTORS_MAX 16

struct service;
struct store;
struct problem;

/*
 * Checks list (the request's member field): an array of at most
 * SESSION_CONNECTORS_MAX servers, each {name, type?: "stdio" | "http",
 * command, args?, env?: [{name, value}]} or {name, type: "http", url,
 * headers?: [{name, value}]}, names unique.  On a problem fills *p
 * (invalid_request naming the member) and returns false.
 */
bool session_connectors_valid(const cJSON *list, const char *field, struct problem *p);
/*
 * Replaces the servers of session_id with list (checked with
 * session_connectors_valid; NULL: none), values sealed.  Store locked, in the
 * caller's transaction; false on a store error or when the key cannot be had.
 */
bool session_connectors_store(struct service *svc, const char *session_id,
    const cJSON *list, int64_t now);
/* The servers of session_id as the API shows them (names, no value).  Store locked. */
cJSON *session_connectors_list(struct store *st, const char *session_id);
/* Deletes the servers of session_id.  In the caller's transaction. */
bool session_connectors_delete_session(struct store *st, const char *session_id);

/*
 * PUT /sessions/:id/connectors: replaces the session's servers with body's
 * "connectors" (checked), commits, emits session.updated; the new list as the
 * API shows it, or NULL with *p (not_found, internal_error).
 */
cJSON *session_connectors_set(struct service *svc, const char *session_id,
    const cJSON *list, struct problem *p);
/* GET: the list, or NULL when there is no such session. */
cJSON *session_connectors_get(struct service *svc, const char *session_id);

/*
 * Appends the servers of session_id to a run's start message connectors, as
 * the agent takes a connector: each value a credentialBinding whose
 * credentialId names it ("env:NAME", "header:NAME").  Takes the store lock.
 */
void session_connectors_for_run(struct service *svc, const char *session_id,
    cJSON *run_connectors);
/* True when connector_id names a session's server (scn_...). */
bool session_connector_id(const char *connector_id);
/*
 * secret.resolve {connectorId, credentialId} for a session's server: the
 * value, only when run_connectors (the start message's) binds it and the
 * store still holds that server.  *value is sodium_malloc'd
 * (secrets_plain_free); on a refusal *message (malloc'd) says why, without
 * the value.
 */
enum td_code session_connector_secret_resolve(struct service *svc,
    const cJSON *run_connectors, const cJSON *params, char **value, char **message);

#endif
