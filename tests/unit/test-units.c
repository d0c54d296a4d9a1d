/* Sizes and durations as the CLI, the dashboard and the agent print them. */
#include <criterion/criterion.h>

#include "units.h"

static const char *
size_text(long long bytes)
{
	static char out[32];

	units_format_size(bytes, out, sizeof out);
	return out;
}

static const char *
duration_text(long long ms)
{
	static char out[32];

	units_format_duration(ms, out, sizeof out);
	return out;
}

Test(units, sizes_use_iec_units_with_one_decimal)
{
	cr_expect_str_eq(size_text(-1), "-");
	cr_expect_str_eq(size_text(0), "0 B");
	cr_expect_str_eq(size_text(1023), "1023 B");
	cr_expect_str_eq(size_text(1024), "1.0 KiB");
	cr_expect_str_eq(size_text(2150), "2.1 KiB");
	cr_expect_str_eq(size_text(3LL << 20), "3.0 MiB");
	cr_expect_str_eq(size_text(1LL << 30), "1.0 GiB");
	cr_expect_str_eq(size_text(5LL << 40), "5.0 TiB");
	cr_expect_str_eq(size_text(2048LL << 40), "2048.0 TiB", "no unit past TiB");
}

Test(units, durations_read_as_a_person_says_them)
{
	cr_expect_str_eq(duration_text(-1), "-");
	cr_expect_str_eq(duration_text(0), "0.0s");
	cr_expect_str_eq(duration_text(850), "0.8s");
	cr_expect_str_eq(duration_text(9999), "9.9s");
	cr_expect_str_eq(duration_text(42000), "42s");
	cr_expect_str_eq(duration_text(185000), "3m05s");
	cr_expect_str_eq(duration_text(7380000), "2h03m");
}
