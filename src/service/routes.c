/* The one route table of taskdeckd (docs/http-api.md). */
#include "routes.h"

const struct route routes[] = {
	{ "GET", "/api/v1/doctor", route_doctor, 0 },

	{ "GET", "/api/v1/projects", route_projects_list, 0 },
	{ "POST", "/api/v1/projects", route_projects_create, ROUTE_BODY | ROUTE_IDEMPOTENT },
	{ "GET", "/api/v1/projects/:id", route_projects_get, 0 },
	{ "PATCH", "/api/v1/projects/:id", route_projects_update, ROUTE_BODY },
	{ "GET", "/api/v1/projects/:id/session-defaults", route_defaults_get, 0 },
	{ "PATCH", "/api/v1/projects/:id/session-defaults", route_defaults_update, ROUTE_BODY },

	{ "GET", "/api/v1/settings/agent-routing", route_routing_get, 0 },
	{ "PATCH", "/api/v1/settings/agent-routing", route_routing_update, ROUTE_BODY },
};

const size_t routes_count = sizeof routes / sizeof routes[0];
