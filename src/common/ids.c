#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ids.h"
#include "timeutil.h"

static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t last_ms;
static unsigned last_seq;

void
td_random_bytes(void *buf, size_t n)
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
td_random_hex(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[64];

	while (n > 0) {
		size_t chunk = n < sizeof b ? n : sizeof b;
		td_random_bytes(b, chunk);
		for (size_t i = 0; i < chunk; i++) {
			*out++ = hex[b[i] >> 4];
			*out++ = hex[b[i] & 15];
		}
		n -= chunk;
	}
	*out = '\0';
}

void
td_id_new(const char *prefix, char out[TD_ID_MAX])
{
	int64_t ms = td_now_ms();
	unsigned seq;
	uint32_t rnd;

	pthread_mutex_lock(&id_lock);
	if (ms <= last_ms) {
		ms = last_ms;
		if (++last_seq > 0xffff) {	/* 65536 ids in one ms: borrow the next */
			ms = ++last_ms;
			last_seq = 0;
		}
	} else {
		last_ms = ms;
		last_seq = 0;
	}
	seq = last_seq;
	pthread_mutex_unlock(&id_lock);

	td_random_bytes(&rnd, sizeof rnd);
	snprintf(out, TD_ID_MAX, "%.4s_%012llx%04x%08x", prefix,
	    (unsigned long long)ms & 0xffffffffffffULL, seq, (unsigned)rnd);
}

bool
td_id_valid(const char *id, const char *prefix)
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
