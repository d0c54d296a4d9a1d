/* The state of one running taskdeckd, shared by the HTTP layer and the routes. */
#ifndef TD_SERVICE_H
#define TD_SERVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "paths.h"

#define TD_TOKEN_HEX 64

struct store;
struct idem;
struct cache;
struct http_server;
struct settings;
struct supervisor;
struct events;
struct secrets;

struct service {
	struct td_paths paths;
	struct store *store;
	struct idem *idem;
	struct cache *cache;	/* rendered resources by id (cache.h) */
	struct http_server *http;
	struct settings *settings;	/* settings.json, read once at start (settings.h) */
	struct supervisor *supervisor;	/* the agent processes of runs (supervisor.h) */
	struct events *events;		/* the event stream (events.h) */
	struct secrets *secrets;	/* the key of sealed credentials (secrets.h) */
	struct changes *changes;	/* workspace snapshots (changes.h) */
	mode_t user_umask;		/* the umask taskdeckd started with: its runs' (its own is 077) */
	struct notify *notify;		/* notify.command, or NULL (notify.h) */
	struct attempts *attempts;	/* the attempts' worker (attempts.h), or NULL */
	struct oauth_signins *signins;	/* sign-ins waiting for their redirect (oauth.h) */
	/* What closes with a run, inside the transaction that ends it (runs.c calls
	 * it; start-up sets plans_run_ended), or NULL. */
	bool (*run_ended)(struct service *svc, const char *run_id, const char *status);
	/* Told after a session's delete has committed (session-delete.c calls it;
	 * start-up sets attempts_session_deleted), or NULL. */
	void (*session_deleted)(struct service *svc, const char *session_id);
	/* Told after a run has ended, its state committed, outside every lock, on
	 * the run's thread (supervisor-run.c calls it; start-up sets
	 * session_delete_run_finished), or NULL. */
	void (*run_finished)(struct service *svc, const char *run_id);
	char *agent_path;		/* the taskdeck-agent binary */
	char *replay_dir;		/* replay transcripts */
	const char *agent_found_by;	/* where agent_path came from (runtimes.h) */
	const char *replay_found_by;	/* where replay_dir came from */
	char token[TD_TOKEN_HEX + 1];
	char stream_id[33];
	char base_url[64];
	int port;
	int64_t started_at;
	atomic_bool shutting_down;
};

#endif
