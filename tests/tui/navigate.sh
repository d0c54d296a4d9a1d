#!/usr/bin/env bash
# Projects -> sessions -> runs with the keys; the log shows the selected run's output.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

alpha=$(new_project alpha)
read -r run_a _ < <(start_run "$alpha" research "Alpha report on WAL")
beta=$(new_project beta)
read -r run_b ses_b < <(start_run "$beta" quick "Beta says hello")
wait_run_field "$run_a" status completed
wait_run_field "$run_b" status completed
td sessions config set "$ses_b" model=fail >/dev/null
read -r run_b2 _ < <(start_run "$beta" - "Beta second try" --session "$ses_b")
wait_run_field "$run_b2" status failed

dash_start 120x36
wait_live
wait_for "alpha"
wait_for "beta"

# The first project, then the other one: each shows its own session.
keys g
wait_for_re "Alpha report on WAL|Beta says hello"
if screen | grep -qF "Alpha report on WAL"; then first=alpha; else first=beta; fi
keys j
if [[ $first == alpha ]]; then
	wait_for "Beta says hello"
	wait_gone "Alpha report on WAL"
	keys k
fi
wait_for "Alpha report on WAL"
wait_gone "Beta says hello"
pass "moving in Projects changes the sessions shown"

# Enter: Sessions, Enter: Runs, Enter: the log of the selected run.
keys Enter
keys Enter
wait_for "completed"
keys Enter
wait_for "look at the workspace first"
wait_for "report.md"
pass "alpha's run and its output in the log"

# Back to the projects (Left three times, as Shift-Tab), to beta with the
# arrows, into its runs.
keys Left Left Left
if [[ $first == alpha ]]; then keys Down; else keys Up; fi
wait_for "Beta says hello"
keys Enter Enter
# beta's session has two runs, newest first: the failed one, then the completed one.
wait_for "Beta second try"
wait_for "failed"
keys g
wait_for "Let me start on that."
keys j
wait_for "Hello from taskdeck. This is the quick replay answer."
keys k
wait_gone "Hello from taskdeck. This is the quick replay answer."
pass "beta's runs: the log follows the selected run"

# Right goes on to the next pane (as Tab): from Runs to the Log.
keys Right
wait_for "f follow"
pass "Left and Right move between the panes, Up and Down in a list"

dash_quit
pass "q exits cleanly"
