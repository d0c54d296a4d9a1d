/*
 * The connectors of a run: each started and its tools offered to the model,
 * listed again when they change; the parts are in agent-connector-*.c
 * (agent-connectors-int.h).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-connectors.h"
#include "agent-connectors-int.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "redact.h"
#include "xalloc.h"

#define CONNECTORS_MAX 32		/* connectors of one run */
#define CONNECTOR_INSTRUCTIONS_MAX 8192	/* the servers' instructions, all of them */
#define CONNECTOR_DESC_MAX 2048		/* a tool description shown to the model */
#define CONNECTOR_SCHEMA_MAX 65536	/* a tool's JSON schema, printed */
#define CONNECTOR_TOOLS_MAX 1000	/* tools of all connectors together */
#define WEB_ID "con_web"

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

/* The built-in connector id (fetch_url) at cs->list[at]; false with *why when unknown. */
static bool
connector_start_builtin(struct connectors *cs, size_t at, const char *id, char **why)
{
	cJSON *schema;

	if (strcmp(id, WEB_ID) != 0) {
		*why = xasprintf("%s is not a built-in connector of this agent", id);
		return false;
	}
	schema = cJSON_Parse(web_schema);
	add_tool(cs, at, "fetch_url", "Fetch a web page or file over http or https and "
	    "return its status, type and text (at most 1 MiB is read).", schema, true, true);
	cJSON_Delete(schema);
	log_info("connector %s (built-in web) ready", id);
	return true;
}

/*
 * What an opened server is told before its handshake: the run's cancel, its
 * roots, and who answers its forms and tells of its calls' progress.
 */
static void
connector_attach(struct connectors *cs, struct connector *con, const struct agent_config *cfg,
    struct host *host, const cJSON *transport)
{
	const cJSON *p;

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
	mcp_set_elicitation(con->mcp, connector_elicit, connector_elicit_ctx_new(host, con->name),
	    connector_elicit_ctx_free);
	con->progress = xcalloc(1, sizeof *con->progress);
	con->progress->host = host;
	con->progress->secrets = cs->secrets;
	snprintf(con->progress->name, sizeof con->progress->name, "%s", con->name);
	mcp_set_progress(con->mcp, connector_progress, con->progress);
}

/* A connector that did not start: a failed tool line, the log, and a note for the model. */
static void
connector_failed(struct connectors *cs, struct host *host, const char *id, const char *name,
    char *why)
{
	char *call_id, *summary;

	/* What the server said is masked already; what was made of it is masked again. */
	redact_str(cs->secrets, why);
	call_id = xasprintf("connector-%s", id ? id : "?");
	summary = xasprintf("connector %s did not start: %s", name ? name : "?", why);
	host_tool(host, call_id, name ? name : "connector", "failed", summary);
	log_info("%s", summary);
	note_unavailable(cs, name ? name : "?", why);
	free(call_id);
	free(summary);
}

/* Starts one connector; AGENT_OK (on success or failure) or AGENT_CANCELLED. */
static int
connector_start(struct connectors *cs, const cJSON *def, const struct agent_config *cfg,
    struct host *host)
{
	const char *id = json_get_string(def, "id");
	const char *name = json_get_string(def, "name");
	const char *kind = json_get_string(def, "kind");
	const cJSON *transport = cJSON_GetObjectItemCaseSensitive(def, "transport");
	const char *type = json_get_string(transport, "type");
	struct connector *con;
	struct mcp_tool *tools = NULL;
	size_t ntools = 0, at;
	char *why = NULL, err[1024];
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
		if (connector_start_builtin(cs, at, id, &why))
			return AGENT_OK;
		goto failed;
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
	connector_attach(cs, con, cfg, host, transport);
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
	connector_failed(cs, host, id, name, why);
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
