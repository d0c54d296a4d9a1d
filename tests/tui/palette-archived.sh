#!/usr/bin/env bash
# ':session TITLE' finds an archived session too: the project's sessions are
# read again with the archived ones shown (dimmed), and the session is
# selected, the message line saying it is archived; ':project NAME' the
# same for an archived project.  A title that matches none, archived or
# not, still says so.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project "shelf")
attic=$(new_project "attic")
td projects archive "$attic" >/dev/null || fail "taskdeck projects archive failed"
read -r run1 old < <(start_run "$project" quick "Research SQLite WAL mode")
read -r run2 _ < <(start_run "$project" quick "Count the files")
wait_run_field "$run1" status completed
wait_run_field "$run2" status completed
td sessions archive "$old" >/dev/null || fail "taskdeck sessions archive failed"

dash_start 100x30
wait_live
wait_for "Count the files"
assert_not_screen "Research SQLite"
keys :
type_text "session Research"
keys Enter
wait_for "Research SQLite WAL mode is archived: shown with the archived ones (Z hides them)"
wait_for "Sessions ↓newest +archived"
screen_line "[archived] Research" | grep -qF "> [archived] Research SQLite" ||
	fail "the archived session is not selected: $(screen_line '[archived] Research')"
wait_for "shelf › Research SQLite"
pass ":session finds the archived session and selects it"

keys :
type_text "session Nothing like it"
keys Enter
wait_for "no session 'Nothing like it' in this project"
pass "a title that matches nothing still says so"

# Hidden again, then a project archived.
keys P
keys Z
wait_for "archived projects and sessions hidden"
wait_gone "[archived]"
keys :
type_text "project Nowhere"
keys Enter
wait_for "no project named 'Nowhere', archived ones included"
wait_gone "[archived]"
assert_not_screen "+archived"
pass "a name found nowhere leaves the archived ones hidden, as before"
keys :
type_text "project attic"
keys Enter
wait_for "attic is archived: shown with the archived ones (Z hides them)"
wait_for_re "> \\[archived\\] attic"
wait_for " taskdeck  attic"
pass ":project finds the archived project and selects it"

dash_quit
pass "q exits cleanly"
