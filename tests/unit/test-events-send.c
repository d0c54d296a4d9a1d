/*
 * events.c on its own, with a fake connection: a subscriber that waits for
 * events gets each frame written straight by the publisher, and whatever the
 * publisher could not write (a full or failed socket) is sent by the server's
 * reads from where it stopped, so the client sees every byte once, in order.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "events.h"
#include "log.h"
#include "service.h"

/* The client's side of one subscriber: every byte that reached it. */
struct conn {
	struct buf got;
	size_t budget;		/* bytes the socket still takes */
	int fail;		/* errno of every send, or 0 */
	int sends, resumes;
	bool suspended;
};

static void
conn_suspend(void *c)
{
	((struct conn *)c)->suspended = true;
}

static void
conn_resume(void *c)
{
	struct conn *cn = c;

	cn->resumes++;
	cn->suspended = false;
}

static int
conn_fd(void *c)
{
	(void)c;
	return -1;
}

static ssize_t
conn_send(void *c, const char *buf, size_t len)
{
	struct conn *cn = c;

	cn->sends++;
	if (cn->fail != 0) {
		errno = cn->fail;
		return -1;
	}
	if (cn->budget == 0) {
		errno = EAGAIN;
		return -1;
	}
	if (len > cn->budget)
		len = cn->budget;
	cn->budget -= len;
	buf_append(&cn->got, buf, len);
	return (ssize_t)len;
}

static const struct events_conn_ops ops = {
	.suspend = conn_suspend,
	.resume = conn_resume,
	.fd = conn_fd,
	.send = conn_send,
};

static struct service svc;
static struct events *ev;
static struct events_sub *sub;
static struct conn cn;

/* What the server does once resumed: reads until the subscriber suspends. */
static void
server_reads(void)
{
	char buf[4096];
	ssize_t n;

	while ((n = events_sub_read(sub, &cn, buf, sizeof buf)) > 0)
		buf_append(&cn.got, buf, (size_t)n);
	cr_assert_eq(n, 0, "the stream ended");
	cr_assert(cn.suspended);
}

static void
setup(void)
{
	FILE *devnull = fopen("/dev/null", "w");

	log_init("test-events-send", devnull, LOG_LEVEL_ERROR);
	memset(&svc, 0, sizeof svc);
	snprintf(svc.stream_id, sizeof svc.stream_id, "%s", "0123456789abcdef0123456789abcdef");
	ev = events_new(&svc);
	memset(&cn, 0, sizeof cn);
	buf_init(&cn.got, 0);
	cn.budget = SIZE_MAX;
	sub = events_subscribe(ev, &(struct events_filter){ 0 }, NULL, &ops);
	cr_assert_not_null(sub);
	server_reads();		/* the hello */
	cr_assert(strstr(cn.got.data, "stream.hello") != NULL);
	buf_reset(&cn.got);
}

static void
teardown(void)
{
	events_shutdown(ev);
	events_sub_free(sub);
	events_free(ev);
	buf_free(&cn.got);
}

TestSuite(events_send, .init = setup, .fini = teardown, .timeout = 30);

/* An event with a payload of n 'x's, for a frame longer than a budget. */
static void
emit(const char *type, size_t n)
{
	cJSON *data = cJSON_CreateObject();
	char *s = malloc(n + 1);

	memset(s, 'x', n);
	s[n] = '\0';
	cJSON_AddStringToObject(data, "text", s);
	free(s);
	events_emit(ev, type, "prj_1", NULL, NULL, data);
}

/* The seq of every frame in text, in order; false on a malformed frame. */
static bool
frames(const char *text, long long *seqs, int max, int *n)
{
	const char *p = text;

	*n = 0;
	while (*p != '\0') {
		const char *end = strstr(p, "\n\n");
		const char *data = strstr(p, "\ndata: {\"seq\":");

		if (end == NULL || data == NULL || data > end || *n == max)
			return false;
		seqs[(*n)++] = atoll(data + 14);
		p = end + 2;
	}
	return true;
}

Test(events_send, a_waiting_subscriber_gets_each_frame_from_the_publisher)
{
	long long seqs[8];
	int n;

	for (int i = 0; i < 3; i++)
		emit("project.updated", 10);
	cr_expect_eq(cn.sends, 3);
	cr_expect_eq(cn.resumes, 0, "nothing for the server to do");
	cr_expect(cn.suspended, "the connection still waits");
	cr_assert(frames(cn.got.data, seqs, 8, &n), "%s", cn.got.data);
	cr_assert_eq(n, 3, "%s", cn.got.data);
	cr_expect_eq(seqs[1], seqs[0] + 1);
	cr_expect_eq(seqs[2], seqs[1] + 1);
}

Test(events_send, a_full_socket_leaves_the_rest_of_the_frame_to_the_server)
{
	long long seqs[8];
	int n;

	cn.budget = 100;	/* the frame is about 300 bytes */
	emit("project.updated", 200);
	cr_expect_eq(cn.got.len, 100, "the publisher wrote what the socket took");
	cr_expect_eq(cn.resumes, 1, "then handed the connection back");
	/* More events before the server runs: queued behind the partial frame. */
	emit("project.updated", 200);
	cr_expect_eq(cn.sends, 1, "a resumed connection is the server's");
	cn.budget = SIZE_MAX;
	server_reads();
	cr_assert(frames(cn.got.data, seqs, 8, &n), "%s", cn.got.data);
	cr_assert_eq(n, 2, "%s", cn.got.data);
	cr_expect_eq(seqs[1], seqs[0] + 1);
	/* Waiting again: the next one goes straight. */
	buf_reset(&cn.got);
	emit("project.updated", 10);
	cr_expect_eq(cn.sends, 2);
	cr_expect_eq(cn.resumes, 1);
	cr_assert(frames(cn.got.data, seqs, 8, &n), "%s", cn.got.data);
	cr_expect_eq(n, 1);
}

Test(events_send, a_failed_send_loses_nothing)
{
	long long seqs[8];
	int n;

	cn.fail = EPIPE;
	emit("project.updated", 10);
	cr_expect_eq(cn.got.len, 0);
	cr_expect_eq(cn.resumes, 1, "the server sees the failure itself");
	cn.fail = 0;
	server_reads();
	cr_assert(frames(cn.got.data, seqs, 8, &n), "%s", cn.got.data);
	cr_expect_eq(n, 1, "the frame is still there for the server: %s", cn.got.data);
}

Test(events_send, after_shutdown_the_server_ends_the_stream)
{
	char buf[256];

	events_shutdown(ev);
	cr_expect_eq(cn.resumes, 1, "shutdown resumes a waiting connection");
	emit("project.updated", 10);
	cr_expect_eq(cn.sends, 0, "nothing is written after shutdown");
	cr_expect_eq(events_sub_read(sub, &cn, buf, sizeof buf), EVENTS_SUB_END);
}
