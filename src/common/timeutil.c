#include <stdio.h>
#include <string.h>
#include <time.h>

#include "timeutil.h"

int64_t
clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Two decimal digits of v at p. */
static void
put2(char *p, int v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
}

/*
 * Formatted by hand: gmtime_r takes glibc's time-zone lock and strftime is
 * slow, and this runs several times for every response.  The date comes
 * from the days since the epoch (the civil_from_days algorithm).
 */
void
time_format_utc(int64_t ms, char out[TD_TIME_LEN])
{
	int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
	int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
	int64_t rem = secs - days * 86400;
	int milli = (int)(ms - secs * 1000);
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int day = (int)(doy - (153 * mp + 2) / 5 + 1);
	int month = (int)(mp < 10 ? mp + 3 : mp - 9);
	int year = (int)(yoe + era * 400 + (month <= 2));

	if (year < 0 || year > 9999) {
		memcpy(out, "0000-00-00T00:00:00.000Z", 25);
		return;
	}
	put2(out, year / 100);
	put2(out + 2, year % 100);
	out[4] = '-';
	put2(out + 5, month);
	out[7] = '-';
	put2(out + 8, day);
	out[10] = 'T';
	put2(out + 11, (int)(rem / 3600));
	out[13] = ':';
	put2(out + 14, (int)(rem / 60 % 60));
	out[16] = ':';
	put2(out + 17, (int)(rem % 60));
	out[19] = '.';
	out[20] = (char)('0' + milli / 100);
	put2(out + 21, milli % 100);
	out[23] = 'Z';
	out[24] = '\0';
}

bool
time_parse_utc(const char *s, int64_t *ms)
{
	struct tm tm;
	int year, mon, mday, hour, min, sec, milli, n = 0;
	time_t t;

	if (s == NULL || strlen(s) != 24)
		return false;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &year, &mon, &mday,
	    &hour, &min, &sec, &milli, &n) != 7 || n != 24)
		return false;
	if (mon < 1 || mon > 12 || mday < 1 || mday > 31 || hour > 23 ||
	    min > 59 || sec > 60 || year < 1970)
		return false;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = mday;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return false;
	*ms = (int64_t)t * 1000 + milli;
	return true;
}
