/* Every route handler of taskdeckd; the table that maps routes to them is routes.c. */
#ifndef TD_SERVICE_ROUTES_H
#define TD_SERVICE_ROUTES_H

#include "http.h"

/* route-projects.c */
void route_projects_list(struct http_request *, struct http_response *);
void route_projects_create(struct http_request *, struct http_response *);
void route_projects_get(struct http_request *, struct http_response *);
void route_projects_update(struct http_request *, struct http_response *);
void route_defaults_get(struct http_request *, struct http_response *);
void route_defaults_update(struct http_request *, struct http_response *);

/* route-settings.c */
void route_routing_get(struct http_request *, struct http_response *);
void route_routing_update(struct http_request *, struct http_response *);

/* route-doctor.c */
void route_doctor(struct http_request *, struct http_response *);
void route_openapi(struct http_request *, struct http_response *);

/* route-runs.c */
void route_runs_create(struct http_request *, struct http_response *);
void route_runs_list(struct http_request *, struct http_response *);
void route_runs_get(struct http_request *, struct http_response *);
void route_sessions_usage(struct http_request *, struct http_response *);
void route_projects_usage(struct http_request *, struct http_response *);
void route_runs_cancel(struct http_request *, struct http_response *);

/* route-attempts.c */
void route_attempts_create(struct http_request *, struct http_response *);
void route_attempts_list(struct http_request *, struct http_response *);
void route_attempts_get(struct http_request *, struct http_response *);
void route_attempts_discard_group(struct http_request *, struct http_response *);
void route_attempts_revert(struct http_request *, struct http_response *);
void route_runs_apply(struct http_request *, struct http_response *);
void route_runs_discard(struct http_request *, struct http_response *);

/* route-sessions.c */
void route_sessions_list(struct http_request *, struct http_response *);
void route_sessions_get(struct http_request *, struct http_response *);
void route_sessions_update(struct http_request *, struct http_response *);
void route_sessions_delete(struct http_request *, struct http_response *);
void route_session_config_get(struct http_request *, struct http_response *);
void route_session_config_update(struct http_request *, struct http_response *);

/* route-session-connectors.c */
void route_sessions_create(struct http_request *, struct http_response *);
void route_session_connectors_get(struct http_request *, struct http_response *);
void route_session_connectors_put(struct http_request *, struct http_response *);

/* route-artifacts.c */
void route_artifacts_list(struct http_request *, struct http_response *);
void route_artifacts_get(struct http_request *, struct http_response *);
void route_artifacts_content(struct http_request *, struct http_response *);

/* route-events.c */
void route_events_stream(struct http_request *, struct http_response *);
void route_runs_events(struct http_request *, struct http_response *);

/* route-changes.c */
void route_changes_list(struct http_request *, struct http_response *);
void route_changes_diff(struct http_request *, struct http_response *);
void route_changes_revert(struct http_request *, struct http_response *);

/* route-plans.c */
void route_plan_get(struct http_request *, struct http_response *);
void route_plan_respond(struct http_request *, struct http_response *);

/* route-permissions.c */
void route_permissions_list(struct http_request *, struct http_response *);
void route_permissions_get(struct http_request *, struct http_response *);
void route_permissions_answer(struct http_request *, struct http_response *);

/* route-connectors.c (and the helpers route-credentials.c shares) */
void route_connectors_list(struct http_request *, struct http_response *);
void route_connectors_get(struct http_request *, struct http_response *);
void route_connectors_create(struct http_request *, struct http_response *);
void route_connectors_update(struct http_request *, struct http_response *);
void route_connectors_enabled(struct http_request *, struct http_response *);
void route_connectors_remove(struct http_request *, struct http_response *);
void route_connectors_test(struct http_request *, struct http_response *);
/* route-oauth.c */
void route_connectors_login(struct http_request *, struct http_response *);
void route_oauth_callback(struct http_request *, struct http_response *);
bool route_conn_cursor(struct http_request *req, struct http_response *r, const char *prefix,
    const char *extra, const char **cursor);
void route_conn_page(struct http_response *r, const char *collection, int limit,
    const char *next, cJSON *arr);

/* route-credentials.c */
void route_credentials_list(struct http_request *, struct http_response *);
void route_credentials_get(struct http_request *, struct http_response *);
void route_credentials_create(struct http_request *, struct http_response *);
void route_credentials_update(struct http_request *, struct http_response *);
void route_credentials_delete(struct http_request *, struct http_response *);
/* route-readiness.c */
void route_runtimes_list(struct http_request *, struct http_response *);
void route_provider_models(struct http_request *, struct http_response *);
void route_bootstrap(struct http_request *, struct http_response *);
void route_cli_install(struct http_request *, struct http_response *);

#endif
