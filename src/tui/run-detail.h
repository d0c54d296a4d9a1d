/*
 * What a run's detail says, in the words of `taskdeck runs show`: the
 * dashboard's detail view (`i`) and the CLI print the same keys with the same
 * values.  No curses here.
 */
#ifndef TD_TUI_RUN_DETAIL_H
#define TD_TUI_RUN_DETAIL_H

#include <stdbool.h>
#include <stddef.h>

#include "taskdeck.h"

/* One artifact of the run: its name and size in bytes (-1: unknown). */
struct run_detail_artifact {
	const char *name;
	long long size;
};

/* One line of the detail: key (as runs show names it) and its value. */
typedef void (*run_detail_fn)(void *ctx, const char *key, const char *value);

/*
 * Every line of the detail view, in its order: status, prompt, the config,
 * profile, turn intent, cwd, tokens, cost, duration, error, artifacts,
 * review, attention.  A member the run has not is "-".  now_ms gives the
 * duration of a run still running.
 */
void run_detail_lines(const struct td_run *r, const struct run_detail_artifact *arts,
    size_t art_count, long long now_ms, run_detail_fn fn, void *ctx);
/*
 * The lines runs show adds to the run's members: tokens, duration and
 * artifacts (what the members do not say as such).
 */
void run_detail_derived(const struct td_run *r, const struct run_detail_artifact *arts,
    size_t art_count, long long now_ms, run_detail_fn fn, void *ctx);

/* "-", "350 tok", "1.2k tok", "12k tok" (n <= 0: "-"); unit false drops " tok". */
void run_detail_tokens(long long n, bool unit, char *out, size_t len);
/* Milliseconds from started_at to finished_at (or now_ms); -1 before the start. */
long long run_detail_ms(const struct td_run *r, long long now_ms);

#endif
