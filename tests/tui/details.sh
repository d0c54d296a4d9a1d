#!/usr/bin/env bash
# Text cut to fit can be read whole: M shows the last message and the
# selected item's texts (a run's whole prompt, its error) in a box, wrapped;
# j/k scroll it, any other key closes it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
long="Write a long report about the write-ahead log of SQLite, its checkpoints, its readers and writers, and end with the sentence THE-VERY-END"
tui_start_with_run details quick "$long" status completed

dash_start 100x30
wait_live
wait_for "Write a long report"
assert_not_screen "THE-VERY-END"
keys Tab Tab
wait_for "Enter log  i detail"
keys s
wait_for "Runs by status"
keys M
wait_for "┌ Details"
wait_for "Last message: Runs by status"
wait_for "THE-VERY-END"
wait_for "Status: completed"
pass "M shows the last message and the run's whole prompt, wrapped"
keys x
wait_gone "┌ Details"
assert_not_screen "THE-VERY-END"
pass "any other key closes it"

dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
