/*
 * Path patterns of the glob and grep tools: globs over workspace-relative paths
 * and the rules of .gitignore files (docs/agent.md "Tools").
 */
#ifndef TD_AGENT_PATHMATCH_H
#define TD_AGENT_PATHMATCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether path ("a/b/c.txt", no leading "./") matches pattern: "*" and "?"
 * within one component, "[...]" classes ("[!...]" or "[^...]" negated, ranges),
 * "\" quoting the next character, and "**" as a whole component matching zero
 * or more components ("**" at the end: everything below).
 */
bool pathmatch_glob(const char *pattern, const char *path);

/* One rule of a .gitignore file. */
struct ignore_rule {
	char *base;		/* the directory of its file, relative ("" at the root) */
	char *pattern;		/* without "!", the leading "/" and a trailing "/" */
	bool negate;		/* "!pattern": a match un-ignores */
	bool dir_only;		/* "pattern/": matches directories only */
	bool anchored;		/* has a "/" other than a trailing one: matched from base */
};

/* The rules in force during a walk, the root's first (ignore_rules_free). */
struct ignore_rules {
	struct ignore_rule *v;
	size_t n, cap;
};

/*
 * Appends the rules of a .gitignore file of the directory base (text: its
 * content).  Blank lines and "#" comments are skipped, trailing spaces dropped.
 */
void ignore_rules_add(struct ignore_rules *r, const char *base, const char *text);
/* Drops the rules after the first n (a directory's, when the walk leaves it). */
void ignore_rules_truncate(struct ignore_rules *r, size_t n);
void ignore_rules_free(struct ignore_rules *r);
/* Whether path (relative to the workspace) is ignored: the last matching rule decides. */
bool ignore_rules_match(const struct ignore_rules *r, const char *path, bool is_dir);

#endif
