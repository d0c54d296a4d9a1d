#!/usr/bin/env bash
# Wide terminals: the runs as columns (status, prompt, age, duration, tokens),
# the sessions too (last run's status, title, age, duration and tokens of
# its runs); at 120 columns the rows stay status and prompt, and the title.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run wide research "Research in columns" status completed
tokens=$(( $(run_field "$run" usage.inputTokens) + $(run_field "$run" usage.outputTokens) ))
((tokens > 0)) || fail "the research replay reported no tokens"

dash_start 200x40
wait_live
wait_for "Research in columns"
keys Tab Tab
row=$(screen | grep -F "completed Research in columns" | head -n 1)
[[ $row =~ [0-9]+[smhd]\ ago ]] || fail "no age in the run row: $row"
[[ $row =~ [0-9.]+s\  ]] || fail "no duration in the run row: $row"
if ((tokens < 1000)); then want="$tokens tok"; else want="k tok"; fi
grep -qF "$want" <<<"$row" || fail "no '$want' in the run row: $row"
pass "200 columns: the run row has its age, duration and tokens ($tokens)"
row=$(screen | awk '/Sessions/ { on = 1; next } /├ Runs/ { on = 0 } on' |
	grep -F "Research in columns" | head -n 1)
grep -qF "completed Research in columns" <<<"$row" || fail "no status in the session row: $row"
[[ $row =~ [0-9]+[smhd]\ ago ]] || fail "no age in the session row: $row"
[[ $row =~ [0-9.]+s\  ]] || fail "no duration in the session row: $row"
grep -qF "$want" <<<"$row" || fail "no '$want' in the session row: $row"
pass "200 columns: the session row has its status, age, duration and tokens"
dash_quit

dash_start 120x36
wait_live
wait_for "Research in columns"
# (the row ends in the lines the run changed, +N -M, which cuts the prompt)
row=$(screen | grep -F "completed Research in col" | head -n 1)
[[ ! $row =~ " ago" ]] || fail "ages at 120 columns: $row"
screen | grep -q "ago" && fail "ages at 120 columns"
pass "120 columns: status and prompt only, session titles only"
dash_quit
