/*
 * bench/connectors: times src/common/mcp.c on a stdio MCP server, from the
 * spawn to the last tools/list page (server/discover probe, initialize
 * fallback, tools/list), then the close, N times in a row.
 *
 *   mcp-bench N command [args...]
 *
 * Prints one line per iteration: "open_to_tools_ms close_ms tools".
 */
#include <stdio.h>
#include <stdlib.h>
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

int
main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	char err[1024];

	if (n <= 0) {
		fprintf(stderr, "usage: mcp-bench N command [args...]\n");
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
