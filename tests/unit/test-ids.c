#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "timeutil.h"

Test(ids, shape_and_prefix)
{
	char id[TD_ID_MAX];

	id_new("prj", id);
	cr_expect_eq(strlen(id), 4 + TD_ID_HEX);
	cr_expect(id_valid(id, "prj"));
	cr_expect_not(id_valid(id, "run"));
	cr_expect_not(id_valid("prj_", "prj"));
	cr_expect_not(id_valid("prj_0123456789abcdef0123456G", "prj"));
	cr_expect_not(id_valid("prj_0123456789abcdef01234567x", "prj"));
	cr_expect_not(id_valid("prj_0123456789ABCDEF01234567", "prj"));
	cr_expect_not(id_valid(NULL, "prj"));
}

Test(ids, unique_and_sorted_in_creation_order)
{
	enum { N = 20000 };
	static char ids[N][TD_ID_MAX];

	for (int i = 0; i < N; i++)
		id_new("run", ids[i]);
	for (int i = 1; i < N; i++)
		cr_assert_lt(strcmp(ids[i - 1], ids[i]), 0, "%s then %s", ids[i - 1], ids[i]);
}

Test(timeutil, format_and_parse_round_trip)
{
	char t[TD_TIME_LEN];
	int64_t back;

	time_format_utc(1795240799123LL, t);
	cr_expect_str_eq(t, "2026-11-21T05:59:59.123Z");
	cr_assert(time_parse_utc(t, &back));
	cr_expect_eq(back, 1795240799123LL);
	time_format_utc(0, t);
	cr_expect_str_eq(t, "1970-01-01T00:00:00.000Z");
}

Test(timeutil, parse_rejects_other_forms)
{
	static const char *bad[] = { "2026-11-21T05:59:59Z", "2026-11-21T05:59:59.123",
		"2026-11-21 05:59:59.123Z", "2026-13-21T05:59:59.123Z",
		"2026-11-21T05:59:59.123Z ", "", "yesterday" };
	int64_t ms;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_not(time_parse_utc(bad[i], &ms), "accepted %s", bad[i]);
	cr_expect_not(time_parse_utc(NULL, &ms));
}

Test(random, hex_is_fresh)
{
	char a[65], b[65];

	random_hex(a, 32);
	random_hex(b, 32);
	cr_expect_eq(strlen(a), 64);
	cr_expect_str_neq(a, b);
}

/* The hand-written formatter agrees with gmtime_r over leap years and centuries. */
Test(timeutil, format_matches_gmtime)
{
	static const int64_t fixed[] = { 951782400000LL /* 2000-02-29 */,
		951868800000LL /* 2000-03-01 */, 946684799999LL /* 1999-12-31T23:59:59.999 */,
		1709164800123LL /* 2024-02-29 */, 4102444800000LL /* 2100-01-01 */,
		253402300799999LL /* 9999-12-31T23:59:59.999 */ };
	uint64_t x = 88172645463325252ULL;

	for (int i = 0; i < 100000; i++) {
		int64_t ms;
		char got[TD_TIME_LEN], want[96];
		time_t secs;
		struct tm tm;

		if (i < (int)(sizeof fixed / sizeof fixed[0])) {
			ms = fixed[i];
		} else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			ms = (int64_t)(x % 253402300800000ULL);
		}
		secs = (time_t)(ms / 1000);
		gmtime_r(&secs, &tm);
		snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
		time_format_utc(ms, got);
		cr_assert_str_eq(got, want, "ms %lld", (long long)ms);
	}
}
