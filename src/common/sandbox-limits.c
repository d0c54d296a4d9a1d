/* Resource bounds of what a sandbox runs: cgroups and rlimits (sandbox-int.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "sandbox-int.h"
#include "sandbox.h"
#include "xalloc.h"

/*
 * Memory and processes are bounded per sandbox by cgroups where this process may
 * make them, "taskdeck-<pid>-<n>" below its own (beside it under v2, below the
 * delegated one), which the sandbox's first process
 * enters before it starts bwrap, so they count the sandbox's processes only, for
 * root too:
 *  - cgroup v1 (hybrid hosts): one in the writable `memory` hierarchy
 *    (memory.limit_in_bytes, and memory.memsw.limit_in_bytes where swap is
 *    accounted) and one in the writable `pids` hierarchy (pids.max);
 *  - cgroup v2: one in a subtree delegated to this process (both controllers
 *    enabled in its cgroup.subtree_control: memory.max, memory.swap.max 0,
 *    pids.max).  sandbox_cgroups_init takes over a delegated cgroup that holds
 *    this process alone (a systemd service with Delegate=yes): it moves into the
 *    leaf "taskdeck-main" and enables the controllers for its siblings.
 * A memory cgroup charges what the sandbox really uses (resident memory, its
 * tmpfs, page cache), not address space reserved (sanitizers' shadow memory);
 * reaching it, the kernel kills the largest process.  Without one, memory is
 * RLIMIT_DATA of each process.  Without a pids cgroup, RLIMIT_NPROC is set
 * inside the sandbox's user namespace (prlimit as the first program), where it
 * counts the sandbox's processes only; root is not bound then.
 */
#define CG_PREFIX "taskdeck-"
#define CG_MAIN CG_PREFIX "main"	/* where a v2 delegated cgroup's own processes go */

static pthread_once_t cg_once = PTHREAD_ONCE_INIT;
static char *pids_base;		/* the directory to make pids cgroups in, or NULL */
static char *memory_base;	/* the same for memory cgroups, or NULL */
static bool cg_v2;		/* the bases are in the unified hierarchy */

/* One spawn with limits, until sandbox_limits_end. */
struct bounded {
	pid_t pid;
	char *pids_cg, *memory_cg;	/* its cgroups, or NULL (the same dir under v2) */
	long processes, cpu_seconds;
	long long memory;
	bool ended;		/* collected; the cgroups are left to remove */
	struct bounded *next;
};
static pthread_mutex_t bounded_mu = PTHREAD_MUTEX_INITIALIZER;
static struct bounded *bounded;
static unsigned long cgroup_seq;

/* Writes value to dir/file; true when all of it was taken. */
static bool
cg_write(const char *dir, const char *file, const char *value)
{
	char *path = xasprintf("%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC), saved;
	bool ok = fd >= 0 && write(fd, value, strlen(value)) == (ssize_t)strlen(value);

	saved = errno;	/* ENOENT: no such file here */
	if (fd >= 0)
		close(fd);
	free(path);
	errno = saved;
	return ok;
}

/* Whether the space-separated list in dir/file names word. */
static bool
cg_lists(const char *dir, const char *file, const char *word)
{
	char *path = xasprintf("%s/%s", dir, file), line[512], *tok, *save = NULL;
	FILE *f = fopen(path, "re");
	bool found = false;

	free(path);
	if (f == NULL)
		return false;
	if (fgets(line, sizeof line, f) != NULL)
		for (tok = strtok_r(line, " \n", &save); tok != NULL && !found;
		    tok = strtok_r(NULL, " \n", &save))
			found = strcmp(tok, word) == 0;
	fclose(f);
	return found;
}

/* The number after "key " in dir/file (a flat keyed file), or -1. */
static long long
cg_key(const char *dir, const char *file, const char *key)
{
	char *path = xasprintf("%s/%s", dir, file), line[256];
	FILE *f = fopen(path, "re");
	size_t klen = strlen(key);
	long long n = -1;

	free(path);
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			n = strtoll(line + klen + 1, NULL, 10);
			break;
		}
	if (f != NULL)
		fclose(f);
	return n;
}

/*
 * Whether the v2 cgroup dir is delegated to this process: systemd marks one of a
 * unit with Delegate=yes with the extended attribute trusted.delegate (or
 * user.delegate), and gives one of a user's unit to the user.  Root may write any
 * cgroup: one systemd did not delegate is systemd's to manage, not ours.
 */
static bool
cg_delegated(const char *dir)
{
	struct stat st;

	if (access(dir, W_OK) != 0)
		return false;
	if (getxattr(dir, "trusted.delegate", NULL, 0) >= 0 ||
	    getxattr(dir, "user.delegate", NULL, 0) >= 0)
		return true;
	return geteuid() != 0 && stat(dir, &st) == 0 && st.st_uid == geteuid();
}

/*
 * The v2 base: dir (this process's cgroup) when its children have the memory
 * controller, its parent when dir is the leaf CG_MAIN of one that does.  With
 * take_over, a dir delegated to this process and holding it alone becomes such a
 * parent.
 */
static char *
cg_v2_base(char *dir, bool take_over)
{
	char *slash = strrchr(dir, '/'), *leaf, pid[32];
	FILE *f;
	long only = -1, n;
	int count = 0;

	if (access(dir, W_OK) == 0 && cg_lists(dir, "cgroup.subtree_control", "memory"))
		return xstrdup(dir);
	if (slash != NULL && strcmp(slash + 1, CG_MAIN) == 0) {
		char *parent = xstrndup(dir, (size_t)(slash - dir));

		if (access(parent, W_OK) == 0 &&
		    cg_lists(parent, "cgroup.subtree_control", "memory"))
			return parent;
		free(parent);
		return NULL;
	}
	if (!take_over || !cg_delegated(dir) || !cg_lists(dir, "cgroup.controllers", "memory"))
		return NULL;
	leaf = xasprintf("%s/cgroup.procs", dir);
	f = fopen(leaf, "re");
	free(leaf);
	while (f != NULL && fscanf(f, "%ld", &n) == 1) {
		only = n;
		count++;
	}
	if (f != NULL)
		fclose(f);
	if (count != 1 || only != (long)getpid())
		return NULL;	/* not ours alone: leave it as it is */
	leaf = xasprintf("%s/" CG_MAIN, dir);
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	if ((mkdir(leaf, 0755) != 0 && errno != EEXIST) || !cg_write(leaf, "cgroup.procs", pid)) {
		free(leaf);
		return NULL;
	}
	free(leaf);
	if (!cg_write(dir, "cgroup.subtree_control", "+memory"))
		return NULL;
	cg_write(dir, "cgroup.subtree_control", "+pids");	/* where there is one */
	return xstrdup(dir);
}

/* Finds the bases from /proc/self/cgroup; take_over as in cg_v2_base. */
static void
cgroups_find_with(bool take_over)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 64], *unified = NULL;

	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		char *ctl = strchr(line, ':'), *path, *dir, *tok, *save = NULL, list[256];
		bool pids = false, memory = false;

		if (ctl == NULL || (path = strchr(++ctl, ':')) == NULL)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (*ctl == '\0') {	/* "0::/path": the unified hierarchy */
			const char *root = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 ?
			    "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";

			free(unified);
			unified = xasprintf("%s%s", root, strcmp(path, "/") == 0 ? "" : path);
			continue;
		}
		snprintf(list, sizeof list, "%s", ctl);
		for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
			pids |= strcmp(tok, "pids") == 0;
			memory |= strcmp(tok, "memory") == 0;
		}
		if (!pids && !memory)
			continue;
		dir = xasprintf("/sys/fs/cgroup/%s%s", ctl, strcmp(path, "/") == 0 ? "" : path);
		if (access(dir, W_OK) == 0) {
			if (pids && pids_base == NULL)
				pids_base = xstrdup(dir);
			if (memory && memory_base == NULL)
				memory_base = xstrdup(dir);
		}
		free(dir);
	}
	if (f != NULL)
		fclose(f);
	/* v1 hierarchies first: a hybrid host's unified one has no controllers */
	if (unified != NULL && memory_base == NULL && pids_base == NULL &&
	    (memory_base = cg_v2_base(unified, take_over)) != NULL) {
		cg_v2 = true;
		if (cg_lists(memory_base, "cgroup.subtree_control", "pids"))
			pids_base = xstrdup(memory_base);
	}
	free(unified);
}

static bool cg_take_over;	/* set by sandbox_cgroups_init before the first spawn */

static void
cgroups_find(void)
{
	cgroups_find_with(cg_take_over);
}

/* Removes the cgroups of ended spawns (under bounded_mu). */
static void
cgroups_sweep_ended(void)
{
	struct bounded **b = &bounded;

	while (*b != NULL) {
		struct bounded *it = *b;

		if (it->ended &&
		    (it->pids_cg == NULL || rmdir(it->pids_cg) == 0 || errno == ENOENT) &&
		    (it->memory_cg == NULL || rmdir(it->memory_cg) == 0 || errno == ENOENT)) {
			*b = it->next;
			free(it->pids_cg);
			free(it->memory_cg);
			free(it);
		} else
			b = &it->next;
	}
}

/* Removes the sandbox cgroups under base whose owner (the pid in the name) is gone. */
static int
cgroups_sweep_stale(const char *base)
{
	DIR *d = base != NULL ? opendir(base) : NULL;
	struct dirent *e;
	int removed = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		long owner;
		unsigned long seq;
		char *path, end;

		if (sscanf(e->d_name, CG_PREFIX "%ld-%lu%c", &owner, &seq, &end) != 2 ||
		    owner <= 0 || owner == (long)getpid() || kill((pid_t)owner, 0) == 0 ||
		    errno != ESRCH)
			continue;
		path = xasprintf("%s/%s", base, e->d_name);
		if (rmdir(path) == 0)	/* fails while a process is left in it */
			removed++;
		free(path);
	}
	if (d != NULL)
		closedir(d);
	return removed;
}

int
sandbox_cgroups_init(void)
{
	int removed;

	cg_take_over = true;	/* read once, by the first of this and a spawn */
	pthread_once(&cg_once, cgroups_find);
	removed = cgroups_sweep_stale(pids_base);
	if (memory_base != NULL && (pids_base == NULL || strcmp(memory_base, pids_base) != 0))
		removed += cgroups_sweep_stale(memory_base);
	return removed;
}

bool
sandbox_memory_cgroup(void)
{
	pthread_once(&cg_once, cgroups_find);
	return memory_base != NULL;
}

/* A new cgroup "taskdeck-<pid>-<n>" under base, or NULL. */
static char *
cg_new(const char *base)
{
	char *dir;

	pthread_mutex_lock(&bounded_mu);
	dir = xasprintf("%s/" CG_PREFIX "%ld-%lu", base, (long)getpid(), ++cgroup_seq);
	pthread_mutex_unlock(&bounded_mu);
	if (mkdir(dir, 0755) != 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* Opens dir/cgroup.procs for the child to enter; on failure removes and frees dir. */
static bool
cg_open_procs(char **dir, int *fd)
{
	char *file = xasprintf("%s/cgroup.procs", *dir);

	*fd = open(file, O_WRONLY | O_CLOEXEC);
	free(file);
	if (*fd >= 0)
		return true;
	rmdir(*dir);
	free(*dir);
	*dir = NULL;
	return false;
}

void
sandbox_cgroups_make(const struct sandbox_limits *lim, struct sandbox_cgroups *cs)
{
	char num[32];

	cs->pids = cs->memory = NULL;
	cs->fd[0] = cs->fd[1] = -1;
	pthread_once(&cg_once, cgroups_find);
	if (lim->processes > 0 && pids_base != NULL && (cs->pids = cg_new(pids_base)) != NULL) {
		snprintf(num, sizeof num, "%ld", lim->processes);
		if (!cg_write(cs->pids, "pids.max", num)) {
			rmdir(cs->pids);
			free(cs->pids);
			cs->pids = NULL;
		} else
			cg_open_procs(&cs->pids, &cs->fd[0]);
	}
	if (lim->memory <= 0 || memory_base == NULL)
		return;
	if (cg_v2 && cs->pids != NULL)
		cs->memory = xstrdup(cs->pids);	/* one cgroup holds both */
	else if ((cs->memory = cg_new(memory_base)) == NULL)
		return;
	snprintf(num, sizeof num, "%lld", lim->memory);
	if (cg_v2 ? !cg_write(cs->memory, "memory.max", num) ||
	    (!cg_write(cs->memory, "memory.swap.max", "0") && errno != ENOENT) :
	    !cg_write(cs->memory, "memory.limit_in_bytes", num) ||
	    (!cg_write(cs->memory, "memory.memsw.limit_in_bytes", num) && errno != ENOENT)) {
		/* RLIMIT_DATA instead */
		if (!(cg_v2 && cs->pids != NULL))
			rmdir(cs->memory);
		free(cs->memory);
		cs->memory = NULL;
		return;
	}
	if (!(cg_v2 && cs->pids != NULL))
		cg_open_procs(&cs->memory, &cs->fd[1]);
}

void
sandbox_bounded_add(pid_t pid, struct sandbox_cgroups *cs, const struct sandbox_limits *lim)
{
	struct bounded *b = xcalloc(1, sizeof *b);

	b->pid = pid;
	b->pids_cg = cs->pids;
	b->memory_cg = cs->memory;
	cs->pids = cs->memory = NULL;
	b->processes = lim->processes;
	b->cpu_seconds = lim->cpu_seconds;
	b->memory = lim->memory;
	pthread_mutex_lock(&bounded_mu);
	b->next = bounded;
	bounded = b;
	pthread_mutex_unlock(&bounded_mu);
}

void
sandbox_cgroups_drop(struct sandbox_cgroups *cs)
{
	if (cs->pids != NULL)
		rmdir(cs->pids);
	if (cs->memory != NULL)
		rmdir(cs->memory);
	free(cs->pids);
	free(cs->memory);
	cs->pids = cs->memory = NULL;
}

/* Whether the kernel killed a process of the memory cgroup dir at its limit. */
static bool
cgroup_oom_killed(const char *dir, int sig)
{
	long long kills = cg_key(dir, cg_v2 ? "memory.events" : "memory.oom_control", "oom_kill");

	/* v1 before Linux 4.13 does not count the kills: the limit hit, and a SIGKILL */
	if (kills < 0 && !cg_v2) {
		char *path = xasprintf("%s/memory.failcnt", dir);
		FILE *f = fopen(path, "re");
		long long hits = 0;

		free(path);
		if (f != NULL) {
			if (fscanf(f, "%lld", &hits) != 1)
				hits = 0;
			fclose(f);
		}
		return sig == SIGKILL && hits > 0;
	}
	return kills > 0;
}

/* Removes b's cgroups; true when none is left. */
static bool
bounded_rmdir(struct bounded *b)
{
	if (b->pids_cg != NULL && (rmdir(b->pids_cg) == 0 || errno == ENOENT)) {
		free(b->pids_cg);
		b->pids_cg = NULL;
	}
	if (b->memory_cg != NULL && (rmdir(b->memory_cg) == 0 || errno == ENOENT)) {
		free(b->memory_cg);
		b->memory_cg = NULL;
	}
	return b->pids_cg == NULL && b->memory_cg == NULL;
}

void
sandbox_limits_end(pid_t pid, int status, char *msg, size_t msglen)
{
	struct bounded *b, **at;

	if (msglen > 0)
		msg[0] = '\0';
	pthread_mutex_lock(&bounded_mu);
	for (at = &bounded; *at != NULL && ((*at)->pid != pid || (*at)->ended); at = &(*at)->next)
		;
	if ((b = *at) != NULL)
		*at = b->next;	/* ours until its cgroups are gone */
	cgroups_sweep_ended();
	pthread_mutex_unlock(&bounded_mu);
	if (b == NULL)
		return;
	{
		int sig = WIFSIGNALED(status) ? WTERMSIG(status) :
		    WIFEXITED(status) && WEXITSTATUS(status) > 128 ? WEXITSTATUS(status) - 128 : 0;

		/* bwrap and the shell give a signal's death as the exit status 128 + n */
		if (b->cpu_seconds > 0 && sig == SIGXCPU)
			snprintf(msg, msglen, "killed: CPU time limit %ld s", b->cpu_seconds);
		else if (b->memory_cg != NULL && cgroup_oom_killed(b->memory_cg, sig))
			snprintf(msg, msglen, sig == SIGKILL ? "killed: memory limit %lld MiB" :
			    "memory limit %lld MiB reached: a process was killed", b->memory >> 20);
		else if (b->pids_cg != NULL && cg_key(b->pids_cg, "pids.events", "max") > 0)
			snprintf(msg, msglen, "process limit %ld reached: a fork was refused",
			    b->processes);
	}
	/* Empty once bwrap is collected, or mostly some 50 to 200 us after, while the
	 * last of the sandbox's processes finish exiting; else for the next sweep (the
	 * next end of a spawn, or the next start of a taskdeck process). */
	for (int i = 0; i < 4 && !bounded_rmdir(b); i++)
		usleep(50);
	if (b->pids_cg == NULL && b->memory_cg == NULL) {
		free(b);
		return;
	}
	b->ended = true;
	pthread_mutex_lock(&bounded_mu);
	b->next = bounded;
	bounded = b;
	pthread_mutex_unlock(&bounded_mu);
}
