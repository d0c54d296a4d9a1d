/*
 * notify.command (docs/settings.md): a program the service runs, with the
 * run id, the kind and the project's name as its last three arguments, when a
 * run starts needing the user (plan-approval, permission) or finishes
 * (completed, failed, cancelled).  One thread runs them, one at a time, from
 * a bounded queue that it fills as a listener of the events (events_listen).
 */
#ifndef TD_SERVICE_NOTIFY_H
#define TD_SERVICE_NOTIFY_H

#include <cjson/cJSON.h>

struct service;
struct notify;

/* NULL when settings name no command (nothing to do). */
struct notify *notify_new(struct service *svc);
/* Stops the thread; a command still running is killed. */
void notify_free(struct notify *n);

#endif
