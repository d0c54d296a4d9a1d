#!/usr/bin/env bash
# Cost: with a price for the run's model in settings.json's pricing, a wide run
# row ends in its cost; a run of a model without a price shows none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
cat >"$TASKDECK_HOME/settings.json" <<'JSON'
{"defaults": {"provider": "replay"},
 "providers": {"replay": {"kind": "replay", "defaultModel": "quick"}},
 "pricing": {"replay": {"research": {"input": 3, "output": 15}}}}
JSON
chmod 600 "$TASKDECK_HOME/settings.json"
svc_start
project=$(new_project priced)
read -r run session < <(start_run "$project" research "Research with a price")
wait_run_field "$run" status completed
in=$(run_field "$run" usage.inputTokens)
out=$(run_field "$run" usage.outputTokens)
want=$(awk -v i="$in" -v o="$out" 'BEGIN { printf "$%.4f", (i * 3 + o * 15) / 1e6 }')
[[ $(run_field "$run" cost) == "$(awk -v i="$in" -v o="$out" 'BEGIN { print (i * 3 + o * 15) / 1e6 }')" ]] ||
	fail "runs show: cost $(run_field "$run" cost) for $in in, $out out"
read -r free _ < <(start_run "$project" quick "Quick without a price")
wait_run_field "$free" status completed

dash_start 200x40
wait_live
wait_for "Research with a price"
keys Tab Tab
row=$(screen | grep -F "completed Research with a price" | head -n 1)
grep -qF -- "$want" <<<"$row" || fail "no '$want' in the run row: $row"
row=$(screen | grep -F "completed Quick without a price" | head -n 1)
[[ $row != *'$'* ]] || fail "a cost in the row of a run without a price: $row"
pass "200 columns: the priced run's row ends in its cost ($want), the other has none"
dash_quit
