/*
 * What the parts of the supervisor share (supervisor.c, supervisor-run.c,
 * agent-proc.c, agent-host.c, start-message.c, recover.c); not for others.
 *
 * Lock order: the store lock before sv->mu, never the reverse.
 */
#ifndef TD_SERVICE_SUPERVISOR_INT_H
#define TD_SERVICE_SUPERVISOR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "ids.h"
#include "runs.h"

struct service;

#define LINE_MAX_BYTES (1024 * 1024)
#define OUTPUT_MAX_BYTES (1024 * 1024)
#define HISTORY_RUNS 20
#define HISTORY_OUTPUT_MAX 8192
#define CANCEL_GRACE_MS 5000
#define STOP_GRACE_MS 2000
#define EXIT_WAIT_MS 5000
#define PROGRESS_MIN_INTERVAL_MS 1000
/* run.progress with liveness:true, this often until the first output line. */
#define LIVENESS_INTERVAL_MS 10000
/* The streamed output is stored at most this long after it arrived (docs/events.md). */
#define OUTPUT_STORE_MS 200
/* Each agent process of a resumed run numbers its requests above resumes * this. */
#define REQUEST_ID_STRIDE 1000000000.0
/* Finalization retries, from this wait up to the next. */
#define FINALIZE_RETRY_MIN_MS 100
#define FINALIZE_RETRY_MAX_MS 5000

/* An answer to one of the agent's requests, decided on another thread. */
struct queued_response {
	long long request_id;
	cJSON *result;
	struct queued_response *next;
};

struct agent_run {
	struct supervisor *sv;
	char id[TD_ID_MAX];
	int wake_fd;			/* eventfd: cancel, stop or a response */
	bool cancel_requested;		/* under sv->mu */
	bool stop_requested;		/* under sv->mu */
	bool resume;			/* Resumed after a restart */
	struct queued_response *responses;	/* under sv->mu, oldest first */
	struct agent_run *next;
};

struct supervisor {
	struct service *svc;
	pthread_mutex_t mu;
	pthread_cond_t cond;		/* kicks, and run threads ending */
	bool kicked;
	bool stopping;
	pthread_t scheduler;
	struct agent_run *runs;		/* every run with a thread */
	int nactive;
	/* Runs left running by an earlier process, waiting for a slot to resume */
	char (*resume_ids)[TD_ID_MAX];
	size_t nresume;
};

/* What one run thread learns from its agent. */
struct run_state {
	struct agent_run *ar;
	char session_id[TD_ID_MAX];
	char project_id[TD_ID_MAX];
	char *workspace;
	char **hidden;			/* what the run may not see (sandbox_message) */
	pid_t pid;
	int in_fd, out_fd, err_fd;
	struct buf line;		/* a partial line from stdout */
	struct buf output;		/* the output deltas so far */
	char phase[32];
	int64_t phase_at;
	struct run_usage usage;
	bool finished;			/* a finish line arrived */
	bool had_output;		/* an output line or a request for a person arrived */
	char status[16];
	char *final_output;
	char *error_code, *error_message;
	char *protocol_error;		/* why the agent was killed */
	cJSON *connectors;		/* the start message's connectors (secret.resolve) */
	bool runtime_unready;		/* the framework's CLI is not ready (start_message) */
	bool checkpoint_invalid;	/* the stored checkpoint is damaged (start_message) */
	bool cancel_sent;
	int64_t kill_at;		/* clock_mono_ms() deadline, 0 for none */
	/* resuming after a restart */
	bool external;			/* an external framework: it cannot resume */
	bool resuming;			/* the first person request may be the one in flight */
	int resumes;			/* how often the run has resumed */
	int64_t output_stored_at;	/* clock_mono_ms() of the last store of the output */
	bool output_dirty;		/* output arrived since */
	bool store_warned;		/* a failed store was logged */
	struct checkpoint_log *cplog;	/* version 2 checkpoints not yet stored */
};

/* agent-proc.c: the agent process. */
/* Writes one line to the agent's stdin; false once the agent is gone. */
bool agent_proc_send(struct run_state *rs, const cJSON *msg);
/* Starts the agent in its own process group; false with errno set. */
bool agent_proc_spawn(struct run_state *rs, const char *path, mode_t user_umask);
/* Reaps the agent, killing its group when it lingers; the wait status. */
int agent_proc_reap(struct run_state *rs);
/* Copies the agent's stderr into the log, a chunk at a time; false at end of file. */
bool agent_proc_read_stderr(struct run_state *rs);

/* agent-host.c: the agent's lines and requests. */
/* Splits what arrived on stdout into lines and handles each; false at end of file. */
bool agent_host_read_stdout(struct run_state *rs);
/* Answers the agent's request id with result (consumed). */
void agent_host_respond(struct run_state *rs, double id, cJSON *result);
/* Kills the agent for breaking the protocol; the first reason is kept. */
void agent_host_protocol_error(struct run_state *rs, const char *why);
/* Persists the phase, token counts and output so far of a running run. */
void agent_host_store_progress(struct run_state *rs);
/* run.progress for the current phase. */
void agent_host_emit_progress(struct run_state *rs, const char *message, bool liveness);

/* start-message.c: the start line. */
/* The start line of the run of rs, or NULL with *why (malloc'd) set. */
cJSON *start_message_build(struct supervisor *sv, struct run_state *rs, char **why);
/* Wipes the provider's API key in a start message before it is freed. */
void start_message_wipe(cJSON *msg);
/* Drops the history, then the project context, until the line fits. */
void start_message_fit(cJSON *msg);

/* supervisor-run.c: the run threads. */
/* Gives run id a thread (and an agent); with resume, a run left running by an earlier process. */
void run_thread_start(struct supervisor *sv, const char *id, bool resume, bool cancel);
/* Frees a list of queued responses.  NULL ok. */
void run_thread_responses_free(struct queued_response *q);

/* recover.c: start-up. */
/*
 * Settles the runs an earlier process left running; the ids to resume go to
 * *resume.  False with *err set.
 */
bool recover_runs(struct service *svc, char (**resume)[TD_ID_MAX], size_t *nresume, char **err);

#endif
