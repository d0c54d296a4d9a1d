/*
 * Multi round-trip requests (SEP-2322, MCP 2026-07-28): a server of the draft
 * revision sends no requests of its own; a call that needs something of the
 * client first (a form for the user) is answered with an InputRequiredResult
 * ({"resultType": "input_required", "inputRequests": {KEY: {method, params}},
 * "requestState"?}).  Each input request is fulfilled as the same request sent
 * by the server would be, and the call is sent again, with a new id, carrying
 * inputResponses under the same keys and the server's requestState exactly as
 * it came (none when it sent none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mcp-int.h"

/* Rounds of one call, and input requests of one round, at most. */
#define MCP_INPUT_ROUNDS_MAX 8
#define MCP_INPUT_REQUESTS_MAX 16

static bool
mcp_input_required(const struct mcp_client *c, const cJSON *result)
{
	const char *type = json_get_string(result, "resultType");

	/* Earlier revisions know no resultType: their results are final. */
	return c->modern && type != NULL && strcmp(type, "input_required") == 0;
}

/* What answers result's inputRequests (an object under their keys), or NULL with err. */
static cJSON *
mcp_input_responses(struct mcp_client *c, const cJSON *result, char *err, size_t errlen)
{
	const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(result, "inputRequests"), *r;
	cJSON *out = cJSON_CreateObject();
	int n = 0;

	if (!cJSON_IsObject(reqs) || reqs->child == NULL) {
		mcp_set_err(err, errlen, "the server asks for input but names none");
		cJSON_Delete(out);
		return NULL;
	}
	cJSON_ArrayForEach(r, reqs) {
		const char *method = json_get_string(r, "method");
		cJSON *key, *reply;
		const cJSON *res, *e;

		if (++n > MCP_INPUT_REQUESTS_MAX || method == NULL || !cJSON_IsObject(r)) {
			mcp_set_err(err, errlen, n > MCP_INPUT_REQUESTS_MAX ?
			    "the server asks for more than %d inputs at once" :
			    "the server asks for an input that names no method (of %d)",
			    MCP_INPUT_REQUESTS_MAX);
			cJSON_Delete(out);
			return NULL;
		}
		/* Its key stands for the id a request of the server would have. */
		key = cJSON_CreateString(r->string);
		reply = mcp_server_request_reply(c, key, method,
		    cJSON_GetObjectItemCaseSensitive(r, "params"));
		cJSON_Delete(key);
		res = cJSON_GetObjectItemCaseSensitive(reply, "result");
		if (!cJSON_IsObject(res)) {
			e = cJSON_GetObjectItemCaseSensitive(reply, "error");
			mcp_set_err(err, errlen, "the server asks for %.100s, which taskdeck cannot "
			    "answer here: %.300s", method, json_get_string(e, "message") != NULL ?
			    json_get_string(e, "message") : "no answer");
			cJSON_Delete(reply);
			cJSON_Delete(out);
			return NULL;
		}
		cJSON_AddItemToObject(out, r->string, cJSON_DetachItemViaPointer(reply,
		    (cJSON *)res));
		cJSON_Delete(reply);
	}
	return out;
}

int
mcp_input_rounds(struct mcp_client *c, const char *method, const cJSON *params,
    const char *during, cJSON **result, char *err, size_t errlen)
{
	for (int round = 0; mcp_input_required(c, *result); round++) {
		cJSON *responses, *retry;
		const cJSON *state;
		int rc;

		responses = round < MCP_INPUT_ROUNDS_MAX ?
		    mcp_input_responses(c, *result, err, errlen) : NULL;
		if (round == MCP_INPUT_ROUNDS_MAX)
			mcp_set_err(err, errlen, "the server asked for input %d times during %s",
			    MCP_INPUT_ROUNDS_MAX, during);
		if (responses == NULL) {
			cJSON_Delete(*result);
			*result = NULL;
			return RPC_FAILED;
		}
		retry = cJSON_Duplicate(params, true);
		cJSON_AddItemToObject(retry, "inputResponses", responses);
		/* Opaque to the client: sent back exactly as it came. */
		state = cJSON_GetObjectItemCaseSensitive(*result, "requestState");
		if (state != NULL)
			cJSON_AddItemToObject(retry, "requestState", cJSON_Duplicate(state, true));
		cJSON_Delete(*result);
		*result = NULL;
		rc = mcp_rpc(c, method, retry, during, result, NULL, err, errlen);
		if (rc != RPC_OK)
			return rc;
	}
	return RPC_OK;
}
