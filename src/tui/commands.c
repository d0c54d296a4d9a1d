/*
 * Commands: what keys, clicks and results ask of the service and the
 * selection, as jobs for the worker and changes of the model.  Below the
 * views, modals and keys (which call it); above the model and the worker.
 * No curses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/tui.h"
#include "xalloc.h"

/* True when a download to path is queued or running. */
bool
tui_downloading(const struct tui *t, const char *path)
{
	for (size_t i = 0; i < sizeof t->downloading / sizeof t->downloading[0]; i++) {
		if (t->downloading[i] != NULL && strcmp(t->downloading[i], path) == 0)
			return true;
	}
	return false;
}

/* Records a download's destination while it runs (a finished one: done). */
void
tui_download_track(struct tui *t, const char *path, bool done)
{
	size_t n = sizeof t->downloading / sizeof t->downloading[0];

	for (size_t i = 0; i < n; i++) {
		if (done && t->downloading[i] != NULL && strcmp(t->downloading[i], path) == 0) {
			free(t->downloading[i]);
			t->downloading[i] = NULL;
			return;
		}
		if (!done && t->downloading[i] == NULL) {
			t->downloading[i] = xstrdup(path);
			return;
		}
	}
}

void
tui_submit(struct tui *t, const struct job *job)
{
	if (job->kind == JOB_DOWNLOAD && job->path != NULL)
		tui_download_track(t, job->path, false);
	worker_submit(t->w, job);
}

void
tui_need(struct tui *t, unsigned need)
{
	t->need |= need;
}

/* Asks for what is shown and the service's report again. */
void
tui_reread(struct tui *t)
{
	struct job job = { .kind = JOB_DOCTOR };

	tui_submit(t, &job);
	tui_need(t, model_refresh(&t->m));
}

/* Selects the session, then the run, started here (or jumped to) once the
 * lists hold them. */
void
tui_select_wanted(struct tui *t)
{
	enum pane focus = t->m.focus;
	size_t i;

	if (t->want_session[0] != '\0') {
		for (i = 0; i < t->m.session_count; i++) {
			if (strcmp(t->m.sessions[i].id, t->want_session) == 0)
				break;
		}
		if (i == t->m.session_count)
			return;
		tui_need(t, model_select(&t->m, PANE_SESSIONS, i));
		t->want_session[0] = '\0';
	}
	if (t->want_run[0] == '\0')
		return;
	for (i = 0; i < t->m.run_count; i++) {
		if (strcmp(t->m.runs[i].id, t->want_run) == 0) {
			tui_need(t, model_select(&t->m, PANE_RUNS, i));
			t->want_run[0] = '\0';
			break;
		}
	}
	model_focus(&t->m, focus);
}

void
tui_jump(struct tui *t, const char *project_id, const char *session_id, const char *run_id)
{
	for (size_t i = 0; project_id != NULL && i < t->m.project_count; i++) {
		if (t->m.projects[i].id != NULL && strcmp(t->m.projects[i].id, project_id) == 0) {
			enum pane focus = t->m.focus;

			tui_need(t, model_select(&t->m, PANE_PROJECTS, i));
			model_focus(&t->m, focus);
			break;
		}
	}
	snprintf(t->want_session, sizeof t->want_session, "%s", session_id ? session_id : "");
	snprintf(t->want_run, sizeof t->want_run, "%s", run_id ? run_id : "");
	tui_select_wanted(t);
}
