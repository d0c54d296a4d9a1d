/* taskdeck connectors list|show|add|update|enable|disable|remove|test|login */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "termtext.h"
#include "xalloc.h"

static int cmd_connectors_list_exec(struct cli *, int, char **);
static int cmd_connectors_show_exec(struct cli *, int, char **);
static int cmd_connectors_add_exec(struct cli *, int, char **);
static int cmd_connectors_update_exec(struct cli *, int, char **);
static int cmd_connectors_enable_exec(struct cli *, int, char **);
static int cmd_connectors_disable_exec(struct cli *, int, char **);
static int cmd_connectors_remove_exec(struct cli *, int, char **);
static int cmd_connectors_test_exec(struct cli *, int, char **);
static int cmd_connectors_login_exec(struct cli *, int, char **);

/* The definition options of add and update. */
#define DEFINITION_OPTIONS \
	{ "command", true }, { "arg", true }, { "env", true }, { "url", true }, \
	{ "header", true }, { "transport", true }, { "bind", true }

static const struct cli_option add_options[] = {
	DEFINITION_OPTIONS,
	{ "enable", false },
	{ NULL, false }
};

static const struct cli_option update_options[] = {
	DEFINITION_OPTIONS,
	{ "name", true },
	{ "clear-bindings", false },
	{ NULL, false }
};

#define DEFINITION_USAGE \
	"(--command CMD [--arg ARG]... [--env NAME=VALUE]... |\n" \
	"        --url URL [--header 'Name: value']... | --transport JSON)\n" \
	"        [--bind CREDENTIAL_ID=env:NAME|header:NAME]..."

const struct cli_cmd cmd_connectors_list_entry = {
	"connectors", "list", "[--limit N] [--cursor CURSOR]",
	"List connectors (built-in and custom MCP servers) and whether they are enabled.",
	cli_page_options, 0, 0, cmd_connectors_list_exec
};

const struct cli_cmd cmd_connectors_show_entry = {
	"connectors", "show", "ID",
	"Show one connector: its transport and credential bindings.",
	cli_no_options, 1, 1, cmd_connectors_show_exec
};

const struct cli_cmd cmd_connectors_add_entry = {
	"connectors", "add", "NAME " DEFINITION_USAGE " [--enable]",
	"Register a custom MCP server: a command speaking MCP on stdio, or a\n"
	"Streamable HTTP URL.  --bind puts a stored credential's secret into an\n"
	"environment variable (stdio) or a header (http) when the server starts.\n"
	"It stays disabled until 'connectors enable' (or --enable).",
	add_options, 1, 1, cmd_connectors_add_exec
};

const struct cli_cmd cmd_connectors_update_entry = {
	"connectors", "update", "ID " DEFINITION_USAGE "\n"
	"        [--name NAME] [--clear-bindings]",
	"Replace a custom connector's transport (required).  Its credential\n"
	"bindings are kept unless --bind gives new ones or --clear-bindings.",
	update_options, 1, 1, cmd_connectors_update_exec
};

const struct cli_cmd cmd_connectors_enable_entry = {
	"connectors", "enable", "ID",
	"Enable a connector: the agents of later runs get its tools.",
	cli_no_options, 1, 1, cmd_connectors_enable_exec
};

const struct cli_cmd cmd_connectors_disable_entry = {
	"connectors", "disable", "ID",
	"Disable a connector.",
	cli_no_options, 1, 1, cmd_connectors_disable_exec
};

const struct cli_cmd cmd_connectors_remove_entry = {
	"connectors", "remove", "ID",
	"Remove a custom connector (built-in ones can only be disabled).",
	cli_no_options, 1, 1, cmd_connectors_remove_exec
};

const struct cli_cmd cmd_connectors_test_entry = {
	"connectors", "test", "ID",
	"Connect to the server, list its tools and disconnect; no tool is called.\n"
	"Exits 0 when the server answered, 1 when it did not.",
	cli_no_options, 1, 1, cmd_connectors_test_exec
};

static const struct cli_option login_options[] = {
	{ "client-id", true },
	{ "client-secret-stdin", false },
	{ "client-key-stdin", false },
	{ "id-token-stdin", false },
	{ "idp-token-endpoint", true },
	{ "idp-client-id", true },
	{ "workload-token-file", true },
	{ "scope", true },
	{ NULL, false }
};

const struct cli_cmd cmd_connectors_login_entry = {
	"connectors", "login", "ID [--scope SCOPE] [--client-id ID [--client-secret-stdin | "
	"--client-key-stdin]] [--id-token-stdin --idp-token-endpoint URL [--idp-client-id ID]] "
	"[--workload-token-file PATH]",
	"Sign in to an http connector's server with OAuth: prints the URL to open\n"
	"in a browser; the service receives the answer and keeps the token.\n"
	"--client-id names a client the server registered beforehand (its secret,\n"
	"or with --client-key-stdin its PEM private key for signed assertions\n"
	"(ES256), read from standard input); else the service registers itself.\n"
	"--id-token-stdin signs in through your enterprise identity provider: your\n"
	"ID token (standard input; after the client secret's line when both are\n"
	"given) is exchanged at --idp-token-endpoint for an identity assertion\n"
	"the server's authorization server takes; no browser.\n"
	"--workload-token-file (with --client-id) signs in as a workload: the file\n"
	"where its platform puts its identity token (a JWT), read now and at each\n"
	"renewal, is the assertion of a JWT bearer grant; no browser.\n"
	"--scope asks for these scopes instead of the server's first challenge's\n"
	"(a step-up: a run's tool line names the scope the server asked for).",
	login_options, 1, 1, cmd_connectors_login_exec
};

/* Prints one connector. */
static void
connector_print(const struct cli *cli, const struct td_connector *c)
{
	if (cli->json) {
		out_json(c->json);
		return;
	}
	out_kv("id", c->id);
	out_kv("name", c->name);
	out_kv("kind", c->kind);
	out_kv("enabled", c->enabled ? "yes" : "no");
	out_kv("transport", c->transport_json);
	for (size_t i = 0; i < c->binding_count; i++) {
		char line[256];

		snprintf(line, sizeof line, "%s <- %s", c->bindings[i].target,
		    c->bindings[i].credential_id);
		out_kv("binding", line);
	}
	out_kv("createdAt", c->created_at);
	out_kv("updatedAt", c->updated_at);
}

/* Where a connector runs, for a table: the command line or the URL. */
static char *
connector_where(const struct td_connector *c)
{
	struct buf b;

	buf_init(&b, 4096);
	if (c->command != NULL) {
		buf_appends(&b, c->command);
		for (size_t i = 0; i < c->arg_count; i++)
			buf_printf(&b, " %s", c->args[i]);
	} else if (c->url != NULL) {
		buf_appends(&b, c->url);
	} else {
		buf_appends(&b, "(inside the agent)");
	}
	return buf_steal(&b);
}

static int
cmd_connectors_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "ID", "NAME", "KIND", "ENABLED", "TRANSPORT",
		"WHERE" };
	struct td_connector_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	(void)argc;
	(void)argv;
	if ((rc = cli_list_start(cli, &l, 6, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_connectors(cli->client, l.limit, cli_list_cursor(&l), &l.opts,
		    &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_connector *c = &page->items[i];
			char *where = connector_where(c);
			const char *row[] = { c->id, c->name, c->kind, c->enabled ? "yes" : "no",
				c->transport_type, where };

			cli_list_add(&l, c->json, row);
			free(where);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_connector_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, "connectors");
}

static int
cmd_connectors_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_connector *c;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_connector(cli->client, argv[0], &opts, &c, &err) != TD_OK)
		return cli_fail(&err);
	connector_print(cli, c);
	td_connector_free(c);
	return CLI_EXIT_OK;
}

/*
 * The transport of the definition options as JSON text (malloc'd), or NULL
 * after a usage error (*rc set).
 */
static char *
definition_transport(struct cli *cli, int *rc)
{
	const char *command = cli_get(cli, "command"), *url = cli_get(cli, "url");
	const char *given = cli_get(cli, "transport");
	cJSON *t, *list;
	char *text;

	if ((command != NULL) + (url != NULL) + (given != NULL) != 1) {
		*rc = cli_usage_error(cli, "give exactly one of --command, --url and --transport");
		return NULL;
	}
	if (given != NULL) {
		if ((t = cli_json_object(given)) == NULL) {
			*rc = cli_usage_error(cli, "--transport takes a JSON object");
			return NULL;
		}
		text = json_print(t);
		cJSON_Delete(t);
		return text;
	}
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", command != NULL ? "stdio" : "http");
	if (command != NULL) {
		cJSON_AddStringToObject(t, "command", command);
		list = cJSON_AddArrayToObject(t, "args");
		cJSON *env = cJSON_AddObjectToObject(t, "env");
		for (size_t i = 0; i < cli->value_count; i++) {
			const struct cli_value *v = &cli->values[i];
			if (strcmp(v->name, "arg") == 0) {
				cJSON_AddItemToArray(list, cJSON_CreateString(v->value));
			} else if (strcmp(v->name, "env") == 0) {
				const char *eq = strchr(v->value, '=');
				if (eq == NULL || eq == v->value) {
					cJSON_Delete(t);
					*rc = cli_usage_error(cli, "--env takes NAME=VALUE");
					return NULL;
				}
				char *name = strndup(v->value, (size_t)(eq - v->value));
				cJSON_DeleteItemFromObjectCaseSensitive(env, name);
				cJSON_AddStringToObject(env, name, eq + 1);
				free(name);
			} else if (strcmp(v->name, "header") == 0) {
				cJSON_Delete(t);
				*rc = cli_usage_error(cli, "--header goes with --url");
				return NULL;
			}
		}
	} else {
		cJSON_AddStringToObject(t, "url", url);
		list = cJSON_AddObjectToObject(t, "headers");
		for (size_t i = 0; i < cli->value_count; i++) {
			const struct cli_value *v = &cli->values[i];
			if (strcmp(v->name, "header") == 0) {
				const char *colon = strchr(v->value, ':');
				if (colon == NULL || colon == v->value) {
					cJSON_Delete(t);
					*rc = cli_usage_error(cli, "--header takes 'Name: value'");
					return NULL;
				}
				char *name = strndup(v->value, (size_t)(colon - v->value));
				const char *value = colon + 1 + strspn(colon + 1, " \t");
				cJSON_DeleteItemFromObjectCaseSensitive(list, name);
				cJSON_AddStringToObject(list, name, value);
				free(name);
			} else if (strcmp(v->name, "arg") == 0 || strcmp(v->name, "env") == 0) {
				cJSON_Delete(t);
				*rc = cli_usage_error(cli, "--%s goes with --command", v->name);
				return NULL;
			}
		}
	}
	text = json_print(t);
	cJSON_Delete(t);
	return text;
}

/*
 * The --bind options as a JSON array (malloc'd); NULL when none was given
 * (*rc untouched) or after a usage error (*rc set).
 */
static char *
definition_bindings(struct cli *cli, int *rc)
{
	cJSON *arr = NULL;
	char *text;

	for (size_t i = 0; i < cli->value_count; i++) {
		const struct cli_value *v = &cli->values[i];
		const char *eq;

		if (strcmp(v->name, "bind") != 0)
			continue;
		eq = strchr(v->value, '=');
		if (eq == NULL || eq == v->value || eq[1] == '\0') {
			cJSON_Delete(arr);
			*rc = cli_usage_error(cli, "--bind takes CREDENTIAL_ID=env:NAME or "
			    "CREDENTIAL_ID=header:NAME");
			return NULL;
		}
		if (arr == NULL)
			arr = cJSON_CreateArray();
		cJSON *b = cJSON_CreateObject();
		char *cred = strndup(v->value, (size_t)(eq - v->value));
		cJSON_AddStringToObject(b, "credentialId", cred);
		cJSON_AddStringToObject(b, "target", eq + 1);
		cJSON_AddItemToArray(arr, b);
		free(cred);
	}
	if (arr == NULL)
		return NULL;
	text = json_print(arr);
	cJSON_Delete(arr);
	return text;
}

static int
cmd_connectors_add_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_connector_request req = { .name = argv[0], .enabled = cli_has(cli, "enable") };
	struct td_connector *c = NULL;
	struct td_error err;
	char *transport, *bindings;
	int rc = CLI_EXIT_OK;

	(void)argc;
	if ((transport = definition_transport(cli, &rc)) == NULL)
		return rc;
	bindings = definition_bindings(cli, &rc);
	if (rc != CLI_EXIT_OK) {
		free(transport);
		return rc;
	}
	req.transport_json = transport;
	req.bindings_json = bindings;
	if ((rc = cli_connect(cli)) == CLI_EXIT_OK) {
		if (td_add_connector(cli->client, &req, &opts, &c, &err) != TD_OK)
			rc = cli_fail(&err);
		else
			connector_print(cli, c);
	}
	td_connector_free(c);
	free(transport);
	free(bindings);
	return rc;
}

static int
cmd_connectors_update_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_connector_request req = { .name = cli_get(cli, "name") };
	struct td_connector *c = NULL;
	struct td_error err;
	char *transport, *bindings;
	int rc = CLI_EXIT_OK;

	(void)argc;
	if ((transport = definition_transport(cli, &rc)) == NULL)
		return rc;
	bindings = definition_bindings(cli, &rc);
	if (rc == CLI_EXIT_OK && bindings != NULL && cli_has(cli, "clear-bindings"))
		rc = cli_usage_error(cli, "--bind and --clear-bindings do not go together");
	if (rc != CLI_EXIT_OK) {
		free(transport);
		free(bindings);
		return rc;
	}
	req.transport_json = transport;
	req.bindings_json = bindings != NULL ? bindings :
	    cli_has(cli, "clear-bindings") ? "null" : NULL;
	if ((rc = cli_connect(cli)) == CLI_EXIT_OK) {
		if (td_update_connector(cli->client, argv[0], &req, &opts, &c, &err) != TD_OK)
			rc = cli_fail(&err);
		else
			connector_print(cli, c);
	}
	td_connector_free(c);
	free(transport);
	free(bindings);
	return rc;
}

static int
connectors_set_enabled(struct cli *cli, const char *id, bool enabled)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_connector *c;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_set_connector_enabled(cli->client, id, enabled, &opts, &c, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json)
		out_json(c->json);
	else
		printf("%s (%s) %s\n", c->name, c->id, c->enabled ? "enabled" : "disabled");
	td_connector_free(c);
	return CLI_EXIT_OK;
}

static int
cmd_connectors_enable_exec(struct cli *cli, int argc, char **argv)
{
	(void)argc;
	return connectors_set_enabled(cli, argv[0], true);
}

static int
cmd_connectors_disable_exec(struct cli *cli, int argc, char **argv)
{
	(void)argc;
	return connectors_set_enabled(cli, argv[0], false);
}

static int
cmd_connectors_remove_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_remove_connector(cli->client, argv[0], &opts, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json)
		out_json("{}");
	else
		printf("removed %s\n", argv[0]);
	return CLI_EXIT_OK;
}

static int
cmd_connectors_test_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_connector_test *t;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_test_connector(cli->client, argv[0], &opts, &t, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json) {
		out_json(t->json);
	} else {
		char count[32];

		snprintf(count, sizeof count, "%ld", t->tool_count);
		out_kv("success", t->success ? "yes" : "no");
		out_kv("tools", count);
		out_kv("message", t->message);
	}
	rc = t->success ? CLI_EXIT_OK : CLI_EXIT_SERVICE;
	td_connector_test_free(t);
	return rc;
}

/*
 * Reads the secrets the login flags ask for from standard input into *secretp (one
 * allocation) and points login's fields into it: the client's key, its secret, an ID token,
 * or the secret's line then the token's.
 */
static int
login_read_stdin(struct cli *cli, struct td_connector_login *login, bool want_secret,
    bool want_key, bool want_token, char **secretp)
{
	const char *why = NULL;
	char *secret, *nl;

	if ((secret = cli_secret_read_fd(STDIN_FILENO, &why)) == NULL)
		return cli_usage_error(cli, "%s", why);
	if (want_key) {
		login->client_key = secret;
	} else if (want_secret && want_token) {
		if ((nl = strchr(secret, '\n')) == NULL || nl[1] == '\0') {
			explicit_bzero(secret, strlen(secret));
			free(secret);
			return cli_usage_error(cli, "standard input must hold the client "
			    "secret's line, then the ID token's");
		}
		*nl = '\0';
		if (nl > secret && nl[-1] == '\r')
			nl[-1] = '\0';
		login->client_secret = secret;
		login->id_token = nl + 1;
	} else if (want_secret) {
		login->client_secret = secret;
	} else {
		login->id_token = secret;
	}
	*secretp = secret;
	return CLI_EXIT_OK;
}

static int
cmd_connectors_login_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_connector_login login = { .client_id = cli_get(cli, "client-id"),
		.scope = cli_get(cli, "scope"),
		.idp_token_endpoint = cli_get(cli, "idp-token-endpoint"),
		.idp_client_id = cli_get(cli, "idp-client-id"),
		.workload_token_file = cli_get(cli, "workload-token-file") };
	bool want_secret = cli_has(cli, "client-secret-stdin");
	bool want_key = cli_has(cli, "client-key-stdin");
	bool want_token = cli_has(cli, "id-token-stdin");
	bool workload = login.workload_token_file != NULL;
	struct td_error err;
	char *url, *secret = NULL, *abs_file = NULL, cwd[4096];
	int rc;

	(void)argc;
	if ((want_secret || want_key || want_token) && login.client_id == NULL)
		return cli_usage_error(cli, "--client-secret-stdin, --client-key-stdin and "
		    "--id-token-stdin need --client-id");
	if (login.workload_token_file != NULL && (login.client_id == NULL || want_token))
		return cli_usage_error(cli, "--workload-token-file needs --client-id, and is not "
		    "combined with --id-token-stdin");
	if (want_key && (want_secret || want_token))
		return cli_usage_error(cli, "--client-key-stdin reads all of standard input: not "
		    "with --client-secret-stdin or --id-token-stdin");
	if (want_token != (login.idp_token_endpoint != NULL) ||
	    (login.idp_client_id != NULL && !want_token))
		return cli_usage_error(cli, "--id-token-stdin and --idp-token-endpoint go together "
		    "(--idp-client-id with them)");
	if ((want_secret || want_key || want_token) &&
	    (rc = login_read_stdin(cli, &login, want_secret, want_key, want_token, &secret)) !=
	    CLI_EXIT_OK)
		return rc;
	/* The service reads the file: a path relative to here is made absolute. */
	if (login.workload_token_file != NULL && login.workload_token_file[0] != '/' &&
	    getcwd(cwd, sizeof cwd) != NULL) {
		abs_file = xasprintf("%s/%s", cwd, login.workload_token_file);
		login.workload_token_file = abs_file;
	}
	rc = cli_connect(cli);
	if (rc == CLI_EXIT_OK &&
	    td_login_connector(cli->client, argv[0], &login, &opts, &url, &err) != TD_OK)
		rc = cli_fail(&err);
	if (secret != NULL) {
		if (login.id_token != NULL && login.id_token != secret)
			explicit_bzero((char *)login.id_token, strlen(login.id_token));
		explicit_bzero(secret, strlen(secret));
		free(secret);
	}
	free(abs_file);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (url == NULL) {
		if (cli->json)
			out_json("{\"signedIn\":true}");
		else
			printf("signed in with %s (no browser needed)\n",
			    workload ? "the workload's identity token" :
			    want_token ? "the identity provider's assertion" :
			    "the client's credentials");
	} else if (cli->json) {
		cJSON *o = cJSON_CreateObject();
		char *text;

		cJSON_AddStringToObject(o, "authorizationUrl", url);
		text = json_print(o);
		out_json(text);
		free(text);
		cJSON_Delete(o);
	} else {
		char *shown = termtext_line(url);

		fprintf(stderr, "Open this URL in a browser to sign in; taskdeckd receives the "
		    "answer:\n");
		printf("%s\n", shown);
		free(shown);
	}
	free(url);
	return CLI_EXIT_OK;
}
