#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonscan.h"
#include "termtext.h"
#include "xalloc.h"

bool
json_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + len;

	while (p < end) {
		unsigned c = *p;
		size_t n;
		unsigned cp;

		if (c < 0x80) {
			p++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else
			return false;
		if ((size_t)(end - p) <= n)
			return false;
		for (size_t i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
		    (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

bool
json_text_displayable(const char *s)
{
	return termtext_safe(s);
}

int
json_depth(const cJSON *item)
{
	int deepest = 0;

	if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
		return 0;
	for (const cJSON *c = item->child; c; c = c->next) {
		int d = json_depth(c);
		if (d > deepest)
			deepest = d;
	}
	return deepest + 1;
}

/* True when a string of text holds the escape \u0000 (an escaped backslash is not one). */
static bool
json_has_nul_escape(const char *text, size_t len)
{
	bool in_string = false;

	if (memmem(text, len, "\\u0000", 6) == NULL)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!in_string) {
			in_string = text[i] == '"';
		} else if (text[i] == '"') {
			in_string = false;
		} else if (text[i] == '\\' && i + 1 < len) {
			if (text[i + 1] == 'u' && len - i >= 6 && memcmp(text + i + 2, "0000", 4) == 0)
				return true;
			i++;
		}
	}
	return false;
}

static int
json_name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends one step of a path ("name" or "[3]") to field, cutting at its size. */
static void
json_path_step(char *field, size_t size, const cJSON *parent, const cJSON *child, int index)
{
	size_t n = strlen(field);

	if (n + 1 >= size)
		return;
	if (cJSON_IsArray(parent))
		snprintf(field + n, size - n, "[%d]", index);
	else
		snprintf(field + n, size - n, "%s%s", n > 0 ? "." : "", child->string);
}

/* True when some object under item has over JSON_MAX_MEMBERS members; its path is left in field. */
static bool
json_find_crowded(const cJSON *item, char *field, size_t size)
{
	size_t base = strlen(field), count = 0;
	const cJSON *c;
	int index = 0;

	for (c = item->child; c != NULL && cJSON_IsObject(item); c = c->next)
		if (++count > JSON_MAX_MEMBERS)
			return true;
	for (c = item->child; c != NULL; c = c->next, index++) {
		if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
			continue;
		json_path_step(field, size, item, c, index);
		if (json_find_crowded(c, field, size))
			return true;
		field[base] = '\0';
	}
	return false;
}

/*
 * True when some object under item has a key twice; its path is left in
 * field.  Small objects compare names pairwise, larger ones sort them.
 */
static bool
json_find_duplicate(const cJSON *item, char *field, size_t size)
{
	size_t base = strlen(field), count = 0;
	const cJSON *c;
	int index = 0;

	if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
		return false;
	if (cJSON_IsObject(item)) {
		for (c = item->child; c != NULL; c = c->next)
			count++;
		if (count > 1 && count <= 16) {
			for (c = item->child; c != NULL; c = c->next)
				for (const cJSON *d = c->next; d != NULL; d = d->next)
					if (strcmp(c->string, d->string) == 0) {
						json_path_step(field, size, item, d, 0);
						return true;
					}
		} else if (count > 16) {
			const char **names = xcalloc(count, sizeof *names);
			size_t i = 0;
			bool dup = false;

			for (c = item->child; c != NULL; c = c->next)
				names[i++] = c->string;
			qsort(names, count, sizeof *names, json_name_cmp);
			for (i = 1; i < count && !dup; i++)
				if (strcmp(names[i - 1], names[i]) == 0) {
					cJSON probe = { .string = (char *)names[i] };
					json_path_step(field, size, item, &probe, 0);
					dup = true;
				}
			free(names);
			if (dup)
				return true;
		}
	}
	for (c = item->child; c != NULL; c = c->next, index++) {
		if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
			continue;
		json_path_step(field, size, item, c, index);
		if (json_find_duplicate(c, field, size))
			return true;
		field[base] = '\0';
	}
	return false;
}

/* True when a number under item overflowed to an infinity (1e400): it would print as null. */
static bool
json_has_nonfinite(const cJSON *item)
{
	if (cJSON_IsNumber(item))
		return !isfinite(item->valuedouble);
	for (const cJSON *c = item->child; c != NULL; c = c->next)
		if ((cJSON_IsNumber(c) || c->child != NULL) && json_has_nonfinite(c))
			return true;
	return false;
}

cJSON *
json_parse_why(const char *text, size_t len, enum json_problem *problem, char *field,
    size_t field_size)
{
	const char *end = NULL;
	char scratch[1];
	size_t bom;
	cJSON *item;

	if (field == NULL || field_size == 0) {
		field = scratch;
		field_size = sizeof scratch;
	}
	field[0] = '\0';
	*problem = JSON_MALFORMED;
	/*
	 * cJSON reads a \u escape with other than hex digits as \u0000 and
	 * cuts the string there ("/ws\u00zz/../x" would be "/ws"): the strict
	 * scan refuses what is not JSON before cJSON reads it.  It also refuses
	 * invalid UTF-8 and a raw NUL, in a string (a control character) or out.
	 * A leading byte order mark is let through, as cJSON skips it (a
	 * settings.json saved by some Windows editors starts with one).
	 */
	if (text == NULL || len == 0)
		return NULL;
	bom = len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	if (!jsonscan_document(text + bom, len - bom))
		return NULL;
	item = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (item == NULL)
		return NULL;
	/* Only whitespace may follow the value. */
	while (end < text + len && strchr(" \t\r\n", *end) != NULL)
		end++;
	if (end != text + len || json_depth(item) > JSON_MAX_DEPTH || json_has_nonfinite(item)) {
		cJSON_Delete(item);
		return NULL;
	}
	if (json_find_crowded(item, field, field_size)) {
		*problem = JSON_TOO_MANY_MEMBERS;
		cJSON_Delete(item);
		return NULL;
	}
	if (json_has_nul_escape(text, len)) {
		*problem = JSON_NUL_IN_STRING;
		cJSON_Delete(item);
		return NULL;
	}
	if (json_find_duplicate(item, field, field_size)) {
		*problem = JSON_DUPLICATE_KEY;
		cJSON_Delete(item);
		return NULL;
	}
	*problem = JSON_OK;
	return item;
}

cJSON *
json_parse(const char *text, size_t len)
{
	enum json_problem problem;

	return json_parse_why(text, len, &problem, NULL, 0);
}

char *
json_print(const cJSON *item)
{
	char *s = cJSON_PrintUnformatted(item);

	if (s == NULL)
		return xstrdup("null");
	return s;
}

const char *
json_get_string(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

size_t
json_utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

bool
json_check_string(const cJSON *obj, const char *key, bool required,
    bool nullable, size_t min_len, size_t max_len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t n;

	if (v == NULL)
		return !required;
	if (cJSON_IsNull(v))
		return nullable;
	if (!cJSON_IsString(v))
		return false;
	n = json_utf8_chars(v->valuestring);
	return n >= min_len && n <= max_len;
}

bool
json_check_enum(const cJSON *obj, const char *key, bool nullable,
    const char *const *values)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (v == NULL)
		return true;
	if (cJSON_IsNull(v))
		return nullable;
	if (!cJSON_IsString(v))
		return false;
	for (; *values; values++) {
		if (strcmp(*values, v->valuestring) == 0)
			return true;
	}
	return false;
}

bool
json_check_bool(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return v == NULL || cJSON_IsBool(v);
}

bool
json_check_int(const cJSON *obj, const char *key, double min, double max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (v == NULL)
		return true;
	if (!cJSON_IsNumber(v))
		return false;
	return v->valuedouble == floor(v->valuedouble) &&
	    v->valuedouble >= min && v->valuedouble <= max;
}

bool
json_only_keys(const cJSON *obj, const char *const *allowed, const char **bad)
{
	for (const cJSON *c = obj->child; c; c = c->next) {
		const char *const *a;

		for (a = allowed; *a; a++) {
			if (strcmp(*a, c->string) == 0)
				break;
		}
		if (*a == NULL) {
			*bad = c->string;
			return false;
		}
	}
	return true;
}

cJSON *
json_merge_patch(cJSON *target, const cJSON *patch)
{
	if (!cJSON_IsObject(patch)) {
		cJSON_Delete(target);
		return cJSON_Duplicate(patch, true);
	}
	if (!cJSON_IsObject(target)) {
		cJSON_Delete(target);
		target = cJSON_CreateObject();
	}
	for (const cJSON *p = patch->child; p; p = p->next) {
		if (cJSON_IsNull(p)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
		} else {
			/* Replace in place so the key keeps its position. */
			cJSON *old = cJSON_GetObjectItemCaseSensitive(target, p->string);
			cJSON *merged = json_merge_patch(
			    old ? cJSON_Duplicate(old, true) : NULL, p);

			if (old)
				cJSON_ReplaceItemViaPointer(target, old, merged);
			else
				cJSON_AddItemToObject(target, p->string, merged);
		}
	}
	return target;
}
