/*
 * grep and glob: a walk of the workspace below a path, every directory and file
 * reached through wsfile (hidden ones skipped, symbolic links not followed),
 * .gitignore files respected, bounded in entries, results, output and time.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "json.h"
#include "pathmatch.h"
#include "timeutil.h"
#include "tools.h"
#include "wsfile.h"
#include "xalloc.h"

#define WALK_TIME_MS 5000		/* a search stops after this long */
#define WALK_MAX_ENTRIES 100000		/* directory entries looked at */
#define WALK_MAX_DEPTH 32
#define IGNORE_FILE_MAX (256 * 1024)	/* a longer .gitignore is not read */
#define GREP_DEFAULT_RESULTS 200
#define GREP_MAX_RESULTS 1000
#define GREP_FILE_MAX (8 * 1024 * 1024)	/* larger files are skipped */
#define GREP_LINE_MATCH 4096		/* bytes of a line the pattern sees */
#define GREP_LINE_SHOWN 300		/* bytes of a matching line shown */
#define GLOB_MAX_RESULTS 1000
#define PATTERN_MAX 1024

/* why a walk stopped when its callback said so: the tool reports its own cut */
static const char walk_results_full[] = "the result limit";

struct walk {
	const struct tool_ctx *ctx;
	struct ignore_rules ign;
	int64_t deadline;
	size_t entries;
	size_t hidden;			/* hidden entries skipped */
	const char *stopped;		/* why the walk stopped early, NULL when it did not */
	size_t base_len;		/* rel + base_len: the path below the walk's root */
	/* every regular file not ignored; false stops the walk */
	bool (*file)(struct walk *w, const char *rel, const struct stat *st);
	void *ud;
};

/* Whether the walk must stop now (time, cancel); sets w->stopped. */
static bool
walk_over(struct walk *w)
{
	if (w->stopped != NULL)
		return true;
	if (clock_mono_ms() >= w->deadline)
		w->stopped = "the time limit of 5 s";
	else if (w->ctx->host != NULL && host_cancelled(w->ctx->host))
		w->stopped = "a cancel";
	return w->stopped != NULL;
}

/* Appends the rules of the .gitignore of the directory prefix ("" or "dir/"). */
static void
walk_ignore_file(struct walk *w, const char *prefix)
{
	char *path = xasprintf("%s.gitignore", prefix), *rel = NULL, *why = NULL, *text;
	struct stat st;
	size_t got, n = strlen(prefix);
	int fd;

	if (wsfile_open(w->ctx->files, path, O_RDONLY | O_NONBLOCK, &fd, &st, &rel, &why) !=
	    WSFILE_OK) {
		free(why);
		free(path);
		return;
	}
	if (S_ISREG(st.st_mode) && st.st_size <= IGNORE_FILE_MAX) {
		char *base = xstrndup(prefix, n > 0 ? n - 1 : 0);

		text = xmalloc((size_t)st.st_size + 1);
		got = agent_read_full(fd, text, (size_t)st.st_size);
		text[got] = '\0';
		ignore_rules_add(&w->ign, base, text);
		free(text);
		free(base);
	}
	close(fd);
	free(rel);
	free(path);
}

static void
search_walk_dir(struct walk *w, int dfd, const char *prefix, int depth)
{
	size_t n, nrules = w->ign.n;
	char **names = tool_dir_names(dfd, &n);

	walk_ignore_file(w, prefix);
	for (size_t i = 0; i < n; i++) {
		char *rel = xasprintf("%s%s", prefix, names[i]);
		struct stat st;

		if (walk_over(w)) {
			/* the rest are only freed */
		} else if (++w->entries > WALK_MAX_ENTRIES) {
			w->stopped = "100,000 directory entries";
		} else if (strcmp(names[i], ".git") == 0 ||
		    fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			/* git's own data; gone since it was listed */
		} else if (wsfile_is_hidden(w->ctx->files, &st)) {
			w->hidden++;
		} else if (S_ISDIR(st.st_mode)) {
			int sub;

			if (depth < WALK_MAX_DEPTH && !ignore_rules_match(&w->ign, rel, true)) {
				if ((sub = wsfile_open_subdir(w->ctx->files, dfd, names[i])) >= 0) {
					char *subprefix = xasprintf("%s/", rel);

					search_walk_dir(w, sub, subprefix, depth + 1);
					free(subprefix);
					close(sub);
				} else if (errno == EACCES) {
					w->hidden++;
				}
			}
		} else if (S_ISREG(st.st_mode) && !ignore_rules_match(&w->ign, rel, false)) {
			if (!w->file(w, rel, &st) && w->stopped == NULL)
				w->stopped = walk_results_full;
		}
		free(rel);
		free(names[i]);
	}
	free(names);
	ignore_rules_truncate(&w->ign, nrules);
}

/*
 * Walks args.path (default the workspace root): a directory is walked with
 * the .gitignore files of its parents and its own; a file is the only one.
 * false with a failure in res when the path cannot be opened.
 */
static bool
walk_run(struct walk *w, const struct tool_ctx *ctx, const cJSON *args,
    struct tool_result *res, char **root)
{
	struct stat st;
	int fd;

	w->ctx = ctx;
	w->deadline = clock_mono_ms() + WALK_TIME_MS;
	if (!tool_open(ctx, args, ".", O_RDONLY | O_NONBLOCK, &fd, &st, root, res))
		return false;
	if (S_ISREG(st.st_mode)) {
		const char *name = strrchr(*root, '/');

		close(fd);
		w->base_len = name ? (size_t)(name - *root) + 1 : 0;
		w->file(w, *root, &st);
	} else if (S_ISDIR(st.st_mode)) {
		char *prefix = strcmp(*root, ".") == 0 ? xstrdup("") : xasprintf("%s/", *root);

		w->base_len = strlen(prefix);

		/* the parents' .gitignore files, the root's first */
		if (prefix[0] != '\0') {
			walk_ignore_file(w, "");
			for (const char *s = strchr(prefix, '/'); s != NULL && s[1] != '\0';
			    s = strchr(s + 1, '/')) {
				char *parent = xstrndup(prefix, (size_t)(s - prefix) + 1);

				walk_ignore_file(w, parent);
				free(parent);
			}
		}
		search_walk_dir(w, fd, prefix, 0);
		close(fd);
		free(prefix);
	} else {
		close(fd);
		tool_result_fail(res, "%s: not a file or a directory", *root);
		free(*root);
		return false;
	}
	ignore_rules_free(&w->ign);
	return true;
}

/*
 * The pattern as glibc's extended regular expressions take it: \d and \D
 * (outside brackets) become [0-9] and [^0-9]; NULL with *why for a
 * back-reference, which can take exponential time.
 */
static char *
grep_pattern(const char *p, const char **why)
{
	struct buf b;
	bool bracket = false;

	buf_init(&b, 0);
	for (; *p != '\0'; p++) {
		if (bracket) {
			if (*p == ']')
				bracket = false;
			buf_append(&b, p, 1);
		} else if (*p == '[') {
			bracket = true;
			buf_append(&b, p, 1);
			if (p[1] == '^')
				buf_append(&b, ++p, 1);
			if (p[1] == ']')
				buf_append(&b, ++p, 1);
		} else if (*p == '\\' && p[1] >= '1' && p[1] <= '9') {
			*why = "back-references (\\1 ...) are not supported";
			buf_free(&b);
			return NULL;
		} else if (*p == '\\' && (p[1] == 'd' || p[1] == 'D')) {
			buf_appends(&b, p[1] == 'd' ? "[0-9]" : "[^0-9]");
			p++;
		} else if (*p == '\\' && p[1] != '\0') {
			buf_append(&b, p, 2);
			p++;
		} else {
			buf_append(&b, p, 1);
		}
	}
	return buf_steal(&b);
}

struct grep {
	regex_t re;
	const char *glob;		/* only files matching it, NULL for all */
	size_t max_results;
	size_t max_bytes;
	size_t matches, files;
	size_t binary, large;
	struct buf out;
	bool full;
};

/* Whether rel (below the walk's root) is one the glob argument names. */
static bool
glob_selects(const char *glob, const char *rel, size_t base_len)
{
	const char *name;

	if (glob == NULL)
		return true;
	if (strchr(glob, '/') == NULL) {
		name = strrchr(rel, '/');
		return pathmatch_glob(glob, name ? name + 1 : rel);
	}
	return pathmatch_glob(glob, rel + base_len);
}

/* Searches the lines of data[0..len); false when a bound was reached. */
static bool
grep_lines(struct walk *w, struct grep *g, const char *rel, const char *data, size_t len)
{
	char line[GREP_LINE_MATCH + 1];
	size_t at = 0;
	long no = 0;
	bool counted = false;

	while (at < len) {
		const char *nl = memchr(data + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - data - at) : len - at, m = n;

		no++;
		if (walk_over(w))	/* each line: one may take a while (GREP_LINE_MATCH) */
			return false;
		if (m > GREP_LINE_MATCH)
			m = agent_utf8_cut(data + at, GREP_LINE_MATCH);
		memcpy(line, data + at, m);
		line[m] = '\0';
		if (regexec(&g->re, line, 0, NULL, 0) == 0) {
			struct buf shown;
			size_t s = n > GREP_LINE_SHOWN ? agent_utf8_cut(data + at, GREP_LINE_SHOWN) : n;

			if (g->matches >= g->max_results || g->out.len >= g->max_bytes) {
				g->full = true;
				return false;
			}
			buf_init(&shown, 0);
			agent_utf8_append(&shown, data + at, s);
			buf_printf(&g->out, "%s:%ld:%s%s\n", rel, no, shown.data ? shown.data : "",
			    s < n ? " [...]" : "");
			buf_free(&shown);
			g->matches++;
			if (!counted)
				g->files++, counted = true;
		}
		at += n + 1;
	}
	return true;
}

static bool
grep_file(struct walk *w, const char *rel, const struct stat *listed)
{
	struct grep *g = w->ud;
	char *why = NULL, *opened = NULL, *data;
	struct stat st;
	size_t got;
	bool go_on = true;
	int fd;

	(void)listed;
	if (!glob_selects(g->glob, rel, w->base_len))
		return true;
	/* again through wsfile: the whole path's hidden check, hard links included */
	if (wsfile_open(w->ctx->files, rel, O_RDONLY | O_NONBLOCK, &fd, &st, &opened, &why) !=
	    WSFILE_OK) {
		free(why);
		return true;
	}
	free(opened);
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return true;
	}
	if (st.st_size > GREP_FILE_MAX) {
		g->large++;
		close(fd);
		return true;
	}
	data = xmalloc((size_t)st.st_size + 1);
	got = agent_read_full(fd, data, (size_t)st.st_size);
	close(fd);
	if (memchr(data, '\0', got) != NULL)
		g->binary++;
	else
		go_on = grep_lines(w, g, rel, data, got);
	free(data);
	return go_on || w->stopped != NULL;
}

static bool
args_count(const cJSON *args, const char *name, size_t def, size_t max, size_t *out,
    struct tool_result *res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	*out = def;
	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (double)max ||
	    v->valuedouble != (double)(long long)v->valuedouble) {
		tool_result_fail(res, "the argument \"%s\" must be a whole number from 1 to %zu",
		    name, max);
		return false;
	}
	*out = (size_t)v->valuedouble;
	return true;
}

/* args.name: absent, or a non-empty string of at most PATTERN_MAX bytes. */
static bool
args_pattern(const cJSON *args, const char *name, bool required, const char **out,
    struct tool_result *res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	*out = NULL;
	if ((v == NULL || cJSON_IsNull(v)) && !required)
		return true;
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
	    strlen(v->valuestring) > PATTERN_MAX) {
		tool_result_fail(res, "the argument \"%s\" must be a string of 1 to %d bytes", name,
		    PATTERN_MAX);
		return false;
	}
	*out = v->valuestring;
	return true;
}

static void
walk_notes(const struct walk *w, struct buf *out)
{
	if (w->stopped != NULL && w->stopped != walk_results_full)
		buf_printf(out, "[stopped early at %s: the results are incomplete; narrow the "
		    "path or the pattern]\n", w->stopped);
	if (w->hidden > 0)
		buf_printf(out, "[%zu hidden paths skipped]\n", w->hidden);
}

int
tool_grep(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	struct grep g = { .max_bytes = tool_output_max(ctx) };
	struct walk w = { .file = grep_file, .ud = &g };
	const cJSON *icase = cJSON_GetObjectItemCaseSensitive(args, "ignore_case");
	const char *pattern, *why = NULL;
	char *re, *root = NULL, err[256];
	int rc;

	if (!args_pattern(args, "pattern", true, &pattern, res) ||
	    !args_pattern(args, "glob", false, &g.glob, res) ||
	    !args_count(args, "max_results", GREP_DEFAULT_RESULTS, GREP_MAX_RESULTS,
	    &g.max_results, res))
		return AGENT_OK;
	if ((re = grep_pattern(pattern, &why)) == NULL) {
		tool_result_fail(res, "bad pattern: %s", why);
		return AGENT_OK;
	}
	rc = regcomp(&g.re, re, REG_EXTENDED | REG_NEWLINE | REG_NOSUB |
	    (cJSON_IsTrue(icase) ? REG_ICASE : 0));
	free(re);
	if (rc != 0) {
		regerror(rc, &g.re, err, sizeof err);
		tool_result_fail(res, "bad pattern: %s (POSIX extended regular expression)", err);
		return AGENT_OK;
	}
	buf_init(&g.out, 0);
	if (walk_run(&w, ctx, args, res, &root)) {
		agent_utf8_append(&res->content, g.out.data ? g.out.data : "", g.out.len);
		if (g.matches == 0)
			buf_appends(&res->content, "no matches\n");
		if (g.full)
			buf_printf(&res->content, "[results cut at %zu matches: narrow the search or "
			    "raise max_results]\n", g.matches);
		if (g.binary > 0 || g.large > 0)
			buf_printf(&res->content, "[skipped: %zu binary files, %zu files over 8 MiB]\n",
			    g.binary, g.large);
		walk_notes(&w, &res->content);
		tool_result_summary(res, "%zu matches in %zu files for %s%s", g.matches, g.files,
		    pattern, w.stopped || g.full ? " (incomplete)" : "");
		free(root);
	}
	buf_free(&g.out);
	regfree(&g.re);
	return AGENT_OK;
}

struct glob {
	const char *pattern;
	size_t count;
	size_t max_bytes;
	struct buf out;
	bool full;
};

static bool
glob_file(struct walk *w, const char *rel, const struct stat *st)
{
	struct glob *g = w->ud;

	(void)st;
	if (!pathmatch_glob(g->pattern, rel + w->base_len))
		return true;
	if (g->count >= GLOB_MAX_RESULTS || g->out.len >= g->max_bytes) {
		g->full = true;
		return false;
	}
	buf_printf(&g->out, "%s\n", rel);
	g->count++;
	return true;
}

int
tool_glob(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
	struct glob g = { .max_bytes = tool_output_max(ctx) };
	struct walk w = { .file = glob_file, .ud = &g };
	char *root = NULL;

	if (!args_pattern(args, "pattern", true, &g.pattern, res))
		return AGENT_OK;
	buf_init(&g.out, 0);
	if (walk_run(&w, ctx, args, res, &root)) {
		agent_utf8_append(&res->content, g.out.data ? g.out.data : "", g.out.len);
		if (g.count == 0)
			buf_appends(&res->content, "no files match\n");
		if (g.full)
			buf_printf(&res->content, "[results cut at %zu files]\n", g.count);
		walk_notes(&w, &res->content);
		tool_result_summary(res, "%zu files match %s%s", g.count, g.pattern,
		    w.stopped || g.full ? " (incomplete)" : "");
		free(root);
	}
	buf_free(&g.out);
	return AGENT_OK;
}

void
tool_describe_grep(const cJSON *args, char *out, size_t len)
{
	const char *p = json_get_string(args, "pattern"), *path = json_get_string(args, "path");

	snprintf(out, len, "search %s for %.200s", path ? path : ".", p ? p : "?");
}

void
tool_describe_glob(const cJSON *args, char *out, size_t len)
{
	const char *p = json_get_string(args, "pattern"), *path = json_get_string(args, "path");

	snprintf(out, len, "find %.200s in %s", p ? p : "?", path ? path : ".");
}

static bool
snapshot_file(struct walk *w, const char *rel, const struct stat *st)
{
	struct ws_snapshot *snap = w->ud;

	if (snap->n == snap->cap) {
		snap->cap = snap->cap ? snap->cap * 2 : 256;
		snap->v = xrealloc(snap->v, snap->cap * sizeof *snap->v);
	}
	snap->v[snap->n++] = (struct ws_file){ .rel = xstrdup(rel), .size = st->st_size,
		.mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec };
	return true;
}

void
tool_snapshot(const struct tool_ctx *ctx, struct ws_snapshot *snap)
{
	struct walk w = { .file = snapshot_file, .ud = snap };
	struct tool_result res;
	cJSON *args = cJSON_CreateObject();
	char *root = NULL;

	memset(snap, 0, sizeof *snap);
	tool_result_init(&res);
	if (walk_run(&w, ctx, args, &res, &root))
		free(root);
	snap->cut = w.stopped != NULL || res.failed;
	tool_result_free(&res);
	cJSON_Delete(args);
}

void
tool_snapshot_free(struct ws_snapshot *snap)
{
	for (size_t i = 0; i < snap->n; i++)
		free(snap->v[i].rel);
	free(snap->v);
	memset(snap, 0, sizeof *snap);
}
