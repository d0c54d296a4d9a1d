/* taskdeck artifacts list|show|download */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "paths.h"
#include "timeutil.h"
#include "units.h"
#include "xalloc.h"

/* Least time between two progress lines, in milliseconds. */
#define ARTIFACTS_PROGRESS_MS 100

static int cmd_artifacts_list_exec(struct cli *, int, char **);
static int cmd_artifacts_show_exec(struct cli *, int, char **);
static int cmd_artifacts_download_exec(struct cli *, int, char **);

static const struct cli_option artifacts_list_options[] = {
	{ "all", false },
	{ "limit", true },
	{ "cursor", true },
	{ NULL, false }
};

static const struct cli_option artifacts_download_options[] = {
	{ "session", true },
	{ "out", true },
	{ "force", false },
	{ NULL, false }
};

const struct cli_cmd cmd_artifacts_list_entry = {
	"artifacts", "list", "SESSION [--all] [--limit N] [--cursor C]",
	"List a session's artifacts, newest first: the newest version of each\n"
	"path, or with --all every version.",
	artifacts_list_options, 1, 1, cmd_artifacts_list_exec
};

const struct cli_cmd cmd_artifacts_show_entry = {
	"artifacts", "show", "ARTIFACT",
	"Show one artifact's descriptor.",
	cli_no_options, 1, 1, cmd_artifacts_show_exec
};

const struct cli_cmd cmd_artifacts_download_entry = {
	"artifacts", "download", "ARTIFACT [--out DIR] [--force] | --session S [--out DIR] [--force]",
	"Download an artifact into DIR/NAME, or the newest artifacts of a session\n"
	"into DIR/PATH.  An interrupted download resumes when run again; --force\n"
	"replaces existing files.",
	artifacts_download_options, 0, 1, cmd_artifacts_download_exec
};

/* Progress of one download on stderr. */
struct artifacts_progress {
	const char *label;
	int64_t last_ms;
	bool shown;
};

/* td_progress_fn: one line on stderr, redrawn in place. */
static void
artifacts_on_progress(void *ud, long long done, long long total)
{
	struct artifacts_progress *p = ud;
	int64_t now = clock_mono_ms();
	char a[32], b[32];

	if (p->shown && now - p->last_ms < ARTIFACTS_PROGRESS_MS && done != total)
		return;
	p->last_ms = now;
	p->shown = true;
	units_format_size(done, a, sizeof a);
	if (total > 0) {
		units_format_size(total, b, sizeof b);
		fprintf(stderr, "\r%s  %s / %s  %3lld%%\033[K", p->label, a, b,
		    done * 100 / total);
	} else
		fprintf(stderr, "\r%s  %s\033[K", p->label, a);
}

/* taskdeck artifacts list SESSION [--all] */
static int
cmd_artifacts_list_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "ID", "NAME", "SIZE", "RUN", "CREATED", "PATH" };
	struct td_artifact_list *page;
	struct cli_list l;
	struct td_error err;
	bool more;
	int rc;

	if ((rc = cli_list_start(cli, &l, 6, header)) != CLI_EXIT_OK)
		return rc;
	do {
		if (td_list_artifacts(cli->client, argv[0], cli_has(cli, "all"), l.limit,
		    cli_list_cursor(&l), &l.opts, &page, &err) != TD_OK) {
			l.rc = cli_fail(&err);
			break;
		}
		for (size_t i = 0; i < page->count; i++) {
			const struct td_artifact *a = &page->items[i];
			char size[32];
			const char *row[] = { a->id, a->name, size, a->run_id,
			    a->created_at, a->path };

			snprintf(size, sizeof size, "%lld", a->size);
			cli_list_add(&l, a->json, row);
		}
		more = cli_list_next(&l, &page->next_cursor);
		td_artifact_list_free(page);
	} while (more);
	return cli_list_end(cli, &l, "artifacts");
}

/* taskdeck artifacts show ARTIFACT */
static int
cmd_artifacts_show_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_artifact *a;
	struct td_error err;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (td_get_artifact(cli->client, argv[0], &opts, &a, &err) != TD_OK)
		return cli_fail(&err);
	out_doc(cli, a->json);
	td_artifact_free(a);
	return CLI_EXIT_OK;
}

/* True for a usable file name: not empty, ".", "..", nor with a '/' or control character. */
static bool
artifacts_safe_name(const char *name, size_t len)
{
	if (len == 0 || (len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	}
	return true;
}

/* The artifact's path relative to a directory, or NULL when a part is unsafe. */
static char *
artifacts_safe_path(const char *path)
{
	struct buf b;

	buf_init(&b, 0);
	while (*path == '/')
		path++;
	while (*path != '\0') {
		size_t n = strcspn(path, "/");

		if (!artifacts_safe_name(path, n)) {
			buf_free(&b);
			return NULL;
		}
		buf_printf(&b, "%s%.*s", b.len > 0 ? "/" : "", (int)n, path);
		path += n;
		path += strspn(path, "/");
	}
	return buf_steal(&b);
}

/* Where an artifact goes: DIR/NAME, or DIR/PATH with by_path. */
static char *
artifacts_destination(const struct td_artifact *a, const char *dir, bool by_path)
{
	const char *name = a->name;
	char *rel = by_path && a->path != NULL ? artifacts_safe_path(a->path) : NULL;
	char *dest;

	if (rel != NULL && *rel != '\0') {
		dest = xasprintf("%s/%s", dir, rel);
		free(rel);
		return dest;
	}
	free(rel);
	if (!artifacts_safe_name(name, strlen(name)) && a->path != NULL) {
		name = strrchr(a->path, '/') != NULL ? strrchr(a->path, '/') + 1 : a->path;
		if (!artifacts_safe_name(name, strlen(name)))
			name = a->id;
	}
	return xasprintf("%s/%s", dir, name);
}

/* Prints why a download failed and what to do; returns the exit code. */
static int
artifacts_report(const struct td_error *err, const char *artifact_id,
    const char *run_id, const char *dest)
{
	fprintf(stderr, "taskdeck: download of artifact %s (run %s) failed: %s",
	    artifact_id, run_id != NULL ? run_id : "unknown", err->code_name);
	if (err->http_status != 0)
		fprintf(stderr, " (HTTP %ld)", err->http_status);
	fprintf(stderr, ": %s", err->message);
	if (err->request_id[0] != '\0')
		fprintf(stderr, " (request %s)", err->request_id);
	fputc('\n', stderr);
	if (err->code == TD_NOT_FOUND && run_id == NULL) {
		fprintf(stderr, "taskdeck: check the id with `taskdeck artifacts list "
		    "SESSION`\n");
	} else if (err->code != TD_INVALID_ARGUMENT) {
		char *part = dest != NULL ? xasprintf("%s.part", dest) : NULL;

		if (part != NULL && access(part, F_OK) == 0)
			fprintf(stderr, "taskdeck: do not restart the run: it is not affected. "
			    "Run the same download again; it resumes from %s\n", part);
		else
			fprintf(stderr, "taskdeck: do not restart the run: it is not affected. "
			    "Run the same download again\n");
		free(part);
		if (err->code == TD_TIMEOUT) {
			fprintf(stderr, "taskdeck: the deadline covers the whole "
			    "download: give it more with --timeout MS\n");
		}
		if (err->http_status >= 500) {
			fprintf(stderr, "taskdeck: if it keeps failing, report the run "
			    "id, artifact id and request id above\n");
		}
	}
	return cli_exit_code(err);
}

/* Makes the directory that will hold path. */
static bool
artifacts_make_parent(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	bool ok = true;

	if (slash != NULL && slash != dir) {
		*slash = '\0';
		ok = paths_mkdir_p(dir, 0755);
	}
	if (!ok)
		fprintf(stderr, "taskdeck: cannot create %s: %s\n", dir, strerror(errno));
	free(dir);
	return ok;
}

/* Downloads one artifact to dest; returns an exit code; adds to json when not NULL. */
static int
artifacts_fetch(struct cli *cli, const struct td_artifact *a, const char *dest,
    cJSON *json)
{
	struct td_request_options opts = cli_request_options(cli);
	struct artifacts_progress progress = { .label = a->name };
	struct td_download_options dl = { 0 };
	struct td_download_info info;
	struct td_error err;
	struct stat st;
	cJSON *item;

	if (cli_has(cli, "force"))
		dl.flags |= TD_DOWNLOAD_OVERWRITE;
	else if (lstat(dest, &st) == 0) {
		fprintf(stderr, "taskdeck: %s already exists (artifact %s); --force "
		    "replaces it\n", dest, a->id);
		return CLI_EXIT_SERVICE;
	}
	if (!artifacts_make_parent(dest))
		return CLI_EXIT_SERVICE;
	/* The deadline covers the body: without --timeout allow 1 s per MiB more. */
	if (opts.timeout_ms == 0 && a->size > 0)
		opts.timeout_ms = TD_DEFAULT_TIMEOUT_MS + (long)(a->size >> 20) * 1000;
	if (isatty(STDERR_FILENO)) {
		dl.progress = artifacts_on_progress;
		dl.progress_ud = &progress;
	}
	if (td_download_artifact_to_file(cli->client, a->id, dest, &dl, &opts, &info,
	    &err) != TD_OK) {
		if (progress.shown)
			fputc('\n', stderr);
		return artifacts_report(&err, a->id, a->run_id, dest);
	}
	if (progress.shown)
		fputc('\n', stderr);
	if (json != NULL) {
		item = json_parse(a->json, strlen(a->json));
		if (item == NULL)
			item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, "file", dest);
		cJSON_AddItemToArray(json, item);
	} else {
		char size[32], *line;

		units_format_size(info.offset + info.received, size, sizeof size);
		line = xasprintf("%s (%s, artifact %s%s)", dest, size, a->id,
		    info.http_status == 206 ? ", resumed" : "");
		out_kv("saved", line);
		free(line);
	}
	return CLI_EXIT_OK;
}

/* Every newest artifact of a session into dir; the first failure's exit code. */
static int
artifacts_download_session(struct cli *cli, const char *session_id,
    const char *dir, cJSON *json)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_artifact_list *page;
	struct td_error err;
	char *next = NULL;
	size_t count = 0;
	int rc = CLI_EXIT_OK, one;

	do {
		if (td_list_artifacts(cli->client, session_id, false, 0, next, &opts,
		    &page, &err) != TD_OK) {
			free(next);
			return cli_fail(&err);
		}
		for (size_t i = 0; i < page->count; i++, count++) {
			char *dest = artifacts_destination(&page->items[i], dir, true);

			one = artifacts_fetch(cli, &page->items[i], dest, json);
			if (rc == CLI_EXIT_OK)
				rc = one;
			free(dest);
		}
		free(next);
		next = page->next_cursor;
		page->next_cursor = NULL;
		td_artifact_list_free(page);
	} while (next != NULL);
	if (count == 0)
		fprintf(stderr, "taskdeck: session %s has no artifacts\n", session_id);
	return rc;
}

/* taskdeck artifacts download ARTIFACT | --session S */
static int
cmd_artifacts_download_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *session = cli_get(cli, "session");
	const char *dir = cli_get(cli, "out");
	cJSON *json = NULL;
	struct td_artifact *a;
	struct td_error err;
	char *dest;
	int rc;

	if ((argc == 1) == (session != NULL))
		return cli_usage_error(cli, "give an artifact id or --session, not both");
	if (dir == NULL || *dir == '\0')
		dir = ".";
	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	if (cli->json)
		json = cJSON_CreateArray();
	if (session != NULL)
		rc = artifacts_download_session(cli, session, dir, json);
	else if (td_get_artifact(cli->client, argv[0], &opts, &a, &err) != TD_OK)
		rc = artifacts_report(&err, argv[0], NULL, NULL);
	else {
		dest = artifacts_destination(a, dir, false);
		rc = artifacts_fetch(cli, a, dest, json);
		free(dest);
		td_artifact_free(a);
	}
	if (json != NULL && (session != NULL || rc == CLI_EXIT_OK)) {
		char *text = json_print(session != NULL ? json : cJSON_GetArrayItem(json, 0));

		out_json(text);
		free(text);
	}
	cJSON_Delete(json);
	return rc;
}
