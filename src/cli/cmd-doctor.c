/* taskdeck doctor */
#include <stdio.h>

#include "cli.h"

static int cmd_doctor_exec(struct cli *, int, char **);

const struct cli_cmd cmd_doctor_entry = {
	"doctor", NULL, "",
	"Check that the service is ready and say what to do when it is not.\n"
	"Exits 1 when the service reports that it is not ready.",
	cli_no_options, 0, 0, cmd_doctor_exec
};

/* taskdeck doctor: the readiness report, exit 1 when not ready. */
static int
cmd_doctor_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "CHECK", "STATUS", "MESSAGE" };
	struct td_request_options opts = cli_request_options(cli);
	struct td_doctor_report *d;
	struct out_table table;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_doctor(cli->client, &opts, &d, &err) != TD_OK)
		return cli_fail(&err);
	if (cli->json)
		out_json(d->json);
	else {
		out_kv("ready", d->ready ? "yes" : "no");
		out_kv("version", d->version);
		out_table_init(&table, 3, header);
		for (size_t i = 0; i < d->check_count; i++) {
			const struct td_doctor_check *c = &d->checks[i];
			const char *row[] = { c->id, c->status, c->message };

			out_table_add(&table, row);
		}
		putchar('\n');
		out_table_print(&table);
		out_table_free(&table);
		for (size_t i = 0; i < d->next_action_count; i++)
			out_kv("next", d->next_actions[i]);
	}
	rc = d->ready ? CLI_EXIT_OK : CLI_EXIT_SERVICE;
	td_doctor_report_free(d);
	return rc;
}
