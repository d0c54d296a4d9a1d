/* Wall-clock and monotonic time; RFC 3339 UTC with milliseconds. */
#ifndef TD_COMMON_TIMEUTIL_H
#define TD_COMMON_TIMEUTIL_H

#include <stdbool.h>
#include <stdint.h>

#define TD_TIME_LEN 32

int64_t clock_wall_ms(void);	/* milliseconds since the epoch */
int64_t clock_mono_ms(void);	/* CLOCK_MONOTONIC milliseconds */
/* "2026-11-21T05:40:00.123Z" into out (TD_TIME_LEN bytes). */
void time_format_utc(int64_t ms, char out[TD_TIME_LEN]);
/* Parses exactly the format above; false on anything else. */
bool time_parse_utc(const char *s, int64_t *ms);

#endif
