/* The walk of a workspace into a git tree (src/service/changes-walk.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>

#include "changes-int.h"
#include "wsfile.h"

static char dir[PATH_MAX], ws[PATH_MAX + 8];
static git_repository *repo;
static struct changes_walker *walker;
static const struct changes_limits limits = { .max_file_bytes = 1000, .quota_bytes = 1 << 30 };

static void
put(const char *name, const char *text)
{
	char path[2 * PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", ws, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static void
setup(void)
{
	char tmpl[] = "/tmp/td-walk-XXXXXX", store[PATH_MAX + 16];

	cr_assert_not_null(mkdtemp(tmpl));
	snprintf(dir, sizeof dir, "%s", tmpl);
	snprintf(ws, sizeof ws, "%s/ws", dir);
	snprintf(store, sizeof store, "%s/store.git", dir);
	cr_assert_eq(mkdir(ws, 0700), 0);
	git_libgit2_init();
	cr_assert_eq(git_repository_init(&repo, store, 1), 0);
	walker = changes_walker_new(repo, 0);
	cr_assert_not_null(walker);
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];

	changes_walker_free(walker);
	git_repository_free(repo);
	git_libgit2_shutdown();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(walk, .init = setup, .fini = teardown, .timeout = 30);

static void
walk(const char *const *hidden, git_oid *tree, struct changes_walk_stats *stats)
{
	char *why = NULL;
	struct wsfile_root *root = wsfile_root_open(ws, hidden, &why);

	cr_assert_not_null(root, "%s", why);
	cr_assert(changes_walk(walker, root, &limits, NULL, NULL, tree, stats, &why), "%s", why);
	wsfile_root_free(root);
}

/* The blob of path in tree as text (NUL-terminated, at most 255 bytes); its mode. */
static git_filemode_t
blob_at(const git_oid *tree, const char *path, char out[256])
{
	git_tree *t;
	git_tree_entry *e;
	git_blob *b;
	git_filemode_t mode;
	size_t n;

	cr_assert_eq(git_tree_lookup(&t, repo, tree), 0);
	if (git_tree_entry_bypath(&e, t, path) != 0) {
		git_tree_free(t);
		return 0;
	}
	mode = git_tree_entry_filemode(e);
	cr_assert_eq(git_blob_lookup(&b, repo, git_tree_entry_id(e)), 0);
	n = (size_t)git_blob_rawsize(b) < 255 ? (size_t)git_blob_rawsize(b) : 255;
	memcpy(out, git_blob_rawcontent(b), n);
	out[n] = '\0';
	git_blob_free(b);
	git_tree_entry_free(e);
	git_tree_free(t);
	return mode;
}

Test(walk, the_stat_cache_reads_only_the_file_that_changed)
{
	char name[64], text[256], path[2 * PATH_MAX];
	struct changes_walk_stats st;
	git_oid one, two, three;

	for (int d = 0; d < 10; d++) {
		snprintf(path, sizeof path, "%s/d%02d", ws, d);
		cr_assert_eq(mkdir(path, 0700), 0);
		for (int f = 0; f < 20; f++) {
			snprintf(name, sizeof name, "d%02d/f%02d.txt", d, f);
			put(name, name);
		}
	}
	usleep(200 * 1000);	/* older than the clock's granularity: trusted when cached */
	walk(NULL, &one, &st);
	cr_expect_eq(st.files, 200);
	cr_expect_eq(st.hashed, 200);
	walk(NULL, &two, &st);
	cr_expect(git_oid_equal(&one, &two), "an unchanged workspace gave another tree");
	cr_expect_eq(st.hashed, 0, "%ld files read again", st.hashed);
	put("d03/f07.txt", "changed\n");
	walk(NULL, &three, &st);
	cr_expect_not(git_oid_equal(&two, &three));
	cr_expect_eq(st.hashed, 1, "%ld files read for one change", st.hashed);
	cr_expect_eq(blob_at(&three, "d03/f07.txt", text), GIT_FILEMODE_BLOB);
	cr_expect_str_eq(text, "changed\n");
}

Test(walk, links_fifos_hidden_files_and_git_directories)
{
	char path[2 * PATH_MAX], secret[2 * PATH_MAX], text[256];
	const char *hidden[2] = { secret, NULL };
	struct changes_walk_stats st;
	git_oid tree;

	/* the token: hidden, so are a hard link to it; a symbolic link is its target text */
	snprintf(secret, sizeof secret, "%s/token", ws);
	put("token", "TOKEN-BYTES\n");
	snprintf(path, sizeof path, "%s/hard", ws);
	cr_assert_eq(link(secret, path), 0);
	snprintf(path, sizeof path, "%s/out", ws);
	cr_assert_eq(symlink(secret, path), 0);
	snprintf(path, sizeof path, "%s/fifo", ws);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof path, "%s/.git", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	put(".git/config", "[core]\n");
	put("run.sh", "#!/bin/sh\n");
	snprintf(path, sizeof path, "%s/run.sh", ws);
	cr_assert_eq(chmod(path, 0755), 0);
	snprintf(path, sizeof path, "%s/line\nbreak", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	put("line\nbreak/x", "x\n");
	walk(hidden, &tree, &st);
	cr_expect_eq(blob_at(&tree, "token", text), 0, "the hidden token is in the tree");
	cr_expect_eq(blob_at(&tree, "hard", text), 0, "a hard link to the token is in the tree");
	cr_expect_eq(blob_at(&tree, "out", text), GIT_FILEMODE_LINK);
	cr_expect_str_eq(text, secret, "a link is recorded by its target text");
	cr_expect_eq(blob_at(&tree, "fifo", text), 0, "a fifo is in the tree");
	cr_expect_eq(blob_at(&tree, ".git/config", text), 0, ".git is in the tree");
	cr_expect_eq(blob_at(&tree, "run.sh", text), GIT_FILEMODE_BLOB_EXECUTABLE);
	cr_expect_eq(blob_at(&tree, "line\nbreak/x", text), GIT_FILEMODE_BLOB);
	cr_expect_eq(st.files, 3);
}

Test(walk, large_and_ignored_files_are_recorded_by_size_and_hash)
{
	char big[2000], text[256];
	struct changes_walk_stats st;
	git_oid tree;

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	put("big.bin", big);
	put(".gitignore", "*.log\nbuild/\n!keep.log\n");
	put("app.log", "log line\n");
	put("keep.log", "kept\n");
	cr_assert_eq(mkdir(strcat(strcpy(text, ws), "/build"), 0700), 0);
	put("build/out.o", "object\n");
	put("small.txt", "small\n");
	walk(NULL, &tree, &st);
	cr_expect_eq(st.pointers, 3);
	blob_at(&tree, "big.bin", text);
	cr_expect_eq(memcmp(text, CHANGES_POINTER_MAGIC, CHANGES_POINTER_MAGIC_LEN), 0);
	cr_expect_not_null(strstr(text + CHANGES_POINTER_MAGIC_LEN, "size 1999\nsha256 "));
	blob_at(&tree, "app.log", text);
	cr_expect_eq(memcmp(text, CHANGES_POINTER_MAGIC, CHANGES_POINTER_MAGIC_LEN), 0);
	blob_at(&tree, "build/out.o", text);
	cr_expect_eq(memcmp(text, CHANGES_POINTER_MAGIC, CHANGES_POINTER_MAGIC_LEN), 0);
	blob_at(&tree, "keep.log", text);
	cr_expect_str_eq(text, "kept\n");
	blob_at(&tree, "small.txt", text);
	cr_expect_str_eq(text, "small\n");
}

/* The number of loose objects in the store (objects/xx/...). */
static int
loose_count(void)
{
	char cmd[PATH_MAX + 128], out[32] = "";
	FILE *p;

	snprintf(cmd, sizeof cmd, "find '%s/store.git/objects' -path '*/objects/[0-9a-f][0-9a-f]/*' -type f | wc -l",
	    dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(out, sizeof out, p));
	pclose(p);
	return atoi(out);
}

Test(walk, loose_objects_go_into_a_pack_and_stay_readable)
{
	char name[64], text[256];
	struct changes_walk_stats st;
	struct changes_walker *again;
	git_oid one, two;

	for (int f = 0; f < 300; f++) {
		snprintf(name, sizeof name, "f%03d.txt", f);
		put(name, name);
	}
	walk(NULL, &one, &st);
	cr_expect_eq(changes_walker_loose(walker), 301);	/* 300 blobs, 1 tree */
	cr_expect_eq(loose_count(), 301);
	cr_assert(changes_walker_pack(walker));
	cr_expect_eq(changes_walker_loose(walker), 0);
	cr_expect_eq(loose_count(), 0, "the packed objects are still loose");
	blob_at(&one, "f123.txt", text);
	cr_expect_str_eq(text, "f123.txt");
	put("f007.txt", "changed\n");
	walk(NULL, &two, &st);
	cr_expect_eq(changes_walker_loose(walker), 2);	/* the blob and the tree */
	blob_at(&two, "f007.txt", text);
	cr_expect_str_eq(text, "changed\n");
	blob_at(&two, "f008.txt", text);
	cr_expect_str_eq(text, "f008.txt");
	/* A later process finds what is still loose, and packs it. */
	again = changes_walker_new(repo, 0);
	cr_expect_eq(changes_walker_loose(again), 2);
	cr_assert(changes_walker_pack(again));
	cr_expect_eq(loose_count(), 0);
	changes_walker_free(again);
	blob_at(&two, "f007.txt", text);
	cr_expect_str_eq(text, "changed\n");
}

/*
 * A huge sparse file is hashed by its data and their places: its holes are
 * never read, and a change of its data changes its pointer.
 */
Test(walk, a_huge_sparse_file_is_read_by_its_data_only)
{
	char path[2 * PATH_MAX], text[256], first[256];
	struct changes_walk_stats st;
	git_oid tree;
	int fd;

	snprintf(path, sizeof path, "%s/huge.img", ws);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, CHANGES_POINTER_HASH_MAX * 4), 0);	/* sparse */
	cr_assert_eq(pwrite(fd, "data", 4, 1 << 20), 4);
	close(fd);
	walk(NULL, &tree, &st);
	cr_expect_eq(st.pointers, 1);
	cr_expect_lt(st.pointer_bytes, 1 << 20, "%lld bytes read", st.pointer_bytes);
	blob_at(&tree, "huge.img", text);
	cr_expect_not_null(strstr(text + CHANGES_POINTER_MAGIC_LEN, "size 1073741824\n"
	    "sha256 of the data extents and their places (holes skipped) "), "%s",
	    text + CHANGES_POINTER_MAGIC_LEN);
	cr_expect_not_null(strstr(text + CHANGES_POINTER_MAGIC_LEN, "\nmtime "));
	snprintf(first, sizeof first, "%s", text + CHANGES_POINTER_MAGIC_LEN);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_eq(pwrite(fd, "DATA", 4, 1 << 20), 4);
	close(fd);
	walk(NULL, &tree, &st);
	blob_at(&tree, "huge.img", text);
	cr_expect_str_neq(text + CHANGES_POINTER_MAGIC_LEN, first, "the data changed, not the pointer");
}

/* A later process reads the stat cache back: its first walk reads nothing unchanged. */
Test(walk, the_stat_cache_outlives_the_walker)
{
	char name[64], path[2 * PATH_MAX], cache[PATH_MAX + 32];
	struct changes_walk_stats st;
	git_oid one, two;

	for (int f = 0; f < 50; f++) {
		snprintf(name, sizeof name, "f%02d.txt", f);
		put(name, name);
	}
	usleep(200 * 1000);
	walk(NULL, &one, &st);
	snprintf(cache, sizeof cache, "%s/store.git/stat-cache", dir);
	cr_assert(changes_walker_save(walker, cache));
	changes_walker_free(walker);
	walker = changes_walker_new(repo, 0);
	cr_assert(changes_walker_load(walker, cache));
	put("f10.txt", "changed\n");
	walk(NULL, &two, &st);
	cr_expect_eq(st.hashed, 1, "%ld files read after the reload", st.hashed);
	/* A damaged file is refused, not trusted. */
	snprintf(path, sizeof path, "truncate -s 30 '%s'", cache);
	cr_assert_eq(system(path), 0);
	changes_walker_free(walker);
	walker = changes_walker_new(repo, 0);
	cr_expect_not(changes_walker_load(walker, cache));
}

/* What the run does between a split walk's listing and its reading (changes_walk's scanned). */
static void
run_meanwhile(void *arg)
{
	char path[2 * PATH_MAX];
	int *calls = arg;

	(*calls)++;
	put("same.txt", "NEW!\n");		/* the same size: only its ctime tells */
	put("grown.txt", "grown a lot\n");
	snprintf(path, sizeof path, "%s/gone.txt", ws);
	cr_assert_eq(unlink(path), 0);
	put("new.txt", "made by the run\n");
	snprintf(path, sizeof path, "%s/sub/swap.txt", ws);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(symlink("/etc/passwd", path), 0);
	snprintf(path, sizeof path, "%s/newdir", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	put("newdir/x.txt", "x\n");
	put("racy.txt", "RACY changed\n");
}

/*
 * A split walk: the run starts after the listing; what it changes before
 * the reading is left out and named, what it makes is not in the start, and
 * what it left alone is read whole.  A file written just before the walk
 * (racy) is read before the run starts, or else named: never silently wrong.
 */
Test(walk, a_split_walk_names_what_changed_before_it_was_read)
{
	char name[64], text[256], path[2 * PATH_MAX], *why = NULL;
	struct changes_walk_stats st;
	struct wsfile_root *root;
	git_oid tree;
	int calls = 0;
	bool racy_named;

	snprintf(path, sizeof path, "%s/sub", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	for (int f = 0; f < 100; f++) {
		snprintf(name, sizeof name, "sub/f%03d.txt", f);
		put(name, name);
	}
	put("same.txt", "old!\n");
	put("grown.txt", "small\n");
	put("gone.txt", "to be removed\n");
	put("sub/swap.txt", "swapped for a link\n");
	usleep(200 * 1000);	/* older than the clock's granularity: listed, read later */
	put("racy.txt", "racy before\n");
	root = wsfile_root_open(ws, NULL, &why);
	cr_assert_not_null(root, "%s", why);
	cr_assert(changes_walk(walker, root, &limits, run_meanwhile, &calls, &tree, &st, &why),
	    "%s", why);
	wsfile_root_free(root);
	cr_expect_eq(calls, 1);
	why = changes_walk_incomplete(&st);
	cr_assert_not_null(why, "the changes made before the reading went unsaid");
	cr_log_info("%s", why);
	for (size_t i = 0; i < 4; i++) {
		const char *changed[] = { "same.txt", "grown.txt", "gone.txt", "sub/swap.txt" };

		cr_expect_not_null(strstr(st.changed_names, changed[i]), "%s is not named: %s",
		    changed[i], why);
		cr_expect_eq(blob_at(&tree, changed[i], text), 0, "%s is in the start as it was "
		    "after the run changed it", changed[i]);
	}
	cr_expect_eq(blob_at(&tree, "new.txt", text), 0, "a file the run made is in its start");
	cr_expect_eq(blob_at(&tree, "newdir/x.txt", text), 0, "a file the run made is in its start");
	racy_named = strstr(st.changed_names, "racy.txt") != NULL;
	cr_expect_eq(st.changed, racy_named ? 5 : 4, "%s", why);
	if (!racy_named) {
		cr_expect_eq(blob_at(&tree, "racy.txt", text), GIT_FILEMODE_BLOB);
		cr_expect_str_eq(text, "racy before\n", "a racy file was read after the run wrote it");
	}
	for (int f = 0; f < 100; f++) {
		snprintf(name, sizeof name, "sub/f%03d.txt", f);
		cr_expect_eq(blob_at(&tree, name, text), GIT_FILEMODE_BLOB, "%s is missing", name);
		cr_expect_str_eq(text, name);
	}
	cr_expect_eq(st.files, 100 + (racy_named ? 0 : 1));
	free(why);
}
