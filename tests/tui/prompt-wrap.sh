#!/usr/bin/env bash
# The prompt editor wraps at spaces: a long prompt's words are each whole on
# one row of the box, none cut in two (a word longer than a row is cut).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
project=$(new_project wrapping)

words="alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
dash_start 80x24
wait_live
wait_for "wrapping"
keys n
wait_for "New run in wrapping"
type_text "$words"
wait_for "zulu"
for word in $words; do
	screen | grep -qE "(^|[^A-Za-z])$word([^A-Za-z]|$)" ||
		fail "'$word' is not whole on any row of the prompt editor"
done
pass "the prompt editor wraps at spaces: no word cut in two"
# The cursor stays at the end: typing goes on after zulu.
type_text "!"
wait_for "zulu!"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
dash_quit
pass "q exits cleanly"
