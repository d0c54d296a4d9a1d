/*
 * The run threads (supervisor-int.h): one per executing run.  It builds the
 * start line, spawns the agent, talks to it until its stdout closes, reaps
 * it and finishes the run (runs_finish).  That thread is the only writer of
 * the agent's stdin; others reach it through a wake-up eventfd.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "changes.h"
#include "checkpoints.h"
#include "json.h"
#include "log.h"
#include "runs.h"
#include "sandbox.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "supervisor-int.h"
#include "timeutil.h"
#include "xalloc.h"

/* Frees a list of queued responses.  NULL ok. */
void
run_thread_responses_free(struct queued_response *q)
{
	while (q != NULL) {
		struct queued_response *next = q->next;
		cJSON_Delete(q->result);
		free(q);
		q = next;
	}
}

/*
 * Sends the queued responses, then cancel when asked, and kills the group
 * once the grace period is over.
 */
static void
run_thread_check_cancel(struct run_state *rs)
{
	struct supervisor *sv = rs->ar->sv;
	struct queued_response *q;
	bool cancel, stop;
	uint64_t n;

	if (read(rs->ar->wake_fd, &n, sizeof n) < 0 && errno != EAGAIN)
		log_warn("run %s: wake-up read failed", rs->ar->id);
	pthread_mutex_lock(&sv->mu);
	cancel = rs->ar->cancel_requested;
	stop = rs->ar->stop_requested;
	q = rs->ar->responses;
	rs->ar->responses = NULL;
	pthread_mutex_unlock(&sv->mu);
	for (struct queued_response *r = q; r != NULL; r = r->next) {
		agent_host_respond(rs, (double)r->request_id, r->result);
		r->result = NULL;
	}
	run_thread_responses_free(q);
	/*
	 * A service stop ends the agent of a run that can resume at once;
	 * the run stays running and resumes at the next start.
	 */
	if (stop && !cancel && !rs->external && !rs->cancel_sent && rs->pid > 0) {
		log_info("run %s: the service stops; the run resumes at the next start",
		    rs->ar->id);
		kill(-rs->pid, SIGKILL);
		rs->cancel_sent = true;
		return;
	}
	if ((cancel || stop) && !rs->cancel_sent) {
		cJSON *msg = cJSON_CreateObject();

		cJSON_AddStringToObject(msg, "type", "cancel");
		agent_proc_send(rs, msg);
		cJSON_Delete(msg);
		rs->cancel_sent = true;
		rs->kill_at = clock_mono_ms() + (stop ? STOP_GRACE_MS : CANCEL_GRACE_MS);
	}
}

/* Talks to the agent until its stdout closes. */
static void
run_thread_converse(struct run_state *rs)
{
	struct pollfd fds[3] = {
		{ .fd = rs->out_fd, .events = POLLIN },
		{ .fd = rs->err_fd, .events = POLLIN },
		{ .fd = rs->ar->wake_fd, .events = POLLIN },
	};
	int64_t next_liveness = clock_mono_ms() + LIVENESS_INTERVAL_MS;

	run_thread_check_cancel(rs);
	while (fds[0].fd >= 0) {
		int timeout = -1;

		if (!rs->had_output) {
			int64_t left = next_liveness - clock_mono_ms();
			if (left <= 0) {
				agent_host_emit_progress(rs, "waiting for the provider", true);
				next_liveness += LIVENESS_INTERVAL_MS;
				continue;
			}
			timeout = (int)left;
		}
		/* Output that arrived is stored within OUTPUT_STORE_MS. */
		if (rs->output_dirty) {
			int64_t left = rs->output_stored_at + OUTPUT_STORE_MS - clock_mono_ms();
			if (left <= 0) {
				agent_host_store_progress(rs);
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (rs->kill_at != 0) {
			int64_t left = rs->kill_at - clock_mono_ms();
			if (left <= 0) {
				log_warn("run %s: the agent did not stop in time; killing it",
				    rs->ar->id);
				kill(-rs->pid, SIGKILL);
				rs->kill_at = 0;
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (poll(fds, 3, timeout) < 0 && errno != EINTR)
			break;
		if (fds[2].revents & POLLIN)
			run_thread_check_cancel(rs);
		if ((fds[1].revents & (POLLIN | POLLHUP)) && !agent_proc_read_stderr(rs))
			fds[1].fd = -1;
		if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !agent_host_read_stdout(rs))
			fds[0].fd = -1;
	}
	if (rs->line.len > 0 && rs->protocol_error == NULL)
		agent_host_protocol_error(rs, "an unterminated last line");
}

/* The outcome of a run once its agent is gone. */
static void
run_thread_outcome(struct run_state *rs, int wait_status, const char **status, const char **code,
    char **message)
{
	struct supervisor *sv = rs->ar->sv;
	bool cancel, stop;

	pthread_mutex_lock(&sv->mu);
	cancel = rs->ar->cancel_requested;
	stop = rs->ar->stop_requested;
	pthread_mutex_unlock(&sv->mu);
	*code = NULL;
	*message = NULL;
	if (rs->finished && strcmp(rs->status, "completed") == 0 && rs->protocol_error == NULL) {
		*status = "completed";
	} else if (cancel) {
		*status = "cancelled";
	} else if (stop) {
		*status = "failed";
		*code = "service_stopped";
		*message = xstrdup("The service stopped while the run was executing.");
	} else if (rs->protocol_error != NULL) {
		*status = "failed";
		*code = "runtime_protocol_error";
		*message = xasprintf("The agent runtime sent %s.", rs->protocol_error);
	} else if (rs->finished) {
		*status = rs->status;
		if (strcmp(rs->status, "failed") == 0) {
			*code = rs->error_code ? rs->error_code : "runtime_error";
			*message = xstrdup(rs->error_message ? rs->error_message :
			    "The agent runtime reported a failure.");
		}
	} else {
		*status = "failed";
		*code = "runtime_crashed";
		if (WIFSIGNALED(wait_status))
			*message = xasprintf("The agent runtime was killed by signal %d (%s).",
			    WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
		else
			*message = xasprintf("The agent runtime exited with status %d without "
			    "finishing the run.", WEXITSTATUS(wait_status));
	}
}

/*
 * The final state is retried until it is stored (a full
 * disk), with a growing wait, logged once.  The run holds its slot meanwhile
 * and stays cancellable: a cancel that arrives first makes it end cancelled.
 * A service stop gives up: the run is settled at the next start.
 */
static void
run_thread_finalize(struct agent_run *ar, const char *session_id, const char *status,
    const char *output, const char *code, const char *message, const struct run_usage *usage)
{
	struct supervisor *sv = ar->sv;
	int wait_ms = FINALIZE_RETRY_MIN_MS;
	bool logged = false;

	for (;;) {
		bool cancel, stop;
		struct pollfd pfd = { .fd = ar->wake_fd, .events = POLLIN };
		uint64_t n;

		pthread_mutex_lock(&sv->mu);
		cancel = ar->cancel_requested;
		stop = ar->stop_requested;
		pthread_mutex_unlock(&sv->mu);
		if (logged && cancel && strcmp(status, "cancelled") != 0) {
			log_info("run %s: cancelled while its final state waited to be stored",
			    ar->id);
			status = "cancelled";
			code = message = NULL;
		}
		struct run_end end = { .id = ar->id, .session_id = session_id, .status = status,
			.output = output, .code = code, .message = message,
			.usage = *usage };

		if (runs_finish(sv->svc, &end)) {
			if (logged)
				log_info("run %s: its final state %s is stored after all", ar->id,
				    status);
			return;
		}
		if (!logged)
			log_error("run %s: cannot store its final state %s; retrying until it is "
			    "stored", ar->id, status);
		logged = true;
		if (stop) {
			log_warn("run %s: the service stops before its final state is stored; the "
			    "next start settles it", ar->id);
			return;
		}
		if (poll(&pfd, 1, wait_ms) > 0 && read(ar->wake_fd, &n, sizeof n) < 0 &&
		    errno != EAGAIN)
			log_warn("run %s: wake-up read failed", ar->id);
		wait_ms = wait_ms * 2 > FINALIZE_RETRY_MAX_MS ? FINALIZE_RETRY_MAX_MS : wait_ms * 2;
	}
}

static void
run_thread_state_free(struct run_state *rs)
{
	buf_free(&rs->line);
	buf_free(&rs->output);
	checkpoint_log_free(rs->cplog);
	free(rs->workspace);
	sandbox_hidden_free(rs->hidden);
	free(rs->final_output);
	free(rs->error_code);
	free(rs->error_message);
	free(rs->protocol_error);
	cJSON_Delete(rs->connectors);
}

/* Removes ar from the active list, frees it and lets the scheduler use the slot. */
static void
run_thread_done(struct agent_run *ar)
{
	struct supervisor *sv = ar->sv;

	pthread_mutex_lock(&sv->mu);
	for (struct agent_run **pp = &sv->runs; *pp; pp = &(*pp)->next) {
		if (*pp == ar) {
			*pp = ar->next;
			break;
		}
	}
	sv->nactive--;
	sv->kicked = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->mu);
	run_thread_responses_free(ar->responses);
	close(ar->wake_fd);
	free(ar);
}

/* A cancel asked of this run: through the supervisor or stored before a restart. */
static bool
run_thread_cancel_asked(struct agent_run *ar)
{
	struct store *st = ar->sv->svc->store;
	struct run run;
	bool cancel;

	pthread_mutex_lock(&ar->sv->mu);
	cancel = ar->cancel_requested;
	pthread_mutex_unlock(&ar->sv->mu);
	if (cancel)
		return true;
	store_lock(st);
	cancel = runs_get(st, ar->id, &run) && run.cancel_requested;
	runs_clear(&run);
	store_unlock(st);
	return cancel;
}

static void *
run_thread(void *arg)
{
	struct agent_run *ar = arg;
	struct supervisor *sv = ar->sv;
	struct run_state rs = { .ar = ar, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	const char *status, *code;
	char *message = NULL, *why = NULL;
	cJSON *start;
	int wait_status = 0;
	bool stop, stays = false;

	buf_init(&rs.line, LINE_MAX_BYTES);
	buf_init(&rs.output, OUTPUT_MAX_BYTES);
	rs.resuming = ar->resume;
	start = start_message_build(sv, &rs, &why);
	if (start == NULL) {
		run_thread_finalize(ar, NULL, "failed", "", rs.runtime_unready ? "runtime_missing" :
		    rs.checkpoint_invalid ? "checkpoint_invalid" : "runtime_error", why,
		    &(struct run_usage){ 0 });
		free(why);
		goto out;
	}
	/* Cancelled between a restart and its resume: no agent. */
	if (ar->resume && run_thread_cancel_asked(ar)) {
		start_message_wipe(start);
		cJSON_Delete(start);
		run_thread_finalize(ar, rs.session_id, "cancelled", rs.output.data, NULL, NULL,
		    &(struct run_usage){ 0 });
		goto out;
	}
	start_message_fit(start);
	/* The workspace before the agent touches it (a resumed run keeps its first). */
	changes_snapshot(sv->svc->changes, CHANGES_START, ar->id, rs.session_id, rs.workspace,
	    rs.hidden, true);
	if (access(sv->svc->agent_path, X_OK) != 0 || !agent_proc_spawn(&rs, sv->svc->agent_path, sv->svc->user_umask)) {
		start_message_wipe(start);
		cJSON_Delete(start);
		log_error("run %s: cannot start the agent runtime %s: %s", ar->id,
		    sv->svc->agent_path, strerror(errno));
		run_thread_finalize(ar, rs.session_id, "failed", "", "runtime_missing",
		    "The agent runtime taskdeck-agent could not be started; run "
		    "`taskdeck doctor`.", &(struct run_usage){ 0 });
		goto out;
	}
	log_info("run %s %s (agent pid %ld)", ar->id, ar->resume ? "resumed" : "started",
	    (long)rs.pid);
	if (ar->resume) {
		char *note = xasprintf("Resumed after a service restart (%d of %d), from %s.",
		    rs.resumes, settings_resume_limit(sv->svc->settings),
		    cJSON_GetObjectItem(start, "checkpoint") ? "its last checkpoint" :
		    "the beginning: no step had completed");

		snprintf(rs.phase, sizeof rs.phase, "resumed");
		rs.phase_at = clock_mono_ms();
		agent_host_store_progress(&rs);
		agent_host_emit_progress(&rs, note, false);
		free(note);
	}
	agent_proc_send(&rs, start);
	start_message_wipe(start);
	cJSON_Delete(start);
	run_thread_converse(&rs);
	close(rs.out_fd);
	close(rs.err_fd);
	close(rs.in_fd);
	rs.in_fd = -1;
	wait_status = agent_proc_reap(&rs);
	pthread_mutex_lock(&sv->mu);
	stop = ar->stop_requested && !ar->cancel_requested;
	pthread_mutex_unlock(&sv->mu);
	if (stop && !rs.external && !(rs.finished && strcmp(rs.status, "completed") == 0 &&
	    rs.protocol_error == NULL)) {
		/* It stays running, with its output, and resumes at the next start. */
		agent_host_store_progress(&rs);
		stays = true;
		goto out;
	}
	run_thread_outcome(&rs, wait_status, &status, &code, &message);
	changes_snapshot(sv->svc->changes, CHANGES_END, ar->id, rs.session_id, rs.workspace,
	    rs.hidden, true);
	run_thread_finalize(ar, rs.session_id, status,
	    rs.final_output ? rs.final_output : rs.output.data, code, message,
	    &rs.usage);
	free(message);
out:
	run_thread_state_free(&rs);
	/* Before the slot is given back, so that a stopping supervisor waits for it. */
	if (!stays && sv->svc->run_finished != NULL)
		sv->svc->run_finished(sv->svc, ar->id);
	run_thread_done(ar);
	return NULL;
}

/* Gives run id a thread (and an agent); with resume, a run left running by an earlier process. */
void
run_thread_start(struct supervisor *sv, const char *id, bool resume, bool cancel)
{
	struct agent_run *ar = xcalloc(1, sizeof *ar);
	pthread_attr_t attr;
	pthread_t t;

	ar->sv = sv;
	snprintf(ar->id, sizeof ar->id, "%s", id);
	ar->resume = resume;
	ar->cancel_requested = cancel;
	ar->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_lock(&sv->mu);
	ar->next = sv->runs;
	sv->runs = ar;
	sv->nactive++;
	pthread_mutex_unlock(&sv->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (ar->wake_fd < 0 || pthread_create(&t, &attr, run_thread, ar) != 0) {
		log_error("run %s: cannot start its thread", ar->id);
		abort();
	}
	pthread_attr_destroy(&attr);
}
