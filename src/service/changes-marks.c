/*
 * What the changes of a run lack (changes-int.h): the snapshot thread's lists
 * of runs whose latest snapshot failed or whose end snapshot is still being
 * taken, kept in memory (the disk may be full), and how an answer says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes-int.h"
#include "xalloc.h"

/* The runs kept in each of the thread's lists in memory. */
#define CHANGES_FAILED_MAX 1024
#define CHANGES_ENDING_WHY "the run's end snapshot is still being taken: the changes are " \
	"those of the snapshot before"

/* Puts run_id in the list m, or takes it out; the caller holds c->mu. */
void
changes_marks_set(struct changes_marks *m, const char *run_id, bool on)
{
	struct changes_mark **pp, *f;

	for (pp = &m->head; (f = *pp) != NULL; pp = &f->next) {
		if (strcmp(f->run_id, run_id) == 0) {
			if (!on) {
				*pp = f->next;
				free(f);
				m->n--;
			}
			return;
		}
	}
	if (on && m->n < CHANGES_FAILED_MAX) {
		f = xcalloc(1, sizeof *f);
		snprintf(f->run_id, sizeof f->run_id, "%s", run_id);
		f->next = m->head;
		m->head = f;
		m->n++;
	}
}

void
changes_marks_clear(struct changes_marks *m)
{
	while (m->head != NULL) {
		struct changes_mark *f = m->head;
		m->head = f->next;
		free(f);
	}
	m->n = 0;
}

/* Marks or clears run_id as a run whose latest snapshot failed. */
void
changes_failed_mark(struct changes *c, const char *run_id, bool failed)
{
	pthread_mutex_lock(&c->mu);
	changes_marks_set(&c->failed, run_id, failed);
	pthread_mutex_unlock(&c->mu);
}

/* Why the changes of run_id lack its latest state, from the thread's lists, or NULL. */
const char *
changes_marked(struct changes *c, const char *run_id)
{
	const char *why = NULL;

	if (c == NULL)
		return NULL;
	pthread_mutex_lock(&c->mu);
	for (const struct changes_mark *f = c->ending.head; f != NULL && !why; f = f->next)
		if (strcmp(f->run_id, run_id) == 0)
			why = CHANGES_ENDING_WHY;
	for (const struct changes_mark *f = c->failed.head; f != NULL && !why; f = f->next)
		if (strcmp(f->run_id, run_id) == 0)
			why = CHANGES_FAILED_WHY;
	pthread_mutex_unlock(&c->mu);
	return why;
}

void
changes_add_incomplete(cJSON *obj, const char *why)
{
	cJSON_AddBoolToObject(obj, "incomplete", why != NULL);
	if (why != NULL)
		cJSON_AddStringToObject(obj, "incompleteReason", why);
	else
		cJSON_AddNullToObject(obj, "incompleteReason");
}
