/* Where each framework's runtime is and whether it runs (docs/http-api.md, runtimes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "runtimes.h"
#include "service.h"
#include "settings.h"
#include "timeutil.h"
#include "xalloc.h"

#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUTPUT_MAX 4096
#define PROBE_CACHE_MS 60000

const char *const runtimes_frameworks[] = { "taskdeck", "claude-code", "codex", "acp", NULL };

/* The external CLIs: command name on PATH and the oldest version known to work. */
static const struct external {
	const char *framework;
	const char *command;
	const char *min_version;
} externals[] = {
	{ "claude-code", "claude", "2.0.0" },
	{ "codex", "codex", "0.50.0" },
	{ "acp", NULL, NULL },	/* any ACP agent: runtimes.acp.path, never PATH */
};

/* One cached probe, valid while the binary's identity is unchanged. */
struct cached {
	struct runtime_info info;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	mode_t mode;
	long at_ms;
	bool used;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached cache[4];

const char *
runtime_status_name(enum runtime_status s)
{
	static const char *const names[] = { "ready", "missing", "broken", "outdated" };

	return (unsigned)s < 4 ? names[s] : "broken";
}

const char *
runtimes_min_version(const char *framework)
{
	for (size_t i = 0; i < sizeof externals / sizeof externals[0]; i++)
		if (strcmp(externals[i].framework, framework) == 0)
			return externals[i].min_version;
	return NULL;
}

int
runtimes_version_cmp(const char *a, const char *b)
{
	for (int i = 0; i < 4; i++) {
		long x = 0, y = 0;
		if (*a >= '0' && *a <= '9')
			x = strtol(a, (char **)&a, 10);
		if (*b >= '0' && *b <= '9')
			y = strtol(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
	}
	return 0;
}

static void
copy(char *dst, size_t size, const char *src)
{
	cutf(dst, size, "%s", src ? src : "");
}

/* The first "N.N" or "N.N.N" in text, into out; false when there is none. */
static bool
find_version(const char *text, char *out, size_t size)
{
	for (const char *p = text; *p != '\0'; p++) {
		size_t n;
		if (!(*p >= '0' && *p <= '9') || (p > text && ((p[-1] >= '0' && p[-1] <= '9') ||
		    p[-1] == '.')))
			continue;
		n = strspn(p, "0123456789.");
		while (n > 0 && p[n - 1] == '.')
			n--;
		if (memchr(p, '.', n) == NULL)
			continue;
		if (n >= size)
			n = size - 1;
		memcpy(out, p, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

/*
 * Runs `path --version` with no stdin and at most PROBE_TIMEOUT_MS; its
 * stdout and stderr into out.  0 when it exited 0, else -1 with why set.
 */
static int
run_version(const char *path, char *out, size_t size, char *why, size_t why_size)
{
	int fds[2], status = 0, devnull;
	size_t len = 0;
	long deadline = clock_mono_ms() + PROBE_TIMEOUT_MS;
	bool timed_out = false;
	pid_t pid;

	out[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) != 0) {
		cutf(why, why_size, "cannot make a pipe: %s", strerror(errno));
		return -1;
	}
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid = fork();
	if (pid == 0) {
		char *const argv[] = { (char *)path, (char *)"--version", NULL };
		setpgid(0, 0);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execv(path, argv);
		_exit(errno == ETXTBSY ? 125 : errno == ENOEXEC ? 126 : 127);
	}
	close(fds[1]);
	if (devnull >= 0)
		close(devnull);
	if (pid < 0) {
		close(fds[0]);
		cutf(why, why_size, "cannot start it: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		struct pollfd pfd = { fds[0], POLLIN, 0 };
		long left = deadline - clock_mono_ms();
		ssize_t n;
		char scratch[256];

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (poll(&pfd, 1, (int)left) <= 0) {
			if (errno == EINTR)
				continue;
			timed_out = true;
			break;
		}
		if (len + 1 < size)
			n = read(fds[0], out + len, size - 1 - len);
		else
			n = read(fds[0], scratch, sizeof scratch);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + 1 < size)
			len += (size_t)n;
	}
	out[len] = '\0';
	close(fds[0]);
	if (timed_out)
		kill(-pid, SIGKILL), kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out) {
		cutf(why, why_size, "`%s --version` did not answer within %d s", path,
		    PROBE_TIMEOUT_MS / 1000);
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 125) {
		cutf(why, why_size, "%s is being written (text file busy)", path);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) >= 126)
		cutf(why, why_size, "%s cannot be executed (bad interpreter or format)", path);
	else if (WIFEXITED(status))
		cutf(why, why_size, "`%s --version` exited with status %d", path,
		    WEXITSTATUS(status));
	else
		cutf(why, why_size, "`%s --version` was killed by signal %d", path,
		    WTERMSIG(status));
	return -1;
}

/*
 * run_version, again when the binary was busy: a file just written may still be
 * open for writing in a child that another thread forked and that has not
 * reached exec yet (ETXTBSY).
 */
static int
run_version_retry(const char *path, char *out, size_t size, char *why, size_t why_size)
{
	int rc = 1;

	for (int i = 0; i < 10 && rc == 1; i++) {
		if (i > 0)
			usleep(50 * 1000);
		rc = run_version(path, out, size, why, why_size);
	}
	return rc == 0 ? 0 : -1;
}

/* Looks command up in $PATH like execvp would; the path into out. */
static bool
search_path(const char *command, char *out, size_t size)
{
	const char *p = getenv("PATH"), *end;

	if (p == NULL || *p == '\0')
		p = "/usr/local/bin:/usr/bin:/bin";
	for (; *p != '\0'; p = *end ? end + 1 : end) {
		size_t n;
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (n == 0 || p[0] != '/')
			continue;
		if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, p, command) >= size)
			continue;
		if (access(out, F_OK) == 0)
			return true;
	}
	out[0] = '\0';
	return false;
}

static struct cached *
cache_slot(const char *framework)
{
	for (int i = 0; runtimes_frameworks[i] != NULL; i++)
		if (strcmp(runtimes_frameworks[i], framework) == 0)
			return &cache[i];
	return NULL;
}

static bool
same_binary(const struct cached *c, const struct runtime_info *info, const struct stat *st)
{
	return c->used && strcmp(c->info.path, info->path) == 0 && c->dev == st->st_dev &&
	    c->ino == st->st_ino && c->size == st->st_size && c->mode == st->st_mode &&
	    c->mtime.tv_sec == st->st_mtim.tv_sec && c->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	    c->ctime.tv_sec == st->st_ctim.tv_sec && c->ctime.tv_nsec == st->st_ctim.tv_nsec &&
	    clock_mono_ms() - c->at_ms < PROBE_CACHE_MS;
}

/* Counts the *.json transcripts of dir. */
int
runtimes_count_transcripts(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
			n++;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* The directory of the running binary (symlinks resolved), or false. */
static bool
self_dir(char *out, size_t size)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	if (n <= 0)
		return false;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return false;
	*slash = '\0';
	cutf(out, size, "%s", self);
	return true;
}

bool
runtimes_in_build_tree(void)
{
#ifdef TD_BUILD_TREE
	char dir[PATH_MAX], real_build[PATH_MAX];

	return self_dir(dir, sizeof dir) && realpath(TD_BUILD_TREE, real_build) != NULL &&
	    strcmp(dir, real_build) == 0;
#else
	return false;
#endif
}

char *
runtimes_default_agent(const char **found_by)
{
	char dir[PATH_MAX], *path;

	if (runtimes_in_build_tree() && self_dir(dir, sizeof dir)) {
		*found_by = "build tree";
		return xasprintf("%s/taskdeck-agent", dir);
	}
	*found_by = "installed";
	return xstrdup(TD_LIBEXECDIR "/taskdeck-agent");
	(void)path;
}

char *
runtimes_find_agent(const char **found_by)
{
	const char *env = getenv("TASKDECK_AGENT");

	if (env != NULL && *env != '\0') {
		*found_by = "TASKDECK_AGENT";
		return xstrdup(env);
	}
	return runtimes_default_agent(found_by);
}

char *
runtimes_default_replay_dir(const char **found_by)
{
#ifdef TD_SOURCE_TREE
	char real[PATH_MAX];

	if (runtimes_in_build_tree()) {
		*found_by = "build tree";
		if (realpath(TD_SOURCE_TREE "/data/replay", real) != NULL)
			return xstrdup(real);
		return xstrdup(TD_SOURCE_TREE "/data/replay");
	}
#endif
	*found_by = "installed";
	return xstrdup(TD_DATADIR "/replay");
}

char *
runtimes_find_replay_dir(const char **found_by)
{
	const char *env = getenv("TASKDECK_REPLAY_DIR");

	if (env != NULL && *env != '\0') {
		*found_by = "TASKDECK_REPLAY_DIR";
		return xstrdup(env);
	}
	return runtimes_default_replay_dir(found_by);
}

/*
 * Probes the binary at info->path (already set): status, version, message.
 * min is the oldest version accepted, or NULL.
 */
static void
probe_binary(const char *framework, struct runtime_info *info, const char *min)
{
	struct cached *slot = cache_slot(framework);
	char output[PROBE_OUTPUT_MAX], why[256];
	struct stat st;

	if (stat(info->path, &st) != 0) {
		info->status = RUNTIME_MISSING;
		cutf(info->message, sizeof info->message, "%s does not exist.", info->path);
		return;
	}
	pthread_mutex_lock(&cache_lock);
	if (slot != NULL && same_binary(slot, info, &st)) {
		*info = slot->info;
		pthread_mutex_unlock(&cache_lock);
		return;
	}
	pthread_mutex_unlock(&cache_lock);
	if (!S_ISREG(st.st_mode) || access(info->path, X_OK) != 0) {
		info->status = RUNTIME_BROKEN;
		cutf(info->message, sizeof info->message, "%s is not an executable file.",
		    info->path);
	} else if (run_version_retry(info->path, output, sizeof output, why, sizeof why) != 0) {
		info->status = RUNTIME_BROKEN;
		cutf(info->message, sizeof info->message, "%s.", why);
	} else if (!find_version(output, info->version, sizeof info->version)) {
		info->status = RUNTIME_BROKEN;
		cutf(info->message, sizeof info->message,
		    "`%s --version` printed no version number.", info->path);
	} else if (min != NULL && runtimes_version_cmp(info->version, min) < 0) {
		info->status = RUNTIME_OUTDATED;
		cutf(info->message, sizeof info->message,
		    "Version %s is older than %s, the oldest taskdeck supports.",
		    info->version, min);
	} else {
		info->status = RUNTIME_READY;
		cutf(info->message, sizeof info->message, "Version %s at %s.",
		    info->version, info->path);
	}
	if (slot == NULL)
		return;
	pthread_mutex_lock(&cache_lock);
	slot->info = *info;
	slot->dev = st.st_dev;
	slot->ino = st.st_ino;
	slot->size = st.st_size;
	slot->mode = st.st_mode;
	slot->mtime = st.st_mtim;
	slot->ctime = st.st_ctim;
	slot->at_ms = clock_mono_ms();
	slot->used = true;
	pthread_mutex_unlock(&cache_lock);
}

static void
probe_managed(const struct service *svc, struct runtime_info *out)
{
	int n;

	copy(out->source, sizeof out->source, "managed");
	copy(out->path, sizeof out->path, svc->agent_path);
	copy(out->found_by, sizeof out->found_by, svc->agent_found_by);
	probe_binary("taskdeck", out, NULL);
	n = runtimes_count_transcripts(svc->replay_dir);
	out->data_complete = n > 0;
	if (out->status == RUNTIME_READY && n == 0)
		cutf(out->message, sizeof out->message,
		    "Version %s; no replay transcripts in %s, so the replay provider cannot run.",
		    out->version, svc->replay_dir);
	if (out->status == RUNTIME_MISSING)
		out->path[0] = '\0';
}

static void
probe_external(const struct service *svc, const struct external *e, struct runtime_info *out)
{
	const char *configured = svc->settings ? settings_runtime_path(svc->settings,
	    e->framework) : NULL;

	copy(out->source, sizeof out->source, "external");
	out->data_complete = true;
	if (configured != NULL) {
		copy(out->path, sizeof out->path, configured);
		copy(out->found_by, sizeof out->found_by, "settings");
	} else if (e->command == NULL) {
		out->status = RUNTIME_MISSING;
		cutf(out->message, sizeof out->message, "runtimes.%s.path is not set (the command "
		    "of an ACP agent, with its arguments in runtimes.%s.args).", e->framework,
		    e->framework);
		return;
	} else if (search_path(e->command, out->path, sizeof out->path)) {
		copy(out->found_by, sizeof out->found_by, "PATH");
	} else {
		out->status = RUNTIME_MISSING;
		cutf(out->message, sizeof out->message,
		    "`%s` is not on the service's PATH and runtimes.%s.path is not set.",
		    e->command, e->framework);
		return;
	}
	probe_binary(e->framework, out, e->min_version);
	if (out->status == RUNTIME_MISSING) {
		cutf(out->message, sizeof out->message, "%s (from %s) does not exist.",
		    out->path, out->found_by);
		out->path[0] = '\0';
	}
}

int
runtimes_probe(const struct service *svc, const char *framework, struct runtime_info *out)
{
	memset(out, 0, sizeof *out);
	if (framework == NULL)
		return -1;
	if (strcmp(framework, "taskdeck") == 0) {
		copy(out->framework, sizeof out->framework, framework);
		probe_managed(svc, out);
		return 0;
	}
	for (size_t i = 0; i < sizeof externals / sizeof externals[0]; i++) {
		if (strcmp(externals[i].framework, framework) == 0) {
			copy(out->framework, sizeof out->framework, framework);
			probe_external(svc, &externals[i], out);
			return 0;
		}
	}
	return -1;
}

void
runtimes_forget(void)
{
	pthread_mutex_lock(&cache_lock);
	memset(cache, 0, sizeof cache);
	pthread_mutex_unlock(&cache_lock);
}
