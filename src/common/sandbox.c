/*
 * The command sandbox through bubblewrap (docs/agent.md "The sandbox").
 *
 * Non-full-access profiles: new user (no capabilities, no nested user namespaces),
 * mount, pid, IPC, UTS and (unless network is on) net namespaces; the whole system
 * read-only, a private /tmp and /dev, a /proc that shows only the sandbox, the hidden
 * paths replaced by empty directories or /dev/null, the workspace bound read-write
 * (workspace-write) or read-only.  full-access: the system as the user, in its own pid
 * namespace only, so that nothing started outlives the command.  bwrap's
 * --die-with-parent ends the namespace when the spawning thread dies.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "paths.h"
#include "sandbox.h"
#include "xalloc.h"

/* Credential locations under $HOME that no sandbox may read (docs/agent.md). */
static const char *const home_secrets[] = {
	".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
	".npmrc", ".pypirc", ".pgpass", ".password-store", ".config/gcloud", ".config/gh",
	".config/hub", ".config/op", ".local/share/keyrings", ".mozilla", ".config/google-chrome",
	".config/chromium", ".terraform.d", ".vault-token",
	/* the logins of the framework CLIs (docs/frameworks.md) */
	".claude", ".claude.json", ".codex", NULL,
};

/*
 * Sockets that hand out more than the user's rights or reach the user's session
 * (a read-only mount does not stop connect()): container engines, the system bus,
 * and the user's runtime directory (agents of ssh and gpg, the session bus).
 */
static const char *const system_secrets[] = {
	"/run/docker.sock", "/var/run/docker.sock", "/run/containerd", "/run/podman",
	"/run/dbus", "/run/systemd/private", NULL,
};

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static bool probe_ok;		/* a probe succeeded once in this process */

const char *
sandbox_bwrap_path(void)
{
	static const char *const fixed[] = { "/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap", NULL };
	const char *env = getenv("TASKDECK_BWRAP");

	if (env != NULL && env[0] != '\0')
		return access(env, X_OK) == 0 ? env : NULL;
	for (const char *const *p = fixed; *p; p++)
		if (access(*p, X_OK) == 0)
			return *p;
	return NULL;
}

/* ---- the hidden list ------------------------------------------------------------ */

static size_t
list_len(char **list)
{
	size_t n = 0;

	while (list != NULL && list[n] != NULL)
		n++;
	return n;
}

char **
sandbox_hidden_add(char **list, const char *path)
{
	char real[PATH_MAX];
	size_t n = list_len(list);

	if (path == NULL || realpath(path, real) == NULL || strcmp(real, "/") == 0)
		return list;
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], real) == 0)
			return list;
	list = xrealloc(list, (n + 2) * sizeof *list);
	list[n] = xstrdup(real);
	list[n + 1] = NULL;
	return list;
}

char **
sandbox_hidden_paths(const struct td_paths *p, const char *home)
{
	char **list = xcalloc(1, sizeof *list);

	if (home == NULL)
		home = getenv("HOME");
	if (p != NULL) {
		const char *const mine[] = { p->config_dir, p->data_dir, p->runtime_dir,
			p->token, p->settings, p->database, p->secret_key, p->workspaces,
			p->artifacts, p->discovery, p->lock, p->log };

		for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
			list = sandbox_hidden_add(list, mine[i]);
	}
	for (const char *const *s = system_secrets; *s; s++)
		list = sandbox_hidden_add(list, *s);
	if (getenv("XDG_RUNTIME_DIR") != NULL && getenv("XDG_RUNTIME_DIR")[0] == '/')
		list = sandbox_hidden_add(list, getenv("XDG_RUNTIME_DIR"));
	if (home != NULL && home[0] == '/')
		for (const char *const *s = home_secrets; *s; s++) {
			char *path = xasprintf("%s/%s", home, *s);

			list = sandbox_hidden_add(list, path);
			free(path);
		}
	return list;
}

void
sandbox_hidden_free(char **list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		free(list[i]);
	free(list);
}

/* ---- the seccomp filter ---------------------------------------------------------- */

/*
 * A deny list on top of the namespaces (docs/agent.md): calls that reach state the
 * namespaces do not cover (the kernel keyrings), that only serve to attack the kernel
 * (bpf, userfaultfd, io_uring, perf) or that a capability-less process has no use for
 * (mounts, modules, kexec).  They fail with EPERM; every other call is allowed.
 * Built for the build's architecture; calls of another ABI (i386, x32) fail too.
 */
#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef SECCOMP_ARCH
static const long denied_calls[] = {
	SYS_keyctl, SYS_add_key, SYS_request_key, SYS_bpf, SYS_perf_event_open,
	SYS_userfaultfd, SYS_kexec_load, SYS_kexec_file_load, SYS_init_module,
	SYS_finit_module, SYS_delete_module, SYS_swapon, SYS_swapoff, SYS_reboot, SYS_acct,
	SYS_mount, SYS_umount2, SYS_pivot_root, SYS_open_by_handle_at, SYS_name_to_handle_at,
	SYS_setns, SYS_syslog, SYS_quotactl, SYS_vhangup,
#ifdef SYS_io_uring_setup
	SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
#endif
#ifdef SYS_open_tree
	SYS_open_tree, SYS_move_mount, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick,
#endif
#ifdef SYS_iopl
	SYS_iopl, SYS_ioperm,
#endif
};
#define DENIED (sizeof denied_calls / sizeof denied_calls[0])

/* The filter: 4 + 2 per call instructions. */
static size_t
seccomp_program(struct sock_filter *prog)
{
	size_t n = 0;

	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_ARCH, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
	/* x32 calls have bit 30 set */
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
#endif
	for (size_t i = 0; i < DENIED; i++) {
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		    (unsigned)denied_calls[i], 0, 1);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return n;
}

/* A sealed memfd holding the filter for bwrap --seccomp; -1 on failure. */
static int
seccomp_fd(void)
{
	struct sock_filter prog[8 + 2 * DENIED];
	size_t len = seccomp_program(prog) * sizeof prog[0];
	int fd = memfd_create("taskdeck-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	if (write(fd, prog, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}
#else
static int
seccomp_fd(void)
{
	return -2;	/* no filter for this architecture (docs/agent.md) */
}
#endif

/* ---- resource bounds ----------------------------------------------------------- */

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

/* The cgroups of one spawn with limits. */
struct spawn_cgroups {
	char *pids, *memory;	/* made, or NULL */
	int fd[2];		/* their cgroup.procs, for the child; -1: none */
};

/* Makes the cgroups lim needs where they can be made; what cannot stays NULL. */
static void
cgroups_make(const struct sandbox_limits *lim, struct spawn_cgroups *cs)
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

/* Remembers a spawn with limits (takes cs's cgroups). */
static void
bounded_add(pid_t pid, struct spawn_cgroups *cs, const struct sandbox_limits *lim)
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

/* Removes and frees cs's cgroups (a spawn that failed). */
static void
cgroups_drop(struct spawn_cgroups *cs)
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

/* ---- spawning ------------------------------------------------------------------- */

/* The fd the child gets the seccomp filter on, for bwrap --seccomp. */
#define SECCOMP_CHILD_FD 3
/* The fd sandbox_spawn_shell's shell reads its command from. */
#define SHELL_CHILD_FD 4

struct argv_buf {
	char **v;
	size_t n, cap;
};

static void
arg(struct argv_buf *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

static void
argv_free(struct argv_buf *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

/* true when path is dir or below it. */
static bool
path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* An empty directory (made read-only at the end, --remount-ro) or /dev/null over path. */
static void
hide(struct argv_buf *a, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		arg(a, "--tmpfs");
		arg(a, path);
	} else {
		arg(a, "--ro-bind");
		arg(a, "/dev/null");
		arg(a, path);
	}
}

/* true when path is hidden again after the workspace is bound: strictly inside it. */
static bool
hidden_inside(const struct sandbox_policy *pol, const char *path)
{
	return pol->workspace != NULL && path_within(path, pol->workspace) &&
	    strcmp(path, pol->workspace) != 0;
}

/*
 * true when hidden path i lies strictly inside another hidden path hidden in the
 * same step (both before the workspace is bound, or both after): the empty
 * directory over that one hides it already, and a mount at its place would be
 * covered, its read-only remount fail.  Any nesting, in any order, works.
 */
static bool
hidden_covered(const struct sandbox_policy *pol, size_t i)
{
	const char *path = pol->hidden[i];

	for (size_t j = 0; pol->hidden[j] != NULL; j++)
		if (j != i && strcmp(pol->hidden[j], path) != 0 &&
		    path_within(path, pol->hidden[j]) &&
		    hidden_inside(pol, path) == hidden_inside(pol, pol->hidden[j]))
			return true;
	return false;
}

#define TMP_TOPS_MAX 16

/* Adds the directory (or file) right under /tmp that holds path to tops, once. */
static void
tmp_top_add(const char *path, char tops[][PATH_MAX], size_t *n)
{
	char top[PATH_MAX];
	size_t len;

	if (strncmp(path, "/tmp/", 5) != 0 || path[5] == '\0' || path[5] == '/')
		return;
	len = 5 + strcspn(path + 5, "/");
	if (len >= sizeof top || strstr(path, "/../") != NULL)
		return;
	memcpy(top, path, len);
	top[len] = '\0';
	if (strcmp(top + 5, "..") == 0 || strcmp(top + 5, ".") == 0)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(tops[i], top) == 0)
			return;
	if (*n < TMP_TOPS_MAX)
		memcpy(tops[(*n)++], top, len + 1);
}

/* path and, when it is a link, where it leads. */
static void
tmp_top_both(const char *path, char tops[][PATH_MAX], size_t *n)
{
	char real[PATH_MAX];

	tmp_top_add(path, tops, n);
	if (realpath(path, real) != NULL)
		tmp_top_add(real, tops, n);
}

/*
 * The sandbox has a /tmp of its own, which would hide a program that lives
 * under the host's /tmp (a checkout, a build or an npm cache there).  The
 * entry right under /tmp that holds one of the configured programs
 * (pol->programs) or a directory of PATH is bound read-only at its place; what
 * is hidden is hidden after it, and the private directories (pol->dirs) are
 * left alone.  The command's arguments are not looked at: run_command's are a
 * model's text, and a mount must not depend on what a model writes.
 */
static void
bind_tmp_tops(struct argv_buf *a, const struct sandbox_policy *pol, char *const envp[])
{
	char (*tops)[PATH_MAX] = xcalloc(TMP_TOPS_MAX, sizeof *tops);
	size_t n = 0;
	struct stat st;

	for (size_t i = 0; pol->programs != NULL && pol->programs[i] != NULL; i++)
		if (pol->programs[i][0] == '/')
			tmp_top_both(pol->programs[i], tops, &n);
	for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
		const char *p = envp[i];

		if (strncmp(p, "PATH=", 5) != 0)
			continue;
		for (p += 5; *p != '\0';) {
			char dir[PATH_MAX];
			size_t len = strcspn(p, ":");

			if (len < sizeof dir) {
				memcpy(dir, p, len);
				dir[len] = '\0';
				tmp_top_both(dir, tops, &n);
			}
			p += len;
			if (*p == ':')
				p++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool private = false;

		for (size_t k = 0; pol->dirs != NULL && pol->dirs[k] != NULL; k++)
			if (path_within(pol->dirs[k], tops[i]) || path_within(tops[i], pol->dirs[k]))
				private = true;
		if (private || stat(tops[i], &st) != 0)
			continue;
		arg(a, "--ro-bind");
		arg(a, tops[i]);
		arg(a, tops[i]);
	}
	free(tops);
}

/* The bwrap arguments before the command (envp: the command's, or NULL). */
static void
bwrap_args(struct argv_buf *a, const char *bwrap, const struct sandbox_policy *pol,
    const char *cwd, bool seccomp, char *const envp[])
{
	size_t nhidden = 0;
	bool *covered;

	arg(a, bwrap);
	arg(a, "--die-with-parent");
	arg(a, "--new-session");
	arg(a, "--unshare-pid");
	if (pol->profile == SANDBOX_FULL_ACCESS) {
		arg(a, "--dev-bind");
		arg(a, "/");
		arg(a, "/");
		arg(a, "--proc");
		arg(a, "/proc");
	} else {
		arg(a, "--unshare-user");
		arg(a, "--disable-userns");
		arg(a, "--unshare-ipc");
		arg(a, "--unshare-uts");
		arg(a, "--unshare-cgroup-try");
		if (!pol->network)
			arg(a, "--unshare-net");
		arg(a, "--cap-drop");
		arg(a, "ALL");
		if (seccomp) {
			arg(a, "--seccomp");
			arg(a, "3");	/* SECCOMP_CHILD_FD */
		}
		arg(a, "--ro-bind");
		arg(a, "/");
		arg(a, "/");
		arg(a, "--dev");
		arg(a, "/dev");
		arg(a, "--proc");
		arg(a, "/proc");
		for (int i = 0; i < 2; i++) {
			if (pol->limits != NULL && pol->limits->tmp_size > 0) {
				char size[32];

				snprintf(size, sizeof size, "%lld", pol->limits->tmp_size);
				arg(a, "--size");
				arg(a, size);
			}
			arg(a, "--tmpfs");
			arg(a, i == 0 ? "/tmp" : "/dev/shm");
		}
		bind_tmp_tops(a, pol, envp);
		/* Everything hidden, then the workspace, then what is hidden inside it. */
		for (size_t i = 0; pol->hidden != NULL && pol->hidden[i] != NULL; i++)
			nhidden = i + 1;
		covered = xcalloc(nhidden + 1, sizeof *covered);
		for (size_t i = 0; i < nhidden; i++)
			covered[i] = hidden_covered(pol, i);
		for (size_t i = 0; i < nhidden; i++)
			if (!hidden_inside(pol, pol->hidden[i]) && !covered[i])
				hide(a, pol->hidden[i]);
		if (pol->workspace != NULL) {
			arg(a, pol->profile == SANDBOX_WORKSPACE_WRITE ? "--bind" : "--ro-bind");
			arg(a, pol->workspace);
			arg(a, pol->workspace);
			for (size_t i = 0; i < nhidden; i++)
				if (hidden_inside(pol, pol->hidden[i]) && !covered[i])
					hide(a, pol->hidden[i]);
		}
		/* Paths of the policy's own, then what is hidden inside them. */
		for (int w = 0; w < 2; w++) {
			const char *const *list = w == 0 ? pol->rw_paths : pol->ro_paths;

			for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
				arg(a, w == 0 ? "--bind" : "--ro-bind");
				arg(a, list[i]);
				arg(a, list[i]);
				for (size_t k = 0; k < nhidden; k++)
					if (path_within(pol->hidden[k], list[i]) &&
					    strcmp(pol->hidden[k], list[i]) != 0)
						hide(a, pol->hidden[k]);
			}
		}
		/* Not recursive: a workspace bound below a hidden directory stays as bound. */
		for (size_t i = 0; i < nhidden; i++) {
			struct stat st;

			if (!covered[i] && stat(pol->hidden[i], &st) == 0 &&
			    S_ISDIR(st.st_mode) && (pol->workspace == NULL ||
			    strcmp(pol->hidden[i], pol->workspace) != 0)) {
				arg(a, "--remount-ro");
				arg(a, pol->hidden[i]);
			}
		}
		free(covered);
		/* A program's private state (docs/frameworks.md), in the private /tmp. */
		for (size_t i = 0; pol->dirs != NULL && pol->dirs[i] != NULL; i++) {
			arg(a, "--perms");
			arg(a, "0700");
			arg(a, "--dir");
			arg(a, pol->dirs[i]);
		}
		for (size_t i = 0; pol->ro_binds != NULL && pol->ro_binds[i] != NULL &&
		    pol->ro_binds[i + 1] != NULL; i += 2) {
			arg(a, "--ro-bind-try");
			arg(a, pol->ro_binds[i]);
			arg(a, pol->ro_binds[i + 1]);
		}
	}
	arg(a, "--chdir");
	arg(a, cwd != NULL ? cwd : "/");
	arg(a, "--");
}

/* What the child sets up before exec: its limits and its cgroups (-1: none). */
struct child_bounds {
	const struct sandbox_limits *lim;	/* NULL: none */
	int cgroup_fd[2];
	bool memory_cgroup;	/* memory is bounded by a cgroup: no RLIMIT_DATA */
};

/* In the child: only async-signal-safe calls until exec.  extra[0] becomes fd 3
 * (SECCOMP_CHILD_FD), extra[1] fd 4 (SHELL_CHILD_FD); -1: closed. */
static void __attribute__((noreturn))
spawn_child(const int fds[3], const int extra_in[2], const struct child_bounds *cb,
    pid_t parent, bool deathsig, const char *path, char *const argv[], char *const envp[],
    const char *cwd)
{
	int io[3], extra[2];
	sigset_t none;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	setsid();		/* its own session and process group: sandbox_kill's killpg */
	/* Into the cgroups first: all that follows is counted. */
	for (int i = 0; i < 2; i++)
		if (cb->cgroup_fd[i] >= 0 && write(cb->cgroup_fd[i], "0", 1) != 1)
			_exit(126);
	if (cb->lim != NULL && cb->lim->memory > 0 && !cb->memory_cgroup) {
		struct rlimit rl = { (rlim_t)cb->lim->memory, (rlim_t)cb->lim->memory };

		if (setrlimit(RLIMIT_DATA, &rl) != 0)
			_exit(126);
	}
	if (cb->lim != NULL && cb->lim->cpu_seconds > 0) {
		/* SIGXCPU at the limit, SIGKILL a second later for one that ignores it */
		struct rlimit rl = { (rlim_t)cb->lim->cpu_seconds,
			(rlim_t)cb->lim->cpu_seconds + 1 };

		if (setrlimit(RLIMIT_CPU, &rl) != 0)
			_exit(126);
	}
	if (deathsig) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(125);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	/* Move the given fds above 5 first so that dup2 order does not clobber them. */
	for (int i = 0; i < 2; i++)
		if ((extra[i] = extra_in[i]) >= 0 &&
		    (extra[i] = fcntl(extra[i], F_DUPFD_CLOEXEC, 5)) < 0)
			_exit(126);
	for (int i = 0; i < 3; i++) {
		io[i] = fds[i] >= 0 ? fcntl(fds[i], F_DUPFD_CLOEXEC, 5) :
		    open("/dev/null", i == 0 ? O_RDONLY | O_CLOEXEC : O_WRONLY | O_CLOEXEC);
		if (io[i] < 0)
			_exit(126);
	}
	for (int i = 0; i < 3; i++)
		if (dup2(io[i], i) < 0)
			_exit(126);
	for (int i = 0; i < 2; i++)
		if (extra[i] >= 0 ? dup2(extra[i], SECCOMP_CHILD_FD + i) < 0 :
		    close(SECCOMP_CHILD_FD + i) < 0 && errno != EBADF)
			_exit(126);
	close_range(SHELL_CHILD_FD + 1, ~0U, 0);
	if (cwd != NULL && chdir(cwd) != 0)
		_exit(126);
	execve(path, argv, envp);
	_exit(127);
}

static int
spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
    const int fds[3], const int extra[2], const struct child_bounds *cb, bool deathsig,
    pid_t *pid, char *err, size_t errlen)
{
	static const struct child_bounds none = { .cgroup_fd = { -1, -1 } };
	pid_t parent = getpid();
	pid_t p;

	if (cb == NULL)
		cb = &none;
	if ((p = fork()) == 0)
		spawn_child(fds, extra, cb, parent, deathsig, path, argv, envp, cwd);
	if (p < 0) {
		snprintf(err, errlen, "cannot start the command: %s", strerror(errno));
		return -1;
	}
	*pid = p;		/* a session and process group of its own: setsid() above */
	return 0;
}

/* Runs the strict sandbox around `true`; true when it works.  Once good, stays good. */
static bool
probe(char *why, size_t whylen)
{
	const char *bwrap = sandbox_bwrap_path();
	struct sandbox_policy pol = { .profile = SANDBOX_READ_ONLY };
	struct argv_buf a = { 0 };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	char msg[512] = "";
	int pipefd[2], status = 0, fds[3], sfd;
	size_t len = 0;
	pid_t pid;
	bool ok;

	pthread_mutex_lock(&probe_mu);
	if (probe_ok && bwrap != NULL) {
		pthread_mutex_unlock(&probe_mu);
		return true;
	}
	if (bwrap == NULL) {
		pthread_mutex_unlock(&probe_mu);
		snprintf(why, whylen, "bubblewrap (bwrap) is not installed%s; install the Debian "
		    "package bubblewrap (apt-get install bubblewrap)",
		    getenv("TASKDECK_BWRAP") ? " at $TASKDECK_BWRAP" : "");
		return false;
	}
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		pthread_mutex_unlock(&probe_mu);
		snprintf(why, whylen, "cannot test the sandbox: %s", strerror(errno));
		return false;
	}
	sfd = seccomp_fd();
	bwrap_args(&a, bwrap, &pol, "/", sfd >= 0, NULL);
	arg(&a, "true");
	fds[0] = -1, fds[1] = pipefd[1], fds[2] = pipefd[1];
	ok = spawn(bwrap, a.v, envp, "/", fds, (const int[2]){ sfd, -1 }, NULL, true, &pid,
	    why, whylen) == 0;
	if (sfd >= 0)
		close(sfd);
	close(pipefd[1]);
	argv_free(&a);
	if (ok) {
		ssize_t n;

		while (len + 1 < sizeof msg &&
		    ((n = read(pipefd[0], msg + len, sizeof msg - 1 - len)) > 0 ||
		    (n < 0 && errno == EINTR)))
			if (n > 0)
				len += (size_t)n;
		msg[len] = '\0';
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
		if (!ok) {
			msg[strcspn(msg, "\n")] = '\0';
			snprintf(why, whylen, "bubblewrap cannot set up the sandbox here (%s); user "
			    "namespaces may be disabled: check that sysctl "
			    "user.max_user_namespaces is above 0 and "
			    "kernel.unprivileged_userns_clone is 1, or run in a container that "
			    "allows them", msg[0] ? msg : "no message");
		}
	}
	close(pipefd[0]);
	probe_ok = ok;
	pthread_mutex_unlock(&probe_mu);
	return ok;
}

bool
sandbox_available(char *why, size_t whylen)
{
	return probe(why, whylen);
}

/* argv0 looked up in envp's PATH, as bwrap does inside the sandbox; malloc'd or NULL. */
static char *
path_search(const char *argv0, char *const envp[])
{
	const char *path = "/usr/local/bin:/usr/bin:/bin";

	if (strchr(argv0, '/') != NULL)
		return xstrdup(argv0);
	for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	while (*path != '\0') {
		size_t n = strcspn(path, ":");
		char *cand = xasprintf("%.*s/%s", (int)n, n ? path : ".", argv0);

		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/* Where RLIMIT_NPROC is set inside a sandbox when no cgroup bounds its processes. */
#define PRLIMIT_PATH "/usr/bin/prlimit"

/* sandbox_spawn, with shell_fd (-1: none) as the child's SHELL_CHILD_FD. */
static int
spawn_in_sandbox(const struct sandbox_policy *policy, const char *cwd, char *const argv[],
    char *const envp[], const int fds[3], int shell_fd, pid_t *pid, char *err, size_t errlen)
{
	const char *bwrap = sandbox_bwrap_path();
	const struct sandbox_limits *lim = policy->limits;
	struct child_bounds cb = { .lim = lim, .cgroup_fd = { -1, -1 } };
	struct spawn_cgroups cs = { .fd = { -1, -1 } };
	char why[768] = "";
	struct argv_buf a = { 0 };
	int rc, sfd = -2;
	bool confined = probe(why, sizeof why) && bwrap != NULL;

	if (argv == NULL || argv[0] == NULL) {
		snprintf(err, errlen, "no command to run");
		return -1;
	}
	if (!confined && policy->profile != SANDBOX_FULL_ACCESS && !policy->allow_unconfined) {
		snprintf(err, errlen, "sandbox_unavailable: %s; commands do not run "
		    "unconfined (see taskdeck doctor)", why);
		return -1;
	}
	if (confined && policy->profile != SANDBOX_FULL_ACCESS && (sfd = seccomp_fd()) == -1) {
		snprintf(err, errlen, "sandbox_unavailable: cannot prepare the seccomp filter: %s",
		    strerror(errno));
		return -1;
	}
	if (lim != NULL) {
		cgroups_make(lim, &cs);
		cb.cgroup_fd[0] = cs.fd[0];
		cb.cgroup_fd[1] = cs.fd[1];
		cb.memory_cgroup = cs.memory != NULL;
	}
	if (!confined) {
		/* Unconfined: its own session, killed with the caller thread; what it starts
		 * with setsid may survive (docs/agent.md). */
		char *exe = path_search(argv[0], envp);

		if (exe == NULL) {
			snprintf(err, errlen, "%s: command not found", argv[0]);
			rc = -1;
		} else
			rc = spawn(exe, argv, envp, cwd, fds, (const int[2]){ -1, shell_fd }, &cb,
			    true, pid, err, errlen);
		free(exe);
	} else {
		bwrap_args(&a, bwrap, policy, cwd, sfd >= 0, envp);
		/* No cgroup: RLIMIT_NPROC, set inside the new user namespace. */
		if (lim != NULL && lim->processes > 0 && cs.pids == NULL &&
		    policy->profile != SANDBOX_FULL_ACCESS && access(PRLIMIT_PATH, X_OK) == 0) {
			char opt[48];

			snprintf(opt, sizeof opt, "--nproc=%ld", lim->processes);
			arg(&a, PRLIMIT_PATH);
			arg(&a, opt);
			arg(&a, "--");
		}
		for (size_t i = 0; argv[i] != NULL; i++)
			arg(&a, argv[i]);
		rc = spawn(bwrap, a.v, envp, NULL, fds, (const int[2]){ sfd, shell_fd }, &cb, true,
		    pid, err, errlen);
		argv_free(&a);
	}
	if (sfd >= 0)
		close(sfd);
	for (int i = 0; i < 2; i++)
		if (cs.fd[i] >= 0)
			close(cs.fd[i]);
	if (rc == 0 && lim != NULL)
		bounded_add(*pid, &cs, lim);
	else
		cgroups_drop(&cs);
	return rc;
}

int
sandbox_spawn(const struct sandbox_policy *policy, const char *cwd, char *const argv[],
    char *const envp[], const int fds[3], pid_t *pid, char *err, size_t errlen)
{
	return spawn_in_sandbox(policy, cwd, argv, envp, fds, -1, pid, err, errlen);
}

/*
 * The shell sources /dev/fd/4 (SHELL_CHILD_FD, a sealed memfd): the command behind
 * a first "exec 4<&-", on its line, which closes the inherited descriptor (the
 * shell reads the file through one of its own).  Neither bwrap's nor the shell's
 * command line (what every user sees in /proc/PID/cmdline) holds the command, and
 * no process more than with sh -c is started.
 */
int
sandbox_spawn_shell(const struct sandbox_policy *policy, const char *cwd, const char *command,
    char *const envp[], const int fds[3], pid_t *pid, char *err, size_t errlen)
{
	static char *const argv[] = { "/bin/sh", "-c", ". /dev/fd/4", "sh", NULL };
	static const char prefix[] = "exec 4<&-; ";
	char *text = xasprintf("%s%s", prefix, command);
	size_t len = strlen(text), off = 0;
	int fd = memfd_create("taskdeck-command", MFD_CLOEXEC | MFD_ALLOW_SEALING), rc;

	while (fd >= 0 && off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(text);
	if (fd < 0 || off < len || lseek(fd, 0, SEEK_SET) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
		snprintf(err, errlen, "cannot pass the command to the shell: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rc = spawn_in_sandbox(policy, cwd, argv, envp, fds, fd, pid, err, errlen);
	close(fd);
	return rc;
}

void
sandbox_kill(pid_t pid)
{
	if (pid <= 0)
		return;
	/* The group holds bwrap (or the unconfined command); bwrap's death ends its pid
	 * namespace, and with it everything the command started. */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}
