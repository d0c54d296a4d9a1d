#include <ctype.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "agent-connectors.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "redact.h"
#include "sandbox.h"
#include "xalloc.h"

#define CONNECTORS_MAX 32		/* connectors of one run */
#define CONNECTOR_ARGS_MAX 256		/* args, env entries, headers, bindings */
#define CONNECTOR_SECRET_MAX 16384	/* a resolved credential value */
#define CONNECTOR_RENEW_AHEAD 60	/* s before a token's expiry it is asked for again */
#define CONNECTOR_INSTRUCTIONS_MAX 8192	/* the servers' instructions, all of them */
#define CONNECTOR_DESC_MAX 2048		/* a tool description shown to the model */
#define CONNECTOR_SCHEMA_MAX 65536	/* a tool's JSON schema, printed */
#define CONNECTOR_TOOLS_MAX 1000	/* tools of all connectors together */
#define CONNECTOR_FORM_MAX (256 * 1024)	/* a server's form (its params), printed */
#define CONNECTOR_FORM_LOOK_MS 100	/* the turns of waiting for a person and reading the server */
#define CONNECTOR_NOTE_MAX 400		/* a form's or a progress message in a summary line */
#define WEB_ID "con_web"
#define WEB_MAX_BYTES (1024 * 1024)	/* fetch_url reads at most this much */
#define WEB_TIMEOUT_MAX_MS 30000
#define WEB_MAX_REDIRECTS 5

extern char **environ;

/* What a stdio server's state directory is to it: NAME, then the place under it. */
static const char *const state_env[] = { "HOME", "", "XDG_CONFIG_HOME", "/.config",
	"XDG_DATA_HOME", "/.local/share", "XDG_STATE_HOME", "/.local/state",
	"XDG_CACHE_HOME", "/.cache" };

/* The variables a stdio server inherits from the agent (as run_command does); TMPDIR is /tmp. */
static const char *const server_env_keep[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "TZ",
};

char *
connectors_tool_name(const char *connector, const char *tool)
{
	char *full = xasprintf("%s__%s", connector, tool);
	size_t len = strlen(full);
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)full[i];

		h = (h ^ ch) * 16777619u;
		if (!isalnum(ch) && ch != '_' && ch != '-')
			full[i] = '_';
	}
	if (len > CONNECTOR_TOOL_NAME_MAX) {
		/* Cut, and keep names that differ only past the cut apart. */
		snprintf(full + CONNECTOR_TOOL_NAME_MAX - 9, 10, "_%08x", h);
	}
	return full;
}

/* --- environment and credentials ------------------------------------------ */

struct connector_strv {
	char **v;		/* NULL-terminated */
	size_t n;
	size_t cap;
};

static void
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
static void
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
static void
connector_strv_wipe(struct connector_strv *s)
{
	for (size_t i = 0; i < s->n; i++) {
		explicit_bzero(s->v[i], strlen(s->v[i]));
		free(s->v[i]);
	}
	free(s->v);
	memset(s, 0, sizeof *s);
}

static bool
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
static bool
connector_header_name_ok(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && strchr("!#$%&'*+-.^_`|~", *s) == NULL)
			return false;
	return true;
}

static bool
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
static int
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

/* --- starting one connector ------------------------------------------------- */

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

static struct mcp_client *
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

static struct mcp_client *
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

struct connector_progress {
	struct host *host;
	const struct redact *secrets;
	char name[65];
};

/* notifications/progress of a call: a progress line (run.progress). */
static void
connector_progress(void *ud, double progress, double total, const char *message)
{
	const struct connector_progress *p = ud;
	char *said = agent_utf8_prefix(message != NULL ? message : "working", CONNECTOR_NOTE_MAX);
	char line[600];

	/* The name (64 bytes) and the numbers fit: the message is never cut again. */
	if (total > 0)
		snprintf(line, sizeof line, "%s: %s (%g of %g)", p->name, said, progress, total);
	else
		snprintf(line, sizeof line, "%s: %s (%g)", p->name, said, progress);
	free(said);
	redact_str(p->secrets, line);
	host_progress(p->host, "tool", line);
}

static void
add_tool(struct connectors *cs, size_t con, const char *remote, const char *description,
    const cJSON *schema, bool read_only, bool web)
{
	struct connector_tool *t;
	char *name = connectors_tool_name(cs->list[con].name, remote);
	char *printed = json_print(schema);
	size_t plen = strlen(printed);

	free(printed);
	if (connectors_find(cs, name) != NULL || cs->ntools >= CONNECTOR_TOOLS_MAX ||
	    plen > CONNECTOR_SCHEMA_MAX) {
		log_info("connector %s: tool %.100s left out (a duplicate name, too many tools "
		    "or too large a schema)", cs->list[con].id, remote);
		free(name);
		return;
	}
	cs->tools = xrealloc(cs->tools, (cs->ntools + 1) * sizeof *cs->tools);
	t = &cs->tools[cs->ntools++];
	t->name = name;
	t->remote = xstrdup(remote);
	t->description = agent_utf8_prefix(description, CONNECTOR_DESC_MAX);
	t->schema = cJSON_Duplicate(schema, true);
	if (!cJSON_IsObject(t->schema)) {
		cJSON_Delete(t->schema);
		t->schema = cJSON_CreateObject();
	}
	if (cJSON_GetObjectItemCaseSensitive(t->schema, "type") == NULL)
		cJSON_AddStringToObject(t->schema, "type", "object");
	t->read_only = read_only;
	t->web = web;
	t->con = con;
}

static const char web_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"url\":{\"type\":\"string\",\"description\":\"The http:// or https:// URL to fetch\"}},"
    "\"required\":[\"url\"],\"additionalProperties\":false}";

static void
note_unavailable(struct connectors *cs, const char *name, const char *why)
{
	char *line = xasprintf("%s%s: %s\n", cs->unavailable ? cs->unavailable : "", name, why);

	free(cs->unavailable);
	cs->unavailable = line;
}

/*
 * Keeps what a server said about using it (its instructions) for the model's
 * system prompt: a line per server, all of them within CONNECTOR_INSTRUCTIONS_MAX.
 */
static void
note_instructions(struct connectors *cs, const char *name, const char *text)
{
	size_t have = cs->instructions != NULL ? strlen(cs->instructions) : 0;
	char *line;

	if (text == NULL || have + strlen(name) + strlen(text) + 4 > CONNECTOR_INSTRUCTIONS_MAX) {
		if (text != NULL)
			log_info("connector %s: its instructions are left out (over %d bytes in all)",
			    name, CONNECTOR_INSTRUCTIONS_MAX);
		return;
	}
	line = xasprintf("%s%s: %s\n", cs->instructions ? cs->instructions : "", name, text);
	free(cs->instructions);
	cs->instructions = line;
}

/* Starts one connector; AGENT_OK (on success or failure) or AGENT_CANCELLED. */

/*
 * A server's form (elicitation/create) is a question for the user: it becomes
 * a permission prompt of the run (tool "<connector>__elicitation", the form's
 * message as its summary, the message and the requested schema as its input,
 * the fields' defaults included).  Allowed, the form is accepted with the
 * content the service sends (the user's values over the defaults), else
 * its defaults; denied, declined; a cancelled run cancels it.  A form its
 * server gives up on meanwhile is withdrawn (permission.withdraw) and gets
 * no answer.
 */
struct elicit_ctx {
	struct host *host;
	char *name;
};

static void *
connector_elicit_ctx_new(struct host *host, const char *name)
{
	struct elicit_ctx *e = xcalloc(1, sizeof *e);

	e->host = host;
	e->name = xstrdup(name);
	return e;
}

static void
connector_elicit_ctx_free(void *ud)
{
	struct elicit_ctx *e = ud;

	if (e != NULL)
		free(e->name);
	free(e);
}

static cJSON *
connector_elicit(struct mcp_client *c, const cJSON *params, void *ud, char **refused)
{
	struct elicit_ctx *e = ud;
	const char *message = json_get_string(params, "message");
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(params, "requestedSchema");
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties"), *p;
	cJSON *ask, *input, *result = NULL, *answer;
	struct agent_error err = { 0 };
	const char *decision;
	char *text, *said;
	size_t size;
	long id;
	int rc;

	/* A form too large for a person (or for the line to the service) is refused. */
	text = json_print(params);
	size = strlen(text);
	free(text);
	if (size > CONNECTOR_FORM_MAX) {
		log_info("connector %s: a form of %zu bytes was refused", e->name, size);
		*refused = xasprintf("Refused: the form is %zu bytes, over taskdeck's bound of %d "
		    "bytes for a form", size, CONNECTOR_FORM_MAX);
		return NULL;
	}
	ask = cJSON_CreateObject();
	answer = cJSON_CreateObject();
	text = xasprintf("%.64s__elicitation", e->name);
	cJSON_AddStringToObject(ask, "tool", text);
	free(text);
	/* What makes it a form for the service: this message, not the tool's name. */
	cJSON_AddBoolToObject(ask, "form", true);
	said = agent_utf8_prefix(message != NULL ? message : "(no message)", CONNECTOR_NOTE_MAX);
	text = xasprintf("%s asks: %s", e->name, said);
	free(said);
	cJSON_AddStringToObject(ask, "summary", text);
	free(text);
	input = cJSON_AddObjectToObject(ask, "input");
	cJSON_AddStringToObject(input, "message", message != NULL ? message : "");
	cJSON_AddItemToObject(input, "requestedSchema", cJSON_IsObject(schema) ?
	    cJSON_Duplicate(schema, true) : cJSON_CreateObject());
	/* The server is read while the person is asked: it may give up on its form. */
	id = host_request_send(e->host, "permission.ask", ask, &err);
	rc = id == 0 ? AGENT_FAILED : HOST_PENDING;
	while (rc == HOST_PENDING) {
		rc = host_request_wait(e->host, id, CONNECTOR_FORM_LOOK_MS, &result, &err);
		if (rc == HOST_PENDING && mcp_elicit_withdrawn(c, CONNECTOR_FORM_LOOK_MS)) {
			cJSON *withdraw = cJSON_CreateObject(), *ignored = NULL;

			log_info("connector %s: the server withdrew its form", e->name);
			cJSON_AddNumberToObject(withdraw, "requestId", (double)id);
			agent_error_clear(&err);
			if (host_request(e->host, "permission.withdraw", withdraw, &ignored,
			    &err) != AGENT_OK)
				log_info("connector %s: the form's prompt was not withdrawn: %s",
				    e->name, err.message ? err.message : "cancelled");
			cJSON_Delete(ignored);
			agent_error_clear(&err);
			cJSON_Delete(answer);
			return NULL;
		}
	}
	decision = rc == AGENT_OK ? json_get_string(result, "decision") : NULL;
	if (decision != NULL && strcmp(decision, "allow") == 0 &&
	    cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(result, "content"))) {
		/* The user's values over the defaults, checked by the service. */
		cJSON_AddStringToObject(answer, "action", "accept");
		cJSON_AddItemToObject(answer, "content",
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(result, "content"), true));
	} else if (decision != NULL && strcmp(decision, "allow") == 0) {
		cJSON *content = cJSON_CreateObject();

		cJSON_AddStringToObject(answer, "action", "accept");
		cJSON_ArrayForEach(p, props) {
			const cJSON *def = cJSON_GetObjectItemCaseSensitive(p, "default");

			if (def != NULL && p->string != NULL)
				cJSON_AddItemToObject(content, p->string, cJSON_Duplicate(def, true));
		}
		cJSON_AddItemToObject(answer, "content", content);
	} else {
		cJSON_AddStringToObject(answer, "action", rc == AGENT_CANCELLED ? "cancel" :
		    "decline");
	}
	log_info("connector %s: a form was %s", e->name, json_get_string(answer, "action"));
	cJSON_Delete(result);
	agent_error_clear(&err);
	return answer;
}

static int
connector_start(struct connectors *cs, const cJSON *def, const struct agent_config *cfg,
    struct host *host)
{
	const char *id = json_get_string(def, "id");
	const char *name = json_get_string(def, "name");
	const char *kind = json_get_string(def, "kind");
	const cJSON *transport = cJSON_GetObjectItemCaseSensitive(def, "transport");
	const char *type = json_get_string(transport, "type");
	const cJSON *p;
	struct connector *con;
	struct mcp_tool *tools = NULL;
	size_t ntools = 0, at;
	char *why = NULL, err[1024], *call_id, *summary;
	int rc = AGENT_OK;

	if (id == NULL || name == NULL || strlen(id) > 64 || *name == '\0' ||
	    strlen(name) > 64) {
		why = xstrdup("the connector needs an id and a name of 1 to 64 bytes");
		goto failed;
	}
	cs->list = xrealloc(cs->list, (cs->n + 1) * sizeof *cs->list);
	at = cs->n++;
	con = &cs->list[at];
	con->id = xstrdup(id);
	con->name = xstrdup(name);
	con->mcp = NULL;
	con->paths[0] = con->paths[1] = NULL;
	con->progress = NULL;
	con->auth_cred = con->auth_version = NULL;
	con->auth_expires = 0;

	if (kind != NULL && strcmp(kind, "builtin") == 0) {
		if (strcmp(id, WEB_ID) != 0) {
			why = xasprintf("%s is not a built-in connector of this agent", id);
			goto failed;
		}
		cJSON *schema = cJSON_Parse(web_schema);

		add_tool(cs, at, "fetch_url", "Fetch a web page or file over http or https and "
		    "return its status, type and text (at most 1 MiB is read).", schema, true, true);
		cJSON_Delete(schema);
		log_info("connector %s (built-in web) ready", id);
		return AGENT_OK;
	}
	if (type != NULL && strcmp(type, "stdio") == 0)
		con->mcp = connector_open_stdio(def, id, transport, cfg, host, cs->secrets, &rc,
		    &why, con->paths);
	else if (type != NULL && strcmp(type, "http") == 0)
		con->mcp = connector_open_http(def, id, transport, cfg, host, cs->secrets, &rc, con,
		    &why);
	else
		why = xstrdup("the transport type must be stdio or http");
	if (rc == AGENT_CANCELLED) {
		free(why);
		return rc;
	}
	if (con->mcp == NULL)
		goto failed;
	mcp_set_cancel_fd(con->mcp, host_cancel_fd(host));
	mcp_set_root(con->mcp, cfg->workspace);
	/*
	 * The directories the connector's settings give its server (transport
	 * paths) stay its roots too: a server that takes roots as its allowed
	 * directories (server-filesystem) keeps the ones it was configured with.
	 */
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(transport, "paths"))
		if (json_get_string(p, "path") != NULL)
			mcp_add_root(con->mcp, json_get_string(p, "path"), "configured");
	mcp_set_elicitation(con->mcp, connector_elicit, connector_elicit_ctx_new(host, name),
	    connector_elicit_ctx_free);
	con->progress = xcalloc(1, sizeof *con->progress);
	con->progress->host = host;
	con->progress->secrets = cs->secrets;
	snprintf(con->progress->name, sizeof con->progress->name, "%s", name);
	mcp_set_progress(con->mcp, connector_progress, con->progress);
	if (mcp_handshake(con->mcp, err, sizeof err) != 0 ||
	    mcp_list_tools(con->mcp, &tools, &ntools, err, sizeof err) != 0) {
		if (host_cancelled(host))
			return AGENT_CANCELLED;
		why = xstrdup(err);
		mcp_close(con->mcp);
		con->mcp = NULL;
		goto failed;
	}
	for (size_t i = 0; i < ntools; i++)
		add_tool(cs, at, tools[i].name, tools[i].description, tools[i].input_schema,
		    tools[i].read_only_hint, false);
	log_info("connector %s: %s over %s, %zu tools", id,
	    mcp_protocol_version(con->mcp), type, ntools);
	note_instructions(cs, name, mcp_server_instructions(con->mcp));
	mcp_tools_free(tools, ntools);
	return AGENT_OK;

failed:
	/* What the server said is masked already; what was made of it is masked again. */
	redact_str(cs->secrets, why);
	call_id = xasprintf("connector-%s", id ? id : "?");
	summary = xasprintf("connector %s did not start: %s", name ? name : "?", why);
	host_tool(host, call_id, name ? name : "connector", "failed", summary);
	log_info("%s", summary);
	note_unavailable(cs, name ? name : "?", why);
	free(call_id);
	free(summary);
	free(why);
	return AGENT_OK;
}

int
connectors_open(struct connectors *cs, const struct agent_config *cfg, struct host *host)
{
	const cJSON *def;
	size_t n = 0;

	memset(cs, 0, sizeof *cs);
	cs->secrets = redact_new();
	cJSON_ArrayForEach(def, cfg->connectors) {
		if (n++ >= CONNECTORS_MAX) {
			log_info("more than %d connectors: the rest are left out", CONNECTORS_MAX);
			break;
		}
		if (host_cancelled(host) || connector_start(cs, def, cfg, host) == AGENT_CANCELLED)
			return AGENT_CANCELLED;
	}
	return AGENT_OK;
}

void
connectors_close(struct connectors *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		mcp_close(cs->list[i].mcp);
		free(cs->list[i].progress);
		for (int k = 0; k < 2; k++) {
			for (char **p = cs->list[i].paths[k]; p != NULL && *p != NULL; p++)
				free(*p);
			free(cs->list[i].paths[k]);
		}
		free(cs->list[i].id);
		free(cs->list[i].name);
		free(cs->list[i].auth_cred);
		free(cs->list[i].auth_version);
	}
	for (size_t i = 0; i < cs->ntools; i++) {
		free(cs->tools[i].name);
		free(cs->tools[i].remote);
		free(cs->tools[i].description);
		cJSON_Delete(cs->tools[i].schema);
	}
	free(cs->list);
	free(cs->tools);
	free(cs->unavailable);
	free(cs->instructions);
	redact_free(cs->secrets);
	memset(cs, 0, sizeof *cs);
}

void
connectors_definitions(const struct connectors *cs, cJSON *arr)
{
	for (size_t i = 0; i < cs->ntools; i++) {
		const struct connector_tool *t = &cs->tools[i];
		cJSON *d = cJSON_CreateObject();
		char *desc = xasprintf("%s (connector %s)", t->description[0] ? t->description :
		    t->remote, cs->list[t->con].name);

		cJSON_AddStringToObject(d, "name", t->name);
		cJSON_AddStringToObject(d, "description", desc);
		cJSON_AddItemToObject(d, "parameters", cJSON_Duplicate(t->schema, true));
		cJSON_AddItemToArray(arr, d);
		free(desc);
	}
}

const struct connector_tool *
connectors_find(const struct connectors *cs, const char *name)
{
	for (size_t i = 0; name != NULL && i < cs->ntools; i++)
		if (strcmp(cs->tools[i].name, name) == 0)
			return &cs->tools[i];
	return NULL;
}

void
connectors_describe(const struct connectors *cs, const struct connector_tool *t,
    const cJSON *args, char *out, size_t len)
{
	const char *url = json_get_string(args, "url");

	if (t->web)
		snprintf(out, len, "fetch %.300s", url ? url : "(no url)");
	else
		snprintf(out, len, "%.100s on connector %.64s", t->remote, cs->list[t->con].name);
}

/* --- what servers say meanwhile ---------------------------------------------- */

bool
connectors_refresh(struct connectors *cs)
{
	bool any = false;

	for (size_t c = 0; c < cs->n; c++) {
		struct mcp_tool *tools = NULL;
		size_t ntools = 0, k = 0;
		char err[1024];

		if (cs->list[c].mcp == NULL || !mcp_tools_changed(cs->list[c].mcp))
			continue;
		if (mcp_list_tools(cs->list[c].mcp, &tools, &ntools, err, sizeof err) != 0) {
			log_warn("connector %s: its tools changed but could not be listed again: %s",
			    cs->list[c].id, err);
			continue;
		}
		/* Its old tools out, the new ones in. */
		for (size_t i = 0; i < cs->ntools; i++) {
			struct connector_tool *t = &cs->tools[i];

			if (t->con != c) {
				cs->tools[k++] = *t;
				continue;
			}
			free(t->name);
			free(t->remote);
			free(t->description);
			cJSON_Delete(t->schema);
		}
		cs->ntools = k;
		for (size_t i = 0; i < ntools; i++)
			add_tool(cs, c, tools[i].name, tools[i].description, tools[i].input_schema,
			    tools[i].read_only_hint, false);
		log_info("connector %s: its tools changed, %zu now", cs->list[c].id, ntools);
		mcp_tools_free(tools, ntools);
		any = true;
	}
	return any;
}

/* --- calls ------------------------------------------------------------------- */

/* Bounds of the images and audio of one result that reach the model. */
#define MEDIA_MAX_ITEMS 8
#define MEDIA_MAX_ITEM (5u * 1024 * 1024)	/* base64 bytes of one (Anthropic's limit) */
#define MEDIA_MAX_TOTAL (10u * 1024 * 1024)	/* base64 bytes of all */

/* Bytes that base64 text of len bytes decodes to. */
static size_t
b64_size(const char *data)
{
	size_t len = data != NULL ? strlen(data) : 0, pad = 0;

	while (pad < 2 && len > pad && data[len - 1 - pad] == '=')
		pad++;
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0) - (len % 4 ? 0 : pad);
}

/* true when some text item of the result is the JSON of structured. */
static bool
structured_in_text(const cJSON *items, const cJSON *structured)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, items) {
		const char *text = json_get_string(item, "text");
		cJSON *j;
		bool same;

		if (text == NULL || (j = cJSON_Parse(text)) == NULL)
			continue;
		same = cJSON_Compare(j, structured, true);
		cJSON_Delete(j);
		if (same)
			return true;
	}
	return false;
}

/*
 * The CallToolResult for the model: its text, embedded resources (text inline,
 * blobs described), resource links and structuredContent (as JSON) in res->content;
 * its images and audio in res->media too (bounded), which providers that take them
 * send as such (docs/connectors.md, "Results").
 */
static void
result_text(const cJSON *result, struct tool_result *res)
{
	struct buf *out = &res->content;
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
	const cJSON *structured = cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
	const cJSON *items = cJSON_IsArray(content) ? content : NULL;
	const cJSON *item;
	size_t media_total = 0;
	bool any = false;

	cJSON_ArrayForEach(item, items) {
		const char *type = json_get_string(item, "type");
		const char *text = json_get_string(item, "text");
		const char *mime = json_get_string(item, "mimeType");
		const char *data = json_get_string(item, "data");

		if (any)
			buf_appends(out, "\n");
		any = true;
		if (type != NULL && strcmp(type, "text") == 0 && text != NULL) {
			agent_utf8_append(out, text, strlen(text));
		} else if (type != NULL && strcmp(type, "resource") == 0) {
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(item, "resource");
			const char *uri = json_get_string(r, "uri");
			const char *rtext = json_get_string(r, "text");
			const char *rmime = json_get_string(r, "mimeType");
			const char *blob = json_get_string(r, "blob");

			buf_printf(out, "[resource %.500s%s%.100s", uri ? uri : "",
			    rmime ? ", " : "", rmime ? rmime : "");
			if (rtext != NULL) {
				buf_appends(out, "]\n");
				agent_utf8_append(out, rtext, strlen(rtext));
			} else {
				buf_printf(out, ", %zu bytes of binary data, not shown]",
				    b64_size(blob));
			}
		} else if (type != NULL && strcmp(type, "resource_link") == 0) {
			const char *uri = json_get_string(item, "uri");
			const char *name = json_get_string(item, "name");
			const char *desc = json_get_string(item, "description");

			buf_printf(out, "[resource link %.500s%s%.200s%s%s%.100s", uri ? uri : "",
			    name ? " \"" : "", name ? name : "", name ? "\"" : "", mime ? ", " : "",
			    mime ? mime : "");
			if (desc != NULL) {
				buf_appends(out, ": ");
				agent_utf8_append(out, desc, strlen(desc) > 500 ? 500 : strlen(desc));
			}
			buf_appends(out, "]");
		} else if (type != NULL && (strcmp(type, "image") == 0 ||
		    strcmp(type, "audio") == 0) && mime != NULL && data != NULL) {
			size_t len = strlen(data);
			bool attach = len <= MEDIA_MAX_ITEM && media_total + len <= MEDIA_MAX_TOTAL &&
			    cJSON_GetArraySize(res->media) < MEDIA_MAX_ITEMS;

			buf_printf(out, "[%s %.100s, %zu bytes%s]", type, mime, b64_size(data),
			    attach ? "" : ", too large to show");
			if (attach) {
				cJSON *m = cJSON_CreateObject();

				if (res->media == NULL)
					res->media = cJSON_CreateArray();
				cJSON_AddStringToObject(m, "mimeType", mime);
				cJSON_AddStringToObject(m, "data", data);
				cJSON_AddItemToArray(res->media, m);
				media_total += len;
			}
		} else {
			buf_printf(out, "[%.32s content%s%.100s, %zu bytes, not shown]",
			    type ? type : "unknown", mime ? " " : "", mime ? mime : "",
			    b64_size(data));
		}
	}
	if (structured != NULL && !structured_in_text(items, structured)) {
		char *j = cJSON_PrintUnformatted(structured);

		if (any)
			buf_appends(out, "\n");
		buf_appends(out, j != NULL ? j : "null");
		free(j);
		any = true;
	}
	if (!any)
		buf_appends(out, "(the tool returned no content)");
}

/* Cuts res->content at max bytes, at a character boundary. */
static void
cap_output(struct tool_result *res, size_t max)
{
	static const char note[] = "\n[output truncated]";

	if (res->content.len <= max)
		return;
	res->content.len = agent_utf8_cut(res->content.data, max - sizeof note);
	res->content.data[res->content.len] = '\0';
	buf_appends(&res->content, note);
}

struct web_fetch {
	struct buf body;
	bool truncated;
	int cancel_fd;
};

static size_t
web_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct web_fetch *w = ud;
	size_t len = size * n, room = WEB_MAX_BYTES - w->body.len;

	if (len > room) {
		buf_append(&w->body, data, room);
		w->truncated = true;
		return 0;	/* stops the transfer */
	}
	buf_append(&w->body, data, len);
	return len;
}

static int
web_on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct web_fetch *w = ud;
	struct pollfd p = { .fd = w->cancel_fd, .events = POLLIN };

	(void)dt, (void)dn, (void)ut, (void)un;
	return poll(&p, 1, 0) > 0 ? 1 : 0;
}

static int
web_fetch_url(const cJSON *args, const struct agent_config *cfg, struct host *host,
    struct tool_result *res)
{
	const char *url = json_get_string(args, "url");
	struct web_fetch w = { .cancel_fd = host_cancel_fd(host) };
	long timeout = cfg->connector_timeout_ms < WEB_TIMEOUT_MAX_MS ?
	    cfg->connector_timeout_ms : WEB_TIMEOUT_MAX_MS;
	char errbuf[CURL_ERROR_SIZE] = "", *ua;
	const char *type = NULL;
	long status = 0;
	CURLcode cc;
	CURL *curl;

	if (url == NULL || strlen(url) > 8192 || (strncasecmp(url, "http://", 7) != 0 &&
	    strncasecmp(url, "https://", 8) != 0)) {
		tool_result_fail(res, "fetch_url needs a url that starts with http:// or https://");
		return AGENT_OK;
	}
	curl = curl_easy_init();
	if (curl == NULL) {
		tool_result_fail(res, "fetch_url cannot set up an HTTP client");
		return AGENT_OK;
	}
	buf_init(&w.body, WEB_MAX_BYTES);
	ua = xasprintf("taskdeck-agent/%s", TD_VERSION);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(curl, CURLOPT_MAXREDIRS, (long)WEB_MAX_REDIRECTS);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, ua);
	curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, web_on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, web_on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &w);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);

	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		buf_free(&w.body);
		curl_easy_cleanup(curl);
		free(ua);
		return AGENT_CANCELLED;
	}
	if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && w.truncated)) {
		if (cc == CURLE_OPERATION_TIMEDOUT)
			tool_result_fail(res, "fetch_url: no answer within %ld s", timeout / 1000);
		else
			tool_result_fail(res, "fetch_url: %s", errbuf[0] ? errbuf :
			    curl_easy_strerror(cc));
	} else {
		bool binary = w.body.len > 0 && memchr(w.body.data, '\0', w.body.len) != NULL;

		buf_printf(&res->content, "HTTP %ld, %s, %zu bytes%s\n\n", status,
		    type ? type : "no content type", w.body.len,
		    w.truncated ? " (cut at 1 MiB)" : "");
		if (binary)
			buf_appends(&res->content, "(binary content, not shown)");
		else if (w.body.len > 0)
			agent_utf8_append(&res->content, w.body.data, w.body.len);
		res->failed = status >= 400;
		tool_result_summary(res, "HTTP %ld, %zu bytes", status, w.body.len);
		cap_output(res, cfg->max_tool_output);
	}
	buf_free(&w.body);
	curl_easy_cleanup(curl);
	free(ua);
	return AGENT_OK;
}

/*
 * Asks the service for the connector's token again (renewed when due, or,
 * refused, renewed unless someone did it already) and sends it from now on.
 * AGENT_OK, AGENT_CANCELLED, or -1 when there is no new one.
 */
static int
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

int
connectors_call(struct connectors *cs, const struct connector_tool *t, const cJSON *args,
    const struct agent_config *cfg, struct host *host, struct tool_result *res)
{
	struct connector *con = &cs->list[t->con];
	cJSON *result = NULL;
	char err[1024], *first;
	int rc;

	if (t->web)
		return web_fetch_url(args, cfg, host, res);
	if (con->mcp == NULL) {
		tool_result_fail(res, "the connector %s is not running", con->name);
		return AGENT_OK;
	}
	/* A token about to expire is renewed first; one the server refused, once. */
	if (con->auth_cred != NULL && con->auth_expires > 0 &&
	    (double)time(NULL) + CONNECTOR_RENEW_AHEAD >= con->auth_expires &&
	    connector_auth_renew(cs, con, host, false) == AGENT_CANCELLED)
		return AGENT_CANCELLED;
	rc = mcp_call_tool(con->mcp, t->remote, args, &result, err, sizeof err);
	if (rc != 0 && con->auth_cred != NULL && mcp_http_status(con->mcp) == 401 &&
	    !host_cancelled(host)) {
		int r = connector_auth_renew(cs, con, host, true);

		if (r == AGENT_CANCELLED)
			return AGENT_CANCELLED;
		if (r == AGENT_OK)
			rc = mcp_call_tool(con->mcp, t->remote, args, &result, err, sizeof err);
	}
	if (rc != 0) {
		if (host_cancelled(host))
			return AGENT_CANCELLED;
		tool_result_fail(res, "%s (connector %s): %s", t->remote, con->name, err);
		redact_text(cs->secrets, res->content.data, res->content.len, 0);
		redact_str(cs->secrets, res->summary);
		return AGENT_OK;
	}
	result_text(result, res);
	/* Strings are masked already; a number or a printed structure is not. */
	redact_text(cs->secrets, res->content.data, res->content.len, 0);
	res->failed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));
	/* The first line of the answer, for people following the run. */
	first = xstrndup(res->content.data, strcspn(res->content.data, "\n"));
	tool_result_summary(res, "%s on %s%s: %.120s", t->remote, con->name,
	    res->failed ? " (error)" : "", first);
	free(first);
	cap_output(res, cfg->max_tool_output);
	cJSON_Delete(result);
	return AGENT_OK;
}
