/*
 * taskdeck __complete WORD...: the candidates for the last word, one a line
 * ("candidate<TAB>description"), for the scripts of taskdeck completion.
 * Commands, options and arguments come from the command table (cli_cmds,
 * each command's options and usage); ids and names from the running service,
 * asked within COMPLETE_BUDGET_MS.  A line ":file" or ":dir" alone asks the
 * shell to complete paths.  Nothing goes to stderr; the exit code is 0.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "fold.h"
#include "xalloc.h"

/* The time dynamic completion may spend on the service, all requests together. */
#define COMPLETE_BUDGET_MS 150
#define COMPLETE_BUDGET_MAX_MS 60000

/* The deadline of all requests: TASKDECK_COMPLETE_BUDGET_MS (10 to 60,000) or 150 ms. */
static long
complete_budget_ms(void)
{
	const char *v = getenv("TASKDECK_COMPLETE_BUDGET_MS");
	char *end;
	long ms;

	if (v == NULL || *v == '\0')
		return COMPLETE_BUDGET_MS;
	ms = strtol(v, &end, 10);
	return *end == '\0' && ms >= 10 && ms <= COMPLETE_BUDGET_MAX_MS ? ms : COMPLETE_BUDGET_MS;
}
/* Items asked for per listing. */
#define COMPLETE_PAGE 100
#define COMPLETE_DESC_MAX 60
#define COMPLETE_POSITIONALS 8

enum complete_kind {
	COMPLETE_NONE,
	COMPLETE_PROJECT,
	COMPLETE_SESSION,
	COMPLETE_RUN,
	COMPLETE_ARTIFACT,
	COMPLETE_PROMPT,
	COMPLETE_CONNECTOR,
	COMPLETE_CREDENTIAL,
	COMPLETE_MODEL,
	COMPLETE_CHANGED_PATH,
	COMPLETE_FILE,
	COMPLETE_DIR,
	COMPLETE_WORDS,
	COMPLETE_FIELD,		/* NAME= of the form of the prompt given first */
};

static const char *const complete_frameworks[] = { "taskdeck", "claude-code", "codex", "acp",
	NULL };
static const char *const complete_efforts[] = { "low", "medium", "high", NULL };
static const char *const complete_providers[] = { "replay", "ollama", "openai", "anthropic",
	NULL };
static const char *const complete_run_statuses[] = { "queued", "running", "completed",
	"failed", "cancelled", NULL };
static const char *const complete_log_levels[] = { "debug", "info", "warn", "error", NULL };
static const char *const complete_credential_kinds[] = { "api-key", "bearer", "basic",
	"secret", NULL };
static const char *const complete_outputs[] = { "json", "wide", NULL };

/*
 * What an argument's usage placeholder names: placeholder in any command, or
 * own in the commands of group ("projects show ID").
 */
static const struct {
	const char *placeholder;
	const char *group;
	const char *own;
	enum complete_kind kind;
	const char *const *words;
} complete_args[] = {
	{ "PROJECT", "projects", "ID", COMPLETE_PROJECT, NULL },
	{ "SESSION", "sessions", "ID", COMPLETE_SESSION, NULL },
	{ "RUN", "runs", "ID", COMPLETE_RUN, NULL },
	{ "ARTIFACT", "artifacts", "ID", COMPLETE_ARTIFACT, NULL },
	{ NULL, "permissions", "PROMPT", COMPLETE_PROMPT, NULL },
	{ "CONNECTOR", "connectors", "ID", COMPLETE_CONNECTOR, NULL },
	{ "CREDENTIAL", "credentials", "ID", COMPLETE_CREDENTIAL, NULL },
	{ NULL, "runs", "PATH", COMPLETE_CHANGED_PATH, NULL },
	{ "FILE", NULL, NULL, COMPLETE_FILE, NULL },
	{ "DIR", NULL, NULL, COMPLETE_DIR, NULL },
	{ "SHELL", NULL, NULL, COMPLETE_WORDS, cli_shells },
};

/*
 * What the value of an option names, by its long name (in the commands of
 * group, or of any when group is NULL).  Words a usage lists
 * ("--kind a|b|c") come first.
 */
static const struct {
	const char *option;
	const char *group;
	enum complete_kind kind;
	const char *const *words;
} complete_options[] = {
	{ "project", NULL, COMPLETE_PROJECT, NULL },
	{ "session", NULL, COMPLETE_SESSION, NULL },
	{ "run", NULL, COMPLETE_RUN, NULL },
	{ "cwd", NULL, COMPLETE_DIR, NULL },
	{ "out", NULL, COMPLETE_DIR, NULL },
	{ "log", NULL, COMPLETE_FILE, NULL },
	{ "permission", NULL, COMPLETE_WORDS, cli_permission_profiles },
	{ "framework", NULL, COMPLETE_WORDS, complete_frameworks },
	{ "effort", NULL, COMPLETE_WORDS, complete_efforts },
	{ "provider", NULL, COMPLETE_WORDS, complete_providers },
	{ "model", NULL, COMPLETE_MODEL, NULL },
	{ "status", "runs", COMPLETE_WORDS, complete_run_statuses },
	{ "log-level", NULL, COMPLETE_WORDS, complete_log_levels },
	{ "kind", "credentials", COMPLETE_WORDS, complete_credential_kinds },
	{ "output", NULL, COMPLETE_WORDS, complete_outputs },
	{ "field", "permissions", COMPLETE_FIELD, NULL },
};

/* A word of a usage string: [start, start + len). */
struct complete_token {
	const char *start;
	size_t len;
};

/* What a command's usage says: its arguments' placeholders, the words its options take. */
struct complete_usage {
	struct complete_token args[COMPLETE_POSITIONALS];
	size_t arg_count;
	bool last_repeats;	/* "KEY=VALUE..." */
};

struct complete {
	const char *cur;	/* the word completed */
	const char *prefix;	/* printed before each candidate ("--project="), or "" */
	const struct cli_cmd *cmd;
	const char *group;
	/* options given on the line, to narrow what the service is asked */
	const char *project, *session, *run;
	const char *from;	/* --from of runs changes|diff */
	const char *provider;	/* --provider: whose models --model completes */
	const char *first;	/* the command's first argument (the RUN of runs diff RUN PATH) */
	struct td_client *client;
	bool offline;		/* no service, or the budget is spent */
	struct timespec deadline;
};

/*
 * Prints one candidate and its description (desc may be NULL; control
 * characters shown as spaces, cut at COMPLETE_DESC_MAX); not a word with a
 * control character, which would break the one-a-line answer.
 */
static void
complete_print(const struct complete *c, const char *word, const char *desc)
{
	size_t n = 0;

	for (const unsigned char *s = (const unsigned char *)word; *s != '\0'; s++) {
		if (*s < 0x20 || *s == 0x7f)
			return;
	}
	printf("%s%s", c->prefix, word);
	if (desc != NULL && *desc != '\0') {
		putchar('\t');
		for (const unsigned char *s = (const unsigned char *)desc;
		    *s != '\0' && n < COMPLETE_DESC_MAX; s++, n++)
			putchar(*s < 0x20 || *s == 0x7f ? ' ' : *s);
		if (n == COMPLETE_DESC_MAX)
			fputs("...", stdout);
	}
	putchar('\n');
}

/* complete_print when word starts with c->cur. */
static void
complete_emit(const struct complete *c, const char *word, const char *desc)
{
	if (word != NULL && *word != '\0' && strncmp(word, c->cur, strlen(c->cur)) == 0)
		complete_print(c, word, desc);
}

static void
complete_words(const struct complete *c, const char *const *words)
{
	for (; *words != NULL; words++)
		complete_emit(c, *words, NULL);
}

/* The first line of a command's summary, for a description (static buffer). */
static const char *
complete_summary(const struct cli_cmd *cmd)
{
	static char line[COMPLETE_DESC_MAX + 1];
	size_t n = strcspn(cmd->summary, "\n");

	snprintf(line, sizeof line, "%.*s", (int)n, cmd->summary);
	return line;
}

/* The option of cmd named name (a long name), or NULL. */
static const struct cli_option *
complete_option(const struct cli_cmd *cmd, const char *name, size_t len)
{
	if (cmd == NULL)
		return NULL;
	for (const struct cli_option *o = cmd->options; o->name != NULL; o++) {
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	}
	return NULL;
}

/* The global option named name, or NULL. */
static const struct option *
complete_global(const char *name, size_t len)
{
	for (const struct option *o = cli_globals; o->name != NULL; o++) {
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	}
	return NULL;
}

/* The long name of a short option letter of cmd or a global one (-f: "follow"), or NULL. */
static const char *
complete_short(const struct cli_cmd *cmd, char letter)
{
	for (const struct cli_option *o = cmd ? cmd->options : cli_no_options; o->name; o++) {
		if (cli_short(o->name) == letter)
			return o->name;
	}
	for (const struct option *g = cli_globals; g->name != NULL; g++) {
		if (cli_short(g->name) == letter)
			return g->name;
	}
	return NULL;
}

/* True when the option named name (of cmd, else global) takes a value. */
static bool
complete_takes_value(const struct cli_cmd *cmd, const char *name, size_t len)
{
	const struct cli_option *o = complete_option(cmd, name, len);
	const struct option *g;

	if (o != NULL)
		return o->has_value;
	g = complete_global(name, len);
	return g != NULL && g->has_arg == required_argument;
}

static bool
complete_is_word(const char *s, size_t len, bool upper)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (upper ? !(isupper(ch) || ch == '_' || ch == '=' || (i > 0 && isdigit(ch))) :
		    !(islower(ch) || isdigit(ch) || ch == '-'))
			return false;
	}
	return true;
}

/*
 * Reads cmd's usage: the placeholders of its arguments into u, and, when
 * option is not NULL, calls emit for each word the usage lists as a value
 * of --option ("--kind a|b|c"); returns how many it listed.
 */
static size_t
complete_scan_usage(const struct complete *c, const struct cli_cmd *cmd,
    struct complete_usage *u, const char *option)
{
	const char *s = cmd->usage, *value_of = NULL;
	size_t value_len = 0, listed = 0;

	memset(u, 0, sizeof *u);
	while (*s != '\0') {
		size_t len;
		const char *t;

		s += strspn(s, " \t\n[]()");
		len = strcspn(s, " \t\n[]()");
		if (len == 0)
			continue;
		t = s;
		s += len;
		if (len > 3 && strncmp(t + len - 3, "...", 3) == 0)
			len -= 3;
		if (value_of != NULL) {
			/* the value of the option before: a placeholder, or words a|b|c */
			for (const char *p = t; p < t + len;) {
				size_t n = strcspn(p, "|");

				if (n > (size_t)(t + len - p))
					n = (size_t)(t + len - p);
				if (complete_is_word(p, n, false) && option != NULL &&
				    value_len == strlen(option) &&
				    strncmp(value_of, option, value_len) == 0) {
					char *w = xasprintf("%.*s", (int)n, p);

					complete_emit(c, w, NULL);
					free(w);
					listed++;
				}
				p += n + 1;
			}
			value_of = NULL;
		} else if (t[0] == '-') {
			/* "-f|--follow", "--project" */
			for (const char *p = t; p < t + len;) {
				size_t n = strcspn(p, "|");
				const char *name = p + strspn(p, "-");

				if (n > (size_t)(t + len - p))
					n = (size_t)(t + len - p);
				if (p[1] == '-' && complete_takes_value(cmd, name,
				    n - (size_t)(name - p))) {
					value_of = name;
					value_len = n - (size_t)(name - p);
				}
				p += n + 1;
			}
		} else if (complete_is_word(t, len, true) && u->arg_count < COMPLETE_POSITIONALS &&
		    (cmd->max_args < 0 || u->arg_count < (size_t)cmd->max_args)) {
			u->args[u->arg_count++] = (struct complete_token){ t, len };
			u->last_repeats = t[len] == '.';
		}
	}
	return listed;
}

/* Milliseconds left of the budget; 0 when it is spent. */
static long
complete_left_ms(const struct complete *c)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (c->deadline.tv_sec - now.tv_sec) * 1000 +
	    (c->deadline.tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/* The service, connected once; NULL when there is none or no time is left. */
static struct td_client *
complete_client(struct complete *c, struct td_request_options *opts)
{
	struct td_connect_options co = { .request_timeout_ms = complete_budget_ms() };
	struct td_error err;

	if (!c->offline && c->client == NULL && td_connect(&c->client, &co, &err) != TD_OK)
		c->offline = true;
	if (!c->offline && (opts->timeout_ms = complete_left_ms(c)) == 0)
		c->offline = true;
	return c->offline ? NULL : c->client;
}

/* After a failed request: stop asking (the service is away or slow). */
static void
complete_failed(struct complete *c)
{
	c->offline = true;
}

/* The projects, or NULL; free with td_project_list_free. */
static struct td_project_list *
complete_projects(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_project_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client != NULL && td_list_projects(client, COMPLETE_PAGE, NULL, &opts, &list,
	    &err) != TD_OK) {
		complete_failed(c);
		list = NULL;
	}
	return list;
}

/* True when project p is the one --project named on the line (by id or name), or none did. */
static bool
complete_project_wanted(const struct complete *c, const struct td_project *p)
{
	return c->project == NULL || strcmp(c->project, p->id) == 0 ||
	    strcmp(c->project, p->name) == 0;
}

/* The sessions of one project, or NULL. */
static struct td_session_list *
complete_sessions(struct complete *c, const char *project_id)
{
	struct td_request_options opts = { 0 };
	struct td_session_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client != NULL && td_list_sessions(client, project_id, COMPLETE_PAGE, NULL, &opts,
	    &list, &err) != TD_OK) {
		complete_failed(c);
		list = NULL;
	}
	return list;
}

/* What the label of an item (a name, a title) does beside describing its id. */
enum complete_label {
	COMPLETE_LABEL_ONLY,	/* describes the id */
	COMPLETE_LABEL_FINDS_ID,	/* its start also finds the id (bash, zsh) */
	COMPLETE_LABEL_TAKEN,	/* a candidate too: the command takes names */
	COMPLETE_LABEL_TAKEN_TYPED,	/* a candidate once a word is typed (long titles) */
};

/*
 * Prints an item: its id when it starts with c->cur (the label as its
 * description), and per how, its label (the id as its description); a
 * label matches ignoring case, as the commands match names.
 */
static void
complete_item(const struct complete *c, const char *id, const char *label,
    enum complete_label how)
{
	size_t n = strlen(c->cur);
	bool by_id = strncmp(id, c->cur, n) == 0;
	bool by_label = label != NULL && *label != '\0' && fold_has_prefix(label, c->cur);

	if (by_id || (how == COMPLETE_LABEL_FINDS_ID && n > 0 && by_label))
		complete_print(c, id, label);
	if (by_label && (how == COMPLETE_LABEL_TAKEN ||
	    (how == COMPLETE_LABEL_TAKEN_TYPED && n > 0 && !by_id)))
		complete_print(c, label, id);
}

static void
complete_project_items(struct complete *c)
{
	struct td_project_list *list = complete_projects(c);

	for (size_t i = 0; list != NULL && i < list->count; i++) {
		complete_item(c, list->items[i].id, list->items[i].name, COMPLETE_LABEL_TAKEN);
	}
	td_project_list_free(list);
}

/* Calls fn for each session of the wanted projects (or of --session alone). */
static void
complete_each_session(struct complete *c, void (*fn)(struct complete *,
    const struct td_session *))
{
	struct td_project_list *projects;

	if (c->session != NULL) {
		struct td_session s = { .id = (char *)c->session };

		fn(c, &s);
		return;
	}
	projects = complete_projects(c);
	for (size_t i = 0; projects != NULL && i < projects->count && !c->offline; i++) {
		struct td_session_list *sessions;

		if (!complete_project_wanted(c, &projects->items[i]))
			continue;
		sessions = complete_sessions(c, projects->items[i].id);
		for (size_t k = 0; sessions != NULL && k < sessions->count && !c->offline; k++)
			fn(c, &sessions->items[k]);
		td_session_list_free(sessions);
	}
	td_project_list_free(projects);
}

static void
complete_session_item(struct complete *c, const struct td_session *s)
{
	complete_item(c, s->id, s->title, COMPLETE_LABEL_TAKEN_TYPED);
}

static void
complete_artifact_items(struct complete *c, const struct td_session *s)
{
	struct td_request_options opts = { 0 };
	struct td_artifact_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client == NULL)
		return;
	if (td_list_artifacts(client, s->id, false, COMPLETE_PAGE, NULL, &opts, &list,
	    &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	for (size_t i = 0; i < list->count; i++)
		complete_item(c, list->items[i].id, list->items[i].path,
		    COMPLETE_LABEL_FINDS_ID);
	td_artifact_list_free(list);
}

static void
complete_run_list(struct complete *c, const struct td_run_filter *filter)
{
	struct td_request_options opts = { 0 };
	struct td_run_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client == NULL)
		return;
	if (td_list_runs(client, filter, COMPLETE_PAGE, NULL, &opts, &list, &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	for (size_t i = 0; i < list->count; i++) {
		const struct td_run *r = &list->items[i];
		char *desc = xasprintf("%s: %s", r->status, r->prompt ? r->prompt : "");

		complete_item(c, r->id, desc, COMPLETE_LABEL_ONLY);
		free(desc);
	}
	td_run_list_free(list);
}

static void
complete_run_items(struct complete *c)
{
	struct td_project_list *projects;

	if (c->session != NULL) {
		complete_run_list(c, &(struct td_run_filter){ .session_id = c->session });
		return;
	}
	projects = complete_projects(c);
	for (size_t i = 0; projects != NULL && i < projects->count && !c->offline; i++) {
		if (complete_project_wanted(c, &projects->items[i]))
			complete_run_list(c, &(struct td_run_filter){
			    .project_id = projects->items[i].id });
	}
	td_project_list_free(projects);
}

static void
complete_prompt_items(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_permission_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client == NULL)
		return;
	if (td_list_permissions(client, NULL, c->run, COMPLETE_PAGE, NULL, &opts, &list,
	    &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	for (size_t i = 0; i < list->count; i++) {
		const struct td_permission *p = &list->items[i];
		char *desc = xasprintf("%s: %s", p->tool, p->summary ? p->summary : "");

		complete_item(c, p->id, desc, COMPLETE_LABEL_ONLY);
		free(desc);
	}
	td_permission_list_free(list);
}

/* --field of permissions allow PROMPT: the fields of its form, as NAME=. */
static void
complete_field_items(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_client *client;
	struct td_permission *p;
	struct td_form *form;
	struct td_error err;

	if (c->first == NULL || (client = complete_client(c, &opts)) == NULL)
		return;
	if (td_get_permission(client, c->first, &opts, &p, &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	if (td_form_parse(p->input_json, &form, NULL) == TD_OK) {
		for (size_t i = 0; i < form->field_count; i++) {
			const struct td_form_field *f = &form->fields[i];
			char *word = xasprintf("%s=", f->name);
			char *desc = xasprintf("%s%s%s%s", f->type, f->required ? ", required" : "",
			    f->description != NULL ? ": " : "",
			    f->description != NULL ? f->description : "");

			if (strncmp(word, c->cur, strlen(c->cur)) == 0)
				complete_print(c, word, desc);
			free(word);
			free(desc);
		}
		td_form_free(form);
	}
	td_permission_free(p);
}

/*
 * The models the runs of the projects (--project when given) were made with
 * and that seen (nseen of them) does not hold yet, the provider as
 * description; seen grows with them.
 */
static void
complete_model_used_items(struct complete *c, char ***seenp, size_t *nseenp)
{
	struct td_request_options opts = { 0 };
	struct td_project_list *projects = complete_projects(c);
	struct td_client *client = complete_client(c, &opts);
	char **seen = *seenp;
	size_t nseen = *nseenp;

	for (size_t i = 0; client != NULL && projects != NULL && i < projects->count &&
	    !c->offline; i++) {
		struct td_run_list *list;
		struct td_error err;

		if (!complete_project_wanted(c, &projects->items[i]))
			continue;
		if (td_list_runs(client, &(struct td_run_filter){ .project_id =
		    projects->items[i].id }, COMPLETE_PAGE, NULL, &opts, &list, &err) != TD_OK) {
			complete_failed(c);
			break;
		}
		for (size_t k = 0; k < list->count; k++) {
			const struct td_run *r = &list->items[k];
			bool known = r->config.model == NULL;

			for (size_t j = 0; !known && j < nseen; j++)
				known = strcmp(seen[j], r->config.model) == 0;
			if (known || strncmp(r->config.model, c->cur, strlen(c->cur)) != 0)
				continue;
			seen = xrealloc(seen, (nseen + 1) * sizeof *seen);
			seen[nseen++] = xstrdup(r->config.model);
			complete_print(c, r->config.model, r->config.provider);
		}
		td_run_list_free(list);
	}
	*seenp = seen;
	*nseenp = nseen;
	td_project_list_free(projects);
}

static void
complete_connector_items(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_connector_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client == NULL)
		return;
	if (td_list_connectors(client, COMPLETE_PAGE, NULL, &opts, &list, &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	for (size_t i = 0; i < list->count; i++)
		complete_item(c, list->items[i].id, list->items[i].name,
		    COMPLETE_LABEL_FINDS_ID);
	td_connector_list_free(list);
}

/* Credentials by id and name; their secrets never leave the service. */
static void
complete_credential_items(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_credential_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;

	if (client == NULL)
		return;
	if (td_list_credentials(client, COMPLETE_PAGE, NULL, &opts, &list, &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	for (size_t i = 0; i < list->count; i++)
		complete_item(c, list->items[i].id, list->items[i].name,
		    COMPLETE_LABEL_FINDS_ID);
	td_credential_list_free(list);
}

/*
 * --model: the models of --provider (else the default provider), as the
 * provider lists them, then those the runs here were made with.
 */
static void
complete_model_items(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_model_list *list = NULL;
	struct td_client *client = complete_client(c, &opts);
	struct td_error err;
	char **seen = NULL;
	size_t nseen = 0;

	if (client == NULL)
		return;
	/* A provider that does not answer (the service's 502) still leaves the runs' models. */
	if (td_list_models(client, c->provider ? c->provider : "default", &opts, &list,
	    &err) == TD_OK) {
		seen = xcalloc(list->count + 1, sizeof *seen);
		for (size_t i = 0; i < list->count; i++) {
			complete_item(c, list->items[i].id, list->items[i].display_name,
			    COMPLETE_LABEL_ONLY);
			seen[nseen++] = xstrdup(list->items[i].id);
		}
		td_model_list_free(list);
	}
	complete_model_used_items(c, &seen, &nseen);
	for (size_t j = 0; j < nseen; j++)
		free(seen[j]);
	free(seen);
}

/*
 * Where the current directory is inside the workspace dir ("sub/dir"), or
 * NULL when it is the workspace itself or outside it; free() it.
 */
static char *
complete_dir_in(const char *dir)
{
	char here[4096], *real = realpath(dir, NULL), *rest = NULL;
	size_t n;

	if (real == NULL || getcwd(here, sizeof here) == NULL) {
		free(real);
		return NULL;
	}
	n = strlen(real);
	if (strncmp(here, real, n) == 0 && here[n] == '/' && here[n + 1] != '\0')
		rest = xstrdup(here + n + 1);
	free(real);
	return rest;
}

/*
 * The files the run of the first argument changed, by their paths as runs
 * diff takes them: relative to the current directory when it is inside the
 * run's workspace, else to the workspace.
 */
static void
complete_changed_path_items(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_client *client = complete_client(c, &opts);
	struct td_changes *ch = NULL;
	struct td_run *run = NULL;
	struct td_error err;
	char *in = NULL;
	size_t depth = 0, inlen = 0;

	if (client == NULL || c->first == NULL)
		return;
	if (td_get_run(client, c->first, &opts, &run, &err) != TD_OK ||
	    (client = complete_client(c, &opts)) == NULL ||
	    td_get_run_changes(client, c->first, c->from, &opts, &ch, &err) != TD_OK) {
		td_run_free(run);
		complete_failed(c);
		return;
	}
	if (run->cwd != NULL && (in = complete_dir_in(run->cwd)) != NULL) {
		inlen = strlen(in);
		depth = 1;
		for (const char *p = in; *p != '\0'; p++)
			depth += *p == '/';
	}
	for (size_t i = 0; i < ch->file_count; i++) {
		const struct td_change_file *f = &ch->files[i];
		char *desc = xasprintf("%c +%ld -%ld", td_change_letter(f->status), f->additions,
		    f->deletions);
		struct buf path;

		buf_init(&path, 0);
		if (in != NULL && strncmp(f->path, in, inlen) == 0 && f->path[inlen] == '/')
			buf_appends(&path, f->path + inlen + 1);
		else {
			for (size_t d = 0; d < depth; d++)
				buf_appends(&path, "../");
			buf_appends(&path, f->path);
		}
		complete_emit(c, path.data, desc);
		buf_free(&path);
		free(desc);
	}
	free(in);
	td_run_free(run);
	td_changes_free(ch);
}

/* The runs of the session of the first argument's run, for --from RUN. */
static void
complete_session_runs(struct complete *c)
{
	struct td_request_options opts = { 0 };
	struct td_client *client = complete_client(c, &opts);
	struct td_run *run;
	struct td_error err;

	if (client == NULL || c->first == NULL)
		return;
	if (td_get_run(client, c->first, &opts, &run, &err) != TD_OK) {
		complete_failed(c);
		return;
	}
	complete_run_list(c, &(struct td_run_filter){ .session_id = run->session_id });
	td_run_free(run);
}

/* Prints the candidates of one kind of value. */
static void
complete_kind(struct complete *c, enum complete_kind kind, const char *const *words)
{
	switch (kind) {
	case COMPLETE_NONE:
		break;
	case COMPLETE_PROJECT:
		complete_project_items(c);
		break;
	case COMPLETE_SESSION:
		complete_each_session(c, complete_session_item);
		break;
	case COMPLETE_RUN:
		complete_run_items(c);
		break;
	case COMPLETE_ARTIFACT:
		complete_each_session(c, complete_artifact_items);
		break;
	case COMPLETE_PROMPT:
		complete_prompt_items(c);
		break;
	case COMPLETE_CONNECTOR:
		complete_connector_items(c);
		break;
	case COMPLETE_CREDENTIAL:
		complete_credential_items(c);
		break;
	case COMPLETE_MODEL:
		complete_model_items(c);
		break;
	case COMPLETE_CHANGED_PATH:
		complete_changed_path_items(c);
		break;
	case COMPLETE_FILE:
		puts(":file");
		break;
	case COMPLETE_DIR:
		puts(":dir");
		break;
	case COMPLETE_WORDS:
		complete_words(c, words);
		break;
	case COMPLETE_FIELD:
		complete_field_items(c);
		break;
	}
}

/* The value of --name (len bytes) of c->cmd. */
static void
complete_option_value(struct complete *c, const char *name, size_t len)
{
	struct complete_usage u;
	char *option;

	if (complete_option(c->cmd, name, len) == NULL && complete_global(name, len) == NULL)
		return;
	option = xasprintf("%.*s", (int)len, name);
	if (c->cmd == NULL || complete_scan_usage(c, c->cmd, &u, option) == 0) {
		for (size_t i = 0; i < sizeof complete_options / sizeof complete_options[0]; i++) {
			if (strcmp(complete_options[i].option, option) == 0 &&
			    (complete_options[i].group == NULL || (c->group != NULL &&
			    strcmp(complete_options[i].group, c->group) == 0))) {
				complete_kind(c, complete_options[i].kind, complete_options[i].words);
				break;
			}
		}
	}
	/* --from start|RUN of runs changes|diff: RUN among the runs of RUN's session */
	if (c->group != NULL && strcmp(c->group, "runs") == 0 && strcmp(option, "from") == 0)
		complete_session_runs(c);
	free(option);
}

/* Argument number index (from 0) of c->cmd. */
static void
complete_argument(struct complete *c, size_t index)
{
	struct complete_usage u;
	const struct complete_token *t;

	complete_scan_usage(c, c->cmd, &u, NULL);
	if (u.arg_count == 0 || (index >= u.arg_count && !u.last_repeats))
		return;
	t = &u.args[index < u.arg_count ? index : u.arg_count - 1];
	for (size_t i = 0; i < sizeof complete_args / sizeof complete_args[0]; i++) {
		const char *p = complete_args[i].placeholder, *own = complete_args[i].own;

		if ((p != NULL && strlen(p) == t->len && strncmp(p, t->start, t->len) == 0) ||
		    (own != NULL && strlen(own) == t->len && strncmp(own, t->start, t->len) == 0 &&
		    strcmp(complete_args[i].group, c->group) == 0)) {
			complete_kind(c, complete_args[i].kind, complete_args[i].words);
			return;
		}
	}
}

/* The options of c->cmd (and the global ones). */
static void
complete_options_of(const struct complete *c)
{
	char *word;

	if (c->cmd != NULL) {
		for (const struct cli_option *o = c->cmd->options; o->name != NULL; o++) {
			char letter = cli_short(o->name);

			word = xasprintf("--%s", o->name);
			complete_emit(c, word, NULL);
			free(word);
			if (letter != 0) {
				word = xasprintf("-%c", letter);
				complete_emit(c, word, o->name);
				free(word);
			}
		}
	}
	for (const struct option *g = cli_globals; g->name != NULL; g++) {
		char letter = cli_short(g->name);

		if (complete_option(c->cmd, g->name, strlen(g->name)) != NULL)
			continue;
		word = xasprintf("--%s", g->name);
		complete_emit(c, word, NULL);
		free(word);
		if (letter != 0) {
			word = xasprintf("-%c", letter);
			complete_emit(c, word, g->name);
			free(word);
		}
	}
}

/* Number of words of a command's name. */
static size_t
complete_name_words(const char *name)
{
	size_t n = 0;

	while (name != NULL && *name != '\0') {
		name += strspn(name, " ");
		if (*name != '\0')
			n++;
		name += strcspn(name, " ");
	}
	return n;
}

/* Word index (from 0) of name, with its length; NULL when it has fewer. */
static const char *
complete_name_word(const char *name, size_t index, size_t *len)
{
	for (size_t i = 0; name != NULL && *name != '\0'; i++) {
		name += strspn(name, " ");
		*len = strcspn(name, " ");
		if (i == index)
			return *len > 0 ? name : NULL;
		name += *len;
	}
	return NULL;
}

/* True when the first n words of cmd's name are sub[0..n). */
static bool
complete_name_starts(const struct cli_cmd *cmd, char **sub, size_t n)
{
	size_t len;

	for (size_t i = 0; i < n; i++) {
		const char *w = complete_name_word(cmd->name, i, &len);

		if (w == NULL || strlen(sub[i]) != len || strncmp(w, sub[i], len) != 0)
			return false;
	}
	return true;
}

/* A group's description: its command's summary, or its subcommands (static buffer). */
static const char *
complete_group_summary(const struct cli_cmd *first)
{
	static char line[COMPLETE_DESC_MAX + 1];
	size_t n = 0;

	if (first->name == NULL)
		return complete_summary(first);
	line[0] = '\0';
	for (const struct cli_cmd *const *p = cli_cmds; *p != NULL; p++) {
		if (strcmp((*p)->group, first->group) == 0 && n < sizeof line)
			n += (size_t)snprintf(line + n, sizeof line - n, "%s%s",
			    n > 0 ? ", " : "", (*p)->name);
	}
	return line;
}

/* The groups (one line each, in the order of taskdeck --help), and help. */
static void
complete_groups(const struct complete *c, bool with_help)
{
	for (const struct cli_cmd *const *p = cli_cmds; *p != NULL; p++) {
		bool seen = false;

		for (const struct cli_cmd *const *q = cli_cmds; q < p && !seen; q++)
			seen = strcmp((*q)->group, (*p)->group) == 0;
		if (!seen)
			complete_emit(c, (*p)->group, complete_group_summary(*p));
	}
	if (with_help)
		complete_emit(c, "help", "show the help of a command");
}

/* The next word of the names of group's commands after sub[0..n). */
static void
complete_subcommands(const struct complete *c, const char *group, char **sub, size_t n)
{
	size_t len;

	for (const struct cli_cmd *const *p = cli_cmds; *p != NULL; p++) {
		const char *w;
		char *word;
		bool seen = false;

		if (strcmp((*p)->group, group) != 0 || !complete_name_starts(*p, sub, n) ||
		    (w = complete_name_word((*p)->name, n, &len)) == NULL)
			continue;
		word = xasprintf("%.*s", (int)len, w);
		for (const struct cli_cmd *const *q = cli_cmds; q < p && !seen; q++) {
			size_t l2;
			const char *w2;

			seen = strcmp((*q)->group, group) == 0 && complete_name_starts(*q, sub, n) &&
			    (w2 = complete_name_word((*q)->name, n, &l2)) != NULL && l2 == len &&
			    strncmp(w2, w, len) == 0;
		}
		if (!seen)
			complete_emit(c, word, complete_name_words((*p)->name) == n + 1 ?
			    complete_summary(*p) : NULL);
		free(word);
	}
}

/* The command of group named exactly sub[0..n), or NULL. */
static const struct cli_cmd *
complete_find(const char *group, char **sub, size_t n)
{
	for (const struct cli_cmd *const *p = cli_cmds; *p != NULL; p++) {
		if (strcmp((*p)->group, group) == 0 && complete_name_words((*p)->name) == n &&
		    complete_name_starts(*p, sub, n))
			return *p;
	}
	return NULL;
}

/* Remembers --project, --session and --run given on the line. */
static void
complete_note(struct complete *c, const char *name, const char *value)
{
	if (strcmp(name, "project") == 0)
		c->project = value;
	else if (strcmp(name, "session") == 0)
		c->session = value;
	else if (strcmp(name, "run") == 0)
		c->run = value;
	else if (strcmp(name, "from") == 0)
		c->from = value;
	else if (strcmp(name, "provider") == 0)
		c->provider = value;
}

int
cli_complete(int argc, char **argv)
{
	struct complete c = { .cur = argc > 0 ? argv[argc - 1] : "", .prefix = "" };
	char **sub = xcalloc((size_t)argc + 1, sizeof *sub);
	const char *pending = NULL;	/* the option whose value the next word is */
	size_t nsub = 0, args = 0;
	bool help = false, dashdash = false;
	int words = argc > 0 ? argc - 1 : 0;

	clock_gettime(CLOCK_MONOTONIC, &c.deadline);
	c.deadline.tv_sec += complete_budget_ms() / 1000;
	c.deadline.tv_nsec += (complete_budget_ms() % 1000) * 1000000L;
	if (c.deadline.tv_nsec >= 1000000000L) {
		c.deadline.tv_sec++;
		c.deadline.tv_nsec -= 1000000000L;
	}
	for (int i = 0; i < words; i++) {
		const char *w = argv[i];

		if (pending != NULL) {
			complete_note(&c, pending, w);
			pending = NULL;
		} else if (!dashdash && strcmp(w, "--") == 0) {
			dashdash = true;
		} else if (!dashdash && w[0] == '-' && w[1] == '-') {
			const char *name = w + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);

			if (eq != NULL) {
				char *n = xasprintf("%.*s", (int)len, name);

				complete_note(&c, n, eq + 1);
				free(n);
			} else if (complete_takes_value(c.cmd, name, len))
				pending = name;
		} else if (!dashdash && w[0] == '-' && w[1] != '\0') {
			const char *name = complete_short(c.cmd, w[1]);

			if (name != NULL && w[2] == '\0' &&
			    complete_takes_value(c.cmd, name, strlen(name)))
				pending = name;
		} else if (c.group == NULL && !help && strcmp(w, "help") == 0) {
			help = true;
		} else if (c.group == NULL) {
			c.group = w;
			c.cmd = complete_find(w, sub, 0);
		} else if (c.cmd == NULL) {
			sub[nsub++] = argv[i];
			c.cmd = complete_find(c.group, sub, nsub);
		} else if (args++ == 0)
			c.first = w;
	}

	if (pending != NULL) {
		complete_option_value(&c, pending, strlen(pending));
	} else if (!dashdash && strncmp(c.cur, "--", 2) == 0 && strchr(c.cur, '=') != NULL) {
		const char *eq = strchr(c.cur, '=');
		char *prefix = xasprintf("%.*s", (int)(eq + 1 - c.cur), c.cur);

		c.prefix = prefix;
		c.cur = eq + 1;
		complete_option_value(&c, prefix + 2, strlen(prefix) - 3);
		free(prefix);
	} else if (!dashdash && c.cur[0] == '-') {
		if (!help)
			complete_options_of(&c);
	} else if (c.group == NULL) {
		complete_groups(&c, !help);
	} else if (c.cmd == NULL) {
		complete_subcommands(&c, c.group, sub, nsub);
	} else if (!help) {
		complete_argument(&c, args);
	}
	fflush(stdout);
	td_client_free(c.client);
	free(sub);
	return CLI_EXIT_OK;
}
