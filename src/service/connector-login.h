/*
 * Signing in to an http connector (docs/connectors.md, "Signing in"): the
 * server's challenge met as a test meets it (handshake, tools/list), the
 * sign-in begun with oauth.h, and the token stored with connector-oauth.h,
 * at once (client credentials, an identity assertion) or when the browser
 * comes back to GET /oauth/callback on this loopback port (no token: the
 * state, which only the service knows, ties it to the sign-in).
 */
#ifndef TD_SERVICE_CONNECTOR_LOGIN_H
#define TD_SERVICE_CONNECTOR_LOGIN_H

#include <cjson/cJSON.h>

#include "errors.h"
#include "problem.h"

struct service;

/*
 * Begins the sign-in of connector id with body (NULL, or an object of only
 * clientId, clientSecret, clientKey, scope, idToken, idpTokenEndpoint,
 * idpClientId; the caller wipes its secrets).  *out is {"authorizationUrl",
 * "redirectUri"} to open in a browser, or {"signedIn": true, "message"} when
 * signed in already.  Waits on the server for up to a few 5 s requests.
 */
enum td_code connector_login(struct service *svc, const char *id, const cJSON *body,
    cJSON **out, struct problem *p);
/*
 * Ends the sign-in of state with the browser's return (code, or error; iss
 * may be NULL): the token request, then the token stored.  *out is
 * {"connectorId", "message"}.
 */
enum td_code connector_login_finish(struct service *svc, const char *state, const char *code,
    const char *error, const char *iss, cJSON **out, struct problem *p);

#endif
