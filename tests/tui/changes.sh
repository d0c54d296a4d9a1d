#!/usr/bin/env bash
# The Changes view (5): a live run's changed files appear as it writes them,
# with the coloured diff of the selected one (a click selects another); the
# run's row shows +N -M; R reverts after a [y/N] naming the files, a file
# changed since is named and force is offered, and the files on disk are
# as before the run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
ws=$TUI_TMP/ws
mkdir "$ws"
printf 'alpha\nbeta\ngamma\n' >"$ws/notes.txt"
project=$(new_project edits)

dash_start 160x40
wait_live
wait_for "edits"
read -r run _ < <(start_run "$project" workspace-edits "Fix the notes" --cwd "$ws" \
	--permission workspace-write)
wait_for "Fix the notes"
keys 5
wait_for "[5 Changes]"
wait_for_re "Changes: .*live"
wait_for "report.md"
[[ $(run_field "$run" status) == running ]] || fail "the run ended before its changes showed"
screen_line "notes.txt" | grep -qE "M +\+1 +-1 +notes.txt" ||
	fail "notes.txt is not shown modified +1 -1: $(screen_line notes.txt)"
pass "5 shows the files of a live run as it writes them"

wait_for "+BETA"
assert_screen "-beta"
screen_escapes | grep -F "+BETA" | grep -q $'\e\\[' || fail "the diff's added line has no colour"
pass "the selected file's diff shows, coloured"

# At 160 columns the list spans columns 54 to 95, the diff is beside it.
click 70 "$(screen_row 'report.md')"
wait_for "+All three trials passed."
pass "a click on a file shows its diff"

wait_run_field "$run" status completed
wait_for_re "Changes: .*\(2 files \+4 -1\)$|Changes: .*\(2 files \+4 -1\) "
screen | grep -F "Fix the notes" | grep -qF "+4 -1" || fail "the run's row does not show +4 -1"
pass "the run's row shows +4 -1"

# The user changes a file the run changed: the revert names it and offers force.
printf 'delta\n' >>"$ws/notes.txt"
keys R
wait_for "[y/N]"
assert_screen 'Revert run "Fix the notes" in edits'
assert_screen "$run"
# The question as one line (its box's borders and line ends taken out).
question=$(screen | tr -d '│\n' | tr -s ' ')
grep -qF "notes.txt, report.md" <<<"$question" || fail "the question does not name the files"
grep -qF "puts back 1 file as before the run and deletes the 1 the run added" <<<"$question" ||
	fail "the question does not say that the file the run added is deleted"
keys y
wait_for "changed since the run"
wait_for "(force)? [y/N]"
keys y
wait_for_re "reverted run_.*2 files put back"
[[ $(cat "$ws/notes.txt") == $'alpha\nbeta\ngamma' ]] || fail "notes.txt is not as before the run"
[[ ! -e $ws/report.md ]] || fail "report.md, which the run added, is still there"
wait_for_re "Changes: .*reverted"
pass "R, y, then y to force: the files are as before the run"

# A run already reverted is not offered again as if its files were to come back.
keys R
wait_for_re "run_[0-9a-z]+ is already reverted \\(at"
wait_for "nothing to revert."
assert_not_screen "[y/N]"
# The box takes the next key, whatever it is: y closes it and reverts nothing.
keys y
wait_gone "nothing to revert"
pass "R on a reverted run says so instead of asking"

keys '?'
wait_for "revert the selected run's changes"
keys Escape
dash_quit
pass "q exits cleanly"
