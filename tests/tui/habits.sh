#!/usr/bin/env bash
# Small promises at small sizes: the help scrolls and lists the modal and
# editor keys; "? help" stays at 60x16; cut log lines end in "…" at 80
# columns; a key of another pane says where it works; the plan hints only
# while a plan waits; a start that fails keeps the typed prompt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run habits plan "Plan the report" attention.kind plan-approval --plan-first

dash_start 80x24
wait_live
wait_for "Plan the report"

# The help: scrollable; the permission and editor keys are in it.
keys '?'
wait_for "Keys:"
wait_for_re "1-[0-9]+ of [0-9]+"
assert_not_screen "allow EVERY tool"
keys G
wait_for "Ctrl-J"
wait_for "Ctrl-T"
# Descriptions wrap at 80 columns: the permission keys are a page above.
keys PPage
wait_for "allow EVERY tool for the rest of the run"
keys g
wait_gone "Ctrl-J"
keys Escape
wait_gone "Keys:"
pass "help at 80x24 scrolls to the permission and editor keys"

# A key of another pane says where it works.
keys f
wait_for "works in the Log (1)"
pass "f in Projects says it works in the Log"

# A plan that waits: its hints; none once it is decided.
keys 2
wait_for "a approve"
td plan approve "$session" >/dev/null
wait_run_field "$run" status completed
wait_gone "a approve"
wait_for "1 log  3 artifacts"
pass "the plan's hints only while the plan waits"

# The log at 80 columns: cut lines end in an ellipsis.
keys 1
wait_for "report.md"
screen | grep -q '…│' || fail "no cut log line ends in …"
pass "log lines cut at 80 columns end in …"

# The log's filter ('&', as in less) says how many lines match.
keys '&'
type_text "report"
keys Enter
wait_for_re "&report \([0-9]+ lines?\)"
keys '&'
keys Escape
wait_gone "&report"
pass "the log filter counts its matching lines"

# A start that fails (the session is busy) keeps the typed prompt.
read -r run2 _ < <(start_run "$project" - "Busy again" --session "$session" --plan-first)
wait_run_field "$run2" attention.kind plan-approval
keys BTab BTab
keys N
wait_for "Continue session"
type_text "My long prompt to keep"
keys Enter y
wait_for "start failed"
wait_for "reopens your prompt"
keys N
wait_for "Continue session"
wait_for "My long prompt to keep"
pass "a failed start keeps the prompt; N offers it again"

# Esc on a typed prompt asks first; only y drops it.
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys n
wait_gone "Drop the typed prompt?"
assert_screen "Continue session"
assert_screen "My long prompt to keep"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
wait_gone "Continue session"
pass "Esc on a typed prompt asks [y/N]; n keeps it, y drops it"
dash_quit

# At 60x16 the hints keep at least "? help".
dash_start 60x16
wait_live
screen | tail -n 1 | grep -qF "? help" || fail "no '? help' in the status bar at 60x16"
pass "? help stays at 60x16"
dash_quit
pass "q exits cleanly"
