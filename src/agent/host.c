#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

/* A response that arrived and waits for its request. */
struct host_response {
	long id;
	cJSON *msg;
	struct host_response *next;
};

struct host {
	int in_fd;
	int out_fd;
	pthread_t reader;
	pthread_mutex_t mu;		/* guards everything below but the atomics */
	pthread_cond_t cond;
	pthread_mutex_t out_mu;		/* one line at a time on out_fd */
	cJSON *start;
	bool start_seen;
	bool input_done;		/* the reader stopped (end, error) */
	struct host_response *responses;
	long next_id;
	atomic_bool cancelled;
	atomic_bool protocol_error;
	atomic_bool output_broken;
	int cancel_pipe[2];
	int stop_pipe[2];
};

static void
host_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
		log_error("pipe: %s", strerror(errno));
		exit(1);
	}
}

/* Marks the run cancelled and wakes every waiter; safe to call twice. */
static void
host_cancel(struct host *h)
{
	if (atomic_exchange(&h->cancelled, true))
		return;
	if (write(h->cancel_pipe[1], "x", 1) < 0)
		log_warn("cancel pipe: %s", strerror(errno));
	pthread_mutex_lock(&h->mu);
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
}

static void
host_bad_input(struct host *h, const char *why)
{
	log_error("protocol error from the service: %s", why);
	atomic_store(&h->protocol_error, true);
	host_cancel(h);
}

static bool
host_response_valid(const cJSON *msg, long *id)
{
	const cJSON *jid = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");

	if (!cJSON_IsNumber(jid) || jid->valuedouble < 1 || jid->valuedouble > 1e15 ||
	    jid->valuedouble != (double)(long)jid->valuedouble)
		return false;
	if ((result == NULL) == (error == NULL))
		return false;
	if (error != NULL && !cJSON_IsObject(error))
		return false;
	*id = (long)jid->valuedouble;
	return true;
}

/* One complete line from the service.  False stops the reader. */
static bool
host_line(struct host *h, const char *line, size_t len)
{
	cJSON *msg = json_parse(line, len);
	const char *type = json_get_string(msg, "type");
	long id;

	if (!cJSON_IsObject(msg) || type == NULL) {
		cJSON_Delete(msg);
		host_bad_input(h, "a line that is not a JSON object with a type");
		return false;
	}
	if (strcmp(type, "start") == 0) {
		pthread_mutex_lock(&h->mu);
		if (h->start_seen) {
			pthread_mutex_unlock(&h->mu);
			cJSON_Delete(msg);
			host_bad_input(h, "a second start line");
			return false;
		}
		h->start = msg;
		h->start_seen = true;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->mu);
		return true;
	}
	if (strcmp(type, "cancel") == 0) {
		cJSON_Delete(msg);
		log_info("cancel received");
		host_cancel(h);
		return true;
	}
	if (strcmp(type, "response") == 0 && host_response_valid(msg, &id)) {
		struct host_response *r = xcalloc(1, sizeof *r);

		r->id = id;
		r->msg = msg;
		pthread_mutex_lock(&h->mu);
		r->next = h->responses;
		h->responses = r;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->mu);
		return true;
	}
	cJSON_Delete(msg);
	host_bad_input(h, "an unknown or malformed message");
	return false;
}

/* Reads lines until the end of input, a protocol error or host_close. */
static void *
host_reader(void *arg)
{
	struct host *h = arg;
	struct buf line;
	char chunk[65536];

	buf_init(&line, AGENT_LINE_MAX - 1);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = h->in_fd, .events = POLLIN },
			{ .fd = h->stop_pipe[0], .events = POLLIN },
		};
		ssize_t n;
		size_t off = 0;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		n = read(h->in_fd, chunk, sizeof chunk);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			bool started;

			pthread_mutex_lock(&h->mu);
			started = h->start_seen;
			pthread_mutex_unlock(&h->mu);
			if (line.len > 0)
				host_bad_input(h, "input ended inside a line");
			else if (!started)
				host_bad_input(h, "input ended before the start line");
			else {
				log_info("the service closed the agent's input: cancelling");
				host_cancel(h);
			}
			break;
		}
		while (off < (size_t)n) {
			char *nl = memchr(chunk + off, '\n', (size_t)n - off);
			size_t take = (nl ? (size_t)(nl - chunk) : (size_t)n) - off;

			if (!buf_append(&line, chunk + off, take)) {
				host_bad_input(h, "a line longer than 1 MiB");
				goto out;
			}
			if (nl == NULL)
				break;
			off += take + 1;
			if (!host_line(h, line.data ? line.data : "", line.len))
				goto out;
			buf_reset(&line);
		}
	}
out:
	buf_free(&line);
	pthread_mutex_lock(&h->mu);
	h->input_done = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

struct host *
host_open(int in_fd, int out_fd)
{
	struct host *h = xcalloc(1, sizeof *h);

	h->in_fd = in_fd;
	h->out_fd = out_fd;
	h->next_id = 1;
	atomic_init(&h->cancelled, false);
	atomic_init(&h->protocol_error, false);
	atomic_init(&h->output_broken, false);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cond, NULL);
	pthread_mutex_init(&h->out_mu, NULL);
	host_pipe(h->cancel_pipe);
	host_pipe(h->stop_pipe);
	if (pthread_create(&h->reader, NULL, host_reader, h) != 0) {
		log_error("cannot start the reader thread");
		exit(1);
	}
	return h;
}

void
host_close(struct host *h)
{
	struct host_response *r, *next;

	if (h == NULL)
		return;
	if (write(h->stop_pipe[1], "x", 1) < 0)
		log_warn("stop pipe: %s", strerror(errno));
	pthread_join(h->reader, NULL);
	for (r = h->responses; r; r = next) {
		next = r->next;
		cJSON_Delete(r->msg);
		free(r);
	}
	cJSON_Delete(h->start);
	close(h->cancel_pipe[0]);
	close(h->cancel_pipe[1]);
	close(h->stop_pipe[0]);
	close(h->stop_pipe[1]);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->out_mu);
	free(h);
}

const cJSON *
host_wait_start(struct host *h)
{
	const cJSON *start;

	pthread_mutex_lock(&h->mu);
	while (!h->start_seen && !h->input_done && !atomic_load(&h->protocol_error))
		pthread_cond_wait(&h->cond, &h->mu);
	start = atomic_load(&h->protocol_error) ? NULL : h->start;
	pthread_mutex_unlock(&h->mu);
	return start;
}

bool
host_cancelled(struct host *h)
{
	return atomic_load(&h->cancelled);
}

int
host_cancel_fd(struct host *h)
{
	return h->cancel_pipe[0];
}

void
host_set_request_base(struct host *h, long long base)
{
	pthread_mutex_lock(&h->mu);
	h->next_id = (long)base + 1;
	pthread_mutex_unlock(&h->mu);
}

bool
host_protocol_error(struct host *h)
{
	return atomic_load(&h->protocol_error);
}

int
host_sleep(struct host *h, long ms)
{
	int64_t end = clock_mono_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = h->cancel_pipe[0], .events = POLLIN };
		int64_t left = end - clock_mono_ms();

		if (host_cancelled(h))
			return AGENT_CANCELLED;
		if (left <= 0)
			return AGENT_OK;
		poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
	}
}

static void
host_write_all(struct host *h, const char *s, size_t len)
{
	while (len > 0 && !atomic_load(&h->output_broken)) {
		ssize_t n = write(h->out_fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_error("writing to the service: %s", strerror(errno));
			atomic_store(&h->output_broken, true);
			host_cancel(h);
			return;
		}
		s += n;
		len -= (size_t)n;
	}
}

bool
host_send(struct host *h, cJSON *msg)
{
	char *text = json_print(msg);
	size_t len = strlen(text);

	cJSON_Delete(msg);
	if (len + 1 > AGENT_LINE_MAX) {
		/* Callers bound what they send; this is a bug, not input. */
		log_error("dropped an outgoing line of %zu bytes", len);
		free(text);
		return false;
	}
	text[len] = '\n';
	pthread_mutex_lock(&h->out_mu);
	host_write_all(h, text, len + 1);
	pthread_mutex_unlock(&h->out_mu);
	free(text);
	return true;
}

static cJSON *
host_msg(const char *type)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "type", type);
	return msg;
}

void
host_progress(struct host *h, const char *phase, const char *message)
{
	cJSON *msg = host_msg("progress");

	cJSON_AddStringToObject(msg, "phase", phase);
	cJSON_AddStringToObject(msg, "message", message);
	host_send(h, msg);
}

void
host_progress_retry(struct host *h, const char *message, int attempt, int max_retries,
    const char *reason, long delay_ms)
{
	cJSON *msg = host_msg("progress");

	cJSON_AddStringToObject(msg, "phase", "retrying");
	cJSON_AddStringToObject(msg, "message", message);
	cJSON_AddNumberToObject(msg, "attempt", attempt);
	cJSON_AddNumberToObject(msg, "maxRetries", max_retries);
	cJSON_AddStringToObject(msg, "reason", reason);
	cJSON_AddNumberToObject(msg, "delayMs", (double)delay_ms);
	host_send(h, msg);
}

void
host_output(struct host *h, const char *delta, size_t len)
{
	/* Pieces of at most 64 KiB keep every line far below the limit. */
	while (len > 0) {
		size_t n = agent_utf8_cut(delta, len > 65536 ? 65536 : len);
		cJSON *msg = host_msg("output");
		char *piece;

		if (n == 0)
			n = len > 65536 ? 65536 : len;
		piece = xstrndup(delta, n);
		cJSON_AddStringToObject(msg, "delta", piece);
		free(piece);
		host_send(h, msg);
		delta += n;
		len -= n;
	}
}

/* The subagent whose loop runs on this thread (host_set_subagent), NULL for the run's own. */
static _Thread_local const char *host_subagent;

void
host_set_subagent(const char *id)
{
	host_subagent = id;
}

void
host_tool(struct host *h, const char *call_id, const char *name,
    const char *status, const char *summary)
{
	cJSON *msg = host_msg("tool");
	char *clean = agent_utf8_clean(summary);
	char *s = agent_utf8_prefix(clean, AGENT_SUMMARY_MAX);
	char *n = agent_utf8_prefix(name, 256);

	cJSON_AddStringToObject(msg, "callId", call_id);
	cJSON_AddStringToObject(msg, "name", n);
	cJSON_AddStringToObject(msg, "status", status);
	cJSON_AddStringToObject(msg, "summary", s);
	if (host_subagent != NULL)
		cJSON_AddStringToObject(msg, "subagent", host_subagent);
	free(clean);
	free(s);
	free(n);
	host_send(h, msg);
}

static void
host_usage_add(cJSON *to, const struct usage *u)
{
	cJSON_AddNumberToObject(to, "inputTokens", (double)u->input);
	cJSON_AddNumberToObject(to, "outputTokens", (double)u->output);
	cJSON_AddNumberToObject(to, "cacheReadTokens", (double)u->cache_read);
	cJSON_AddNumberToObject(to, "cacheWriteTokens", (double)u->cache_write);
}

void
host_usage(struct host *h, const struct usage *u)
{
	cJSON *msg = host_msg("usage");

	host_usage_add(msg, u);
	host_send(h, msg);
}

void
host_finish(struct host *h, const char *status, const char *output,
    const struct agent_error *err, const struct usage *u)
{
	cJSON *msg = host_msg("finish");

	cJSON_AddStringToObject(msg, "status", status);
	cJSON_AddStringToObject(msg, "output", output);
	if (strcmp(status, "failed") == 0) {
		cJSON *e = cJSON_AddObjectToObject(msg, "error");
		char *clean = agent_utf8_clean(err && err->message ? err->message :
		    "The run failed.");
		char *m = agent_utf8_prefix(clean, 4096);

		free(clean);

		cJSON_AddStringToObject(e, "code", err && err->code ? err->code : "replay_failed");
		cJSON_AddStringToObject(e, "message", m);
		free(m);
	}
	host_usage_add(cJSON_AddObjectToObject(msg, "usage"), u);
	host_send(h, msg);
}

/* Takes the response with id out of the list; called with mu held. */
static cJSON *
host_take_response(struct host *h, long id)
{
	for (struct host_response **rp = &h->responses; *rp; rp = &(*rp)->next) {
		struct host_response *r = *rp;
		cJSON *msg;

		if (r->id != id)
			continue;
		*rp = r->next;
		msg = r->msg;
		free(r);
		return msg;
	}
	return NULL;
}

long
host_request_send(struct host *h, const char *method, cJSON *params, struct agent_error *err)
{
	cJSON *msg = host_msg("request");
	long id;

	pthread_mutex_lock(&h->mu);
	id = h->next_id++;
	pthread_mutex_unlock(&h->mu);
	cJSON_AddNumberToObject(msg, "id", (double)id);
	cJSON_AddStringToObject(msg, "method", method);
	cJSON_AddItemToObject(msg, "params", params);
	if (!host_send(h, msg)) {
		/* No answer can come to a request that was not sent. */
		agent_error_set(err, "request_failed", "%s: the request is too large to send",
		    method);
		return 0;
	}
	return id;
}

int
host_request_wait(struct host *h, long id, int ms, cJSON **result, struct agent_error *err)
{
	cJSON *resp = NULL;
	const cJSON *e;
	struct timespec until;

	*result = NULL;
	if (ms >= 0) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ms / 1000;
		until.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&h->mu);
	while ((resp = host_take_response(h, id)) == NULL && !atomic_load(&h->cancelled)) {
		if (ms < 0)
			pthread_cond_wait(&h->cond, &h->mu);
		else if (pthread_cond_timedwait(&h->cond, &h->mu, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&h->mu);
	if (resp == NULL)
		return atomic_load(&h->cancelled) ? AGENT_CANCELLED : HOST_PENDING;
	e = cJSON_GetObjectItemCaseSensitive(resp, "error");
	if (e != NULL) {
		const char *m = json_get_string(e, "message");
		const char *c = json_get_string(e, "code");

		agent_error_set(err, "request_failed", "%s%s%s", c ? c : "error",
		    m ? ": " : "", m ? m : "");
		cJSON_Delete(resp);
		return AGENT_FAILED;
	}
	*result = cJSON_DetachItemFromObjectCaseSensitive(resp, "result");
	cJSON_Delete(resp);
	return AGENT_OK;
}

int
host_request(struct host *h, const char *method, cJSON *params,
    cJSON **result, struct agent_error *err)
{
	long id = host_request_send(h, method, params, err);

	*result = NULL;
	if (id == 0)
		return AGENT_FAILED;
	return host_request_wait(h, id, -1, result, err);
}
