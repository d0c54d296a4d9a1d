#!/usr/bin/env bash
# $ on a session whose directory is gone says why no shell opens (the
# child's message would be behind the screen), and opens none.  A shell
# that exits with its last command's failure is no failure of the shell's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
ws=$TUI_TMP/ws
mkdir "$ws"
project=$(new_project gone)
read -r run _ < <(start_run "$project" quick "Count the files" --cwd "$ws")
wait_run_field "$run" status completed
cat >"$TUI_TMP/shell" <<SH
#!/bin/sh
touch "$TUI_TMP/shell-ran"
exit 1
SH
chmod +x "$TUI_TMP/shell"

dash_start 120x30 SHELL="$TUI_TMP/shell"
wait_live
wait_for "Count the files"
keys '$'
wait_for "back from the shell in $ws"
assert_not_screen "did not succeed"
[[ -e $TUI_TMP/shell-ran ]] || fail "the shell did not run"
rm "$TUI_TMP/shell-ran"
pass "a shell whose last command failed: back from the shell, no error"

rmdir "$ws"
keys '$'
wait_for "cannot open a shell in $ws: No such file or directory"
[[ ! -e $TUI_TMP/shell-ran ]] || fail "a shell ran although its directory is gone"
pass "\$ in a session whose directory is gone says so"

dash_quit
pass "q exits cleanly"
