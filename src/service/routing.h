/*
 * Agent routing as a run uses it: the "routing" member of the start message
 * (docs/host-protocol.md), built from the agent-routing setting.
 */
#ifndef TD_SERVICE_ROUTING_H
#define TD_SERVICE_ROUTING_H

#include <cjson/cJSON.h>

struct service;

/*
 * {"subagent": {"enabled", "provider", "model", "maxConcurrent"}} for a run of
 * the taskdeck framework: provider is the named provider of settings.json with
 * its API key ({kind, baseUrl, apiKey, replayDir}), null for the run's.  NULL
 * with *why (malloc'd) when the routing names a provider that cannot be used.
 */
cJSON *routing_start_message(struct service *svc, char **why);

/* Overwrites the API keys routing_start_message put in msg's routing. */
void routing_start_wipe(cJSON *msg);

#endif
