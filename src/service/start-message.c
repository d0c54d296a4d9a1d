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
#include "checkpoints.h"
#include "connector-run.h"
#include "credentials.h"
#include "frameworks.h"
#include "json.h"
#include "log.h"
#include "resource.h"
#include "routing.h"
#include "runs.h"
#include "sandbox.h"
#include "secrets.h"
#include "service.h"
#include "session-connectors.h"
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

/* The start line's "sandbox": its resource bounds (runs.commandLimits). */
static void
start_message_sandbox_limits(struct service *svc, cJSON *sb)
{
	const struct sandbox_limits *lim = settings_command_limits(svc->settings);
	cJSON *l = cJSON_AddObjectToObject(sb, "limits");

	cJSON_AddNumberToObject(l, "memoryMiB", (double)(lim->memory >> 20));
	cJSON_AddNumberToObject(l, "processes", (double)lim->processes);
	cJSON_AddNumberToObject(l, "cpuSeconds", (double)lim->cpu_seconds);
	cJSON_AddNumberToObject(l, "tmpMiB", (double)(lim->tmp_size >> 20));
}

/* ... and *sent, the hidden set sent, which the run's artifact saves obey too. */
static void
start_message_sandbox(struct service *svc, cJSON *msg, const char *workspace, bool network,
    char ***sent)
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
	start_message_sandbox_limits(svc, sb);
	arr = cJSON_AddArrayToObject(sb, "hidden");
	/* A hidden directory holding the workspace stays hidden but for the workspace. */
	for (char **h = hidden; *h != NULL; h++) {
		if ((bytes += strlen(*h)) > SANDBOX_HIDDEN_BYTES) {
			log_warn("the sandbox hides only the first %d KiB of paths",
			    SANDBOX_HIDDEN_BYTES / 1024);
			for (char **rest = h; *rest != NULL; rest++)
				free(*rest);
			*h = NULL;
			break;
		}
		cJSON_AddItemToArray(arr, cJSON_CreateString(*h));
	}
	sandbox_hidden_free(*sent);
	*sent = hidden;
}

/* Wipes the provider's API key in a start message before it is freed. */
void
start_message_wipe(cJSON *msg)
{
	cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(msg, "provider"), "apiKey");

	if (cJSON_IsString(k) && k->valuestring != NULL)
		sodium_memzero(k->valuestring, strlen(k->valuestring));
	routing_start_wipe(msg);
}

/* The start line's "run": what the agent needs of the run itself. */
static cJSON *
start_message_run(const struct run *run)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "id", run->id);
	cJSON_AddStringToObject(r, "sessionId", run->session_id);
	cJSON_AddStringToObject(r, "projectId", run->project_id);
	cJSON_AddStringToObject(r, "prompt", run->prompt);
	cJSON_AddStringToObject(r, "permissionProfile", run->permission_profile);
	if (run->turn_intent != NULL)
		cJSON_AddStringToObject(r, "turnIntent", run->turn_intent);
	else
		cJSON_AddNullToObject(r, "turnIntent");
	cJSON_AddStringToObject(r, "workspace", run->cwd);
	return r;
}

/* The start line's "project": its name and context.  Only while the store is locked. */
static void
start_message_project(struct store *st, cJSON *msg, const struct run *run)
{
	cJSON *proj = cJSON_AddObjectToObject(msg, "project");
	sqlite3_stmt *s = store_stmt(st, "SELECT name, context FROM projects WHERE id = ?1");

	sqlite3_bind_text(s, 1, run->project_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		cJSON_AddStringToObject(proj, "name", resource_text(s, 0));
		cJSON_AddStringToObject(proj, "context", resource_text(s, 1));
	}
	sqlite3_reset(s);
}

/*
 * A resumed run starts from its checkpoint (which holds the history already)
 * with request ids above those of earlier processes.  Takes run->checkpoint.
 * A damaged checkpoint: false.
 */
static bool
start_message_resume(struct run_state *rs, cJSON *msg, cJSON *r, struct run *run)
{
	cJSON *cp = run->checkpoint;

	run->checkpoint = NULL;
	rs->resumes = run->resumes;
	cJSON_AddNumberToObject(r, "requestIdBase", rs->resumes * REQUEST_ID_STRIDE);
	if (run->checkpoint_invalid) {
		rs->checkpoint_invalid = true;
		return false;
	}
	/* Version 2 heads hold no output: the output stored with them is the run's. */
	if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cp, "version")) == 2)
		checkpoint_resume_head(cp, run->output);
	if (cp != NULL) {
		const char *out = json_get_string(cp, "output");
		const cJSON *usage = cJSON_GetObjectItemCaseSensitive(cp, "usage");

		if (out != NULL)
			buf_append(&rs->output, out, strlen(out));
		/* The tokens so far: the progress stored before the agent's first
		 * usage line must not count them from zero again. */
		rs->usage = (struct run_usage){
			.input = run_usage_count(usage, "inputTokens"),
			.output = run_usage_count(usage, "outputTokens"),
			.cache_read = run_usage_count(usage, "cacheReadTokens"),
			.cache_write = run_usage_count(usage, "cacheWriteTokens"),
		};
		cJSON_ReplaceItemInObject(msg, "history", cJSON_CreateArray());
		cJSON_AddItemToObject(msg, "checkpoint", cp);
	}
	return true;
}

/* The provider's retry bounds and the model's context window, where settings give them. */
static void
start_message_provider_tuning(cJSON *p, const cJSON *provider, const char *model)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    provider, "models"), model ? model : "");
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "contextWindow");

	for (const char *const *k = (const char *const[]){ "maxRetries", "maxRetryWaitMs",
	    NULL }; *k; k++)
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(provider, *k)))
			cJSON_AddNumberToObject(p, *k,
			    cJSON_GetObjectItemCaseSensitive(provider, *k)->valuedouble);
	if (cJSON_IsNumber(w))
		cJSON_AddNumberToObject(p, "contextWindow", w->valuedouble);
}

/* The start line's "provider", with its API key; false with *why set. */
static bool
start_message_provider(struct service *svc, cJSON *msg, const cJSON *cfg, char **why)
{
	const char *name = json_get_string(cfg, "provider");
	cJSON *p = credential_provider_block(svc, name, why);
	struct price price;

	if (p == NULL) {
		if (*why == NULL)
			*why = xstrdup("the provider of the run is no longer configured");
		return false;
	}
	cJSON_AddItemToObject(msg, "provider", p);
	start_message_provider_tuning(p, settings_provider(svc->settings, name),
	    json_get_string(cfg, "model"));
	if (settings_price(svc->settings, name, json_get_string(cfg, "model"), &price)) {
		cJSON *pj = cJSON_AddObjectToObject(p, "price");

		cJSON_AddNumberToObject(pj, "input", price.input);
		cJSON_AddNumberToObject(pj, "output", price.output);
		cJSON_AddNumberToObject(pj, "cacheRead", price.cache_read);
		cJSON_AddNumberToObject(pj, "cacheWrite", price.cache_write);
	}
	return true;
}

cJSON *
start_message_build(struct supervisor *sv, struct run_state *rs, char **why)
{
	struct service *svc = sv->svc;
	struct store *st = svc->store;
	struct run run;
	cJSON *msg, *r, *cfg, *limits;

	store_lock(st);
	if (!runs_get(st, rs->ar->id, &run)) {
		store_unlock(st);
		*why = xstrdup("the run disappeared from the store");
		return NULL;
	}
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "start");
	r = start_message_run(&run);
	cJSON_AddItemToObject(msg, "run", r);
	snprintf(rs->session_id, sizeof rs->session_id, "%s", run.session_id);
	snprintf(rs->project_id, sizeof rs->project_id, "%s", run.project_id);
	rs->workspace = xstrdup(run.cwd);
	cfg = run.config;
	run.config = NULL;
	cJSON_AddItemToObject(msg, "config", cfg);
	start_message_project(st, msg, &run);
	cJSON_AddItemToObject(msg, "history", runs_history(st, run.session_id, run.id,
	    HISTORY_RUNS, HISTORY_OUTPUT_MAX));
	if (rs->ar->resume && !start_message_resume(rs, msg, r, &run)) {
		store_unlock(st);
		*why = xstrdup("the stored checkpoint of the resumed run is not a JSON object of at "
		    "most 768 KiB (a damaged database)");
		goto fail;
	}
	store_unlock(st);

	rs->external = frameworks_external(json_get_string(cfg, "framework"));
	/* An external framework: the CLI taskdeck-agent drives, probed again now. */
	if (rs->external) {
		cJSON *rt = frameworks_start_runtime(svc, json_get_string(cfg, "framework"), why);

		if (rt == NULL) {
			rs->runtime_unready = true;
			goto fail;
		}
		cJSON_AddItemToObject(msg, "runtime", rt);
	}
	if (!start_message_provider(svc, msg, cfg, why))
		goto fail;
	start_message_sandbox(svc, msg, rs->workspace, run.network, &rs->hidden);
	if (!rs->external) {
		cJSON *routing = routing_start_message(svc, why);

		if (routing == NULL)
			goto fail;
		cJSON_AddItemToObject(msg, "routing", routing);
	}

	limits = cJSON_AddObjectToObject(msg, "limits");
	cJSON_AddNumberToObject(limits, "maxTurns", settings_max_turns(svc->settings));
	if (settings_max_tokens_per_run(svc->settings) > 0)
		cJSON_AddNumberToObject(limits, "maxTokensPerRun",
		    (double)settings_max_tokens_per_run(svc->settings));
	if (settings_max_cost_per_run(svc->settings) > 0)
		cJSON_AddNumberToObject(limits, "maxCostPerRun",
		    settings_max_cost_per_run(svc->settings));
	cJSON_AddNumberToObject(limits, "commandTimeoutMs",
	    (double)settings_command_timeout_ms(svc->settings));
	cJSON_AddNumberToObject(limits, "maxToolOutputBytes", 65536);
	/* Enabled connectors, without secrets; kept to check secret.resolve against. */
	cJSON_AddNumberToObject(limits, "connectorTimeoutMs", CONNECTOR_RUN_TIMEOUT_MS);
	rs->connectors = connectors_for_run(svc);
	session_connectors_for_run(svc, run.session_id, rs->connectors);
	cJSON_AddItemToObject(msg, "connectors", cJSON_Duplicate(rs->connectors, true));
	runs_clear(&run);
	return msg;

fail:
	start_message_wipe(msg);
	cJSON_Delete(msg);
	runs_clear(&run);
	return NULL;
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
