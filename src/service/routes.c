/* The one route table of taskdeckd (docs/http-api.md). */
#include "routes.h"

const struct route routes[] = {
	{ "GET", "/api/v1/doctor", route_doctor, 0 },
	{ "GET", "/api/v1/openapi.json", route_openapi, 0 },

	{ "GET", "/api/v1/projects", route_projects_list, 0 },
	{ "POST", "/api/v1/projects", route_projects_create, ROUTE_BODY | ROUTE_IDEMPOTENT },
	{ "GET", "/api/v1/projects/:id", route_projects_get, 0 },
	{ "PATCH", "/api/v1/projects/:id", route_projects_update, ROUTE_BODY },
	{ "GET", "/api/v1/projects/:id/session-defaults", route_defaults_get, 0 },
	{ "GET", "/api/v1/projects/:id/usage", route_projects_usage, 0 },
	{ "PATCH", "/api/v1/projects/:id/session-defaults", route_defaults_update, ROUTE_BODY },

	{ "GET", "/api/v1/settings/agent-routing", route_routing_get, 0 },
	{ "PATCH", "/api/v1/settings/agent-routing", route_routing_update, ROUTE_BODY },

	{ "POST", "/api/v1/runs", route_runs_create, ROUTE_BODY | ROUTE_IDEMPOTENT },
	{ "GET", "/api/v1/runs", route_runs_list, 0 },
	{ "GET", "/api/v1/runs/:id", route_runs_get, 0 },
	{ "POST", "/api/v1/runs/:id/cancel", route_runs_cancel, 0 },
	{ "GET", "/api/v1/runs/:id/events", route_runs_events, 0 },
	{ "GET", "/api/v1/runs/:id/changes", route_changes_list, 0 },
	{ "GET", "/api/v1/runs/:id/changes/diff", route_changes_diff, 0 },
	{ "POST", "/api/v1/runs/:id/revert", route_changes_revert, 0 },
	{ "POST", "/api/v1/runs/:id/apply", route_runs_apply, 0 },
	{ "POST", "/api/v1/runs/:id/discard", route_runs_discard, 0 },

	{ "POST", "/api/v1/attempts", route_attempts_create, ROUTE_BODY | ROUTE_IDEMPOTENT },
	{ "GET", "/api/v1/attempts", route_attempts_list, 0 },
	{ "GET", "/api/v1/attempts/:id", route_attempts_get, 0 },
	{ "POST", "/api/v1/attempts/:id/discard", route_attempts_discard_group, 0 },
	{ "POST", "/api/v1/attempts/:id/revert", route_attempts_revert, 0 },

	{ "GET", "/api/v1/events", route_events_stream, 0 },

	{ "GET", "/api/v1/sessions", route_sessions_list, 0 },
	{ "POST", "/api/v1/sessions", route_sessions_create, ROUTE_BODY | ROUTE_IDEMPOTENT },
	{ "GET", "/api/v1/sessions/:id", route_sessions_get, 0 },
	{ "PATCH", "/api/v1/sessions/:id", route_sessions_update, ROUTE_BODY },
	{ "DELETE", "/api/v1/sessions/:id", route_sessions_delete, 0 },
	{ "GET", "/api/v1/sessions/:id/config", route_session_config_get, 0 },
	{ "GET", "/api/v1/sessions/:id/usage", route_sessions_usage, 0 },
	{ "PATCH", "/api/v1/sessions/:id/config", route_session_config_update, ROUTE_BODY },
	{ "GET", "/api/v1/sessions/:id/connectors", route_session_connectors_get, 0 },
	{ "PUT", "/api/v1/sessions/:id/connectors", route_session_connectors_put, ROUTE_BODY },

	{ "GET", "/api/v1/sessions/:id/artifacts", route_artifacts_list, 0 },
	{ "GET", "/api/v1/artifacts/:id", route_artifacts_get, 0 },
	{ "GET", "/api/v1/artifacts/:id/content", route_artifacts_content, 0 },

	{ "GET", "/api/v1/sessions/:id/plan", route_plan_get, 0 },
	{ "POST", "/api/v1/sessions/:id/plan/respond", route_plan_respond, ROUTE_BODY },

	{ "GET", "/app/v1/permissions", route_permissions_list, 0 },
	{ "GET", "/app/v1/permissions/:id", route_permissions_get, 0 },
	{ "POST", "/app/v1/permissions/:id", route_permissions_answer, ROUTE_BODY },

	/* connectors and credentials */
	{ "GET", "/api/v1/connectors", route_connectors_list, 0 },
	{ "POST", "/api/v1/connectors", route_connectors_create, ROUTE_BODY },
	{ "GET", "/api/v1/connectors/:id", route_connectors_get, 0 },
	{ "PATCH", "/api/v1/connectors/:id", route_connectors_update, ROUTE_BODY },
	{ "DELETE", "/api/v1/connectors/:id", route_connectors_remove, 0 },
	{ "PUT", "/api/v1/connectors/:id/enabled", route_connectors_enabled, ROUTE_BODY },
	{ "POST", "/api/v1/connectors/:id/test", route_connectors_test, 0 },
	{ "POST", "/api/v1/connectors/:id/login", route_connectors_login, 0 },
	{ "GET", "/oauth/callback", route_oauth_callback, 0 },
	{ "GET", "/api/v1/credentials", route_credentials_list, 0 },
	{ "POST", "/api/v1/credentials", route_credentials_create, ROUTE_BODY },
	{ "GET", "/api/v1/credentials/:id", route_credentials_get, 0 },
	{ "PATCH", "/api/v1/credentials/:id", route_credentials_update, ROUTE_BODY },
	{ "DELETE", "/api/v1/credentials/:id", route_credentials_delete, 0 },
	/* readiness and setup */
	{ "GET", "/api/v1/runtimes", route_runtimes_list, 0 },
	{ "GET", "/api/v1/providers/:name/models", route_provider_models, 0 },
	{ "POST", "/api/v1/bootstrap", route_bootstrap, ROUTE_BODY },
	{ "POST", "/api/v1/cli/install", route_cli_install, 0 },
};

const size_t routes_count = sizeof routes / sizeof routes[0];
