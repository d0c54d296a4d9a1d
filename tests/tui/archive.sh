#!/usr/bin/env bash
# Archiving from the dashboard: z on a project or a session asks [y/N] naming
# it; y archives it (it leaves the list), Z lists the archived ones too,
# dimmed and marked [archived], and z on one of them brings it back.  The
# action is rebindable (key.archive), and the question and help show the key
# given.  A project archived elsewhere (the CLI) leaves the list too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

keep=$(new_project "Keep me")
old=$(new_project "Old stuff")
read -r _ session < <(start_run "$keep" quick "Session to put away")
read -r run2 _ < <(start_run "$keep" quick "Session that stays")
wait_run_field "$run2" status completed

mkdir -p "$TUI_TMP/xdg/taskdeck"
printf 'key.show-archived = V\n' >"$TUI_TMP/xdg/taskdeck/dashboard.conf"
dash_start 120x36 XDG_CONFIG_HOME="$TUI_TMP/xdg"
wait_live
wait_for "Old stuff"
wait_for "Keep me"

# The newest project (Old stuff) is selected: z asks, naming it.
keys z
wait_for 'Archive project "Old stuff"? It leaves the list (V shows archived'
assert_screen 'ones); nothing is deleted. [y/N]'
keys n
wait_gone 'Archive project "Old stuff"'
assert_screen "Old stuff"
pass "z names the project; anything but y keeps it"

keys z
wait_for 'Archive project "Old stuff"?'
keys y
wait_for "archived Old stuff (V shows the archived ones)"
wait_gone "Old stuff"
[[ -n $(td projects list --archived | grep -F "$old") ]] || fail "the service does not have it archived"
pass "y archives it: it leaves the Projects list, the service lists it as archived"

# The rebound key shows the archived ones, dimmed and marked.
keys V
wait_for "Projects ↓newest +archived"
wait_for "[archived] Old stuff"
screen_escapes | grep -F "[archived] Old stuff" | grep -q $'\e\[2m' ||
	fail "the archived row is not dim: $(screen_escapes | grep -F 'Old stuff')"
pass "V (key.show-archived) lists archived projects too, dimmed, [archived]"

# z on it brings it back.
keys g
wait_for "│> [archived] Old stuff"
keys z
wait_for 'Unarchive project "Old stuff"? It comes back into the list. [y/N]'
keys y
wait_for "unarchived Old stuff"
wait_gone "[archived] Old stuff"
assert_screen "Old stuff"
keys V
wait_for "archived projects and sessions hidden"
pass "z on an archived project unarchives it"

# A session: select Keep me, then the Sessions pane.
keys j
wait_for "│> Keep me"
keys Tab
wait_for "Session to put away"
keys g
sleep 0.3
keys j
wait_for "│> Session to put away"
keys z
wait_for 'Archive session "Session to put away"?'
keys y
wait_gone "Session to put away"
assert_screen "Session that stays"
[[ $(td sessions show "$session" | sed -n 's/^archivedAt: //p') == 20* ]] ||
	fail "the session is not archived in the service"
pass "z in Sessions archives the selected session"

# Archived elsewhere: the event takes it out of the list.
keys h
td projects archive "$keep" >/dev/null
wait_gone "Keep me"
pass "a project archived with the CLI leaves the list"

keys '?'
wait_for "archive the selected project or session"
wait_for "show the archived ones too"
screen | grep -F "show the archived ones too" | grep -q " V " ||
	fail "the help does not show V for show-archived: $(screen | grep -F 'show the archived')"
keys Escape
pass "the help lists z and the rebound V"

dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
