/* Sizes and durations as people read them: one wording for the CLI, the dashboard and the agent. */
#ifndef TD_UNITS_H
#define TD_UNITS_H

#include <stddef.h>

/* "300 B", "2.1 KiB", "1.5 MiB", ... (IEC units); "-" for a negative size. */
void units_format_size(long long bytes, char *out, size_t len);
/* "0.8s", "42s", "3m05s", "2h03m"; "-" for a negative duration. */
void units_format_duration(long long ms, char *out, size_t len);

#endif
