/*
 * OAuth sign-in for HTTP connectors (oauth.h).  Every request here is a
 * plain libcurl exchange, bounded in time and size, without redirects.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "buf.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "mcp.h"
#include "oauth.h"
#include "secrets.h"
#include "xalloc.h"

#define OAUTH_TIMEOUT_MS 10000L
/* All the requests of one sign-in's beginning, together (it holds an HTTP thread). */
#define OAUTH_BEGIN_MS 20000L
#define OAUTH_MAX_BODY (1024 * 1024)
#define OAUTH_PENDING_MAX 32
#define OAUTH_PENDING_SECONDS 600

/* A sign-in under way, waiting for its redirect. */
struct pending {
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
	bool iss_required;	/* it sends iss with its redirects (RFC 9207) */
	time_t expires;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* When the current thread's sign-in must be done asking (monotonic ms), 0 = none. */
static _Thread_local long begin_deadline;

static long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static struct pending *pending[OAUTH_PENDING_MAX];

static void
pending_free(struct pending *p)
{
	if (p == NULL)
		return;
	free(p->token_endpoint);
	free(p->client_id);
	if (p->client_secret != NULL)
		sodium_memzero(p->client_secret, strlen(p->client_secret));
	free(p->client_secret);
	if (p->client_key != NULL)
		sodium_memzero(p->client_key, strlen(p->client_key));
	free(p->client_key);
	free(p->audience);
	free(p->auth_method);
	free(p->redirect_uri);
	free(p->resource);
	free(p->issuer);
	free(p->scope);
	sodium_memzero(p->verifier, sizeof p->verifier);
	free(p);
}

void
oauth_reset(void)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < OAUTH_PENDING_MAX; i++) {
		pending_free(pending[i]);
		pending[i] = NULL;
	}
	pthread_mutex_unlock(&mu);
}

/* --- HTTP ------------------------------------------------------------------ */

struct fetch {
	struct buf body;
	bool too_big;
};

static size_t
on_body(char *data, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;

	if (!buf_append(&f->body, data, size * n)) {
		f->too_big = true;
		return 0;
	}
	return size * n;
}

/*
 * One request: GET when body is NULL, else POST of body as content_type.
 * headers: extra "Name: value" lines (NULL-terminated, may be NULL).  The
 * HTTP status, or 0 when the server could not be reached.
 */
static long
fetch(const char *url, const char *body, const char *content_type,
    const char *const *headers, struct fetch *f)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	char line[256];
	long status = 0;

	memset(f, 0, sizeof *f);
	buf_init(&f->body, OAUTH_MAX_BODY);
	if (h == NULL)
		return 0;
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
		hl = curl_slist_append(hl, headers[i]);
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	if (body != NULL) {
		snprintf(line, sizeof line, "Content-Type: %s", content_type);
		hl = curl_slist_append(hl, line);
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	{
		long ms = OAUTH_TIMEOUT_MS;

		if (begin_deadline != 0 && begin_deadline - mono_ms() < ms)
			ms = begin_deadline - mono_ms() > 1 ? begin_deadline - mono_ms() : 1;
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return status;
}

/* The JSON object at url (GET, 200), or NULL. */
static cJSON *
get_json(const char *url)
{
	struct fetch f;
	long status = fetch(url, NULL, NULL, NULL, &f);
	cJSON *j = status == 200 && f.body.len > 0 ? json_parse(f.body.data, f.body.len) : NULL;

	buf_free(&f.body);
	if (j != NULL && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	log_debug("oauth: GET %s: %ld%s", url, status, j != NULL ? "" : " (no metadata)");
	return j;
}

/* "scheme://authority" of url into origin, its path (without query) into path. */
static bool
split_url(const char *url, char *origin, size_t olen, char *path, size_t plen)
{
	const char *s = strstr(url, "://"), *p;
	size_t n;

	if (s == NULL)
		return false;
	p = s + 3 + strcspn(s + 3, "/?#");
	snprintf(origin, olen, "%.*s", (int)(p - url), url);
	n = *p == '/' ? strcspn(p, "?#") : 0;
	while (n > 0 && p[n - 1] == '/')
		n--;
	snprintf(path, plen, "%.*s", (int)n, p);
	return true;
}


static bool
list_has(const cJSON *arr, const char *s)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, arr)
		if (cJSON_IsString(v) && strcmp(v->valuestring, s) == 0)
			return true;
	return false;
}

/* base64url without padding of n bytes. */
/*
 * Whether url may carry codes, secrets and tokens: https, or http to this
 * machine (a loopback address or localhost).
 */
static bool
url_secure(const char *url)
{
	static const char *const loopback[] = { "127.", "localhost", "[::1]", NULL };
	const char *host;

	if (url == NULL)
		return false;
	if (strncasecmp(url, "https://", 8) == 0)
		return true;
	if (strncasecmp(url, "http://", 7) != 0)
		return false;
	host = url + 7;
	for (size_t i = 0; loopback[i] != NULL; i++) {
		size_t n = strlen(loopback[i]);

		if (strncasecmp(host, loopback[i], n) == 0 &&
		    (loopback[i][n - 1] == '.' || host[n] == ':' || host[n] == '/' || host[n] == '\0'))
			return true;
	}
	return false;
}

/* Two issuer identifiers the same (RFC 8414 3.3), a trailing slash aside. */
static bool
issuer_same(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	na -= na > 0 && a[na - 1] == '/';
	nb -= nb > 0 && b[nb - 1] == '/';
	return na == nb && strncmp(a, b, na) == 0;
}

/*
 * The authorization server's metadata fit to sign in with: its issuer the
 * one asked for (RFC 8414 3.3: else anyone's metadata could send the code and
 * the client's secret elsewhere), its endpoints https or on this machine.
 */
static bool
as_metadata_valid(const cJSON *as, const char *issuer, bool fetched, char **why)
{
	static const char *const endpoints[] = { "authorization_endpoint", "token_endpoint",
		"registration_endpoint", NULL };
	const char *named = json_get_string(as, "issuer");

	if (fetched && (named == NULL || !issuer_same(named, issuer))) {
		*why = xasprintf("the authorization server's metadata names the issuer %.300s, not "
		    "%.300s (RFC 8414): no sign-in", named != NULL ? named : "(none)", issuer);
		return false;
	}
	for (size_t i = 0; endpoints[i] != NULL; i++) {
		const char *e = json_get_string(as, endpoints[i]);

		if (e != NULL && !url_secure(e)) {
			*why = xasprintf("the authorization server's %s %.300s is not https: no "
			    "sign-in", endpoints[i], e);
			return false;
		}
	}
	return true;
}

static void
b64url(const unsigned char *bin, size_t n, char *out, size_t len)
{
	sodium_bin2base64(out, len, bin, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

/* Appends "&name=value" (or "?" first) with value percent-encoded. */
static void
add_param(struct buf *b, const char *name, const char *value)
{
	char *v = curl_easy_escape(NULL, value, 0);

	buf_printf(b, "%s%s=%s", b->len == 0 ? "" : "&", name, v != NULL ? v : "");
	curl_free(v);
}

/* --- discovery ---------------------------------------------------------------- */

struct discovery {
	char *resource;		/* the resource parameter: the PRM's resource, else the URL */
	char *scope;		/* NULL: none asked */
	cJSON *as;		/* the authorization server's metadata */
	char *issuer;		/* its issuer identifier */
};

/* The protected resource metadata: the challenge's URL, path-based, root. */
static cJSON *
find_prm(const char *url, const char *meta_url)
{
	char origin[512], path[1024], cand[2048];
	cJSON *prm;

	if (*meta_url != '\0' && (prm = get_json(meta_url)) != NULL)
		return prm;
	if (!split_url(url, origin, sizeof origin, path, sizeof path))
		return NULL;
	if (*path != '\0') {
		snprintf(cand, sizeof cand, "%s/.well-known/oauth-protected-resource%s", origin,
		    path);
		if ((prm = get_json(cand)) != NULL)
			return prm;
	}
	snprintf(cand, sizeof cand, "%s/.well-known/oauth-protected-resource", origin);
	return get_json(cand);
}

/*
 * The authorization server's metadata (RFC 8414, then OpenID discovery, in
 * the orders the MCP specification gives for issuers with and without a
 * path); NULL when none answers.
 */
static cJSON *
find_as_metadata(const char *issuer)
{
	char origin[512], path[1024], cand[2048];
	cJSON *m;

	if (!split_url(issuer, origin, sizeof origin, path, sizeof path))
		return NULL;
	if (*path != '\0') {
		snprintf(cand, sizeof cand, "%s/.well-known/oauth-authorization-server%s", origin,
		    path);
		if ((m = get_json(cand)) != NULL)
			return m;
		snprintf(cand, sizeof cand, "%s/.well-known/openid-configuration%s", origin, path);
		if ((m = get_json(cand)) != NULL)
			return m;
		snprintf(cand, sizeof cand, "%s%s/.well-known/openid-configuration", origin, path);
		return get_json(cand);
	}
	snprintf(cand, sizeof cand, "%s/.well-known/oauth-authorization-server", origin);
	if ((m = get_json(cand)) != NULL)
		return m;
	snprintf(cand, sizeof cand, "%s/.well-known/openid-configuration", origin);
	return get_json(cand);
}

/* Endpoints at the server's origin, for a 2025-03-26 server without metadata. */
static cJSON *
default_endpoints(const char *origin)
{
	cJSON *m = cJSON_CreateObject();
	char *s;

	s = xasprintf("%s/authorize", origin);
	cJSON_AddStringToObject(m, "authorization_endpoint", s);
	free(s);
	s = xasprintf("%s/token", origin);
	cJSON_AddStringToObject(m, "token_endpoint", s);
	free(s);
	s = xasprintf("%s/register", origin);
	cJSON_AddStringToObject(m, "registration_endpoint", s);
	free(s);
	return m;
}

/*
 * Whether the resource the metadata names covers url (RFC 9728 section 3.3,
 * as the MCP specification applies it): the same origin, and its path the
 * URL's path or a parent of it.
 */
static bool
resource_matches(const char *resource, const char *url)
{
	char ro[512], rp[1024], uo[512], up[1024];
	size_t n;

	if (!split_url(resource, ro, sizeof ro, rp, sizeof rp) ||
	    !split_url(url, uo, sizeof uo, up, sizeof up) || strcasecmp(ro, uo) != 0)
		return false;
	n = strlen(rp);
	return strncmp(rp, up, n) == 0 && (up[n] == '\0' || up[n] == '/');
}

static bool
discover(const char *url, const char *challenge, const char *scope_asked, struct discovery *d,
    char **why)
{
	char meta_url[1024], scope[512], origin[512], path[1024];
	const char *issuer = NULL;
	bool fetched = false;
	cJSON *prm;

	memset(d, 0, sizeof *d);
	mcp_challenge_param(challenge, "resource_metadata", meta_url, sizeof meta_url);
	mcp_challenge_param(challenge, "scope", scope, sizeof scope);
	if (scope_asked != NULL)
		snprintf(scope, sizeof scope, "%s", scope_asked);
	prm = find_prm(url, meta_url);
	if (prm != NULL) {
		const cJSON *servers = cJSON_GetObjectItemCaseSensitive(prm, "authorization_servers");
		const char *res = json_get_string(prm, "resource");

		if (res != NULL && !resource_matches(res, url)) {
			*why = xasprintf("the server's protected resource metadata names another "
			    "resource (%.300s), not %.300s: no sign-in", res, url);
			cJSON_Delete(prm);
			return false;
		}

		if (cJSON_IsArray(servers) && cJSON_IsString(cJSON_GetArrayItem(servers, 0)))
			issuer = cJSON_GetArrayItem(servers, 0)->valuestring;
		d->resource = xstrdup(res != NULL ? res : url);
		if (*scope == '\0') {
			const cJSON *ss = cJSON_GetObjectItemCaseSensitive(prm, "scopes_supported");
			const cJSON *v;
			struct buf b;

			buf_init(&b, 4096);
			cJSON_ArrayForEach(v, ss)
				if (cJSON_IsString(v))
					buf_printf(&b, "%s%s", b.len ? " " : "", v->valuestring);
			if (b.len > 0)
				snprintf(scope, sizeof scope, "%s", b.data);
			buf_free(&b);
		}
	} else {
		d->resource = xstrdup(url);
	}
	if (*scope != '\0')
		d->scope = xstrdup(scope);
	if (issuer != NULL && !url_secure(issuer)) {
		*why = xasprintf("the authorization server %.300s is not https (only one on this "
		    "machine may use plain http): no sign-in", issuer);
		cJSON_Delete(prm);
		free(d->resource);
		free(d->scope);
		return false;
	}
	if (issuer != NULL) {
		d->as = find_as_metadata(issuer);
		d->issuer = xstrdup(issuer);
		fetched = true;
	} else if (split_url(url, origin, sizeof origin, path, sizeof path)) {
		/* No resource metadata: the 2025-03-26 rules, the server's origin is the issuer. */
		d->as = find_as_metadata(origin);
		if (d->as == NULL)
			d->as = default_endpoints(origin);
		/* No issuer was named to check it against: the metadata's own stands. */
		d->issuer = xstrdup(json_get_string(d->as, "issuer") != NULL ?
		    json_get_string(d->as, "issuer") : origin);
	}
	cJSON_Delete(prm);
	if (d->as != NULL && d->issuer != NULL && !as_metadata_valid(d->as, d->issuer, fetched, why)) {
		free(d->resource);
		free(d->scope);
		free(d->issuer);
		cJSON_Delete(d->as);
		return false;
	}
	if (d->as == NULL || json_get_string(d->as, "authorization_endpoint") == NULL ||
	    json_get_string(d->as, "token_endpoint") == NULL) {
		*why = xstrdup("the server's authorization server publishes no usable metadata");
		free(d->resource);
		free(d->scope);
		free(d->issuer);
		cJSON_Delete(d->as);
		return false;
	}
	return true;
}

/* --- registration --------------------------------------------------------------- */

/* The token endpoint auth method to ask for: none, else basic, else post. */
static const char *
choose_auth_method(const cJSON *as, bool has_secret)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(as, "token_endpoint_auth_methods_supported");

	if (!cJSON_IsArray(m))
		return "client_secret_basic";	/* RFC 8414's default */
	if (list_has(m, "none") && !has_secret)
		return "none";
	if (list_has(m, "client_secret_basic"))
		return "client_secret_basic";
	if (list_has(m, "client_secret_post"))
		return "client_secret_post";
	return "none";
}

/* Dynamic client registration (RFC 7591) into p. */
static bool
register_client(const cJSON *as, struct pending *p, char **why)
{
	const char *endpoint = json_get_string(as, "registration_endpoint");
	cJSON *req, *uris, *grants, *answer;
	const char *id, *secret, *method;
	struct fetch f;
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
	cJSON_AddStringToObject(req, "token_endpoint_auth_method", choose_auth_method(as, false));
	body = json_print(req);
	cJSON_Delete(req);
	status = fetch(endpoint, body, "application/json", NULL, &f);
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

/* --- the flow ------------------------------------------------------------------------ */

/* Whether the space-separated list has word. */
static bool
words_have(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p != NULL && *p != '\0'; p += strcspn(p, " "), p += *p == ' ') {
		if (strncmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\0'))
			return true;
	}
	return false;
}

/*
 * An authorization server that offers the offline_access scope (OpenID
 * Connect 11) may issue a refresh token only for it, and only with
 * prompt=consent: *scope gets it added when the server lists it (and does not
 * say it lacks the refresh_token grant).  True when it was asked for.
 */
/* *scope with the words of more it lacks added (more may be NULL). */
static void
scope_add(char **scope, const char *more)
{
	struct buf b;

	if (more == NULL || *more == '\0')
		return;
	buf_init(&b, 4096);
	buf_appends(&b, *scope != NULL ? *scope : "");
	for (const char *p = more; *p != '\0';) {
		size_t n = strcspn(p, " ");
		char *w = xstrndup(p, n);

		if (*w != '\0' && !words_have(b.data != NULL ? b.data : "", w))
			buf_printf(&b, "%s%s", b.len > 0 ? " " : "", w);
		free(w);
		p += n + (p[n] == ' ');
	}
	free(*scope);
	*scope = buf_steal(&b);
}

static bool
offline_access_asked(const cJSON *as, char **scope)
{
	const cJSON *grants = cJSON_GetObjectItemCaseSensitive(as, "grant_types_supported");
	char *s;

	if (!list_has(cJSON_GetObjectItemCaseSensitive(as, "scopes_supported"), "offline_access") ||
	    (cJSON_IsArray(grants) && !list_has(grants, "refresh_token")))
		return false;
	if (*scope != NULL && words_have(*scope, "offline_access"))
		return true;
	s = *scope != NULL && **scope != '\0' ? xasprintf("%s offline_access", *scope) :
	    xstrdup("offline_access");
	free(*scope);
	*scope = s;
	return true;
}

static bool token_request(const struct pending *p, struct buf *form, struct oauth_result *out,
    char **why);
static char *oauth_begin_bounded(const char *connector_id, const char *url,
    const char *challenge, const struct oauth_login *login, const char *redirect_uri,
    struct oauth_result *direct, char **why);

char *
oauth_begin(const char *connector_id, const char *url, const char *challenge,
    const char *redirect_uri, char **why)
{
	return oauth_begin_as(connector_id, url, challenge, NULL, NULL, NULL, redirect_uri, NULL,
	    why);
}

char *
oauth_begin_as(const char *connector_id, const char *url, const char *challenge,
    const char *client_id, const char *client_secret, const char *scope,
    const char *redirect_uri, struct oauth_result *direct, char **why)
{
	struct oauth_login login = { .client_id = client_id, .client_secret = client_secret,
		.scope = scope };

	return oauth_begin_login(connector_id, url, challenge, &login, redirect_uri, direct, why);
}

char *
oauth_begin_login(const char *connector_id, const char *url, const char *challenge,
    const struct oauth_login *login, const char *redirect_uri, struct oauth_result *direct,
    char **why)
{
	char *out;

	*why = NULL;
	if (direct != NULL)
		memset(direct, 0, sizeof *direct);
	begin_deadline = mono_ms() + OAUTH_BEGIN_MS;
	out = oauth_begin_bounded(connector_id, url, challenge, login, redirect_uri, direct, why);
	begin_deadline = 0;
	return out;
}

/*
 * The identity assertion grant of the enterprise-managed authorization
 * extension (SEP-990): the user's ID token from the enterprise identity
 * provider is exchanged there (RFC 8693) for an identity assertion JWT
 * authorization grant (ID-JAG) for this authorization server and resource,
 * and the ID-JAG here (RFC 7523 jwt-bearer) for the access token.
 */
static bool
identity_assertion_grant(const struct pending *p, const struct oauth_login *login,
    const cJSON *as, const char *scope, struct oauth_result *out, char **why)
{
	const char *issuer = json_get_string(as, "issuer");
	struct buf form;
	struct fetch f;
	cJSON *answer;
	const char *jag;
	long status;
	bool ok;

	buf_init(&form, 0);
	add_param(&form, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
	add_param(&form, "requested_token_type", "urn:ietf:params:oauth:token-type:id-jag");
	add_param(&form, "audience", issuer != NULL ? issuer : p->token_endpoint);
	add_param(&form, "resource", p->resource);
	if (scope != NULL)
		add_param(&form, "scope", scope);
	add_param(&form, "subject_token", login->id_token);
	add_param(&form, "subject_token_type", "urn:ietf:params:oauth:token-type:id_token");
	if (login->idp_client_id != NULL)
		add_param(&form, "client_id", login->idp_client_id);
	status = fetch(login->idp_token_endpoint, form.data, "application/x-www-form-urlencoded",
	    NULL, &f);
	sodium_memzero(form.data, form.len);
	buf_free(&form);
	answer = status == 200 && f.body.len > 0 ? json_parse(f.body.data, f.body.len) : NULL;
	if (f.body.data != NULL)
		sodium_memzero(f.body.data, f.body.len);
	buf_free(&f.body);
	jag = json_get_string(answer, "access_token");
	if (jag == NULL || *jag == '\0' || strlen(jag) > 16384) {
		*why = xasprintf("the identity provider refused the token exchange for an "
		    "identity assertion (HTTP %ld)", status);
		cJSON_Delete(answer);
		return false;
	}
	buf_init(&form, 0);
	add_param(&form, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
	add_param(&form, "assertion", jag);
	if (scope != NULL)
		add_param(&form, "scope", scope);
	ok = token_request(p, &form, out, why);
	buf_free(&form);
	sodium_memzero((char *)jag, strlen(jag));
	cJSON_Delete(answer);
	return ok;
}

static char *
oauth_begin_bounded(const char *connector_id, const char *url, const char *challenge,
    const struct oauth_login *login, const char *redirect_uri, struct oauth_result *direct,
    char **why)
{
	const char *client_id = login->client_id, *client_secret = login->client_secret;
	const char *client_key = login->client_key, *scope = login->scope;
	struct discovery d;
	struct pending *p;
	unsigned char rnd[32], hash[crypto_hash_sha256_BYTES];
	char pkce[64];
	const char *endpoint;
	struct buf q;
	char *out;
	size_t slot = OAUTH_PENDING_MAX;
	time_t now = time(NULL);

	if (!discover(url, challenge, scope, &d, why))
		return NULL;
	/* A step-up: what the token has, and what it lacks. */
	if (scope != NULL)
		scope_add(&d.scope, login->granted);
	p = xcalloc(1, sizeof *p);
	snprintf(p->connector_id, sizeof p->connector_id, "%s", connector_id);
	p->redirect_uri = xstrdup(redirect_uri);
	p->resource = d.resource;
	/* What the server calls itself (it matched the issuer asked for): iss must be it exactly. */
	if (json_get_string(d.as, "issuer") != NULL) {
		free(d.issuer);
		d.issuer = xstrdup(json_get_string(d.as, "issuer"));
	}
	p->issuer = d.issuer;
	p->iss_required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d.as,
	    "authorization_response_iss_parameter_supported"));
	p->token_endpoint = xstrdup(json_get_string(d.as, "token_endpoint"));
	/* A client assertion's audience: the issuer (RFC 7523 3, RFC 8414 2). */
	p->audience = xstrdup(json_get_string(d.as, "issuer") != NULL ?
	    json_get_string(d.as, "issuer") : p->token_endpoint);
	if (client_key != NULL)
		p->client_key = xstrdup(client_key);
	if (login->id_token != NULL && direct != NULL && client_id != NULL) {
		/* Enterprise-managed: no browser, the identity provider vouches. */
		p->client_id = xstrdup(client_id);
		p->client_secret = client_secret != NULL ? xstrdup(client_secret) : NULL;
		p->auth_method = xstrdup(client_key != NULL ? "private_key_jwt" :
		    client_secret != NULL ? choose_auth_method(d.as, true) : "none");
		if (strcmp(p->auth_method, "none") == 0 && client_secret != NULL) {
			free(p->auth_method);
			p->auth_method = xstrdup("client_secret_basic");
		}
		snprintf(direct->connector_id, sizeof direct->connector_id, "%s", connector_id);
		identity_assertion_grant(p, login, d.as, d.scope, direct, why);
		free(d.scope);
		cJSON_Delete(d.as);
		pending_free(p);
		return NULL;
	}
	if (client_id != NULL && (client_secret != NULL || client_key != NULL) && direct != NULL &&
	    list_has(cJSON_GetObjectItemCaseSensitive(d.as, "grant_types_supported"),
	    "client_credentials") &&
	    !list_has(cJSON_GetObjectItemCaseSensitive(d.as, "grant_types_supported"),
	    "authorization_code")) {
		/*
		 * An authorization server for machines only (the client credentials
		 * grant, SEP-1046): the token comes at once, no browser.
		 */
		struct buf form;

		p->client_id = xstrdup(client_id);
		p->client_secret = client_secret != NULL ? xstrdup(client_secret) : NULL;
		p->auth_method = xstrdup(client_key != NULL ? "private_key_jwt" :
		    choose_auth_method(d.as, true));
		if (strcmp(p->auth_method, "none") == 0) {
			free(p->auth_method);
			p->auth_method = xstrdup("client_secret_basic");
		}
		buf_init(&form, 0);
		add_param(&form, "grant_type", "client_credentials");
		add_param(&form, "resource", p->resource);
		if (d.scope != NULL)
			add_param(&form, "scope", d.scope);
		snprintf(direct->connector_id, sizeof direct->connector_id, "%s", connector_id);
		token_request(p, &form, direct, why);
		buf_free(&form);
		free(d.scope);
		cJSON_Delete(d.as);
		pending_free(p);
		return NULL;
	}
	if (client_id != NULL) {
		/* Pre-registered: as the server's metadata allows it to authenticate. */
		p->client_id = xstrdup(client_id);
		p->client_secret = client_secret != NULL ? xstrdup(client_secret) : NULL;
		p->auth_method = xstrdup(client_key != NULL ? "private_key_jwt" :
		    client_secret != NULL ? choose_auth_method(d.as, true) : "none");
		if (strcmp(p->auth_method, "none") == 0 && client_secret != NULL) {
			free(p->auth_method);
			p->auth_method = xstrdup("client_secret_basic");
		}
	} else if (!register_client(d.as, p, why)) {
		free(d.scope);
		cJSON_Delete(d.as);
		pending_free(p);
		return NULL;
	}
	/* PKCE (S256) and the state: 32 random bytes each. */
	randombytes_buf(rnd, sizeof rnd);
	b64url(rnd, sizeof rnd, p->verifier, sizeof p->verifier);
	crypto_hash_sha256(hash, (const unsigned char *)p->verifier, strlen(p->verifier));
	b64url(hash, sizeof hash, pkce, sizeof pkce);
	randombytes_buf(rnd, sizeof rnd);
	b64url(rnd, sizeof rnd, p->state, sizeof p->state);
	sodium_memzero(rnd, sizeof rnd);

	endpoint = json_get_string(d.as, "authorization_endpoint");
	buf_init(&q, 0);
	add_param(&q, "response_type", "code");
	add_param(&q, "client_id", p->client_id);
	add_param(&q, "redirect_uri", p->redirect_uri);
	add_param(&q, "code_challenge", pkce);
	add_param(&q, "code_challenge_method", "S256");
	add_param(&q, "state", p->state);
	add_param(&q, "resource", p->resource);
	if (offline_access_asked(d.as, &d.scope))
		add_param(&q, "prompt", "consent");
	if (d.scope != NULL) {
		add_param(&q, "scope", d.scope);
		p->scope = xstrdup(d.scope);
	}
	out = xasprintf("%s%s%s", endpoint, strchr(endpoint, '?') != NULL ? "&" : "?", q.data);
	buf_free(&q);
	free(d.scope);
	cJSON_Delete(d.as);

	p->expires = now + OAUTH_PENDING_SECONDS;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < OAUTH_PENDING_MAX; i++) {
		if (pending[i] != NULL && pending[i]->expires < now) {
			pending_free(pending[i]);
			pending[i] = NULL;
		}
		if (pending[i] == NULL && slot == OAUTH_PENDING_MAX)
			slot = i;
	}
	if (slot < OAUTH_PENDING_MAX)
		pending[slot] = p;
	pthread_mutex_unlock(&mu);
	if (slot == OAUTH_PENDING_MAX) {
		pending_free(p);
		free(out);
		*why = xasprintf("%d sign-ins are under way; finish one or retry in %d minutes",
		    OAUTH_PENDING_MAX, OAUTH_PENDING_SECONDS / 60);
		return NULL;
	}
	return out;
}

/* Removes and returns the pending sign-in of state, or NULL. */
static struct pending *
take(const char *state)
{
	struct pending *p = NULL;
	size_t n = strlen(state);

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < OAUTH_PENDING_MAX && p == NULL; i++) {
		if (pending[i] != NULL && strlen(pending[i]->state) == n &&
		    sodium_memcmp(pending[i]->state, state, n) == 0) {
			p = pending[i];
			pending[i] = NULL;
		}
	}
	pthread_mutex_unlock(&mu);
	if (p != NULL && p->expires < time(NULL)) {
		pending_free(p);
		p = NULL;
	}
	return p;
}

/*
 * The token request of p with form (its grant's parameters; the client's
 * authentication is added): *out's token, or false with *why.  form is wiped.
 */
static bool
token_request(const struct pending *p, struct buf *form, struct oauth_result *out, char **why)
{
	const char *headers[2] = { NULL, NULL };
	char *basic = NULL, *auth = NULL;
	struct fetch f;
	cJSON *answer;
	const char *token;
	long status;
	bool ok;

	if (strcmp(p->auth_method, "client_secret_basic") == 0 && p->client_secret != NULL) {
		/* RFC 6749 2.3.1: both form-encoded, then base64 of "id:secret". */
		char *id = curl_easy_escape(NULL, p->client_id, 0);
		char *secret = curl_easy_escape(NULL, p->client_secret, 0);
		char *pair = xasprintf("%s:%s", id, secret);
		size_t blen = sodium_base64_ENCODED_LEN(strlen(pair), sodium_base64_VARIANT_ORIGINAL);

		basic = xmalloc(blen);
		sodium_bin2base64(basic, blen, (const unsigned char *)pair, strlen(pair),
		    sodium_base64_VARIANT_ORIGINAL);
		auth = xasprintf("Authorization: Basic %s", basic);
		headers[0] = auth;
		sodium_memzero(pair, strlen(pair));
		free(pair);
		curl_free(id);
		curl_free(secret);
	} else if (strcmp(p->auth_method, "private_key_jwt") == 0 && p->client_key != NULL) {
		/* RFC 7523 2.2: a fresh assertion signed with the client's key. */
		const char *bad = NULL;
		char *jwt = jwt_client_assertion(p->client_key, p->client_id, p->audience, &bad);

		if (jwt == NULL) {
			sodium_memzero(form->data, form->len);
			*why = xasprintf("cannot authenticate to the authorization server: %s", bad);
			return false;
		}
		add_param(form, "client_id", p->client_id);
		add_param(form, "client_assertion_type",
		    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
		add_param(form, "client_assertion", jwt);
		sodium_memzero(jwt, strlen(jwt));
		free(jwt);
	} else {
		add_param(form, "client_id", p->client_id);
		if (strcmp(p->auth_method, "client_secret_post") == 0 && p->client_secret != NULL)
			add_param(form, "client_secret", p->client_secret);
	}
	status = fetch(p->token_endpoint, form->data, "application/x-www-form-urlencoded", headers,
	    &f);
	sodium_memzero(form->data, form->len);
	if (auth != NULL) {
		sodium_memzero(auth, strlen(auth));
		sodium_memzero(basic, strlen(basic));
	}
	free(auth);
	free(basic);
	answer = status == 200 && f.body.len > 0 ? json_parse(f.body.data, f.body.len) : NULL;
	if (f.body.data != NULL)
		sodium_memzero(f.body.data, f.body.len);
	buf_free(&f.body);
	token = json_get_string(answer, "access_token");
	ok = token != NULL && *token != '\0' && strlen(token) < 16384;
	snprintf(out->scope, sizeof out->scope, "%s", json_get_string(answer, "scope") != NULL ?
	    json_get_string(answer, "scope") : p->scope != NULL ? p->scope : "");
	if (ok) {
		out->access_token = sodium_malloc(strlen(token) + 1);
		ok = out->access_token != NULL;
		if (ok)
			memcpy(out->access_token, token, strlen(token) + 1);
	}
	if (ok && (json_get_string(answer, "refresh_token") != NULL || p->refresh_token != NULL)) {
		/* What renews it: a new refresh token, or the one that was used. */
		const cJSON *exp = cJSON_GetObjectItemCaseSensitive(answer, "expires_in");
		const char *rt = json_get_string(answer, "refresh_token");
		cJSON *rec = cJSON_CreateObject();
		char *text;

		cJSON_AddStringToObject(rec, "tokenEndpoint", p->token_endpoint);
		cJSON_AddStringToObject(rec, "clientId", p->client_id);
		if (p->client_secret != NULL)
			cJSON_AddStringToObject(rec, "clientSecret", p->client_secret);
		if (p->client_key != NULL) {
			cJSON_AddStringToObject(rec, "clientKey", p->client_key);
			cJSON_AddStringToObject(rec, "audience", p->audience);
		}
		cJSON_AddStringToObject(rec, "authMethod", p->auth_method);
		cJSON_AddStringToObject(rec, "resource", p->resource);
		cJSON_AddStringToObject(rec, "refreshToken", rt != NULL ? rt : p->refresh_token);
		cJSON_AddNumberToObject(rec, "expiresAt", cJSON_IsNumber(exp) ?
		    (double)time(NULL) + exp->valuedouble : 0);
		text = json_print(rec);
		out->refresh_record = sodium_malloc(strlen(text) + 1);
		if (out->refresh_record != NULL)
			memcpy(out->refresh_record, text, strlen(text) + 1);
		sodium_memzero(text, strlen(text));
		free(text);
		cJSON_Delete(rec);	/* its copies of the secrets go with the cJSON heap */
	}
	if (!ok)
		*why = xasprintf("the authorization server refused the token request (HTTP %ld)",
		    status);
	if (answer != NULL) {
		cJSON *t = cJSON_GetObjectItemCaseSensitive(answer, "access_token");

		if (cJSON_IsString(t))
			sodium_memzero(t->valuestring, strlen(t->valuestring));
		t = cJSON_GetObjectItemCaseSensitive(answer, "refresh_token");
		if (cJSON_IsString(t))
			sodium_memzero(t->valuestring, strlen(t->valuestring));
		cJSON_Delete(answer);
	}
	return ok;
}

bool
oauth_refresh(const char *record, bool force, struct oauth_result *out, char **why)
{
	cJSON *rec = record != NULL ? json_parse(record, strlen(record)) : NULL;
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(rec, "expiresAt");
	struct pending p = { .expires = 0 };
	struct buf form;
	bool ok;

	memset(out, 0, sizeof *out);
	*why = NULL;
	if (rec == NULL || json_get_string(rec, "refreshToken") == NULL ||
	    json_get_string(rec, "tokenEndpoint") == NULL || json_get_string(rec, "clientId") == NULL) {
		cJSON_Delete(rec);
		*why = xstrdup("the refresh record is not readable");
		return false;
	}
	/* No expiry known, or more than a minute left: nothing to do. */
	if (!force && (!cJSON_IsNumber(exp) || exp->valuedouble == 0 ||
	    exp->valuedouble > (double)time(NULL) + 60)) {
		cJSON_Delete(rec);
		return false;
	}
	p.token_endpoint = (char *)json_get_string(rec, "tokenEndpoint");
	p.client_id = (char *)json_get_string(rec, "clientId");
	p.client_secret = (char *)json_get_string(rec, "clientSecret");
	p.client_key = (char *)json_get_string(rec, "clientKey");
	p.audience = (char *)json_get_string(rec, "audience");
	p.auth_method = (char *)(json_get_string(rec, "authMethod") ?
	    json_get_string(rec, "authMethod") : "none");
	p.resource = (char *)(json_get_string(rec, "resource") ?
	    json_get_string(rec, "resource") : "");
	p.refresh_token = (char *)json_get_string(rec, "refreshToken");
	buf_init(&form, 0);
	add_param(&form, "grant_type", "refresh_token");
	add_param(&form, "refresh_token", p.refresh_token);
	if (*p.resource != '\0')
		add_param(&form, "resource", p.resource);
	ok = token_request(&p, &form, out, why);
	buf_free(&form);
	sodium_memzero(p.refresh_token, strlen(p.refresh_token));
	if (p.client_secret != NULL)
		sodium_memzero(p.client_secret, strlen(p.client_secret));
	if (p.client_key != NULL)
		sodium_memzero(p.client_key, strlen(p.client_key));
	cJSON_Delete(rec);
	return ok;
}

bool
oauth_finish(const char *state, const char *code, const char *error, const char *iss,
    struct oauth_result *out, char **why)
{
	struct pending *p = state != NULL ? take(state) : NULL;
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
		pending_free(p);
		return false;
	}
	if (error != NULL || code == NULL) {
		*why = xasprintf("the authorization server did not grant access (%.100s)",
		    error != NULL ? error : "no code");
		pending_free(p);
		return false;
	}
	buf_init(&form, 0);
	add_param(&form, "grant_type", "authorization_code");
	add_param(&form, "code", code);
	add_param(&form, "redirect_uri", p->redirect_uri);
	add_param(&form, "code_verifier", p->verifier);
	add_param(&form, "resource", p->resource);
	ok = token_request(p, &form, out, why);
	buf_free(&form);
	pending_free(p);
	return ok;
}
