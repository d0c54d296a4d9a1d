#include <stdio.h>
#include <string.h>
#include <time.h>

#include "timeutil.h"

int64_t
td_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
td_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
td_time_format(int64_t ms, char out[TD_TIME_LEN])
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(out, TD_TIME_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, TD_TIME_LEN - n, ".%03dZ", (int)(ms % 1000));
}

bool
td_time_parse(const char *s, int64_t *ms)
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
