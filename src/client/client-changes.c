/* A run's workspace changes: the list, the diff and the revert (an extension beyond the spec). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

/* Largest diff accepted: the service cuts the whole diff at 8 MiB. */
#define CHANGES_MAX_DIFF (CLIENT_MAX_BODY)

char
td_change_letter(const char *status)
{
	if (status == NULL)
		return '?';
	if (strcmp(status, "type-changed") == 0)
		return 'T';
	return (char)toupper((unsigned char)status[0]);
}

static void
changes_file_clear(struct td_change_file *f)
{
	free(f->path);
	free(f->status);
	free(f->old_mode);
	free(f->new_mode);
	memset(f, 0, sizeof *f);
}

void
td_changes_free(struct td_changes *ch)
{
	if (ch == NULL)
		return;
	for (size_t i = 0; i < ch->file_count; i++)
		changes_file_clear(&ch->files[i]);
	free(ch->files);
	free(ch->run_id);
	free(ch->from_run_id);
	free(ch->reverted_at);
	free(ch->incomplete_reason);
	free(ch->json);
	free(ch);
}

/* obj[key] as a whole number, or 0. */
static long
changes_number(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

static bool
changes_flag(const cJSON *obj, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/* Fills ch from the answer's object; false when it is not a changes answer. */
static bool
changes_from_json(struct td_changes *ch, const cJSON *obj, const char *raw)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(obj, "files");
	const cJSON *totals = cJSON_GetObjectItemCaseSensitive(obj, "totals");
	const cJSON *from = cJSON_GetObjectItemCaseSensitive(obj, "from");
	const cJSON *item;

	if (json_get_string(obj, "runId") == NULL || !cJSON_IsArray(files))
		return false;
	ch->run_id = client_string(obj, "runId");
	ch->from_run_id = client_string(from, "runId");
	ch->live = changes_flag(obj, "live");
	ch->reverted_at = client_string(obj, "revertedAt");
	if (changes_flag(obj, "incomplete"))
		ch->incomplete_reason = json_get_string(obj, "incompleteReason") ?
		    client_string(obj, "incompleteReason") : xstrdup("no reason given");
	ch->files = xcalloc((size_t)cJSON_GetArraySize(files) + 1, sizeof *ch->files);
	cJSON_ArrayForEach(item, files) {
		struct td_change_file *f = &ch->files[ch->file_count];

		if (json_get_string(item, "path") == NULL || json_get_string(item, "status") == NULL)
			return false;
		f->path = client_string(item, "path");
		f->status = client_string(item, "status");
		f->additions = changes_number(item, "additions");
		f->deletions = changes_number(item, "deletions");
		f->binary = changes_flag(item, "binary");
		f->too_large = changes_flag(item, "tooLarge");
		f->old_mode = client_string(item, "oldMode");
		f->new_mode = client_string(item, "newMode");
		ch->file_count++;
	}
	ch->total_files = cJSON_IsObject(totals) ? changes_number(totals, "files") :
	    (long)ch->file_count;
	ch->total_additions = changes_number(totals, "additions");
	ch->total_deletions = changes_number(totals, "deletions");
	ch->json = xstrdup(raw);
	return true;
}

/* "/api/v1/runs/<id>/<suffix>" with ?from= when from is given; free() it. */
static char *
changes_path(const char *run_id, const char *suffix, const char *from)
{
	return client_query_add(client_item_path("runs", run_id, suffix), "from", from);
}

/* The most pages td_get_run_changes reads (the service's 500,000 entries fit). */
#define CHANGES_MAX_PAGES 1000

enum td_code
td_get_run_changes(struct td_client *c, const char *run_id, const char *from,
    const struct td_request_options *opts, struct td_changes **out, struct td_error *err)
{
	struct client_response resp;
	struct td_changes *ch;
	enum td_code rc;
	cJSON *whole = NULL;
	char *path, *cursor = NULL, *text;

	*out = NULL;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	/* Page by page (nextCursor), into one answer whose files are all of them. */
	for (int page = 0;; page++) {
		const cJSON *next;

		path = client_query_add(changes_path(run_id, "/changes", from), "cursor", cursor);
		rc = client_call(c, "GET", path, NULL, false, opts, &resp, err);
		free(path);
		free(cursor);
		cursor = NULL;
		if (rc != TD_OK)
			break;
		if (!cJSON_IsObject(resp.json) ||
		    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(resp.json, "files"))) {
			rc = client_malformed(&resp, "changes list", err);
			break;
		}
		next = cJSON_GetObjectItemCaseSensitive(resp.json, "nextCursor");
		if (cJSON_IsString(next) && page + 1 < CHANGES_MAX_PAGES)
			cursor = xstrdup(next->valuestring);
		if (whole == NULL) {
			whole = resp.json;
			resp.json = NULL;
		} else {
			cJSON *files = cJSON_GetObjectItemCaseSensitive(resp.json, "files");
			cJSON *all = cJSON_GetObjectItemCaseSensitive(whole, "files");

			while (files->child != NULL)
				cJSON_AddItemToArray(all, cJSON_DetachItemViaPointer(files,
				    files->child));
		}
		client_response_free(&resp);
		if (cursor == NULL)
			break;
	}
	if (rc != TD_OK) {
		client_response_free(&resp);
		cJSON_Delete(whole);
		return rc;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(whole, "nextCursor");
	cJSON_AddNullToObject(whole, "nextCursor");
	text = cJSON_PrintUnformatted(whole);
	ch = xcalloc(1, sizeof *ch);
	if (text != NULL && changes_from_json(ch, whole, text)) {
		*out = ch;
	} else {
		td_changes_free(ch);
		rc = client_fail(err, TD_INVALID_RESPONSE, "the service sent a malformed changes "
		    "list");
	}
	free(text);
	cJSON_Delete(whole);
	return rc;
}

/* A diff being received. */
struct changes_diff {
	struct buf text;
	bool truncated;
	struct td_error *err;
};

static void
changes_diff_header(void *arg, const char *line, size_t len)
{
	struct changes_diff *d = arg;
	const char *v;
	size_t vlen;

	if ((v = client_header_value(line, len, "X-Taskdeck-Truncated", &vlen)) != NULL)
		d->truncated = vlen == 4 && strncmp(v, "true", 4) == 0;
}

static enum td_code
changes_diff_start(void *arg, long status)
{
	struct changes_diff *d = arg;

	if (status != 200) {
		return client_fail(d->err, TD_INVALID_RESPONSE,
		    "the service answered a diff with HTTP %ld", status);
	}
	return TD_OK;
}

static enum td_code
changes_diff_data(void *arg, const char *data, size_t len)
{
	struct changes_diff *d = arg;

	if (!buf_append(&d->text, data, len)) {
		return client_fail(d->err, TD_INVALID_RESPONSE,
		    "the diff is larger than %u bytes", CHANGES_MAX_DIFF);
	}
	return TD_OK;
}

enum td_code
td_get_run_diff(struct td_client *c, const char *run_id, const char *path,
    const char *from, const struct td_request_options *opts, char **out,
    bool *truncated, struct td_error *err)
{
	struct changes_diff d = { .err = err };
	struct client_stream stream = {
		.on_header = changes_diff_header, .on_start = changes_diff_start,
		.on_data = changes_diff_data, .arg = &d,
	};
	struct client_response resp;
	enum td_code rc;
	char *url;

	*out = NULL;
	if (truncated != NULL)
		*truncated = false;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	buf_init(&d.text, CHANGES_MAX_DIFF);
	url = client_query_add(changes_path(run_id, "/changes/diff", from), "path", path);
	rc = client_stream_get(c, url, &stream, opts, &resp, err);
	if (rc == TD_OK) {
		buf_append(&d.text, "", 0);
		*out = d.text.data != NULL ? buf_steal(&d.text) : xstrdup("");
		if (truncated != NULL)
			*truncated = d.truncated;
	}
	buf_free(&d.text);
	client_response_free(&resp);
	free(url);
	return rc;
}

void
td_revert_free(struct td_revert *rv)
{
	if (rv == NULL)
		return;
	for (size_t i = 0; i < rv->reverted_count; i++)
		free(rv->reverted[i]);
	free(rv->reverted);
	for (size_t i = 0; i < rv->conflict_count; i++) {
		free(rv->conflicts[i].path);
		free(rv->conflicts[i].reason);
	}
	free(rv->conflicts);
	free(rv->run_id);
	free(rv->reverted_at);
	free(rv->json);
	free(rv);
}

/* The conflicts of a revert_conflict problem: in error.details, error, or the body. */
static const cJSON *
changes_conflicts(const cJSON *doc)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const cJSON *places[] = { cJSON_GetObjectItemCaseSensitive(e, "details"), e, doc };

	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(places[i], "conflicts");

		if (cJSON_IsArray(list))
			return list;
	}
	return NULL;
}

/* The revert's answer, or a conflict's problem (conflicts only), as a td_revert. */
static struct td_revert *
changes_revert_from_json(const cJSON *doc, const char *raw, const char *run_id)
{
	struct td_revert *rv = xcalloc(1, sizeof *rv);
	const cJSON *paths = cJSON_GetObjectItemCaseSensitive(doc, "reverted");
	const cJSON *conflicts = changes_conflicts(doc);
	const cJSON *item;

	rv->run_id = client_string_or(doc, "runId", run_id);
	rv->reverted_at = client_string(doc, "revertedAt");
	rv->reverted = xcalloc((size_t)cJSON_GetArraySize(paths) + 1, sizeof *rv->reverted);
	cJSON_ArrayForEach(item, paths) {
		if (cJSON_IsString(item))
			rv->reverted[rv->reverted_count++] = xstrdup(item->valuestring);
	}
	rv->conflicts = xcalloc((size_t)cJSON_GetArraySize(conflicts) + 1,
	    sizeof *rv->conflicts);
	cJSON_ArrayForEach(item, conflicts) {
		struct td_revert_conflict *k = &rv->conflicts[rv->conflict_count];

		if (json_get_string(item, "path") == NULL)
			continue;
		k->path = client_string(item, "path");
		k->reason = client_string_or(item, "reason", "changed since the run");
		rv->conflict_count++;
	}
	rv->json = xstrdup(raw != NULL ? raw : "{}");
	return rv;
}

enum td_code
td_revert_run(struct td_client *c, const char *run_id, bool force,
    const struct td_request_options *opts, struct td_revert **out, struct td_error *err)
{
	struct client_response resp;
	enum td_code rc;
	cJSON *doc;
	char *path;

	*out = NULL;
	if (run_id == NULL || *run_id == '\0')
		return client_fail(err, TD_INVALID_ARGUMENT, "a run id is required");
	path = client_item_path("runs", run_id, "/revert");
	rc = client_call(c, "POST", path, force ? "{\"force\":true}" : "{}", false, opts,
	    &resp, err);
	if (rc == TD_OK) {
		*out = changes_revert_from_json(resp.json, resp.body.data, run_id);
	} else if (rc == TD_REVERT_CONFLICT) {
		doc = json_parse(resp.body.data, resp.body.len);
		*out = changes_revert_from_json(doc, resp.body.data, run_id);
		cJSON_Delete(doc);
	}
	client_response_free(&resp);
	free(path);
	return rc;
}
