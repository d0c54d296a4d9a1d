/*
 * The command sandbox on its own (src/common/sandbox.c): for each profile, the
 * attacks of issue 13 against real bubblewrap, and no survivors after the
 * command ends, after sandbox_kill and after the spawning process dies.
 * Scratch files live below the build directory: /tmp is private in the sandbox,
 * so a secret kept there would prove nothing.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"
#include "../procs.h"
#include "sandbox.h"
#include "xalloc.h"

static char root[512], ws[600], outside[600], secret_dir[600], secret_file[700];

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void
setup_files(void)
{
	char tmpl[] = "sbx-unit-XXXXXX";
	char key[800];

	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, root));
	snprintf(ws, sizeof ws, "%s/ws", root);
	snprintf(outside, sizeof outside, "%s/outside", root);
	snprintf(secret_dir, sizeof secret_dir, "%s/home/.ssh", root);
	snprintf(secret_file, sizeof secret_file, "%s/home/token", root);
	cr_assert(paths_mkdir_p(ws, 0700) && paths_mkdir_p(outside, 0700) && paths_mkdir_p(secret_dir, 0700));
	write_file(secret_file, "TOKEN-SECRET-1\n");
	snprintf(key, sizeof key, "%s/id_rsa", secret_dir);
	write_file(key, "KEY-SECRET-2\n");
}

static void
teardown(void)
{
	char *cmd = xasprintf("rm -rf '%s'", root);

	cr_expect_eq(system(cmd), 0);
	free(cmd);
}

/* Runs argv under pol; its exit status; output in out. */
static int
run_argv(const struct sandbox_policy *pol, char *const argv[], char *out, size_t outlen)
{
	char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", NULL };
	char err[1024];
	int p[2], status = 0, fds[3];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fds[0] = -1, fds[1] = p[1], fds[2] = p[1];
	cr_assert_eq(sandbox_spawn(pol, pol->workspace ? pol->workspace : "/", argv, envp, fds,
	    &pid, err, sizeof err), 0, "%s", err);
	close(p[1]);
	while (len + 1 < outlen && (n = read(p[0], out + len, outlen - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(p[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs script with sh -c under pol; its exit status; output in out. */
static int
run(const struct sandbox_policy *pol, const char *script, char *out, size_t outlen)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };

	return run_argv(pol, argv, out, outlen);
}

/* Processes whose command line is "sleep <arg>". */
static int
count_sleep(const char *arg)
{
	int n = procs_count_command("sleep", arg);

	cr_assert_geq(n, 0, "cannot read /proc");
	return n;
}

/* Waits up to 5 s for count_sleep(arg) to be 0; the last count. */
static int
survivors(const char *arg)
{
	int n = count_sleep(arg);

	for (int i = 0; i < 100 && n > 0; i++) {
		usleep(50000);
		n = count_sleep(arg);
	}
	return n;
}

static const char *const *
hidden_list(void)
{
	static const char *list[3];

	list[0] = secret_dir;
	list[1] = secret_file;
	list[2] = NULL;
	return list;
}

static void
attacks(enum sandbox_profile profile, bool network)
{
	struct sandbox_policy pol = { .profile = profile, .workspace = ws,
		.network = network, .hidden = hidden_list() };
	char out[8192], script[4096], path[800];
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof addr;
	int lfd, cfd;
	bool full = profile == SANDBOX_FULL_ACCESS;

	/* write outside the workspace, inside it, and in /tmp */
	snprintf(script, sizeof script, "echo x > '%s/escaped'; echo y > '%s/inside'; "
	    "echo z > /tmp/sbx-unit-private-%d && echo TMPOK", outside, ws, (int)getpid());
	run(&pol, script, out, sizeof out);
	snprintf(path, sizeof path, "%s/escaped", outside);
	cr_expect_eq(access(path, F_OK) == 0, full, "write outside the workspace: %s", out);
	snprintf(path, sizeof path, "%s/inside", ws);
	cr_expect_eq(access(path, F_OK) == 0, profile != SANDBOX_READ_ONLY,
	    "write in the workspace: %s", out);
	cr_expect_not_null(strstr(out, "TMPOK"), "/tmp must be writable: %s", out);
	snprintf(path, sizeof path, "/tmp/sbx-unit-private-%d", (int)getpid());
	cr_expect_eq(access(path, F_OK) == 0, full, "/tmp must be private");
	unlink(path);

	/* read the hidden files, and this process's /proc entry */
	snprintf(script, sizeof script, "cat '%s' '%s/id_rsa'; ls -a '%s' | grep -q id_rsa && echo LISTED; "
	    "cat /proc/%d/environ && echo PROCVISIBLE", secret_file, secret_dir, secret_dir,
	    (int)getpid());
	run(&pol, script, out, sizeof out);
	cr_expect_eq(strstr(out, "TOKEN-SECRET-1") != NULL, full, "token read: %s", out);
	cr_expect_eq(strstr(out, "KEY-SECRET-2") != NULL, full, "key read: %s", out);
	cr_expect_eq(strstr(out, "LISTED") != NULL, full, "hidden dir listed: %s", out);
	/* every profile has its own pid namespace: full-access too */
	cr_expect_null(strstr(out, "PROCVISIBLE"), "caller's /proc entry: %s", out);

#ifdef __x86_64__
	/* the kernel keyrings, which no namespace covers: keyctl(GET_KEYRING_ID, session) */
	run(&pol, "perl -e '$r = syscall(250, 0, -3, 0); "
	    "print \"KEYCTL=\", ($r == -1 ? $! + 0 : \"ok\"), \"\\n\"'", out, sizeof out);
	cr_expect_eq(strstr(out, "KEYCTL=1\n") != NULL, !full, "keyctl: %s", out);
	cr_expect_not_null(strstr(out, "KEYCTL="), "%s", out);
#endif

	/* connect to a loopback port of the caller */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert(lfd >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&addr, sizeof addr), 0);
	cr_assert_eq(listen(lfd, 4), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&addr, &alen), 0);
	snprintf(script, sizeof script, "bash -c 'echo hi > /dev/tcp/127.0.0.1/%d' 2>&1",
	    ntohs(addr.sin_port));
	run(&pol, script, out, sizeof out);
	cfd = accept(lfd, NULL, NULL);
	cr_expect_eq(cfd >= 0, full || network, "connection to the caller's port: %s", out);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
}

TestSuite(sandbox, .init = setup_files, .fini = teardown, .timeout = 60);

Test(sandbox, read_only_attacks)
{
	attacks(SANDBOX_READ_ONLY, false);
}

Test(sandbox, workspace_write_attacks)
{
	attacks(SANDBOX_WORKSPACE_WRITE, false);
}

Test(sandbox, workspace_write_with_network_reaches_loopback)
{
	attacks(SANDBOX_WORKSPACE_WRITE, true);
}

Test(sandbox, full_access_is_the_user)
{
	attacks(SANDBOX_FULL_ACCESS, false);
}

/* Starts the usual escapers (setsid, nohup, a SIGTERM-ignorer) tagged with tag. */
static char *
escapers(const char *tag, const char *tail)
{
	return xasprintf("setsid sleep %s1 & nohup sleep %s2 >/dev/null 2>&1 & "
	    "sh -c 'trap \"\" TERM; sleep %s3' & %s", tag, tag, tag, tail);
}

static void
no_survivors(enum sandbox_profile profile, int how)
{
	struct sandbox_policy pol = { .profile = profile, .workspace = ws, .hidden = hidden_list() };
	char tag[32], a1[40], a2[40], a3[40], err[512];
	char *script;
	int status;
	pid_t pid, mid;

	snprintf(tag, sizeof tag, "8%d%d", (int)getpid() % 100000, how);
	snprintf(a1, sizeof a1, "%s1", tag);
	snprintf(a2, sizeof a2, "%s2", tag);
	snprintf(a3, sizeof a3, "%s3", tag);
	script = escapers(tag, how == 0 ? "sleep 1; exit 0" : "sleep 1000");
	char *argv[] = { "sh", "-c", script, NULL };
	char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	int fds[3] = { -1, -1, -1 };

	if (how == 2) {
		/* the spawning process dies with SIGKILL */
		mid = fork();
		cr_assert(mid >= 0);
		if (mid == 0) {
			if (sandbox_spawn(&pol, ws, argv, envp, fds, &pid, err, sizeof err) != 0)
				_exit(1);
			pause();
			_exit(0);
		}
		for (int i = 0; i < 200 && count_sleep(a1) + count_sleep(a2) + count_sleep(a3) < 3;
		    i++)
			usleep(50000);
		cr_expect_eq(count_sleep(a1), 1, "the escaper did not start");
		kill(mid, SIGKILL);
		waitpid(mid, &status, 0);
	} else {
		cr_assert_eq(sandbox_spawn(&pol, ws, argv, envp, fds, &pid, err, sizeof err), 0,
		    "%s", err);
		for (int i = 0; i < 200 && count_sleep(a1) + count_sleep(a2) + count_sleep(a3) < 3;
		    i++)
			usleep(50000);
		cr_expect_eq(count_sleep(a1), 1, "the escaper did not start");
		if (how == 1)
			sandbox_kill(pid);
		waitpid(pid, &status, 0);
	}
	cr_expect_eq(survivors(a1), 0, "setsid survivor");
	cr_expect_eq(survivors(a2), 0, "nohup survivor");
	cr_expect_eq(survivors(a3), 0, "SIGTERM-ignoring survivor");
	free(script);
}

Test(sandbox, nothing_outlives_a_finished_command)
{
	no_survivors(SANDBOX_WORKSPACE_WRITE, 0);
	no_survivors(SANDBOX_READ_ONLY, 0);
	no_survivors(SANDBOX_FULL_ACCESS, 0);
}

Test(sandbox, nothing_outlives_sandbox_kill)
{
	no_survivors(SANDBOX_WORKSPACE_WRITE, 1);
	no_survivors(SANDBOX_FULL_ACCESS, 1);
}

Test(sandbox, nothing_outlives_the_caller)
{
	no_survivors(SANDBOX_READ_ONLY, 2);
	no_survivors(SANDBOX_FULL_ACCESS, 2);
}

Test(sandbox, fails_closed_without_bwrap)
{
	struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE, .workspace = ws };
	char *argv[] = { "true", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	int fds[3] = { -1, -1, -1 }, status;
	char err[1024], why[1024];
	pid_t pid;

	setenv("TASKDECK_BWRAP", "/nonexistent/bwrap", 1);
	cr_expect_not(sandbox_available(why, sizeof why));
	cr_expect_not_null(strstr(why, "bubblewrap"), "%s", why);
	cr_expect_eq(sandbox_spawn(&pol, ws, argv, envp, fds, &pid, err, sizeof err), -1);
	cr_expect_eq(strncmp(err, "sandbox_unavailable: ", 21), 0, "%s", err);
	pol.profile = SANDBOX_READ_ONLY;
	cr_expect_eq(sandbox_spawn(&pol, ws, argv, envp, fds, &pid, err, sizeof err), -1);
	/* the explicit setting, and full-access, run unconfined */
	pol.allow_unconfined = true;
	cr_assert_eq(sandbox_spawn(&pol, ws, argv, envp, fds, &pid, err, sizeof err), 0, "%s", err);
	cr_expect_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pol.allow_unconfined = false;
	pol.profile = SANDBOX_FULL_ACCESS;
	cr_assert_eq(sandbox_spawn(&pol, ws, argv, envp, fds, &pid, err, sizeof err), 0, "%s", err);
	cr_expect_eq(waitpid(pid, &status, 0), pid);
	unsetenv("TASKDECK_BWRAP");
	cr_expect(sandbox_available(why, sizeof why), "%s", why);
}

Test(sandbox, hidden_paths_cover_taskdeck_and_credentials)
{
	struct td_paths p;
	char home[800], tdhome[800], ssh[900];
	char **list;
	bool token = false, data = false, sshd = false, missing = false;

	snprintf(home, sizeof home, "%s/home", root);
	snprintf(tdhome, sizeof tdhome, "%s/td", root);
	snprintf(ssh, sizeof ssh, "%s/.ssh", home);
	cr_assert(paths_mkdir_p(tdhome, 0700));
	setenv("TASKDECK_HOME", tdhome, 1);
	cr_assert(paths_init(&p));
	write_file(p.token, "t\n");
	list = sandbox_hidden_paths(&p, home);
	for (char **l = list; *l; l++) {
		token |= strcmp(*l, p.token) == 0;
		data |= strcmp(*l, tdhome) == 0;
		sshd |= strcmp(*l, ssh) == 0;
		missing |= strstr(*l, ".gnupg") != NULL;	/* does not exist: left out */
	}
	cr_expect(token && data && sshd);
	cr_expect_not(missing);
	sandbox_hidden_free(list);
	paths_free(&p);
	unsetenv("TASKDECK_HOME");
}

/* A workspace below a hidden directory stays usable; the rest of it does not. */
Test(sandbox, workspace_below_a_hidden_directory)
{
	char hidden_root[800], own[900], other[900], script[4096], out[4096], path[1000];
	const char *list[] = { hidden_root, NULL };
	struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE, .hidden = list };

	snprintf(hidden_root, sizeof hidden_root, "%s/data", root);
	snprintf(own, sizeof own, "%s/workspaces/s1", hidden_root);
	snprintf(other, sizeof other, "%s/workspaces/s2", hidden_root);
	cr_assert(paths_mkdir_p(own, 0700) && paths_mkdir_p(other, 0700));
	snprintf(path, sizeof path, "%s/notes", other);
	write_file(path, "OTHER-SESSION-3\n");
	pol.workspace = own;
	snprintf(script, sizeof script, "echo mine > out.txt; cat '%s/notes'; "
	    "echo bad > '%s/x' ; echo bad > '%s/x'", other, other, hidden_root);
	run(&pol, script, out, sizeof out);
	snprintf(path, sizeof path, "%s/out.txt", own);
	cr_expect_eq(access(path, F_OK), 0, "%s", out);
	cr_expect_null(strstr(out, "OTHER-SESSION-3"), "%s", out);
	snprintf(path, sizeof path, "%s/x", other);
	cr_expect_neq(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/x", hidden_root);
	cr_expect_neq(access(path, F_OK), 0);
}

/* A workspace holding hidden paths (a session in $HOME): they stay hidden in it. */
Test(sandbox, hidden_paths_inside_the_workspace)
{
	char tdhome[800], token[900], key[900], script[4096], out[4096], path[1000];
	const char *list[] = { tdhome, key, NULL };
	struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE, .workspace = root,
		.hidden = list };

	snprintf(tdhome, sizeof tdhome, "%s/.config/taskdeck", root);
	snprintf(token, sizeof token, "%s/token", tdhome);
	snprintf(key, sizeof key, "%s/id_ed25519", root);
	cr_assert(paths_mkdir_p(tdhome, 0700));
	write_file(token, "TOKEN-IN-WS-4\n");
	write_file(key, "KEY-IN-WS-5\n");
	snprintf(script, sizeof script, "cat '%s' '%s'; echo x > '%s/new' && echo WROTE; "
	    "echo y > ws-file && echo WSOK", token, key, tdhome);
	run(&pol, script, out, sizeof out);
	cr_expect_null(strstr(out, "TOKEN-IN-WS-4"), "%s", out);
	cr_expect_null(strstr(out, "KEY-IN-WS-5"), "%s", out);
	cr_expect_null(strstr(out, "WROTE"), "a hidden directory was writable: %s", out);
	cr_expect_not_null(strstr(out, "WSOK"), "%s", out);
	snprintf(path, sizeof path, "%s/new", tdhome);
	cr_expect_neq(access(path, F_OK), 0);
}

/*
 * Hidden paths that nest (a session's directory in $HOME holds ~/.ssh; the data
 * directory holds the workspaces), listed in either order, outside the workspace
 * and inside it: the command runs and sees none of them.
 */
Test(sandbox, nested_hidden_paths_in_any_order)
{
	char home[800], key[900], inner[900], deep[1000], deep_file[1100], out[4096], script[4096];

	snprintf(home, sizeof home, "%s/home", root);
	snprintf(key, sizeof key, "%s/id_rsa", secret_dir);
	snprintf(inner, sizeof inner, "%s/inner", ws);
	snprintf(deep, sizeof deep, "%s/deeper/still", inner);
	snprintf(deep_file, sizeof deep_file, "%s/f", deep);
	cr_assert(paths_mkdir_p(deep, 0700));
	write_file(deep_file, "DEEP-SECRET-6\n");
	snprintf(script, sizeof script, "cat '%s' '%s' '%s'; ls '%s' | sed s/^/LS:/; echo RAN",
	    key, secret_file, deep_file, inner);
	{
		const char *orders[][5] = {
			{ secret_dir, secret_file, home, deep, inner },
			{ home, secret_dir, secret_file, inner, deep },
			{ deep, secret_dir, inner, home, secret_file },
		};

		for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
			const char *list[] = { orders[i][0], orders[i][1], orders[i][2], orders[i][3],
				orders[i][4], NULL };
			struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE,
				.workspace = ws, .hidden = list };
			int rc = run(&pol, script, out, sizeof out);

			cr_expect_eq(rc, 0, "order %zu: %s", i, out);
			cr_expect_not_null(strstr(out, "RAN"), "order %zu: %s", i, out);
			cr_expect_null(strstr(out, "KEY-SECRET-2"), "order %zu: %s", i, out);
			cr_expect_null(strstr(out, "TOKEN-SECRET-1"), "order %zu: %s", i, out);
			cr_expect_null(strstr(out, "DEEP-SECRET-6"), "order %zu: %s", i, out);
			cr_expect_null(strstr(out, "LS:deeper"), "order %zu: %s", i, out);
		}
	}
}

/* sandbox_spawn_shell: the shell gets the command whole, as sh -c would, and no extra fd. */
Test(sandbox, the_shell_reads_the_command_from_a_descriptor)
{
	const char *command = "printf 'a\\nb\\n' | wc -l; echo \"zero=$0\"; "
	    "ls /proc/self/fd | tr '\\n' ' '; echo; cat <<EOF\nheredoc\nEOF\nexit 5\n\n";

	for (int profile = SANDBOX_WORKSPACE_WRITE; profile <= SANDBOX_FULL_ACCESS; profile++) {
		struct sandbox_policy pol = { .profile = (enum sandbox_profile)profile,
			.workspace = ws };
		char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
		char out[4096], err[1024];
		int p[2], status = 0, fds[3];
		size_t len = 0;
		ssize_t n;
		pid_t pid;

		cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
		fds[0] = -1, fds[1] = p[1], fds[2] = p[1];
		cr_assert_eq(sandbox_spawn_shell(&pol, ws, command, envp, fds, &pid, err,
		    sizeof err), 0, "%s", err);
		close(p[1]);
		while (len + 1 < sizeof out && (n = read(p[0], out + len, sizeof out - 1 - len)) > 0)
			len += (size_t)n;
		out[len] = '\0';
		close(p[0]);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 5, "status %d: %s", status, out);
		/* fds 0, 1, 2 and the one ls reads /proc/self/fd with (3) */
		cr_expect_str_eq(out, "2\nzero=sh\n0 1 2 3 \nheredoc\n", "profile %d", profile);
	}
}

/*
 * Without a cgroup (a user that cannot make one), the process bound is
 * RLIMIT_NPROC set inside the sandbox's user namespace: it counts the sandbox's
 * processes, not the user's others.  Run as nobody, who has 12 processes already.
 */
Test(sandbox, process_bound_without_a_cgroup_counts_the_sandbox_only)
{
	int p[2], status;
	pid_t child;
	char out[4096];
	size_t len = 0;
	ssize_t n;

	if (geteuid() != 0)
		cr_skip_test("needs root to become nobody");
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	if ((child = fork()) == 0) {
		struct sandbox_limits lim = { .processes = 8 };
		struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE, .limits = &lim };
		char *envp[] = { "PATH=/usr/bin:/bin", NULL }, err[512];
		pid_t others[12], pid;
		int fds[3] = { -1, p[1], p[1] }, st;

		close(p[0]);
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(90);
		for (int i = 0; i < 12; i++)
			if ((others[i] = fork()) == 0) {
				execl("/bin/sleep", "sleep", "30", (char *)NULL);
				_exit(127);
			}
		if (sandbox_spawn_shell(&pol, "/", "i=0; while [ $i -lt 30 ]; do sleep 30 & "
		    "i=$((i + 1)); echo started $i; done", envp, fds, &pid, err, sizeof err) != 0) {
			dprintf(p[1], "spawn: %s\n", err);
			_exit(91);
		}
		close(p[1]);
		waitpid(pid, &st, 0);
		sandbox_limits_end(pid, st, err, sizeof err);
		for (int i = 0; i < 12; i++) {
			kill(others[i], SIGKILL);
			waitpid(others[i], NULL, 0);
		}
		_exit(0);
	}
	close(p[1]);
	while (len + 1 < sizeof out && (n = read(p[0], out + len, sizeof out - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(p[0]);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, out);
	/* bwrap's init and the shell count too: some sleeps start, never 30 */
	cr_expect_not_null(strstr(out, "started 3\n"), "the user's other processes counted: %s",
	    out);
	cr_expect_null(strstr(out, "started 9\n"), "not bounded: %s", out);
}

/*
 * A program's private state (the framework CLIs, docs/frameworks.md): directories
 * made in the private /tmp are writable; a file bound read-only there is readable
 * but not writable, even when its source is hidden; a missing source is left out.
 */
Test(sandbox, private_dirs_and_read_only_binds)
{
	char cred[800], missing[800], out[4096];
	const char *dirs[] = { "/tmp/home", "/tmp/tmp", NULL };
	const char *binds[] = { cred, "/tmp/home/.claude/.credentials.json",
		missing, "/tmp/home/absent", NULL };
	const char *hidden[] = { secret_dir, NULL };
	struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE, .workspace = ws,
		.hidden = hidden, .dirs = dirs, .ro_binds = binds };
	int rc;

	snprintf(cred, sizeof cred, "%s/creds.json", secret_dir);	/* hidden itself */
	snprintf(missing, sizeof missing, "%s/no-such-file", root);
	write_file(cred, "LOGIN-SECRET-3\n");
	rc = run(&pol, "echo state > /tmp/home/state && echo t > /tmp/tmp/t && "
	    "cat /tmp/home/.claude/.credentials.json && "
	    "! echo x 2>/dev/null > /tmp/home/.claude/.credentials.json && "
	    "[ ! -e /tmp/home/absent ] && "
	    "[ \"$(stat -c %a /tmp/home)\" = 700 ] && echo ok", out, sizeof out);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect_str_eq(out, "LOGIN-SECRET-3\nok\n");
	/* The source stays hidden at its own path. */
	snprintf(out, sizeof out, "cat '%s' 2>/dev/null || echo hidden", cred);
	rc = run(&pol, out, out, sizeof out);
	cr_expect_str_eq(out, "hidden\n");
	/* The bind left the file as it was. */
	{
		FILE *f = fopen(cred, "r");
		char line[64] = "";

		cr_assert_not_null(f);
		cr_expect_not_null(fgets(line, sizeof line, f));
		fclose(f);
		cr_expect_str_eq(line, "LOGIN-SECRET-3\n");
	}
}

/*
 * A connector's own paths: its state directory inside a hidden data directory is
 * writable, a sibling's is not readable; a read-only path holding a hidden one
 * shows the rest but not what is hidden in it.
 */
Test(sandbox, own_paths_are_bound_after_what_is_hidden)
{
	char data[800], mine[900], other[900], given[800], key[900], file[900], script[8192];
	char out[4096], path[1000];
	const char *hidden[] = { data, key, NULL };
	const char *rw[] = { mine, NULL }, *ro[] = { given, NULL };
	struct sandbox_policy pol = { .profile = SANDBOX_READ_ONLY, .workspace = ws,
		.hidden = hidden, .rw_paths = rw, .ro_paths = ro };
	int rc;

	snprintf(data, sizeof data, "%s/data", root);
	snprintf(mine, sizeof mine, "%s/connector-state/con_a", data);
	snprintf(other, sizeof other, "%s/connector-state/con_b", data);
	snprintf(given, sizeof given, "%s/given", root);
	snprintf(key, sizeof key, "%s/.ssh", given);
	cr_assert(paths_mkdir_p(mine, 0700) && paths_mkdir_p(other, 0700) && paths_mkdir_p(key, 0700));
	snprintf(path, sizeof path, "%s/graph", other);
	write_file(path, "OTHER-STATE-7\n");
	snprintf(path, sizeof path, "%s/id", key);
	write_file(path, "KEY-SECRET-8\n");
	snprintf(file, sizeof file, "%s/notes", given);
	write_file(file, "GIVEN-NOTES-9\n");
	snprintf(script, sizeof script, "echo state > '%s/graph' && cat '%s' && "
	    "{ cat '%s/graph' 2>/dev/null; cat '%s/id' 2>/dev/null; "
	    "echo x 2>/dev/null > '%s/new'; echo end; }", mine, file, other, key, given);
	rc = run(&pol, script, out, sizeof out);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect_str_eq(out, "GIVEN-NOTES-9\nend\n");
	snprintf(path, sizeof path, "%s/graph", mine);
	cr_expect_eq(access(path, F_OK), 0, "the state directory was not writable");
	snprintf(path, sizeof path, "%s/new", given);
	cr_expect_neq(access(path, F_OK), 0, "a read-only path was written");
	/* Without them, the state directory is hidden with the data directory. */
	pol.rw_paths = NULL;
	pol.ro_paths = NULL;
	snprintf(script, sizeof script, "cat '%s/graph' 2>/dev/null || echo hidden", mine);
	run(&pol, script, out, sizeof out);
	cr_expect_str_eq(out, "hidden\n");
}

/* The logins of the framework CLIs are hidden like the other credentials. */
Test(sandbox, hidden_paths_cover_the_cli_logins)
{
	char home[800], path[900];
	const char *const names[] = { ".claude", ".claude.json", ".codex" };
	bool seen[3] = { false, false, false };
	char **list;

	snprintf(home, sizeof home, "%s/home", root);
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", home, names[i]);
		if (i == 1)
			write_file(path, "{}\n");
		else
			cr_assert(paths_mkdir_p(path, 0700));
	}
	list = sandbox_hidden_paths(NULL, home);
	for (char **l = list; *l; l++) {
		for (size_t i = 0; i < 3; i++) {
			snprintf(path, sizeof path, "%s/%s", home, names[i]);
			seen[i] |= strcmp(*l, path) == 0;
		}
	}
	for (size_t i = 0; i < 3; i++)
		cr_expect(seen[i], "%s is not hidden", names[i]);
	sandbox_hidden_free(list);
}

/*
 * A configured program under the host's /tmp (a checkout or an npm cache there)
 * runs in the sandbox, which has a /tmp of its own: the entry right under /tmp
 * that holds it is bound read-only, what is hidden in it stays hidden, and
 * nothing else of the host's /tmp shows.  Named only in a command, it is not.
 */
Test(sandbox, a_program_under_tmp_is_visible_read_only)
{
	char top[] = "/tmp/sbx-prog-XXXXXX", other[] = "/tmp/sbx-other-XXXXXX";
	char prog[600], data[600], secret[600], inner_secret[700], other_file[600], wrote[600];
	char out[4096], *cmd;
	const char *hidden[] = { secret, NULL };

	cr_assert_not_null(mkdtemp(top));
	cr_assert_not_null(mkdtemp(other));
	snprintf(prog, sizeof prog, "%s/bin/prog", top);
	snprintf(data, sizeof data, "%s/share/data", top);
	snprintf(secret, sizeof secret, "%s/secret", top);
	snprintf(inner_secret, sizeof inner_secret, "%s/s", secret);
	snprintf(other_file, sizeof other_file, "%s/file", other);
	snprintf(wrote, sizeof wrote, "%s/wrote", top);
	cr_assert(paths_mkdir_p(prog, 0700) && rmdir(prog) == 0);
	cr_assert(paths_mkdir_p(data, 0700) && rmdir(data) == 0);
	cr_assert(paths_mkdir_p(secret, 0700));
	write_file(data, "DATA-OK\n");
	write_file(inner_secret, "SECRET-3\n");
	write_file(other_file, "OTHER-4\n");
	cmd = xasprintf("#!/bin/sh\ncat \"$(dirname \"$0\")/../share/data\"; cat \"$1\"; "
	    "cat '%s'; echo w > '%s' && echo WROTE; echo RAN\n", other_file, wrote);
	write_file(prog, cmd);
	free(cmd);
	cr_assert_eq(chmod(prog, 0755), 0);

	for (int profile = SANDBOX_READ_ONLY; profile <= SANDBOX_WORKSPACE_WRITE; profile++) {
		char *argv[] = { prog, inner_secret, NULL };
		struct sandbox_policy pol = { .profile = (enum sandbox_profile)profile,
			.workspace = ws, .hidden = hidden,
			.programs = (const char *const *)argv };

		run_argv(&pol, argv, out, sizeof out);
		cr_expect_not_null(strstr(out, "RAN"), "the program did not start: %s", out);
		cr_expect_not_null(strstr(out, "DATA-OK"), "its files: %s", out);
		cr_expect_null(strstr(out, "SECRET-3"), "a hidden path in it: %s", out);
		cr_expect_null(strstr(out, "OTHER-4"), "the rest of the host's /tmp: %s", out);
		cr_expect_null(strstr(out, "WROTE"), "it is bound read-only: %s", out);
		cr_expect_neq(access(wrote, F_OK), 0);
	}
	/* Not configured, only named in the command: nothing of the host's /tmp shows. */
	{
		char *argv[] = { "sh", "-c", data, NULL };
		struct sandbox_policy pol = { .profile = SANDBOX_WORKSPACE_WRITE,
			.workspace = ws, .hidden = hidden };

		cmd = xasprintf("%s; cat %s; echo RAN", prog, data);
		argv[2] = cmd;
		run_argv(&pol, argv, out, sizeof out);
		cr_expect_not_null(strstr(out, "RAN"), "the shell did not start: %s", out);
		cr_expect_null(strstr(out, "DATA-OK"), "the command chose a mount: %s", out);
		free(cmd);
	}
	cmd = xasprintf("rm -rf '%s' '%s'", top, other);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
}
