#!/usr/bin/env bash
# Attention in another project: a run waiting for a plan decision in project
# "far" while "near" is selected shows in the status bar ("1 need you"), as a
# badge on far's row, and @ jumps to it (project, session, plan).  A second
# one arriving while the dashboard runs is counted too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

far=$(new_project far)
read -r run_far ses_far < <(start_run "$far" plan "Far away plan" --plan-first)
wait_run_field "$run_far" attention.kind plan-approval
near=$(new_project near)
read -r run_near _ < <(start_run "$near" quick "Near and done")
wait_run_field "$run_near" status completed

dash_start 120x36
wait_live
# The newest project (near) is selected; far's run is not on the screen.
wait_for "Near and done"
assert_not_screen "Far away plan"
wait_for "1 need you"
screen_line "far" | grep -qF "! far" || fail "far's row has no attention badge: $(screen_line far)"
screen_line "near" | grep -qvF "! near" || fail "near's row has a badge"
pass "a plan wait in another project: '1 need you' and a badge on its project"

keys @
wait_for "Far away plan"
wait_for "awaiting-approval"
screen | grep -qF "! Far away plan" || fail "the session row has no badge"
pass "@ jumps to the project, session and plan that need the user"

# A second run needing the user arrives while the dashboard runs.
read -r run_far2 _ < <(start_run "$near" plan "Near plan too" --plan-first)
wait_run_field "$run_far2" attention.kind plan-approval
wait_for "2 need you"
keys @
wait_for "Near plan too"
wait_for "awaiting-approval"
pass "a new wait is counted; @ goes on to the next one"

# Answered elsewhere: the count goes down.
td plan approve "$ses_far" >/dev/null
wait_for "1 need you"
pass "a wait answered elsewhere leaves the count"
dash_quit
pass "q exits cleanly"
