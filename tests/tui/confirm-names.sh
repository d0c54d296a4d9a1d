#!/usr/bin/env bash
# The questions of '.' (run again), 'a' (approve) and 'R' (revert) on one run
# name it as c's does: its prompt, its project and its session's title, the
# id below.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run names quick "Count the files in the workspace" status completed

dash_start 100x30
wait_live
wait_for "Count the files"
keys U
wait_for "Runs ↓newest"
keys .
wait_for "[y/N]"
wait_for 'Run again run "Count the files in the workspace" in names'
wait_for "$run"
pass ". asks by the run's prompt, project and session, the id below"
keys n
wait_gone "[y/N]"
[[ $(td runs list --project "$project" | grep -c '^run_') == 1 ]] || fail "n started a run"

keys a
wait_for "[y/N]"
wait_for 'Approve the plan of run "Count the files in the workspace" in names'
pass "a asks by the run's names"
keys Escape
wait_gone "[y/N]"

# R: a run that changed a file, its Changes shown first, then the question.
ws=$TUI_TMP/ws
mkdir "$ws"
printf 'alpha\nbeta\ngamma\n' >"$ws/notes.txt"
read -r edit _ < <(start_run "$project" workspace-edits "Fix the notes" --cwd "$ws" \
	--permission workspace-write)
wait_run_field "$edit" status completed
keys S
wait_for "Fix the notes"
keys g
keys U
wait_for "Fix the notes"
keys R
wait_for "R again reverts them"
wait_for "report.md"
keys R
wait_for 'Revert run "Fix the notes" in names › Fix the notes? It puts back 1'
wait_for "$edit"
pass "R asks by the run's names, the id below"
keys n
wait_gone "[y/N]"

dash_quit
pass "q exits cleanly"
