/*
 * The models a provider of settings.json offers (docs/http-api.md, Providers):
 * asked of the provider itself, OpenAI-compatible GET {baseUrl}/models
 * (Ollama's GET /api/tags when that fails on a local server), Anthropic's
 * models API; merged with the models settings.json names.  The API key goes
 * to the provider only, never into the answer or the log.
 */
#ifndef TD_SERVICE_MODELS_H
#define TD_SERVICE_MODELS_H

#include <cjson/cJSON.h>

#include "problem.h"

struct service;

/*
 * {provider, kind, source, models: [{id, displayName?, contextWindow?,
 * default?, configured?}]} of the provider name, or NULL with p set:
 * not_found (no such provider), invalid_configuration (its key cannot be
 * read), provider_unavailable (it did not answer a list), service_unavailable
 * (another listing is under way).  At most MODELS_TIMEOUT_MS.
 */
#define MODELS_TIMEOUT_MS 5000
cJSON *models_list(struct service *svc, const char *name, struct problem *p);

#endif
