#!/usr/bin/env bash
# The ':' palette's verbs: :session TITLE, :sort KEY, :filter TEXT, :cancel RUN,
# :approve RUN (a run of another session: its plan is read, then asked),
# :messages, :help, :q; an unknown verb names the nearest.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run verbs plan "Plan the report" attention.kind plan-approval --plan-first
plan_run=$run
read -r slow_run _ < <(start_run "$project" slow "Take your time")
wait_run_field "$slow_run" status running
read -r quick_run _ < <(start_run "$project" quick "Quick and done")
wait_run_field "$quick_run" status completed

dash_start 120x36
wait_live
wait_for "Quick and done"

keys :
type_text "sesion Plan"
keys Enter
wait_for "unknown command ':sesion': did you mean :session TITLE?"
pass "an unknown verb names the nearest"

keys :
type_text "session take YOUR"
keys Enter
wait_for_re "^│> .*Take your time"
wait_for "Sessions ↓newest"
pass ":session selects a session by (part of) its title, case-insensitively"

keys :
type_text "sort name"
keys Enter
wait_for "Sessions ↓name"
wait_for "Sessions by name"
keys :
type_text "sort Sta"
keys Enter
wait_for "Sessions ↓status"
pass ":sort sets the focused list's order (by a prefix too)"

keys :
type_text "filter quick"
keys Enter
wait_for "Sessions /quick (1 of 3)"
keys :
type_text "filter"
keys Enter
wait_gone "Sessions /quick"
pass ":filter filters the focused list, :filter alone clears"

keys :
type_text "cancel ${slow_run: -6}"
keys Enter
wait_for 'Cancel run "'
wait_for "$slow_run"
keys y
wait_run_field "$slow_run" status cancelled
keys :
type_text "cancel $quick_run"
keys Enter
wait_for 'Nothing to cancel: run "'
wait_for "has already completed."
keys n
wait_gone "Nothing to cancel"
assert_not_screen "New run in"
pass ":cancel RUN asks, then cancels; a finished run is said"

keys :
type_text "approve $plan_run"
keys Enter
wait_for_re "Approve plan v1 r[0-9]+ of run \""
keys y
wait_run_field "$plan_run" status completed
pass ":approve RUN reads its plan, then asks"

keys :
type_text "messages"
keys Enter
wait_for "Messages (newest last"
wait_for "unknown command ':sesion'"
keys q
wait_gone "Messages (newest last"
keys :
type_text "help"
keys Enter
wait_for "Keys: "
keys Escape
wait_gone "Keys: "
keys :
type_text "q"
keys Enter
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ -s $TUI_TMP/dash.rc ]] && break
	tick
done
[[ $(cat "$TUI_TMP/dash.rc" 2>/dev/null) == 0 ]] || fail ":q did not exit with 0"
assert_no_sanitizer_report
pass ":messages, :help and :q"
