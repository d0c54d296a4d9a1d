/*
 * A person's answer to a permission prompt (docs/http-api.md, Permission
 * prompts), applied in one transaction and handed to the run through the
 * supervisor.
 */
#ifndef TD_SERVICE_PROMPTS_WRITE_H
#define TD_SERVICE_PROMPTS_WRITE_H

#include <cjson/cJSON.h>

struct service;
struct problem;

/*
 * Answers the pending prompt id with decision (allow, deny, allow-run: every
 * later prompt of the run allowed) and, for a server's form (its
 * permission.ask said "form"), values over the form's defaults: the prompt as
 * it is now, or NULL with *p (not_found, permission_not_pending with
 * details.current, invalid_request on values, internal_error).  Takes the
 * store lock.
 */
cJSON *prompts_answer_request(struct service *svc, const char *id, const char *decision,
    const cJSON *values, struct problem *p);

#endif
