/*
 * Opening a connector's MCP server: a stdio server in the sandbox of the
 * run's commands, with its environment and state directory, or an http
 * server with its headers; the credentials bound to either go in last.
 */
#include <stdlib.h>
#include <string.h>

#include "agent-connectors-int.h"
#include "json.h"
#include "mcp.h"
#include "sandbox.h"
#include "xalloc.h"

#define CONNECTOR_ARGS_MAX 256		/* args, env entries, headers, bindings */

extern char **environ;

/* What a stdio server's state directory is to it: NAME, then the place under it. */
static const char *const state_env[] = { "HOME", "", "XDG_CONFIG_HOME", "/.config",
	"XDG_DATA_HOME", "/.local/share", "XDG_STATE_HOME", "/.local/state",
	"XDG_CACHE_HOME", "/.cache" };

/* The variables a stdio server inherits from the agent (as run_command does); TMPDIR is /tmp. */
static const char *const server_env_keep[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "TZ",
};

static bool
strings_of(const cJSON *arr, struct connector_strv *out)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, arr) {
		if (!cJSON_IsString(v) || out->n >= CONNECTOR_ARGS_MAX)
			return false;
		connector_strv_add(out, xstrdup(v->valuestring));
	}
	return true;
}

struct mcp_client *
connector_open_stdio(const cJSON *def, const char *id, const cJSON *transport,
    const struct agent_config *cfg, struct host *host, struct redact *secrets, int *rc,
    char **why, char **keep[2])
{
	const char *command = json_get_string(transport, "command");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(transport, "args");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(transport, "env");
	struct mcp_limits lim = { .request_timeout_ms = (int)cfg->connector_timeout_ms,
		.secrets = secrets };
	/* The server runs in the sandbox of the run's commands (DESIGN section 13). */
	struct sandbox_policy policy = {
		.profile = agent_sandbox_profile(cfg->profile),
		.workspace = cfg->workspace,
		.network = cfg->network,
		.hidden = (const char *const *)cfg->hidden,
		.allow_unconfined = cfg->allow_unconfined,
		.limits = &cfg->limits,
	};
	const char *state = json_get_string(def, "stateDirectory");
	struct connector_strv argv = { 0 }, envp = { 0 }, rw = { 0 }, ro = { 0 };
	struct mcp_client *c = NULL;
	char err[1024];
	const cJSON *e;

	*rc = AGENT_OK;
	if (command == NULL || *command == '\0' || strlen(command) > 4096 ||
	    (args != NULL && !cJSON_IsArray(args)) || (env != NULL && !cJSON_IsObject(env))) {
		*why = xstrdup("the stdio transport needs a command, args as an array of strings "
		    "and env as an object of strings");
		return NULL;
	}
	connector_strv_add(&argv, NULL);
	argv.n = 0;
	if (!strings_of(args, &argv)) {
		*why = xstrdup("the args of the stdio transport must be at most 256 strings");
		goto out;
	}
	connector_env_set(&envp, "TMPDIR", "/tmp");	/* the sandbox's private /tmp */
	for (size_t i = 0; i < sizeof server_env_keep / sizeof *server_env_keep; i++) {
		const char *v = getenv(server_env_keep[i]);

		if (v != NULL)
			connector_env_set(&envp, server_env_keep[i], v);
	}
	/* Its private state (docs/connectors.md): HOME and the XDG directories. */
	if (state != NULL && state[0] == '/') {
		for (size_t i = 0; i < sizeof state_env / sizeof *state_env; i += 2) {
			char *dir = xasprintf("%s%s", state, state_env[i + 1]);

			connector_env_set(&envp, state_env[i], dir);
			free(dir);
		}
		connector_strv_add(&rw, xstrdup(state));
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(transport, "paths")) {
		const char *path = json_get_string(e, "path");

		if (path != NULL && path[0] == '/')
			connector_strv_add(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e,
			    "write")) ? &rw : &ro, xstrdup(path));
	}
	policy.rw_paths = (const char *const *)rw.v;
	policy.ro_paths = (const char *const *)ro.v;
	cJSON_ArrayForEach(e, env) {
		if (!cJSON_IsString(e) || !connector_env_name_ok(e->string) ||
		    envp.n >= CONNECTOR_ARGS_MAX) {
			*why = xstrdup("the env of the stdio transport must map names to strings");
			goto out;
		}
		if (state != NULL && state[0] == '/' && strncmp(e->valuestring, "${HOME}", 7) == 0) {
			/* ${HOME} at the start names its state directory. */
			char *v = xasprintf("%s%s", state, e->valuestring + 7);

			connector_env_set(&envp, e->string, v);
			free(v);
		} else {
			connector_env_set(&envp, e->string, e->valuestring);
		}
	}
	/* The credentials, now that the server is about to start. */
	if ((*rc = connector_bindings_apply(def, id, "env:", host, &envp, secrets, NULL,
	    why)) != 0) {
		if (*rc != AGENT_CANCELLED)
			*rc = AGENT_OK;
		goto out;
	}
	if (getenv("PATH") == NULL && json_get_string(env, "PATH") == NULL)
		connector_env_set(&envp, "PATH", "/usr/local/bin:/usr/bin:/bin");
	c = mcp_open_stdio_sandboxed(&policy, command, argv.v, envp.v, cfg->workspace, &lim, err,
	    sizeof err);
	if (c == NULL)
		*why = xstrdup(err);
out:
	connector_strv_wipe(&argv);
	connector_strv_wipe(&envp);
	/* The policy's strings live until mcp_close: the connector keeps them. */
	keep[0] = rw.v;
	keep[1] = ro.v;
	return c;
}

struct mcp_client *
connector_open_http(const cJSON *def, const char *id, const cJSON *transport,
    const struct agent_config *cfg, struct host *host, struct redact *secrets, int *rc,
    struct connector *con, char **why)
{
	const char *url = json_get_string(transport, "url");
	const cJSON *headers = cJSON_GetObjectItemCaseSensitive(transport, "headers");
	struct mcp_limits lim = { .request_timeout_ms = (int)cfg->connector_timeout_ms,
		.secrets = secrets };
	struct connector_strv lines = { 0 };
	struct mcp_client *c = NULL;
	char err[1024];
	const cJSON *h;

	*rc = AGENT_OK;
	if (url == NULL || strlen(url) > 4096 || (headers != NULL && !cJSON_IsObject(headers))) {
		*why = xstrdup("the http transport needs a url and headers as an object of strings");
		return NULL;
	}
	cJSON_ArrayForEach(h, headers) {
		if (!cJSON_IsString(h) || !connector_header_name_ok(h->string) ||
		    !connector_header_value_ok(h->valuestring) || lines.n >= CONNECTOR_ARGS_MAX) {
			*why = xstrdup("the headers of the http transport must map names to "
			    "single-line strings");
			goto out;
		}
		connector_strv_add(&lines, xasprintf("%s: %s", h->string, h->valuestring));
	}
	if ((*rc = connector_bindings_apply(def, id, "header:", host, &lines, secrets, con,
	    why)) != 0) {
		if (*rc != AGENT_CANCELLED)
			*rc = AGENT_OK;
		goto out;
	}
	c = mcp_open_http(url, (const char *const *)lines.v, &lim, err, sizeof err);
	if (c == NULL)
		*why = xstrdup(err);
out:
	connector_strv_wipe(&lines);
	return c;
}
