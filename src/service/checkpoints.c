/* Checkpoints of version 2, stored as a head and appended messages. */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "checkpoints.h"
#include "json.h"
#include "log.h"
#include "resource.h"
#include "runs.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define CHECKPOINT_MESSAGES_MAX 100000		/* the agent's bound (conv.h) */
#define CHECKPOINT_READ_BYTES (900 * 1024)	/* one checkpoint.read answer, about */
#define CHECKPOINT_OUTPUT_MAX (1024 * 1024)

struct checkpoint_log {
	long pending_from;	/* the index of pending's first message */
	cJSON *pending;		/* printed messages not yet stored (strings) */
};

void
checkpoint_log_free(struct checkpoint_log *cl)
{
	if (cl == NULL)
		return;
	cJSON_Delete(cl->pending);
	free(cl);
}

static long
cp_int(const cJSON *o, const char *key)
{
	return (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool
cp_has_int(const cJSON *o, const char *key, double min, double max)
{
	return cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, key)) &&
	    json_check_int(o, key, min, max);
}

/* Adds the line's messages to what is pending; false with *why when they do not follow. */
static bool
cp_take(struct checkpoint_log *cl, const cJSON *cp, bool fresh, const char **why)
{
	const cJSON *append = cJSON_GetObjectItemCaseSensitive(cp, "append"), *m;
	long from = cp_int(cp, "from");
	long have = cl->pending_from + cJSON_GetArraySize(cl->pending);

	if (fresh)
		cl->pending_from = have = from;
	if (from > have) {
		*why = "a checkpoint that skips messages";
		return false;
	}
	if (from < cl->pending_from) {
		cJSON_Delete(cl->pending);
		cl->pending = cJSON_CreateArray();
		cl->pending_from = from;
	}
	while (cl->pending_from + cJSON_GetArraySize(cl->pending) > from)
		cJSON_DeleteItemFromArray(cl->pending, cJSON_GetArraySize(cl->pending) - 1);
	cJSON_ArrayForEach(m, append) {
		char *text;

		if (!cJSON_IsObject(m) || json_get_string(m, "role") == NULL ||
		    json_get_string(m, "text") == NULL) {
			*why = "a checkpoint message without role or text";
			return false;
		}
		text = json_print(m);
		cJSON_AddItemToArray(cl->pending, cJSON_CreateString(text));
		free(text);
	}
	return true;
}

/* One transaction: the pending messages, then the head (and the output). */
static bool
cp_write(struct checkpoint_log *cl, struct store *st, const char *run_id, const char *head,
    const struct buf *output)
{
	sqlite3 *db = store_lock(st);
	sqlite3_stmt *s;
	const cJSON *m;
	long idx = cl->pending_from;
	bool ok = store_begin(st);

	if (ok) {
		s = store_stmt(st, "DELETE FROM run_messages WHERE run_id = ?1 AND idx >= ?2");
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, idx);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	s = store_stmt(st, "INSERT INTO run_messages (run_id, idx, body) VALUES (?1, ?2, ?3)");
	cJSON_ArrayForEach(m, cl->pending) {
		if (!ok)
			break;
		sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, idx++);
		sqlite3_bind_text(s, 3, m->valuestring, -1, SQLITE_STATIC);
		ok = sqlite3_step(s) == SQLITE_DONE;
		sqlite3_reset(s);
	}
	if (ok)
		ok = runs_checkpoint_head(st, run_id, head, output == NULL ? NULL :
		    output->data ? output->data : "", output == NULL ? 0 : output->len);
	if (!ok)
		log_error("run %s: cannot store a checkpoint: %s", run_id, sqlite3_errmsg(db));
	if (ok)
		ok = store_commit(st);
	else
		store_rollback(st);
	store_unlock(st);
	return ok;
}

bool
checkpoint_store(struct checkpoint_log **clp, struct store *st, const char *run_id,
    const cJSON *cp, const struct buf *output, bool *stored, const char **why)
{
	struct checkpoint_log *cl = *clp;
	const cJSON *append = cJSON_GetObjectItemCaseSensitive(cp, "append");
	bool fresh = cl == NULL;
	cJSON *head;
	char *text;

	*stored = false;
	if (!cp_has_int(cp, "from", 0, CHECKPOINT_MESSAGES_MAX) ||
	    !cp_has_int(cp, "messageCount", 1, CHECKPOINT_MESSAGES_MAX) ||
	    !cp_has_int(cp, "outputLen", 0, CHECKPOINT_OUTPUT_MAX) || !cJSON_IsArray(append) ||
	    cp_int(cp, "from") + cJSON_GetArraySize(append) != cp_int(cp, "messageCount")) {
		*why = "a malformed checkpoint";
		return false;
	}
	if (fresh) {
		cl = *clp = xcalloc(1, sizeof *cl);
		cl->pending = cJSON_CreateArray();
	}
	if (!cp_take(cl, cp, fresh, why))
		return false;
	head = cJSON_Duplicate(cp, true);
	cJSON_DeleteItemFromObjectCaseSensitive(head, "append");
	cJSON_DeleteItemFromObjectCaseSensitive(head, "from");
	text = json_print(head);
	cJSON_Delete(head);
	if (cp_write(cl, st, run_id, text, output)) {
		cJSON_Delete(cl->pending);
		cl->pending = cJSON_CreateArray();
		cl->pending_from = cp_int(cp, "messageCount");
		*stored = true;
	}
	free(text);
	return true;
}

cJSON *
checkpoint_read(struct store *st, const char *run_id, const cJSON *params, const char **why)
{
	sqlite3_stmt *s;
	cJSON *result, *msgs;
	long from, next;
	size_t bytes = 0;

	if (!cp_has_int(params, "from", 0, CHECKPOINT_MESSAGES_MAX)) {
		*why = "from must be a message index";
		return NULL;
	}
	from = next = cp_int(params, "from");
	result = cJSON_CreateObject();
	msgs = cJSON_AddArrayToObject(result, "messages");
	store_lock(st);
	s = store_stmt(st, "SELECT idx, body FROM run_messages WHERE run_id = ?1 AND idx >= ?2"
	    " ORDER BY idx");
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, from);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *body = (const char *)sqlite3_column_text(s, 1);
		size_t len = (size_t)sqlite3_column_bytes(s, 1);
		cJSON *m;

		if (sqlite3_column_int64(s, 0) != next || (next > from &&
		    bytes + len > CHECKPOINT_READ_BYTES))
			break;
		if (!cJSON_IsObject(m = json_parse(body, len))) {
			cJSON_Delete(m);
			break;
		}
		cJSON_AddItemToArray(msgs, m);
		bytes += len;
		next++;
	}
	sqlite3_reset(s);
	store_unlock(st);
	if (next == from) {
		cJSON_Delete(result);
		*why = "no stored message at that index";
		return NULL;
	}
	cJSON_AddNumberToObject(result, "next", (double)next);
	return result;
}

void
checkpoint_resume_head(cJSON *cp, const char *stored_output)
{
	size_t len = stored_output ? strlen(stored_output) : 0;
	long want = cp_int(cp, "outputLen");
	char *out;

	if (want >= 0 && (size_t)want < len)
		len = (size_t)want;
	out = xstrndup(stored_output ? stored_output : "", len);
	cJSON_DeleteItemFromObjectCaseSensitive(cp, "output");
	cJSON_AddStringToObject(cp, "output", out);
	free(out);
}
