/*
 * The parts of the sandbox (sandbox.h) and what they share.  sandbox.c spawns:
 * it asks sandbox-bwrap.c for bubblewrap's arguments, sandbox-seccomp.c for
 * the filter and sandbox-limits.c for the cgroups of a spawn's bounds; those
 * three call nothing of each other nor of sandbox.c.  sandbox-hidden.c makes
 * the hidden list a caller puts in a policy.  Locks: sandbox.c's probe lock and
 * sandbox-limits.c's list of bounded spawns, neither taken under the other.
 */
#ifndef TD_COMMON_SANDBOX_INT_H
#define TD_COMMON_SANDBOX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sandbox_policy;
struct sandbox_limits;

/* The fd the child gets the seccomp filter on, for bwrap --seccomp. */
#define SECCOMP_CHILD_FD 3
/* The fd sandbox_spawn_shell's shell reads its command from. */
#define SHELL_CHILD_FD 4

/* ---- sandbox-bwrap.c ------------------------------------------------------------ */

/* A NULL-terminated argv being built; owns its strings. */
struct sandbox_argv {
	char **v;
	size_t n, cap;
};

/* Appends a copy of s. */
void sandbox_arg(struct sandbox_argv *a, const char *s);
void sandbox_argv_free(struct sandbox_argv *a);
/*
 * bwrap and its arguments before the command, for pol in cwd (NULL: "/"); with
 * seccomp, the filter is read from SECCOMP_CHILD_FD.  envp: the command's, or NULL.
 */
void sandbox_bwrap_args(struct sandbox_argv *a, const char *bwrap,
    const struct sandbox_policy *pol, const char *cwd, bool seccomp, char *const envp[]);

/* ---- sandbox-seccomp.c ---------------------------------------------------------- */

/* A sealed memfd holding the filter for bwrap --seccomp; -1 on failure, -2 when
 * this architecture has no filter. */
int sandbox_seccomp_fd(void);

/* ---- sandbox-limits.c ----------------------------------------------------------- */

/* The cgroups of one spawn with limits. */
struct sandbox_cgroups {
	char *pids, *memory;	/* made, or NULL */
	int fd[2];		/* their cgroup.procs, for the child; -1: none */
};

/* Makes the cgroups lim needs where they can be made; what cannot stays NULL. */
void sandbox_cgroups_make(const struct sandbox_limits *lim, struct sandbox_cgroups *cs);
/* Removes and frees cs's cgroups (a spawn that failed). */
void sandbox_cgroups_drop(struct sandbox_cgroups *cs);
/* Remembers the spawn pid with limits until sandbox_limits_end (takes cs's cgroups). */
void sandbox_bounded_add(pid_t pid, struct sandbox_cgroups *cs,
    const struct sandbox_limits *lim);

#endif
