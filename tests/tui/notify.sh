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
# The command runs in a read-only sandbox: what it prints lands in the
# service's log; it cannot write outside its private /tmp nor read the token.
log=$TASKDECK_HOME/taskdeckd.log
# Not under /tmp, which the sandbox replaces with its own: where a user keeps scripts.
bin=$(mktemp -d "$TD_BUILDDIR/tests/tui/notify-bin.XXXXXX")
trap 'status=$?; rm -rf "$bin"; (exit $status); tui_cleanup' EXIT
script=$bin/notify.sh
escape=$bin/escaped
cat >"$script" <<EOF
#!/bin/sh
printf 'NOTIFIED %s|%s|%s\n' "\$1" "\$2" "\$3"
env | sed 's/^/ENV /'
if echo x >"$escape" 2>/dev/null; then echo "WROTE OUTSIDE"; fi
if cat "$TASKDECK_HOME/token" >/dev/null 2>&1; then echo "READ THE TOKEN"; fi
EOF
chmod +x "$script"
sed -i "0,/{/s|{|{\"notify\": {\"command\": [\"$script\"]},|" "$settings"
export OPENAI_API_KEY=sk-must-not-leak-1234
svc_start
unset OPENAI_API_KEY

project=$(new_project "Notified Project")
read -r run session < <(start_run "$project" plan "Plan, notify" --plan-first)
wait_run_field "$run" attention.kind plan-approval
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q "NOTIFIED.*plan-approval" "$log" 2>/dev/null && break; tick; done
grep -q "NOTIFIED $run|plan-approval|Notified Project\$" "$log" || fail "no plan-approval notification: $(grep notify "$log")"
td plan approve "$session" >/dev/null
wait_run_field "$run" status completed
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do grep -q "NOTIFIED.*|completed|" "$log" && break; tick; done
grep -q "NOTIFIED $run|completed|Notified Project\$" "$log" || fail "no completed notification: $(grep notify "$log")"
pass "notify.command gets RUN KIND PROJECT for attention and the end"
grep -q "ENV PATH=" "$log" || fail "notify.command's environment was not logged"
! grep -q "sk-must-not-leak" "$log" || fail "the service's secret reached notify.command's environment"
! grep -q "ENV TASKDECK_HOME" "$log" || fail "TASKDECK_HOME reached notify.command's environment"
[[ ! -e $escape ]] && ! grep -q "WROTE OUTSIDE" "$log" || fail "notify.command wrote outside its sandbox"
! grep -q "READ THE TOKEN" "$log" || fail "notify.command read the service's token"
pass "it runs in a read-only sandbox: no write outside, no token"
pass "its environment holds no secret"
