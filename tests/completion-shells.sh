#!/usr/bin/env bash
# The scripts of `taskdeck completion bash|zsh|fish` in the real shells, against
# a real taskdeckd with the demo project and its runs: `taskdeck ru<TAB>` offers
# run and runs, `runs show <TAB>` the run ids, `--project d<TAB>` demo.  bash
# runs its function as bash-completion does, fish answers `complete -C`, zsh is
# typed into in tmux.  Then: ids and names of credentials without their
# secrets, and nothing (quickly, silently) from a service that does not answer.
set -euo pipefail
# shellcheck source=tests/tui/lib.sh
. "$(dirname "$0")/tui/lib.sh"
# shellcheck disable=SC2034 # for lib.sh's fail and pass
TUI_NAME=completion-shells
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
for shell in zsh fish; do
	command -v "$shell" >/dev/null || fail "$shell is not installed (./quickstart installs it)"
done
[[ -r $BASH_COMPLETION ]] || fail "bash-completion is not installed (./quickstart installs it)"
tui_start
export PATH=$TD_BUILDDIR:$PATH HOME=$TUI_TMP/cwd XDG_CONFIG_HOME=$TUI_TMP/cwd/.config
# What the service lists, however loaded the machine: a deadline far above the 150 ms default
# (the stopped-service check below sets the default back).
export TASKDECK_COMPLETE_BUDGET_MS=10000

out=$(td demo)
project=$(awk '$1 == "project" && $3 == "demo" { print $2 }' <<<"$out")
run=$(awk '$1 == "run" && $3 == "research" { print $2 }' <<<"$out")
[[ $project == prj_* && $run == run_* ]] || fail "taskdeck demo printed no project or run: $out"
td runs wait "$run" >/dev/null || fail "the research run of the demo did not complete"

# bash: COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT as readline sets them
# (COMP_WORDBREAKS splits --project=d), with bash-completion loaded (or not,
# with BARE set).
bash_complete() {
	bash --norc --noprofile -c '
		[[ -n ${BARE-} ]] || . "$1"
		source <(taskdeck completion bash)
		line=$2
		COMP_LINE=$line COMP_POINT=${#line}
		read -r -a COMP_WORDS <<<"${line//=/ = }"
		[[ $line == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_taskdeck
		printf "%s\n" "${COMPREPLY[@]}"' bash "$BASH_COMPLETION" "$1"
}
expect_bash() {
	local line=$1 got
	got=$(bash_complete "$line")
	shift
	for want; do
		grep -xF -- "$want" >/dev/null <<<"$got" || fail "bash: '$line<TAB>' offers no '$want': $got"
	done
}
expect_bash "taskdeck ru" run runs
expect_bash "taskdeck runs show " "$run"
expect_bash "taskdeck run --project d" demo
expect_bash "taskdeck run --project=d" demo
expect_bash "taskdeck runs logs " "$run"
expect_bash "taskdeck runs diff $run " report.md
expect_bash "taskdeck runs changes $run --from " start "$run"
# from a directory inside the run's workspace, relative to it, as runs diff takes them
ws=$(td runs show "$run" | awk '$1 == "cwd:" { print $2 }')
mkdir -p "$ws/sub"
got=$(cd "$ws/sub" && bash_complete "taskdeck runs diff $run ")
[[ $got == ../report.md ]] || fail "bash: in $ws/sub, 'runs diff RUN <TAB>' gives '$got', not ../report.md"
got=$(cd "$ws/sub" && td runs diff "$run" ../report.md | sed -n 1p)
[[ $got == "diff --git a/report.md b/report.md" ]] || fail "runs diff RUN ../report.md in sub/: $got"
expect_bash "taskdeck run --permission r" read-only
expect_bash "taskdeck sessions show res" 'Research\ SQLite\ WAL\ mode'
# typed in quotes: readline closes the quote, so the title goes in as it is
expect_bash 'taskdeck sessions show "Res' 'Research SQLite WAL mode'
expect_bash "taskdeck sessions show 'res" 'Research SQLite WAL mode'
expect_bash "taskdeck runs list --project D" demo
got=$(BARE=1 bash_complete "taskdeck run --project=d")
[[ $got == demo ]] || fail "bash without bash-completion: '--project=d<TAB>' gives '$got', not demo"
got=$(BARE=1 bash_complete "taskdeck runs show ")
[[ $got == *"$run"* ]] || fail "bash without bash-completion: 'runs show <TAB>' offers no $run: $got"
mkdir -p "$TUI_TMP/cwd/reports"
got=$(cd "$TUI_TMP/cwd" && bash_complete "taskdeck artifacts download ART --out rep")
[[ $got == reports ]] || fail "bash: '--out rep<TAB>' does not complete the directory: $got"
# Tab Tab (a list shown): the descriptions that __complete computes, as zsh and fish show them
got=$(COMP_TYPE=63 bash_complete "taskdeck runs show ")
grep -q -- "^$run  *(completed" <<<"$got" || fail "bash: a listed run id has no description: $got"
got=$(COMP_TYPE=63 bash_complete "taskdeck ru")
grep -qE -- "^runs +\(.+\)$" <<<"$got" || fail "bash: the listed commands have no description: $got"
# one candidate goes in without its description
got=$(COMP_TYPE=63 bash_complete "taskdeck run --permission r")
[[ $got == read-only ]] || fail "bash: a single candidate carries '$got'"
pass "bash (with and without bash-completion): commands, run ids, project names, session titles (in quotes too), the paths a run changed, --opt=value, enums, directories; descriptions in a list"

# fish: complete -C asks the completions of a command line.
fish_complete() {
	# shellcheck disable=SC2016 # fish expands $argv
	fish --no-config -c 'taskdeck completion fish | source; complete -C"$argv[1]"' "$1" | cut -f1
}
expect_fish() {
	local line=$1 got
	got=$(fish_complete "$line")
	shift
	for want; do
		grep -xF -- "$want" >/dev/null <<<"$got" || fail "fish: '$line<TAB>' offers no '$want': $got"
	done
}
expect_fish "taskdeck ru" run runs
expect_fish "taskdeck runs show " "$run"
expect_fish "taskdeck runs diff $run r" report.md
expect_fish "taskdeck run --project d" demo
expect_fish "taskdeck run --project=d" --project=demo
expect_fish "taskdeck completion " bash zsh fish
expect_fish "taskdeck sessions show Res" "Research SQLite WAL mode"
expect_fish 'taskdeck sessions show "Res' "Research SQLite WAL mode"
pass "fish: commands, run ids, project names, session titles (in quotes too), the paths a run changed, --opt=value, enums"

# zsh: typed into an interactive zsh in tmux, with compinit: the script saved
# as _taskdeck in a directory of $fpath (as make install does), then loaded
# with source <(taskdeck completion zsh).
mkdir "$TUI_TMP/zfunc"
td completion zsh >"$TUI_TMP/zfunc/_taskdeck"
# zsh_start SETUP: an interactive zsh (a new one in the same pane after the
# first) that has run SETUP.
zsh_start() {
	if tui_tmux has-session -t dash 2>/dev/null; then
		type_text 'exec zsh -f'
		keys Enter
	else
		tui_tmux new-session -d -s dash -x 120 -y 30 \
			"env PATH='$PATH' HOME='$HOME' TASKDECK_HOME='$TASKDECK_HOME' TASKDECK_COMPLETE_BUDGET_MS='$TASKDECK_COMPLETE_BUDGET_MS' PS1='%% ' zsh -f"
	fi
	# shellcheck disable=SC2016 # zsh expands it
	type_text "$1 && echo ready-\$((6 * 7))"
	keys Enter
	wait_for ready-42
	zsh_clear ready-42
}
# A clean screen, once the text of the last completion is gone.
zsh_clear() {
	keys C-c
	sleep 0.3
	type_text clear
	keys Enter
	wait_gone "$1"
}
# shellcheck disable=SC2034 # fail shows the screen
DASH_SIZE=120x30
zsh_start "fpath=($TUI_TMP/zfunc \$fpath); autoload -Uz compinit && compinit -u"
type_text 'taskdeck ru'
keys Tab
wait_for '% taskdeck run'
keys Tab
wait_for 'runs  -- list, show'
assert_screen 'run  -- Start a run'
zsh_clear 'runs  -- list'
type_text 'taskdeck runs show run_'
keys Tab Tab
wait_for "$run  -- "
zsh_clear "$run  -- "
type_text 'taskdeck run --project d'
keys Tab
wait_for '% taskdeck run --project demo'
zsh_clear '% taskdeck run --project demo'
type_text 'taskdeck sessions show "Res'
keys Tab
wait_for '% taskdeck sessions show "Research SQLite WAL mode"'
zsh_start 'autoload -Uz compinit && compinit -u && source <(taskdeck completion zsh)'
type_text 'taskdeck events --project=d'
keys Tab
wait_for '% taskdeck events --project=demo'
pass "zsh (from \$fpath, and sourced): commands, run ids, project names, a title typed in quotes"

# Credentials complete by id and name; no secret and no token is ever printed.
# Every kind of id is there: the research run's artifact and a pending prompt.
wait_run_field "$run" status completed
start_run "$project" ask "Write with care" --permission ask >/dev/null
prompt=
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	prompt=$(td permissions list | awk '$1 ~ /^prm_/ { print $1; exit }')
	[[ -z $prompt ]] || break
	tick
done
[[ -n $prompt ]] || fail "the ask run asked nothing"
[[ $(td __complete permissions allow "" | cut -f1) == *"$prompt"* ]] ||
	fail "'permissions allow <TAB>' does not offer $prompt"
secret=completion-secret-$$
printf '%s' "$secret" | td credentials create gh-token --kind bearer --secret-stdin >/dev/null
cred=$(td credentials list | awk '$2 == "gh-token" { print $1 }')
[[ $cred == cred_* ]] || fail "no credential gh-token"
got=$(td __complete credentials show "")
grep -x -- "$cred	gh-token" >/dev/null <<<"$got" || fail "'credentials show <TAB>' offers no $cred (gh-token): $got"
got=$(td __complete credentials delete gh)
[[ $(cut -f1 <<<"$got") == "$cred" ]] || fail "'credentials delete gh<TAB>' does not find $cred by its name: $got"
token=$(cat "$TASKDECK_HOME/token")
for words in "credentials show" "credentials delete" "run --project" "runs show" "sessions show" \
	"permissions allow" "connectors show" "artifacts show" "plan show"; do
	# shellcheck disable=SC2086 # words are split on purpose
	got=$(td __complete $words "" 2>"$TUI_TMP/complete.err")
	[[ -n $got ]] || fail "'$words <TAB>' offers nothing"
	[[ ! -s $TUI_TMP/complete.err ]] || fail "'$words <TAB>' wrote on stderr: $(cat "$TUI_TMP/complete.err")"
	[[ $got != *"$secret"* && $got != *"$token"* ]] || fail "'$words <TAB>' printed a secret or the token"
done
pass "every kind of id (a pending prompt, an artifact, connectors, credentials by id and name), no secret, no token, nothing on stderr"

# A service that does not answer (stopped): nothing, no error text, and soon.
# The best of three runs, so that a loaded machine does not decide; the program
# itself, without the shell script libtool puts before an uninstalled one.
program=$TD_BUILDDIR/taskdeck
if [[ -x $TD_BUILDDIR/.libs/taskdeck ]]; then
	program=$TD_BUILDDIR/.libs/taskdeck
	export LD_LIBRARY_PATH=$TD_BUILDDIR/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
[[ -n $("$program" __complete runs show "") ]] || fail "$program completes no run id"
kill -STOP "$SVC_PID"
best=
for _ in 1 2 3; do
	start=$(date +%s%N)
	got=$(TASKDECK_COMPLETE_BUDGET_MS=150 "$program" __complete runs show "" 2>&1)
	ms=$((($(date +%s%N) - start) / 1000000))
	[[ -z $got ]] || { kill -CONT "$SVC_PID"; fail "with the service stopped, 'runs show <TAB>' printed: $got"; }
	if [[ -z $best ]] || ((ms < best)); then
		best=$ms
	fi
done
kill -CONT "$SVC_PID"
# The 150 ms deadline gives up (a request's own timeout is 30 s): far below, however loaded.
((best < 5000)) || fail "with the service stopped, 'runs show <TAB>' took $best ms (want < 5000)"
pass "a stopped service: nothing printed, in $best ms"
