#!/usr/bin/env bash
# `run --follow` asks [y/N] on a terminal; a prompt answered elsewhere (the
# dashboard, `taskdeck permissions`) takes the question away at once: the
# follow goes on with the run's next events without a key, and the next
# line typed answers the next prompt, never the one gone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project elsewhere)
DASH_SIZE=160x40
cmd="cd $(printf %q "$TUI_TMP/cwd") && TASKDECK_HOME=$(printf %q "$TASKDECK_HOME")"
cmd+=" TASKDECK_REPLAY_DIR=$(printf %q "$TASKDECK_REPLAY_DIR") $(printf %q "$TD_BUILDDIR/taskdeck")"
cmd+=" run --project $project --model ask --permission ask --follow 'Answered elsewhere'"
cmd+="; echo \"exit \$?\""
tui_tmux new-session -d -s dash -x 160 -y 40 "$cmd" \; set-option -t dash remain-on-exit on >/dev/null
wait_for_re "Allow write_file \(prompt [a-z]+_[0-9a-f]+\)\? \[y/N\]"
prompt=$(screen | sed -n 's/.*Allow write_file (prompt \([a-z]*_[0-9a-f]*\))? \[y\/N\].*/\1/p' | head -n 1)
[[ -n $prompt ]] || fail "no prompt id in the question"
td permissions allow "$prompt" >/dev/null || fail "taskdeck permissions allow $prompt failed"
wait_for "prompt $prompt was answered elsewhere (allowed)"
# Without a key, the run goes on to its next prompt, asked in turn.
wait_for_re "Allow run_command \(prompt [a-z]+_[0-9a-f]+\)\? \[y/N\]"
type_text n
keys Enter
wait_for "denied run_command"
assert_not_screen "permission_not_pending"
wait_for_re "Allow write_file \(prompt [a-z]+_[0-9a-f]+\)\? \[y/N\] *$"
keys Enter
wait_for "denied write_file"
wait_for "exit "
run=$(tui_tmux capture-pane -p -S - -t dash | sed -n 's/^taskdeck: run \(run_[a-z0-9]*\) in session.*/\1/p' | head -n 1)
[[ -f $(run_field "$run" cwd)/allowed.md ]] || fail "the prompt allowed elsewhere did not write"
[[ ! -f $(run_field "$run" cwd)/ran.txt ]] || fail "n did not deny the command"
pass "a prompt answered elsewhere leaves the terminal; the follow goes on without a key"
