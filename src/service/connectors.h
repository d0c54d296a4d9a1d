/*
 * Connector definitions (docs/connectors.md): their validation and storage
 * (the rows through connector-rows.h, whose writers they call), the lists
 * and the state directory of a stdio server.  A binding names a credential
 * (credentials.h), which it does not call.  Below the tokens
 * (connector-oauth.h), the launch data (connector-launch.h), a run's
 * connectors (connector-run.h) and the use cases of a test, a sign-in and a
 * removal (connector-test.h, connector-login.h, connector-remove.h).  Every
 * function here takes the store lock itself.
 */
#ifndef TD_SERVICE_CONNECTORS_H
#define TD_SERVICE_CONNECTORS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "errors.h"
#include "problem.h"
#include "ids.h"

#define CONNECTOR_WEB_ID "con_web"
#define CONNECTOR_NAME_MAX 32
#define CONNECTOR_COMMAND_MAX 4096
#define CONNECTOR_ARGS_MAX 64
#define CONNECTOR_ARG_MAX 4096
#define CONNECTOR_ENV_MAX 64
#define CONNECTOR_VAR_NAME_MAX 128
#define CONNECTOR_VALUE_MAX 8192
#define CONNECTOR_URL_MAX 2048
#define CONNECTOR_HEADERS_MAX 32
#define CONNECTOR_BINDINGS_MAX 16
#define CONNECTORS_MAX 200

struct service;

/* One page of connectors, newest first (con_web sorts first); *next is "" on the last page. */
cJSON *connectors_list(struct service *svc, const char *cursor, int limit,
    char next[TD_ID_MAX]);
/* The connector as the API shows it, or NULL. */
cJSON *connector_get(struct service *svc, const char *id);
enum td_code connector_add(struct service *svc, const cJSON *body, cJSON **out,
    struct problem *p);
enum td_code connector_update(struct service *svc, const char *id, const cJSON *body,
    cJSON **out, struct problem *p);
enum td_code connector_set_enabled(struct service *svc, const char *id, bool enabled,
    cJSON **out, struct problem *p);
/*
 * Deletes the definition of custom connector id (its bindings go with it) and
 * emits its removal; *removed (may be NULL) gets it as it was.  What
 * connector_remove (connector-remove.h) does first.
 */
enum td_code connector_delete(struct service *svc, const char *id, cJSON **removed,
    struct problem *p);

/* An http or https URL with a host, at most CONNECTOR_URL_MAX bytes, no blanks. */
bool connector_url_valid(const char *u);
/* Name checks of an env variable and a header. */
bool conn_env_name_valid(const char *s);
bool conn_header_name_valid(const char *s);

/*
 * A stdio connector's private state directory, <data dir>/connector-state/<id>
 * (docs/connectors.md), made (mode 0700) when make and missing; NULL when it
 * cannot be.  Hidden from runs and other connectors with the data directory.
 */
char *connector_state_dir(const struct service *svc, const char *id, bool make);
/* Removes the state directory of connector id, and all in it. */
void connector_state_remove(const struct service *svc, const char *id);

#endif
