/*
 * The conversation of a checkpoint (docs/host-protocol.md, Checkpoints):
 * what the agent sends comes back as the same conversation, and a malformed
 * checkpoint is refused rather than half read.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "conv.h"
#include "json.h"

static void
sample(struct conversation *c)
{
	struct tool_call *calls = calloc(2, sizeof *calls);

	calls[0].id = strdup("call_1_0");
	calls[0].name = strdup("write_file");
	calls[0].arguments = strdup("{\"path\":\"a.md\",\"content\":\"é\\n\"}");
	calls[1].id = strdup("call_1_1");
	calls[1].name = strdup("save_artifact");
	calls[1].arguments = strdup("{\"path\":\"a.md\"}");
	conv_init(c, "system");
	conv_add_user(c, "earlier prompt");
	conv_add_assistant(c, "earlier output", NULL, 0);
	conv_add_user(c, "write a.md");
	conv_add_assistant(c, "Writing.", calls, 2);
	/* What the server reasoned goes back to it: it stays with the answer. */
	conv_set_reasoning(c, cJSON_Parse("{\"kind\":\"openai\",\"field\":"
	    "\"reasoning_content\",\"text\":\"The user wants a.md.\"}"));
	conv_add_tool_result(c, "call_1_0", "write_file", "wrote 3 bytes", false);
	/* An image a connector returned stays with its result. */
	conv_add_tool_result(c, "call_1_1", "img__get", "[image image/png, 3 bytes]", false);
	conv_set_media(c, cJSON_Parse("[{\"mimeType\":\"image/png\",\"data\":\"iVBO\"}]"));
}

Test(checkpoint, a_conversation_comes_back_the_same)
{
	struct conversation a, b;
	cJSON *j;

	sample(&a);
	j = conv_to_json(&a);
	conv_init(&b, "system");
	cr_assert(conv_from_json(&b, j));
	cr_assert_eq(b.n, a.n);
	for (size_t i = 0; i < a.n; i++) {
		cr_expect_eq(b.msgs[i].role, a.msgs[i].role);
		cr_expect_str_eq(b.msgs[i].text, a.msgs[i].text);
		cr_expect_eq(b.msgs[i].ncalls, a.msgs[i].ncalls);
		cr_expect(a.msgs[i].reasoning == NULL ? b.msgs[i].reasoning == NULL :
		    cJSON_Compare(a.msgs[i].reasoning, b.msgs[i].reasoning, true));
		for (size_t k = 0; k < a.msgs[i].ncalls; k++) {
			cr_expect_str_eq(b.msgs[i].calls[k].id, a.msgs[i].calls[k].id);
			cr_expect_str_eq(b.msgs[i].calls[k].name, a.msgs[i].calls[k].name);
			cr_expect_str_eq(b.msgs[i].calls[k].arguments, a.msgs[i].calls[k].arguments);
		}
		if (a.msgs[i].role == CONV_TOOL) {
			cr_expect_str_eq(b.msgs[i].call_id, a.msgs[i].call_id);
			cr_expect_str_eq(b.msgs[i].tool_name, a.msgs[i].tool_name);
			cr_expect_eq(b.msgs[i].is_error, a.msgs[i].is_error);
			cr_expect(a.msgs[i].media == NULL ? b.msgs[i].media == NULL :
			    cJSON_Compare(a.msgs[i].media, b.msgs[i].media, true));
		}
	}
	cJSON_Delete(j);
	conv_free(&a);
	conv_free(&b);
}

static bool
reads(const char *text)
{
	struct conversation c;
	cJSON *j = cJSON_Parse(text);
	bool ok;

	conv_init(&c, "system");
	ok = conv_from_json(&c, j);
	cJSON_Delete(j);
	conv_free(&c);
	return ok;
}

Test(checkpoint, a_malformed_conversation_is_refused)
{
	cr_expect(reads("[{\"role\":\"user\",\"text\":\"hi\"}]"));
	cr_expect_not(reads("{\"role\":\"user\",\"text\":\"hi\"}"), "not an array");
	cr_expect_not(reads("[{\"role\":\"system\",\"text\":\"hi\"}]"), "unknown role");
	cr_expect_not(reads("[{\"role\":\"user\"}]"), "no text");
	cr_expect_not(reads("[{\"role\":\"user\",\"text\":7}]"), "text not a string");
	cr_expect_not(reads("[{\"role\":\"tool\",\"text\":\"r\"}]"), "a result without its call");
	cr_expect_not(reads("[{\"role\":\"assistant\",\"text\":\"\",\"calls\":[{\"id\":\"c\","
	    "\"name\":\"x\"}]}]"), "a call without arguments");
	cr_expect_not(reads("[{\"role\":\"assistant\",\"text\":\"\",\"calls\":{}}]"),
	    "calls not an array");
	cr_expect_not(reads("[{\"role\":\"assistant\",\"text\":\"\",\"reasoning\":\"x\"}]"),
	    "reasoning not an object");
	cr_expect_not(reads("[{\"role\":\"assistant\",\"text\":\"\",\"reasoning\":{}}]"),
	    "reasoning without the kind that sent it");
}

Test(checkpoint, a_conversation_over_the_bounds_is_refused)
{
	cJSON *arr = cJSON_CreateArray(), *calls, *m;
	struct conversation c;

	for (int i = 0; i <= CONV_MAX_MESSAGES; i++) {
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddStringToObject(m, "text", "x");
		cJSON_AddItemToArray(arr, m);
	}
	conv_init(&c, "system");
	cr_expect_not(conv_from_json(&c, arr), "more than CONV_MAX_MESSAGES messages");
	conv_free(&c);
	cJSON_Delete(arr);

	arr = cJSON_CreateArray();
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "assistant");
	cJSON_AddStringToObject(m, "text", "");
	calls = cJSON_AddArrayToObject(m, "calls");
	for (int i = 0; i <= CONV_MAX_CALLS; i++) {
		cJSON *k = cJSON_CreateObject();
		cJSON_AddStringToObject(k, "id", "c");
		cJSON_AddStringToObject(k, "name", "n");
		cJSON_AddStringToObject(k, "arguments", "{}");
		cJSON_AddItemToArray(calls, k);
	}
	cJSON_AddItemToArray(arr, m);
	conv_init(&c, "system");
	cr_expect_not(conv_from_json(&c, arr), "more than CONV_MAX_CALLS calls");
	conv_free(&c);
	cJSON_Delete(arr);
}
