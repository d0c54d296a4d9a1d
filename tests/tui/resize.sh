#!/usr/bin/env bash
# Resizing while runs are live: 60x20, 200x60, too small, back; no crash, sane layout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project sizes)
read -r run _ < <(start_run "$project" demo-stream "Stream and resize")

# resize COLSxROWS: the window takes that size.
resize() {
	tui_tmux resize-window -t dash -x "${1%x*}" -y "${1#*x}"
	DASH_SIZE=$1
}

# The layout at the current size: the pane titles, the status bar, and no line
# longer than the width (capture-pane cuts nothing, so a longer line is a bug).
assert_layout() {
	local cols=${DASH_SIZE%x*} rows=${DASH_SIZE#*x} got line
	wait_for "Projects"
	wait_for "Sessions"
	wait_for "Runs"
	wait_for "Log"
	got=$(screen | wc -l)
	((got == rows)) || fail "the screen has $got lines at $DASH_SIZE"
	while IFS= read -r line; do
		((${#line} <= cols)) || fail "a line is ${#line} characters wide at $DASH_SIZE: $line"
	done < <(screen)
	screen | tail -n 1 | grep -qE 'live|connecting' || fail "the status bar is not on the last line"
}

dash_start 100x30
wait_live
wait_for "Stream and resize"
keys 1
wait_for "Reading the service logs"
assert_layout

resize 60x20
wait_for_re "^.{59}[^ ]" # something drawn up to the last column of 60
assert_layout
# The left column is 20 wide at 60 columns: the right pane's border starts at column 21.
screen | grep -qE '^.{20}┌' || screen | grep -qE '^.{20}\+' || fail "the right pane does not start at column 21 at 60x20"
pass "60x20"

resize 200x60
wait_for_re "^.{199}[^ ]" # drawn up to the last column of 200
assert_layout
wait_for "Reading the service logs"
pass "200x60"

resize 50x12
wait_for "terminal too small (60x16 needed)"
pass "50x12 says the terminal is too small"

resize 80x24
wait_for "Projects"
wait_gone "terminal too small"
assert_layout
wait_for "Stream and resize"
[[ $(run_field "$run" status) == running ]] || fail "the run stopped"
pass "back to 80x24"

dash_quit
pass "q exits cleanly after the resizes"
