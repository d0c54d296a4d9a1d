/* A person's answer to a permission prompt (prompts-write.h). */
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "problem.h"
#include "prompts-write.h"
#include "prompts.h"
#include "runs.h"
#include "service.h"
#include "store.h"
#include "supervisor.h"
#include "timeutil.h"
#include "xalloc.h"

/*
 * Whether prompt id is pending; else *p.  A form's content into *content
 * (values over its defaults) when allowed; values given to no form are refused.
 */
static bool
prompts_answer_check_locked(struct store *st, const char *id, const char *status, bool allow,
    const cJSON *values, cJSON **content, struct problem *p)
{
	char *why = NULL;
	cJSON *asked;

	if (status[0] == '\0') {
		problem_not_found(p, "permission", id);
		return false;
	}
	if (strcmp(status, "pending") != 0) {
		p->details = cJSON_CreateObject();
		cJSON_AddItemToObject(p->details, "current", prompt_load(st, id));
		problem_set(p, TD_PERMISSION_NOT_PENDING, NULL, "%s",
		    errcode_default_message(TD_PERMISSION_NOT_PENDING));
		return false;
	}
	if (!allow)
		return true;
	/* A server's form, as its permission.ask said: the user's values over its defaults. */
	asked = prompt_load(st, id);
	if (prompt_is_form(st, id))
		*content = prompt_form_content(cJSON_GetObjectItemCaseSensitive(asked, "input"),
		    values, &why);
	else if (values != NULL)
		why = xstrdup("only a server's form (an elicitation prompt) takes values");
	cJSON_Delete(asked);
	if (why == NULL)
		return true;
	problem_set(p, TD_INVALID_REQUEST, "values", "%s", why);
	free(why);
	return false;
}

cJSON *
prompts_answer_request(struct service *svc, const char *id, const char *decision,
    const cJSON *values, struct problem *p)
{
	struct store *st = svc->store;
	char run_id[TD_ID_MAX] = "", status[16] = "";
	long long request_id = 0;
	bool allow = strcmp(decision, "deny") != 0, ok;
	cJSON *prompt = NULL, *result, *content = NULL;

	store_lock(st);
	ok = store_begin(st);
	if (ok)
		prompts_request_read(st, id, run_id, &request_id, status);
	if (ok && !prompts_answer_check_locked(st, id, status, allow, values, &content, p)) {
		store_rollback(st);
		store_unlock(st);
		return NULL;
	}
	ok = ok && prompts_answer(st, id, allow, decision, clock_wall_ms());
	if (ok && strcmp(decision, "allow-run") == 0)
		ok = runs_allow_all(st, run_id);
	ok = ok ? store_commit(st) : (store_rollback(st), false);
	if (ok) {
		prompt_emit_locked(svc, id);
		prompt = prompt_load(st, id);
		/* The agent knows only allow and deny. */
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "decision", allow ? "allow" : "deny");
		if (content != NULL)
			cJSON_AddItemToObject(result, "content", content);
		content = NULL;
		supervisor_respond(svc->supervisor, run_id, request_id, result);
	}
	store_unlock(st);
	cJSON_Delete(content);
	if (prompt == NULL)
		problem_set(p, TD_INTERNAL_ERROR, NULL, "%s",
		    errcode_default_message(TD_INTERNAL_ERROR));
	return prompt;
}
