/*
 * The agent loop: prompt the model with the tools, stream its text out, run
 * the tools it calls and feed the results back, until it answers without a
 * tool call, fails, is cancelled or runs out of turns.
 */
#ifndef TD_AGENT_LOOP_H
#define TD_AGENT_LOOP_H

#include "agent.h"
#include "buf.h"

struct host;
struct plan_state;

/* Runs the whole run and sends its finish line.  Returns the final status. */
int loop_run(const struct agent_config *cfg, struct host *host);

/*
 * A child loop for run_subagent (docs/agent.md "Subagents"): task as its only
 * prompt, on cfg->subagent's provider and model (the run's when NULL), the
 * same workspace, profile and hidden set; plan-first gating as the run's plan
 * stands; no plan tools, no subagents, no connectors, no checkpoints.  Its tool
 * lines carry "subagent": id.  Its final text goes to answer, its usage to
 * *used (the child's token counts); err says why it failed.
 */
int loop_subagent(const struct agent_config *cfg, struct host *host, const struct plan_state *plan,
    const char *id, const char *task, struct buf *answer, struct usage *used,
    struct agent_error *err);

#endif
