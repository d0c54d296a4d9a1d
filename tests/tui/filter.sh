#!/usr/bin/env bash
# '/' in every list filters it as you type (k9s, lazygit): only matching rows,
# the title says how many; the selection moves to a match (and the panes to
# its right follow); j/k move among matches; Esc clears.  The Artifacts and
# Connectors views too: Enter then downloads the match.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

for name in alpha beta gamma; do
	p=$(new_project "$name")
	read -r r _ < <(start_run "$p" quick "Session of $name")
	wait_run_field "$r" status completed
done

dash_start 120x36
wait_live
wait_for "alpha"
wait_for "gamma"
keys g
keys /
type_text "ga"
wait_for "Projects /ga (1 of 3)"
wait_for "Session of gamma"
assert_not_screen "│> alpha"
screen | grep -qF "  beta" && fail "beta is still listed under /ga"
pass "typing filters the list; the selection and its sessions follow"

# Enter keeps it: j stays on the only match.
keys Enter
keys j
sleep 0.5
assert_screen "Projects /ga (1 of 3)"
assert_screen "Session of gamma"
keys /
keys Escape
wait_gone "Projects /ga"
wait_for "beta"
wait_for "alpha"
pass "Esc clears the filter: every project again"

# Artifacts: three files, '/' keeps the matching one, Enter downloads it.
read -r r session < <(start_run "$(new_project files)" multi-file "Write three files")
wait_run_field "$r" status completed
keys :
type_text "project files"
keys Enter
wait_for "Write three files"
keys 3
wait_for "metrics.json"
wait_for "summary.md"
keys /
type_text "CSV"
wait_for "/CSV (1 of 3)"
assert_not_screen "metrics.json"
assert_not_screen "summary.md"
screen | grep -qE "> results.csv" || fail "the match is not selected"
keys Enter
sleep 0.3
keys Enter
wait_for "Download results.csv to:"
keys Escape
wait_gone "Download results.csv"
keys /
keys Escape
wait_for "metrics.json"
pass "/ filters the artifacts; the match is the one Enter downloads"

# Connectors: the built-in ones and one added; '/' keeps the added one.
td connectors add zebratool --command /nonexistent/mcp-server >/dev/null ||
	fail "connectors add failed"
keys 4
wait_for "zebratool"
all=$(screen | grep -cE "^│.*│(> |  )(enabled|disabled) " || true)
((all >= 2)) || fail "fewer than two connectors listed ($all)"
keys /
type_text "zebra"
wait_for_re "Connectors /zebra \(1 of $all\)"
n=$(screen | grep -cE "(enabled|disabled)  " || true)
((n == 1)) || fail "$n connector rows under /zebra"
screen | grep -qE "> disabled +zebratool" || fail "zebratool is not selected"
pass "/ filters the connectors ($all to 1)"
keys Enter
dash_quit
pass "q exits cleanly"
