#!/usr/bin/env bash
# Where the Log's view is: "line N/M P%" on the pane's bottom edge, and, with
# follow off, "N new lines below" counting the lines that arrived since.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
project=$(new_project positions)
read -r run _ < <(start_run "$project" demo-stream "Stream the demo")

# The ruler's numbers: "N M".
ruler() { screen | grep -oE "line [0-9,]+/[0-9,]+ [0-9]+%" | head -n 1 | tr -d , |
	sed -E 's/line ([0-9]+)\/([0-9]+) .*/\1 \2/'; }

dash_start 100x18
wait_live
wait_for "Stream the demo"
keys 1
# Once the log is longer than the pane, the ruler shows on its bottom edge.
wait_for_re "└─+ line [0-9,]+/[0-9,]+ 100% ─┘" 250
pass "following, the ruler says the last line shown is the last one"

keys k
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(screen_line "Log:") != *follow* ]] && break
	tick
done
read -r at total < <(ruler)
((at < total)) || fail "after k the ruler says line $at of $total"
wait_for_re "[0-9]+ new lines? below \(f follows\)"
new() { screen | grep -oE "[0-9]+ new lines? below" | grep -oE "^[0-9]+"; }
first=$(new)
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	(($(new) > first)) && break
	tick
done
(($(new) > first)) || fail "the new lines stayed at $first while the run wrote"
read -r at2 total2 < <(ruler)
((at2 == at && total2 > total)) ||
	fail "the ruler went from $at/$total to $at2/$total2 (the view should stay, the total grow)"
pass "follow off: N new lines below counts up, the ruler's total grows, its line stays"

# Scrolled down to the end, those lines are seen: no longer new.
keys G
wait_gone "new line"
keys k
wait_for_re "[0-9]+ (more|new) lines? below"
keys g
wait_for_re "line [0-9,]+/[0-9,]+ [0-9]+%"
wait_for "▶ run queued"
dash_quit
pass "q exits cleanly"
