#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache.h"

Test(cache, put_get_drop)
{
	struct cache *c = cache_new(16);
	size_t len = 0;
	char *text;

	cr_expect_null(cache_get(c, "prj_a", &len), "empty cache hit");
	cache_put(c, "prj_a", "{\"name\":\"a\"}");
	text = cache_get(c, "prj_a", &len);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, "{\"name\":\"a\"}");
	cr_expect_eq(len, 12);
	free(text);
	cache_put(c, "prj_a", "{\"name\":\"b\"}");
	text = cache_get(c, "prj_a", &len);
	cr_expect_str_eq(text, "{\"name\":\"b\"}", "a put replaces");
	free(text);
	cache_drop(c, "prj_a");
	cr_expect_null(cache_get(c, "prj_a", &len), "a dropped entry is gone");
	cache_free(c);
}

Test(cache, never_answers_for_another_id)
{
	struct cache *c = cache_new(2);
	char id[32], want[64];
	size_t len;

	/* More ids than slots: every hit must be the id's own text. */
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "prj_%d", i);
		snprintf(want, sizeof want, "{\"n\":%d}", i);
		cache_put(c, id, want);
	}
	for (int i = 0; i < 50; i++) {
		char *text;

		snprintf(id, sizeof id, "prj_%d", i);
		snprintf(want, sizeof want, "{\"n\":%d}", i);
		text = cache_get(c, id, &len);
		if (text != NULL)
			cr_expect_str_eq(text, want, "%s", id);
		free(text);
	}
	cache_drop(c, "prj_unknown");
	cache_free(c);
}
