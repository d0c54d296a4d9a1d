/* GET /api/v1/doctor: readiness and next actions.  Never the token. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bootstrap.h"
#include "buf.h"
#include "files.h"
#include "paths.h"
#include "http.h"
#include "projects.h"
#include "json.h"
#include "models.h"
#include "routes.h"
#include "routing.h"
#include "sandbox.h"
#include "runtimes.h"
#include "sessions.h"
#include "service.h"
#include "settings.h"
#include "store.h"
#include "xalloc.h"

/* The sessions whose directories the workspaces check looks at. */
#define DOCTOR_WORKSPACES_MAX 200

enum check_status { CHECK_OK, CHECK_WARN, CHECK_FAIL, CHECK_INFO };

struct report {
	cJSON *checks;
	cJSON *next_actions;
	bool ready;
};

/* Adds one check; message and action are consumed (action may be NULL). */
static void
add_check(struct report *rep, const char *id, enum check_status status,
    char *message, char *action)
{
	static const char *names[] = { "ok", "warn", "fail", "info" };
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "status", names[status]);
	cJSON_AddStringToObject(c, "message", message);
	if (action != NULL) {
		cJSON_AddStringToObject(c, "nextAction", action);
		cJSON_AddItemToArray(rep->next_actions, cJSON_CreateString(action));
	}
	cJSON_AddItemToArray(rep->checks, c);
	if (status == CHECK_FAIL)
		rep->ready = false;
	free(message);
	free(action);
}

static void
check_data_dir(struct report *rep, const struct td_paths *p)
{
	struct stat st;

	if (stat(p->data_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		add_check(rep, "data-directory", CHECK_FAIL,
		    xasprintf("The data directory %s is missing.", p->data_dir),
		    xasprintf("Restart taskdeckd so that it creates %s.", p->data_dir));
	} else if (access(p->data_dir, R_OK | W_OK | X_OK) != 0) {
		add_check(rep, "data-directory", CHECK_FAIL,
		    xasprintf("The data directory %s is not writable: %s.", p->data_dir,
		    strerror(errno)),
		    xasprintf("Give your user write access to %s.", p->data_dir));
	} else if (st.st_mode & 0077) {
		add_check(rep, "data-directory", CHECK_WARN,
		    xasprintf("The data directory %s is open to other users (mode %03o).",
		    p->data_dir, (unsigned)(st.st_mode & 0777)),
		    xasprintf("chmod 700 %s", p->data_dir));
	} else {
		add_check(rep, "data-directory", CHECK_OK,
		    xasprintf("The data directory %s is private and writable.", p->data_dir),
		    NULL);
	}
}

static void
check_database(struct report *rep, struct service *svc)
{
	char *detail = NULL;
	int version;

	if (!store_quick_check(svc->store, &detail)) {
		add_check(rep, "database", CHECK_FAIL,
		    xasprintf("The database failed its integrity check: %s.",
		    detail ? detail : "unknown"),
		    xasprintf("Stop taskdeckd and restore %s from a backup.",
		    svc->paths.database));
		free(detail);
		return;
	}
	store_lock(svc->store);
	version = store_schema_version(svc->store);
	store_unlock(svc->store);
	add_check(rep, "database", CHECK_OK,
	    xasprintf("The database passed its integrity check (schema version %d).",
	    version), NULL);
}

static void
check_token(struct report *rep, const struct td_paths *p)
{
	char *problem = files_token_problem(p);

	if (problem != NULL) {
		add_check(rep, "token-file", CHECK_FAIL,
		    xasprintf("The token file is not private: %s.", problem),
		    xasprintf("chmod 700 %s && chmod 600 %s", p->config_dir, p->token));
		free(problem);
	} else {
		add_check(rep, "token-file", CHECK_OK,
		    xasprintf("The token file %s is readable by you alone.", p->token),
		    NULL);
	}
}

static void
check_agent_runtime(struct report *rep, const struct service *svc)
{
	if (access(svc->agent_path, X_OK) != 0) {
		add_check(rep, "agent-runtime", CHECK_FAIL,
		    xasprintf("The agent runtime %s cannot be run: %s.", svc->agent_path,
		    strerror(errno)),
		    xstrdup("Reinstall taskdeck, or set TASKDECK_AGENT to the taskdeck-agent "
		    "binary and restart the service."));
		return;
	}
	add_check(rep, "agent-runtime", CHECK_OK,
	    xasprintf("The agent runtime is %s (found: %s).", svc->agent_path,
	    svc->agent_found_by ? svc->agent_found_by : "configured"), NULL);
}

/* The replay transcripts: needed by the replay provider only, so a warning. */
static void
check_replay(struct report *rep, const struct service *svc)
{
	int n = runtimes_count_transcripts(svc->replay_dir);

	if (n == 0) {
		add_check(rep, "replay-transcripts", CHECK_WARN,
		    xasprintf("No replay transcripts in %s; the replay provider cannot run.",
		    svc->replay_dir),
		    xstrdup("Set TASKDECK_REPLAY_DIR to a directory of transcripts, or use "
		    "another provider."));
		return;
	}
	add_check(rep, "replay-transcripts", CHECK_OK,
	    xasprintf("%d replay transcripts in %s (found: %s).", n, svc->replay_dir,
	    svc->replay_found_by ? svc->replay_found_by : "configured"), NULL);
}

/*
 * readiness: every framework's runtime; a missing one fails only when it is
 * the default, warns when a project's defaults name it, and is only said
 * (info) when nothing uses it.
 */
static void
check_runtimes(struct report *rep, const struct service *svc)
{
	const char *def = json_get_string(settings_defaults(svc->settings), "framework");
	struct runtime_info info;
	cJSON *routing = NULL;
	bool used;
	int64_t at;
	char id[64];

	/* No default in settings.json: the agent routing's framework is the default. */
	if (def == NULL) {
		store_lock(svc->store);
		routing = routing_load(svc->store, &at);
		store_unlock(svc->store);
		def = json_get_string(routing, "framework");
	}

	for (int i = 0; runtimes_frameworks[i] != NULL; i++) {
		bool is_default = def != NULL && strcmp(def, runtimes_frameworks[i]) == 0;
		runtimes_probe(svc, runtimes_frameworks[i], &info);
		snprintf(id, sizeof id, "runtime-%s", info.framework);
		if (info.status == RUNTIME_READY) {
			add_check(rep, id, CHECK_OK, xasprintf("%s: %s (found: %s)",
			    info.framework, info.message, info.found_by), NULL);
			continue;
		}
		store_lock(svc->store);
		used = projects_framework_used(svc->store, info.framework);
		store_unlock(svc->store);
		if (!is_default && !used && info.status == RUNTIME_MISSING &&
		    strcmp(info.framework, "acp") == 0) {
			/* acp: no agent configured; there is nothing to install. */
			add_check(rep, id, CHECK_INFO, xasprintf("%s: no ACP agent is configured "
			    "(optional: set runtimes.%s.path and runtimes.%s.args in settings.json "
			    "to an agent's command, such as gemini --experimental-acp).",
			    info.framework, info.framework, info.framework), NULL);
			continue;
		}
		if (!is_default && !used && info.status == RUNTIME_MISSING &&
		    strcmp(info.source, "managed") != 0) {
			add_check(rep, id, CHECK_INFO, xasprintf("%s is not installed (optional: "
			    "only runs with this framework need it; install %s or set "
			    "runtimes.%s.path in settings.json to use it).", info.framework,
			    info.framework, info.framework), NULL);
			continue;
		}
		add_check(rep, id, is_default ? CHECK_FAIL : CHECK_WARN,
		    xasprintf("%s is %s: %s%s", info.framework, runtime_status_name(info.status),
		    info.message, is_default ? " It is the default framework." :
		    " Only runs with this framework need it."),
		    strcmp(info.source, "managed") == 0 ? xstrdup("taskdeck setup --repair") :
		    runtimes_min_version(info.framework) == NULL ? xasprintf("Set runtimes.%s.path "
		    "(and runtimes.%s.args) in settings.json to the ACP agent's command.",
		    info.framework, info.framework) : xasprintf("Install or update %s (at least version %s), or set "
		    "runtimes.%s.path in settings.json.", info.framework,
		    runtimes_min_version(info.framework), info.framework));
	}
	cJSON_Delete(routing);
}

/* readiness: the default provider has its key and answers on its base URL; true when so. */
static bool
check_provider(struct report *rep, const struct service *svc)
{
	char name[72], msg[512];
	bool ok = bootstrap_provider_check(svc, 2000, name, sizeof name, msg, sizeof msg);
	const cJSON *p = settings_provider(svc->settings, name);
	const char *key = json_get_string(p, "apiKeyEnv");
	bool key_missing = key != NULL && (settings_api_key(svc->settings, key) == NULL ||
	    *settings_api_key(svc->settings, key) == '\0');
	char cred_msg[512];

	/* A named credential that is gone or cannot be opened fails too. */
	if (p != NULL && !bootstrap_provider_key_ok(svc, p, name, cred_msg, sizeof cred_msg))
		key_missing = true;

	if (ok)
		add_check(rep, "provider", CHECK_OK, xstrdup(msg), NULL);
	else
		add_check(rep, "provider", key_missing || p == NULL ? CHECK_FAIL : CHECK_WARN,
		    xstrdup(msg), xstrdup("Run `taskdeck setup` to choose and test a provider."));
	return ok;
}

/* What --model and config.model may name: the default provider's models, as it lists them. */
#define DOCTOR_MODELS_SHOWN 30
static void
check_models(struct report *rep, struct service *svc)
{
	struct problem p = { 0 };
	cJSON *list = models_list(svc, "default", &p);
	const cJSON *m, *models = cJSON_GetObjectItemCaseSensitive(list, "models");
	int n = cJSON_GetArraySize(models), shown = 0;
	struct buf b;

	if (list == NULL) {
		add_check(rep, "provider-models", CHECK_INFO, xasprintf("The models of the default "
		    "provider are not known: %s", p.message), NULL);
		cJSON_Delete(p.details);
		return;
	}
	buf_init(&b, 0);
	buf_printf(&b, "The default provider %s offers %d model%s (%s)%s", json_get_string(list,
	    "provider"), n, n == 1 ? "" : "s", json_get_string(list, "source"),
	    n > 0 ? "; --model takes: " : ".");
	cJSON_ArrayForEach(m, models) {
		if (shown == DOCTOR_MODELS_SHOWN) {
			buf_printf(&b, ", and %d more", n - shown);
			break;
		}
		buf_printf(&b, "%s%s%s", shown > 0 ? ", " : "", json_get_string(m, "id"),
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "default")) ? " (default)" : "");
		shown++;
	}
	if (n > 0)
		buf_appends(&b, ".");
	add_check(rep, "provider-models", CHECK_OK, buf_steal(&b), NULL);
	cJSON_Delete(list);
}

/*
 * readiness: free space under the data directory.  Below doctor.diskFailMiB, or
 * when a small write cannot be made durable (a full disk), it fails; below
 * doctor.diskWarnMiB it warns.
 */
static void
check_disk(struct report *rep, const struct service *svc)
{
	const char *dir = svc->paths.data_dir;
	long warn_mib, fail_mib;
	struct statvfs vfs;
	char *probe, block[4096];
	unsigned long long free_mib;
	int fd, err = 0;

	settings_disk_thresholds(svc->settings, &warn_mib, &fail_mib);
	if (statvfs(dir, &vfs) != 0) {
		add_check(rep, "disk-space", CHECK_FAIL, xasprintf("Cannot read the free space "
		    "under %s: %s.", dir, strerror(errno)), NULL);
		return;
	}
	free_mib = (unsigned long long)vfs.f_bavail * vfs.f_frsize / (1024 * 1024);
	probe = xasprintf("%s/.doctor-probe.%ld", dir, (long)getpid());
	memset(block, 'x', sizeof block);
	errno = 0;
	fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, block, sizeof block) != (ssize_t)sizeof block || fsync(fd) != 0)
		err = errno ? errno : ENOSPC;
	if (fd >= 0)
		close(fd);
	unlink(probe);
	free(probe);
	if (err != 0) {
		add_check(rep, "disk-space", CHECK_FAIL, xasprintf("A 4 KiB write under %s "
		    "failed: %s (%llu MiB free).", dir, strerror(err), free_mib),
		    xasprintf("Free space on the file system of %s.", dir));
	} else if (free_mib < (unsigned long long)fail_mib) {
		add_check(rep, "disk-space", CHECK_FAIL, xasprintf("Only %llu MiB free under %s "
		    "(doctor.diskFailMiB is %ld).", free_mib, dir, fail_mib),
		    xasprintf("Free space on the file system of %s.", dir));
	} else if (free_mib < (unsigned long long)warn_mib) {
		add_check(rep, "disk-space", CHECK_WARN, xasprintf("%llu MiB free under %s, "
		    "below doctor.diskWarnMiB (%ld).", free_mib, dir, warn_mib),
		    xasprintf("Free space on the file system of %s soon.", dir));
	} else {
		add_check(rep, "disk-space", CHECK_OK, xasprintf("%llu MiB free under %s.",
		    free_mib, dir), NULL);
	}
}

/* The command sandbox (docs/agent.md): fails closed, so a missing one is a failure. */
static void
check_sandbox(struct report *rep, const struct service *svc)
{
	bool unconfined = settings_allow_unconfined(svc->settings);
	char why[768];

	if (!sandbox_available(why, sizeof why)) {
		if (unconfined)
			add_check(rep, "sandbox", CHECK_WARN,
			    xasprintf("No command sandbox: %s. runs.allowUnconfinedCommands is on, "
			    "so commands (and the claude-code and codex CLIs) run UNCONFINED, "
			    "with all your rights.", why),
			    xstrdup("Make the sandbox work (see the message), then set "
			    "runs.allowUnconfinedCommands to false."));
		else
			add_check(rep, "sandbox", CHECK_FAIL,
			    xasprintf("No command sandbox: %s. Commands, and runs of claude-code "
			    "and codex, fail with sandbox_unavailable except under full-access.",
			    why),
			    xstrdup("apt-get install bubblewrap, and allow user namespaces "
			    "(sysctl user.max_user_namespaces > 0)."));
		return;
	}
	if (unconfined) {
		add_check(rep, "sandbox", CHECK_WARN,
		    xasprintf("Commands run in a bubblewrap sandbox (%s), but "
		    "runs.allowUnconfinedCommands is on: should it break, they would run "
		    "unconfined.", sandbox_bwrap_path()),
		    xstrdup("Set runs.allowUnconfinedCommands to false in settings.json."));
		return;
	}
	if (!sandbox_memory_cgroup() && settings_command_limits(svc->settings)->memory > 0) {
		add_check(rep, "sandbox", CHECK_WARN,
		    xasprintf("Commands run in a bubblewrap sandbox (%s), but no memory cgroup "
		    "can be made here: runs.commandLimits.memoryMiB bounds each process's data "
		    "(RLIMIT_DATA), which stops programs built with AddressSanitizer, "
		    "ThreadSanitizer or MemorySanitizer at start.", sandbox_bwrap_path()),
		    xstrdup("Run taskdeckd where it may make cgroups (a systemd service with "
		    "Delegate=yes, or root on cgroup v1), or set runs.commandLimits.memoryMiB "
		    "to 0 for sanitizer builds."));
		return;
	}
	add_check(rep, "sandbox", CHECK_OK,
	    xasprintf("Commands run in a bubblewrap sandbox (%s)%s.", sandbox_bwrap_path(),
	    sandbox_memory_cgroup() ? "; a memory cgroup bounds each one" : ""), NULL);
}

/* The sessions' directories that another user can rename (a revert would follow them). */
static void
check_workspaces(struct report *rep, struct service *svc)
{
	cJSON *cwds, *one;
	char *first = NULL;
	int n = 0, open_to_others = 0;

	store_lock(svc->store);
	cwds = sessions_external_cwds(svc->store, DOCTOR_WORKSPACES_MAX);
	store_unlock(svc->store);
	cJSON_ArrayForEach(one, cwds) {
		char *why = paths_renamable(json_get_string(one, "cwd"));

		n++;
		if (why == NULL)
			continue;
		if (open_to_others++ == 0)
			first = xasprintf("session %s: %s", json_get_string(one, "id"), why);
		free(why);
	}
	cJSON_Delete(cwds);
	if (open_to_others > 0) {
		add_check(rep, "workspaces", CHECK_WARN, xasprintf("%d session director%s can be "
		    "renamed by another user, who could put a link or a directory of theirs in "
		    "its place (%s); taskdeck refuses a run or a revert there once it is "
		    "replaced.", open_to_others, open_to_others == 1 ? "y" : "ies", first),
		    xstrdup("Keep projects in directories only you can write (not directly "
		    "under /tmp or another user's directory)."));
		free(first);
		return;
	}
	add_check(rep, "workspaces", CHECK_OK, xasprintf("No other user can rename the "
	    "directories of the %d latest sessions.", n), NULL);
}

void
route_doctor(struct http_request *req, struct http_response *r)
{
	struct report rep = { cJSON_CreateArray(), cJSON_CreateArray(), true };
	cJSON *res = cJSON_CreateObject();

	check_data_dir(&rep, &req->svc->paths);
	check_database(&rep, req->svc);
	check_token(&rep, &req->svc->paths);
	check_agent_runtime(&rep, req->svc);
	check_replay(&rep, req->svc);
	check_sandbox(&rep, req->svc);
	/* readiness */
	check_runtimes(&rep, req->svc);
	/* A provider that does not answer is not asked its models on top. */
	if (check_provider(&rep, req->svc))
		check_models(&rep, req->svc);
	check_disk(&rep, req->svc);
	check_workspaces(&rep, req->svc);
	cJSON_AddBoolToObject(res, "ready", rep.ready);
	cJSON_AddStringToObject(res, "version", TD_VERSION);
	cJSON_AddItemToObject(res, "checks", rep.checks);
	cJSON_AddItemToObject(res, "nextActions", rep.next_actions);
	http_json(r, 200, res);
}
