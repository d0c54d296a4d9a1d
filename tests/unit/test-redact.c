/* src/common/redact.c: the masking of connector secrets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

static char *
masked(const struct redact *r, const char *text, unsigned cuts)
{
	static char out[512];

	snprintf(out, sizeof out, "%s", text);
	redact_text(r, out, strlen(out), cuts);
	return out;
}

Test(redact, a_value_and_its_header_forms)
{
	struct redact *r = redact_new();

	cr_expect(redact_empty(r));
	redact_add(r, "Bearer tok-8c2e51");
	redact_add(r, "Basic dXNlcjpwYXNzd29yZDE=");	/* user:password1 */
	redact_add(r, "sk-plain");
	cr_expect_str_eq(masked(r, "bad token tok-8c2e51!", 0), "bad token **********!");
	cr_expect_str_eq(masked(r, "Authorization: Bearer tok-8c2e51", 0),
	    "Authorization: *****************");
	cr_expect_str_eq(masked(r, "as user:password1 or password1", 0),
	    "as ************** or *********");
	cr_expect_str_eq(masked(r, "dXNlcjpwYXNzd29yZDE= sk-plainsk-plain", 0),
	    "******************** ****************");
	cr_expect_str_eq(masked(r, "nothing here: Bearer, Basic, tok-", 0),
	    "nothing here: Bearer, Basic, tok-");
	redact_free(r);
}

Test(redact, longest_first_and_cut_edges)
{
	struct redact *r = redact_new();

	redact_add(r, "cd");
	redact_add(r, "abcdef");
	cr_expect_str_eq(masked(r, "xabcdefx cd", 0), "x******x **");
	/* A tail that begins inside a secret, a message cut inside one. */
	cr_expect_str_eq(masked(r, "def and more", REDACT_CUT_START), "*** and more");
	cr_expect_str_eq(masked(r, "more and abc", REDACT_CUT_END), "more and ***");
	cr_expect_str_eq(masked(r, "def and abc", 0), "def and abc");
	redact_free(r);
}

Test(redact, json_strings_and_names)
{
	struct redact *r = redact_new();
	cJSON *j = cJSON_Parse("{\"a\":[\"x s\\u0033cret-42 y\",{\"s3cret-42\":1}],\"n\":7}");
	char *text;

	redact_add(r, "s3cret-42");
	redact_json(r, j);
	text = cJSON_PrintUnformatted(j);
	cr_expect_str_eq(text, "{\"a\":[\"x ********* y\",{\"*********\":1}],\"n\":7}");
	free(text);
	cJSON_Delete(j);
	redact_free(r);
	redact_json(NULL, NULL);
	redact_str(NULL, NULL);
}
