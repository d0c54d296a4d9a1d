#!/usr/bin/env bash
# A start that fails (the service down, the session busy) keeps the whole
# start: n / N offers the prompt again with the profile and plan-first it was
# typed with, and Enter then starts exactly that run, never the text alone
# with the defaults.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project failing)
td defaults set "$project" provider=replay model=slow >/dev/null

newest_run() { td runs list --project "$project" | awk 'NR == 2 { print $1 }'; }

dash_start 120x36
wait_live
wait_for "failing"

# The service goes away before Enter.
svc_stop_quietly
wait_for "unreachable"
keys n
wait_for "New run in failing"
keys C-p C-p C-t
wait_for "plan-first: on"
wait_for "profile: ask"
type_text "Careful with the files"
keys Enter y
wait_for "start failed"
wait_gone "New run in failing"

svc_restart
wait_live
keys n
wait_for "New run in failing"
wait_for "Careful with the files"
wait_for "plan-first: on"
wait_for "profile: ask"
pass "after a failed start n brings back the prompt, plan-first and the profile"
keys Enter y
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	run=$(newest_run) || true
	[[ -n ${run:-} ]] && break
	tick
done
[[ -n ${run:-} ]] || fail "Enter in the restored editor started no run"
[[ $(run_field "$run" prompt) == "Careful with the files" ]] || fail "the prompt arrived as '$(run_field "$run" prompt)'"
[[ $(run_field "$run" permissionProfile) == ask ]] ||
	fail "the restored start ran as $(run_field "$run" permissionProfile), not ask"
[[ $(run_field "$run" turnIntent) == plan-first ]] ||
	fail "the restored start is '$(run_field "$run" turnIntent)', not plan-first"
pass "Enter starts the run with the choices made before the failure"

# The session is busy: N fails, and N brings everything back again.
read -r busy _ < <(start_run "$project" slow "Keep it busy")
wait_run_field "$busy" status running
wait_for "Keep it busy"
click 5 "$(screen_row "Keep it busy")"
wait_for "N continue"
keys N
wait_for "Continue session"
keys C-p C-p C-p
wait_for "profile: read-only"
type_text "Second thoughts"
keys Enter y
wait_for "start failed"
keys N
wait_for "Continue session"
wait_for "Second thoughts"
wait_for "profile: read-only"
wait_for "plan-first: off"
pass "a busy session: N brings back the prompt and the profile"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
wait_gone "Drop the typed prompt?"
dash_quit
pass "q exits cleanly"
