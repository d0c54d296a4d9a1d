#!/usr/bin/env bash
# Following a run through service restarts: `runs logs -f` and `runs watch`
# started before the restart reconnect and follow the resumed run to its end;
# started after it (the run's history then spans two event streams, whose
# seqs restart at 1), they print its live events, not nothing; a prompt that
# waits across a restart is shown to the follower.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run restarting steady "Tick through a restart" status running --permission workspace-write

# wait_file FILE TEXT: waits (deadline) until FILE holds TEXT.
wait_file() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		tick
	done
	fail "$1 never held '$2': $(tail -n 5 "$1" 2>/dev/null)"
}
# wait_exit PID NAME: the follower's exit code in rc, after the deadline a failure.
wait_exit() {
	local i
	rc=0
	for ((i = 0; i < TUI_WAIT_TENTHS * 2; i++)); do
		kill -0 "$1" 2>/dev/null || break
		tick
	done
	if kill -0 "$1" 2>/dev/null; then
		kill "$1" 2>/dev/null || true
		fail "$2 still follows after the run ended (status $(run_field "$run" status))"
	fi
	wait "$1" || rc=$?
}

# wait_resumed RUN: waits (deadline) until the restarted service resumed it.
wait_resumed() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		svc_get "/api/v1/runs/$1/events?limit=1000" | grep -q '"phase":"resumed"' && return 0
		tick
	done
	fail "run $1 was not resumed (status $(run_field "$1" status))"
}

td runs logs -f "$run" </dev/null >"$TUI_TMP/before.out" 2>"$TUI_TMP/before.err" &
before=$!
td runs watch "$run" </dev/null >"$TUI_TMP/watch-before.out" 2>"$TUI_TMP/watch-before.err" &
watch_before=$!
wait_file "$TUI_TMP/before.out" "tick 2"

svc_kill9
svc_restart
wait_resumed "$run"
td runs logs -f "$run" </dev/null >"$TUI_TMP/after.out" 2>"$TUI_TMP/after.err" &
after=$!
td runs watch "$run" </dev/null >"$TUI_TMP/watch-after.out" 2>"$TUI_TMP/watch-after.err" &
watch_after=$!

for who in before after; do
	pid=${!who}
	wait_exit "$pid" "runs logs -f ($who the restart)"
	[[ $rc == 0 ]] || fail "runs logs -f ($who the restart) exited $rc: $(tail -n 3 "$TUI_TMP/$who.err")"
	grep -qx "tick 30" "$TUI_TMP/$who.out" || fail "runs logs -f ($who the restart) did not print the resumed run's last tick"
	[[ $(tail -n 1 "$TUI_TMP/$who.err") == "taskdeck: run $run completed" ]] ||
		fail "runs logs -f ($who the restart) ended with '$(tail -n 1 "$TUI_TMP/$who.err")'"
	grep -q "resumed" "$TUI_TMP/$who.err" || fail "runs logs -f ($who the restart) did not say the run resumed"
done
# Each tick of the resumed step once: nothing printed twice after the restart.
[[ $(grep -cx "tick 30" "$TUI_TMP/before.out") == 1 ]] || fail "the follower across the restart printed tick 30 twice"
pass "runs logs -f follows a resumed run to its end, started before or after the restart"
for who in before after; do
	pid_var=watch_$who
	wait_exit "${!pid_var}" "runs watch ($who the restart)"
	[[ $rc == 0 ]] || fail "runs watch ($who the restart) exited $rc"
	[[ $(tail -n 1 "$TUI_TMP/watch-$who.err") == "taskdeck: run $run completed" ]] ||
		fail "runs watch ($who the restart) ended with '$(tail -n 1 "$TUI_TMP/watch-$who.err")'"
done
pass "runs watch follows a resumed run to its end, started before or after the restart"

# A prompt waiting across a restart: the follower started after it names it.
read -r asking _ < <(start_run "$project" ask "Ask through a restart" --permission ask)
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	td permissions list --run "$asking" | grep -q prm_ && break
	tick
done
td permissions list --run "$asking" | grep -q prm_ || fail "the asking run asked nothing"
svc_kill9
svc_restart
wait_resumed "$asking"
td runs logs -f "$asking" </dev/null >"$TUI_TMP/ask.out" 2>"$TUI_TMP/ask.err" &
follower=$!
wait_file "$TUI_TMP/ask.err" "waits for prompt"
prompt=$(sed -n 's/.*waits for prompt \([a-z]*_[0-9a-z]*\):.*/\1/p' "$TUI_TMP/ask.err" | tail -n 1)
[[ -n $prompt ]] || fail "no prompt named: $(cat "$TUI_TMP/ask.err")"
td permissions deny "$prompt" >/dev/null
# The next prompt arrives live, on the new stream.
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	(($(grep -c "waits for prompt" "$TUI_TMP/ask.err") >= 2)) && break
	tick
done
(($(grep -c "waits for prompt" "$TUI_TMP/ask.err") >= 2)) || fail "the next prompt was not shown: $(cat "$TUI_TMP/ask.err")"
td runs cancel "$asking" >/dev/null
wait_exit "$follower" "runs logs -f of the asking run"
[[ $(tail -n 1 "$TUI_TMP/ask.err") == "taskdeck: run $asking cancelled" ]] ||
	fail "the follower ended with '$(tail -n 1 "$TUI_TMP/ask.err")'"
pass "a prompt that waits across a restart and the next one are shown to runs logs -f"
