/*
 * testConnector (docs/connectors.md): an isolated connection to a
 * connector's server with the MCP client of src/common/mcp.h: open,
 * handshake, list the tools, close.  No tool is called; the server's process
 * group ends with it.
 */
#ifndef TD_SERVICE_CONNECTOR_TEST_H
#define TD_SERVICE_CONNECTOR_TEST_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "connector-launch.h"

/* Per MCP request of a test. */
#define CONNECTOR_TEST_TIMEOUT_MS 10000
/* How many connector tests run at once at most. */
#define CONNECTOR_TESTS_MAX 8

/*
 * A test of the prepared connector: {"success", "toolCount", "message"}.
 * Blocks for up to a few MCP request timeouts: never on an HTTP thread.
 */
cJSON *connector_test_run(const struct connector_launch *l);
/*
 * A test starts (true) unless CONNECTOR_TESTS_MAX run already; each that
 * started ends with connector_tests_end.
 */
bool connector_tests_begin(void);
void connector_tests_end(void);
/* Waits up to timeout_ms for the tests still running (at shutdown); false if some remain. */
bool connector_tests_drain(int timeout_ms);

#endif
