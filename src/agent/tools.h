/*
 * The tools the model may call.  Each is one entry of a table: its name,
 * description and JSON Schema for the providers, flags that say how the loop
 * treats it, and its handler.
 */
#ifndef TD_AGENT_TOOLS_H
#define TD_AGENT_TOOLS_H

#include <stdbool.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "buf.h"

struct host;
struct wsfile_root;

#define TOOL_SIDE_EFFECT 0x1	/* changes files or runs things: denied by read-only, asked by ask */
#define TOOL_AFTER_PLAN 0x2	/* plan-first runs: refused until a plan is approved */
#define TOOL_PLAN_FIRST 0x4	/* offered only in plan-first runs */
#define TOOL_PARALLEL 0x8	/* runs beside the other such calls of its answer (reads, subagents) */
#define TOOL_SUBAGENT 0x10	/* offered only when routing enables subagents, never to one */

/* One step of the approved plan, with the id the service gave it. */
struct plan_step {
	char *id;
	char *title;
};

/* The plan of a plan-first run as the agent knows it (plan_state_free). */
struct plan_state {
	bool plan_first;
	bool approved;		/* the latest proposal was approved */
	unsigned decisions;	/* decisions received so far */
	const char *decision;	/* static: the latest decision, NULL before the first */
	char *feedback;		/* of the latest revise; NULL before */
	struct plan_step *steps;	/* of the approved plan */
	size_t nsteps;
};

void plan_state_free(struct plan_state *plan);

struct tool_ctx {
	const struct agent_config *cfg;
	struct host *host;
	struct plan_state *plan;
	struct wsfile_root *files;	/* the workspace (wsfile.h); NULL: files_why says why */
	const char *files_why;
	const char *call_id;		/* of the call being carried out */
	size_t max_output;		/* bytes of the result: its share of the window; 0: the limit */
};

/* The bytes a result of ctx's call may have (tool_ctx.max_output, else limits.maxToolOutputBytes). */
size_t tool_output_max(const struct tool_ctx *ctx);

/* What a call produced: text for the model and a summary for people. */
struct tool_result {
	struct buf content;
	bool failed;
	bool end_run;		/* the run ends cancelled after this call (a rejected plan) */
	struct usage used;	/* spent by a subagent: added to the run's usage */
	char summary[AGENT_SUMMARY_MAX + 1];
	cJSON *media;		/* images, audio for the model: [{"mimeType", "data"}], or NULL */
};

struct tool {
	const char *name;
	const char *description;
	const char *schema;		/* JSON Schema of the arguments */
	unsigned flags;
	/* AGENT_OK (res says how it went) or AGENT_CANCELLED. */
	int (*exec)(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
	/* One line saying what the call is about to do. */
	void (*describe)(const cJSON *args, char *out, size_t len);
};

/*
 * The tool offered under that name; offer holds TOOL_PLAN_FIRST and
 * TOOL_SUBAGENT when the tools with those flags are offered.
 */
const struct tool *tools_find(const char *name, unsigned offer);
/* [{name, description, parameters}] of every tool offered to the model. */
cJSON *tools_definitions(unsigned offer);

void tool_result_init(struct tool_result *res);
void tool_result_free(struct tool_result *res);
/* Sets the content (and the summary when NULL-summary is not wanted) of a failure. */
void tool_result_fail(struct tool_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tool_result_summary(struct tool_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * args.path (def when absent) opened in the workspace with oflags (wsfile_open),
 * or false with a failure in res.  *rel (malloc'd) is the path as the workspace sees it.
 */
bool tool_open(const struct tool_ctx *ctx, const cJSON *args, const char *def, int oflags,
    int *fd, struct stat *st, char **rel, struct tool_result *res);
/* The names in the directory dfd (not "." and ".."), sorted; NULL when it cannot be read. */
char **tool_dir_names(int dfd, size_t *n);

/* edit_file (tool-edit.c). */
int tool_edit_file(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_edit(const cJSON *args, char *out, size_t len);

/* grep and glob (tool-search.c). */
int tool_grep(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_grep(const cJSON *args, char *out, size_t len);
int tool_glob(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_glob(const cJSON *args, char *out, size_t len);

/* A regular file of the workspace as a review compares it. */
struct ws_file {
	char *rel;
	long long size;
	long long mtime_ns;
};

/* The files of the workspace, in the walk's order (sorted names, depth first). */
struct ws_snapshot {
	struct ws_file *v;
	size_t n, cap;
	bool cut;		/* the walk stopped early or failed: not every file is in */
};

/* The workspace's files as grep and glob walk them (tool-search.c). */
void tool_snapshot(const struct tool_ctx *ctx, struct ws_snapshot *snap);
void tool_snapshot_free(struct ws_snapshot *snap);

/* run_subagent (tool-subagent.c). */
int tool_run_subagent(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_subagent(const cJSON *args, char *out, size_t len);

/* run_command (tool-command.c). */
int tool_run_command(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_command(const cJSON *args, char *out, size_t len);

/* propose_plan and update_plan_step (tool-plan.c). */
int tool_propose_plan(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_propose(const cJSON *args, char *out, size_t len);
int tool_update_plan_step(const struct tool_ctx *ctx, const cJSON *args,
    struct tool_result *res);
void tool_describe_step(const cJSON *args, char *out, size_t len);

#endif
