/*
 * What the changes of a run lack (changes-int.h): the snapshot thread's lists
 * of runs whose latest snapshot failed or whose end snapshot is still being
 * taken, kept in memory (the disk may be full), and how an answer says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
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

char *
changes_walk_incomplete(const struct changes_walk_stats *stats)
{
	struct buf b;

	buf_init(&b, 0);
	if (stats->over_cap > 0)
		buf_printf(&b, "%sthe walk stopped at %d entries: %ld more names were left out, "
		    "with what they hold", b.len ? "; " : "", CHANGES_WALK_MAX_ENTRIES, stats->over_cap);
	if (stats->too_deep > 0)
		buf_printf(&b, "%s%ld directories deeper than %d levels were left out",
		    b.len ? "; " : "", stats->too_deep, CHANGES_WALK_MAX_DEPTH - 1);
	if (stats->bad_names > 0)
		buf_printf(&b, "%s%ld names that are not UTF-8 were left out", b.len ? "; " : "",
		    stats->bad_names);
	if (stats->over_quota > 0)
		buf_printf(&b, "%sthe store reached changes.quotaBytes (or all the stores "
		    "changes.totalQuotaBytes): %ld entries could not be stored and were left out",
		    b.len ? "; " : "", stats->over_quota);
	if (stats->changed > 0)
		buf_printf(&b, "%s%ld %s changed or went after the start snapshot listed %s and "
		    "before it read %s (the run had started meanwhile), so %s state before the "
		    "run is not known and %s left out: %s%s", b.len ? "; " : "", stats->changed,
		    stats->changed == 1 ? "entry" : "entries", stats->changed == 1 ? "it" : "them",
		    stats->changed == 1 ? "it" : "them", stats->changed == 1 ? "its" : "their",
		    stats->changed == 1 ? "it is" : "they are", stats->changed_names,
		    stats->changed > stats->changed_named ? ", ..." : "");
	if (stats->unreadable > stats->over_quota)
		buf_printf(&b, "%s%ld entries could not be read or stored", b.len ? "; " : "",
		    stats->unreadable - stats->over_quota);
	if (b.len == 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}
