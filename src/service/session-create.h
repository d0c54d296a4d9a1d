/*
 * Creating a session before its first run (docs/http-api.md, Sessions): what
 * an editor's session/new needs, the directory and the configuration fixed
 * at once, with the editor's MCP servers (session-connectors.h).
 */
#ifndef TD_SERVICE_SESSION_CREATE_H
#define TD_SERVICE_SESSION_CREATE_H

#include <cjson/cJSON.h>

struct service;
struct problem;

/* Longest title, in characters. */
#define SESSION_TITLE_MAX 80

/*
 * POST /sessions: body {project, title?, cwd?, config?, connectors?}, its
 * member types checked by the route (connectors with
 * session_connectors_valid).  Resolves cwd (none: a managed workspace),
 * stores the session with the configuration a new session gets and its
 * connectors in one transaction, emits session.updated after the commit.
 * The session as the API shows it, or NULL with *p (invalid_cwd, not_found,
 * invalid_configuration, internal_error).
 */
cJSON *session_create(struct service *svc, const cJSON *body, struct problem *p);

#endif
