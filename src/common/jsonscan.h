/*
 * A validating JSON scanner that builds nothing: one pass checks a document
 * strictly (RFC 8259 syntax, valid UTF-8 also in strings and escapes, no
 * deeper than JSON_MAX_DEPTH, a top-level object) and reports each top-level
 * member as spans of the text.  For hot paths that need a few members.
 */
#ifndef TD_COMMON_JSONSCAN_H
#define TD_COMMON_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

enum jsonscan_type {
	JSONSCAN_NULL,
	JSONSCAN_FALSE,
	JSONSCAN_TRUE,
	JSONSCAN_NUMBER,
	JSONSCAN_STRING,
	JSONSCAN_ARRAY,
	JSONSCAN_OBJECT,
};

/* A span of the scanned text. */
struct jsonscan_value {
	enum jsonscan_type type;
	const char *text;	/* the whole value as written, quotes included */
	size_t len;
	const char *str;	/* a string: the bytes between the quotes */
	size_t str_len;
	bool escaped;		/* a string with backslash escapes (jsonscan_unescape) */
};

/*
 * Called for each top-level member in order, duplicates included; key is a
 * string value.  Returns false to stop (jsonscan_object then fails).
 */
typedef bool (*jsonscan_member_fn)(const struct jsonscan_value *key,
    const struct jsonscan_value *value, void *ud);

/*
 * Checks that len bytes hold exactly one JSON object (whitespace around it
 * allowed) and calls fn for its members; fn may be NULL.  false when the
 * text is not one, or fn stopped; fn may have run for members before the
 * fault.
 */
bool jsonscan_object(const char *text, size_t len, jsonscan_member_fn fn, void *ud);
/*
 * Checks that len bytes hold exactly one JSON value of any kind (whitespace
 * around it allowed), strictly: every escape valid, UTF-8 in strings, no
 * deeper than JSON_MAX_DEPTH.
 */
bool jsonscan_document(const char *text, size_t len);
/*
 * Checks the one JSON value that starts at text (no whitespace before it)
 * and describes it in *v, as a member of a top-level object.  Returns the
 * bytes it takes, or 0 when no valid value starts there.
 */
size_t jsonscan_value_at(const char *text, size_t len, struct jsonscan_value *v);
/*
 * Decodes the escapes of a string that jsonscan_object accepted into out
 * (at least str_len bytes; no NUL added).  Returns the length written, never
 * more than str_len; a \u0000 gives a NUL byte.
 */
size_t jsonscan_unescape(const struct jsonscan_value *s, char *out);

#endif
