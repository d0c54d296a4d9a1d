/*
 * The conversation with the model in a provider-neutral form.  Each provider
 * renders it into its own wire format.  Every string is owned by the
 * conversation.
 */
#ifndef TD_AGENT_CONV_H
#define TD_AGENT_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct tool_call {
	char *id;
	char *name;
	char *arguments;	/* JSON text of an object */
};

enum conv_role { CONV_USER, CONV_ASSISTANT, CONV_TOOL };

struct conv_message {
	enum conv_role role;
	char *text;			/* user or assistant text, or a tool result; never NULL */
	struct tool_call *calls;	/* assistant: tool calls, in order */
	size_t ncalls;
	char *call_id;			/* tool result: the call it answers */
	char *tool_name;
	bool is_error;
	/* tool result: images and audio it returned, [{"mimeType", "data" (base64)}], or
	 * NULL; each provider sends what it accepts (docs/connectors.md, "Results") */
	cJSON *media;
	/*
	 * assistant: what the server sent beside the answer and wants back with it
	 * (reasoning, thinking blocks), or NULL: {"kind": the provider kind that
	 * sent it, ...}; only that kind sends it back (provider-*.c).
	 */
	cJSON *reasoning;
};

struct conversation {
	char *system;
	struct conv_message *msgs;
	size_t n;
	size_t cap;
	size_t bytes;		/* of every string: what the prompt's size follows */
};

void conv_init(struct conversation *c, const char *system);
void conv_add_user(struct conversation *c, const char *text);
/* Takes calls (a malloc'd array of ncalls) and its strings. */
void conv_add_assistant(struct conversation *c, const char *text,
    struct tool_call *calls, size_t ncalls);
void conv_add_tool_result(struct conversation *c, const char *call_id,
    const char *name, const char *content, bool is_error);
/* Gives media (owned, an array of {"mimeType", "data"}) to the last message, a tool result. */
void conv_set_media(struct conversation *c, cJSON *media);
/* Gives reasoning (owned, an object with "kind", or NULL) to the last message, an answer. */
void conv_set_reasoning(struct conversation *c, cJSON *reasoning);
void conv_free(struct conversation *c);
/* Replaces the text of message i with a copy of text. */
void conv_set_text(struct conversation *c, size_t i, const char *text);
/* Appends a copy of m (its calls and strings copied). */
void conv_add_copy(struct conversation *c, const struct conv_message *m);

void tool_calls_free(struct tool_call *calls, size_t n);

/* The bounds of a conversation read from a checkpoint. */
#define CONV_MAX_MESSAGES 100000
#define CONV_MAX_CALLS 128
/* The messages (not the system prompt) as a checkpoint holds them. */
cJSON *conv_to_json(const struct conversation *c);
/* One message as a checkpoint holds it. */
cJSON *conv_message_json(const struct conv_message *m);
/* Appends the messages of a checkpoint to c; false when arr is malformed. */
bool conv_from_json(struct conversation *c, const cJSON *arr);

#endif
