/*
 * Connection exhaustion (issue 17, finding 4): thousands of connections that
 * never finish their headers or their body must not lock a well-behaved
 * client out, and a request whose headers or body trickle in is closed at its
 * deadline.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

TestSuite(flood, .timeout = 120);

#define FLOOD 2000

static void
raise_nofile(void)
{
	struct rlimit rl;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < FLOOD + 200)
		cr_skip_test("RLIMIT_NOFILE's hard limit is %llu, below %d", 
		    (unsigned long long)rl.rlim_max, FLOOD + 200);
}

/* A non-blocking connection to the service; -1 when the connect fails at once. */
static int
open_conn(const struct svc *s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	sa.sin_port = htons((uint16_t)s->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends text on a slow connection; false when the service has closed it. */
static bool
trickle(int fd, const char *text)
{
	return send(fd, text, strlen(text), MSG_NOSIGNAL) == (ssize_t)strlen(text);
}

/* True when the service closed fd (EOF or reset) within ms. */
static bool
closed_within(int fd, int ms)
{
	long deadline = mono_ms() + ms;
	char c[256];

	while (mono_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 50) == 1) {
			ssize_t n = recv(fd, c, sizeof c, 0);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				return true;
		}
	}
	return false;
}

/* The start of a slow connection of kind i % 3: nothing, a request line, headers and part of a body. */
static void
slow_start(const struct svc *s, int fd, int i)
{
	char text[512];

	if (fd < 0 || i % 3 == 0)
		return;
	if (i % 3 == 1) {
		trickle(fd, "GET /api/v1/projects HTTP/1.1\r\n");
		return;
	}
	snprintf(text, sizeof text, "POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: 1000\r\n\r\n{\"name\":", s->port, s->token);
	trickle(fd, text);
}

/* Keeps a slow connection of kind i % 3 going; false when the service closed it. */
static bool
slow_feed(int fd, int i)
{
	char c;

	if (i % 3 == 0) {
		ssize_t n = recv(fd, &c, 1, 0);
		return n < 0 && errno == EAGAIN;
	}
	return trickle(fd, i % 3 == 1 ? "X-Slow: 1\r\n" : " ");
}

/* One authenticated GET; asserts a 200 within 1 s. */
static void
answers_within_1s(const struct svc *s, const char *when)
{
	long t0 = mono_ms();
	struct http_resp r = http_req(s, "GET", "/api/v1/projects", NULL, NULL, true);
	long took = mono_ms() - t0;

	cr_assert_eq(r.status, 200, "%s: GET /api/v1/projects got %ld after %ld ms", when,
	    r.status, took);
	cr_assert_lt(took, 1000, "%s: GET /api/v1/projects took %ld ms", when, took);
	http_resp_free(&r);
}

Test(flood, slow_connections_leave_room_for_a_client)
{
	struct svc s;
	static int fds[FLOOD];
	int opened = 0;

	raise_nofile();
	svc_start(&s);
	/*
	 * A third send nothing; a third start a request and send one header line
	 * at a time; a third send whole headers and then their body a byte at a time.
	 */
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = open_conn(&s);
		if (fds[i] >= 0)
			opened++;
		slow_start(&s, fds[i], i);
	}
	cr_assert_eq(opened, FLOOD);
	answers_within_1s(&s, "after 2000 slow connections");
	/* The attacker keeps the slow ones alive and replaces those the service closed. */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < FLOOD; i++) {
			if (fds[i] >= 0 && slow_feed(fds[i], i))
				continue;
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = open_conn(&s);
			slow_start(&s, fds[i], i);
		}
		answers_within_1s(&s, "while the flood goes on");
	}
	for (int i = 0; i < FLOOD; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* After the flood, the service is as before. */
	answers_within_1s(&s, "after the flood");
	struct http_resp r = http_req(&s, "POST", "/api/v1/projects", "{\"name\":\"after\"}",
	    NULL, true);
	cr_assert_eq(r.status, 201, "create after the flood: %ld %s", r.status, r.body);
	http_resp_free(&r);
	svc_destroy(&s);
}

Test(flood, header_deadline)
{
	struct svc s;
	int quiet, slow;
	long t0;

	svc_start(&s);
	quiet = open_conn(&s);
	slow = open_conn(&s);
	cr_assert(quiet >= 0 && slow >= 0);
	t0 = mono_ms();
	cr_assert(trickle(slow, "GET /api/v1/projects HTTP/1.1\r\n"));
	/* One header line a second: never idle for long, but never done either. */
	bool slow_closed = false;
	while (mono_ms() - t0 < 15000 && !slow_closed) {
		slow_closed = closed_within(slow, 1000) || !trickle(slow, "X-Slow: 1\r\n");
	}
	long took = mono_ms() - t0;
	cr_assert(slow_closed, "a request whose headers trickle in for 15 s is still open");
	cr_assert_geq(took, 4000, "closed after %ld ms, before the 5 s deadline", took);
	cr_assert(closed_within(quiet, 2000), "a connection that sent nothing is still open");
	close(quiet);
	close(slow);
	answers_within_1s(&s, "after the deadline");
	svc_destroy(&s);
}

Test(flood, body_deadline)
{
	struct svc s;
	bool closed = false;
	long t0, took;
	int fd;

	svc_start(&s);
	fd = open_conn(&s);
	cr_assert_geq(fd, 0);
	t0 = mono_ms();
	slow_start(&s, fd, 2);
	/* Headers at once, then the body a byte a second: it must be done within 10 s. */
	while (mono_ms() - t0 < 20000 && !closed)
		closed = closed_within(fd, 1000) || !slow_feed(fd, 2);
	took = mono_ms() - t0;
	cr_assert(closed, "a body that trickles in for 20 s is still being read");
	cr_assert_geq(took, 9000, "closed after %ld ms, before the 10 s body deadline", took);
	close(fd);
	answers_within_1s(&s, "after the body deadline");
	svc_destroy(&s);
}

#define BURST 1000

/* What a burst connection has got back, and whether it is done. */
struct burst_conn {
	int fd;
	bool sent, done;
	char answer[4096];	/* its beginning */
	size_t got;
};

/*
 * A burst of complete requests at once: each one gets an answer, 200 or 503
 * with Retry-After, never a connection closed without a byte.
 */
Test(flood, burst_of_complete_requests_all_answered)
{
	struct svc s;
	static struct burst_conn c[BURST];
	static struct pollfd p[BURST];
	char req[512];
	int answered = 0, unanswered = 0, retry = 0, pending = BURST;
	long deadline;

	raise_nofile();
	svc_start(&s);
	snprintf(req, sizeof req, "GET /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", s.port, s.token);
	/* Many clients connect at once, then each sends its whole request. */
	for (int i = 0; i < BURST; i++) {
		c[i].fd = open_conn(&s);
		cr_assert_geq(c[i].fd, 0, "connection %d could not be opened", i);
	}
	for (int i = 0; i < BURST; i++)
		c[i].sent = trickle(c[i].fd, req);
	deadline = mono_ms() + 60000;
	while (pending > 0 && mono_ms() < deadline) {
		for (int i = 0; i < BURST; i++) {
			p[i].fd = c[i].done ? -1 : c[i].fd;
			p[i].events = c[i].sent ? POLLIN : POLLOUT;
			p[i].revents = 0;
		}
		if (poll(p, BURST, 200) <= 0)
			continue;
		for (int i = 0; i < BURST; i++) {
			ssize_t n;

			if (p[i].revents == 0)
				continue;
			if (!c[i].sent) {
				c[i].sent = trickle(c[i].fd, req);
				if (!c[i].sent) {
					c[i].done = true;
					pending--;
					unanswered++;
				}
				continue;
			}
			n = recv(c[i].fd, c[i].answer + c[i].got,
			    sizeof c[i].answer - 1 - c[i].got, 0);
			if (n > 0) {
				c[i].got += (size_t)n;
				if (c[i].got < sizeof c[i].answer - 1)
					continue;
			} else if (n < 0 && errno == EAGAIN) {
				continue;
			}
			/* The service closed it (Connection: close): judge what came. */
			c[i].done = true;
			pending--;
			if (strncmp(c[i].answer, "HTTP/1.1 200", 12) == 0)
				answered++;
			else if (strncmp(c[i].answer, "HTTP/1.1 503", 12) == 0 &&
			    strcasestr(c[i].answer, "\r\nRetry-After: ") != NULL)
				retry++;
			else
				unanswered++;
		}
	}
	for (int i = 0; i < BURST; i++)
		close(c[i].fd);
	cr_assert_eq(unanswered + pending, 0, "%d of %d complete requests got no answer (%d "
	    "still waiting after 60 s); %d got 200, %d got 503", unanswered + pending, BURST,
	    pending, answered, retry);
	/* Nothing was lost on the way: the service answers as before. */
	answers_within_1s(&s, "after the burst");
	svc_destroy(&s);
}
