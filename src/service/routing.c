#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "connectors.h"
#include "json.h"
#include "resource.h"
#include "routing.h"
#include "secrets.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "xalloc.h"

/*
 * The provider name of settings.json as an agent start message carries it, key
 * included; part ("subagent", "reviewer") names the routing member in *why.
 */
static cJSON *
routing_provider(struct service *svc, const char *part, const char *name, char **why)
{
	const cJSON *provider = settings_provider(svc->settings, name);
	const char *key_env, *key = NULL;
	char *cred_key = NULL;
	cJSON *p;

	if (provider == NULL) {
		*why = xasprintf("the %s provider %s of the agent routing is not configured",
		    part, name);
		return NULL;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "kind", json_get_string(provider, "kind"));
	if (json_get_string(provider, "baseUrl") != NULL)
		cJSON_AddStringToObject(p, "baseUrl", json_get_string(provider, "baseUrl"));
	else
		cJSON_AddNullToObject(p, "baseUrl");
	key_env = json_get_string(provider, "apiKeyEnv");
	if (key_env != NULL)
		key = settings_api_key(svc->settings, key_env);
	if (json_get_string(provider, "apiKeyCredential") != NULL) {
		char *sealed_why = NULL;

		if (!credential_provider_key(svc, json_get_string(provider, "apiKeyCredential"),
		    &cred_key, &sealed_why)) {
			*why = xasprintf("The API key of provider %s cannot be read: %s.", name,
			    sealed_why);
			free(sealed_why);
			cJSON_Delete(p);
			return NULL;
		}
		key = cred_key;
	}
	if (key != NULL)
		cJSON_AddStringToObject(p, "apiKey", key);
	else
		cJSON_AddNullToObject(p, "apiKey");
	secrets_plain_free(cred_key);
	cJSON_AddStringToObject(p, "replayDir", svc->replay_dir);
	return p;
}

/* msg.name: {enabled, provider, model} of the setting's part want; false with *why. */
static bool
routing_part(struct service *svc, const cJSON *want, cJSON *msg, const char *name, char **why)
{
	cJSON *part = cJSON_AddObjectToObject(msg, name);
	const char *provider = json_get_string(want, "provider");
	bool enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(want, "enabled"));

	cJSON_AddBoolToObject(part, "enabled", enabled);
	if (enabled && provider != NULL) {
		cJSON *p = routing_provider(svc, name, provider, why);

		if (p == NULL)
			return false;
		cJSON_AddItemToObject(part, "provider", p);
	} else {
		cJSON_AddNullToObject(part, "provider");
	}
	if (json_get_string(want, "model") != NULL)
		cJSON_AddStringToObject(part, "model", json_get_string(want, "model"));
	else
		cJSON_AddNullToObject(part, "model");
	return true;
}

cJSON *
routing_start_message(struct service *svc, char **why)
{
	struct store *st = svc->store;
	sqlite3_stmt *s;
	cJSON *setting = NULL, *msg, *sub;
	const cJSON *want;
	const char *provider;

	*why = NULL;
	store_lock(st);
	s = store_stmt(st, "SELECT value FROM settings WHERE key = 'agent-routing'");
	if (sqlite3_step(s) == SQLITE_ROW)
		setting = resource_json_column(s, 0);
	sqlite3_reset(s);
	store_unlock(st);
	want = cJSON_GetObjectItemCaseSensitive(setting, "subagent");
	msg = cJSON_CreateObject();
	sub = cJSON_AddObjectToObject(msg, "subagent");
	cJSON_AddBoolToObject(sub, "enabled",
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(want, "enabled")));
	provider = json_get_string(want, "provider");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(want, "enabled")) && provider != NULL) {
		cJSON *p = routing_provider(svc, "subagent", provider, why);

		if (p == NULL) {
			cJSON_Delete(msg);
			cJSON_Delete(setting);
			return NULL;
		}
		cJSON_AddItemToObject(sub, "provider", p);
	} else {
		cJSON_AddNullToObject(sub, "provider");
	}
	if (json_get_string(want, "model") != NULL)
		cJSON_AddStringToObject(sub, "model", json_get_string(want, "model"));
	else
		cJSON_AddNullToObject(sub, "model");
	cJSON_AddNumberToObject(sub, "maxConcurrent",
	    json_check_int(want, "maxConcurrent", 1, 16) &&
	    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(want, "maxConcurrent")) ?
	    cJSON_GetObjectItemCaseSensitive(want, "maxConcurrent")->valuedouble : 2);
	if (!routing_part(svc, cJSON_GetObjectItemCaseSensitive(setting, "reviewer"), msg,
	    "reviewer", why)) {
		cJSON_Delete(msg);
		cJSON_Delete(setting);
		return NULL;
	}
	cJSON_Delete(setting);
	return msg;
}

void
routing_start_wipe(cJSON *msg)
{
	for (const char *const *part = (const char *const[]){ "subagent", "reviewer", NULL };
	    *part; part++) {
		cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		    cJSON_GetObjectItem(msg, "routing"), *part), "provider"), "apiKey");

		if (cJSON_IsString(k) && k->valuestring != NULL)
			sodium_memzero(k->valuestring, strlen(k->valuestring));
	}
}
