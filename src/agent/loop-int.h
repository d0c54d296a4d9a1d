/*
 * What the parts of the agent loop share (loop.c, loop-checkpoint.c,
 * loop-answer.c, loop-calls.c, loop-compact.c); not for others.
 *
 * Calls go one way: loop.c calls the others; loop-calls.c calls
 * loop-compact.c and loop-checkpoint.c; loop-compact.c calls loop-answer.c
 * and loop-checkpoint.c; loop-answer.c and loop-checkpoint.c call none of them.
 */
#ifndef TD_AGENT_LOOP_INT_H
#define TD_AGENT_LOOP_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent-connectors.h"
#include "agent.h"
#include "buf.h"
#include "context.h"
#include "conv.h"
#include "provider.h"
#include "tools.h"
#include "wsfile.h"

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

/* loop-checkpoint.c */
/* Sends the checkpoint of the steps done since the last one (none in a subagent). */
void loop_checkpoint(struct loop *l);
/* The conversation: a new one, or a resumed run's checkpoint (false when malformed). */
bool loop_conversation(struct loop *l);

/* loop-answer.c */
/* The provider's text: out to the service, unless it repeats a broken attempt's. */
void loop_text(void *ud, const char *delta, size_t len);
/* Adds u to what the run spent. */
void loop_spend(struct loop *l, const struct usage *u);
/* One model answer to conv into t, retried after a wait when waiting may help. */
int loop_answer(struct loop *l, const struct conversation *conv, const cJSON *tools, bool visible,
    struct turn *t);

/* loop-calls.c */
/* Carries out the calls from of the assistant message at. */
int loop_calls(struct loop *l, size_t at, size_t from);
/* A resumed run's calls of the last answer that have no result yet. */
int loop_pending_calls(struct loop *l);

/* loop-compact.c */
/* text cut to max bytes, with a note that says how to get the rest. */
char *loop_cut_text(const struct loop *l, const char *text, size_t max);
/* Makes the next request fit the window (forced: the provider refused it). */
int loop_fit(struct loop *l, const char *why, bool forced, bool *changed);
/* The provider refused the request as too long: learn, fit, AGENT_OK to ask again. */
int loop_refused(struct loop *l);

#endif
