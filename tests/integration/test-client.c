/* libtaskdeck against a real taskdeckd, and against fake servers. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "harness.h"
#include "taskdeck.h"

TestSuite(client, .init = svc_setup_env, .fini = svc_teardown, .timeout = 60);
TestSuite(client_offline, .timeout = 60);

/* Asserts that nothing of err shows the service's token. */
static void
assert_no_token(const struct td_error *err, const char *token)
{
	cr_assert_null(strstr(err->message, token), "the token leaked: %s", err->message);
	cr_assert_null(strstr(err->code_name, token));
	cr_assert_null(strstr(err->request_id, token));
}

static struct td_client *
connect_discovery(void)
{
	struct td_client *c;
	struct td_error err;

	cr_assert_eq(td_connect(&c, NULL, &err), TD_OK, "td_connect: %s", err.message);
	cr_assert_str_eq(td_client_base_url(c), svc.url);
	return c;
}

static struct td_client *
connect_explicit(const char *url, const char *token)
{
	struct td_connect_options opts = { .base_url = url, .token = token };
	struct td_client *c;
	struct td_error err;

	/* Discovery must not be needed: point the home somewhere empty. */
	setenv("TASKDECK_HOME", "/nonexistent/taskdeck-home", 1);
	cr_assert_eq(td_connect(&c, &opts, &err), TD_OK, "td_connect: %s", err.message);
	return c;
}

static struct td_project *
create_project(struct td_client *c, const char *name)
{
	struct td_new_project np = { .name = name };
	struct td_project *p;
	struct td_error err;

	cr_assert_eq(td_create_project(c, &np, NULL, &p, &err), TD_OK,
	    "create %s: %s", name, err.message);
	return p;
}

Test(client, project_create_get_update)
{
	struct td_client *c = connect_discovery();
	struct td_new_project np = {
		.name = "Research", .description = "papers", .context = "be brief",
		.metadata_json = "{\"team\":\"blue\",\"n\":1}",
	};
	struct td_project *p, *got, *upd;
	struct td_error err;
	cJSON *doc;

	cr_assert_eq(td_create_project(c, &np, NULL, &p, &err), TD_OK, "%s", err.message);
	cr_assert_eq(strncmp(p->id, "prj_", 4), 0, "id %s", p->id);
	cr_assert_str_eq(p->name, "Research");
	cr_assert_str_eq(p->description, "papers");
	cr_assert_str_eq(p->context, "be brief");
	cr_assert_str_eq(p->metadata_json, "{\"team\":\"blue\",\"n\":1}");
	cr_assert_not_null(p->created_at);
	doc = cJSON_Parse(p->json);
	cr_assert_str_eq(cJSON_GetObjectItem(doc, "id")->valuestring, p->id);
	cJSON_Delete(doc);

	cr_assert_eq(td_get_project(c, p->id, NULL, &got, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(got->id, p->id);
	cr_assert_str_eq(got->name, "Research");
	cr_assert_str_eq(got->updated_at, p->updated_at);

	cr_assert_eq(td_update_project(c, p->id,
	    "{\"name\":\"Renamed\",\"metadata\":{\"team\":null,\"x\":true}}", NULL,
	    &upd, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(upd->name, "Renamed");
	cr_assert_str_eq(upd->description, "papers");
	cr_assert_str_eq(upd->metadata_json, "{\"n\":1,\"x\":true}");
	cr_assert_gt(strcmp(upd->updated_at, p->updated_at), 0,
	    "updatedAt did not move: %s", upd->updated_at);

	td_project_free(upd);
	td_project_free(got);
	td_project_free(p);
	td_client_free(c);
}

Test(client, list_pages_with_cursor)
{
	struct td_client *c = connect_explicit(svc.url, svc.token);
	char *ids[5], *cursor = NULL;
	const char *seen[5];
	size_t nseen = 0;
	cJSON *doc;
	int pages = 0;

	for (int i = 0; i < 5; i++) {
		char name[16];
		struct td_project *p;

		snprintf(name, sizeof name, "p%d", i);
		p = create_project(c, name);
		ids[i] = strdup(p->id);
		td_project_free(p);
	}
	do {
		struct td_project_list *page;
		struct td_error err;

		cr_assert_eq(td_list_projects(c, 2, cursor, NULL, &page, &err), TD_OK,
		    "%s", err.message);
		cr_assert_eq(page->count, pages < 2 ? 2u : 1u, "page %d has %zu", pages,
		    page->count);
		for (size_t i = 0; i < page->count; i++)
			seen[nseen++] = strdup(page->items[i].id);
		free(cursor);
		cursor = page->next_cursor != NULL ? strdup(page->next_cursor) : NULL;
		doc = cJSON_Parse(page->json);
		cr_assert_eq((size_t)cJSON_GetArraySize(doc), page->count);
		cJSON_Delete(doc);
		td_project_list_free(page);
		pages++;
	} while (cursor != NULL && pages < 10);
	cr_assert_eq(pages, 3);
	/* Newest first: the reverse of creation order. */
	for (int i = 0; i < 5; i++) {
		cr_assert_str_eq(seen[i], ids[4 - i]);
		free((char *)seen[i]);
		free(ids[4 - i]);
	}
	td_client_free(c);
}

Test(client, unknown_project_is_not_found)
{
	struct td_client *c = connect_discovery();
	struct td_project *p = (struct td_project *)1;
	struct td_error err;

	cr_assert_eq(td_get_project(c, "prj_000000000000000000000000", NULL, &p, &err),
	    TD_NOT_FOUND);
	cr_assert_null(p);
	cr_assert_eq(err.code, TD_NOT_FOUND);
	cr_assert_str_eq(err.code_name, "not_found");
	cr_assert_eq(err.http_status, 404);
	cr_assert_neq(err.message[0], '\0');
	cr_assert_eq(strncmp(err.request_id, "req_", 4), 0, "request id '%s'", err.request_id);
	assert_no_token(&err, svc.token);
	td_client_free(c);
}

Test(client, invalid_patch)
{
	struct td_client *c = connect_discovery();
	struct td_project *p = create_project(c, "patched"), *q = NULL;
	struct td_error err;

	cr_assert_eq(td_update_project(c, p->id, "{\"id\":\"prj_x\"}", NULL, &q, &err),
	    TD_INVALID_REQUEST, "got %s", err.code_name);
	cr_assert_null(q);
	cr_assert_eq(err.http_status, 400);
	cr_assert_str_eq(err.code_name, "invalid_request");
	cr_assert_neq(err.message[0], '\0');
	cr_assert_eq(strncmp(err.request_id, "req_", 4), 0);

	/* A patch that is not an object never reaches the service. */
	cr_assert_eq(td_update_project(c, p->id, "[1]", NULL, &q, &err), TD_INVALID_ARGUMENT);
	cr_assert_eq(err.http_status, 0);
	cr_assert_str_eq(err.request_id, "");
	td_project_free(p);
	td_client_free(c);
}

Test(client, stale_defaults_write)
{
	struct td_client *c = connect_discovery();
	struct td_project *p = create_project(c, "defaults");
	struct td_session_defaults *d, *d2, *d3 = NULL;
	struct td_error err;

	cr_assert_eq(td_get_session_defaults(c, p->id, NULL, &d, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(d->project_id, p->id);
	cr_assert_null(d->model);
	cr_assert_eq(td_update_session_defaults(c, p->id, d->updated_at,
	    "{\"model\":\"m1\",\"effort\":\"high\"}", NULL, &d2, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(d2->model, "m1");
	cr_assert_str_eq(d2->effort, "high");
	cr_assert_str_neq(d2->updated_at, d->updated_at);

	cr_assert_eq(td_update_session_defaults(c, p->id, d->updated_at,
	    "{\"model\":null}", NULL, &d3, &err), TD_STALE_WRITE);
	cr_assert_null(d3);
	cr_assert_eq(err.http_status, 409);
	cr_assert_str_eq(err.code_name, "stale_write");
	cr_assert_eq(strncmp(err.request_id, "req_", 4), 0);

	cr_assert_eq(td_update_session_defaults(c, p->id, d2->updated_at,
	    "{\"model\":null}", NULL, &d3, &err), TD_OK, "%s", err.message);
	cr_assert_null(d3->model);
	cr_assert_str_eq(d3->effort, "high");
	td_session_defaults_free(d3);
	td_session_defaults_free(d2);
	td_session_defaults_free(d);
	td_project_free(p);
	td_client_free(c);
}

Test(client, idempotent_create)
{
	struct td_client *c = connect_discovery();
	struct td_request_options opts = { .idempotency_key = "create-once-1" };
	struct td_new_project np = { .name = "once" };
	struct td_new_project other = { .name = "once", .description = "changed" };
	struct td_project *a, *b, *x = NULL;
	struct td_project_list *list;
	struct td_error err;
	size_t named = 0;

	cr_assert_eq(td_create_project(c, &np, &opts, &a, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_create_project(c, &np, &opts, &b, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(a->id, b->id);
	cr_assert_eq(td_create_project(c, &other, &opts, &x, &err), TD_IDEMPOTENCY_CONFLICT);
	cr_assert_eq(err.http_status, 422);
	cr_assert_null(x);
	cr_assert_eq(td_list_projects(c, 0, NULL, NULL, &list, &err), TD_OK, "%s", err.message);
	for (size_t i = 0; i < list->count; i++)
		named += strcmp(list->items[i].name, "once") == 0;
	cr_assert_eq(named, 1u, "%zu projects named once", named);
	td_project_list_free(list);
	td_project_free(a);
	td_project_free(b);
	td_client_free(c);
}

Test(client, wrong_token_is_unauthorized)
{
	const char *bad = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	struct td_client *c = connect_explicit(svc.url, bad);
	struct td_project_list *list;
	struct td_error err;

	cr_assert_eq(td_list_projects(c, 0, NULL, NULL, &list, &err), TD_UNAUTHORIZED);
	cr_assert_eq(err.http_status, 401);
	cr_assert_str_eq(err.code_name, "unauthorized");
	assert_no_token(&err, bad);
	assert_no_token(&err, svc.token);
	td_client_free(c);
}

/* The socket the service's discovery file names, as a path in its home. */
static char *
socket_of(const struct svc *s)
{
	char *path = NULL;

	cr_assert(asprintf(&path, "%s/taskdeckd.sock", s->home) > 0);
	return path;
}

Test(client, discovery_names_a_socket_only_its_owner_may_use)
{
	struct td_service_info *info;
	struct td_error err;
	char *want = socket_of(&svc);
	struct stat st;

	cr_assert_eq(td_discover(&info, &err), TD_OK, "%s", err.message);
	cr_assert_not_null(info->socket);
	cr_assert_str_eq(info->socket, want);
	cr_assert_eq(lstat(want, &st), 0);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", (unsigned)(st.st_mode & 0777));
	td_service_info_free(info);
	free(want);
}

/* Whether this process has a connection open to the Unix domain socket at path. */
static bool
connected_to(const char *path)
{
	struct sockaddr_un peer;
	socklen_t len;
	int domain;

	for (int fd = 3; fd < 1024; fd++) {
		len = sizeof domain;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX)
			continue;
		len = sizeof peer;
		if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0 &&
		    len > offsetof(struct sockaddr_un, sun_path) && strcmp(peer.sun_path, path) == 0)
			return true;
	}
	return false;
}

Test(client, a_discovered_client_goes_through_the_socket)
{
	char *sock = socket_of(&svc);
	struct td_events_options eo = { .idle_timeout_ms = 10000 };
	struct td_project_list *list;
	struct td_events *ev;
	struct td_client *c;
	struct td_error err;

	cr_assert_not(connected_to(sock));
	c = connect_discovery();
	cr_assert_eq(td_list_projects(c, 0, NULL, NULL, &list, &err), TD_OK, "%s", err.message);
	td_project_list_free(list);
	/* The pooled connection is the socket's. */
	cr_assert(connected_to(sock), "no connection to %s", sock);
	td_client_free(c);
	cr_assert_not(connected_to(sock));
	/* The event stream too, which its worker reads itself. */
	c = connect_discovery();
	cr_assert_eq(td_events_open(c, NULL, &eo, &ev, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_events_ready(ev, 10000, &err), TD_OK, "%s", err.message);
	cr_assert(connected_to(sock), "the stream is not on %s", sock);
	td_events_close(ev);
	td_client_free(c);
	free(sock);
}

Test(client, the_socket_asks_for_the_token)
{
	char *sock = socket_of(&svc), url[160];
	CURL *easy = curl_easy_init();
	long status = 0;

	snprintf(url, sizeof url, "%s/api/v1/projects", svc.url);
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, fwrite);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, stderr);
	cr_assert_eq(curl_easy_perform(easy), CURLE_OK);
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	cr_assert_eq(status, 401);
	curl_easy_cleanup(easy);
	free(sock);
}

Test(client_offline, a_socket_left_by_a_killed_service_is_replaced)
{
	struct svc s = { 0 };
	struct td_client *c;
	struct td_project_list *list;
	struct td_error err;
	struct stat st;
	char *sock;

	svc_start(&s);
	sock = socket_of(&s);
	svc_kill(&s);
	cr_assert_eq(lstat(sock, &st), 0, "kill -9 leaves the socket");
	svc_restart(&s);
	svc_export_env(&s);
	cr_assert_eq(td_connect(&c, NULL, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_list_projects(c, 0, NULL, NULL, &list, &err), TD_OK, "%s", err.message);
	td_project_list_free(list);
	td_client_free(c);
	svc_stop(&s);
	cr_assert_neq(lstat(sock, &st), 0, "a clean stop removes the socket");
	svc_destroy(&s);
	free(sock);
}

Test(client, env_overrides_discovery)
{
	struct td_client *c;
	struct td_doctor_report *d;
	struct td_error err;

	setenv("TASKDECK_HOME", "/nonexistent/taskdeck-home", 1);
	setenv("TASKDECK_URL", svc.url, 1);
	setenv("TASKDECK_TOKEN", svc.token, 1);
	cr_assert_eq(td_connect(&c, NULL, &err), TD_OK, "%s", err.message);
	cr_assert_eq(td_doctor(c, NULL, &d, &err), TD_OK, "%s", err.message);
	cr_assert(d->ready);
	td_doctor_report_free(d);
	td_client_free(c);
}

Test(client, routing_and_doctor)
{
	struct td_client *c = connect_discovery();
	struct td_agent_routing *r, *r2;
	struct td_doctor_report *d;
	struct td_error err;
	char *json;

	cr_assert_eq(td_get_agent_routing(c, NULL, &r, &err), TD_OK, "%s", err.message);
	cr_assert_str_eq(r->framework, "taskdeck");
	cr_assert_eq(r->reviewer.enabled, false);
	cr_assert_eq(td_update_agent_routing(c,
	    "{\"reviewer\":{\"enabled\":true,\"model\":\"rv\"},\"subagent\":{\"maxConcurrent\":5}}",
	    NULL, &r2, &err), TD_OK, "%s", err.message);
	cr_assert(r2->reviewer.enabled);
	cr_assert_str_eq(r2->reviewer.model, "rv");
	cr_assert_eq(r2->subagent.max_concurrent, 5);
	cr_assert_null(r2->subagent.model);
	td_agent_routing_free(r2);
	td_agent_routing_free(r);

	cr_assert_eq(td_doctor(c, NULL, &d, &err), TD_OK, "%s", err.message);
	cr_assert(d->ready);
	cr_assert_str_eq(d->version, td_version());
	cr_assert_gt(d->check_count, 0u);
	for (size_t i = 0; i < d->check_count; i++) {
		/* readiness: an external CLI that is not installed is a warning */
		if (strcmp(d->checks[i].id, "runtime-claude-code") == 0 ||
		    strcmp(d->checks[i].id, "runtime-codex") == 0 ||
		    strcmp(d->checks[i].id, "runtime-acp") == 0)
			cr_assert_str_neq(d->checks[i].status, "fail", "%s", d->checks[i].id);
		else
			cr_assert_str_eq(d->checks[i].status, "ok", "%s", d->checks[i].id);
	}
	cr_assert_null(strstr(d->json, svc.token));
	td_doctor_report_free(d);

	cr_assert_eq(td_request_json(c, "GET", "/api/v1/settings/agent-routing", NULL,
	    NULL, &json, &err), TD_OK, "%s", err.message);
	cr_assert_not_null(strstr(json, "\"rv\""));
	free(json);
	cr_assert_eq(td_request_json(c, "GET", "/api/v1/nothing-here", NULL, NULL,
	    &json, &err), TD_NOT_FOUND);
	cr_assert_null(json);
	td_client_free(c);
}

struct worker {
	struct td_client *client;
	const char *project;
	int ok;
	char failure[600];
};

/* 50 requests of three kinds on a shared client. */
static void *
worker_run(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++) {
		struct td_error err;
		enum td_code rc;

		if (i % 3 == 0) {
			struct td_project *p;

			rc = td_get_project(w->client, w->project, NULL, &p, &err);
			td_project_free(p);
		} else if (i % 3 == 1) {
			struct td_project_list *l;

			rc = td_list_projects(w->client, 1, NULL, NULL, &l, &err);
			td_project_list_free(l);
		} else {
			struct td_doctor_report *d;

			rc = td_doctor(w->client, NULL, &d, &err);
			td_doctor_report_free(d);
		}
		if (rc == TD_OK)
			w->ok++;
		else
			snprintf(w->failure, sizeof w->failure, "%s: %s", err.code_name, err.message);
	}
	return NULL;
}

Test(client, threads_share_one_client)
{
	struct td_client *c = connect_discovery();
	struct td_project *p = create_project(c, "shared");
	struct worker w[8];
	pthread_t t[8];

	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .client = c, .project = p->id };
		cr_assert_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].ok, 50, "thread %d: %d ok, last failure %s", i, w[i].ok,
		    w[i].failure);
	}
	td_project_free(p);
	td_client_free(c);
}

/* A listening socket that never answers (the kernel accepts for it). */
static int
silent_server(char *url, size_t size)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	cr_assert_eq(listen(fd, 16), 0);
	getsockname(fd, (struct sockaddr *)&addr, &len);
	snprintf(url, size, "http://127.0.0.1:%d", ntohs(addr.sin_port));
	return fd;
}

static const char *fake_token =
    "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd";

/*
 * Each deadline is checked from below (the call waited for it) and against the other
 * deadline from above, far apart, so that a slow machine cannot fail it.
 */
Test(client_offline, timeout_against_silent_server)
{
	struct td_request_options opts = { .timeout_ms = 300 };
	struct td_connect_options copts = { .token = fake_token, .request_timeout_ms = 20000 };
	struct td_project_list *list;
	struct td_client *c;
	struct td_error err;
	char url[64];
	int fd = silent_server(url, sizeof url);
	long t0, elapsed;

	copts.base_url = url;
	cr_assert_eq(td_connect(&c, &copts, &err), TD_OK, "%s", err.message);
	t0 = mono_ms();
	cr_assert_eq(td_list_projects(c, 0, NULL, &opts, &list, &err), TD_TIMEOUT,
	    "got %s: %s", err.code_name, err.message);
	elapsed = mono_ms() - t0;
	cr_assert(elapsed >= 280 && elapsed < 20000, "timed out after %ld ms", elapsed);
	cr_assert_str_eq(err.code_name, "timeout");
	cr_assert_eq(err.http_status, 0);
	assert_no_token(&err, fake_token);
	td_client_free(c);

	/* Without a per-call timeout the client's own deadline applies. */
	copts.request_timeout_ms = 400;
	cr_assert_eq(td_connect(&c, &copts, &err), TD_OK, "%s", err.message);
	t0 = mono_ms();
	cr_assert_eq(td_list_projects(c, 0, NULL, NULL, &list, &err), TD_TIMEOUT);
	elapsed = mono_ms() - t0;
	cr_assert(elapsed >= 380, "timed out after %ld ms", elapsed);
	td_client_free(c);
	close(fd);
}

struct trigger {
	struct td_cancel *cancel;
	long at;
};

static void *
trigger_run(void *arg)
{
	struct trigger *t = arg;
	struct timespec ts = { 0, 500 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	t->at = mono_ms();
	td_cancel_trigger(t->cancel);
	return NULL;
}

Test(client_offline, cancel_from_another_thread)
{
	struct td_connect_options copts = { .token = fake_token };
	struct td_request_options opts = { .timeout_ms = 20000 };
	struct trigger trig = { .cancel = td_cancel_new() };
	struct td_doctor_report *d;
	struct td_client *c;
	struct td_error err;
	pthread_t t;
	char url[64];
	int fd = silent_server(url, sizeof url);
	long done;

	cr_assert_not_null(trig.cancel);
	copts.base_url = url;
	opts.cancel = trig.cancel;
	cr_assert_eq(td_connect(&c, &copts, &err), TD_OK, "%s", err.message);
	pthread_create(&t, NULL, trigger_run, &trig);
	cr_assert_eq(td_doctor(c, &opts, &d, &err), TD_CANCELLED, "got %s", err.code_name);
	done = mono_ms();
	pthread_join(t, NULL);
	cr_assert_lt(done - trig.at, 300, "cancel took %ld ms", done - trig.at);
	cr_assert(td_cancel_is_triggered(trig.cancel));

	/* A token that is already triggered stops the call before it starts. */
	cr_assert_eq(td_doctor(c, &opts, &d, &err), TD_CANCELLED);
	td_cancel_free(trig.cancel);
	td_client_free(c);
	close(fd);
}

struct fake {
	int fd;
	const char *head;	/* status line and headers, without Content-Length */
	const char *body;
	size_t filler;		/* bytes of ' ' after the body */
};

/* Answers one request with f's answer. */
static void *
fake_run(void *arg)
{
	struct fake *f = arg;
	char buf[4096], pad[65536];
	int conn = accept(f->fd, NULL, NULL);
	size_t sent = 0;

	memset(pad, ' ', sizeof pad);
	if (conn < 0)
		return NULL;
	snprintf(buf + 2048, 2048, "%sContent-Length: %zu\r\n\r\n%s", f->head,
	    strlen(f->body) + f->filler, f->body);
	if (recv(conn, buf, 2048, 0) > 0 &&
	    send(conn, buf + 2048, strlen(buf + 2048), MSG_NOSIGNAL) > 0) {
		while (sent < f->filler) {
			size_t n = f->filler - sent < sizeof pad ? f->filler - sent : sizeof pad;
			ssize_t w = send(conn, pad, n, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			sent += (size_t)w;
		}
	}
	close(conn);
	return NULL;
}

/* Runs one td_doctor against a fake answer; returns the error. */
static struct td_error
doctor_against(const char *head, const char *body, size_t filler)
{
	struct td_connect_options copts = { .token = fake_token };
	struct fake f = { .head = head, .body = body, .filler = filler };
	struct td_doctor_report *d;
	struct td_client *c;
	struct td_error err;
	pthread_t t;
	char url[64];

	f.fd = silent_server(url, sizeof url);
	copts.base_url = url;
	cr_assert_eq(td_connect(&c, &copts, &err), TD_OK, "%s", err.message);
	pthread_create(&t, NULL, fake_run, &f);
	cr_assert_neq(td_doctor(c, NULL, &d, &err), TD_OK);
	cr_assert_null(d);
	pthread_join(t, NULL);
	td_client_free(c);
	close(f.fd);
	return err;
}

Test(client_offline, oversized_and_malformed_answers)
{
	struct td_error err;

	/* 17 MiB of valid JSON is still past the 16 MiB cap. */
	err = doctor_against("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
	    "{\"ready\":true,\"checks\":[]}", 17u << 20);
	cr_assert_eq(err.code, TD_INVALID_RESPONSE, "got %s: %s", err.code_name, err.message);
	cr_assert_not_null(strstr(err.message, "MiB"), "%s", err.message);

	err = doctor_against("HTTP/1.1 200 OK\r\nX-Request-Id: req_html\r\n", "<html>", 0);
	cr_assert_eq(err.code, TD_INVALID_RESPONSE, "got %s", err.code_name);
	cr_assert_eq(err.http_status, 200);
	cr_assert_str_eq(err.request_id, "req_html");

	err = doctor_against("HTTP/1.1 401 Unauthorized\r\n", "", 0);
	cr_assert_eq(err.http_status, 401);
	cr_assert_eq(err.code, TD_UNAUTHORIZED, "got %s", err.code_name);

	err = doctor_against("HTTP/1.1 418 I'm a teapot\r\nX-Request-Id: req_tea\r\n",
	    "{\"error\":{\"code\":\"teapot\",\"message\":\"short\"}}", 0);
	cr_assert_eq(err.code, TD_UNKNOWN);
	cr_assert_str_eq(err.code_name, "teapot");
	cr_assert_str_eq(err.message, "short");
	cr_assert_str_eq(err.request_id, "req_tea");
}

Test(client_offline, no_service_found)
{
	char home[] = "/tmp/tdtest-empty-XXXXXX", path[128];
	struct td_client *c = (struct td_client *)1;
	struct td_error err;
	FILE *f;
	pid_t pid;

	cr_assert_not_null(mkdtemp(home));
	setenv("TASKDECK_HOME", home, 1);
	unsetenv("TASKDECK_URL");
	unsetenv("TASKDECK_TOKEN");
	cr_assert_eq(td_connect(&c, NULL, &err), TD_SERVICE_NOT_FOUND);
	cr_assert_null(c);
	cr_assert_not_null(strstr(err.message, "taskdeck daemon start"), "%s", err.message);

	/* A discovery file left by a process that is gone is no service either. */
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof path, "%s/service.json", home);
	f = fopen(path, "w");
	fprintf(f, "{\"baseUrl\":\"http://127.0.0.1:9\",\"pid\":%ld,\"tokenFile\":\"%s/token\"}",
	    (long)pid, home);
	fclose(f);
	cr_assert_eq(td_connect(&c, NULL, &err), TD_SERVICE_NOT_FOUND);
	cr_assert_not_null(strstr(err.message, "no longer running"), "%s", err.message);
	unlink(path);
	rmdir(home);
}

Test(client_offline, unreachable_url)
{
	struct td_connect_options copts = { .token = fake_token };
	struct td_doctor_report *d;
	struct td_client *c;
	struct td_error err;
	char url[64], where[64];

	snprintf(url, sizeof url, "http://127.0.0.1:%d/", harness_closed_port());
	snprintf(where, sizeof where, "127.0.0.1:%d", harness_closed_port());
	copts.base_url = url;
	cr_assert_eq(td_connect(&c, &copts, &err), TD_OK, "%s", err.message);
	url[strlen(url) - 1] = '\0';
	cr_assert_str_eq(td_client_base_url(c), url);
	cr_assert_eq(td_doctor(c, NULL, &d, &err), TD_CONNECTION_FAILED, "got %s", err.code_name);
	cr_assert_not_null(strstr(err.message, where), "%s", err.message);
	assert_no_token(&err, fake_token);
	td_client_free(c);

	copts.base_url = "ftp://127.0.0.1:9";
	cr_assert_eq(td_connect(&c, &copts, &err), TD_INVALID_ARGUMENT);
}
