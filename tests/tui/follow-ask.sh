#!/usr/bin/env bash
# `run --follow` at a permission prompt: it names the prompt and the commands
# that answer it; on a terminal it asks [y/N] inline (y allows, n denies) and
# follows on to the end.  Without a terminal the hint alone, and the
# printed command answers the prompt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project asking)

# On a terminal (a tmux pane), the answers typed inline.
DASH_SIZE=160x40
cmd="cd $(printf %q "$TUI_TMP/cwd") && TASKDECK_HOME=$(printf %q "$TASKDECK_HOME")"
cmd+=" TASKDECK_REPLAY_DIR=$(printf %q "$TASKDECK_REPLAY_DIR") $(printf %q "$TD_BUILDDIR/taskdeck")"
cmd+=" run --project $project --model ask --permission ask --follow 'Write with care'"
cmd+="; echo \"exit \$?\""
tui_tmux new-session -d -s dash -x 160 -y 40 "$cmd" \; set-option -t dash remain-on-exit on >/dev/null
wait_for_re "Allow write_file \(prompt [a-z]+_[0-9a-f]+\)\? \[y/N\]"
assert_screen "taskdeck permissions allow "
type_text y
keys Enter
wait_for "allowed write_file"
wait_for_re "Allow run_command \(prompt [a-z]+_[0-9a-f]+\)\? \[y/N\]"
type_text n
keys Enter
wait_for "denied run_command"
wait_for_re "Allow write_file \(prompt [a-z]+_[0-9a-f]+\)\? \[y/N\] *$"
keys Enter
wait_for "denied write_file"
wait_for "exit "
run=$(tui_tmux capture-pane -p -S - -t dash | sed -n 's/^taskdeck: run \(run_[a-z0-9]*\) in session.*/\1/p' | head -n 1)
[[ -n $run ]] || fail "no run id on the screen"
[[ -f $(run_field "$run" cwd)/allowed.md ]] || fail "y did not allow the first write"
[[ ! -f $(run_field "$run" cwd)/ran.txt ]] || fail "n did not deny the command"
[[ ! -f $(run_field "$run" cwd)/second.md ]] || fail "Enter did not deny the second write"
[[ $(run_field "$run" status) != running ]] || fail "the run is still running after --follow ended"
pass "on a terminal: [y/N] inline (y allows, n and Enter deny), followed to the end"
tui_tmux kill-session -t dash
DASH_SIZE=

# Without a terminal: the hint names the prompt; its command answers it.
td run --project "$project" --model ask --permission ask --follow "Write, answered elsewhere" \
	</dev/null >"$TUI_TMP/out" 2>"$TUI_TMP/err" &
follower=$!
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q "waits for prompt" "$TUI_TMP/err" && break; tick; done
hint=$(grep "waits for prompt" "$TUI_TMP/err" | head -n 1) || fail "no hint on stderr: $(cat "$TUI_TMP/err")"
allow=$(sed -n 's/.*`\(taskdeck permissions allow [^`]*\)`.*/\1/p' <<<"$hint")
[[ -n $allow ]] || fail "the hint has no allow command: $hint"
grep -q "\[y/N\]" "$TUI_TMP/err" && fail "asked [y/N] without a terminal"
td ${allow#taskdeck } >/dev/null || fail "'$allow' failed"
kill -0 "$follower" 2>/dev/null || fail "run --follow ended at the prompt"
pass "without a terminal: '$allow' from the hint answers the prompt"
run=$(sed -n 's/^taskdeck: run \(run_[a-z0-9]*\) in session.*/\1/p' "$TUI_TMP/err")
td runs cancel "$run" >/dev/null
rc=0
wait "$follower" || rc=$?
((rc != 0)) || fail "run --follow of a cancelled run exited 0"
