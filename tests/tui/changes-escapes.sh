#!/usr/bin/env bash
# A file name with escapes in the Changes view (5) and in the revert question:
# its controls (an OSC title, a BEL, a bidirectional override, a C1 CSI) show
# as '?', by the rule the CLI uses (src/common/termtext.c), and none acts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start
ws=$TUI_TMP/ws
mkdir "$ws"
# The command the transcript runs writes the file with the hostile name.
printf '%s\n' "printf 'x\\n' > \"\$(printf 'a\\033]2;owned\\007\\342\\200\\256\\302\\233b.txt')\"" \
	>"$ws/approve.sh"
project=$(new_project escapes)

dash_start 160x40
wait_live
wait_for "escapes"
read -r run _ < <(start_run "$project" sandbox-approve "Write them" --cwd "$ws" \
	--permission workspace-write)
wait_run_field "$run" status completed
keys 5
wait_for "[5 Changes]"
wait_for "a?]2;owned???b.txt"
assert_not_screen "owned?b.txt"
pass "5 shows the name with its controls as ?, the bidirectional override too"

keys R
wait_for "[y/N]"
screen | grep -qF "a?]2;owned???b.txt" || fail "the question does not show the name as ?s"
keys n
dash_quit
pass "the revert question shows it the same way"
