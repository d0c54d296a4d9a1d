#!/usr/bin/env bash
# The run detail (i on a run): the whole prompt (wrapped), the settings,
# tokens in the run rows' format, cost, a duration that moves while the run
# runs, status and the whole error, the artifacts; read again live; Esc and q
# close it.  `taskdeck runs show` says the same keys with the same values.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
project=$(new_project detail)
td defaults set "$project" provider=replay >/dev/null
long="Stream a long status report about every part of the system, one section at a time: the service, the agent runtime, the client core, the command line, the dashboard and the SDK, with what changed and why, and end with the word ZEBRAFINCH"
read -r live _ < <(start_run "$project" demo-stream "$long" --permission read-only --plan-first)
wait_run_field "$live" status running
read -r bad _ < <(start_run "$project" fail "A task that fails")
wait_run_field "$bad" status failed
read -r good _ < <(start_run "$project" research "Research with a report")
wait_run_field "$good" status completed

# The value of KEY in the detail on the screen (what follows the key column).
detail_value() {
	screen | sed -n "s/^.*[│|] $1  *//p" | sed 's/ *[│|].*$//' | head -n 1
}

dash_start 200x40
wait_live
wait_for "Stream a long status"
# Sessions are newest first: the streaming run's is the last.
keys Tab G Tab
wait_for_re "Stream a long status.* › run_"
keys i
wait_for " config.provider "
for key in status prompt config.provider config.model config.framework permissionProfile \
	turnIntent cwd tokens cost duration error.code error.message artifacts review.verdict \
	review.findings attention.kind; do
	[[ -n $(detail_value "$key") ]] || fail "the detail has no '$key' line"
done
[[ $(detail_value config.model) == demo-stream ]] || fail "config.model: $(detail_value config.model)"
# Where it is: its project and session by their names.
[[ $(detail_value project) == detail ]] || fail "project: $(detail_value project)"
[[ $(detail_value session) == "Stream a long status"* ]] || fail "session: $(detail_value session)"
[[ $(detail_value config.provider) == replay ]] || fail "config.provider: $(detail_value config.provider)"
[[ $(detail_value permissionProfile) == read-only ]] || fail "profile: $(detail_value permissionProfile)"
[[ $(detail_value turnIntent) == plan-first ]] || fail "turnIntent: $(detail_value turnIntent)"
[[ $(detail_value status) == running ]] || fail "status: $(detail_value status)"
# The prompt is longer than the box: wrapped, never cut.
wait_for "ZEBRAFINCH"
assert_not_screen "ZEBRAFINCH…"
[[ $(detail_value prompt) != *ZEBRAFINCH* ]] ||
	fail "the prompt is not wrapped onto a second row"
pass "i: the whole prompt (wrapped) and the settings of the run"

# The duration moves while the run runs (redrawn each second).
d1=$(detail_value duration)
sleep 2.2
d2=$(detail_value duration)
[[ -n $d1 && $d1 != "$d2" ]] || fail "the duration did not move: '$d1' then '$d2'"
pass "the duration moves while the run runs ($d1, then $d2)"

# Live: the run is cancelled from the CLI while the detail is open.
td runs cancel "$live" >/dev/null
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(detail_value status) == cancelled ]] && break
	tick
done
[[ $(detail_value status) == cancelled ]] || fail "the detail still says $(detail_value status)"
d1=$(detail_value duration)
sleep 1.5
[[ $(detail_value duration) == "$d1" ]] || fail "an ended run's duration moves"
pass "read again live: the cancel shows, the duration stops at $d1"
keys Escape
wait_gone " config.provider "
pass "Esc closes the detail"

# The failed run: its error whole.
keys BTab k Tab
wait_for_re "A task that fails › run_"
keys i
wait_for " error.code "
[[ $(detail_value error.code) == replay_failed ]] || fail "error.code: $(detail_value error.code)"
[[ $(detail_value error.message) == "The recorded model stream broke off in the middle of the answer." ]] ||
	fail "error.message: $(detail_value error.message)"
keys q
wait_gone " error.code "
dash_alive || fail "q in the detail quit the dashboard"
pass "a failed run's detail says its whole error; q closes it"

# The completed run: the keys and values of `taskdeck runs show`.
keys BTab k Tab
wait_for_re "Research with a report › run_"
keys i
wait_for " artifacts "
wait_for "report.md ("
shown=$(td runs show "$good")
for key in status prompt config.provider config.model permissionProfile cwd tokens cost duration \
	artifacts; do
	want=$(sed -n "s/^$key: //p" <<<"$shown")
	[[ $(detail_value "$key") == "$want" ]] ||
		fail "$key: the detail says '$(detail_value "$key")', runs show '$want'"
done
tokens=$(detail_value tokens)
[[ $tokens == *" tok (in "*", out "*", cached "* ]] || fail "tokens: $tokens"
row_tokens=${tokens%% (*}
keys Escape
wait_gone " artifacts "
row=$(screen | grep -F "completed Research with a report" | head -n 1)
grep -qF -- " $row_tokens " <<<"$row" || fail "the run row does not say '$row_tokens': $row"
pass "the detail and taskdeck runs show agree ($tokens)"
dash_quit

# The action is detail: key.detail gives it another key, which the hints and the help show.
mkdir -p "$TUI_TMP/xdg/taskdeck"
printf 'key.detail = D\nkey.rerun = Ctrl-R\n' >"$TUI_TMP/xdg/taskdeck/dashboard.conf"
dash_start 200x40 XDG_CONFIG_HOME="$TUI_TMP/xdg"
wait_live
wait_for "Research with a report"
keys Tab Tab
wait_for_re "Research with a report › run_"
wait_for "D detail"
wait_for "Ctrl-R rerun"
keys i
sleep 0.5
assert_not_screen " config.provider "
keys D
wait_for " config.provider "
keys Escape
keys '?'
wait_for "Keys:"
screen | grep -qE "│ ?D +Runs, Log +the run's detail" || fail "the help does not show D for the detail"
keys Escape
wait_gone "Keys:"
pass "key.detail = D: D opens the detail, i does not; hints and help say D"
dash_quit
