#!/usr/bin/env bash
# Starting runs from the prompt editor (the project's default profile, then the
# toggles and a prompt with wide characters) and cancelling one: only y cancels.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project starting)
td defaults set "$project" provider=replay model=slow permissionProfile=read-only >/dev/null

# The newest run of the project: "ID STATUS".
newest_run() { td runs list --project "$project" | awk 'NR == 2 { print $1, $2 }'; }

dash_start 120x36
wait_live
wait_for "starting"

keys n
wait_for "New run in starting"
wait_for "profile: default"
type_text "Count the files"
keys Enter y
wait_for "Count the files"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	read -r run status < <(newest_run) || true
	[[ ${status:-} == running ]] && break
	tick
done
[[ ${status:-} == running ]] || fail "the run started from the editor is '${status:-missing}', not running"
[[ $(run_field "$run" permissionProfile) == read-only ]] ||
	fail "profile default sent $(run_field "$run" permissionProfile), not the project's read-only"
[[ $(run_field "$run" prompt) == "Count the files" ]] || fail "the prompt arrived as '$(run_field "$run" prompt)'"
pass "n starts a run with the typed prompt and the project's default profile"

# Cancel from the Runs pane (focus stayed on Projects): n and Esc keep it running, y cancels.
keys Tab Tab
wait_for "Enter log  c cancel"
for no in n Escape; do
	keys c
	# The question names the run, its project and session; the id follows.
	wait_for 'Cancel run "Count the files" in starting › Count the files? [y/N]'
	assert_screen "$run"
	keys "$no"
	wait_gone 'Cancel run "Count the files"'
	[[ $(run_field "$run" status) == running ]] || fail "'$no' at the confirmation cancelled the run"
	[[ $(run_field "$run" cancelRequestedAt) == - ]] || fail "'$no' asked for a cancel"
done
keys c
wait_for 'Cancel run "Count the files" in starting › Count the files? [y/N]'
keys y
wait_run_field "$run" status cancelled
wait_for "cancelled"
pass "c asks, naming the run, project and session; only y cancels the run"

# Continue the session with the toggles and wide characters.
keys N
wait_for "Continue session: starting › Count the files"
keys C-t C-p
wait_for "plan-first: on"
wait_for "profile: workspace-write"
type_text "Résumé 日本語 ✓"
keys Enter y
wait_for "Résumé 日本語 ✓"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	read -r second _ < <(newest_run) || true
	[[ ${second:-} != "$run" ]] && break
	tick
done
[[ ${second:-$run} != "$run" ]] || fail "N started no run"
[[ $(run_field "$second" prompt) == "Résumé 日本語 ✓" ]] || fail "the prompt arrived as '$(run_field "$second" prompt)'"
[[ $(run_field "$second" sessionId) == $(run_field "$run" sessionId) ]] || fail "N started a new session"
[[ $(run_field "$second" turnIntent) == plan-first ]] || fail "Ctrl-T did not make the run plan-first"
[[ $(run_field "$second" permissionProfile) == workspace-write ]] ||
	fail "Ctrl-P did not select workspace-write ($(run_field "$second" permissionProfile))"
pass "N continues the session with plan-first, the chosen profile and a UTF-8 prompt"

keys c
wait_for 'Cancel run "Résumé 日本語 ✓" in starting › Count the files? [y/N]'
keys y
wait_run_field "$second" status cancelled
dash_quit
pass "q exits cleanly"
