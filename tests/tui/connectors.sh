#!/usr/bin/env bash
# The Connectors view (4): the service's connectors with their state; Space
# enables or disables the selected one (the service agrees), t tests it and
# shows the result on its row.  A connector whose command does not exist
# fails its test with a message, without hanging the dashboard.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

out=$(td connectors add brokentool --command /nonexistent/mcp-server) ||
	fail "connectors add failed"
con=$(sed -n 's/^id: //p' <<<"$out")
[[ -n $con ]] || fail "connectors add printed no id: $out"
state() { td connectors show "$con" | sed -n 's/^enabled: //p'; }
[[ $(state) == no ]] || fail "a new connector is enabled: $(state)"

td connectors add withpaths --transport \
	'{"type":"stdio","command":"/nonexistent/x","paths":[{"path":"/usr/share"}]}' >/dev/null ||
	fail "connectors add with paths failed"

dash_start 120x36
wait_live
keys 4
wait_for "Connectors ("
wait_for "brokentool"
screen_line brokentool | grep -qF "disabled" || fail "brokentool is not shown disabled"
# Select it (the list is short: go down until its row is selected).
for _ in 1 2 3 4 5 6; do
	screen | grep -qF "> disabled  brokentool" && break
	screen | grep -qE "^│> .*brokentool" && break
	keys j
	sleep 0.2
done
screen | grep -E "> .*brokentool" >/dev/null || fail "could not select brokentool"
pass "4 lists the connectors with their state"
wait_for "withpaths"
screen_line withpaths | grep -qF "custom stdio +1 path" ||
	fail "the extra paths of withpaths are not shown: $(screen_line withpaths)"
pass "4 shows how many extra paths a connector has"

keys Space
wait_for "brokentool enabled"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do [[ $(state) == yes ]] && break; tick; done
[[ $(state) == yes ]] || fail "Space did not enable the connector (service says $(state))"
screen_line "> " | grep -qF "enabled" || fail "the row does not say enabled"
keys Space
wait_for "brokentool disabled"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do [[ $(state) == no ]] && break; tick; done
[[ $(state) == no ]] || fail "Space did not disable the connector"
pass "Space enables and disables; the service agrees"

keys t
# "testing brokentool" shows until the answer, which may come at once.
wait_for_re "brokentool.*failed: " 600
pass "t tests the connector and shows why it failed on its row"

keys '?'
wait_for "enable / disable the selected connector"
keys Escape
dash_quit
pass "q exits cleanly"
