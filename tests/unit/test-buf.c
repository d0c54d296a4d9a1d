#include <criterion/criterion.h>
#include <stdlib.h>

#include "buf.h"

Test(buf, grows_and_stays_terminated)
{
	struct buf b;

	buf_init(&b, 0);
	for (int i = 0; i < 1000; i++)
		cr_assert(buf_appends(&b, "abc"));
	cr_expect_eq(b.len, 3000);
	cr_expect_eq(b.data[3000], '\0');
	cr_assert(buf_printf(&b, "%d", 42));
	cr_expect_str_eq(b.data + 3000, "42");
	buf_free(&b);
}

Test(buf, refuses_past_its_cap)
{
	struct buf b;

	buf_init(&b, 8);
	cr_assert(buf_append(&b, "12345678", 8));
	cr_expect_not(buf_append(&b, "9", 1), "appended past the cap");
	cr_expect_eq(b.len, 8);
	cr_expect_str_eq(b.data, "12345678");
	buf_reset(&b);
	cr_expect_not(buf_append(&b, "123456789", 9));
	cr_expect_eq(b.len, 0);
	char *s = buf_steal(&b);
	cr_expect_str_eq(s, "");
	free(s);
	buf_free(&b);
}
