/*
 * What a run gets of the connectors (docs/connectors.md, host-protocol.md):
 * the list its start message carries and, on the agent's request, the value
 * of a binding, OAuth tokens renewed first (connector-oauth.h).  Called by
 * the supervisor's files; takes the store lock itself.
 */
#ifndef TD_SERVICE_CONNECTOR_RUN_H
#define TD_SERVICE_CONNECTOR_RUN_H

#include <cjson/cJSON.h>

#include "errors.h"

/* Per MCP request of the agent's connector tools (limits.connectorTimeoutMs). */
#define CONNECTOR_RUN_TIMEOUT_MS 60000

struct service;

/*
 * The enabled connectors for a run's start message, without any secret; a
 * custom stdio one carries its "stateDirectory".  Renews the OAuth tokens
 * that are due first.
 */
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

#endif
