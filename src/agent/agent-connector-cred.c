/*
 * What a connector's server gets of the run's credentials: environment
 * entries and header lines, each value asked of the service (secret.resolve)
 * right before it is used, masked from then on, and asked again when due.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent-connectors-int.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "redact.h"
#include "xalloc.h"

#define CONNECTOR_SECRET_MAX 16384	/* a resolved credential value */

void
connector_strv_add(struct connector_strv *s, char *item)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = xrealloc(s->v, s->cap * sizeof *s->v);
	}
	s->v[s->n++] = item;
	s->v[s->n] = NULL;
}

/* Sets NAME=value, replacing an earlier NAME. */
void
connector_env_set(struct connector_strv *env, const char *name, const char *value)
{
	size_t n = strlen(name);
	char *item = xasprintf("%s=%s", name, value);

	for (size_t i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=') {
			explicit_bzero(env->v[i], strlen(env->v[i]));
			free(env->v[i]);
			env->v[i] = item;
			return;
		}
	}
	connector_strv_add(env, item);
}

/* Frees the strings, wiping them first: they may hold credential values. */
void
connector_strv_wipe(struct connector_strv *s)
{
	for (size_t i = 0; i < s->n; i++) {
		explicit_bzero(s->v[i], strlen(s->v[i]));
		free(s->v[i]);
	}
	free(s->v);
	memset(s, 0, sizeof *s);
}

bool
connector_env_name_ok(const char *s)
{
	if (s == NULL || !(isalpha((unsigned char)*s) || *s == '_') || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* An HTTP header name: RFC 9110 token characters. */
bool
connector_header_name_ok(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && strchr("!#$%&'*+-.^_`|~", *s) == NULL)
			return false;
	return true;
}

bool
connector_header_value_ok(const char *s)
{
	for (; *s; s++)
		if (*s == '\r' || *s == '\n')
			return false;
	return true;
}

/*
 * The value of one credential, asked of the service at this moment.  NULL
 * with *why (malloc'd, without the value) when it cannot be had.
 */
static char *
secret_resolve(struct host *host, const char *connector_id, const char *credential_id,
    const char *rejected, struct connector *auth, int *rc, char **why)
{
	cJSON *params = cJSON_CreateObject(), *result = NULL;
	struct agent_error err = { 0 };
	const char *v;
	char *value = NULL;

	cJSON_AddStringToObject(params, "connectorId", connector_id);
	cJSON_AddStringToObject(params, "credentialId", credential_id);
	/* The server refused this version of it: the service renews it (once). */
	if (rejected != NULL)
		cJSON_AddStringToObject(params, "rejected", rejected);
	*rc = host_request(host, "secret.resolve", params, &result, &err);
	if (*rc == AGENT_OK) {
		const cJSON *exp = cJSON_GetObjectItemCaseSensitive(result, "expiresAt");
		const char *version = json_get_string(result, "version");

		v = json_get_string(result, "value");
		if (v == NULL || strlen(v) > CONNECTOR_SECRET_MAX)
			*why = xasprintf("the credential %s has no usable value", credential_id);
		else
			value = xstrdup(v);
		if (auth != NULL) {
			free(auth->auth_version);
			auth->auth_version = version != NULL && strlen(version) < 64 ?
			    xstrdup(version) : NULL;
			auth->auth_expires = cJSON_IsNumber(exp) ? exp->valuedouble : 0;
		}
		if (v != NULL)
			explicit_bzero((char *)v, strlen(v));
	} else if (*rc == AGENT_FAILED) {
		*why = xasprintf("the credential %s could not be resolved: %s", credential_id,
		    err.message ? err.message : "no reason given");
	}
	cJSON_Delete(result);
	agent_error_clear(&err);
	return value;
}

/*
 * Resolves the bindings of kind prefix ("env:" or "header:") into out (env
 * entries or header lines), each value also into secrets.  0, -1 with *why,
 * or AGENT_CANCELLED.
 */
int
connector_bindings_apply(const cJSON *def, const char *id, const char *prefix,
    struct host *host, struct connector_strv *out, struct redact *secrets,
    struct connector *con, char **why)
{
	const cJSON *bindings = cJSON_GetObjectItemCaseSensitive(def, "credentialBindings");
	const cJSON *list = cJSON_IsArray(bindings) ? bindings : NULL;
	const cJSON *b;
	size_t plen = strlen(prefix);

	cJSON_ArrayForEach(b, list) {
		const char *cred = json_get_string(b, "credentialId");
		const char *target = json_get_string(b, "target");
		struct connector *auth;
		char *value;
		int rc;

		if (cred == NULL || target == NULL) {
			*why = xstrdup("a credential binding needs credentialId and target");
			return -1;
		}
		if (strncmp(target, prefix, plen) != 0)
			continue;
		if (plen == 4 ? !connector_env_name_ok(target + plen) :
		    !connector_header_name_ok(target + plen)) {
			*why = xasprintf("the binding target %.140s is not a valid name", target);
			return -1;
		}
		auth = con != NULL && strcasecmp(target, "header:Authorization") == 0 ? con : NULL;
		if (auth != NULL) {
			free(con->auth_cred);
			con->auth_cred = xstrdup(cred);
		}
		value = secret_resolve(host, id, cred, NULL, auth, &rc, why);
		if (rc == AGENT_CANCELLED)
			return AGENT_CANCELLED;
		if (value == NULL)
			return -1;
		redact_add(secrets, value);
		if (plen == 4) {
			connector_env_set(out, target + plen, value);
		} else if (!connector_header_value_ok(value)) {
			*why = xasprintf("the credential %s cannot be sent in a header (it holds a "
			    "line break)", cred);
			explicit_bzero(value, strlen(value));
			free(value);
			return -1;
		} else {
			connector_strv_add(out, xasprintf("%s: %s", target + plen, value));
		}
		explicit_bzero(value, strlen(value));
		free(value);
	}
	return 0;
}
/*
 * Asks the service for the connector's token again (renewed when due, or,
 * refused, renewed unless someone did it already) and sends it from now on.
 * AGENT_OK, AGENT_CANCELLED, or -1 when there is no new one.
 */
int
connector_auth_renew(struct connectors *cs, struct connector *con, struct host *host,
    bool refused)
{
	char *rejected = refused && con->auth_version != NULL ? xstrdup(con->auth_version) : NULL;
	char *why = NULL, *value, *line;
	int rc;

	value = secret_resolve(host, con->id, con->auth_cred, rejected, con, &rc, &why);
	free(rejected);
	if (rc == AGENT_CANCELLED) {
		free(why);
		return AGENT_CANCELLED;
	}
	if (value == NULL || !connector_header_value_ok(value)) {
		redact_str(cs->secrets, why);
		log_info("connector %s: no renewed token: %s", con->id, why != NULL ? why :
		    "it holds a line break");
		free(why);
		if (value != NULL) {
			explicit_bzero(value, strlen(value));
			free(value);
		}
		return -1;
	}
	redact_add(cs->secrets, value);
	line = xasprintf("Authorization: %s", value);
	mcp_set_header(con->mcp, line);
	explicit_bzero(line, strlen(line));
	explicit_bzero(value, strlen(value));
	free(line);
	free(value);
	log_info("connector %s: the token was asked for again%s", con->id,
	    refused ? " (the server refused it)" : " (it is about to expire)");
	return AGENT_OK;
}
