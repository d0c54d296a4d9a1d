#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ids.h"
#include "timeutil.h"

/* The last (millisecond << 16 | sequence) handed out by this process. */
static _Atomic uint64_t last_stamp;

/* splitmix64 state of this thread, seeded from the kernel on first use. */
static _Thread_local uint64_t rng_state;
static _Thread_local bool rng_seeded;

void
random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "taskdeck: getrandom failed\n");
			abort();
		}
		p += r;
		n -= (size_t)r;
	}
}

void
random_hex(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[64];

	while (n > 0) {
		size_t chunk = n < sizeof b ? n : sizeof b;
		random_bytes(b, chunk);
		for (size_t i = 0; i < chunk; i++) {
			*out++ = hex[b[i] >> 4];
			*out++ = hex[b[i] & 15];
		}
		n -= chunk;
	}
	*out = '\0';
}

/* Id randomness need not be secret (ids are no credentials), only unpredictable enough. */
static uint32_t
id_random(void)
{
	uint64_t z;

	if (!rng_seeded) {
		random_bytes(&rng_state, sizeof rng_state);
		rng_seeded = true;
	}
	z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)(z ^ (z >> 31));
}

/*
 * A stamp that strictly increases across the process, without a lock: the
 * current millisecond with a zero sequence, or one more than the last stamp.
 */
static uint64_t
next_stamp(void)
{
	uint64_t now = (uint64_t)clock_wall_ms() << 16;
	uint64_t last = atomic_load(&last_stamp), next;

	do {
		next = now > last ? now : last + 1;
	} while (!atomic_compare_exchange_weak(&last_stamp, &last, next));
	return next;
}

void
id_new(const char *prefix, char out[TD_ID_MAX])
{
	static const char hex[] = "0123456789abcdef";
	/* 48 bits of milliseconds, 16 of sequence, 32 random: 24 hex digits. */
	uint64_t stamp = next_stamp();
	uint32_t rnd = id_random();
	size_t n = strnlen(prefix, 4);

	memcpy(out, prefix, n);
	out[n++] = '_';
	for (int shift = 60; shift >= 0; shift -= 4)
		out[n++] = hex[(stamp >> shift) & 15];
	for (int shift = 28; shift >= 0; shift -= 4)
		out[n++] = hex[(rnd >> shift) & 15];
	out[n] = '\0';
}

bool
id_valid(const char *id, const char *prefix)
{
	size_t plen = strlen(prefix);

	if (id == NULL || strncmp(id, prefix, plen) != 0 || id[plen] != '_')
		return false;
	id += plen + 1;
	for (int i = 0; i < TD_ID_HEX; i++) {
		char c = id[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return id[TD_ID_HEX] == '\0';
}
