#!/usr/bin/env bash
# The message history (H, :messages): every message of the message line,
# errors and results, with its time, newest last, long ones whole (wrapped),
# the same one again counted, at most 200 kept.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run history quick "Say hello" status completed

dash_start 100x30
wait_live
wait_for "Say hello"

keys @
wait_for "no run needs you"
keys @ @
keys r
wait_for "re-reading everything"
long="a-project-name-long-enough-to-be-cut-on-the-message-line-of-a-narrow-terminal-$(printf 'x%.0s' {1..40})-END"
keys :
type_text "project $long"
keys Enter
wait_for "no project named"
assert_not_screen "x-END'"
keys H
wait_for "Messages (newest last"
wait_for_re "[0-9]{2}:[0-9]{2}:[0-9]{2}   no run needs you \(x3\)"
wait_for_re "[0-9]{2}:[0-9]{2}:[0-9]{2}   re-reading everything"
wait_for_re "[0-9]{2}:[0-9]{2}:[0-9]{2} ! no project named"
wait_for "'a-project-name-long"
wait_for "x-END'"
wait_for "3 messages"
# Newest last: the error below the others.
(($(screen_row "re-reading everything") > $(screen_row "no run needs you"))) ||
	fail "the messages are not oldest first"
(($(screen_row "no project named") > $(screen_row "re-reading everything"))) ||
	fail "the newest message is not last"
keys Escape
wait_gone "Messages (newest last"
pass "H shows every message with its time, the long one whole"

# Bounded: 220 more (two alternating, so none is counted as a repeat).
for ((i = 0; i < 110; i++)); do keys @ '!'; done
wait_for "no permission prompt is pending"
keys :
type_text messages
keys Enter
wait_for "200 messages"
assert_not_screen "re-reading everything"
pass "the history keeps the newest 200"
keys q
wait_gone "Messages (newest last"
dash_quit
pass "q exits cleanly"
