/* taskdeck permissions list|show|allow|deny */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "termtext.h"
#include "xalloc.h"

static int cmd_permissions_list_exec(struct cli *, int, char **);
static int cmd_permissions_show_exec(struct cli *, int, char **);
static int cmd_permissions_allow_exec(struct cli *, int, char **);
static int cmd_permissions_deny_exec(struct cli *, int, char **);

static const struct cli_option permissions_list_options[] = {
	{ "all", false },
	{ "run", true },
	{ NULL, false }
};

static const struct cli_option permissions_allow_options[] = {
	{ "run", false },
	{ "field", true },
	{ NULL, false }
};

const struct cli_cmd cmd_permissions_list_entry = {
	"permissions", "list", "[--all] [--run RUN]",
	"List the permission prompts that wait for an answer, newest first\n"
	"(--all: answered and expired ones too; --run: of one run).",
	permissions_list_options, 0, 0, cmd_permissions_list_exec
};

const struct cli_cmd cmd_permissions_show_entry = {
	"permissions", "show", "PROMPT",
	"Show one permission prompt: its run, tool, input and answer.",
	cli_no_options, 1, 1, cmd_permissions_show_exec
};

const struct cli_cmd cmd_permissions_allow_entry = {
	"permissions", "allow", "PROMPT [--run] [--field NAME=VALUE]...",
	"Allow the action of a pending prompt; with --run, also every later\n"
	"action of the same run, without asking.  A server's form (tool\n"
	"CONNECTOR__elicitation) is accepted with the values of --field (one per\n"
	"field, checked against the form) and the defaults of the others.",
	permissions_allow_options, 1, 1, cmd_permissions_allow_exec
};

const struct cli_cmd cmd_permissions_deny_entry = {
	"permissions", "deny", "PROMPT",
	"Deny the action of a pending prompt; the agent is told and carries on.",
	cli_no_options, 1, 1, cmd_permissions_deny_exec
};

/* The fields of a server's form (input_json's requestedSchema) in style, or NULL when it is no form. */
static char *
permissions_form_text(const char *input_json, enum td_form_style style)
{
	struct td_form *form;
	char *text;

	if (td_form_parse(input_json, &form, NULL) != TD_OK)
		return NULL;
	text = td_form_text(form, style, "  ");
	td_form_free(form);
	return text;
}

/* taskdeck permissions list [--all] [--run RUN]: every page. */
static int
cmd_permissions_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "ID", "STATUS", "TOOL", "RUN", "SUMMARY" };
	const char *status = cli_has(cli, "all") ? "all" : "pending";
	const char *run_id = cli_get(cli, "run");
	struct td_permission_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	if (run_id != NULL && *run_id == '\0')
		return cli_usage_error(cli, "--run takes a run id");
	if ((rc = cli_list_start(cli, &l, 5, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_permissions(cli->client, status, run_id, 0, cli_list_cursor(&l),
		    &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_permission *p = &page->items[i];
			char *fields = permissions_form_text(p->input_json, TD_FORM_ONE_LINE);
			char *summary = fields != NULL ? xasprintf("%s (fields: %s)", p->summary,
			    fields) : NULL;
			const char *row[] = { p->id, p->status, p->tool, p->run_id,
			    summary != NULL ? summary : p->summary };

			cli_list_add(&l, p->json, row);
			free(summary);
			free(fields);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_permission_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, strcmp(status, "all") == 0 ?
	    "permission prompts" : "pending permission prompts");
}

/* taskdeck permissions show PROMPT */
static int
cmd_permissions_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_permission *p;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_permission(cli->client, argv[0], &opts, &p, &err) != TD_OK)
		return cli_fail(&err);
	out_doc(cli, p->json);
	if (!cli->json) {
		/* A server's form: what each field asks (permissions allow --field). */
		char *fields = permissions_form_text(p->input_json, TD_FORM_LINES);

		if (fields != NULL) {
			static const struct termtext_style lines = { "\n", " " };
			struct buf shown;

			buf_init(&shown, 0);
			termtext_append(&shown, fields, &lines);
			printf("form fields (permissions allow %s --field NAME=VALUE):\n%s\n", p->id,
			    shown.data != NULL ? shown.data : "");
			buf_free(&shown);
		}
		free(fields);
	}
	td_permission_free(p);
	return CLI_EXIT_OK;
}

/* Answers a prompt and prints it; an answered one says how it was answered. */
static int
permissions_answer(struct cli *cli, const char *id, const char *decision)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_permission *p;
	struct td_error err;
	cJSON *values = NULL;
	char *values_json = NULL;
	int rc;

	/* --field NAME=VALUE, each as a string: the service types it by the form. */
	for (size_t i = 0; i < cli->value_count; i++) {
		const char *v = cli->values[i].value, *eq;

		if (strcmp(cli->values[i].name, "field") != 0)
			continue;
		if (strcmp(decision, "allow") != 0) {
			cJSON_Delete(values);
			return cli_usage_error(cli, "--field goes with allow, not with --run");
		}
		if (v == NULL || (eq = strchr(v, '=')) == NULL || eq == v) {
			cJSON_Delete(values);
			return cli_usage_error(cli, "--field takes NAME=VALUE");
		}
		if (values == NULL)
			values = cJSON_CreateObject();
		{
			char *name = strndup(v, (size_t)(eq - v));

			cJSON_DeleteItemFromObjectCaseSensitive(values, name);
			cJSON_AddStringToObject(values, name, eq + 1);
			free(name);
		}
	}
	if (values != NULL) {
		values_json = json_print(values);
		cJSON_Delete(values);
	}
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK) {
		free(values_json);
		return rc;
	}
	rc = td_answer_permission_form(cli->client, id, decision, values_json, &opts, &p, &err);
	free(values_json);
	if (rc != TD_OK) {
		rc = cli_fail(&err);
		if (err.code == TD_PERMISSION_NOT_PENDING &&
		    td_get_permission(cli->client, id, &opts, &p, &err) == TD_OK) {
			fprintf(stderr, "taskdeck: prompt %s is already %s%s%s%s; "
			    "nothing changed\n", p->id, p->status,
			    p->decision != NULL ? " (decision " : "",
			    p->decision != NULL ? p->decision : "",
			    p->decision != NULL ? ")" : "");
			td_permission_free(p);
		}
		return rc;
	}
	if (cli->json)
		out_json(p->json);
	else {
		out_kv("id", p->id);
		out_kv("status", p->status);
		out_kv("decision", p->decision);
		out_kv("tool", p->tool);
		out_kv("summary", p->summary);
		out_kv("run", p->run_id);
	}
	td_permission_free(p);
	return CLI_EXIT_OK;
}

/* taskdeck permissions allow PROMPT [--run] */
static int
cmd_permissions_allow_exec(struct cli *cli, int argc, char **argv)
{
	return permissions_answer(cli, argv[0], cli_has(cli, "run") ? "allow-run" : "allow");
}

/* taskdeck permissions deny PROMPT */
static int
cmd_permissions_deny_exec(struct cli *cli, int argc, char **argv)
{
	return permissions_answer(cli, argv[0], "deny");
}
