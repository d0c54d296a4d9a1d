/*
 * How to reach one connector's server, its credentials resolved: what a
 * connector test and a sign-in open (connector-launch.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "connector-launch.h"
#include "connector-rows.h"
#include "connectors.h"
#include "credentials.h"
#include "json.h"
#include "sandbox.h"
#include "secrets.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "xalloc.h"

/* What a stdio server's state directory is to it: NAME, then the place under it. */
static const char *const state_env[] = { "HOME", "", "XDG_CONFIG_HOME", "/.config",
	"XDG_DATA_HOME", "/.local/share", "XDG_STATE_HOME", "/.local/state",
	"XDG_CACHE_HOME", "/.cache" };

/* The environment a tested stdio server starts with, before its own env. */
static const char *const base_env[] = { "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR",
	NULL };

static char **
connector_launch_strv_new(size_t n)
{
	return xcalloc(n + 1, sizeof(char *));
}

/* Wipes and frees a NULL-terminated vector. */
static void
connector_launch_strv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **e = v; *e; e++) {
		sodium_memzero(*e, strlen(*e));
		free(*e);
	}
	free(v);
}

/* An http transport t: the URL and the plain headers; the count of headers set. */
static size_t
connector_launch_http(struct connector_launch *l, const cJSON *t, size_t nb)
{
	const cJSON *headers = cJSON_GetObjectItemCaseSensitive(t, "headers"), *e;
	size_t n = 0;

	l->http = true;
	l->url = xstrdup(json_get_string(t, "url"));
	l->headers = connector_launch_strv_new((size_t)cJSON_GetArraySize(headers) + nb);
	cJSON_ArrayForEach(e, headers)
		l->headers[n++] = xasprintf("%s: %s", e->string, e->valuestring);
	return n;
}

/* A stdio server's sandbox: taskdeck's hidden directories, its state directory, its paths. */
static void
connector_launch_sandbox(struct service *svc, const char *id, struct connector_launch *l,
    const cJSON *t)
{
	const cJSON *paths = cJSON_GetObjectItemCaseSensitive(t, "paths"), *pe;
	size_t nrw = 0, nro = 0;

	l->hidden = sandbox_hidden_paths(&svc->paths, NULL);
	l->state_dir = connector_state_dir(svc, id, true);
	l->rw_paths = connector_launch_strv_new((size_t)cJSON_GetArraySize(paths) + 1);
	l->ro_paths = connector_launch_strv_new((size_t)cJSON_GetArraySize(paths));
	if (l->state_dir != NULL)
		l->rw_paths[nrw++] = xstrdup(l->state_dir);
	cJSON_ArrayForEach(pe, paths) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pe, "write")))
			l->rw_paths[nrw++] = xstrdup(json_get_string(pe, "path"));
		else
			l->ro_paths[nro++] = xstrdup(json_get_string(pe, "path"));
	}
	l->network = settings_network(svc->settings);
	l->allow_unconfined = settings_allow_unconfined(svc->settings);
	l->limits = *settings_command_limits(svc->settings);
}

/* A stdio transport t: the command, its arguments and environment; the count of variables set. */
static size_t
connector_launch_stdio(struct service *svc, const char *id, struct connector_launch *l,
    const cJSON *t, size_t nb)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(t, "args");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(t, "env"), *e;
	size_t n = 0, na = 0;

	connector_launch_sandbox(svc, id, l, t);
	l->command = xstrdup(json_get_string(t, "command"));
	l->args = connector_launch_strv_new((size_t)cJSON_GetArraySize(args));
	cJSON_ArrayForEach(e, args)
		l->args[na++] = xstrdup(e->valuestring);
	l->envp = connector_launch_strv_new(sizeof base_env / sizeof base_env[0] +
	    sizeof state_env / sizeof state_env[0] + (size_t)cJSON_GetArraySize(env) + nb);
	for (const char *const *k = base_env; *k; k++) {
		const char *v = getenv(*k);
		if (strcmp(*k, "HOME") == 0 && l->state_dir != NULL)
			continue;
		if (v != NULL && cJSON_GetObjectItemCaseSensitive(env, *k) == NULL)
			l->envp[n++] = xasprintf("%s=%s", *k, v);
	}
	/* HOME and the XDG directories in its state directory, as in a run. */
	for (size_t k = 0; l->state_dir != NULL &&
	    k < sizeof state_env / sizeof state_env[0]; k += 2)
		if (cJSON_GetObjectItemCaseSensitive(env, state_env[k]) == NULL)
			l->envp[n++] = xasprintf("%s=%s%s", state_env[k], l->state_dir,
			    state_env[k + 1]);
	cJSON_ArrayForEach(e, env) {
		bool home = l->state_dir != NULL &&
		    strncmp(e->valuestring, "${HOME}", 7) == 0;

		/* ${HOME} at the start names its state directory, as in a run. */
		l->envp[n++] = xasprintf("%s=%s%s", e->string, home ? l->state_dir : "",
		    e->valuestring + (home ? 7 : 0));
	}
	return n;
}

/* The bindings' values, set after the n headers or variables.  Store locked. */
static enum td_code
connector_launch_bind(struct service *svc, struct connector_launch *l, const cJSON *bindings,
    size_t n, struct problem *p)
{
	const cJSON *e;
	size_t ns = 0;

	cJSON_ArrayForEach(e, bindings) {
		const char *target = json_get_string(e, "target");
		char *value = NULL, *why = NULL;

		if (!credential_value(svc, json_get_string(e, "credentialId"), target, &value,
		    &why)) {
			problem_set(p, TD_INTERNAL_ERROR, NULL, "%s", why);
			free(why);
			return TD_INTERNAL_ERROR;
		}
		l->secrets[ns++] = xstrdup(value);
		if (l->http)
			l->headers[n++] = xasprintf("%s: %s", target + 7, value);
		else
			l->envp[n++] = xasprintf("%s=%s", target + 4, value);
		secrets_plain_free(value);
	}
	return TD_OK;
}

enum td_code
connector_launch_prepare(struct service *svc, const char *id, struct connector_launch *l,
    struct problem *p)
{
	struct store *st = svc->store;
	const cJSON *t, *bindings;
	enum td_code rc = TD_OK;
	size_t n = 0, nb;
	cJSON *c;

	memset(l, 0, sizeof *l);
	store_lock(st);
	c = connector_load_locked(st, id);
	if (c == NULL) {
		store_unlock(st);
		return problem_set(p, TD_NOT_FOUND, "connector", "No connector with that id.");
	}
	snprintf(l->name, sizeof l->name, "%s", json_get_string(c, "name"));
	t = cJSON_GetObjectItemCaseSensitive(c, "transport");
	bindings = cJSON_GetObjectItemCaseSensitive(c, "credentialBindings");
	nb = (size_t)cJSON_GetArraySize(bindings);
	l->secrets = connector_launch_strv_new(nb);
	if (strcmp(json_get_string(c, "kind"), "builtin") == 0)
		l->builtin = true;
	else if (strcmp(json_get_string(t, "type"), "http") == 0)
		n = connector_launch_http(l, t, nb);
	else
		n = connector_launch_stdio(svc, id, l, t, nb);
	if (!l->builtin)
		rc = connector_launch_bind(svc, l, bindings, n, p);
	store_unlock(st);
	cJSON_Delete(c);
	if (rc != TD_OK)
		connector_launch_free(l);
	return rc;
}

void
connector_launch_free(struct connector_launch *l)
{
	free(l->command);
	connector_launch_strv_free(l->args);
	connector_launch_strv_free(l->envp);
	free(l->url);
	connector_launch_strv_free(l->headers);
	connector_launch_strv_free(l->secrets);
	sandbox_hidden_free(l->hidden);
	free(l->state_dir);
	connector_launch_strv_free(l->rw_paths);
	connector_launch_strv_free(l->ro_paths);
	memset(l, 0, sizeof *l);
}
