/*
 * bench/changes/changes-bench WORKSPACE STORE GITDIR STEPS: the snapshot of a
 * run's workspace (changes_walk, src/service/changes-walk.c, into a bare store
 * at STORE) against `git add -A && git write-tree` (with GITDIR as the git
 * directory of the same work tree), after each step that changes one file.
 * The first snapshot of each is timed apart.  Prints
 *   first OURS_MS GIT_MS
 *   step OURS_MEDIAN OURS_P90 GIT_MEDIAN GIT_P90
 *   hashed AVERAGE_FILES_READ_PER_STEP
 *   pack FIRST_PACK_MS STEP_PACKS STEP_PACKS_MS
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <git2.h>

#include "changes-int.h"
#include "wsfile.h"

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[(int)((n - 1) * p + 0.5)];
}

static double pack_ms, first_pack_ms;
static int packs;

static double
ours(struct changes_walker *w, const char *ws, long *hashed)
{
	static const struct changes_limits lim = { 8 << 20, 1LL << 40 };
	struct changes_walk_stats st;
	char *why = NULL;
	git_oid tree;
	double t0 = now_ms();
	struct wsfile_root *root = wsfile_root_open(ws, NULL, &why);

	if (root == NULL || !changes_walk(w, root, &lim, NULL, NULL, &tree, &st, &why)) {
		fprintf(stderr, "changes-bench: %s\n", why ? why : "no workspace");
		exit(1);
	}
	wsfile_root_free(root);
	/* as the snapshot thread does once no other job waits (changes.c), a batch at a time */
	while (changes_walker_loose(w) >= CHANGES_PACK_LOOSE) {
		double p0 = now_ms();

		if (!changes_walker_pack(w)) {
			fprintf(stderr, "changes-bench: cannot pack the store\n");
			exit(1);
		}
		pack_ms += now_ms() - p0;
		packs++;
	}
	*hashed = st.hashed;
	return now_ms() - t0;
}

static double
git(const char *cmd)
{
	double t0 = now_ms();

	if (system(cmd) != 0) {
		fprintf(stderr, "changes-bench: %s failed\n", cmd);
		exit(1);
	}
	return now_ms() - t0;
}

int
main(int argc, char **argv)
{
	git_repository *repo;
	struct changes_walker *w;
	char cmd[8192];
	double *a, *b;
	long hashed, total = 0;
	int steps;

	if (argc != 5 || (steps = atoi(argv[4])) < 1) {
		fprintf(stderr, "usage: changes-bench WORKSPACE STORE GITDIR STEPS\n");
		return 2;
	}
	git_libgit2_init();
	if (git_repository_init(&repo, argv[2], 1) != 0 ||
	    (w = changes_walker_new(repo, 0)) == NULL) {
		fprintf(stderr, "changes-bench: cannot make the store %s\n", argv[2]);
		return 1;
	}
	snprintf(cmd, sizeof cmd, "git --git-dir='%s' --work-tree='%s' add -A && "
	    "git --git-dir='%s' --work-tree='%s' write-tree >/dev/null", argv[3], argv[1],
	    argv[3], argv[1]);
	a = calloc((size_t)steps, sizeof *a);
	b = calloc((size_t)steps, sizeof *b);
	{
		double first = ours(w, argv[1], &hashed);
		printf("first %.2f %.2f\n", first, git(cmd));
		first_pack_ms = pack_ms;
		pack_ms = 0;
		packs = 0;
	}
	srand(1);
	for (int i = 0; i < steps; i++) {
		char path[4096];
		FILE *f;

		/* One file of the 10,000 (d<dir>/f<n>.txt) gets a line. */
		snprintf(path, sizeof path, "%s/d%03d/f%02d.txt", argv[1], rand() % 500, rand() % 20);
		if ((f = fopen(path, "a")) == NULL) {
			perror(path);
			return 1;
		}
		fprintf(f, "step %d\n", i);
		fclose(f);
		if (i % 2 == 0) {
			a[i] = ours(w, argv[1], &hashed);
			b[i] = git(cmd);
		} else {
			b[i] = git(cmd);
			a[i] = ours(w, argv[1], &hashed);
		}
		total += hashed;
	}
	printf("step %.2f %.2f %.2f %.2f\n", pct(a, steps, 0.5), pct(a, steps, 0.9),
	    pct(b, steps, 0.5), pct(b, steps, 0.9));
	printf("hashed %.2f\n", (double)total / steps);
	printf("pack %.2f %d %.2f\n", first_pack_ms, packs, pack_ms);
	changes_walker_free(w);
	git_repository_free(repo);
	git_libgit2_shutdown();
	free(a);
	free(b);
	return 0;
}
