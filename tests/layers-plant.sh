#!/usr/bin/env bash
# tests/layers.sh catches what it is there to catch: on a copy of the sources,
# each check is given one breach of its own and must fail naming it, and the
# copy as it is must pass.
set -uo pipefail
TOP=${TD_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
fail=0

fresh() {	# a writable copy of what layers.sh reads
	rm -rf "$work/src" && mkdir "$work/src" &&
	    cp -r "$TOP/src/service" "$TOP/src/agent" "$work/src/" && chmod -R u+w "$work/src"
}

plant() {	# NAME EXPECTED-MESSAGE COMMAND...: on a fresh copy, COMMAND, then layers.sh
	local name=$1 want=$2 out
	shift 2
	fresh || exit 99
	(cd "$work/src/service" && "$@") || { echo "plant $name: could not plant" >&2; fail=1; return; }
	if out=$(TD_SRCDIR=$work bash "$TOP/tests/layers.sh" 2>&1); then
		echo "plant $name: layers.sh passed" >&2
		fail=1
	elif [[ $out != *"$want"* ]]; then
		printf 'plant %s: layers.sh failed without "%s":\n%s\n' "$name" "$want" "$out" >&2
		fail=1
	fi
}

# the copy as it is
fresh || exit 99
TD_SRCDIR=$work bash "$TOP/tests/layers.sh" >/dev/null 2>&1 || {
	echo "layers.sh fails on the sources as they are" >&2
	exit 1
}
# a service file and an agent file over the size limit
plant service-size "service/runs.c has 1101 lines, over 1000" \
	sh -c 'yes "" | head -n $((1101 - $(wc -l <runs.c))) >>runs.c'
plant agent-size "agent/host.c has 1001 lines, over 1000" \
	sh -c 'yes "" | head -n $((1001 - $(wc -l <../agent/host.c))) >>../agent/host.c'
# two service files that call each other: cache.c below runs.c calls up into it
plant circle "cache.c and runs.c call each other" \
	sh -c 'printf "\nvoid cache_planted(void);\nvoid\ncache_planted(void)\n{\n\truns_clear(0);\n}\n" >>cache.c &&
	    printf "\nstatic void\nruns_planted(void)\n{\n\tcache_planted();\n}\n" >>runs.c'
# a table written outside its owner, and a new table without one
plant second-writer "the attempts table is written outside attempts-rows.c" \
	sh -c 'printf "\nstatic const char *planted = \"UPDATE attempts SET state = 1\";\n" >>attempts.c'
plant unowned-table "the table planted_rows has no owner" \
	sh -c 'printf "\nstatic const char *planted = \"CREATE TABLE planted_rows (id TEXT)\";\n" >>store-migrations.c'
# a call in a comment or a string is no call
fresh || exit 99
printf '\n/* runs_clear(0) */\nstatic const char *cache_planted = "runs_clear(";\n' >>"$work/src/service/cache.c"
printf '\nstatic void\nruns_planted(void)\n{\n\tcache_free(0);\n}\n' >>"$work/src/service/runs.c"
if ! TD_SRCDIR=$work bash "$TOP/tests/layers.sh" >/dev/null 2>&1; then
	echo "plant comment: a call named in a comment or a string counted as a call" >&2
	fail=1
fi
[[ $fail -eq 0 ]] && echo "layers-plant: ok"
exit "$fail"
