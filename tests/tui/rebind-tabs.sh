#!/usr/bin/env bash
# Keys given in dashboard.conf are the keys every text names: the title
# line's tabs (a click on a tab still shows its pane), the messages of '*',
# of the revert key from Runs and of a run jump in a run's Log, and the help
# of Space.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run rebind quick "Rebound keys" status completed

mkdir -p "$TUI_TMP/xdg/taskdeck"
cat >"$TUI_TMP/xdg/taskdeck/dashboard.conf" <<'CONF'
key.changes = 6
key.plan = F2
key.unmark-all = x
key.rerun = Ctrl-R
key.revert = X
key.scope = F3
key.next-run = >
CONF
dash_start 90x30 XDG_CONFIG_HOME="$TUI_TMP/xdg"
wait_live
wait_for "Rebound keys"
wait_for "[1 Log] F2 Plan 3 Artifacts 4 Connectors 6 Changes"
assert_not_screen "5 Changes"
pass "the tabs name the keys given (6 Changes, F2 Plan)"

keys U
wait_for "Runs ↓newest"
keys X
wait_for_re "the changes of run_[0-9a-z]+: X again reverts them"
pass "the revert key from Runs names itself (X)"

keys 6
wait_for "[6 Changes]"
keys 1
wait_for "[1 Log]"
# A click on the tab, where the title line shows it now.
line=$(screen | head -n 1)
prefix=${line%%6 Changes*}
click "${#prefix}" 0
wait_for "[6 Changes]"
pass "6 and a click on '6 Changes' show the Changes"

keys U
wait_for "Runs ↓newest"
keys '*'
wait_for "1 marked (x or Esc clears)"
keys x
wait_for "marks cleared"
pass "'*' names the key that clears the marks (x)"

keys 1
wait_for "[1 Log]"
keys '>'
wait_for "the Log shows one run: F3 shows its session's runs, then > and [ jump between them"
pass "a run jump in a run's Log names the keys given (F3, >)"

keys U
wait_for "Runs ↓newest"
keys '?'
wait_for "┌ Keys: Runs"
wait_for "mark / unmark the run"
screen | grep -F "mark / unmark the run" | grep -qF ". act" &&
	fail "the help of Space names '.', which no longer reruns: $(screen_line 'mark / unmark')"
pass "the help of Space names no key that moved"
keys Escape
wait_gone "┌ Keys"

dash_quit
pass "q exits cleanly"
