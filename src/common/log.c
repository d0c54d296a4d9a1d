#include <stdarg.h>
#include <unistd.h>

#include "log.h"
#include "timeutil.h"

static const char *log_program = "taskdeck";
static FILE *log_fp;
static enum log_level log_min = LOG_LEVEL_INFO;

void
log_init(const char *program, FILE *fp, enum log_level min)
{
	log_program = program;
	log_fp = fp;
	log_min = min;
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	FILE *fp = log_fp ? log_fp : stderr;
	char now[TD_TIME_LEN];
	va_list ap;

	if (level < log_min)
		return;
	time_format_utc(clock_wall_ms(), now);
	flockfile(fp);
	fprintf(fp, "%s %s[%ld] %s: ", now, log_program, (long)getpid(),
	    names[level]);
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fputc('\n', fp);
	fflush(fp);
	funlockfile(fp);
}
