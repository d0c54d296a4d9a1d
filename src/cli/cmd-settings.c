/* taskdeck defaults get|set and taskdeck routing get|set */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "xalloc.h"

static int cmd_defaults_get_exec(struct cli *, int, char **);
static int cmd_defaults_set_exec(struct cli *, int, char **);
static int cmd_routing_get_exec(struct cli *, int, char **);
static int cmd_routing_set_exec(struct cli *, int, char **);

static const struct cli_option defaults_set_options[] = {
	{ "clear", true },
	{ "expected-updated-at", true },
	{ NULL, false }
};

static const struct cli_option routing_set_options[] = {
	{ "patch", true },
	{ NULL, false }
};

const struct cli_cmd cmd_defaults_get_entry = {
	"defaults", "get", "[PROJECT]",
	"Show the defaults that new sessions of a project start with.",
	cli_no_options, 0, 1, cmd_defaults_get_exec
};

const struct cli_cmd cmd_defaults_set_entry = {
	"defaults", "set",
	"[PROJECT] [KEY=VALUE...] [--clear KEY]... [--expected-updated-at TIME]",
	"Change session defaults (framework, provider, model, effort,\n"
	"permissionProfile).  The write is refused (exit 5) when the defaults changed\n"
	"since they were read, or since TIME with --expected-updated-at.",
	defaults_set_options, 0, -1, cmd_defaults_set_exec
};

const struct cli_cmd cmd_routing_get_entry = {
	"routing", "get", "",
	"Show the global agent routing.",
	cli_no_options, 0, 0, cmd_routing_get_exec
};

const struct cli_cmd cmd_routing_set_entry = {
	"routing", "set", "[KEY=VALUE...] [--patch JSON]",
	"Change the agent routing.  Keys are dotted (reviewer.enabled=true); values\n"
	"true, false, null and integers are JSON, anything else a string.",
	routing_set_options, 0, -1, cmd_routing_set_exec
};

/* Prints a project's session defaults. */
static void
defaults_print(const struct cli *cli, const struct td_session_defaults *d)
{
	if (cli->json) {
		out_json(d->json);
		return;
	}
	out_kv("projectId", d->project_id);
	out_kv("updatedAt", d->updated_at);
	out_kv("framework", d->framework);
	out_kv("provider", d->provider);
	out_kv("model", d->model);
	out_kv("effort", d->effort);
	out_kv("permissionProfile", d->permission_profile);
	{
		cJSON *doc = d->json ? cJSON_Parse(d->json) : NULL;
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		    doc, "defaults"), "network");

		out_kv("network", cJSON_IsBool(n) ? (cJSON_IsTrue(n) ? "true" : "false") : NULL);
		cJSON_Delete(doc);
	}
}

/* taskdeck defaults get PROJECT */
static int
cmd_defaults_get_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_session_defaults *d;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_session_defaults(cli->client, argv[0], &opts, &d, &err) != TD_OK)
		return cli_fail(&err);
	defaults_print(cli, d);
	td_session_defaults_free(d);
	return CLI_EXIT_OK;
}

/* Sets obj[key] to item, replacing what was there. */
static void
settings_replace(cJSON *obj, const char *key, cJSON *item)
{
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cJSON_AddItemToObject(obj, key, item);
}

/* patch, or NULL (freed, usage error printed) when it changes nothing. */
static cJSON *
settings_nonempty(const struct cli *cli, cJSON *patch)
{
	if (patch->child == NULL) {
		cJSON_Delete(patch);
		cli_usage_error(cli, "nothing to set");
		return NULL;
	}
	return patch;
}

/* Builds the defaults patch from KEY=VALUE arguments and --clear. */
static cJSON *
defaults_patch(const struct cli *cli, int argc, char **argv)
{
	cJSON *patch = cJSON_CreateObject();

	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		char *key;

		if (eq == NULL || eq == argv[i]) {
			cJSON_Delete(patch);
			cli_usage_error(cli, "expected KEY=VALUE, not '%s'", argv[i]);
			return NULL;
		}
		key = xstrndup(argv[i], (size_t)(eq - argv[i]));
		/* network is the one boolean default (docs/agent.md "The sandbox") */
		if (strcmp(key, "network") == 0 && (strcmp(eq + 1, "true") == 0 ||
		    strcmp(eq + 1, "false") == 0))
			settings_replace(patch, key, cJSON_CreateBool(eq[1] == 't'));
		else
			settings_replace(patch, key, cJSON_CreateString(eq + 1));
		free(key);
	}
	for (size_t i = 0; i < cli->value_count; i++) {
		if (strcmp(cli->values[i].name, "clear") == 0)
			settings_replace(patch, cli->values[i].value, cJSON_CreateNull());
	}
	return settings_nonempty(cli, patch);
}

/* taskdeck defaults set: reads updatedAt (unless pinned), then writes. */
static int
cmd_defaults_set_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *expected = cli_get(cli, "expected-updated-at");
	struct td_session_defaults *current = NULL, *d;
	struct td_error err;
	cJSON *patch;
	char *text;
	int rc;

	if ((patch = defaults_patch(cli, argc - 1, argv + 1)) == NULL)
		return CLI_EXIT_USAGE;
	text = json_print(patch);
	cJSON_Delete(patch);
	rc = cli_connect(cli);
	if (rc == CLI_EXIT_OK && expected == NULL) {
		if (td_get_session_defaults(cli->client, argv[0], &opts, &current,
		    &err) == TD_OK)
			expected = current->updated_at;
		else
			rc = cli_fail(&err);
	}
	if (rc == CLI_EXIT_OK) {
		if (td_update_session_defaults(cli->client, argv[0], expected, text,
		    &opts, &d, &err) == TD_OK) {
			defaults_print(cli, d);
			td_session_defaults_free(d);
		} else
			rc = cli_fail(&err);
	}
	td_session_defaults_free(current);
	free(text);
	return rc;
}

/* taskdeck routing get */
static int
cmd_routing_get_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_agent_routing *r;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_agent_routing(cli->client, &opts, &r, &err) != TD_OK)
		return cli_fail(&err);
	out_doc(cli, r->json);
	td_agent_routing_free(r);
	return CLI_EXIT_OK;
}

/* The JSON value of a KEY=VALUE argument: true, false, null, integer or string. */
static cJSON *
routing_value(const char *text)
{
	char *end;
	long n;

	if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
		return cJSON_CreateBool(text[0] == 't');
	if (strcmp(text, "null") == 0)
		return cJSON_CreateNull();
	errno = 0;
	n = strtol(text, &end, 10);
	if (*text != '\0' && *end == '\0' && errno == 0)
		return cJSON_CreateNumber((double)n);
	return cJSON_CreateString(text);
}

/* Sets the dotted key path (a.b.c) of patch to value; false on an empty part. */
static bool
routing_set_path(cJSON *patch, const char *path, cJSON *value)
{
	char *copy = xstrdup(path), *part = copy, *dot;
	cJSON *obj = patch;

	while ((dot = strchr(part, '.')) != NULL) {
		cJSON *child;

		*dot = '\0';
		if (*part == '\0')
			break;
		child = cJSON_GetObjectItemCaseSensitive(obj, part);
		if (!cJSON_IsObject(child)) {
			child = cJSON_CreateObject();
			settings_replace(obj, part, child);
		}
		obj = child;
		part = dot + 1;
	}
	if (dot != NULL || *part == '\0') {
		cJSON_Delete(value);
		free(copy);
		return false;
	}
	settings_replace(obj, part, value);
	free(copy);
	return true;
}

/* Builds the routing patch from --patch and KEY=VALUE arguments. */
static cJSON *
routing_patch(const struct cli *cli, int argc, char **argv)
{
	const char *patch_text = cli_get(cli, "patch");
	cJSON *patch;

	if (patch_text == NULL)
		patch = cJSON_CreateObject();
	else if ((patch = cli_json_object(patch_text)) == NULL) {
		cli_usage_error(cli, "--patch must be a JSON object");
		return NULL;
	}
	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		char *key = eq != NULL ? xstrndup(argv[i], (size_t)(eq - argv[i])) : NULL;
		bool ok = key != NULL && routing_set_path(patch, key, routing_value(eq + 1));

		free(key);
		if (!ok) {
			cJSON_Delete(patch);
			cli_usage_error(cli, "expected KEY=VALUE, not '%s'", argv[i]);
			return NULL;
		}
	}
	return settings_nonempty(cli, patch);
}

/* taskdeck routing set: one merge patch from --patch and KEY=VALUE. */
static int
cmd_routing_set_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_agent_routing *r;
	struct td_error err;
	cJSON *patch;
	char *text;
	int rc;

	if ((patch = routing_patch(cli, argc, argv)) == NULL)
		return CLI_EXIT_USAGE;
	text = json_print(patch);
	cJSON_Delete(patch);
	if ((rc = cli_connect(cli)) == CLI_EXIT_OK) {
		if (td_update_agent_routing(cli->client, text, &opts, &r, &err) == TD_OK) {
			out_doc(cli, r->json);
			td_agent_routing_free(r);
		} else
			rc = cli_fail(&err);
	}
	free(text);
	return rc;
}
