#!/usr/bin/env bash
# Approving a plan: the confirmation is asked, only y approves, then the run completes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run planning plan "Plan the report" attention.kind plan-approval --plan-first

plan_status() { td plan show "$session" | sed -n 's/^status: //p'; }

dash_start 120x36
wait_live
wait_for "Plan the report"
wait_for "!plan"
keys 2
wait_for "Look at the workspace, write a short markdown report"
wait_for "Write report.md"
wait_for "awaiting-approval"
# A pending step's glyph is not the ellipsis that marks cut text.
wait_for_re "◌ [0-9]+\. Write report\.md"
assert_not_screen "… 1."

# a asks; n, Enter and Esc all answer No.
for no in n Enter Escape; do
	keys a
	wait_for_re "Approve plan v1 r[0-9]+ of run \"Plan the report\" in planning"
	keys "$no"
	wait_gone "Approve plan v1"
	[[ $(plan_status) == awaiting-approval ]] || fail "'$no' at the confirmation changed the plan to $(plan_status)"
	[[ $(run_field "$run" attention.kind) == plan-approval ]] || fail "'$no' at the confirmation approved the plan"
done
assert_screen "awaiting-approval"
pass "n, Enter and Esc at the confirmation do not approve"

keys a
wait_for "Approve plan v1"
keys y
wait_run_field "$run" status completed
[[ $(plan_status) == completed ]] || fail "the plan is $(plan_status) after the run, not completed"
wait_for "completed"
wait_gone "!plan"
wait_gone "awaiting-approval"
pass "y approves: the run goes on and completes"

dash_quit
pass "q exits cleanly"
