/*
 * OAuth sign-in to an HTTP connector, as the MCP authorization specification
 * describes (docs/connectors.md, "Signing in"): the server's 401 challenge,
 * its protected resource metadata (RFC 9728), its authorization server's
 * metadata (RFC 8414, OpenID discovery), dynamic client registration
 * (RFC 7591), the authorization code with PKCE S256 and the resource
 * parameter (RFC 8707), and the token request.  Sign-ins under way live in
 * the service's memory (struct service's signins), keyed by their state, for
 * 10 minutes.  Thread safe.
 */
#ifndef TD_SERVICE_OAUTH_H
#define TD_SERVICE_OAUTH_H

#include <stdbool.h>

struct oauth_signins;
struct service;

struct oauth_result {
	char connector_id[64];
	char *access_token;	/* sodium_malloc'd: secrets_plain_free */
	/*
	 * With a refresh token: what renews the access token (JSON: the token
	 * endpoint, the client, the resource, the refresh token, expiresAt),
	 * sodium_malloc'd, else NULL.
	 */
	char *refresh_record;
	/* The scope granted: the token answer's, else the one asked ("" = none known). */
	char scope[1024];
	/*
	 * The DPoP key (jwt.h) the token is bound to (its token_type is DPoP,
	 * RFC 9449), sodium_malloc'd, or NULL: a bearer token.
	 */
	char *dpop_key;
};

/* What the user brings to a sign-in (every field may be NULL). */
struct oauth_login {
	const char *client_id;		/* a client registered beforehand */
	const char *client_secret;	/* its secret */
	const char *client_key;		/* or its PEM private key (ES256): private_key_jwt */
	const char *scope;		/* NULL: the challenge's */
	/*
	 * The scope the connector's token has now (NULL = none): a step-up (scope
	 * set) asks for it and scope together, so that nothing granted is lost.
	 */
	const char *granted;
	/*
	 * Enterprise-managed authorization (SEP-990): the user's ID token from the
	 * identity provider, exchanged at its token endpoint (as idp_client_id)
	 * for an identity assertion the authorization server takes (jwt-bearer).
	 */
	const char *id_token;
	const char *idp_token_endpoint;
	const char *idp_client_id;
	/*
	 * Workload identity federation (SEP-1933): the file where the platform
	 * puts the workload's identity token (a JWT for the authorization
	 * server), read at the sign-in and at each renewal; with a client id,
	 * the token comes at once (jwt-bearer), no browser.
	 */
	const char *workload_token_file;
};

/*
 * Begins a sign-in of connector_id to the MCP server at url, which answered
 * with the Bearer challenge (WWW-Authenticate; "" when login->scope is given:
 * a step-up the server asked for in an earlier answer); the redirect comes
 * back to redirect_uri.  The authorization URL to open in a browser
 * (malloc'd), kept among svc's sign-ins, or NULL with *why (malloc'd, for
 * people).  The token comes at once, with no browser (NULL returned, with
 * direct->access_token set, or *why; direct may be NULL: never at once), for
 * an identity assertion (login->id_token and a client id), for a workload's
 * identity token (login->workload_token_file and a client id), and for client
 * credentials (a client id with a secret or key) when the authorization
 * server grants only those (machines, SEP-1046).  Without a client id the
 * client registers itself (RFC 7591).  With login->client_key the client
 * authenticates with signed assertions.
 */
char *oauth_begin_login(struct service *svc, const char *connector_id, const char *url,
    const char *challenge, const struct oauth_login *login, const char *redirect_uri,
    struct oauth_result *direct, char **why);

/*
 * Ends the sign-in of state with the redirect's code (or its error): the
 * token request.  iss (RFC 9207; may be NULL) must name the issuer the
 * sign-in went to, and is required when its metadata said it sends one.
 * true with *out filled, or false with *why (malloc'd).
 */
bool oauth_finish(struct service *svc, const char *state, const char *code, const char *error,
    const char *iss, struct oauth_result *out, char **why);

/*
 * Renews an access token with the refresh record (oauth_result): true with
 * out->access_token and out->refresh_record (the record to keep from now on),
 * or false with *why.  Unless forced (the server refused the token), a
 * record whose token is still good for a minute is left alone: false with
 * *why NULL.
 */
bool oauth_refresh(const char *record, bool force, struct oauth_result *out, char **why);

/* The sign-ins under way of a service (struct service's signins); free forgets them. */
struct oauth_signins *oauth_signins_new(void);
void oauth_signins_free(struct oauth_signins *s);

#endif
