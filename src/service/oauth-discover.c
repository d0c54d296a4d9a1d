/*
 * Discovery for a sign-in (oauth-int.h): from the server's challenge to its
 * protected resource metadata (RFC 9728) and its authorization server's
 * metadata (RFC 8414, OpenID discovery), each checked before anything is
 * sent to the endpoints they name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "mcp.h"
#include "oauth-int.h"
#include "xalloc.h"

/* Two issuer identifiers the same (RFC 8414 3.3), a trailing slash aside. */
static bool
oauth_issuer_same(const char *a, const char *b)
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
oauth_as_metadata_valid(const cJSON *as, const char *issuer, bool fetched, char **why)
{
	static const char *const endpoints[] = { "authorization_endpoint", "token_endpoint",
		"registration_endpoint", NULL };
	const char *named = json_get_string(as, "issuer");

	if (fetched && (named == NULL || !oauth_issuer_same(named, issuer))) {
		*why = xasprintf("the authorization server's metadata names the issuer %.300s, not "
		    "%.300s (RFC 8414): no sign-in", named != NULL ? named : "(none)", issuer);
		return false;
	}
	for (size_t i = 0; endpoints[i] != NULL; i++) {
		const char *e = json_get_string(as, endpoints[i]);

		if (e != NULL && !oauth_url_secure(e)) {
			*why = xasprintf("the authorization server's %s %.300s is not https: no "
			    "sign-in", endpoints[i], e);
			return false;
		}
	}
	return true;
}

/* The protected resource metadata: the challenge's URL, path-based, root. */
static cJSON *
oauth_find_prm(const char *url, const char *meta_url)
{
	char origin[512], path[1024], cand[2048];
	cJSON *prm;

	if (*meta_url != '\0' && (prm = oauth_get_json(meta_url)) != NULL)
		return prm;
	if (!oauth_split_url(url, origin, sizeof origin, path, sizeof path))
		return NULL;
	if (*path != '\0') {
		snprintf(cand, sizeof cand, "%s/.well-known/oauth-protected-resource%s", origin,
		    path);
		if ((prm = oauth_get_json(cand)) != NULL)
			return prm;
	}
	snprintf(cand, sizeof cand, "%s/.well-known/oauth-protected-resource", origin);
	return oauth_get_json(cand);
}

/*
 * The authorization server's metadata (RFC 8414, then OpenID discovery, in
 * the orders the MCP specification gives for issuers with and without a
 * path); NULL when none answers.
 */
static cJSON *
oauth_find_as_metadata(const char *issuer)
{
	char origin[512], path[1024], cand[2048];
	cJSON *m;

	if (!oauth_split_url(issuer, origin, sizeof origin, path, sizeof path))
		return NULL;
	if (*path != '\0') {
		snprintf(cand, sizeof cand, "%s/.well-known/oauth-authorization-server%s", origin,
		    path);
		if ((m = oauth_get_json(cand)) != NULL)
			return m;
		snprintf(cand, sizeof cand, "%s/.well-known/openid-configuration%s", origin, path);
		if ((m = oauth_get_json(cand)) != NULL)
			return m;
		snprintf(cand, sizeof cand, "%s%s/.well-known/openid-configuration", origin, path);
		return oauth_get_json(cand);
	}
	snprintf(cand, sizeof cand, "%s/.well-known/oauth-authorization-server", origin);
	if ((m = oauth_get_json(cand)) != NULL)
		return m;
	snprintf(cand, sizeof cand, "%s/.well-known/openid-configuration", origin);
	return oauth_get_json(cand);
}

/* Endpoints at the server's origin, for a 2025-03-26 server without metadata. */
static cJSON *
oauth_default_endpoints(const char *origin)
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
oauth_resource_matches(const char *resource, const char *url)
{
	char ro[512], rp[1024], uo[512], up[1024];
	size_t n;

	if (!oauth_split_url(resource, ro, sizeof ro, rp, sizeof rp) ||
	    !oauth_split_url(url, uo, sizeof uo, up, sizeof up) || strcasecmp(ro, uo) != 0)
		return false;
	n = strlen(rp);
	return strncmp(rp, up, n) == 0 && (up[n] == '\0' || up[n] == '/');
}

void
oauth_discovery_free(struct oauth_discovery *d)
{
	free(d->resource);
	free(d->scope);
	free(d->issuer);
	cJSON_Delete(d->as);
	memset(d, 0, sizeof *d);
}

/*
 * The protected resource metadata's part: d->resource, the issuer it names
 * (into issuer; "" when there is no metadata), and its scopes_supported
 * joined into scope when scope is "".  false with *why.
 */
static bool
oauth_discover_prm(const char *url, const char *meta_url, struct oauth_discovery *d,
    char *scope, size_t slen, char *issuer, size_t ilen, char **why)
{
	cJSON *prm = oauth_find_prm(url, meta_url);
	const cJSON *servers = cJSON_GetObjectItemCaseSensitive(prm, "authorization_servers"), *v;
	const char *res = json_get_string(prm, "resource");
	struct buf b;

	if (prm == NULL) {
		d->resource = xstrdup(url);
		return true;
	}
	if (res != NULL && !oauth_resource_matches(res, url)) {
		*why = xasprintf("the server's protected resource metadata names another "
		    "resource (%.300s), not %.300s: no sign-in", res, url);
		cJSON_Delete(prm);
		return false;
	}
	d->dpop = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(prm,
	    "dpop_signing_alg_values_supported")) ||
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(prm, "dpop_bound_access_tokens_required"));
	if (cJSON_IsArray(servers) && cJSON_IsString(cJSON_GetArrayItem(servers, 0)))
		snprintf(issuer, ilen, "%s", cJSON_GetArrayItem(servers, 0)->valuestring);
	d->resource = xstrdup(res != NULL ? res : url);
	if (*scope == '\0') {
		buf_init(&b, 4096);
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(prm, "scopes_supported"))
			if (cJSON_IsString(v))
				buf_printf(&b, "%s%s", b.len ? " " : "", v->valuestring);
		if (b.len > 0)
			snprintf(scope, slen, "%s", b.data);
		buf_free(&b);
	}
	cJSON_Delete(prm);
	return true;
}

bool
oauth_discover(const char *url, const char *challenge, const char *scope_asked,
    struct oauth_discovery *d, char **why)
{
	char meta_url[1024], scope[512], issuer[1024] = "", origin[512], path[1024];
	bool fetched = false;

	memset(d, 0, sizeof *d);
	mcp_challenge_param(challenge, "resource_metadata", meta_url, sizeof meta_url);
	mcp_challenge_param(challenge, "scope", scope, sizeof scope);
	if (scope_asked != NULL)
		snprintf(scope, sizeof scope, "%s", scope_asked);
	if (!oauth_discover_prm(url, meta_url, d, scope, sizeof scope, issuer, sizeof issuer, why))
		return false;
	if (strncasecmp(challenge, "DPoP ", 5) == 0 || strcasestr(challenge, ", DPoP ") != NULL)
		d->dpop = true;
	if (*scope != '\0')
		d->scope = xstrdup(scope);
	if (*issuer != '\0' && !oauth_url_secure(issuer)) {
		*why = xasprintf("the authorization server %.300s is not https (only one on this "
		    "machine may use plain http): no sign-in", issuer);
		oauth_discovery_free(d);
		return false;
	}
	if (*issuer != '\0') {
		d->as = oauth_find_as_metadata(issuer);
		d->issuer = xstrdup(issuer);
		fetched = true;
	} else if (oauth_split_url(url, origin, sizeof origin, path, sizeof path)) {
		/* No resource metadata: the 2025-03-26 rules, the server's origin is the issuer. */
		d->as = oauth_find_as_metadata(origin);
		if (d->as == NULL)
			d->as = oauth_default_endpoints(origin);
		/* No issuer was named to check it against: the metadata's own stands. */
		d->issuer = xstrdup(json_get_string(d->as, "issuer") != NULL ?
		    json_get_string(d->as, "issuer") : origin);
	}
	if (d->as != NULL && d->issuer != NULL &&
	    !oauth_as_metadata_valid(d->as, d->issuer, fetched, why)) {
		oauth_discovery_free(d);
		return false;
	}
	if (d->as == NULL || json_get_string(d->as, "token_endpoint") == NULL) {
		*why = xstrdup("the server's authorization server publishes no usable metadata");
		oauth_discovery_free(d);
		return false;
	}
	return true;
}
