#!/usr/bin/env bash
# Deleting a session from the dashboard: D in Sessions asks [y/N] naming the
# session and what goes with it; anything but y keeps it; y deletes it (it
# leaves the list, the service no longer knows it).  The action is
# rebindable (key.delete) and the help shows the key given.  A session
# deleted elsewhere (the CLI) leaves the list too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

keep=$(new_project "Keep me")
read -r run1 session < <(start_run "$keep" quick "Session to delete")
read -r run2 session2 < <(start_run "$keep" quick "Session that stays")
wait_run_field "$run1" status completed
wait_run_field "$run2" status completed

mkdir -p "$TUI_TMP/xdg/taskdeck"
printf 'key.delete = X\n' >"$TUI_TMP/xdg/taskdeck/dashboard.conf"
dash_start 120x36 XDG_CONFIG_HOME="$TUI_TMP/xdg"
wait_live
wait_for "Keep me"
keys Tab
wait_for "Session to delete"
keys g
sleep 0.3
keys j
wait_for "│> Session to delete"

keys X
wait_for 'Delete session "Session to delete" with its runs?'
assert_screen '[y/N]'
keys n
wait_gone 'Delete session "Session to delete"'
assert_screen "Session to delete"
td sessions show "$session" >/dev/null || fail "n deleted the session"
pass "X (key.delete) names the session; anything but y keeps it"

keys X
wait_for 'Delete session "Session to delete"'
keys y
wait_for "deleted session Session to delete"
wait_gone "│> Session to delete"
assert_screen "Session that stays"
rc=0
td sessions show "$session" >/dev/null 2>&1 || rc=$?
[[ $rc -eq 4 ]] || fail "the service still has the session (taskdeck sessions show: exit $rc)"
pass "y deletes it: it leaves the list, the service answers 404"

td sessions delete "$session2" --yes >/dev/null
wait_gone "Session that stays"
pass "a session deleted with the CLI leaves the list (session.deleted)"

keys '?'
wait_for "delete the selected session with its runs"
screen | grep -F "delete the selected session" | grep -q " X " ||
	fail "the help does not show X for delete: $(screen | grep -F 'delete the selected')"
keys Escape
pass "the help lists the rebound X"

dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
