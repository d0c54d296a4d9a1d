/*
 * The command sandbox (DESIGN.md section 13, docs/agent.md "The sandbox"):
 * every permission profile but full-access is a boundary the kernel enforces,
 * through bubblewrap (user, mount, pid, net and IPC namespaces, no capabilities,
 * no nested user namespaces).  Every profile, full-access too, runs in its own
 * pid namespace so nothing a command starts outlives it.
 */
#ifndef TD_COMMON_SANDBOX_H
#define TD_COMMON_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct td_paths;

enum sandbox_profile { SANDBOX_READ_ONLY, SANDBOX_WORKSPACE_WRITE, SANDBOX_FULL_ACCESS };

/* Resource bounds of what a sandbox runs (docs/agent.md "Resource bounds"); 0 = none. */
struct sandbox_limits {
	long long memory;	/* bytes of memory the sandbox uses (a memory cgroup), else of
				 * data (heap, private mappings) per process (RLIMIT_DATA) */
	long processes;		/* processes and threads at once in the sandbox */
	long cpu_seconds;	/* CPU time per process */
	long long tmp_size;	/* bytes of the private /tmp, and of /dev/shm */
};

struct sandbox_policy {
	enum sandbox_profile profile;
	const char *workspace;      /* canonical absolute dir; writable under WORKSPACE_WRITE;
	                             * may be NULL (nothing writable but a private /tmp) */
	bool network;               /* false: no network at all (not even loopback to the service) */
	const char *const *hidden;  /* NULL-terminated extra paths made unreadable, or NULL */
	bool allow_unconfined;      /* the "sandbox.allowUnconfined" setting: when no sandbox
	                             * can be set up, run unconfined instead of failing */
	/* For a program that keeps state of its own (an external framework CLI,
	 * docs/frameworks.md); non-full-access profiles only, NULL for none. */
	const char *const *dirs;    /* NULL-terminated: directories made (mode 0700) inside the
	                             * sandbox; under /tmp (its private tmpfs) to be writable */
	const char *const *ro_binds; /* NULL-terminated pairs {outside path, inside path, ...}:
	                             * bound read-only after the dirs; a missing source is left out */
	/* NULL-terminated directories or files bound at their own place after what is
	 * hidden (a hidden path strictly inside one is hidden again): a stdio
	 * connector's state directory and the extra paths its definition names
	 * (docs/connectors.md).  Non-full-access profiles only, NULL for none. */
	const char *const *rw_paths;	/* read-write */
	const char *const *ro_paths;	/* read-only */
	/* NULL-terminated paths the user or the service configured (a connector's command
	 * and arguments, a notify command, a framework CLI), never text a model wrote: the
	 * entry right under the host's /tmp that holds one (a checkout, a build or an npm
	 * cache there) is bound read-only, as is one holding a directory of envp's PATH.
	 * Nothing else of the host's /tmp is visible: argv is not looked at. */
	const char *const *programs;
	const struct sandbox_limits *limits;	/* NULL: none */
};

/*
 * Spawns argv (argv[0] searched in PATH) under the policy, in cwd, with envp exactly;
 * fds[0..2] become the child's stdin/stdout/stderr (-1 = /dev/null).  The child and all
 * it starts end with sandbox_kill, and also when the caller process dies -- more exactly
 * the calling THREAD (PR_SET_PDEATHSIG, bwrap --die-with-parent): spawn from a thread
 * that outlives the child, not from a short-lived request thread.  The child is in its
 * own process group; the caller waits for the pid (waitpid).  Returns 0 and the pid to
 * wait for, or -1 with a person-readable message in err, which then starts with
 * "sandbox_unavailable: " when no sandbox can be set up (fail closed: never runs
 * unconfined unless the policy is FULL_ACCESS or allow_unconfined is on).
 */
int sandbox_spawn(const struct sandbox_policy *policy, const char *cwd, char *const argv[],
                  char *const envp[], const int fds[3], pid_t *pid, char *err, size_t errlen);
/*
 * sandbox_spawn of /bin/sh running command (a shell string), which it reads from a
 * descriptor instead of its arguments: /proc/PID/cmdline of bwrap and of the
 * shell, readable by every user, do not show it.  $0 is "sh"; the shell sources it
 * (.) from /dev/fd/4, so its own messages name /dev/fd/4.
 */
int sandbox_spawn_shell(const struct sandbox_policy *policy, const char *cwd,
                        const char *command, char *const envp[], const int fds[3], pid_t *pid,
                        char *err, size_t errlen);
/*
 * Once the child spawned as pid is collected with status (its waitpid status): what
 * a limit of its policy did, for a person, in msg ("" when nothing): "killed: CPU
 * time limit 600 s", "killed: memory limit 2048 MiB", "process limit 512 reached: a
 * fork was refused".  Frees what the bounds held (its cgroups).  Call it once per spawn, limits or not.
 */
void sandbox_limits_end(pid_t pid, int status, char *msg, size_t msglen);
/*
 * At the start of a program that spawns with limits, before any spawn: finds the
 * cgroups the bounds are made in (taking over a cgroup v2 subtree delegated to
 * this process alone) and removes the empty sandbox cgroups "taskdeck-<pid>-<n>"
 * left there by taskdeck processes that died (a kill -9).  Returns how many.
 */
int sandbox_cgroups_init(void);
/* true when memory is bounded by a cgroup per sandbox, false when by RLIMIT_DATA. */
bool sandbox_memory_cgroup(void);
/* SIGKILL everything the spawned child started (its pid namespace and process group).
 * Call it before the pid is collected (waitpid): after, the pid may be another's. */
void sandbox_kill(pid_t pid);
/* true when a sandbox can be set up here; else why, with the next action (for doctor). */
bool sandbox_available(char *why, size_t whylen);

/*
 * What no non-full-access sandbox may read: taskdeck's config, data (database,
 * secret.key, artifacts, every session's workspace), runtime and log locations,
 * ~/.ssh, ~/.gnupg and the credential files listed in docs/agent.md, the sockets of
 * container engines and the system bus, and $XDG_RUNTIME_DIR.  home may be
 * NULL (then $HOME).  Paths that do not exist are left out.  NULL-terminated, malloc'd:
 * free with sandbox_hidden_free.  Add other sessions' workspaces with sandbox_hidden_add.
 */
char **sandbox_hidden_paths(const struct td_paths *paths, const char *home);
/* Appends a copy of path (no-op when it does not exist); returns the (moved) list. */
char **sandbox_hidden_add(char **list, const char *path);
void sandbox_hidden_free(char **list);

/* Where bwrap is looked for; "bwrap" in PATH unless TASKDECK_BWRAP names a file. */
const char *sandbox_bwrap_path(void);

#endif
