/*
 * Agent routing (routing.c; docs/http-api.md): the stored setting, its
 * writes, and the "routing" member of a run's start message
 * (docs/host-protocol.md).
 */
#ifndef TD_SERVICE_ROUTING_H
#define TD_SERVICE_ROUTING_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct problem;
struct service;
struct store;

/* The routing resource, or NULL; *updated_at gets its time.  Only while the store is locked. */
cJSON *routing_load(struct store *st, int64_t *updated_at);
/* Replaces the stored routing (without updatedAt).  Only while locked; false on an error. */
bool routing_store(struct store *st, const cJSON *routing, int64_t now);
/*
 * Applies a checked merge patch to the routing (a member set to null is
 * cleared to null, not removed) in one transaction: the routing, or NULL
 * with *p (internal_error).  Takes the store lock.
 */
cJSON *routing_update(struct service *svc, const cJSON *patch, struct problem *p);

/*
 * {"subagent": {enabled, provider, model, maxConcurrent}, "reviewer":
 * {enabled, provider, model}} for a run of the taskdeck framework: provider
 * is the named provider of settings.json with its API key ({kind, baseUrl,
 * apiKey, replayDir}), null for the run's.  Takes the store lock.  NULL with
 * *why (malloc'd) when the routing names a provider that cannot be used.
 */
cJSON *routing_start_message(struct service *svc, char **why);

/* Overwrites the API keys routing_start_message put in msg's routing. */
void routing_start_wipe(cJSON *msg);

#endif
