#!/usr/bin/env bash
# The CLI around runs (no dashboard): `run --follow` ends with a status line;
# a --wait-timeout prints the run it leaves running (exit 3), and the run goes on.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
svc_start

project=$(new_project cli)
td run --project "$project" --model quick --follow "Say hello" >"$TUI_TMP/out" 2>"$TUI_TMP/err" ||
	fail "run --follow exited $?"
grep -q "Hello from taskdeck" "$TUI_TMP/out" || fail "run --follow printed no output"
run=$(sed -n 's/^taskdeck: run \(run_[a-z0-9]*\) in session.*/\1/p' "$TUI_TMP/err")
[[ -n $run ]] || fail "no run id on stderr: $(cat "$TUI_TMP/err")"
[[ $(tail -n 1 "$TUI_TMP/err") == "taskdeck: run $run completed" ]] ||
	fail "the last line of stderr is '$(tail -n 1 "$TUI_TMP/err")'"
pass "run --follow ends with 'taskdeck: run RUN completed'"

rc=0
td run --project "$project" --model plan --plan-first --wait --wait-timeout 1 "Plan, wait" \
	>"$TUI_TMP/out" 2>"$TUI_TMP/err" || rc=$?
((rc == 3)) || fail "a --wait-timeout exited $rc, not 3"
run=$(sed -n 's/^run: //p' "$TUI_TMP/out")
[[ -n $run ]] || fail "no run id on stdout"
grep -qF "run $run is still running" "$TUI_TMP/err" || fail "stderr does not say the run goes on: $(cat "$TUI_TMP/err")"
[[ $(run_field "$run" status) == running ]] || fail "the run is $(run_field "$run" status) after the timeout"
td runs cancel "$run" >/dev/null
pass "--wait-timeout: exit 3, the run id, the run left running"
