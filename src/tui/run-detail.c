/* What a run's detail says: shared by the dashboard's detail view and runs show. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "timeutil.h"
#include "tui/run-detail.h"
#include "units.h"
#include "xalloc.h"

/* The members shown, by their dotted keys in runs show, in the view's order. */
static const char *const run_detail_members[] = {
	"status", "prompt", "config.provider", "config.model", "config.framework",
	"config.effort", "permissionProfile", "turnIntent", "network", "cwd", NULL,
};

static const char *const run_detail_after[] = {
	"error.code", "error.message", NULL,
};

static const char *const run_detail_end[] = {
	"review.verdict", "review.round", "review.summary", "review.findings",
	"attention.kind", "attention.since", "id", "sessionId", "createdAt", "startedAt",
	"finishedAt", NULL,
};

void
run_detail_tokens(long long n, bool unit, char *out, size_t len)
{
	const char *u = unit ? " tok" : "";

	if (n <= 0)
		snprintf(out, len, "-");
	else if (n < 1000)
		snprintf(out, len, "%lld%s", n, u);
	else if (n < 10000)
		snprintf(out, len, "%lld.%lldk%s", n / 1000, n % 1000 / 100, u);
	else
		snprintf(out, len, "%lldk%s", n / 1000, u);
}

long long
run_detail_ms(const struct td_run *r, long long now_ms)
{
	int64_t a, b = now_ms;

	if (r->started_at == NULL || !time_parse_utc(r->started_at, &a) ||
	    (r->finished_at != NULL && !time_parse_utc(r->finished_at, &b)))
		return -1;
	return b - a > 0 ? b - a : 0;
}

/* A member as runs show prints it: a string as it is, null "-", else JSON (malloc'd). */
static char *
run_detail_member(const cJSON *run, const char *key)
{
	char path[64], *dot;
	const cJSON *v = run;
	const char *part = path;

	snprintf(path, sizeof path, "%s", key);
	while (v != NULL && part != NULL) {
		if ((dot = strchr(part, '.')) != NULL)
			*dot = '\0';
		v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, part) : NULL;
		part = dot != NULL ? dot + 1 : NULL;
	}
	if (v == NULL || cJSON_IsNull(v))
		return xstrdup("-");
	if (cJSON_IsString(v))
		return xstrdup(v->valuestring);
	if (cJSON_IsArray(v)) {
		struct buf b;
		const cJSON *item;

		buf_init(&b, 0);
		cJSON_ArrayForEach(item, v) {
			if (cJSON_IsString(item))
				buf_printf(&b, "%s%s", b.len > 0 ? "\n" : "", item->valuestring);
		}
		return b.len > 0 ? buf_steal(&b) : (buf_free(&b), xstrdup("-"));
	}
	return json_print(v);
}

static void
run_detail_each(const cJSON *run, const char *const *keys, run_detail_fn fn, void *ctx)
{
	for (size_t i = 0; keys[i] != NULL; i++) {
		char *v = run_detail_member(run, keys[i]);

		fn(ctx, keys[i], v);
		free(v);
	}
}

/* tokens: "9.5k tok (in 9.1k, out 400, cached 8.0k)", the run rows' format. */
static void
run_detail_tokens_line(const struct td_run *r, run_detail_fn fn, void *ctx)
{
	char total[32], in[32], out[32], cached[32], line[160];

	run_detail_tokens(r->input_tokens + r->output_tokens, true, total, sizeof total);
	run_detail_tokens(r->input_tokens, false, in, sizeof in);
	run_detail_tokens(r->output_tokens, false, out, sizeof out);
	run_detail_tokens(r->cache_read_tokens, false, cached, sizeof cached);
	snprintf(line, sizeof line, "%s (in %s, out %s, cached %s)", total, in, out, cached);
	fn(ctx, "tokens", line);
}

static void
run_detail_duration_line(const struct td_run *r, long long now_ms, run_detail_fn fn,
    void *ctx)
{
	char dur[32];

	units_format_duration(run_detail_ms(r, now_ms), dur, sizeof dur);
	fn(ctx, "duration", dur);
}

/* artifacts: "report.md (2.1 KiB), notes.md (300 B)", or "-". */
static void
run_detail_artifacts_line(const struct run_detail_artifact *arts, size_t art_count,
    run_detail_fn fn, void *ctx)
{
	struct buf b;

	buf_init(&b, 0);
	for (size_t i = 0; i < art_count; i++) {
		char size[32];

		units_format_size(arts[i].size, size, sizeof size);
		buf_printf(&b, "%s%s (%s)", i > 0 ? ", " : "", arts[i].name, size);
	}
	fn(ctx, "artifacts", b.len > 0 ? b.data : "-");
	buf_free(&b);
}

/* changes: "2 files +4 -1" in its workspace, "none", or "-" before its first snapshot. */
static void
run_detail_changes_line(const struct td_run *r, run_detail_fn fn, void *ctx)
{
	char line[96];

	if (!r->changes.known)
		snprintf(line, sizeof line, "-");
	else if (r->changes.files == 0)
		snprintf(line, sizeof line, "none");
	else
		snprintf(line, sizeof line, "%ld file%s +%ld -%ld", r->changes.files,
		    r->changes.files == 1 ? "" : "s", r->changes.additions, r->changes.deletions);
	fn(ctx, "changes", line);
}

void
run_detail_derived(const struct td_run *r, const struct run_detail_artifact *arts,
    size_t art_count, long long now_ms, run_detail_fn fn, void *ctx)
{
	run_detail_tokens_line(r, fn, ctx);
	run_detail_duration_line(r, now_ms, fn, ctx);
	run_detail_artifacts_line(arts, art_count, fn, ctx);
	run_detail_changes_line(r, fn, ctx);
}

void
run_detail_lines(const struct td_run *r, const struct run_detail_artifact *arts,
    size_t art_count, long long now_ms, run_detail_fn fn, void *ctx)
{
	cJSON *run = cJSON_Parse(r->json != NULL ? r->json : "{}");
	char *cost;

	run_detail_each(run, run_detail_members, fn, ctx);
	run_detail_tokens_line(r, fn, ctx);
	cost = run_detail_member(run, "cost");
	fn(ctx, "cost", cost);
	free(cost);
	run_detail_duration_line(r, now_ms, fn, ctx);
	run_detail_each(run, run_detail_after, fn, ctx);
	run_detail_artifacts_line(arts, art_count, fn, ctx);
	run_detail_changes_line(r, fn, ctx);
	run_detail_each(run, run_detail_end, fn, ctx);
	cJSON_Delete(run);
}
