/* First-run setup: status, managed runtime repair, CLI launcher (bootstrap.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap.h"
#include "buf.h"
#include "credentials.h"
#include "files.h"
#include "json.h"
#include "runtimes.h"
#include "secrets.h"
#include "service.h"
#include "settings.h"
#include "xalloc.h"

#define LAUNCHER_MARK "# taskdeck launcher (installed by taskdeckd; POST /api/v1/cli/install)"
#define LAUNCHER_MAX 16384
#define COPY_MAX (256L * 1024 * 1024)

static pthread_mutex_t repair_lock = PTHREAD_MUTEX_INITIALIZER;

static cJSON *
failure(const char *code, char *message)
{
	cJSON *res = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(res, "error");

	cJSON_AddBoolToObject(res, "ok", false);
	cJSON_AddStringToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	free(message);
	return res;
}

cJSON *
bootstrap_runtime_json(const struct runtime_info *info)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "framework", info->framework);
	cJSON_AddStringToObject(o, "status", runtime_status_name(info->status));
	if (info->version[0] != '\0')
		cJSON_AddStringToObject(o, "version", info->version);
	cJSON_AddStringToObject(o, "source", info->source);
	if (info->path[0] != '\0')
		cJSON_AddStringToObject(o, "path", info->path);
	if (info->found_by[0] != '\0')
		cJSON_AddStringToObject(o, "foundBy", info->found_by);
	if (runtimes_min_version(info->framework) != NULL)
		cJSON_AddStringToObject(o, "minVersion", runtimes_min_version(info->framework));
	if (strcmp(info->source, "managed") == 0)
		cJSON_AddBoolToObject(o, "dataComplete", info->data_complete);
	cJSON_AddStringToObject(o, "message", info->message);
	return o;
}

/* Splits an http(s) URL into host and port; false when it is not one. */
static bool
url_host_port(const char *url, char *host, size_t hsize, char *port, size_t psize)
{
	const char *p, *end, *colon;
	bool tls = strncmp(url, "https://", 8) == 0;

	if (!tls && strncmp(url, "http://", 7) != 0)
		return false;
	p = url + (tls ? 8 : 7);
	end = p + strcspn(p, "/?#");
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (close == NULL || (size_t)(close - p - 1) >= hsize)
			return false;
		cutf(host, hsize, "%.*s", (int)(close - p - 1), p + 1);
		colon = close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		if ((size_t)((colon ? colon : end) - p) >= hsize || (colon ? colon : end) == p)
			return false;
		cutf(host, hsize, "%.*s", (int)((colon ? colon : end) - p), p);
	}
	if (colon != NULL && end - colon > 1 && (size_t)(end - colon) <= psize)
		cutf(port, psize, "%.*s", (int)(end - colon - 1), colon + 1);
	else
		cutf(port, psize, "%s", tls ? "443" : "80");
	return true;
}

/* true when a TCP connection to host:port opens within timeout_ms; why otherwise. */
static bool
tcp_reachable(const char *host, const char *port, int timeout_ms, char *why, size_t wsize)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	int rc;
	bool ok = false;

	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		cutf(why, wsize, "cannot resolve %s: %s", host, gai_strerror(rc));
		return false;
	}
	cutf(why, wsize, "no address of %s answered", host);
	for (ai = res; ai != NULL && !ok; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol), err = 0;
		socklen_t len = sizeof err;
		struct pollfd pfd;

		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			ok = true;
		} else if (errno == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, timeout_ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
				ok = true;
			else if (err != 0)
				cutf(why, wsize, "%s:%s refused the connection: %s", host, port,
				    strerror(err));
			else
				cutf(why, wsize, "%s:%s did not answer within %d ms", host, port,
				    timeout_ms);
		} else {
			cutf(why, wsize, "%s:%s: %s", host, port, strerror(errno));
		}
		close(fd);
	}
	freeaddrinfo(res);
	return ok;
}

bool
bootstrap_provider_key_ok(const struct service *svc, const cJSON *p, const char *name,
    char *msg, size_t msg_size)
{
	const char *ref = json_get_string(p, "apiKeyCredential");
	char *value = NULL, *why = NULL;

	if (ref == NULL)
		return true;
	if (credential_provider_key(svc, ref, &value, &why)) {
		secrets_plain_free(value);
		return true;
	}
	cutf(msg, msg_size, "The API key of the default provider %s cannot be read: %s.", name,
	    why);
	free(why);
	return false;
}

bool
bootstrap_provider_check(const struct service *svc, int timeout_ms, char *name,
    size_t name_size, char *msg, size_t msg_size)
{
	const char *prov = json_get_string(settings_defaults(svc->settings), "provider");
	const cJSON *p;
	const char *kind, *url, *key;
	char host[256], port[16], why[256];
	bool cred = false;

	cutf(name, name_size, "%s", prov ? prov : "replay");
	p = settings_provider(svc->settings, name);
	if (p == NULL) {
		cutf(msg, msg_size, "The default provider %s is not in settings.json.", name);
		return false;
	}
	kind = json_get_string(p, "kind");
	if (kind == NULL || strcmp(kind, "replay") == 0) {
		int n = runtimes_count_transcripts(svc->replay_dir);
		if (n > 0)
			cutf(msg, msg_size, "The default provider %s replays the %d transcripts "
			    "in %s (offline).", name, n, svc->replay_dir);
		else
			cutf(msg, msg_size, "The default provider %s replays transcripts, but "
			    "%s has none.", name, svc->replay_dir);
		return n > 0;
	}
	url = json_get_string(p, "baseUrl");
	key = json_get_string(p, "apiKeyEnv");
	if (key != NULL && (settings_api_key(svc->settings, key) == NULL ||
	    *settings_api_key(svc->settings, key) == '\0')) {
		cutf(msg, msg_size, "The default provider %s needs its API key in the "
		    "environment variable %s, which the service does not have.", name, key);
		return false;
	}
	if (!bootstrap_provider_key_ok(svc, p, name, msg, msg_size))
		return false;
	if (json_get_string(p, "apiKeyCredential") != NULL) {
		key = json_get_string(p, "apiKeyCredential");
		cred = true;
	}
	if (url == NULL || !url_host_port(url, host, sizeof host, port, sizeof port)) {
		cutf(msg, msg_size, "The default provider %s has no usable baseUrl.", name);
		return false;
	}
	if (!tcp_reachable(host, port, timeout_ms, why, sizeof why)) {
		cutf(msg, msg_size, "The default provider %s (%s) is not reachable: %s.",
		    name, url, why);
		return false;
	}
	cutf(msg, msg_size, "The default provider %s (%s, %s) is reachable%s%s.", name,
	    kind, url, key ? (cred ? " and its key is in the credential " :
	    " and its key is set in ") : "", key ? key : "");
	return true;
}

static cJSON *
step(cJSON *steps, const char *id, bool ok, const char *message)
{
	cJSON *s = cJSON_AddObjectToObject(steps, id);

	cJSON_AddBoolToObject(s, "ok", ok);
	cJSON_AddStringToObject(s, "message", message);
	return s;
}

cJSON *
bootstrap_status(struct service *svc)
{
	cJSON *res = cJSON_CreateObject(), *steps, *actions, *rt;
	struct runtime_info info;
	struct settings *fresh;
	char *problem, *err = NULL, name[72], msg[512];
	/* workspaces/ is made with the first managed session. */
	const char *dirs[] = { svc->paths.data_dir, svc->paths.artifacts, NULL };
	bool ok = true, dirs_ok = true, prov_ok;

	cJSON_AddBoolToObject(res, "ok", true);
	steps = cJSON_AddObjectToObject(res, "steps");
	actions = cJSON_AddArrayToObject(res, "nextActions");

	problem = files_token_problem(&svc->paths);
	step(steps, "token", problem == NULL, problem ? problem : "The token file is private.");
	if (problem != NULL) {
		ok = false;
		cJSON_AddItemToArray(actions, cJSON_CreateString("Make the token file private: "
		    "chmod 600 on it and chmod 700 on its directory."));
		free(problem);
	}

	/* Read-only: settings_load would write the defaults for a missing file. */
	if (access(svc->paths.settings, F_OK) != 0) {
		fresh = NULL;
		err = xasprintf("%s is missing; bootstrap runtime writes the defaults",
		    svc->paths.settings);
	} else {
		fresh = settings_load(svc->paths.settings, &err);
	}
	cutf(msg, sizeof msg, "%s", fresh ? "settings.json is valid." : err);
	step(steps, "settings", fresh != NULL, msg);
	cJSON_AddStringToObject(cJSON_GetObjectItem(steps, "settings"), "path",
	    svc->paths.settings);
	if (fresh == NULL) {
		ok = false;
		cJSON_AddItemToArray(actions, cJSON_CreateString("Fix settings.json (see "
		    "docs/settings.md) or run `taskdeck setup`."));
	}
	settings_free(fresh);
	free(err);

	for (int i = 0; dirs[i] != NULL; i++) {
		if (access(dirs[i], R_OK | W_OK | X_OK) != 0) {
			cutf(msg, sizeof msg, "%s is not a writable directory: %s.", dirs[i],
			    strerror(errno));
			dirs_ok = false;
			break;
		}
	}
	if (dirs_ok)
		cutf(msg, sizeof msg, "The data directories under %s are in place.",
		    svc->paths.data_dir);
	step(steps, "dataDirectories", dirs_ok, msg);
	if (!dirs_ok) {
		ok = false;
		cJSON_AddItemToArray(actions, cJSON_CreateString("Run `taskdeck setup --repair` "
		    "(bootstrap runtime) to create the data directories."));
	}

	runtimes_probe(svc, "taskdeck", &info);
	rt = step(steps, "runtime", info.status == RUNTIME_READY && info.data_complete,
	    info.message);
	cJSON_AddItemToObject(rt, "runtime", bootstrap_runtime_json(&info));
	if (info.status != RUNTIME_READY || !info.data_complete) {
		ok = false;
		cJSON_AddItemToArray(actions, cJSON_CreateString("Run `taskdeck setup --repair` "
		    "(POST /api/v1/bootstrap {\"action\":\"runtime\"}) to repair the managed "
		    "runtime."));
	}

	prov_ok = bootstrap_provider_check(svc, 2000, name, sizeof name, msg, sizeof msg);
	cJSON_AddStringToObject(step(steps, "provider", prov_ok, msg), "name", name);
	if (!prov_ok) {
		ok = false;
		cJSON_AddItemToArray(actions, cJSON_CreateString("Run `taskdeck setup` to choose "
		    "a provider that works here."));
	}
	cJSON_ReplaceItemInObject(res, "ok", cJSON_CreateBool(ok));
	return res;
}

/* Copies src to dst atomically (a temporary file beside dst, then rename); mode. */
static bool
copy_atomic(const char *src, const char *dst, mode_t mode, char **why)
{
	char *tmp = xasprintf("%s.tmp.%ld", dst, (long)getpid());
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1;
	char chunk[65536];
	ssize_t n = 0;
	off_t total = 0;
	bool ok = false;

	if (in < 0) {
		*why = xasprintf("cannot read %s: %s", src, strerror(errno));
		goto done;
	}
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (out < 0) {
		*why = xasprintf("cannot write %s: %s", tmp, strerror(errno));
		goto done;
	}
	while ((n = read(in, chunk, sizeof chunk)) > 0 && total < COPY_MAX) {
		if (write(out, chunk, (size_t)n) != n)
			break;
		total += n;
	}
	if (n != 0 || fchmod(out, mode) != 0 || fsync(out) != 0 || rename(tmp, dst) != 0) {
		*why = xasprintf("cannot write %s: %s", dst, strerror(errno ? errno : EIO));
		unlink(tmp);
		goto done;
	}
	ok = true;
done:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	free(tmp);
	return ok;
}

static bool
same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	    sa.st_ino == sb.st_ino;
}

static const char *
errno_code(int e)
{
	return e == EACCES || e == EPERM || e == EROFS ? "permission_denied" : "runtime_missing";
}

/* Makes the managed agent runnable; one sentence per change into actions. */
static cJSON *
repair_agent(struct service *svc, cJSON *actions)
{
	struct runtime_info info;
	struct stat st;
	const char *from_by;
	char *from, *why = NULL, *dir, *slash;
	cJSON *fail = NULL;

	runtimes_forget();
	runtimes_probe(svc, "taskdeck", &info);
	if (info.status == RUNTIME_READY)
		return NULL;
	/* Present but not executable: give the owner execute permission back. */
	if (stat(svc->agent_path, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(svc->agent_path, X_OK) != 0) {
		if (chmod(svc->agent_path, (st.st_mode & 07777) | S_IXUSR) != 0)
			return failure(errno_code(errno), xasprintf("cannot make %s executable: %s",
			    svc->agent_path, strerror(errno)));
		cJSON_AddItemToArray(actions, cJSON_CreateString("made-executable"));
		runtimes_forget();
		runtimes_probe(svc, "taskdeck", &info);
		if (info.status == RUNTIME_READY)
			return NULL;
	}
	from = runtimes_default_agent(&from_by);
	if (strcmp(from, svc->agent_path) == 0 || same_file(from, svc->agent_path) ||
	    access(from, X_OK) != 0) {
		fail = failure("runtime_missing", xasprintf("The agent runtime %s is %s and "
		    "there is no intact copy to restore it from (%s); reinstall taskdeck.",
		    svc->agent_path, runtime_status_name(info.status), from));
		free(from);
		return fail;
	}
	dir = xstrdup(svc->agent_path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (!paths_mkdir_p(dir, 0700)) {
			fail = failure(errno_code(errno), xasprintf("cannot create %s: %s", dir,
			    strerror(errno)));
		}
	}
	free(dir);
	if (fail == NULL && !copy_atomic(from, svc->agent_path, 0755, &why))
		fail = failure(errno_code(errno), why);
	else if (fail == NULL)
		cJSON_AddItemToArray(actions, cJSON_CreateString("restored-agent"));
	free(from);
	runtimes_forget();
	return fail;
}

/* Puts the replay transcripts back when the directory has none. */
static cJSON *
repair_transcripts(struct service *svc, cJSON *actions)
{
	const char *from_by;
	char *from, *why = NULL;
	cJSON *fail = NULL;
	DIR *d;
	struct dirent *e;
	int copied = 0;

	if (runtimes_count_transcripts(svc->replay_dir) > 0)
		return NULL;
	from = runtimes_default_replay_dir(&from_by);
	if (strcmp(from, svc->replay_dir) == 0 || runtimes_count_transcripts(from) == 0) {
		fail = failure("runtime_missing", xasprintf("No replay transcripts in %s and "
		    "none to copy from (%s); reinstall taskdeck.", svc->replay_dir, from));
		free(from);
		return fail;
	}
	if (!paths_mkdir_p(svc->replay_dir, 0700)) {
		fail = failure(errno_code(errno), xasprintf("cannot create %s: %s",
		    svc->replay_dir, strerror(errno)));
		free(from);
		return fail;
	}
	d = opendir(from);
	while (d != NULL && fail == NULL && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char *src, *dst;
		if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		src = xasprintf("%s/%s", from, e->d_name);
		dst = xasprintf("%s/%s", svc->replay_dir, e->d_name);
		if (!copy_atomic(src, dst, 0644, &why))
			fail = failure(errno_code(errno), why);
		else
			copied++;
		free(src);
		free(dst);
	}
	if (d != NULL)
		closedir(d);
	if (fail == NULL && copied > 0)
		cJSON_AddItemToArray(actions, cJSON_CreateString("restored-transcripts"));
	free(from);
	return fail;
}

cJSON *
bootstrap_runtime(struct service *svc)
{
	cJSON *res, *actions = cJSON_CreateArray(), *fail = NULL;
	struct runtime_info info;
	struct settings *fresh;
	char *err = NULL;
	struct stat st;
	bool had_settings;

	pthread_mutex_lock(&repair_lock);
	if (!files_make_dirs(&svc->paths, &err)) {
		fail = failure("permission_denied", err);
		goto out;
	}
	had_settings = stat(svc->paths.settings, &st) == 0;
	fresh = settings_load(svc->paths.settings, &err);	/* writes the defaults when missing */
	if (fresh == NULL) {
		fail = failure("configuration_conflict", xasprintf("%s; it is left as it is: "
		    "fix it or move it away, then repeat.", err));
		free(err);
		goto out;
	}
	settings_free(fresh);
	if (!had_settings)
		cJSON_AddItemToArray(actions, cJSON_CreateString("wrote-default-settings"));
	if ((fail = repair_agent(svc, actions)) != NULL ||
	    (fail = repair_transcripts(svc, actions)) != NULL)
		goto out;
	runtimes_forget();
	runtimes_probe(svc, "taskdeck", &info);
	if (info.status != RUNTIME_READY) {
		fail = failure("runtime_missing", xasprintf("After the repair: %s", info.message));
		goto out;
	}
	res = cJSON_CreateObject();
	cJSON_AddBoolToObject(res, "ok", true);
	cJSON_AddBoolToObject(res, "changed", cJSON_GetArraySize(actions) > 0);
	cJSON_AddItemToObject(res, "actions", actions);
	cJSON_AddItemToObject(res, "runtime", bootstrap_runtime_json(&info));
	pthread_mutex_unlock(&repair_lock);
	return res;
out:
	pthread_mutex_unlock(&repair_lock);
	cJSON_AddItemToObject(fail, "actions", actions);
	return fail;
}

/* Appends s to b as one single-quoted shell word. */
static void
shell_quote(struct buf *b, const char *s)
{
	buf_append(b, "'", 1);
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			buf_append(b, "'\\''", 4);
		else
			buf_append(b, s, 1);
	}
	buf_append(b, "'", 1);
}

/* The CLI the launcher runs: the taskdeck beside this taskdeckd, else the installed one. */
static char *
cli_target(void)
{
	char self[PATH_MAX], *slash, *path;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	if (n > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			path = xasprintf("%s/taskdeck", self);
			if (access(path, X_OK) == 0)
				return path;
			free(path);
		}
	}
	return xstrdup(TD_BINDIR "/taskdeck");
}

/* The launcher script: TASKDECK_HOME of this service, if it has one, then exec the CLI. */
static char *
launcher_text(const char *target, size_t *len)
{
	struct buf b;
	const char *home = getenv("TASKDECK_HOME");

	buf_init(&b, LAUNCHER_MAX);
	buf_printf(&b, "#!/bin/sh\n%s\n# Replaced by the next install while this line stays; "
	    "edit it and it becomes yours.\n", LAUNCHER_MARK);
	if (home != NULL && *home != '\0') {
		buf_printf(&b, "TASKDECK_HOME=${TASKDECK_HOME:-");
		shell_quote(&b, home);
		buf_printf(&b, "}\nexport TASKDECK_HOME\n");
	}
	buf_printf(&b, "exec ");
	shell_quote(&b, target);
	buf_printf(&b, " \"$@\"\n");
	*len = b.len;
	return buf_steal(&b);
}

/* Reads at most LAUNCHER_MAX bytes of path; NULL when unreadable or larger. */
static char *
read_small(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char *text;
	ssize_t n;

	if (fd < 0)
		return NULL;
	text = xmalloc(LAUNCHER_MAX + 1);
	*len = 0;
	while ((n = read(fd, text + *len, LAUNCHER_MAX + 1 - *len)) > 0)
		*len += (size_t)n;
	close(fd);
	if (n < 0 || *len > LAUNCHER_MAX) {
		free(text);
		return NULL;
	}
	text[*len] = '\0';
	return text;
}

static bool
dir_on_path(const char *dir)
{
	const char *p = getenv("PATH"), *end;
	char real_dir[PATH_MAX], entry[PATH_MAX], real_entry[PATH_MAX];
	size_t dlen = strlen(dir);

	if (p == NULL)
		return false;
	if (realpath(dir, real_dir) == NULL)
		cutf(real_dir, sizeof real_dir, "%s", dir);
	for (; *p != '\0'; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		if ((size_t)(end - p) == dlen && strncmp(p, dir, dlen) == 0)
			return true;
		if ((size_t)(end - p) < sizeof entry) {
			cutf(entry, sizeof entry, "%.*s", (int)(end - p), p);
			if (realpath(entry, real_entry) != NULL &&
			    strcmp(real_entry, real_dir) == 0)
				return true;
		}
	}
	return false;
}

cJSON *
bootstrap_install_cli(struct service *svc)
{
	const char *xdg = getenv("XDG_BIN_HOME"), *home = getenv("HOME");
	char *dir, *path, *target, *text, *old = NULL, *tmp = NULL;
	size_t len, old_len = 0;
	cJSON *res = NULL;
	bool changed = false, on_path;
	int fd;

	(void)svc;
	if (xdg != NULL && xdg[0] == '/')
		dir = xstrdup(xdg);
	else if (home != NULL && home[0] == '/')
		dir = xasprintf("%s/.local/bin", home);
	else
		return failure("configuration_conflict", xstrdup("Neither XDG_BIN_HOME nor "
		    "HOME is set to an absolute path; there is no place for the launcher."));
	path = xasprintf("%s/taskdeck", dir);
	target = cli_target();
	text = launcher_text(target, &len);
	pthread_mutex_lock(&repair_lock);
	if (!paths_mkdir_p(dir, 0755)) {
		res = failure(errno_code(errno), xasprintf("cannot create %s: %s", dir,
		    strerror(errno)));
		goto out;
	}
	old = read_small(path, &old_len);
	if (old == NULL && errno != ENOENT) {
		res = failure("configuration_conflict", xasprintf("%s already exists and is not "
		    "a taskdeck launcher; it was left untouched. Move it away and repeat.", path));
		goto out;
	}
	if (old != NULL && old_len == len && memcmp(old, text, len) == 0)
		goto done;	/* already installed */
	if (old != NULL && strstr(old, "\n" LAUNCHER_MARK "\n") != old + strlen("#!/bin/sh")) {
		res = failure("configuration_conflict", xasprintf("%s already exists and is not "
		    "a taskdeck launcher; it was left untouched. Move it away and repeat.", path));
		goto out;
	}
	tmp = xasprintf("%s/.taskdeck.tmp.%ld", dir, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0755);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || fchmod(fd, 0755) != 0 ||
	    fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		res = failure(errno_code(e), xasprintf("cannot write %s: %s", tmp, strerror(e)));
		goto out;
	}
	close(fd);
	/* A new file: link() never replaces one that appeared meanwhile.  Ours: rename. */
	if ((old == NULL ? link(tmp, path) : rename(tmp, path)) != 0) {
		int e = errno;
		unlink(tmp);
		res = e == EEXIST ? failure("configuration_conflict", xasprintf("%s appeared "
		    "while installing; it was left untouched.", path))
		    : failure(errno_code(e), xasprintf("cannot install %s: %s", path,
		    strerror(e)));
		goto out;
	}
	unlink(tmp);
	changed = true;
done:
	on_path = dir_on_path(dir);
	res = cJSON_CreateObject();
	cJSON_AddBoolToObject(res, "ok", true);
	cJSON_AddStringToObject(res, "path", path);
	cJSON_AddStringToObject(res, "directory", dir);
	cJSON_AddStringToObject(res, "target", target);
	cJSON_AddBoolToObject(res, "changed", changed);
	cJSON_AddBoolToObject(res, "onPath", on_path);
	if (!on_path) {
		char *hint = xasprintf("Add %s to PATH, e.g. export PATH=\"%s:$PATH\" in your "
		    "shell profile.", dir, dir);
		cJSON_AddStringToObject(res, "nextAction", hint);
		free(hint);
	}
out:
	pthread_mutex_unlock(&repair_lock);
	free(old);
	free(tmp);
	free(text);
	free(target);
	free(path);
	free(dir);
	return res;
}
