#!/usr/bin/env bash
# Token counts are one number everywhere (input + output, formatted by one
# function): a run's row, its session's row and its Log's title agree, also
# for a run of another session that ends while the dashboard shows the first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run tokens research "First session" status completed
first=$run

# What every row shows for N tokens (draw_tokens).
fmt() {
	local n=$1
	if ((n <= 0)); then echo "-"
	elif ((n < 1000)); then echo "$n tok"
	elif ((n < 10000)); then echo "$((n / 1000)).$((n % 1000 / 100))k tok"
	else echo "$((n / 1000))k tok"; fi
}
tokens_of() { echo $(($(run_field "$1" usage.inputTokens) + $(run_field "$1" usage.outputTokens))); }
sessions() { screen | awk '/Sessions/ { on = 1; next } /├ Runs/ { on = 0 } on'; }

want1=$(fmt "$(tokens_of "$first")")
[[ $want1 != - ]] || fail "the research replay reported no tokens"

dash_start 200x40
wait_live
wait_for "First session"
keys Tab
wait_for "│> ✔ completed First session"

# Another session's run ends while the first session stays selected.
read -r second _ < <(start_run "$project" research "Second session")
wait_run_field "$second" status completed
want2=$(fmt "$(tokens_of "$second")")
wait_for "Second session"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	sessions | grep -F "Second session" | grep -qF " $want2 " && break
	tick
done
row=$(sessions | grep -F "Second session")
grep -qF " $want2 " <<<"$row" || fail "the other session's row shows no '$want2': $row"
pass "a run of another session that ended counts in its session's row ($want2)"

row=$(sessions | grep -F "First session")
grep -qF " $want1 " <<<"$row" || fail "the session row does not say '$want1': $row"
keys Tab
row=$(screen | grep -F "completed First session" | tail -n 1)
grep -qF " $want1 " <<<"$row" || fail "the run row does not say '$want1': $row"
keys Enter
wait_for "Log: "
screen | grep -F "Log: " | grep -qF " $want1" ||
	fail "the Log's title does not say '$want1': $(screen | grep -F 'Log: ')"
pass "the run's row, its session's row and its Log's title say $want1"

dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
