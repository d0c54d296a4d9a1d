#!/usr/bin/env bash
# The CLI around runs (no dashboard): `run --follow` ends with a status line;
# a --wait-timeout prints the run it leaves running (exit 3), and the run goes on.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

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

# runs logs: the durable history of a finished run (output on stdout).
read -r done_run _ < <(start_run "$project" quick "Hello again")
wait_run_field "$done_run" status completed
td runs logs "$done_run" >"$TUI_TMP/out" 2>"$TUI_TMP/err" || fail "runs logs exited $?"
grep -q "Hello from taskdeck" "$TUI_TMP/out" || fail "runs logs printed no output"
[[ $(tail -n 1 "$TUI_TMP/err") == "taskdeck: run $done_run completed" ]] ||
	fail "runs logs: the last line of stderr is '$(tail -n 1 "$TUI_TMP/err")'"
# runs watch: no output, how it ended.
td runs watch "$done_run" >"$TUI_TMP/out" 2>"$TUI_TMP/err" || fail "runs watch exited $?"
[[ ! -s $TUI_TMP/out ]] || fail "runs watch printed output: $(head -c 200 "$TUI_TMP/out")"
[[ $(tail -n 1 "$TUI_TMP/err") == "taskdeck: run $done_run completed" ]] ||
	fail "runs watch: the last line of stderr is '$(tail -n 1 "$TUI_TMP/err")'"
pass "runs logs and runs watch of a finished run"

# runs logs --follow of a run waiting for its plan: the past, then the live
# output after the approval, each line once; exit 0 when it completes.
read -r live_run live_ses < <(start_run "$project" plan "Plan, then follow" --plan-first)
wait_run_field "$live_run" attention.kind plan-approval
td runs logs "$live_run" --follow >"$TUI_TMP/out" 2>"$TUI_TMP/err" &
follower=$!
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q "here is my plan" "$TUI_TMP/out" && break; tick; done
grep -q "here is my plan" "$TUI_TMP/out" || fail "runs logs --follow did not print the past output"
kill -0 "$follower" 2>/dev/null || fail "runs logs --follow ended before the run"
td plan approve "$live_ses" >/dev/null
rc=0
wait "$follower" || rc=$?
((rc == 0)) || fail "runs logs --follow exited $rc: $(tail -n 3 "$TUI_TMP/err")"
(($(grep -c "here is my plan" "$TUI_TMP/out") == 1)) || fail "a past line was printed twice"
[[ $(tail -n 1 "$TUI_TMP/err") == "taskdeck: run $live_run completed" ]] ||
	fail "runs logs --follow: the last line is '$(tail -n 1 "$TUI_TMP/err")'"
[[ $(wc -l <"$TUI_TMP/out") -gt 2 ]] || fail "no live output after the approval"
pass "runs logs --follow: history, then live until the end, nothing twice"

# Sizes in one unit: the tools' summaries say KiB, as the dashboard and
# artifacts list do, never KB.
read -r sized_run _ < <(start_run "$project" research "Sizes")
wait_run_field "$sized_run" status completed
td runs logs "$sized_run" >/dev/null 2>"$TUI_TMP/err" || fail "runs logs exited $?"
grep -qE "wrote report\.md \([0-9.]+ KiB\)" "$TUI_TMP/err" ||
	fail "the write's summary has no KiB size: $(grep write_file "$TUI_TMP/err")"
! grep -qE "[0-9] [KMG]B\)" "$TUI_TMP/err" || fail "a summary says KB/MB/GB: $(grep -E "[0-9] [KMG]B\)" "$TUI_TMP/err")"
pass "tool summaries give sizes in KiB"
