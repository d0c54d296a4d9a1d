#!/usr/bin/env bash
# The service comes back on ANOTHER port (the default: ports are ephemeral):
# the dashboard reads the discovery file again and goes live; while it is
# down the status bar says "unreachable", not the last "ready" and counts.
# A wrong token: "unauthorized", never "ready" or "no projects".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run moving quick "Before the move" status completed

dash_start 120x36
wait_live
wait_for "Before the move"
wait_for "ready"
old_port=$SVC_PORT

svc_kill9
wait_for "unreachable"
wait_gone "ready"
wait_gone "running"
assert_screen "Before the move"
pass "kill -9: unreachable, no stale ready or counts, the last data kept"

# A new port: a fresh ephemeral one, never the old one.
for _ in 1 2 3; do
	svc_start
	[[ $SVC_PORT != "$old_port" ]] && break
	svc_stop_quietly
done
[[ $SVC_PORT != "$old_port" ]] || fail "the service came back on the same port three times"
note "old port $old_port, new port $SVC_PORT"
wait_for "live (resynced)" 400
wait_for "ready"
read -r run2 _ < <(start_run "$project" - "After the move" --session "$session")
wait_for "After the move"
wait_run_field "$run2" status completed
pass "restart on another port: live again, new runs appear"
dash_quit

# A token the service refuses.
dash_start 120x36 TASKDECK_TOKEN=td_wrong_token_0123456789
wait_for "unauthorized"
sleep 1
assert_not_screen "ready"
assert_not_screen "no projects"
assert_not_screen "moving"
pass "a wrong token: unauthorized, no ready, no project list"
dash_quit
pass "q exits cleanly"
