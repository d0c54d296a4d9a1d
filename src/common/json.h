/* Helpers over cJSON for request validation, merge patch and printing. */
#ifndef TD_COMMON_JSON_H
#define TD_COMMON_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Deepest nesting accepted in a document from outside. */
#define JSON_MAX_DEPTH 32
/* Most members of one object accepted in a document from outside. */
#define JSON_MAX_MEMBERS 1000

/*
 * Parses len bytes that must hold exactly one JSON value, valid UTF-8, no
 * deeper than JSON_MAX_DEPTH, no object of more than JSON_MAX_MEMBERS members,
 * no number beyond a double's range (1e400), no object with the same key
 * twice (which copy would count?) and no \u0000 inside a string (cJSON would
 * cut the string there).  NULL on anything else.
 */
cJSON *json_parse(const char *text, size_t len);

/* Why json_parse_why refused a document. */
enum json_problem {
	JSON_OK,
	JSON_MALFORMED,		/* not one JSON value in UTF-8, or too deep */
	JSON_DUPLICATE_KEY,	/* field names the path of the repeated key */
	JSON_NUL_IN_STRING,	/* a string holds \u0000 */
	JSON_TOO_MANY_MEMBERS,	/* field names the path of the object ("" = the document) */
};
/*
 * json_parse, saying why it refused: *problem, and for JSON_DUPLICATE_KEY the
 * repeated key's path ("patch.name", "steps[2].title") in field, for
 * JSON_TOO_MANY_MEMBERS the crowded object's path.
 */
cJSON *json_parse_why(const char *text, size_t len, enum json_problem *problem,
    char *field, size_t field_size);
/* Compact text; never NULL; free() it. */
char *json_print(const cJSON *item);
bool json_utf8_valid(const char *s, size_t len);
/* Characters (not bytes) in a NUL-terminated UTF-8 string. */
size_t json_utf8_chars(const char *s);
/*
 * True when the UTF-8 text s holds no control character (C0, DEL, C1) and no
 * bidirectional control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069):
 * what a person reads as a name or a path is what it is ("\u202egnp.exe" would
 * show as "exe.png").
 */
bool json_text_displayable(const char *s);

/* The string value of obj[key], or NULL when absent or not a string. */
const char *json_get_string(const cJSON *obj, const char *key);

/*
 * Field checks for request bodies.  Each returns true when the value is
 * acceptable (an absent field is acceptable unless required).
 */
bool json_check_string(const cJSON *obj, const char *key, bool required,
    bool nullable, size_t min_len, size_t max_len);
bool json_check_enum(const cJSON *obj, const char *key, bool nullable,
    const char *const *values);
bool json_check_bool(const cJSON *obj, const char *key);
bool json_check_int(const cJSON *obj, const char *key, double min, double max);
/* true when every key of obj is in allowed (NULL-terminated); else *bad names one. */
bool json_only_keys(const cJSON *obj, const char *const *allowed, const char **bad);

/*
 * RFC 7396 JSON merge patch: applies patch to target and returns the result
 * (target is consumed; the result may be a different item).  patch is only
 * read.
 */
cJSON *json_merge_patch(cJSON *target, const cJSON *patch);

/* Length of the longest key path in item (1 for a flat object). */
int json_depth(const cJSON *item);

#endif
