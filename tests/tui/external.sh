#!/usr/bin/env bash
# Other programs on the terminal: v in the log hands the lines shown to
# $PAGER; Ctrl-O in the prompt editor hands the prompt to $EDITOR and takes
# the edited text back.  The dashboard comes back live afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project outside)
td defaults set "$project" provider=replay model=quick >/dev/null
read -r run _ < <(start_run "$project" quick "Page me")
wait_run_field "$run" status completed
mkdir "$TUI_TMP/paged"
# A "pager" that copies the file; an "editor" that rewrites it in place.
dash_start 120x36 PAGER="cp -t $TUI_TMP/paged" EDITOR="sed -i s/^/edited-/"
wait_live
wait_for "Page me"
keys Tab Tab Enter
wait_for "Hello from taskdeck"
keys v
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do compgen -G "$TUI_TMP/paged/*" >/dev/null && break; tick; done
paged=$(compgen -G "$TUI_TMP/paged/*" | head -n 1) || fail "PAGER got no file"
grep -q "Hello from taskdeck" "$paged" || fail "the paged log lacks the output: $(head -c 300 "$paged")"
wait_for "Hello from taskdeck"
wait_live
pass "v: the log in \$PAGER, then back"

# n in the Log is the search's: a new run from Runs.
keys BTab n
wait_for "New run in outside"
type_text "my long prompt"
keys C-o
wait_for "edited-my long prompt"
keys Enter y
wait_for "edited-my long prompt"
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	td runs list --project "$project" | grep -q "edited-my long prompt" && break
	tick
done
td runs list --project "$project" | grep -q "edited-my long prompt" || fail "the edited prompt did not start a run"
pass "Ctrl-O: the prompt in \$EDITOR, the edited text started"
dash_quit
pass "q exits cleanly"
