/*
 * The sandbox through a real taskdeckd (issue 13, docs/agent.md "The sandbox"):
 * replay transcripts run scripts the test writes into the workspace.
 * - attack.sh tries, under each profile, to write outside the workspace, read the
 *   token, secret.key, the database, a ~/.ssh key, /proc/<service>/environ, and to
 *   connect to the service's port; its exit status is a bit mask of what worked.
 * - escape.sh starts setsid, nohup and SIGTERM-ignoring jobs; after finish, cancel,
 *   agent kill -9 and service kill -9 none of them is left in /proc.
 * - approve.sh (profile ask) leaves a job that tries to answer later prompts itself.
 * The service's home, the workspace and the secrets live below the build
 * directory, not in /tmp, which every sandbox replaces with its own.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "../procs.h"
#include "json.h"
#include "sandbox.h"
#include "timeutil.h"

#define FINAL_WAIT_MS 30000
#define KEY_VALUE "sk-sandbox-test-KEY-0123456789"

enum attack_bit {
	WROTE_OUTSIDE = 1, READ_TOKEN = 2, READ_SECRET_KEY = 4, READ_DATABASE = 8,
	READ_SSH_KEY = 16, READ_SERVICE_ENVIRON = 32, REACHED_SERVICE = 64,
	READ_OTHER_SESSION = 128,
};

static char base[160], ws[192], outside[192], home[192], other[192];

static void
write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void
setup(void)
{
	char tmpl[] = "sbx-it-XXXXXX", path[PATH_MAX + 32];

	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, path));
	cr_assert_lt(strlen(path), 100, "the build directory's path is too long for the test");
	snprintf(base, sizeof base, "%s", path);
	snprintf(ws, sizeof ws, "%s/ws", base);
	snprintf(outside, sizeof outside, "%s/outside", base);
	snprintf(home, sizeof home, "%s/home", base);
	snprintf(other, sizeof other, "%s/other", base);
	cr_assert_eq(mkdir(other, 0700), 0);
	snprintf(path, sizeof path, "%s/notes.txt", other);
	write_text(path, "OTHER-SESSION-NOTES\n", 0600);
	snprintf(path, sizeof path, "%s/.ssh", home);
	cr_assert_eq(mkdir(ws, 0700), 0);
	cr_assert_eq(mkdir(outside, 0700), 0);
	cr_assert_eq(mkdir(home, 0700), 0);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/.ssh/id_rsa", home);
	write_text(path, "SSH-KEY-SECRET\n", 0600);
	/* The service's environment: a home with a key, a provider key, a marker. */
	setenv("HOME", home, 1);
	setenv("OPENAI_API_KEY", KEY_VALUE, 1);
	setenv("TD_SBX_MARKER", "marker-in-the-service-environment", 1);
	memset(&svc, 0, sizeof svc);
	snprintf(svc.home, sizeof svc.home, "%.200s/td", base);
	cr_assert_eq(mkdir(svc.home, 0700), 0);
	/* the key of stored credentials (written by the service once credentials exist) */
	snprintf(path, sizeof path, "%s/secret.key", svc.home);
	write_text(path, "0123456789abcdef0123456789abcdef", 0600);
	svc_restart(&svc);
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];

	svc_destroy(&svc);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
}

TestSuite(sandbox, .init = setup, .fini = teardown, .timeout = 120);

/* Starts a run of transcript model in ws with extra members; the run id (malloc'd). */
static char *
run_start(const char *project, const char *model, const char *extra)
{
	cJSON *run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"probe\",\"cwd\":\"%s\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"%s\"}%s}", project, ws, model, extra);
	char *id = strdup(json_str_or_none(run, "id"));

	cJSON_Delete(run);
	return id;
}

static void
script(const char *name, const char *text)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof path, "%s/%s", ws, name);
	write_text(path, text, 0644);
}

/* The exit status in the summary of the run's run_command, or -1 (then *said). */
static int
command_status_said(const char *run_id, char *said, size_t len)
{
	cJSON *events = http_get_json(&svc, "/api/v1/runs/%s/events?limit=1000", run_id), *e;
	int status = -1;

	cJSON_ArrayForEach(e, events) {
		const cJSON *data = cJSON_GetObjectItem(e, "data");
		const char *summary = json_get_string(data, "summary");

		if (strcmp(json_get_string(e, "type"), "run.tool") != 0 || summary == NULL ||
		    strcmp(json_get_string(data, "name"), "run_command") != 0)
			continue;
		if (sscanf(summary, "exit status %d", &status) != 1)
			status = -1;
		if (said != NULL)
			snprintf(said, len, "%s", summary);
	}
	cJSON_Delete(events);
	return status;
}

static int
command_status(const char *run_id)
{
	char said[256] = "";
	int status = command_status_said(run_id, said, sizeof said);

	if (status < 0)
		cr_log_warn("run_command: %s", said);
	return status;
}

/* Waits for the run's one pending prompt and answers it; false when none came. */
static bool
prompt_answer(const char *run, const char *tool, const char *decision)
{
	char path[128], body[64];
	struct http_resp r;
	cJSON *list, *p;

	for (int i = 0;; i++) {
		list = http_get_json(&svc, "/app/v1/permissions?run=%s", run);
		if (cJSON_GetArraySize(list) == 1)
			break;
		cJSON_Delete(list);
		if (i >= 400)
			return false;
		usleep(50000);
	}
	p = cJSON_GetArrayItem(list, 0);
	cr_expect_str_eq(json_get_string(p, "tool"), tool);
	snprintf(path, sizeof path, "/app/v1/permissions/%s", json_get_string(p, "id"));
	snprintf(body, sizeof body, "{\"decision\":\"%s\"}", decision);
	r = http_api(&svc, "POST", path, body);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_resp_free(&r);
	cJSON_Delete(list);
	return true;
}

static void
write_attack(void)
{
	char text[8192];

	snprintf(text, sizeof text,
	    "r=0\n"
	    "echo pwned > '%s/escaped' 2>/dev/null && r=$((r | %d))\n"
	    "echo mine > ./written 2>/dev/null\n"
	    "[ \"$(cat '%s/token' 2>/dev/null | wc -c)\" -gt 0 ] && r=$((r | %d))\n"
	    "[ \"$(cat '%s/secret.key' 2>/dev/null | wc -c)\" -gt 0 ] && r=$((r | %d))\n"
	    "head -c 15 '%s/taskdeck.db' 2>/dev/null | grep -q 'SQLite format' && r=$((r | %d))\n"
	    "grep -q SSH-KEY-SECRET '%s/.ssh/id_rsa' 2>/dev/null && r=$((r | %d))\n"
	    "tr '\\000' '\\n' < /proc/%d/environ 2>/dev/null | grep -q TD_SBX_MARKER && "
	    "r=$((r | %d))\n"
	    "bash -c 'echo x > /dev/tcp/127.0.0.1/%d' 2>/dev/null && r=$((r | %d))\n"
	    "grep -q OTHER-SESSION-NOTES '%s/notes.txt' 2>/dev/null && r=$((r | %d))\n"
	    "exit $r\n",
	    outside, WROTE_OUTSIDE, svc.home, READ_TOKEN, svc.home, READ_SECRET_KEY,
	    svc.home, READ_DATABASE, home, READ_SSH_KEY, (int)svc.pid, READ_SERVICE_ENVIRON,
	    svc.port, REACHED_SERVICE, other, READ_OTHER_SESSION);
	script("attack.sh", text);
}

/* Runs attack.sh under profile (extra: more run members) in project; what worked. */
static int
attack_in(const char *project, const char *profile, const char *extra_members)
{
	static bool other_session;
	char *run, extra[256], path[PATH_MAX + 32];
	cJSON *final;
	int status;

	if (!other_session) {
		/* another session, in its own directory */
		char body[512];
		struct http_resp r;

		snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"p\",\"cwd\":\"%s\","
		    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", project, other);
		r = http_api(&svc, "POST", "/api/v1/runs", body);
		cr_assert_eq(r.status, 201, "%s", r.body);
		cJSON_Delete(run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS));
		http_resp_free(&r);
		other_session = true;
	}
	write_attack();
	snprintf(path, sizeof path, "%s/written", ws);
	unlink(path);
	snprintf(path, sizeof path, "%s/escaped", outside);
	unlink(path);
	snprintf(extra, sizeof extra, ",\"permissionProfile\":\"%s\"%s", profile, extra_members);
	run = run_start(project, "sandbox-attack", extra);
	if (strcmp(profile, "ask") == 0)
		cr_assert(prompt_answer(run, "run_command", "allow"), "no prompt for the command");
	final = run_wait_final(&svc, run, FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_expect_str_eq(json_get_string(final, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(final));
	status = command_status(run);
	cr_assert(status >= 0, "no exit status of attack.sh under %s", profile);
	cJSON_Delete(final);
	free(run);
	return status;
}

static int
attack(const char *profile, const char *extra_members)
{
	char *project = http_project_new(&svc, "sandbox");
	int status = attack_in(project, profile, extra_members);

	free(project);
	return status;
}

static bool
written(void)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof path, "%s/written", ws);
	return access(path, F_OK) == 0;
}

/* read-only refuses run_command before any sandbox (docs/agent.md); connector servers
 * run in its sandbox, which tests/unit/test-sandbox.c attacks directly. */
Test(sandbox, read_only_refuses_the_command)
{
	char *project = http_project_new(&svc, "sandbox"), *run, said[256] = "", path[PATH_MAX];
	cJSON *final;

	write_attack();
	run = run_start(project, "sandbox-attack", ",\"permissionProfile\":\"read-only\"");
	final = run_wait_final(&svc, run, FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_expect_eq(command_status_said(run, said, sizeof said), -1);
	cr_expect(strstr(said, "denied by the read-only profile") != NULL, "%s", said);
	cr_expect_not(written(), "read-only wrote in the workspace");
	snprintf(path, sizeof path, "%s/escaped", outside);
	cr_expect_neq(access(path, F_OK), 0);
	cJSON_Delete(final);
	free(run);
	free(project);
}

Test(sandbox, ask_blocks_every_attack)
{
	cr_expect_eq(attack("ask", ""), 0);
	cr_expect(written(), "ask (allowed) could not write in the workspace");
}

Test(sandbox, workspace_write_blocks_every_attack)
{
	cr_expect_eq(attack("workspace-write", ""), 0);
	cr_expect(written(), "workspace-write could not write in the workspace");
}

Test(sandbox, network_setting_opens_the_network_only)
{
	char *project = http_project_new(&svc, "sandbox"), path[128], body[256];
	struct http_resp r;
	cJSON *defaults;

	/* the run's member; the token stays hidden, so the port alone gives nothing */
	cr_expect_eq(attack_in(project, "workspace-write", ",\"network\":true"), REACHED_SERVICE);
	/* the project default, which a run's member overrides */
	snprintf(path, sizeof path, "/api/v1/projects/%s/session-defaults", project);
	defaults = http_get_json(&svc, "%s", path);
	snprintf(body, sizeof body, "{\"expectedUpdatedAt\":\"%s\",\"patch\":{\"network\":true}}",
	    json_get_string(defaults, "updatedAt"));
	cJSON_Delete(defaults);
	r = http_api(&svc, "PATCH", path, body);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "defaults"),
	    "network")), "%s", r.body);
	http_resp_free(&r);
	cr_expect_eq(attack_in(project, "workspace-write", ""), REACHED_SERVICE);
	cr_expect_eq(attack_in(project, "workspace-write", ",\"network\":false"), 0);
	/* the CLI's --no-network is the run's member */
	{
		char *out = NULL;
		cJSON *run;

		write_attack();
		cr_expect_eq(run_capture(&svc, &out, "'%s' --json run --project %s --cwd '%s' "
		    "--provider replay --model sandbox-attack --permission workspace-write "
		    "--no-network --wait probe", harness_bin("taskdeck"), project, ws), 0, "%s", out);
		run = cJSON_Parse(out);
		cr_assert_not_null(json_get_string(run, "id"), "%s", out);
		cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(run, "network")), "%s", out);
		cr_expect_eq(command_status(json_get_string(run, "id")), 0);
		cJSON_Delete(run);
		free(out);
	}
	r = http_api(&svc, "PATCH", path, "{\"expectedUpdatedAt\":\"x\",\"patch\":{\"network\":1}}");
	cr_expect_eq(r.status, 400, "%s", r.body);
	http_resp_free(&r);
	free(project);
}

Test(sandbox, full_access_is_the_user_and_the_attacks_are_real)
{
	/* The same script does what it says when nothing confines it; only the
	 * service's /proc entry stays out of sight (every run has its own pid namespace). */
	int got = attack("full-access", "");

	cr_expect_eq(got, WROTE_OUTSIDE | READ_TOKEN | READ_SECRET_KEY | READ_DATABASE |
	    READ_SSH_KEY | REACHED_SERVICE | READ_OTHER_SESSION, "attacks that worked: %#x", got);
	cr_expect(written());
}

Test(sandbox, api_keys_leave_the_service_environment)
{
	char path[64], buf[65536];
	ssize_t n;
	int fd;
	bool marker = false, key = false;

	snprintf(path, sizeof path, "/proc/%d/environ", (int)svc.pid);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		cr_log_info("%s is not readable here (%s): non-dumpable", path, strerror(errno));
		return;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	cr_assert(n > 0);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		marker |= strstr(buf + i, "TD_SBX_MARKER=") == buf + i;
		key |= strstr(buf + i, KEY_VALUE) != NULL;
	}
	cr_expect(marker, "the environment of the service was not read");
	cr_expect_not(key, "the API key is still in the service's environment");
}

/*
 * Another session in $HOME, which holds ~/.ssh: its directory is hidden after
 * ~/.ssh, and the commands of every other session must still run, with both hidden.
 */
Test(sandbox, a_session_in_home_leaves_the_others_working)
{
	char *project = http_project_new(&svc, "sandbox"), body[512];
	struct http_resp r;

	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"p\",\"cwd\":\"%s\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", project, home);
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_assert_eq(r.status, 201, "%s", r.body);
	cJSON_Delete(run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS));
	http_resp_free(&r);
	cr_expect_eq(attack_in(project, "workspace-write", ""), 0);
	cr_expect(written(), "the command did not run");
	free(project);
}

/* ---- no text a model writes changes the mounts ---------------------------------- */

/*
 * Restarts the service with its replay transcripts in base/replay, where
 * replay_write puts them.
 */
static void
replay_dir_use(void)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof dir, "%s/replay", base);
	cr_assert_eq(mkdir(dir, 0700), 0);
	svc_stop(&svc);
	setenv("TD_TEST_NO_REPLAY_DIR", "1", 1);
	setenv("TASKDECK_REPLAY_DIR", dir, 1);
	svc_restart(&svc);
}

/* A transcript model that runs command once. */
static void
replay_write(const char *model, const char *command)
{
	cJSON *t = cJSON_CreateObject(), *turns = cJSON_AddArrayToObject(t, "turns"), *turn, *call;
	char path[PATH_MAX + 64], *text;

	turn = cJSON_CreateObject();
	cJSON_AddStringToObject(turn, "text", "Running it.\n");
	call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "name", "run_command");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(call, "arguments"), "command", command);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(turn, "toolCalls"), call);
	cJSON_AddItemToArray(turns, turn);
	turn = cJSON_CreateObject();
	cJSON_AddStringToObject(turn, "text", "Done.");
	cJSON_AddItemToArray(turns, turn);
	text = cJSON_PrintUnformatted(t);
	snprintf(path, sizeof path, "%s/replay/%s.json", base, model);
	write_text(path, text, 0644);
	free(text);
	cJSON_Delete(t);
}

/* Runs transcript model under profile in ws; the command's exit status, or -1 (then *said). */
static int
replay_command(const char *model, const char *profile, char *said, size_t len)
{
	char *project = http_project_new(&svc, "sandbox"), extra[128], *run;
	cJSON *final;
	int status;

	snprintf(extra, sizeof extra, ",\"permissionProfile\":\"%s\"", profile);
	run = run_start(project, model, extra);
	final = run_wait_final(&svc, run, FINAL_WAIT_MS);
	cr_assert_not_null(final);
	said[0] = '\0';
	status = command_status_said(run, said, len);
	cJSON_Delete(final);
	free(run);
	free(project);
	return status;
}

/* true when a connection waits in the listening socket's queue (then it is taken). */
static bool
connected(int listener)
{
	struct pollfd p = { .fd = listener, .events = POLLIN };
	bool got = poll(&p, 1, 0) > 0;

	if (got)
		close(accept(listener, NULL, NULL));
	return got;
}

/*
 * A command that starts with a path under the host's /tmp must not get that
 * directory of /tmp bound into its sandbox: there live the user's tmux server,
 * ssh-agent and X11 sockets (a read-only mount does not stop connect()).
 */
Test(sandbox, a_command_cannot_choose_a_host_tmp_directory)
{
	char dir[] = "/tmp/td-attack-XXXXXX", sock[64], secret[64], command[1024], said[256];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int listener, got;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof sock, "%s/sock", dir);
	snprintf(secret, sizeof secret, "%s/secret.txt", dir);
	write_text(secret, "TMP-SECRET\n", 0600);
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(listener, 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	cr_assert_eq(bind(listener, (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
	cr_assert_eq(listen(listener, 8), 0);

	/* 1: read the file, 2: reach the socket (curl: 7 when it cannot connect) */
	snprintf(command, sizeof command, "%s/x 2>/dev/null; r=0; "
	    "grep -q TMP-SECRET %s 2>/dev/null && r=$((r | 1)); "
	    "curl -s --max-time 2 --unix-socket %s http://x/ >/dev/null 2>&1; "
	    "[ $? -ne 7 ] && r=$((r | 2)); exit $r", dir, secret, sock);
	replay_dir_use();
	replay_write("tmp-attack", command);
	got = replay_command("tmp-attack", "workspace-write", said, sizeof said);
	cr_expect_eq(got, 0, "what the command reached: %d (%s)", got, said);
	cr_expect_not(connected(listener), "the sandboxed command connected to the socket");
	/* The control: outside any sandbox the same command reaches both. */
	got = replay_command("tmp-attack", "full-access", said, sizeof said);
	cr_expect_eq(got, 3, "full-access: %d (%s)", got, said);
	cr_expect(connected(listener), "full-access did not connect: the attack is not real");
	close(listener);
	unlink(sock);
	unlink(secret);
	rmdir(dir);
}

/*
 * Other users read every process's command line (/proc/PID/cmdline): the command
 * a model runs must not be in bwrap's or the shell's, under any profile.
 */
Test(sandbox, the_command_is_not_on_a_command_line)
{
	const char *profiles[] = { "workspace-write", "full-access" };
	char marker[64], pause[32], command[256], said[256], model[32];

	replay_dir_use();
	for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++) {
		char *project = http_project_new(&svc, "sandbox"), extra[128], *run;
		int seen = 0, running = 0;
		cJSON *final;

		snprintf(marker, sizeof marker, "td-cmdline-marker-%d-%zu", (int)getpid(), i);
		snprintf(pause, sizeof pause, "7.%d%zu", (int)getpid(), i);
		snprintf(model, sizeof model, "cmdline-%zu", i);
		snprintf(command, sizeof command, ": %s; sleep %s; echo \"$0 done\"", marker, pause);
		replay_write(model, command);
		snprintf(extra, sizeof extra, ",\"permissionProfile\":\"%s\"", profiles[i]);
		run = run_start(project, model, extra);
		for (int k = 0; k < 400 && running == 0; k++) {
			running = procs_count_command("sleep", pause);
			usleep(25000);
		}
		cr_assert_gt(running, 0, "the command did not start (%s)", profiles[i]);
		seen = procs_count_cmdline_with(marker);
		cr_expect_eq(seen, 0, "%d processes show the command (%s)", seen, profiles[i]);
		{
			char path[128];
			struct http_resp r;

			snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", run);
			r = http_api(&svc, "POST", path, NULL);
			http_resp_free(&r);
		}
		final = run_wait_final(&svc, run, FINAL_WAIT_MS);
		cr_assert_not_null(final);
		cJSON_Delete(final);
		free(run);
		free(project);
	}
	/* the shell still gets it whole, and $0 is sh as with sh -c */
	replay_write("cmdline-ok", "printf 'a\\nb\\n' | wc -l; echo \"$0\"; exit 7");
	cr_expect_eq(replay_command("cmdline-ok", "workspace-write", said, sizeof said), 7,
	    "%s", said);
}

/* ---- resource bounds ------------------------------------------------------------ */

/*
 * runs.commandLimits, small: /tmp and /dev/shm, memory, processes and CPU time
 * each stop a command at its bound, and the tool's summary says which.
 */
Test(sandbox, commands_are_bounded)
{
	char path[PATH_MAX], said[256], pause[32], command[512];
	int got;

	svc_stop(&svc);
	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	write_text(path, "{\"defaults\": {\"provider\": \"replay\"},\n"
	    " \"providers\": {\"replay\": {\"kind\": \"replay\", \"defaultModel\": \"research\"}},\n"
	    " \"runs\": {\"commandTimeoutMs\": 20000, \"commandLimits\": {\"memoryMiB\": 64,\n"
	    "   \"processes\": 32, \"cpuSeconds\": 1, \"tmpMiB\": 8}}}\n", 0600);
	replay_dir_use();

	/* 64 MiB written into /tmp and /dev/shm: 8 MiB each get there */
	replay_write("bound-tmp", "for d in /tmp /dev/shm; do head -c 64M /dev/zero > $d/big; "
	    "[ $(stat -c %s $d/big) -le 8388608 ] || exit 9; done; exit 4");
	got = replay_command("bound-tmp", "workspace-write", said, sizeof said);
	cr_expect_eq(got, 4, "%s", said);
	cr_expect(strstr(said, "/tmp and /dev/shm hold at most 8 MiB") != NULL, "%s", said);

	/* a 200 MiB buffer, filled: killed at 64 MiB where a memory cgroup bounds the
	 * sandbox, its allocation refused where RLIMIT_DATA does */
	replay_write("bound-memory", "dd if=/dev/zero of=/dev/null bs=200M count=1 && exit 0; exit 3");
	got = replay_command("bound-memory", "workspace-write", said, sizeof said);
	cr_expect_eq(got, 3, "%s", said);
	cr_expect(strstr(said, "memory limit 64 MiB") != NULL, "%s", said);
	if (sandbox_memory_cgroup()) {
		cr_expect(strstr(said, "memory limit 64 MiB reached: a process was killed") != NULL,
		    "%s", said);
		/* a memory cgroup fails no call: such a message is not the bound's */
		replay_write("bound-not-memory", "echo 'x: Cannot allocate memory' >&2; exit 5");
		got = replay_command("bound-not-memory", "workspace-write", said, sizeof said);
		cr_expect_eq(got, 5, "%s", said);
		cr_expect(strstr(said, "memory limit") == NULL, "%s", said);
	}

	/* a fork bomb: at most 32 processes, and the summary says so */
	snprintf(pause, sizeof pause, "9.%d", (int)getpid());
	snprintf(command, sizeof command, "i=0; while [ $i -lt 200 ]; do sleep %s & "
	    "i=$((i + 1)); done; exit 0", pause);
	replay_write("bound-processes", command);
	{
		char *project = http_project_new(&svc, "sandbox"), *run;
		int most = 0;
		cJSON *final;

		run = run_start(project, "bound-processes", ",\"permissionProfile\":\"workspace-write\"");
		for (int i = 0; i < 100; i++) {
			int n = procs_count_command("sleep", pause);

			most = n > most ? n : most;
			final = http_get_json(&svc, "/api/v1/runs/%s", run);
			if (strcmp(json_get_string(final, "status"), "running") != 0 &&
			    strcmp(json_get_string(final, "status"), "queued") != 0) {
				cJSON_Delete(final);
				break;
			}
			cJSON_Delete(final);
			usleep(20000);
		}
		final = run_wait_final(&svc, run, FINAL_WAIT_MS);
		cr_assert_not_null(final);
		cJSON_Delete(final);
		command_status_said(run, said, sizeof said);
		cr_expect(strstr(said, "process limit 32 reached") != NULL, "%s", said);
		cr_expect_leq(most, 32, "%d processes ran at once", most);
		free(run);
		free(project);
	}

#ifdef __SANITIZE_ADDRESS__
	/* a sanitizer build (this one) reserves terabytes: it runs under a memory cgroup
	 * (its usage), else RLIMIT_DATA stops it and the summary says what to set */
	/* (a build under the host's /tmp is out of a command's sight: its private /tmp) */
	if (strncmp(harness_bin("taskdeck-agent"), "/tmp/", 5) != 0) {
		snprintf(command, sizeof command, "'%s' --no-such-option",
		    harness_bin("taskdeck-agent"));
		replay_write("bound-sanitizer", command);
		got = replay_command("bound-sanitizer", "workspace-write", said, sizeof said);
		if (sandbox_memory_cgroup())
			cr_expect_eq(got, 2, "%s", said);	/* its usage message */
		else
			cr_expect(strstr(said, "a sanitizer build needs runs.commandLimits."
			    "memoryMiB 0") != NULL, "%s", said);
	}
#endif

	/* a busy loop: killed after 1 s of CPU time, long before the 20 s timeout */
	replay_write("bound-cpu", "while :; do :; done");
	got = replay_command("bound-cpu", "workspace-write", said, sizeof said);
	cr_expect(strstr(said, "killed: CPU time limit 1 s") != NULL, "%s", said);
}

/*
 * A program built with AddressSanitizer reserves terabytes of address space for
 * its shadow memory: under the default bounds it runs where a memory cgroup
 * charges what it uses (RLIMIT_DATA would stop it at start).
 */
Test(sandbox, a_sanitizer_build_runs_under_the_default_limits)
{
	char cmd[PATH_MAX * 2], said[256], path[PATH_MAX];
	int got;

	if (!sandbox_memory_cgroup())
		cr_skip_test("no memory cgroup here: memory is RLIMIT_DATA, which stops ASan");
	snprintf(path, sizeof path, "%s/asan-hello.c", ws);
	write_text(path, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	    "int main(void) { char *p = malloc(1 << 20); memset(p, 'a', 1 << 20);\n"
	    "printf(\"asan-hello %c\\n\", p[4096]); free(p); return 0; }\n", 0644);
	snprintf(cmd, sizeof cmd, "cd '%s' && { clang -fsanitize=address -o asan-hello "
	    "asan-hello.c || gcc -fsanitize=address -o asan-hello asan-hello.c; } "
	    ">/dev/null 2>&1 && ./asan-hello >/dev/null 2>&1", ws);
	if (system(cmd) != 0)
		cr_skip_test("no compiler here builds and runs an AddressSanitizer program");
	replay_dir_use();
	replay_write("asan", "./asan-hello && echo ran");
	got = replay_command("asan", "workspace-write", said, sizeof said);
	cr_expect_eq(got, 0, "the ASan build did not run: %s", said);
}

/* The directory of this process's cgroup in the v1 hierarchy of controller, if writable. */
static bool
cgroup_v1_dir(const char *controller, char *dir, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 64], ctl[256], where[2048];
	bool found = false;

	while (!found && f != NULL && fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "%*d:%255[^:]:%2047s", ctl, where) == 2 &&
		    strcmp(ctl, controller) == 0) {
			snprintf(dir, len, "/sys/fs/cgroup/%s%s", ctl,
			    strcmp(where, "/") == 0 ? "" : where);
			found = access(dir, W_OK) == 0;
		}
	if (f != NULL)
		fclose(f);
	return found;
}

/*
 * A taskdeck process killed with kill -9 leaves its commands' cgroups
 * ("taskdeck-<pid>-<n>") behind, empty: the service removes those whose
 * process is gone when it starts, and nothing else.
 */
Test(sandbox, cgroups_of_dead_processes_are_removed_at_start)
{
	static const char *const controllers[] = { "pids", "memory" };
	char base_dir[PATH_MAX], stale[PATH_MAX + 64], live[PATH_MAX + 64], other_name[PATH_MAX + 64];
	pid_t dead = fork();
	int tested = 0;

	if (dead == 0)
		_exit(0);
	cr_assert_gt(dead, 0);
	cr_assert_eq(waitpid(dead, NULL, 0), dead);
	for (size_t i = 0; i < sizeof controllers / sizeof *controllers; i++) {
		if (!cgroup_v1_dir(controllers[i], base_dir, sizeof base_dir))
			continue;
		tested++;
		svc_stop(&svc);
		snprintf(stale, sizeof stale, "%s/taskdeck-%d-1", base_dir, (int)dead);
		snprintf(live, sizeof live, "%s/taskdeck-%d-1", base_dir, (int)getpid());
		snprintf(other_name, sizeof other_name, "%s/taskdeck-x%d-1", base_dir, (int)dead);
		cr_assert_eq(mkdir(stale, 0755), 0, "%s: %s", stale, strerror(errno));
		cr_assert_eq(mkdir(live, 0755), 0, "%s: %s", live, strerror(errno));
		cr_assert_eq(mkdir(other_name, 0755), 0, "%s: %s", other_name, strerror(errno));
		svc_restart(&svc);
		cr_expect_neq(access(stale, F_OK), 0, "%s is left", stale);
		cr_expect_eq(access(live, F_OK), 0, "%s, whose process lives, is gone", live);
		cr_expect_eq(access(other_name, F_OK), 0, "%s, not a sandbox's name, is gone",
		    other_name);
		rmdir(stale);
		rmdir(live);
		rmdir(other_name);
	}
	if (tested == 0)
		cr_skip_test("no writable cgroup v1 hierarchy of pids or memory here");
}

/* ---- nothing outlives a run --------------------------------------------------- */

/* Processes whose command line is "sleep <arg>". */
static int
count_sleep(const char *arg)
{
	int n = procs_count_command("sleep", arg);

	cr_assert_geq(n, 0, "cannot read /proc");
	return n;
}

/* The pid of the service's taskdeck-agent child, or 0. */
static pid_t
agent_pid(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	cr_assert_not_null(d);
	while (found == 0 && (e = readdir(d)) != NULL) {
		char path[300], stat[512], comm[64];
		int ppid = 0;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(stat, sizeof stat, f) != NULL &&
		    sscanf(stat, "%*d (%63[^)]) %*c %d", comm, &ppid) == 2 &&
		    ppid == svc.pid && strncmp(comm, "taskdeck-agent", 15) == 0)
			found = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return found;
}

enum ending { BY_FINISH, BY_CANCEL, BY_AGENT_KILL, BY_SERVICE_KILL };

static void
escape_and_end(const char *profile, enum ending how)
{
	char tag[32], a[3][48], text[2048], extra[128];
	char *project = http_project_new(&svc, "sandbox"), *run;
	cJSON *final;
	struct http_resp r;

	snprintf(tag, sizeof tag, "9%d%d%d", (int)getpid() % 100000, how, profile[0] == 'f');
	for (int i = 0; i < 3; i++)
		snprintf(a[i], sizeof a[i], "%s%d", tag, i + 1);
	snprintf(text, sizeof text,
	    "setsid sleep %s < /dev/null > /dev/null 2>&1 &\n"
	    "nohup sleep %s > /dev/null 2>&1 &\n"
	    "sh -c 'trap \"\" TERM HUP; exec sleep %s' &\n"
	    "%s\n", a[0], a[1], a[2], how == BY_FINISH ? "sleep 2; exit 0" : "sleep 600");
	script("escape.sh", text);
	snprintf(extra, sizeof extra, ",\"permissionProfile\":\"%s\"", profile);
	run = run_start(project, "sandbox-escape", extra);
	for (int i = 0; i < 400 && count_sleep(a[0]) + count_sleep(a[1]) + count_sleep(a[2]) < 3;
	    i++)
		usleep(25000);
	if (count_sleep(a[0]) + count_sleep(a[1]) + count_sleep(a[2]) != 3) {
		command_status(run);
		cr_assert_fail("the background jobs did not start (%s)", profile);
	}
	switch (how) {
	case BY_FINISH:
		break;
	case BY_CANCEL:
		{
			char path[128];

			snprintf(path, sizeof path, "/api/v1/runs/%s/cancel", run);
			r = http_api(&svc, "POST", path, NULL);
			cr_expect_eq(r.status, 200, "%s", r.body);
			http_resp_free(&r);
		}
		break;
	case BY_AGENT_KILL: {
		pid_t agent = agent_pid();

		cr_assert(agent > 0, "no agent process");
		kill(agent, SIGKILL);
		break;
	}
	case BY_SERVICE_KILL:
		svc_kill(&svc);
		break;
	}
	if (how != BY_SERVICE_KILL) {
		final = run_wait_final(&svc, run, FINAL_WAIT_MS);
		cr_assert_not_null(final);
		cJSON_Delete(final);
	}
	/* the kernel tears the namespaces down at once; allow a loaded machine 10 s */
	for (int i = 0; i < 200; i++) {
		if (count_sleep(a[0]) + count_sleep(a[1]) + count_sleep(a[2]) == 0)
			break;
		usleep(50000);
	}
	for (int i = 0; i < 3; i++)
		cr_expect_eq(count_sleep(a[i]), 0, "sleep %s outlived the run (%s, ending %d)",
		    a[i], profile, (int)how);
	free(run);
	free(project);
}

Test(sandbox, nothing_outlives_a_finished_run)
{
	escape_and_end("workspace-write", BY_FINISH);
	escape_and_end("full-access", BY_FINISH);
}

Test(sandbox, nothing_outlives_a_cancelled_run)
{
	escape_and_end("workspace-write", BY_CANCEL);
	escape_and_end("full-access", BY_CANCEL);
}

Test(sandbox, nothing_outlives_a_killed_agent)
{
	escape_and_end("workspace-write", BY_AGENT_KILL);
	escape_and_end("full-access", BY_AGENT_KILL);
}

Test(sandbox, nothing_outlives_a_killed_service)
{
	escape_and_end("full-access", BY_SERVICE_KILL);
}

Test(sandbox, nothing_outlives_a_killed_service_workspace_write)
{
	escape_and_end("workspace-write", BY_SERVICE_KILL);
}

/* ---- the agent cannot approve itself ------------------------------------------- */

/* A script that answers every pending prompt "allow-run" with the token it reads. */
static void
write_approver(char *text, size_t len, bool loop)
{
	snprintf(text, len,
	    "answer() {\n"
	    "  t=$(cat '%s/token' 2>/dev/null) || return\n"
	    "  for id in $(curl -s -H \"Authorization: Bearer $t\" "
	    "'%s/app/v1/permissions' | grep -o 'prm_[0-9a-z]*' | sort -u); do\n"
	    "    curl -s -X POST -H \"Authorization: Bearer $t\" -H 'Content-Type: "
	    "application/json' -d '{\"decision\":\"allow-run\"}' '%s/app/v1/permissions/'$id "
	    ">/dev/null\n"
	    "  done\n"
	    "}\n"
	    "%s\n",
	    svc.home, svc.url, svc.url, loop ? "while :; do answer; sleep 0.2; done" : "answer");
}

Test(sandbox, ask_cannot_approve_itself)
{
	char *project = http_project_new(&svc, "sandbox"), *run, text[4096], path[PATH_MAX + 32], *out = NULL;
	cJSON *list, *p, *final;
	const char *id;

	write_approver(text, sizeof text, true);
	script("approver.sh", text);
	script("approve.sh", "setsid sh ./approver.sh </dev/null >/dev/null 2>&1 &\n"
	    "nohup sh ./approver.sh </dev/null >/dev/null 2>&1 &\nexit 0\n");
	write_approver(text, sizeof text, false);
	snprintf(path, sizeof path, "%s/approve-once.sh", base);
	write_text(path, text, 0644);
	run = run_start(project, "sandbox-approve", ",\"permissionProfile\":\"ask\"");

	/* The user allows the command. */
	cr_assert(prompt_answer(run, "run_command", "allow"), "no prompt for the command");

	/* The write's prompt stays pending: nothing in the sandbox answers it. */
	for (int i = 0;; i++) {
		list = http_get_json(&svc, "/app/v1/permissions?run=%s", run);
		if (cJSON_GetArraySize(list) == 1 &&
		    strcmp(json_get_string(cJSON_GetArrayItem(list, 0), "tool"), "write_file") == 0)
			break;
		cJSON_Delete(list);
		cr_assert(i < 400, "no prompt for the write (answered by someone else?)");
		usleep(50000);
	}
	id = json_get_string(cJSON_GetArrayItem(list, 0), "id");
	snprintf(path, sizeof path, "/app/v1/permissions/%s", id);
	sleep(2);
	p = http_get_json(&svc, "%s", path);
	cr_expect_str_eq(json_get_string(p, "status"), "pending",
	    "the sandboxed job answered the prompt itself");
	cJSON_Delete(p);

	/* Outside any sandbox, the same script does answer it: the attack is real. */
	cr_expect_eq(run_capture(&svc, &out, "sh '%s/approve-once.sh'", base), 0);
	free(out);
	p = http_get_json(&svc, "%s", path);
	cr_expect_str_eq(json_get_string(p, "status"), "allowed");
	cJSON_Delete(p);
	cJSON_Delete(list);
	final = run_wait_final(&svc, run, FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cJSON_Delete(final);
	free(run);
	free(project);
}

/* ---- cwd ------------------------------------------------------------------------ */

Test(sandbox, cwd_in_taskdeck_directories_is_refused)
{
	char *project = http_project_new(&svc, "sandbox"), body[PATH_MAX * 2], *run;
	char managed[PATH_MAX], sub[PATH_MAX + 16], session[64];
	const struct { const char *cwd, *reason; } bad[] = {
		{ "/", "filesystem-root" },
		{ svc.home, "taskdeck-directory" },
		{ sub, "taskdeck-directory" },
		{ managed, "session-workspace" },
	};
	struct http_resp r;
	cJSON *final, *ses;

	/* a managed workspace of another session */
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"p\","
	    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", project);
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_assert_eq(r.status, 201, "%s", r.body);
	run = strdup(json_get_string(r.json, "id"));
	snprintf(session, sizeof session, "%s", json_get_string(r.json, "sessionId"));
	ses = http_get_json(&svc, "/api/v1/sessions/%s", session);
	snprintf(managed, sizeof managed, "%s", json_get_string(ses, "cwd"));
	cJSON_Delete(ses);
	http_resp_free(&r);
	final = run_wait_final(&svc, run, FINAL_WAIT_MS);
	cJSON_Delete(final);
	free(run);
	snprintf(sub, sizeof sub, "%s/artifacts", svc.home);
	mkdir(sub, 0700);

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"p\",\"cwd\":\"%s\","
		    "\"config\":{\"provider\":\"replay\",\"model\":\"quick\"}}", project, bad[i].cwd);
		r = http_api(&svc, "POST", "/api/v1/runs", body);
		const char *reason = json_get_string(cJSON_GetObjectItem(cJSON_GetObjectItem(
		    r.json, "error"), "details"), "reason");

		cr_expect_eq(r.status, 400, "%s: %ld %s", bad[i].cwd, r.status, r.body);
		cr_expect_str_eq(http_error_code(&r) ? http_error_code(&r) : "(none)",
		    "invalid_cwd", "%s", bad[i].cwd);
		cr_expect_str_eq(reason ? reason : "(none)", bad[i].reason, "%s", r.body);
		http_resp_free(&r);
	}
	/* continuing the session in its managed workspace, cwd given: fine */
	snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"p\",\"cwd\":\"%s\","
	    "\"sessionId\":\"%s\"}", project, managed, session);
	r = http_api(&svc, "POST", "/api/v1/runs", body);
	cr_expect_eq(r.status, 201, "%s", r.body);
	if (r.status == 201)
		cJSON_Delete(run_wait_final(&svc, json_get_string(r.json, "id"), FINAL_WAIT_MS));
	http_resp_free(&r);
	free(project);
}

/* ---- failing closed ------------------------------------------------------------- */

static const char *
doctor_sandbox(void)
{
	static char status[16];
	cJSON *doc = http_get_json(&svc, "/api/v1/doctor"), *c;

	status[0] = '\0';
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "checks"))
		if (strcmp(json_get_string(c, "id"), "sandbox") == 0)
			snprintf(status, sizeof status, "%s", json_get_string(c, "status"));
	cJSON_Delete(doc);
	return status;
}

Test(sandbox, doctor_says_the_sandbox_works)
{
	cr_expect_str_eq(doctor_sandbox(), "ok");
}

Test(sandbox, fails_closed_without_bubblewrap)
{
	char *project, *run, said[256] = "", path[PATH_MAX];
	cJSON *final;

	svc_stop(&svc);
	setenv("TASKDECK_BWRAP", "/nonexistent/bwrap", 1);
	svc_restart(&svc);
	cr_expect_str_eq(doctor_sandbox(), "fail");
	project = http_project_new(&svc, "sandbox");
	write_attack();
	run = run_start(project, "sandbox-attack", ",\"permissionProfile\":\"workspace-write\"");
	final = run_wait_final(&svc, run, FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_expect_eq(command_status_said(run, said, sizeof said), -1, "the command ran");
	cr_expect(strstr(said, "sandbox_unavailable") != NULL, "%s", said);
	cr_expect_not(written(), "a command ran unconfined");
	cJSON_Delete(final);
	free(run);

	/* The explicit setting runs commands unconfined, and doctor warns. */
	svc_stop(&svc);
	snprintf(path, sizeof path, "%s/settings.json", svc.home);
	write_text(path, "{\"defaults\": {\"provider\": \"replay\"},\n"
	    " \"providers\": {\"replay\": {\"kind\": \"replay\", \"defaultModel\": \"research\"}},\n"
	    " \"runs\": {\"allowUnconfinedCommands\": true}}\n", 0600);
	svc_restart(&svc);
	cr_expect_str_eq(doctor_sandbox(), "warn");
	cr_expect_neq(attack_in(project, "workspace-write", "") & WROTE_OUTSIDE, 0,
	    "allowUnconfinedCommands did not run the command unconfined");
	unsetenv("TASKDECK_BWRAP");
	free(project);
}
