/*
 * Signed-in connectors' tokens (docs/connectors.md, "Signing in"; the
 * sign-in itself is oauth.h): each token a sealed bearer credential bound to
 * its connector's header:Authorization, a sealed refresh record beside it,
 * renewed before it is due.  Above connectors.h and credentials.h, whose
 * functions it calls (each takes the store lock itself); nothing below calls
 * it.
 */
#ifndef TD_SERVICE_CONNECTOR_OAUTH_H
#define TD_SERVICE_CONNECTOR_OAUTH_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct service;

/*
 * Stores a sign-in's token (oauth.h) for connector id: a sealed bearer
 * credential bound to its header:Authorization, and record (the refresh
 * record, may be NULL) beside it.  False with *why (malloc'd).
 */
bool connector_store_oauth_token(struct service *svc, const char *id, const char *token,
    const char *record, const char *scope, char **why);
/*
 * The version (updatedAt) of the credential bound to connector id's
 * header:Authorization (malloc'd), or NULL: what connector_oauth_renew's
 * rejected names.
 */
char *connector_oauth_token_version(struct service *svc, const char *id);
/* The scope the token of connector id was granted (malloc'd), or NULL when unknown. */
char *connector_oauth_scope(struct service *svc, const char *id);
/*
 * Renews every stored OAuth token due within a minute: before a connector
 * test and a run's start.  Each renewal is a token request of up to 10 s; a
 * token that cannot be renewed is logged and left as it is.
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
/*
 * The DPoP key connector id's token is bound to (oauth.h), kept sealed and
 * bound to its header:DPoP; key NULL deletes the one it had (a bearer token).
 * False with *why (malloc'd; why may be NULL).
 */
bool connector_oauth_keep_dpop(struct service *svc, const char *id, const char *key,
    char **why);

#endif
