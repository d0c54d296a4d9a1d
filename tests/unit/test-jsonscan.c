#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "jsonscan.h"

static const char sample[] =
    "{\"seq\":42,\"type\":\"run.output\",\"time\":\"2026-11-21T06:40:00.123Z\","
    "\"projectId\":\"prj_1\",\"sessionId\":null,\"runId\":\"run_1\","
    "\"data\":{\"delta\":\"caf\\u00e9 \\ud83d\\ude00\",\"n\":[1,-2.5e3,true,false,null]}}";

/* Members as "key=type:text" lines. */
static bool
log_member(const struct jsonscan_value *key, const struct jsonscan_value *value, void *ud)
{
	buf_printf(ud, "%.*s=%d:%.*s\n", (int)key->str_len, key->str, (int)value->type,
	    (int)value->len, value->text);
	return true;
}

static bool
valid(const char *text)
{
	return jsonscan_object(text, strlen(text), NULL, NULL);
}

/* The decoded value of the first member of a one-member object. */
static bool
first_value(const struct jsonscan_value *key, const struct jsonscan_value *value, void *ud)
{
	*(struct jsonscan_value *)ud = *value;
	return false;
}

static size_t
decode(const char *text, char *out)
{
	struct jsonscan_value v = { .type = JSONSCAN_NULL };

	jsonscan_object(text, strlen(text), first_value, &v);
	cr_assert_eq(v.type, JSONSCAN_STRING, "%s", text);
	if (!v.escaped) {
		memcpy(out, v.str, v.str_len);
		return v.str_len;
	}
	return jsonscan_unescape(&v, out);
}

Test(jsonscan, reports_the_top_level_members_as_written)
{
	struct buf b;

	buf_init(&b, 0);
	cr_assert(jsonscan_object(sample, strlen(sample), log_member, &b));
	cr_expect_str_eq(b.data,
	    "seq=3:42\n"
	    "type=4:\"run.output\"\n"
	    "time=4:\"2026-11-21T06:40:00.123Z\"\n"
	    "projectId=4:\"prj_1\"\n"
	    "sessionId=0:null\n"
	    "runId=4:\"run_1\"\n"
	    "data=6:{\"delta\":\"caf\\u00e9 \\ud83d\\ude00\",\"n\":[1,-2.5e3,true,false,null]}\n");
	buf_free(&b);
}

Test(jsonscan, whitespace_around_and_inside)
{
	const char *text = " \t\r\n{ \"a\" : [ 1 , { } , [ ] ] ,\n\"b\"\t:\"x\" }\n ";
	struct buf b;

	buf_init(&b, 0);
	cr_assert(jsonscan_object(text, strlen(text), log_member, &b));
	cr_expect_str_eq(b.data, "a=5:[ 1 , { } , [ ] ]\nb=4:\"x\"\n");
	buf_free(&b);
	cr_expect(valid("{}"));
	cr_expect(valid(" { } "));
}

Test(jsonscan, only_an_object_at_the_top)
{
	static const char *bad[] = {
		"", " ", "[]", "[1,2]", "\"s\"", "1", "null", "true", "{}{}", "{} x",
		"{}\v", "\xef\xbb\xbf{}",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_not(valid(bad[i]), "accepted %s", bad[i]);
	cr_expect_not(jsonscan_object(NULL, 0, NULL, NULL));
	/* An embedded NUL, outside and inside a string. */
	cr_expect_not(jsonscan_object("{}\0", 3, NULL, NULL));
	cr_expect_not(jsonscan_object("{\"a\":\"x\0y\"}", 11, NULL, NULL));
}

Test(jsonscan, strict_syntax)
{
	static const char *bad[] = {
		"{", "}", "{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{a:1}", "{'a':1}",
		"{\"a\":1,}", "{,\"a\":1}", "{\"a\":1 \"b\":2}", "{\"a\":[1,]}",
		"{\"a\":[,1]}", "{\"a\":[1 2]}", "{\"a\":tru}", "{\"a\":True}",
		"{\"a\":nul}", "{\"a\":nulll}", "{\"a\":falsey}", "{1:2}", "{\"a\":undefined}",
		"{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":1}/*c*/", "{\"a\":\"x}",
		"{\"a\":[}", "{\"a\":{]}",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_not(valid(bad[i]), "accepted %s", bad[i]);
}

Test(jsonscan, numbers)
{
	static const char *good[] = {
		"0", "-0", "7", "-7", "10", "123456789012345678901234567890", "0.5",
		"-0.5", "1e5", "1E5", "1e+5", "1e-5", "1.25e-10", "0e0",
	};
	static const char *bad[] = {
		"01", "-01", "+1", "-", ".5", "5.", "1.e5", "1e", "1e+", "0x10", "1..2",
		"--1", "1e5.5", "- 1", "00",
	};
	char text[64];

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(text, sizeof text, "{\"n\":%s}", good[i]);
		cr_expect(valid(text), "refused %s", text);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "{\"n\":%s}", bad[i]);
		cr_expect_not(valid(text), "accepted %s", text);
	}
}

Test(jsonscan, escapes_are_decoded)
{
	char out[64];
	size_t n;

	n = decode("{\"s\":\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"}", out);
	cr_expect_eq(n, 17);
	cr_expect_arr_eq(out, "a\"b\\c/d\be\ff\ng\rh\ti", 17);
	n = decode("{\"s\":\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"}", out);
	cr_expect_eq(n, 1 + 2 + 3 + 4);
	cr_expect_arr_eq(out, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", n);
	n = decode("{\"s\":\"\\uD834\\uDD1E!\"}", out);
	cr_expect_eq(n, 5);
	cr_expect_arr_eq(out, "\xf0\x9d\x84\x9e!", 5);
	/* \u0000 is valid JSON: the caller sees the NUL. */
	n = decode("{\"s\":\"a\\u0000b\"}", out);
	cr_expect_eq(n, 3);
	cr_expect_arr_eq(out, "a\0b", 3);
	n = decode("{\"s\":\"plain \xc3\xa9\"}", out);
	cr_expect_eq(n, 8);
}

Test(jsonscan, bad_escapes_and_surrogates)
{
	static const char *bad[] = {
		"\\x", "\\'", "\\u12", "\\u12g4", "\\U0041", "\\", "\\ud83d",
		"\\ud83dx", "\\ud83d\\u0041", "\\ude00", "\\ude00\\ud83d", "\\ud83d\\ud83d",
		"\\ud83d\\", "\\ud83d\\n",
	};
	char text[64];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "{\"s\":\"%s\"}", bad[i]);
		cr_expect_not(valid(text), "accepted %s", text);
		/* And in a key, and deeper down. */
		snprintf(text, sizeof text, "{\"%s\":1}", bad[i]);
		cr_expect_not(valid(text), "accepted %s", text);
		snprintf(text, sizeof text, "{\"a\":[{\"s\":\"%s\"}]}", bad[i]);
		cr_expect_not(valid(text), "accepted %s", text);
	}
}

Test(jsonscan, utf8_in_strings)
{
	static const char *good[] = {
		"\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
		"\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "caf\xc3\xa9",
		"\xe2\x9c\x93 done",
	};
	static const char *bad[] = {
		"\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xc2", "\xc2\x41", "\xe0\x80\x80",
		"\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xe2\x82", "\xf0\x80\x80\x80",
		"\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xfe",
		"\xf0\x9f\x98", "\x01", "\x1f", "\t", "\n",
	};
	char text[64];

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(text, sizeof text, "{\"s\":\"%s\"}", good[i]);
		cr_expect(valid(text), "refused %s", text);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "{\"s\":\"%s\"}", bad[i]);
		cr_expect_not(valid(text), "accepted string %zu", i);
		/* Far into a long string too, past the 8-byte strides. */
		snprintf(text, sizeof text, "{\"s\":\"0123456789abcdefghij%s0123456789\"}", bad[i]);
		cr_expect_not(valid(text), "accepted long string %zu", i);
		/* Outside a string no byte above 0x7f is valid, nor a control but blanks. */
		if (bad[i][0] == '\t' || bad[i][0] == '\n')
			continue;
		snprintf(text, sizeof text, "{\"s\":1%s}", bad[i]);
		cr_expect_not(valid(text), "accepted bare %zu", i);
	}
}

/* An object nested n deep (the top one counts), with arrays when arrays. */
static char *
nested(int n, bool arrays)
{
	struct buf b;

	buf_init(&b, 0);
	buf_appends(&b, "{\"a\":");
	for (int i = 1; i < n; i++)
		buf_appends(&b, arrays ? "[" : "{\"a\":");
	buf_appends(&b, "1");
	for (int i = 1; i < n; i++)
		buf_appends(&b, arrays ? "]" : "}");
	buf_appends(&b, "}");
	return buf_steal(&b);
}

Test(jsonscan, depth_is_bounded_like_json_parse)
{
	for (int arrays = 0; arrays < 2; arrays++) {
		char *ok = nested(JSON_MAX_DEPTH, arrays);
		char *deep = nested(JSON_MAX_DEPTH + 1, arrays);
		cJSON *doc = json_parse(ok, strlen(ok));

		cr_expect(valid(ok), "depth %d refused", JSON_MAX_DEPTH);
		cr_expect_not_null(doc, "json_parse agrees");
		cr_expect_not(valid(deep), "depth %d accepted", JSON_MAX_DEPTH + 1);
		cr_expect_null(json_parse(deep, strlen(deep)), "json_parse agrees");
		cJSON_Delete(doc);
		free(ok);
		free(deep);
	}
}

Test(jsonscan, every_truncation_of_an_event_is_refused)
{
	size_t len = strlen(sample);

	for (size_t n = 0; n < len; n++)
		cr_expect_not(jsonscan_object(sample, n, NULL, NULL), "accepted %zu bytes", n);
	cr_expect(jsonscan_object(sample, len, NULL, NULL));
}

Test(jsonscan, a_bad_unicode_escape_is_refused_not_cut_short)
{
	/* cJSON alone reads "\u00zz" as \u0000 and keeps "/ws" of the string. */
	static const char *bad[] = {
		"{\"cwd\":\"/ws\\u00zz/../etc\"}", "{\"cwd\":\"/ws\\u000s\\u./../etc\"}",
		"[\"\\uZZZZ\"]", "\"\\u12\"", "{\"a\":\"\\ud800\"}",
	};
	enum json_problem problem;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_expect_not(jsonscan_document(bad[i], strlen(bad[i])), "%s", bad[i]);
		cr_expect_null(json_parse_why(bad[i], strlen(bad[i]), &problem, NULL, 0), "%s", bad[i]);
		cr_expect_eq(problem, JSON_MALFORMED, "%s", bad[i]);
	}
	cr_expect(jsonscan_document(" [1, \"\\u00e9\", {\"a\": null}] ", 28));
	cr_expect(jsonscan_document("\"x\"", 3));
	/* json_parse lets a leading byte order mark through, as cJSON did alone. */
	cJSON *doc = json_parse("\xef\xbb\xbf{\"a\":1}", 10);
	cr_expect_not_null(doc, "a document after a BOM is refused");
	cJSON_Delete(doc);
	cr_expect_not(jsonscan_document("1 2", 3));
	cr_expect_not(jsonscan_document("", 0));
}

Test(jsonscan, agrees_with_json_parse_on_objects)
{
	static const char *docs[] = {
		"{\"a\":1}", "{\"a\":\"\\u00e9\",\"b\":[true,false,null,{\"c\":-1.5E-3}]}",
		"{\"a\":\"\\ud83d\\ude00\"}", "{\"a\":[[[[]]]]}",
		"{\"a\":\"\xe2\x9c\x93\"}", "{\"\":0}",
	};

	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		cJSON *doc = json_parse(docs[i], strlen(docs[i]));

		cr_expect_not_null(doc, "%s", docs[i]);
		cr_expect(valid(docs[i]), "%s", docs[i]);
		cJSON_Delete(doc);
	}
}

static bool
stop_at_b(const struct jsonscan_value *key, const struct jsonscan_value *value, void *ud)
{
	(*(int *)ud)++;
	return key->str_len != 1 || key->str[0] != 'b';
}

Test(jsonscan, the_callback_can_stop_the_scan)
{
	const char *text = "{\"a\":1,\"b\":2,\"c\":3}";
	int calls = 0;

	cr_expect_not(jsonscan_object(text, strlen(text), stop_at_b, &calls));
	cr_expect_eq(calls, 2);
}

static bool
first_key(const struct jsonscan_value *key, const struct jsonscan_value *value, void *ud)
{
	*(struct jsonscan_value *)ud = *key;
	return true;
}

Test(jsonscan, escaped_keys_are_flagged)
{
	const char *text = "{\"s\\u0065q\":1}";
	struct jsonscan_value k = { .escaped = false };
	char out[16];

	cr_assert(jsonscan_object(text, strlen(text), first_key, &k));
	cr_expect(k.escaped);
	cr_expect_eq(jsonscan_unescape(&k, out), 3);
	cr_expect_arr_eq(out, "seq", 3);
	cr_expect(jsonscan_object("{\"seq\":1}", 9, first_key, &k));
	cr_expect_not(k.escaped);
}

/* A special byte at every offset of a long string is found where it is, whatever the block. */
Test(jsonscan, a_special_byte_is_seen_at_every_offset)
{
	static const char specials[] = { '"', '\\', '\x01', '\x1f', '\xff', '\x80' };
	char text[80];

	for (size_t at = 0; at < 48; at++) {
		for (size_t k = 0; k < sizeof specials; k++) {
			char c = specials[k];
			struct jsonscan_value v;
			size_t n;

			/* {"k":"aaaa...<c>...aaaa"} with c at string offset at */
			memset(text, 'a', sizeof text);
			memcpy(text, "{\"k\":\"", 6);
			text[6 + at] = c;
			memcpy(text + 60, "\"}", 3);
			if (c == '"') {
				/* The string ends there: what follows is not JSON. */
				cr_assert(!valid(text), "quote at %zu", at);
				n = jsonscan_value_at(text + 5, strlen(text + 5), &v);
				cr_assert_eq(n, at + 2, "quote at %zu: %zu", at, n);
				cr_assert_eq(v.str_len, at);
			} else if (c == '\\') {
				/* \a is no escape */
				cr_assert(!valid(text), "backslash at %zu", at);
			} else {
				cr_assert(!valid(text), "byte %02x at %zu", (unsigned char)c, at);
			}
		}
		memset(text, 'a', sizeof text);
		memcpy(text, "{\"k\":\"", 6);
		memcpy(text + 60, "\"}", 3);
		cr_assert(valid(text));
	}
}

Test(jsonscan, one_value_at_a_place)
{
	struct jsonscan_value v;

	cr_assert_eq(jsonscan_value_at("\"ab\\n\",1", 8, &v), 6);
	cr_assert_eq(v.type, JSONSCAN_STRING);
	cr_assert(v.escaped);
	cr_assert_eq(jsonscan_value_at("{\"a\":[1,2]}}", 12, &v), 11);
	cr_assert_eq(v.type, JSONSCAN_OBJECT);
	cr_assert_eq(jsonscan_value_at("-12.5e3,", 8, &v), 7);
	cr_assert_eq(v.type, JSONSCAN_NUMBER);
	cr_assert_eq(jsonscan_value_at("null", 4, &v), 4);
	cr_assert_eq(jsonscan_value_at(" 1", 2, &v), 0);
	cr_assert_eq(jsonscan_value_at("\"ab", 3, &v), 0);
	cr_assert_eq(jsonscan_value_at("{\"a\":}", 6, &v), 0);
	cr_assert_eq(jsonscan_value_at("\"\xc3\"", 3, &v), 0);
}
