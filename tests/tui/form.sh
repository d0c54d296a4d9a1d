#!/usr/bin/env bash
# A server's form (elicitation) in the dashboard: the prompt's box shows the
# form's fields with their types, descriptions and defaults; a (allow, the
# defaults) on a form whose required field has no default is refused with
# the reason; answered with a value from the CLI (permissions allow --field),
# the box goes.  The server is tests/mcp-failserver in its form mode.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/forms
svc_start

out=$(td connectors add forms --command "$TD_BUILDDIR/tests/mcp-failserver" --arg form --enable) ||
	fail "connectors add failed: $out"
project=$(new_project forms)
read -r run _ < <(start_run "$project" form-values "call the form tool" --provider replay \
    --permission workspace-write)
prompt=
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	prompt=$(td permissions list --run "$run" | awk '$1 ~ /^prm_/ && $2 == "pending" { print $1 }')
	[[ -n $prompt ]] && break
	tick
done
[[ -n $prompt ]] || fail "no prompt for the form"

dash_start 120x40
wait_live
keys 2
wait_for "A server's form"
wait_for "forms asks: Who is asking?"
wait_for 'name (string): Your name [default: "anon"]'
wait_for "age (integer, required): Your age"
wait_for "subscribe (boolean): - [default: false]"
pass "the prompt's box shows the form's fields, types, descriptions and defaults"

keys a
wait_for "[y/N]"
keys y
wait_for "the form needs a value for age"
[[ $(td permissions show "$prompt" | sed -n 's/^status: //p') == pending ]] ||
	fail "a refused allow answered the prompt"
pass "a (the defaults) is refused with the reason when a required field has none"

td permissions allow "$prompt" --field age=7 >/dev/null || fail "allow --field age=7 failed"
wait_gone "A server's form"
pass "answered from the CLI with a value, the box goes"
dash_quit
pass "q exits cleanly"
