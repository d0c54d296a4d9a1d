/*
 * bench/flood: how long a well-behaved client waits for GET /api/v1/projects
 * while SLOW connections sit on the service without finishing their headers
 * (half send nothing, half one header line now and then), beside the same
 * requests with no flood, in the same run.  Each request is a fresh
 * connection, as a new client's would be; every tenth request the slow ones
 * the service closed are opened again (an attacker keeps up the pressure).
 * Then the same GETs a second after the flood ended.  Prints key=value lines.
 *
 *   flood-bench PORT TOKEN SLOW SAMPLES
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
open_conn(int nonblock)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One GET on a new connection; its time in ms, or -1 when it got no 200 within 10 s. */
static double
one_get(const char *token)
{
	char req[512], resp[4096];
	double t0 = now_ms();
	int fd = open_conn(0), n, got = 0;
	struct timeval tv = { 10, 0 };

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	n = snprintf(req, sizeof req, "GET /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", port, token);
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		close(fd);
		return -1;
	}
	while ((n = (int)recv(fd, resp + got, sizeof resp - 1 - (size_t)got, 0)) > 0 &&
	    got + n < (int)sizeof resp - 1)
		got += n;
	if (n > 0)
		got += n;
	close(fd);
	resp[got] = '\0';
	return strncmp(resp, "HTTP/1.1 200", 12) == 0 ? now_ms() - t0 : -1;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Keeps the slow connections open: reopens the ones the service closed, feeds the others. */
static void
tend(int *fds, int slow, long *reopened)
{
	for (int i = 0; i < slow; i++) {
		char c;

		if (fds[i] >= 0) {
			ssize_t n = recv(fds[i], &c, 1, 0);
			if (n < 0 && errno == EAGAIN && (i % 2 == 0 ||
			    send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) == 11))
				continue;
			close(fds[i]);
			(*reopened)++;
		}
		fds[i] = open_conn(1);
		if (fds[i] >= 0 && i % 2 == 1)
			(void)send(fds[i], "GET /api/v1/projects HTTP/1.1\r\n", 31, MSG_NOSIGNAL);
	}
}

static void
measure(const char *name, const char *token, int samples, int *fds, int slow)
{
	double *t = calloc((size_t)samples, sizeof *t);
	int failed = 0, ok = 0;
	long reopened = 0;

	for (int i = 0; i < samples; i++) {
		double ms;

		if (slow > 0 && i % 10 == 0)
			tend(fds, slow, &reopened);
		ms = one_get(token);
		if (ms < 0)
			failed++;
		else
			t[ok++] = ms;
	}
	qsort(t, (size_t)ok, sizeof *t, cmp);
	printf("%s_samples=%d\n%s_failed=%d\n", name, samples, name, failed);
	printf("%s_p50_ms=%.3f\n%s_p99_ms=%.3f\n%s_max_ms=%.3f\n", name,
	    ok ? t[ok / 2] : -1.0, name, ok ? t[(ok * 99) / 100 < ok ? (ok * 99) / 100 : ok - 1] : -1.0,
	    name, ok ? t[ok - 1] : -1.0);
	if (slow > 0)
		printf("%s_slow_reopened=%ld\n", name, reopened);
	free(t);
}

int
main(int argc, char **argv)
{
	struct rlimit rl;
	int slow, samples, *fds;

	if (argc != 5) {
		fprintf(stderr, "usage: flood-bench PORT TOKEN SLOW SAMPLES\n");
		return 2;
	}
	port = atoi(argv[1]);
	slow = atoi(argv[3]);
	samples = atoi(argv[4]);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (port <= 0 || slow < 1 || samples < 1 || rl.rlim_cur < (rlim_t)slow + 64) {
		fprintf(stderr, "flood-bench: bad arguments, or ulimit -n below %d\n", slow + 64);
		return 2;
	}
	fds = malloc((size_t)slow * sizeof *fds);
	for (int i = 0; i < slow; i++)
		fds[i] = -1;
	printf("slow=%d\n", slow);
	measure("quiet", argv[2], samples, NULL, 0);
	tend(fds, slow, &(long){ 0 });
	measure("flood", argv[2], samples, fds, slow);
	for (int i = 0; i < slow; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	sleep(1);
	measure("after", argv[2], samples, NULL, 0);
	free(fds);
	return 0;
}
