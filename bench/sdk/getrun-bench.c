/*
 * getrun-bench: N sequential td_get_run calls of one run through one client
 * (a kept-alive connection): the median and p99, for bench/sdk/run, which
 * sets them beside @taskdeck/sdk's getRun.  Finds the service like the CLI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "taskdeck.h"

static double
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 2000;
	struct td_client *c;
	struct td_error err;
	struct td_run *r;
	double *t;

	if (argc < 2 || n < 1 || n > 1000000) {
		fprintf(stderr, "usage: getrun-bench RUN_ID [N]\n");
		return 2;
	}
	if (td_connect(&c, NULL, &err) != TD_OK) {
		fprintf(stderr, "getrun-bench: %s\n", err.message);
		return 1;
	}
	t = calloc((size_t)n, sizeof *t);
	for (long i = -200; i < n; i++) {
		double t0 = mono_us();

		if (td_get_run(c, argv[1], NULL, &r, &err) != TD_OK) {
			fprintf(stderr, "getrun-bench: %s: %s\n", err.code_name, err.message);
			return 1;
		}
		td_run_free(r);
		if (i >= 0)
			t[i] = mono_us() - t0;
	}
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("getrun_calls=%ld\ngetrun_median_us=%.1f\ngetrun_p99_us=%.1f\n", n,
	    t[(n - 1) / 2], t[(size_t)(0.99 * (double)(n - 1) + 0.5)]);
	free(t);
	td_client_free(c);
	return 0;
}
