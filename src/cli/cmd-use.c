/*
 * taskdeck use: the current project, like a kubectl context.  Kept per
 * service (its home, or TASKDECK_URL) in $XDG_CONFIG_HOME/taskdeck/cli.json.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "paths.h"
#include "xalloc.h"

static int cmd_use_exec(struct cli *, int, char **);

static const struct cli_option use_options[] = {
	{ "clear", false },
	{ NULL, false }
};

const struct cli_cmd cmd_use_entry = {
	"use", NULL, "[PROJECT | --clear]",
	"Make PROJECT (a name or an id) the current project of this service: the\n"
	"project of commands given none.  Without PROJECT, show it; --clear\n"
	"forgets it.  TASKDECK_PROJECT overrides it.",
	use_options, 0, 1, cmd_use_exec
};

/* The CLI's own settings file: $XDG_CONFIG_HOME/taskdeck/cli.json (malloc'd), or NULL. */
static char *
use_file(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	if (xdg != NULL && xdg[0] == '/')
		return xasprintf("%s/taskdeck/cli.json", xdg);
	if (home != NULL && home[0] != '\0')
		return xasprintf("%s/.config/taskdeck/cli.json", home);
	return NULL;
}

/*
 * Which service the context belongs to: TASKDECK_URL when set, else the
 * home's discovery file, which stays when the service comes back on
 * another port (malloc'd), or NULL.
 */
static char *
use_service_key(void)
{
	const char *url = getenv("TASKDECK_URL");
	struct td_paths p;
	char *key;

	if (url != NULL && *url != '\0')
		return xasprintf("url:%s", url);
	if (!paths_init(&p))
		return NULL;
	key = xasprintf("home:%s", p.discovery);
	paths_free(&p);
	return key;
}

/* The whole settings file, or an empty object when there is none (or it is broken). */
static cJSON *
use_load(const char *file)
{
	char *text = NULL;
	size_t len = 0;
	cJSON *doc = NULL;
	FILE *fp = fopen(file, "r");

	if (fp != NULL) {
		char chunk[4096];
		size_t n;

		while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0 && len < (1u << 20)) {
			text = xrealloc(text, len + n + 1);
			memcpy(text + len, chunk, n);
			len += n;
		}
		fclose(fp);
		if (text != NULL)
			doc = json_parse(text, len);
		free(text);
	}
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		doc = cJSON_CreateObject();
	}
	return doc;
}

/* Writes doc to file atomically (a private temporary file, then rename); false with errno. */
static bool
use_save(const char *file, const cJSON *doc)
{
	char *dir = xstrdup(file), *tmp = xasprintf("%s.XXXXXX", file), *text;
	bool ok = false;
	int fd;

	*strrchr(dir, '/') = '\0';
	if (!paths_mkdir_p(dir, 0700) || (fd = mkstemp(tmp)) < 0) {
		free(dir);
		free(tmp);
		return false;
	}
	text = json_print(doc);
	if (write(fd, text, strlen(text)) == (ssize_t)strlen(text) && write(fd, "\n", 1) == 1 &&
	    fsync(fd) == 0)
		ok = true;
	if (close(fd) != 0)
		ok = false;
	if (ok && rename(tmp, file) != 0)
		ok = false;
	if (!ok)
		unlink(tmp);
	free(text);
	free(dir);
	free(tmp);
	return ok;
}

/* The stored context of this service ({"project","name"}) inside doc, or NULL. */
static cJSON *
use_context_of(cJSON *doc, const char *key)
{
	cJSON *contexts = cJSON_GetObjectItemCaseSensitive(doc, "contexts");
	cJSON *c = cJSON_GetObjectItemCaseSensitive(contexts, key);

	return cJSON_IsObject(c) && json_get_string(c, "project") != NULL ? c : NULL;
}

int
cli_current_project(struct cli *cli, char **id, enum cli_context_source *source)
{
	struct td_request_options opts = cli_request_options(cli);
	const char *env = getenv("TASKDECK_PROJECT");
	char *file, *key;
	struct td_error err;
	cJSON *doc, *c;
	int rc;

	*id = NULL;
	*source = CLI_CONTEXT_NONE;
	if (env != NULL && *env != '\0') {
		if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
			return rc;
		if (td_find_project(cli->client, env, &opts, id, &err) != TD_OK) {
			rc = cli_fail(&err);
			fprintf(stderr, "taskdeck: (the project of TASKDECK_PROJECT=%s)\n", env);
			return rc;
		}
		*source = CLI_CONTEXT_ENV;
		return CLI_EXIT_OK;
	}
	if ((file = use_file()) == NULL || (key = use_service_key()) == NULL) {
		free(file);
		return CLI_EXIT_OK;
	}
	doc = use_load(file);
	if ((c = use_context_of(doc, key)) != NULL) {
		*id = xstrdup(json_get_string(c, "project"));
		*source = CLI_CONTEXT_STORED;
	}
	cJSON_Delete(doc);
	free(file);
	free(key);
	return CLI_EXIT_OK;
}

/* Prints the current project: its name and id, and where it comes from. */
static int
use_show(struct cli *cli)
{
	struct td_request_options opts = cli_request_options(cli);
	enum cli_context_source source;
	struct td_project *p = NULL;
	struct td_error err;
	char *id;
	int rc;

	if ((rc = cli_current_project(cli, &id, &source)) != CLI_EXIT_OK)
		return rc;
	if (id == NULL) {
		if (cli->json)
			out_json("{\"project\":null}");
		else
			printf("no current project (`taskdeck use PROJECT` sets one)\n");
		return CLI_EXIT_OK;
	}
	if ((rc = cli_connect(cli)) == CLI_EXIT_OK &&
	    td_get_project(cli->client, id, &opts, &p, &err) != TD_OK) {
		rc = cli_fail(&err);
		fprintf(stderr, "taskdeck: (the current project %s; `taskdeck use --clear` "
		    "forgets it)\n", id);
	}
	if (rc == CLI_EXIT_OK && cli->json) {
		char *json = xasprintf("{\"project\":%s,\"source\":\"%s\"}", p->json,
		    source == CLI_CONTEXT_ENV ? "TASKDECK_PROJECT" : "use");

		out_json(json);
		free(json);
	} else if (rc == CLI_EXIT_OK) {
		out_kv("project", p->name);
		out_kv("id", p->id);
		out_kv("from", source == CLI_CONTEXT_ENV ? "TASKDECK_PROJECT" : "taskdeck use");
	}
	td_project_free(p);
	free(id);
	return rc;
}

/* taskdeck use [PROJECT | --clear] */
static int
cmd_use_exec(struct cli *cli, int argc, char **argv)
{
	struct td_request_options opts = cli_request_options(cli);
	bool clear = cli_has(cli, "clear");
	char *file, *key;
	struct td_project *p = NULL;
	struct td_error err;
	cJSON *doc, *contexts, *c;
	int rc = CLI_EXIT_OK;

	if (clear && argc > 0)
		return cli_usage_error(cli, "give PROJECT or --clear, not both");
	if (!clear && argc == 0)
		return use_show(cli);
	if ((file = use_file()) == NULL)
		return cli_usage_error(cli, "neither XDG_CONFIG_HOME nor HOME is set");
	if ((key = use_service_key()) == NULL) {
		free(file);
		return cli_usage_error(cli, "no taskdeck home: set TASKDECK_HOME or HOME");
	}
	if (!clear) {
		/* argv[0] is an id already; reading it shows that it exists. */
		if ((rc = cli_connect(cli)) == CLI_EXIT_OK &&
		    td_get_project(cli->client, argv[0], &opts, &p, &err) != TD_OK)
			rc = cli_fail(&err);
	}
	if (rc != CLI_EXIT_OK) {
		free(file);
		free(key);
		return rc;
	}
	doc = use_load(file);
	if (!cJSON_IsObject(contexts = cJSON_GetObjectItemCaseSensitive(doc, "contexts"))) {
		cJSON_DeleteItemFromObjectCaseSensitive(doc, "contexts");
		contexts = cJSON_AddObjectToObject(doc, "contexts");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(contexts, key);
	if (!clear) {
		c = cJSON_AddObjectToObject(contexts, key);
		cJSON_AddStringToObject(c, "project", p->id);
		cJSON_AddStringToObject(c, "name", p->name);
	}
	if (!use_save(file, doc)) {
		fprintf(stderr, "taskdeck: cannot write %s: %s\n", file, strerror(errno));
		rc = CLI_EXIT_SERVICE;
	} else if (clear) {
		if (!cli->json)
			printf("no current project\n");
		else
			out_json("{\"project\":null}");
	} else if (cli->json)
		out_json(p->json);
	else
		printf("current project: %s (%s)\n", p->name, p->id);
	if (rc == CLI_EXIT_OK && getenv("TASKDECK_PROJECT") != NULL &&
	    *getenv("TASKDECK_PROJECT") != '\0')
		fprintf(stderr, "taskdeck: TASKDECK_PROJECT=%s is set in this shell and wins\n",
		    getenv("TASKDECK_PROJECT"));
	cJSON_Delete(doc);
	td_project_free(p);
	free(file);
	free(key);
	return rc;
}
