/* The seccomp filter the sandbox's commands run under (sandbox-int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "sandbox-int.h"

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

int
sandbox_seccomp_fd(void)
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
int
sandbox_seccomp_fd(void)
{
	return -2;	/* no filter for this architecture (docs/agent.md) */
}
#endif
