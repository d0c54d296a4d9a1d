/*
 * How to reach one connector's server with its credentials resolved: what a
 * connector test (connector-test.h) and a sign-in (connector-login.h) open.
 * The definition is connectors.h's, the values credentials.h's.
 */
#ifndef TD_SERVICE_CONNECTOR_LAUNCH_H
#define TD_SERVICE_CONNECTOR_LAUNCH_H

#include <stdbool.h>

#include "connectors.h"
#include "errors.h"
#include "problem.h"
#include "sandbox.h"

struct service;

/* One connector's server as a test opens it.  Holds secrets: connector_launch_free wipes them. */
struct connector_launch {
	char name[CONNECTOR_NAME_MAX + 1];
	bool builtin;
	bool http;
	char *command;		/* stdio */
	char **args;		/* stdio: the arguments after the command, NULL-terminated */
	char **envp;		/* stdio: NULL-terminated */
	char *url;		/* http */
	char **headers;		/* http: "Name: value", NULL-terminated */
	char **secrets;		/* the resolved values, to redact from messages */
	/* stdio: the sandbox of a run's commands (docs/agent.md), with a scratch workspace */
	char **hidden;		/* taskdeck's own directories and the credential files */
	bool network;		/* defaults.network: what a run of the application default gets */
	bool allow_unconfined;	/* runs.allowUnconfinedCommands */
	struct sandbox_limits limits;	/* runs.commandLimits */
	char *state_dir;	/* stdio: its state directory (HOME), or NULL */
	char **rw_paths;	/* stdio: bound read-write (the state directory first) */
	char **ro_paths;	/* stdio: bound read-only */
};
/* Fills l for connector id (takes the store lock); TD_NOT_FOUND, or a credential that cannot be read. */
enum td_code connector_launch_prepare(struct service *svc, const char *id,
    struct connector_launch *l, struct problem *p);
void connector_launch_free(struct connector_launch *l);

#endif
