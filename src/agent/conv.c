#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "xalloc.h"

void
conv_init(struct conversation *c, const char *system)
{
	memset(c, 0, sizeof *c);
	c->system = xstrdup(system);
	c->bytes = strlen(system);
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
	c->bytes += strlen(m->text);
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
	for (size_t i = 0; i < ncalls; i++)
		c->bytes += strlen(calls[i].id) + strlen(calls[i].name) + strlen(calls[i].arguments);
}

void
conv_set_text(struct conversation *c, size_t i, const char *text)
{
	struct conv_message *m = &c->msgs[i];

	c->bytes -= strlen(m->text);
	free(m->text);
	m->text = xstrdup(text);
	c->bytes += strlen(m->text);
}

void
conv_add_copy(struct conversation *c, const struct conv_message *m)
{
	struct tool_call *calls = NULL;

	switch (m->role) {
	case CONV_USER:
		conv_add_user(c, m->text);
		break;
	case CONV_ASSISTANT:
		if (m->ncalls > 0)
			calls = xcalloc(m->ncalls, sizeof *calls);
		for (size_t i = 0; i < m->ncalls; i++) {
			calls[i].id = xstrdup(m->calls[i].id);
			calls[i].name = xstrdup(m->calls[i].name);
			calls[i].arguments = xstrdup(m->calls[i].arguments);
		}
		conv_add_assistant(c, m->text, calls, m->ncalls);
		if (m->reasoning != NULL)
			conv_set_reasoning(c, cJSON_Duplicate(m->reasoning, true));
		break;
	case CONV_TOOL:
		conv_add_tool_result(c, m->call_id, m->tool_name, m->text, m->is_error);
		if (m->media != NULL)
			conv_set_media(c, cJSON_Duplicate(m->media, true));
		break;
	}
}

void
conv_add_tool_result(struct conversation *c, const char *call_id,
    const char *name, const char *content, bool is_error)
{
	struct conv_message *m = conv_push(c, CONV_TOOL, content);

	m->call_id = xstrdup(call_id);
	m->tool_name = xstrdup(name);
	m->is_error = is_error;
	c->bytes += strlen(call_id) + strlen(name);
}

void
conv_set_media(struct conversation *c, cJSON *media)
{
	struct conv_message *m = c->n > 0 ? &c->msgs[c->n - 1] : NULL;
	const cJSON *e;

	if (m == NULL || m->role != CONV_TOOL || !cJSON_IsArray(media)) {
		cJSON_Delete(media);
		return;
	}
	cJSON_Delete(m->media);
	m->media = media;
	cJSON_ArrayForEach(e, media) {
		const char *data = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "data"));

		c->bytes += data != NULL ? strlen(data) : 0;
	}
}

void
conv_set_reasoning(struct conversation *c, cJSON *reasoning)
{
	struct conv_message *m = c->n > 0 ? &c->msgs[c->n - 1] : NULL;
	char *text;

	if (m == NULL || m->role != CONV_ASSISTANT || !cJSON_IsObject(reasoning) ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(reasoning, "kind"))) {
		cJSON_Delete(reasoning);
		return;
	}
	cJSON_Delete(m->reasoning);
	m->reasoning = reasoning;
	text = cJSON_PrintUnformatted(reasoning);
	c->bytes += text != NULL ? strlen(text) : 0;
	free(text);
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
		cJSON_Delete(m->media);
		cJSON_Delete(m->reasoning);
	}
	free(c->msgs);
	free(c->system);
	memset(c, 0, sizeof *c);
}

/* The conversation in a checkpoint (docs/host-protocol.md, checkpoint). */
static const char *const conv_roles[] = { [CONV_USER] = "user",
	[CONV_ASSISTANT] = "assistant", [CONV_TOOL] = "tool" };

cJSON *
conv_message_json(const struct conv_message *m)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "role", conv_roles[m->role]);
	cJSON_AddStringToObject(o, "text", m->text);
	if (m->role == CONV_ASSISTANT && m->ncalls > 0) {
		cJSON *calls = cJSON_AddArrayToObject(o, "calls");

		for (size_t k = 0; k < m->ncalls; k++) {
			cJSON *call = cJSON_CreateObject();

			cJSON_AddStringToObject(call, "id", m->calls[k].id);
			cJSON_AddStringToObject(call, "name", m->calls[k].name);
			cJSON_AddStringToObject(call, "arguments", m->calls[k].arguments);
			cJSON_AddItemToArray(calls, call);
		}
	}
	if (m->role == CONV_ASSISTANT && m->reasoning != NULL)
		cJSON_AddItemToObject(o, "reasoning", cJSON_Duplicate(m->reasoning, true));
	if (m->role == CONV_TOOL) {
		cJSON_AddStringToObject(o, "callId", m->call_id);
		cJSON_AddStringToObject(o, "toolName", m->tool_name);
		cJSON_AddBoolToObject(o, "isError", m->is_error);
		if (m->media != NULL)
			cJSON_AddItemToObject(o, "media", cJSON_Duplicate(m->media, true));
	}
	return o;
}

cJSON *
conv_to_json(const struct conversation *c)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < c->n; i++)
		cJSON_AddItemToArray(arr, conv_message_json(&c->msgs[i]));
	return arr;
}

static const char *
conv_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool
conv_from_json(struct conversation *c, const cJSON *arr)
{
	const cJSON *o;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > CONV_MAX_MESSAGES)
		return false;
	cJSON_ArrayForEach(o, arr) {
		const char *role = conv_str(o, "role"), *text = conv_str(o, "text");
		const cJSON *reasoning;

		if (!cJSON_IsObject(o) || role == NULL || text == NULL)
			return false;
		if (strcmp(role, "user") == 0) {
			conv_add_user(c, text);
		} else if (strcmp(role, "assistant") == 0) {
			const cJSON *calls = cJSON_GetObjectItemCaseSensitive(o, "calls"), *k;
			struct tool_call *tc = NULL;
			size_t n = 0, i = 0;

			if (calls != NULL && (!cJSON_IsArray(calls) ||
			    cJSON_GetArraySize(calls) > CONV_MAX_CALLS))
				return false;
			n = calls ? (size_t)cJSON_GetArraySize(calls) : 0;
			if (n > 0)
				tc = xcalloc(n, sizeof *tc);
			cJSON_ArrayForEach(k, calls) {
				const char *id = conv_str(k, "id"), *name = conv_str(k, "name");
				const char *args = conv_str(k, "arguments");

				if (id == NULL || name == NULL || args == NULL) {
					tool_calls_free(tc, i);
					return false;
				}
				tc[i].id = xstrdup(id);
				tc[i].name = xstrdup(name);
				tc[i].arguments = xstrdup(args);
				i++;
			}
			conv_add_assistant(c, text, tc, n);
			reasoning = cJSON_GetObjectItemCaseSensitive(o, "reasoning");
			if (reasoning != NULL && (!cJSON_IsObject(reasoning) ||
			    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(reasoning, "kind"))))
				return false;
			if (reasoning != NULL)
				conv_set_reasoning(c, cJSON_Duplicate(reasoning, true));
		} else if (strcmp(role, "tool") == 0) {
			const char *call_id = conv_str(o, "callId"), *name = conv_str(o, "toolName");
			const cJSON *media = cJSON_GetObjectItemCaseSensitive(o, "media"), *e;

			if (call_id == NULL || name == NULL)
				return false;
			cJSON_ArrayForEach(e, media)
				if (conv_str(e, "mimeType") == NULL || conv_str(e, "data") == NULL)
					return false;
			if (media != NULL && !cJSON_IsArray(media))
				return false;
			conv_add_tool_result(c, call_id, name, text,
			    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "isError")));
			if (media != NULL)
				conv_set_media(c, cJSON_Duplicate(media, true));
		} else {
			return false;
		}
	}
	return true;
}
