#!/usr/bin/env bash
# A big download says while its sha256 is checked: after the last byte of a
# 1 GiB artifact, the message line shows "verifying (sha256) big.bin" with
# its progress (seconds of work), then "download complete".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TUI_WAIT_TENTHS=1200
tui_start_with_run verifying big-artifact "Save a big file" status completed
artifact=$(td artifacts list "$session" | awk 'NR > 1 && $2 == "big.bin" { print $1 }')
[[ -n $artifact ]] || fail "the big-artifact run saved no big.bin"
dir=$TUI_TMP/cwd

dash_start 120x36
wait_live
wait_for "Save a big file"
keys 3
wait_for "big.bin"
keys Enter
wait_for "Download big.bin to:"
keys Enter
wait_for "verifying (sha256) big.bin"
pass "after the bytes, the message line says the sha256 is being checked"
wait_for "download complete: $dir/big.bin"
[[ $(stat -c %s "$dir/big.bin") == 1073741824 ]] || fail "big.bin is not 1 GiB"
rm -f "$dir"/big.bin*
pass "then the download completes"
dash_quit
assert_no_sanitizer_report
pass "q exits cleanly"
