#!/usr/bin/env bash
# A live run: new lines appear as they come; scrolling up stops follow and the
# pane says how many lines are below it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project streaming)
read -r run _ < <(start_run "$project" demo-stream "Stream the demo")

# The highest item number ("  42. taskdeckd.log: ...") on the screen, 0 when none.
max_item() {
	screen | grep -oE '(^|[^0-9:])[0-9]{1,3}\. [A-Za-z]' | grep -oE '[0-9]+' | sort -n | tail -n 1 || true
}

# wait_item_above N: until the screen shows an item numbered above N.
wait_item_above() {
	local i n
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		n=$(max_item)
		((${n:-0} > $1)) && return 0
		tick
	done
	fail "no item above $1 appeared (highest: ${n:-none})"
}

# The number of run.output events the service has sent for the run so far.
outputs_sent() {
	svc_get "/api/v1/runs/$run/events?limit=1000" | grep -o '"type":"run.output"' | wc -l
}

# 18 rows: the log pane holds about 15 lines, fewer than the run writes in 10 s.
dash_start 100x18
wait_live
wait_for "Stream the demo"
keys 1
wait_for "Reading the service logs"
wait_item_above 2
# Once the pane is full, following means the newest line stays in view.
wait_for_re "^.*(^|[^0-9:])1[0-9]\. [A-Za-z]" 250
wait_gone "Reading the service logs"
first=$(max_item)
wait_item_above "$((first + 3))"
line=$(screen_line "Log:")
[[ $line == *follow* ]] || fail "the log's title does not say follow while following: $line"
pass "new lines appear while following, the oldest scroll away"

# One line up: follow turns off and the view stays where it is.
keys k
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(screen_line "Log:") != *follow* ]] && break
	tick
done
[[ $(screen_line "Log:") != *follow* ]] || fail "scrolling up did not turn follow off"
frozen=$(max_item)
sent=$(outputs_sent)
# Wait until the service has sent at least five more lines of output.
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	(($(outputs_sent) >= sent + 5)) && break
	tick
done
(($(outputs_sent) >= sent + 5)) || fail "the run stopped sending output"
now=$(max_item)
((now <= frozen)) || fail "the log moved on to item $now after scrolling up (was at $frozen)"
pass "scrolling up stops follow (still at item $frozen while the run went on)"

# Not following, the pane says how many lines are below it, counting up.
wait_for_re "[0-9]+ (more|new) lines? below \(f follows\)"
below() { screen | grep -oE "[0-9]+ (more|new) lines? below" | grep -oE "^[0-9]+"; }
first_below=$(below)
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	(($(below) > first_below)) && break
	tick
done
(($(below) > first_below)) || fail "the lines below stayed at $first_below while the run went on"
pass "N more lines below, growing while the run writes"

# G: follow again, and the newest lines show.
keys G
wait_item_above "$frozen"
wait_item_above "$((frozen + 2))"
[[ $(screen_line "Log:") == *follow* ]] || fail "G did not turn follow on"
wait_gone "more line"
pass "G turns follow on again"

dash_quit
pass "q exits cleanly"
