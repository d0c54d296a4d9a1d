/*
 * The conversation of a run and its checkpoints (docs/host-protocol.md): the
 * system prompt, a new conversation or a resumed run's, and the checkpoint
 * lines that carry it to the service.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conv.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "loop-int.h"
#include "xalloc.h"

#define LOOP_CP_CUT "\n[cut to fit the checkpoint]"
#define LOOP_CP_MESSAGE_MAX (600 * 1024)	/* one message in a checkpoint line */
#define LOOP_CP_LINE_BUDGET (600 * 1024)	/* the new messages of one checkpoint line */

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
void
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
bool
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
