/* External frameworks on the service side (frameworks.h, docs/frameworks.md). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frameworks.h"
#include "json.h"
#include "problem.h"
#include "runtimes.h"
#include "service.h"
#include "settings.h"
#include "xalloc.h"

/* The provider kind each CLI speaks. */
static const struct {
	const char *framework;
	const char *provider_kind;
} frameworks_table[] = {
	{ "claude-code", "anthropic" },
	{ "codex", "openai" },
	{ "acp", "*" },	/* the agent brings its own model: any provider */
};

static const char *
frameworks_kind(const char *framework)
{
	for (size_t i = 0; i < sizeof frameworks_table / sizeof *frameworks_table; i++) {
		if (framework != NULL && strcmp(frameworks_table[i].framework, framework) == 0)
			return frameworks_table[i].provider_kind;
	}
	return NULL;
}

bool
frameworks_external(const char *framework)
{
	return frameworks_kind(framework) != NULL;
}

static void refuse(struct problem *, cJSON *, const char *, const char *,
    const char *, ...) __attribute__((format(printf, 5, 6)));

/* 422 invalid_configuration; details (consumed, may be NULL) gets field and framework. */
static void
refuse(struct problem *p, cJSON *details, const char *field, const char *framework,
    const char *fmt, ...)
{
	va_list ap;

	if (details == NULL)
		details = cJSON_CreateObject();
	cJSON_AddStringToObject(details, "field", field);
	cJSON_AddStringToObject(details, "framework", framework);
	p->code = TD_INVALID_CONFIGURATION;
	p->field[0] = '\0';	/* in details already, before framework */
	p->details = details;
	va_start(ap, fmt);
	vsnprintf(p->message, sizeof p->message, fmt, ap);
	va_end(ap);
}

bool
frameworks_config_usable(const struct service *svc, const cJSON *cfg,
    const char *provider_kind, struct problem *p)
{
	const char *framework = json_get_string(cfg, "framework");
	const char *kind = frameworks_kind(framework);
	struct runtime_info info;
	cJSON *details;

	if (kind == NULL)
		return true;
	/* The runtime first: without it nothing else matters. */
	runtimes_probe(svc, framework, &info);
	if (info.status != RUNTIME_READY) {
		details = cJSON_CreateObject();
		cJSON_AddStringToObject(details, "status", runtime_status_name(info.status));
		if (info.version[0] != '\0')
			cJSON_AddStringToObject(details, "version", info.version);
		if (info.path[0] != '\0')
			cJSON_AddStringToObject(details, "path", info.path);
		cJSON_AddStringToObject(details, "reason", info.message);
		refuse(p, details, "framework", framework, "The runtime of the framework %s is "
		    "%s%s%s%s: %s", framework, runtime_status_name(info.status),
		    info.version[0] ? " (version " : "", info.version, info.version[0] ? ")" : "",
		    info.message);
		return false;
	}
	if (strcmp(kind, "*") != 0 && (provider_kind == NULL || strcmp(provider_kind, kind) != 0)) {
		refuse(p, NULL, "provider", framework, "The framework %s needs a provider of kind "
		    "%s; %s is of kind %s.", framework, kind, json_get_string(cfg, "provider"),
		    provider_kind ? provider_kind : "unknown");
		return false;
	}
	return true;
}

bool
frameworks_run_usable(const char *framework, const char *profile, const char *turn_intent,
    struct problem *p)
{
	if (!frameworks_external(framework))
		return true;
	/* claude-code asks through a permission prompt tool (docs/frameworks.md). */
	if (profile != NULL && strcmp(profile, "ask") == 0 &&
	    strcmp(framework, "claude-code") != 0 && strcmp(framework, "acp") != 0) {
		refuse(p, NULL, "permissionProfile", framework, "The framework %s cannot ask "
		    "for permission through taskdeck: use read-only, workspace-write or "
		    "full-access, or the taskdeck, claude-code or acp framework for ask.", framework);
		return false;
	}
	if (turn_intent != NULL && strcmp(turn_intent, "plan-first") == 0) {
		refuse(p, NULL, "turnIntent", framework, "The framework %s cannot propose a plan "
		    "through taskdeck: plan-first runs need the taskdeck framework.", framework);
		return false;
	}
	return true;
}

cJSON *
frameworks_start_runtime(const struct service *svc, const char *framework, char **why)
{
	struct runtime_info info;
	cJSON *rt;

	runtimes_probe(svc, framework, &info);
	if (info.status != RUNTIME_READY) {
		*why = xasprintf("The runtime of the framework %s is %s: %s", framework,
		    runtime_status_name(info.status), info.message);
		return NULL;
	}
	rt = cJSON_CreateObject();
	cJSON_AddStringToObject(rt, "framework", framework);
	cJSON_AddStringToObject(rt, "path", info.path);
	cJSON_AddStringToObject(rt, "version", info.version);
	if (settings_runtime_args(svc->settings, framework) != NULL)
		cJSON_AddItemToObject(rt, "args", cJSON_Duplicate(settings_runtime_args(svc->settings,
		    framework), true));
	return rt;
}
