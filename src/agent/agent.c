#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "json.h"
#include "redact.h"
#include "xalloc.h"
#include "xalloc.h"

static const char *const agent_profiles[] = {
	[PROFILE_READ_ONLY] = "read-only",
	[PROFILE_WORKSPACE_WRITE] = "workspace-write",
	[PROFILE_FULL_ACCESS] = "full-access",
	[PROFILE_ASK] = "ask",
};

static const char *const agent_provider_kinds[] = { "replay", "openai", "anthropic", NULL };
static const char *const agent_turn_intents[] = { "plan-first", NULL };
static const char *const agent_frameworks[] = { "taskdeck", "claude-code", "codex", "acp",
	NULL };

#define AGENT_RUNTIME_ARGS_MAX 64	/* runtime.args of the acp framework */

void
agent_error_set(struct agent_error *err, const char *code, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = xstrdup(code);
	va_end(ap);
	free(err->message);
	err->code = code;
	err->message = m;
}

void
agent_error_clear(struct agent_error *err)
{
	free(err->message);
	err->message = NULL;
	err->code = NULL;
}

void
usage_add(struct usage *to, const struct usage *u)
{
	to->input += u->input;
	to->output += u->output;
	to->cache_read += u->cache_read;
	to->cache_write += u->cache_write;
}

double
usage_cost(const struct usage *u, const struct price *p)
{
	long plain = u->input - u->cache_read - u->cache_write;

	return ((double)(plain > 0 ? plain : 0) * p->input + (double)u->output * p->output +
	    (double)u->cache_read * p->cache_read + (double)u->cache_write * p->cache_write) / 1e6;
}

const char *
agent_profile_name(enum agent_profile p)
{
	return agent_profiles[p];
}

enum sandbox_profile
agent_sandbox_profile(enum agent_profile p)
{
	static const enum sandbox_profile profiles[] = {
		[PROFILE_READ_ONLY] = SANDBOX_READ_ONLY,
		[PROFILE_WORKSPACE_WRITE] = SANDBOX_WORKSPACE_WRITE,
		[PROFILE_FULL_ACCESS] = SANDBOX_FULL_ACCESS,
		[PROFILE_ASK] = SANDBOX_WORKSPACE_WRITE,
	};

	return profiles[p];
}

size_t
agent_read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

size_t
agent_utf8_cut(const char *s, size_t len)
{
	size_t i = len, back = 0;

	/* Step back over continuation bytes to the lead byte of the last char. */
	while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) {
		i--;
		back++;
	}
	if (i > 0) {
		unsigned char c = (unsigned char)s[i - 1];
		size_t need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;

		if (need > back)
			return i - 1;
	}
	return len;
}

char *
agent_utf8_prefix(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return xstrdup(s);
	return xstrndup(s, agent_utf8_cut(s, max));
}

/* Length of the valid UTF-8 sequence at s (at most len bytes), 0 when invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t len)
{
	unsigned cp;
	size_t n;

	if (s[0] < 0x80)
		return s[0] ? 1 : 0;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void
agent_utf8_append(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;

	while (i < len) {
		size_t n = utf8_seq(p + i, len - i);

		if (n > 0) {
			i += n;
			run += n;
			continue;
		}
		buf_append(b, p + i - run, run);
		buf_appends(b, "\xef\xbf\xbd");
		run = 0;
		i++;
	}
	buf_append(b, p + i - run, run);
}

char *
agent_utf8_clean(const char *s)
{
	struct buf b;

	buf_init(&b, 0);
	agent_utf8_append(&b, s, strlen(s));
	return buf_steal(&b);
}

static char *
config_string(const cJSON *obj, const char *key)
{
	return xstrdup_or_null(json_get_string(obj, key));
}

/* obj[key] as an integer in [min, max], def when absent; false when bad. */
/* provider.price (absent or null: none); false when malformed. */
static bool
config_price(const cJSON *price, struct price *p)
{
	static const char *const keys[] = { "input", "output", "cacheRead", "cacheWrite" };
	double *to[] = { &p->input, &p->output, &p->cache_read, &p->cache_write };

	if (price == NULL || cJSON_IsNull(price))
		return true;
	if (!cJSON_IsObject(price))
		return false;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(price, keys[i]);

		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e6)
			return false;
		*to[i] = v->valuedouble;
	}
	p->set = true;
	return true;
}

static bool
config_int(const cJSON *obj, const char *key, long min, long max, long def, long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (v == NULL || cJSON_IsNull(v)) {
		*out = def;
		return true;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble < (double)min ||
	    v->valuedouble > (double)max)
		return false;
	*out = (long)v->valuedouble;
	return true;
}

static bool
config_profile(const char *name, enum agent_profile *p)
{
	if (name == NULL) {
		*p = PROFILE_WORKSPACE_WRITE;
		return true;
	}
	for (size_t i = 0; i < sizeof agent_profiles / sizeof *agent_profiles; i++) {
		if (strcmp(agent_profiles[i], name) == 0) {
			*p = (enum agent_profile)i;
			return true;
		}
	}
	return false;
}

static bool
config_fail(char **why, const char *what)
{
	*why = xstrdup(what);
	return false;
}

/* runtime.args: at most AGENT_RUNTIME_ARGS_MAX strings without a NUL; absent or null: none. */
static bool
config_runtime_args(struct agent_config *cfg, const cJSON *args, char **why)
{
	const cJSON *a;
	int n = 0;

	if (args == NULL || cJSON_IsNull(args))
		return true;
	if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > AGENT_RUNTIME_ARGS_MAX)
		return config_fail(why, "runtime.args must be an array of at most 64 strings");
	cfg->runtime_args = xcalloc((size_t)cJSON_GetArraySize(args) + 1, sizeof(char *));
	cJSON_ArrayForEach(a, args) {
		if (!cJSON_IsString(a) || strlen(a->valuestring) > 4096)
			return config_fail(why, "runtime.args must be strings of at most 4096 bytes");
		cfg->runtime_args[n++] = xstrdup(a->valuestring);
	}
	return true;
}

/* config.framework and, for an external one, start.runtime (an absolute path). */
static bool
config_framework(struct agent_config *cfg, const cJSON *config, const cJSON *runtime,
    char **why)
{
	const char *fw = json_get_string(config, "framework");
	const char *path;

	if (!json_check_enum(config, "framework", true, agent_frameworks))
		return config_fail(why, "config.framework must be taskdeck, claude-code, codex or acp");
	cfg->framework = xstrdup(fw ? fw : "taskdeck");
	if (strcmp(cfg->framework, "taskdeck") == 0)
		return true;
	if (!cJSON_IsObject(runtime) || !json_check_string(runtime, "path", true, false, 2,
	    PATH_MAX - 1) || !json_check_string(runtime, "version", false, true, 0, 64) ||
	    (path = json_get_string(runtime, "path"))[0] != '/')
		return config_fail(why, "an external framework needs runtime.path, an absolute path");
	if (!json_check_enum(runtime, "framework", true, (const char *const[]){ cfg->framework,
	    NULL }))
		return config_fail(why, "runtime.framework differs from config.framework");
	cfg->runtime_path = xstrdup(path);
	cfg->runtime_version = config_string(runtime, "version");
	return config_runtime_args(cfg, cJSON_GetObjectItemCaseSensitive(runtime, "args"), why);
}

static bool
config_workspace(struct agent_config *cfg, const cJSON *run, char **why)
{
	const char *ws = json_get_string(run, "workspace");
	char real[PATH_MAX];
	struct stat st;

	if (realpath(ws ? ws : ".", real) == NULL || stat(real, &st) != 0 ||
	    !S_ISDIR(st.st_mode))
		return config_fail(why, "run.workspace is not a directory");
	cfg->workspace = xstrdup(real);
	return true;
}

#define SANDBOX_HIDDEN_MAX 4096

static bool
config_sandbox_valid(const cJSON *sb)
{
	const cJSON *hidden = cJSON_GetObjectItemCaseSensitive(sb, "hidden"), *h;
	const char *const flags[] = { "network", "allowUnconfined" };

	if (!cJSON_IsObject(sb))
		return false;
	for (size_t i = 0; i < 2; i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(sb, flags[i]);

		if (f != NULL && !cJSON_IsBool(f))
			return false;
	}
	if (hidden == NULL)
		return true;
	if (!cJSON_IsArray(hidden) || cJSON_GetArraySize(hidden) > SANDBOX_HIDDEN_MAX)
		return false;
	cJSON_ArrayForEach(h, hidden) {
		if (!cJSON_IsString(h) || h->valuestring[0] != '/' ||
		    strlen(h->valuestring) >= PATH_MAX)
			return false;
	}
	return true;
}

/* sandbox.limits: {memoryMiB, processes, cpuSeconds, tmpMiB}, each absent or 0 = none. */
static bool
config_limits(struct sandbox_limits *lim, const cJSON *sb)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(sb, "limits");
	long mem, procs, cpu, tmp;

	if (l != NULL && !cJSON_IsNull(l) && !cJSON_IsObject(l))
		return false;
	if (!config_int(l, "memoryMiB", 0, 1L << 24, 0, &mem) ||
	    !config_int(l, "processes", 0, 1L << 22, 0, &procs) ||
	    !config_int(l, "cpuSeconds", 0, 1L << 30, 0, &cpu) ||
	    !config_int(l, "tmpMiB", 0, 1L << 24, 0, &tmp))
		return false;
	lim->memory = (long long)mem << 20;
	lim->processes = procs;
	lim->cpu_seconds = cpu;
	lim->tmp_size = (long long)tmp << 20;
	return true;
}

/* Absent: no network, nothing unconfined, nothing hidden beyond the sandbox's own. */
static void
config_sandbox(struct agent_config *cfg, const cJSON *sb)
{
	const cJSON *hidden = cJSON_GetObjectItemCaseSensitive(sb, "hidden"), *h;
	size_t n = 0;

	cfg->network = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sb, "network"));
	cfg->allow_unconfined = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sb,
	    "allowUnconfined"));
	cfg->hidden = xcalloc((size_t)cJSON_GetArraySize(hidden) + 1, sizeof *cfg->hidden);
	cJSON_ArrayForEach(h, hidden)
		cfg->hidden[n++] = xstrdup(h->valuestring);
}

/* routing.<part>: absent or null, or {enabled, provider, model[, maxConcurrent]}. */
static bool
config_route(struct agent_route *ra, const cJSON *routing, const char *part)
{
	const cJSON *sub = cJSON_GetObjectItemCaseSensitive(routing, part);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(sub, "provider");

	if (sub == NULL || cJSON_IsNull(sub))
		return true;
	if (!cJSON_IsObject(sub))
		return false;
	if (!json_check_bool(sub, "enabled") || !json_check_string(sub, "model", false, true, 1, 200) ||
	    !json_check_int(sub, "maxConcurrent", 1, 16) ||
	    (p != NULL && !cJSON_IsNull(p) && (!cJSON_IsObject(p) ||
	    !json_check_enum(p, "kind", false, agent_provider_kinds) ||
	    json_get_string(p, "kind") == NULL ||
	    !json_check_string(p, "baseUrl", false, true, 1, 4096) ||
	    !json_check_string(p, "apiKey", false, true, 0, 8192) ||
	    !json_check_string(p, "replayDir", false, true, 1, PATH_MAX) ||
	    (strcmp(json_get_string(p, "kind"), "replay") != 0 &&
	    json_get_string(p, "baseUrl") == NULL))))
		return false;
	ra->enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sub, "enabled"));
	ra->model = config_string(sub, "model");
	ra->max_concurrent = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sub,
	    "maxConcurrent")) ? cJSON_GetObjectItemCaseSensitive(sub, "maxConcurrent")->valueint : 2;
	if (cJSON_IsObject(p)) {
		ra->provider_kind = config_string(p, "kind");
		ra->base_url = config_string(p, "baseUrl");
		ra->api_key = config_string(p, "apiKey");
		ra->replay_dir = config_string(p, "replayDir");
		if (ra->api_key != NULL && ra->api_key[0] == '\0') {
			free(ra->api_key);
			ra->api_key = NULL;
		}
	}
	return true;
}

/* start.routing (absent or null: no subagents, no review); false when malformed. */
static bool
config_routing(struct agent_config *cfg, const cJSON *routing)
{
	if (routing == NULL || cJSON_IsNull(routing))
		return true;
	return cJSON_IsObject(routing) && config_route(&cfg->subagent, routing, "subagent") &&
	    config_route(&cfg->reviewer, routing, "reviewer");
}

static void
config_route_free(struct agent_route *ra)
{
	free(ra->provider_kind);
	free(ra->base_url);
	if (ra->api_key != NULL) {
		explicit_bzero(ra->api_key, strlen(ra->api_key));
		free(ra->api_key);
	}
	free(ra->replay_dir);
	free(ra->model);
}

/*
 * start.provider: its kind and members, price, retries and context window
 * (the numbers into cfg; the strings are taken once all of start is checked);
 * false with *why when malformed.
 */
static bool
config_provider(struct agent_config *cfg, const cJSON *provider, char **why)
{
	long retries, retry_wait, window;

	if (!json_check_enum(provider, "kind", false, agent_provider_kinds) ||
	    json_get_string(provider, "kind") == NULL)
		return config_fail(why, "provider.kind must be replay, openai or anthropic");
	if (!json_check_string(provider, "baseUrl", false, true, 1, 4096) ||
	    !json_check_string(provider, "apiKey", false, true, 0, 8192) ||
	    !json_check_string(provider, "replayDir", false, true, 1, PATH_MAX))
		return config_fail(why, "a provider or config member has the wrong type");
	if (!config_price(cJSON_GetObjectItemCaseSensitive(provider, "price"), &cfg->price))
		return config_fail(why, "provider.price must be null or an object of input, output, "
		    "cacheRead and cacheWrite, USD per million tokens from 0 to 10^6");
	if (!config_int(provider, "maxRetries", 0, AGENT_MAX_RETRIES, AGENT_DEFAULT_RETRIES,
	    &retries) || !config_int(provider, "maxRetryWaitMs", 0, 3600000L,
	    AGENT_DEFAULT_RETRY_WAIT_MS, &retry_wait) ||
	    !config_int(provider, "contextWindow", 1024, 10000000L, 0, &window))
		return config_fail(why, "provider.maxRetries, maxRetryWaitMs or contextWindow is "
		    "out of range");
	cfg->max_retries = (int)retries;
	cfg->max_retry_wait_ms = retry_wait;
	cfg->context_window = window;
	return true;
}

/* start.limits (absent or null: the defaults) into cfg; false with *why when malformed. */
static bool
config_run_limits(struct agent_config *cfg, const cJSON *limits, char **why)
{
	const cJSON *max_tokens = cJSON_GetObjectItemCaseSensitive(limits, "maxTokensPerRun");
	const cJSON *max_cost = cJSON_GetObjectItemCaseSensitive(limits, "maxCostPerRun");
	long turns, timeout, out_max, con_timeout;

	if (limits != NULL && !cJSON_IsNull(limits) && !cJSON_IsObject(limits))
		return config_fail(why, "limits must be an object");
	if (!config_int(limits, "maxTurns", 1, 1000, 200, &turns) ||
	    !config_int(limits, "commandTimeoutMs", 100, 86400000L, 600000, &timeout) ||
	    !config_int(limits, "maxToolOutputBytes", 1024, 4L * 1024 * 1024, 65536, &out_max) ||
	    !config_int(limits, "connectorTimeoutMs", 100, 3600000L, 60000, &con_timeout))
		return config_fail(why, "a limit is out of range");
	if (max_tokens != NULL && !cJSON_IsNull(max_tokens) &&
	    !json_check_int(limits, "maxTokensPerRun", 1, 1e15))
		return config_fail(why, "limits.maxTokensPerRun must be a positive integer or null");
	if (max_cost != NULL && !cJSON_IsNull(max_cost) &&
	    (!cJSON_IsNumber(max_cost) || !(max_cost->valuedouble > 0) ||
	    max_cost->valuedouble > 1e9))
		return config_fail(why, "limits.maxCostPerRun must be a positive number or null");
	cfg->max_turns = (int)turns;
	cfg->max_tokens = cJSON_IsNumber(max_tokens) ? (long long)max_tokens->valuedouble : 0;
	cfg->max_cost = cJSON_IsNumber(max_cost) ? max_cost->valuedouble : 0;
	cfg->command_timeout_ms = timeout;
	cfg->max_tool_output = (size_t)out_max;
	cfg->connector_timeout_ms = con_timeout;
	return true;
}

/*
 * The API keys of the run's providers (its own, the subagents' and the
 * reviewer's) for redact_str.  One shorter than REDACT_MIN_PART is left out:
 * a local server takes any key ("x"), and masking every x of what it says
 * would hide the message.
 */
static struct redact *
config_keys(const struct agent_config *cfg)
{
	const char *const keys[] = { cfg->api_key, cfg->subagent.api_key, cfg->reviewer.api_key };
	struct redact *r = redact_new();

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (keys[i] != NULL && strlen(keys[i]) >= REDACT_MIN_PART)
			redact_add(r, keys[i]);
	return r;
}

bool
agent_config_parse(struct agent_config *cfg, const cJSON *start, char **why)
{
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(start, "run");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(start, "config");
	const cJSON *provider = cJSON_GetObjectItemCaseSensitive(start, "provider");
	const cJSON *project = cJSON_GetObjectItemCaseSensitive(start, "project");
	const cJSON *history = cJSON_GetObjectItemCaseSensitive(start, "history");
	const cJSON *limits = cJSON_GetObjectItemCaseSensitive(start, "limits");
	const cJSON *connectors = cJSON_GetObjectItemCaseSensitive(start, "connectors");
	const cJSON *sandbox = cJSON_GetObjectItemCaseSensitive(start, "sandbox");
	const cJSON *checkpoint = cJSON_GetObjectItemCaseSensitive(start, "checkpoint");

	memset(cfg, 0, sizeof *cfg);
	*why = NULL;
	if (!cJSON_IsObject(run) || !cJSON_IsObject(provider) || !cJSON_IsObject(config))
		return config_fail(why, "start needs run, config and provider objects");
	if (!json_check_string(run, "prompt", true, false, 0, SIZE_MAX))
		return config_fail(why, "run.prompt must be a string");
	if (!config_profile(json_get_string(run, "permissionProfile"), &cfg->profile) ||
	    !json_check_string(run, "permissionProfile", false, true, 1, 64))
		return config_fail(why, "run.permissionProfile is not a known profile");
	if (!json_check_enum(run, "turnIntent", true, agent_turn_intents))
		return config_fail(why, "run.turnIntent must be null or plan-first");
	if (!config_provider(cfg, provider, why))
		return false;
	if (!json_check_string(config, "model", false, true, 1, 200) ||
	    !json_check_string(config, "effort", false, true, 1, 32))
		return config_fail(why, "a provider or config member has the wrong type");
	if (project != NULL && !cJSON_IsNull(project) && !cJSON_IsObject(project))
		return config_fail(why, "project must be an object");
	if (history != NULL && !cJSON_IsNull(history) && !cJSON_IsArray(history))
		return config_fail(why, "history must be an array");
	if (sandbox != NULL && !cJSON_IsNull(sandbox) && !config_sandbox_valid(sandbox))
		return config_fail(why, "sandbox must be an object: network and allowUnconfined "
		    "booleans, hidden an array of absolute paths");
	if (!config_limits(&cfg->limits, sandbox))
		return config_fail(why, "sandbox.limits must be an object of memoryMiB, processes, "
		    "cpuSeconds and tmpMiB, each 0 (none) or a positive integer");
	if (!config_run_limits(cfg, limits, why))
		return false;
	if (connectors != NULL && !cJSON_IsNull(connectors) && !cJSON_IsArray(connectors))
		return config_fail(why, "connectors must be an array");
	/* A resumed run's checkpoint, checked in full by the loop. */
	if (checkpoint != NULL && !cJSON_IsNull(checkpoint) && !cJSON_IsObject(checkpoint))
		return config_fail(why, "checkpoint must be an object");
	if (cJSON_GetObjectItemCaseSensitive(run, "requestIdBase") != NULL &&
	    !json_check_int(run, "requestIdBase", 0, 1e12))
		return config_fail(why, "run.requestIdBase must be an integer of 0 to 10^12");

	cfg->run_id = config_string(run, "id");
	cfg->prompt = config_string(run, "prompt");
	cfg->plan_first = json_get_string(run, "turnIntent") != NULL;
	cfg->provider_kind = config_string(provider, "kind");
	cfg->base_url = config_string(provider, "baseUrl");
	cfg->api_key = config_string(provider, "apiKey");
	if (cfg->api_key != NULL && cfg->api_key[0] == '\0') {
		free(cfg->api_key);
		cfg->api_key = NULL;
	}
	cfg->replay_dir = config_string(provider, "replayDir");
	cfg->model = config_string(config, "model");
	cfg->effort = config_string(config, "effort");
	cfg->project_name = config_string(project, "name");
	cfg->project_context = config_string(project, "context");
	cfg->history = cJSON_IsArray(history) ? cJSON_Duplicate(history, true) : NULL;
	cfg->checkpoint = cJSON_IsObject(checkpoint) ? cJSON_Duplicate(checkpoint, true) : NULL;
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(run, "requestIdBase")))
		cfg->request_id_base = (long long)cJSON_GetObjectItemCaseSensitive(run,
		    "requestIdBase")->valuedouble;
	cfg->connectors = cJSON_IsArray(connectors) ? cJSON_Duplicate(connectors, true) : NULL;
	config_sandbox(cfg, sandbox);
	if (!config_routing(cfg, cJSON_GetObjectItemCaseSensitive(start, "routing"))) {
		agent_config_free(cfg);
		return config_fail(why, "routing is malformed");
	}
	cfg->keys = config_keys(cfg);
	if (cfg->model == NULL) {
		agent_config_free(cfg);
		return config_fail(why, "config.model is required");
	}
	if (strcmp(cfg->provider_kind, "replay") != 0 && cfg->base_url == NULL) {
		agent_config_free(cfg);
		return config_fail(why, "provider.baseUrl is required for openai and anthropic");
	}
	if (!config_framework(cfg, config, cJSON_GetObjectItemCaseSensitive(start, "runtime"),
	    why) || !config_workspace(cfg, run, why)) {
		agent_config_free(cfg);
		return false;
	}
	return true;
}

void
agent_config_free(struct agent_config *cfg)
{
	free(cfg->run_id);
	free(cfg->prompt);
	free(cfg->workspace);
	free(cfg->framework);
	free(cfg->runtime_path);
	free(cfg->runtime_version);
	for (size_t i = 0; cfg->runtime_args != NULL && cfg->runtime_args[i] != NULL; i++)
		free(cfg->runtime_args[i]);
	free(cfg->runtime_args);
	free(cfg->provider_kind);
	free(cfg->base_url);
	if (cfg->api_key != NULL) {
		explicit_bzero(cfg->api_key, strlen(cfg->api_key));
		free(cfg->api_key);
	}
	redact_free(cfg->keys);
	free(cfg->replay_dir);
	for (size_t i = 0; cfg->hidden != NULL && cfg->hidden[i] != NULL; i++)
		free(cfg->hidden[i]);
	free(cfg->hidden);
	free(cfg->model);
	free(cfg->effort);
	free(cfg->project_name);
	free(cfg->project_context);
	cJSON_Delete(cfg->history);
	cJSON_Delete(cfg->checkpoint);
	cJSON_Delete(cfg->connectors);
	config_route_free(&cfg->subagent);
	config_route_free(&cfg->reviewer);
	memset(cfg, 0, sizeof *cfg);
}
