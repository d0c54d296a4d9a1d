/*
 * The tools the model may call.  Each is one entry of a table: its name,
 * description and JSON Schema for the providers, whether it has side
 * effects (denied by read-only, asked by ask), and its handler.
 */
#ifndef TD_AGENT_TOOLS_H
#define TD_AGENT_TOOLS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "buf.h"

struct host;

#define TOOL_SIDE_EFFECT 0x1	/* changes files or runs things */

struct tool_ctx {
	const struct agent_config *cfg;
	struct host *host;
};

/* What a call produced: text for the model and a summary for people. */
struct tool_result {
	struct buf content;
	bool failed;
	char summary[AGENT_SUMMARY_MAX + 1];
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

const struct tool *tools_find(const char *name);
/* [{name, description, parameters}] of every tool offered to the model. */
cJSON *tools_definitions(void);

void tool_result_init(struct tool_result *res);
void tool_result_free(struct tool_result *res);
/* Sets the content (and the summary when NULL-summary is not wanted) of a failure. */
void tool_result_fail(struct tool_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tool_result_summary(struct tool_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* run_command (tool-command.c). */
int tool_run_command(const struct tool_ctx *ctx, const cJSON *args, struct tool_result *res);
void tool_describe_command(const cJSON *args, char *out, size_t len);

#endif
