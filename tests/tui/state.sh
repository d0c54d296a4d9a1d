#!/usr/bin/env bash
# Sort, filter and the download directory survive a restart of the dashboard
# and of the service (on a new port): the state file, written atomically;
# a corrupt one is ignored with one message, then written anew.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run albatross research "Research and save a report" status completed
read -r _ _ < <(start_run "$(new_project alpha)" quick "Alpha says hello")
read -r last _ < <(start_run "$(new_project beta)" quick "Beta says hello")
wait_run_field "$last" status completed
state=$XDG_STATE_HOME/taskdeck/dashboard.state
mkdir "$TUI_TMP/reports"

dash_start 120x36
wait_live
wait_for "Beta says hello"
dash_quit
[[ ! -f $state ]] || ! grep -q download-dir "$state" ||
	fail "the directory the dashboard started in was kept as if chosen: $(cat "$state")"
dash_start 120x36
wait_live
wait_for "Beta says hello"
# Projects by name, filtered to those holding "al"; Runs by status.
keys s s
wait_for "Projects ↓name"
keys /
type_text al
keys Enter
wait_for "Projects /al (2 of 3) ↓name"
wait_for "Research and save a report"
keys U s
wait_for "Runs ↓status"
# A download to another directory.
keys 3
wait_for "report.md"
keys Enter
wait_for "Download report.md to:"
keys C-u
type_text "$TUI_TMP/reports"
keys Enter
wait_for "download complete: $TUI_TMP/reports/report.md"
dash_quit
[[ -f $state ]] || fail "no state file at $state"
for f in "$XDG_STATE_HOME"/taskdeck/*; do
	[[ $f == "$state" ]] || fail "a file besides the state file was left: $f"
done
pass "the state is written to $state"

# The service restarts on another port; then the dashboard.
old_port=$SVC_PORT
svc_stop_quietly
svc_start
[[ $SVC_PORT != "$old_port" ]] || note "the service got the same port again ($SVC_PORT)"
dash_start 120x36
wait_live
wait_for "Projects /al (2 of 3) ↓name"
wait_for "Runs ↓status"
assert_not_screen "Beta says hello"
keys 3
wait_for "report.md"
keys Enter
wait_for "Download report.md to:"
wait_for "$TUI_TMP/reports"
keys Escape
dash_quit
pass "sort, filter and the download directory survive restarts (service on port $SVC_PORT)"

# A corrupt file: ignored with one message, then written anew.
printf 'taskdeck-dashboard-state 1\nsort\tprojects\tname\n\001garbage\n' >"$state"
dash_start 120x36
wait_live
wait_for "is not a state file (line 3): ignored"
wait_for "Projects ↓newest"
keys s
wait_for "Projects ↓status"
dash_quit
grep -q "garbage" "$state" && fail "the corrupt state file was kept"
grep -qx "sort	projects	status" "$state" || fail "the state was not written anew: $(cat "$state")"
pass "a corrupt state file is ignored with one message and written anew"
