/* Connectors (docs/http-api.md, Connectors); the definitions live in connectors.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connector-launch.h"
#include "connector-oauth.h"
#include "connector-remove.h"
#include "connector-test.h"
#include "connectors.h"
#include "http.h"
#include "ids.h"
#include "json.h"
#include "routes.h"
#include "xalloc.h"

/* Parses ?cursor= for a list of prefix ids (extra: one more id allowed); false after a 400. */
bool
route_conn_cursor(struct http_request *req, struct http_response *r, const char *prefix,
    const char *extra, const char **cursor)
{
	*cursor = http_query(req, "cursor");
	if (*cursor == NULL || td_id_valid(*cursor, prefix) ||
	    (extra != NULL && strcmp(*cursor, extra) == 0))
		return true;
	http_bad_parameter(r, "cursor", "cursor is not a %s id", prefix);
	return false;
}

/* A list answer with its Link header when next is set. */
void
route_conn_page(struct http_response *r, const char *collection, int limit,
    const char *next, cJSON *arr)
{
	if (next[0] != '\0')
		http_link_next(r, "/api/v1/%s?limit=%d&cursor=%s", collection, limit, next);
	http_json(r, 200, arr);
}

void
route_connectors_list(struct http_request *req, struct http_response *r)
{
	const char *cursor;
	char next[TD_ID_MAX];
	int limit;
	cJSON *arr;

	if (!http_query_limit(req, r, &limit) ||
	    !route_conn_cursor(req, r, "con", CONNECTOR_WEB_ID, &cursor))
		return;
	arr = connectors_list(req->svc, cursor, limit, next);
	route_conn_page(r, "connectors", limit, next, arr);
}

void
route_connectors_get(struct http_request *req, struct http_response *r)
{
	cJSON *c = connector_get(req->svc, req->params[0]);

	http_json_found(r, c, "connector", req->params[0]);
}

void
route_connectors_create(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *c;

	if (connector_add(req->svc, req->json, &c, &p) != TD_OK)
		return http_problem(r, &p);
	char *location = xasprintf("/api/v1/connectors/%s", json_get_string(c, "id"));
	http_add_header(r, "Location", location);
	free(location);
	http_json(r, 201, c);
}

void
route_connectors_update(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	cJSON *c;

	if (connector_update(req->svc, req->params[0], req->json, &c, &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, c);
}

void
route_connectors_enabled(struct http_request *req, struct http_response *r)
{
	static const char *const fields[] = { "enabled", NULL };
	const cJSON *enabled = cJSON_GetObjectItemCaseSensitive(req->json, "enabled");
	struct problem p = { 0 };
	const char *bad = NULL;
	cJSON *c;

	if (!json_only_keys(req->json, fields, &bad))
		return http_bad_field(r, bad, "unknown field %.64s", bad);
	if (!cJSON_IsBool(enabled))
		return http_bad_field(r, "enabled", "enabled must be true or false");
	if (connector_set_enabled(req->svc, req->params[0], cJSON_IsTrue(enabled), &c, &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, c);
}

void
route_connectors_remove(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };

	if (connector_remove(req->svc, req->params[0], &p) != TD_OK)
		return http_problem(r, &p);
	http_json(r, 200, cJSON_CreateObject());
}

/*
 * POST /connectors/:id/test.  A test may wait on a server for tens of
 * seconds, and the service has two HTTP threads: the test runs on a thread
 * of its own while the connection is suspended, and its answer is the body
 * of a streamed 200 response.  Every outcome of a test that ran is 200.
 */
struct test_job {
	pthread_mutex_t mu;
	struct service *svc;
	char id[TD_ID_MAX];
	char *token_version;	/* the version of its OAuth token the test sends, or NULL */
	struct connector_launch launch;
	char *text;		/* the answer once done */
	size_t len, off;
	bool done;
	struct http_stream *hs;	/* suspended, waiting for the answer */
	bool gone;		/* the response ended first */
	int refs;		/* the thread and the response */
};

static void
test_job_unref(struct test_job *job)
{
	bool last;

	pthread_mutex_lock(&job->mu);
	last = --job->refs == 0;
	pthread_mutex_unlock(&job->mu);
	if (!last)
		return;
	connector_launch_free(&job->launch);
	free(job->text);
	free(job->token_version);
	pthread_mutex_destroy(&job->mu);
	free(job);
}

static void *
test_thread(void *arg)
{
	struct test_job *job = arg;
	cJSON *result = connector_test_run(&job->launch);
	const char *message = json_get_string(result, "message");
	char *text;

	/*
	 * Its server refused the token before it was due (revoked): renewed, once
	 * (unless someone renewed it meanwhile), and the test again with the new one.
	 */
	if (job->token_version != NULL && message != NULL &&
	    strstr(message, "sign-in needed") != NULL &&
	    connector_oauth_renew(job->svc, job->id, job->token_version, NULL)) {
		struct connector_launch again;
		struct problem p = { 0 };

		if (connector_launch_prepare(job->svc, job->id, &again, &p) == TD_OK) {
			connector_launch_free(&job->launch);
			job->launch = again;
			cJSON_Delete(result);
			result = connector_test_run(&job->launch);
		}
		cJSON_Delete(p.details);
	}
	text = json_print(result);

	cJSON_Delete(result);
	pthread_mutex_lock(&job->mu);
	job->text = text;
	job->len = strlen(text);
	job->done = true;
	if (job->hs != NULL && !job->gone)
		http_stream_resume(job->hs);
	pthread_mutex_unlock(&job->mu);
	connector_tests_end();
	test_job_unref(job);
	return NULL;
}

static ssize_t
test_read(void *cls, struct http_stream *hs, char *buf, size_t max)
{
	struct test_job *job = cls;
	size_t n;

	pthread_mutex_lock(&job->mu);
	if (!job->done) {
		job->hs = hs;
		http_stream_suspend(hs);
		pthread_mutex_unlock(&job->mu);
		return 0;
	}
	n = job->len - job->off < max ? job->len - job->off : max;
	memcpy(buf, job->text + job->off, n);
	job->off += n;
	pthread_mutex_unlock(&job->mu);
	return n == 0 ? HTTP_STREAM_END : (ssize_t)n;
}

static void
test_free(void *cls)
{
	struct test_job *job = cls;

	pthread_mutex_lock(&job->mu);
	job->gone = true;
	pthread_mutex_unlock(&job->mu);
	test_job_unref(job);
}

void
route_connectors_test(struct http_request *req, struct http_response *r)
{
	struct problem p = { 0 };
	struct test_job *job = xcalloc(1, sizeof *job);
	pthread_attr_t attr;
	pthread_t t;

	connectors_refresh_oauth(req->svc);	/* the test uses a token that still works */
	if (connector_launch_prepare(req->svc, req->params[0], &job->launch, &p) != TD_OK) {
		free(job);
		return http_problem(r, &p);
	}
	job->svc = req->svc;
	snprintf(job->id, sizeof job->id, "%s", req->params[0]);
	job->token_version = connector_oauth_token_version(req->svc, req->params[0]);
	if (!connector_tests_begin()) {
		connector_launch_free(&job->launch);
		free(job);
		http_error(r, TD_UNAVAILABLE, NULL, "%d connector tests are running; retry in a "
		    "moment", CONNECTOR_TESTS_MAX);
		http_add_header(r, "Retry-After", "1");
		return;
	}
	pthread_mutex_init(&job->mu, NULL);
	job->refs = 2;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, test_thread, job) != 0) {
		pthread_attr_destroy(&attr);
		connector_tests_end();
		connector_launch_free(&job->launch);
		pthread_mutex_destroy(&job->mu);
		free(job);
		http_error(r, TD_INTERNAL_ERROR, NULL, "cannot start the test");
		return;
	}
	pthread_attr_destroy(&attr);
	http_stream(r, 200, test_read, test_free, job);
}
