/*
 * The prompt domain (prompts.c, docs/http-api.md, Permission prompts): what
 * route-permissions.c and the supervisor's run threads share.  prompt_ask
 * takes the store lock; the others run while it is held.
 */
#ifndef TD_SERVICE_PROMPTS_H
#define TD_SERVICE_PROMPTS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "errors.h"

struct service;
struct store;

/* The prompt with id as the API shows it, or NULL. */
cJSON *prompt_load(struct store *st, const char *id);
/*
 * The agent's permission.ask: records a prompt and emits run.permission.
 * *allow_now is set when the run was answered allow-run: the prompt is
 * recorded as allowed and the caller answers allow at once.
 */
enum td_code prompt_ask(struct service *svc, const char *run_id, long long request_id,
    const cJSON *params, bool *allow_now, char **message);
/*
 * The agent's permission.withdraw {requestId}: the pending prompt of run_id
 * asked by that request becomes expired, its decision "withdrawn" (the one
 * who asked gave up; an answer afterwards is permission_not_pending).
 * *withdrawn says whether one was pending.
 */
enum td_code prompt_withdraw(struct service *svc, const char *run_id, const cJSON *params,
    bool *withdrawn, char **message);
/* The pending prompts of run_id, or of every run, become expired (plans_run_ended, plans_recover). */
bool prompts_run_ended(struct service *svc, const char *run_id);
/* Deletes the prompts of session_id's runs; false on error.  In the caller's transaction. */
bool prompts_delete_session(struct store *st, const char *session_id);
bool prompts_recover_locked(struct service *svc);

/*
 * The permission.ask of a resumed run's agent, redone after a
 * restart.  When the run has a pending prompt for the same tool, summary and
 * input, it is not asked again: its request id becomes request_id.  When one
 * was answered since `since` (the resume), *answer is the answer to send at
 * once.  False: no such prompt (prompt_ask it).
 */
bool prompt_rebind(struct service *svc, const char *run_id, long long request_id,
    const cJSON *params, int64_t since, cJSON **answer);
/* The columns prompt_from_row reads, in its order. */
#define PROMPT_COLUMNS "id, run_id, session_id, project_id, tool, summary, input, status," \
	" decision, created_at, answered_at"
/* A permission_prompts row (PROMPT_COLUMNS) as the API shows it. */
cJSON *prompt_from_row(sqlite3_stmt *s);
/*
 * A page of prompts as the API shows them, newest first: pending ones (all:
 * every one), of run (NULL: any), below cursor (a prompt id, NULL for the
 * first page), at most limit; next (TD_ID_MAX bytes) gets the cursor of the
 * next page, "" at the end.  Only while the store is locked.
 */
cJSON *prompts_list(struct store *st, bool all, const char *run, const char *cursor, int limit,
    char *next);
/*
 * The run (run_id, TD_ID_MAX bytes), agent's request id and status (16
 * bytes; "" when there is no such prompt) of prompt id.  Only while locked.
 */
void prompts_request_read(struct store *st, const char *id, char *run_id,
    long long *request_id, char *status);
/* Answers the pending prompt id: allowed or denied, with the decision.  Only while locked. */
bool prompts_answer(struct store *st, const char *id, bool allow, const char *decision,
    int64_t now);
/*
 * The answer to a server's form (an elicitation prompt, whose input holds the
 * requestedSchema): the fields' defaults, replaced by values (an object of
 * field names; strings are parsed for number, integer and boolean fields),
 * each checked against its field's type, enum and bounds, and every required
 * field present.  The content object, or NULL with *why (malloc'd).
 */
cJSON *prompt_form_content(const cJSON *input, const cJSON *values, char **why);
/*
 * Whether prompt id is a server's form: its permission.ask said so ("form":
 * true, sent for elicitation/create only), whatever its tool is named.  Only
 * while the store is locked.
 */
bool prompt_is_form(struct store *st, const char *id);
/* run.permission with the prompt; only while the store is locked. */
void prompt_emit_locked(struct service *svc, const char *id);

#endif
