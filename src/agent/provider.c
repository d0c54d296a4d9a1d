#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "xalloc.h"

static const struct provider_ops *const provider_kinds[] = {
	&provider_replay_ops,
	&provider_openai_ops,
	&provider_anthropic_ops,
};

struct provider *
provider_new(const struct agent_config *cfg, struct host *host)
{
	for (size_t i = 0; i < sizeof provider_kinds / sizeof *provider_kinds; i++) {
		struct provider *p;

		if (strcmp(provider_kinds[i]->kind, cfg->provider_kind) != 0)
			continue;
		p = xcalloc(1, sizeof *p);
		p->ops = provider_kinds[i];
		p->cfg = cfg;
		p->host = host;
		return p;
	}
	return NULL;
}

void
provider_free(struct provider *p)
{
	if (p == NULL)
		return;
	if (p->ops->close != NULL)
		p->ops->close(p);
	free(p);
}

void
turn_init(struct turn *t)
{
	memset(t, 0, sizeof *t);
	buf_init(&t->text, 0);
}

void
turn_free(struct turn *t)
{
	buf_free(&t->text);
	cJSON_Delete(t->reasoning);
	t->reasoning = NULL;
	tool_calls_free(t->calls, t->ncalls);
	t->calls = NULL;
	t->ncalls = 0;
}

void
turn_add_call(struct turn *t, const char *id, const char *name, const char *args)
{
	struct tool_call *c;

	t->calls = xrealloc(t->calls, (t->ncalls + 1) * sizeof *t->calls);
	c = &t->calls[t->ncalls++];
	c->id = xstrdup(id);
	c->name = xstrdup(name);
	c->arguments = xstrdup(args);
}

void
provider_cut_call(struct turn *out, const char *name, size_t bytes)
{
	out->cut = true;
	snprintf(out->cut_call, sizeof out->cut_call, "%s", name[0] ? name : "a tool");
	out->cut_call[agent_utf8_cut(out->cut_call, strlen(out->cut_call))] = '\0';
	out->cut_bytes = bytes;
}

void
provider_made_up_id(char *id, size_t len, int index)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static unsigned long seq;
	unsigned long n;

	pthread_mutex_lock(&mu);
	n = ++seq;
	pthread_mutex_unlock(&mu);
	/* random() is seeded per process; seq tells the calls of one process apart. */
	snprintf(id, len, "call_%08lx%04lx_%d", (unsigned long)random() & 0xffffffffUL, n & 0xffff,
	    index);
}
