/*
 * Inside the OAuth sign-in (oauth.h): the client of one authorization server
 * that a sign-in or a renewal speaks as, and what the four files share.
 * oauth-http.c: the bounded requests and URL helpers; oauth-discover.c: the
 * metadata, from the server's challenge to its authorization server;
 * oauth-token.c: token requests (the client authenticated, the answer kept);
 * oauth.c: the sign-ins waiting for their redirect (in struct service), the
 * registration, the authorization URL.  Nothing else includes it.
 */
#ifndef TD_SERVICE_OAUTH_INT_H
#define TD_SERVICE_OAUTH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "oauth.h"

#define OAUTH_TIMEOUT_MS 10000L
/* All the requests of one sign-in's beginning, together (it holds an HTTP thread). */
#define OAUTH_BEGIN_MS 20000L
#define OAUTH_MAX_BODY (1024 * 1024)

/* The client of one authorization server: a sign-in waiting for its redirect, or a renewal. */
struct oauth_client {
	char state[64];
	char connector_id[64];
	char verifier[64];
	char *token_endpoint;
	char *client_id;
	char *client_secret;	/* NULL for a public client */
	char *client_key;	/* PEM private key (ES256) of private_key_jwt, or NULL */
	char *audience;		/* of its client assertions: the server's issuer */
	char *auth_method;	/* client_secret_basic, client_secret_post, private_key_jwt or none */
	char *redirect_uri;
	char *resource;
	char *refresh_token;	/* only while renewing */
	char *issuer;		/* the authorization server's issuer identifier */
	char *scope;		/* the scope asked for, or NULL */
	/* The file the workload's identity token is read from (jwt-bearer), or NULL. */
	char *workload_token_file;
	/* Its DPoP key (jwt.h): the token requests carry proofs of it (RFC 9449), or NULL. */
	char *dpop_key;
	bool iss_required;	/* it sends iss with its redirects (RFC 9207) */
	time_t expires;
};

/* Frees p and wipes its secrets (NULL is fine). */
void oauth_client_free(struct oauth_client *p);

/* --- oauth-http.c ---------------------------------------------------------- */

struct oauth_fetch {
	struct buf body;
	bool too_big;
};

/*
 * When the current thread's sign-in must be done asking (oauth_mono_ms), 0 =
 * none: every request's time is cut to it.
 */
extern _Thread_local long oauth_deadline;
long oauth_mono_ms(void);
/*
 * One request: GET when body is NULL, else POST of body as content_type;
 * headers: extra "Name: value" lines (NULL-terminated, may be NULL).  The
 * HTTP status, or 0 when the server could not be reached; f->body the answer
 * (buf_free it).  resp_headers (may be NULL) gets the answer's header lines.
 */
long oauth_fetch(const char *url, const char *body, const char *content_type,
    const char *const *headers, struct oauth_fetch *f, struct buf *resp_headers);
/* The JSON object at url (GET, 200), or NULL. */
cJSON *oauth_get_json(const char *url);
/* Appends "&name=value" (nothing before the first) with value percent-encoded. */
void oauth_param(struct buf *b, const char *name, const char *value);
/* base64url without padding of n bytes into out. */
void oauth_b64url(const unsigned char *bin, size_t n, char *out, size_t len);
bool oauth_list_has(const cJSON *arr, const char *s);
/* "scheme://authority" of url into origin, its path (without query) into path. */
bool oauth_split_url(const char *url, char *origin, size_t olen, char *path, size_t plen);
/* https, or http to this machine (a loopback address or localhost). */
bool oauth_url_secure(const char *url);

/* --- oauth-discover.c ------------------------------------------------------ */

struct oauth_discovery {
	char *resource;		/* the resource parameter: the PRM's resource, else the URL */
	char *scope;		/* NULL: none asked */
	cJSON *as;		/* the authorization server's metadata */
	char *issuer;		/* its issuer identifier */
	/*
	 * The resource server takes DPoP-bound tokens: its challenge's scheme is
	 * DPoP, or its metadata names DPoP (RFC 9728 2).
	 */
	bool dpop;
};

/*
 * From the challenge of the server at url to its authorization server's
 * metadata, checked (RFC 9728, RFC 8414); scope_asked (may be NULL) instead
 * of the challenge's.  false with *why.
 */
bool oauth_discover(const char *url, const char *challenge, const char *scope_asked,
    struct oauth_discovery *d, char **why);
void oauth_discovery_free(struct oauth_discovery *d);

/* --- oauth-token.c --------------------------------------------------------- */

/*
 * The token request of p with form (its grant's parameters; the client's
 * authentication is added): *out's token, or false with *why.  form is wiped.
 */
bool oauth_token_request(const struct oauth_client *p, struct buf *form,
    struct oauth_result *out, char **why);
/*
 * The JWT bearer grant of workload identity federation (RFC 7523, SEP-1933):
 * the workload's identity token read from p->workload_token_file now, as
 * the assertion; *out's token (its record names the file, so that each
 * renewal reads the token the platform has put there since), or *why.
 */
bool oauth_workload_grant(const struct oauth_client *p, struct oauth_result *out, char **why);
/* The identity assertion grant (SEP-990) of p for login: *out's token, or *why. */
bool oauth_identity_assertion_grant(const struct oauth_client *p,
    const struct oauth_login *login, const cJSON *as, const char *scope,
    struct oauth_result *out, char **why);

#endif
