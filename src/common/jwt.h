/*
 * Signed JSON Web Tokens, ES256 (ECDSA P-256, SHA-256): the client assertion
 * of private_key_jwt (RFC 7523), signed with the client's private key, and
 * the DPoP proofs of a key made for one connector (RFC 9449), which bind its
 * tokens to that key.  Shared by the service (token requests) and the MCP
 * client (requests to the server).
 */
#ifndef TD_COMMON_JWT_H
#define TD_COMMON_JWT_H

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

/*
 * A new P-256 key for DPoP proofs, as one line that fits a header value:
 * its private key (SEC 1 DER) in base64url.  malloc'd (wipe it), or NULL.
 */
char *jwt_dpop_key_new(void);

/*
 * A DPoP proof (RFC 9449 4.2) of the key made by jwt_dpop_key_new for a
 * request of method (htm) to url (htu: its query and fragment left out):
 * header {"typ":"dpop+jwt","alg":"ES256","jwk": the public key}, claims a
 * random jti, htm, htu, iat, and ath (base64url SHA-256 of access_token) when
 * access_token is not NULL, nonce when nonce is not NULL.  The compact JWT
 * (malloc'd), or NULL with *why (static).
 */
char *jwt_dpop_proof(const char *key, const char *method, const char *url,
    const char *access_token, const char *nonce, const char **why);

#endif
