#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "xalloc.h"

void
conv_init(struct conversation *c, const char *system)
{
	memset(c, 0, sizeof *c);
	c->system = xstrdup(system);
}

static struct conv_message *
conv_push(struct conversation *c, enum conv_role role, const char *text)
{
	struct conv_message *m;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->msgs = xrealloc(c->msgs, c->cap * sizeof *c->msgs);
	}
	m = &c->msgs[c->n++];
	memset(m, 0, sizeof *m);
	m->role = role;
	m->text = xstrdup(text ? text : "");
	return m;
}

void
conv_add_user(struct conversation *c, const char *text)
{
	conv_push(c, CONV_USER, text);
}

void
conv_add_assistant(struct conversation *c, const char *text,
    struct tool_call *calls, size_t ncalls)
{
	struct conv_message *m = conv_push(c, CONV_ASSISTANT, text);

	m->calls = calls;
	m->ncalls = ncalls;
}

void
conv_add_tool_result(struct conversation *c, const char *call_id,
    const char *name, const char *content, bool is_error)
{
	struct conv_message *m = conv_push(c, CONV_TOOL, content);

	m->call_id = xstrdup(call_id);
	m->tool_name = xstrdup(name);
	m->is_error = is_error;
}

void
tool_calls_free(struct tool_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].id);
		free(calls[i].name);
		free(calls[i].arguments);
	}
	free(calls);
}

void
conv_free(struct conversation *c)
{
	for (size_t i = 0; i < c->n; i++) {
		struct conv_message *m = &c->msgs[i];

		free(m->text);
		tool_calls_free(m->calls, m->ncalls);
		free(m->call_id);
		free(m->tool_name);
	}
	free(c->msgs);
	free(c->system);
	memset(c, 0, sizeof *c);
}
