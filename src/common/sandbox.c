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
 *
 * This file spawns; its parts (sandbox-int.h) make bwrap's arguments, the
 * seccomp filter, the resource bounds and the hidden list.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox-int.h"
#include "sandbox.h"
#include "xalloc.h"

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
	struct sandbox_argv a = { 0 };
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
	sfd = sandbox_seccomp_fd();
	sandbox_bwrap_args(&a, bwrap, &pol, "/", sfd >= 0, NULL);
	sandbox_arg(&a, "true");
	fds[0] = -1, fds[1] = pipefd[1], fds[2] = pipefd[1];
	ok = spawn(bwrap, a.v, envp, "/", fds, (const int[2]){ sfd, -1 }, NULL, true, &pid,
	    why, whylen) == 0;
	if (sfd >= 0)
		close(sfd);
	close(pipefd[1]);
	sandbox_argv_free(&a);
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
	struct sandbox_cgroups cs = { .fd = { -1, -1 } };
	char why[768] = "";
	struct sandbox_argv a = { 0 };
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
	if (confined && policy->profile != SANDBOX_FULL_ACCESS && (sfd = sandbox_seccomp_fd()) == -1) {
		snprintf(err, errlen, "sandbox_unavailable: cannot prepare the seccomp filter: %s",
		    strerror(errno));
		return -1;
	}
	if (lim != NULL) {
		sandbox_cgroups_make(lim, &cs);
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
		sandbox_bwrap_args(&a, bwrap, policy, cwd, sfd >= 0, envp);
		/* No cgroup: RLIMIT_NPROC, set inside the new user namespace. */
		if (lim != NULL && lim->processes > 0 && cs.pids == NULL &&
		    policy->profile != SANDBOX_FULL_ACCESS && access(PRLIMIT_PATH, X_OK) == 0) {
			char opt[48];

			snprintf(opt, sizeof opt, "--nproc=%ld", lim->processes);
			sandbox_arg(&a, PRLIMIT_PATH);
			sandbox_arg(&a, opt);
			sandbox_arg(&a, "--");
		}
		for (size_t i = 0; argv[i] != NULL; i++)
			sandbox_arg(&a, argv[i]);
		rc = spawn(bwrap, a.v, envp, NULL, fds, (const int[2]){ sfd, shell_fd }, &cb, true,
		    pid, err, errlen);
		sandbox_argv_free(&a);
	}
	if (sfd >= 0)
		close(sfd);
	for (int i = 0; i < 2; i++)
		if (cs.fd[i] >= 0)
			close(cs.fd[i]);
	if (rc == 0 && lim != NULL)
		sandbox_bounded_add(*pid, &cs, lim);
	else
		sandbox_cgroups_drop(&cs);
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
