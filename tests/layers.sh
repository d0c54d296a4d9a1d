#!/usr/bin/env bash
# The service's layers as docs/service.md draws them, checked on the sources:
# route files parse, validate and answer (no SQL of their own, no function a
# domain module could call), no domain module includes the route header, and
# each table has one writer.  Prints every breach; exits 1 when there is one.
set -uo pipefail
SRC=${TD_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/src/service
cd "$SRC" || exit 99
fail=0

breach() {
	printf 'layers: %s\n' "$*" >&2
	fail=1
}

# Route files run no SQL: they call the domain modules.
while IFS= read -r hit; do
	breach "SQL in a route file (move it into its domain module): $hit"
done < <(grep -nE 'sqlite3_|store_stmt\(' route-*.c)

# A route file defines route_* handlers and statics only: nothing below it calls up.
for f in route-*.c; do
	while IFS= read -r name; do
		breach "$f defines $name, which is no route handler (move it into a domain module)"
	done < <(awk '/^[a-z_][a-z0-9_]*\(/ && prev !~ /^static/ { sub(/\(.*/, ""); print }
		{ prev = $0 }' "$f" | grep -v '^route_')
done

# Only the route table includes the route header.
while IFS= read -r f; do
	breach "$f includes routes.h (only routes.c and route-*.c may)"
done < <(grep -l '#include "routes.h"' -- *.c | grep -vE '^(routes|route-[a-z-]+)\.c$')

# One writer per table.
owner() {	# TABLE FILE
	local hits
	hits=$(grep -nE "(INSERT( OR [A-Z]+)? INTO|REPLACE INTO|UPDATE|DELETE FROM) $1\\b" -- *.c |
		grep -vE "^($2|store-migrations\\.c):")
	[[ -z $hits ]] || while IFS= read -r hit; do
		breach "the $1 table is written outside $2: $hit"
	done <<<"$hits"
}
owner runs runs.c
owner sessions sessions.c
owner projects projects.c
owner project_defaults projects.c
owner permission_prompts prompts.c
owner plans plans.c
owner artifacts 'artifacts(-rows)?\.c'
owner run_changes changes.c
owner session_connectors session-connectors.c

# Lower modules call nothing above them, so no two files call each other.
defined() {	# FILE: the functions it defines for other files
	awk '/^[a-z_][a-z0-9_]*\(/ && prev !~ /^static/ { sub(/\(.*/, ""); print }
		{ prev = $0 }' "$1"
}
below() {	# LOWER UPPER: LOWER calls no function UPPER defines
	local hits
	hits=$(grep -nwF -f <(defined "$2") -- "$1")
	[[ -z $hits ]] || while IFS= read -r hit; do
		breach "$1 calls up into $2: $hit"
	done <<<"$hits"
}
below connector-rows.c connectors.c
below connector-rows.c credentials.c
below credentials.c connectors.c

# Headers point one way: no module includes, even round a loop, a header whose
# module includes its own.  A module is a header (x-int.h counts as x.h) with
# the files that define what it declares; a file without one is its own.
module_of() {	# FILE
	local base=${1%.[ch]}
	if [[ $1 == *.c && ! -f $base.h ]]; then
		base=$(grep -owF -f <(defined "$1") -- *.h |
			awk -F: '{ n[$1]++ } END { for (h in n) print n[h], h }' |
			sort -k1,1nr -k2 | awk 'NR == 1 { sub(/\.h$/, "", $2); print $2 }')
		base=${base:-${1%.c}}
	fi
	echo "${base%-int}"
}
while IFS= read -r loop; do
	breach "headers include each other round a loop (move the call that closes it to one side, or pass a callback): $loop"
done < <(for f in *.c *.h; do
		m=$(module_of "$f")
		sed -n 's/^#include "\([a-z0-9-]*\)\.h"$/\1/p' "$f" | while IFS= read -r h; do
			[[ -f $h.h && ${h%-int} != "$m" ]] && echo "$m ${h%-int}"
		done
	done | sort -u | tsort 2>&1 >/dev/null |
	awk '/input contains a loop/ { if (l != "") print l; l = ""; next }
		{ sub(/^tsort: /, ""); l = l (l == "" ? "" : " -> ") $0 }
		END { if (l != "") print l }')

[[ $fail -eq 0 ]] && echo "layers: ok"
exit "$fail"
