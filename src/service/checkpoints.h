/*
 * Checkpoints of version 2 (docs/host-protocol.md, Checkpoints).
 * The loop's state (the "head": turns, usage, plan, provider position, the
 * output's length) replaces runs.checkpoint; the conversation's messages are
 * rows of run_messages, appended as the run goes, so that the work of a
 * checkpoint is what its step added, however long the run.
 */
#ifndef TD_SERVICE_CHECKPOINTS_H
#define TD_SERVICE_CHECKPOINTS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "buf.h"

struct store;
/* What a running run has received but not yet stored; NULL until its first checkpoint. */
struct checkpoint_log;

void checkpoint_log_free(struct checkpoint_log *cl);

/*
 * Stores a version 2 checkpoint of run_id (*cl is made on first use) with
 * output, the run's output so far (NULL: unchanged since it was stored).
 * False with *why (static) when the checkpoint is malformed.  A store that
 * fails (a full disk) keeps the previous checkpoint whole; its new messages
 * are kept in *cl and stored with the next one.  *stored says whether it was.
 */
bool checkpoint_store(struct checkpoint_log **cl, struct store *st, const char *run_id,
    const cJSON *cp, const struct buf *output, bool *stored, const char **why);

/*
 * The result of the agent's checkpoint.read {"from": N}: {"messages": [...],
 * "next": M}, the stored messages from N on, as many as fit about 900 KiB
 * (at least one).  NULL with *why (static) when there is none at N.
 */
cJSON *checkpoint_read(struct store *st, const char *run_id, const cJSON *params,
    const char **why);

/*
 * At a resume, a version 2 head gets its "output": the run's stored output
 * cut to the head's outputLen.
 */
void checkpoint_resume_head(cJSON *cp, const char *stored_output);

#endif
