#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "agent-connectors.h"
#include "context.h"
#include "conv.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"
#include "loop.h"
#include "provider.h"
#include "review.h"
#include "tools.h"
#include "wsfile.h"
#include "xalloc.h"

#define LOOP_REPEAT_LIMIT 3		/* identical failing calls in a row */
#define LOOP_ASK_STRING_MAX 4096	/* per string argument shown in permission.ask */
#define LOOP_TRUNCATED "\n[output truncated]"
#define LOOP_RESTARTED "\n\n[the answer was interrupted; the model answers again]\n\n"
#define LOOP_CP_CUT "\n[cut to fit the checkpoint]"
#define LOOP_CP_MESSAGE_MAX (600 * 1024)	/* one message in a checkpoint line */
#define LOOP_CP_LINE_BUDGET (600 * 1024)	/* the new messages of one checkpoint line */
#define LOOP_BACKOFF_BASE_MS 1000
#define LOOP_BACKOFF_CAP_MS 60000
#define LOOP_REVIEWS 2			/* reviews of a run: the second after one more round */
#define LOOP_COMPACT_STREAK 4		/* model turns in a row that each compacted: no progress */
#define LOOP_CUT_SLACK 512		/* a tool's own note after its cut output */

/*
 * The tokens a run used, its subagents' included, as they are used: the
 * budgets (runs.maxTokensPerRun, runs.maxCostPerRun) are the run's.
 */
struct run_spend {
	pthread_mutex_t mu;
	struct usage used;
};

struct loop {
	const struct agent_config *cfg;
	struct host *host;
	struct provider *prov;
	struct conversation conv;
	cJSON *tools;
	struct plan_state plan;
	struct connectors cons;
	struct buf output;
	bool output_full;
	bool writing;			/* "writing" sent for this turn */
	/*
	 * A model turn redone after its stream broke: the text of the broken
	 * attempt is output[echo_from, echo_to); the new attempt's text is not
	 * sent again while it repeats it (echo_at is how far it did).
	 */
	size_t answer_at;		/* where this attempt's text begins in output */
	size_t echo_at, echo_to;
	struct usage used;
	int turns;			/* model turns begun (a checkpoint keeps it) */
	size_t cp_sent;			/* messages the service has in checkpoints */
	char *last_failure;		/* name and arguments of the last failing call */
	int failures;
	struct agent_error err;
	struct wsfile_root *files;	/* what the file tools open (wsfile.h) */
	char *files_why;		/* why files is NULL */
	struct context cx;		/* the model's context window */
	unsigned offer;			/* TOOL_PLAN_FIRST, TOOL_SUBAGENT: offered (tools_find) */
	const char *subagent;		/* a run_subagent child: its id; NULL for the run */
	struct ws_snapshot before;	/* the workspace at the start, for the reviewer */
	int reviews;			/* reviews done */
	int compact_streak;		/* model turns in a row that began with a compaction */
};

static const char *const loop_profile_notes[] = {
	[PROFILE_READ_ONLY] = ("This run is read-only: write_file, edit_file and run_command are "
	    "refused."),
	[PROFILE_WORKSPACE_WRITE] = "",
	[PROFILE_FULL_ACCESS] = "Commands run with the user's full environment.",
	[PROFILE_ASK] = ("Each write_file, edit_file and run_command call waits for the user's "
	    "permission; a refused call returns \"denied by the user\"."),
};

static char *
loop_system_prompt(const struct agent_config *cfg, const struct connectors *cons)
{
	struct buf b;

	buf_init(&b, 0);
	buf_printf(&b,
	    "You are the taskdeck agent. You carry out the user's task in a workspace "
	    "directory on their machine.\n"
	    "- Workspace: %s. Every path you give a tool is relative to it; paths outside "
	    "it are refused.\n"
	    "- Tools: list_files, read_file (whole, or lines with offset and limit), grep, "
	    "glob, edit_file (exact replacement: prefer it to rewriting a whole file), "
	    "write_file, run_command (/bin/sh -c in the workspace), save_artifact. Reading "
	    "calls (list_files, read_file, grep, glob) of one answer run at the same time.\n"
	    "- The user receives only the files you save with save_artifact, after writing "
	    "them.\n"
	    "- When the task is done, answer with a short summary of what you did and which "
	    "files you saved, without calling a tool.\n", cfg->workspace);
	if (loop_profile_notes[cfg->profile][0] != '\0')
		buf_printf(&b, "- %s\n", loop_profile_notes[cfg->profile]);
	if (cfg->plan_first)
		buf_appends(&b, "- This run is plan-first: before any write_file, edit_file, "
		    "run_command or save_artifact, propose a plan with propose_plan and wait for the user's "
		    "decision. Once it is approved, carry out the steps in order and report each "
		    "with update_plan_step (in-progress, then completed or failed). When the user "
		    "asks for a revision, propose a revised plan.\n");
	if (cfg->subagent.enabled)
		buf_appends(&b, "- run_subagent hands a self-contained sub-task to a subagent (the "
		    "same tools, workspace and permissions); its final answer is the result. Use it "
		    "for independent parts of a larger task; several calls in one answer run at "
		    "the same time.\n");
	if (cons->ntools > 0)
		buf_appends(&b, "- Tools named <connector>__<tool> come from the connectors the "
		    "user enabled (MCP servers, or fetch_url of the web connector).\n");
	if (cons->unavailable != NULL)
		buf_printf(&b, "- These connectors did not start, so their tools are missing:\n%s",
		    cons->unavailable);
	if (cons->instructions != NULL)
		buf_printf(&b, "- What the connectors' servers say about using their tools:\n%s",
		    cons->instructions);
	if (cfg->project_name != NULL)
		buf_printf(&b, "\nProject: %s\n", cfg->project_name);
	if (cfg->project_context != NULL && cfg->project_context[0] != '\0')
		buf_printf(&b, "\nProject context:\n%s\n", cfg->project_context);
	return buf_steal(&b);
}

/* The plan state in a checkpoint. */
static cJSON *
loop_plan_json(const struct plan_state *p)
{
	cJSON *o = cJSON_CreateObject(), *steps;

	cJSON_AddBoolToObject(o, "approved", p->approved);
	cJSON_AddNumberToObject(o, "decisions", p->decisions);
	if (p->decision != NULL)
		cJSON_AddStringToObject(o, "decision", p->decision);
	if (p->feedback != NULL)
		cJSON_AddStringToObject(o, "feedback", p->feedback);
	steps = cJSON_AddArrayToObject(o, "steps");
	for (size_t i = 0; i < p->nsteps; i++) {
		cJSON *s = cJSON_CreateObject();

		cJSON_AddStringToObject(s, "id", p->steps[i].id);
		cJSON_AddStringToObject(s, "title", p->steps[i].title);
		cJSON_AddItemToArray(steps, s);
	}
	return o;
}

static bool
loop_plan_restore(struct plan_state *p, const cJSON *o)
{
	static const char *const decisions[] = { "approve", "revise", "reject", NULL };
	const char *decision = json_get_string(o, "decision");
	const char *feedback = json_get_string(o, "feedback");
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(o, "steps"), *s;
	size_t i = 0;

	if (!cJSON_IsObject(o) || !json_check_int(o, "decisions", 0, 1e9) ||
	    !cJSON_IsArray(steps) || cJSON_GetArraySize(steps) > 1000)
		return false;
	p->approved = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "approved"));
	p->decisions = (unsigned)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o,
	    "decisions"));
	for (const char *const *d = decisions; decision != NULL && *d; d++)
		if (strcmp(*d, decision) == 0)
			p->decision = *d;
	p->feedback = feedback ? xstrdup(feedback) : NULL;
	p->nsteps = (size_t)cJSON_GetArraySize(steps);
	p->steps = p->nsteps ? xcalloc(p->nsteps, sizeof *p->steps) : NULL;
	cJSON_ArrayForEach(s, steps) {
		const char *id = json_get_string(s, "id"), *title = json_get_string(s, "title");

		p->steps[i].id = xstrdup(id ? id : "");
		p->steps[i].title = xstrdup(title ? title : "");
		i++;
	}
	return true;
}

/* Prints o and frees it. */
static char *
loop_print_owned(cJSON *o)
{
	char *text = json_print(o);

	cJSON_Delete(o);
	return text;
}

/*
 * A message as a checkpoint keeps it (printed JSON).  One over
 * LOOP_CP_MESSAGE_MAX (a host line must hold it) has its text cut, then, if
 * that is not enough, its calls' arguments emptied; the log says so.
 */
static char *
loop_cp_message(const struct conv_message *m)
{
	char *text = loop_print_owned(conv_message_json(m));
	size_t len = strlen(text);
	struct conv_message cut;

	if (len <= LOOP_CP_MESSAGE_MAX)
		return text;
	cut = *m;
	cut.reasoning = NULL;	/* the first to go: the answer stands without it */
	for (int round = 0; round < 4 && len > LOOP_CP_MESSAGE_MAX; round++) {
		size_t tlen = strlen(m->text);
		size_t keep = round < 3 ? (size_t)((double)tlen * LOOP_CP_MESSAGE_MAX / (double)len *
		    (0.9 - 0.3 * round)) : 0;
		char *prefix = agent_utf8_prefix(m->text, keep);
		struct tool_call *calls = NULL;

		cut.text = xasprintf("%s%s", prefix, LOOP_CP_CUT);
		if (round == 3 && m->ncalls > 0) {
			calls = xcalloc(m->ncalls, sizeof *calls);
			for (size_t i = 0; i < m->ncalls; i++)
				calls[i] = (struct tool_call){ m->calls[i].id, m->calls[i].name, "{}" };
			cut.calls = calls;
		}
		free(text);
		text = loop_print_owned(conv_message_json(&cut));
		len = strlen(text);
		free(cut.text);
		free(prefix);
		free(calls);
		cut.calls = m->calls;
	}
	log_info("a message of the conversation was cut to %zu bytes in the checkpoint", len);
	return text;
}

/*
 * Sends a checkpoint (docs/host-protocol.md) once a step is complete:
 * the model's answer, or a tool call's result.  It carries the loop's state
 * and only the messages added since the last one ("append", from "from"), so
 * its size does not grow with the run; the service keeps the messages.  When
 * the new messages do not fit one line, several lines carry them.
 */
static void
loop_checkpoint(struct loop *l)
{
	size_t from = l->cp_sent;

	if (l->subagent != NULL)	/* a child's work is redone with its call */
		return;
	do {
		cJSON *cp = cJSON_CreateObject(), *usage, *append, *msg;
		size_t used = 0, to = from;

		cJSON_AddNumberToObject(cp, "version", 2);
		cJSON_AddNumberToObject(cp, "turns", l->turns);
		cJSON_AddNumberToObject(cp, "from", (double)from);
		append = cJSON_AddArrayToObject(cp, "append");
		while (to < l->conv.n) {
			char *m = loop_cp_message(&l->conv.msgs[to]);
			size_t n = strlen(m);

			if (to > from && used + n > LOOP_CP_LINE_BUDGET) {
				free(m);
				break;
			}
			cJSON_AddItemToArray(append, cJSON_CreateRaw(m));
			free(m);
			used += n;
			to++;
		}
		cJSON_AddNumberToObject(cp, "messageCount", (double)to);
		cJSON_AddNumberToObject(cp, "outputLen", (double)l->output.len);
		cJSON_AddBoolToObject(cp, "outputFull", l->output_full);
		usage = cJSON_AddObjectToObject(cp, "usage");
		cJSON_AddNumberToObject(usage, "inputTokens", (double)l->used.input);
		cJSON_AddNumberToObject(usage, "outputTokens", (double)l->used.output);
		cJSON_AddNumberToObject(usage, "cacheReadTokens", (double)l->used.cache_read);
		cJSON_AddNumberToObject(usage, "cacheWriteTokens", (double)l->used.cache_write);
		cJSON_AddItemToObject(cp, "plan", loop_plan_json(&l->plan));
		if (l->prov != NULL && l->prov->ops->save != NULL && l->prov->state != NULL)
			cJSON_AddItemToObject(cp, "provider", l->prov->ops->save(l->prov));
		msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "type", "checkpoint");
		cJSON_AddItemToObject(msg, "checkpoint", cp);
		host_send(l->host, msg);
		from = to;
	} while (from < l->conv.n);
	l->cp_sent = l->conv.n;
}

/*
 * The messages of a version 2 checkpoint, read from the service
 * (checkpoint.read) a page at a time; NULL with l->err set when that fails.
 */
static cJSON *
loop_cp_messages(struct loop *l, size_t count)
{
	cJSON *all = cJSON_CreateArray();
	size_t from = 0;

	while (from < count) {
		cJSON *params = cJSON_CreateObject(), *result = NULL, *m;
		cJSON *msgs;
		struct agent_error err = { 0 };
		int rc;
		size_t got = 0;

		cJSON_AddNumberToObject(params, "from", (double)from);
		rc = host_request(l->host, "checkpoint.read", params, &result, &err);
		msgs = cJSON_GetObjectItemCaseSensitive(result, "messages");
		if (rc != AGENT_OK || !cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
			agent_error_set(&l->err, "checkpoint_invalid", "the messages of the checkpoint "
			    "cannot be read from %zu on: %s", from, err.message ? err.message :
			    rc == AGENT_CANCELLED ? "cancelled" : "no messages");
			agent_error_clear(&err);
			cJSON_Delete(result);
			cJSON_Delete(all);
			return NULL;
		}
		while ((m = cJSON_DetachItemFromArray(msgs, 0)) != NULL && from + got < count) {
			cJSON_AddItemToArray(all, m);
			got++;
		}
		cJSON_Delete(m);
		cJSON_Delete(result);
		from += got;
	}
	return all;
}

/* What a resumed run takes from its checkpoint; false when malformed. */
static bool
loop_restore(struct loop *l, const cJSON *cp)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(cp, "usage");
	const char *output = json_get_string(cp, "output");
	bool v2 = json_check_int(cp, "version", 2, 2);
	cJSON *fetched = NULL;
	const cJSON *messages = cJSON_GetObjectItemCaseSensitive(cp, "messages");
	bool ok;

	if (!json_check_int(cp, "version", v2 ? 2 : 1, v2 ? 2 : 1) ||
	    !json_check_int(cp, "turns", 0, 1000) ||
	    !json_check_string(cp, "output", true, false, 0, AGENT_MAX_OUTPUT) ||
	    !cJSON_IsObject(usage) || !json_check_int(usage, "inputTokens", 0, 1e15) ||
	    !json_check_int(usage, "outputTokens", 0, 1e15) ||
	    !json_check_int(usage, "cacheReadTokens", 0, 1e15) ||
	    !json_check_int(usage, "cacheWriteTokens", 0, 1e15) ||
	    (v2 && (!json_check_int(cp, "messageCount", 1, CONV_MAX_MESSAGES) ||
	    cJSON_GetObjectItemCaseSensitive(cp, "messageCount") == NULL)))
		return false;
	if (v2) {
		if (l->err.code != NULL)
			return false;
		fetched = loop_cp_messages(l, (size_t)cJSON_GetObjectItemCaseSensitive(cp,
		    "messageCount")->valuedouble);
		if (fetched == NULL)
			return false;
		messages = fetched;
	}
	ok = conv_from_json(&l->conv, messages) && l->conv.n > 0 &&
	    loop_plan_restore(&l->plan, cJSON_GetObjectItemCaseSensitive(cp, "plan"));
	cJSON_Delete(fetched);
	if (!ok)
		return false;
	l->cp_sent = v2 ? l->conv.n : 0;
	l->turns = (int)cJSON_GetObjectItemCaseSensitive(cp, "turns")->valuedouble;
	buf_appends(&l->output, output);
	l->output_full = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cp, "outputFull"));
	l->used.input = (long)cJSON_GetObjectItemCaseSensitive(usage, "inputTokens")->valuedouble;
	l->used.output = (long)cJSON_GetObjectItemCaseSensitive(usage, "outputTokens")->valuedouble;
	/* Checkpoints of older agents have no cache counts. */
	l->used.cache_read = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(usage,
	    "cacheReadTokens"));
	l->used.cache_write = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(usage,
	    "cacheWriteTokens"));
	if (l->used.cache_read < 0 || l->used.cache_write < 0)	/* NaN when absent */
		l->used.cache_read = l->used.cache_write = 0;
	return true;
}

/* The conversation: a new one, or a resumed run's checkpoint (false when malformed). */
static bool
loop_conversation(struct loop *l)
{
	char *system = loop_system_prompt(l->cfg, &l->cons);
	const cJSON *h;

	conv_init(&l->conv, system);
	free(system);
	if (l->cfg->checkpoint != NULL) {
		if (loop_restore(l, l->cfg->checkpoint))
			return true;
		if (l->err.code == NULL)
			agent_error_set(&l->err, "checkpoint_invalid",
			    "the checkpoint of the resumed run is malformed");
		return false;
	}
	cJSON_ArrayForEach(h, l->cfg->history) {
		const char *prompt = json_get_string(h, "prompt");
		const char *output = json_get_string(h, "output");

		if (prompt == NULL)
			continue;
		conv_add_user(&l->conv, prompt);
		conv_add_assistant(&l->conv, output && output[0] ? output : "(no output)", NULL, 0);
	}
	conv_add_user(&l->conv, l->cfg->prompt);
	return true;
}

/* Text out to the service, within the output limit. */
static void
loop_emit(struct loop *l, const char *delta, size_t len)
{
	size_t room = AGENT_MAX_OUTPUT - sizeof LOOP_TRUNCATED - l->output.len;

	if (l->output_full || len == 0)
		return;
	if (len > room) {
		len = agent_utf8_cut(delta, room);
		l->output_full = true;
	}
	buf_append(&l->output, delta, len);
	host_output(l->host, delta, len);
	if (l->output_full) {
		buf_appends(&l->output, LOOP_TRUNCATED);
		host_output(l->host, LOOP_TRUNCATED, strlen(LOOP_TRUNCATED));
	}
}

/*
 * A redone answer that no longer repeats the broken one: a line says so, then
 * the new answer from its start (what matched so far included).
 */
static void
loop_echo_diverge(struct loop *l)
{
	size_t from = l->answer_at, n = l->echo_at - l->answer_at;
	char *same = xstrndup(l->output.data + from, n);

	l->echo_at = l->echo_to = 0;
	loop_emit(l, LOOP_RESTARTED, strlen(LOOP_RESTARTED));
	l->answer_at = l->output.len;
	loop_emit(l, same, n);
	free(same);
}

/* The provider's text: out to the service, unless it repeats a broken attempt's. */
static void
loop_text(void *ud, const char *delta, size_t len)
{
	struct loop *l = ud;
	size_t room = AGENT_MAX_OUTPUT - sizeof LOOP_TRUNCATED - l->output.len;

	if (l->subagent != NULL) {	/* a child's text is its call's result */
		if (l->output_full || len == 0)
			return;
		buf_append(&l->output, delta, agent_utf8_cut(delta, len < room ? len : room));
		l->output_full = len > room;
		return;
	}
	if (!l->writing) {
		host_progress(l->host, "writing", "The model is answering.");
		l->writing = true;
	}
	while (len > 0 && l->echo_at < l->echo_to) {
		if (l->output.data[l->echo_at] != *delta) {
			loop_echo_diverge(l);
			break;
		}
		l->echo_at++, delta++, len--;
	}
	loop_emit(l, delta, len);
}

/* The arguments as shown to the user: long strings cut. */
static cJSON *
loop_ask_input(const cJSON *args)
{
	cJSON *input = cJSON_Duplicate(args, true);
	cJSON *v;

	cJSON_ArrayForEach(v, input) {
		size_t n;
		char *cut, *shown;

		if (!cJSON_IsString(v) || (n = strlen(v->valuestring)) <= LOOP_ASK_STRING_MAX)
			continue;
		cut = agent_utf8_prefix(v->valuestring, LOOP_ASK_STRING_MAX);
		shown = xasprintf("%s… (%zu bytes in all)", cut, n);
		cJSON_SetValuestring(v, shown);
		free(cut);
		free(shown);
	}
	return input;
}

/* AGENT_OK when allowed, AGENT_FAILED when refused, or AGENT_CANCELLED. */
static int
loop_ask(struct loop *l, const char *name, const cJSON *args, const char *what)
{
	cJSON *params = cJSON_CreateObject();
	cJSON *result = NULL;
	struct agent_error err = { 0 };
	const char *decision;
	int rc;

	cJSON_AddStringToObject(params, "tool", name);
	cJSON_AddStringToObject(params, "summary", what);
	cJSON_AddItemToObject(params, "input", loop_ask_input(args));
	rc = host_request(l->host, "permission.ask", params, &result, &err);
	if (rc == AGENT_OK) {
		decision = json_get_string(result, "decision");
		if (decision == NULL || strcmp(decision, "allow") != 0)
			rc = AGENT_FAILED;
	} else if (rc == AGENT_FAILED)
		log_info("permission.ask failed: %s", err.message);
	cJSON_Delete(result);
	agent_error_clear(&err);
	return rc;
}

/* Runs one tool call into res; AGENT_CANCELLED stops the run. */
static int
loop_exec(struct loop *l, const struct tool_call *call, const struct tool *t,
    const cJSON *args, const char *what, size_t max_output, struct tool_result *res,
    bool *denied)
{
	struct tool_ctx ctx = { .cfg = l->cfg, .host = l->host, .plan = &l->plan,
		.files = l->files, .files_why = l->files_why, .call_id = call->id,
		.max_output = max_output };
	int rc;

	*denied = false;
	if (t == NULL) {
		tool_result_fail(res, "there is no tool named \"%s\"", call->name);
		return AGENT_OK;
	}
	if (!cJSON_IsObject(args)) {
		tool_result_fail(res, "the arguments must be a JSON object");
		return AGENT_OK;
	}
	if ((t->flags & TOOL_SIDE_EFFECT) && l->cfg->profile == PROFILE_READ_ONLY) {
		tool_result_fail(res, "%s is denied by the read-only profile", t->name);
		*denied = true;
		return AGENT_OK;
	}
	if ((t->flags & TOOL_AFTER_PLAN) && l->plan.plan_first && !l->plan.approved) {
		tool_result_fail(res, "%s needs an approved plan: propose a plan with "
		    "propose_plan first and wait for the user's approval", t->name);
		return AGENT_OK;
	}
	if ((t->flags & TOOL_SIDE_EFFECT) && l->cfg->profile == PROFILE_ASK) {
		rc = loop_ask(l, t->name, args, what);
		if (rc == AGENT_CANCELLED)
			return rc;
		if (rc != AGENT_OK) {
			tool_result_fail(res, "%s was denied by the user", t->name);
			*denied = true;
			return AGENT_OK;
		}
	}
	return t->exec(&ctx, args, res);
}

/*
 * A connector tool: side-effecting (asked under ask), allowed under read-only
 * and before a plan's approval only when the server marks it readOnlyHint.
 */
static int
loop_exec_connector(struct loop *l, const struct connector_tool *ct, const cJSON *args,
    const char *what, struct tool_result *res, bool *denied)
{
	int rc;

	*denied = false;
	if (!cJSON_IsObject(args)) {
		tool_result_fail(res, "the arguments must be a JSON object");
		return AGENT_OK;
	}
	if (!ct->read_only && l->cfg->profile == PROFILE_READ_ONLY) {
		tool_result_fail(res, "%s is denied by the read-only profile (its server does not "
		    "mark it read-only)", ct->name);
		*denied = true;
		return AGENT_OK;
	}
	if (!ct->read_only && l->plan.plan_first && !l->plan.approved) {
		tool_result_fail(res, "%s needs an approved plan: propose a plan with "
		    "propose_plan first and wait for the user's approval", ct->name);
		return AGENT_OK;
	}
	if (l->cfg->profile == PROFILE_ASK) {
		rc = loop_ask(l, ct->name, args, what);
		if (rc == AGENT_CANCELLED)
			return rc;
		if (rc != AGENT_OK) {
			tool_result_fail(res, "%s was denied by the user", ct->name);
			*denied = true;
			return AGENT_OK;
		}
	}
	return connectors_call(&l->cons, ct, args, l->cfg, l->host, res);
}

/* Counts identical failing calls in a row; true when the model is stuck. */
static bool
loop_stuck(struct loop *l, const struct tool_call *call, bool failed)
{
	char *sig;

	if (!failed) {
		free(l->last_failure);
		l->last_failure = NULL;
		l->failures = 0;
		return false;
	}
	sig = xasprintf("%s\n%s", call->name, call->arguments);
	if (l->last_failure != NULL && strcmp(sig, l->last_failure) == 0) {
		free(sig);
		l->failures++;
	} else {
		free(l->last_failure);
		l->last_failure = sig;
		l->failures = 1;
	}
	return l->failures >= LOOP_REPEAT_LIMIT;
}

/* A tool call of the model's answer, from its "started" line to its result. */
struct pending {
	struct loop *l;
	struct tool_call call;
	const struct tool *t;
	const struct connector_tool *ct;
	cJSON *args;
	char what[512];
	size_t max_output;		/* the result's share of the window (context_result_max) */
	struct tool_result res;
	bool denied;
	int rc;
};

/* Describes the call and sends its "started" line. */
static void
loop_call_start(struct loop *l, const struct tool_call *call, struct pending *p)
{
	p->l = l;
	p->call = *call;
	p->t = tools_find(call->name, l->offer);
	p->ct = p->t == NULL ? connectors_find(&l->cons, call->name) : NULL;
	p->args = json_parse(call->arguments, strlen(call->arguments));
	if (p->t != NULL)
		p->t->describe(p->args, p->what, sizeof p->what);
	else if (p->ct != NULL)
		connectors_describe(&l->cons, p->ct, p->args, p->what, sizeof p->what);
	else
		snprintf(p->what, sizeof p->what, "%.200s", call->name);
	p->what[agent_utf8_cut(p->what, strlen(p->what))] = '\0';	/* snprintf may cut a character */
	if (l->subagent == NULL)
		host_progress(l->host, "tool", p->what);
	host_tool(l->host, call->id, call->name, "started", p->what);
	tool_result_init(&p->res);
}

static void
loop_call_exec(struct pending *p)
{
	if (p->ct != NULL)
		p->rc = loop_exec_connector(p->l, p->ct, p->args, p->what, &p->res, &p->denied);
	else
		p->rc = loop_exec(p->l, &p->call, p->t, p->args, p->what, p->max_output, &p->res,
		    &p->denied);
}

/*
 * text cut to max bytes, with a note that says how to get the rest: a tool
 * result bounded to its share of the model's context window.
 */
static char *
loop_cut_text(const struct loop *l, const char *text, size_t max)
{
	size_t n = agent_utf8_cut(text, max);

	return xasprintf("%.*s\n[cut to %zu of %zu bytes to fit the model's context window (%ld "
	    "tokens): ask for less at a time, e.g. read_file with offset and limit (lines), a "
	    "narrower grep or glob, or a command whose output is shorter]\n", (int)n, text, n,
	    strlen(text), l->cx.window);
}

/*
 * Cuts the tool results of the conversation larger than their share of the
 * window (after it shrank); true when one was.  The next checkpoint sends
 * them again.
 */
static bool
loop_cut_results(struct loop *l)
{
	size_t calls = 1;
	bool cut = false;

	for (size_t i = 0; i < l->conv.n; i++) {
		const struct conv_message *m = &l->conv.msgs[i];
		size_t max;
		char *text;

		if (m->role == CONV_ASSISTANT)
			calls = m->ncalls;
		if (m->role != CONV_TOOL)
			continue;
		max = context_result_max(&l->cx, calls, l->cfg->max_tool_output);
		if (strlen(m->text) <= max + LOOP_CUT_SLACK)
			continue;
		text = loop_cut_text(l, m->text, max);
		conv_set_text(&l->conv, i, text);
		free(text);
		if (l->cp_sent > i)
			l->cp_sent = i;
		cut = true;
	}
	return cut;
}

/* Sends the call's end and gives its result to the model; AGENT_OK to go on. */
static int
loop_call_finish(struct loop *l, struct pending *p)
{
	const struct tool_call *call = &p->call;
	char *content;
	int rc = p->rc;

	cJSON_Delete(p->args);
	if (rc == AGENT_CANCELLED) {
		host_tool(l->host, call->id, call->name, "failed", "cancelled");
		tool_result_free(&p->res);
		return rc;
	}
	host_tool(l->host, call->id, call->name,
	    p->denied ? "denied" : p->res.failed ? "failed" : "completed", p->res.summary);
	if (p->res.used.input > 0 || p->res.used.output > 0) {	/* a subagent's */
		usage_add(&l->used, &p->res.used);
		host_usage(l->host, &l->used);
	}
	content = agent_utf8_clean(p->res.content.data ? p->res.content.data : "");
	/* A connector's, or a tool's past its share with its own note: cut here. */
	if (p->max_output > 0 && strlen(content) > p->max_output + LOOP_CUT_SLACK) {
		char *cut = loop_cut_text(l, content, p->max_output);

		free(content);
		content = cut;
	}
	conv_add_tool_result(&l->conv, call->id, call->name, content, p->res.failed);
	conv_set_media(&l->conv, p->res.media);
	p->res.media = NULL;
	free(content);
	if (!p->res.end_run)
		loop_checkpoint(l);
	if (p->res.end_run)
		rc = AGENT_CANCELLED;
	else if (loop_stuck(l, call, p->res.failed)) {
		agent_error_set(&l->err, "tool_loop",
		    "the model repeated the same failing %s call %d times", call->name,
		    LOOP_REPEAT_LIMIT);
		rc = AGENT_FAILED;
	}
	tool_result_free(&p->res);
	return rc;
}

/* Whether the call may run beside others of its answer: a built-in tool that only reads. */
static bool
loop_parallel(const struct loop *l, const struct tool_call *call)
{
	const struct tool *t = tools_find(call->name, l->offer);

	return t != NULL && (t->flags & TOOL_PARALLEL) && !(t->flags & TOOL_SIDE_EFFECT);
}

static void *
loop_call_thread(void *arg)
{
	loop_call_exec(arg);
	return NULL;
}

/*
 * Carries out the calls from of the assistant message at.  A run of calls that
 * only read (TOOL_PARALLEL) executes at once, one thread each; their results
 * go to the model in the order of the calls, as all results do.
 */
static int
loop_calls(struct loop *l, size_t at, size_t from)
{
	int rc = AGENT_OK;

	for (size_t i = from; i < l->conv.msgs[at].ncalls && rc == AGENT_OK;) {
		size_t n = 1, ncalls = l->conv.msgs[at].ncalls;
		struct pending *p;
		pthread_t *th;
		bool *started;

		if (host_cancelled(l->host))
			return AGENT_CANCELLED;
		while (i + n < ncalls && loop_parallel(l, &l->conv.msgs[at].calls[i]) &&
		    loop_parallel(l, &l->conv.msgs[at].calls[i + n]))
			n++;
		p = xcalloc(n, sizeof *p);
		th = xcalloc(n, sizeof *th);
		started = xcalloc(n, sizeof *started);
		/* Results grow the conversation (and may move it): copy the calls. */
		for (size_t k = 0; k < n; k++) {
			loop_call_start(l, &l->conv.msgs[at].calls[i + k], &p[k]);
			p[k].max_output = context_result_max(&l->cx, ncalls, l->cfg->max_tool_output);
		}
		for (size_t k = 0; k < n; k++)
			started[k] = n > 1 && pthread_create(&th[k], NULL, loop_call_thread, &p[k]) == 0;
		for (size_t k = 0; k < n; k++) {
			if (started[k])
				pthread_join(th[k], NULL);
			else
				loop_call_exec(&p[k]);
		}
		for (size_t k = 0; k < n; k++) {
			if (rc == AGENT_OK)
				rc = loop_call_finish(l, &p[k]);
			else {
				cJSON_Delete(p[k].args);
				tool_result_free(&p[k].res);
			}
		}
		free(started);
		free(th);
		free(p);
		i += n;
	}
	return rc;
}

/* What a person reads for a retry's reason. */
static const char *
loop_retry_words(const char *reason)
{
	static const struct {
		const char *reason, *words;
	} words[] = {
		{ "rate_limited", "rate limited" },
		{ "overloaded", "the provider is overloaded" },
		{ "server_error", "the provider had a server error" },
		{ "timeout", "the provider timed out" },
		{ "conflict", "the provider reported a conflict" },
		{ "connection", "the connection to the provider failed" },
	};

	for (size_t i = 0; reason != NULL && i < sizeof words / sizeof *words; i++)
		if (strcmp(words[i].reason, reason) == 0)
			return words[i].words;
	return "the provider failed";
}

/*
 * The wait before retry attempt (1-based): what the provider asked for, else
 * an exponential backoff (1 s, 2 s, 4 s, ... at most 60 s) with jitter (half
 * to all of it), so that many agents do not come back at once.
 */
static long
loop_backoff_ms(int attempt, long asked)
{
	long base = LOOP_BACKOFF_BASE_MS;

	if (asked >= 0)
		return asked;
	for (int i = 1; i < attempt && base < LOOP_BACKOFF_CAP_MS; i++)
		base *= 2;
	if (base > LOOP_BACKOFF_CAP_MS)
		base = LOOP_BACKOFF_CAP_MS;
	return base / 2 + random() % (base / 2 + 1);
}

/* Adds a note to the run's error message. */
static void loop_error_note(struct loop *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
loop_error_note(struct loop *l, const char *fmt, ...)
{
	char note[160];
	char *msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof note, fmt, ap);
	va_end(ap);
	msg = xasprintf("%s%s", l->err.message ? l->err.message : "", note);
	free(l->err.message);
	l->err.message = msg;
}

/*
 * One model answer.  A failure that waiting may fix (provider-http.c) is
 * retried after a wait, at most cfg->max_retries times and cfg->max_retry_wait_ms
 * in all; no tool has run in a turn whose answer did not arrive, so the turn
 * is simply asked again.  A cancel ends the wait.
 */
static void
loop_silent(void *ud, const char *delta, size_t len)
{
}

/* Adds u to what the run spent. */
static void
loop_spend(struct loop *l, const struct usage *u)
{
	struct run_spend *s = l->cfg->spend;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	usage_add(&s->used, u);
	pthread_mutex_unlock(&s->mu);
}

/* Whether the run, its subagents included, reached a budget: l->err says which. */
static bool
loop_over_budget(struct loop *l)
{
	struct usage used = l->used;

	if (l->cfg->spend != NULL) {
		pthread_mutex_lock(&l->cfg->spend->mu);
		used = l->cfg->spend->used;
		pthread_mutex_unlock(&l->cfg->spend->mu);
	}
	if (l->cfg->max_tokens > 0 && used.input + used.output >= l->cfg->max_tokens) {
		agent_error_clear(&l->err);
		agent_error_set(&l->err, "budget_exceeded", "the run used %ld tokens, its "
		    "limit is %lld (runs.maxTokensPerRun, its subagents' included); the work so "
		    "far is in the workspace", used.input + used.output, l->cfg->max_tokens);
		return true;
	}
	if (l->cfg->max_cost > 0 && l->cfg->price.set &&
	    usage_cost(&used, &l->cfg->price) >= l->cfg->max_cost) {
		agent_error_clear(&l->err);
		agent_error_set(&l->err, "budget_exceeded", "the run cost %.4f USD, its "
		    "limit is %.4f USD (runs.maxCostPerRun, its subagents' included); the work so "
		    "far is in the workspace", usage_cost(&used, &l->cfg->price), l->cfg->max_cost);
		return true;
	}
	return false;
}

static int
loop_answer(struct loop *l, const struct conversation *conv, const cJSON *tools, bool visible,
    struct turn *t)
{
	struct provider_sink sink = { .text = visible ? loop_text : loop_silent, .ud = l };
	long waited = 0;
	int rc;

	l->answer_at = l->output.len;
	l->echo_at = l->echo_to = 0;
	for (int attempt = 1;; attempt++) {
		const char *reason;
		char msg[256];
		struct usage u;
		long delay;

		l->writing = false;
		turn_init(t);
		/* No paid request once the run's budget is spent (a subagent's spending too). */
		if (loop_over_budget(l))
			return AGENT_FAILED;
		rc = l->prov->ops->turn(l->prov, conv, tools, &sink, t, &l->err);
		u = (struct usage){ .input = t->input_tokens, .output = t->output_tokens,
		    .cache_read = t->cache_read_tokens, .cache_write = t->cache_write_tokens };
		usage_add(&l->used, &u);
		loop_spend(l, &u);
		if ((t->input_tokens || t->output_tokens) && l->subagent == NULL)
			host_usage(l->host, &l->used);
		if (loop_over_budget(l))
			return AGENT_FAILED;
		if (rc == AGENT_OK && l->echo_at < l->echo_to)
			loop_echo_diverge(l);	/* shorter than the broken attempt */
		l->echo_at = l->echo_to = 0;
		if (rc != AGENT_FAILED || !l->prov->retry.retryable || host_cancelled(l->host))
			return rc;
		turn_free(t);
		reason = l->prov->retry.reason;
		if (attempt > l->cfg->max_retries) {
			if (l->cfg->max_retries > 0)
				loop_error_note(l, " (gave up after %d retries in %ld s)",
				    l->cfg->max_retries, (waited + 999) / 1000);
			return rc;
		}
		delay = loop_backoff_ms(attempt, l->prov->retry.after_ms);
		if (waited + delay > l->cfg->max_retry_wait_ms) {
			loop_error_note(l, " (gave up: a wait of %ld s more would pass the retry "
			    "limit of %ld s)", (delay + 999) / 1000, l->cfg->max_retry_wait_ms / 1000);
			return rc;
		}
		waited += delay;
		snprintf(msg, sizeof msg, "%s, retrying in %ld s (retry %d of %d)",
		    loop_retry_words(reason), (delay + 999) / 1000, attempt, l->cfg->max_retries);
		log_info("%s: %s", msg, l->err.message);
		host_progress_retry(l->host, msg, attempt, l->cfg->max_retries, reason, delay);
		agent_error_clear(&l->err);
		/* What the broken attempt showed is not shown twice. */
		if (visible && l->subagent != NULL) {
			l->output.len = l->answer_at;	/* a child's text went nowhere yet */
			if (l->output.data != NULL)
				l->output.data[l->output.len] = '\0';
			l->output_full = false;
		} else if (visible) {
			l->echo_at = l->answer_at;
			l->echo_to = l->output.len;
		}
		if ((rc = host_sleep(l->host, delay)) != AGENT_OK)
			return rc;
		if (l->subagent == NULL)
			host_progress(l->host, "thinking", "Waiting for the model.");
	}
}

/* The plan of a plan-first run, for a summary that replaces the turns that made it. */
static void
loop_plan_text(const struct loop *l, struct buf *b)
{
	if (l->plan.nsteps == 0)
		return;
	buf_printf(b, "\n\nThe plan (%s):\n", l->plan.approved ? "approved" : "not approved yet");
	for (size_t i = 0; i < l->plan.nsteps; i++)
		buf_printf(b, "%zu. %s (step id %s)\n", i + 1, l->plan.steps[i].title,
		    l->plan.steps[i].id);
}

#define LOOP_SUMMARY_SYSTEM "You summarize the earlier part of the work of an AI agent that " \
	"carries out a task in a workspace, so that it can go on within its model's context " \
	"window. The summary replaces those turns: keep what the agent needs to carry on."

/*
 * Context management: the model summarizes the turns before the recent ones
 * (those within about budget tokens, at least the newest); the system
 * prompt, the task, the plan and the recent turns stay.  The checkpoint then
 * holds the new conversation.  *done is false when there was nothing older
 * to summarize.
 */
static int
loop_compact(struct loop *l, const char *why, long budget, bool *done)
{
	size_t recent = context_recent_start(&l->cx, &l->conv, budget);
	size_t skip = SIZE_MAX, older = 0;
	size_t max = (size_t)((double)l->cx.window * 0.6 / l->cx.per_byte);
	struct conversation sc, nc;
	cJSON *none;
	struct turn t;
	struct buf text;
	char *transcript, msg[300];
	int rc;

	*done = false;
	/* The task (the last user message) is written anew: the recent turns follow it. */
	for (size_t i = 0; i < l->conv.n; i++)
		if (l->conv.msgs[i].role == CONV_USER)
			skip = i;
	if (skip != SIZE_MAX && recent <= skip)
		recent = skip + 1;
	/* An earlier summary alone is not summarized again. */
	for (size_t i = 0; i < recent; i++)
		older += i != skip;
	if (skip != SIZE_MAX && strcmp(l->conv.msgs[skip].text, l->cfg->prompt) != 0)
		skip = SIZE_MAX;	/* an earlier summary: summarized again */
	if (older == 0)
		return AGENT_OK;
	snprintf(msg, sizeof msg, "%s; summarizing the %zu older messages (the model's context "
	    "window: %ld tokens, %s)", why, older, l->cx.window, l->cx.window_from);
	log_info("%s", msg);
	host_progress(l->host, "compacting", msg);
	transcript = context_transcript(&l->conv, recent, skip, max > 4096 ? max : 4096);
	buf_init(&text, 0);
	buf_printf(&text, "The task:\n%s\n\nThe earlier part of the work, oldest first:\n\n%s\n"
	    "Write a summary of this earlier work for the agent that carries on with the task: "
	    "what it did and found, the files it read or changed and what in them still "
	    "matters, the decisions taken, the errors met, and what is left to do. Plain text, "
	    "at most about 400 words.", l->cfg->prompt, transcript);
	free(transcript);
	conv_init(&sc, LOOP_SUMMARY_SYSTEM);
	conv_add_user(&sc, text.data);
	buf_free(&text);
	none = cJSON_CreateArray();
	rc = loop_answer(l, &sc, none, false, &t);
	cJSON_Delete(none);
	conv_free(&sc);
	if (rc != AGENT_OK) {
		turn_free(&t);
		return rc;
	}
	buf_init(&text, 0);
	buf_printf(&text, "%s\n\n[The earlier turns of this run were summarized to fit the "
	    "model's context window:]\n%s", l->cfg->prompt, t.text.data ? t.text.data : "");
	loop_plan_text(l, &text);
	turn_free(&t);
	conv_init(&nc, l->conv.system);
	conv_add_user(&nc, text.data);
	buf_free(&text);
	for (size_t i = recent; i < l->conv.n; i++)
		conv_add_copy(&nc, &l->conv.msgs[i]);
	conv_free(&l->conv);
	l->conv = nc;
	/* The next checkpoint replaces the stored messages from the first. */
	l->cp_sent = 0;
	loop_checkpoint(l);
	host_progress(l->host, "thinking", "Waiting for the model.");
	*done = true;
	return AGENT_OK;
}

/*
 * What the model is told after an answer the output limit cut (NULL when
 * none was): a call it cut did not run; it goes on, writing less at once.
 */
static char *
loop_cut_note(const struct turn *t)
{
	if (!t->cut)
		return NULL;
	log_info("the model's answer reached its output limit%s%s", t->cut_call[0] ?
	    " inside a call of " : "", t->cut_call);
	if (t->cut_call[0] != '\0')
		return xasprintf("[Your last answer was cut off: it reached the model's output "
		    "limit while writing the arguments of a %s call (%zu bytes of them had come), "
		    "so that call was not carried out. Go on from there, writing less in one "
		    "answer: split a large file over several calls (write_file with the first "
		    "part, then write_file with append true for each next part), or make smaller "
		    "edits.]", t->cut_call, t->cut_bytes);
	return xstrdup("[Your last answer was cut off: it reached the model's output limit. "
	    "Go on from where it stopped; keep each answer shorter.]");
}

/*
 * Makes the next request fit the window: cuts the tool results past their
 * share (the window may have shrunk), then summarizes the older turns,
 * keeping about 30 % of the window, then all but the newest turn.  forced:
 * the provider refused the request as too long, so something must change.
 * *changed says whether the conversation did.  AGENT_FAILED with
 * context_exhausted when the newest turn does not fit even so.
 */
static int
loop_fit(struct loop *l, const char *why, bool forced, bool *changed)
{
	static const int keep[] = { 3, 0 };	/* tenths of the window kept as they are */
	bool done;
	int rc;

	*changed = loop_cut_results(l);
	if (*changed) {
		log_info("tool results were cut to fit the model's context window of %ld tokens",
		    l->cx.window);
		loop_checkpoint(l);
	}
	for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
		if (!context_full(&l->cx, &l->conv) && (*changed || !forced))
			return AGENT_OK;
		if ((rc = loop_compact(l, why, l->cx.window * keep[k] / 10, &done)) != AGENT_OK)
			return rc;
		*changed = *changed || done;
	}
	if (!context_full(&l->cx, &l->conv) || !*changed)
		return AGENT_OK;
	agent_error_set(&l->err, "context_exhausted", "the newest turn (about %ld tokens with the "
	    "system prompt, the tools and the summary) does not fit the model's context window "
	    "of %ld tokens (%s) with %ld kept for the answer: set a larger window on the server "
	    "(and providers.<name>.models.<model>.contextWindow), or split the task",
	    context_estimate(&l->cx, &l->conv), l->cx.window, l->cx.window_from, l->cx.reserve);
	return AGENT_FAILED;
}

/*
 * The provider refused the request as too long: the window it states (when
 * smaller) and the tokens it counted are taken, then the conversation is
 * made to fit.  AGENT_OK to ask again; AGENT_FAILED when nothing changed.
 */
static int
loop_refused(struct loop *l)
{
	long stated = l->prov->retry.stated_window;
	char *said = xstrdup(l->err.message ? l->err.message : "");
	bool changed = false;
	int rc;

	log_info("the provider refused the conversation as too long: %s", said);
	agent_error_clear(&l->err);
	if (l->prov->retry.stated_prompt > 0)
		context_learn(&l->cx, &l->conv, l->prov->retry.stated_prompt);
	if (stated > 0 && stated < l->cx.window) {
		log_info("the provider states a context window of %ld tokens (%ld assumed)", stated,
		    l->cx.window);
		context_set_window(&l->cx, stated, "provider error");
	}
	rc = loop_fit(l, "the provider said the conversation is too long for the model", true,
	    &changed);
	if (rc == AGENT_OK && !changed) {
		agent_error_set(&l->err, "provider_error", "%s (the conversation does not fit "
		    "the model's context window, and there is nothing older to summarize)", said);
		rc = AGENT_FAILED;
	}
	free(said);
	return rc;
}

/* One model turn and its tool calls.  AGENT_OK with *done when the model finished. */
static int
loop_turn(struct loop *l, bool *done)
{
	struct turn t;
	size_t ncalls, at;
	bool compacted = false;
	char why[160], *cut;
	int rc;

	if (l->subagent == NULL)
		host_progress(l->host, "thinking", "Waiting for the model.");
	if (connectors_refresh(&l->cons)) {
		/* A server's tools changed: the model sees the new list this turn. */
		cJSON_Delete(l->tools);
		l->tools = tools_definitions(l->offer);
		connectors_definitions(&l->cons, l->tools);
	}
	if (context_full(&l->cx, &l->conv)) {
		snprintf(why, sizeof why, "the conversation (about %ld tokens) is near the model's "
		    "context window", context_estimate(&l->cx, &l->conv));
		if ((rc = loop_fit(l, why, false, &compacted)) != AGENT_OK)
			return rc;
	}
	/* Turns that each must compact first make no progress: the window is too small. */
	l->compact_streak = compacted ? l->compact_streak + 1 : 0;
	if (l->compact_streak >= LOOP_COMPACT_STREAK) {
		agent_error_set(&l->err, "context_exhausted", "the conversation had to be "
		    "summarized before each of the last %d model turns: the model's context window "
		    "(%ld tokens, %s) is too small for the steps of this task; set a larger window "
		    "on the server (and providers.<name>.models.<model>.contextWindow), or split "
		    "the task", LOOP_COMPACT_STREAK, l->cx.window, l->cx.window_from);
		return AGENT_FAILED;
	}
	rc = loop_answer(l, &l->conv, l->tools, true, &t);
	if (rc == AGENT_FAILED && l->prov->retry.context_exceeded && l->cx.window > 0 &&
	    (!compacted || (l->prov->retry.stated_window > 0 &&
	    l->prov->retry.stated_window < l->cx.window))) {
		turn_free(&t);
		if ((rc = loop_refused(l)) != AGENT_OK)
			return rc;
		rc = loop_answer(l, &l->conv, l->tools, true, &t);
	}
	if (rc != AGENT_OK) {
		turn_free(&t);
		return rc;
	}
	context_learn(&l->cx, &l->conv, t.input_tokens);
	if (l->cx.ask_loaded) {
		/* Ollama sized the model's context when it loaded it for this turn. */
		long loaded = context_ollama_loaded(l->host, l->cfg);

		l->cx.ask_loaded = false;
		if (loaded > 0 && loaded != l->cx.window) {
			log_info("Ollama loaded %s with a context window of %ld tokens", l->cfg->model,
			    loaded);
			context_set_window(&l->cx, loaded, "provider");
		}
	}
	ncalls = t.ncalls;
	conv_add_assistant(&l->conv, t.text.data ? t.text.data : "", t.calls, t.ncalls);
	conv_set_reasoning(&l->conv, t.reasoning);
	t.reasoning = NULL;
	at = l->conv.n - 1;
	t.calls = NULL;
	t.ncalls = 0;
	cut = loop_cut_note(&t);
	turn_free(&t);
	*done = ncalls == 0 && cut == NULL;
	if (!*done && ncalls > 0)
		loop_checkpoint(l);
	if (ncalls > 0)
		rc = loop_calls(l, at, 0);
	if (cut != NULL && rc == AGENT_OK) {
		conv_add_user(&l->conv, cut);
		loop_checkpoint(l);
	}
	free(cut);
	return rc;
}

/*
 * A resumed run whose checkpoint ends inside a step carries out the
 * tool calls of the model's last answer that have no result yet.
 */
static int
loop_pending_calls(struct loop *l)
{
	size_t at = l->conv.n, answered = 0;

	while (at > 0 && l->conv.msgs[at - 1].role == CONV_TOOL)
		at--, answered++;
	if (at == 0 || l->conv.msgs[at - 1].role != CONV_ASSISTANT)
		return AGENT_OK;
	at--;
	return loop_calls(l, at, answered);
}

/*
 * routing.reviewer: reviews the answer that would end the run; on requested
 * changes, gives the model their findings for one more round (*done false).
 */
static int
loop_review(struct loop *l, bool *done)
{
	struct tool_ctx ctx = { .cfg = l->cfg, .host = l->host, .plan = &l->plan,
		.files = l->files, .files_why = l->files_why };
	struct review r;
	const cJSON *f;
	struct buf msg;
	int rc;

	if (l->subagent != NULL || !l->cfg->reviewer.enabled || l->reviews >= LOOP_REVIEWS ||
	    l->files == NULL)
		return AGENT_OK;
	host_progress(l->host, "reviewing", "A reviewer reads the work.");
	rc = review_run(&ctx, l->host, &l->before, l->output.data ? l->output.data : "", &r);
	if (rc != AGENT_OK)
		return rc;
	l->reviews++;
	if (r.used.input > 0 || r.used.output > 0) {
		usage_add(&l->used, &r.used);
		loop_spend(l, &r.used);
		host_usage(l->host, &l->used);
	}
	review_send(l->host, &r, l->reviews);
	if (strcmp(r.verdict, "changes_requested") == 0 && l->reviews < LOOP_REVIEWS) {
		buf_init(&msg, 0);
		buf_appends(&msg, "A reviewer read your work and requested changes:\n");
		cJSON_ArrayForEach(f, r.findings)
			buf_printf(&msg, "- %s\n", f->valuestring);
		if (cJSON_GetArraySize(r.findings) == 0)
			buf_printf(&msg, "%s\n", r.summary ? r.summary : "");
		buf_appends(&msg, "Address them, then answer with a short summary of what you "
		    "changed.");
		conv_add_user(&l->conv, msg.data);
		buf_free(&msg);
		loop_text(l, "\n\n", 2);
		loop_checkpoint(l);
		*done = false;
	}
	review_free(&r);
	return AGENT_OK;
}

static int
loop_main(struct loop *l)
{
	int rc;

	l->prov = provider_new(l->cfg, l->host);
	l->prov->plan = &l->plan;
	if (l->prov->ops->open != NULL &&
	    (rc = l->prov->ops->open(l->prov, &l->err)) != AGENT_OK)
		return rc;
	if (l->cfg->checkpoint != NULL) {
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(l->cfg->checkpoint, "provider");

		if (ps != NULL && (l->prov->ops->restore == NULL || !l->prov->ops->restore(l->prov,
		    ps))) {
			agent_error_set(&l->err, "checkpoint_invalid",
			    "the provider state of the checkpoint is malformed");
			return AGENT_FAILED;
		}
		if ((rc = loop_pending_calls(l)) != AGENT_OK)
			return rc;
	}
	while (l->turns < l->cfg->max_turns) {
		bool done = false;

		if (host_cancelled(l->host))
			return AGENT_CANCELLED;
		l->turns++;
		if ((rc = loop_turn(l, &done)) != AGENT_OK)
			return rc;
		if (done && (rc = loop_review(l, &done)) != AGENT_OK)
			return rc;
		if (done)
			return AGENT_OK;
	}
	agent_error_set(&l->err, "max_turns", "the run reached its limit of %d model turns "
	    "(runs.maxTurns) before the model finished; the work so far is in the workspace: "
	    "continue it with a new run in the same session, or raise runs.maxTurns",
	    l->cfg->max_turns);
	return AGENT_FAILED;
}

/* Frees what a loop holds (not the loop itself). */
static void
loop_free(struct loop *l)
{
	provider_free(l->prov);
	conv_free(&l->conv);
	cJSON_Delete(l->tools);
	buf_free(&l->output);
	free(l->last_failure);
	plan_state_free(&l->plan);
	agent_error_clear(&l->err);
	wsfile_root_free(l->files);
	free(l->files_why);
	tool_snapshot_free(&l->before);
}

static int
loop_file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ws_file *)a)->rel, ((const struct ws_file *)b)->rel);
}

/* The model's context window, from the settings, the provider or a default. */
static void
loop_context(struct loop *l, bool discover)
{
	char *defs = json_print(l->tools);
	struct context_found found = { 0 };

	if (l->cfg->context_window == 0 && discover)
		context_discover(l->host, l->cfg, &found);
	context_init(&l->cx, l->cfg, strlen(defs), &found);
	free(defs);
}

int
loop_run(const struct agent_config *run_cfg, struct host *host)
{
	struct run_spend spend = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct agent_config run = *run_cfg;
	const struct agent_config *cfg = &run;
	struct loop l = { .cfg = cfg, .host = host };
	static const char *const statuses[] = {
		[-AGENT_OK] = "completed", [-AGENT_FAILED] = "failed", [-AGENT_CANCELLED] = "cancelled",
	};
	int rc;

	buf_init(&l.output, 0);
	srandom((unsigned)(td_mono_ms() ^ getpid()));
	l.plan.plan_first = cfg->plan_first;
	l.offer = (cfg->plan_first ? TOOL_PLAN_FIRST : 0) |
	    (cfg->subagent.enabled ? TOOL_SUBAGENT : 0);
	l.tools = tools_definitions(l.offer);
	l.files = wsfile_root_open(cfg->workspace, (const char *const *)cfg->hidden,
	    &l.files_why);
	if (l.files == NULL)
		log_warn("the file tools are off: %s", l.files_why);
	host_progress(host, "starting", "Starting the run.");
	rc = connectors_open(&l.cons, cfg, host);
	connectors_definitions(&l.cons, l.tools);
	loop_context(&l, rc == AGENT_OK);
	if (!loop_conversation(&l) && rc == AGENT_OK)
		rc = AGENT_FAILED;
	spend.used = l.used;	/* a resumed run's so far */
	run.spend = &spend;
	if (cfg->reviewer.enabled && l.files != NULL) {
		struct tool_ctx ctx = { .cfg = cfg, .host = host, .files = l.files };

		tool_snapshot(&ctx, &l.before);
		if (l.before.n > 1)
			qsort(l.before.v, l.before.n, sizeof *l.before.v, loop_file_cmp);
	}
	if (rc == AGENT_OK)
		rc = loop_main(&l);
	if (host_cancelled(host))
		rc = AGENT_CANCELLED;
	/* Before finish: once it is sent the service may end the agent at any moment. */
	connectors_close(&l.cons);
	if (!host_protocol_error(host)) {
		host_progress(host, "finishing", "Finishing the run.");
		host_finish(host, statuses[-rc], l.output.data ? l.output.data : "", &l.err,
		    &l.used);
	}
	if (rc == AGENT_FAILED)
		log_info("run failed: %s: %s", l.err.code, l.err.message);
	loop_free(&l);
	return rc;
}

int
loop_subagent(const struct agent_config *cfg, struct host *host, const struct plan_state *plan,
    const char *id, const char *task, struct buf *answer, struct usage *used,
    struct agent_error *err)
{
	struct agent_config child = *cfg;
	struct loop l = { .cfg = &child, .host = host, .subagent = id };
	int rc;

	if (cfg->subagent.provider_kind != NULL) {
		child.provider_kind = cfg->subagent.provider_kind;
		child.base_url = cfg->subagent.base_url;
		child.api_key = cfg->subagent.api_key;
		child.replay_dir = cfg->subagent.replay_dir;
	}
	if (cfg->subagent.model != NULL)
		child.model = cfg->subagent.model;
	child.prompt = (char *)task;
	child.plan_first = false;	/* its prompt: it proposes no plan ... */
	child.history = NULL;
	child.checkpoint = NULL;
	child.connectors = NULL;
	memset(&child.subagent, 0, sizeof child.subagent);
	memset(&child.reviewer, 0, sizeof child.reviewer);
	buf_init(&l.output, 0);
	l.plan.plan_first = plan->plan_first;	/* ... and waits for the run's like the run */
	l.plan.approved = plan->approved;
	l.tools = tools_definitions(0);
	l.files = wsfile_root_open(child.workspace, (const char *const *)child.hidden,
	    &l.files_why);
	loop_context(&l, false);
	host_set_subagent(id);
	rc = loop_conversation(&l) ? loop_main(&l) : AGENT_FAILED;
	if (host_cancelled(host))
		rc = AGENT_CANCELLED;
	host_set_subagent(NULL);
	buf_append(answer, l.output.data ? l.output.data : "", l.output.len);
	*used = l.used;
	if (l.err.code != NULL)
		agent_error_set(err, l.err.code, "%s", l.err.message ? l.err.message : "");
	loop_free(&l);
	return rc;
}
