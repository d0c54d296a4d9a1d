/*
 * A server's forms (elicitation/create) asked of the user as permission
 * prompts of the run.
 */
#include <stdlib.h>
#include <string.h>

#include "agent-connectors-int.h"
#include "host.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "xalloc.h"

#define CONNECTOR_FORM_MAX (256 * 1024)	/* a server's form (its params), printed */
#define CONNECTOR_FORM_LOOK_MS 100	/* the turns of waiting for a person and reading the server */

/*
 * A server's form (elicitation/create) is a question for the user: it becomes
 * a permission prompt of the run (tool "<connector>__elicitation", the form's
 * message as its summary, the message and the requested schema as its input,
 * the fields' defaults included).  Allowed, the form is accepted with the
 * content the service sends (the user's values over the defaults), else
 * its defaults; denied, declined; a cancelled run cancels it.  A form its
 * server gives up on meanwhile is withdrawn (permission.withdraw) and gets
 * no answer.
 */
struct elicit_ctx {
	struct host *host;
	char *name;
};

void *
connector_elicit_ctx_new(struct host *host, const char *name)
{
	struct elicit_ctx *e = xcalloc(1, sizeof *e);

	e->host = host;
	e->name = xstrdup(name);
	return e;
}

void
connector_elicit_ctx_free(void *ud)
{
	struct elicit_ctx *e = ud;

	if (e != NULL)
		free(e->name);
	free(e);
}

cJSON *
connector_elicit(struct mcp_client *c, const cJSON *params, void *ud, char **refused)
{
	struct elicit_ctx *e = ud;
	const char *message = json_get_string(params, "message");
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(params, "requestedSchema");
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties"), *p;
	cJSON *ask, *input, *result = NULL, *answer;
	struct agent_error err = { 0 };
	const char *decision;
	char *text, *said;
	size_t size;
	long id;
	int rc;

	/* A form too large for a person (or for the line to the service) is refused. */
	text = json_print(params);
	size = strlen(text);
	free(text);
	if (size > CONNECTOR_FORM_MAX) {
		log_info("connector %s: a form of %zu bytes was refused", e->name, size);
		*refused = xasprintf("Refused: the form is %zu bytes, over taskdeck's bound of %d "
		    "bytes for a form", size, CONNECTOR_FORM_MAX);
		return NULL;
	}
	ask = cJSON_CreateObject();
	answer = cJSON_CreateObject();
	text = xasprintf("%.64s__elicitation", e->name);
	cJSON_AddStringToObject(ask, "tool", text);
	free(text);
	/* What makes it a form for the service: this message, not the tool's name. */
	cJSON_AddBoolToObject(ask, "form", true);
	said = agent_utf8_prefix(message != NULL ? message : "(no message)", CONNECTOR_NOTE_MAX);
	text = xasprintf("%s asks: %s", e->name, said);
	free(said);
	cJSON_AddStringToObject(ask, "summary", text);
	free(text);
	input = cJSON_AddObjectToObject(ask, "input");
	cJSON_AddStringToObject(input, "message", message != NULL ? message : "");
	cJSON_AddItemToObject(input, "requestedSchema", cJSON_IsObject(schema) ?
	    cJSON_Duplicate(schema, true) : cJSON_CreateObject());
	/* The server is read while the person is asked: it may give up on its form. */
	id = host_request_send(e->host, "permission.ask", ask, &err);
	rc = id == 0 ? AGENT_FAILED : HOST_PENDING;
	while (rc == HOST_PENDING) {
		rc = host_request_wait(e->host, id, CONNECTOR_FORM_LOOK_MS, &result, &err);
		if (rc == HOST_PENDING && mcp_elicit_withdrawn(c, CONNECTOR_FORM_LOOK_MS)) {
			cJSON *withdraw = cJSON_CreateObject(), *ignored = NULL;

			log_info("connector %s: the server withdrew its form", e->name);
			cJSON_AddNumberToObject(withdraw, "requestId", (double)id);
			agent_error_clear(&err);
			if (host_request(e->host, "permission.withdraw", withdraw, &ignored,
			    &err) != AGENT_OK)
				log_info("connector %s: the form's prompt was not withdrawn: %s",
				    e->name, err.message ? err.message : "cancelled");
			cJSON_Delete(ignored);
			agent_error_clear(&err);
			cJSON_Delete(answer);
			return NULL;
		}
	}
	decision = rc == AGENT_OK ? json_get_string(result, "decision") : NULL;
	if (decision != NULL && strcmp(decision, "allow") == 0 &&
	    cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(result, "content"))) {
		/* The user's values over the defaults, checked by the service. */
		cJSON_AddStringToObject(answer, "action", "accept");
		cJSON_AddItemToObject(answer, "content",
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(result, "content"), true));
	} else if (decision != NULL && strcmp(decision, "allow") == 0) {
		cJSON *content = cJSON_CreateObject();

		cJSON_AddStringToObject(answer, "action", "accept");
		cJSON_ArrayForEach(p, props) {
			const cJSON *def = cJSON_GetObjectItemCaseSensitive(p, "default");

			if (def != NULL && p->string != NULL)
				cJSON_AddItemToObject(content, p->string, cJSON_Duplicate(def, true));
		}
		cJSON_AddItemToObject(answer, "content", content);
	} else {
		cJSON_AddStringToObject(answer, "action", rc == AGENT_CANCELLED ? "cancel" :
		    "decline");
	}
	log_info("connector %s: a form was %s", e->name, json_get_string(answer, "action"));
	cJSON_Delete(result);
	agent_error_clear(&err);
	return answer;
}
