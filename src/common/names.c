/* Names that come from outside (names.h). */
#include <string.h>

#include "names.h"

bool
names_env_valid(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	return n > 0 && n <= NAMES_ENV_MAX && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_") == n && !(s[0] >= '0' && s[0] <= '9');
}
