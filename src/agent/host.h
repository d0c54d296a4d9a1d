/*
 * The host protocol (docs/host-protocol.md): JSON lines with taskdeckd over
 * stdin and stdout.  A reader thread takes every line from the service, so
 * that a cancel is seen at any moment; everything else runs on the caller's
 * thread.
 */
#ifndef TD_AGENT_HOST_H
#define TD_AGENT_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent.h"

struct host;

/* Starts the reader thread on in_fd; lines go to out_fd. */
struct host *host_open(int in_fd, int out_fd);
/* Stops the reader thread and frees h (NULL is fine). */
void host_close(struct host *h);

/* Waits for the start line; NULL (protocol error or end of input) means exit 3. */
const cJSON *host_wait_start(struct host *h);

/* The next request gets id base + 1 (a resumed run's ids never repeat). */
void host_set_request_base(struct host *h, long long base);

bool host_cancelled(struct host *h);
/* Readable once the run is cancelled: for poll() next to other descriptors. */
int host_cancel_fd(struct host *h);
/* True when the service sent something the protocol does not allow. */
bool host_protocol_error(struct host *h);
/* Sleeps ms milliseconds; AGENT_CANCELLED when cancel came first. */
int host_sleep(struct host *h, long ms);

/* Writes msg as one line (msg is consumed); false when it is over the line bound (dropped). */
bool host_send(struct host *h, cJSON *msg);
void host_progress(struct host *h, const char *phase, const char *message);
/* progress "retrying": the wait before retry attempt (1-based) of a model turn. */
void host_progress_retry(struct host *h, const char *message, int attempt, int max_retries,
    const char *reason, long delay_ms);
void host_output(struct host *h, const char *delta, size_t len);
void host_tool(struct host *h, const char *call_id, const char *name,
    const char *status, const char *summary);
void host_usage(struct host *h, const struct usage *u);
/*
 * The tool lines sent from this thread carry "subagent": id (the call id of the
 * run_subagent call whose child loop runs here); NULL stops it.
 */
void host_set_subagent(const char *id);
/* The last line.  err is used only with "failed". */
void host_finish(struct host *h, const char *status, const char *output,
    const struct agent_error *err, const struct usage *u);

/*
 * Sends a request (params consumed) and waits for its response.  AGENT_OK
 * with *result (the caller frees it), AGENT_FAILED with err set from the
 * response's error, or AGENT_CANCELLED.
 */
int host_request(struct host *h, const char *method, cJSON *params,
    cJSON **result, struct agent_error *err);
/* host_request in two: the request's id (0 with err set when it was not sent)… */
long host_request_send(struct host *h, const char *method, cJSON *params,
    struct agent_error *err);
/* …and its answer within ms (-1 = no bound), as host_request, or HOST_PENDING. */
#define HOST_PENDING 1
int host_request_wait(struct host *h, long id, int ms, cJSON **result, struct agent_error *err);

#endif
