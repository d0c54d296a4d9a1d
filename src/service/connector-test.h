/*
 * Testing a connector (POST /connectors/:id/test, docs/connectors.md): its
 * OAuth tokens renewed when due, then an isolated connection to its server
 * with the MCP client of src/common/mcp.h on a thread of its own: open,
 * handshake, list the tools, close; once more with a renewed token when the
 * server refused the one it had.  No tool is called; the server's process
 * group ends with it.
 */
#ifndef TD_SERVICE_CONNECTOR_TEST_H
#define TD_SERVICE_CONNECTOR_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "errors.h"
#include "problem.h"

/* Per MCP request of a test. */
#define CONNECTOR_TEST_TIMEOUT_MS 10000
/* How many connector tests run at once at most. */
#define CONNECTOR_TESTS_MAX 8

struct service;
struct connector_test;

/*
 * Starts the test of connector id; *out is the caller's until
 * connector_test_release.  TD_NOT_FOUND, a credential that cannot be read,
 * or TD_UNAVAILABLE when CONNECTOR_TESTS_MAX run already (retry in a moment).
 */
enum td_code connector_test_start(struct service *svc, const char *id,
    struct connector_test **out, struct problem *p);
/*
 * The next part of the answer, {"success", "toolCount", "message"} (every
 * outcome of a test that ran), into buf: the bytes copied, -1 at its end, or
 * 0 after park(arg) while the test runs; wake(arg) is called once from the
 * test's thread when it is done, unless released first.  Both run under the
 * test's lock.
 */
ssize_t connector_test_read(struct connector_test *t, char *buf, size_t max,
    void (*park)(void *), void (*wake)(void *), void *arg);
/* The caller is done with t; a test still running ends on its own. */
void connector_test_release(struct connector_test *t);
/* Waits up to timeout_ms for the tests still running (at shutdown); false if some remain. */
bool connector_tests_drain(int timeout_ms);

#endif
