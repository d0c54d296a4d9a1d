/*
 * The review of a run (docs/agent.md "Review"): one turn of the reviewer's
 * model, which reads the task, the final answer and what changed in the
 * workspace, and answers APPROVE or REQUEST CHANGES with findings.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conv.h"
#include "host.h"
#include "json.h"
#include "provider.h"
#include "review.h"
#include "wsfile.h"
#include "xalloc.h"

#define REVIEW_FILE_SHOWN (8 * 1024)	/* bytes of a changed file shown */
#define REVIEW_FILES_SHOWN (48 * 1024)	/* of all of them */
#define REVIEW_CHANGES_LISTED 200
#define REVIEW_ANSWER_SHOWN (16 * 1024)
#define REVIEW_FINDINGS_MAX 20
#define REVIEW_FINDING_MAX 1000
#define REVIEW_SUMMARY_MAX 4000

static const char review_system[] =
    "You review the work of a coding agent. You get the user's task, the agent's final "
    "answer and the files of the workspace that changed during the run. Check that the "
    "task is done, correctly and completely. Answer with a first line that is exactly "
    "APPROVE or REQUEST CHANGES, then, when you request changes, one finding per line, "
    "each starting with \"- \": what is wrong or missing, and where.";

static int
file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ws_file *)a)->rel, ((const struct ws_file *)b)->rel);
}

/* The file rel in snap (sorted by rel), or NULL. */
static const struct ws_file *
snap_find(const struct ws_snapshot *snap, const char *rel)
{
	struct ws_file key = { .rel = (char *)rel };

	return snap->n ? bsearch(&key, snap->v, snap->n, sizeof key, file_cmp) : NULL;
}

/* Appends the start of the file rel, as the tools may read it. */
static void
show_file(const struct tool_ctx *ctx, const char *rel, struct buf *out, size_t *budget)
{
	char *data, *opened = NULL, *why = NULL;
	size_t want = *budget < REVIEW_FILE_SHOWN ? *budget : REVIEW_FILE_SHOWN, got;
	struct stat st;
	int fd;

	if (want == 0 || wsfile_open(ctx->files, rel, O_RDONLY | O_NONBLOCK, &fd, &st, &opened,
	    &why) != WSFILE_OK) {
		free(why);
		return;
	}
	data = xmalloc(want);
	got = S_ISREG(st.st_mode) ? agent_read_full(fd, data, want) : 0;
	close(fd);
	if (memchr(data, '\0', got) == NULL && got > 0) {
		buf_printf(out, "\n--- %s%s\n", rel, (long long)got < (long long)st.st_size ?
		    " (its start)" : "");
		agent_utf8_append(out, data, got);
		buf_appends(out, "\n");
		*budget -= got;
	}
	free(data);
	free(opened);
}

/* The review's user message: the task, the answer, the changed files. */
static char *
review_prompt(const struct tool_ctx *ctx, const struct ws_snapshot *before,
    struct ws_snapshot *after, const char *task, const char *answer)
{
	struct buf b;
	size_t listed = 0, budget = REVIEW_FILES_SHOWN;
	char *cut = agent_utf8_prefix(answer, REVIEW_ANSWER_SHOWN);

	buf_init(&b, 0);
	buf_printf(&b, "Task:\n%s\n\nThe agent's final answer:\n%s\n\nWhat changed in the "
	    "workspace (%s):\n", task, cut, before->cut || after->cut ?
	    "the workspace is too large to compare in full" : "files added, modified, removed");
	free(cut);
	for (size_t i = 0; i < after->n && listed < REVIEW_CHANGES_LISTED; i++) {
		const struct ws_file *was = snap_find(before, after->v[i].rel);

		if (was != NULL && was->size == after->v[i].size &&
		    was->mtime_ns == after->v[i].mtime_ns)
			continue;
		buf_printf(&b, "%s %s\n", was ? "modified" : "added", after->v[i].rel);
		listed++;
	}
	for (size_t i = 0; i < before->n && listed < REVIEW_CHANGES_LISTED; i++) {
		if (snap_find(after, before->v[i].rel) == NULL) {
			buf_printf(&b, "removed %s\n", before->v[i].rel);
			listed++;
		}
	}
	if (listed == 0)
		buf_appends(&b, "(nothing)\n");
	buf_appends(&b, "\nThe changed files now:\n");
	for (size_t i = 0; i < after->n && budget > 0; i++) {
		const struct ws_file *was = snap_find(before, after->v[i].rel);

		if (was == NULL || was->size != after->v[i].size ||
		    was->mtime_ns != after->v[i].mtime_ns)
			show_file(ctx, after->v[i].rel, &b, &budget);
	}
	return buf_steal(&b);
}

static void
review_text(void *ud, const char *delta, size_t len)
{
	struct buf *b = ud;

	if (b->len + len <= REVIEW_SUMMARY_MAX)
		buf_append(b, delta, len);
}

/* The verdict and findings of the reviewer's text. */
static void
review_parse(const char *text, struct review *out)
{
	const char *line = text;

	while (*line == ' ' || *line == '\n' || *line == '\r' || *line == '*' || *line == '#')
		line++;
	if (strncasecmp(line, "APPROVE", 7) == 0)
		out->verdict = "approved";
	else if (strncasecmp(line, "REQUEST CHANGES", 15) == 0)
		out->verdict = "changes_requested";
	else
		out->verdict = "error";
	for (const char *p = text; p != NULL && *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > 2 && p[0] == '-' && p[1] == ' ' &&
		    cJSON_GetArraySize(out->findings) < REVIEW_FINDINGS_MAX) {
			char *f = xstrndup(p + 2, n - 2 < REVIEW_FINDING_MAX ? n - 2 : REVIEW_FINDING_MAX);
			char *clean = agent_utf8_clean(f);

			clean[strcspn(clean, "\r")] = '\0';
			cJSON_AddItemToArray(out->findings, cJSON_CreateString(clean));
			free(clean);
			free(f);
		}
		p = nl ? nl + 1 : NULL;
	}
}

int
review_run(const struct tool_ctx *ctx, struct host *host, const struct ws_snapshot *before,
    const char *answer, struct review *out)
{
	const struct agent_config *cfg = ctx->cfg;
	struct agent_config rcfg = *cfg;
	struct provider_sink sink;
	struct conversation conv;
	struct agent_error err = { 0 };
	struct ws_snapshot after;
	struct provider *prov;
	struct turn t;
	struct buf text;
	cJSON *tools = cJSON_CreateArray();
	char *prompt;
	int rc;

	out->verdict = "error";
	out->summary = NULL;
	out->findings = cJSON_CreateArray();
	if (cfg->reviewer.provider_kind != NULL) {
		rcfg.provider_kind = cfg->reviewer.provider_kind;
		rcfg.base_url = cfg->reviewer.base_url;
		rcfg.api_key = cfg->reviewer.api_key;
		rcfg.replay_dir = cfg->reviewer.replay_dir;
	}
	if (cfg->reviewer.model != NULL)
		rcfg.model = cfg->reviewer.model;
	rcfg.checkpoint = NULL;
	tool_snapshot(ctx, &after);
	if (after.n > 1)
		qsort(after.v, after.n, sizeof *after.v, file_cmp);
	prompt = review_prompt(ctx, before, &after, cfg->prompt, answer);
	tool_snapshot_free(&after);
	conv_init(&conv, review_system);
	conv_add_user(&conv, prompt);
	free(prompt);
	buf_init(&text, 0);
	sink = (struct provider_sink){ .text = review_text, .ud = &text };
	turn_init(&t);
	prov = provider_new(&rcfg, host);
	rc = prov->ops->open != NULL ? prov->ops->open(prov, &err) : AGENT_OK;
	if (rc == AGENT_OK)
		rc = prov->ops->turn(prov, &conv, tools, &sink, &t, &err);
	out->used = (struct usage){ .input = t.input_tokens, .output = t.output_tokens,
	    .cache_read = t.cache_read_tokens, .cache_write = t.cache_write_tokens };
	if (rc == AGENT_OK) {
		review_parse(text.data ? text.data : "", out);
		out->summary = agent_utf8_clean(text.data ? text.data : "");
	} else if (rc == AGENT_FAILED) {
		out->summary = xasprintf("the review failed: %s: %s", err.code ? err.code : "error",
		    err.message ? err.message : "");
	}
	turn_free(&t);
	provider_free(prov);
	conv_free(&conv);
	buf_free(&text);
	cJSON_Delete(tools);
	agent_error_clear(&err);
	return rc == AGENT_CANCELLED ? AGENT_CANCELLED : AGENT_OK;
}

void
review_send(struct host *host, const struct review *r, int round)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "type", "review");
	cJSON_AddStringToObject(msg, "verdict", r->verdict);
	cJSON_AddItemToObject(msg, "findings", cJSON_Duplicate(r->findings, true));
	cJSON_AddStringToObject(msg, "summary", r->summary ? r->summary : "");
	cJSON_AddNumberToObject(msg, "round", round);
	host_send(host, msg);
}

void
review_free(struct review *r)
{
	free(r->summary);
	cJSON_Delete(r->findings);
	r->summary = NULL;
	r->findings = NULL;
}
