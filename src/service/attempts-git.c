/* The git side of attempts (attempts-git.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attempts-git.h"
#include "log.h"
#include "paths.h"
#include "xalloc.h"

extern char **environ;

/* What a git command prints that is read back (ids, lists, numbers). */
#define ATTEMPTS_GIT_OUT_MAX (4 * 1024 * 1024)
#define ATTEMPTS_GIT_ERR_MAX 2048
#define ATTEMPTS_GIT_ENV_MAX 256

/* One git command: its directory, environment additions, where stdout goes. */
struct attempts_git_cmd {
	const char *cwd;
	const char *git_dir;		/* GIT_DIR, or NULL: found from cwd */
	const char *work_tree;		/* GIT_WORK_TREE, or NULL */
	const char *ceiling;		/* GIT_CEILING_DIRECTORIES, or NULL */
	const char *index;		/* GIT_INDEX_FILE, or NULL */
	int out_fd;			/* stdout to this file, or -1: into out */
	char *out;			/* malloc'd, NUL-terminated; NULL when out_fd >= 0 */
	size_t out_len;
	char err[ATTEMPTS_GIT_ERR_MAX];
};

/* The service's environment without GIT_*, and the command's own. */
static char **
attempts_git_env(const struct attempts_git_cmd *c, char *own[8])
{
	char **env = xcalloc(ATTEMPTS_GIT_ENV_MAX + 16, sizeof *env);
	size_t n = 0, k = 0;

	for (char **e = environ; *e != NULL && n < ATTEMPTS_GIT_ENV_MAX; e++) {
		if (strncmp(*e, "GIT_", 4) != 0 && strncmp(*e, "LC_ALL=", 7) != 0)
			env[n++] = *e;
	}
	if (c->git_dir != NULL)
		own[k++] = xasprintf("GIT_DIR=%s", c->git_dir);
	if (c->work_tree != NULL)
		own[k++] = xasprintf("GIT_WORK_TREE=%s", c->work_tree);
	if (c->index != NULL)
		own[k++] = xasprintf("GIT_INDEX_FILE=%s", c->index);
	if (c->ceiling != NULL)
		own[k++] = xasprintf("GIT_CEILING_DIRECTORIES=%s", c->ceiling);
	own[k] = NULL;
	for (size_t i = 0; i < k; i++)
		env[n++] = own[i];
	env[n++] = "LC_ALL=C";
	env[n++] = "GIT_TERMINAL_PROMPT=0";
	env[n++] = "GIT_AUTHOR_NAME=taskdeck";
	env[n++] = "GIT_AUTHOR_EMAIL=taskdeck@localhost";
	env[n++] = "GIT_COMMITTER_NAME=taskdeck";
	env[n++] = "GIT_COMMITTER_EMAIL=taskdeck@localhost";
	env[n] = NULL;
	return env;
}

/* Reads the two pipes until both end; out bounded, err kept to its first bytes. */
static void
attempts_git_drain(struct attempts_git_cmd *c, int out, int err)
{
	size_t cap = 0, elen = 0;
	struct pollfd p[2] = { { .fd = out, .events = POLLIN }, { .fd = err, .events = POLLIN } };

	while (p[0].fd >= 0 || p[1].fd >= 0) {
		char buf[8192];
		ssize_t got;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			got = read(p[i].fd, buf, sizeof buf);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				continue;
			}
			if (i == 0 && c->out_len + (size_t)got < ATTEMPTS_GIT_OUT_MAX) {
				if (c->out_len + (size_t)got + 1 > cap) {
					cap = (c->out_len + (size_t)got + 1) * 2;
					c->out = xrealloc(c->out, cap);
				}
				memcpy(c->out + c->out_len, buf, (size_t)got);
				c->out_len += (size_t)got;
				c->out[c->out_len] = '\0';
			} else if (i == 1 && elen + 1 < sizeof c->err) {
				size_t n = (size_t)got < sizeof c->err - 1 - elen ? (size_t)got :
				    sizeof c->err - 1 - elen;
				memcpy(c->err + elen, buf, n);
				elen += n;
				c->err[elen] = '\0';
			}
		}
	}
}

/* Runs git with args (NULL-terminated); its exit status, -1 when it did not run. */
static int
attempts_git_run(struct attempts_git_cmd *c, const char *const *args)
{
	const char *argv[48] = { "git", "-c", "core.hooksPath=/dev/null", "-c",
		"core.fsmonitor=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
		"-c", "advice.detachedHead=false" };
	size_t n = 11;
	char *own[8];
	char **env;
	posix_spawn_file_actions_t fa;
	int op[2] = { -1, -1 }, ep[2], status = -1;
	pid_t pid;

	for (const char *const *a = args; *a != NULL && n < 47; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	c->out = NULL;
	c->out_len = 0;
	c->err[0] = '\0';
	if ((c->out_fd < 0 && pipe2(op, O_CLOEXEC) != 0) || pipe2(ep, O_CLOEXEC) != 0) {
		snprintf(c->err, sizeof c->err, "no pipe: %s", strerror(errno));
		return -1;
	}
	env = attempts_git_env(c, own);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, c->out_fd >= 0 ? c->out_fd : op[1], 1);
	posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
	posix_spawn_file_actions_addchdir_np(&fa, c->cwd);
	if (posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, env) != 0) {
		snprintf(c->err, sizeof c->err, "git could not be run: %s", strerror(errno));
		pid = -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	for (char **o = own; *o != NULL; o++)
		free(*o);
	free(env);
	if (op[1] >= 0)
		close(op[1]);
	close(ep[1]);
	if (pid > 0) {
		attempts_git_drain(c, op[0], ep[0]);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	} else {
		if (op[0] >= 0)
			close(op[0]);
		close(ep[0]);
	}
	if (c->out == NULL && c->out_fd < 0)
		c->out = xstrdup("");
	return status;
}

/* Runs git, true on exit 0; else why gets what (and git's first words). */
static bool
attempts_git_ok(struct attempts_git_cmd *c, const char *const *args, const char *what,
    char *why, size_t whylen)
{
	int rc = attempts_git_run(c, args);

	if (rc == 0)
		return true;
	if (why != NULL) {
		char *nl = strchr(c->err, '\n');

		if (nl != NULL && nl[1] == '\0')
			*nl = '\0';
		snprintf(why, whylen, "%s failed: %s", what, c->err[0] ? c->err : "git exited");
	}
	return false;
}

/* The first line of c->out, its newline cut. */
static char *
attempts_git_line(struct attempts_git_cmd *c)
{
	char *s = c->out ? c->out : xstrdup("");

	s[strcspn(s, "\n")] = '\0';
	c->out = NULL;
	return s;
}

bool
attempts_git_repo(const char *cwd, const char *store, struct attempts_repo *r, char *why,
    size_t whylen)
{
	struct attempts_git_cmd c = { .cwd = cwd, .out_fd = -1 };
	const char *top[] = { "rev-parse", "--show-toplevel", NULL };
	const char *common[] = { "rev-parse", "--path-format=absolute", "--git-common-dir", NULL };
	const char *head[] = { "rev-parse", "--verify", "--quiet", "HEAD^{commit}", NULL };
	const char *init[] = { "init", "--quiet", "--bare", store, NULL };
	const char *ignored[] = { "check-ignore", "--quiet", "--no-index", NULL, NULL };

	memset(r, 0, sizeof *r);
	if (attempts_git_run(&c, top) == 0) {
		r->top = attempts_git_line(&c);
		if (attempts_git_ok(&c, common, "git rev-parse", why, whylen)) {
			r->git_dir = attempts_git_line(&c);
			r->head = attempts_git_run(&c, head) == 0;
			free(c.out);
			c.out = NULL;
			ignored[3] = cwd;
			if (strcmp(r->top, cwd) == 0 ||
			    (r->head && attempts_git_run(&c, ignored) != 0)) {
				free(c.out);
				return true;
			}
			/* a repository without a commit, or cwd in what it ignores: a copy of cwd */
		}
		free(c.out);
		attempts_git_repo_clear(r);
		c.out = NULL;
	} else {
		free(c.out);
		c.out = NULL;
		if (strstr(c.err, "could not be run") != NULL) {
			snprintf(why, whylen, "%s", c.err);
			return false;
		}
	}
	c.cwd = "/";
	if (!attempts_git_ok(&c, init, "git init", why, whylen)) {
		free(c.out);
		return false;
	}
	free(c.out);
	r->top = xstrdup(cwd);
	r->git_dir = xstrdup(store);
	r->head = false;
	r->copy = true;
	return true;
}

void
attempts_git_repo_clear(struct attempts_repo *r)
{
	free(r->top);
	free(r->git_dir);
	memset(r, 0, sizeof *r);
}

/* Copies the file from to to (0600); false when from cannot be read. */
static bool
attempts_git_copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	char buf[65536];
	ssize_t got;
	bool ok = true;

	if (in < 0)
		return false;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return false;
	}
	while (ok && (got = read(in, buf, sizeof buf)) != 0) {
		if (got < 0)
			ok = errno == EINTR;
		else
			ok = write(out, buf, (size_t)got) == got;
	}
	ok = close(out) == 0 && ok;
	close(in);
	if (!ok)
		unlink(to);
	return ok;
}

/*
 * The tree of work_tree now into tree, through the scratch index (seeded
 * from seed when it can be, so that unchanged files are not read again;
 * else from base, or empty).
 */
static bool
attempts_git_tree(const char *git_dir, const char *work_tree, const char *index,
    const char *seed, const char *base, char *tree, char *why, size_t whylen)
{
	struct attempts_git_cmd c = { .cwd = work_tree, .git_dir = git_dir,
		.work_tree = work_tree, .index = index, .out_fd = -1 };
	const char *read_tree[] = { "read-tree", base, NULL };
	const char *empty[] = { "read-tree", "--empty", NULL };
	const char *add_plain[] = { "add", "--all", ".", NULL };
	const char *write[] = { "write-tree", NULL };
	bool ok;
	char *line;

	unlink(index);
	if (seed == NULL || !attempts_git_copy_file(seed, index)) {
		ok = attempts_git_ok(&c, base != NULL ? read_tree : empty, "git read-tree", why,
		    whylen);
		free(c.out);
		if (!ok)
			return false;
	}
	ok = attempts_git_ok(&c, add_plain, "git add", why, whylen);
	free(c.out);
	c.out = NULL;
	ok = ok && attempts_git_ok(&c, write, "git write-tree", why, whylen);
	line = attempts_git_line(&c);
	if (ok)
		snprintf(tree, ATTEMPTS_GIT_OID, "%s", line);
	free(line);
	unlink(index);
	return ok && strlen(tree) == ATTEMPTS_GIT_OID - 1;
}

bool
attempts_git_snapshot(const struct attempts_repo *r, const char *index, char *base, char *why,
    size_t whylen)
{
	struct attempts_git_cmd c = { .cwd = r->top, .git_dir = r->git_dir, .out_fd = -1 };
	char tree[ATTEMPTS_GIT_OID] = "", *seed = NULL, *line;
	const char *gitdir[] = { "rev-parse", "--path-format=absolute", "--git-dir", NULL };
	bool ok;

	if (r->head) {
		/* the index of the user's own work tree (a linked worktree has its own) */
		struct attempts_git_cmd d = { .cwd = r->top, .out_fd = -1 };

		if (attempts_git_run(&d, gitdir) == 0) {
			line = attempts_git_line(&d);
			seed = xasprintf("%s/index", line);
			free(line);
		}
		free(d.out);
	}
	ok = attempts_git_tree(r->git_dir, r->top, index, seed, r->head ? "HEAD" : NULL, tree,
	    why, whylen);
	free(seed);
	if (!ok)
		return false;
	{
		const char *with_parent[] = { "commit-tree", tree, "-p", "HEAD", "-m",
			"taskdeck: the working tree attempts start from", NULL };
		const char *alone[] = { "commit-tree", tree, "-m",
			"taskdeck: the directory attempts start from", NULL };

		ok = attempts_git_ok(&c, r->head ? with_parent : alone, "git commit-tree", why,
		    whylen);
	}
	line = attempts_git_line(&c);
	snprintf(base, ATTEMPTS_GIT_OID, "%s", line);
	free(line);
	return ok && strlen(base) == ATTEMPTS_GIT_OID - 1;
}

bool
attempts_git_worktree_add(const char *git_dir, const char *branch, const char *path,
    const char *base, char *why, size_t whylen)
{
	struct attempts_git_cmd c = { .cwd = "/", .git_dir = git_dir, .out_fd = -1 };
	const char *add[] = { "worktree", "add", "--quiet", "--no-track", "-b", branch, path,
		base, NULL };
	bool ok = attempts_git_ok(&c, add, "git worktree add", why, whylen);

	free(c.out);
	return ok;
}

bool
attempts_git_worktree_remove(const char *git_dir, const char *branch, const char *path)
{
	struct attempts_git_cmd c = { .cwd = "/", .git_dir = git_dir, .out_fd = -1 };
	const char *rm[] = { "worktree", "remove", "--force", "--force", path, NULL };
	const char *del[] = { "branch", "--quiet", "-D", branch, NULL };
	const char *has[] = { "rev-parse", "--verify", "--quiet", NULL, NULL };
	char *ref = xasprintf("refs/heads/%s", branch);
	struct stat sb;
	bool gone;

	attempts_git_run(&c, rm);
	free(c.out);
	if (lstat(path, &sb) == 0 && !paths_remove_tree(path))
		log_warn("attempts: cannot remove %s: %s", path, strerror(errno));
	attempts_git_prune(git_dir);
	attempts_git_run(&c, del);
	free(c.out);
	has[3] = ref;
	gone = attempts_git_run(&c, has) != 0 && lstat(path, &sb) != 0;
	free(c.out);
	free(ref);
	return gone;
}

void
attempts_git_prune(const char *git_dir)
{
	struct attempts_git_cmd c = { .cwd = "/", .git_dir = git_dir, .out_fd = -1 };
	const char *prune[] = { "worktree", "prune", NULL };

	attempts_git_run(&c, prune);
	free(c.out);
}

bool
attempts_git_patch(const char *git_dir, const char *path, const char *base, const char *index,
    const char *patch, long *files, long *added, long *deleted, char *why, size_t whylen)
{
	struct attempts_git_cmd c = { .cwd = "/", .git_dir = git_dir, .out_fd = -1 };
	char tree[ATTEMPTS_GIT_OID] = "";
	const char *numstat[] = { "diff", "--no-renames", "--numstat", base, tree, NULL };
	const char *diff[] = { "diff", "--no-renames", "--binary", "--full-index", "--no-color",
		"--no-ext-diff", "--no-textconv", base, tree, NULL };
	int fd;
	bool ok;

	*files = *added = *deleted = 0;
	if (!attempts_git_tree(git_dir, path, index, NULL, base, tree, why, whylen))
		return false;
	if (!attempts_git_ok(&c, numstat, "git diff", why, whylen)) {
		free(c.out);
		return false;
	}
	for (char *line = c.out; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');

		(*files)++;
		if (line[0] != '-') {	/* "-\t-\t" is a binary file */
			*added += strtol(line, &line, 10);
			*deleted += strtol(line, NULL, 10);
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	free(c.out);
	c.out = NULL;
	fd = open(patch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whylen, "cannot write %s: %s", patch, strerror(errno));
		return false;
	}
	c.out_fd = fd;
	ok = attempts_git_ok(&c, diff, "git diff", why, whylen);
	ok = close(fd) == 0 && ok;
	return ok;
}

bool
attempts_git_apply(const char *git_dir, const char *top, const char *patch, bool reverse,
    char *why, size_t whylen)
{
	struct attempts_git_cmd c = { .cwd = top, .git_dir = git_dir,
		.work_tree = git_dir != NULL ? top : NULL, .out_fd = -1 };
	const char *check[] = { "apply", "--check", "--whitespace=nowarn", reverse ? "-R" : patch,
		reverse ? patch : NULL, NULL };
	const char *apply[] = { "apply", "--whitespace=nowarn", reverse ? "-R" : patch,
		reverse ? patch : NULL, NULL };
	char *parent = xstrdup(top);
	struct stat sb;
	bool ok;

	/* outside git: no repository around top is found, the patch is applied as files */
	*strrchr(parent, '/') = '\0';
	if (git_dir == NULL)
		c.ceiling = parent[0] != '\0' ? parent : "/";
	if (stat(patch, &sb) == 0 && sb.st_size == 0) {
		free(parent);
		return true;
	}
	ok = attempts_git_ok(&c, check, "git apply", why, whylen);
	free(c.out);
	c.out = NULL;
	if (ok)
		ok = attempts_git_ok(&c, apply, "git apply", why, whylen);
	free(c.out);
	free(parent);
	return ok;
}
