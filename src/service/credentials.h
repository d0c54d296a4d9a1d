/*
 * Credentials (docs/connectors.md): metadata in the open, the secret sealed
 * at rest (secrets.h); the only writer of the credentials table.  A forced
 * delete unbinds the credential through connector-rows.h.  What connectors'
 * bindings, providers' apiKeyCredential and sign-ins' tokens read.  Every
 * function takes the store lock itself unless it says otherwise.
 */
#ifndef TD_SERVICE_CREDENTIALS_H
#define TD_SERVICE_CREDENTIALS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "errors.h"
#include "ids.h"
#include "problem.h"

#define CREDENTIAL_DESCRIPTION_MAX 2000
#define CREDENTIAL_SECRET_MAX 16384
#define CREDENTIALS_MAX 1000

struct service;

/* One page of credentials, newest first; *next is "" on the last page. */
cJSON *credentials_list(struct service *svc, const char *cursor, int limit,
    char next[TD_ID_MAX]);
/* The credential's metadata (never its secret), or NULL. */
cJSON *credential_get(struct service *svc, const char *id);
enum td_code credential_create(struct service *svc, const cJSON *body, cJSON **out,
    struct problem *p);
enum td_code credential_update(struct service *svc, const char *id, const cJSON *body,
    cJSON **out, struct problem *p);
/* credential_in_use while bound, unless force, which removes the bindings too. */
enum td_code credential_delete(struct service *svc, const char *id, bool force,
    struct problem *p);

/*
 * Store locked: the value of credential_id for target ("env:NAME" gets the
 * secret, "header:NAME" the secret with its kind's scheme: "Bearer <secret>"
 * for bearer, "Basic <base64>" for basic).  *value is sodium_malloc'd
 * (secrets_plain_free); false with *why (malloc'd, no secret in it).
 */
bool credential_value(struct service *svc, const char *credential_id, const char *target,
    char **value, char **why);
/*
 * The API key of a provider whose settings name a credential (ref: its id,
 * or its name when exactly one credential has it).  *value is sodium_malloc'd
 * (secrets_plain_free); false with *why (malloc'd, no secret in it, ending
 * with what to do).
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
