#!/usr/bin/env bash
# The ':' palette: Tab completes verbs and their arguments (prefix, then
# case-insensitive, Tab again cycles), Up/Down browse the history, which is
# kept across a restart of the dashboard (never a line like a secret).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

alpha=$(new_project alpha)
read -r _ _ < <(start_run "$alpha" quick "Alpha says hello")
albatross=$(new_project albatross)
read -r _ _ < <(start_run "$albatross" quick "Albatross flies")
beta=$(new_project beta)
read -r run_b _ < <(start_run "$beta" quick "Beta says hello")
wait_run_field "$run_b" status completed
state=$XDG_STATE_HOME/taskdeck/dashboard.state

# The palette's line (the message line while it is open).
palette_line() { screen | tail -n 2 | head -n 1 | sed 's/ *$//'; }
wait_palette() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		[[ $(palette_line) == "$1" ]] && return 0
		tick
	done
	fail "the palette's line is '$(palette_line)', not '$1'"
}

dash_start 120x36
wait_live
wait_for "Beta says hello"

# A verb from its start, then its argument; a verb that takes one gets a space.
keys :
type_text "pro"
keys Tab
wait_palette " :project"
type_text "bet"
keys Tab
wait_palette " :project beta"
keys Escape
pass "Tab completes the verb and the project name"

# Case-insensitive, and Tab again cycles through the candidates (in the
# list's order: newest first).
keys :
type_text "PROJECT AL"
keys Tab
wait_palette " :project albatross"
wait_for "Tab 1/2: albatross alpha"
keys Tab
wait_palette " :project alpha"
wait_for "Tab 2/2: albatross alpha"
keys Tab
wait_palette " :project albatross"
keys BTab
wait_palette " :project alpha"
keys BTab
wait_palette " :project albatross"
keys Enter
wait_for "Albatross flies"
pass "case-insensitive candidates, Tab and Shift-Tab cycle"

# Inside a name when no name begins with it.
keys :
type_text "project eta"
keys Tab
wait_palette " :project beta"
keys Enter
wait_for "Beta says hello"

# Session titles and run ids complete too.
keys :
type_text "session bet"
keys Tab
wait_palette " :session Beta says hello"
keys Escape
keys :
type_text "run ${run_b:0:6}"
keys Tab
wait_palette " :run $run_b"
keys Escape
keys :
type_text "sort st"
keys Tab
wait_palette " :sort status"
keys Escape
pass "session titles, run ids and sort keys complete"

# History: Up gives the lines run, newest first; Down comes back to the typed one.
keys :
type_text "project alpha"
keys Enter
wait_for "Alpha says hello"
keys :
keys Up
wait_palette " :project alpha"
keys Escape
keys :
type_text "filter sk-live-0123456789abcdef"
keys Enter
keys Escape
keys :
type_text "half"
keys Up
wait_palette " :project alpha"
keys Up
wait_palette " :project beta"
keys Down Down
wait_palette " :half"
keys Escape
pass "Up and Down browse the history"
dash_quit

[[ -f $state ]] || fail "no state file at $state"
[[ $(stat -c %a "$state") == 600 ]] || fail "the state file's mode is $(stat -c %a "$state")"
grep -q "sk-live" "$state" && fail "the state file keeps a line like a secret"
grep -qx "history	project alpha" "$state" || fail "the state file has no history: $(cat "$state")"

dash_start 120x36
wait_live
# It opens where it was left: alpha.
wait_for_re "^ taskdeck  alpha › Alpha says hello"
keys :
keys Up
wait_palette " :project alpha"
keys Enter
wait_for "Alpha says hello"
keys :
keys Up Up
wait_palette " :project beta"
keys Escape
pass "the history survives a restart of the dashboard"
dash_quit
