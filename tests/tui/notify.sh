#!/usr/bin/env bash
# notify.command (settings.json): the service runs it with the run id, the
# kind and the project's name when a run needs the user and when it ends;
# its environment holds no secret of the service's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
# The defaults written by a first start, then notify added to them.
svc_start
svc_stop_quietly
settings=$(find "$TASKDECK_HOME" -name settings.json | head -n 1)
[[ -f $settings ]] || fail "no settings.json after a start"
out=$TUI_TMP/notified
script=$TUI_TMP/notify.sh
printf '#!/bin/sh\nprintf "%%s|%%s|%%s\\n" "$1" "$2" "$3" >>%q\nenv >>%q.env\n' "$out" "$out" >"$script"
chmod +x "$script"
sed -i "0,/{/s|{|{\"notify\": {\"command\": [\"$script\"]},|" "$settings"
export OPENAI_API_KEY=sk-must-not-leak-1234
svc_start
unset OPENAI_API_KEY

project=$(new_project "Notified Project")
read -r run session < <(start_run "$project" plan "Plan, notify" --plan-first)
wait_run_field "$run" attention.kind plan-approval
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q "plan-approval" "$out" 2>/dev/null && break; tick; done
grep -qx "$run|plan-approval|Notified Project" "$out" || fail "no plan-approval notification: $(cat "$out" 2>/dev/null)"
td plan approve "$session" >/dev/null
wait_run_field "$run" status completed
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q "|completed|" "$out" && break; tick; done
grep -qx "$run|completed|Notified Project" "$out" || fail "no completed notification: $(cat "$out")"
pass "notify.command gets RUN KIND PROJECT for attention and the end"
! grep -q "sk-must-not-leak" "$out.env" || fail "the service's secret reached notify.command's environment"
! grep -q "TASKDECK_HOME" "$out.env" || fail "TASKDECK_HOME reached notify.command's environment"
pass "its environment holds no secret"
