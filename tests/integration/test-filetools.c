/*
 * The file tools and artifact saves against a model that wants the token, through
 * a real taskdeckd and a scripted OpenAI-compatible provider (docs/agent.md "The file
 * tools").  What the model was sent is what the fake provider recorded.
 * - hidden: with cwd = a home that holds the service's home and ~/.ssh, read_file,
 *   list_files, save_artifact and write_file of every hidden path, by every spelling
 *   (a link, a hard link, an absolute path), are refused under every profile.
 * - race: a second process swaps a directory of the workspace with a symbolic link to
 *   the service's home (renameat2 RENAME_EXCHANGE, in a loop) while the run reads,
 *   saves and writes through it: nothing leaks, nothing is written outside.
 * - chain: the token through the file tools and then the loopback API to a
 *   full-access run: no step works.
 * - the tools models are trained for: read_file by lines, grep (.gitignore, .git,
 *   binary files), glob, edit_file (exactly one match unless replace_all); the
 *   reading calls of one answer run at the same time, their results in order.
 * Everything lives below the build directory, not in /tmp, which every sandbox
 * replaces with its own.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fake-provider.h"
#include "harness.h"
#include "json.h"

#define FINAL_WAIT_MS 150000	/* the race makes 480 calls on a loaded machine */
#define SSH_KEY "SSH-KEY-SECRET-7f3a9c"
#define SECRET_KEY "0123456789abcdef0123456789abcdef"
#define DECOY "DECOY"
#define RACE_TURNS 8
#define RACE_TRIPLES 20
#define CONFIG ",\"config\":{\"provider\":\"fake-openai\",\"model\":\"gpt-test\"}"		/* read, save, write: 60 calls a turn */

static char base[160], home[192], ws[192];
static struct fake_provider *fake;
static struct fake_reply replies[RACE_TURNS + 2];
static size_t nreplies;

static void
write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/*
 * base/home is $HOME and the run's cwd: it holds the service's home (home/td) and
 * ~/.ssh; base/ws is a workspace of its own for the race.
 */
static void
setup(void)
{
	char tmpl[] = "ft-it-XXXXXX", path[PATH_MAX + 32];

	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, path));
	cr_assert_lt(strlen(path), 100, "the build directory's path is too long for the test");
	snprintf(base, sizeof base, "%s", path);
	snprintf(home, sizeof home, "%s/home", base);
	snprintf(ws, sizeof ws, "%s/ws", base);
	cr_assert_eq(mkdir(home, 0700), 0);
	cr_assert_eq(mkdir(ws, 0700), 0);
	snprintf(path, sizeof path, "%s/.ssh", home);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/.ssh/id_rsa", home);
	write_text(path, SSH_KEY "\n", 0600);
	setenv("HOME", home, 1);
	setenv("TD_TEST_OPENAI_KEY", "sk-filetools-test", 1);
	memset(&svc, 0, sizeof svc);
	snprintf(svc.home, sizeof svc.home, "%.200s/td", home);
	cr_assert_eq(mkdir(svc.home, 0700), 0);
	snprintf(path, sizeof path, "%s/secret.key", svc.home);
	write_text(path, SECRET_KEY, 0600);
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];

	svc_destroy(&svc);
	if (fake != NULL)
		fake_provider_stop(fake);
	for (size_t i = 0; i < nreplies; i++)
		free(replies[i].body);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
}

TestSuite(filetools, .init = setup, .fini = teardown, .timeout = 240);

/* One model turn: the calls (name, JSON arguments), or text when there are none. */
struct call {
	const char *name;
	char *args;
};

static void
reply_add(const struct call *calls, size_t n, const char *text)
{
	struct buf b;

	cr_assert_lt(nreplies, sizeof replies / sizeof *replies);
	buf_init(&b, 0);
	if (text != NULL)
		fake_openai_text(&b, text);
	for (size_t i = 0; i < n; i++) {
		char id[32];

		snprintf(id, sizeof id, "call_%zu_%zu", nreplies, i);
		fake_openai_tool_call(&b, (int)i, id, calls[i].name, calls[i].args, 4096);
	}
	fake_openai_delta(&b, "{}", n > 0 ? "tool_calls" : "stop");
	fake_openai_usage(&b, 10, 10);
	fake_openai_done(&b);
	replies[nreplies++] = (struct fake_reply){ .status = 200,
		.content_type = "text/event-stream", .body = buf_steal(&b) };
}

/* Starts the fake provider with the replies so far and the service pointed at it. */
static void
start(void)
{
	char settings[1024];

	fake = fake_provider_start(replies, nreplies);
	snprintf(settings, sizeof settings,
	    "{\"defaults\": {\"provider\": \"fake-openai\"},"
	    " \"providers\": {"
	    "  \"replay\": {\"kind\": \"replay\", \"defaultModel\": \"quick\"},"
	    "  \"fake-openai\": {\"kind\": \"openai\", \"baseUrl\": \"%s/v1\","
	    "   \"apiKeyEnv\": \"TD_TEST_OPENAI_KEY\", \"defaultModel\": \"gpt-test\"}}}",
	    fake_provider_url(fake, ""));
	svc_write_file(&svc, "settings.json", settings);
	svc_restart(&svc);
}

static char *
token(void)
{
	char path[PATH_MAX];
	char *t;

	snprintf(path, sizeof path, "%s/token", svc.home);
	t = harness_slurp(path, NULL);
	cr_assert_not_null(t);
	t[strcspn(t, "\r\n")] = '\0';
	cr_assert_gt(strlen(t), 16);
	return t;
}

/*
 * home/link-td -> td; home/hl-token and home/hl-ssh, hard links to the token and to
 * ~/.ssh/id_rsa (the user's doing: no run can make them).
 */
static void
spellings(void)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(to, sizeof to, "%s/link-td", home);
	cr_assert_eq(symlink("td", to), 0);
	snprintf(from, sizeof from, "%s/token", svc.home);
	snprintf(to, sizeof to, "%s/hl-token", home);
	cr_assert_eq(link(from, to), 0, "%s", strerror(errno));
	snprintf(from, sizeof from, "%s/.ssh/id_rsa", home);
	snprintf(to, sizeof to, "%s/hl-ssh", home);
	cr_assert_eq(link(from, to), 0, "%s", strerror(errno));
}

static struct call
call(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static struct call
call(const char *name, const char *fmt, ...)
{
	struct call c = { .name = name };
	va_list ap;

	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&c.args, fmt, ap), 0);
	va_end(ap);
	return c;
}

static void
calls_free(struct call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(calls[i].args);
}

/* Answers "allow" to every prompt of run until it is final; the final run. */
static cJSON *
allow_until_final(const char *run)
{
	for (int i = 0; i < FINAL_WAIT_MS / 50; i++) {
		cJSON *r = http_get_json(&svc, "/api/v1/runs/%s", run), *list, *p;
		const char *status = json_get_string(r, "status");

		if (status != NULL && (strcmp(status, "completed") == 0 ||
		    strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0))
			return r;
		cJSON_Delete(r);
		list = http_get_json(&svc, "/app/v1/permissions?run=%s", run);
		cJSON_ArrayForEach(p, list) {
			char path[128];
			struct http_resp a;

			snprintf(path, sizeof path, "/app/v1/permissions/%s", json_get_string(p, "id"));
			a = http_api(&svc, "POST", path, "{\"decision\":\"allow\"}");
			http_resp_free(&a);
		}
		cJSON_Delete(list);
		usleep(50000);
	}
	cr_assert_fail("run %s is not final after %d ms", run, FINAL_WAIT_MS);
	return NULL;
}

/* Every event of the run, page after page (Link: <...>; rel="next"). */
static cJSON *
run_events(const char *run)
{
	cJSON *all = cJSON_CreateArray();
	char *path = NULL;

	cr_assert_geq(asprintf(&path, "/api/v1/runs/%s/events?limit=1000", run), 0);
	while (path != NULL) {
		struct http_resp r = http_api(&svc, "GET", path, NULL);
		char *link = http_header(&r, "Link"), *end;
		cJSON *e;

		cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
		free(path);
		path = NULL;
		while ((e = cJSON_DetachItemFromArray(r.json, 0)) != NULL)
			cJSON_AddItemToArray(all, e);
		if (link != NULL && link[0] == '<' && (end = strchr(link, '>')) != NULL)
			path = strndup(link + 1, (size_t)(end - link - 1));
		free(link);
		http_resp_free(&r);
	}
	return all;
}

/* The data of the run's run.tool events that ended (not "started"), in order. */
static cJSON *
tool_ends(const char *run)
{
	cJSON *events = run_events(run), *e;
	cJSON *out = cJSON_CreateArray();

	cJSON_ArrayForEach(e, events) {
		const cJSON *data = cJSON_GetObjectItem(e, "data");
		const char *status = json_get_string(data, "status");

		if (strcmp(json_get_string(e, "type"), "run.tool") == 0 && status != NULL &&
		    strcmp(status, "started") != 0)
			cJSON_AddItemToArray(out, cJSON_Duplicate(data, true));
	}
	cJSON_Delete(events);
	return out;
}

/* Whether needle appears in any file below dir (the artifact store, a home). */
static bool
found_below(const char *dir, const char *needle)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (d == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		char path[PATH_MAX];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			found = found_below(path, needle);
		} else if (S_ISREG(st.st_mode)) {
			char *text = harness_slurp(path, NULL);

			found = text != NULL && strstr(text, needle) != NULL;
			free(text);
		}
	}
	closedir(d);
	return found;
}

/* What the model was sent, all requests together. */
static char *
model_saw(void)
{
	struct buf b;

	buf_init(&b, 0);
	for (size_t i = 0; i < fake_provider_count(fake); i++)
		buf_appends(&b, fake_provider_request(fake, i)->body);
	return buf_steal(&b);
}

/* Asserts that nothing of a secret reached the model, the run's record or artifacts. */
static void
expect_nothing_of(const char *secret, const char *what, const char *run, const char *saw)
{
	char path[PATH_MAX];
	struct http_resp r;

	cr_expect(strstr(saw, secret) == NULL, "the model was sent %s", what);
	{
		cJSON *events = run_events(run);
		char *text = cJSON_PrintUnformatted(events);

		cr_expect(strstr(text, secret) == NULL, "the run's events hold %s", what);
		free(text);
		cJSON_Delete(events);
	}
	snprintf(path, sizeof path, "/api/v1/runs/%s", run);
	r = http_api(&svc, "GET", path, NULL);
	cr_expect(strstr(r.body, secret) == NULL, "the run's output holds %s", what);
	http_resp_free(&r);
	snprintf(path, sizeof path, "%s/artifacts", svc.home);
	cr_expect_not(found_below(path, secret), "an artifact holds %s", what);
}

/* What a call of hidden_calls must end with: a refusal, or completed. */
static const char *hidden_want[48];

/* The hidden paths by every spelling, for every file tool. */
static size_t
hidden_calls(struct call *c)
{
	static const char *const reads[] = {
		"td/token", "td/secret.key", "td/taskdeck.db", "td/settings.json", ".ssh/id_rsa",
		"link-td/token", "hl-token", "hl-ssh", "./td/../td/token", "td",
	};
	static const char *const edits[] = {
		"td/token", "td/settings.json", ".ssh/id_rsa", "link-td/token", "hl-token", "hl-ssh",
	};
	static const char *const dirs[] = { "td", ".ssh", "link-td", "hl-token", "hl-ssh" };
	size_t n = 0;

	for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
		c[n++] = call("read_file", "{\"path\":\"%s\"}", reads[i]);
	c[n++] = call("read_file", "{\"path\":\"%s/td/token\"}", home);
	c[n++] = call("read_file", "{\"path\":\"td/token\",\"offset\":1,\"limit\":5}");
	c[n++] = call("list_files", "{\"path\":\"td\"}");
	c[n++] = call("list_files", "{\"path\":\".ssh\"}");
	c[n++] = call("list_files", "{\"path\":\"link-td\"}");
	c[n++] = call("save_artifact", "{\"path\":\"td/token\"}");
	c[n++] = call("save_artifact", "{\"path\":\".ssh/id_rsa\"}");
	c[n++] = call("save_artifact", "{\"path\":\"link-td/secret.key\"}");
	c[n++] = call("save_artifact", "{\"path\":\"hl-token\"}");
	c[n++] = call("save_artifact", "{\"path\":\"hl-ssh\"}");
	c[n++] = call("write_file", "{\"path\":\"td/planted.txt\",\"content\":\"x\"}");
	c[n++] = call("write_file", "{\"path\":\".ssh/authorized_keys\",\"content\":\"x\"}");
	c[n++] = call("write_file", "{\"path\":\"link-td/planted.txt\",\"content\":\"x\"}");
	c[n++] = call("write_file", "{\"path\":\"hl-token\",\"content\":\"x\"}");
	for (size_t i = 0; i < sizeof edits / sizeof *edits; i++)
		c[n++] = call("edit_file", "{\"path\":\"%s\",\"old_string\":\"a\","
		    "\"new_string\":\"b\",\"replace_all\":true}", edits[i]);
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		c[n++] = call("grep", "{\"pattern\":\".\",\"path\":\"%s\"}", dirs[i]);
		c[n++] = call("glob", "{\"pattern\":\"**\",\"path\":\"%s\"}", dirs[i]);
	}
	for (size_t i = 0; i < n; i++)
		hidden_want[i] = "path is hidden";
	/* outside the workspace */
	hidden_want[n] = "escapes the workspace";
	c[n++] = call("edit_file", "{\"path\":\"../x\",\"old_string\":\"a\",\"new_string\":\"b\"}");
	hidden_want[n] = "escapes the workspace";
	c[n++] = call("grep", "{\"pattern\":\".\",\"path\":\"..\"}");
	hidden_want[n] = "escapes the workspace";
	c[n++] = call("glob", "{\"pattern\":\"*\",\"path\":\"/etc\"}");
	hidden_want[n] = "escapes the workspace";
	c[n++] = call("read_file", "{\"path\":\"/etc/passwd\",\"offset\":1}");
	/* and what may be seen: the listing of the cwd names the hidden, enters none;
	 * every line of every file and every path, none from a hidden one */
	hidden_want[n] = NULL;
	c[n++] = call("list_files", "{\"recursive\":true}");
	hidden_want[n] = NULL;
	c[n++] = call("grep", "{\"pattern\":\".\",\"max_results\":1000}");
	hidden_want[n] = NULL;
	c[n++] = call("glob", "{\"pattern\":\"**\"}");
	cr_assert_leq(n, sizeof hidden_want / sizeof *hidden_want);
	return n;
}

Test(filetools, hidden_paths_are_refused_under_every_profile)
{
	static const char *const profiles[] = { "read-only", "workspace-write", "ask",
		"full-access" };
	const size_t nprofiles = sizeof profiles / sizeof *profiles;
	struct call c[48];
	size_t n = hidden_calls(c);
	char *project, *tok, *saw, path[PATH_MAX];
	struct stat st;

	for (size_t p = 0; p < nprofiles; p++) {
		reply_add(c, n, NULL);
		reply_add(NULL, 0, "done");
	}
	start();
	spellings();
	snprintf(path, sizeof path, "%s/notes.txt", home);
	write_text(path, "visible notes\n", 0600);
	tok = token();
	project = http_project_new(&svc, "filetools");
	for (size_t p = 0; p < nprofiles; p++) {
		cJSON *run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"look\","
		    "\"cwd\":\"%s\",\"permissionProfile\":\"%s\"%s}", project, home, profiles[p],
		    CONFIG);
		const char *id = json_str(run, "id");
		cJSON *final = allow_until_final(id), *ends, *e;
		size_t i = 0;

		cr_expect_str_eq(json_str_or_none(final, "status"), "completed", "%s",
		    profiles[p]);
		ends = tool_ends(id);
		cJSON_ArrayForEach(e, ends) {
			const char *summary = json_get_string(e, "summary");
			const char *name = json_get_string(e, "name");

			cr_assert_lt(i, n);
			cr_expect_str_eq(name, c[i].name);
			if (hidden_want[i] == NULL) {
				cr_expect_str_eq(json_get_string(e, "status"), "completed",
				    "%s of the cwd: %s", name, summary);
			} else {
				bool denied = (strcmp(c[i].name, "write_file") == 0 ||
				    strcmp(c[i].name, "edit_file") == 0) && p == 0;

				cr_expect_str_eq(json_get_string(e, "status"), denied ? "denied" :
				    "failed", "%s under %s: %s %s", c[i].name, profiles[p], c[i].args,
				    summary);
				if (denied)
					cr_expect(strstr(summary, "read-only") != NULL, "%s", summary);
				else
					cr_expect(strstr(summary, hidden_want[i]) != NULL,
					    "%s under %s: %s says %s", c[i].name, profiles[p], c[i].args,
					    summary);
			}
			i++;
		}
		cr_expect_eq(i, n, "%zu of %zu calls ended under %s", i, n, profiles[p]);
		saw = model_saw();
		expect_nothing_of(tok, "the token", id, saw);
		expect_nothing_of(SSH_KEY, "the ssh key", id, saw);
		expect_nothing_of(SECRET_KEY, "secret.key", id, saw);
		expect_nothing_of("SQLite format", "the database", id, saw);
		/* the listing names td/ and .ssh/ as hidden, and nothing inside them */
		cr_expect(strstr(saw, "td/ (hidden)") != NULL, "the listing lacks td/");
		cr_expect(strstr(saw, ".ssh/ (hidden)") != NULL, "the listing lacks .ssh/");
		cr_expect(strstr(saw, "hl-token (hidden)") != NULL, "a hard link is shown");
		cr_expect(strstr(saw, "td/token (") == NULL, "the listing entered td/");
		cr_expect(strstr(saw, "id_rsa (") == NULL, "the listing entered .ssh/");
		/* grep and glob of the cwd: the listing's files, nothing below td/ or .ssh/ */
		cr_expect(strstr(saw, "no matches") == NULL, "grep of the cwd found nothing");
		cr_expect(strstr(saw, "td/token\\n") == NULL, "glob entered td/");
		cr_expect(strstr(saw, "id_rsa\\n") == NULL, "glob entered .ssh/");
		cr_expect(strstr(saw, "notes.txt:1:visible notes") != NULL, "grep missed notes.txt");
		cr_expect(strstr(saw, "notes.txt\\n") != NULL, "glob missed notes.txt");
		cr_expect(strstr(saw, "hidden paths skipped") != NULL, "grep said nothing");
		free(saw);
		cJSON_Delete(ends);
		cJSON_Delete(final);
		cJSON_Delete(run);
	}
	snprintf(path, sizeof path, "%s/planted.txt", svc.home);
	cr_expect_neq(stat(path, &st), 0, "write_file wrote in the service's home");
	snprintf(path, sizeof path, "%s/.ssh/authorized_keys", home);
	cr_expect_neq(stat(path, &st), 0, "write_file wrote in ~/.ssh");
	{
		char *again = token();

		cr_expect_str_eq(again, tok, "the token was replaced");
		free(again);
	}
	calls_free(c, n);
	free(tok);
	free(project);
}

/*
 * Swaps ws/d (a directory) and ws/s (a symbolic link to the service's home) until
 * killed, or for 200 s; exits 1 when a swap fails.
 */
static pid_t
swapper_start(void)
{
	char d[PATH_MAX], s[PATH_MAX];
	pid_t pid;

	snprintf(d, sizeof d, "%s/d", ws);
	snprintf(s, sizeof s, "%s/s", ws);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		time_t end = time(NULL) + 200;

		prctl(PR_SET_PDEATHSIG, SIGKILL);

		while (time(NULL) < end)
			for (int i = 0; i < 1000; i++)
				if (renameat2(AT_FDCWD, d, AT_FDCWD, s, RENAME_EXCHANGE) != 0)
					_exit(1);
		_exit(0);
	}
	return pid;
}

Test(filetools, a_concurrent_swap_of_a_directory_leaks_nothing)
{
	struct call c[3 * RACE_TRIPLES];
	char *project, *tok, *saw, path[PATH_MAX];
	cJSON *run, *final, *ends, *e;
	int reads_ok = 0, reads_refused = 0, status;
	pid_t swapper;

	for (int t = 0; t < RACE_TURNS; t++) {
		for (int i = 0; i < RACE_TRIPLES; i++) {
			c[3 * i] = call("read_file", "{\"path\":\"d/token\"}");
			c[3 * i + 1] = call("save_artifact", "{\"path\":\"d/token\"}");
			c[3 * i + 2] = call("write_file", "{\"path\":\"d/planted-%d-%d\","
			    "\"content\":\"x\"}", t, i);
		}
		reply_add(c, 3 * RACE_TRIPLES, NULL);
		calls_free(c, 3 * RACE_TRIPLES);
	}
	reply_add(NULL, 0, "done");
	start();
	tok = token();
	cr_assert_neq(strlen(tok), strlen(DECOY));
	snprintf(path, sizeof path, "%s/d", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/d/token", ws);
	write_text(path, DECOY, 0600);
	snprintf(path, sizeof path, "%s/s", ws);
	cr_assert_eq(symlink(svc.home, path), 0);
	project = http_project_new(&svc, "filetools");
	swapper = swapper_start();
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"race\",\"cwd\":\"%s\","
	    "\"permissionProfile\":\"workspace-write\"%s}", project, ws, CONFIG);
	final = run_wait_final(&svc, json_str(run, "id"), FINAL_WAIT_MS);
	kill(swapper, SIGKILL);
	cr_assert_eq(waitpid(swapper, &status, 0), swapper);
	cr_expect(WIFSIGNALED(status), "the swapper stopped swapping: %d", status);
	cr_assert_not_null(final);
	cr_expect_str_eq(json_str_or_none(final, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(final));
	ends = tool_ends(json_str(run, "id"));
	cJSON_ArrayForEach(e, ends) {
		const char *name = json_get_string(e, "name");
		const char *summary = json_get_string(e, "summary");

		if (name == NULL || strcmp(name, "read_file") != 0)
			continue;
		if (strcmp(json_get_string(e, "status"), "completed") == 0) {
			char want[64];

			snprintf(want, sizeof want, "read d/token (%zu B)", strlen(DECOY));
			cr_expect_str_eq(summary, want, "read_file read something else");
			reads_ok++;
		} else {
			cr_expect(strstr(summary, "path escapes the workspace") != NULL, "%s",
			    summary);
			reads_refused++;
		}
	}
	cr_log_info("race: %d reads of the decoy, %d refused", reads_ok, reads_refused);
	cr_expect_eq(reads_ok + reads_refused, RACE_TURNS * RACE_TRIPLES);
	/* the swap did happen under the run, or the test proves nothing */
	cr_expect_gt(reads_ok, 0);
	cr_expect_gt(reads_refused, 0);
	saw = model_saw();
	expect_nothing_of(tok, "the token", json_str(run, "id"), saw);
	free(saw);
	{
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof cmd, "ls '%s' | grep -q planted", svc.home);
		cr_expect_neq(system(cmd), 0, "write_file created files in the service's home");
	}
	cJSON_Delete(ends);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(tok);
	free(project);
}

Test(filetools, the_token_never_reaches_a_full_access_run)
{
	struct call c[16];
	size_t n = 0;
	char *project, *tok, *saw, cmd[2048];
	cJSON *run, *final, *list;

	c[n++] = call("read_file", "{\"path\":\"td/token\"}");
	c[n++] = call("read_file", "{\"path\":\"link-td/token\"}");
	c[n++] = call("read_file", "{\"path\":\"%s/td/token\"}", home);
	c[n++] = call("list_files", "{\"path\":\"td\"}");
	c[n++] = call("list_files", "{\"recursive\":true}");
	c[n++] = call("save_artifact", "{\"path\":\"td/token\",\"name\":\"t1.txt\"}");
	c[n++] = call("save_artifact", "{\"path\":\"link-td/token\",\"name\":\"t2.txt\"}");
	reply_add(c, n, NULL);
	calls_free(c, n);
	/* the command needs the service's port: a placeholder until the service runs */
	reply_add(NULL, 0, "placeholder");
	reply_add(NULL, 0, "done");
	start();
	{
		char to[PATH_MAX];

		snprintf(to, sizeof to, "%s/link-td", home);
		cr_assert_eq(symlink("td", to), 0);
	}
	tok = token();
	project = http_project_new(&svc, "filetools");
	/* Then the token, had the model got it, to the loopback API for a full-access run. */
	snprintf(cmd, sizeof cmd,
	    "for f in td/token link-td/token; do "
	    "curl -s -o /dev/null -w '%%{http_code} ' -X POST "
	    "-H \\\"Authorization: Bearer $(cat $f 2>/dev/null)\\\" "
	    "-H 'Content-Type: application/json' "
	    "-d '{\\\"project\\\":\\\"%s\\\",\\\"prompt\\\":\\\"x\\\","
	    "\\\"cwd\\\":\\\"%s\\\",\\\"permissionProfile\\\":\\\"full-access\\\"}' "
	    "http://127.0.0.1:%d/api/v1/runs; done", project, home, svc.port);
	c[0] = call("run_command", "{\"command\":\"%s\"}", cmd);
	{
		size_t keep = nreplies;

		/* replies[1] is read when its request comes, after the run starts */
		free(replies[1].body);
		nreplies = 1;
		reply_add(c, 1, NULL);
		nreplies = keep;
	}
	calls_free(c, 1);
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"escalate\",\"cwd\":\"%s\","
	    "\"permissionProfile\":\"workspace-write\",\"network\":true%s}", project, home,
	    CONFIG);
	final = run_wait_final(&svc, json_str(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_expect_str_eq(json_str_or_none(final, "status"), "completed", "%s",
	    cJSON_PrintUnformatted(final));
	saw = model_saw();
	expect_nothing_of(tok, "the token", json_str(run, "id"), saw);
	/* the command ran and reached the service, which refused each attempt */
	cr_expect(strstr(saw, "401 401 ") != NULL, "the command's attempts: %.3000s",
	    strstr(saw, "exit status") ? strstr(saw, "exit status") : saw);
	list = http_get_json(&svc, "/api/v1/runs?project=%s", project);
	cr_expect_eq(cJSON_GetArraySize(list), 1, "a run was made through the API");
	cJSON_Delete(list);
	free(saw);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(tok);
	free(project);
}

/* The result the model got for the call id, in its request i (OpenAI's tool messages). */
static char *
tool_answer(size_t i, const char *id)
{
	cJSON *body, *m;
	char *out = NULL;

	cr_assert_lt(i, fake_provider_count(fake));
	body = cJSON_Parse(fake_provider_request(fake, i)->body);
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(body, "messages")) {
		const char *cid = json_get_string(m, "tool_call_id");

		if (cid != NULL && strcmp(cid, id) == 0)
			out = strdup(json_get_string(m, "content"));
	}
	cJSON_Delete(body);
	cr_assert_not_null(out, "no result for %s", id);
	return out;
}

/* Writes text to ws/rel, making its directory. */
static void
ws_file(const char *rel, const char *text, size_t len)
{
	char path[PATH_MAX], *slash;
	int fd;

	snprintf(path, sizeof path, "%s/%s", ws, rel);
	if ((slash = strrchr(path, '/')) != NULL && slash > path + strlen(ws)) {
		*slash = '\0';
		mkdir(path, 0700);
		*slash = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void
expect_has(const char *text, const char *part, const char *what)
{
	cr_expect(strstr(text, part) != NULL, "%s lacks \"%s\": %s", what, part, text);
}

static void
expect_lacks(const char *text, const char *part, const char *what)
{
	cr_expect(strstr(text, part) == NULL, "%s has \"%s\": %s", what, part, text);
}

Test(filetools, read_by_lines_grep_glob_and_edit_do_what_models_expect)
{
	struct call c[16];
	size_t n = 0;
	struct buf lines;
	char *project, *a, path[PATH_MAX];
	cJSON *run, *final, *ends;
	static const char *const status[] = { "completed", "completed", "completed",
		"completed", "failed", "failed", "completed", "completed", "completed" };

	buf_init(&lines, 0);
	for (int i = 1; i <= 300; i++)
		buf_printf(&lines, "line %d\n", i);
	ws_file("long.txt", lines.data, lines.len);
	buf_free(&lines);
	ws_file("src/a.c", "int one;\nint dup;\nint two;\nint dup;\nint needle42;\n", 50);
	ws_file("src/b.h", "NEEDLE7\n", 8);
	ws_file(".gitignore", "# generated\nbuild/\n*.log\n", 25);
	ws_file("build/gen.c", "needle1\n", 8);
	ws_file("x.log", "needle2\n", 8);
	ws_file(".git/HEAD", "needle3\n", 8);
	ws_file("bin.dat", "needle4\0\n", 9);
	ws_file("sub/.gitignore", "!keep.log\n", 10);
	ws_file("sub/keep.log", "needle5\n", 8);

	c[n++] = call("read_file", "{\"path\":\"long.txt\",\"offset\":298,\"limit\":5}");
	c[n++] = call("grep", "{\"pattern\":\"needle[0-9]+\"}");
	c[n++] = call("grep", "{\"pattern\":\"NEEDLE\\\\d+\",\"glob\":\"*.h\",\"ignore_case\":true}");
	c[n++] = call("glob", "{\"pattern\":\"**/*.c\"}");
	c[n++] = call("edit_file", "{\"path\":\"src/a.c\",\"old_string\":\"int dup;\","
	    "\"new_string\":\"x\"}");
	c[n++] = call("edit_file", "{\"path\":\"src/a.c\",\"old_string\":\"absent\","
	    "\"new_string\":\"x\"}");
	c[n++] = call("edit_file", "{\"path\":\"src/a.c\",\"old_string\":\"int one;\","
	    "\"new_string\":\"int uno;\"}");
	c[n++] = call("edit_file", "{\"path\":\"src/a.c\",\"old_string\":\"int dup;\","
	    "\"new_string\":\"long dup;\",\"replace_all\":true}");
	c[n++] = call("read_file", "{\"path\":\"src/a.c\",\"offset\":2,\"limit\":1}");
	reply_add(c, n, NULL);
	calls_free(c, n);
	reply_add(NULL, 0, "done");
	start();
	project = http_project_new(&svc, "filetools");
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"code\",\"cwd\":\"%s\","
	    "\"permissionProfile\":\"workspace-write\"%s}", project, ws, CONFIG);
	final = run_wait_final(&svc, json_str(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_expect_str_eq(json_str_or_none(final, "status"), "completed");
	ends = tool_ends(json_str(run, "id"));
	cr_assert_eq(cJSON_GetArraySize(ends), (int)n);
	for (size_t i = 0; i < n; i++)
		cr_expect_str_eq(json_get_string(cJSON_GetArrayItem(ends, (int)i), "status"),
		    status[i], "call %zu: %s", i,
		    json_get_string(cJSON_GetArrayItem(ends, (int)i), "summary"));

	a = tool_answer(1, "call_0_0");
	cr_expect_str_eq(a, "   298\tline 298\n   299\tline 299\n   300\tline 300\n"
	    "[lines 298-300 of 300]\n");
	free(a);
	a = tool_answer(1, "call_0_1");
	expect_has(a, "src/a.c:5:int needle42;\n", "grep");
	expect_has(a, "sub/keep.log:1:needle5\n", "grep (un-ignored by sub/.gitignore)");
	expect_lacks(a, "needle1", "grep (build/ is ignored)");
	expect_lacks(a, "needle2", "grep (*.log is ignored)");
	expect_lacks(a, "needle3", "grep (.git)");
	expect_lacks(a, "bin.dat", "grep (a binary file)");
	expect_lacks(a, "NEEDLE7", "grep (case)");
	expect_has(a, "[skipped: 1 binary files", "grep");
	free(a);
	a = tool_answer(1, "call_0_2");
	cr_expect_str_eq(a, "src/b.h:1:NEEDLE7\n");
	free(a);
	a = tool_answer(1, "call_0_3");
	cr_expect_str_eq(a, "src/a.c\n");
	free(a);
	a = tool_answer(1, "call_0_4");
	expect_has(a, "old_string matches 2 times (lines 2, 4)", "edit_file of a repeated string");
	expect_has(a, "replace_all", "edit_file of a repeated string");
	free(a);
	a = tool_answer(1, "call_0_5");
	expect_has(a, "src/a.c: old_string was not found", "edit_file of a missing string");
	free(a);
	a = tool_answer(1, "call_0_6");
	expect_has(a, "edited src/a.c: replaced 1 occurrence (first at line 1)\n", "edit_file");
	expect_has(a, "     1\tint uno;\n", "edit_file");
	free(a);
	a = tool_answer(1, "call_0_7");
	expect_has(a, "replaced 2 occurrences (first at line 2)", "edit_file replace_all");
	free(a);
	a = tool_answer(1, "call_0_8");
	cr_expect_str_eq(a, "     2\tlong dup;\n[lines 2-2 of 5]\n");
	free(a);
	snprintf(path, sizeof path, "%s/src/a.c", ws);
	a = harness_slurp(path, NULL);
	cr_expect_str_eq(a, "int uno;\nlong dup;\nint two;\nlong dup;\nint needle42;\n");
	free(a);
	cJSON_Delete(ends);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
}

/* Milliseconds of an event's "time" (RFC 3339 UTC with milliseconds). */
static long long
event_ms(const cJSON *e)
{
	const char *t = json_get_string(e, "time");
	struct tm tm = { 0 };
	const char *rest;

	cr_assert_not_null(t);
	rest = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
	cr_assert_not_null(rest, "%s", t);
	return (long long)timegm(&tm) * 1000 + (*rest == '.' ? atol(rest + 1) : 0);
}

/*
 * Three searches that each run into the 5 s limit (a pattern that costs tens of
 * milliseconds per line, on 200 lines): side by side they take 5 s, one after the
 * other 15 s.  Their "started" lines come first, their results in order.
 */
Test(filetools, the_reading_calls_of_one_answer_run_at_the_same_time)
{
	struct call c[3];
	struct buf slow;
	char line[4002], *project;
	cJSON *run, *final, *events, *e;
	long long first_start = -1, last_end = -1;
	int started = 0, ended = 0, order = 0;

	memset(line, 'a', 4000);
	line[4000] = '\n';
	buf_init(&slow, 0);
	for (int i = 0; i < 200; i++)
		buf_append(&slow, line, 4001);
	ws_file("slow.txt", slow.data, slow.len);
	buf_free(&slow);
	for (int i = 0; i < 3; i++)
		c[i] = call("grep", "{\"pattern\":\"(a|aa|aaa)*b\",\"path\":\"slow.txt\"}");
	reply_add(c, 3, NULL);
	calls_free(c, 3);
	reply_add(NULL, 0, "done");
	start();
	project = http_project_new(&svc, "filetools");
	run = http_run_start(&svc, "{\"project\":\"%s\",\"prompt\":\"search\",\"cwd\":\"%s\","
	    "\"permissionProfile\":\"read-only\"%s}", project, ws, CONFIG);
	final = run_wait_final(&svc, json_str(run, "id"), FINAL_WAIT_MS);
	cr_assert_not_null(final);
	cr_expect_str_eq(json_str_or_none(final, "status"), "completed");
	events = run_events(json_str(run, "id"));
	cJSON_ArrayForEach(e, events) {
		const cJSON *data = cJSON_GetObjectItem(e, "data");
		const char *status = json_get_string(data, "status");

		if (strcmp(json_get_string(e, "type"), "run.tool") != 0)
			continue;
		if (strcmp(status, "started") == 0) {
			cr_expect_eq(ended, 0, "a call started after another ended");
			if (started++ == 0)
				first_start = event_ms(e);
		} else {
			char want[32];

			snprintf(want, sizeof want, "call_0_%d", order++);
			cr_expect_str_eq(json_get_string(data, "callId"), want, "results out of order");
			cr_expect(strstr(json_get_string(data, "summary"), "(incomplete)") != NULL,
			    "%s", json_get_string(data, "summary"));
			ended++;
			last_end = event_ms(e);
		}
	}
	cr_expect_eq(started, 3);
	cr_expect_eq(ended, 3);
	cr_log_info("three 5 s searches in one answer took %lld ms", last_end - first_start);
	cr_expect_geq(last_end - first_start, 4900, "the searches stopped before 5 s");
	cr_expect_lt(last_end - first_start, 10000, "the searches ran one after the other");
	for (int i = 0; i < 3; i++) {
		char id[32], *a;

		snprintf(id, sizeof id, "call_0_%d", i);
		a = tool_answer(1, id);
		expect_has(a, "no matches\n", "grep");
		expect_has(a, "[stopped early at the time limit of 5 s", "grep");
		free(a);
	}
	cJSON_Delete(events);
	cJSON_Delete(final);
	cJSON_Delete(run);
	free(project);
}
