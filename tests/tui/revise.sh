#!/usr/bin/env bash
# Revising a plan: e, feedback, Enter, y; a new version with the feedback comes back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run revising plan "Plan, then revise it" attention.kind plan-approval --plan-first

plan_field() { td plan show "$session" | sed -n "s/^$1: //p"; }

dash_start 120x36
wait_live
wait_for "Plan, then revise it"
keys 2
wait_for "Look at the workspace, write a short markdown report"
[[ $(plan_field version) == 1 ]] || fail "the first plan is version $(plan_field version)"

# Esc in the feedback editor sends nothing.
keys e
type_text "never sent"
keys Escape
assert_not_screen "Send feedback?"
[[ $(plan_field version) == 1 && $(plan_field status) == awaiting-approval ]] ||
	fail "Esc in the feedback editor changed the plan"

# n at the confirmation sends nothing either.
keys e
type_text "Keep it short"
keys Enter
wait_for "Send feedback? [y/N]"
keys n
wait_gone "Send feedback?"
[[ $(plan_field version) == 1 ]] || fail "n at 'Send feedback?' revised the plan"

keys e
type_text "Only two steps, please"
keys Enter
wait_for "Send feedback? [y/N]"
keys y
wait_for "Revised after feedback: Only two steps, please"
wait_for "v2"
[[ $(plan_field version) == 2 ]] || fail "the plan is version $(plan_field version) after the revision"
[[ $(plan_field status) == awaiting-approval ]] || fail "the revised plan is $(plan_field status)"
[[ $(run_field "$run" status) == running ]] || fail "the run is $(run_field "$run" status) after the revision"
pass "the feedback makes version 2, awaiting approval again"

# And it can be approved from there.
keys a
wait_for_re "Approve plan v2 r[0-9]+ of run \""
keys y
wait_run_field "$run" status completed
pass "version 2 approved; the run completes"

dash_quit
pass "q exits cleanly"
