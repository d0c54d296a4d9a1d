#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <sodium.h>

#include "files.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "timeutil.h"
#include "xalloc.h"

bool
files_make_dirs(const struct td_paths *p, char **err)
{
	const char *dirs[] = { p->config_dir, p->data_dir, p->runtime_dir };

	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		if (!paths_mkdir_p(dirs[i], 0700)) {
			*err = xasprintf("cannot create %s: %s", dirs[i], strerror(errno));
			return false;
		}
	}
	return true;
}

/* Writes data to path through a temporary file, fsync and rename. */
static bool
write_atomic(const char *path, const char *data, size_t len, char **err)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len && fsync(fd) == 0;

	if (fd >= 0)
		close(fd);
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		*err = xasprintf("cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return ok;
}

char *
files_token_problem(const struct td_paths *p)
{
	struct stat st;

	if (stat(p->config_dir, &st) != 0)
		return xasprintf("%s is missing", p->config_dir);
	if (st.st_mode & 0066)
		return xasprintf("the directory %s can be read or written by others "
		    "(mode %03o); run: chmod 700 %s", p->config_dir,
		    (unsigned)(st.st_mode & 0777), p->config_dir);
	if (lstat(p->token, &st) != 0)
		return xasprintf("%s is missing", p->token);
	if (!S_ISREG(st.st_mode))
		return xasprintf("%s is not a regular file", p->token);
	if (st.st_uid != geteuid())
		return xasprintf("%s belongs to another user", p->token);
	if (st.st_mode & 0077)
		return xasprintf("the token file %s can be read or written by others "
		    "(mode %03o); run: chmod 600 %s", p->token,
		    (unsigned)(st.st_mode & 0777), p->token);
	return NULL;
}

static bool
is_token(const char *s)
{
	for (int i = 0; i < TD_TOKEN_HEX; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return s[TD_TOKEN_HEX] == '\0' || s[TD_TOKEN_HEX] == '\n';
}

/* Makes a new token: written to a private temporary file, then linked into place. */
static bool
create_token(const struct td_paths *p, char **err)
{
	char token[TD_TOKEN_HEX + 2];
	char *tmp = xasprintf("%s.new.%ld", p->token, (long)getpid());
	int fd;
	bool ok;

	random_hex(token, TD_TOKEN_HEX / 2);
	strcat(token, "\n");
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	ok = fd >= 0 && write(fd, token, TD_TOKEN_HEX + 1) == TD_TOKEN_HEX + 1 &&
	    fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	/* link() never replaces: if another process made a token first, keep it. */
	if (ok && link(tmp, p->token) != 0 && errno != EEXIST)
		ok = false;
	if (!ok)
		*err = xasprintf("cannot create the token file %s: %s", p->token,
		    strerror(errno));
	unlink(tmp);
	free(tmp);
	sodium_memzero(token, sizeof token);
	return ok;
}

bool
files_load_token(const struct td_paths *p, char out[TD_TOKEN_HEX + 1], char **err)
{
	char buf[TD_TOKEN_HEX + 2] = { 0 };
	char *problem;
	ssize_t n;
	int fd;

	if (access(p->token, F_OK) != 0 && errno == ENOENT && !create_token(p, err))
		return false;
	if ((problem = files_token_problem(p)) != NULL) {
		*err = xasprintf("refusing to start: %s", problem);
		free(problem);
		return false;
	}
	fd = open(p->token, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		*err = xasprintf("cannot read %s: %s", p->token, strerror(errno));
		return false;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < TD_TOKEN_HEX || !is_token(buf)) {
		*err = xasprintf("%s does not hold a token (64 hex digits); remove it "
		    "to have a new one made", p->token);
		return false;
	}
	memcpy(out, buf, TD_TOKEN_HEX);
	out[TD_TOKEN_HEX] = '\0';
	sodium_memzero(buf, sizeof buf);
	return true;
}

/* The pid and URL of the service that holds the lock, for the message. */
static char *
describe_running(const struct td_paths *p)
{
	FILE *f = fopen(p->discovery, "r");
	char data[4096];
	size_t n;
	cJSON *j;
	char *s = NULL;

	if (f == NULL)
		return xstrdup("");
	n = fread(data, 1, sizeof data - 1, f);
	fclose(f);
	data[n] = '\0';
	j = json_parse(data, n);
	if (j != NULL) {
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(j, "pid");
		const char *url = json_get_string(j, "baseUrl");

		if (cJSON_IsNumber(pid) && url != NULL)
			s = xasprintf(" (pid %d, %s)", pid->valueint, url);
		cJSON_Delete(j);
	}
	return s ? s : xstrdup("");
}

bool
files_lock(const struct td_paths *p, int *fd, char **err)
{
	*fd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*fd < 0) {
		*err = xasprintf("cannot open the lock file %s: %s", p->lock, strerror(errno));
		return false;
	}
	if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
		char *who = describe_running(p);
		*err = xasprintf("taskdeckd is already running for this home%s; "
		    "stop it with 'taskdeck daemon stop' or use another TASKDECK_HOME", who);
		free(who);
		close(*fd);
		*fd = -1;
		return false;
	}
	return true;
}

bool
files_write_discovery(const struct service *svc, char **err)
{
	cJSON *d = cJSON_CreateObject();
	char started[TD_TIME_LEN];
	char *text;
	bool ok;

	time_format_utc(svc->started_at, started);
	cJSON_AddStringToObject(d, "baseUrl", svc->base_url);
	cJSON_AddNumberToObject(d, "pid", (double)getpid());
	cJSON_AddStringToObject(d, "version", TD_VERSION);
	cJSON_AddStringToObject(d, "startedAt", started);
	cJSON_AddStringToObject(d, "streamId", svc->stream_id);
	cJSON_AddStringToObject(d, "tokenFile", svc->paths.token);
	if (http_unix_path(svc->http) != NULL)
		cJSON_AddStringToObject(d, "socket", http_unix_path(svc->http));
	text = json_print(d);
	cJSON_Delete(d);
	ok = write_atomic(svc->paths.discovery, text, strlen(text), err);
	free(text);
	return ok;
}

void
files_remove_discovery(const struct td_paths *p)
{
	unlink(p->discovery);
}
