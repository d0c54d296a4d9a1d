/* Creating a session before its first run (session-create.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "problem.h"
#include "runs.h"
#include "service.h"
#include "session-connectors.h"
#include "session-create.h"
#include "sessions.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

cJSON *
session_create(struct service *svc, const cJSON *body, struct problem *p)
{
	struct store *st = svc->store;
	const char *project = json_get_string(body, "project");
	const char *cwd_in = json_get_string(body, "cwd");
	const char *title = json_get_string(body, "title");
	struct run_admission a = { 0 };
	char cwd[PATH_MAX], id[TD_ID_MAX];
	cJSON *cfg = NULL, *session = NULL;
	bool managed = cwd_in == NULL, made_dir = false, ok;

	if (!managed && !sessions_cwd_resolve(&svc->paths, cwd_in, cwd, p))
		return NULL;
	id_new("ses", id);
	if (managed && snprintf(cwd, sizeof cwd, "%s/%s", svc->paths.workspaces, id) >=
	    (int)sizeof cwd) {
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The managed workspace's path is too long.");
		return NULL;
	}
	store_lock(st);
	if (!store_begin(st)) {
		store_unlock(st);
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The session could not be created.");
		return NULL;
	}
	runs_admission_read(st, project, NULL, &a);
	if (!a.project_known) {
		problem_set(p, TD_NOT_FOUND, "project", "No project with that id.");
		goto refused;
	}
	cfg = config_for_new_session(svc, cJSON_GetObjectItemCaseSensitive(body, "config"),
	    a.project_defaults);
	if (!config_usable(svc, cfg, p))
		goto refused;
	if (managed) {
		if (!paths_mkdir_p(cwd, 0700)) {
			log_error("cannot create the workspace of %s: %s", id, strerror(errno));
			problem_set(p, TD_INTERNAL_ERROR, NULL, "The managed workspace could not be "
			    "created.");
			goto refused;
		}
		made_dir = true;
	}
	ok = sessions_create(st, id, project, title != NULL ? title : "New session", cwd,
	    managed, cfg, clock_wall_ms()) && session_connectors_store(svc, id,
	    cJSON_GetObjectItemCaseSensitive(body, "connectors"), clock_wall_ms()) &&
	    store_commit(st);
	if (!ok) {
		problem_set(p, TD_INTERNAL_ERROR, NULL, "The session could not be created.");
		goto refused;
	}
	session_emit_updated_locked(svc, id);
	session = session_load(st, id);
	store_unlock(st);
	cJSON_Delete(a.project_defaults);
	cJSON_Delete(cfg);
	log_info("session %s created in %s", id, cwd);
	return session;

refused:
	store_rollback(st);
	store_unlock(st);
	if (made_dir)
		rmdir(cwd);
	cJSON_Delete(a.project_defaults);
	cJSON_Delete(cfg);
	return NULL;
}
