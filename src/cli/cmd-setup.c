/*
 * taskdeck setup: the terminal setup flow (docs/cli.md): choose a provider,
 * name its API key, pick a model from the provider's own list, test it with one
 * short request and write settings.json atomically.  Flags for scripts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "names.h"
#include "paths.h"
#include "xalloc.h"

#define SETUP_HTTP_MAX (4u * 1024 * 1024)
#define SETUP_MODELS_SHOWN 40
#define SETUP_MODELS_MAX 1000
#define SETUP_KEY_MAX 16384	/* a credential's secret, at most */

static int cmd_setup_exec(struct cli *, int, char **);

static const struct cli_option setup_options[] = {
	{ "status", false },
	{ "repair", false },
	{ "provider", true },
	{ "kind", true },
	{ "base-url", true },
	{ "api-key-env", true },
	{ "api-key-stdin", false },
	{ "no-api-key", false },
	{ "model", true },
	{ "no-test", false },
	{ NULL, false }
};

const struct cli_cmd cmd_setup_entry = {
	"setup", NULL, "[--status | --repair | --provider NAME [--kind openai|anthropic|replay]\n"
	"      [--base-url URL] [--api-key-env NAME | --api-key-stdin | --no-api-key]\n"
	"      [--model M] [--no-test]]",
	"Set up taskdeck.  On a terminal with no flags: a guided choice of provider, API key\n"
	"(the name of an environment variable, or the key typed with echo off and stored as\n"
	"the credential provider-NAME), model (from the provider's own list) and a test\n"
	"request; then settings.json is written.  --api-key-stdin reads the key from stdin.\n"
	"--status: the first-run state (bootstrap status).  --repair: prepare or repair the\n"
	"managed runtime.  Without a terminal and without flags it shows what is set.",
	setup_options, 0, 0, cmd_setup_exec
};

/* The provider being set up. */
struct choice {
	char name[65];
	char kind[16];		/* "openai", "anthropic", "replay" */
	char base_url[2049];
	char key_env[NAMES_ENV_MAX + 1];	/* "" for none */
	char model[201];
	const char *key;	/* the key's value (from the environment or typed), or NULL */
	char cred_ref[201];	/* apiKeyCredential already in settings, or "" */
	char *typed;		/* a key typed or read from stdin (wiped), or NULL */
	char cred_id[65];	/* the credential it was stored in */
};

static const struct known {
	const char *name, *kind, *url, *key_env, *label;
} knowns[] = {
	{ "ollama", "openai", "http://127.0.0.1:11434/v1", "",
	  "a local Ollama or another OpenAI-compatible server (URL)" },
	{ "openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "OpenAI" },
	{ "anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY",
	  "Anthropic" },
	{ "replay", "replay", "", "", "the offline replay (recorded transcripts, no model)" },
};

static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static bool
url_ok(const char *s)
{
	return strlen(s) <= 2048 && (strncmp(s, "http://", 7) == 0 ||
	    strncmp(s, "https://", 8) == 0) && strcspn(s, " \t\r\n\"") == strlen(s);
}

/* Reads settings.json; NULL with a message on stderr. */
static cJSON *
settings_read(const char *path)
{
	FILE *f = fopen(path, "re");
	struct buf b;
	char chunk[4096];
	size_t n;
	cJSON *doc;

	if (f == NULL)
		return NULL;
	buf_init(&b, 256 * 1024);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (!buf_append(&b, chunk, n))
			break;
	fclose(f);
	doc = b.data ? json_parse(b.data, b.len) : NULL;
	buf_free(&b);
	if (!cJSON_IsObject(doc)) {
		fprintf(stderr, "taskdeck: %s is not a JSON object; fix it or move it away\n", path);
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* Writes doc to path atomically: a private temporary file, fsync, rename. */
static bool
settings_write(const char *path, const cJSON *doc)
{
	char *text = cJSON_Print(doc), *tmp = xasprintf("%s.setup.%ld", path, (long)getpid());
	size_t len = strlen(text);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
	    fsync(fd) == 0;

	if (fd >= 0)
		close(fd);
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		fprintf(stderr, "taskdeck: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(text);
	return ok;
}

static size_t
collect(char *data, size_t size, size_t n, void *ud)
{
	return buf_append(ud, data, size * n) ? size * n : 0;
}

/* One request to the provider; the HTTP status, or 0 with why set. */
static long
provider_http(const struct choice *c, const char *method, const char *url, const char *body,
    struct buf *out, char *why, size_t wsize)
{
	CURL *curl = curl_easy_init();
	struct curl_slist *h = NULL;
	char *line = NULL, errbuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode rc;

	buf_init(out, SETUP_HTTP_MAX);
	if (curl == NULL) {
		snprintf(why, wsize, "libcurl failed to start");
		return 0;
	}
	if (strcmp(c->kind, "anthropic") == 0) {
		h = curl_slist_append(h, "anthropic-version: 2023-06-01");
		if (c->key != NULL) {
			line = xasprintf("x-api-key: %s", c->key);
			h = curl_slist_append(h, line);
		}
	} else if (c->key != NULL) {
		line = xasprintf("Authorization: Bearer %s", c->key);
		h = curl_slist_append(h, line);
	}
	if (body != NULL)
		h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL)
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	rc = curl_easy_perform(curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(why, wsize, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
	curl_slist_free_all(h);
	if (line != NULL) {
		explicit_bzero(line, strlen(line));
		free(line);
	}
	curl_easy_cleanup(curl);
	return status;
}

/* The URL of path under the provider's base ("/models"; Anthropic adds /v1). */
static char *
setup_provider_url(const struct choice *c, const char *path)
{
	size_t n = strlen(c->base_url);

	while (n > 0 && c->base_url[n - 1] == '/')
		n--;
	if (strcmp(c->kind, "anthropic") == 0)
		return xasprintf("%.*s/v1%s", (int)n, c->base_url, path);
	return xasprintf("%.*s%s", (int)n, c->base_url, path);
}

/* The provider's model ids (GET /models); NULL with why set. */
static cJSON *
list_models(const struct choice *c, char *why, size_t wsize)
{
	char *url = setup_provider_url(c, "/models");
	struct buf out;
	long status = provider_http(c, "GET", url, NULL, &out, why, wsize);
	cJSON *doc = NULL, *ids = NULL, *m;

	free(url);
	if (status >= 200 && status < 300 && out.data != NULL)
		doc = json_parse(out.data, out.len);
	else if (status != 0)
		snprintf(why, wsize, "GET /models answered HTTP %ld", status);
	if (doc != NULL) {
		ids = cJSON_CreateArray();
		cJSON_ArrayForEach(m, cJSON_GetObjectItem(doc, "data")) {
			const char *id = json_get_string(m, "id");
			if (id != NULL && strlen(id) <= 200 && cJSON_GetArraySize(ids) < SETUP_MODELS_MAX)
				cJSON_AddItemToArray(ids, cJSON_CreateString(id));
		}
		if (cJSON_GetArraySize(ids) == 0) {
			snprintf(why, wsize, "the provider listed no models");
			cJSON_Delete(ids);
			ids = NULL;
		}
	} else if (status >= 200 && status < 300) {
		snprintf(why, wsize, "GET /models did not answer JSON");
	}
	cJSON_Delete(doc);
	buf_free(&out);
	return ids;
}

static bool
models_has(const cJSON *ids, const char *model)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, ids)
		if (strcmp(m->valuestring, model) == 0)
			return true;
	return false;
}

/* One short request to the model; true when it answered 2xx. */
static bool
test_model(const struct choice *c, char *why, size_t wsize)
{
	cJSON *req = cJSON_CreateObject(), *msgs, *msg;
	char *url, *body;
	struct buf out;
	long status;

	cJSON_AddStringToObject(req, "model", c->model);
	cJSON_AddNumberToObject(req, "max_tokens", 16);
	msgs = cJSON_AddArrayToObject(req, "messages");
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "role", "user");
	cJSON_AddStringToObject(msg, "content", "Reply with the word ready.");
	cJSON_AddItemToArray(msgs, msg);
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	url = setup_provider_url(c, strcmp(c->kind, "anthropic") == 0 ? "/messages" :
	    "/chat/completions");
	status = provider_http(c, "POST", url, body, &out, why, wsize);
	if (status != 0 && (status < 200 || status >= 300))
		snprintf(why, wsize, "the test request answered HTTP %ld", status);
	free(url);
	free(body);
	buf_free(&out);
	return status >= 200 && status < 300;
}

/* A line from stdin after prompt (shown with its default); def when empty. */
static bool
ask(const char *prompt, const char *def, char *out, size_t size)
{
	char line[2100];
	size_t n;

	if (def != NULL && *def != '\0')
		printf("%s [%s]: ", prompt, def);
	else
		printf("%s: ", prompt);
	fflush(stdout);
	if (fgets(line, sizeof line, stdin) == NULL)
		return false;
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	snprintf(out, size, "%s", n > 0 ? line : (def ? def : ""));
	return true;
}

static const cJSON *
current_provider(const cJSON *doc, const char **name)
{
	*name = json_get_string(cJSON_GetObjectItem(doc, "defaults"), "provider");
	return *name ? cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "providers"), *name) : NULL;
}

static void
show_current(const cJSON *doc, const char *path)
{
	const char *name, *model;
	const cJSON *p = current_provider(doc, &name);

	model = json_get_string(cJSON_GetObjectItem(doc, "defaults"), "model");
	printf("Settings: %s\n", path);
	printf("Provider: %s (%s%s%s)\n", name ? name : "-", json_get_string(p, "kind") ?
	    json_get_string(p, "kind") : "?", json_get_string(p, "baseUrl") ? ", " : "",
	    json_get_string(p, "baseUrl") ? json_get_string(p, "baseUrl") : "");
	if (json_get_string(p, "apiKeyCredential") != NULL)
		printf("API key:  stored credential %s\n", json_get_string(p, "apiKeyCredential"));
	else
		printf("API key:  %s\n", json_get_string(p, "apiKeyEnv") ? json_get_string(p,
		    "apiKeyEnv") : "none");
	printf("Model:    %s\n", model ? model : json_get_string(p, "defaultModel") ?
	    json_get_string(p, "defaultModel") : "-");
}

/* Fills c from a provider already in settings, else a known one; false for neither. */
static bool
choice_from(struct choice *c, const cJSON *doc, const char *name)
{
	const cJSON *p = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "providers"), name);

	snprintf(c->name, sizeof c->name, "%s", name);
	if (p != NULL) {
		snprintf(c->kind, sizeof c->kind, "%s", json_get_string(p, "kind") ?
		    json_get_string(p, "kind") : "openai");
		snprintf(c->base_url, sizeof c->base_url, "%s", json_get_string(p, "baseUrl") ?
		    json_get_string(p, "baseUrl") : "");
		snprintf(c->key_env, sizeof c->key_env, "%s", json_get_string(p, "apiKeyEnv") ?
		    json_get_string(p, "apiKeyEnv") : "");
		snprintf(c->model, sizeof c->model, "%s", json_get_string(p, "defaultModel") ?
		    json_get_string(p, "defaultModel") : "");
		snprintf(c->cred_ref, sizeof c->cred_ref, "%s",
		    json_get_string(p, "apiKeyCredential") ?
		    json_get_string(p, "apiKeyCredential") : "");
		return true;
	}
	for (size_t i = 0; i < sizeof knowns / sizeof knowns[0]; i++) {
		if (strcmp(knowns[i].name, name) == 0) {
			snprintf(c->kind, sizeof c->kind, "%s", knowns[i].kind);
			snprintf(c->base_url, sizeof c->base_url, "%s", knowns[i].url);
			snprintf(c->key_env, sizeof c->key_env, "%s", knowns[i].key_env);
			return true;
		}
	}
	return false;
}

/*
 * One line of at most SETUP_KEY_MAX bytes from fd 0 into a malloc'd
 * string (the caller wipes it); NULL with *why when it is empty or too long.
 */
static char *
read_key_line(const char **why)
{
	char *key = xmalloc(SETUP_KEY_MAX + 2);
	size_t n = 0;
	ssize_t got;

	while (n < SETUP_KEY_MAX + 1) {
		got = read(STDIN_FILENO, key + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || key[n] == '\n')
			break;
		n++;
	}
	if (n > 0 && key[n - 1] == '\r')
		n--;
	key[n] = '\0';
	*why = n == 0 ? "the key is empty" : n > SETUP_KEY_MAX ? "the key is longer than "
	    "16384 bytes" : NULL;
	if (*why != NULL) {
		explicit_bzero(key, SETUP_KEY_MAX + 2);
		free(key);
		return NULL;
	}
	return key;
}

/* The key typed on the terminal with echo off. */
static char *
read_key_tty(void)
{
	struct termios old, quiet;
	const char *why;
	char *key;
	bool restore = tcgetattr(STDIN_FILENO, &old) == 0;

	printf("API key (not shown): ");
	fflush(stdout);
	if (restore) {
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		quiet.c_lflag |= ECHONL;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	key = read_key_line(&why);
	if (restore)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
	if (key == NULL)
		fprintf(stderr, "taskdeck: %s\n", why);
	return key;
}

/* The guided flow on a terminal: fills c; false when the user gave up. */
static bool
interactive(struct choice *c, const cJSON *doc)
{
	const char *cur_name;
	char answer[2100];
	size_t pick = 0, nknown = sizeof knowns / sizeof knowns[0];

	current_provider(doc, &cur_name);
	printf("\nWhich model provider?\n");
	for (size_t i = 0; i < nknown; i++) {
		printf("  %zu) %s\n", i + 1, knowns[i].label);
		if (cur_name && strcmp(cur_name, knowns[i].name) == 0)
			pick = i + 1;
	}
	snprintf(answer, sizeof answer, "%zu", pick ? pick : 1);
	if (!ask("Choice", answer, answer, sizeof answer))
		return false;
	pick = (size_t)strtoul(answer, NULL, 10);
	if (pick < 1 || pick > nknown) {
		fprintf(stderr, "taskdeck: choose 1 to %zu\n", nknown);
		return false;
	}
	choice_from(c, doc, knowns[pick - 1].name);
	if (strcmp(c->kind, "replay") == 0)
		return true;
	if (pick == 1 || c->base_url[0] == '\0') {
		if (!ask("Base URL of the server (…/v1)", c->base_url, c->base_url,
		    sizeof c->base_url) || !url_ok(c->base_url)) {
			fprintf(stderr, "taskdeck: the URL must start with http:// or https://\n");
			return false;
		}
	}
	printf("\nThe API key: give the NAME of an environment variable that holds it, * to\n"
	    "type the key (stored sealed as the credential provider-%s), or - for none (a\n"
	    "local server).  The key itself is never written to settings.json.\n", c->name);
	if (!ask("Environment variable, * or -", c->cred_ref[0] ? "*" : c->key_env[0] ?
	    c->key_env : "-", answer, sizeof answer))
		return false;
	if (strcmp(answer, "*") == 0) {
		c->key_env[0] = '\0';
		if ((c->typed = read_key_tty()) == NULL)
			return false;
	} else if (strcmp(answer, "-") == 0) {
		c->key_env[0] = '\0';
		c->cred_ref[0] = '\0';
	} else if (names_env_valid(answer)) {
		snprintf(c->key_env, sizeof c->key_env, "%.*s", NAMES_ENV_MAX, answer);
		c->cred_ref[0] = '\0';
	} else {
		fprintf(stderr, "taskdeck: %s is not an environment variable name\n", answer);
		return false;
	}
	return true;
}

/* Picks the model from ids on a terminal. */
static bool
interactive_model(struct choice *c, const cJSON *ids)
{
	char answer[256];
	int i = 0, n = cJSON_GetArraySize(ids);
	const cJSON *m;

	printf("\n%d models:\n", n);
	cJSON_ArrayForEach(m, ids) {
		if (++i > SETUP_MODELS_SHOWN) {
			printf("  … and %d more (type a name)\n", n - SETUP_MODELS_SHOWN);
			break;
		}
		printf("  %d) %s\n", i, m->valuestring);
	}
	if (!ask("Model (number or name)", models_has(ids, c->model) ? c->model : NULL,
	    answer, sizeof answer) || answer[0] == '\0')
		return false;
	if (strspn(answer, "0123456789") == strlen(answer)) {
		i = atoi(answer);
		if (i < 1 || i > n) {
			fprintf(stderr, "taskdeck: choose 1 to %d\n", n);
			return false;
		}
		snprintf(c->model, sizeof c->model, "%s",
		    cJSON_GetArrayItem(ids, i - 1)->valuestring);
	} else {
		snprintf(c->model, sizeof c->model, "%.200s", answer);
	}
	return true;
}

/* settings.json, asking a running service to write its defaults when it is missing. */
static cJSON *
load_or_create(struct cli *cli, const char *path)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_setup_result *r = NULL;
	struct td_error err;

	if (access(path, F_OK) == 0)
		return settings_read(path);
	if (cli_connect(cli) != CLI_EXIT_OK ||
	    td_bootstrap(cli->client, "runtime", &opts, &r, &err) != TD_OK || !r->ok) {
		fprintf(stderr, "taskdeck: %s does not exist; start the service once "
		    "(taskdeck daemon start) so that it writes the defaults\n", path);
		td_setup_result_free(r);
		return NULL;
	}
	td_setup_result_free(r);
	return settings_read(path);
}

/* Puts c into doc as the default provider. */
static void
apply(cJSON *doc, const struct choice *c)
{
	cJSON *providers = cJSON_GetObjectItem(doc, "providers"), *p, *defaults;

	if (!cJSON_IsObject(providers)) {
		cJSON_DeleteItemFromObject(doc, "providers");
		providers = cJSON_AddObjectToObject(doc, "providers");
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "kind", c->kind);
	if (strcmp(c->kind, "replay") != 0) {
		cJSON_AddStringToObject(p, "baseUrl", c->base_url);
		if (c->key_env[0] != '\0')
			cJSON_AddStringToObject(p, "apiKeyEnv", c->key_env);
		else
			cJSON_AddNullToObject(p, "apiKeyEnv");
		/* The credential just stored, or the one already named. */
		if (c->key_env[0] == '\0' && (c->cred_id[0] || c->cred_ref[0]))
			cJSON_AddStringToObject(p, "apiKeyCredential",
			    c->cred_id[0] ? c->cred_id : c->cred_ref);
	}
	cJSON_AddStringToObject(p, "defaultModel", c->model);
	if (cJSON_GetObjectItem(providers, c->name) != NULL)
		cJSON_ReplaceItemInObject(providers, c->name, p);
	else
		cJSON_AddItemToObject(providers, c->name, p);
	defaults = cJSON_GetObjectItem(doc, "defaults");
	if (!cJSON_IsObject(defaults)) {
		cJSON_DeleteItemFromObject(doc, "defaults");
		defaults = cJSON_AddObjectToObject(doc, "defaults");
	}
	cJSON_DeleteItemFromObject(defaults, "provider");
	cJSON_AddStringToObject(defaults, "provider", c->name);
	cJSON_DeleteItemFromObject(defaults, "model");
	cJSON_AddStringToObject(defaults, "model", c->model);
}

/*
 * Stores c->typed as the api-key credential provider-NAME (rotating
 * the one settings names, or the one of that name, instead of adding another)
 * and puts its id in c->cred_id.  An exit code.
 */
static int setup_fail(struct cli *cli, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
store_key(struct cli *cli, struct choice *c)
{
	struct td_request_options opts = cli_request_options(cli);
	struct td_credential *cred = NULL;
	struct td_credential_list *list = NULL;
	struct td_credential_request req = { 0 };
	struct td_error err;
	char name[80], desc[160], found[65] = "", *cursor = NULL;
	enum td_code code;
	int rc;

	if ((rc = cli_connect(cli)) != CLI_EXIT_OK)
		return rc;
	snprintf(name, sizeof name, "provider-%s", c->name);
	if (c->cred_ref[0] != '\0' && td_get_credential(cli->client, c->cred_ref, &opts, &cred,
	    &err) == TD_OK) {
		snprintf(found, sizeof found, "%s", cred->id);
		td_credential_free(cred);
		cred = NULL;
	}
	/* Else the credential of that name (by the id in settings or by its name). */
	while (found[0] == '\0') {
		if (td_list_credentials(cli->client, 100, cursor, &opts, &list, &err) != TD_OK)
			break;
		for (size_t i = 0; i < list->count && found[0] == '\0'; i++) {
			if (strcmp(list->items[i].name, name) == 0 ||
			    (c->cred_ref[0] && strcmp(list->items[i].name, c->cred_ref) == 0))
				snprintf(found, sizeof found, "%s", list->items[i].id);
		}
		free(cursor);
		cursor = list->next_cursor ? xstrdup(list->next_cursor) : NULL;
		td_credential_list_free(list);
		list = NULL;
		if (cursor == NULL)
			break;
	}
	free(cursor);
	req.secret = c->typed;
	if (found[0] != '\0') {
		code = td_update_credential(cli->client, found, &req, &opts, &cred, &err);
	} else {
		snprintf(desc, sizeof desc, "API key of the provider %s (taskdeck setup)", c->name);
		req.name = name;
		req.kind = "api-key";
		req.description = desc;
		code = td_create_credential(cli->client, &req, &opts, &cred, &err);
	}
	if (code != TD_OK)
		return setup_fail(cli, CLI_EXIT_SERVICE, "cannot store the key as the credential "
		    "%s: %s", name, err.message);
	snprintf(c->cred_id, sizeof c->cred_id, "%s", cred->id);
	td_credential_free(cred);
	return CLI_EXIT_OK;
}

static int __attribute__((format(printf, 3, 4)))
setup_fail(struct cli *cli, int rc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (cli->json) {
		cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
		char *text;
		cJSON_AddBoolToObject(o, "ok", false);
		cJSON_AddStringToObject(e, "message", msg);
		text = cJSON_PrintUnformatted(o);
		out_json(text);
		free(text);
		cJSON_Delete(o);
	}
	fprintf(stderr, "taskdeck: %s\n", msg);
	return rc;
}

/* The choice from --provider and the flags beside it; an exit code. */
static int
setup_from_flags(struct cli *cli, struct choice *c, cJSON *doc)
{
	const char *v = cli_get(cli, "provider");

	if (!name_ok(v))
		return cli_usage_error(cli, "--provider: 1 to 64 characters of a-z, 0-9, _ and -");
	if (!choice_from(c, doc, v)) {
		snprintf(c->kind, sizeof c->kind, "openai");
		if (!cli_has(cli, "base-url"))
			return cli_usage_error(cli, "--provider %s is new: give --base-url", v);
	}
	if ((v = cli_get(cli, "kind")) != NULL) {
		if (strcmp(v, "openai") != 0 && strcmp(v, "anthropic") != 0 &&
		    strcmp(v, "replay") != 0)
			return cli_usage_error(cli, "--kind is openai, anthropic or replay");
		snprintf(c->kind, sizeof c->kind, "%s", v);
	}
	if ((v = cli_get(cli, "base-url")) != NULL) {
		if (!url_ok(v))
			return cli_usage_error(cli, "--base-url must be an http:// or https:// URL");
		snprintf(c->base_url, sizeof c->base_url, "%s", v);
	}
	if ((v = cli_get(cli, "api-key-env")) != NULL) {
		if (!names_env_valid(v))
			return cli_usage_error(cli, "--api-key-env takes the NAME of an "
			    "environment variable, not the key");
		snprintf(c->key_env, sizeof c->key_env, "%s", v);
		c->cred_ref[0] = '\0';
	}
	if (cli_has(cli, "no-api-key")) {
		c->key_env[0] = '\0';
		c->cred_ref[0] = '\0';
	}
	if (cli_has(cli, "api-key-stdin")) {
		const char *kwhy;

		c->key_env[0] = '\0';
		if ((c->typed = read_key_line(&kwhy)) == NULL)
			return cli_usage_error(cli, "--api-key-stdin: %s", kwhy);
	}
	if ((v = cli_get(cli, "model")) != NULL)
		snprintf(c->model, sizeof c->model, "%s", v);
	return CLI_EXIT_OK;
}

/*
 * The key of a provider that is not replay, then (without --no-test) its
 * models listed into *ids, the model chosen (asking) or checked, and tested;
 * an exit code.
 */
static int
setup_test(struct cli *cli, struct choice *c, bool asking, cJSON **ids, bool *tested)
{
	char why[512] = "";

	if (c->typed != NULL) {
		c->key = c->typed;	/* in memory only, for the list and the test */
	} else if (c->key_env[0] == '\0' && c->cred_ref[0] != '\0' && !cli_has(cli, "no-test")) {
		return setup_fail(cli, CLI_EXIT_USAGE, "the key of %s is in the credential %s, "
		    "which cannot be read back to list or test the models; give the key "
		    "again (--api-key-stdin, or * on a terminal) or --no-test", c->name,
		    c->cred_ref);
	}
	if (c->key_env[0] != '\0') {
		c->key = getenv(c->key_env);
		if ((c->key == NULL || *c->key == '\0') && !cli_has(cli, "no-test"))
			return setup_fail(cli, CLI_EXIT_SERVICE, "%s is not set in this shell, so "
			    "the models cannot be listed or tested%s", c->key_env,
			    " (set it, or give --no-test)");
	}
	if (cli_has(cli, "no-test"))
		return c->model[0] == '\0' ? cli_usage_error(cli, "--no-test needs --model") :
		    CLI_EXIT_OK;
	if ((*ids = list_models(c, why, sizeof why)) == NULL)
		return setup_fail(cli, CLI_EXIT_SERVICE, "cannot list the models of %s: %s",
		    c->base_url, why);
	if (asking) {
		if (!interactive_model(c, *ids))
			return CLI_EXIT_USAGE;
	} else if (c->model[0] == '\0' || !models_has(*ids, c->model)) {
		return setup_fail(cli, CLI_EXIT_SERVICE, "the provider does not offer the "
		    "model \"%s\"; it offers for example %s", c->model[0] ? c->model :
		    "(none given: --model)", cJSON_GetArrayItem(*ids, 0)->valuestring);
	}
	if (!test_model(c, why, sizeof why))
		return setup_fail(cli, CLI_EXIT_SERVICE, "the test request to %s failed: %s",
		    c->model, why);
	*tested = true;
	return CLI_EXIT_OK;
}

/* What was written to settings, for a person or (--json) a program. */
static void
setup_report(struct cli *cli, const struct choice *c, const char *settings,
    const cJSON *ids, bool tested)
{
	if (cli->json) {
		cJSON *o = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(o, "provider");
		char *text;
		cJSON_AddBoolToObject(o, "ok", true);
		cJSON_AddStringToObject(o, "settings", settings);
		cJSON_AddStringToObject(p, "name", c->name);
		cJSON_AddStringToObject(p, "kind", c->kind);
		if (c->base_url[0] && strcmp(c->kind, "replay") != 0)
			cJSON_AddStringToObject(p, "baseUrl", c->base_url);
		if (c->key_env[0])
			cJSON_AddStringToObject(p, "apiKeyEnv", c->key_env);
		else if (c->cred_id[0] || c->cred_ref[0])
			cJSON_AddStringToObject(p, "apiKeyCredential", c->cred_id[0] ? c->cred_id :
			    c->cred_ref);
		cJSON_AddStringToObject(p, "model", c->model);
		cJSON_AddNumberToObject(o, "models", ids ? cJSON_GetArraySize(ids) : 0);
		cJSON_AddBoolToObject(o, "tested", tested);
		cJSON_AddBoolToObject(o, "restartNeeded", true);
		text = cJSON_PrintUnformatted(o);
		out_json(text);
		free(text);
		cJSON_Delete(o);
		return;
	}
	printf("\nWrote %s: provider %s (%s%s%s), model %s%s%s.\n", settings, c->name,
	    c->kind, c->base_url[0] && strcmp(c->kind, "replay") ? ", " : "",
	    strcmp(c->kind, "replay") ? c->base_url : "", c->model,
	    c->key_env[0] ? ", key from $" : "", c->key_env);
	if (tested)
		printf("The test request to %s answered.\n", c->model);
	if (c->key_env[0])
		printf("The service reads %s from its own environment: start it from a "
		    "shell where %s is set.\n", c->key_env, c->key_env);
	if (c->cred_id[0])
		printf("The key is stored sealed in the credential provider-%s (%s); "
		    "settings.json names it in apiKeyCredential.\n", c->name, c->cred_id);
	printf("Restart the service so that it reads the new settings: "
	    "taskdeck daemon stop; taskdeck daemon start\n");
}

static int
cmd_setup_exec(struct cli *cli, int argc, char **argv)
{
	struct choice c = { 0 };
	struct td_paths paths = { 0 };
	cJSON *doc = NULL, *ids = NULL;
	bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && !cli->json;
	bool asking = tty && !cli_has(cli, "provider");
	bool tested = false;
	int rc = CLI_EXIT_OK;

	(void)argc;
	(void)argv;
	if (cli_has(cli, "status"))
		return cli_setup_status(cli);
	if (cli_has(cli, "repair"))
		return cli_setup_repair(cli);
	if (cli_has(cli, "api-key-stdin") && (!cli_has(cli, "provider") ||
	    cli_has(cli, "api-key-env") || cli_has(cli, "no-api-key")))
		return cli_usage_error(cli, "--api-key-stdin goes with --provider, and not with "
		    "--api-key-env or --no-api-key");
	if (!paths_init(&paths))
		return cli_usage_error(cli, "set HOME or TASKDECK_HOME");
	if ((doc = load_or_create(cli, paths.settings)) == NULL) {
		rc = CLI_EXIT_SERVICE;
		goto out;
	}
	if (!cli_has(cli, "provider") && !tty) {
		/* Re-running without a terminal shows what is set. */
		if (cli->json) {
			char *text = cJSON_PrintUnformatted(doc);
			out_json(text);
			free(text);
		} else {
			show_current(doc, paths.settings);
			printf("\nOn a terminal, taskdeck setup walks through a change; without one, "
			    "give --provider (see taskdeck help setup).\n");
		}
		goto out;
	}
	if (asking) {
		show_current(doc, paths.settings);
		if (!interactive(&c, doc))
			rc = CLI_EXIT_USAGE;
	} else {
		rc = setup_from_flags(cli, &c, doc);
	}
	if (rc != CLI_EXIT_OK)
		goto out;
	if (strcmp(c.kind, "replay") == 0) {
		if (c.model[0] == '\0')
			snprintf(c.model, sizeof c.model, "research");
		if (asking && !ask("Transcript (model)", c.model, c.model, sizeof c.model))
			rc = CLI_EXIT_USAGE;
	} else {
		rc = setup_test(cli, &c, asking, &ids, &tested);
	}
	if (rc != CLI_EXIT_OK)
		goto out;
	if (c.typed != NULL && (rc = store_key(cli, &c)) != CLI_EXIT_OK)
		goto out;
	apply(doc, &c);
	if (!settings_write(paths.settings, doc)) {
		rc = CLI_EXIT_SERVICE;
		goto out;
	}
	setup_report(cli, &c, paths.settings, ids, tested);
out:
	if (c.typed != NULL) {
		explicit_bzero(c.typed, strlen(c.typed));
		free(c.typed);
	}
	cJSON_Delete(ids);
	cJSON_Delete(doc);
	paths_free(&paths);
	return rc;
}
