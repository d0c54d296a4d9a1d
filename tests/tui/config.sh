#!/usr/bin/env bash
# Keys and colours in the configuration file (XDG dashboard.conf):
# key.ACTION = KEY gives an action another key (the old one no longer does
# it; the help shows the new one), color.ELEMENT = FG,BG colours a part of
# the screen (seen in the screen's escapes), and each bad line is reported
# once on stderr (the first, with how many, on the screen) and ignored.  Mouse on, default settings otherwise.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run cfg quick "Configured keys" status completed

mkdir -p "$TUI_TMP/xdg/taskdeck"
cat >"$TUI_TMP/xdg/taskdeck/dashboard.conf" <<'CONF'
# keys and colours
key.new-run = o
key.quit = Q
color.bar = white,blue
color.selected = black,green
key.no-such-action = x
key.help = Ctrl-C
color.no-such-part = red
color.title = purple
CONF
dash_start 120x36 XDG_CONFIG_HOME="$TUI_TMP/xdg"
# The first bad line and how many more, on the screen (not only behind it).
wait_for "4 lines wrong (all on stderr after q): dashboard.conf:6: key.no-such-action: no action"
pass "the screen says what is wrong in dashboard.conf"
wait_live
wait_for "Configured keys"

# Each bad line once, naming its line; the good ones are silent.
errs=$(grep -c "dashboard.conf:" "$TUI_TMP/dash.err" || true)
((errs == 4)) || fail "$errs reports on stderr, not 4: $(cat "$TUI_TMP/dash.err")"
grep -qF "dashboard.conf:6: key.no-such-action: no action named 'no-such-action'" \
	"$TUI_TMP/dash.err" || fail "no report of the unknown action"
grep -qF "dashboard.conf:7: key.help: 'Ctrl-C' is not a key" "$TUI_TMP/dash.err" ||
	fail "no report of Ctrl-C"
grep -qF "dashboard.conf:8: color.no-such-part: no element named" "$TUI_TMP/dash.err" ||
	fail "no report of the unknown element"
grep -qF "dashboard.conf:9: color.title: 'purple' is not" "$TUI_TMP/dash.err" ||
	fail "no report of the unknown colour"
pass "four bad lines, four reports, each once"

# o is the new run now; n no longer is (it says where n works instead).
keys o
wait_for "New run in cfg"
keys Escape
wait_gone "New run in cfg"
keys n
wait_for "n is now o (key.new-run in dashboard.conf): new run in the selected project"
assert_not_screen "New run in cfg"
pass "key.new-run = o: o opens the prompt editor, n does not"

keys '?'
wait_for "Keys:"
screen | grep -qE "│ ?o +anywhere +new run in the selected project" ||
	fail "the help does not show o for a new run"
screen | grep -qE "│ ?Q +anywhere +quit" || fail "the help does not show Q to quit"
keys Escape
wait_gone "Keys:"
wait_for "Enter open  o new run  ? help"
pass "the help and the status bar's hints show the new keys"

# Colours: the status bar white on blue (44), the selection black on green (42).
bar=$(screen_escapes | grep -F "live" | tail -n 1)
grep -qE $'\e\\[[0-9;]*44[;m]' <<<"$bar" || fail "the status bar is not blue: $(cat -v <<<"$bar")"
screen_escapes | grep -F "> cfg" | grep -qE $'\e\\[[0-9;]*42[;m]' ||
	fail "the selected project is not green"
pass "color.bar and color.selected apply"
# No hole in the bar: the connection badge keeps the bar's blue background.
pre=${bar%%live*}
after=${pre##*44m}
[[ $pre == *44m* && $after != *$'\e[49m'* && $after != *$'\e[0m'* && $after != *$'\e[m'* ]] ||
	fail "the bar's background breaks at the connection badge: $(cat -v <<<"$pre")"
pass "color.bar: the live badge is drawn on the bar's background"

# q no longer quits; Q does.
keys q
sleep 0.5
dash_alive || fail "q quit although key.quit = Q"
keys Q
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	[[ -s $TUI_TMP/dash.rc ]] && break
	tick
done
[[ $(cat "$TUI_TMP/dash.rc" 2>/dev/null) == 0 ]] || fail "Q did not quit cleanly"
assert_no_sanitizer_report
pass "key.quit = Q: q does not quit, Q does"
