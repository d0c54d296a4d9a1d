#!/usr/bin/env bash
# Marks and bulk actions: Space marks runs (across sessions), the status bar
# counts them and a column shows them; c cancels every marked run after one
# [y/N] that says how many and which; . runs them again (same prompt and
# settings, same sessions); * marks every run shown; a failure is listed with
# the count of those that succeeded; u and Esc clear the marks; a approves the
# plans the marked runs wait for.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
project=$(new_project bulk)
td defaults set "$project" provider=replay >/dev/null
read -r one s1 < <(start_run "$project" demo-stream "First long stream" --permission read-only)
read -r two s2 < <(start_run "$project" demo-stream "Second long stream" --plan-first)
wait_run_field "$one" status running
wait_run_field "$two" status running

dash_start 160x40
wait_live
wait_for "Second long stream"
# Sessions newest first: the second run's session, then the first's.
keys Tab Tab
wait_for_re "Second long stream › run_"
keys Space
wait_for "1 marked"
screen | grep -E "[✓v] ● running" | grep -qF "Second long stream" || fail "no mark on the marked row"
keys BTab j Tab
wait_for_re "First long stream › run_"
keys Space
wait_for "2 marked"
pass "Space marks runs of two sessions; the status bar says 2 marked"

keys c
wait_for_re "Cancel 2 marked runs: run_…[0-9a-z]+ \\(Second long stream\\), run_…"
assert_screen "(First long stream)? [y/N]"
keys n
wait_for "not confirmed"
[[ $(run_field "$one" status) == running && $(run_field "$two" status) == running ]] ||
	fail "n cancelled a run"
assert_screen "2 marked"
keys c
wait_for "Cancel 2 marked runs"
keys y
wait_for "cancel: 2 of 2 succeeded"
wait_run_field "$one" status cancelled
wait_run_field "$two" status cancelled
wait_gone "2 marked"
pass "c: one [y/N] naming both, then both cancelled (2 of 2 succeeded), marks cleared"

# Rerun both: new runs in the same sessions with the same prompts and settings.
keys Space
wait_for "1 marked"
keys BTab k Tab
wait_for_re "Second long stream › run_"
keys Space
wait_for "2 marked"
keys .
wait_for_re "Run again 2 marked runs: run_…[0-9a-z]+ \\(First long stream\\)"
assert_screen "(Second long stream)? [y/N]"
keys y
wait_for "rerun: 2 of 2 succeeded (started run_"
for s in "$s1" "$s2"; do
	[[ $(td runs list --session "$s" | grep -c '^run_') == 2 ]] || fail "session $s has not two runs"
done
new_two=$(td runs list --session "$s2" | sed -n 's/^\(run_[0-9a-z]*\) .*/\1/p' | grep -v "$two")
wait_run_field "$new_two" status running
[[ $(run_field "$new_two" prompt) == "Second long stream" ]] || fail "the rerun's prompt"
[[ $(run_field "$new_two" turnIntent) == plan-first ]] || fail "the rerun is not plan-first"
new_one=$(td runs list --session "$s1" | sed -n 's/^\(run_[0-9a-z]*\) .*/\1/p' | grep -v "$one")
[[ $(run_field "$new_one" permissionProfile) == read-only ]] || fail "the rerun's profile"
pass ".: both run again in their sessions, same prompts and settings"

# * marks every run shown (both of this session); cancelling them: the one
# already cancelled is listed as failed.
wait_for "● running"
keys '*'
wait_for "2 marked"
keys c
wait_for "Cancel 2 marked runs"
keys y
wait_for_re "cancel: 1 of 2 succeeded \\(run_[0-9a-z]+: already cancelled\\)"
wait_run_field "$new_two" status cancelled
pass "*: every run shown marked; the result lists the failure"

keys Space
wait_for "1 marked"
keys u
wait_gone "1 marked"
keys Space
wait_for "1 marked"
keys Escape
wait_gone "1 marked"
pass "u and Esc clear the marks"
td runs cancel "$new_one" >/dev/null
dash_quit

# a on marked runs approves the plan each waits for, after one [y/N].
read -r p1 ps1 < <(start_run "$project" plan "Plan the first" --plan-first)
read -r p2 ps2 < <(start_run "$project" plan "Plan the second" --plan-first)
wait_run_field "$p1" attention.kind plan-approval
wait_run_field "$p2" attention.kind plan-approval
# Not where the last start left it (an older session): on the newest.
rm -f "$XDG_STATE_HOME/taskdeck/dashboard.state"
dash_start 160x40
wait_live
keys Tab Tab
wait_for_re "Plan the second › run_"
keys Space
wait_for "1 marked"
keys BTab j Tab
wait_for_re "Plan the first › run_"
keys Space
wait_for "2 marked"
keys a
wait_for_re "Approve the plan of 2 marked runs: run_…[0-9a-z]+ \\(Plan the second\\)"
keys y
wait_for "approve: 2 of 2 succeeded"
for s in "$ps1" "$ps2"; do
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		[[ $(td plan show "$s" | sed -n 's/^status: //p') != awaiting-approval ]] && break
		tick
	done
	[[ $(td plan show "$s" | sed -n 's/^status: //p') != awaiting-approval ]] ||
		fail "the plan of session $s still awaits approval"
done
pass "a: the plans of both marked runs approved after one [y/N]"
dash_quit
