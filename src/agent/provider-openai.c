/*
 * OpenAI Chat Completions with streaming and tool calls; any compatible
 * server (Ollama, llama.cpp server, vLLM).  POST {baseUrl}/chat/completions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "provider.h"
#include "xalloc.h"

/* A tool call being assembled from its fragments. */
struct oa_call {
	struct buf id;
	struct buf name;
	struct buf args;
	bool used;
};

struct oa_stream {
	const struct provider_sink *sink;
	struct turn *out;
	struct agent_error *err;
	struct oa_call calls[TURN_MAX_CALLS];
	int ncalls;		/* calls begun, in the order they began */
	int slot[TURN_MAX_CALLS];	/* the server's index: the call it continues, + 1 (0: none) */
	bool done;		/* [DONE] */
	bool finished;		/* a finish_reason */
	bool cut;		/* finish_reason "length": the output limit */
	struct buf reasoning;	/* reasoning_content (DeepSeek, llama.cpp, vLLM) or reasoning */
	const char *reasoning_field;
	const char *retry;	/* an error frame worth a retry (overloaded, rate limit, ...) */
};

#define OA_REASONING_MAX (4 * 1024 * 1024)

static cJSON *
oa_message(const char *role, const char *content)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "role", role);
	if (content != NULL)
		cJSON_AddStringToObject(m, "content", content);
	return m;
}

/* The input_audio format of a MIME type Chat Completions takes, or NULL. */
static const char *
oa_audio_format(const char *mime)
{
	if (strcmp(mime, "audio/wav") == 0 || strcmp(mime, "audio/x-wav") == 0)
		return "wav";
	if (strcmp(mime, "audio/mpeg") == 0 || strcmp(mime, "audio/mp3") == 0)
		return "mp3";
	return NULL;
}

/*
 * Tool messages take text only: the images (image_url data URLs) and audio
 * (input_audio) of the tool results that end at msgs[last] follow them in one
 * user message, each introduced by the call it came from.
 */
static void
oa_media_message(const struct conversation *conv, size_t last, cJSON *msgs)
{
	size_t first = last;
	cJSON *parts = NULL, *msg;

	while (first > 0 && conv->msgs[first - 1].role == CONV_TOOL)
		first--;
	for (size_t i = first; i <= last; i++) {
		const struct conv_message *m = &conv->msgs[i];
		const cJSON *e;
		bool said = false;

		cJSON_ArrayForEach(e, m->media) {
			const char *mime = json_get_string(e, "mimeType");
			const char *data = json_get_string(e, "data");
			cJSON *part;

			if (mime == NULL || data == NULL ||
			    (strncmp(mime, "image/", 6) != 0 && oa_audio_format(mime) == NULL))
				continue;
			if (parts == NULL)
				parts = cJSON_CreateArray();
			if (!said) {
				char *intro = xasprintf("What %s returned (call %s):", m->tool_name,
				    m->call_id);

				part = cJSON_CreateObject();
				cJSON_AddStringToObject(part, "type", "text");
				cJSON_AddStringToObject(part, "text", intro);
				cJSON_AddItemToArray(parts, part);
				free(intro);
				said = true;
			}
			part = cJSON_CreateObject();
			if (strncmp(mime, "image/", 6) == 0) {
				char *url = xasprintf("data:%s;base64,%s", mime, data);

				cJSON_AddStringToObject(part, "type", "image_url");
				cJSON_AddStringToObject(cJSON_AddObjectToObject(part, "image_url"), "url",
				    url);
				free(url);
			} else {
				cJSON *audio;

				cJSON_AddStringToObject(part, "type", "input_audio");
				audio = cJSON_AddObjectToObject(part, "input_audio");
				cJSON_AddStringToObject(audio, "data", data);
				cJSON_AddStringToObject(audio, "format", oa_audio_format(mime));
			}
			cJSON_AddItemToArray(parts, part);
		}
	}
	if (parts == NULL)
		return;
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "role", "user");
	cJSON_AddItemToObject(msg, "content", parts);
	cJSON_AddItemToArray(msgs, msg);
}

/*
 * The reasoning a server sent with an answer goes back in the field it came
 * in (DeepSeek refuses a conversation whose answers with calls lack their
 * reasoning_content).  Once a server reasons, an answer of its without any
 * (a call made without thinking) gets the field empty.
 */
static void
oa_reasoning(cJSON *msg, const struct conv_message *m, const char *field)
{
	const cJSON *r = m->reasoning;

	if (r != NULL && strcmp(json_get_string(r, "kind"), "openai") == 0 &&
	    json_get_string(r, "field") != NULL && json_get_string(r, "text") != NULL)
		cJSON_AddStringToObject(msg, json_get_string(r, "field"), json_get_string(r, "text"));
	else if (field != NULL && m->ncalls > 0)
		cJSON_AddStringToObject(msg, field, "");
}

/* The field the server sends its reasoning in, if it sent any in this conversation. */
static const char *
oa_reasoning_field(const struct conversation *conv)
{
	for (size_t i = 0; i < conv->n; i++) {
		const cJSON *r = conv->msgs[i].reasoning;

		if (r != NULL && strcmp(json_get_string(r, "kind"), "openai") == 0)
			return json_get_string(r, "field");
	}
	return NULL;
}

static cJSON *
oa_assistant(const struct conv_message *m, const char *reasoning_field)
{
	cJSON *msg = oa_message("assistant", NULL);
	cJSON *calls;

	if (m->ncalls == 0 || m->text[0] != '\0')
		cJSON_AddStringToObject(msg, "content", m->text);
	else
		cJSON_AddNullToObject(msg, "content");
	oa_reasoning(msg, m, reasoning_field);
	if (m->ncalls == 0)
		return msg;
	calls = cJSON_AddArrayToObject(msg, "tool_calls");
	for (size_t i = 0; i < m->ncalls; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON *fn = cJSON_AddObjectToObject(c, "function");

		cJSON_AddStringToObject(c, "id", m->calls[i].id);
		cJSON_AddStringToObject(c, "type", "function");
		cJSON_AddStringToObject(fn, "name", m->calls[i].name);
		cJSON_AddStringToObject(fn, "arguments", m->calls[i].arguments);
		cJSON_AddItemToArray(calls, c);
	}
	return msg;
}

static char *
oa_request(const struct provider *p, const struct conversation *conv, const cJSON *tools)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *msgs, *defs, *t;
	const char *field = oa_reasoning_field(conv);
	char *body;

	cJSON_AddStringToObject(req, "model", p->cfg->model);
	cJSON_AddTrueToObject(req, "stream");
	cJSON_AddTrueToObject(cJSON_AddObjectToObject(req, "stream_options"), "include_usage");
	msgs = cJSON_AddArrayToObject(req, "messages");
	cJSON_AddItemToArray(msgs, oa_message("system", conv->system));
	for (size_t i = 0; i < conv->n; i++) {
		const struct conv_message *m = &conv->msgs[i];
		cJSON *msg;

		if (m->role == CONV_USER)
			msg = oa_message("user", m->text);
		else if (m->role == CONV_ASSISTANT)
			msg = oa_assistant(m, field);
		else {
			msg = oa_message("tool", m->text);
			cJSON_AddStringToObject(msg, "tool_call_id", m->call_id);
		}
		cJSON_AddItemToArray(msgs, msg);
		/* After the last of consecutive tool results: their media, as a user message. */
		if (m->role == CONV_TOOL && (i + 1 == conv->n || conv->msgs[i + 1].role != CONV_TOOL))
			oa_media_message(conv, i, msgs);
	}
	/* A request without tools (a summary) has no "tools": some servers refuse []. */
	defs = cJSON_GetArraySize(tools) > 0 ? cJSON_AddArrayToObject(req, "tools") : NULL;
	cJSON_ArrayForEach(t, tools) {
		cJSON *d = cJSON_CreateObject();
		cJSON *fn = cJSON_AddObjectToObject(d, "function");

		cJSON_AddStringToObject(d, "type", "function");
		cJSON_AddStringToObject(fn, "name", json_get_string(t, "name"));
		cJSON_AddStringToObject(fn, "description", json_get_string(t, "description"));
		cJSON_AddItemToObject(fn, "parameters",
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "parameters"), true));
		cJSON_AddItemToArray(defs, d);
	}
	body = json_print(req);
	cJSON_Delete(req);
	return body;
}

static int
oa_fail(struct oa_stream *s, const char *code, const char *what)
{
	agent_error_set(s->err, code, "%s", what);
	return 1;
}

static bool
oa_append(struct buf *b, const cJSON *v)
{
	return !cJSON_IsString(v) || buf_appends(b, v->valuestring);
}

/*
 * Ids and names come whole in the first fragment; some servers repeat them
 * in every fragment, which must not double them.
 */
static bool
oa_set(struct buf *b, const cJSON *v)
{
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
	    (b->data != NULL && strcmp(b->data, v->valuestring) == 0))
		return true;
	buf_reset(b);
	return buf_appends(b, v->valuestring);
}

/* Starts a new call in the next free place; -1 when there are too many. */
static int
oa_new_call(struct oa_stream *s)
{
	struct oa_call *c;

	if (s->ncalls >= TURN_MAX_CALLS)
		return -1;
	c = &s->calls[s->ncalls];
	c->used = true;
	buf_init(&c->id, 256);
	buf_init(&c->name, 256);
	buf_init(&c->args, AGENT_ARGS_MAX);
	return s->ncalls++;
}

static bool
oa_other_id(const struct oa_call *c, const char *id)
{
	return id != NULL && id[0] != '\0' && c->id.data != NULL && c->id.len > 0 &&
	    strcmp(c->id.data, id) != 0;
}

/*
 * A fragment that starts another call where c is: a different id, or no id
 * but a name while c already has its name and whole arguments (servers that
 * send each call whole, without ids).
 */
static bool
oa_starts_another(const struct oa_call *c, const char *id, const char *name)
{
	char *args;

	if (oa_other_id(c, id))
		return true;
	if ((id != NULL && id[0] != '\0') || name == NULL || name[0] == '\0' || c->name.len == 0 ||
	    c->args.len == 0)
		return false;
	args = provider_call_args(c->args.data, c->args.len);
	free(args);
	return args != NULL;
}

/*
 * The call a fragment belongs to.  A fragment names it by index, but
 * Ollama gives every call of a turn index 0 with a new id: another call's
 * fragment (oa_starts_another) at an index already taken starts a new call.
 * Some servers send whole calls without an index: another call's fragment
 * starts a new call; anything else continues the last one.
 */
static int
oa_call_of(struct oa_stream *s, const cJSON *tc)
{
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(tc, "index");
	const char *id = json_get_string(tc, "id");
	const char *name = json_get_string(cJSON_GetObjectItemCaseSensitive(tc, "function"),
	    "name");
	const struct oa_call *last = s->ncalls > 0 ? &s->calls[s->ncalls - 1] : NULL;
	int i;

	if (idx == NULL) {
		if (last == NULL || oa_starts_another(last, id, name))
			return oa_new_call(s);
		return s->ncalls - 1;
	}
	if (!cJSON_IsNumber(idx) || idx->valuedouble < 0 || idx->valuedouble >= TURN_MAX_CALLS)
		return -2;
	i = (int)idx->valuedouble;
	if (s->slot[i] == 0 || oa_starts_another(&s->calls[s->slot[i] - 1], id, name)) {
		int at = oa_new_call(s);

		if (at < 0)
			return -1;
		s->slot[i] = at + 1;
	}
	return s->slot[i] - 1;
}

static int
oa_tool_delta(struct oa_stream *s, const cJSON *tc)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
	struct oa_call *c;
	int i = oa_call_of(s, tc);

	if (i == -2)
		return oa_fail(s, "invalid_provider_response",
		    "a tool call fragment has no valid index");
	if (i < 0)
		return oa_fail(s, "invalid_provider_response",
		    "the model made too many tool calls in one turn");
	c = &s->calls[i];
	if (!oa_set(&c->id, cJSON_GetObjectItemCaseSensitive(tc, "id")) ||
	    !oa_set(&c->name, cJSON_GetObjectItemCaseSensitive(fn, "name")))
		return oa_fail(s, "invalid_provider_response", "a tool call id or name is too long");
	if (!oa_append(&c->args, cJSON_GetObjectItemCaseSensitive(fn, "arguments")))
		return oa_fail(s, "invalid_provider_response",
		    "the arguments of a tool call are larger than 1 MiB");
	return 0;
}

static void
oa_usage(struct oa_stream *s, const cJSON *usage)
{
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
	const cJSON *cached = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details"), "cached_tokens");

	if (cJSON_IsNumber(cached) && cached->valuedouble >= 0)
		s->out->cache_read_tokens = (long)cached->valuedouble;
	if (cJSON_IsNumber(in))
		s->out->input_tokens = (long)in->valuedouble;
	if (cJSON_IsNumber(out))
		s->out->output_tokens = (long)out->valuedouble;
}

/* One "data:" frame of the stream. */
static int
oa_event(const struct sse_event *ev, void *ud)
{
	struct oa_stream *s = ud;
	cJSON *chunk;
	const cJSON *e, *choice, *delta, *content, *tcs, *tc, *reason;
	int rc = 0;

	if (strcmp(ev->data, "[DONE]") == 0) {
		s->done = true;
		return 0;
	}
	chunk = json_parse(ev->data, ev->data_len);
	if (!cJSON_IsObject(chunk)) {
		cJSON_Delete(chunk);
		return oa_fail(s, "invalid_provider_response",
		    "the provider sent a stream frame that is not a JSON object");
	}
	e = cJSON_GetObjectItemCaseSensitive(chunk, "error");
	if (e != NULL && !cJSON_IsNull(e)) {
		const char *m = cJSON_IsString(e) ? e->valuestring : json_get_string(e, "message");
		const char *type = json_get_string(e, "type");

		agent_error_set(s->err, "provider_error", "the provider reported an error: %.1000s",
		    m ? m : "no details");
		s->retry = provider_retry_reason(type ? type : json_get_string(e, "code"), m);
		cJSON_Delete(chunk);
		return 1;
	}
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(chunk, "usage")))
		oa_usage(s, cJSON_GetObjectItemCaseSensitive(chunk, "usage"));
	choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(chunk, "choices"), 0);
	delta = cJSON_GetObjectItemCaseSensitive(choice, "delta");
	content = cJSON_GetObjectItemCaseSensitive(delta, "content");
	if (cJSON_IsString(content) && content->valuestring[0] != '\0') {
		buf_appends(&s->out->text, content->valuestring);
		s->sink->text(s->sink->ud, content->valuestring, strlen(content->valuestring));
	}
	for (const char *const *f = (const char *const[]){ "reasoning_content", "reasoning",
	    NULL }; *f != NULL; f++) {
		const char *r = json_get_string(delta, *f);

		if (r == NULL || (s->reasoning_field != NULL && strcmp(s->reasoning_field, *f) != 0))
			continue;
		s->reasoning_field = *f;
		if (s->reasoning.len + strlen(r) <= OA_REASONING_MAX)
			buf_appends(&s->reasoning, r);
	}
	tcs = cJSON_GetObjectItemCaseSensitive(delta, "tool_calls");
	cJSON_ArrayForEach(tc, tcs) {
		if ((rc = oa_tool_delta(s, tc)) != 0)
			break;
	}
	reason = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
	if (cJSON_IsString(reason)) {
		s->finished = true;
		s->cut = s->cut || strcmp(reason->valuestring, "length") == 0;
	}
	cJSON_Delete(chunk);
	return rc;
}

/* Moves the assembled calls into the turn. */
static int
oa_finish_calls(struct oa_stream *s, struct turn *out, struct agent_error *err)
{
	for (int i = 0; i < s->ncalls; i++) {
		struct oa_call *c = &s->calls[i];
		char id[48], *args;

		if (!c->used)
			continue;
		args = c->name.len == 0 ? NULL : provider_call_args(c->args.data ? c->args.data : "",
		    c->args.len);
		/* The output limit cut this call: the model is told (loop.c), nothing runs. */
		if (args == NULL && s->cut) {
			provider_cut_call(out, c->name.data ? c->name.data : "", c->args.len);
			continue;
		}
		if (c->name.len == 0) {
			agent_error_set(err, "invalid_provider_response",
			    "tool call %d has no function name", i);
			return AGENT_FAILED;
		}
		if (args == NULL) {
			agent_error_set(err, "invalid_provider_response",
			    "the arguments of the %s call are not a JSON object", c->name.data);
			return AGENT_FAILED;
		}
		if (c->id.len == 0)
			provider_made_up_id(id, sizeof id, i);
		turn_add_call(out, c->id.len ? c->id.data : id, c->name.data, args);
		free(args);
	}
	return AGENT_OK;
}

static int
oa_turn(struct provider *p, const struct conversation *conv, const cJSON *tools,
    const struct provider_sink *sink, struct turn *out, struct agent_error *err)
{
	struct oa_stream s = { .sink = sink, .out = out, .err = err };
	char *url = provider_url(p->cfg->base_url, "/chat/completions");
	char *body = oa_request(p, conv, tools);
	char *auth = p->cfg->api_key ? xasprintf("Authorization: Bearer %s", p->cfg->api_key) : NULL;
	const char *headers[] = { "Content-Type: application/json", "Accept: text/event-stream",
	    auth, NULL };
	int rc;

	buf_init(&s.reasoning, 0);
	rc = provider_post(p, url, headers, body, oa_event, &s, err);
	if (rc == AGENT_FAILED && s.retry != NULL)
		provider_retry_set(p, s.retry, -1);
	if (rc == AGENT_OK && !s.done && !s.finished) {
		/* A server that closes cleanly mid-answer (no chunked end to miss) broke off. */
		agent_error_set(err, "invalid_provider_response",
		    "the provider's stream ended before the answer was complete");
		provider_retry_set(p, "connection", -1);
		rc = AGENT_FAILED;
	}
	if (rc == AGENT_OK)
		rc = oa_finish_calls(&s, out, err);
	if (rc == AGENT_OK && s.reasoning_field != NULL) {
		out->reasoning = cJSON_CreateObject();
		cJSON_AddStringToObject(out->reasoning, "kind", "openai");
		cJSON_AddStringToObject(out->reasoning, "field", s.reasoning_field);
		cJSON_AddStringToObject(out->reasoning, "text", s.reasoning.data ? s.reasoning.data :
		    "");
	}
	if (rc == AGENT_OK && s.cut)
		out->cut = true;
	buf_free(&s.reasoning);
	for (int i = 0; i < s.ncalls; i++) {
		buf_free(&s.calls[i].id);
		buf_free(&s.calls[i].name);
		buf_free(&s.calls[i].args);
	}
	if (auth != NULL) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	free(body);
	free(url);
	return rc;
}

const struct provider_ops provider_openai_ops = {
	.kind = "openai",
	.turn = oa_turn,
};
