#!/usr/bin/env bash
# Downloading an artifact: Enter, the directory (pre-filled with where the
# dashboard started), the bytes equal the service's; an existing file asks first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run downloads research "Research and save a report" status completed
artifact=$(td artifacts list "$session" | awk 'NR > 1 && $2 == "report.md" { print $1 }')
[[ -n $artifact ]] || fail "the research run saved no report.md"
version=$(td artifacts show "$artifact" | sed -n 's/^version: //p')
mkdir "$TUI_TMP/cli"
td artifacts download "$artifact" --out "$TUI_TMP/cli" >/dev/null

dir=$TUI_TMP/cwd
# "Download report.md to: <dir>", the directory pre-filled (maybe on the next line).
wait_download_prompt() {
	wait_for "Download report.md to:"
	wait_for "$dir"
}
dash_start 120x36
wait_live
wait_for "Research and save a report"
keys 3
wait_for "report.md"
keys Enter
wait_download_prompt
keys Enter
wait_for "download complete: $dir/report.md"
cmp "$dir/report.md" "$TUI_TMP/cli/report.md" || fail "the dashboard's report.md differs from the CLI's"
[[ sha256:$(sha256sum <"$dir/report.md" | cut -d' ' -f1) == "$version" ]] ||
	fail "report.md's sha256 is not the artifact's version $version"
[[ ! -e $dir/report.md.part ]] || fail "report.md.part was left behind"
pass "Enter downloads report.md; its bytes are the artifact's ($version)"

# Again: the file exists, so it asks; n keeps the file as it is.
echo "changed locally" >"$dir/report.md"
keys Enter
wait_download_prompt
keys Enter
wait_for "Overwrite $dir/report.md? [y/N]"
keys n
wait_gone "Overwrite $dir/report.md?"
[[ $(cat "$dir/report.md") == "changed locally" ]] || fail "n at 'Overwrite?' replaced the file"
keys Enter
wait_download_prompt
keys Enter
wait_for "Overwrite $dir/report.md? [y/N]"
keys y
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	cmp -s "$dir/report.md" "$TUI_TMP/cli/report.md" && break
	tick
done
cmp -s "$dir/report.md" "$TUI_TMP/cli/report.md" || fail "y at 'Overwrite?' did not replace the file"
[[ $(run_field "$run" status) == completed ]] || fail "the download changed the run"
pass "an existing file: n keeps it, y replaces it"

# Into another directory, typed after the pre-filled one.
mkdir "$dir/sub"
keys Enter
wait_download_prompt
keys End
type_text "/sub"
keys Enter
wait_for "download complete: $dir/sub/report.md"
cmp "$dir/sub/report.md" "$TUI_TMP/cli/report.md" || fail "sub/report.md differs"
pass "a typed directory"

# A download that fails (the stored bytes are gone): the message names the run, the
# artifact and the error; nothing is left behind and the run is not started again.
blob=$TASKDECK_HOME/artifacts/${version:7:2}/${version#sha256:}
[[ -f $blob ]] || fail "no stored file at $blob"
finished=$(run_field "$run" finishedAt)
runs_before=$(td runs list --project "$project" | awk 'NR > 1' | wc -l)
mv "$blob" "$TUI_TMP/blob"
mkdir "$dir/fail"
keys Enter
wait_download_prompt
keys C-u
type_text "$dir/fail"
keys Enter
wait_for "download failed: run $run artifact $artifact:"
mv "$TUI_TMP/blob" "$blob"
[[ ! -e $dir/fail/report.md ]] || fail "a failed download left report.md"
[[ $(run_field "$run" status) == completed && $(run_field "$run" finishedAt) == "$finished" ]] ||
	fail "the failed download changed the run"
(($(td runs list --project "$project" | awk 'NR > 1' | wc -l) == runs_before)) ||
	fail "the failed download started a run"
pass "a failed download names the run, the artifact and the error, and leaves the run alone"

# A foreign report.md.part (garbage, written by nothing that downloaded this
# artifact) is not resumed: the saved bytes are the version's.
mkdir "$dir/foreign"
head -c 1000 /dev/zero | tr '\0' x >"$dir/foreign/report.md.part"
keys Enter
wait_download_prompt
keys C-u
type_text "$dir/foreign"
keys Enter
wait_for "download complete: $dir/foreign/report.md"
[[ sha256:$(sha256sum <"$dir/foreign/report.md" | cut -d' ' -f1) == "$version" ]] ||
	fail "a foreign .part was resumed: foreign/report.md is not the version $version"
[[ ! -e $dir/foreign/report.md.part && ! -e $dir/foreign/report.md.part.meta ]] ||
	fail "the .part or its sidecar was left behind"
pass "a foreign .part is not trusted: the bytes are the version's"

# Enter twice on the same download before the first ends: one download, no
# false "failed".
mkdir "$dir/twice"
keys Enter
wait_download_prompt
keys C-u
type_text "$dir/twice"
keys Enter Enter Enter
wait_for "download complete: $dir/twice/report.md"
sleep 1
assert_not_screen "download failed"
cmp "$dir/twice/report.md" "$TUI_TMP/cli/report.md" || fail "twice/report.md differs"
pass "a second Enter on a download in progress: no false failure"

dash_quit
pass "q exits cleanly"
