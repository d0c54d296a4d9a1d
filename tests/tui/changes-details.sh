#!/usr/bin/env bash
# At 80x24 a long path in the Changes list is cut (so is the diff's header);
# M on the Changes shows the selected file's path whole, its change and run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
ws=$TUI_TMP/ws
mkdir "$ws"
printf 'alpha\nbeta\ngamma\n' >"$ws/notes.txt"
project=$(new_project paths)
long=a-rather-long-directory-name/and-a-nested-one/with-a-long-file-name-THE-END.txt

dash_start 80x24
wait_live
wait_for "paths"
read -r run _ < <(start_run "$project" workspace-edits "Fix the notes" --cwd "$ws" \
	--permission workspace-write)
wait_for "Fix the notes"
keys 5
wait_for "report.md"
# A file that appears while the run goes on is among its changes.
mkdir -p "$ws/${long%/*}"
echo hello >"$ws/$long"
wait_run_field "$run" status completed
wait_for "a-rather-long-directory"
assert_not_screen "THE-END"
keys k
wait_for "+++ b/a-rather-long"
keys M
wait_for "┌ Details"
wait_for "and-a-nested-one/with-a-long-file-name-THE-"
wait_for "END.txt"
wait_for "Change: A +1 -0"
pass "M on the Changes shows the selected file's whole path and its change"
keys x
wait_gone "┌ Details"

dash_quit
pass "q exits cleanly"
