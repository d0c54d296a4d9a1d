/*
 * Token requests (oauth-int.h): the client authenticated as it was
 * registered (HTTP Basic, in the form, or a signed assertion), the answer's
 * token and what renews it kept in sodium memory, the rest wiped; the
 * renewal with a refresh record, and the identity assertion grant.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "json.h"
#include "jwt.h"
#include "mcp.h"
#include "oauth-int.h"
#include "xalloc.h"

/* A copy of text in sodium memory (secrets_plain_free), or NULL. */
static char *
oauth_sodium_copy(const char *text)
{
	char *out = sodium_malloc(strlen(text) + 1);

	if (out != NULL)
		memcpy(out, text, strlen(text) + 1);
	return out;
}

/*
 * Adds p's client authentication to the token request: the Authorization
 * header line into *auth (malloc'd; wipe it), or parameters of form.  false
 * with *why when an assertion cannot be signed.
 */
static bool
oauth_client_auth(const struct oauth_client *p, struct buf *form, char **auth, char **why)
{
	*auth = NULL;
	if (strcmp(p->auth_method, "client_secret_basic") == 0 && p->client_secret != NULL) {
		/* RFC 6749 2.3.1: both form-encoded, then base64 of "id:secret". */
		char *id = curl_easy_escape(NULL, p->client_id, 0);
		char *secret = curl_easy_escape(NULL, p->client_secret, 0);
		char *pair = xasprintf("%s:%s", id, secret);
		size_t blen = sodium_base64_ENCODED_LEN(strlen(pair), sodium_base64_VARIANT_ORIGINAL);
		char *basic = xmalloc(blen);

		sodium_bin2base64(basic, blen, (const unsigned char *)pair, strlen(pair),
		    sodium_base64_VARIANT_ORIGINAL);
		*auth = xasprintf("Authorization: Basic %s", basic);
		sodium_memzero(pair, strlen(pair));
		sodium_memzero(basic, strlen(basic));
		free(pair);
		free(basic);
		curl_free(id);
		curl_free(secret);
	} else if (strcmp(p->auth_method, "private_key_jwt") == 0 && p->client_key != NULL) {
		/* RFC 7523 2.2: a fresh assertion signed with the client's key. */
		const char *bad = NULL;
		char *jwt = jwt_client_assertion(p->client_key, p->client_id, p->audience, &bad);

		if (jwt == NULL) {
			*why = xasprintf("cannot authenticate to the authorization server: %s", bad);
			return false;
		}
		oauth_param(form, "client_id", p->client_id);
		oauth_param(form, "client_assertion_type",
		    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
		oauth_param(form, "client_assertion", jwt);
		sodium_memzero(jwt, strlen(jwt));
		free(jwt);
	} else {
		oauth_param(form, "client_id", p->client_id);
		if (strcmp(p->auth_method, "client_secret_post") == 0 && p->client_secret != NULL)
			oauth_param(form, "client_secret", p->client_secret);
	}
	return true;
}

/*
 * What renews the token of answer (JSON: the token endpoint, the client, the
 * resource, the refresh token, expiresAt), in sodium memory; NULL without a
 * refresh token (the answer's, or the one p renewed with).
 */
static char *
oauth_refresh_record(const struct oauth_client *p, const cJSON *answer)
{
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(answer, "expires_in");
	const char *rt = json_get_string(answer, "refresh_token");
	cJSON *rec;
	char *text, *out;

	if (rt == NULL && p->refresh_token == NULL && p->workload_token_file == NULL)
		return NULL;
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "tokenEndpoint", p->token_endpoint);
	cJSON_AddStringToObject(rec, "clientId", p->client_id);
	if (p->client_secret != NULL)
		cJSON_AddStringToObject(rec, "clientSecret", p->client_secret);
	if (p->client_key != NULL) {
		cJSON_AddStringToObject(rec, "clientKey", p->client_key);
		cJSON_AddStringToObject(rec, "audience", p->audience);
	}
	cJSON_AddStringToObject(rec, "authMethod", p->auth_method);
	if (p->dpop_key != NULL)	/* a refresh token bound to it too (RFC 9449 5) */
		cJSON_AddStringToObject(rec, "dpopKey", p->dpop_key);
	cJSON_AddStringToObject(rec, "resource", p->resource);
	if (rt != NULL || p->refresh_token != NULL)
		cJSON_AddStringToObject(rec, "refreshToken", rt != NULL ? rt : p->refresh_token);
	if (p->workload_token_file != NULL) {
		/* No refresh token for this grant: a renewal asks again with the file's token. */
		cJSON_AddStringToObject(rec, "workloadTokenFile", p->workload_token_file);
		if (p->scope != NULL)
			cJSON_AddStringToObject(rec, "scope", p->scope);
	}
	cJSON_AddNumberToObject(rec, "expiresAt", cJSON_IsNumber(exp) ?
	    (double)time(NULL) + exp->valuedouble : 0);
	text = json_print(rec);
	out = oauth_sodium_copy(text);
	sodium_memzero(text, strlen(text));
	free(text);
	cJSON_Delete(rec);	/* its copies of the secrets go with the cJSON heap */
	return out;
}

/* Wipes the token answer's secrets and frees it. */
static void
oauth_answer_free(cJSON *answer)
{
	static const char *const secrets[] = { "access_token", "refresh_token", NULL };

	for (size_t i = 0; secrets[i] != NULL; i++) {
		cJSON *t = cJSON_GetObjectItemCaseSensitive(answer, secrets[i]);

		if (cJSON_IsString(t))
			sodium_memzero(t->valuestring, strlen(t->valuestring));
	}
	cJSON_Delete(answer);
}

/* Whether the error answer in f is error (RFC 6749 5.2). */
static bool
oauth_answer_says(const struct oauth_fetch *f, const char *error)
{
	cJSON *answer = f->body.len > 0 ? json_parse(f->body.data, f->body.len) : NULL;
	bool yes = json_get_string(answer, "error") != NULL &&
	    strcmp(json_get_string(answer, "error"), error) == 0;

	cJSON_Delete(answer);
	return yes;
}

/*
 * POSTs the token request form with headers (up to two lines and room for a
 * third), plus a DPoP proof of p's key (with nonce, may be NULL) when it has
 * one; the status, the answer in *f, the server's DPoP-Nonce into nonce_out.
 */
static long
oauth_token_post(const struct oauth_client *p, const struct buf *form, const char **headers,
    const char *nonce, struct oauth_fetch *f, char *nonce_out, size_t nlen)
{
	const char *why = NULL, *lines[4] = { headers[0], headers[1], NULL, NULL };
	char *proof = NULL, *line = NULL, *at;
	struct buf resp;
	long status;

	if (p->dpop_key != NULL &&
	    (proof = jwt_dpop_proof(p->dpop_key, "POST", p->token_endpoint, NULL, nonce, &why)) != NULL) {
		line = xasprintf("DPoP: %s", proof);
		lines[headers[0] != NULL ? 1 : 0] = line;
		lines[headers[0] != NULL ? 2 : 1] = headers[0] != NULL ? headers[1] : NULL;
	}
	buf_init(&resp, 16384);
	status = oauth_fetch(p->token_endpoint, form->data, "application/x-www-form-urlencoded",
	    lines, f, &resp);
	*nonce_out = '\0';
	if (resp.data != NULL && (at = strcasestr(resp.data, "\nDPoP-Nonce:")) != NULL) {
		at += 12;
		at += strspn(at, " \t");
		snprintf(nonce_out, nlen, "%.*s", (int)strcspn(at, "\r\n"), at);
	}
	buf_free(&resp);
	free(line);
	free(proof);
	return status;
}

/* Why the token request was refused: the status, and the answer's OAuth error (RFC 6749 5.2). */
static void
oauth_refused(const cJSON *answer, long status, char **why)
{
	const char *error = json_get_string(answer, "error");
	const char *desc = json_get_string(answer, "error_description");
	char line[400] = "";

	if (error != NULL)
		mcp_printable_line(error, strlen(error), line, 80);
	if (error != NULL && desc != NULL) {
		size_t n = strlen(line);

		snprintf(line + n, sizeof line - n, ": ");
		mcp_printable_line(desc, strlen(desc), line + n + 2, sizeof line - n - 2);
	}
	*why = xasprintf("the authorization server refused the token request (HTTP %ld%s%s)",
	    status, *line != '\0' ? ": " : "", line);
}

bool
oauth_token_request(const struct oauth_client *p, struct buf *form, struct oauth_result *out,
    char **why)
{
	const char *headers[3] = { NULL, NULL, NULL };
	char *auth = NULL, nonce[256] = "";
	struct oauth_fetch f;
	cJSON *answer;
	const char *token;
	long status;
	bool ok;

	if (!oauth_client_auth(p, form, &auth, why)) {
		sodium_memzero(form->data, form->len);
		return false;
	}
	headers[0] = auth;
	status = oauth_token_post(p, form, headers, NULL, &f, nonce, sizeof nonce);
	/* RFC 9449 8: a server that wants a nonce in the proof names it; once more with it. */
	if (status == 400 && *nonce != '\0' && oauth_answer_says(&f, "use_dpop_nonce")) {
		buf_free(&f.body);
		status = oauth_token_post(p, form, headers, nonce, &f, nonce, sizeof nonce);
	}
	sodium_memzero(form->data, form->len);
	if (auth != NULL)
		sodium_memzero(auth, strlen(auth));
	free(auth);
	answer = f.body.len > 0 ? json_parse(f.body.data, f.body.len) : NULL;
	if (f.body.data != NULL)
		sodium_memzero(f.body.data, f.body.len);
	buf_free(&f.body);
	token = status == 200 ? json_get_string(answer, "access_token") : NULL;
	ok = token != NULL && *token != '\0' && strlen(token) < 16384;
	snprintf(out->scope, sizeof out->scope, "%s", json_get_string(answer, "scope") != NULL ?
	    json_get_string(answer, "scope") : p->scope != NULL ? p->scope : "");
	if (ok)
		ok = (out->access_token = oauth_sodium_copy(token)) != NULL;
	if (ok)
		out->refresh_record = oauth_refresh_record(p, answer);
	/* Bound to the key only when the server says so; else a bearer token (RFC 9449 5). */
	if (ok && p->dpop_key != NULL && json_get_string(answer, "token_type") != NULL &&
	    strcasecmp(json_get_string(answer, "token_type"), "DPoP") == 0)
		out->dpop_key = oauth_sodium_copy(p->dpop_key);
	if (!ok)
		oauth_refused(answer, status, why);
	oauth_answer_free(answer);
	return ok;
}

bool
oauth_refresh(const char *record, bool force, struct oauth_result *out, char **why)
{
	cJSON *rec = record != NULL ? json_parse(record, strlen(record)) : NULL;
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(rec, "expiresAt");
	struct oauth_client p = { .expires = 0 };
	struct buf form;
	bool ok;

	memset(out, 0, sizeof *out);
	*why = NULL;
	if (rec == NULL || (json_get_string(rec, "refreshToken") == NULL &&
	    json_get_string(rec, "workloadTokenFile") == NULL) ||
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
	p.workload_token_file = (char *)json_get_string(rec, "workloadTokenFile");
	p.scope = (char *)json_get_string(rec, "scope");
	p.dpop_key = (char *)json_get_string(rec, "dpopKey");
	if (p.refresh_token == NULL) {
		ok = oauth_workload_grant(&p, out, why);
	} else {
		buf_init(&form, 0);
		oauth_param(&form, "grant_type", "refresh_token");
		oauth_param(&form, "refresh_token", p.refresh_token);
		if (*p.resource != '\0')
			oauth_param(&form, "resource", p.resource);
		ok = oauth_token_request(&p, &form, out, why);
		buf_free(&form);
		sodium_memzero(p.refresh_token, strlen(p.refresh_token));
	}
	if (p.client_secret != NULL)
		sodium_memzero(p.client_secret, strlen(p.client_secret));
	if (p.client_key != NULL)
		sodium_memzero(p.client_key, strlen(p.client_key));
	if (p.dpop_key != NULL)
		sodium_memzero(p.dpop_key, strlen(p.dpop_key));
	/* The renewed token is bound to the key the connector keeps already. */
	if (out->dpop_key != NULL) {
		sodium_free(out->dpop_key);
		out->dpop_key = NULL;
	}
	cJSON_Delete(rec);
	return ok;
}

/*
 * The identity assertion grant of the enterprise-managed authorization
 * extension (SEP-990): the user's ID token from the enterprise identity
 * provider is exchanged there (RFC 8693) for an identity assertion JWT
 * authorization grant (ID-JAG) for this authorization server and resource,
 * and the ID-JAG here (RFC 7523 jwt-bearer) for the access token.
 */
bool
oauth_identity_assertion_grant(const struct oauth_client *p, const struct oauth_login *login,
    const cJSON *as, const char *scope, struct oauth_result *out, char **why)
{
	const char *issuer = json_get_string(as, "issuer");
	struct buf form;
	struct oauth_fetch f;
	cJSON *answer;
	const char *jag;
	long status;
	bool ok;

	buf_init(&form, 0);
	oauth_param(&form, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
	oauth_param(&form, "requested_token_type", "urn:ietf:params:oauth:token-type:id-jag");
	oauth_param(&form, "audience", issuer != NULL ? issuer : p->token_endpoint);
	oauth_param(&form, "resource", p->resource);
	if (scope != NULL)
		oauth_param(&form, "scope", scope);
	oauth_param(&form, "subject_token", login->id_token);
	oauth_param(&form, "subject_token_type", "urn:ietf:params:oauth:token-type:id_token");
	if (login->idp_client_id != NULL)
		oauth_param(&form, "client_id", login->idp_client_id);
	status = oauth_fetch(login->idp_token_endpoint, form.data,
	    "application/x-www-form-urlencoded", NULL, &f, NULL);
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
		oauth_answer_free(answer);
		return false;
	}
	buf_init(&form, 0);
	oauth_param(&form, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
	oauth_param(&form, "assertion", jag);
	if (scope != NULL)
		oauth_param(&form, "scope", scope);
	ok = oauth_token_request(p, &form, out, why);
	buf_free(&form);
	oauth_answer_free(answer);
	return ok;
}

/*
 * The workload's identity token in file (a compact JWT, at most 16 KiB,
 * blanks around it trimmed): malloc'd (wipe it), or NULL with *why.  Only a
 * JWT is ever sent: a file that holds anything else is refused unread.
 */
static char *
oauth_workload_token(const char *file, char **why)
{
	enum { MAX = 16384 };
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char *text = xmalloc(MAX + 1);
	size_t len = 0, dots = 0, b = 0;
	ssize_t n = 0;

	while (fd >= 0 && len < MAX && (n = read(fd, text + len, MAX - len)) > 0)
		len += (size_t)n;
	if (fd < 0 || n < 0 || (len == MAX && read(fd, text, 1) > 0)) {
		*why = xasprintf("cannot read the workload's identity token from %.300s: %s", file,
		    fd < 0 || n < 0 ? strerror(errno) : "over 16384 bytes");
		if (fd >= 0)
			close(fd);
		sodium_memzero(text, MAX + 1);
		free(text);
		return NULL;
	}
	close(fd);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
		len--;
	while (b < len && (text[b] == ' ' || text[b] == '\n' || text[b] == '\r'))
		b++;
	memmove(text, text + b, len - b);
	len -= b;
	text[len] = '\0';
	for (size_t i = 0; i < len; i++)
		dots += text[i] == '.';
	if (len == 0 || dots != 2 || strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789-_.") != len || text[0] == '.' || text[len - 1] == '.' ||
	    strstr(text, "..") != NULL) {
		*why = xasprintf("%.300s does not hold a JWT (the workload's identity token): "
		    "nothing was sent", file);
		sodium_memzero(text, MAX + 1);
		free(text);
		return NULL;
	}
	return text;
}

bool
oauth_workload_grant(const struct oauth_client *p, struct oauth_result *out, char **why)
{
	char *jwt = oauth_workload_token(p->workload_token_file, why);
	struct buf form;
	bool ok;

	if (jwt == NULL)
		return false;
	buf_init(&form, 0);
	oauth_param(&form, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
	oauth_param(&form, "assertion", jwt);
	if (p->resource != NULL && *p->resource != '\0')
		oauth_param(&form, "resource", p->resource);
	if (p->scope != NULL)
		oauth_param(&form, "scope", p->scope);
	ok = oauth_token_request(p, &form, out, why);
	buf_free(&form);
	sodium_memzero(jwt, strlen(jwt));
	free(jwt);
	return ok;
}
