#!/usr/bin/env bash
# The configuration file (XDG): bell = on rings the terminal's bell when a run
# starts needing the user, title = on puts "taskdeck: N need you" in the
# window title.  Off (the default): neither.  A bad line is reported.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project ringing)
read -r run0 _ < <(start_run "$project" quick "Warm up")
wait_run_field "$run0" status completed

mkdir -p "$TUI_TMP/xdg/taskdeck"
printf '# dashboard settings\nbell = on\ntitle = on\n' >"$TUI_TMP/xdg/taskdeck/dashboard.conf"
dash_start 120x36 XDG_CONFIG_HOME="$TUI_TMP/xdg"
# Every byte the dashboard writes, to find the bell in it.
tui_tmux pipe-pane -t dash -o "cat >> $(printf %q "$TUI_TMP/out")"
wait_live
wait_for "Warm up"
sleep 1
if grep -q $'\a' "$TUI_TMP/out" 2>/dev/null; then fail "a bell with nothing needing the user"; fi

read -r run _ < <(start_run "$project" plan "Plan and ring" --plan-first)
wait_run_field "$run" attention.kind plan-approval
wait_for "1 need you"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q $'\a' "$TUI_TMP/out" && break; tick; done
grep -q $'\a' "$TUI_TMP/out" || fail "no bell when a run started needing the user"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(tui_tmux display-message -p -t dash '#{pane_title}') == "taskdeck: 1 need you" ]] && break
	tick
done
[[ $(tui_tmux display-message -p -t dash '#{pane_title}') == "taskdeck: 1 need you" ]] ||
	fail "the title is '$(tui_tmux display-message -p -t dash '#{pane_title}')'"
pass "bell = on, title = on: a bell and 'taskdeck: 1 need you' when a run needs the user"
dash_quit

# Off by default; a bad line is reported on stderr.
printf 'bell = maybe\nfrobnicate = 1\n' >"$TUI_TMP/xdg/taskdeck/dashboard.conf"
: >"$TUI_TMP/out"
dash_start 120x36 XDG_CONFIG_HOME="$TUI_TMP/xdg"
tui_tmux pipe-pane -t dash -o "cat >> $(printf %q "$TUI_TMP/out")"
wait_live
wait_for "1 need you"
read -r run2 _ < <(start_run "$project" plan "Plan again" --plan-first)
wait_run_field "$run2" attention.kind plan-approval
wait_for "2 need you"
sleep 1
if grep -q $'\a' "$TUI_TMP/out"; then fail "a bell although bell is not on"; fi
dash_quit
grep -q "unknown setting 'frobnicate'" "$TUI_TMP/dash.err" || fail "the unknown setting was not reported"
grep -q "bell: on or off" "$TUI_TMP/dash.err" || fail "the bad value was not reported"
pass "off unless set; bad lines are reported"
