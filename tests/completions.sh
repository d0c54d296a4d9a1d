#!/usr/bin/env bash
# The shell completions (data/completions) know every command and subcommand
# of `taskdeck --help`: bash completes them (run in bash), zsh and fish files
# name them.  A command added without its completion fails here.  (grep without -q:
# under pipefail, grep -q can end the pipe early and fail it with SIGPIPE.)
set -euo pipefail
: "${TD_BUILDDIR:?}" "${TD_SRCDIR:?}"
comp=$TD_SRCDIR/data/completions
fail() { printf 'FAIL completions: %s\n' "$*" >&2; exit 1; }

help=$("$TD_BUILDDIR/taskdeck" --help 2>&1)
mapfile -t pairs < <(sed -n 's/^  \([a-z][a-z-]*\)\( \([a-z][a-z-]*\)\)\{0,1\}\( .*\)\{0,1\}$/\1 \3/p' <<<"$help" | sort -u)
((${#pairs[@]} > 20)) || fail "could not read the commands from taskdeck --help"

# shellcheck source=/dev/null
. "$comp/taskdeck.bash"
complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	_taskdeck
	printf '%s\n' "${COMPREPLY[@]}"
}
for pair in "${pairs[@]}"; do
	read -r cmd sub <<<"$pair"
	complete_words taskdeck "${cmd:0:2}" | grep -x -- "$cmd" >/dev/null || fail "bash does not complete '$cmd'"
	grep -qw -- "$cmd" "$comp/_taskdeck" || fail "zsh does not know '$cmd'"
	grep -qw -- "$cmd" "$comp/taskdeck.fish" || fail "fish does not know '$cmd'"
	# A second word that is a subcommand (not an argument such as ID, RUN, PROMPT).
	if [[ -n $sub ]] && [[ $sub =~ ^[a-z-]+$ ]] && [[ -n $(_taskdeck_subcommands "$cmd") ]]; then
		complete_words taskdeck "$cmd" "" | grep -x -- "$sub" >/dev/null ||
			fail "bash does not complete '$cmd $sub'"
		grep -qw -- "$sub" "$comp/_taskdeck" || fail "zsh does not know '$cmd $sub'"
		grep -qw -- "$sub" "$comp/taskdeck.fish" || fail "fish does not know '$cmd $sub'"
	fi
done
printf 'PASS completions: %d commands of taskdeck --help complete in bash, zsh and fish\n' "${#pairs[@]}"
