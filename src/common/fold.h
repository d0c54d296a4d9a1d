/* Matching names ignoring case, for the letters of UTF-8 text beyond ASCII too. */
#ifndef TD_COMMON_FOLD_H
#define TD_COMMON_FOLD_H

#include <stdbool.h>

/*
 * True when s begins with prefix, ignoring case: the simple case folding of
 * the Latin (Basic, Latin-1, Extended-A), Greek and Cyrillic letters; other
 * characters, and bytes that are not UTF-8, must be equal.  No locale needed.
 */
bool fold_has_prefix(const char *s, const char *prefix);

#endif
