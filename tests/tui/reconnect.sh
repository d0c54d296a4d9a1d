#!/usr/bin/env bash
# kill -9 of the service under the dashboard, then a restart on the same port:
# "reconnecting", then "live (resynced)", and runs started after it appear;
# r while it is unreachable tries at once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run restarts quick "Before the crash" status completed

dash_start 120x36
wait_live
wait_for "Before the crash"
wait_for "taskdeckd"

svc_kill9
wait_for "reconnecting"
# The panes keep their last data while disconnected.
assert_screen "Before the crash"
assert_screen "restarts"
pass "kill -9: reconnecting, the last data still shown"

svc_restart
wait_for "live (resynced)"
pass "restart: live (resynced)"

# A new run in the same session and one in a new session both show up.
read -r run2 _ < <(start_run "$project" - "After the restart" --session "$session")
read -r run3 _ < <(start_run "$project" quick "A new session after the restart")
wait_for "After the restart"
wait_for "A new session after the restart"
wait_run_field "$run2" status completed
pass "runs started after the restart appear"

# The "(resynced)" note goes after 5 s; the connection stays live.
wait_gone "(resynced)"
wait_live

# Down long enough for the backoff to grow: r tries again at once.
svc_kill9
wait_for_re "reconnecting in (8|9|10) s" 400
svc_restart
keys r
wait_for "live" 30
pass "r while unreachable reconnects now, not when the backoff ends"
dash_quit
pass "q exits cleanly"
