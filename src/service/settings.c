/* settings.json: providers and application defaults (docs/settings.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "resource.h"
#include "sandbox.h"
#include "settings.h"
#include "xalloc.h"

#define SETTINGS_MAX_BYTES (256 * 1024)
#define PROVIDER_NAME_MAX 64

extern char **environ;

/* Zeroes n bytes in a way the compiler keeps. */
static void
key_zero(void *p, size_t n)
{
	explicit_bzero(p, n);
}

struct settings {
	cJSON *root;
	int max_concurrent;
	int resume_limit;	/* runs.resumeLimit */
	int max_turns;
	long long max_tokens_per_run;	/* runs.maxTokensPerRun, 0: none */
	double max_cost_per_run;	/* runs.maxCostPerRun (USD), 0: none */
	long command_timeout_ms;
	bool allow_unconfined;	/* runs.allowUnconfinedCommands (docs/agent.md) */
	cJSON *keys;		/* apiKeyEnv name -> value, taken from the environment */
	long disk_warn_mib, disk_fail_mib;
	long long changes_max_file_bytes, changes_quota_bytes;	/* changes (docs/settings.md) */
	long long changes_total_quota_bytes;
	const cJSON *notify_command;	/* notify.command, or NULL */
	struct sandbox_limits command_limits;	/* runs.commandLimits (docs/agent.md) */
};

static const char default_settings[] =
    "{\n"
    "  \"defaults\": {\"framework\": null, \"provider\": \"replay\", \"model\": null,\n"
    "               \"effort\": \"medium\", \"permissionProfile\": \"workspace-write\"},\n"
    "  \"providers\": {\n"
    "    \"replay\": {\"kind\": \"replay\", \"defaultModel\": \"research\"},\n"
    "    \"ollama\": {\"kind\": \"openai\", \"baseUrl\": \"http://127.0.0.1:11434/v1\",\n"
    "               \"apiKeyEnv\": null, \"defaultModel\": \"llama3.2\"},\n"
    "    \"openai\": {\"kind\": \"openai\", \"baseUrl\": \"https://api.openai.com/v1\",\n"
    "               \"apiKeyEnv\": \"OPENAI_API_KEY\", \"defaultModel\": \"gpt-4o-mini\"},\n"
    "    \"anthropic\": {\"kind\": \"anthropic\", \"baseUrl\": \"https://api.anthropic.com\",\n"
    "                  \"apiKeyEnv\": \"ANTHROPIC_API_KEY\", \"defaultModel\": \"claude-sonnet-4-5\"}\n"
    "  },\n"
    "  \"runs\": {\"maxConcurrent\": 4, \"maxTurns\": 200, \"commandTimeoutMs\": 600000}\n"
    "}\n";

static const char *const top_keys[] = { "defaults", "providers", "runs", "runtimes",
	"doctor", "notify", "pricing", "changes", NULL };
static const char *const price_keys[] = { "input", "output", "cacheRead", "cacheWrite", NULL };
static const char *const default_keys[] = { "framework", "provider", "model", "effort",
	"permissionProfile", "network", NULL };
static const char *const provider_keys[] = { "kind", "baseUrl", "apiKeyEnv",
	"defaultModel", "apiKeyCredential", "maxRetries", "maxRetryWaitMs", "models", NULL };
static const char *const provider_kinds[] = { "replay", "openai", "anthropic", NULL };
static const char *const run_keys[] = { "maxConcurrent", "maxTurns", "commandTimeoutMs",
	"allowUnconfinedCommands", "resumeLimit", "commandLimits", "maxTokensPerRun",
	"maxCostPerRun", NULL };

/* runs.commandLimits: the resource bounds of commands and connector servers; 0 = none. */
static const struct {
	const char *key;
	long min, max, def;
} command_limit_keys[] = {
	{ "memoryMiB", 16, 1L << 24, 2048 },
	{ "processes", 8, 1L << 22, 512 },
	{ "cpuSeconds", 1, 1L << 30, 3600 },
	{ "tmpMiB", 1, 1L << 24, 1024 },
};
#define COMMAND_LIMITS (sizeof command_limit_keys / sizeof command_limit_keys[0])

/* Reads runs.commandLimits (runs may be NULL) into s->command_limits; false with *err. */
static bool
settings_check_limits(struct settings *s, const cJSON *runs, char **err)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(runs, "commandLimits");
	long v[COMMAND_LIMITS];

	if (l != NULL && !cJSON_IsObject(l)) {
		*err = xstrdup("runs.commandLimits must be an object");
		return false;
	}
	for (size_t i = 0; i < COMMAND_LIMITS; i++) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(l, command_limit_keys[i].key);

		v[i] = command_limit_keys[i].def;
		if (p == NULL)
			continue;
		if (!cJSON_IsNumber(p) || p->valuedouble != (double)(long)p->valuedouble ||
		    (p->valuedouble != 0 && (p->valuedouble < command_limit_keys[i].min ||
		    p->valuedouble > command_limit_keys[i].max))) {
			*err = xasprintf("runs.commandLimits.%s must be 0 (no limit) or an integer "
			    "of %ld to %ld", command_limit_keys[i].key, command_limit_keys[i].min,
			    command_limit_keys[i].max);
			return false;
		}
		v[i] = (long)p->valuedouble;
	}
	for (const cJSON *p = l ? l->child : NULL; p != NULL; p = p->next) {
		size_t i = 0;

		while (i < COMMAND_LIMITS && strcmp(p->string, command_limit_keys[i].key) != 0)
			i++;
		if (i == COMMAND_LIMITS) {
			*err = xasprintf("runs.commandLimits: unknown member %s", p->string);
			return false;
		}
	}
	s->command_limits.memory = (long long)v[0] << 20;
	s->command_limits.processes = v[1];
	s->command_limits.cpu_seconds = v[2];
	s->command_limits.tmp_size = (long long)v[3] << 20;
	return true;
}
/* Readiness: configured CLI paths and the disk thresholds of doctor */
static const char *const runtime_keys[] = { "claude-code", "codex", "acp", NULL };
static const char *const runtime_entry_keys[] = { "path", "args", NULL };
#define RUNTIME_ARGS_MAX 64	/* runtimes.acp.args */
static const char *const doctor_keys[] = { "diskWarnMiB", "diskFailMiB", NULL };

/* Writes the default file atomically (0600); false with *err set. */
static bool
write_defaults(const char *path, char **err)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t len = sizeof default_settings - 1;
	bool ok = fd >= 0 && write(fd, default_settings, len) == (ssize_t)len &&
	    fsync(fd) == 0;

	if (fd >= 0)
		close(fd);
	/* link() never replaces a file that appeared meanwhile. */
	if (ok && link(tmp, path) != 0 && errno != EEXIST)
		ok = false;
	if (!ok)
		*err = xasprintf("cannot write %s: %s", path, strerror(errno));
	unlink(tmp);
	free(tmp);
	return ok;
}

static bool
name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PROVIDER_NAME_MAX)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static bool
env_name_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 128 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_") == n && !(s[0] >= '0' && s[0] <= '9');
}

/* Checks one provider entry; a message in *err when it breaks a rule. */
static bool
provider_valid(const char *name, const cJSON *p, char **err)
{
	const char *bad = NULL, *kind, *url, *key;

	if (!name_valid(name)) {
		*err = xasprintf("provider name \"%s\" must be 1 to %d characters of a-z, 0-9, _ and -",
		    name, PROVIDER_NAME_MAX);
		return false;
	}
	if (!cJSON_IsObject(p) || !json_only_keys(p, provider_keys, &bad)) {
		*err = bad ? xasprintf("providers.%s: unknown member %s", name, bad)
		    : xasprintf("providers.%s must be an object", name);
		return false;
	}
	if (!json_check_enum(p, "kind", false, provider_kinds) ||
	    (kind = json_get_string(p, "kind")) == NULL) {
		*err = xasprintf("providers.%s.kind must be replay, openai or anthropic", name);
		return false;
	}
	if (!json_check_string(p, "defaultModel", true, false, 1, NAME_MAX_CHARS)) {
		*err = xasprintf("providers.%s.defaultModel must be a string of 1 to %d characters",
		    name, NAME_MAX_CHARS);
		return false;
	}
	if (strcmp(kind, "replay") != 0) {
		url = json_get_string(p, "baseUrl");
		if (url == NULL || strlen(url) > 2048 ||
		    (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
			*err = xasprintf("providers.%s.baseUrl must be an http:// or https:// URL",
			    name);
			return false;
		}
	}
	key = json_get_string(p, "apiKeyEnv");
	if ((key != NULL && !env_name_valid(key)) || (key == NULL &&
	    cJSON_GetObjectItemCaseSensitive(p, "apiKeyEnv") != NULL &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p, "apiKeyEnv")))) {
		*err = xasprintf("providers.%s.apiKeyEnv must name an environment variable or be null",
		    name);
		return false;
	}
	/* Or the id or name of a stored credential (never both). */
	if (!json_check_string(p, "apiKeyCredential", false, true, 1, NAME_MAX_CHARS)) {
		*err = xasprintf("providers.%s.apiKeyCredential must be a credential's id or name "
		    "(1 to %d characters) or null", name, NAME_MAX_CHARS);
		return false;
	}
	if (key != NULL && json_get_string(p, "apiKeyCredential") != NULL) {
		*err = xasprintf("providers.%s: give apiKeyEnv or apiKeyCredential, not both", name);
		return false;
	}
	/* models: per model, {"contextWindow": tokens} (docs/agent.md, Context). */
	{
		const cJSON *models = cJSON_GetObjectItemCaseSensitive(p, "models"), *m;
		static const char *const model_keys[] = { "contextWindow", NULL };

		if (models != NULL && !cJSON_IsObject(models)) {
			*err = xasprintf("providers.%s.models must be an object: model name -> "
			    "{\"contextWindow\": tokens}", name);
			return false;
		}
		cJSON_ArrayForEach(m, models) {
			if (!cJSON_IsObject(m) || !json_only_keys(m, model_keys, &bad) ||
			    strlen(m->string) > 200 || !json_check_int(m, "contextWindow", 1024,
			    10000000)) {
				*err = xasprintf("providers.%s.models.%s must be {\"contextWindow\": "
				    "1024 to 10000000}", name, m->string);
				return false;
			}
		}
	}
	/* The agent's retries of a model request (docs/agent.md, Provider errors). */
	if (!json_check_int(p, "maxRetries", 0, 20) ||
	    !json_check_int(p, "maxRetryWaitMs", 0, 3600000)) {
		*err = xasprintf("providers.%s: maxRetries must be 0 to 20, maxRetryWaitMs 0 to "
		    "3600000", name);
		return false;
	}
	return true;
}

/* runtimes.acp.args: the arguments of the ACP agent's command; no other runtime takes any. */
static bool
runtime_args_check(const cJSON *e, char **err)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args"), *a;

	if (args == NULL || cJSON_IsNull(args))
		return true;
	if (strcmp(e->string, "acp") != 0) {
		*err = xasprintf("runtimes.%s.args: only runtimes.acp takes arguments", e->string);
		return false;
	}
	if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > RUNTIME_ARGS_MAX) {
		*err = xstrdup("runtimes.acp.args must be an array of at most 64 strings");
		return false;
	}
	cJSON_ArrayForEach(a, args) {
		if (!cJSON_IsString(a) || strlen(a->valuestring) > 4096) {
			*err = xstrdup("runtimes.acp.args must hold strings of at most 4096 bytes");
			return false;
		}
	}
	return true;
}

/* runtimes: {"claude-code": {"path": "/abs/claude"}, "codex": {...}, "acp": {"path", "args"}}. */
static bool
runtimes_check(const cJSON *root, char **err)
{
	const cJSON *rt = cJSON_GetObjectItemCaseSensitive(root, "runtimes"), *e;
	const char *bad = NULL, *path;

	if (rt == NULL || cJSON_IsNull(rt))
		return true;
	if (!cJSON_IsObject(rt) || !json_only_keys(rt, runtime_keys, &bad)) {
		*err = bad ? xasprintf("runtimes: unknown member %s (claude-code, codex or acp)", bad)
		    : xstrdup("runtimes must be an object");
		return false;
	}
	cJSON_ArrayForEach(e, rt) {
		if (cJSON_IsNull(e))
			continue;
		if (!cJSON_IsObject(e) || !json_only_keys(e, runtime_entry_keys, &bad)) {
			*err = xasprintf("runtimes.%s must be {\"path\": \"/absolute/path\"}",
			    e->string);
			return false;
		}
		path = json_get_string(e, "path");
		if (cJSON_GetObjectItemCaseSensitive(e, "path") != NULL &&
		    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "path")) &&
		    (path == NULL || path[0] != '/' || strlen(path) >= 4096)) {
			*err = xasprintf("runtimes.%s.path must be an absolute path or null",
			    e->string);
			return false;
		}
		if (!runtime_args_check(e, err))
			return false;
	}
	return true;
}

/* doctor: {"diskWarnMiB": 1024, "diskFailMiB": 16}. */
static bool
doctor_check(struct settings *s, char **err)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->root, "doctor"), *p;
	const char *bad = NULL;

	s->disk_warn_mib = 1024;
	s->disk_fail_mib = 16;
	if (d == NULL)
		return true;
	if (!cJSON_IsObject(d) || !json_only_keys(d, doctor_keys, &bad) ||
	    !json_check_int(d, "diskWarnMiB", 0, 1048576) ||
	    !json_check_int(d, "diskFailMiB", 0, 1048576)) {
		*err = bad ? xasprintf("doctor: unknown member %s", bad)
		    : xstrdup("doctor: diskWarnMiB and diskFailMiB must be 0 to 1048576");
		return false;
	}
	if ((p = cJSON_GetObjectItemCaseSensitive(d, "diskWarnMiB")) != NULL)
		s->disk_warn_mib = p->valueint;
	if ((p = cJSON_GetObjectItemCaseSensitive(d, "diskFailMiB")) != NULL)
		s->disk_fail_mib = p->valueint;
	return true;
}
static bool settings_check_notify(struct settings *s, char **err);

/* changes: {"maxFileBytes": 8 MiB, "quotaBytes": 1 GiB, "totalQuotaBytes": 10 GiB}. */
static bool
changes_check(struct settings *s, char **err)
{
	static const char *const keys[] = { "maxFileBytes", "quotaBytes", "totalQuotaBytes",
		NULL };
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->root, "changes"), *p;
	const char *bad = NULL;

	s->changes_max_file_bytes = 8LL * 1024 * 1024;
	s->changes_quota_bytes = 1024LL * 1024 * 1024;
	s->changes_total_quota_bytes = 10LL * 1024 * 1024 * 1024;
	if (d == NULL)
		return true;
	if (!cJSON_IsObject(d) || !json_only_keys(d, keys, &bad) ||
	    !json_check_int(d, "maxFileBytes", 0, 1e12) ||
	    !json_check_int(d, "quotaBytes", 0, 1e15) ||
	    !json_check_int(d, "totalQuotaBytes", 0, 1e15)) {
		*err = bad ? xasprintf("changes: unknown member %s", bad)
		    : xstrdup("changes: maxFileBytes must be 0 to 10^12, quotaBytes and "
		    "totalQuotaBytes 0 to 10^15");
		return false;
	}
	if ((p = cJSON_GetObjectItemCaseSensitive(d, "maxFileBytes")) != NULL)
		s->changes_max_file_bytes = (long long)p->valuedouble;
	if ((p = cJSON_GetObjectItemCaseSensitive(d, "quotaBytes")) != NULL)
		s->changes_quota_bytes = (long long)p->valuedouble;
	if ((p = cJSON_GetObjectItemCaseSensitive(d, "totalQuotaBytes")) != NULL)
		s->changes_total_quota_bytes = (long long)p->valuedouble;
	return true;
}

/*
 * pricing: {provider: {model: {input, output, cacheRead?, cacheWrite?}}}, USD
 * per million tokens; false with *err set.
 */
static bool
pricing_check(const cJSON *pricing, char **err)
{
	const char *bad = NULL;

	if (pricing == NULL)
		return true;
	if (!cJSON_IsObject(pricing)) {
		*err = xstrdup("pricing must be an object of providers");
		return false;
	}
	for (const cJSON *prov = pricing->child; prov != NULL; prov = prov->next) {
		if (!cJSON_IsObject(prov)) {
			*err = xasprintf("pricing.%s must be an object of models", prov->string);
			return false;
		}
		for (const cJSON *m = prov->child; m != NULL; m = m->next) {
			bool ok = cJSON_IsObject(m) && json_only_keys(m, price_keys, &bad);

			for (const char *const *k = price_keys; ok && *k; k++) {
				const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, *k);

				if (v == NULL && (k - price_keys) >= 2)	/* cacheRead, cacheWrite */
					continue;
				ok = cJSON_IsNumber(v) && v->valuedouble >= 0 &&
				    v->valuedouble <= 1e6;
			}
			if (!ok) {
				*err = xasprintf("pricing.%s.%s must be an object of input and output "
				    "(and optionally cacheRead and cacheWrite): USD per million tokens, "
				    "0 to 10^6", prov->string, m->string);
				return false;
			}
		}
	}
	return true;
}

/* The defaults member (added empty when absent), whose provider must be one of providers. */
static bool
settings_check_defaults(struct settings *s, const cJSON *providers, char **err)
{
	const cJSON *defaults = cJSON_GetObjectItemCaseSensitive(s->root, "defaults"), *p;
	const char *bad = NULL, *prov;

	if (defaults == NULL)
		defaults = cJSON_AddObjectToObject(s->root, "defaults");
	if (!cJSON_IsObject(defaults) || !json_only_keys(defaults, default_keys, &bad)) {
		*err = bad ? xasprintf("defaults: unknown member %s", bad)
		    : xstrdup("defaults must be an object");
		return false;
	}
	if (!json_check_enum(defaults, "framework", true, resource_frameworks) ||
	    !json_check_enum(defaults, "effort", true, resource_efforts) ||
	    !json_check_enum(defaults, "permissionProfile", true, resource_profiles) ||
	    !json_check_string(defaults, "model", false, true, 1, NAME_MAX_CHARS) ||
	    !json_check_string(defaults, "provider", false, true, 1, PROVIDER_NAME_MAX)) {
		*err = xstrdup("defaults: framework, provider, model, effort or permissionProfile "
		    "has a value that is not allowed (docs/settings.md)");
		return false;
	}
	p = cJSON_GetObjectItemCaseSensitive(defaults, "network");
	if (p != NULL && !cJSON_IsBool(p) && !cJSON_IsNull(p)) {
		*err = xstrdup("defaults.network must be true, false or null");
		return false;
	}
	prov = json_get_string(defaults, "provider");
	if (prov != NULL && cJSON_GetObjectItemCaseSensitive(providers, prov) == NULL) {
		*err = xasprintf("defaults.provider names %s, which is not in providers", prov);
		return false;
	}
	return true;
}

/* The runs member's budgets (maxTokensPerRun, maxCostPerRun) into s. */
static bool
settings_check_budgets(struct settings *s, const cJSON *runs, char **err)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(runs, "maxTokensPerRun");

	if (p != NULL && !cJSON_IsNull(p) && !json_check_int(runs, "maxTokensPerRun", 1000, 1e12)) {
		*err = xstrdup("runs.maxTokensPerRun must be 1000 to 10^12 tokens, or null");
		return false;
	}
	s->max_tokens_per_run = cJSON_IsNumber(p) ? (long long)p->valuedouble : 0;
	p = cJSON_GetObjectItemCaseSensitive(runs, "maxCostPerRun");
	if (p != NULL && !cJSON_IsNull(p) && (!cJSON_IsNumber(p) || !(p->valuedouble > 0) ||
	    p->valuedouble > 1e6)) {
		*err = xstrdup("runs.maxCostPerRun must be a number of USD above 0 and at most "
		    "10^6, or null");
		return false;
	}
	s->max_cost_per_run = cJSON_IsNumber(p) ? p->valuedouble : 0;
	return true;
}

/* The runs member (NULL: absent) into s, over the defaults. */
static bool
settings_check_runs(struct settings *s, const cJSON *runs, char **err)
{
	const char *bad = NULL;
	const cJSON *p;

	s->max_concurrent = 4;
	s->max_turns = 200;
	s->command_timeout_ms = 600000;
	s->resume_limit = 3;
	if (runs == NULL)
		return settings_check_limits(s, NULL, err);
	if (!cJSON_IsObject(runs) || !json_only_keys(runs, run_keys, &bad)) {
		*err = bad ? xasprintf("runs: unknown member %s", bad)
		    : xstrdup("runs must be an object");
		return false;
	}
	if (!json_check_int(runs, "maxConcurrent", 1, 64) ||
	    !json_check_int(runs, "maxTurns", 1, 1000) ||
	    !json_check_int(runs, "commandTimeoutMs", 1000, 86400000)) {
		*err = xstrdup("runs: maxConcurrent must be 1 to 64, maxTurns 1 to 1000, "
		    "commandTimeoutMs 1000 to 86400000");
		return false;
	}
	if (!json_check_int(runs, "resumeLimit", 0, 100)) {
		*err = xstrdup("runs: resumeLimit must be 0 to 100");
		return false;
	}
	if (!settings_check_budgets(s, runs, err))
		return false;
	if ((p = cJSON_GetObjectItemCaseSensitive(runs, "resumeLimit")) != NULL)
		s->resume_limit = p->valueint;
	p = cJSON_GetObjectItemCaseSensitive(runs, "allowUnconfinedCommands");
	if (p != NULL && !cJSON_IsBool(p)) {
		*err = xstrdup("runs.allowUnconfinedCommands must be true or false");
		return false;
	}
	s->allow_unconfined = cJSON_IsTrue(p);
	if ((p = cJSON_GetObjectItemCaseSensitive(runs, "maxConcurrent")) != NULL)
		s->max_concurrent = p->valueint;
	if ((p = cJSON_GetObjectItemCaseSensitive(runs, "maxTurns")) != NULL)
		s->max_turns = p->valueint;
	if ((p = cJSON_GetObjectItemCaseSensitive(runs, "commandTimeoutMs")) != NULL)
		s->command_timeout_ms = (long)p->valuedouble;
	return settings_check_limits(s, runs, err);
}

/* Applies the file's rules to s->root; false with *err set. */
static bool
settings_check(struct settings *s, char **err)
{
	const cJSON *root = s->root, *providers, *p;
	const char *bad = NULL;

	if (!cJSON_IsObject(root)) {
		*err = xstrdup("the file must hold a JSON object");
		return false;
	}
	if (!json_only_keys(root, top_keys, &bad)) {
		*err = xasprintf("unknown member %s", bad);
		return false;
	}
	providers = cJSON_GetObjectItemCaseSensitive(root, "providers");
	if (!cJSON_IsObject(providers) || providers->child == NULL) {
		*err = xstrdup("providers must be an object with at least one provider");
		return false;
	}
	cJSON_ArrayForEach(p, providers) {
		if (!provider_valid(p->string, p, err))
			return false;
	}
	return settings_check_defaults(s, providers, err) && runtimes_check(root, err) &&
	    doctor_check(s, err) && changes_check(s, err) &&
	    pricing_check(cJSON_GetObjectItemCaseSensitive(root, "pricing"), err) &&
	    settings_check_runs(s, cJSON_GetObjectItemCaseSensitive(root, "runs"), err) &&
	    settings_check_notify(s, err);
}

/* notify: {"command": ["program", "arg", ...]} or absent. */
static bool
settings_check_notify(struct settings *s, char **err)
{
	static const char *const notify_keys[] = { "command", NULL };
	const cJSON *notify = cJSON_GetObjectItemCaseSensitive(s->root, "notify"), *cmd, *a;
	const char *bad = NULL;
	int n = 0;

	if (notify == NULL || cJSON_IsNull(notify))
		return true;
	if (!cJSON_IsObject(notify) || !json_only_keys(notify, notify_keys, &bad)) {
		*err = bad ? xasprintf("notify: unknown member %s", bad) :
		    xstrdup("notify must be an object");
		return false;
	}
	cmd = cJSON_GetObjectItemCaseSensitive(notify, "command");
	if (cmd == NULL || cJSON_IsNull(cmd))
		return true;
	cJSON_ArrayForEach(a, cmd) {
		if (!cJSON_IsString(a) || a->valuestring[0] == '\0' || strlen(a->valuestring) > 1024)
			n = 1000;
		n++;
	}
	if (!cJSON_IsArray(cmd) || n < 1 || n > 32) {
		*err = xstrdup("notify.command must be an array of 1 to 32 non-empty strings "
		    "(the program and its arguments)");
		return false;
	}
	s->notify_command = cmd;
	return true;
}

const cJSON *
settings_notify_command(const struct settings *s)
{
	return s->notify_command;
}

struct settings *
settings_load(const char *path, char **err)
{
	struct settings *s;
	char *text, *why = NULL;
	struct stat sb;
	ssize_t n;
	size_t len = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		if (!write_defaults(path, err))
			return NULL;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0) {
		*err = xasprintf("cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > SETTINGS_MAX_BYTES) {
		close(fd);
		*err = xasprintf("%s must be a regular file of at most %d KiB", path,
		    SETTINGS_MAX_BYTES / 1024);
		return NULL;
	}
	text = xmalloc((size_t)sb.st_size + 1);
	while (len < (size_t)sb.st_size &&
	    (n = read(fd, text + len, (size_t)sb.st_size - len)) > 0)
		len += (size_t)n;
	close(fd);
	text[len] = '\0';
	s = xcalloc(1, sizeof *s);
	s->root = json_parse(text, len);
	free(text);
	if (s->root == NULL) {
		*err = xasprintf("%s is not valid JSON (UTF-8, at most %d levels)", path, 32);
		settings_free(s);
		return NULL;
	}
	if (!settings_check(s, &why)) {
		*err = xasprintf("%s: %s", path, why);
		free(why);
		settings_free(s);
		return NULL;
	}
	return s;
}

void
settings_free(struct settings *s)
{
	if (s == NULL)
		return;
	cJSON_Delete(s->root);
	if (s->keys != NULL) {
		for (cJSON *k = s->keys->child; k != NULL; k = k->next)
			if (cJSON_IsString(k))
				key_zero(k->valuestring, strlen(k->valuestring));
		cJSON_Delete(s->keys);
	}
	free(s);
}

const cJSON *
settings_defaults(const struct settings *s)
{
	return cJSON_GetObjectItemCaseSensitive(s->root, "defaults");
}

const cJSON *
settings_providers(const struct settings *s)
{
	return cJSON_GetObjectItemCaseSensitive(s->root, "providers");
}

const cJSON *
settings_provider(const struct settings *s, const char *name)
{
	const cJSON *providers = cJSON_GetObjectItemCaseSensitive(s->root, "providers");

	return name ? cJSON_GetObjectItemCaseSensitive(providers, name) : NULL;
}

int
settings_max_concurrent(const struct settings *s)
{
	return s->max_concurrent;
}

int
settings_resume_limit(const struct settings *s)
{
	return s->resume_limit;
}

int
settings_max_turns(const struct settings *s)
{
	return s->max_turns;
}

double
settings_max_cost_per_run(const struct settings *s)
{
	return s->max_cost_per_run;
}

bool
settings_price(const struct settings *s, const char *provider, const char *model,
    struct price *out)
{
	const cJSON *prov = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(s->root, "pricing"), provider ? provider : "");
	const cJSON *m;

	if (model == NULL)
		model = json_get_string(settings_provider(s, provider), "defaultModel");
	m = cJSON_GetObjectItemCaseSensitive(prov, model ? model : "");
	if (!cJSON_IsObject(m))
		return false;
	out->input = cJSON_GetObjectItemCaseSensitive(m, "input")->valuedouble;
	out->output = cJSON_GetObjectItemCaseSensitive(m, "output")->valuedouble;
	out->cache_read = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(m, "cacheRead")) ?
	    cJSON_GetObjectItemCaseSensitive(m, "cacheRead")->valuedouble : out->input;
	out->cache_write = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(m, "cacheWrite")) ?
	    cJSON_GetObjectItemCaseSensitive(m, "cacheWrite")->valuedouble : out->input;
	return true;
}

long long
settings_max_tokens_per_run(const struct settings *s)
{
	return s->max_tokens_per_run;
}

long
settings_command_timeout_ms(const struct settings *s)
{
	return s->command_timeout_ms;
}

bool
settings_allow_unconfined(const struct settings *s)
{
	return s->allow_unconfined;
}

const struct sandbox_limits *
settings_command_limits(const struct settings *s)
{
	return &s->command_limits;
}

bool
settings_network(const struct settings *s)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(settings_defaults(s), "network"));
}

/*
 * Takes every provider's API key out of the environment: a private copy, then
 * the variable's bytes are zeroed in place (the initial environment block is what
 * /proc/<pid>/environ shows) and the variable unset.
 */
void
settings_take_api_keys(struct settings *s)
{
	const cJSON *providers = cJSON_GetObjectItemCaseSensitive(s->root, "providers"), *p;

	if (s->keys == NULL)
		s->keys = cJSON_CreateObject();
	cJSON_ArrayForEach(p, providers) {
		const char *name = json_get_string(p, "apiKeyEnv");
		size_t n;

		if (name == NULL || getenv(name) == NULL ||
		    cJSON_GetObjectItemCaseSensitive(s->keys, name) != NULL)
			continue;
		cJSON_AddStringToObject(s->keys, name, getenv(name));
		n = strlen(name);
		for (char **e = environ; e != NULL && *e != NULL; e++)
			if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
				explicit_bzero(*e + n + 1, strlen(*e + n + 1));
		unsetenv(name);
		log_debug("took the API key in $%s out of the environment", name);
	}
}

const char *
settings_api_key(const struct settings *s, const char *env_name)
{
	return env_name ? json_get_string(s->keys, env_name) : NULL;
}

const char *
settings_runtime_path(const struct settings *s, const char *framework)
{
	const cJSON *rt = cJSON_GetObjectItemCaseSensitive(s->root, "runtimes");

	return json_get_string(cJSON_GetObjectItemCaseSensitive(rt, framework), "path");
}

const cJSON *
settings_runtime_args(const struct settings *s, const char *framework)
{
	const cJSON *rt = cJSON_GetObjectItemCaseSensitive(s->root, "runtimes");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rt,
	    framework), "args");

	return cJSON_IsArray(a) ? a : NULL;
}

void
settings_disk_thresholds(const struct settings *s, long *warn_mib, long *fail_mib)
{
	*warn_mib = s->disk_warn_mib;
	*fail_mib = s->disk_fail_mib;
}

void
settings_changes_limits(const struct settings *s, long long *max_file_bytes, long long *quota_bytes,
    long long *total_quota_bytes)
{
	*max_file_bytes = s->changes_max_file_bytes;
	*quota_bytes = s->changes_quota_bytes;
	*total_quota_bytes = s->changes_total_quota_bytes;
}
