/*
 * The start line (supervisor-int.h; docs/host-protocol.md): built from the
 * run (struct run), its project, its session's history or its checkpoint,
 * its provider, its sandbox, limits and connectors.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "buf.h"
#include "connectors.h"
#include "frameworks.h"
#include "json.h"
#include "log.h"
#include "resource.h"
#include "runs.h"
#include "sandbox.h"
#include "secrets.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "supervisor-int.h"
#include "xalloc.h"

/*
 * The start line's "sandbox": what the run's commands may reach (docs/agent.md).
 * Hidden: taskdeck's own directories, credential files, and the directories of
 * other sessions (the most recent SANDBOX_SESSIONS_MAX) unless they hold this run's
 * workspace.
 */
#define SANDBOX_SESSIONS_MAX 256
#define SANDBOX_HIDDEN_BYTES (256 * 1024)

static void
sandbox_message(struct service *svc, cJSON *msg, const char *workspace, bool network)
{
	cJSON *sb = cJSON_AddObjectToObject(msg, "sandbox"), *arr;
	char **hidden = sandbox_hidden_paths(&svc->paths, NULL);
	sqlite3_stmt *s;
	size_t bytes = 0;

	store_lock(svc->store);
	s = store_stmt(svc->store, "SELECT DISTINCT cwd FROM sessions WHERE cwd != ?1"
	    " ORDER BY updated_at DESC LIMIT ?2");
	sqlite3_bind_text(s, 1, workspace, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, SANDBOX_SESSIONS_MAX);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *cwd = resource_text(s, 0);
		size_t n = strlen(cwd);

		/* A session in a directory that holds this workspace: not hidden, it would
		 * hide the user's tools around the workspace too (docs/agent.md). */
		if (strncmp(workspace, cwd, n) == 0 && (workspace[n] == '/' || workspace[n] == '\0'))
			continue;
		hidden = sandbox_hidden_add(hidden, cwd);
	}
	sqlite3_reset(s);
	store_unlock(svc->store);
	cJSON_AddBoolToObject(sb, "network", network);
	cJSON_AddBoolToObject(sb, "allowUnconfined", settings_allow_unconfined(svc->settings));
	arr = cJSON_AddArrayToObject(sb, "hidden");
	/* A hidden directory holding the workspace stays hidden but for the workspace. */
	for (char **h = hidden; *h != NULL; h++) {
		if ((bytes += strlen(*h)) > SANDBOX_HIDDEN_BYTES) {
			log_warn("the sandbox hides only the first %d KiB of paths",
			    SANDBOX_HIDDEN_BYTES / 1024);
			break;
		}
		cJSON_AddItemToArray(arr, cJSON_CreateString(*h));
	}
	sandbox_hidden_free(hidden);
}

/* The start line's body: the run, its provider, project and session history. */
/* keycred: wipes the provider's API key in a start message before it is freed. */
void
start_message_wipe(cJSON *msg)
{
	cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(msg, "provider"), "apiKey");

	if (cJSON_IsString(k) && k->valuestring != NULL)
		sodium_memzero(k->valuestring, strlen(k->valuestring));
}

cJSON *
start_message_build(struct supervisor *sv, struct run_state *rs, char **why)
{
	struct service *svc = sv->svc;
	struct store *st = svc->store;
	cJSON *run, *msg, *r, *cfg, *p, *proj, *hist, *limits;
	const cJSON *provider;
	const char *key_env, *key = NULL;
	char *cred_key = NULL;
	sqlite3_stmt *s;
	bool network;

	store_lock(st);
	run = run_load(st, rs->ar->id);
	if (run == NULL) {
		store_unlock(st);
		*why = xstrdup("the run disappeared from the store");
		return NULL;
	}
	network = cJSON_IsTrue(cJSON_GetObjectItem(run, "network"));
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "start");
	r = cJSON_AddObjectToObject(msg, "run");
	cJSON_AddStringToObject(r, "id", rs->ar->id);
	for (const char *const *f = (const char *const[]){ "sessionId", "projectId", "prompt",
	    "permissionProfile", "turnIntent", NULL }; *f; f++)
		cJSON_AddItemToObject(r, *f, cJSON_Duplicate(cJSON_GetObjectItem(run, *f), true));
	cJSON_AddStringToObject(r, "workspace", json_get_string(run, "cwd"));
	snprintf(rs->session_id, sizeof rs->session_id, "%s", json_get_string(run, "sessionId"));
	snprintf(rs->project_id, sizeof rs->project_id, "%s", json_get_string(run, "projectId"));
	rs->workspace = xstrdup(json_get_string(run, "cwd"));
	cfg = cJSON_DetachItemFromObject(run, "config");
	cJSON_AddItemToObject(msg, "config", cfg);

	proj = cJSON_AddObjectToObject(msg, "project");
	s = store_stmt(st, "SELECT name, context FROM projects WHERE id = ?1");
	sqlite3_bind_text(s, 1, json_get_string(run, "projectId"), -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		cJSON_AddStringToObject(proj, "name", resource_text(s, 0));
		cJSON_AddStringToObject(proj, "context", resource_text(s, 1));
	}
	sqlite3_reset(s);

	hist = cJSON_AddArrayToObject(msg, "history");
	s = store_stmt(st, "SELECT prompt, output FROM (SELECT id, prompt, output FROM runs"
	    " WHERE session_id = ?1 AND id < ?2 AND status IN ('completed', 'failed', 'cancelled')"
	    " ORDER BY id DESC LIMIT ?3) ORDER BY id");
	sqlite3_bind_text(s, 1, rs->session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, rs->ar->id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, HISTORY_RUNS);
	while (sqlite3_step(s) == SQLITE_ROW) {
		cJSON *h = cJSON_CreateObject();
		char *out = strndup(resource_text(s, 1), HISTORY_OUTPUT_MAX);

		cJSON_AddStringToObject(h, "prompt", resource_text(s, 0));
		cJSON_AddStringToObject(h, "output", out);
		free(out);
		cJSON_AddItemToArray(hist, h);
	}
	sqlite3_reset(s);

	/*
	 * durable: a resumed run starts from its checkpoint (which holds the
	 * history already) with request ids above those of earlier processes.
	 */
	if (rs->ar->resume) {
		cJSON *cp = NULL;

		s = store_stmt(st, "SELECT checkpoint, resumes FROM runs WHERE id = ?1");
		sqlite3_bind_text(s, 1, rs->ar->id, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			if (sqlite3_column_type(s, 0) != SQLITE_NULL)
				cp = json_parse(resource_text(s, 0), strlen(resource_text(s, 0)));
			rs->resumes = sqlite3_column_int(s, 1);
		}
		sqlite3_reset(s);
		cJSON_AddNumberToObject(r, "requestIdBase", rs->resumes * REQUEST_ID_STRIDE);
		if (cJSON_IsObject(cp)) {
			const char *out = json_get_string(cp, "output");

			if (out != NULL)
				buf_append(&rs->output, out, strlen(out));
			cJSON_ReplaceItemInObject(msg, "history", cJSON_CreateArray());
			cJSON_AddItemToObject(msg, "checkpoint", cp);
		} else {
			cJSON_Delete(cp);
		}
	}
	store_unlock(st);
	cJSON_Delete(run);

	rs->external = frameworks_external(json_get_string(cfg, "framework"));
	/* An external framework: the CLI taskdeck-agent drives, probed again now. */
	if (frameworks_external(json_get_string(cfg, "framework"))) {
		cJSON *rt = frameworks_start_runtime(svc, json_get_string(cfg, "framework"), why);

		if (rt == NULL) {
			rs->runtime_unready = true;
			cJSON_Delete(msg);
			return NULL;
		}
		cJSON_AddItemToObject(msg, "runtime", rt);
	}

	provider = settings_provider(svc->settings, json_get_string(cfg, "provider"));
	if (provider == NULL) {
		cJSON_Delete(msg);
		*why = xstrdup("the provider of the run is no longer configured");
		return NULL;
	}
	p = cJSON_AddObjectToObject(msg, "provider");
	cJSON_AddStringToObject(p, "kind", json_get_string(provider, "kind"));
	if (json_get_string(provider, "baseUrl") != NULL)
		cJSON_AddStringToObject(p, "baseUrl", json_get_string(provider, "baseUrl"));
	else
		cJSON_AddNullToObject(p, "baseUrl");
	key_env = json_get_string(provider, "apiKeyEnv");
	if (key_env != NULL)
		key = settings_api_key(svc->settings, key_env);
	/* keycred: or the sealed credential the provider names, opened just now. */
	if (json_get_string(provider, "apiKeyCredential") != NULL) {
		char *sealed_why = NULL;

		if (!credential_provider_key(svc, json_get_string(provider, "apiKeyCredential"),
		    &cred_key, &sealed_why)) {
			*why = xasprintf("The API key of provider %s cannot be read: %s.",
			    json_get_string(cfg, "provider"), sealed_why);
			free(sealed_why);
			cJSON_Delete(msg);
			return NULL;
		}
		key = cred_key;
	}
	if (key != NULL)
		cJSON_AddStringToObject(p, "apiKey", key);
	else
		cJSON_AddNullToObject(p, "apiKey");
	secrets_plain_free(cred_key);
	cJSON_AddStringToObject(p, "replayDir", svc->replay_dir);

	sandbox_message(svc, msg, rs->workspace, network);

	limits = cJSON_AddObjectToObject(msg, "limits");
	cJSON_AddNumberToObject(limits, "maxTurns", settings_max_turns(svc->settings));
	cJSON_AddNumberToObject(limits, "commandTimeoutMs",
	    (double)settings_command_timeout_ms(svc->settings));
	cJSON_AddNumberToObject(limits, "maxToolOutputBytes", 65536);
	/* Enabled connectors, without secrets; kept to check secret.resolve against. */
	cJSON_AddNumberToObject(limits, "connectorTimeoutMs", CONNECTOR_RUN_TIMEOUT_MS);
	rs->connectors = connectors_for_run(svc);
	cJSON_AddItemToObject(msg, "connectors", cJSON_Duplicate(rs->connectors, true));
	return msg;
}

/* Drops the history, then the project context, until the line fits. */
void
start_message_fit(cJSON *msg)
{
	char *text = json_print(msg);
	size_t len = strlen(text);

	free(text);
	if (len < LINE_MAX_BYTES)
		return;
	cJSON_ReplaceItemInObject(msg, "history", cJSON_CreateArray());
	text = json_print(msg);
	len = strlen(text);
	free(text);
	if (len >= LINE_MAX_BYTES)
		cJSON_ReplaceItemInObject(cJSON_GetObjectItem(msg, "project"), "context",
		    cJSON_CreateString(""));
}
