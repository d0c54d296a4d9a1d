/*
 * bench/connectors: times src/common/mcp.c.
 *
 *   mcp-bench N command [args...]
 *	on a stdio MCP server, from the spawn to the last tools/list page
 *	(server/discover probe, initialize fallback, tools/list), then the
 *	close, N times in a row; prints "open_to_tools_ms close_ms tools" per
 *	iteration.
 *   mcp-bench http N URL TOOL
 *	on a Streamable HTTP server: one handshake, then N calls of TOOL with
 *	{"text": "xI"}, each timed from the call to its answer (checked);
 *	prints "call_ms" per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "mcp.h"

extern char **environ;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
http_calls(int n, const char *url, const char *tool)
{
	char err[1024], want[32];
	struct mcp_client *c = mcp_open_http(url, NULL, NULL, err, sizeof err);

	if (c == NULL || mcp_handshake(c, err, sizeof err) != 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		cJSON *args = cJSON_CreateObject(), *result = NULL, *content, *text;
		double t0, t1;
		int rc;

		snprintf(want, sizeof want, "x%d", i);
		cJSON_AddStringToObject(args, "text", want);
		t0 = now_ms();
		rc = mcp_call_tool(c, tool, args, &result, err, sizeof err);
		t1 = now_ms();
		cJSON_Delete(args);
		if (rc != 0)
			goto fail;
		content = cJSON_GetObjectItemCaseSensitive(result, "content");
		text = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(content, 0), "text");
		if (!cJSON_IsString(text) || strcmp(text->valuestring, want) != 0) {
			snprintf(err, sizeof err, "call %d of %s: not the answer sent", i, tool);
			cJSON_Delete(result);
			goto fail;
		}
		cJSON_Delete(result);
		printf("%.1f\n", t1 - t0);
		fflush(stdout);
	}
	mcp_close(c);
	return 0;
fail:
	fprintf(stderr, "mcp-bench: %s\n", err);
	mcp_close(c);
	return 1;
}

int
main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	char err[1024];

	if (argc == 5 && strcmp(argv[1], "http") == 0 && atoi(argv[2]) > 0) {
		int rc;

		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = http_calls(atoi(argv[2]), argv[3], argv[4]);
		curl_global_cleanup();
		return rc;
	}
	if (n <= 0) {
		fprintf(stderr, "usage: mcp-bench N command [args...]\n"
		    "       mcp-bench http N URL TOOL\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int i = 0; i < n; i++) {
		double t0 = now_ms(), t1, t2;
		struct mcp_client *c = mcp_open_stdio(argv[2], argv + 3, environ, NULL, NULL, err,
		    sizeof err);
		struct mcp_tool *tools = NULL;
		size_t ntools = 0;

		if (c == NULL || mcp_handshake(c, err, sizeof err) != 0 ||
		    mcp_list_tools(c, &tools, &ntools, err, sizeof err) != 0) {
			fprintf(stderr, "mcp-bench: %s\n", err);
			mcp_close(c);
			return 1;
		}
		t1 = now_ms();
		mcp_tools_free(tools, ntools);
		mcp_close(c);
		t2 = now_ms();
		printf("%.1f %.1f %zu\n", t1 - t0, t2 - t1, ntools);
		fflush(stdout);
	}
	curl_global_cleanup();
	return 0;
}
