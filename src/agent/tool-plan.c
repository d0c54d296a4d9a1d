/*
 * propose_plan and update_plan_step: the plan of a plan-first run, decided
 * by the user through the service (plan.propose, plan.step).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "json.h"
#include "log.h"
#include "tools.h"
#include "xalloc.h"

#define PLAN_MAX_STEPS 50
#define PLAN_TITLE_MAX 200		/* characters */
#define PLAN_SUMMARY_MAX 16384		/* bytes */
#define PLAN_STEP_ID_MAX 64		/* bytes, as the service sends them */

static const char *const plan_decisions[] = { "approve", "revise", "reject", NULL };
static const char *const plan_step_statuses[] = { "in-progress", "completed", "failed", NULL };

static void
plan_steps_clear(struct plan_state *plan)
{
	for (size_t i = 0; i < plan->nsteps; i++) {
		free(plan->steps[i].id);
		free(plan->steps[i].title);
	}
	free(plan->steps);
	plan->steps = NULL;
	plan->nsteps = 0;
}

void
plan_state_free(struct plan_state *plan)
{
	if (plan == NULL)
		return;
	plan_steps_clear(plan);
	free(plan->feedback);
	plan->feedback = NULL;
}

/* The static spelling of s in list, or NULL. */
static const char *
plan_word(const char *s, const char *const *list)
{
	for (; s != NULL && *list; list++) {
		if (strcmp(s, *list) == 0)
			return *list;
	}
	return NULL;
}

/* The steps argument as [{title}], or NULL with a failure in res. */
static cJSON *
plan_check_steps(const cJSON *steps, struct tool_result *res)
{
	const cJSON *s;
	cJSON *out;
	int n = cJSON_GetArraySize(steps), i = 0;

	if (!cJSON_IsArray(steps) || n < 1 || n > PLAN_MAX_STEPS) {
		tool_result_fail(res, "the argument \"steps\" must be an array of 1 to %d steps",
		    PLAN_MAX_STEPS);
		return NULL;
	}
	out = cJSON_CreateArray();
	cJSON_ArrayForEach(s, steps) {
		const char *title = json_get_string(s, "title");
		cJSON *step;

		if (title == NULL || title[0] == '\0' || json_utf8_chars(title) > PLAN_TITLE_MAX) {
			tool_result_fail(res, "steps[%d].title must be a string of 1 to %d characters",
			    i, PLAN_TITLE_MAX);
			cJSON_Delete(out);
			return NULL;
		}
		step = cJSON_CreateObject();
		cJSON_AddStringToObject(step, "title", title);
		cJSON_AddItemToArray(out, step);
		i++;
	}
	return out;
}

/*
 * Takes the approved steps: the service's ids from the result when it sent
 * a usable list, else s1..sN with the proposed titles.
 */
static void
plan_take_steps(struct plan_state *plan, const cJSON *result, const cJSON *proposed)
{
	const cJSON *given = cJSON_GetObjectItemCaseSensitive(result, "steps");
	const cJSON *s, *from;
	bool usable = cJSON_IsArray(given) && cJSON_GetArraySize(given) > 0 &&
	    cJSON_GetArraySize(given) <= PLAN_MAX_STEPS;
	size_t i = 0;

	from = usable ? given : NULL;
	cJSON_ArrayForEach(s, from) {
		if (!json_check_string(s, "id", true, false, 1, PLAN_STEP_ID_MAX))
			usable = false;
	}
	from = usable ? given : proposed;
	plan_steps_clear(plan);
	plan->nsteps = (size_t)cJSON_GetArraySize(from);
	plan->steps = xcalloc(plan->nsteps, sizeof *plan->steps);
	cJSON_ArrayForEach(s, from) {
		const char *title = json_get_string(s, "title");
		const cJSON *p = cJSON_GetArrayItem(proposed, (int)i);

		if (title == NULL)
			title = json_get_string(p, "title");
		plan->steps[i].id = usable ? agent_utf8_clean(json_get_string(s, "id")) :
		    xasprintf("s%zu", i + 1);
		plan->steps[i].title = agent_utf8_clean(title ? title : "");
		i++;
	}
}

static void
plan_approved(struct plan_state *plan, const cJSON *result, const cJSON *proposed,
    struct tool_result *res)
{
	plan_take_steps(plan, result, proposed);
	plan->approved = true;
	buf_appends(&res->content, "approved: execute the steps in order and report each "
	    "with update_plan_step (step ids");
	for (size_t i = 0; i < plan->nsteps; i++)
		buf_printf(&res->content, "%s%s", i ? ", " : " ", plan->steps[i].id);
	buf_appends(&res->content, "):\n");
	for (size_t i = 0; i < plan->nsteps; i++)
		buf_printf(&res->content, "- %s: %s\n", plan->steps[i].id, plan->steps[i].title);
	tool_result_summary(res, "plan approved (%zu steps)", plan->nsteps);
}

static void
plan_revise(struct plan_state *plan, const cJSON *result, struct tool_result *res)
{
	const char *fb = json_get_string(result, "feedback");

	free(plan->feedback);
	plan->feedback = agent_utf8_clean(fb ? fb : "");
	buf_printf(&res->content, "revise: the user asked for changes: %s\n"
	    "Propose a revised plan with propose_plan.",
	    plan->feedback[0] ? plan->feedback : "(no feedback)");
	tool_result_summary(res, "revision requested: %s", plan->feedback);
}

int
tool_propose_plan(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const cJSON *summary = cJSON_GetObjectItemCaseSensitive(args, "summary");
	struct plan_state *plan = ctx->plan;
	struct agent_error err = { 0 };
	cJSON *steps, *params, *result = NULL;
	const char *decision;
	int rc;

	if (!cJSON_IsString(summary) || summary->valuestring[0] == '\0' ||
	    strlen(summary->valuestring) > PLAN_SUMMARY_MAX) {
		tool_result_fail(res, "the argument \"summary\" must be a string of 1 to %d bytes",
		    PLAN_SUMMARY_MAX);
		return AGENT_OK;
	}
	if ((steps = plan_check_steps(cJSON_GetObjectItemCaseSensitive(args, "steps"), res)) == NULL)
		return AGENT_OK;
	plan->approved = false;
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "summary", summary->valuestring);
	cJSON_AddItemToObject(params, "steps", cJSON_Duplicate(steps, true));
	/* No timeout: the user may decide hours later; a cancel ends the wait. */
	rc = host_request(ctx->host, "plan.propose", params, &result, &err);
	decision = rc == AGENT_OK ? plan_word(json_get_string(result, "decision"),
	    plan_decisions) : NULL;
	if (rc == AGENT_FAILED)
		tool_result_fail(res, "the plan was not submitted: %s", err.message);
	else if (rc == AGENT_OK && decision == NULL)
		tool_result_fail(res, "the plan was not submitted: the service answered no "
		    "known decision");
	else if (rc == AGENT_OK) {
		plan->decisions++;
		plan->decision = decision;
		if (strcmp(decision, "approve") == 0)
			plan_approved(plan, result, steps, res);
		else if (strcmp(decision, "revise") == 0)
			plan_revise(plan, result, res);
		else {
			buf_appends(&res->content, "rejected: the user rejected the plan; the run ends.");
			tool_result_summary(res, "plan rejected");
			res->end_run = true;
			log_info("the user rejected the plan");
		}
	}
	cJSON_Delete(steps);
	cJSON_Delete(result);
	agent_error_clear(&err);
	return rc == AGENT_CANCELLED ? AGENT_CANCELLED : AGENT_OK;
}

void
tool_describe_propose(const cJSON *args, char *out, size_t len)
{
	const char *summary = json_get_string(args, "summary");
	int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(args, "steps"));

	snprintf(out, len, "propose a plan of %d steps: %.200s", n, summary ? summary : "");
}

static const struct plan_step *
plan_find_step(const struct plan_state *plan, const char *id)
{
	for (size_t i = 0; id != NULL && i < plan->nsteps; i++) {
		if (strcmp(plan->steps[i].id, id) == 0)
			return &plan->steps[i];
	}
	return NULL;
}

int
tool_update_plan_step(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	const char *id = json_get_string(args, "stepId");
	const char *status = plan_word(json_get_string(args, "status"), plan_step_statuses);
	const struct plan_state *plan = ctx->plan;
	const struct plan_step *step;
	struct agent_error err = { 0 };
	cJSON *params, *result = NULL;
	int rc;

	if (status == NULL) {
		tool_result_fail(res, "the argument \"status\" must be in-progress, completed "
		    "or failed");
		return AGENT_OK;
	}
	if (!plan->approved) {
		tool_result_fail(res, "there is no approved plan: call propose_plan and wait for "
		    "the user's approval first");
		return AGENT_OK;
	}
	if ((step = plan_find_step(plan, id)) == NULL) {
		struct buf ids;

		buf_init(&ids, 4096);
		for (size_t i = 0; i < plan->nsteps; i++)
			buf_printf(&ids, "%s%s", i ? ", " : "", plan->steps[i].id);
		tool_result_fail(res, "unknown step \"%.100s\": the plan's steps are %s",
		    id ? id : "", ids.data ? ids.data : "");
		buf_free(&ids);
		return AGENT_OK;
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "stepId", step->id);
	cJSON_AddStringToObject(params, "status", status);
	rc = host_request(ctx->host, "plan.step", params, &result, &err);
	if (rc == AGENT_FAILED)
		tool_result_fail(res, "step %s was not updated: %s", step->id, err.message);
	else if (rc == AGENT_OK) {
		buf_printf(&res->content, "step %s (%s) is now %s", step->id, step->title, status);
		tool_result_summary(res, "step %s: %s", step->id, status);
	}
	cJSON_Delete(result);
	agent_error_clear(&err);
	return rc == AGENT_CANCELLED ? AGENT_CANCELLED : AGENT_OK;
}

void
tool_describe_step(const cJSON *args, char *out, size_t len)
{
	const char *id = json_get_string(args, "stepId");
	const char *status = json_get_string(args, "status");

	snprintf(out, len, "step %.100s: %.32s", id ? id : "?", status ? status : "?");
}
