/*
 * External frameworks (claude-code, codex) on the service side
 * (docs/frameworks.md): what a run with one needs before it is admitted, and
 * the runtime the supervisor hands to taskdeck-agent in the start line.
 */
#ifndef TD_SERVICE_FRAMEWORKS_H
#define TD_SERVICE_FRAMEWORKS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct service;
struct problem;

/* True for claude-code and codex; false for taskdeck and NULL. */
bool frameworks_external(const char *framework);

/*
 * A configuration with an external framework: its provider must be of the
 * kind the CLI speaks and its runtime ready.  On a problem fills *p
 * (invalid_configuration (details: field, framework, and for the runtime its
 * status, version and message)) and returns false.  True for taskdeck.
 */
bool frameworks_config_usable(const struct service *svc, const cJSON *cfg,
    const char *provider_kind, struct problem *p);

/*
 * What an external framework cannot honour in one run: the ask profile and
 * plan-first.  Fills *p as above and returns false.
 */
bool frameworks_run_usable(const char *framework, const char *profile,
    const char *turn_intent, struct problem *p);

/*
 * The start line's "runtime" member for an external framework, probed now
 * ({"framework","path","version"}); NULL with *why (malloc'd) when the
 * runtime is not ready.
 */
cJSON *frameworks_start_runtime(const struct service *svc, const char *framework,
    char **why);

#endif
