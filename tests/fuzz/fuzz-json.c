/*
 * libFuzzer target for the JSON parser every outside document goes through
 * (json_parse_why, src/common/json.c).  What must hold for any input:
 * NULL exactly when a problem is named; a duplicate key's path is
 * NUL-terminated; a number too large for a double is refused; a document it accepts is valid UTF-8, no deeper than
 * JSON_MAX_DEPTH, and prints to text that parses back to the same value.
 * Run: `make fuzz-json && ./fuzz-json tests/fuzz/corpus/json` (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	text = json_print(doc);
	again = json_parse(text, strlen(text));
	if (again == NULL || !cJSON_Compare(doc, again, true))
		__builtin_trap();
	cJSON_Delete(again);
	free(text);
	cJSON_Delete(doc);
	return 0;
}
