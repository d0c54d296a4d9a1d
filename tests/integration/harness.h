/*
 * Integration-test harness: starts a real taskdeckd on an ephemeral loopback
 * port with its own TASKDECK_HOME, and speaks raw HTTP to it with libcurl.
 * The binaries are found through TD_BUILDDIR (set by `make check`).
 */
#ifndef TD_TEST_HARNESS_H
#define TD_TEST_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "json.h"		/* json_get_string() and the other readers of src/common */

struct svc {
	pid_t pid;
	char home[256];		/* TASKDECK_HOME, a fresh directory under /tmp */
	char url[128];		/* base URL from the discovery file, no trailing slash */
	char token[80];
	int port;
	const char *args[8];	/* extra taskdeckd arguments, NULL-terminated */
};

/*
 * The service of a suite whose tests share one (Criterion runs each test in a
 * process of its own): for TestSuite's .init and .fini.  svc_setup starts it,
 * svc_setup_env also exports its environment (svc_export_env), svc_teardown
 * destroys it.  A suite with more to set up calls svc_start(&svc) itself.
 */
extern struct svc svc;
void svc_setup(void);
void svc_setup_env(void);
void svc_teardown(void);

/* Path of a built program ("taskdeckd", "taskdeck") in TD_BUILDDIR. */
const char *harness_bin(const char *name);

/* Creates a fresh home and starts the service in it; asserts readiness. */
void svc_start(struct svc *s);
/* svc_start with extra taskdeckd arguments (NULL-terminated, at most 7). */
void svc_start_with(struct svc *s, const char *const *args);
/* Starts the service again in s->home (after svc_stop or svc_kill). */
void svc_restart(struct svc *s);
/* SIGTERM; asserts a clean exit 0 and that the discovery file is gone. */
void svc_stop(struct svc *s);
/* SIGKILL, no cleanup by the service. */
void svc_kill(struct svc *s);
/* svc_stop when running, then removes the home directory. */
void svc_destroy(struct svc *s);
/* Exports TASKDECK_HOME for s so that td_connect() and the CLI find it. */
void svc_export_env(const struct svc *s);

struct http_resp {
	long status;
	char *body;		/* NUL-terminated, may be "" */
	char *headers;		/* raw header block of the final response */
	cJSON *json;		/* parsed body, or NULL */
};

/*
 * One request.  extra is a NULL-terminated list of "Name: value" header lines
 * (may be NULL).  with_token adds "Authorization: Bearer <token>".
 */
struct http_resp http_req(const struct svc *s, const char *method, const char *path,
    const char *body, const char *const *extra, bool with_token);
/* Value of a response header (case-insensitive name), malloc'd, or NULL. */
char *http_header(const struct http_resp *r, const char *name);
/* The error code of an error body, or NULL. */
const char *http_error_code(const struct http_resp *r);
void http_resp_free(struct http_resp *r);

/* The whole of a file, NUL-terminated ("" when empty), *len its size (len may be NULL); NULL when it cannot be opened. */
char *harness_slurp(const char *path, size_t *len);
/*
 * A loopback port where a connection is refused, whatever the machine runs:
 * bound here and never listened on, and held for the test process's life so
 * that nothing else takes it (no well-known port assumed closed).
 */
int harness_closed_port(void);

/* Runs a command line with the environment of s exported; captures stdout. */
int run_capture(const struct svc *s, char **out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Makes a fresh, empty home for s without starting the service, so that a
 * test can put files (settings.json) there first; then svc_restart(s).
 */
void svc_prepare_home(struct svc *s);
/* Writes text to name in s->home (mode 0600). */
void svc_write_file(const struct svc *s, const char *name, const char *text);
/*
 * Sets runs.<key> to value in the settings.json of s->home (which must exist);
 * it applies from the service's next start.
 */
void svc_set_run_setting(const struct svc *s, const char *key, int value);
/*
 * Polls GET /api/v1/runs/:id until the run is final (completed, failed or
 * cancelled); the run, or NULL after timeout_ms.  cJSON_Delete() it.
 */
cJSON *run_wait_final(const struct svc *s, const char *id, int timeout_ms);

/*
 * The full-disk rig (tests/integration/fulldisk.sh): fills the file system of
 * dir with one file, dir/.fill, until not one byte more fits; returns its path.
 * harness_free_disk removes it and frees the path.
 */
char *harness_fill_disk(const char *dir);
void harness_free_disk(char *path);

/*
 * Shared helpers of the HTTP tests.  Each failing assertion names the request
 * (method and path, or the body sent), the status and the body answered.
 */
/* http_req with the token and no extra headers. */
struct http_resp http_api(const struct svc *s, const char *method, const char *path,
    const char *body);
/* GET the path made from fmt with the token; asserts 200; the parsed body (cJSON_Delete it). */
cJSON *http_get_json(const struct svc *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* POST /api/v1/projects {"name":name}; asserts 201; the project id (malloc'd). */
char *http_project_new(const struct svc *s, const char *name);
/* POST /api/v1/runs with the body made from fmt; asserts 201; the run (cJSON_Delete it). */
cJSON *http_run_start(const struct svc *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * A replay run of transcript model in project with prompt and extra members
 * (",\"k\":v..." or ""): http_run_start of
 * {"project":..,"prompt":..,"config":{"provider":"replay","model":..}EXTRA}.
 */
cJSON *http_replay_run(const struct svc *s, const char *prompt, const char *project,
    const char *model, const char *extra);
/*
 * run_wait_final, asserting the run is final within timeout_ms and, when
 * status is not NULL, that it ended with status; the run (cJSON_Delete it).
 */
cJSON *run_final_within(const struct svc *s, const char *id, const char *status,
    int timeout_ms);
/*
 * Polls the run's stored history (GET /runs/:id/events) until a run.output
 * delta holds needle; asserts that one does within timeout_ms.
 */
void run_output_wait(const struct svc *s, const char *run_id, int timeout_ms,
    const char *needle);
/*
 * Polls GET /sessions/:id/plan until its version awaits approval; asserts
 * that it does within timeout_ms (else names the last status and body); the plan.
 */
cJSON *plan_wait_pending(const struct svc *s, const char *session, long version,
    int timeout_ms);
/*
 * Polls the run's pending permission prompts until there is one (other than
 * not_id when that is not NULL); asserts that one comes within timeout_ms and
 * that there are never two; the prompt.
 */
cJSON *prompt_wait_pending(const struct svc *s, const char *run_id, const char *not_id,
    int timeout_ms);
/* The value of the "key: value" line of text (a CLI's output), or NULL (free it). */
char *text_kv(const char *text, const char *key);
/* Asserts that text has a "key: want" line; the message shows text. */
void assert_text_kv(const char *text, const char *key, const char *want);
/* text (a CLI's --json output) parsed; asserts that it is one JSON document. */
cJSON *json_doc(const char *text);
/* obj[key]; asserts that it is a string. */
const char *json_str(const cJSON *obj, const char *key);
/* obj[key] as a string, or "(none)", so that a string assertion reports instead of crashing. */
const char *json_str_or_none(const cJSON *obj, const char *key);
/* obj[key] as a number, or -1 when it is not one. */
double json_num(const cJSON *obj, const char *key);

struct td_client;

/* CLOCK_MONOTONIC in milliseconds. */
long mono_ms(void);
/* A libtaskdeck client of the service the environment names (svc_export_env); asserts. */
struct td_client *client_connect(void);
/* Creates a project named name through c and returns its id (malloc'd); asserts. */
char *client_new_project(struct td_client *c, const char *name);

#endif
