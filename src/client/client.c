#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <unistd.h>

#include "client-internal.h"
#include "errors.h"
#include "json.h"
#include "paths.h"
#include "timeutil.h"
#include "xalloc.h"

struct td_cancel {
	atomic_bool triggered;
	int fds[2];		/* readable once triggered: wakes curl_multi_poll */
};

/* A reusable connection: the multi handle owns the connection cache. */
struct client_conn {
	CURLM *multi;
	CURL *easy;
};

struct client_transfer {
	struct client_response *resp;
	const struct client_stream *stream;	/* NULL: buffer the body */
	bool overflow;
	bool started;		/* stream->on_start was called */
	enum td_code stopped;	/* what a stream hook stopped the transfer with */
};

static pthread_once_t client_curl_once = PTHREAD_ONCE_INIT;
static CURLcode client_curl_status;

/* Initialises libcurl once per process. */
static void
client_curl_init(void)
{
	client_curl_status = curl_global_init(CURL_GLOBAL_ALL);
}

const char *
td_version(void)
{
	return TD_VERSION;
}

const char *
td_code_string(enum td_code code)
{
	return errcode_name(code);
}

/* Fills err (when not NULL) and returns code. */
enum td_code
client_fail(struct td_error *err, enum td_code code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	memset(err, 0, sizeof *err);
	err->code = code;
	snprintf(err->code_name, sizeof err->code_name, "%s", errcode_name(code));
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return code;
}

/* Adds what is known of the answer to an error. */
static enum td_code
client_fail_answer(struct td_error *err, const struct client_response *resp,
    enum td_code code)
{
	if (err != NULL) {
		err->http_status = resp->status;
		snprintf(err->request_id, sizeof err->request_id, "%s",
		    resp->request_id);
	}
	return code;
}

struct td_cancel *
td_cancel_new(void)
{
	struct td_cancel *cancel = xcalloc(1, sizeof *cancel);

	if (pipe2(cancel->fds, O_CLOEXEC | O_NONBLOCK) != 0) {
		free(cancel);
		return NULL;
	}
	atomic_init(&cancel->triggered, false);
	return cancel;
}

void
td_cancel_trigger(struct td_cancel *cancel)
{
	int saved_errno = errno;
	ssize_t n;

	if (cancel == NULL || atomic_exchange(&cancel->triggered, true))
		return;
	/* Only async-signal-safe calls here; a full pipe is fine. */
	n = write(cancel->fds[1], "x", 1);
	(void)n;
	errno = saved_errno;
}

bool
td_cancel_is_triggered(const struct td_cancel *cancel)
{
	return cancel != NULL && atomic_load(&cancel->triggered);
}

void
td_cancel_free(struct td_cancel *cancel)
{
	if (cancel == NULL)
		return;
	close(cancel->fds[0]);
	close(cancel->fds[1]);
	free(cancel);
}

/* Reads a whole small file; NULL with *errnum set on failure. */
static char *
client_read_file(const char *path, size_t max, int *errnum)
{
	char chunk[4096];
	struct buf b;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*errnum = errno;
		return NULL;
	}
	buf_init(&b, max);
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || !buf_append(&b, chunk, (size_t)n)) {
			*errnum = n < 0 ? errno : EFBIG;
			explicit_bzero(chunk, sizeof chunk);
			close(fd);
			if (b.data != NULL)
				explicit_bzero(b.data, b.len);
			buf_free(&b);
			return NULL;
		}
	}
	explicit_bzero(chunk, sizeof chunk);
	close(fd);
	return buf_steal(&b);
}

void
td_service_info_free(struct td_service_info *info)
{
	if (info == NULL)
		return;
	free(info->base_url);
	free(info->version);
	free(info->started_at);
	free(info->stream_id);
	free(info->token_file);
	free(info->discovery_file);
	free(info->json);
	free(info->socket);
	free(info);
}

/* Parses a discovery file's text. */
static bool
client_parse_discovery(struct td_service_info *info, const char *text)
{
	cJSON *doc = json_parse(text, strlen(text));
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(doc, "pid");
	const char *url = json_get_string(doc, "baseUrl");

	if (url == NULL || !cJSON_IsNumber(pid) || pid->valuedouble < 1) {
		cJSON_Delete(doc);
		return false;
	}
	info->base_url = xstrdup(url);
	info->pid = (long)pid->valuedouble;
	info->version = client_string(doc, "version");
	info->started_at = client_string(doc, "startedAt");
	info->stream_id = client_string(doc, "streamId");
	info->token_file = client_string(doc, "tokenFile");
	info->socket = client_string(doc, "socket");
	/* An absolute path that fits a socket address, else TCP alone. */
	if (info->socket != NULL && (info->socket[0] != '/' ||
	    strlen(info->socket) >= sizeof ((struct sockaddr_un *)0)->sun_path)) {
		free(info->socket);
		info->socket = NULL;
	}
	info->json = xstrdup(text);
	cJSON_Delete(doc);
	return true;
}

enum td_code
td_discover(struct td_service_info **out, struct td_error *err)
{
	struct td_service_info *info;
	struct td_paths paths;
	enum td_code rc = TD_OK;
	int errnum = 0;
	char *text;

	*out = NULL;
	if (!paths_init(&paths)) {
		return client_fail(err, TD_SERVICE_NOT_FOUND,
		    "no taskdeck home (set TASKDECK_HOME or HOME); "
		    "start the service with `taskdeck daemon start`");
	}
	info = xcalloc(1, sizeof *info);
	info->discovery_file = xstrdup(paths.discovery);
	paths_free(&paths);

	text = client_read_file(info->discovery_file, 64 * 1024, &errnum);
	if (text == NULL && errnum == ENOENT) {
		rc = client_fail(err, TD_SERVICE_NOT_FOUND,
		    "no taskdeck service is running (no %s); "
		    "start one with `taskdeck daemon start`", info->discovery_file);
	} else if (text == NULL) {
		rc = client_fail(err, TD_IO_ERROR, "cannot read %s: %s",
		    info->discovery_file, strerror(errnum));
	} else if (!client_parse_discovery(info, text)) {
		rc = client_fail(err, TD_SERVICE_NOT_FOUND,
		    "the discovery file %s is malformed; "
		    "restart the service with `taskdeck daemon start`",
		    info->discovery_file);
	} else if (kill((pid_t)info->pid, 0) != 0 && errno == ESRCH) {
		rc = client_fail(err, TD_SERVICE_NOT_FOUND,
		    "the taskdeck service of %s (pid %ld) is no longer running; "
		    "start one with `taskdeck daemon start`",
		    info->discovery_file, info->pid);
	}
	free(text);
	if (rc != TD_OK) {
		td_service_info_free(info);
		return rc;
	}
	*out = info;
	return TD_OK;
}

/* Reads the token file: 64 hex digits and an optional newline. */
static enum td_code
client_read_token(const char *path, char **out, struct td_error *err)
{
	int errnum = 0;
	char *text = client_read_file(path, 256, &errnum);
	size_t n;

	if (text == NULL && errnum == ENOENT) {
		return client_fail(err, TD_SERVICE_NOT_FOUND,
		    "no token file at %s; start the service with "
		    "`taskdeck daemon start`", path);
	}
	if (text == NULL) {
		return client_fail(err, TD_IO_ERROR,
		    "cannot read the token file %s: %s", path, strerror(errnum));
	}
	n = strspn(text, "0123456789abcdefABCDEF");
	if (n != 64 || (text[n] != '\0' && strcmp(text + n, "\n") != 0)) {
		explicit_bzero(text, strlen(text));
		free(text);
		return client_fail(err, TD_IO_ERROR,
		    "the token file %s is malformed", path);
	}
	text[n] = '\0';
	*out = text;
	return TD_OK;
}

/* The token file named by discovery, else the home's. */
static enum td_code
client_home_token(const struct td_service_info *info, char **out,
    struct td_error *err)
{
	struct td_paths paths;
	enum td_code rc;

	if (info != NULL && info->token_file != NULL)
		return client_read_token(info->token_file, out, err);
	if (!paths_init(&paths)) {
		return client_fail(err, TD_SERVICE_NOT_FOUND,
		    "no token: set TASKDECK_TOKEN, TASKDECK_HOME or HOME");
	}
	rc = client_read_token(paths.token, out, err);
	paths_free(&paths);
	return rc;
}

/* An environment variable, NULL when unset or empty. */
static const char *
client_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

/* A token goes into a header: printable ASCII without spaces only. */
static bool
client_token_valid(const char *token)
{
	size_t n = strlen(token);

	if (n == 0 || n > 512)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (token[i] <= ' ' || token[i] > '~')
			return false;
	}
	return true;
}

/* Builds the client once the URL and token are known. */
static enum td_code
client_new(struct td_client **out, const char *url, const char *token,
    const struct td_connect_options *opts, struct td_error *err)
{
	struct td_client *c;
	size_t len = strlen(url);

	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "the service URL must start with http:// or https://");
	}
	if (!client_token_valid(token)) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "the token must be printable ASCII without spaces");
	}
	if (opts->request_timeout_ms < 0) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "request_timeout_ms must not be negative");
	}
	while (len > 0 && url[len - 1] == '/')
		len--;
	c = xcalloc(1, sizeof *c);
	c->base_url = xstrndup(url, len);
	c->auth_header = xasprintf("Authorization: Bearer %s", token);
	c->user_agent = xstrdup(opts->user_agent != NULL ? opts->user_agent :
	    "libtaskdeck/" TD_VERSION);
	c->timeout_ms = opts->request_timeout_ms > 0 ? opts->request_timeout_ms :
	    TD_DEFAULT_TIMEOUT_MS;
	pthread_mutex_init(&c->pool_lock, NULL);
	*out = c;
	return TD_OK;
}

enum td_code
td_connect(struct td_client **out, const struct td_connect_options *opts,
    struct td_error *err)
{
	static const struct td_connect_options defaults;
	struct td_service_info *info = NULL;
	const char *url, *token;
	char *file_token = NULL;
	enum td_code rc = TD_OK;

	*out = NULL;
	if (opts == NULL)
		opts = &defaults;
	pthread_once(&client_curl_once, client_curl_init);
	if (client_curl_status != CURLE_OK) {
		return client_fail(err, TD_CONNECTION_FAILED,
		    "libcurl could not be initialised");
	}
	url = opts->base_url != NULL ? opts->base_url : client_env("TASKDECK_URL");
	token = opts->token != NULL ? opts->token : client_env("TASKDECK_TOKEN");
	if (url == NULL) {
		rc = td_discover(&info, err);
		if (rc == TD_OK)
			url = info->base_url;
	}
	if (rc == TD_OK && token == NULL) {
		rc = client_home_token(info, &file_token, err);
		token = file_token;
	}
	if (rc == TD_OK)
		rc = client_new(out, url, token, opts, err);
	/* The service found by discovery is reached through its socket when it has one. */
	if (rc == TD_OK && info != NULL && info->socket != NULL)
		(*out)->unix_socket = xstrdup(info->socket);
	if (file_token != NULL) {
		explicit_bzero(file_token, strlen(file_token));
		free(file_token);
	}
	td_service_info_free(info);
	return rc;
}

/* Closes one pooled connection. */
static void
client_conn_free(struct client_conn *conn)
{
	if (conn->easy != NULL)
		curl_easy_cleanup(conn->easy);
	if (conn->multi != NULL)
		curl_multi_cleanup(conn->multi);
	free(conn);
}

void
td_client_free(struct td_client *c)
{
	if (c == NULL)
		return;
	if (c->events_stop != NULL)
		c->events_stop(c);
	for (size_t i = 0; i < c->idle_count; i++)
		client_conn_free(c->idle[i]);
	pthread_mutex_destroy(&c->pool_lock);
	explicit_bzero(c->auth_header, strlen(c->auth_header));
	free(c->auth_header);
	free(c->base_url);
	free(c->unix_socket);
	free(c->user_agent);
	free(c);
}

const char *
td_client_base_url(const struct td_client *c)
{
	return c->base_url;
}

/* An idle connection from the pool, or a new one; NULL when curl cannot. */
static struct client_conn *
client_conn_get(struct td_client *c)
{
	struct client_conn *conn = NULL;

	pthread_mutex_lock(&c->pool_lock);
	if (c->idle_count > 0)
		conn = c->idle[--c->idle_count];
	pthread_mutex_unlock(&c->pool_lock);
	if (conn != NULL)
		return conn;
	conn = xcalloc(1, sizeof *conn);
	conn->multi = curl_multi_init();
	conn->easy = curl_easy_init();
	if (conn->multi == NULL || conn->easy == NULL) {
		client_conn_free(conn);
		return NULL;
	}
	return conn;
}

/* Returns a connection to the pool, or closes it when the pool is full. */
static void
client_conn_put(struct td_client *c, struct client_conn *conn)
{
	pthread_mutex_lock(&c->pool_lock);
	if (c->idle_count < CLIENT_POOL_MAX) {
		c->idle[c->idle_count++] = conn;
		conn = NULL;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (conn != NULL)
		client_conn_free(conn);
}

/* True when a streamed transfer hands its body to the stream's hooks. */
static bool
client_streaming(const struct client_transfer *t)
{
	return t->stream != NULL && t->resp->status >= 200 && t->resp->status <= 299;
}

/* Response body writer: the stream's hook, else the buffer with its cap. */
static size_t
client_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct client_transfer *t = arg;
	size_t n = size * nmemb;

	if (client_streaming(t)) {
		if (!t->started) {
			t->started = true;
			t->stopped = t->stream->on_start(t->stream->arg, t->resp->status);
		}
		if (t->stopped == TD_OK && n > 0)
			t->stopped = t->stream->on_data(t->stream->arg, data, n);
		return t->stopped == TD_OK ? n : 0;
	}
	if (!buf_append(&t->resp->body, data, n)) {
		t->overflow = true;
		return 0;
	}
	return n;
}

const char *
client_header_value(const char *line, size_t len, const char *name,
    size_t *vlen)
{
	size_t n = strlen(name);
	const char *v;

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return NULL;
	v = line + n + 1;
	while (v < line + len && (*v == ' ' || *v == '\t'))
		v++;
	*vlen = (size_t)(line + len - v);
	return v;
}

/*
 * Keeps the status, X-Request-Id and Link of the final answer, and hands the
 * header lines of a streamed answer to its hooks.
 */
static size_t
client_on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct client_transfer *t = arg;
	struct client_response *resp = t->resp;
	size_t n = size * nmemb, len = n, vlen;
	const char *v;

	while (len > 0 && (data[len - 1] == '\r' || data[len - 1] == '\n'))
		len--;
	if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		v = memchr(data, ' ', len);
		resp->status = 0;
		for (v = v != NULL ? v + 1 : data + len; v < data + len &&
		    *v >= '0' && *v <= '9' && resp->status < 1000; v++)
			resp->status = resp->status * 10 + (*v - '0');
		resp->request_id[0] = '\0';
		free(resp->link);
		resp->link = NULL;
		return n;
	}
	if (client_streaming(t)) {
		if (len > 0)
			t->stream->on_header(t->stream->arg, data, len);
		else if (!t->started) {
			t->started = true;
			t->stopped = t->stream->on_start(t->stream->arg, resp->status);
			if (t->stopped != TD_OK)
				return 0;
		}
	}
	if ((v = client_header_value(data, len, "X-Request-Id", &vlen))) {
		if (vlen < sizeof resp->request_id) {
			memcpy(resp->request_id, v, vlen);
			resp->request_id[vlen] = '\0';
		}
	} else if ((v = client_header_value(data, len, "Link", &vlen))) {
		free(resp->link);
		resp->link = vlen <= 4096 ? xstrndup(v, vlen) : NULL;
	}
	return n;
}

/*
 * Drives one transfer; false when cancel was triggered first.  The cancel
 * token's pipe is polled with curl's sockets so a trigger wakes us at once.
 */
static bool
client_perform(struct client_conn *conn, struct td_cancel *cancel,
    CURLcode *result)
{
	struct curl_waitfd wake = { 0 };
	bool cancelled = false;
	int running = 1, left;
	CURLMsg *msg;

	if (cancel != NULL) {
		wake.fd = cancel->fds[0];
		wake.events = CURL_WAIT_POLLIN;
	}
	*result = CURLE_FAILED_INIT;
	curl_multi_add_handle(conn->multi, conn->easy);
	for (;;) {
		if (curl_multi_perform(conn->multi, &running) != CURLM_OK ||
		    running == 0)
			break;
		if (td_cancel_is_triggered(cancel)) {
			cancelled = true;
			break;
		}
		if (curl_multi_poll(conn->multi, &wake, cancel != NULL ? 1 : 0,
		    1000, NULL) != CURLM_OK)
			break;
	}
	while ((msg = curl_multi_info_read(conn->multi, &left)) != NULL) {
		if (msg->msg == CURLMSG_DONE)
			*result = msg->data.result;
	}
	curl_multi_remove_handle(conn->multi, conn->easy);
	return !cancelled;
}

/* An Idempotency-Key goes into a header: 1 to 255 printable characters. */
static bool
client_idempotency_key_valid(const char *key)
{
	size_t n = strlen(key);

	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (key[i] < ' ' || key[i] > '~')
			return false;
	}
	return true;
}

/* Maps a failed transfer to a code and a message. */
static enum td_code
client_transport_error(struct td_client *c, CURLcode cc, bool overflow,
    long timeout_ms, const char *detail, struct td_error *err)
{
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return client_fail(err, TD_TIMEOUT,
		    "no complete answer from %s within %ld ms", c->base_url,
		    timeout_ms);
	case CURLE_WRITE_ERROR:
		if (overflow) {
			return client_fail(err, TD_INVALID_RESPONSE,
			    "the answer from %s is larger than %u MiB",
			    c->base_url, CLIENT_MAX_BODY >> 20);
		}
		break;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return client_fail(err, TD_INVALID_RESPONSE,
		    "%s did not answer in HTTP: %s", c->base_url, detail);
	default:
		break;
	}
	return client_fail(err, TD_CONNECTION_FAILED,
	    "could not reach the taskdeck service at %s: %s", c->base_url, detail);
}

/*
 * Sends one request and collects the answer, whatever its status; a 2xx body
 * goes to stream's hooks when stream is not NULL.
 */
static enum td_code
client_send(struct td_client *c, const char *method, const char *path,
    const char *body, const struct td_request_options *opts,
    const struct client_stream *stream, struct client_response *resp,
    struct td_error *err)
{
	struct client_transfer t = { .resp = resp, .stream = stream };
	struct td_cancel *cancel = opts != NULL ? opts->cancel : NULL;
	const char *key = opts != NULL ? opts->idempotency_key : NULL;
	long timeout_ms = c->timeout_ms;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL;
	struct client_conn *conn;
	char *url, *key_header = NULL;
	enum td_code rc = TD_OK;
	CURLcode cc;

	if (opts != NULL && opts->timeout_ms < 0) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "timeout_ms must not be negative");
	}
	if (opts != NULL && opts->timeout_ms > 0)
		timeout_ms = opts->timeout_ms;
	if (key != NULL && !client_idempotency_key_valid(key)) {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "an idempotency key is 1 to 255 printable ASCII characters");
	}
	if (td_cancel_is_triggered(cancel))
		return client_fail(err, TD_CANCELLED, "the request was cancelled");
	conn = client_conn_get(c);
	if (conn == NULL) {
		return client_fail(err, TD_CONNECTION_FAILED,
		    "libcurl could not make a handle");
	}

	headers = curl_slist_append(headers, c->auth_header);
	headers = curl_slist_append(headers, stream != NULL ? "Accept: */*" :
	    "Accept: application/json");
	headers = curl_slist_append(headers, "Expect:");
	for (size_t i = 0; stream != NULL && stream->headers != NULL &&
	    stream->headers[i] != NULL; i++)
		headers = curl_slist_append(headers, stream->headers[i]);
	if (body != NULL)
		headers = curl_slist_append(headers, "Content-Type: application/json");
	if (key != NULL) {
		key_header = xasprintf("Idempotency-Key: %s", key);
		headers = curl_slist_append(headers, key_header);
	}
	url = xasprintf("%s%s", c->base_url, path);

	/* Pooled handles come back reset. */
	curl_easy_setopt(conn->easy, CURLOPT_URL, url);
	curl_easy_setopt(conn->easy, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
	curl_easy_setopt(conn->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(conn->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(conn->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(conn->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(conn->easy, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(conn->easy, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(conn->easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(conn->easy, CURLOPT_WRITEFUNCTION, client_on_body);
	curl_easy_setopt(conn->easy, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(conn->easy, CURLOPT_HEADERFUNCTION, client_on_header);
	curl_easy_setopt(conn->easy, CURLOPT_HEADERDATA, &t);
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(conn->easy, CURLOPT_HTTPGET, 1L);
	else
		curl_easy_setopt(conn->easy, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL) {
		curl_easy_setopt(conn->easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(conn->easy, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)strlen(body));
	}

	if (!client_perform(conn, cancel, &cc))
		rc = client_fail(err, TD_CANCELLED, "the request was cancelled");
	else if (t.stopped != TD_OK)
		rc = t.stopped;		/* the hook filled err */
	else if (cc != CURLE_OK) {
		rc = client_transport_error(c, cc, t.overflow, timeout_ms,
		    errbuf[0] != '\0' ? errbuf : curl_easy_strerror(cc), err);
	} else
		curl_easy_getinfo(conn->easy, CURLINFO_RESPONSE_CODE, &resp->status);

	if (rc != TD_OK && stream != NULL && resp->status > 0)
		client_fail_answer(err, resp, rc);
	/* Reset: the handle must not keep pointers to what is freed below. */
	curl_easy_reset(conn->easy);
	client_conn_put(c, conn);
	curl_slist_free_all(headers);
	free(key_header);
	free(url);
	return rc;
}

/* The first code of the list with an HTTP status, for bodiless errors. */
static enum td_code
client_code_for_status(long status)
{
	for (int i = TD_OK + 1; i < TD_CODE_COUNT; i++) {
		if (errcode_http_status((enum td_code)i) == status)
			return (enum td_code)i;
	}
	return TD_UNKNOWN;
}

/* Fills err from a non-2xx answer and its error body. */
static enum td_code
client_service_error(const struct client_response *resp, struct td_error *err)
{
	cJSON *doc = json_parse(resp->body.data, resp->body.len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const char *name = json_get_string(e, "code");
	const char *message = json_get_string(e, "message");
	enum td_code code;

	code = name != NULL ? errcode_from_name(name) :
	    client_code_for_status(resp->status);
	if (code == TD_OK)
		code = TD_UNKNOWN;
	if (err != NULL) {
		memset(err, 0, sizeof *err);
		err->code = code;
		snprintf(err->code_name, sizeof err->code_name, "%s",
		    name != NULL ? name : errcode_name(code));
		if (message != NULL)
			snprintf(err->message, sizeof err->message, "%s", message);
		else {
			snprintf(err->message, sizeof err->message,
			    "the service answered HTTP %ld", resp->status);
		}
	}
	cJSON_Delete(doc);
	return client_fail_answer(err, resp, code);
}

enum td_code
client_malformed(const struct client_response *resp, const char *what,
    struct td_error *err)
{
	client_fail(err, TD_INVALID_RESPONSE,
	    "the service sent a malformed %s", what);
	return client_fail_answer(err, resp, TD_INVALID_RESPONSE);
}

enum td_code
client_call(struct td_client *c, const char *method, const char *path,
    const char *body, bool want_array, const struct td_request_options *opts,
    struct client_response *resp, struct td_error *err)
{
	enum td_code rc;

	memset(resp, 0, sizeof *resp);
	buf_init(&resp->body, CLIENT_MAX_BODY);
	rc = client_send(c, method, path, body, opts, NULL, resp, err);
	if (rc != TD_OK)
		return rc;
	if (resp->status < 200 || resp->status > 299)
		return client_service_error(resp, err);
	resp->json = json_parse(resp->body.data, resp->body.len);
	if (want_array ? !cJSON_IsArray(resp->json) : !cJSON_IsObject(resp->json))
		return client_malformed(resp, want_array ? "list" : "object", err);
	return TD_OK;
}

enum td_code
client_stream_get(struct td_client *c, const char *path,
    const struct client_stream *stream, const struct td_request_options *opts,
    struct client_response *resp, struct td_error *err)
{
	enum td_code rc;

	memset(resp, 0, sizeof *resp);
	buf_init(&resp->body, CLIENT_MAX_ERROR_BODY);
	rc = client_send(c, "GET", path, NULL, opts, stream, resp, err);
	if (rc == TD_OK && (resp->status < 200 || resp->status > 299))
		rc = client_service_error(resp, err);
	return rc;
}

bool
client_cancel_sleep(struct td_cancel *cancel, long ms)
{
	struct pollfd pfd = { .fd = cancel != NULL ? cancel->fds[0] : -1,
	    .events = POLLIN };
	int64_t until = clock_mono_ms() + ms, left;

	while (!td_cancel_is_triggered(cancel) &&
	    (left = until - clock_mono_ms()) > 0) {
		if (poll(&pfd, 1, (int)(left < 1000 ? left : 1000)) < 0 &&
		    errno != EINTR)
			break;
	}
	return !td_cancel_is_triggered(cancel);
}

void
client_response_free(struct client_response *resp)
{
	buf_free(&resp->body);
	free(resp->link);
	cJSON_Delete(resp->json);
	memset(resp, 0, sizeof *resp);
}

enum td_code
td_request_json(struct td_client *c, const char *method, const char *path,
    const char *body, const struct td_request_options *opts, char **out_json,
    struct td_error *err)
{
	struct client_response resp;
	enum td_code rc;

	*out_json = NULL;
	if (method == NULL || path == NULL || path[0] != '/') {
		return client_fail(err, TD_INVALID_ARGUMENT,
		    "a method and a path starting with / are required");
	}
	memset(&resp, 0, sizeof resp);
	buf_init(&resp.body, CLIENT_MAX_BODY);
	rc = client_send(c, method, path, body, opts, NULL, &resp, err);
	if (rc == TD_OK && (resp.status < 200 || resp.status > 299))
		rc = client_service_error(&resp, err);
	if (rc == TD_OK)
		*out_json = buf_steal(&resp.body);
	client_response_free(&resp);
	return rc;
}

/* Appends s to b, percent-encoding all but [A-Za-z0-9_-]. */
static void
client_escape(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		char enc[3] = { '%', hex[ch >> 4], hex[ch & 15] };

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')
			buf_append(b, s, 1);
		else
			buf_append(b, enc, sizeof enc);
	}
}

char *
client_item_path(const char *collection, const char *id, const char *suffix)
{
	struct buf b;

	buf_init(&b, 0);
	buf_printf(&b, "/api/v1/%s/", collection);
	client_escape(&b, id);
	buf_appends(&b, suffix);
	return buf_steal(&b);
}

char *
client_query_path(const char *path, long limit, const char *cursor)
{
	struct buf b;
	char sep = '?';

	buf_init(&b, 0);
	buf_appends(&b, path);
	if (limit > 0) {
		buf_printf(&b, "%climit=%ld", sep, limit);
		sep = '&';
	}
	if (cursor != NULL) {
		buf_printf(&b, "%ccursor=", sep);
		client_escape(&b, cursor);
	}
	return buf_steal(&b);
}

char *
client_query_add(char *path, const char *name, const char *value)
{
	struct buf b;

	if (value == NULL)
		return path;
	buf_init(&b, 0);
	buf_printf(&b, "%s%c%s=", path, strchr(path, '?') != NULL ? '&' : '?', name);
	client_escape(&b, value);
	free(path);
	return buf_steal(&b);
}

/* Value of one hex digit, or -1. */
static int
client_hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decodes n bytes of s. */
static char *
client_unescape(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;

	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < n &&
		    (hi = client_hex_value(s[i + 1])) >= 0 &&
		    (lo = client_hex_value(s[i + 2])) >= 0) {
			*o++ = (char)(hi << 4 | lo);
			i += 2;
		} else
			*o++ = s[i];
	}
	*o = '\0';
	return out;
}

char *
client_next_cursor(const char *link)
{
	const char *p = link;

	/* Link: <url>; rel="next", <url>; rel="prev" */
	while (p != NULL && (p = strchr(p, '<')) != NULL) {
		const char *end = strchr(p, '>');
		const char *next = end != NULL ? strchr(end, ',') : NULL;
		const char *rel = end != NULL ? strstr(end, "rel=\"next\"") : NULL;
		const char *q;

		if (end == NULL)
			break;
		if (rel != NULL && (next == NULL || rel < next)) {
			for (q = p + 1; q < end; q++) {
				if ((*q == '?' || *q == '&') &&
				    strncmp(q + 1, "cursor=", 7) == 0) {
					const char *v = q + 8;
					size_t n = strcspn(v, "&>");

					return client_unescape(v, n);
				}
			}
		}
		p = next;
	}
	return NULL;
}

cJSON *
client_parse_object(const char *text, const char *what, struct td_error *err)
{
	cJSON *doc = text != NULL ? json_parse(text, strlen(text)) : NULL;

	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		client_fail(err, TD_INVALID_ARGUMENT, "%s must be a JSON object", what);
		return NULL;
	}
	return doc;
}

char *
client_string(const cJSON *obj, const char *key)
{
	return xstrdup_or_null(json_get_string(obj, key));
}

char *
client_string_or(const cJSON *obj, const char *key, const char *fallback)
{
	const char *v = json_get_string(obj, key);

	return xstrdup(v != NULL ? v : fallback);
}
