/*
 * bench/sandbox: what opening a file the model names costs, the way the file tools
 * did it before (the path joined and folded, realpath(), a prefix check, open() with
 * O_NOFOLLOW) against wsfile (openat2 beneath the workspace's descriptor, the
 * hidden set checked on the opened objects), interleaved in the same run.  Each
 * operation opens, fstats, reads (at most 4 KiB) and closes WORKSPACE/PATH; "write"
 * replaces WORKSPACE/PATH.w with 64 bytes (before: O_TRUNC in place; now: a new file
 * renamed over it).  The hidden set is the real one (sandbox_hidden_paths) plus
 * SESSIONS directories of other sessions.
 *
 * usage: filetools-bench WORKSPACE PATH REPS SESSIONS
 * prints one line per mode: mode median_us p90_us min_us
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"
#include "sandbox.h"
#include "wsfile.h"
#include "xalloc.h"

enum { READ_BEFORE, READ_WSFILE, WRITE_BEFORE, WRITE_WSFILE, ROOT_OPEN, MODES };
static const char *const mode_names[MODES] = {
	"read-before", "read-wsfile", "write-before", "write-wsfile", "root-open",
};

static double
now_us(void)
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

/* The resolution the tools made before wsfile, for a path that exists. */
static int
open_before(const char *root, const char *rel, int flags)
{
	char *joined = xasprintf("%s/%s", root, rel), real[PATH_MAX];
	size_t n = strlen(root);
	int fd = -1;

	if (realpath(joined, real) != NULL && strncmp(real, root, n) == 0 && real[n] == '/')
		fd = open(real, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
	free(joined);
	return fd;
}

static bool
read_some(int fd)
{
	char buf[4096];
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, buf, sizeof buf) >= 0;

	close(fd);
	return ok;
}

static const char content[64] = "int main(void) { return 0; } /* sixty-four bytes of content */";

static bool
once(int mode, struct wsfile_root *r, const char *root, const char *rel, const char *wrel,
    const char *const *hidden)
{
	struct stat st;
	char *got, *why;
	int fd;
	bool ok;

	switch (mode) {
	case READ_BEFORE:
		fd = open_before(root, rel, O_RDONLY);
		return fd >= 0 && read_some(fd);
	case READ_WSFILE:
		if (wsfile_open(r, rel, O_RDONLY | O_NONBLOCK, &fd, &st, &got, &why) != WSFILE_OK) {
			fprintf(stderr, "filetools-bench: %s\n", why);
			free(why);
			return false;
		}
		free(got);
		return read_some(fd);
	case WRITE_BEFORE:
		fd = open_before(root, wrel, O_WRONLY | O_TRUNC);
		ok = fd >= 0 && write(fd, content, sizeof content) == (ssize_t)sizeof content;
		if (fd >= 0)
			close(fd);
		return ok;
	case WRITE_WSFILE:
		if (wsfile_write(r, wrel, content, sizeof content, &got, &why) != WSFILE_OK) {
			fprintf(stderr, "filetools-bench: %s\n", why);
			free(why);
			return false;
		}
		free(got);
		return true;
	default: {
		struct wsfile_root *again = wsfile_root_open(root, hidden, &why);

		wsfile_root_free(again);
		free(why);
		return again != NULL;
	}
	}
}

int
main(int argc, char **argv)
{
	struct td_paths paths;
	struct wsfile_root *r;
	char root[PATH_MAX], *wrel, *why, **hidden;
	double *t[MODES];
	long reps, sessions;

	if (argc != 5 || realpath(argv[1], root) == NULL || (reps = atol(argv[3])) < 1 ||
	    (sessions = atol(argv[4])) < 0) {
		fprintf(stderr, "usage: filetools-bench WORKSPACE PATH REPS SESSIONS\n");
		return 2;
	}
	if (!paths_init(&paths)) {
		fprintf(stderr, "filetools-bench: no paths (HOME or TASKDECK_HOME)\n");
		return 1;
	}
	hidden = sandbox_hidden_paths(&paths, NULL);
	for (long i = 0; i < sessions; i++) {
		char *dir = xasprintf("%s/.bench-session-%ld", root, i);

		mkdir(dir, 0700);
		hidden = sandbox_hidden_add(hidden, dir);
		free(dir);
	}
	r = wsfile_root_open(root, (const char *const *)hidden, &why);
	if (r == NULL) {
		fprintf(stderr, "filetools-bench: %s\n", why);
		return 1;
	}
	wrel = xasprintf("%s.w", argv[2]);
	{
		char *w = xasprintf("%s/%s", root, wrel);
		int fd = open(w, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0) {
			fprintf(stderr, "filetools-bench: %s: %s\n", w, strerror(errno));
			return 1;
		}
		close(fd);
		free(w);
	}
	for (int m = 0; m < MODES; m++)
		t[m] = xcalloc((size_t)reps, sizeof *t[m]);
	for (long i = 0; i < reps; i++) {
		for (int m = 0; m < MODES; m++) {
			double t0 = now_us();

			if (!once(m, r, root, argv[2], wrel, (const char *const *)hidden)) {
				fprintf(stderr, "filetools-bench: %s failed\n", mode_names[m]);
				return 1;
			}
			t[m][i] = now_us() - t0;
		}
	}
	for (int m = 0; m < MODES; m++) {
		qsort(t[m], (size_t)reps, sizeof *t[m], cmp);
		printf("%s %.2f %.2f %.2f\n", mode_names[m], t[m][reps / 2],
		    t[m][(size_t)((double)reps * 0.9)], t[m][0]);
		free(t[m]);
	}
	wsfile_root_free(r);
	sandbox_hidden_free(hidden);
	paths_free(&paths);
	free(wrel);
	return 0;
}
