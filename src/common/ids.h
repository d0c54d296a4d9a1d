/*
 * Resource ids: "<prefix>_" followed by 24 lower-case hex digits, made of a
 * 48-bit millisecond timestamp, a 16-bit sequence and 32 random bits.  Ids
 * made by one process sort in creation order.
 */
#ifndef TD_COMMON_IDS_H
#define TD_COMMON_IDS_H

#include <stdbool.h>
#include <stddef.h>

#define TD_ID_HEX 24
#define TD_ID_MAX 32	/* longest id plus NUL */

/* prefix is "prj", "ses", "run", ...; out has TD_ID_MAX bytes. */
void id_new(const char *prefix, char out[TD_ID_MAX]);
bool id_valid(const char *id, const char *prefix);
/* Fills buf with n random bytes from the kernel; aborts if it cannot. */
void random_bytes(void *buf, size_t n);
/* 2*n hex digits of randomness plus NUL into out. */
void random_hex(char *out, size_t n);

#endif
