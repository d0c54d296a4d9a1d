/* taskdeck projects list|show|create|update|archive|unarchive */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "json.h"

static int cmd_projects_list_exec(struct cli *, int, char **);
static int cmd_projects_show_exec(struct cli *, int, char **);
static int cmd_projects_create_exec(struct cli *, int, char **);
static int cmd_projects_update_exec(struct cli *, int, char **);
static int cmd_projects_archive_exec(struct cli *, int, char **);

static const struct cli_option projects_list_options[] = {
	{ "limit", true },
	{ "cursor", true },
	{ "archived", false },
	{ NULL, false }
};

static const struct cli_option projects_create_options[] = {
	{ "description", true },
	{ "context", true },
	{ "metadata", true },
	{ "idempotency-key", true },
	{ NULL, false }
};

static const struct cli_option projects_update_options[] = {
	{ "name", true },
	{ "description", true },
	{ "context", true },
	{ "metadata", true },
	{ "patch", true },
	{ NULL, false }
};

const struct cli_cmd cmd_projects_list_entry = {
	"projects", "list", "[--archived] [--limit N] [--cursor CURSOR]",
	"List projects, newest first: all of them, or one page of N.  Archived\n"
	"projects are left out; --archived lists only them.",
	projects_list_options, 0, 0, cmd_projects_list_exec
};

const struct cli_cmd cmd_projects_archive_entry = {
	"projects", "archive", "PROJECT",
	"Archive a project: hidden from lists (and the dashboard); its sessions and\n"
	"runs still work.",
	cli_no_options, 1, 1, cmd_projects_archive_exec
};

const struct cli_cmd cmd_projects_unarchive_entry = {
	"projects", "unarchive", "PROJECT",
	"Bring an archived project back into the lists.",
	cli_no_options, 1, 1, cmd_projects_archive_exec
};

const struct cli_cmd cmd_projects_show_entry = {
	"projects", "show", "PROJECT",
	"Show one project.",
	cli_no_options, 1, 1, cmd_projects_show_exec
};

const struct cli_cmd cmd_projects_create_entry = {
	"projects", "create",
	"NAME [--description TEXT] [--context TEXT] [--metadata JSON] [--idempotency-key KEY]",
	"Create a project.  With --idempotency-key a repeated create returns the first project.",
	projects_create_options, 1, 1, cmd_projects_create_exec
};

const struct cli_cmd cmd_projects_update_entry = {
	"projects", "update",
	"PROJECT [--name NAME] [--description TEXT] [--context TEXT] [--metadata JSON | --patch JSON]",
	"Change a project.  --metadata merges into the metadata (null removes a key);\n"
	"--patch sends a whole JSON merge patch.",
	projects_update_options, 1, 1, cmd_projects_update_exec
};

/* Prints one project. */
static void
projects_print(const struct cli *cli, const struct td_project *p)
{
	if (cli->json) {
		out_json(p->json);
		return;
	}
	out_kv("id", p->id);
	out_kv("name", p->name);
	out_kv("description", p->description);
	out_kv("context", p->context);
	out_kv("metadata", p->metadata_json);
	out_kv("createdAt", p->created_at);
	out_kv("updatedAt", p->updated_at);
	out_kv("archivedAt", p->archived_at);
}

/* Prints every project of a list (all pages), or one page with --limit. */
static int
cmd_projects_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "ID", "NAME", "AGE", "DESCRIPTION" };
	struct td_project_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	if ((rc = cli_list_start(cli, &l, 4, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_projects_archived(cli->client, cli_has(cli, "archived") ?
		    TD_ARCHIVED_ONLY : TD_ARCHIVED_HIDE, l.limit, cli_list_cursor(&l),
		    &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_project *p = &page->items[i];
			char age[16];
			const char *row[] = { p->id, p->name, age, p->description };

			out_age(p->created_at, age);
			cli_list_add(&l, p->json, row);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_project_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, "projects");
}

/* taskdeck projects show ID */
static int
cmd_projects_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_project *p;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_project(cli->client, argv[0], &opts, &p, &err) != TD_OK)
		return cli_fail(&err);
	projects_print(cli, p);
	td_project_free(p);
	return CLI_EXIT_OK;
}

/* taskdeck projects create NAME [options] */
static int
cmd_projects_create_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_new_project np = {
		.name = argv[0],
		.description = cli_get(cli, "description"),
		.context = cli_get(cli, "context"),
		.metadata_json = cli_get(cli, "metadata"),
	};
	struct td_project *p;
	struct td_error err;
	int rc;

	opts.idempotency_key = cli_get(cli, "idempotency-key");
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_create_project(cli->client, &np, &opts, &p, &err) != TD_OK)
		return cli_fail(&err);
	projects_print(cli, p);
	td_project_free(p);
	return CLI_EXIT_OK;
}

/* Sets obj[key] to a string, replacing what was there. */
static void
projects_set_string(cJSON *obj, const char *key, const char *value)
{
	if (value == NULL)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cJSON_AddStringToObject(obj, key, value);
}

/* Builds the merge patch of an update from its options; NULL on a usage error. */
static cJSON *
projects_patch(const struct cli *cli)
{
	const char *patch_text = cli_get(cli, "patch");
	const char *meta_text = cli_get(cli, "metadata");
	cJSON *patch, *meta;

	if (patch_text != NULL && meta_text != NULL) {
		cli_usage_error(cli, "give --metadata or --patch, not both");
		return NULL;
	}
	if (patch_text == NULL)
		patch = cJSON_CreateObject();
	else if ((patch = cli_json_object(patch_text)) == NULL) {
		cli_usage_error(cli, "--patch must be a JSON object");
		return NULL;
	}
	projects_set_string(patch, "name", cli_get(cli, "name"));
	projects_set_string(patch, "description", cli_get(cli, "description"));
	projects_set_string(patch, "context", cli_get(cli, "context"));
	if (meta_text != NULL) {
		if ((meta = cli_json_object(meta_text)) == NULL) {
			cJSON_Delete(patch);
			cli_usage_error(cli, "--metadata must be a JSON object");
			return NULL;
		}
		cJSON_AddItemToObject(patch, "metadata", meta);
	}
	if (patch->child == NULL) {
		cJSON_Delete(patch);
		cli_usage_error(cli, "nothing to update");
		return NULL;
	}
	return patch;
}

/* taskdeck projects update ID [options]: one merge patch. */
static int
cmd_projects_update_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_project *p;
	struct td_error err;
	cJSON *patch;
	char *text;
	int rc;

	if ((patch = projects_patch(cli)) == NULL)
		return CLI_EXIT_USAGE;
	text = json_print(patch);
	cJSON_Delete(patch);
	if ((rc = cli_connect(cli)) == CLI_EXIT_OK) {
		if (td_update_project(cli->client, argv[0], text, &opts, &p, &err) == TD_OK) {
			projects_print(cli, p);
			td_project_free(p);
		} else
			rc = cli_fail(&err);
	}
	free(text);
	return rc;
}

/* taskdeck projects archive|unarchive PROJECT */
static int
cmd_projects_archive_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	bool archive = strcmp(cli->cmd->name, "archive") == 0;
	struct td_project *p;
	struct td_error err;
	int rc;

	(void)argc;
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_archive_project(cli->client, argv[0], archive, &opts, &p, &err) != TD_OK)
		return cli_fail(&err);
	projects_print(cli, p);
	td_project_free(p);
	return CLI_EXIT_OK;
}
