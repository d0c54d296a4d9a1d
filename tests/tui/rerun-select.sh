#!/usr/bin/env bash
# '.' then y on one run: the new run is selected once it is listed (the
# title line names it, the Log and the Changes are its own), not the old one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run again quick "Count the files" status completed

dash_start 120x30
wait_live
wait_for "Count the files"
keys U
wait_for "Runs ↓newest"
keys .
wait_for "[y/N]"
keys y
wait_for "rerun: 1 of 1 succeeded (started run_"
new=$(screen | grep -oE "started run_[0-9a-z]+" | head -n 1)
new=${new#started }
[[ $new != "$run" ]] || fail "the rerun named the old run"
wait_for "› run_…${new: -6}"
assert_not_screen "› run_…${run: -6}"
pass "the new run is selected: the title line names it"

dash_quit
pass "q exits cleanly"
