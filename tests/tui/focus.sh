#!/usr/bin/env bash
# Focus keys P, S, U (Projects, Sessions, Runs) and arrows: Up/Down move in
# the focused pane, Left/Right go between panes, and in the prompt editor
# Up/Down move between its lines.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run alpha quick "Alpha one" status completed
read -r run2 _ < <(start_run "$project" quick "Alpha two")
wait_run_field "$run2" status completed
new_project beta >/dev/null

# The row of the list selection ("> ") that holds TEXT, or fails.
selected() { screen | grep -qE "^│> .*$1" || fail "'$1' is not the selection"; }
wait_selected() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		screen | grep -qE "^│> .*$1" && return 0
		tick
	done
	selected "$1"
}

dash_start 120x36
wait_live
wait_for "beta"
wait_selected beta
keys Down
wait_selected alpha
wait_for "Alpha two"
wait_selected "Alpha two"

# S: Sessions focused, Down moves its selection (not the project's).
keys S
keys Down
wait_selected "Alpha one"
selected alpha
# U: Runs; P: Projects again, Up moves the project.
keys U
wait_for "Enter log  i detail"
keys P
wait_for "Enter open"
keys Up
wait_selected beta
pass "P, S, U focus Projects, Sessions, Runs; Up/Down move there"

# Right, Right: Runs (hints); Left: Sessions, where Down moves the session.
keys Down
wait_selected alpha
wait_selected "Alpha two"
keys Right Right
wait_for "Enter log  i detail"
keys Left
keys Down
wait_selected "Alpha one"
pass "Left and Right move between panes"

# While a list's filter is typed, Up and Down move among its matches.
keys P /
type_text "a"
wait_for "Projects /a (2 of 2)"
wait_selected alpha
keys Up
wait_selected beta
keys Down
wait_selected alpha
keys Escape
wait_gone "Projects /a"
pass "Up and Down move the selection while a filter is typed"

# The prompt editor: Up and Down move between its lines.
keys n
wait_for "New run in alpha"
type_text "line one"
keys C-j
type_text "line two"
keys Home Up
type_text "X"
keys Down
type_text "Y"
wait_for "Xline one"
wait_for "lYine two"
pass "Up and Down move between the prompt's lines"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
wait_gone "New run in alpha"
dash_quit
pass "q exits cleanly"
