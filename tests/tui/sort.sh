#!/usr/bin/env bash
# 's' in a list cycles its order, shown in its title: newest first (the
# default), by status (the runs that need you first, then running, queued,
# failed, cancelled, completed), by name.  The selection stays on its item.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project sorting)
read -r r1 _ < <(start_run "$project" plan "Gamma waits for a plan" --plan-first)
wait_run_field "$r1" attention.kind plan-approval
read -r r2 _ < <(start_run "$project" fail "Alpha fails")
wait_run_field "$r2" status failed
read -r r3 _ < <(start_run "$project" quick "Beta completes")
wait_run_field "$r3" status completed

# The session titles in the order the Sessions pane lists them.
order() {
	screen | awk '/Sessions/ { on = 1; next } /├ Runs/ { on = 0 } on' |
		grep -oE "(Alpha|Beta|Gamma)" | tr '\n' ' '
}
wait_order() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		[[ $(order) == "$1" ]] && return 0
		tick
	done
	fail "sessions in the order '$(order)', not '$1'"
}

dash_start 120x36
wait_live
wait_for "Beta completes"
wait_for "Sessions ↓newest"
wait_order "Beta Alpha Gamma "
pass "newest first by default, said in the title"

keys Tab
keys s
wait_for "Sessions ↓status"
wait_for "Sessions by status"
wait_order "Gamma Alpha Beta "
pass "s: by status, the session that needs you first, then failed, then completed"

# The selection stays on its item: select Beta, sort by name.
keys g
sleep 0.3
keys j j
wait_for "│> Beta completes"
keys s
wait_for "Sessions ↓name"
wait_order "Alpha Beta Gamma "
wait_for "│> Beta completes"
pass "s: by name; the selection stayed on Beta"

keys s
wait_for "Sessions ↓newest"
wait_order "Beta Alpha Gamma "
pass "s again: newest first"

# Another session starting moves into place in the order chosen.
keys s
wait_for "Sessions ↓status"
read -r r4 _ < <(start_run "$project" plan "Delta waits too" --plan-first)
wait_run_field "$r4" attention.kind plan-approval
wait_for "Delta waits too"
first=$(screen | awk '/Sessions/ { on = 1; next } /├ Runs/ { on = 0 } on' | grep -oE "(Alpha|Beta|Gamma|Delta)" | head -n 2 | tr '\n' ' ')
[[ $first == "Delta Gamma " || $first == "Gamma Delta " ]] ||
	fail "the two sessions that need you are not first: $first"
pass "a new session that needs you goes to the top of the status order"
td runs cancel "$r1" >/dev/null 2>&1 || true
td runs cancel "$r4" >/dev/null 2>&1 || true
dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
