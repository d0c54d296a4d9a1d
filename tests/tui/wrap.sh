#!/usr/bin/env bash
# w wraps the Log's long lines at spaces: every word of a wrapped line is
# whole on one row, none cut in two.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run wrapping quick "Wrap me" status completed

dash_start 80x24
wait_live
wait_for "Wrap me"
keys Tab Tab Enter
wait_for "run finished"
keys w
wait_for "wrap"
# The log pane is about 40 columns: the answer takes several rows.
wait_for "Hello"
for word in Hello from taskdeck This is the quick replay answer; do
	screen | grep -qE "(^|[^A-Za-z])$word([^A-Za-z]|$)" ||
		fail "'$word' is not whole on any row of the wrapped log"
done
pass "w wraps at spaces: no word cut in two"
dash_quit
pass "q exits cleanly"
