#!/usr/bin/env bash
# Everything `taskdeck help --all` and each command's help list can be completed
# through `taskdeck __complete` (what the scripts of `taskdeck completion SHELL`
# ask): every command and subcommand, every option of its usage (and -h, the
# global options), and every value a usage lists (`--kind a|b|c`).  A command,
# option or value the completion misses fails here.  No service is needed.
# (grep without -q: under pipefail, grep -q can end the pipe early and fail it
# with SIGPIPE.)
set -euo pipefail
: "${TD_BUILDDIR:?}"
fail() { printf 'FAIL completions: %s\n' "$*" >&2; exit 1; }
td() { "$TD_BUILDDIR/taskdeck" "$@"; }
# offers WORD... CANDIDATE: `taskdeck __complete WORD...` offers CANDIDATE.
offers() {
	local want=${*: -1}
	td __complete "${@:1:$#-1}" 2>&1 | cut -f1 | grep -x -- "$want" >/dev/null
}

TASKDECK_HOME=$(mktemp -d /tmp/tdcomp-XXXXXX)	# no service: nothing dynamic
export TASKDECK_HOME
trap 'rm -rf "$TASKDECK_HOME"' EXIT
help=$(td help --all)
mapfile -t lines < <(sed -n 's/^  \([a-z][a-z-]*\( [a-z][a-z-]*\)*\)\( .*\)\{0,1\}$/\1/p' <<<"$help")
((${#lines[@]} > 20)) || fail "could not read the commands from taskdeck help --all"
mapfile -t globals < <(sed -n '/^Global options:/,/^$/p' <<<"$help" | grep -oE -- '(^| )--?[a-z][a-z-]*' | tr -d ' ')
((${#globals[@]} >= 4)) || fail "could not read the global options from taskdeck help --all"

top=$(td __complete "" | cut -f1) || fail "taskdeck __complete failed"
commands=0 options=0 values=0
declare -A seen=()
for line in "${lines[@]}"; do
	read -r -a path <<<"$line"
	group=${path[0]}
	if [[ -z ${seen[$group]-} ]]; then
		seen[$group]=1
		grep -x -- "$group" <<<"$top" >/dev/null || fail "'taskdeck <TAB>' does not offer '$group'"
		offers "${group:0:2}" "$group" || fail "'taskdeck ${group:0:2}<TAB>' does not offer '$group'"
		offers help "${group:0:2}" "$group" ||
			fail "'taskdeck help ${group:0:2}<TAB>' does not offer '$group'"
	fi
	for ((i = 1; i < ${#path[@]}; i++)); do
		offers "${path[@]:0:i}" "${path[i]:0:1}" "${path[i]}" ||
			fail "'taskdeck ${path[*]:0:i} ${path[i]:0:1}<TAB>' does not offer '${path[i]}'"
	done
	commands=$((commands + 1))
	# The command's own help: its usage, up to the blank line before the summary.
	usage=$(td help "${path[@]}" | sed '/^$/q')
	[[ $usage == "usage: taskdeck ${path[*]}"* ]] || fail "taskdeck help ${path[*]} printed no usage: $usage"
	mapfile -t opts < <(grep -oE -- '(^|[][ |])--?[a-z][a-z0-9-]*' <<<"${usage#usage: taskdeck "${path[*]}"}" |
		sed 's/^[][ |]*//' | sort -u)
	offered=$(td __complete "${path[@]}" - | cut -f1)
	for opt in "${opts[@]}" "${globals[@]}"; do
		grep -x -- "$opt" <<<"$offered" >/dev/null ||
			fail "'taskdeck ${path[*]} -<TAB>' does not offer '$opt'"
		options=$((options + 1))
	done
	# Values a usage lists for an option: --kind api-key|bearer|basic|secret.
	while read -r opt list; do
		offered=$(td __complete "${path[@]}" "$opt" "" | cut -f1)
		IFS='|' read -r -a words <<<"$list"
		for w in "${words[@]}"; do
			grep -x -- "$w" <<<"$offered" >/dev/null ||
				fail "'taskdeck ${path[*]} $opt <TAB>' does not offer '$w'"
			offers "${path[@]}" "$opt=${w:0:1}" "$opt=$w" ||
				fail "'taskdeck ${path[*]} $opt=${w:0:1}<TAB>' does not offer '$opt=$w'"
			values=$((values + 1))
		done
	done < <(grep -oE -- '--[a-z][a-z0-9-]* [a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)+' <<<"$usage" || true)
done
offers run --pro --project || fail "'taskdeck run --pro<TAB>' does not offer --project"
offers runs logs - -f || fail "'taskdeck runs logs -<TAB>' does not offer -f"
offers -o "" wide || fail "'taskdeck -o <TAB>' does not offer wide"
offers runs list -o "" json || fail "'taskdeck runs list -o <TAB>' does not offer json"
offers -o wide ru runs || fail "'taskdeck -o wide ru<TAB>' does not offer runs"

# Values the usages name by a placeholder come from the same lists the commands check.
offers run --permission "" workspace-write || fail "'run --permission <TAB>' does not offer workspace-write"
offers completion "" fish || fail "'completion <TAB>' does not offer fish"
[[ $(td __complete run --cwd "") == :dir ]] || fail "'run --cwd <TAB>' does not complete directories"
# An option the command does not take has no values to offer.
[[ -z $(td __complete runs logs --project "") ]] || fail "'runs logs --project <TAB>' offers values"
# The scripts: one per shell, another shell is a usage error.
for shell in bash zsh fish; do
	[[ $(td completion "$shell") == *"__complete"* ]] || fail "'taskdeck completion $shell' printed no script"
done
if out=$(td completion tcsh 2>/dev/null) || (($? != 2)) || [[ -n $out ]]; then
	fail "'taskdeck completion tcsh' is not a usage error (exit 2, nothing on stdout)"
fi
# Without a service, ids complete to nothing, silently.
out=$(td __complete runs show "" 2>&1)
[[ -z $out ]] || fail "'runs show <TAB>' without a service printed: $out"
printf 'PASS completions: %d commands, %d options and %d listed values of taskdeck help --all complete\n' \
	"$commands" "$options" "$values"
