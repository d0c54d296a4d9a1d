#!/usr/bin/env bash
# The new-run editor chooses the provider and the model (Tab moves from the
# text to them): in a project whose defaults play `research`, a plan-first run
# with the `plan` model waits for its plan.  A failed start keeps them too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project choosing)
td defaults set "$project" provider=replay model=research >/dev/null
newest_run() { td runs list --project "$project" | awk 'NR == 2 { print $1 }'; }

dash_start 120x36
wait_live
wait_for "choosing"

keys n
wait_for "New run in choosing"
wait_for "provider: default   model: default   attempts: 1   (Tab edits)"
type_text "Plan, then write"
keys C-t
keys Tab
wait_for "Tab model  Enter start"
type_text "replay"
keys Tab
wait_for "Tab attempts"
type_text "plan"
keys Tab
wait_for "Tab back to the text"
keys Tab
wait_for "provider: replay   model: plan"
keys Enter y
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	run=$(newest_run) || true
	[[ -n ${run:-} ]] && break
	tick
done
[[ -n ${run:-} ]] || fail "Enter started no run"
[[ $(run_field "$run" config.model) == plan ]] || fail "the run plays '$(run_field "$run" config.model)', not plan"
[[ $(run_field "$run" config.provider) == replay ]] || fail "the run uses '$(run_field "$run" config.provider)'"
[[ $(run_field "$run" turnIntent) == plan-first ]] || fail "the run is not plan-first"
wait_run_field "$run" attention.kind plan-approval
pass "n, Tab: provider replay, model plan; the plan-first run waits for its plan"

# Esc in a field leaves it as it was; the model survives a failed start.
svc_stop_quietly
wait_for "unreachable"
keys n
wait_for "New run in choosing"
keys Tab Tab
type_text "plan"
keys Tab Tab Tab
type_text "not kept"
keys Escape
wait_for "provider: default   model: plan"
type_text "Write it down"
keys Enter y
wait_for "start failed"
svc_restart
wait_live
keys n
wait_for "Write it down"
wait_for "provider: default   model: plan"
pass "Esc leaves a field unchanged; a failed start keeps the model"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
wait_gone "Drop the typed prompt?"
# Dropped is dropped: n opens empty again.
keys n
wait_for "New run in choosing"
assert_not_screen "Write it down"
wait_for "provider: default   model: default"
keys Escape
wait_gone "New run in choosing"

# A draft of n never comes back under N (a new session is not a
# continuation); N continues with the session's provider and model.
td plan reject "$(run_field "$run" sessionId)" --yes >/dev/null
wait_run_field "$run" status cancelled
keys N
wait_for "Continue session"
wait_for "provider, model: the session's"
assert_not_screen "Write it down"
type_text "Write it down"
keys Enter y
wait_for "started run_"
second=$(newest_run)
[[ $(run_field "$second" prompt) == "Write it down" ]] || fail "N started '$(run_field "$second" prompt)'"
[[ $(run_field "$second" config.model) == plan ]] || fail "the session's run plays $(run_field "$second" config.model)"
pass "a dropped draft stays dropped; N continues the session with its provider and model"
dash_quit
pass "q exits cleanly"
