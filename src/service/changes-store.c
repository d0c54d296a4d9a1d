/*
 * The stores of the changes (changes-int.h): one bare git repository per
 * session under <data>/changes/, used as an object store only (no refs, no
 * index), opened on the snapshot thread; the directory each store pins as its
 * workspace; a tree of the workspace now, within the stores' quotas.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changes-int.h"
#include "log.h"
#include "service.h"
#include "settings.h"
#include "timeutil.h"
#include "wsfile.h"
#include "xalloc.h"

/* Sessions whose store and stat cache stay open on the snapshot thread. */
#define CHANGES_OPEN_SESSIONS 16
/* The stat cache's file in a store. */
#define CHANGES_STAT_CACHE "taskdeck-stat-cache"
/* The file of a store that pins its workspace: the directory its first snapshot read. */
#define CHANGES_ROOT_PIN "taskdeck-workspace"

char *
changes_repo_path(const struct service *svc, const char *session_id)
{
	return xasprintf("%s/changes/%s.git", svc->paths.data_dir, session_id);
}

/* The bytes under dir (the objects of a store), two levels deep. */
static long long
changes_dir_bytes(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long long total = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char *p;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		p = xasprintf("%s/%s", dir, de->d_name);
		if (lstat(p, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth > 0)
				total += changes_dir_bytes(p, depth - 1);
			else if (S_ISREG(st.st_mode))
				total += st.st_size;
		}
		free(p);
	}
	closedir(d);
	return total;
}

/* Saves the stat cache of s into its store, for the next process. */
void
changes_session_save(struct changes *c, const struct changes_session *s)
{
	char *path = xasprintf("%s/%s.git/%s", c->dir, s->id, CHANGES_STAT_CACHE);

	if (!changes_walker_save(s->walker, path))
		log_warn("changes: cannot save the stat cache %s: %s", path, strerror(errno));
	free(path);
}

void
changes_session_close(struct changes *c, struct changes_session *s)
{
	changes_session_save(c, s);
	changes_walker_free(s->walker);
	git_repository_free(s->repo);
	free(s);
}

/*
 * libgit2's setup loads the TLS certificates and OpenSSL's engines for
 * transports the stores never use, some 3.5 MiB that an idle service need
 * not hold: it waits for the first store.
 */
bool
changes_git(struct changes *c)
{
	bool ok;

	pthread_mutex_lock(&c->mu);
	if (c->git == 0) {
		c->git = git_libgit2_init() < 0 ? -1 : 1;
		/* The stores are the service's own: no user or system git configuration. */
		for (int level = GIT_CONFIG_LEVEL_SYSTEM; c->git > 0 &&
		    level <= GIT_CONFIG_LEVEL_GLOBAL; level++)
			git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, "");
		if (c->git < 0)
			log_error("changes: libgit2 could not be initialised");
	}
	ok = c->git > 0;
	pthread_mutex_unlock(&c->mu);
	return ok;
}

/* The snapshot thread's state of session id: its store opened or made. */
struct changes_session *
changes_session_get(struct changes *c, const char *id)
{
	struct changes_session *s, **pp, **oldest = NULL;
	char *path, *objects;
	int n = 0;

	for (pp = &c->sessions; (s = *pp) != NULL; pp = &s->next) {
		if (strcmp(s->id, id) == 0) {
			s->used = clock_mono_ms();
			return s;
		}
		if (oldest == NULL || s->used < (*oldest)->used)
			oldest = pp;
		n++;
	}
	if (n >= CHANGES_OPEN_SESSIONS) {
		s = *oldest;
		*oldest = s->next;
		changes_session_close(c, s);
	}
	if (!changes_git(c))
		return NULL;
	s = xcalloc(1, sizeof *s);
	snprintf(s->id, sizeof s->id, "%s", id);
	path = changes_repo_path(c->svc, id);
	if (mkdir(c->dir, 0700) != 0 && errno != EEXIST)
		log_warn("changes: cannot make %s: %s", c->dir, strerror(errno));
	if (git_repository_open_bare(&s->repo, path) != 0 &&
	    git_repository_init(&s->repo, path, 1) != 0) {
		const git_error *e = git_error_last();
		log_error("changes: cannot open the store %s: %s", path, e ? e->message : "?");
		free(path);
		free(s);
		return NULL;
	}
	objects = xasprintf("%s/objects", path);
	s->walker = changes_walker_new(s->repo, changes_dir_bytes(objects, 1));
	free(objects);
	if (s->walker == NULL) {
		free(path);
		git_repository_free(s->repo);
		free(s);
		return NULL;
	}
	objects = xasprintf("%s/%s", path, CHANGES_STAT_CACHE);
	changes_walker_load(s->walker, objects);
	free(objects);
	free(path);
	s->used = clock_mono_ms();
	s->next = c->sessions;
	c->sessions = s;
	return s;
}

/*
 * Whether the directory (dev, ino) is the workspace whose snapshots the store
 * of session_id holds.  A store that pins none yet takes this one when pin is
 * true (its first snapshot), and accepts any when false.
 */
bool
changes_root_pinned(const char *changes_dir, const char *session_id, dev_t dev, ino_t ino,
    bool pin)
{
	char *path = xasprintf("%s/%s.git/%s", changes_dir, session_id, CHANGES_ROOT_PIN);
	char text[64], *tmp;
	uintmax_t want_dev, want_ino;
	bool ok = true;
	FILE *f = fopen(path, "re");

	if (f != NULL) {
		ok = fgets(text, sizeof text, f) != NULL &&
		    sscanf(text, "%ju %ju", &want_dev, &want_ino) == 2 &&
		    want_dev == (uintmax_t)dev && want_ino == (uintmax_t)ino;
		fclose(f);
	} else if (errno == ENOENT && pin) {
		tmp = xasprintf("%s.tmp", path);
		f = fopen(tmp, "we");
		if (f == NULL || fprintf(f, "%ju %ju\n", (uintmax_t)dev, (uintmax_t)ino) < 0 ||
		    fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 ||
		    rename(tmp, path) != 0) {
			log_warn("changes: cannot pin the workspace of %s: %s", session_id,
			    strerror(errno));
			unlink(tmp);
		}
		free(tmp);
	} else if (errno != ENOENT) {
		ok = false;
	}
	free(path);
	return ok;
}

/* The refusal of a workspace that is not the pinned one. */
enum td_code
changes_replaced_problem(struct problem *p, const char *workspace)
{
	problem_set(p, TD_WORKSPACE_REPLACED, "cwd", "The session's directory %s is not the "
	    "one its first snapshot read (it was moved, or a link or another directory is at "
	    "its path): no run starts there and no revert writes there.", workspace);
	p->details = cJSON_CreateObject();
	cJSON_AddStringToObject(p->details, "cwd", workspace);
	return TD_WORKSPACE_REPLACED;
}

enum td_code
changes_check_workspace(struct service *svc, const char *session_id, const char *workspace,
    struct problem *p)
{
	char *dir = xasprintf("%s/changes", svc->paths.data_dir);
	struct stat st;
	int fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool same = fd >= 0 && fstat(fd, &st) == 0 &&
	    changes_root_pinned(dir, session_id, st.st_dev, st.st_ino, false);

	if (fd >= 0)
		close(fd);
	free(dir);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return TD_OK;	/* gone: the run fails in its own way */
	if (same)
		return TD_OK;
	return changes_replaced_problem(p, workspace);
}
static long long
changes_all_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long long total = 0;

	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char *objects;

		if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".git") != 0)
			continue;
		objects = xasprintf("%s/%s/objects", dir, de->d_name);
		total += changes_dir_bytes(objects, 1);
		free(objects);
	}
	if (d != NULL)
		closedir(d);
	return total;
}

/*
 * The limits of a snapshot of s: changes.quotaBytes for its store, lowered to
 * what changes.totalQuotaBytes leaves of every store.
 */
static void
changes_limits_read(struct changes *c, const struct changes_session *s,
    struct changes_limits *lim)
{
	long long total_quota, room;

	settings_changes_limits(c->svc->settings, &lim->max_file_bytes, &lim->quota_bytes,
	    &total_quota);
	if (c->total < 0)
		c->total = changes_all_bytes(c->dir);
	room = total_quota - c->total;
	if (room < 0)
		room = 0;
	if (changes_walker_stored(s->walker) + room < lim->quota_bytes)
		lim->quota_bytes = changes_walker_stored(s->walker) + room;
}

/*
 * The tree of the workspace now, on the snapshot thread; *incomplete
 * (malloc'd, may be NULL) why it lacks part of the workspace.  False with
 * *replaced when the directory is not the one the store pinned: not read.
 * A store with no pin yet takes this directory's with pin (a snapshot of a
 * run, never a revert's look).  scanned: changes_walk's.
 */
bool
changes_take(struct changes *c, struct changes_session *s, const char *workspace,
    char *const *hidden, void (*scanned)(void *), void *arg, git_oid *tree,
    char **incomplete, bool pin, bool *replaced)
{
	struct changes_limits lim;
	struct changes_walk_stats stats;
	struct wsfile_root *root;
	char *why = NULL;
	bool ok;
	long long stored;
	int64_t t0 = clock_mono_ms();

	*incomplete = NULL;
	*replaced = false;
	changes_limits_read(c, s, &lim);
	stored = changes_walker_stored(s->walker);
	root = wsfile_root_open(workspace, (const char *const *)hidden, &why);
	if (root == NULL) {
		log_warn("changes: cannot open the workspace %s: %s", workspace, why);
		free(why);
		return false;
	}
	{
		dev_t dev;
		ino_t ino;

		wsfile_root_ident(root, &dev, &ino);
		if (!changes_root_pinned(c->dir, s->id, dev, ino, pin)) {
			log_warn("changes: %s is not the directory the first snapshot of %s read: "
			    "not read", workspace, s->id);
			wsfile_root_free(root);
			*replaced = true;
			return false;
		}
	}
	ok = changes_walk(s->walker, root, &lim, scanned, arg, tree, &stats, &why);
	c->total += changes_walker_stored(s->walker) - stored;
	wsfile_root_free(root);
	if (!ok) {
		log_warn("changes: no snapshot of %s: %s", workspace, why);
		free(why);
		return false;
	}

	*incomplete = changes_walk_incomplete(&stats);
	log_debug("changes: snapshot of %s: %ld files, %ld read, %ld by size and hash "
	    "(%lld bytes hashed for them), %ld left out, stat cache %lld bytes, %lldms%s%s",
	    workspace, stats.files, stats.hashed, stats.pointers, stats.pointer_bytes,
	    stats.skipped, changes_walker_cache_bytes(s->walker),
	    (long long)(clock_mono_ms() - t0), *incomplete ? ": " : "",
	    *incomplete ? *incomplete : "");
	return true;
}

