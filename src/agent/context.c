#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "context.h"
#include "provider.h"
#include "xalloc.h"

#define CONTEXT_DEFAULT_WINDOW 32768	/* an unknown model: conservative */
#define CONTEXT_BYTES_PER_TOKEN 3.0	/* before any usage: rather more tokens than fewer */
#define CONTEXT_RESULT_MAX 2048		/* of one tool result in a transcript */
#define CONTEXT_ARGS_MAX 512		/* of one call's arguments in a transcript */

/* Windows of well-known model families, by name prefix (input tokens). */
static const struct {
	const char *prefix;
	long window;
} context_known[] = {
	{ "claude-", 200000 },
	{ "gpt-4.1", 1000000 },
	{ "gpt-4o", 128000 },
	{ "gpt-5", 272000 },
	{ "o3", 200000 },
	{ "o4", 200000 },
};

void
context_init(struct context *cx, const struct agent_config *cfg, size_t tools_bytes)
{
	memset(cx, 0, sizeof *cx);
	cx->tools_bytes = tools_bytes;
	cx->per_byte = 1.0 / CONTEXT_BYTES_PER_TOKEN;
	if (strcmp(cfg->provider_kind, "replay") == 0)
		return;
	if (cfg->context_window > 0) {
		cx->window = cfg->context_window;
		cx->window_from = "settings";
	} else {
		cx->window = CONTEXT_DEFAULT_WINDOW;
		cx->window_from = "default";
		for (size_t i = 0; i < sizeof context_known / sizeof *context_known; i++) {
			if (strncmp(cfg->model, context_known[i].prefix,
			    strlen(context_known[i].prefix)) == 0)
				cx->window = context_known[i].window;
		}
	}
	cx->reserve = strcmp(cfg->provider_kind, "anthropic") == 0 ? an_max_tokens(cfg->effort) :
	    4096;
	if (cx->reserve > cx->window / 4)
		cx->reserve = cx->window / 4;
}

long
context_estimate(const struct context *cx, const struct conversation *conv)
{
	/* Each message costs a few tokens of framing besides its text. */
	return (long)((double)(conv->bytes + cx->tools_bytes) * cx->per_byte) +
	    4 * (long)conv->n;
}

bool
context_full(const struct context *cx, const struct conversation *conv)
{
	return cx->window > 0 && context_estimate(cx, conv) + cx->reserve > cx->window;
}

void
context_learn(struct context *cx, const struct conversation *conv, long input_tokens)
{
	double per_byte;

	if (input_tokens <= 0 || conv->bytes + cx->tools_bytes == 0)
		return;
	per_byte = (double)input_tokens / (double)(conv->bytes + cx->tools_bytes);
	/* A provider that counts cached tokens apart, or a strange count, is not believed. */
	if (per_byte >= 0.05 && per_byte <= 1.5)
		cx->per_byte = per_byte;
}

static size_t
context_message_bytes(const struct conv_message *m)
{
	size_t n = strlen(m->text);

	for (size_t i = 0; i < m->ncalls; i++)
		n += strlen(m->calls[i].name) + strlen(m->calls[i].arguments);
	return n;
}

size_t
context_recent_start(const struct context *cx, const struct conversation *conv, long budget)
{
	double bytes = 0, room = (double)budget / cx->per_byte;
	size_t start = 0;

	for (size_t i = conv->n; i > 0; i--) {
		const struct conv_message *m = &conv->msgs[i - 1];

		bytes += (double)context_message_bytes(m);
		if (m->role != CONV_ASSISTANT)
			continue;
		if (start != 0 && bytes > room)
			break;
		start = i - 1;
	}
	return start;
}

static void
context_cut_append(struct buf *b, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max) {
		buf_appends(b, s);
		return;
	}
	n = agent_utf8_cut(s, max);
	buf_append(b, s, n);
	buf_printf(b, "… [%zu bytes more]", strlen(s) - n);
}

char *
context_transcript(const struct conversation *conv, size_t end, size_t skip, size_t max)
{
	struct buf b;
	char *out;

	buf_init(&b, 0);
	for (size_t i = 0; i < end && i < conv->n; i++) {
		const struct conv_message *m = &conv->msgs[i];

		if (i == skip)
			continue;
		switch (m->role) {
		case CONV_USER:
			buf_appends(&b, "User: ");
			buf_appends(&b, m->text);
			break;
		case CONV_ASSISTANT:
			buf_appends(&b, "Assistant: ");
			buf_appends(&b, m->text);
			for (size_t k = 0; k < m->ncalls; k++) {
				buf_printf(&b, "\n[called %s with ", m->calls[k].name);
				context_cut_append(&b, m->calls[k].arguments, CONTEXT_ARGS_MAX);
				buf_appends(&b, "]");
			}
			break;
		case CONV_TOOL:
			buf_printf(&b, "Result of %s%s: ", m->tool_name, m->is_error ? " (failed)" : "");
			context_cut_append(&b, m->text, CONTEXT_RESULT_MAX);
			break;
		}
		buf_appends(&b, "\n\n");
	}
	if (b.len <= max)
		return buf_steal(&b);
	/* The start (the task's first steps) and the end (the latest) matter most. */
	{
		size_t head = agent_utf8_cut(b.data, max / 3);
		size_t tail = b.len - (max - head);

		while (tail < b.len && ((unsigned char)b.data[tail] & 0xc0) == 0x80)
			tail++;
		out = xasprintf("%.*s\n[… %zu bytes of the middle left out …]\n%s", (int)head,
		    b.data, tail - head, b.data + tail);
	}
	buf_free(&b);
	return out;
}
