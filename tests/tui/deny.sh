#!/usr/bin/env bash
# Permission prompts of a run with profile ask (data/replay/ask.json): the modal,
# deny with d then y (n does not), allow with a then y, one answered elsewhere goes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

project=$(new_project asking)
read -r run _ < <(start_run "$project" ask "Ask before writing" --permission ask)

# The pending prompt of the run: "ID TOOL", or nothing.
pending() { td permissions list --run "$run" | awk 'NR > 1 && $2 == "pending" { print $1, $3 }'; }
# Waits until the pending prompt is one of TOOL; prints its id.
wait_pending() {
	local i p
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		p=$(pending)
		[[ ${p#* } == "$1" ]] && { printf '%s\n' "${p% *}"; return 0; }
		tick
	done
	fail "no pending $1 prompt (pending: ${p:-none})"
}
prompt_status() { td permissions show "$1" | sed -n 's/^status: //p'; }

first=$(wait_pending write_file)
dash_start 120x36
wait_live
# The Plan pane (this run has none): what the modal says is then on the screen only once.
keys 2
wait_for "write_file"
wait_for "allowed.md"
# The run by its names, not its raw id (the question that answers it has the id).
wait_for 'run "Ask before writing" in asking'
assert_not_screen "run:  run_"

# A (allow for the rest of the run) says it allows every tool, not only this one.
keys A
wait_for "Allow EVERY tool, not only write_file"
keys n
wait_gone "[y/N]"
[[ $(prompt_status "$first") == pending ]] || fail "n after A answered the prompt"
keys '!'
wait_for "allowed.md"

keys d
wait_for "[y/N]"
# It names the run by its prompt, with its project and session; the id follows.
assert_screen 'Deny write_file for run "Ask before writing" in asking › Ask before'
keys n
wait_gone "[y/N]"
[[ $(prompt_status "$first") == pending ]] || fail "n after d answered the prompt: $(prompt_status "$first")"
assert_screen "allowed.md"
pass "d then n leaves the prompt pending"

keys d
wait_for "[y/N]"
keys y
second=$(wait_pending run_command)
[[ $(prompt_status "$first") == denied ]] || fail "d then y left the prompt $(prompt_status "$first")"
wait_for "echo hi"
pass "d then y denies; the next prompt shows"

# Esc hides the modal, ! shows it again.
keys Escape
wait_gone "echo hi"
keys '!'
wait_for "echo hi"
keys a
wait_for "[y/N]"
keys y
third=$(wait_pending write_file)
[[ $(prompt_status "$second") == allowed ]] || fail "a then y left the prompt $(prompt_status "$second")"
wait_for "second.md"
pass "Esc hides, ! shows again, a then y allows"

# Answered elsewhere: the modal goes away.
td permissions allow "$third" >/dev/null
wait_gone "second.md"
wait_run_field "$run" status completed
find "$TASKDECK_HOME" -name allowed.md | grep -q . && fail "allowed.md was written although its prompt was denied"
pass "a prompt answered with the CLI leaves the dashboard; the run completes"

dash_quit
pass "q exits cleanly"
