#!/usr/bin/env bash
# '/' in a list filters it as you type (k9s, lazygit): only matching rows, the
# title says how many; the selection moves to a match (and the panes to its
# right follow); j/k move among matches; Esc clears.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
svc_start

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
dash_quit
pass "q exits cleanly"
