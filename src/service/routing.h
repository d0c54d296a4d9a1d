/*
 * Agent routing (routing.c; docs/http-api.md): the stored resource and its
 * writes.
 */
#ifndef TD_SERVICE_ROUTING_H
#define TD_SERVICE_ROUTING_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct store;

/* The routing resource, or NULL; *updated_at gets its time.  Only while the store is locked. */
cJSON *routing_load(struct store *st, int64_t *updated_at);
/* Replaces the stored routing (without updatedAt).  Only while locked; false on an error. */
bool routing_store(struct store *st, const cJSON *routing, int64_t now);

#endif
