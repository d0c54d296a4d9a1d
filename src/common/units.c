#include <stdio.h>

#include "units.h"

void
units_format_size(long long bytes, char *out, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 0) {
		snprintf(out, len, "-");
		return;
	}
	if (bytes < 1024) {
		snprintf(out, len, "%lld B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f %s", v, units[u]);
}

void
units_format_duration(long long ms, char *out, size_t len)
{
	long long s;

	if (ms < 0) {
		snprintf(out, len, "-");
		return;
	}
	s = ms / 1000;
	if (s < 10)
		snprintf(out, len, "%lld.%llds", s, ms % 1000 / 100);
	else if (s < 60)
		snprintf(out, len, "%llds", s);
	else if (s < 3600)
		snprintf(out, len, "%lldm%02llds", s / 60, s % 60);
	else
		snprintf(out, len, "%lldh%02lldm", s / 3600, s % 3600 / 60);
}
