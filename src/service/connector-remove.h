/*
 * Removing a connector (DELETE /connectors/:id): its definition and bindings
 * (connectors.h), then what a sign-in stored for it (connector-oauth.h), then
 * its state directory.
 */
#ifndef TD_SERVICE_CONNECTOR_REMOVE_H
#define TD_SERVICE_CONNECTOR_REMOVE_H

#include "errors.h"
#include "problem.h"

struct service;

/* TD_NOT_FOUND, or TD_FORBIDDEN for a built-in connector. */
enum td_code connector_remove(struct service *svc, const char *id, struct problem *p);

#endif
