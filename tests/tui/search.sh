#!/usr/bin/env bash
# '/' in the Log searches as less and vim do: Enter jumps to the first match
# (every match highlighted), n / N go to the next / previous one, wrapping,
# and the status bar and the title say "match 2/5".  '&' filters (only the
# matching lines).  n / N elsewhere still start a run; :new anywhere.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run searching research "Research to search" status completed

dash_start 120x36
wait_live
wait_for "Research to search"
keys Tab Tab Enter
wait_for "run finished: completed"

keys /
type_text "report"
keys Enter
wait_for_re "match 1/[0-9]+"
total=$(screen | grep -oE "match 1/[0-9]+" | head -n 1 | cut -d/ -f2)
((total >= 3)) || fail "only $total lines hold 'report'"
wait_for_re "/report 1/$total"
assert_screen "match 1/$total  n next  N previous"
pass "/report Enter: match 1/$total in the status bar and the title"

keys n
wait_for "match 2/$total"
keys n
wait_for "match 3/$total"
keys N
wait_for "match 2/$total"
keys N N
wait_for "match $total/$total: report (search wrapped)"
pass "n and N move between the matches and wrap"

# The current match is drawn apart (reverse, bold, underlined).
screen_escapes | grep -q $'\e\\[[0-9;]*4[;m]' || fail "no underlined current match"
pass "the current match is underlined"

# '&' is the filter: only the lines holding it.
keys '&'
type_text "write_file"
keys Enter
wait_for_re "&write_file \([0-9]+ lines?\)"
assert_not_screen "run finished: completed"
keys '&'
keys Escape
wait_for "run finished: completed"
pass "& filters the log; Esc clears it"

keys /
keys Escape
wait_gone "match "
assert_not_screen "n next"
keys n
wait_for "New run in searching"
keys Escape
wait_gone "New run in"
pass "without a search n in the Log is a new run, as in every pane (no n next hint)"

# n still starts a run from the lists, and :new from anywhere.
keys BTab
keys n
wait_for "New run in searching"
keys Escape
wait_gone "New run in"
keys 1
keys :
type_text "new"
keys Enter
wait_for "New run in searching"
keys Escape
pass "n in Runs and :new in the Log open the prompt editor"
dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
