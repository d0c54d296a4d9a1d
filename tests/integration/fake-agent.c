/*
 * A stand-in for taskdeck-agent (TASKDECK_AGENT) that speaks just enough of
 * the host protocol to test the service's side of connectors: it keeps the
 * start line in start.json in its working directory (the run's workspace),
 * asks secret.resolve for every binding of every connector it was given and
 * for one pair it was not, and for each {connectorId, credentialId} of ask.json
 * in its working directory when there is one (an attacker's pairs), writes the
 * answers to resolve.json, and finishes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static char line[1 << 20];

/* Sends one request and returns the response line's object (cJSON_Delete it). */
static cJSON *
ask(int id, const char *connector, const char *credential)
{
	cJSON *req = cJSON_CreateObject(), *params;
	char *text;

	cJSON_AddStringToObject(req, "type", "request");
	cJSON_AddNumberToObject(req, "id", id);
	cJSON_AddStringToObject(req, "method", "secret.resolve");
	params = cJSON_AddObjectToObject(req, "params");
	cJSON_AddStringToObject(params, "connectorId", connector);
	cJSON_AddStringToObject(params, "credentialId", credential);
	text = cJSON_PrintUnformatted(req);
	printf("%s\n", text);
	fflush(stdout);
	free(text);
	cJSON_Delete(req);
	if (fgets(line, sizeof line, stdin) == NULL)
		exit(4);
	return cJSON_Parse(line);
}

int
main(void)
{
	cJSON *start, *answers = cJSON_CreateArray(), *c, *b;
	FILE *fp;
	int id = 1;
	char *text;

	if (fgets(line, sizeof line, stdin) == NULL || (start = cJSON_Parse(line)) == NULL)
		return 3;
	if ((fp = fopen("start.json", "w")) != NULL) {
		fputs(line, fp);
		fclose(fp);
	}
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(start, "connectors")) {
		const char *con = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));

		cJSON_ArrayForEach(b, cJSON_GetObjectItem(c, "credentialBindings")) {
			const char *cred = cJSON_GetStringValue(cJSON_GetObjectItem(b, "credentialId"));
			cJSON *a = ask(id++, con, cred);

			cJSON_AddStringToObject(a, "target",
			    cJSON_GetStringValue(cJSON_GetObjectItem(b, "target")));
			cJSON_AddItemToArray(answers, a);
		}
		/* A credential this connector does not bind, and an unknown connector. */
		cJSON_AddItemToArray(answers, ask(id++, con, "cred_000000000000000000000abc"));
	}
	cJSON_AddItemToArray(answers, ask(id++, "con_000000000000000000000abc",
	    "cred_000000000000000000000abc"));
	if ((fp = fopen("ask.json", "r")) != NULL) {
		cJSON *pairs = NULL;

		if (fgets(line, sizeof line, fp) != NULL)
			pairs = cJSON_Parse(line);
		fclose(fp);
		cJSON_ArrayForEach(c, pairs) {
			cJSON_AddItemToArray(answers, ask(id++,
			    cJSON_GetStringValue(cJSON_GetObjectItem(c, "connectorId")),
			    cJSON_GetStringValue(cJSON_GetObjectItem(c, "credentialId"))));
		}
		cJSON_Delete(pairs);
	}
	text = cJSON_PrintUnformatted(answers);
	if ((fp = fopen("resolve.json", "w")) != NULL) {
		fputs(text, fp);
		fclose(fp);
	}
	free(text);
	printf("{\"type\":\"finish\",\"status\":\"completed\",\"output\":\"resolved\","
	    "\"usage\":{\"inputTokens\":0,\"outputTokens\":0}}\n");
	fflush(stdout);
	cJSON_Delete(answers);
	cJSON_Delete(start);
	return 0;
}
