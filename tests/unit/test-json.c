#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static char *
patched(const char *target, const char *patch)
{
	cJSON *t = cJSON_Parse(target);
	cJSON *p = cJSON_Parse(patch);
	cJSON *r = json_merge_patch(t, p);
	char *s = json_print(r);

	cJSON_Delete(r);
	cJSON_Delete(p);
	return s;
}

/* The examples of RFC 7396, appendix A. */
Test(merge_patch, rfc7396_examples)
{
	static const char *cases[][3] = {
		{ "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}" },
		{ "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}" },
		{ "{\"a\":\"b\"}", "{\"a\":null}", "{}" },
		{ "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}" },
		{ "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}" },
		{ "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}" },
		{ "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}" },
		{ "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}" },
		{ "[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]" },
		{ "{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]" },
		{ "{\"a\":\"foo\"}", "null", "null" },
		{ "{\"a\":\"foo\"}", "\"bar\"", "\"bar\"" },
		{ "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}" },
		{ "[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}" },
		{ "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = patched(cases[i][0], cases[i][1]);
		cr_expect_str_eq(got, cases[i][2], "case %zu: %s + %s", i,
		    cases[i][0], cases[i][1]);
		free(got);
	}
}

Test(merge_patch, keeps_member_order)
{
	char *got = patched("{\"name\":\"a\",\"description\":\"b\",\"context\":\"c\"}",
	    "{\"description\":\"x\"}");

	cr_expect_str_eq(got, "{\"name\":\"a\",\"description\":\"x\",\"context\":\"c\"}");
	free(got);
}

Test(json_parse, accepts_one_value_with_whitespace)
{
	const char *text = " {\"a\": [1, 2]}\n ";
	cJSON *j = json_parse(text, strlen(text));

	cr_assert_not_null(j);
	cr_expect(cJSON_IsArray(cJSON_GetObjectItem(j, "a")));
	cJSON_Delete(j);
}

Test(json_parse, rejects_bad_documents)
{
	static const char *bad[] = {
		"", "{", "{\"a\":1} x", "{\"a\":1}{}", "{'a':1}", "{\"a\":tru}",
		"\xff\xfe{}", "{\"a\":\"\xc3\x28\"}", "{\"a\":\"\xed\xa0\x80\"}",
		"{\"a\":\"\xc0\xaf\"}",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cJSON *j = json_parse(bad[i], strlen(bad[i]));
		cr_expect_null(j, "accepted bad document %zu", i);
		cJSON_Delete(j);
	}
	cr_expect_null(json_parse("{\"a\":1}\0", 8), "accepted an embedded NUL");
}

Test(json_parse, bounds_nesting_depth)
{
	char deep[200] = "", shallow[200] = "";

	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		strcat(deep, "[");
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		strcat(deep, "]");
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		strcat(shallow, "[");
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		strcat(shallow, "]");
	cr_expect_null(json_parse(deep, strlen(deep)));
	cJSON *ok = json_parse(shallow, strlen(shallow));
	cr_expect_not_null(ok);
	cJSON_Delete(ok);
}

Test(json_utf8, multibyte_and_invalid)
{
	{
		const char *s = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80";
		cr_expect(json_utf8_valid(s, strlen(s)));
	}
	cr_expect_not(json_utf8_valid("\xe2\x82", 2), "truncated sequence");
	cr_expect_not(json_utf8_valid("\xf4\x90\x80\x80", 4), "above U+10FFFF");
	cr_expect_not(json_utf8_valid("\x80", 1), "lone continuation byte");
}

Test(json_checks, field_types_and_lengths)
{
	cJSON *o = cJSON_Parse("{\"s\":\"h\xc3\xa9\",\"n\":3,\"f\":1.5,\"b\":true,"
	    "\"z\":null,\"e\":\"high\"}");
	static const char *const efforts[] = { "low", "high", NULL };
	static const char *const allowed[] = { "s", "n", "f", "b", "z", "e", NULL };
	static const char *const fewer[] = { "s", NULL };
	const char *bad = NULL;

	cr_expect(json_check_string(o, "s", true, false, 2, 2), "length counts characters");
	cr_expect_not(json_check_string(o, "s", true, false, 3, 10));
	cr_expect_not(json_check_string(o, "n", true, false, 0, 10), "a number is no string");
	cr_expect_not(json_check_string(o, "missing", true, false, 0, 10));
	cr_expect(json_check_string(o, "missing", false, false, 0, 10));
	cr_expect(json_check_string(o, "z", false, true, 1, 10));
	cr_expect_not(json_check_string(o, "z", false, false, 1, 10));
	cr_expect(json_check_int(o, "n", 1, 16));
	cr_expect_not(json_check_int(o, "n", 4, 16));
	cr_expect_not(json_check_int(o, "f", 0, 16), "1.5 is not an integer");
	cr_expect(json_check_bool(o, "b"));
	cr_expect_not(json_check_bool(o, "n"));
	cr_expect(json_check_enum(o, "e", false, efforts));
	cr_expect_not(json_check_enum(o, "s", false, efforts));
	cr_expect(json_only_keys(o, allowed, &bad));
	cr_expect_not(json_only_keys(o, fewer, &bad));
	cr_expect_str_eq(bad, "n");
	cJSON_Delete(o);
}

/* Every reader of outside JSON (bodies, host protocol, provider and MCP
 * messages) goes through json_parse: a key twice or a \u0000 is refused. */
Test(json_parse, refuses_duplicate_keys_and_nul_escapes)
{
	enum json_problem problem;
	char field[64], big[4096];
	size_t n = 0;
	cJSON *j;

	cr_expect_null(json_parse("{\"type\":\"finish\",\"type\":\"output\"}", 34));
	j = json_parse_why("{\"a\":[1,{\"b\":{\"c\":1,\"c\":2}}]}", 29, &problem, field,
	    sizeof field);
	cr_expect_null(j);
	cr_expect_eq(problem, JSON_DUPLICATE_KEY);
	cr_expect_str_eq(field, "a[1].b.c");
	/* Past 16 keys the names are sorted, not compared pairwise. */
	n += (size_t)snprintf(big + n, sizeof big - n, "{");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(big + n, sizeof big - n, "\"k%d\":%d,", i, i);
	n += (size_t)snprintf(big + n, sizeof big - n, "\"k17\":0}");
	cr_expect_null(json_parse_why(big, n, &problem, field, sizeof field));
	cr_expect_eq(problem, JSON_DUPLICATE_KEY);
	cr_expect_str_eq(field, "k17");
	big[n - 9] = '}';	/* the same object without the repeated key (and its comma) */
	j = json_parse(big, n - 8);
	cr_expect_not_null(j);
	cJSON_Delete(j);
	cr_expect_null(json_parse_why("[\"a\\u0000b\"]", 12, &problem, NULL, 0));
	cr_expect_eq(problem, JSON_NUL_IN_STRING);
	j = json_parse("[\"a\\\\u0000b\"]", 13);
	cr_expect_not_null(j, "an escaped backslash before u0000 is plain text");
	cJSON_Delete(j);
}

/* A number past a double's range would be stored as null: refused (found by tests/fuzz/fuzz-json). */
Test(parse, number_out_of_range_refused)
{
	enum json_problem problem = JSON_OK;

	cr_assert_null(json_parse_why("{\"x\":1.5e340}", 13, &problem, NULL, 0));
	cr_assert_eq(problem, JSON_MALFORMED);
	cr_assert_null(json_parse("[1,{\"a\":[-1e999]}]", 18));
	cJSON *ok = json_parse("{\"x\":1.5e300}", 13);
	cr_assert_not_null(ok);
	cJSON_Delete(ok);
}

/* An object of n members {"k0":0,...} inside {"outer":[ ... ]} or alone; free() it. */
static char *
members_doc(int n, bool nested, size_t *len)
{
	size_t cap = (size_t)n * 16 + 64, o = 0;
	char *s = malloc(cap);

	o += (size_t)snprintf(s + o, cap - o, "%s{", nested ? "{\"outer\":[1,{\"inner\":" : "");
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, cap - o, "%s\"k%d\":0", i ? "," : "", i);
	o += (size_t)snprintf(s + o, cap - o, "}%s", nested ? "}]}" : "");
	*len = o;
	return s;
}

Test(json_parse, bounds_members_of_an_object)
{
	enum json_problem problem;
	char field[64];
	size_t len;
	char *doc = members_doc(JSON_MAX_MEMBERS, true, &len);
	cJSON *j = json_parse(doc, len);

	cr_expect_not_null(j, "%d members are accepted", JSON_MAX_MEMBERS);
	cJSON_Delete(j);
	free(doc);
	doc = members_doc(JSON_MAX_MEMBERS + 1, true, &len);
	cr_expect_null(json_parse_why(doc, len, &problem, field, sizeof field));
	cr_expect_eq(problem, JSON_TOO_MANY_MEMBERS);
	cr_expect_str_eq(field, "outer[1].inner");
	free(doc);
	doc = members_doc(50000, false, &len);
	cr_expect_null(json_parse_why(doc, len, &problem, field, sizeof field));
	cr_expect_eq(problem, JSON_TOO_MANY_MEMBERS);
	cr_expect_str_eq(field, "");
	free(doc);
}
