/*
 * The reviewer of routing.reviewer (docs/agent.md "Review"): before a run
 * completes, the reviewer's model reads the task, the final answer and what
 * changed in the workspace, and approves or requests changes with findings.
 */
#ifndef TD_AGENT_REVIEW_H
#define TD_AGENT_REVIEW_H

#include <cjson/cJSON.h>

#include "tools.h"

struct host;

struct review {
	const char *verdict;	/* static: "approved", "changes_requested", "error" */
	char *summary;		/* the reviewer's text, or why the review failed */
	cJSON *findings;	/* array of strings */
	struct usage used;
};

/*
 * One review of the run: ctx->cfg's task, answer, and the files that differ
 * from before (sorted by rel).  AGENT_OK (out filled, review_free) or AGENT_CANCELLED.
 */
int review_run(const struct tool_ctx *ctx, struct host *host, const struct ws_snapshot *before,
    const char *answer, struct review *out);
/* The review line of the host protocol. */
void review_send(struct host *host, const struct review *r, int round);
void review_free(struct review *r);

#endif
