#!/usr/bin/env bash
# NO_COLOR and --monochrome: no colour escape codes, ASCII badges; without them
# the same screen has colour (so this test can tell the difference).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project colours)
read -r ok_run _ < <(start_run "$project" quick "A run that completes")
wait_run_field "$ok_run" status completed
read -r bad_run _ < <(start_run "$project" fail "A run that fails")
wait_run_field "$bad_run" status failed

# The SGR parameters of colours (30-38, 40-48, 90-97, 100-107) in the screen's escapes.
colour_codes() {
	screen_escapes | grep -oE $'\e\\[[0-9;:]*m' | tr -d '\033[m' | tr ';:' '\n\n' |
		grep -xE '3[0-8]|4[0-8]|9[0-7]|10[0-7]' | sort -u | tr '\n' ' ' || true
}

# show ARGS...: the dashboard with the failed run's session selected.
show() {
	dash_start 100x30 "$@"
	wait_live
	wait_for "A run that fails"
	wait_for "A run that completes"
	keys Tab Tab
	wait_for "failed"
}

show
codes=$(colour_codes)
[[ -n $codes ]] || fail "no colour at all without NO_COLOR (the other checks would prove nothing)"
dash_quit
note "with colour: SGR $codes"

show NO_COLOR=1
codes=$(colour_codes)
[[ -z $codes ]] || fail "NO_COLOR=1: colour codes on the screen: $codes"
wait_for "x failed"
assert_not_screen "✘"
assert_not_screen "✔"
# Selection is still visible: reverse video.
screen_escapes | grep -qE $'\e\\[([0-9;]*;)?7(;[0-9;]*)?m' || fail "NO_COLOR=1: no reverse video for the selection"
# A mark is not a status glyph ('*' is "running" in ASCII).
keys Space
wait_for "1 marked"
assert_screen "v x failed"
dash_quit
pass "NO_COLOR=1: no colour, ASCII badges, reverse-video selection, a mark apart from them"

show --monochrome
codes=$(colour_codes)
[[ -z $codes ]] || fail "--monochrome: colour codes on the screen: $codes"
dash_quit
pass "--monochrome: no colour"
