#!/usr/bin/env bash
# Open in place: v on an artifact hands its bytes to $PAGER and E to $EDITOR
# from a private temporary file (0600) that is gone afterwards, nothing saved
# in the download directory; $ opens $SHELL in the session's workspace with
# TASKDECK_SESSION and TASKDECK_PROJECT set.  The dashboard comes back live.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run inplace research "Research with a report" status completed
td defaults set "$project" provider=replay >/dev/null
art=$(td artifacts list "$session" | sed -n 's/^\(art_[0-9a-z]*\) .*report\.md.*/\1/p' | head -n 1)
[[ -n $art ]] || fail "no report.md artifact: $(td artifacts list "$session")"
mkdir "$TUI_TMP/want" "$TUI_TMP/seen"
td artifacts download "$art" --out "$TUI_TMP/want" >/dev/null
# A pager and an editor that record the file they get: bytes, path, mode.
for tool in pager editor; do
	cat >"$TUI_TMP/$tool" <<SH
#!/bin/sh
cp "\$1" "$TUI_TMP/seen/$tool.bytes"
printf '%s\n' "\$1" >"$TUI_TMP/seen/$tool.path"
stat -c %a "\$1" >"$TUI_TMP/seen/$tool.mode"
SH
	chmod +x "$TUI_TMP/$tool"
done
cat >"$TUI_TMP/shell" <<SH
#!/bin/sh
{ pwd; echo "session=\$TASKDECK_SESSION"; echo "project=\$TASKDECK_PROJECT"; } >"$TUI_TMP/seen/shell"
SH
chmod +x "$TUI_TMP/shell"

dash_start 120x36 PAGER="$TUI_TMP/pager" EDITOR="$TUI_TMP/editor" SHELL="$TUI_TMP/shell"
wait_live
wait_for "Research with a report"
keys 3
wait_for "report.md"
keys v
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do [[ -s $TUI_TMP/seen/pager.mode ]] && break; tick; done
[[ -s $TUI_TMP/seen/pager.mode ]] || fail "PAGER got no file"
cmp -s "$TUI_TMP/seen/pager.bytes" "$TUI_TMP/want/report.md" || fail "PAGER got other bytes"
[[ $(cat "$TUI_TMP/seen/pager.mode") == 600 ]] || fail "the file was mode $(cat "$TUI_TMP/seen/pager.mode")"
paged=$(cat "$TUI_TMP/seen/pager.path")
[[ $paged == *.md ]] || fail "the file lost its extension: $paged"
wait_live
wait_for "report.md"
[[ ! -e $paged ]] || fail "the temporary file $paged is still there"
[[ -z $(ls -A "$TUI_TMP/cwd") ]] || fail "something was saved in the download directory: $(ls "$TUI_TMP/cwd")"
pass "v: the artifact's bytes in \$PAGER from a 0600 file, removed after, nothing saved"

keys E
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do [[ -s $TUI_TMP/seen/editor.mode ]] && break; tick; done
[[ -s $TUI_TMP/seen/editor.mode ]] || fail "EDITOR got no file"
cmp -s "$TUI_TMP/seen/editor.bytes" "$TUI_TMP/want/report.md" || fail "EDITOR got other bytes"
wait_live
[[ ! -e $(cat "$TUI_TMP/seen/editor.path") ]] || fail "the editor's temporary file is still there"
pass "E: the same in \$EDITOR"

keys '$'
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do [[ -s $TUI_TMP/seen/shell ]] && break; tick; done
[[ -s $TUI_TMP/seen/shell ]] || fail "SHELL did not run"
cwd=$(td sessions show "$session" | sed -n 's/^cwd: //p')
[[ $(sed -n 1p "$TUI_TMP/seen/shell") == "$cwd" ]] ||
	fail "the shell ran in $(sed -n 1p "$TUI_TMP/seen/shell"), not $cwd"
grep -qx "session=$session" "$TUI_TMP/seen/shell" || fail "TASKDECK_SESSION: $(cat "$TUI_TMP/seen/shell")"
grep -qx "project=$project" "$TUI_TMP/seen/shell" || fail "TASKDECK_PROJECT: $(cat "$TUI_TMP/seen/shell")"
wait_for "back from the shell in $cwd"
wait_live
pass "\$: \$SHELL in the session's workspace with TASKDECK_SESSION and TASKDECK_PROJECT"
dash_quit
