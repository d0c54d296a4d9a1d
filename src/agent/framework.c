/* The adapter for external framework CLIs (framework.h, docs/frameworks.md). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "redact.h"
#include "sandbox.h"
#include "timeutil.h"
#include "xalloc.h"

#define FW_LINE_MAX (8 * 1024 * 1024)	/* one line of the CLI; longer ones are skipped */
#define FW_TERM_GRACE_MS 1000		/* SIGTERM, then SIGKILL */
#define FW_EXIT_WAIT_MS 5000		/* after its stdout closed */
#define FW_ERR_LINE_MAX 400		/* of a stderr line, the bytes kept */
#define FW_TRUNCATED "\n[output truncated]"

static const struct framework_ops *const framework_table[] = {
	&framework_claude, &framework_codex, &framework_acp,
};

/* The variables the CLI keeps from the agent's own environment. */
static const char *const fw_env_keep[] = { "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR" };

const struct framework_ops *
framework_find(const char *name)
{
	for (size_t i = 0; i < sizeof framework_table / sizeof *framework_table; i++) {
		if (name != NULL && strcmp(framework_table[i]->name, name) == 0)
			return framework_table[i];
	}
	return NULL;
}

void
strv_add(struct strv *s, const char *str)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = xrealloc(s->v, s->cap * sizeof *s->v);
	}
	s->v[s->n++] = xstrdup(str);
	s->v[s->n] = NULL;
}

void
strv_addf(struct strv *s, const char *fmt, ...)
{
	va_list ap;
	char *str;

	va_start(ap, fmt);
	if (vasprintf(&str, fmt, ap) < 0)
		abort();
	va_end(ap);
	strv_add(s, str);
	explicit_bzero(str, strlen(str));
	free(str);
}

void
strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++) {
		explicit_bzero(s->v[i], strlen(s->v[i]));
		free(s->v[i]);
	}
	free(s->v);
	memset(s, 0, sizeof *s);
}

void
fw_output(struct fw_run *r, const char *text, size_t len)
{
	size_t room = AGENT_MAX_OUTPUT - sizeof FW_TRUNCATED - r->output.len;

	if (r->output_full || len == 0)
		return;
	if (!r->writing) {
		host_progress(r->host, "writing", "The model is answering.");
		r->writing = true;
	}
	if (len > room) {
		len = agent_utf8_cut(text, room);
		r->output_full = true;
	}
	buf_append(&r->output, text, len);
	host_output(r->host, text, len);
	if (r->output_full) {
		buf_appends(&r->output, FW_TRUNCATED);
		host_output(r->host, FW_TRUNCATED, strlen(FW_TRUNCATED));
	}
}

void
fw_output_break(struct fw_run *r)
{
	size_t n = r->output.len;

	if (n == 0 || r->output.data[n - 1] == '\n')
		return;
	fw_output(r, "\n\n", 2);
}

void
fw_usage(struct fw_run *r, long in_tokens, long out_tokens)
{
	if (in_tokens == r->in_tokens && out_tokens == r->out_tokens)
		return;
	r->in_tokens = in_tokens;
	r->out_tokens = out_tokens;
	host_usage(r->host, &(struct usage){ .input = in_tokens, .output = out_tokens });
}

void
fw_tool(struct fw_run *r, const char *id, const char *name, const char *status,
    const char *summary)
{
	if (strcmp(status, "started") == 0) {
		host_progress(r->host, "tool", summary);
		r->writing = false;
	}
	host_tool(r->host, id ? id : "", name ? name : "tool", status, summary ? summary : "");
}

void
fw_fail(struct fw_run *r, const char *code, const char *message)
{
	r->failed = true;
	agent_error_set(&r->err, code, "%s", message);
}

/*
 * The text the CLI gets on stdin: the project and the earlier runs of the
 * session (the CLI starts a fresh conversation each run), then the prompt.
 */
char *
fw_prompt(const struct agent_config *cfg)
{
	const cJSON *h;
	struct buf b;
	bool preamble = false, earlier = false;

	buf_init(&b, 0);
	if (cfg->project_name != NULL && cfg->project_context != NULL &&
	    cfg->project_context[0] != '\0') {
		buf_printf(&b, "Project: %s\nProject context:\n%s\n\n", cfg->project_name,
		    cfg->project_context);
		preamble = true;
	}
	cJSON_ArrayForEach(h, cfg->history) {
		const char *prompt = json_get_string(h, "prompt");
		const char *output = json_get_string(h, "output");

		if (prompt == NULL)
			continue;
		if (!earlier)
			buf_appends(&b, "Earlier in this session:\n\n");
		earlier = true;
		buf_printf(&b, "User: %s\n\nYou answered: %s\n\n", prompt,
		    output && output[0] ? output : "(no output)");
		preamble = true;
	}
	if (preamble)
		buf_appends(&b, "The task now:\n");
	buf_appends(&b, cfg->prompt);
	return buf_steal(&b);
}

/* A memory file holding the prompt, positioned at its start; -1 on failure. */
static int
fw_prompt_fd(const struct agent_config *cfg)
{
	char *text = fw_prompt(cfg);
	size_t len = strlen(text), off = 0;
	int fd = memfd_create("taskdeck-prompt", MFD_CLOEXEC);

	while (fd >= 0 && off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			fd = -1;
			break;
		}
		off += (size_t)n;
	}
	free(text);
	if (fd >= 0 && lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

struct fw_proc {
	pid_t pid;
	int in_fd;			/* duplex: our end of the CLI's stdin */
	int out_fd, err_fd;
	struct buf line;
	bool skipping;			/* inside a line over FW_LINE_MAX */
	struct buf errline;
	bool exited;
	int status;
};

/*
 * Where the CLI keeps its state inside the sandbox: a private home and temporary
 * directory in the sandbox's own /tmp, gone with the run.  The home is not under
 * TMPDIR: codex refuses to set up its helpers under the temporary directory.
 */
#define FW_HOME "/tmp/home"
#define FW_TMPDIR "/tmp/tmp"
#define FW_ASK_SOCKET "/tmp/taskdeck-ask.sock"	/* the permission socket, inside */

/* true when path is dir or below it. */
static bool
fw_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/' ||
	    (n > 0 && dir[n - 1] == '/'));
}

/*
 * Whether the CLI itself can be seen inside the sandbox: not under a hidden
 * path (one under the host's /tmp is bound in: sandbox.c); false with why.
 */
static bool
fw_visible(const struct agent_config *cfg, const char *path, char *why, size_t len)
{
	char real[PATH_MAX];
	const char *where = NULL;

	if (realpath(path, real) == NULL || fw_within(real, cfg->workspace))
		return true;	/* exec will say; the workspace is bound into the sandbox */
	for (size_t i = 0; where == NULL && cfg->hidden[i] != NULL; i++) {
		if (fw_within(real, cfg->hidden[i]))
			where = "a directory the sandbox hides";
	}
	if (where == NULL)
		return true;
	snprintf(why, len, "it is installed at %.600s, under %s; install it elsewhere (for example "
	    "/usr/local or ~/.local)", real, where);
	return false;
}

/*
 * Whether the CLI runs confined: in taskdeck's sandbox unless the profile is
 * full-access.  Without a sandbox here, as for the built-in agent's commands: false
 * with err set (sandbox_unavailable), unless runs.allowUnconfinedCommands is on
 * (then *confined is false and *warning says so).
 */
static bool
fw_confinement(const struct framework_ops *ops, const struct agent_config *cfg,
    bool *confined, char *warning, size_t len, struct agent_error *err)
{
	char why[768];

	*confined = false;
	warning[0] = '\0';
	if (cfg->profile == PROFILE_FULL_ACCESS)
		return true;
	if (sandbox_available(why, sizeof why)) {
		*confined = true;
		return true;
	}
	if (!cfg->allow_unconfined) {
		agent_error_set(err, "sandbox_unavailable", "%s cannot run in the command "
		    "sandbox (%s); it does not run unconfined (see taskdeck doctor)",
		    ops->program, why);
		return false;
	}
	log_warn("no sandbox here (%s): %s runs unconfined", why, ops->program);
	snprintf(warning, len, "Starting the run. No command sandbox here: %s and its commands "
	    "run unconfined (runs.allowUnconfinedCommands is on).", ops->program);
	return true;
}

/*
 * Where the CLI finds the permission server's socket (ask_socket on the host),
 * with what a confined CLI needs bound into its sandbox for it in binds.
 */
static const char *
fw_ask_binds(bool confined, const char *ask_socket, const char *self, struct strv *binds)
{
	if (!confined)
		return ask_socket;
	strv_add(binds, ask_socket);
	strv_add(binds, FW_ASK_SOCKET);
	/* The permission server is this executable: under the host's /tmp
	 * (a build there) it is not on claude's command line to be bound. */
	if (fw_within(self, "/tmp")) {
		strv_add(binds, self);
		strv_add(binds, self);
	}
	return FW_ASK_SOCKET;
}

/*
 * The CLI's environment: what it keeps of the agent's, its own variables
 * (ops->env), and confined, a private home and temporary directory with the
 * files of the user's home it needs bound in (binds).
 */
static void
fw_environment(const struct framework_ops *ops, const struct agent_config *cfg, bool confined,
    struct strv *env, struct strv *binds)
{
	for (size_t i = 0; i < sizeof fw_env_keep / sizeof *fw_env_keep; i++) {
		const char *v = getenv(fw_env_keep[i]);

		if (confined && (strcmp(fw_env_keep[i], "HOME") == 0 ||
		    strcmp(fw_env_keep[i], "TMPDIR") == 0))
			continue;
		if (v != NULL)
			strv_addf(env, "%s=%s", fw_env_keep[i], v);
	}
	if (getenv("PATH") == NULL)
		strv_add(env, "PATH=/usr/local/bin:/usr/bin:/bin");
	if (confined) {
		const char *home = getenv("HOME");

		strv_add(env, "HOME=" FW_HOME);
		strv_add(env, "TMPDIR=" FW_TMPDIR);
		if (ops->home_files != NULL && home != NULL && home[0] == '/')
			ops->home_files(cfg, home, FW_HOME, binds);
	}
	ops->env(cfg, env);
}

/*
 * Starts the CLI, in taskdeck's sandbox when confined (docs/frameworks.md
 * "Confinement"), in its own session and process group; false with err set.
 */
static bool
fw_spawn(const struct framework_ops *ops, const struct agent_config *cfg, bool confined,
    const char *ask_socket, struct fw_proc *p, struct agent_error *aerr)
{
	static const char *const dirs[] = { FW_HOME, FW_TMPDIR, NULL };
	struct strv argv = { 0 }, env = { 0 }, binds = { 0 };
	struct sandbox_policy policy = {
		.profile = agent_sandbox_profile(cfg->profile),
		.workspace = cfg->workspace,
		.network = true,	/* the CLI must reach its model endpoint */
		.hidden = (const char *const *)cfg->hidden,
		.allow_unconfined = cfg->allow_unconfined,
	};
	const char *programs[] = { cfg->runtime_path, NULL };	/* the configured CLI */
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in = -1, fds[3];
	char why[1024], self[PATH_MAX];
	struct fw_launch launch = { .confined = confined, .self = self };
	ssize_t n;
	int rc;

	if ((n = readlink("/proc/self/exe", self, sizeof self - 1)) < 0)
		n = 0;
	self[n] = '\0';
	if (confined && (!fw_visible(cfg, cfg->runtime_path, why, sizeof why) ||
	    (ask_socket != NULL && !fw_visible(cfg, self, why, sizeof why)))) {
		agent_error_set(aerr, "framework_unavailable", "%s cannot run in the command "
		    "sandbox: %s", ops->program, why);
		return false;
	}
	if (ask_socket != NULL)
		launch.ask_socket = fw_ask_binds(confined, ask_socket, self, &binds);
	strv_add(&argv, cfg->runtime_path);
	ops->args(cfg, &launch, &argv);
	fw_environment(ops, cfg, confined, &env, &binds);
	if (confined) {
		policy.dirs = dirs;
		policy.ro_binds = binds.n > 0 ? (const char *const *)binds.v : NULL;
	}
	if (ops->duplex) {
		int to[2];

		if (pipe2(to, O_CLOEXEC) == 0) {
			in = to[0];
			p->in_fd = to[1];
		}
	} else
		in = fw_prompt_fd(cfg);
	if (in < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		agent_error_set(aerr, "framework_unavailable", "%s could not be started: %s",
		    ops->program, strerror(errno));
		rc = -1;
		goto done;
	}
	fds[0] = in, fds[1] = out[1], fds[2] = err[1];
	policy.programs = programs;
	rc = sandbox_spawn(&policy, cfg->workspace, argv.v, env.v, fds, &p->pid, why,
	    sizeof why);
	if (rc != 0) {
		bool nobox = strncmp(why, "sandbox_unavailable: ", 21) == 0;

		agent_error_set(aerr, nobox ? "sandbox_unavailable" : "framework_unavailable",
		    "%s could not be started (%s): %s", ops->program, cfg->runtime_path,
		    nobox ? why + 21 : why);
		goto done;
	}
	log_info("%s runs %s (profile %s)", ops->program, confined ? "in the sandbox" :
	    policy.profile == SANDBOX_FULL_ACCESS ? "with full access" : "unconfined",
	    agent_profile_name(cfg->profile));
	p->out_fd = out[0];
	p->err_fd = err[0];
	out[0] = err[0] = -1;
	fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
done:
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	strv_free(&argv);
	strv_free(&env);
	strv_free(&binds);
	return rc == 0;
}

/* One line of the CLI's stdout. */
static void
fw_line(const struct framework_ops *ops, struct fw_run *r, const char *line, size_t len)
{
	cJSON *msg;

	while (len > 0 && (line[len - 1] == '\r' || isspace((unsigned char)line[len - 1])))
		len--;
	if (len == 0)
		return;
	msg = json_parse(line, len);
	if (!cJSON_IsObject(msg)) {
		/* CLIs print the odd warning on stdout; it is not an event. */
		char shown[200];

		snprintf(shown, sizeof shown, "%.*s", (int)(len < 150 ? len : 150), line);
		redact_text(r->cfg->keys, shown, strlen(shown), len > 150 ? REDACT_CUT_END : 0);
		log_info("%s printed a line that is not a JSON object: %s", ops->program, shown);
		cJSON_Delete(msg);
		return;
	}
	/* The key, should the CLI echo it (an error of its endpoint), goes nowhere further. */
	redact_json(r->cfg->keys, msg);
	ops->line(r, msg);
	cJSON_Delete(msg);
}

/* Reads what is there on stdout; false at end of file. */
static bool
fw_read_out(const struct framework_ops *ops, struct fw_run *r, struct fw_proc *p)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(p->out_fd, chunk, sizeof chunk);
		const char *c = chunk;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		while (c < chunk + n) {
			const char *nl = memchr(c, '\n', (size_t)(chunk + n - c));
			size_t piece = nl ? (size_t)(nl - c) : (size_t)(chunk + n - c);

			if (!p->skipping && !buf_append(&p->line, c, piece)) {
				log_warn("%s printed a line over %d bytes; skipped", ops->program,
				    FW_LINE_MAX);
				p->skipping = true;
				buf_reset(&p->line);
			}
			if (nl != NULL) {
				if (!p->skipping)
					fw_line(ops, r, p->line.data ? p->line.data : "", p->line.len);
				p->skipping = false;
				buf_reset(&p->line);
			}
			c += piece + (nl ? 1 : 0);
		}
	}
}

/* Copies the CLI's stderr to the log at debug level, masked; false at end of file. */
static bool
fw_read_err(const struct framework_ops *ops, struct fw_run *r, struct fw_proc *p)
{
	char chunk[4096];

	for (;;) {
		ssize_t n = read(p->err_fd, chunk, sizeof chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		for (ssize_t i = 0; i < n; i++) {
			if (chunk[i] != '\n') {
				if (p->errline.len < FW_ERR_LINE_MAX)
					buf_append(&p->errline, chunk + i, 1);
				continue;
			}
			if (p->errline.len > 0) {
				char *clean;

				/* A line cut at the bound may end in the beginning of a key. */
				redact_text(r->cfg->keys, p->errline.data, p->errline.len,
				    p->errline.len >= FW_ERR_LINE_MAX ? REDACT_CUT_END : 0);
				clean = agent_utf8_clean(p->errline.data);
				log_debug("%s: %s", ops->program, clean);
				snprintf(r->last_stderr, sizeof r->last_stderr, "%s", clean);
				free(clean);
			}
			buf_reset(&p->errline);
		}
	}
}

/* Kills every process left under the agent (it is their subreaper) and reaps them. */
static void
fw_sweep(void)
{
	pid_t self = getpid();

	for (int round = 0; round < 200; round++) {
		bool any = false;
		DIR *d = opendir("/proc");
		struct dirent *de;

		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		while (d != NULL && (de = readdir(d)) != NULL) {
			char path[64], stat[512], *close_paren;
			long pid = strtol(de->d_name, NULL, 10), ppid;
			ssize_t n;
			int fd;

			if (pid <= 0 || pid == self)
				continue;
			snprintf(path, sizeof path, "/proc/%ld/stat", pid);
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				continue;
			n = read(fd, stat, sizeof stat - 1);
			close(fd);
			if (n <= 0)
				continue;
			stat[n] = '\0';
			/* "pid (comm) state ppid ...": comm may hold anything, so from the last ')'. */
			if ((close_paren = strrchr(stat, ')')) == NULL ||
			    sscanf(close_paren + 1, " %*c %ld", &ppid) != 1 || ppid != self)
				continue;
			kill((pid_t)pid, SIGKILL);
			any = true;
		}
		if (d != NULL)
			closedir(d);
		if (!any && waitpid(-1, NULL, WNOHANG) <= 0)
			return;
		usleep(10000);
	}
	log_warn("processes of the framework CLI would not go away");
}

/* Talks to the CLI until it is gone; AGENT_CANCELLED when the run was cancelled. */
static int
fw_converse(const struct framework_ops *ops, struct fw_run *r, struct fw_proc *p,
    int ask_fd)
{
	struct pollfd fds[4] = {
		{ .fd = host_cancel_fd(r->host), .events = POLLIN },
		{ .fd = p->out_fd, .events = POLLIN },
		{ .fd = p->err_fd, .events = POLLIN },
		{ .fd = ask_fd, .events = POLLIN },	/* -1: not the profile ask */
	};
	int64_t kill_at = 0, eof_at = 0;	/* the SIGKILL deadline; when stdout closed */
	bool cancelled = false, stopping = false;

	if (ops->start != NULL)
		ops->start(r);
	while (fds[1].fd >= 0 || fds[2].fd >= 0 || !p->exited) {
		int64_t now = clock_mono_ms();

		if (!cancelled && host_cancelled(r->host)) {
			cancelled = true;
			log_info("cancel: stopping %s (process group %ld)", ops->program,
			    (long)p->pid);
			if (ops->cancel != NULL)
				ops->cancel(r);
			killpg(p->pid, SIGTERM);
			kill_at = now + FW_TERM_GRACE_MS;
			fds[0].fd = -1;
		}
		/* A duplex CLI serves on after the turn: its end is ours to make. */
		if (r->done && !stopping && !cancelled) {
			stopping = true;
			if (r->to_cli >= 0)
				close(r->to_cli);
			r->to_cli = -1;
			killpg(p->pid, SIGTERM);
			if (kill_at == 0)
				kill_at = now + FW_TERM_GRACE_MS;
		}
		if (!p->exited && waitpid(p->pid, &p->status, WNOHANG) == p->pid) {
			p->exited = true;
			/* What it started goes with it; this also closes pipes they hold. */
			killpg(p->pid, SIGKILL);
			if (kill_at == 0)
				kill_at = now + FW_TERM_GRACE_MS;
		}
		if (fds[1].fd < 0 && eof_at == 0)
			eof_at = now;
		if ((kill_at != 0 && now >= kill_at) ||
		    (eof_at != 0 && now - eof_at > FW_EXIT_WAIT_MS)) {
			killpg(p->pid, SIGKILL);
			if (!p->exited) {
				while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR)
					;
				p->exited = true;
			}
			break;
		}
		if (poll(fds, 4, 100) < 0 && errno != EINTR)
			break;
		/* A question of the permission prompt tool: waits for the person's answer. */
		if (fds[3].fd >= 0 && !cancelled && (fds[3].revents & POLLIN))
			fw_ask_serve(ops, r, fds[3].fd);
		if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !fw_read_out(ops, r, p))
			fds[1].fd = -1;
		if (fds[2].fd >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !fw_read_err(ops, r, p))
			fds[2].fd = -1;
	}
	return cancelled ? AGENT_CANCELLED : AGENT_OK;
}

/* The run's status once the CLI is gone. */
static int
fw_outcome(const struct framework_ops *ops, struct fw_run *r, const struct fw_proc *p)
{
	if (r->failed)
		return AGENT_FAILED;
	if (r->result_seen)
		return AGENT_OK;
	if (WIFSIGNALED(p->status))
		agent_error_set(&r->err, "framework_crashed", "%s was killed by signal %d "
		    "before it finished the run%s%s", ops->program, WTERMSIG(p->status),
		    r->last_stderr[0] ? ": " : "", r->last_stderr);
	else
		agent_error_set(&r->err, "framework_crashed", "%s exited with status %d "
		    "without finishing the run%s%s", ops->program, WEXITSTATUS(p->status),
		    r->last_stderr[0] ? ": " : "", r->last_stderr);
	return AGENT_FAILED;
}

int
framework_run(const struct framework_ops *ops, const struct agent_config *cfg,
    struct host *host)
{
	static const char *const statuses[] = {
		[-AGENT_OK] = "completed", [-AGENT_FAILED] = "failed", [-AGENT_CANCELLED] = "cancelled",
	};
	struct fw_run r = { .cfg = cfg, .host = host, .to_cli = -1 };
	struct fw_proc p = { .pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	struct agent_error nobox = { 0 };
	char warning[256], ask_path[PATH_MAX];
	bool confined, boxed, ask = cfg->profile == PROFILE_ASK && ops->describe != NULL;
	int rc, ask_fd = -1;

	buf_init(&r.output, 0);
	buf_init(&p.line, FW_LINE_MAX);
	buf_init(&p.errline, 0);
	r.state = ops->state_size ? xcalloc(1, ops->state_size) : NULL;
	/* Whatever the CLI starts and orphans becomes ours, so that fw_sweep finds it. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	boxed = fw_confinement(ops, cfg, &confined, warning, sizeof warning, &nobox);
	host_progress(host, "starting", warning[0] ? warning : "Starting the run.");
	if (!ops->check(cfg, &r.err)) {
		rc = AGENT_FAILED;
	} else if (!boxed) {
		r.err = nobox;
		nobox = (struct agent_error){ 0 };
		rc = AGENT_FAILED;
	} else if (ask && (ask_fd = fw_ask_listen(ask_path, sizeof ask_path)) < 0) {
		agent_error_set(&r.err, "framework_unavailable", "cannot set up the permission "
		    "prompts of %s: %s", ops->program, strerror(errno));
		rc = AGENT_FAILED;
	} else if (!fw_spawn(ops, cfg, confined, ask ? ask_path : NULL, &p, &r.err)) {
		rc = AGENT_FAILED;
	} else {
		log_info("run %s: %s %s started (pid %ld)", cfg->run_id ? cfg->run_id : "?",
		    ops->program, cfg->runtime_version ? cfg->runtime_version : "",
		    (long)p.pid);
		host_progress(host, "thinking", "Waiting for the model.");
		r.to_cli = p.in_fd;
		rc = fw_converse(ops, &r, &p, ask_fd);
		if (r.to_cli >= 0)
			close(r.to_cli);
		r.to_cli = -1;
		if (p.out_fd >= 0)
			close(p.out_fd);
		if (p.err_fd >= 0)
			close(p.err_fd);
		fw_sweep();
		if (rc == AGENT_OK)
			rc = fw_outcome(ops, &r, &p);
	}
	if (host_cancelled(host))
		rc = AGENT_CANCELLED;
	if (!host_protocol_error(host)) {
		host_progress(host, "finishing", "Finishing the run.");
		host_finish(host, statuses[-rc], r.output.data ? r.output.data : "", &r.err,
		    &(struct usage){ .input = r.in_tokens, .output = r.out_tokens });
	}
	if (rc == AGENT_FAILED)
		log_info("run failed: %s: %s", r.err.code, r.err.message);
	if (ops->state_free != NULL && r.state != NULL)
		ops->state_free(r.state);
	free(r.state);
	buf_free(&r.output);
	buf_free(&p.line);
	buf_free(&p.errline);
	agent_error_clear(&r.err);
	agent_error_clear(&nobox);
	if (ask_fd >= 0) {
		close(ask_fd);
		fw_ask_unlink(ask_path);
	}
	return rc;
}
