#!/usr/bin/env bash
# A session's Log: ] and [ jump to the next / previous run's first line; t
# cycles the timestamps: the clock, the time since the run started, none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run jumps quick "First of three" status completed
run1=$run
read -r run2 _ < <(start_run "$project" - "Second of three" --session "$session")
wait_run_field "$run2" status completed
read -r run3 _ < <(start_run "$project" - "Third of three" --session "$session")
wait_run_field "$run3" status completed
tail1=${run1: -6} tail2=${run2: -6} tail3=${run3: -6}

# The first row inside the Log's box.
log_top() { screen | sed -n 3p | sed 's/.*││//'; }

dash_start 110x20
wait_live
wait_for "Third of three"
keys 1
wait_for "run finished: completed"

# Timestamps: the clock, then since the run started, then none, then the clock.
wait_for_re "│[0-9]{2}:[0-9]{2}:[0-9]{2} ▶ run started"
keys t
wait_for "+time"
wait_for_re "│ *\+[0-9]+\.[0-9]s ▶ run started"
wait_for_re "│ *\+[0-9]+\.[0-9]s ▶ run finished: completed"
keys t
wait_for_re "│▶ run started"
keys t
wait_for_re "│[0-9]{2}:[0-9]{2}:[0-9]{2} ▶ run started"
pass "t cycles: the clock, +12.4s since the run started, none"

# One run in the Log: ] says how to see the session's.
keys ']'
wait_for "the Log shows one run: s shows its session's runs"
keys s
wait_for "(session)"
keys g
wait_for_re "…$tail1 ▶ run queued"
keys ']'
wait_for "run 2 of 3: run_…$tail2"
[[ $(log_top) == *"…$tail2 ▶ run queued"* ]] || fail "] did not put run 2's first line on top: $(log_top)"
keys ']'
wait_for "run 3 of 3: run_…$tail3"
wait_for_re "…$tail3 ▶ run queued"
keys ']'
wait_for "no later run in this log (3 runs)"
keys '['
wait_for "run 2 of 3: run_…$tail2"
[[ $(log_top) == *"…$tail2 ▶ run queued"* ]] || fail "[ did not put run 2's first line on top: $(log_top)"
keys '['
wait_for "run 1 of 3: run_…$tail1"
[[ $(log_top) == *"…$tail1 ▶ run queued"* ]] || fail "[ did not put run 1's first line on top: $(log_top)"
keys '['
wait_for "no earlier run in this log (3 runs)"
pass "] and [ jump between the runs of a session's log"
dash_quit
pass "q exits cleanly"
