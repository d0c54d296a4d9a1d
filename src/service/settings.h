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
/* The provider named name ({kind, baseUrl, apiKeyEnv, defaultModel}), or NULL.  Owned by s. */
const cJSON *settings_provider(const struct settings *s, const char *name);
int settings_max_concurrent(const struct settings *s);
int settings_max_turns(const struct settings *s);
long settings_command_timeout_ms(const struct settings *s);
/* readiness: the configured path of an external CLI (runtimes.<framework>.path), or NULL. */
const char *settings_runtime_path(const struct settings *s, const char *framework);
/* readiness: doctor's free-space thresholds under the data directory, in MiB. */
void settings_disk_thresholds(const struct settings *s, long *warn_mib, long *fail_mib);

#endif
