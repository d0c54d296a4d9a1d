#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"
#include "xalloc.h"

static char *
xdg_dir(const char *env, const char *home, const char *fallback)
{
	const char *v = getenv(env);

	/* The XDG spec says relative values are invalid and must be ignored. */
	if (v != NULL && v[0] == '/')
		return xasprintf("%s/taskdeck", v);
	return xasprintf("%s/%s/taskdeck", home, fallback);
}

bool
paths_init(struct td_paths *p)
{
	const char *tdhome = getenv("TASKDECK_HOME");
	const char *home = getenv("HOME");

	memset(p, 0, sizeof *p);
	if (tdhome != NULL && tdhome[0] != '\0') {
		p->config_dir = xstrdup(tdhome);
		p->data_dir = xstrdup(tdhome);
		p->runtime_dir = xstrdup(tdhome);
	} else {
		const char *rt = getenv("XDG_RUNTIME_DIR");

		if (home == NULL || home[0] != '/')
			return false;
		p->config_dir = xdg_dir("XDG_CONFIG_HOME", home, ".config");
		p->data_dir = xdg_dir("XDG_DATA_HOME", home, ".local/share");
		if (rt != NULL && rt[0] == '/')
			p->runtime_dir = xasprintf("%s/taskdeck", rt);
		else
			p->runtime_dir = xdg_dir("XDG_STATE_HOME", home, ".local/state");
	}
	p->token = xasprintf("%s/token", p->config_dir);
	p->settings = xasprintf("%s/settings.json", p->config_dir);
	p->database = xasprintf("%s/taskdeck.db", p->data_dir);
	p->artifacts = xasprintf("%s/artifacts", p->data_dir);
	p->workspaces = xasprintf("%s/workspaces", p->data_dir);
	p->secret_key = xasprintf("%s/secret.key", p->data_dir);
	p->discovery = xasprintf("%s/service.json", p->runtime_dir);
	p->lock = xasprintf("%s/taskdeckd.lock", p->runtime_dir);
	p->socket = xasprintf("%s/taskdeckd.sock", p->runtime_dir);
	p->log = xasprintf("%s/taskdeckd.log", p->data_dir);
	return true;
}

void
paths_free(struct td_paths *p)
{
	char **fields[] = { &p->config_dir, &p->data_dir, &p->runtime_dir,
		&p->token, &p->settings, &p->database, &p->artifacts,
		&p->workspaces, &p->secret_key, &p->discovery, &p->lock, &p->socket, &p->log };

	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		free(*fields[i]);
		*fields[i] = NULL;
	}
}

bool
paths_mkdir_p(const char *path, unsigned mode)
{
	char *tmp = xstrdup(path);
	bool ok = true;

	for (char *s = tmp + 1; ok; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST)
			ok = false;
		*s = c;
		if (c == '\0')
			break;
	}
	free(tmp);
	return ok;
}

static _Thread_local int remove_failed;	/* of the running paths_remove_tree */

static int
paths_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		remove_failed = errno;
	return 0;
}

bool
paths_remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT;
	remove_failed = 0;
	if (nftw(path, paths_remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
		return false;
	if (remove_failed != 0) {
		errno = remove_failed;
		return false;
	}
	return true;
}

/* Whether a user other than uid may belong to gid (its members, or it is not uid's own group). */
static bool
paths_group_shared(gid_t gid, uid_t uid)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char buf[16384];
	bool shared = true;

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) != 0 || pwp == NULL ||
	    pw.pw_gid != gid)
		return true;
	if (getgrgid_r(gid, &gr, buf, sizeof buf, &grp) != 0 || grp == NULL)
		return true;
	shared = false;
	for (char **m = gr.gr_mem; m != NULL && *m != NULL && !shared; m++) {
		struct passwd opw, *other = NULL;
		char obuf[4096];

		shared = getpwnam_r(*m, &opw, obuf, sizeof obuf, &other) != 0 || other == NULL ||
		    other->pw_uid != uid;
	}
	return shared;
}

char *
paths_renamable(const char *path)
{
	uid_t uid = geteuid();
	char *x = xstrdup(path), *slash, *why = NULL;
	struct stat xs, ps;

	if (lstat(x, &xs) == 0 && xs.st_uid != uid && xs.st_uid != 0)
		why = xasprintf("%s is owned by another user (uid %u)", x, (unsigned)xs.st_uid);
	while (why == NULL && (slash = strrchr(x, '/')) != NULL && slash[1] != '\0') {
		const char *parent = slash == x ? "/" : x;
		char name[4096];

		snprintf(name, sizeof name, "%s", x);
		if (lstat(name, &xs) != 0)
			break;
		if (slash == x)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (lstat(parent, &ps) != 0)
			break;
		if (ps.st_uid != uid && ps.st_uid != 0)
			why = xasprintf("%s is owned by another user (uid %u), who can rename %s",
			    parent, (unsigned)ps.st_uid, name);
		else if (((ps.st_mode & S_IWOTH) || ((ps.st_mode & S_IWGRP) &&
		    paths_group_shared(ps.st_gid, uid))) &&
		    (!(ps.st_mode & S_ISVTX) || (xs.st_uid != uid && xs.st_uid != 0)))
			why = xasprintf("%s is writable by other users%s, who can rename %s",
			    parent, ps.st_mode & S_ISVTX ? " (sticky, but the entry is another "
			    "user's)" : "", name);
		if (slash == x)
			break;
	}
	free(x);
	return why;
}

bool
paths_within(const char *path, const char *dir)
{
	char real[PATH_MAX];
	size_t n;

	if (dir == NULL || realpath(dir, real) == NULL)
		return false;
	n = strlen(real);
	return strncmp(path, real, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
