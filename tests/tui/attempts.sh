#!/usr/bin/env bash
# Attempts in the Changes view (5): two attempts of one prompt made by
# `taskdeck run --attempts 2` in a git repository with uncommitted work are
# listed together (model, status, files +/-, check); A asks [y/N] naming the
# attempt, any other key does nothing, y puts exactly that attempt's file into
# the repository and the group shows applied.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
# Two transcripts: each writes its own file.
mkdir "$TUI_TMP/replay"
export TASKDECK_REPLAY_DIR=$TUI_TMP/replay
transcript() {
	printf '{"turns":[{"text":"Working.\\n","toolCalls":[{"name":"write_file","arguments":'
	printf '{"path":"%s","content":"%s\\n"}}],"usage":{"inputTokens":100,"outputTokens":10}},' "$2" "$3"
	printf '{"text":"Done.","usage":{"inputTokens":120,"outputTokens":5}}]}\n'
}
transcript att-one one.txt "the first attempt" >"$TUI_TMP/replay/att-one.json"
transcript att-two two.txt "the second attempt" >"$TUI_TMP/replay/att-two.json"
svc_start
repo=$TUI_TMP/repo
mkdir "$repo"
git -C "$repo" init -q
printf 'line 1\n' >"$repo/shared.txt"
git -C "$repo" add shared.txt
git -C "$repo" -c user.name=t -c user.email=t@example.com commit -qm base
printf 'mine\n' >"$repo/uncommitted.txt"
project=$(new_project tries)

dash_start 160x40
wait_live
wait_for "tries"
out=$(td run --attempts 2 --model att-two,att-one --provider replay --project "$project" \
	--cwd "$repo" --check 'test -f one.txt' --wait --json 'make it better') ||
	fail "taskdeck run --attempts 2 failed: $out"
[[ ! -e $repo/one.txt && ! -e $repo/two.txt ]] || fail "the repository changed before apply"
keys 5
wait_for "[5 Changes]"
wait_for_re "Attempts atg_[^ ]*: 2, active \(A applies"
wait_for_re "att-two +completed +1 file \+1 -0 +check failed"
wait_for_re "att-one +completed +1 file \+1 -0 +check passed"
pass "5 lists the group's attempts: model, status, files +/-, check"

# The selected session's run is one attempt: the one marked with '>'.
model=$(screen | sed -n 's/.*> [12] \(att-[a-z]*\) .*/\1/p' | head -n 1)
[[ $model == att-one || $model == att-two ]] || fail "no attempt is marked as the selected run"
file=one.txt
[[ $model == att-one ]] || file=two.txt

# = : the two attempts' diffs side by side, on the same rows.
keys =
wait_for "attempt 1 (att-two)"
wait_for "attempt 2 (att-one)"
wait_for "+the first attempt"
wait_for "+the second attempt"
screen | grep -F "+the first attempt" | grep -qF "+the second attempt" ||
	fail "the two attempts' diffs are not side by side"
screen | grep -F "attempt 1 (att-two)" | grep -qF "attempt 2 (att-one)" ||
	fail "the two attempts are not named side by side"
keys =
wait_gone "attempt 2 (att-one)"
pass "= shows two attempts' diffs side by side; = again goes back"

keys A
wait_for "[y/N]"
question=$(screen | tr -d '│\n' | tr -s ' ')
grep -qF "($model, check " <<<"$question" || fail "the question does not name the attempt"
grep -qF "into $repo?" <<<"$question" || fail "the question does not name the directory"
keys n
wait_gone "[y/N]"
assert_screen "active (A applies"
[[ ! -e $repo/$file ]] || fail "n applied the attempt"
pass "A asks [y/N] naming the attempt; n does nothing"

# The user writes that file meanwhile: the apply refuses and changes nothing.
printf 'my own\n' >"$repo/$file"
keys A
wait_for "[y/N]"
keys y
wait_for "Nothing was applied"
[[ $(cat "$repo/$file") == "my own" ]] || fail "the conflicting apply changed $file"
keys Escape
wait_gone "Nothing was applied"
assert_screen "active (A applies"
rm "$repo/$file"
pass "a conflict is said in a box and nothing changes"

keys A
wait_for "[y/N]"
keys y
wait_for_re "applied run_[0-9a-z]* into"
wait_for_re "Attempts atg_[^ ]*: 2, applied"
[[ -f $repo/$file ]] || fail "$file, the attempt's file, is not in the repository"
[[ $(cat "$repo/uncommitted.txt") == mine ]] || fail "the uncommitted work was lost"
other=two.txt
[[ $file == one.txt ]] || other=one.txt
[[ ! -e $repo/$other ]] || fail "the other attempt's $other came too"
[[ $(git -C "$repo" worktree list | wc -l) == 1 ]] ||
	fail "worktrees are left: $(git -C "$repo" worktree list)"
pass "y applies exactly that attempt into the repository; the others' worktrees are gone"

keys A
wait_for "are applied already:"
assert_screen "nothing to apply."
keys Escape

# The new-run editor starts attempts: its attempts field, 2, in the dashboard's directory.
keys n
wait_for "New run in tries"
wait_for "provider: default   model: default   attempts: 1   (Tab edits)"
type_text "try it twice"
keys Tab
type_text replay
keys Tab
type_text att-one
keys Tab
wait_for "1 to 8, each in its own git"
type_text 9
keys Enter
wait_for 'attempts: "9" is no count from 1 to 8'
assert_not_screen "[y/N]"
# Enter left the field: three Tabs to it again.
keys Tab
keys Tab
keys Tab
wait_for "1 to 8, each in its own git"
keys BSpace
type_text 2
keys Tab
wait_for "provider: replay   model: att-one   attempts: 2   (Tab edits)"
keys Enter
wait_for "[y/N]"
assert_screen "Start 2 attempts in $TUI_TMP/cwd"
keys y
wait_for_re "started 2 attempts \(atg_[0-9a-z]*\) in $TUI_TMP/cwd"
wait_for_re "Attempts atg_[^ ]*: 2, active"
wait_for_re "> [12] att-one +completed +1 file \+1 -0"
groups=$(svc_get "/api/v1/attempts?project=$project")
[[ $(grep -o '"runId"' <<<"$groups" | wc -l) == 4 ]] || fail "not 2 more attempts: $groups"
[[ ! -e $TUI_TMP/cwd/one.txt ]] || fail "the dashboard's directory changed before an apply"
pass "the new-run editor's attempts field starts a group of 2 (9 is refused)"

keys '?'
wait_for "apply the selected run's attempt"
keys Escape
dash_quit
pass "q exits cleanly"
