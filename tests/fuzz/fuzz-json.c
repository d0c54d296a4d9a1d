/*
 * libFuzzer target for the JSON parser every outside document goes through
 * (json_parse_why, src/common/json.c).  What must hold for any input:
 * NULL exactly when a problem is named; a duplicate key's path is
 * NUL-terminated; a number too large for a double is refused; a document it accepts is valid UTF-8, no deeper than
 * JSON_MAX_DEPTH, and prints to text that parses back to the same value.
 * The scanner the event stream's client uses (jsonscan_object,
 * src/common/jsonscan.c) takes every object json_parse takes, with the same
 * members, and each member's value is one value to jsonscan_value_at.
 * Run: `make fuzz-json && ./fuzz-json tests/fuzz/corpus/json` (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* jsonscan_object's callback: counts the members, each value scanned again on its own. */
static bool
fuzz_member(const struct jsonscan_value *key, const struct jsonscan_value *value, void *ud)
{
	struct jsonscan_value again;

	if (key->type != JSONSCAN_STRING ||
	    jsonscan_value_at(value->text, value->len, &again) != value->len ||
	    again.type != value->type || again.escaped != value->escaped ||
	    again.str_len != value->str_len)
		__builtin_trap();
	(*(int *)ud)++;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum json_problem problem = JSON_OK;
	char field[64];
	cJSON *doc, *again;
	char *text;

	memset(field, 'x', sizeof field);
	doc = json_parse_why((const char *)data, size, &problem, field, sizeof field);
	if ((doc == NULL) != (problem != JSON_OK))
		__builtin_trap();
	if (problem == JSON_DUPLICATE_KEY && memchr(field, '\0', sizeof field) == NULL)
		__builtin_trap();
	if (doc == NULL)
		return 0;
	if (!json_utf8_valid((const char *)data, size) || json_depth(doc) > JSON_MAX_DEPTH)
		__builtin_trap();
	if (cJSON_IsObject(doc)) {
		/* json_parse lets a leading byte order mark through; the scanner does not. */
		size_t bom = size >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
		int members = 0;

		if (!jsonscan_object((const char *)data + bom, size - bom, fuzz_member, &members) ||
		    members != cJSON_GetArraySize(doc))
			__builtin_trap();
	}
	text = json_print(doc);
	again = json_parse(text, strlen(text));
	if (again == NULL || !cJSON_Compare(doc, again, true))
		__builtin_trap();
	cJSON_Delete(again);
	free(text);
	cJSON_Delete(doc);
	return 0;
}
