#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idem.h"

static int64_t fake_now;

static int64_t
now_fn(void)
{
	return fake_now;
}

static void
fp_of(const char *s, unsigned char fp[IDEM_FP_LEN])
{
	memset(fp, 0, IDEM_FP_LEN);
	memcpy(fp, s, strlen(s) < IDEM_FP_LEN ? strlen(s) : IDEM_FP_LEN);
}

Test(idem, replays_same_request)
{
	struct idem *ix = idem_new(10, 1000, now_fn);
	struct idem_reply rep = { 0 };
	unsigned char fp[IDEM_FP_LEN];

	fp_of("POST /projects {a}", fp);
	cr_assert_eq(idem_begin(ix, "k1", fp, &rep), IDEM_PROCEED);
	idem_complete(ix, "k1", 201, "{\"id\":\"prj_1\"}", "/api/v1/projects/prj_1");
	cr_assert_eq(idem_begin(ix, "k1", fp, &rep), IDEM_REPLAY);
	cr_expect_eq(rep.status, 201);
	cr_expect_str_eq(rep.body, "{\"id\":\"prj_1\"}");
	cr_expect_str_eq(rep.location, "/api/v1/projects/prj_1");
	free(rep.body);
	free(rep.location);
	idem_free(ix);
}

Test(idem, different_body_is_a_conflict)
{
	struct idem *ix = idem_new(10, 1000, now_fn);
	struct idem_reply rep = { 0 };
	unsigned char a[IDEM_FP_LEN], b[IDEM_FP_LEN];

	fp_of("body a", a);
	fp_of("body b", b);
	cr_assert_eq(idem_begin(ix, "k", a, &rep), IDEM_PROCEED);
	cr_expect_eq(idem_begin(ix, "k", b, &rep), IDEM_CONFLICT, "while running");
	idem_complete(ix, "k", 201, "{}", NULL);
	cr_expect_eq(idem_begin(ix, "k", b, &rep), IDEM_CONFLICT, "after completion");
	idem_free(ix);
}

Test(idem, entries_expire_after_retention)
{
	struct idem *ix = idem_new(10, 1000, now_fn);
	struct idem_reply rep = { 0 };
	unsigned char a[IDEM_FP_LEN], b[IDEM_FP_LEN];

	fake_now = 5000;
	fp_of("a", a);
	fp_of("b", b);
	cr_assert_eq(idem_begin(ix, "k", a, &rep), IDEM_PROCEED);
	idem_complete(ix, "k", 201, "{}", NULL);
	fake_now = 5999;
	cr_expect_eq(idem_begin(ix, "k", b, &rep), IDEM_CONFLICT, "still retained");
	fake_now = 6000;
	cr_expect_eq(idem_begin(ix, "k", b, &rep), IDEM_PROCEED, "expired: the key is free");
	idem_free(ix);
}

Test(idem, full_registry_is_unavailable_until_entries_expire)
{
	struct idem *ix = idem_new(3, 1000, now_fn);
	struct idem_reply rep = { 0 };
	unsigned char fp[IDEM_FP_LEN];
	char key[16];

	fake_now = 0;
	fp_of("x", fp);
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof key, "k%d", i);
		cr_assert_eq(idem_begin(ix, key, fp, &rep), IDEM_PROCEED);
		idem_complete(ix, key, 201, "{}", NULL);
	}
	cr_expect_eq(idem_begin(ix, "k3", fp, &rep), IDEM_FULL);
	cr_expect_eq(idem_count(ix), 3);
	fake_now = 1000;
	cr_expect_eq(idem_begin(ix, "k3", fp, &rep), IDEM_PROCEED, "expired entries swept");
	cr_expect_eq(idem_count(ix), 1);
	idem_free(ix);
}

/* Bounded in bytes as well as in count (issue 17, finding 6): 10,000 answers of
 * up to 644 KiB each could hold 6 GiB for a day. */
Test(idem, answers_are_bounded_in_bytes)
{
	struct idem *ix = idem_new(10000, 1000, now_fn);
	struct idem_reply rep = { 0 };
	unsigned char fp[IDEM_FP_LEN];
	char key[16], *body = malloc(100 * 1024 + 1);
	int kept = 0;

	memset(body, 'b', 100 * 1024);
	body[100 * 1024] = '\0';
	idem_set_max_bytes(ix, 1024 * 1024);
	fake_now = 0;
	fp_of("x", fp);
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "k%d", i);
		if (idem_begin(ix, key, fp, &rep) != IDEM_PROCEED)
			break;
		idem_complete(ix, key, 201, body, NULL);
		kept++;
	}
	cr_expect(kept >= 9 && kept <= 11, "%d answers of 100 KiB kept under 1 MiB", kept);
	cr_expect_eq(idem_begin(ix, "more", fp, &rep), IDEM_FULL, "past the bytes, full");
	/* A replay of a kept answer still works while full. */
	cr_expect_eq(idem_begin(ix, "k0", fp, &rep), IDEM_REPLAY);
	cr_expect_eq(strlen(rep.body), 100 * 1024);
	free(rep.body);
	free(rep.location);
	fake_now = 1000;
	cr_expect_eq(idem_begin(ix, "more", fp, &rep), IDEM_PROCEED, "expired answers free the bytes");
	cr_expect_eq(idem_count(ix), 1);
	idem_free(ix);
	free(body);
}

Test(idem, abandoned_request_frees_the_key)
{
	struct idem *ix = idem_new(10, 1000, now_fn);
	struct idem_reply rep = { 0 };
	unsigned char fp[IDEM_FP_LEN];

	fp_of("a", fp);
	cr_assert_eq(idem_begin(ix, "k", fp, &rep), IDEM_PROCEED);
	idem_abandon(ix, "k");
	cr_expect_eq(idem_begin(ix, "k", fp, &rep), IDEM_PROCEED);
	cr_expect_eq(idem_count(ix), 1);
	idem_free(ix);
}

struct racer {
	struct idem *ix;
	atomic_int *created;
	enum idem_result result;
	int status;
};

static void *
race(void *arg)
{
	struct racer *r = arg;
	struct idem_reply rep = { 0 };
	unsigned char fp[IDEM_FP_LEN];

	fp_of("same body", fp);
	r->result = idem_begin(r->ix, "shared", fp, &rep);
	if (r->result == IDEM_PROCEED) {
		atomic_fetch_add(r->created, 1);
		usleep(50 * 1000);	/* the others arrive while this one runs */
		idem_complete(r->ix, "shared", 201, "{\"id\":\"one\"}", NULL);
		r->status = 201;
	} else if (r->result == IDEM_REPLAY) {
		r->status = rep.status;
		cr_expect_str_eq(rep.body, "{\"id\":\"one\"}");
		free(rep.body);
		free(rep.location);
	}
	return NULL;
}

Test(idem, concurrent_duplicates_create_exactly_one)
{
	enum { N = 50 };
	struct idem *ix = idem_new(100, 100000, NULL);
	atomic_int created = 0;
	struct racer racers[N];
	pthread_t th[N];

	for (int i = 0; i < N; i++) {
		racers[i] = (struct racer){ ix, &created, 0, 0 };
		pthread_create(&th[i], NULL, race, &racers[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(racers[i].status, 201, "racer %d got %d", i, racers[i].status);
	}
	cr_expect_eq(atomic_load(&created), 1);
	idem_free(ix);
}
