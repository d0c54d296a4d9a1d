#!/usr/bin/env bash
# At 80x24 the help's descriptions do not fit beside the keys: they wrap
# under their own column, so every word of them can be read (none ends in
# a cut), and scrolling reaches the last one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run help quick "Count the files" status completed

dash_start 80x24
wait_live
wait_for "Count the files"
keys U
wait_for "Runs ↓newest"
keys '?'
wait_for "┌ Keys: Runs"
# The rerun row's description is longer than the 44 columns left for it.
keys NPage
wait_for "run again: same prompt and settings, same"
wait_for "session (the marked ones)"
screen | grep -F "run again: same prompt" | grep -qF "…" &&
	fail "the rerun row is cut: $(screen_line 'run again: same prompt')"
# The wrapped part sits under the description column, not under the keys.
[[ $(screen_line "session (the marked ones)") =~ ^..[[:space:]]{33}session ]] ||
	fail "the wrapped part is not under the description: $(screen_line 'session (the marked ones)')"
pass "a long description wraps under its column at 80x24"

# The last row (the [y/N] one) is reached by G and shown whole.
keys G
wait_for "only y confirms; anything else is No"
screen | grep -E "^.│" | grep -qF "…" && fail "a help line is still cut after G"
pass "G reaches the last row; no line is cut"

keys Escape
wait_gone "┌ Keys"
dash_quit
pass "q exits cleanly"
