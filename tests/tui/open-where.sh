#!/usr/bin/env bash
# Where the dashboard opens: in the current project (`taskdeck use`), as k9s
# opens in the current context; without one, where it was left (the last
# selected project, session and run, from its state file).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
export XDG_CONFIG_HOME=$TUI_TMP/config

alpha=$(new_project alpha)
read -r first _ < <(start_run "$alpha" quick "Alpha first")
wait_run_field "$first" status completed
read -r second _ < <(start_run "$alpha" quick "Alpha second")
wait_run_field "$second" status completed
new_project beta >/dev/null
new_project gamma >/dev/null

# No current project, no state: the newest project.
dash_start 120x36 XDG_CONFIG_HOME="$XDG_CONFIG_HOME"
wait_live
wait_for_re "^ taskdeck  gamma"
dash_quit

td use beta >/dev/null
dash_start 120x36 XDG_CONFIG_HOME="$XDG_CONFIG_HOME"
wait_live
wait_for_re "^ taskdeck  beta"
pass "the dashboard opens in the current project (taskdeck use)"

# Left on alpha's older session: the next start opens there.
keys :
type_text "project alpha"
keys Enter
wait_for_re "^ taskdeck  alpha"
keys S Down
wait_for_re "^ taskdeck  alpha › Alpha first"
dash_quit
td use --clear >/dev/null
dash_start 120x36 XDG_CONFIG_HOME="$XDG_CONFIG_HOME"
wait_live
wait_for_re "^ taskdeck  alpha › Alpha first"
pass "without a current project it opens where it was left"
dash_quit
