/*
 * kill -9 at random points (issue 17): a real taskdeckd under a steady stream
 * of creates (projects; runs, each with its new session; connectors and
 * credentials) is killed with
 * SIGKILL KILLS times at a random moment and started again each time.  Every
 * create it acknowledged (201) must be there: a round's after the restart that
 * follows it, all of them after the last one; and the database must pass
 * PRAGMA integrity_check at the end.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness.h"

TestSuite(kill9, .timeout = 240);

#define KILLS 8
#define MAX_ACKS 32768

struct ack {
	char path[96];		/* what GET must find: /api/v1/projects/ID, ... */
};

static struct ack acks[MAX_ACKS];
static int nacks;
/* Connector creates sent (the service keeps at most 200, CONNECTORS_MAX). */
static int connectors_made;

static size_t
collect(char *data, size_t size, size_t n, void *ud)
{
	struct { char *p; size_t len; } *b = ud;
	char *grown = realloc(b->p, b->len + size * n + 1);

	if (grown == NULL)
		return 0;
	b->p = grown;
	memcpy(b->p + b->len, data, size * n);
	b->len += size * n;
	b->p[b->len] = '\0';
	return size * n;
}

/* One request that may fail (the service may die under it): the status, 0 on failure. */
static long
request(const struct svc *s, const char *method, const char *path, const char *body,
    cJSON **json)
{
	struct { char *p; size_t len; } b = { NULL, 0 };
	char url[256], auth[128];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	long status = 0;

	snprintf(url, sizeof url, "%s%s", s->url, path);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (body != NULL)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (json != NULL)
		*json = status != 0 && b.p != NULL ? cJSON_Parse(b.p) : NULL;
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(b.p);
	return status;
}

/* kind is "projects", "runs" or "sessions". */
static void
ack(const char *kind, const char *id)
{
	cr_assert_lt(nacks, MAX_ACKS);
	cr_assert_not_null(id);
	snprintf(acks[nacks++].path, sizeof acks[0].path, "/api/v1/%s/%s", kind, id);
}

struct killer {
	pid_t pid;
	int delay_ms;
};

static void *
killer_main(void *arg)
{
	struct killer *k = arg;
	struct timespec ts = { k->delay_ms / 1000, (k->delay_ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	kill(k->pid, SIGKILL);
	return NULL;
}

/* Creates until a request fails (the service was killed); the number acknowledged. */
static int
write_until_killed(const struct svc *s, int round)
{
	char body[256];
	int n = 0;

	for (int i = 0;; i++) {
		cJSON *j = NULL;
		long status;

		snprintf(body, sizeof body, "{\"name\":\"k%d-%d\",\"description\":\"round %d\"}",
		    round, i, round);
		status = request(s, "POST", "/api/v1/projects", body, &j);
		if (status == 0) {
			cJSON_Delete(j);
			return n;
		}
		cr_assert_eq(status, 201, "create project: %ld", status);
		const char *pid = cJSON_GetStringValue(cJSON_GetObjectItem(j, "id"));
		ack("projects", pid);
		n++;
		if (i % 6 == 3 && connectors_made < 100) {
			/* A connector and a credential (sealed with secret.key); at most 200 connectors. */
			connectors_made++;
			static const char *const kinds[] = { "connectors", "credentials" };
			for (int k = 0; k < 2; k++) {
				cJSON *made = NULL;

				if (k == 0)
					snprintf(body, sizeof body, "{\"name\":\"k%d-%d\",\"transport\":"
					    "{\"type\":\"stdio\",\"command\":\"true\"}}", round, i);
				else
					snprintf(body, sizeof body, "{\"name\":\"k%d-%d\",\"kind\":"
					    "\"bearer\",\"secret\":\"s-%d-%d\"}", round, i, round, i);
				status = request(s, "POST", k == 0 ? "/api/v1/connectors" :
				    "/api/v1/credentials", body, &made);
				if (status == 0) {
					cJSON_Delete(j);
					cJSON_Delete(made);
					return n;
				}
				if (status != 201) {
					char *text = made ? cJSON_PrintUnformatted(made) : NULL;
					cr_assert_fail("create %s %s: %ld %s", kinds[k], body, status,
					    text ? text : "");
				}
				ack(kinds[k], cJSON_GetStringValue(cJSON_GetObjectItem(made, "id")));
				n++;
				cJSON_Delete(made);
			}
		}
		if (i % 4 == 0) {
			cJSON *run = NULL;

			snprintf(body, sizeof body, "{\"project\":\"%s\",\"prompt\":\"hello\"}", pid);
			status = request(s, "POST", "/api/v1/runs", body, &run);
			if (status == 0) {
				cJSON_Delete(j);
				cJSON_Delete(run);
				return n;
			}
			cr_assert_eq(status, 201, "create run: %ld", status);
			ack("runs", cJSON_GetStringValue(cJSON_GetObjectItem(run, "id")));
			ack("sessions",
			    cJSON_GetStringValue(cJSON_GetObjectItem(run, "sessionId")));
			n += 2;
			cJSON_Delete(run);
		}
		cJSON_Delete(j);
	}
}

/* Every create acknowledged since acks[from] is there. */
static void
check_acks(const struct svc *s, int round, int from)
{
	for (int i = from; i < nacks; i++) {
		long status = request(s, "GET", acks[i].path, NULL, NULL);

		cr_assert_eq(status, 200, "after kill %d: %s acknowledged, then %ld", round,
		    acks[i].path, status);
	}
}

Test(kill9, acknowledged_creates_survive_random_kills)
{
	struct svc s;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int total = 0, round_start = 0;

	cr_log_info("seed %u", seed);
	srand(seed);
	svc_start(&s);
	for (int round = 0; round < KILLS; round++) {
		struct killer k = { s.pid, 150 + rand() % 600 };
		pthread_t t;
		int n;

		cr_assert_eq(pthread_create(&t, NULL, killer_main, &k), 0);
		n = write_until_killed(&s, round);
		pthread_join(t, NULL);
		svc_kill(&s);		/* reaps it */
		total += n;
		svc_restart(&s);
		/* This round's creates after each restart, every round's after the last one. */
		check_acks(&s, round, round == KILLS - 1 ? 0 : round_start);
		round_start = nacks;
	}
	cr_assert_gt(total, KILLS, "only %d creates were acknowledged in %d rounds", total,
	    KILLS);
	cr_log_info("%d acknowledged creates, %d kills", total, KILLS);

	/* Stopped cleanly, the file is sound. */
	char db_path[512];
	sqlite3 *db;
	sqlite3_stmt *st;

	svc_stop(&s);
	snprintf(db_path, sizeof db_path, "%s/taskdeck.db", s.home);
	cr_assert_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);
	svc_destroy(&s);
}
