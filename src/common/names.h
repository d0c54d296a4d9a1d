/* Names that come from outside and end up in an environment or a header. */
#ifndef TD_COMMON_NAMES_H
#define TD_COMMON_NAMES_H

#include <stdbool.h>

#define NAMES_ENV_MAX 128	/* bytes of an environment variable's name */

/*
 * An environment variable's name as POSIX's portable set has it: 1 to
 * NAMES_ENV_MAX of A-Z, a-z, 0-9 and _, not starting with a digit.  NULL is none.
 */
bool names_env_valid(const char *s);

#endif
