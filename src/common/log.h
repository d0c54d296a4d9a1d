/*
 * One line per message: time, program, level, text.  Thread safe.  Callers
 * never pass the token or a secret; request logging prints method, path,
 * status and request id only.
 */
#ifndef TD_COMMON_LOG_H
#define TD_COMMON_LOG_H

#include <stdio.h>

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/* fp is borrowed; NULL means stderr. */
void log_init(const char *program, FILE *fp, enum log_level min);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
