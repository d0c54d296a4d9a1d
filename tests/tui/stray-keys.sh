#!/usr/bin/env bash
# No stray key and no key meant for a question starts a run: c on an ended
# run says so in a box that takes the next key (the n typed to decline does
# not open the editor), and Enter in the new-run editor asks [y/N] before a
# run starts, as every other question does (only y acts).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run stray quick "Ended one" status completed

run_count() { td runs list --project "$project" | awk 'NR > 1' | wc -l; }

dash_start 120x36
wait_live
keys U
wait_for "Ended one"
# An ended run: no c cancel in the hints.
wait_for "Enter log  i detail"
assert_not_screen "c cancel"
pass "the hints of an ended run offer no cancel"

keys c
wait_for 'Nothing to cancel: run "Ended one"'
wait_for "Any key closes this."
keys n
wait_gone "Nothing to cancel"
assert_not_screen "New run in stray"
type_text ":run the tests"
keys Enter
tick
tick
assert_not_screen "New run in stray"
assert_not_screen "Start this run"
keys Escape Escape
[[ $(run_count) == 1 ]] || fail "c then n on an ended run started a run"
pass "c on an ended run says so; the n typed to decline only closes the box"

# The editor: Enter asks; n, Esc and any other key go back to the text.
keys n
wait_for "New run in stray"
type_text "Count the files"
for no in n Escape x; do
	keys Enter
	wait_for "Start this run? [y/N]"
	keys "$no"
	wait_gone "Start this run?"
	wait_for "New run in stray"
	assert_screen "Count the files"
done
[[ $(run_count) == 1 ]] || fail "an answer other than y started the run"
keys Enter
wait_for "Start this run? [y/N]"
keys y
wait_gone "New run in stray"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(run_count) == 2 ]] && break
	tick
done
[[ $(run_count) == 2 ]] || fail "y at 'Start this run?' started no run"
[[ $(td runs list --project "$project" | awk 'NR == 2 { print $1 }' | xargs -I{} "$TD_BUILDDIR/taskdeck" runs show {} | sed -n 's/^prompt: //p') == "Count the files" ]] ||
	fail "the run started is not the typed prompt"
pass "Enter in the editor asks [y/N]; only y starts the run"

# A failed start's draft: dropped (Esc, y) is gone; a failed continue comes
# back under N, never under n as a new session.
svc_stop_quietly
keys N
wait_for "Continue session"
type_text "Lost continue"
keys Enter y
wait_for "start failed"
svc_restart
wait_live
keys n
wait_for "New run in stray"
assert_not_screen "Lost continue"
keys Escape
wait_gone "New run in stray"
keys N
wait_for "Continue session"
wait_for "Lost continue"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
wait_gone "Continue session"
keys N
wait_for "Continue session"
assert_not_screen "Lost continue"
keys Escape
wait_gone "Continue session"
pass "a failed continue comes back under N only; dropped, it stays dropped"

dash_quit
pass "q exits cleanly"
