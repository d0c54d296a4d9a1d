/*
 * libtaskdeck: the C client core of the taskdeck local agent-task service.
 *
 * Conventions:
 * - Every function that can fail returns an enum td_code (TD_OK on success)
 *   and hands its results out through pointers; on failure no output is set
 *   and *err (when err is not NULL) says why.
 * - Every string and struct handed out is owned by the caller and freed with
 *   the *_free() function named next to it; each *_free() accepts NULL.
 * - Strings passed in are only read; the library keeps its own copies.
 * - One struct td_client may be used from many threads at once.
 * - Nothing the library returns or reports ever contains the token.
 *
 * See docs/client.md for a walk-through and an example program.
 */
#ifndef TASKDECK_H
#define TASKDECK_H

#include <stdbool.h>
#include <stddef.h>

#include "td-errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TD_API __attribute__((visibility("default")))

/* Default whole-request deadline, in milliseconds. */
#define TD_DEFAULT_TIMEOUT_MS 30000

struct td_client;	/* opaque connection to one service */
struct td_cancel;	/* opaque cancellation token */

/* Why a call failed.  Filled on every failure; never holds the token. */
struct td_error {
	enum td_code code;
	char code_name[64];	/* wire name ("stale_write"), kept even when unknown to us */
	long http_status;	/* 0 when no HTTP answer arrived */
	char message[512];	/* for a person */
	char request_id[64];	/* X-Request-Id of the answer, or "" */
};

struct td_connect_options {
	const char *base_url;	/* NULL: TASKDECK_URL, else discovery */
	const char *token;	/* NULL: TASKDECK_TOKEN, else the token file */
	long request_timeout_ms; /* 0: TD_DEFAULT_TIMEOUT_MS */
	const char *user_agent;	/* NULL: "libtaskdeck/VERSION" */
};

/* Per-call options; pass NULL for the defaults. */
struct td_request_options {
	long timeout_ms;		/* 0: the client's request_timeout_ms */
	const char *idempotency_key;	/* td_create_project only; NULL for none */
	struct td_cancel *cancel;	/* NULL: not cancellable */
};

/* What the discovery file says about the running service. */
struct td_service_info {
	char *base_url;
	long pid;
	char *version;		/* NULL members were missing from the file */
	char *started_at;
	char *stream_id;
	char *token_file;
	char *discovery_file;	/* where the file is */
	char *json;		/* the file's text */
};

struct td_project {
	char *id;
	char *name;
	char *description;	/* "" when empty */
	char *context;		/* "" when empty */
	char *metadata_json;	/* the metadata object as JSON text, "{}" when empty */
	char *created_at;	/* RFC 3339, or NULL when the service sent none */
	char *updated_at;
	char *json;		/* the project as the service sent it */
};

struct td_project_list {
	struct td_project *items;
	size_t count;
	char *next_cursor;	/* pass to the next td_list_projects; NULL on the last page */
	char *json;		/* the whole array as the service sent it */
};

/* Fields of a new project; NULL members are left out. */
struct td_new_project {
	const char *name;		/* required */
	const char *description;
	const char *context;
	const char *metadata_json;	/* a JSON object */
};

/* Defaults for new sessions of one project; NULL members are unset. */
struct td_session_defaults {
	char *project_id;
	char *updated_at;	/* send back as expected_updated_at */
	char *framework;
	char *provider;
	char *model;
	char *effort;
	char *permission_profile;
	char *json;
};

struct td_agent_routing {
	char *framework;
	struct {
		bool enabled;
		char *framework;	/* NULL members are unset */
		char *provider;
		char *model;
	} reviewer;
	struct {
		bool enabled;
		char *provider;
		char *model;
		int max_concurrent;
	} subagent;
	char *updated_at;
	char *json;
};

struct td_doctor_check {
	char *id;
	char *status;		/* "ok", "warn" or "fail" */
	char *message;
	char *next_action;	/* NULL when none */
};

struct td_doctor_report {
	bool ready;
	char *version;
	struct td_doctor_check *checks;
	size_t check_count;
	char **next_actions;
	size_t next_action_count;
	char *json;
};

/* The library version, "0.1.0"; static. */
TD_API const char *td_version(void);
/* The wire name of a code ("not_found"); static. */
TD_API const char *td_code_string(enum td_code code);

/*
 * Resolves the service and makes a client; caller frees with
 * td_client_free.  The base URL comes from opts, else TASKDECK_URL, else the
 * discovery file of the taskdeck home (TASKDECK_HOME or XDG); the token from
 * opts, else TASKDECK_TOKEN, else the token file.  No request is sent: an
 * unreachable URL shows up on the first call as TD_CONNECTION_FAILED.  With
 * no service running: TD_SERVICE_NOT_FOUND.  opts may be NULL.
 */
TD_API enum td_code td_connect(struct td_client **out,
    const struct td_connect_options *opts, struct td_error *err);
/*
 * Reads the discovery file of the taskdeck home (TASKDECK_HOME or XDG) and
 * checks that its process is alive; ignores TASKDECK_URL.  Caller frees *out
 * with td_service_info_free.  TD_SERVICE_NOT_FOUND when no service runs.
 */
TD_API enum td_code td_discover(struct td_service_info **out, struct td_error *err);
TD_API void td_service_info_free(struct td_service_info *info);
/* Closes the client's connections; no call on it may still be running. */
TD_API void td_client_free(struct td_client *client);
/* The service's base URL ("http://127.0.0.1:PORT"); owned by client. */
TD_API const char *td_client_base_url(const struct td_client *client);

/*
 * A cancellation token for td_request_options.cancel; caller frees with
 * td_cancel_free once no call uses it.  NULL when out of file descriptors.
 * td_cancel_trigger may be called from any thread and from a signal
 * handler; every call using the token then ends with TD_CANCELLED at once.
 * A triggered token stays triggered.
 */
TD_API struct td_cancel *td_cancel_new(void);
TD_API void td_cancel_trigger(struct td_cancel *cancel);
TD_API bool td_cancel_is_triggered(const struct td_cancel *cancel);
TD_API void td_cancel_free(struct td_cancel *cancel);

/*
 * Any request: method ("GET", "POST", "PATCH", ...), path under the base URL
 * ("/api/v1/doctor"), body JSON text or NULL.  *out_json is the response
 * body; caller frees it with free().
 */
TD_API enum td_code td_request_json(struct td_client *client, const char *method,
    const char *path, const char *body, const struct td_request_options *opts,
    char **out_json, struct td_error *err);

/*
 * One page of projects, newest first.  limit 0 means the service's default
 * (100); cursor NULL means the first page.  Caller frees *out with
 * td_project_list_free.
 */
TD_API enum td_code td_list_projects(struct td_client *client, long limit,
    const char *cursor, const struct td_request_options *opts,
    struct td_project_list **out, struct td_error *err);
/* Caller frees *out with td_project_free. */
TD_API enum td_code td_get_project(struct td_client *client, const char *id,
    const struct td_request_options *opts, struct td_project **out,
    struct td_error *err);
/* opts->idempotency_key makes a retry safe.  Caller frees *out with td_project_free. */
TD_API enum td_code td_create_project(struct td_client *client,
    const struct td_new_project *project, const struct td_request_options *opts,
    struct td_project **out, struct td_error *err);
/*
 * patch_json is a JSON merge patch (RFC 7396) of name, description, context
 * and metadata.  Caller frees *out with td_project_free.
 */
TD_API enum td_code td_update_project(struct td_client *client, const char *id,
    const char *patch_json, const struct td_request_options *opts,
    struct td_project **out, struct td_error *err);
TD_API void td_project_free(struct td_project *project);
TD_API void td_project_list_free(struct td_project_list *list);

/* Caller frees *out with td_session_defaults_free. */
TD_API enum td_code td_get_session_defaults(struct td_client *client,
    const char *project_id, const struct td_request_options *opts,
    struct td_session_defaults **out, struct td_error *err);
/*
 * expected_updated_at is the updated_at last read; when another write came
 * in between, TD_STALE_WRITE.  patch_json is a merge patch of the defaults
 * (a member set to null clears it).  Caller frees *out with
 * td_session_defaults_free.
 */
TD_API enum td_code td_update_session_defaults(struct td_client *client,
    const char *project_id, const char *expected_updated_at,
    const char *patch_json, const struct td_request_options *opts,
    struct td_session_defaults **out, struct td_error *err);
TD_API void td_session_defaults_free(struct td_session_defaults *defaults);

/* Caller frees *out with td_agent_routing_free. */
TD_API enum td_code td_get_agent_routing(struct td_client *client,
    const struct td_request_options *opts, struct td_agent_routing **out,
    struct td_error *err);
/* patch_json is a merge patch of the routing.  Caller frees *out with td_agent_routing_free. */
TD_API enum td_code td_update_agent_routing(struct td_client *client,
    const char *patch_json, const struct td_request_options *opts,
    struct td_agent_routing **out, struct td_error *err);
TD_API void td_agent_routing_free(struct td_agent_routing *routing);

/* Caller frees *out with td_doctor_report_free. */
TD_API enum td_code td_doctor(struct td_client *client,
    const struct td_request_options *opts, struct td_doctor_report **out,
    struct td_error *err);
TD_API void td_doctor_report_free(struct td_doctor_report *report);

#ifdef __cplusplus
}
#endif

#endif
