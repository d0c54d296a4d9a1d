#!/usr/bin/env bash
# A key pressed in a pane where it does nothing says every pane it works in,
# not one of them: c cancels in Runs and in the Log, R reverts in Runs and
# in the Changes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run where quick "Count the files" status completed

dash_start 200x30
wait_live
wait_for "Count the files"
keys P
wait_for "Enter open"
keys c
wait_for "c (cancel the selected run (the marked ones)) works in Runs and the Log (1); ? lists the keys"
pass "c in Projects names Runs and the Log"
keys 1
wait_for "[1 Log]"
keys R
wait_for "works in Runs and the Changes (5); ? lists the keys"
pass "R in the Log names Runs and the Changes"
keys P
wait_for "Enter open"
keys i
wait_for "works in Runs and the Log (1)"
pass "i in Projects names Runs and the Log"

dash_quit
pass "q exits cleanly"
