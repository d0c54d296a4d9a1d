/*
 * Application settings: settings.json (docs/settings.md), read once when the
 * service starts and written with the defaults when missing.
 */
#ifndef TD_SERVICE_SETTINGS_H
#define TD_SERVICE_SETTINGS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct settings;

/* Loads path (writing the defaults when it is missing); NULL with *err set. */
struct settings *settings_load(const char *path, char **err);
void settings_free(struct settings *s);

/* The "defaults" object (members may be null).  Owned by s. */
const cJSON *settings_defaults(const struct settings *s);
/* The provider named name ({kind, baseUrl, apiKeyEnv or apiKeyCredential,
 * defaultModel}), or NULL.  Owned by s. */
const cJSON *settings_provider(const struct settings *s, const char *name);
/* The "providers" object ({name: {kind, ..., apiKeyCredential}}).  Owned by s. */
const cJSON *settings_providers(const struct settings *s);
int settings_max_concurrent(const struct settings *s);
/* runs.resumeLimit: how often a run resumes after a restart before resume_limit. */
int settings_resume_limit(const struct settings *s);
int settings_max_turns(const struct settings *s);
/* runs.maxTokensPerRun: tokens (input and output) a run may use; 0 when unbounded. */
long long settings_max_tokens_per_run(const struct settings *s);
/* runs.maxCostPerRun: USD a run may cost at its model's price; 0 when unbounded. */
double settings_max_cost_per_run(const struct settings *s);

/* A price of pricing (docs/settings.md): USD per million tokens of each kind. */
struct price {
	double input, output, cache_read, cache_write;
};
/*
 * The price of model (NULL: the provider's defaultModel) of provider in
 * pricing; false when the table has none.
 */
bool settings_price(const struct settings *s, const char *provider, const char *model,
    struct price *out);
long settings_command_timeout_ms(const struct settings *s);
/* runs.allowUnconfinedCommands: commands run unconfined when no sandbox works. */
bool settings_allow_unconfined(const struct settings *s);
/* runs.commandLimits: the bounds of commands and connector servers (docs/agent.md). */
struct sandbox_limits;
const struct sandbox_limits *settings_command_limits(const struct settings *s);
/* defaults.network: commands of runs reach the network unless a project or run says. */
bool settings_network(const struct settings *s);
/* Moves the providers' API keys from the environment into s (taskdeckd does it at start). */
void settings_take_api_keys(struct settings *s);
/* The key taken from $env_name, or NULL. */
const char *settings_api_key(const struct settings *s, const char *env_name);
/* readiness: the configured path of an external CLI (runtimes.<framework>.path), or NULL. */
const char *settings_runtime_path(const struct settings *s, const char *framework);
/* runtimes.acp.args: the ACP agent's arguments (an array of strings), or NULL. */
const cJSON *settings_runtime_args(const struct settings *s, const char *framework);
/* readiness: doctor's free-space thresholds under the data directory, in MiB. */
void settings_disk_thresholds(const struct settings *s, long *warn_mib, long *fail_mib);
/* notify.command: an array of strings (program, arguments), or NULL. */
const cJSON *settings_notify_command(const struct settings *s);
/* changes.maxFileBytes, changes.quotaBytes and changes.totalQuotaBytes (docs/settings.md). */
void settings_changes_limits(const struct settings *s, long long *max_file_bytes,
    long long *quota_bytes, long long *total_quota_bytes);

#endif
