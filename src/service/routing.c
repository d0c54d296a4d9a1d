/*
 * Agent routing (routing.h): the only writer of its row of the settings
 * table, and what a run's start message carries of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "credentials.h"

#include "json.h"
#include "problem.h"
#include "resource.h"
#include "routing.h"
#include "service.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

/* The routing resource, or NULL.  Only while the store is locked. */
cJSON *
routing_load(struct store *st, int64_t *updated_at)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT value, updated_at FROM settings"
	    " WHERE key = 'agent-routing'");
	cJSON *res = NULL;

	if (sqlite3_step(s) == SQLITE_ROW) {
		res = resource_json_column(s, 0);
		*updated_at = sqlite3_column_int64(s, 1);
		resource_add_time(res, "updatedAt", *updated_at);
	}
	sqlite3_reset(s);
	return res;
}

bool
routing_store(struct store *st, const cJSON *routing, int64_t now)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE settings SET value = ?1,"
	    " updated_at = " RESOURCE_NEXT_TIME(2) " WHERE key = 'agent-routing'");
	bool ok;

	sqlite3_bind_text(s, 1, json_print(routing), -1, free);
	sqlite3_bind_int64(s, 2, now);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

/*
 * The provider name of settings.json as a start message carries it, key
 * included; part ("subagent", "reviewer") names the routing member in *why.
 */
static cJSON *
routing_provider(struct service *svc, const char *part, const char *name, char **why)
{
	cJSON *p = credential_provider_block(svc, name, why);

	if (p == NULL && *why == NULL)
		*why = xasprintf("the %s provider %s of the agent routing is not configured",
		    part, name);
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
	cJSON *setting, *msg, *sub;
	const cJSON *want;
	const char *provider;
	int64_t updated_at;

	*why = NULL;
	store_lock(st);
	setting = routing_load(st, &updated_at);
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

/* Merge patch that keeps explicit nulls: routing members are cleared to null, not removed. */
static void
routing_merge_keep_nulls(cJSON *target, const cJSON *patch)
{
	for (const cJSON *p = patch->child; p; p = p->next) {
		cJSON *old = cJSON_GetObjectItemCaseSensitive(target, p->string);

		if (cJSON_IsObject(p) && cJSON_IsObject(old))
			routing_merge_keep_nulls(old, p);
		else if (old != NULL)
			cJSON_ReplaceItemViaPointer(target, old, cJSON_Duplicate(p, true));
		else
			cJSON_AddItemToObject(target, p->string, cJSON_Duplicate(p, true));
	}
}

cJSON *
routing_update(struct service *svc, const cJSON *patch, struct problem *p)
{
	struct store *st = svc->store;
	int64_t updated;
	cJSON *res = NULL;
	bool ok;

	store_lock(st);
	ok = store_begin(st);
	if (ok)
		res = routing_load(st, &updated);
	ok = ok && res != NULL;
	if (ok) {
		cJSON_DeleteItemFromObjectCaseSensitive(res, "updatedAt");
		routing_merge_keep_nulls(res, patch);
		ok = routing_store(st, res, clock_wall_ms());
	}
	cJSON_Delete(res);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	res = ok ? routing_load(st, &updated) : NULL;
	store_unlock(st);
	if (res == NULL)
		problem_set(p, TD_INTERNAL_ERROR, NULL, "%s",
		    errcode_default_message(TD_INTERNAL_ERROR));
	return res;
}
