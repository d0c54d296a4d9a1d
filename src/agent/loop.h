/*
 * The agent loop: prompt the model with the tools, stream its text out, run
 * the tools it calls and feed the results back, until it answers without a
 * tool call, fails, is cancelled or runs out of turns.
 */
#ifndef TD_AGENT_LOOP_H
#define TD_AGENT_LOOP_H

#include "agent.h"

struct host;

/* Runs the whole run and sends its finish line.  Returns the final status. */
int loop_run(const struct agent_config *cfg, struct host *host);

#endif
