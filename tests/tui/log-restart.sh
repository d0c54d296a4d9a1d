#!/usr/bin/env bash
# A Log left open across service restarts (on a NEW port, ports are
# ephemeral) shows the run's history once: the search counts each line once,
# and & filters to one line, not two.  The run is running at the kill, so the
# restarted service (a new event stream) tells of it too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run restarting slow "Count me once" status running

dash_start 120x36
wait_live
wait_for "Count me once"
keys Tab Tab Enter
wait_for "run started"

# search_count TEXT: '/' TEXT Enter, then the "match 1/N" of the status bar.
search_total() {
	keys /
	type_text "$1"
	keys Enter
	wait_for_re "match 1/[0-9]+"
	screen | grep -oE "match 1/[0-9]+" | head -n 1 | cut -d/ -f2
}
[[ $(search_total "run started") == 1 ]] || fail "one 'run started' line before the restart"
keys Escape

for round in 1 2; do
	old_port=$SVC_PORT
	svc_kill9
	wait_for "unreachable"
	for _ in 1 2 3; do
		svc_start
		[[ $SVC_PORT != "$old_port" ]] && break
		svc_stop_quietly
	done
	[[ $SVC_PORT != "$old_port" ]] || fail "the service came back on the same port three times"
	note "restart $round: port $old_port -> $SVC_PORT"
	wait_for "live (resynced)" 400
	# What the restarted service tells of the run (its stream is new) arrives too.
	sleep 1
	total=$(search_total "run started")
	[[ $total == 1 ]] || fail "after restart $round the log holds 'run started' $total times"
	keys Escape
	keys '&' C-u
	type_text "run started"
	keys Enter
	wait_for_re "&run started \([0-9]+ lines?\)"
	assert_screen "&run started (1 line)"
	keys '&' Escape
	wait_gone "&run started"
done
pass "after two restarts on new ports the log shows the history once (search 1/1, & 1 line)"
dash_quit
pass "q exits cleanly"
