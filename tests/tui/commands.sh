#!/usr/bin/env bash
# k9s/lazygit habits: ':' commands (:project NAME, :run ID, :quit), y copies the
# selected id to the terminal's clipboard (OSC 52, read back from tmux's
# buffer), Y a taskdeck command, h/l move between panes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

alpha=$(new_project alpha)
read -r run_a _ < <(start_run "$alpha" quick "Alpha says hello")
beta=$(new_project beta)
read -r run_b _ < <(start_run "$beta" quick "Beta says hello")
wait_run_field "$run_a" status completed
wait_run_field "$run_b" status completed

dash_start 120x36
# OSC 52 from the application lands in a tmux buffer.
tui_tmux set-option -g set-clipboard on
wait_live
wait_for "Beta says hello"

keys :
type_text "project alpha"
keys Enter
wait_for "Alpha says hello"
wait_gone "Beta says hello"
pass ":project alpha selects it"

keys :
type_text "run $run_b"
keys Enter
wait_for "Beta says hello"
wait_for "completed"
pass ":run ID goes to the run, in its project and session"

keys :
type_text "nonsense"
keys Enter
wait_for "unknown command ':nonsense'"

# h / l: from Runs (focused after :run) l goes to the log, h back.
wait_for "Enter log  i detail"
keys l
wait_for "/ search  & filter  f follow"
keys h
wait_for "Enter log  i detail"
pass "h and l move between panes"

# y: the run's id on the clipboard; Y: a command about it.
tui_tmux delete-buffer 2>/dev/null || true
keys y
wait_for "copied: $run_b"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(tui_tmux show-buffer 2>/dev/null) == "$run_b" ]] && break
	tick
done
[[ $(tui_tmux show-buffer 2>/dev/null) == "$run_b" ]] ||
	fail "the clipboard holds '$(tui_tmux show-buffer 2>/dev/null)', not $run_b"
keys Y
wait_for "copied: taskdeck runs show $run_b"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(tui_tmux show-buffer 2>/dev/null) == "taskdeck runs show $run_b" ]] && break
	tick
done
[[ $(tui_tmux show-buffer 2>/dev/null) == "taskdeck runs show $run_b" ]] ||
	fail "Y put '$(tui_tmux show-buffer 2>/dev/null)' on the clipboard"
out=$(td runs show "$run_b") || fail "the copied command does not run"
grep -q "completed" <<<"$out" || fail "the copied command does not show the run"
pass "y copies the id, Y a command that runs (OSC 52)"

keys :
type_text "quit"
keys Enter
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ -s $TUI_TMP/dash.rc ]] && break
	tick
done
[[ $(cat "$TUI_TMP/dash.rc" 2>/dev/null) == 0 ]] || fail ":quit did not exit with 0"
assert_no_sanitizer_report
pass ":quit exits cleanly"
