/*
 * First-run setup (docs/http-api.md, readiness): the setup state, the repair of
 * the managed runtime and the CLI launcher.  Each returns a result object
 * {ok:true, ...} or {ok:false, error:{code, message}} (DESIGN.md section 5); the
 * caller owns it.  Repairs and installs are serialised: two concurrent calls do
 * the work once, the second finds it done.
 */
#ifndef TD_SERVICE_BOOTSTRAP_H
#define TD_SERVICE_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct service;

cJSON *bootstrap_status(struct service *svc);
cJSON *bootstrap_runtime(struct service *svc);
cJSON *bootstrap_install_cli(struct service *svc);

/* A runtime_info as the JSON resource of DESIGN.md section 5 (plus message, foundBy). */
struct runtime_info;
cJSON *bootstrap_runtime_json(const struct runtime_info *info);

/*
 * Checks the default provider of settings: its key (when it names one) is set
 * and its base URL accepts a TCP connection within timeout_ms.  The provider's
 * name into name; a sentence into msg.  true when usable.
 */
/*
 * True when provider p (named name) has no apiKeyCredential or the
 * credential it names opens to a non-empty key; else a sentence with the next
 * action into msg.
 */
bool bootstrap_provider_key_ok(const struct service *svc, const cJSON *p, const char *name,
    char *msg, size_t msg_size);
bool bootstrap_provider_check(const struct service *svc, int timeout_ms, char *name,
    size_t name_size, char *msg, size_t msg_size);

#endif
