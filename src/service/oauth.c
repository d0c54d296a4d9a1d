/*
 * OAuth sign-in for HTTP connectors (oauth.h): the sign-ins waiting for
 * their redirect (struct service's signins), the client's registration, the
 * authorization URL, and the end of a sign-in.  Discovery is
 * oauth-discover.c, token requests oauth-token.c, the requests oauth-http.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "json.h"
#include "jwt.h"
#include "oauth-int.h"
#include "service.h"
#include "xalloc.h"

#define OAUTH_PENDING_MAX 32
#define OAUTH_PENDING_SECONDS 600

/* The sign-ins under way, keyed by their state (struct service's signins). */
struct oauth_signins {
	pthread_mutex_t mu;
	struct oauth_client *waiting[OAUTH_PENDING_MAX];
};

void
oauth_client_free(struct oauth_client *p)
{
	char *secrets[2];

	if (p == NULL)
		return;
	secrets[0] = p->client_secret;
	secrets[1] = p->client_key;
	for (size_t i = 0; i < 2; i++)
		if (secrets[i] != NULL)
			sodium_memzero(secrets[i], strlen(secrets[i]));
	free(p->token_endpoint);
	free(p->client_id);
	free(p->client_secret);
	free(p->client_key);
	free(p->audience);
	free(p->auth_method);
	free(p->redirect_uri);
	free(p->resource);
	free(p->issuer);
	free(p->scope);
	free(p->workload_token_file);
	if (p->dpop_key != NULL)
		sodium_memzero(p->dpop_key, strlen(p->dpop_key));
	free(p->dpop_key);
	sodium_memzero(p->verifier, sizeof p->verifier);
	free(p);
}

struct oauth_signins *
oauth_signins_new(void)
{
	struct oauth_signins *s = xcalloc(1, sizeof *s);

	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void
oauth_signins_free(struct oauth_signins *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < OAUTH_PENDING_MAX; i++)
		oauth_client_free(s->waiting[i]);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Keeps p (expired sign-ins make room); false with *why when all slots are taken. */
static bool
oauth_signins_add(struct oauth_signins *s, struct oauth_client *p, char **why)
{
	size_t slot = OAUTH_PENDING_MAX;
	time_t now = time(NULL);

	p->expires = now + OAUTH_PENDING_SECONDS;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < OAUTH_PENDING_MAX; i++) {
		if (s->waiting[i] != NULL && s->waiting[i]->expires < now) {
			oauth_client_free(s->waiting[i]);
			s->waiting[i] = NULL;
		}
		if (s->waiting[i] == NULL && slot == OAUTH_PENDING_MAX)
			slot = i;
	}
	if (slot < OAUTH_PENDING_MAX)
		s->waiting[slot] = p;
	pthread_mutex_unlock(&s->mu);
	if (slot == OAUTH_PENDING_MAX)
		*why = xasprintf("%d sign-ins are under way; finish one or retry in %d minutes",
		    OAUTH_PENDING_MAX, OAUTH_PENDING_SECONDS / 60);
	return slot < OAUTH_PENDING_MAX;
}

/* Removes and returns the sign-in of state, or NULL (also when it expired). */
static struct oauth_client *
oauth_signins_take(struct oauth_signins *s, const char *state)
{
	struct oauth_client *p = NULL;
	size_t n = strlen(state);

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < OAUTH_PENDING_MAX && p == NULL; i++) {
		if (s->waiting[i] != NULL && strlen(s->waiting[i]->state) == n &&
		    sodium_memcmp(s->waiting[i]->state, state, n) == 0) {
			p = s->waiting[i];
			s->waiting[i] = NULL;
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (p != NULL && p->expires < time(NULL)) {
		oauth_client_free(p);
		p = NULL;
	}
	return p;
}

/* --- registration --------------------------------------------------------------- */

/* The token endpoint auth method to ask for: none, else basic, else post. */
static const char *
oauth_choose_auth_method(const cJSON *as, bool has_secret)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(as, "token_endpoint_auth_methods_supported");

	if (!cJSON_IsArray(m))
		return "client_secret_basic";	/* RFC 8414's default */
	if (oauth_list_has(m, "none") && !has_secret)
		return "none";
	if (oauth_list_has(m, "client_secret_basic"))
		return "client_secret_basic";
	if (oauth_list_has(m, "client_secret_post"))
		return "client_secret_post";
	return "none";
}

/* Dynamic client registration (RFC 7591) into p. */
static bool
oauth_register_client(const cJSON *as, struct oauth_client *p, char **why)
{
	const char *endpoint = json_get_string(as, "registration_endpoint");
	cJSON *req, *uris, *grants, *answer;
	const char *id, *secret, *method;
	struct oauth_fetch f;
	char *body;
	long status;

	if (endpoint == NULL) {
		*why = xstrdup(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(as,
		    "client_id_metadata_document_supported")) ?
		    "the authorization server offers no dynamic client registration; it takes a "
		    "client metadata document: sign in with --client-id and the https URL of yours" :
		    "the authorization server offers no dynamic client registration: sign in with "
		    "--client-id (and --client-secret-stdin) of a client registered with it");
		return false;
	}
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "client_name", "taskdeck");
	/* A client on the user's machine, its redirect to a loopback port (OpenID DCR 2). */
	cJSON_AddStringToObject(req, "application_type", "native");
	uris = cJSON_AddArrayToObject(req, "redirect_uris");
	cJSON_AddItemToArray(uris, cJSON_CreateString(p->redirect_uri));
	grants = cJSON_AddArrayToObject(req, "grant_types");
	cJSON_AddItemToArray(grants, cJSON_CreateString("authorization_code"));
	cJSON_AddItemToArray(grants, cJSON_CreateString("refresh_token"));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "response_types"),
	    cJSON_CreateString("code"));
	cJSON_AddStringToObject(req, "token_endpoint_auth_method", oauth_choose_auth_method(as, false));
	body = json_print(req);
	cJSON_Delete(req);
	status = oauth_fetch(endpoint, body, "application/json", NULL, &f, NULL);
	free(body);
	answer = status / 100 == 2 && f.body.len > 0 ? json_parse(f.body.data, f.body.len) : NULL;
	buf_free(&f.body);
	id = json_get_string(answer, "client_id");
	if (id == NULL) {
		*why = xasprintf("the authorization server refused the client registration (HTTP "
		    "%ld)", status);
		cJSON_Delete(answer);
		return false;
	}
	secret = json_get_string(answer, "client_secret");
	method = json_get_string(answer, "token_endpoint_auth_method");
	p->client_id = xstrdup(id);
	p->client_secret = secret != NULL ? xstrdup(secret) : NULL;
	p->auth_method = xstrdup(method != NULL ? method : secret != NULL ?
	    "client_secret_basic" : "none");
	cJSON_Delete(answer);
	return true;
}

/* Whether the space-separated list has word. */
static bool
oauth_words_have(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p != NULL && *p != '\0'; p += strcspn(p, " "), p += *p == ' ') {
		if (strncmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\0'))
			return true;
	}
	return false;
}

/* *scope with the words of more it lacks added (more may be NULL). */
static void
oauth_scope_add(char **scope, const char *more)
{
	struct buf b;

	if (more == NULL || *more == '\0')
		return;
	buf_init(&b, 4096);
	buf_appends(&b, *scope != NULL ? *scope : "");
	for (const char *p = more; *p != '\0';) {
		size_t n = strcspn(p, " ");
		char *w = xstrndup(p, n);

		if (*w != '\0' && !oauth_words_have(b.data != NULL ? b.data : "", w))
			buf_printf(&b, "%s%s", b.len > 0 ? " " : "", w);
		free(w);
		p += n + (p[n] == ' ');
	}
	free(*scope);
	*scope = buf_steal(&b);
}

/*
 * An authorization server that offers the offline_access scope (OpenID
 * Connect 11) may issue a refresh token only for it, and only with
 * prompt=consent: *scope gets it added when the server lists it (and does not
 * say it lacks the refresh_token grant).  True when it was asked for.
 */
static bool
oauth_offline_access_asked(const cJSON *as, char **scope)
{
	const cJSON *grants = cJSON_GetObjectItemCaseSensitive(as, "grant_types_supported");
	char *s;

	if (!oauth_list_has(cJSON_GetObjectItemCaseSensitive(as, "scopes_supported"), "offline_access") ||
	    (cJSON_IsArray(grants) && !oauth_list_has(grants, "refresh_token")))
		return false;
	if (*scope != NULL && oauth_words_have(*scope, "offline_access"))
		return true;
	s = *scope != NULL && **scope != '\0' ? xasprintf("%s offline_access", *scope) :
	    xstrdup("offline_access");
	free(*scope);
	*scope = s;
	return true;
}


/* --- the flow ------------------------------------------------------------------------ */

/* The client of the sign-in of connector_id to the authorization server d found. */
static struct oauth_client *
oauth_client_new(const char *connector_id, const char *redirect_uri, struct oauth_discovery *d)
{
	struct oauth_client *p = xcalloc(1, sizeof *p);
	const char *named = json_get_string(d->as, "issuer");

	snprintf(p->connector_id, sizeof p->connector_id, "%s", connector_id);
	p->redirect_uri = xstrdup(redirect_uri);
	p->resource = d->resource;
	d->resource = NULL;
	/* What the server calls itself (it matched the issuer asked for): iss must be it exactly. */
	p->issuer = xstrdup(named != NULL ? named : d->issuer);
	p->iss_required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d->as,
	    "authorization_response_iss_parameter_supported"));
	p->token_endpoint = xstrdup(json_get_string(d->as, "token_endpoint"));
	/* A client assertion's audience: the issuer (RFC 7523 3, RFC 8414 2). */
	p->audience = xstrdup(named != NULL ? named : p->token_endpoint);
	/*
	 * Tokens bound to a key of this sign-in's where both ends take them: the
	 * resource server (a Bearer-only one would refuse the DPoP scheme), and an
	 * authorization server that checks ES256 proofs.
	 */
	if (d->dpop && oauth_list_has(cJSON_GetObjectItemCaseSensitive(d->as,
	    "dpop_signing_alg_values_supported"), "ES256"))
		p->dpop_key = jwt_dpop_key_new();
	return p;
}

/*
 * p as the client the user registered beforehand: its id, secret or key, and
 * how it authenticates as the metadata allows (a secret never goes unused).
 */
static void
oauth_client_given(struct oauth_client *p, const struct oauth_login *login, const cJSON *as)
{
	const char *method = login->client_key != NULL ? "private_key_jwt" :
	    login->client_secret != NULL ? oauth_choose_auth_method(as, true) : "none";

	if (strcmp(method, "none") == 0 && login->client_secret != NULL)
		method = "client_secret_basic";
	p->client_id = xstrdup(login->client_id);
	p->client_secret = login->client_secret != NULL ? xstrdup(login->client_secret) : NULL;
	if (login->client_key != NULL)
		p->client_key = xstrdup(login->client_key);
	p->auth_method = xstrdup(method);
}

/* Whether the authorization server grants only client credentials (SEP-1046). */
static bool
oauth_machines_only(const cJSON *as)
{
	const cJSON *grants = cJSON_GetObjectItemCaseSensitive(as, "grant_types_supported");

	return oauth_list_has(grants, "client_credentials") &&
	    !oauth_list_has(grants, "authorization_code");
}

/*
 * The token at once, without a browser, when the login allows it: an
 * identity assertion (SEP-990), a workload's identity token (SEP-1933), or
 * client credentials from an authorization server for machines only.  1 = tried (out's token, or *why), 0 = not.
 */
static int
oauth_begin_direct(struct oauth_client *p, const struct oauth_login *login,
    const struct oauth_discovery *d, struct oauth_result *out, char **why)
{
	struct buf form;

	if (out == NULL || login->client_id == NULL)
		return 0;
	if (login->id_token != NULL)
		return oauth_identity_assertion_grant(p, login, d->as, d->scope, out, why), 1;
	if (login->workload_token_file != NULL) {
		p->workload_token_file = xstrdup(login->workload_token_file);
		p->scope = d->scope != NULL ? xstrdup(d->scope) : NULL;
		return oauth_workload_grant(p, out, why), 1;
	}
	if ((login->client_secret == NULL && login->client_key == NULL) ||
	    !oauth_machines_only(d->as))
		return 0;
	buf_init(&form, 0);
	oauth_param(&form, "grant_type", "client_credentials");
	oauth_param(&form, "resource", p->resource);
	if (d->scope != NULL)
		oauth_param(&form, "scope", d->scope);
	oauth_token_request(p, &form, out, why);
	buf_free(&form);
	return 1;
}

/* The authorization URL of p (PKCE S256 and the state made here), or NULL with *why. */
static char *
oauth_authorization_url(struct oauth_client *p, struct oauth_discovery *d, char **why)
{
	const char *endpoint = json_get_string(d->as, "authorization_endpoint");
	unsigned char rnd[32], hash[crypto_hash_sha256_BYTES];
	char pkce[64];
	struct buf q;
	char *out;

	if (endpoint == NULL) {
		*why = xstrdup("the server's authorization server publishes no usable metadata "
		    "(no authorization endpoint)");
		return NULL;
	}
	/* PKCE (S256) and the state: 32 random bytes each. */
	randombytes_buf(rnd, sizeof rnd);
	oauth_b64url(rnd, sizeof rnd, p->verifier, sizeof p->verifier);
	crypto_hash_sha256(hash, (const unsigned char *)p->verifier, strlen(p->verifier));
	oauth_b64url(hash, sizeof hash, pkce, sizeof pkce);
	randombytes_buf(rnd, sizeof rnd);
	oauth_b64url(rnd, sizeof rnd, p->state, sizeof p->state);
	sodium_memzero(rnd, sizeof rnd);
	buf_init(&q, 0);
	oauth_param(&q, "response_type", "code");
	oauth_param(&q, "client_id", p->client_id);
	oauth_param(&q, "redirect_uri", p->redirect_uri);
	oauth_param(&q, "code_challenge", pkce);
	oauth_param(&q, "code_challenge_method", "S256");
	oauth_param(&q, "state", p->state);
	oauth_param(&q, "resource", p->resource);
	if (oauth_offline_access_asked(d->as, &d->scope))
		oauth_param(&q, "prompt", "consent");
	if (d->scope != NULL) {
		oauth_param(&q, "scope", d->scope);
		p->scope = xstrdup(d->scope);
	}
	out = xasprintf("%s%s%s", endpoint, strchr(endpoint, '?') != NULL ? "&" : "?", q.data);
	buf_free(&q);
	return out;
}

static char *
oauth_begin_bounded(struct service *svc, const char *connector_id, const char *url,
    const char *challenge, const struct oauth_login *login, const char *redirect_uri,
    struct oauth_result *direct, char **why)
{
	struct oauth_discovery d;
	struct oauth_client *p;
	char *out = NULL;

	if (!oauth_discover(url, challenge, login->scope, &d, why))
		return NULL;
	/* A step-up: what the token has, and what it lacks. */
	if (login->scope != NULL)
		oauth_scope_add(&d.scope, login->granted);
	p = oauth_client_new(connector_id, redirect_uri, &d);
	if (login->client_id != NULL)
		oauth_client_given(p, login, d.as);
	if (direct != NULL)
		snprintf(direct->connector_id, sizeof direct->connector_id, "%s", connector_id);
	if (oauth_begin_direct(p, login, &d, direct, why) == 0 &&
	    (login->client_id != NULL || oauth_register_client(d.as, p, why)) &&
	    (out = oauth_authorization_url(p, &d, why)) != NULL &&
	    oauth_signins_add(svc->signins, p, why)) {
		oauth_discovery_free(&d);
		return out;
	}
	free(out);
	oauth_client_free(p);
	oauth_discovery_free(&d);
	return NULL;
}

char *
oauth_begin_login(struct service *svc, const char *connector_id, const char *url,
    const char *challenge, const struct oauth_login *login, const char *redirect_uri,
    struct oauth_result *direct, char **why)
{
	char *out;

	*why = NULL;
	if (direct != NULL)
		memset(direct, 0, sizeof *direct);
	oauth_deadline = oauth_mono_ms() + OAUTH_BEGIN_MS;
	out = oauth_begin_bounded(svc, connector_id, url, challenge, login, redirect_uri, direct,
	    why);
	oauth_deadline = 0;
	return out;
}

bool
oauth_finish(struct service *svc, const char *state, const char *code, const char *error,
    const char *iss, struct oauth_result *out, char **why)
{
	struct oauth_client *p = state != NULL ? oauth_signins_take(svc->signins, state) : NULL;
	struct buf form;
	bool ok;

	memset(out, 0, sizeof *out);
	*why = NULL;
	if (p == NULL) {
		*why = xstrdup("no sign-in is waiting for this answer (it expired, or the state "
		    "does not match)");
		return false;
	}
	snprintf(out->connector_id, sizeof out->connector_id, "%s", p->connector_id);
	/* RFC 9207: the answer must come from the server the sign-in went to. */
	if (iss != NULL ? strcmp(iss, p->issuer) != 0 : p->iss_required) {
		*why = xasprintf("the answer names %s%.300s%s as its authorization server, not %.300s "
		    "(RFC 9207): its code is not used", iss != NULL ? "" : "no issuer (",
		    iss != NULL ? iss : "iss", iss != NULL ? "" : ")", p->issuer);
		oauth_client_free(p);
		return false;
	}
	if (error != NULL || code == NULL) {
		*why = xasprintf("the authorization server did not grant access (%.100s)",
		    error != NULL ? error : "no code");
		oauth_client_free(p);
		return false;
	}
	buf_init(&form, 0);
	oauth_param(&form, "grant_type", "authorization_code");
	oauth_param(&form, "code", code);
	oauth_param(&form, "redirect_uri", p->redirect_uri);
	oauth_param(&form, "code_verifier", p->verifier);
	oauth_param(&form, "resource", p->resource);
	ok = oauth_token_request(p, &form, out, why);
	buf_free(&form);
	oauth_client_free(p);
	return ok;
}
