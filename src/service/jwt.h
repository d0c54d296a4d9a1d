/*
 * Signed JSON Web Tokens for OAuth client authentication (RFC 7523): the
 * client assertion of private_key_jwt, signed ES256 (ECDSA P-256, SHA-256)
 * with the client's private key.
 */
#ifndef TD_SERVICE_JWT_H
#define TD_SERVICE_JWT_H

#include <stdbool.h>

/*
 * True when pem is a PEM private key of the P-256 curve; else false with
 * *why (static, for people).
 */
bool jwt_key_usable(const char *pem, const char **why);

/*
 * The client assertion of client_id for audience (the authorization server's
 * issuer): header {"alg":"ES256","typ":"JWT"}, claims iss = sub = client_id,
 * aud, iat, exp (five minutes on) and a random jti, signed with the PEM
 * private key.  The compact JWT (malloc'd; wipe it after use), or NULL with
 * *why (static).
 */
char *jwt_client_assertion(const char *pem, const char *client_id, const char *audience,
    const char **why);

#endif
