/* Global settings over HTTP: agent routing (docs/http-api.md). */
#include <stdio.h>
#include <stdlib.h>

#include "http.h"
#include "json.h"
#include "problem.h"
#include "resource.h"
#include "routes.h"
#include "routing.h"
#include "service.h"
#include "store.h"
#include "xalloc.h"

#define ROUTING_MAX_CONCURRENT 16

void
route_routing_get(struct http_request *req, struct http_response *r)
{
	struct store *st = req->svc->store;
	int64_t updated;
	cJSON *res;

	store_lock(st);
	res = routing_load(st, &updated);
	store_unlock(st);
	if (res == NULL)
		http_error(r, TD_INTERNAL_ERROR, NULL, NULL);
	else
		http_json(r, 200, res);
}

/* Checks one nested member (reviewer or subagent) of a routing patch. */
static bool
routing_part_valid(const cJSON *patch, const char *part, bool has_framework,
    bool has_max, struct http_response *r)
{
	static const char *const reviewer_keys[] = { "enabled", "framework",
		"provider", "model", NULL };
	static const char *const subagent_keys[] = { "enabled", "provider",
		"model", "maxConcurrent", NULL };
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(patch, part);
	const char *bad = NULL;
	char field[64];

	if (p == NULL)
		return true;
	if (!cJSON_IsObject(p)) {
		http_bad_field(r, part, "%s must be an object", part);
		return false;
	}
	if (!json_only_keys(p, has_framework ? reviewer_keys : subagent_keys, &bad)) {
		snprintf(field, sizeof field, "%s.%s", part, bad);
		http_bad_field(r, field, "unknown field %s", field);
		return false;
	}
	if (!json_check_bool(p, "enabled") ||
	    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p, "enabled"))) {
		snprintf(field, sizeof field, "%s.enabled", part);
		http_bad_field(r, field, "%s must be true or false", field);
		return false;
	}
	/* A reviewer is a loop of the built-in agent: no CLI reviews another run. */
	if (has_framework && !json_check_enum(p, "framework", true,
	    (const char *const[]){ "taskdeck", NULL })) {
		snprintf(field, sizeof field, "%s.framework", part);
		http_bad_field(r, field, "%s must be taskdeck or null: reviews run on taskdeck's "
		    "own agent loop (claude-code and codex cannot review)", field);
		return false;
	}
	for (const char *const *k = (const char *const[]){ "provider", "model", NULL }; *k; k++) {
		if (!json_check_string(p, *k, false, true, 1, NAME_MAX_CHARS)) {
			snprintf(field, sizeof field, "%s.%s", part, *k);
			http_bad_field(r, field, "%s must be a string of 1 to %d characters or null",
			    field, NAME_MAX_CHARS);
			return false;
		}
	}
	if (has_max && (!json_check_int(p, "maxConcurrent", 1, ROUTING_MAX_CONCURRENT) ||
	    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p, "maxConcurrent")))) {
		snprintf(field, sizeof field, "%s.maxConcurrent", part);
		http_bad_field(r, field, "%s must be an integer from 1 to %d", field,
		    ROUTING_MAX_CONCURRENT);
		return false;
	}
	return true;
}

/*
 * A routing patch is a merge patch of the whole resource; each member it
 * sets must keep the resource valid, so the merged result needs no check.
 */
static bool
routing_patch_valid(const cJSON *patch, struct http_response *r)
{
	static const char *const keys[] = { "framework", "reviewer", "subagent", NULL };
	const char *bad = NULL;

	if (cJSON_GetObjectItemCaseSensitive(patch, "updatedAt") != NULL) {
		http_bad_field(r, "updatedAt", "updatedAt is read-only");
		return false;
	}
	if (!json_only_keys(patch, keys, &bad)) {
		http_bad_field(r, bad, "unknown field %s", bad);
		return false;
	}
	if (!json_check_enum(patch, "framework", false, resource_frameworks)) {
		http_bad_field(r, "framework", "framework must be taskdeck, claude-code, codex or acp");
		return false;
	}
	return routing_part_valid(patch, "reviewer", true, false, r) &&
	    routing_part_valid(patch, "subagent", false, true, r);
}

void
route_routing_update(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *res;

	if (!routing_patch_valid(req->json, r))
		return;
	res = routing_update(req->svc, req->json, &p);
	if (res == NULL)
		return http_problem(r, &p);
	http_json(r, 200, res);
}
