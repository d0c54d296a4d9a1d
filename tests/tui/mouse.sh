#!/usr/bin/env bash
# The mouse, as a terminal sends it (press, then release): a click selects the
# clicked project and session, and what the service answers is shown without
# any key being pressed afterwards (a release ncurses does not expect used to
# block the loop until the next key).  The wheel scrolls.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

alpha=$(new_project alpha)
read -r run_a _ < <(start_run "$alpha" research "Alpha report on WAL")
beta=$(new_project beta)
read -r run_b _ < <(start_run "$beta" quick "Beta says hello")
wait_run_field "$run_a" status completed
wait_run_field "$run_b" status completed

# 90 columns: X10 mouse positions stop at 94.
dash_start 90x30
wait_live
wait_for "alpha"
wait_for "beta"
wait_for_re "Alpha report on WAL|Beta says hello"
if screen | grep -qF "Alpha report on WAL"; then
	other=beta other_session="Beta says hello" shown="Alpha report on WAL"
else
	other=alpha other_session="Alpha report on WAL" shown="Beta says hello"
fi

# Click the other project: its session appears with no key pressed after it.
click 5 "$(screen_row "$other")"
wait_for "$other_session"
wait_gone "$shown"
pass "a click on a project shows its sessions, no key needed"

# Click its session: the runs load from the service, again with no key.
click 5 "$(screen_row "$other_session")"
wait_for "completed"
pass "a click on a session shows its runs"

# Click the run: the log shows its output.
click 5 "$(screen_row completed)"
if [[ $other == alpha ]]; then
	wait_for "look at the workspace first"
else
	wait_for "Hello from taskdeck. This is the quick replay answer."
fi
pass "a click on a run shows its log"

# A click on a tab of the title line switches the right pane.
col=$(screen | head -n 1 | sed 's/3 Artifacts.*//' | wc -m)
click "$((col - 1))" 0
wait_for "Artifacts:"
pass "a click on a tab shows that pane"

# Keys still work after the mouse.
keys 1
wait_for "Log:"
dash_quit
pass "q exits cleanly after mouse input"
