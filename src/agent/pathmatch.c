#include <stdlib.h>
#include <string.h>

#include "pathmatch.h"
#include "xalloc.h"

/* A "[...]" class at p against c; *end past its "]".  false with *end NULL when unclosed. */
static bool
class_match(const char *p, char c, const char **end)
{
	bool negate = false, hit = false;
	const char *q = p + 1;

	if (*q == '!' || *q == '^') {
		negate = true;
		q++;
	}
	for (bool first = true; *q != '\0' && (first || *q != ']'); first = false) {
		char lo, hi;

		if (*q == '\\' && q[1] != '\0')
			q++;
		lo = hi = *q;
		if (q[1] == '-' && q[2] != '\0' && q[2] != ']') {
			q += 2;
			if (*q == '\\' && q[1] != '\0')
				q++;
			hi = *q;
		}
		if ((unsigned char)c >= (unsigned char)lo && (unsigned char)c <= (unsigned char)hi)
			hit = true;
		q++;
	}
	if (*q != ']') {
		*end = NULL;
		return false;
	}
	*end = q + 1;
	return hit != negate && c != '/';
}

static bool
glob_at(const char *start, const char *p, const char *s)
{
	for (;;) {
		if (p[0] == '*' && p[1] == '*' && (p == start || p[-1] == '/') &&
		    (p[2] == '/' || p[2] == '\0')) {
			const char *rest = p[2] == '/' ? p + 3 : p + 2;

			if (*rest == '\0')
				return true;
			for (const char *t = s;;) {
				if (glob_at(start, rest, t))
					return true;
				if ((t = strchr(t, '/')) == NULL)
					return false;
				t++;
			}
		}
		if (*p == '*') {
			while (*p == '*')
				p++;
			for (const char *t = s;; t++) {
				if (glob_at(start, p, t))
					return true;
				if (*t == '\0' || *t == '/')
					return false;
			}
		}
		if (*p == '\0')
			return *s == '\0';
		if (*s == '\0')
			return false;
		if (*p == '?') {
			if (*s == '/')
				return false;
		} else if (*p == '[') {
			const char *end;
			bool hit = class_match(p, *s, &end);

			if (end != NULL) {
				if (!hit)
					return false;
				p = end;
				s++;
				continue;
			}
			if (*s != '[')		/* an unclosed "[" is itself */
				return false;
		} else {
			if (*p == '\\' && p[1] != '\0')
				p++;
			if (*p != *s)
				return false;
		}
		p++;
		s++;
	}
}

bool
pathmatch_glob(const char *pattern, const char *path)
{
	return glob_at(pattern, pattern, path);
}

void
ignore_rules_add(struct ignore_rules *r, const char *base, const char *text)
{
	const char *line = text;

	while (line != NULL && *line != '\0') {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *p = xstrndup(line, len), *pat = p;
		size_t n;
		struct ignore_rule rule = { 0 };

		line = nl ? nl + 1 : NULL;
		n = strlen(pat);
		if (n > 0 && pat[n - 1] == '\r')
			pat[--n] = '\0';
		while (n > 0 && pat[n - 1] == ' ' && (n < 2 || pat[n - 2] != '\\'))
			pat[--n] = '\0';
		if (n == 0 || pat[0] == '#') {
			free(p);
			continue;
		}
		if (pat[0] == '!') {
			rule.negate = true;
			pat++;
		} else if (pat[0] == '\\' && (pat[1] == '#' || pat[1] == '!')) {
			pat++;
		}
		n = strlen(pat);
		if (n > 0 && pat[n - 1] == '/') {
			rule.dir_only = true;
			pat[--n] = '\0';
		}
		if (pat[0] == '/') {
			rule.anchored = true;
			pat++;
		} else if (strchr(pat, '/') != NULL) {
			rule.anchored = true;
		}
		if (*pat == '\0') {
			free(p);
			continue;
		}
		rule.base = xstrdup(base);
		rule.pattern = xstrdup(pat);
		free(p);
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 16;
			r->v = xrealloc(r->v, r->cap * sizeof *r->v);
		}
		r->v[r->n++] = rule;
	}
}

void
ignore_rules_truncate(struct ignore_rules *r, size_t n)
{
	while (r->n > n) {
		r->n--;
		free(r->v[r->n].base);
		free(r->v[r->n].pattern);
	}
}

void
ignore_rules_free(struct ignore_rules *r)
{
	ignore_rules_truncate(r, 0);
	free(r->v);
	r->v = NULL;
	r->cap = 0;
}

/* path relative to base, or NULL when it is not below it. */
static const char *
below(const char *base, const char *path)
{
	size_t n = strlen(base);

	if (n == 0)
		return path;
	if (strncmp(path, base, n) == 0 && path[n] == '/')
		return path + n + 1;
	return NULL;
}

bool
ignore_rules_match(const struct ignore_rules *r, const char *path, bool is_dir)
{
	for (size_t i = r->n; i-- > 0;) {
		const struct ignore_rule *rule = &r->v[i];
		const char *rel = below(rule->base, path), *name;

		if (rel == NULL || (rule->dir_only && !is_dir))
			continue;
		name = strrchr(rel, '/');
		name = name ? name + 1 : rel;
		if (rule->anchored ? pathmatch_glob(rule->pattern, rel) :
		    pathmatch_glob(rule->pattern, name))
			return !rule->negate;
	}
	return false;
}
