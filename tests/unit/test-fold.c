/* fold_has_prefix: names matched ignoring case beyond ASCII. */
#include <criterion/criterion.h>

#include "fold.h"

Test(fold, ascii_as_strncasecmp)
{
	cr_expect(fold_has_prefix("demo", "DE"));
	cr_expect(fold_has_prefix("Demo", "demo"));
	cr_expect(fold_has_prefix("demo", ""));
	cr_expect_not(fold_has_prefix("de", "demo"), "a prefix longer than the name");
	cr_expect_not(fold_has_prefix("demo", "dx"));
	cr_expect_not(fold_has_prefix("a[", "A{"), "only letters fold");
}

Test(fold, latin_greek_cyrillic)
{
	cr_expect(fold_has_prefix("\303\234n\303\257code", "\303\274N\303\217"));	/* Ünïcode, üNÏ */
	cr_expect(fold_has_prefix("\305\201\303\263d\305\272", "\305\202\303\223D\305\271"));	/* Łódź, łÓDŹ */
	cr_expect(fold_has_prefix("\305\270", "\303\277"));				/* Ÿ, ÿ */
	cr_expect(fold_has_prefix("\316\224\316\255\316\273\317\204\316\261", "\316\264\316\210"));	/* Δέλτα, δΈ */
	cr_expect(fold_has_prefix("\316\243\317\202", "\317\203\316\243"));		/* Σς, σΣ */
	cr_expect(fold_has_prefix("\320\234\320\276\321\201\320\272\320\262\320\260", "\320\274\320\236\320\241"));	/* Москва, мОС */
	cr_expect(fold_has_prefix("\320\201\320\266", "\321\221\320\226"));		/* Ёж, ёЖ */
	cr_expect_not(fold_has_prefix("\303\234n", "un"), "Ü is not U");
	cr_expect_not(fold_has_prefix("\303\227", "\303\267"), "× and ÷ are no letters");
}

Test(fold, bytes_that_are_not_utf8_match_only_themselves)
{
	cr_expect(fold_has_prefix("a\377b", "A\377"));
	cr_expect_not(fold_has_prefix("\303\274", "\303"), "half a character");
	cr_expect_not(fold_has_prefix("\303", "\303\274"));
	cr_expect_not(fold_has_prefix("\377", "\337"), "raw bytes do not fold");
}
